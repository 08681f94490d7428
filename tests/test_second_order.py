"""Second-order (label-trigram) chains: exact inference against enumeration, and the estimator."""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from sklearn_crfloss.inference import (PairStates, second_order_forward_backward,
                                       second_order_scores, second_order_viterbi)


def _random_chain(rng, L, lengths, scale=1.0, p_allowed=0.75):
    n = int(sum(lengths))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
    allowed = rng.random((L, L)) < p_allowed
    allowed[0] = True  # some path always exists
    return (scale * rng.normal(size=(n, L)), scale * rng.normal(size=(L, L)),
            scale * rng.normal(size=(L, L, L)), scale * rng.normal(size=L),
            scale * rng.normal(size=L), offsets, allowed)


def _enumerate(U, T, W3, start, end, allowed):
    """Every allowed labelling of one sequence, its score and the exact quantities."""
    n, L = U.shape
    ys = [np.array(y, dtype=np.intp) for y in itertools.product(range(L), repeat=n)
          if all(allowed[y[t - 1], y[t]] for t in range(1, n))]
    off = np.array([0, n])
    scores = np.array([second_order_scores(U, T, W3, start, end, y, off)[0] for y in ys])
    log_z = logsumexp(scores)
    p = np.exp(scores - log_z)
    marg, big, tri = np.zeros((n, L)), np.zeros((L, L)), np.zeros((L, L, L))
    for y, q in zip(ys, p):
        marg[np.arange(n), y] += q
        for t in range(1, n):
            big[y[t - 1], y[t]] += q
        for t in range(2, n):
            tri[y[t - 2], y[t - 1], y[t]] += q
    best = ys[int(np.argmax(scores))]
    return log_z, marg, big, tri, best, scores.max()


@pytest.mark.parametrize("L", [2, 3])
@pytest.mark.parametrize("scale", [1.0, 400.0])  # 400: the log-space path
def test_forward_backward_and_viterbi_match_enumeration(L, scale):
    rng = np.random.default_rng(L)
    lengths = [1, 2, 3, 5, 0, 4]
    U, T, W3, s, e, offsets, allowed = _random_chain(rng, L, lengths, scale)
    weights = rng.random(len(lengths)) + 0.5
    fb = second_order_forward_backward(U, T, W3, s, e, offsets, allowed, weights)
    path, score = second_order_viterbi(U, T, W3, s, e, offsets, allowed)
    assert (fb.n_fallback > 0) == (scale > 1)
    big, tri = np.zeros((L, L)), np.zeros((L, L, L))
    start_c, end_c = np.zeros(L), np.zeros(L)
    for i, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
        if a == b:
            assert fb.log_z[i] == 0.0 and score[i] == 0.0
            continue
        log_z, marg, bi, tr, best, best_score = _enumerate(U[a:b], T, W3, s, e, allowed)
        np.testing.assert_allclose(fb.log_z[i], log_z, rtol=1e-12, atol=1e-9 * scale)
        np.testing.assert_allclose(fb.marginals[a:b], marg, atol=1e-10)
        np.testing.assert_array_equal(path[a:b], best)
        np.testing.assert_allclose(score[i], best_score, rtol=1e-12)
        big += weights[i] * bi
        tri += weights[i] * tr
        start_c += weights[i] * marg[0]
        end_c += weights[i] * marg[-1]
    np.testing.assert_allclose(fb.transition_counts, big, atol=1e-10)
    np.testing.assert_allclose(fb.trigram_counts, tri, atol=1e-10)
    np.testing.assert_allclose(fb.start_counts, start_c, atol=1e-10)
    np.testing.assert_allclose(fb.end_counts, end_c, atol=1e-10)


def test_results_do_not_depend_on_threads():
    rng = np.random.default_rng(7)
    U, T, W3, s, e, offsets, allowed = _random_chain(rng, 4, rng.integers(1, 9, size=90))
    runs = [second_order_forward_backward(U, T, W3, s, e, offsets, allowed, n_threads=k)
            for k in (1, 2, 4)]
    for r in runs[1:]:
        np.testing.assert_array_equal(r.log_z, runs[0].log_z)
        np.testing.assert_array_equal(r.trigram_counts, runs[0].trigram_counts)
        np.testing.assert_array_equal(r.transition_counts, runs[0].transition_counts)
    paths = [second_order_viterbi(U, T, W3, s, e, offsets, allowed, n_threads=k)[0]
             for k in (1, 4)]
    np.testing.assert_array_equal(paths[0], paths[1])


def test_pair_states_lists_allowed_triples():
    allowed = np.array([[True, True, False], [False, True, True], [True, False, False]])
    states = PairStates(allowed)
    assert states.n_pairs == 5
    expected = {(a, b, c) for a, b, c in itertools.product(range(3), repeat=3)
                if allowed[a, b] and allowed[b, c]}
    assert {tuple(t) for t in states.triples} == expected
    with pytest.raises(ValueError, match="square boolean"):
        PairStates(np.ones((2, 3), dtype=bool))


def test_forbidden_start_is_respected_by_viterbi():
    rng = np.random.default_rng(3)
    U, T, W3, s, e, offsets, allowed = _random_chain(rng, 3, [4])
    U[0, 1] = 50.0
    s[1] = -np.inf
    path, score = second_order_viterbi(U, T, W3, s, e, offsets, allowed)
    assert path[0] != 1 and np.isfinite(score[0])


# ---------------------------------------------------------------- the model

import scipy.sparse as sp  # noqa: E402

from sklearn_crfloss import CRFTagger, LOPTagger  # noqa: E402
from sklearn_crfloss.io import export_crfsuite, load_model, save_model  # noqa: E402
from sklearn_crfloss.losses import LOSSES  # noqa: E402
from sklearn_crfloss._model import (allowed_label_pairs, make_objective,  # noqa: E402
                                    ParameterLayout, SecondOrderLayout)


def _objective(rng, L=3, lengths=(1, 2, 4, 5, 3)):
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
    X = sp.random(offsets[-1], 6, density=0.5, random_state=1, format="csr")
    y = rng.integers(0, L, offsets[-1]).astype(np.intp)
    layout = SecondOrderLayout(ParameterLayout(6, L), allowed_label_pairs(y, offsets, L))
    weights = rng.random(len(lengths)) + 0.5
    return make_objective(X, y, offsets, layout, sample_weight=weights), X, y, offsets, weights


@pytest.mark.parametrize("name", ["cll", "softmax_margin"])
def test_objective_value_and_gradient(name):
    rng = np.random.default_rng(5)
    objective, X, y, offsets, weights = _objective(rng)
    layout = objective.layout
    theta = rng.normal(size=layout.n_params)
    loss = LOSSES[name]()
    value, grad = objective.loss_value_and_grad(theta, loss)
    # Value by enumeration: -sum_i w_i log p(y_i) (+ Hamming cost inside Z for softmax-margin).
    W, T, s, e = layout.unpack(theta)
    W3 = layout.trigram(theta)
    U = X @ W
    expected = 0.0
    for i, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
        n = b - a
        ys = [np.array(q) for q in itertools.product(range(3), repeat=n)
              if all(layout.states.allowed[q[t - 1], q[t]] for t in range(1, n))]
        scores = np.array([second_order_scores(U[a:b], T, W3, s, e, q, [0, n])[0] for q in ys])
        if name == "softmax_margin":
            scores = scores + np.array([np.sum(q != y[a:b]) for q in ys])
        gold = second_order_scores(U[a:b], T, W3, s, e, y[a:b], [0, n])[0]
        expected += weights[i] * (logsumexp(scores) - gold)
    np.testing.assert_allclose(value, expected, rtol=1e-10)
    step = 1e-6
    numeric = np.array([(objective.loss_value_and_grad(theta + step * d, loss)[0]
                         - objective.loss_value_and_grad(theta - step * d, loss)[0]) / (2 * step)
                        for d in np.eye(layout.n_params)])
    np.testing.assert_allclose(grad, numeric, atol=1e-6)


def _toy():
    X = [[{"w": w} for w in s.split()] for s in
         ("the dog runs", "a cat sleeps", "the big dog", "dogs run fast", "a cat", "run")]
    y = [["B-NP", "I-NP", "B-VP"], ["B-NP", "I-NP", "B-VP"], ["B-NP", "I-NP", "I-NP"],
         ["B-NP", "B-VP", "O"], ["B-NP", "I-NP"], ["B-VP"]]
    return X, y


def test_tagger_order2_fits_predicts_and_scores():
    X, y = _toy()
    crf = CRFTagger(order=2, C=10.0).fit(X, y)
    assert crf.transition2_.shape == (4, 4, 4)
    assert crf.predict(X) == y
    labels = crf.classes_.tolist()
    allowed = crf.allowed_pairs_
    assert allowed[labels.index("B-NP"), labels.index("I-NP")]
    assert not allowed[labels.index("O"), labels.index("I-NP")]  # never seen
    # sequence_log_proba and predict_marginals agree with enumeration of allowed labellings.
    Xc, offsets = crf._vectorize(X[:1])
    U = crf._unary(Xc)
    ys = [np.array(q) for q in itertools.product(range(4), repeat=3)
          if all(allowed[q[t - 1], q[t]] for t in (1, 2))]
    scores = np.array([second_order_scores(U, crf.transition_, crf.transition2_, crf.start_,
                                           crf.end_, q, offsets)[0] for q in ys])
    log_p = scores - logsumexp(scores)
    gold = np.array([labels.index(v) for v in y[0]])
    k = next(i for i, q in enumerate(ys) if np.array_equal(q, gold))
    np.testing.assert_allclose(crf.sequence_log_proba(X[:1], y[:1])[0], log_p[k], rtol=1e-10)
    marg = np.zeros((3, 4))
    for q, p in zip(ys, np.exp(log_p)):
        marg[np.arange(3), q] += p
    np.testing.assert_allclose(crf.predict_marginals(X[:1])[0], marg, atol=1e-12)
    bad = [["I-NP", "O", "I-NP"]]  # pairs the model does not allow: probability 0
    assert crf.sequence_log_proba(X[:1], bad)[0] == -np.inf


def test_order2_with_constraints_uses_the_scheme_pairs():
    X, y = _toy()
    crf = CRFTagger(order=2, constraints="iob2", C=10.0, loss="softmax_margin").fit(X, y)
    labels = crf.classes_.tolist()
    assert crf.allowed_pairs_[labels.index("O"), labels.index("B-NP")]  # allowed, never seen
    assert not crf.allowed_pairs_[labels.index("O"), labels.index("I-NP")]
    assert crf.predict(X) == y
    with pytest.raises(ValueError, match="training sequence 1 has a label bigram"):
        CRFTagger(order=2, constraints="iob2").fit(X[:2], [y[0], ["B-NP", "O", "I-NP"]])


def test_order1_has_no_trigram_state():
    X, y = _toy()
    crf = CRFTagger().fit(X, y)
    assert crf.transition2_ is None and crf.allowed_pairs_ is None


@pytest.mark.parametrize("params, match", [
    (dict(loss="mce"), "loss='mce'"),
    (dict(loss="perceptron"), "loss='perceptron'"),
    (dict(solver="sgd"), "online solver 'sgd'"),
    (dict(decoder="mea"), "decoder='mea'"),
    (dict(early_stopping=True), "early_stopping"),
])
def test_order2_refuses_at_fit(params, match):
    X, y = _toy()
    with pytest.raises(ValueError, match=f"order=2 does not support .*{match}"):
        CRFTagger(order=2, max_iter=2, **params).fit(X * 4, y * 4)


def test_order2_refuses_bigram_templates_and_warm_start():
    X, y = _toy()
    with_bigrams = [[dict(t, **{"~w": t["w"]}) for t in s] for s in X]  # label-bigram attributes
    with pytest.raises(ValueError, match="order=2 does not support observation-dependent"):
        CRFTagger(order=2).fit(with_bigrams, y)
    crf = CRFTagger(order=2, warm_start=True, C=10.0).fit(X, y)
    with pytest.raises(ValueError, match="order=2 does not support warm_start"):
        crf.fit(X, y)


@pytest.mark.parametrize("method", ["predict_nbest", "explain", "partial_fit", "mea",
                                    "export_crfsuite"])
def test_order2_refuses_at_the_call(method, tmp_path):
    X, y = _toy()
    crf = CRFTagger(order=2, C=10.0).fit(X, y)
    with pytest.raises(ValueError, match="order=2"):
        if method == "predict_nbest":
            crf.predict_nbest(X)
        elif method == "explain":
            crf.explain(X[0], 1)
        elif method == "partial_fit":
            crf.partial_fit(X, y)
        elif method == "mea":
            crf.set_params(decoder="mea").predict(X)
        else:
            export_crfsuite(crf, tmp_path / "m.crfsuite")


def test_lop_refuses_a_second_order_estimator():
    X, y = _toy()
    with pytest.raises(ValueError, match="order=2"):
        LOPTagger(estimator=CRFTagger(order=2)).fit(X, y)


def test_order2_model_file_round_trip(tmp_path):
    X, y = _toy()
    crf = CRFTagger(order=2, C=10.0).fit(X, y)
    save_model(crf, tmp_path / "m.json")
    back = load_model(tmp_path / "m.json")
    np.testing.assert_array_equal(back.transition2_, crf.transition2_)
    np.testing.assert_array_equal(back.allowed_pairs_, crf.allowed_pairs_)
    assert back.predict(X) == crf.predict(X)


@pytest.mark.parametrize("params", [dict(prior="l1", C=10.0), dict(tag_scheme="iobes", C=10.0),
                                    dict(init="cll", loss="softmax_margin", C=10.0)])
def test_order2_trains_with_other_priors_solvers_and_schemes(params):
    X, y = _toy()
    crf = CRFTagger(order=2, **params).fit(X, y)
    assert crf.predict(X) == y
    if "tag_scheme" in params:  # the pairs the scheme allows: E-NP may follow I-NP
        labels = crf.classes_.tolist()
        assert crf.allowed_pairs_[labels.index("I-NP"), labels.index("E-NP")]
        assert not crf.allowed_pairs_[labels.index("O"), labels.index("I-NP")]


def test_order2_fit_is_bitwise_the_same_on_1_to_4_threads():
    rng = np.random.default_rng(11)
    words = ["the", "a", "dog", "cat", "runs", "big", "fast"]
    X = [[{"w": words[k]} for k in rng.integers(0, 7, size=n)] for n in rng.integers(1, 9, 60)]
    y = [[["B-NP", "I-NP", "B-VP", "O"][k % 4] for k in range(len(s))] for s in X]
    fits = [CRFTagger(order=2, n_jobs=k, max_iter=30).fit(X, y) for k in (1, 2, 4)]
    for crf in fits[1:]:
        np.testing.assert_array_equal(crf.coef_, fits[0].coef_)
        np.testing.assert_array_equal(crf.transition2_, fits[0].transition2_)
