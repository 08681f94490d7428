"""LOPTagger's label experts with observation-dependent label bigrams.

Each label expert's bigram blocks live in its label space (the transitions
from or to its labels), as its transition matrix does; the pool sums them
with the other experts' and is the weighted log-linear combination of the
experts, position-dependent transitions included.
"""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import logsumexp
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from sklearn_crfloss import CRFTagger, LOPTagger
from sklearn_crfloss._model._bigram_layout import BigramLayout
from sklearn_crfloss._model import make_objective
from sklearn_crfloss._model._objective import LabelExpertObjective
from sklearn_crfloss._model._objective import CRFObjective
from sklearn_crfloss.features import TemplateFeatures
from sklearn_crfloss.io import load_model, save_model
from sklearn_crfloss.losses import ConditionalLogLikelihood
from sklearn_crfloss.priors import GaussianPrior

from _oracle import position_paths
from conftest import make_toy_chunks
from test_losses import finite_difference_gradient

TEMPLATE = "U00:%x[0,0]\nU01:%x[-1,0]\nB\nB01:%x[0,1]\n"
FAST = dict(C=1.0, tol=1e-3)


def _data(n=40, seed=0):
    """Toy chunks as (word, last character of the word) tuples, after a template with a B line."""
    X, y = make_toy_chunks(n_sequences=n, seed=seed, max_len=5)
    tuples = [[(tok["w"], tok["w"][-1]) for tok in seq] for seq in X]
    return TemplateFeatures(TEMPLATE).fit_transform(tuples), y


@pytest.fixture(scope="module")
def label_pool():
    F, y = _data()
    lop = LOPTagger(experts="label", weights=[0.5, 0.2, 0.3],
                    estimator=CRFTagger(**FAST)).fit(F, y)
    return lop, F, y


def _own_labels(lop):
    """The label mask of every label expert (NP, VP)."""
    classes = lop.classes_.tolist()
    return [np.array([c.endswith(kind) for c in classes]) for kind in ("NP", "VP")]


def test_label_experts_train_blocks_in_their_label_space(label_pool):
    lop, _, _ = label_pool
    assert len(lop.experts_) == 3
    assert lop.experts_[0].bigram_coef_.shape == (4, 5, 5)  # B01: the digits 0-3
    assert np.all(lop.experts_[0].bigram_coef_.any(axis=0))  # the monolithic one: unrestricted
    for expert, mine in zip(lop.experts_[1:], _own_labels(lop)):
        B = expert.bigram_coef_
        assert B.shape == (4, 5, 5)
        assert np.all(B[:, ~mine][:, :, ~mine] == 0.0)  # exactly: never moved
        assert np.abs(B[:, mine]).max() > 1e-2 and np.abs(B[:, :, mine]).max() > 1e-2
        assert np.all(expert.transition_[np.ix_(~mine, ~mine)] == 0.0)
        assert_array_equal(expert.bigram_attributes_, lop.pool_.bigram_attributes_)
        # n_parameters_ and sparsity_ count the trained parameters only (all of them
        # non-zero here: the observed pairs, the expert's transitions, blocks and ends).
        trained = np.concatenate([expert.coef_[mine].ravel(), expert.transition_[mine].ravel(),
                                  expert.transition_[~mine][:, mine].ravel(),
                                  expert.start_[mine], expert.end_[mine],
                                  B[:, mine].ravel(), B[:, ~mine][:, :, mine].ravel()])
        assert expert.n_parameters_ == np.count_nonzero(trained)
        assert expert.sparsity_ == 0.0


def test_pool_sums_the_label_experts_blocks(label_pool):
    lop, _, _ = label_pool
    pool, w = lop.pool_, lop.weights_
    for name in ("coef_", "transition_", "start_", "end_", "bigram_coef_"):
        expected = sum(wa * getattr(e, name) for wa, e in zip(w, lop.experts_))
        assert_allclose(getattr(pool, name), expected, atol=1e-12, err_msg=name)
    # The label experts' blocks count: without them the pool's would differ.
    assert np.abs(pool.bigram_coef_ - w[0] * lop.experts_[0].bigram_coef_).max() > 1e-2


def test_label_pool_is_the_normalised_product_of_its_experts(label_pool):
    """p_bar(y|x) = prod_a p_a(y|x)^w_a / Z, each p_a with its position-dependent
    transitions, by enumeration of every label sequence."""
    lop, F, _ = label_pool
    for seq in (F[3], F[11]):
        log_probs = []
        for expert in lop.experts_:
            unary, _, transitions = expert._potentials([seq])
            dense = transitions.dense()
            assert np.ptp(dense[1:], axis=0).max() > 1e-3 or len(seq) < 3
            paths, scores = position_paths(np.asarray(unary), dense, expert.start_, expert.end_)
            log_probs.append(scores - logsumexp(scores))
        log_prod = sum(w * p for w, p in zip(lop.weights_, log_probs))
        pbar = np.exp(log_prod - logsumexp(log_prod))
        marginals = np.zeros((len(seq), len(lop.classes_)))
        for t in range(len(seq)):
            marginals[t] = np.bincount(paths[:, t], weights=pbar, minlength=len(lop.classes_))
        assert_allclose(lop.predict_marginals([seq])[0], marginals, atol=1e-10)
        assert lop.predict([seq])[0] == lop.classes_[paths[np.argmax(pbar)]].tolist()


def test_label_pool_with_bigrams_round_trips(label_pool, tmp_path):
    lop, F, _ = label_pool
    again = pickle.loads(pickle.dumps(lop))
    assert again.predict(F) == lop.predict(F)
    for a, b in zip(again.predict_marginals(F), lop.predict_marginals(F)):
        assert_array_equal(a, b)
    for a, b in zip(again.experts_ + [again.pool_], lop.experts_ + [lop.pool_]):
        assert_array_equal(a.bigram_coef_, b.bigram_coef_)
    save_model(lop, tmp_path / "lop.crfl")
    loaded = load_model(tmp_path / "lop.crfl")
    assert loaded.predict(F) == lop.predict(F)
    assert_array_equal(loaded.pool_.bigram_coef_, lop.pool_.bigram_coef_)
    for model in (again, loaded):
        assert [e.n_parameters_ for e in model.experts_] == [e.n_parameters_
                                                            for e in lop.experts_]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # max_iter=15
@pytest.mark.parametrize("estimator", [
    CRFTagger(solver="rprop", max_iter=15, **FAST),
    CRFTagger(solver="quickprop", max_iter=15, **FAST),
    CRFTagger(solver="owlqn", prior="l1", **FAST),
    CRFTagger(prior=GaussianPrior(mean=0.3), **FAST),  # its gradient is not 0 at theta = 0
], ids=["rprop", "quickprop", "owlqn-l1", "l2-mean"])
def test_batch_solvers_and_priors_keep_the_label_space(estimator):
    F, y = _data(n=25)
    lop = LOPTagger(experts="label", weights="fit", estimator=estimator).fit(F, y)
    for expert, mine in zip(lop.experts_[1:], _own_labels(lop)):
        assert np.all(expert.bigram_coef_[:, ~mine][:, :, ~mine] == 0.0)
        assert np.abs(expert.bigram_coef_[:, mine]).max() > 0.0
    assert_allclose(lop.weights_.sum(), 1.0)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_online_solvers_refuse_label_experts_with_bigrams():
    F, y = _data(n=10)
    lop = LOPTagger(experts="label", estimator=CRFTagger(solver="sgd", max_iter=2))
    with pytest.raises(ValueError, match="label experts of LOPTagger with the solver 'sgd' "
                                         r"\(they train the blocks with 'lbfgs'"):
        lop.fit(F, y)
    with pytest.raises(NotFittedError):
        check_is_fitted(lop)
    # Without bigram lines the same experts train.
    plain = TemplateFeatures("U00:%x[0,0]\n").fit_transform(
        [[(tok["U00"],) for tok in seq] for seq in F])
    assert lop.fit(plain, y).pool_.bigram_coef_ is None


def test_label_expert_objective_gradient():
    """Finite differences on the free entries; 0 on the blocks' entries outside
    the label space, for the loss alone and with a prior of non-zero mean."""
    rng = np.random.default_rng(0)
    lengths, n_features, L = (1, 3, 4), 6, 3
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
    n = offsets[-1]
    X = sp.csr_matrix(np.hstack([rng.normal(size=(n, 4)) * (rng.random((n, 4)) < 0.6),
                                 (rng.random((n, 2)) < 0.5).astype(float)]))  # 2 bigram columns
    y = rng.integers(L, size=offsets[-1]).astype(np.intp)
    layout = BigramLayout(n_features, L, None, np.array([4, 5]), labels=[1])
    plain = make_objective(X, y, offsets, BigramLayout(n_features, L, None, np.array([4, 5])))
    assert type(plain) is CRFObjective
    objective = make_objective(X, y, offsets, layout)
    assert type(objective) is LabelExpertObjective
    mine = np.array([False, True, False])
    outside = ~(mine[:, None] | mine[None, :])  # neither label is the expert's
    fixed = np.concatenate([np.zeros(layout.n_base, dtype=bool), np.tile(outside.ravel(), 2)])
    theta = rng.normal(size=layout.n_params)
    theta[fixed] = 0.0
    loss, prior = ConditionalLogLikelihood(), GaussianPrior(mean=0.3)
    for value_and_grad in (lambda t: objective.loss_value_and_grad(t, loss),
                           lambda t: objective.value_and_grad(t, loss, prior, 2.0)):
        grad = value_and_grad(theta)[1]
        assert np.all(grad[fixed] == 0.0)
        fd = finite_difference_gradient(lambda t: value_and_grad(t)[0], theta)
        assert np.abs(fd[fixed]).max() > 1e-3  # the plain gradient there is not 0
        assert_allclose(grad[~fixed], fd[~fixed], rtol=1e-6, atol=1e-7)
