"""Determinism and extreme but valid input (issue 15)."""

import warnings

import numpy as np
import pytest

from conftest import make_toy_chunks
from sklearn_crfloss import CRFTagger, LOPTagger
from sklearn_crfloss.losses import LOSSES

SEEDED = [
    {"solver": "lbfgs"},
    {"solver": "owlqn", "prior": "l1"},
    {"solver": "sgd"},
    {"solver": "rprop"},
    {"solver": "quickprop"},
    {"loss": "perceptron"},
    {"loss": "mira"},
]


def _fit(X, y, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning of the short runs
        return CRFTagger(**params).fit(X, y)


@pytest.mark.parametrize("params", SEEDED, ids=lambda p: "-".join(p.values()))
def test_same_random_state_same_coef(params):
    X, y = make_toy_chunks()
    first, second = (_fit(X, y, max_iter=10, random_state=3, **params) for _ in range(2))
    np.testing.assert_array_equal(first.coef_, second.coef_)
    np.testing.assert_array_equal(first.transition_, second.transition_)


def test_lop_random_experts_same_random_state():
    X, y = make_toy_chunks()
    first, second = (
        LOPTagger(experts="random", weights="fit", random_state=3,
                  estimator=CRFTagger(max_iter=10)).fit(X, y)
        for _ in range(2)
    )
    for a, b in zip(first.expert_columns_, second.expert_columns_):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(first.experts_, second.experts_):
        np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(first.weights_, second.weights_)
    np.testing.assert_array_equal(first.pool_.coef_, second.pool_.coef_)


BATCH = ("lbfgs", "owlqn", "rprop", "quickprop")
N_JOBS_CASES = SEEDED + [{"solver": "lbfgs", "loss": "labelwise"},
                         {"solver": "lbfgs", "loss": "mce_f", "init": "cll"}]


@pytest.mark.parametrize("params", N_JOBS_CASES, ids=lambda p: "-".join(p.values()))
def test_n_jobs_gives_bitwise_the_same_model(params):
    """n_jobs=1, 2 and 4: the same coef_, bit for bit, for every solver.

    The kernels add the per-sequence gradients into accumulators of fixed
    blocks of sequences (not of threads) and sum the blocks in order, so
    the rounding does not depend on the number of threads; before, Rprop,
    QuickProp and OWL-QN models differed by up to 1e-2 relative.
    """
    X, y = make_toy_chunks(100, max_len=10)
    one, two, four = (_fit(X, y, random_state=0, n_jobs=n_jobs, max_iter=10, **params)
                      for n_jobs in (1, 2, 4))
    for other in (two, four):
        np.testing.assert_array_equal(one.coef_, other.coef_)
        np.testing.assert_array_equal(one.transition_, other.transition_)
        np.testing.assert_array_equal(one.start_, other.start_)
        assert one.loss_curve_ == other.loss_curve_


@pytest.mark.parametrize("params", [p for p in SEEDED if p.get("solver") in BATCH],
                         ids=lambda p: "-".join(p.values()))
def test_n_jobs_gives_bitwise_the_same_model_with_label_bigrams(params):
    # Observation-dependent label bigrams ('~' keys): the fused CLL kernel sums
    # the pair marginals per distinct matrix in the same fixed blocks.
    X, y = make_toy_chunks(100, max_len=10)
    X = [[dict(token, **{"~prev": token["prev"][:2]}) for token in seq] for seq in X]
    one, two, four = (_fit(X, y, random_state=0, n_jobs=n_jobs, max_iter=10, **params)
                      for n_jobs in (1, 2, 4))
    assert one.bigram_coef_ is not None and np.abs(one.bigram_coef_).max() > 0
    for other in (two, four):
        np.testing.assert_array_equal(one.coef_, other.coef_)
        np.testing.assert_array_equal(one.transition_, other.transition_)
        np.testing.assert_array_equal(one.bigram_coef_, other.bigram_coef_)
        assert one.loss_curve_ == other.loss_curve_


def test_one_token_sequences():
    X, y = make_toy_chunks()
    X1, y1 = [s[:1] for s in X], [s[:1] for s in y]
    model = _fit(X1, y1, max_iter=20)
    predicted = model.predict(X1)
    assert [len(p) for p in predicted] == [1] * len(X1)
    marginals = model.predict_marginals(X1)
    assert all(m.shape == (1, len(model.classes_)) for m in marginals)
    np.testing.assert_allclose([m.sum() for m in marginals], 1.0)


def test_500_labels():
    X, y = make_toy_chunks(n_sequences=40)
    rng = np.random.default_rng(0)
    labels = [[f"L{int(rng.integers(500))}" for _ in s] for s in y]
    X = X + [[{"w": f"u{k}"}] for k in range(500)]  # every label occurs
    labels = labels + [[f"L{k}"] for k in range(500)]
    model = _fit(X, labels, max_iter=5)
    assert model.coef_.shape == (500, model.n_features_in_)
    assert np.isfinite(model.coef_).all()
    assert len(model.predict(X[:3])) == 3


@pytest.mark.parametrize("C", [1e-8, 1e8])
@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_extreme_C(loss, C):
    X, y = make_toy_chunks(n_sequences=30)
    model = _fit(X, y, loss=loss, C=C, max_iter=5)
    assert np.isfinite(model.coef_).all()
    assert np.isfinite(model.transition_).all()


def test_200000_token_sequence():
    X, y = make_toy_chunks()
    model = _fit(X, y, max_iter=20)
    tokens = [token for seq in X for token in seq]
    long = (tokens * (200_000 // len(tokens) + 1))[:200_000]
    (path,) = model.predict([long])
    assert len(path) == 200_000
    assert set(path) <= set(model.classes_.tolist())
    (marginals,) = model.predict_marginals([long])
    assert marginals.shape == (200_000, len(model.classes_))
    assert np.isfinite(marginals).all()
    np.testing.assert_allclose(marginals.sum(axis=1), 1.0)


def test_per_thread_gradient_accumulators_beside_block_ones(monkeypatch):
    # A model too large for the block accumulators of the state weights
    # gets one per thread while the small transition accumulators stay in
    # blocks: each kernel indexes each set by its own count (no write out of
    # bounds), and the model is the same up to the order of the sums.
    from sklearn_crfloss._model import _objective

    X, y = make_toy_chunks(100, max_len=10)
    blocked = _fit(X, y, n_jobs=2, max_iter=10)
    monkeypatch.setattr(_objective, "accumulator_blocks", lambda n_threads, n_values: n_threads)
    for n_jobs in (1, 2):
        per_thread = _fit(X, y, n_jobs=n_jobs, max_iter=10)
        np.testing.assert_allclose(per_thread.coef_, blocked.coef_, rtol=1e-8, atol=1e-12)
