"""Priors of Smith & Osborne (2005): gradients, fixed points (Eqs. 2-4), L1 sparsity."""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose

from sklearn_crfloss import CRFTagger
from sklearn_crfloss._model._objective import CRFObjective
from sklearn_crfloss._model._parameters import ParameterLayout
from sklearn_crfloss.solvers import LBFGS, ConvergenceMonitor
from sklearn_crfloss.losses import ConditionalLogLikelihood
from sklearn_crfloss.priors import (
    GaussianPrior,
    HyperbolicPrior,
    LaplacianPrior,
    NoPrior,
    confidence_weights,
    get_prior,
)

from test_losses import finite_difference_gradient


def _problem(seed=0, n_features=6, n_labels=3, lengths=(2, 3, 4, 5, 3, 2)):
    rng = np.random.default_rng(seed)
    offsets = np.zeros(len(lengths) + 1, dtype=np.intp)
    np.cumsum(lengths, out=offsets[1:])
    n = offsets[-1]
    X = sp.csr_matrix((rng.random((n, n_features)) < 0.5).astype(float))
    y = rng.integers(n_labels, size=n).astype(np.intp)
    return X, y, offsets, n_labels


def _objective(prior, C=0.5, seed=0):
    X, y, offsets, L = _problem(seed)
    layout = ParameterLayout(X.shape[1], L)
    return _Bound(CRFObjective(X, y, offsets, layout), prior.bind(X, y, offsets, layout), C)


class _Bound:
    """CLL + ``prior`` on one small problem, as CRFTagger.fit binds them."""

    def __init__(self, objective, prior, C):
        self.objective, self.prior, self.C = objective, prior, C
        self.n_params = objective.n_params
        self.loss = ConditionalLogLikelihood()

    def __call__(self, theta):
        return self.objective.value_and_grad(theta, self.loss, self.prior, self.C)

    def loss_value_and_grad(self, theta):
        return self.objective.loss_value_and_grad(theta, self.loss)

    def split(self, z):
        """The objective in the prior's own variables ``z`` (the L1 split)."""
        par = self.prior.parametrisation(self.n_params)
        value, grad = self.loss_value_and_grad(par.to_theta(z))
        p_value, p_grad = par.penalty(z, self.C)
        return value + p_value, par.chain(grad, z) + p_grad


ALL_PRIORS = [
    GaussianPrior(), GaussianPrior(mean=0.4), GaussianPrior(feature_dependent=True),
    GaussianPrior(mean=-0.2, feature_dependent=True),
    LaplacianPrior(), LaplacianPrior(feature_dependent=True),
    HyperbolicPrior(), HyperbolicPrior(beta=3.0), HyperbolicPrior(beta=0.5, feature_dependent=True),
]


@pytest.mark.parametrize("prior", ALL_PRIORS, ids=repr)
def test_prior_gradient_finite_differences(prior):
    obj = _objective(prior)
    theta = np.random.default_rng(1).normal(size=obj.n_params)  # no exact zeros
    value, grad = obj.prior.value_and_grad(theta, 0.5)
    fd = finite_difference_gradient(lambda t: obj.prior.value_and_grad(t, 0.5)[0], theta)
    assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)
    assert value > 0


@pytest.mark.parametrize("prior", [LaplacianPrior(), LaplacianPrior(feature_dependent=True)],
                         ids=repr)
def test_laplacian_split_objective_gradient(prior):
    obj = _objective(prior)
    par = obj.prior.parametrisation(obj.n_params)
    fun = obj.split
    z = np.abs(np.random.default_rng(2).normal(size=par.n_free)) + 0.1
    assert_allclose(fun(z)[1], finite_difference_gradient(lambda v: fun(v)[0], z),
                    rtol=1e-6, atol=1e-7)
    theta = np.random.default_rng(3).normal(size=obj.n_params)
    z0 = par.from_theta(theta)
    assert np.all(z0 >= 0)
    assert_allclose(par.to_theta(z0), theta)
    # On a split point with one half zero the two objectives agree.
    assert_allclose(fun(z0)[0], obj(theta)[0])


def _optimum(prior, C=0.5):
    obj = _objective(prior, C)
    theta = LBFGS().solve(obj.objective, obj.loss, obj.prior, C, np.zeros(obj.n_params),
                          ConvergenceMonitor(0.0, 5000))
    return obj, theta


@pytest.mark.parametrize("prior", [GaussianPrior(), GaussianPrior(mean=0.3),
                                   GaussianPrior(feature_dependent=True),
                                   HyperbolicPrior(beta=2.0),
                                   HyperbolicPrior(feature_dependent=True)], ids=repr)
def test_fixed_point_smooth_priors(prior):
    # Eqs. 2 and 4: empirical - expected counts = the prior's gradient.
    obj, theta = _optimum(prior)
    loss_grad = obj.loss_value_and_grad(theta)[1]  # expected - empirical counts
    _, prior_grad = obj.prior.value_and_grad(theta, obj.C)
    assert np.max(np.abs(prior_grad)) > 1e-2  # the prior is active
    assert_allclose(-loss_grad, prior_grad, atol=2e-5)


@pytest.mark.parametrize("feature_dependent", [False, True])
def test_fixed_point_laplacian(feature_dependent):
    # Eq. 3: for theta_k != 0, empirical - expected = d_k sign(theta_k) / C;
    # for theta_k == 0 (exactly), |empirical - expected| <= d_k / C.
    C = 0.5
    obj, theta = _optimum(LaplacianPrior(feature_dependent=feature_dependent), C)
    gap = -obj.loss_value_and_grad(theta)[1]
    d = obj.prior._weights(obj.n_params) * np.ones(obj.n_params)
    nz = theta != 0
    assert 0 < nz.sum() < theta.shape[0]  # some exact zeros, some not
    assert_allclose(gap[nz], d[nz] * np.sign(theta[nz]) / C, atol=2e-5)
    assert np.all(np.abs(gap[~nz]) <= d[~nz] / C + 2e-5)


def test_l1_tagger_is_sparse_and_l2_is_not():
    rng = np.random.default_rng(0)
    X = [[{"w": str(rng.integers(30)), "p": str(rng.integers(4))}
          for _ in range(rng.integers(2, 7))] for _ in range(80)]
    y = [["A" if int(t["w"]) % 3 == 0 else "B" if t["p"] == "1" else "O" for t in s] for s in X]
    l1 = CRFTagger(prior="l1", C=0.5).fit(X, y)
    l2 = CRFTagger(prior="l2", C=0.5).fit(X, y)
    assert l1.sparsity_ > 0.3
    assert l2.sparsity_ == 0.0
    n_zero_coef = np.sum(l1.coef_ == 0) - (l1.coef_.size - l1.n_parameters_
                                           + l1.transition_.size + 2 * len(l1.classes_))
    assert n_zero_coef > 0
    assert l1.score(X, y) > 0.9


def test_log_cosh_is_stable_for_large_arguments():
    prior = HyperbolicPrior(beta=1.0)
    theta = np.array([1e6, -1e6, 800.0, 0.0])
    value, grad = prior.value_and_grad(theta, 1.0)
    assert np.isfinite(value)
    assert_allclose(value, 2e6 + 800.0 - 3 * np.log(2.0))
    assert_allclose(grad, [1.0, -1.0, 1.0, 0.0])


def test_hyperbolic_penalty_is_log_cosh():
    # Where cosh does not overflow, the penalty is sum_k log cosh(b theta_k).
    theta = np.random.default_rng(0).normal(scale=20.0, size=200)
    for beta, C in [(1.0, 1.0), (0.3, 4.0)]:
        b = beta / np.sqrt(C)
        value, grad = HyperbolicPrior(beta=beta).value_and_grad(theta, C)
        assert_allclose(value, np.sum(np.log(np.cosh(b * theta))), rtol=1e-13)
        assert_allclose(grad, b * np.tanh(b * theta), rtol=1e-15)


def test_hyperbolic_matches_gaussian_curvature_at_zero():
    theta = np.full(3, 1e-4)
    for C in (0.1, 1.0, 10.0):
        h = HyperbolicPrior().value_and_grad(theta, C)
        g = GaussianPrior().value_and_grad(theta, C)
        assert_allclose(h[1], g[1], rtol=1e-6)
        assert_allclose(h[0], g[0], rtol=1e-6)


def test_confidence_weights_by_hand():
    # One sequence of 3 tokens, labels (0, 1, 0), one attribute firing at tokens 0 and 1.
    X = sp.csr_matrix(np.array([[1.0], [1.0], [0.0]]))
    y = np.array([0, 1, 0])
    offsets = np.array([0, 3])
    d = confidence_weights(X, y, offsets, 2)
    assert d.shape == (2 + 4 + 2 + 2,)

    def s(a, b):
        V = (1 + a) * (1 + b) / ((a + b + 2) ** 2 * (a + b + 3))
        return np.sqrt(V * (a + b))

    # state (attr, label 0): a=1, b=1; (attr, label 1): a=1, b=1;
    # transitions over 2 inner positions: (0,1) and (1,0) seen once;
    # start/end: one sequence starting and ending with label 0.
    raw = np.array([s(1, 1), s(1, 1), s(0, 2), s(1, 1), s(1, 1), s(0, 2),
                    s(1, 0), s(0, 1), s(1, 0), s(0, 1)])
    assert_allclose(d, raw / raw.mean())
    assert_allclose(confidence_weights(X, y, offsets, 2, state_index=np.array([1])),
                    np.r_[raw[1:2], raw[2:]] / np.r_[raw[1:2], raw[2:]].mean())


def test_bind_does_not_modify_the_users_prior():
    X, y, offsets, L = _problem()
    prior = GaussianPrior(feature_dependent=True)
    layout = ParameterLayout(X.shape[1], L)
    bound = prior.bind(X, y, offsets, layout)
    assert bound is not prior and not hasattr(prior, "weights_")
    assert GaussianPrior().bind(X, y, offsets, layout).__class__ is GaussianPrior
    with pytest.raises(ValueError, match="needs the training data"):
        prior.value_and_grad(np.zeros(3), 1.0)


def test_bad_prior_parameters():
    # Hyperparameters are checked when the prior is resolved (get_prior, CRFTagger.fit).
    with pytest.raises(ValueError, match="'beta' parameter of HyperbolicPrior"):
        get_prior(HyperbolicPrior(beta=0.0))
    with pytest.raises(ValueError, match="'feature_dependent' parameter of LaplacianPrior"):
        get_prior(LaplacianPrior(feature_dependent="yes"))
    with pytest.raises(ValueError, match="'mean' parameter of GaussianPrior"):
        get_prior(GaussianPrior(mean="zero"))
    with pytest.raises(ValueError, match="mean has shape"):
        GaussianPrior(mean=np.zeros(4)).value_and_grad(np.zeros(3), 1.0)
    assert isinstance(get_prior("l1"), LaplacianPrior)
    assert isinstance(get_prior("hyperbolic"), HyperbolicPrior)
    assert isinstance(get_prior("none"), NoPrior)


def test_gaussian_mean_per_parameter_in_tagger():
    X = [np.eye(3)[[0, 1, 2]], np.eye(3)[[2, 1]]]
    y = [["a", "b", "a"], ["a", "b"]]
    base = CRFTagger(prior="l2", C=0.1, all_possible_states=True).fit(X, y)
    n = base.n_parameters_
    shifted = CRFTagger(prior=GaussianPrior(mean=np.full(n, 2.0)), C=0.1,
                        all_possible_states=True).fit(X, y)
    assert np.mean(shifted.coef_) > np.mean(base.coef_) + 1.0
