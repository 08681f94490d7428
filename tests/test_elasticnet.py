"""Elastic-net prior: gradients, the OWL-QN optimum's conditions, limits, CRFsuite's c1/c2."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.priors import ElasticNetPrior, GaussianPrior, LaplacianPrior, get_prior
from sklearn_crfloss.solvers import OWLQN, ConvergenceMonitor, default_solver
from sklearn_crfloss.losses import ConditionalLogLikelihood

from test_losses import finite_difference_gradient
from test_priors import _objective

PRIORS = [ElasticNetPrior(), ElasticNetPrior(l1_ratio=0.2, feature_dependent=True)]


@pytest.mark.parametrize("prior", PRIORS, ids=repr)
def test_gradient_and_split_gradient_finite_differences(prior):
    obj = _objective(prior)
    theta = np.random.default_rng(1).normal(size=obj.n_params)  # no exact zeros
    value, grad = obj.prior.value_and_grad(theta, 0.5)
    assert value > 0
    assert_allclose(grad, finite_difference_gradient(
        lambda t: obj.prior.value_and_grad(t, 0.5)[0], theta), rtol=1e-6, atol=1e-8)
    smooth = obj.prior.smooth_value_and_grad
    assert_allclose(smooth(theta, 0.5)[1], finite_difference_gradient(
        lambda t: smooth(t, 0.5)[0], theta), rtol=1e-6, atol=1e-8)
    par = obj.prior.parametrisation(obj.n_params)
    z = np.abs(np.random.default_rng(2).normal(size=par.n_free)) + 0.1
    assert_allclose(obj.split(z)[1], finite_difference_gradient(lambda v: obj.split(v)[0], z),
                    rtol=1e-6, atol=1e-7)
    assert_allclose(obj.split(par.from_theta(theta))[0], obj(theta)[0])


@pytest.mark.parametrize("prior", PRIORS, ids=repr)
def test_owlqn_optimum_conditions(prior):
    # Zou & Hastie (2005): at the optimum, for theta_k != 0 the smooth part's
    # gradient is -d_k l1_ratio sign(theta_k) / C; for theta_k == 0 its size
    # is at most d_k l1_ratio / C.
    C = 0.5
    obj = _objective(prior, C)
    theta = OWLQN(epsilon=1e-9).solve(obj.objective, obj.loss, obj.prior, C,
                                      np.zeros(obj.n_params), ConvergenceMonitor(0.0, 5000))
    gap = -(obj.loss_value_and_grad(theta)[1] + obj.prior.smooth_value_and_grad(theta, C)[1])
    d = obj.prior._weights(obj.n_params) * np.ones(obj.n_params)
    r = prior.l1_ratio
    nz = theta != 0
    assert 0 < nz.sum() < theta.shape[0]  # some exact zeros, some not
    assert_allclose(gap[nz], r * d[nz] * np.sign(theta[nz]) / C, atol=1e-4)
    assert np.all(np.abs(gap[~nz]) <= r * d[~nz] / C + 1e-4)


def _data(seed=0, n=80):
    rng = np.random.default_rng(seed)
    X = [[{"w": str(rng.integers(30)), "p": str(rng.integers(4)), "x": float(rng.normal())}
          for _ in range(rng.integers(2, 7))] for _ in range(n)]
    y = [["A" if int(t["w"]) % 3 == 0 else "B" if t["p"] == "1" else "O" for t in s] for s in X]
    return X, y


def test_owlqn_and_lbfgs_split_reach_the_same_optimum():
    X, y = _data()
    fits = [CRFTagger(prior=ElasticNetPrior(l1_ratio=1 / 3), C=10 / 3, solver=solver,
                      tol=1e-10).fit(X, y) for solver in ("owlqn", "lbfgs")]
    assert fits[0].sparsity_ > 0.05
    assert_allclose(fits[0].objective_, fits[1].objective_, rtol=1e-5)
    assert_allclose(fits[0].coef_, fits[1].coef_, atol=2e-3)


@pytest.mark.parametrize("l1_ratio, other", [(1.0, LaplacianPrior()), (0.0, GaussianPrior())])
def test_limits_are_the_laplacian_and_the_gaussian(l1_ratio, other):
    X, y = _data(1)
    net = CRFTagger(prior=ElasticNetPrior(l1_ratio=l1_ratio), C=2.0, tol=1e-10).fit(X, y)
    ref = CRFTagger(prior=other, C=2.0, solver="owlqn", tol=1e-10).fit(X, y)
    assert_allclose(net.objective_, ref.objective_, rtol=1e-6)


def test_crfsuite_c1_c2_mapping():
    # C * (loss + penalty) = C loss + l1_ratio |w|_1 + (1 - l1_ratio) |w|^2 / 2, so the
    # penalty is c1 |w|_1 + c2 |w|^2 with C = 1 / (c1 + 2 c2), l1_ratio = c1 / (c1 + 2 c2).
    c1, c2 = 0.1, 0.1
    prior = ElasticNetPrior(l1_ratio=c1 / (c1 + 2 * c2))
    theta = np.random.default_rng(0).normal(size=20)
    value = prior.value_and_grad(theta, 1 / (c1 + 2 * c2))[0]
    assert_allclose(value, c1 * np.abs(theta).sum() + c2 * np.dot(theta, theta))


def test_registry_default_solver_and_bad_ratio():
    prior = get_prior("elasticnet")
    assert isinstance(prior, ElasticNetPrior) and prior.l1_ratio == 0.5
    assert default_solver(ConditionalLogLikelihood(), prior) == "owlqn"
    X, y = _data(2, 20)
    with pytest.raises(ValueError, match="l1_ratio"):
        CRFTagger(prior=ElasticNetPrior(l1_ratio=1.5)).fit(X, y)
    with pytest.raises(ValueError, match="sgd"):
        CRFTagger(prior="elasticnet", solver="sgd").fit(X, y)
    crf = CRFTagger(prior="elasticnet").set_params(prior__l1_ratio=0.9).fit(X, y)
    assert crf.prior.l1_ratio == 0.9 and crf.sparsity_ > 0
