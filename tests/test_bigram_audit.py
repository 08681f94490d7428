"""Position-dependent transitions against enumeration: where each entry point is checked.

Every kernel and inference entry point that takes a
:class:`~sklearn_crfloss.inference.PositionTransitions` (observation-
dependent label bigrams) is checked against brute-force enumeration
(``_oracle``) or against differences of an enumerated definition:

=============================================  ==========================================
entry point                                    tests
=============================================  ==========================================
inference.forward_backward (scaled, log        test_bigram_kernels: forward_backward,
space)                                         large_potentials; here: sum_and_max_product
inference.viterbi, sequence_scores             test_bigram_kernels: viterbi_and_scores;
                                               here: sum_and_max_product, empty_sequences
inference.viterbi_nbest, viterbi_2best         test_bigram_kernels: nbest; here: nbest,
                                               two_best
inference.marginals_vjp                        test_bigram_kernels: marginals_vjp (of
                                               forward_backward); here: marginals_vjp
inference.max_marginals, viterbi_excluding,    test_fused_mce: position_max_marginals,
segment_margins                                position_segment_margins; here:
                                               max_product_kernels
MCE-F's fast path (_mce_f_fast)                test_fused_mce: table_kernels_of_the_fast_path,
                                               fast_path_equals_the_general_code
decoding.viterbi_decode, apply_allowed         test_bigram_kernels: constraints
decoding.nbest_decode, mea_decode              here: nbest (constrained), mea_decoding
every loss with LossTags.label_bigrams         here: every_loss (value and table gradient);
                                               through the objective's chain rule:
                                               test_bigram_tagger and test_bigram_online
                                               objective_value_by_enumeration,
                                               test_fused_mce: losses_with_position
SGD, compiled loop                             test_bigram_online: sgd_step (compiled),
                                               sgd_scaling, sgd_large_potentials
SGD, generic path (_bigram_rows)               test_bigram_online: sgd_step (generic);
                                               here: sgd_generic_step (marginal losses)
perceptron and MIRA rules                      here: online_rule_step
LOPTagger's pool and label experts             test_bigram_online: lop_*; test_lop_bigrams
=============================================  ==========================================
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import logsumexp, softmax

from sklearn_crfloss._model._bigram_rows import local_columns, pack_blocks, split_bigram_columns
from sklearn_crfloss.decoding import mea_decode, nbest_decode
from sklearn_crfloss.inference import (PositionTransitions, forward_backward, marginals_vjp,
                                       max_marginals, segment_margins, sequence_scores, viterbi,
                                       viterbi_2best, viterbi_excluding, viterbi_nbest)
from sklearn_crfloss.losses import (LOSSES, MIRA, MinimumClassificationError, MixedLoss, Risk,
                                    SegmentFScoreMCE, StructuredPerceptron,
                                    LabelwiseAccuracyLoss, get_loss_tags)
from sklearn_crfloss.solvers._online import MIRA as MIRARule
from sklearn_crfloss.solvers._online import StructuredPerceptron as PerceptronRule

from _oracle import position_paths
from test_bigram_online import X_TINY, Y_TINY, _enumerated, _numeric_grad, _prepared, _sgd_model
from test_bigram_tagger import TEMPLATE, _fit, _objective, _switch_data

SETTINGS = settings(max_examples=20, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
CHUNK_CLASSES = np.array(["B-NP", "B-VP", "I-NP", "I-VP", "O"])


@st.composite
def problems(draw, min_length=0, max_labels=3):
    """Potentials of a few short chains with position-dependent transitions.

    The transitions are a shared table with a random index (as the
    estimator builds them) or one matrix per token.
    """
    seed = draw(st.integers(0, 2**32 - 1))
    L = draw(st.integers(2, max_labels))
    lengths = draw(st.lists(st.integers(min_length, 4), min_size=1, max_size=4))
    n_matrices = draw(st.sampled_from([None, 1, 3]))
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
    n = int(offsets[-1])
    unary = rng.normal(size=(n, L))
    start, end = rng.normal(size=L), rng.normal(size=L)
    if n_matrices is None:
        trans = PositionTransitions(rng.normal(size=(max(n, 1), L, L)),
                                    np.arange(n, dtype=np.intp))
    else:
        trans = PositionTransitions(rng.normal(size=(n_matrices, L, L)),
                                    rng.integers(n_matrices, size=n).astype(np.intp))
    return unary, trans, start, end, offsets, draw(st.sampled_from([1, 2]))


def _chains(unary, trans, start, end, offsets):
    """(a, b, paths, scores) of every sequence, by enumeration (empty ones skipped)."""
    dense = trans.dense()
    for a, b in zip(offsets[:-1], offsets[1:]):
        if b > a:
            yield (a, b, *position_paths(unary[a:b], dense[a:b], start, end))


def _allowed(rng, L):
    """Random constraints (transitions, first and last labels) that label 0 always passes."""
    allowed = (rng.random((L, L)) < 0.6, rng.random(L) < 0.6, rng.random(L) < 0.6)
    for a in allowed:
        a[(0,) * a.ndim] = True
    return allowed


def _passes(paths, allowed):
    """Which enumerated paths the constraints allow."""
    ok = allowed[1][paths[:, 0]] & allowed[2][paths[:, -1]]
    return ok & np.all(allowed[0][paths[:, :-1], paths[:, 1:]], axis=1)


@SETTINGS
@given(problems())
def test_sum_and_max_product_passes_match_the_enumeration(problem):
    """forward_backward (log Z, marginals, the counts of each matrix of the table, the
    boundary counts), viterbi and sequence_scores, empty sequences included."""
    unary, trans, start, end, offsets, n_threads = problem
    L = unary.shape[1]
    fb = forward_backward(unary, trans, start, end, offsets, n_threads=n_threads)
    path, best = viterbi(unary, trans, start, end, offsets, n_threads)
    assert_allclose(sequence_scores(unary, trans, start, end, path, offsets), best,
                    rtol=1e-12, atol=1e-12)
    log_z = np.zeros(offsets.shape[0] - 1)
    counts, bounds = np.zeros_like(trans.table), np.zeros((2, L))
    for a, b, paths, scores in _chains(unary, trans, start, end, offsets):
        k = int(np.searchsorted(offsets, a, side="right")) - 1
        log_z[k] = logsumexp(scores)
        p = np.exp(scores - log_z[k])
        for t in range(b - a):
            assert_allclose(fb.marginals[a + t], np.bincount(paths[:, t], weights=p,
                                                             minlength=L), atol=1e-12)
            if t:
                np.add.at(counts[trans.index[a + t]], (paths[:, t - 1], paths[:, t]), p)
        np.add.at(bounds, (0, paths[:, 0]), p)
        np.add.at(bounds, (1, paths[:, -1]), p)
        assert_array_equal(path[a:b], paths[np.argmax(scores)])
        assert best[k] == pytest.approx(scores.max(), rel=1e-12, abs=1e-12)
    assert_allclose(fb.log_z, log_z, rtol=1e-12, atol=1e-12)
    assert_allclose(fb.transition_counts, counts, atol=1e-12)
    assert_allclose([fb.start_counts, fb.end_counts], bounds, atol=1e-12)


@SETTINGS
@given(problems(), st.integers(1, 30), st.booleans())
def test_nbest_lists_the_k_best_sequences_of_the_enumeration(problem, n_best, constrained):
    """viterbi_nbest (and nbest_decode with constraints): the k best paths, in order, and
    their scores; -inf and 0 past the number of (allowed) labellings."""
    unary, trans, start, end, offsets, n_threads = problem
    L = unary.shape[1]
    allowed = _allowed(np.random.default_rng(n_best), L) if constrained else None
    paths, scores = (nbest_decode(unary, trans, start, end, offsets, n_best, allowed, n_threads)
                     if constrained else
                     viterbi_nbest(unary, trans, start, end, offsets, n_best, n_threads))
    k = paths.shape[0]
    assert k == min(n_best, L ** int(np.diff(offsets).max()))
    chains = {a: (every, s) for a, _, every, s in _chains(unary, trans, start, end, offsets)}
    for seq, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
        if b == a:  # one labelling, the empty one
            assert scores[seq, 0] == 0.0 and np.all(np.isneginf(scores[seq, 1:]))
            continue
        every, s = chains[a]
        if constrained:
            every, s = every[_passes(every, allowed)], s[_passes(every, allowed)]
        order = np.argsort(-s, kind="stable")[:k]
        m = order.shape[0]
        assert_array_equal(paths[:m, a:b], every[order])
        assert_allclose(scores[seq, :m], s[order], rtol=1e-12, atol=1e-12)
        assert np.all(np.isneginf(scores[seq, m:])) and np.all(paths[m:, a:b] == 0)


@SETTINGS
@given(problems(min_length=1))
def test_two_best_is_the_enumerated_runner_up(problem):
    unary, trans, start, end, offsets, n_threads = problem
    path1, path2, score1, score2 = viterbi_2best(unary, trans, start, end, offsets, n_threads)
    for k, (a, b, paths, scores) in enumerate(_chains(unary, trans, start, end, offsets)):
        order = np.argsort(-scores, kind="stable")
        assert_array_equal(path1[a:b], paths[order[0]])
        assert score1[k] == pytest.approx(scores[order[0]], rel=1e-12, abs=1e-12)
        if len(order) > 1:
            assert_array_equal(path2[a:b], paths[order[1]])
            assert score2[k] == pytest.approx(scores[order[1]], rel=1e-12, abs=1e-12)


@SETTINGS
@given(problems(min_length=1), st.booleans())
def test_mea_decoding_maximises_the_enumerated_expected_accuracy(problem, constrained):
    """Posterior (MEA) decoding: the per-token argmax of the enumerated marginals, or the
    allowed path with the largest sum of their logs; its score the sum of its marginals."""
    unary, trans, start, end, offsets, n_threads = problem
    L = unary.shape[1]
    allowed = _allowed(np.random.default_rng(unary.shape[0]), L) if constrained else None
    path, score = mea_decode(unary, trans, start, end, offsets, allowed, n_threads)
    for k, (a, b, paths, scores) in enumerate(_chains(unary, trans, start, end, offsets)):
        p = softmax(scores)
        marg = np.array([np.bincount(paths[:, t], weights=p, minlength=L)
                         for t in range(b - a)])
        if allowed is None:
            best = np.argmax(marg, axis=1)
        else:
            ok = _passes(paths, allowed)
            gain = np.log(marg)[np.arange(b - a), paths].sum(axis=1)
            best = paths[np.flatnonzero(ok)[np.argmax(gain[ok])]]
        assert_array_equal(path[a:b], best)
        assert score[k] == pytest.approx(marg[np.arange(b - a), best].sum(), rel=1e-10)


@SETTINGS
@given(problems(min_length=1, max_labels=4))
def test_max_product_kernels_match_the_enumeration(problem):
    """max_marginals, viterbi_excluding and segment_margins (the MCE family's kernels) on
    random tables, threads and lengths: the best scores of the enumerated paths with a
    label at a token, differing from the gold path, carrying or not a segment's labels."""
    unary, trans, start, end, offsets, n_threads = problem
    L = unary.shape[1]
    rng = np.random.default_rng(unary.size)
    y = rng.integers(L, size=unary.shape[0]).astype(np.intp)
    mm = max_marginals(unary, trans, start, end, offsets, n_threads)
    path, score = viterbi_excluding(unary, trans, start, end, offsets, y, n_threads)
    lengths = np.diff(offsets)
    begin = rng.integers(lengths)  # one segment per sequence, somewhere inside it
    segs = (np.arange(lengths.shape[0]), begin, rng.integers(begin, lengths) + 1)
    carry, other, _ = segment_margins(unary, trans, start, end, offsets, y, segs,
                                      n_threads=n_threads)
    for k, (a, b, paths, scores) in enumerate(_chains(unary, trans, start, end, offsets)):
        for t in range(b - a):
            best = [scores[paths[:, t] == j].max() for j in range(L)]
            assert_allclose(mm.alpha[a + t] + mm.beta[a + t], best, rtol=1e-12, atol=1e-12)
        wrong = np.flatnonzero(np.any(paths != y[a:b], axis=1))
        assert_array_equal(path[a:b], paths[wrong[np.argmax(scores[wrong])]])
        assert score[k] == pytest.approx(scores[wrong].max(), rel=1e-12, abs=1e-12)
        lo, hi = segs[1][k], segs[2][k]
        carries = np.all(paths[:, lo:hi] == y[a + lo:a + hi], axis=1)
        assert carry[k] == pytest.approx(scores[carries].max(), rel=1e-12, abs=1e-12)
        assert other[k] == pytest.approx(scores[~carries].max(), rel=1e-12, abs=1e-12)


@settings(max_examples=6, deadline=None, derandomize=True)
@given(problems(min_length=1))
def test_marginals_vjp_is_the_gradient_of_the_enumerated_marginals(problem):
    """The VJP of the marginals against central differences of sum(G * marginals), the
    marginals summed over every enumerated path (no kernel in the reference)."""
    unary, trans, start, end, offsets, n_threads = problem
    G = np.random.default_rng(unary.size).normal(size=unary.shape)
    L = unary.shape[1]

    def f(u, table, s, e):
        total = 0.0
        for a, b, paths, scores in _chains(u, trans._replace(table=table), s, e, offsets):
            p = softmax(scores)
            total += sum(G[a + t] @ np.bincount(paths[:, t], weights=p, minlength=L)
                         for t in range(b - a))
        return total

    got = marginals_vjp(unary, trans, start, end, offsets, G, n_threads=n_threads)
    args = [unary.copy(), trans.table.copy(), start.copy(), end.copy()]
    eps = 1e-6
    for arr, grad in zip(args, got):
        assert grad.shape == arr.shape
        numeric = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            old = arr[idx]
            arr[idx] = old + eps
            up = f(*args)
            arr[idx] = old - eps
            numeric[idx] = (up - f(*args)) / (2 * eps)
            arr[idx] = old
        assert_allclose(grad, numeric, atol=1e-7)


def _loss_instances():
    """One instance of every loss class that takes position-dependent transitions."""
    extra = {MinimumClassificationError: [MinimumClassificationError(psi=2.0)],
             SegmentFScoreMCE: [SegmentFScoreMCE(false_positives="viterbi")]
             + [SegmentFScoreMCE(segment_match="chunks", false_positives=fp)
                for fp in ("gold", "max_incorrect", "viterbi")]}
    losses = []
    for cls in [c for c in LOSSES.values() if get_loss_tags(c()).label_bigrams]:
        losses += [cls()] + extra.get(cls, [])
    return losses


@pytest.mark.parametrize("loss", _loss_instances(), ids=lambda loss: repr(loss))
def test_every_loss_matches_its_definition_by_enumeration(loss):
    """value_and_grad with PositionTransitions: the value against the loss's definition
    on the enumerated paths (enumerated_batch_loss: F-scores are not sums over sequences),
    the table's gradient against differences of that definition."""
    rng = np.random.default_rng(7)
    lengths, L = (3, 1, 3, 2), CHUNK_CLASSES.shape[0]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
    n = int(offsets[-1])
    unary, start, end = rng.normal(size=(n, L)), rng.normal(size=L), rng.normal(size=L)
    trans = PositionTransitions(rng.normal(size=(3, L, L)), rng.integers(3, size=n))
    y = np.array([0, 2, 4, 1, 4, 0, 2, 1, 3], dtype=np.intp)
    w = np.array([0.5, 1.0, 2.0, 1.5])
    if hasattr(loss, "set_classes"):
        loss.set_classes(CHUNK_CLASSES)

    def enumerated(table):
        chains = list(_chains(unary, trans._replace(table=table), start, end, offsets))
        return loss.enumerated_batch_loss([c[2] for c in chains], [c[3] for c in chains],
                                          [y[a:b] for a, b in zip(offsets[:-1], offsets[1:])],
                                          sample_weight=w)

    value, _, d_table, _, _ = loss.value_and_grad(unary, trans, start, end, y, offsets,
                                                  sample_weight=w)
    assert value == pytest.approx(enumerated(trans.table), rel=1e-9, abs=1e-12)
    assert d_table.shape == trans.table.shape
    eps = 1e-6
    for idx in [(0, 2, 4), (1, 4, 1), (1, 0, 2), (2, 3, 1)]:
        plus, minus = trans.table.copy(), trans.table.copy()
        plus[idx] += eps
        minus[idx] -= eps
        numeric = (enumerated(plus) - enumerated(minus)) / (2 * eps)
        assert d_table[idx] == pytest.approx(numeric, rel=1e-5, abs=1e-6), idx


@pytest.mark.parametrize("loss", [Risk(), LabelwiseAccuracyLoss(), MixedLoss(lam=0.3)],
                         ids=["risk", "labelwise", "mixed"])
def test_sgd_generic_step_is_the_enumerated_gradient(loss):
    """SGD's generic path (the losses without a compiled loop; a minibatch of two
    sequences with bigram attributes): theta - eta * the gradient of the enumerated
    per-sequence objective."""
    objective, layout, theta, *_ = _objective(X_TINY, Y_TINY, seed=4)
    loss = _prepared(loss)
    model = _sgd_model(loss, objective, theta)
    assert model.kind is None and model.blocks is not None
    eta, seqs = 0.1, np.array([0, 2], dtype=np.intp)
    value = model.generic_step(seqs, (eta, 0.0, 1.0, 0.0))
    assert value == pytest.approx(_enumerated(objective, theta, loss, seqs), rel=1e-10)
    numeric = _numeric_grad(lambda t: _enumerated(objective, t, loss, seqs), theta)
    step = model.theta(averaged=False) - theta
    assert_allclose(step, -eta * numeric, atol=1e-7)
    assert np.abs(step[layout.n_base:]).max() > 1e-4  # the blocks moved


@pytest.mark.parametrize("rule, loss", [(PerceptronRule(average=False), StructuredPerceptron()),
                                        (MIRARule(average=False), MIRA())],
                         ids=["perceptron", "mira"])
def test_online_rule_step_is_the_enumerated_subgradient(rule, loss):
    """One perceptron or MIRA step on a sequence with bigram attributes: the parameters
    move by -tau * the (sub)gradient of the enumerated loss, blocks included (perceptron
    tau = 1; MIRA tau = min(C, hinge / ||gradient||^2))."""
    objective, layout, theta, *_ = _objective(X_TINY, Y_TINY, seed=5)
    loss = _prepared(loss)
    offsets, w, C = objective.offsets, objective.sample_weight, 0.7
    X, Xb = split_bigram_columns(objective.X, offsets, layout.bigram_columns)
    for i in (0, 2):
        params = [np.array(p) for p in layout.unpack(theta)]
        params.append(np.array(layout.bigram_weights(theta)))
        rule._tail_masks = None
        rule._start(params, None, C, 3)
        rows = slice(offsets[i], offsets[i + 1])
        hinge = _enumerated(objective, theta, loss, [i]) / w[i]
        grad = _numeric_grad(lambda t: _enumerated(objective, t, loss, [i]), theta) / w[i]
        assert hinge > 0  # a mistake at this theta
        mistakes = rule._step(params, loss, *local_columns(X[rows]), *local_columns(Xb[rows]),
                              objective.y[rows], w[i], C)
        assert mistakes == 1.0
        tau = 1.0 if isinstance(rule, PerceptronRule) else min(C, hinge / (grad @ grad))
        step = pack_blocks(layout, *params[:4], params[4]) - theta
        assert_allclose(step, -w[i] * tau * grad, atol=1e-7)
        assert np.abs(step[layout.n_base:]).max() > 1e-4  # the blocks moved


def test_a_batch_of_empty_sequences_scores_zero():
    """sequence_scores on a batch whose sequences are all empty: 0.0 each, as with one
    matrix (the position-dependent path once raised a numpy casting error here), and a
    tagger with bigram attributes answers a batch of empty sentences like a plain one."""
    empty, offsets = np.zeros((0, 2)), np.array([0, 0, 0])
    trans = PositionTransitions(np.ones((1, 2, 2)), np.zeros(0, dtype=np.intp))
    for T in (trans, trans.table[0]):
        scores = sequence_scores(empty, T, np.ones(2), np.ones(2), np.zeros(0, np.intp), offsets)
        assert scores.dtype == np.float64 and np.all(scores == 0.0)
    X, y = _switch_data(n=10)
    _, crf = _fit(TEMPLATE, X, y)
    assert crf.bigram_coef_ is not None
    assert_array_equal(crf.sequence_log_proba([[], []]), [0.0, 0.0])
    assert crf.predict_nbest([[]], n_best=2) == [[([], 0.0)]]
