"""MCE and MCE-F: the fast path against the general code, position-dependent transitions.

The fast path of MCE-F (``segment_match='labels'``) reads the maximum
incorrect output off the max-marginal tables and computes each segment's
competitor once; it must give the general code's value and gradient. The
max-product kernels of the MCE family take position-dependent transitions
(observation-dependent label bigrams), checked against enumeration.
"""

import itertools
import warnings

import numpy as np
import pytest
from conftest import make_switch_data
from _oracle import (max_incorrect_by_enumeration, position_brute_force, random_problem,
                     segment_margin_by_enumeration)
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.features import TemplateFeatures
from sklearn_crfloss.inference import (PositionTransitions, max_marginals, segment_margins,
                                       viterbi, viterbi_excluding)
from sklearn_crfloss.losses import MinimumClassificationError, SegmentFScoreMCE, check_loss

CLASSES = np.array(["B-NP", "I-NP", "O", "B-VP", "I-VP"])


def _problem(seed, n_labels=5, lengths=(1, 4, 6, 3, 7), positions=False, scale=1.5):
    rng = np.random.default_rng(seed)
    U, T, s, e, y, off = random_problem(rng, n_labels, lengths, scale)
    if positions:
        T = PositionTransitions(rng.normal(scale=scale, size=(3, n_labels, n_labels)),
                                rng.integers(3, size=U.shape[0]).astype(np.intp))
    return U, T, s, e, y, off


def _matrices(T, offsets, k):
    """The (length, L, L) transitions of sequence k (row 0 unused) and its slice."""
    a, b = offsets[k], offsets[k + 1]
    if isinstance(T, PositionTransitions):
        return T.dense()[a:b]
    return np.broadcast_to(T, (b - a,) + T.shape)


def _enumerate(U, mats, s, e):
    """All label paths of one chain with per-position transitions, and their scores."""
    n, L = U.shape
    paths = np.array(np.meshgrid(*[np.arange(L)] * n, indexing="ij")).reshape(n, -1).T
    scores = s[paths[:, 0]] + e[paths[:, -1]] + U[np.arange(n), paths].sum(axis=1)
    for t in range(1, n):
        scores = scores + mats[t][paths[:, t - 1], paths[:, t]]
    return paths, scores


def _check_one_sided(f, arrays, grads, eps=1e-6):
    """Each gradient entry against a one-sided difference of ``f(*arrays)``.

    The margins are piecewise linear in the potentials: a small step's
    difference is exact away from ties.
    """
    base = f(*arrays)
    for arr, grad in zip(arrays, grads):
        for idx in np.ndindex(arr.shape):
            old = arr[idx]
            arr[idx] = old + eps
            fd = (f(*arrays) - base) / eps
            arr[idx] = old
            assert_allclose(grad[idx], fd, atol=1e-5)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("positions", [False, True])
@pytest.mark.parametrize("false_positives", ["gold", "max_incorrect", "viterbi"])
def test_fast_path_equals_the_general_code(seed, positions, false_positives):
    U, T, s, e, y, off = _problem(seed, positions=positions)
    w = np.random.default_rng(seed).uniform(0.5, 2.0, size=off.shape[0] - 1)
    fast = SegmentFScoreMCE(false_positives=false_positives).set_classes(CLASSES)
    general = SegmentFScoreMCE(false_positives=false_positives).set_classes(CLASSES)
    general._fast_path = False
    got = fast.value_and_grad(U, T, s, e, y, off, sample_weight=w)
    want = general.value_and_grad(U, T, s, e, y, off, sample_weight=w)
    assert_allclose(got[0], want[0], rtol=1e-10)
    for g, h in zip(got[1:], want[1:]):
        assert g.shape == h.shape
        assert_allclose(g, h, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("positions", [False, True])
@pytest.mark.parametrize("segment_match", ["labels", "chunks"])
def test_two_threads_give_the_one_thread_value_and_gradient(positions, segment_match):
    # 400 sequences: many blocks of 8 for each thread (the tables, the
    # span passes and their gradient accumulators run over sequences).
    lengths = np.random.default_rng(7).integers(0, 30, size=400)
    U, T, s, e, y, off = _problem(7, lengths=lengths, positions=positions)
    loss = SegmentFScoreMCE(segment_match=segment_match).set_classes(CLASSES)
    one = loss.value_and_grad(U, T, s, e, y, off, n_threads=1)
    two = loss.value_and_grad(U, T, s, e, y, off, n_threads=2)
    assert_allclose(two[0], one[0], rtol=1e-12)
    for g, h in zip(two[1:], one[1:]):
        assert_allclose(g, h, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_position_max_marginals_and_max_incorrect_match_enumeration(seed):
    U, T, s, e, y, off = _problem(seed, n_labels=3, lengths=(1, 4, 5), positions=True)
    p1 = viterbi(U, T, s, e, off)[0]
    y[off[1]:off[2]] = p1[off[1]:off[2]]  # a gold path that is the Viterbi path
    mm = max_marginals(U, T, s, e, off)
    path, score = viterbi_excluding(U, T, s, e, off, y)
    for k in range(off.shape[0] - 1):
        a, b = off[k], off[k + 1]
        paths, scores = _enumerate(U[a:b], _matrices(T, off, k), s, e)
        for t in range(b - a):
            for j in range(3):
                assert_allclose(mm.alpha[a + t, j] + mm.beta[a + t, j],
                                scores[paths[:, t] == j].max(), rtol=1e-12)
        wrong = np.any(paths != y[a:b], axis=1)
        best = np.flatnonzero(wrong)[np.argmax(scores[wrong])]
        assert_array_equal(path[a:b], paths[best])
        assert_allclose(score[k], scores[best], rtol=1e-12)


def test_position_transitions_that_are_all_equal_match_the_dense_kernels():
    U, T, s, e, y, off = _problem(5, n_labels=4, lengths=(2, 5, 3))
    P = PositionTransitions(T[None], np.zeros(U.shape[0], dtype=np.intp))
    segs = (np.array([0, 1, 1, 2]), np.array([0, 0, 2, 1]), np.array([2, 3, 5, 3]))
    coef = np.array([0.5, -1.0, 2.0, 1.5])
    dense = segment_margins(U, T, s, e, off, y, segs, coef=coef)
    by_pos = segment_margins(U, P, s, e, off, y, segs, coef=coef)
    assert_array_equal(dense[0], by_pos[0])
    assert_array_equal(dense[1], by_pos[1])
    assert_array_equal(dense[2][1], by_pos[2][1][0])
    assert_array_equal(viterbi_excluding(U, T, s, e, off, y)[0],
                       viterbi_excluding(U, P, s, e, off, y)[0])
    # and the dense kernels against the oracle of the plain chain
    for m, (k, a, b) in enumerate(zip(*segs)):
        o = off[k]
        want = segment_margin_by_enumeration(U[o:off[k + 1]], T, s, e, a, b, y[o + a:o + b])
        assert_allclose([dense[0][m], dense[1][m]], want, rtol=1e-12)
        if a == 0 and b == off[k + 1] - o:
            assert_allclose(viterbi_excluding(U, T, s, e, off, y)[1][k],
                            max_incorrect_by_enumeration(U[o:off[k + 1]], T, s, e,
                                                         y[o:off[k + 1]])[1], rtol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_position_segment_margins_match_enumeration_and_their_gradient(seed):
    U, T, s, e, y, off = _problem(seed, n_labels=3, lengths=(1, 4, 5), positions=True)
    rng = np.random.default_rng(seed)
    segs = (np.array([0, 1, 1, 2, 2]), np.array([0, 0, 2, 1, 3]), np.array([1, 3, 4, 4, 5]))
    g_carry, g_other, _ = segment_margins(U, T, s, e, off, y, segs)
    for m, (k, a, b) in enumerate(zip(*segs)):
        o = off[k]
        paths, scores = _enumerate(U[o:off[k + 1]], _matrices(T, off, k), s, e)
        carry = np.all(paths[:, a:b] == y[o + a:o + b], axis=1)
        assert_allclose([g_carry[m], g_other[m]], [scores[carry].max(), scores[~carry].max()],
                        rtol=1e-12)
    coef = rng.normal(size=5)
    _, _, (dU, dT, ds, de) = segment_margins(U, T, s, e, off, y, segs, coef=coef)
    assert dT.shape == T.table.shape

    def f(U, table, s, e):
        c, o, _ = segment_margins(U, T._replace(table=table), s, e, off, y, segs)
        return float(coef @ (c - o))

    _check_one_sided(f, (U, T.table.copy(), s, e), (dU, dT, ds, de))


@pytest.mark.parametrize("loss", [MinimumClassificationError(),
                                  MinimumClassificationError(psi=2.0),
                                  SegmentFScoreMCE(), SegmentFScoreMCE(false_positives="viterbi"),
                                  SegmentFScoreMCE(segment_match="chunks"),
                                  SegmentFScoreMCE(segment_match="chunks",
                                                   false_positives="max_incorrect"),
                                  SegmentFScoreMCE(segment_match="chunks",
                                                   false_positives="viterbi")],
                         ids=["mce", "mce-psi2", "mce_f", "mce_f-viterbi", "mce_f-chunks",
                              "mce_f-chunks-max_incorrect", "mce_f-chunks-viterbi"])
def test_losses_with_position_transitions_by_finite_differences(loss):
    U, T, s, e, y, off = _problem(1, n_labels=5, lengths=(3, 4, 2), positions=True)
    if isinstance(loss, SegmentFScoreMCE):
        loss.set_classes(CLASSES)
    value, dU, dT, ds, de = loss.value_and_grad(U, T, s, e, y, off)
    assert dT.shape == T.table.shape
    # the value against the dense form of the same transitions, one matrix per token
    dense = PositionTransitions.from_dense(T.dense())
    assert_allclose(loss.value_and_grad(U, dense, s, e, y, off)[0], value, rtol=1e-12)
    table = T.table.copy()

    def f():
        return loss.value_and_grad(U, T._replace(table=table), s, e, y, off)[0]

    eps = 1e-6
    for arr, grad in ((U, dU), (table, dT), (s, ds), (e, de)):
        for idx in list(np.ndindex(arr.shape))[::3]:
            old = arr[idx]
            arr[idx] = old + eps
            up = f()
            arr[idx] = old - eps
            down = f()
            arr[idx] = old
            assert_allclose(grad[idx], (up - down) / (2 * eps), rtol=1e-4, atol=1e-6)


def test_check_loss_passes_on_the_fast_path():
    loss = SegmentFScoreMCE()
    assert loss._fast_path
    report = check_loss(loss, random_state=3, raise_on_failure=False)
    assert report.passed, report
    assert any(r.check == "gradient" for r in report.results)


def _switch_data(n=40, length=6, seed=0):
    """Chunk labels that the previous label and column 1 decide: a bigram sees it."""
    return make_switch_data(n, length, seed, ["B-NP", "O"], _chunk_step)


def _chunk_step(prev, op):
    """'keep': I-NP after a chunk label, O after O; 'flip': O after a chunk label, else B-NP."""
    return ("I-NP" if prev != "O" else "O") if op == "keep" else ("O" if prev != "O" else "B-NP")


@pytest.mark.parametrize("loss", ["mce", "mce_f"])
def test_mce_losses_fit_a_bigram_template(loss):
    X, y = _switch_data()
    Xt, yt = _switch_data(seed=1)
    features = TemplateFeatures("U00:%x[0,0]\nU01:%x[0,1]\nB\nB01:%x[0,1]\n").fit([])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        crf = CRFTagger(loss=loss, init="cll", C=10.0, solver="quickprop", max_iter=20,
                        n_jobs=1).fit(features.transform(X), y)
    assert crf.bigram_coef_.shape == (2, 3, 3)
    assert np.any(crf.bigram_coef_ != 0)
    assert crf.score(features.transform(Xt), yt) > 0.95


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("positions", [False, True])
def test_table_kernels_of_the_fast_path_match_enumeration(seed, positions):
    from sklearn_crfloss.losses._mce_f_fast import _Spans, max_marginal_tables
    from sklearn_crfloss._chain._dispatch import max_incorrect_from_tables
    from sklearn_crfloss._chain import Chain, transition_table

    U, T, s, e, y, off = _problem(seed, n_labels=3, lengths=(1, 4, 5, 3), positions=positions)
    c = Chain.checked(U, T, s, e, off, 1, positions=True)
    mm, best_off_y = max_marginal_tables(c, y)  # and each token's best max-marginal off y
    table, index = transition_table(c.transition)
    for exclude, kept in itertools.product((True, False), ((None, None), best_off_y)):
        path, score = np.empty(U.shape[0], dtype=np.intp), np.zeros(off.shape[0] - 1)
        max_incorrect_from_tables(mm.alpha, mm.beta, mm.bp_fwd, mm.bp_bwd, c.offsets, y, exclude,
                                  path, score, 1, *kept)
        for k in range(off.shape[0] - 1):
            a, b = off[k], off[k + 1]
            paths, scores = _enumerate(U[a:b], _matrices(T, off, k), s, e)
            ok = np.any(paths != y[a:b], axis=1) if exclude else np.ones(len(paths), bool)
            best = np.flatnonzero(ok)[np.argmax(scores[ok])]
            assert_array_equal(path[a:b], paths[best])
            assert_allclose(score[k], scores[best], rtol=1e-12)
    # segment values read off the tables, and the gradient through the kept nodes
    segs = (np.array([0, 1, 1, 2, 3]), np.array([0, 0, 2, 1, 0]), np.array([1, 2, 4, 5, 3]))
    need = np.array([True, True, False, True, True])
    spans = _Spans(c, mm, y, segs, need, best_off_y)
    scanned = _Spans(c, mm, y, segs, need)  # the same, scanning the tables
    assert_array_equal(spans.other, scanned.other)
    assert_array_equal(spans.nodes, scanned.nodes)
    for m, (k, a, b) in enumerate(zip(*segs)):
        o = off[k]
        paths, scores = _enumerate(U[o:off[k + 1]], _matrices(T, off, k), s, e)
        carry = np.all(paths[:, a:b] == y[o + a:o + b], axis=1)
        other = scores[~carry].max() if need[m] and np.any(~carry) else -np.inf
        assert_allclose([spans.carry[m], spans.other[m]], [scores[carry].max(), other],
                        rtol=1e-12)
    coef, coef_other = np.random.default_rng(seed).normal(size=(2, 5))
    d_unary = np.zeros_like(U)
    acc = (np.zeros((1, table.size)), np.zeros((1, 2 * U.shape[1])))
    spans.add_gradient(coef, coef_other, d_unary, acc)

    def f(U, table, s, e):
        c2 = Chain.checked(U, T._replace(table=table) if positions else table[0], s, e, off, 1,
                            positions=True)
        sp = _Spans(c2, max_marginal_tables(c2)[0], y, segs, need)
        return float(coef @ sp.carry - coef_other @ np.where(np.isfinite(sp.other), sp.other, 0))

    _check_one_sided(f, (U, table.copy(), s, e),
                     (d_unary, acc[0][0].reshape(table.shape), acc[1][0, :3], acc[1][0, 3:]))


@pytest.mark.parametrize("loss, init", [("mce", "auto"), ("mce", None), ("mce_f", "auto")])
def test_mce_losses_fit_a_bigram_template_with_their_default_schedules(loss, init):
    # 'suzuki2006' (from zero: SGD epochs, then QuickProp) and 'gpd_quickprop'
    # take the bigram blocks because every stage does.
    X, y = _switch_data()
    Xt, yt = _switch_data(seed=1)
    features = TemplateFeatures("U00:%x[0,0]\nU01:%x[0,1]\nB\nB01:%x[0,1]\n").fit([])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        crf = CRFTagger(loss=loss, init=init, random_state=0,
                        n_jobs=1).fit(features.transform(X), y)
    if (loss, init) != ("mce", "auto"):  # the ten SGD epochs ran, then QuickProp
        assert crf.n_iter_ > 10
    assert crf.bigram_coef_.shape == (2, 3, 3)
    assert np.any(crf.bigram_coef_ != 0)
    assert crf.score(features.transform(Xt), yt) > 0.95
