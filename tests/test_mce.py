"""MCE and MCE-F (Suzuki et al. 2006): kernels and losses against enumeration."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_crfloss.exceptions import UndefinedLossError
from sklearn_crfloss.inference import (
    max_marginals,
    segment_margins,
    sequence_scores,
    viterbi,
    viterbi_2best,
    viterbi_excluding,
)

from _oracle import (
    enumerate_paths,
    max_incorrect_by_enumeration,
    random_problem,
    segment_margin_by_enumeration,
    two_best_by_enumeration,
)


# ------------------------------------------------------------------ kernels


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n_labels", [2, 3, 4])
def test_viterbi_2best_matches_enumeration(seed, n_labels):
    rng = np.random.default_rng(seed)
    U, T, s, e, y, off = random_problem(rng, n_labels, lengths=(1, 2, 5, 4), scale=1.5)
    p1, p2, s1, s2 = viterbi_2best(U, T, s, e, off)
    for k in range(len(off) - 1):
        a, b = off[k], off[k + 1]
        q1, r1, q2, r2 = two_best_by_enumeration(U[a:b], T, s, e)
        assert_array_equal(p1[a:b], q1)
        assert_array_equal(p2[a:b], q2)
        assert_allclose([s1[k], s2[k]], [r1, r2], rtol=1e-12)
    # The first path is the Viterbi path; the scores are those of the paths.
    assert_array_equal(p1, viterbi(U, T, s, e, off)[0])
    assert_allclose(sequence_scores(U, T, s, e, p2, off), s2, rtol=1e-12)
    assert np.all(s2 <= s1)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n_labels", [2, 3, 4])
def test_viterbi_excluding_matches_enumeration_and_2best(seed, n_labels):
    rng = np.random.default_rng(seed)
    U, T, s, e, y, off = random_problem(rng, n_labels, lengths=(1, 2, 5, 4), scale=1.5)
    # Make one sequence's gold the Viterbi path, so the runner-up is needed.
    p1 = viterbi(U, T, s, e, off)[0]
    y[off[2]:off[3]] = p1[off[2]:off[3]]
    path, score = viterbi_excluding(U, T, s, e, off, y)
    q1, q2, r1, r2 = viterbi_2best(U, T, s, e, off)
    for k in range(len(off) - 1):
        a, b = off[k], off[k + 1]
        ref_path, ref_score = max_incorrect_by_enumeration(U[a:b], T, s, e, y[a:b])
        assert_array_equal(path[a:b], ref_path)
        assert_allclose(score[k], ref_score, rtol=1e-12)
        wrong = np.any(q1[a:b] != y[a:b])
        assert_array_equal(path[a:b], q1[a:b] if wrong else q2[a:b])


def test_viterbi_excluding_single_labelling():
    path, score = viterbi_excluding(np.zeros((1, 1)), np.zeros((1, 1)), np.zeros(1),
                                    np.zeros(1), [0, 1], [0])
    assert score[0] == -np.inf and path[0] == 0
    with pytest.raises(ValueError, match="label indices"):
        viterbi_excluding(np.zeros((2, 2)), np.zeros((2, 2)), np.zeros(2), np.zeros(2),
                          [0, 2], [0, 3])


def test_viterbi_2best_single_label_has_no_runner_up():
    U = np.zeros((1, 1))
    p1, p2, s1, s2 = viterbi_2best(U, np.zeros((1, 1)), np.zeros(1), np.zeros(1), [0, 1])
    assert s1[0] == 0.0 and s2[0] == -np.inf


def test_viterbi_2best_all_ties_gives_two_distinct_paths():
    U = np.zeros((4, 3))
    p1, p2, s1, s2 = viterbi_2best(U, np.zeros((3, 3)), np.zeros(3), np.zeros(3), [0, 4])
    assert s1[0] == s2[0] == 0.0
    assert np.any(p1 != p2)


@pytest.mark.parametrize("seed", range(5))
def test_max_marginals_match_enumeration(seed):
    rng = np.random.default_rng(seed)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(1, 4, 5), scale=1.5)
    mm = max_marginals(U, T, s, e, off)
    for k in range(len(off) - 1):
        a, b = off[k], off[k + 1]
        paths, scores = enumerate_paths(U[a:b], T, s, e)
        for t in range(b - a):
            for j in range(3):
                expected = scores[paths[:, t] == j].max()
                assert_allclose(mm.alpha[a + t, j] + mm.beta[a + t, j], expected, rtol=1e-12)
        # Following the backpointers from the best end recovers the Viterbi path.
        j = int(np.argmax(mm.alpha[b - 1] + e))
        path = [j]
        for t in range(b - 1, a, -1):
            path.append(int(mm.bp_fwd[t, path[-1]]))
        assert_array_equal(path[::-1], paths[np.argmax(scores)])
        j = int(np.argmax(s + U[a] + mm.beta[a]))
        path = [j]
        for t in range(a, b - 1):
            path.append(int(mm.bp_bwd[t, path[-1]]))
        assert_array_equal(path, paths[np.argmax(scores)])


def _random_segments(rng, off, n=12):
    seq, begin, stop = [], [], []
    for _ in range(n):
        k = int(rng.integers(len(off) - 1))
        length = off[k + 1] - off[k]
        a = int(rng.integers(length))
        b = int(rng.integers(a + 1, length + 1))
        seq.append(k), begin.append(a), stop.append(b)
    order = np.argsort(seq, kind="stable")
    return tuple(np.asarray(v)[order] for v in (seq, begin, stop))


@pytest.mark.parametrize("seed", range(5))
def test_segment_margins_match_enumeration(seed):
    rng = np.random.default_rng(seed)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(1, 4, 5), scale=1.5)
    segs = _random_segments(rng, off)
    g_carry, g_other, grad = segment_margins(U, T, s, e, off, y, segs)
    assert grad is None
    for m, (k, a, b) in enumerate(zip(*segs)):
        o = off[k]
        c, other = segment_margin_by_enumeration(U[o:off[k + 1]], T, s, e, a, b, y[o + a:o + b])
        assert_allclose([g_carry[m], g_other[m]], [c, other], rtol=1e-12)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("other", ["same", "random", "zero"])
def test_segment_margins_gradient_matches_finite_differences(seed, other):
    rng = np.random.default_rng(10 + seed)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(1, 4, 5), scale=1.5)
    segs = _random_segments(rng, off)
    coef = rng.normal(size=segs[0].shape[0])
    coef_other = {"same": None, "random": rng.normal(size=coef.shape[0]),
                  "zero": np.zeros(coef.shape[0])}[other]
    _, _, (dU, dT, ds, de) = segment_margins(U, T, s, e, off, y, segs, coef=coef,
                                             coef_other=coef_other)
    c_other = coef if coef_other is None else coef_other

    def f(U, T, s, e):
        c, o, _ = segment_margins(U, T, s, e, off, y, segs)
        return float(coef @ c - c_other @ np.where(np.isfinite(o), o, 0.0))

    # Piecewise linear: a one-sided difference of a small step is exact away from ties.
    eps = 1e-6
    base = f(U, T, s, e)
    for arr, grad in ((U, dU), (T, dT), (s, ds), (e, de)):
        for idx in np.ndindex(arr.shape):
            old = arr[idx]
            arr[idx] = old + eps
            fd = (f(U, T, s, e) - base) / eps
            arr[idx] = old
            assert_allclose(grad[idx], fd, atol=1e-5)


def test_segment_margins_out_accumulates_the_unary_gradient():
    rng = np.random.default_rng(3)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(1, 4, 5), scale=1.5)
    segs_a, segs_b = _random_segments(rng, off), _random_segments(rng, off)
    coef_a, coef_b = rng.normal(size=12), rng.normal(size=12)
    dU_a = segment_margins(U, T, s, e, off, y, segs_a, coef=coef_a)[2][0]
    dU_b = segment_margins(U, T, s, e, off, y, segs_b, coef=coef_b)[2][0]
    out = np.full_like(U, 0.5)
    got = segment_margins(U, T, s, e, off, y, segs_a, coef=coef_a, out=out)[2][0]
    segment_margins(U, T, s, e, off, y, segs_b, coef=coef_b, out=out)
    assert got is out
    assert_allclose(out, 0.5 + dU_a + dU_b, rtol=1e-14, atol=1e-14)
    with pytest.raises(ValueError, match="C-contiguous float64"):
        segment_margins(U, T, s, e, off, y, segs_a, coef=coef_a, out=np.zeros((2, 3)))


def test_segment_margins_reject_bad_segments():
    U = np.zeros((3, 2))
    z = np.zeros(2)
    with pytest.raises(ValueError, match="inside its sequence"):
        segment_margins(U, np.zeros((2, 2)), z, z, [0, 3], [0, 0, 0], ([0], [2], [4]))
    with pytest.raises(ValueError, match="label indices"):
        segment_margins(U, np.zeros((2, 2)), z, z, [0, 3], [0, 5, 0], ([0], [0], [1]))


# ------------------------------------------------------------------- losses

from scipy.special import expit  # noqa: E402

from sklearn_crfloss import CRFTagger  # noqa: E402
from sklearn_crfloss.losses import (  # noqa: E402
    MinimumClassificationError,
    SegmentFScoreMCE,
    get_loss,
    get_loss_tags,
)

from _oracle import loss_by_enumeration  # noqa: E402
from test_marginal_losses import check_gradient  # noqa: E402

CLASSES = np.array(["B-NP", "I-NP", "O"])

MCE_VARIANTS = [
    dict(smoothing="sigmoid"),
    dict(smoothing="logistic"),
    dict(smoothing="sigmoid", psi=2.0),
    dict(smoothing="logistic", psi=0.5, alpha=2.0, beta=-0.5),
    dict(smoothing="sigmoid", psi=1.0, alpha=0.5, beta=0.3),
]
MCE_F_VARIANTS = [dict(gamma=1.0), dict(gamma=0.5), dict(gamma=0.5, alpha=2.0, beta=0.2),
                  dict(gamma=1.0, false_positives="viterbi"),
                  dict(gamma=0.5, beta=0.3, false_positives="viterbi"),
                  dict(gamma=1.0, false_positives="gold"),
                  dict(gamma=0.5, alpha=2.0, beta=-0.2, false_positives="gold")]


def _loss(name, params):
    cls = MinimumClassificationError if name == "mce" else SegmentFScoreMCE
    return cls(**params).set_classes(CLASSES)


def _variants():
    return ([("mce", p) for p in MCE_VARIANTS] + [("mce_f", p) for p in MCE_F_VARIANTS])


@pytest.mark.parametrize("name,params", _variants())
@pytest.mark.parametrize("seed", range(4))
def test_mce_value_matches_enumeration(name, params, seed):
    rng = np.random.default_rng(seed)
    loss = _loss(name, params)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(1, 2, 5, 4), scale=1.5)
    w = rng.uniform(0.5, 2.0, size=len(off) - 1)
    value = loss.value_and_grad(U, T, s, e, y, off, sample_weight=w)[0]
    assert_allclose(value, loss_by_enumeration(loss, U, T, s, e, y, off, w), rtol=1e-10)


@pytest.mark.parametrize("name,params", _variants())
@pytest.mark.parametrize("seed", range(3))
def test_mce_gradient_matches_finite_differences(name, params, seed):
    # Random continuous potentials: no ties, so psi=inf and MCE-F are
    # differentiable at the point.
    rng = np.random.default_rng(20 + seed)
    loss = _loss(name, params)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(1, 3, 5), scale=1.0)
    w = rng.uniform(0.5, 2.0, size=len(off) - 1)
    check_gradient(loss, U, T, s, e, y, off, sample_weight=w)


def test_mce_psi_inf_is_the_limit_of_finite_psi():
    rng = np.random.default_rng(3)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(2, 4), scale=1.0)
    inf_value = MinimumClassificationError().value_and_grad(U, T, s, e, y, off)[0]
    big = MinimumClassificationError(psi=200.0).value_and_grad(U, T, s, e, y, off)[0]
    small = MinimumClassificationError(psi=1.0).value_and_grad(U, T, s, e, y, off)[0]
    assert abs(big - inf_value) < 0.02 * abs(inf_value)
    # A = 1/(|Y|-1): a power mean, below the max, so d and l(d) are smaller.
    assert small < inf_value


def test_mce_gold_dominant_uses_max_incorrect_when_1_minus_r_underflows():
    # Gold path far ahead: 1 - p_psi(y*) rounds to 0 for psi=10, so that
    # sequence falls back to psi=inf; value and gradient stay finite.
    U = np.array([[40.0, 0.0], [40.0, 0.0]])
    T = np.zeros((2, 2))
    z = np.zeros(2)
    y = np.array([0, 0])
    off = np.array([0, 2])
    val, dU, dT, ds, de = MinimumClassificationError(psi=10.0).value_and_grad(U, T, z, z, y, off)
    expected = expit(-40.0)  # d = -40 (second best flips one token)
    assert_allclose(val, expected, rtol=1e-9)
    assert np.all(np.isfinite(dU)) and np.all(np.isfinite(dT))


# ------------------------------------------------------ ties and degenerate


@pytest.mark.parametrize("name,params", _variants())
def test_all_equal_potentials(name, params):
    # Every path ties: d = 0 for mce; every segment margin is 0 for mce_f.
    loss = _loss(name, params)
    U = np.zeros((7, 3))
    T = np.zeros((3, 3))
    z = np.zeros(3)
    off = np.array([0, 3, 7])
    y = np.array([0, 1, 2, 2, 0, 1, 1])  # B-NP I-NP O | O B-NP I-NP I-NP
    value, dU, dT, ds, de = loss.value_and_grad(U, T, z, z, y, off)
    assert all(np.all(np.isfinite(g)) for g in (dU, dT, ds, de))
    alpha, beta = loss.alpha, (0.0 if loss.beta == "auto" else loss.beta)
    if name == "mce":
        # all paths score the same, so d = 0 for psi = inf and for the
        # power mean of equal values alike: l(0) per sequence
        per_seq = expit(beta) if loss.smoothing == "sigmoid" else np.log1p(np.exp(beta)) / alpha
        assert_allclose(value, 2 * per_seq, rtol=1e-12)
    else:
        # 2 gold segments with l = sigmoid(beta); the false positives of the
        # (tie-broken) maximum incorrect output also have l = sigmoid(beta).
        l0 = expit(beta)
        g2 = loss.gamma ** 2
        candidates = [2 * (g2 * 2 * l0 + n_fp * l0) / ((g2 + 1) * 2 * (1 - l0))
                      for n_fp in range(0, 8)]
        assert np.min(np.abs(np.array(candidates) - value)) < 1e-12


@pytest.mark.parametrize("name,params", _variants())
def test_single_token_sequences(name, params):
    rng = np.random.default_rng(5)
    loss = _loss(name, params)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(1, 1, 1), scale=1.5)
    y = np.array([0, 2, 0])  # B-NP | O | B-NP
    value = loss.value_and_grad(U, T, s, e, y, off)[0]
    assert_allclose(value, loss_by_enumeration(loss, U, T, s, e, y, off), rtol=1e-10)
    check_gradient(loss, U, T, s, e, y, off)


@pytest.mark.parametrize("params", [dict(gamma=1.0), dict(gamma=0.5),
                                    dict(gamma=0.5, false_positives="gold")])
def test_mce_f_sequence_without_gold_segments_only_counts_false_positives(params):
    rng = np.random.default_rng(8)
    loss = _loss("mce_f", params)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(4, 3), scale=1.5)
    y = np.array([2, 2, 2, 2, 0, 1, 2])  # all O | B-NP I-NP O
    value = loss.value_and_grad(U, T, s, e, y, off)[0]
    assert_allclose(value, loss_by_enumeration(loss, U, T, s, e, y, off), rtol=1e-10)
    check_gradient(loss, U, T, s, e, y, off)
    # A zero weight on the segment-bearing sequence leaves no gold segment
    # weight: the value is the weighted false positives at TP = S.
    w = np.array([1.0, 0.0])
    value = loss.value_and_grad(U, T, s, e, y, off, sample_weight=w)[0]
    assert_allclose(value, loss_by_enumeration(loss, U, T, s, e, y, off, w), rtol=1e-10)
    check_gradient(loss, U, T, s, e, y, off, sample_weight=w)


@pytest.mark.parametrize("false_positives", ["max_incorrect", "gold", "viterbi"])
def test_mce_f_all_o_batch_counts_false_positives_at_perfect_tp(false_positives):
    # No gold segment (an all-O sentence, as online solvers meet it): the
    # value is FP_l / (gamma^2 + 1), by enumeration, with its gradient.
    rng = np.random.default_rng(0)
    loss = _loss("mce_f", dict(gamma=0.5, false_positives=false_positives))
    U, T, s, e, _, off = random_problem(rng, 3, lengths=(4, 2), scale=1.5)
    y = np.full(6, 2)
    value, dU = loss.value_and_grad(U, T, s, e, y, off)[:2]
    assert value > 0 and np.any(dU)
    assert_allclose(value, loss_by_enumeration(loss, U, T, s, e, y, off), rtol=1e-10)
    check_gradient(loss, U, T, s, e, y, off)
    # ... while mce is defined for all-O gold as for any other.
    val = MinimumClassificationError().value_and_grad(U, T, s, e, y, off)[0]
    assert np.isfinite(val)


def test_mce_f_gold_competitor_rewards_gold_o():
    # The false positive 'B-NP' on a gold 'O' token: with the gold competitor
    # the gradient lowers the loss by raising the O potential there (d_unary
    # < 0 on O), which the paper's competitor (another wrong chunk) does not.
    U = np.zeros((3, 3))
    U[1] = [2.0, 1.0, 0.0]  # token 1 prefers B-NP, then I-NP, then O
    z = np.zeros(3)
    y = np.array([0, 2, 2])  # B-NP O O
    off = np.array([0, 3])
    gold = _loss("mce_f", dict(false_positives="gold"))
    paper = _loss("mce_f", dict(false_positives="max_incorrect"))
    dU_gold = gold.value_and_grad(U, np.zeros((3, 3)), z, z, y, off)[1]
    dU_paper = paper.value_and_grad(U, np.zeros((3, 3)), z, z, y, off)[1]
    assert dU_gold[1, 2] < 0 and dU_gold[1, 0] > 0
    assert dU_paper[1, 2] == 0.0


def test_mce_f_needs_class_names_and_valid_params():
    U = np.zeros((2, 3))
    z = np.zeros(3)
    args = (U, np.zeros((3, 3)), z, z, np.array([0, 1]), np.array([0, 2]))
    with pytest.raises(ValueError, match="set_classes"):
        SegmentFScoreMCE().value_and_grad(*args)
    with pytest.raises(ValueError, match="2 names for 3 labels"):
        SegmentFScoreMCE().set_classes(["B-NP", "O"]).value_and_grad(*args)
    # Hyperparameters are checked when the loss is resolved (get_loss, CRFTagger.fit).
    for loss, name in [(SegmentFScoreMCE(gamma=-1.0), "gamma"),
                       (SegmentFScoreMCE(gamma=np.inf), "gamma"),
                       (SegmentFScoreMCE(beta=np.nan), "beta"),
                       (SegmentFScoreMCE(false_positives="all"), "false_positives"),
                       (MinimumClassificationError(alpha=0.0), "alpha"),
                       (MinimumClassificationError(alpha=np.inf), "alpha"),
                       (MinimumClassificationError(psi=-1.0), "psi"),
                       (MinimumClassificationError(smoothing="hinge"), "smoothing")]:
        with pytest.raises(ValueError, match=f"'{name}' parameter of {type(loss).__name__}"):
            get_loss(loss)
    assert get_loss(MinimumClassificationError(psi=np.inf)).psi == np.inf


@pytest.mark.parametrize("segment_match", ["labels", "chunks"])
@pytest.mark.parametrize("strength", [350.0, 400.0])
def test_mce_f_undefined_where_every_gold_segment_is_far_misclassified(strength,
                                                                     segment_match):
    # Gold B-NP I-NP O; potentials favour O by so much that TP_l is about
    # 1e-304 (its square underflows) or exactly 0: the ratio is undefined.
    loss = SegmentFScoreMCE(segment_match=segment_match).set_classes(CLASSES)
    U = np.zeros((3, 3))
    U[:, 2] = strength
    z = np.zeros(3)
    with pytest.raises(UndefinedLossError, match="TP_l underflowed") as caught:
        loss.value_and_grad(U, np.zeros((3, 3)), z, z, np.array([0, 1, 2]), np.array([0, 3]))
    assert isinstance(caught.value, ValueError)
    # Nearer the boundary it is defined, and finite.
    U[:, 2] = 100.0
    out = loss.value_and_grad(U, np.zeros((3, 3)), z, z, np.array([0, 1, 2]), np.array([0, 3]))
    assert all(np.all(np.isfinite(a)) for a in out)


def test_registry_names():
    assert isinstance(get_loss("mce"), MinimumClassificationError)
    assert isinstance(get_loss("mce_f"), SegmentFScoreMCE)
    assert not get_loss_tags(get_loss("mce_f")).convex and get_loss_tags(get_loss("mce")).needs_init


# ----------------------------------------------------------- the estimator


def test_tagger_passes_class_names_to_a_clone_of_the_loss(toy_chunks):
    X, y = toy_chunks
    loss = SegmentFScoreMCE()
    crf = CRFTagger(loss=loss, init="cll", C=1.0, max_iter=30).fit(X, y)
    assert not hasattr(loss, "classes_")  # the parameter object is unchanged
    assert_array_equal(crf._loss.classes_, crf.classes_)
    assert crf.init_n_iter_ > 0 and crf.n_iter_ > 0


@pytest.mark.parametrize("solver", ["lbfgs", None])
@pytest.mark.parametrize("loss", ["mce", "mce_f"])
def test_mce_from_cll_initialisation_does_not_lower_training_objective(toy_chunks, loss,
                                                                        solver):
    # init='cll' and the warm_start protocol start from the same point (and
    # with one random_state the SGD epochs of mce_f's default shuffle alike) and L-BFGS only
    # accepts decreasing steps: the MCE objective at the end is at most its
    # value at the CLL solution.
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    X, y = toy_chunks
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = CRFTagger(loss=loss, init="cll", C=1.0, max_iter=40, solver=solver,
                      random_state=0).fit(X, y)
        b = CRFTagger(loss="cll", C=1.0, random_state=0).fit(X, y)
        b.set_params(loss=loss, warm_start=True, max_iter=40, solver=solver).fit(X, y)
    if solver == "lbfgs":
        assert a.loss_curve_[-1] <= a.loss_curve_[0] + 1e-9
    assert a.n_iter_ == b.n_iter_ and a.n_parameters_ == b.n_parameters_
    assert_allclose(a.coef_, b.coef_, rtol=1e-6, atol=1e-8)
    assert_allclose(a.transition_, b.transition_, rtol=1e-6, atol=1e-8)


def test_grid_search_over_C_and_loss_alpha_on_conll2000_subset(corpus):
    # GridSearchCV reaches the nested loss parameter: every mean test score
    # equals the one recomputed here from fresh taggers built with that
    # alpha in the constructor (not through set_params), on the same folds;
    # alpha changes the scores; the best pair is the argmax of the
    # recomputed scores and the refitted model is a fresh fit with it.
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import GridSearchCV, KFold

    from sklearn_crfloss.features import TemplateFeatures
    from sklearn_crfloss.metrics import segment_f1_score, segment_f1_scorer

    X, y = corpus("conll2000", "train")
    template = "U00:%x[-1,0]\nU01:%x[0,0]\nU02:%x[0,1]\nU03:%x[-1,1]\nU04:%x[1,1]"
    F = TemplateFeatures(template).fit_transform(X[:40])
    y = y[:40]
    cv = KFold(2)

    def tagger(C=1.0, alpha=1.0):
        return CRFTagger(loss=SegmentFScoreMCE(alpha=alpha), C=C, init="cll", max_iter=5,
                         n_jobs=1, random_state=0)

    search = GridSearchCV(tagger(), {"C": [0.1, 1.0], "loss__alpha": [0.5, 2.0]},
                          scoring=segment_f1_scorer, cv=cv, n_jobs=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        search.fit(F, y)
        recomputed = []
        for params in search.cv_results_["params"]:
            folds = []
            for train, test in cv.split(F):
                est = tagger(params["C"], params["loss__alpha"])
                est.fit([F[i] for i in train], [y[i] for i in train])
                folds.append(segment_f1_score([y[i] for i in test],
                                              est.predict([F[i] for i in test])))
            recomputed.append(np.mean(folds))
        fresh = tagger(search.best_params_["C"], search.best_params_["loss__alpha"]).fit(F, y)
    scores = search.cv_results_["mean_test_score"]
    assert_allclose(scores, recomputed, rtol=1e-12)
    assert np.all((scores > 0.5) & (scores <= 1.0))
    by_c = scores.reshape(2, 2)  # rows: C, columns: alpha
    assert np.all(by_c[:, 0] != by_c[:, 1])
    assert search.best_params_ == search.cv_results_["params"][int(np.argmax(recomputed))]
    best = search.best_estimator_
    assert best.get_params()["loss__alpha"] == search.best_params_["loss__alpha"]
    assert_allclose(best.coef_, fresh.coef_, rtol=1e-10, atol=1e-12)
    assert_allclose(best.transition_, fresh.transition_, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("loss", ["mce", "mce_f"])
def test_lbfgs_from_zero_warns_and_init_cll_or_the_default_schedule_does_not(loss):
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from conftest import make_toy_chunks

    X, y = make_toy_chunks(30, seed=1)
    with pytest.warns(UserWarning, match="init='cll'"):
        CRFTagger(loss=loss, max_iter=3, n_jobs=1, solver="lbfgs").fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        CRFTagger(loss=loss, init="cll", max_iter=3, n_jobs=1, solver="lbfgs").fit(X, y)
        # The default schedule starts from zero with its SGD warm-up: no warning.
        CRFTagger(loss=loss, max_iter=3, n_jobs=1, eta0=0.01, random_state=0).fit(X, y)


# ----------------------------------------- finite psi: saturation by log A


def _fitted_like_problem(n_seq=25, length=20, n_labels=3, margin=1.0, seed=0):
    """Random potentials where the gold path wins every token by ``margin``."""
    rng = np.random.default_rng(seed)
    unary, transition, start, end, y, offsets = random_problem(
        rng, n_labels=n_labels, lengths=(length,) * n_seq, scale=0.1)
    unary[np.arange(y.shape[0]), y] += margin
    return unary, transition, start, end, y, offsets


@pytest.mark.parametrize("psi", [0.5, 1.0, 2.0])
def test_mce_finite_psi_warns_when_log_a_saturates(psi):
    # log A = -log(3**20 - 1) = -22 shifts d by -22 / psi: every l(d) is about 0.
    problem = _fitted_like_problem()
    loss = MinimumClassificationError(psi=psi)
    with pytest.warns(UserWarning, match=r"saturated for \d+% of the training sequences.*"
                                         r"shifts d by -log\(\|Y\|-1\)/psi"):
        value = loss.value_and_grad(*problem)[0]
    assert value < 0.01 * 25  # l(d) < 0.01 for each of the 25 sequences
    with warnings.catch_warnings():  # once per loss object (per fit)
        warnings.simplefilter("error")
        loss.value_and_grad(*problem)


@pytest.mark.parametrize("params", [
    dict(psi=np.inf),  # no shift
    dict(psi=50.0),  # shift -0.44: d is about the max-based measure
    dict(psi=1.0, beta=22.0),  # the offset the warning suggests
])
def test_mce_no_saturation_warning(params):
    problem = _fitted_like_problem()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        MinimumClassificationError(**params).value_and_grad(*problem)


def test_mce_saturation_not_judged_on_minibatches():
    # An online solver's minibatch of a few sequences says little.
    problem = _fitted_like_problem(n_seq=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        MinimumClassificationError(psi=1.0).value_and_grad(*problem)


def test_mce_finite_psi_degenerate_fit_warns():
    # Long toy sentences: from a CLL fit psi=1 only shrinks the weights.
    from conftest import make_toy_chunks
    from sklearn_crfloss import CRFTagger

    X, y = make_toy_chunks(120, max_len=30, seed=1)
    X, y = zip(*[(x, t) for x, t in zip(X, y) if len(t) >= 12])
    with pytest.warns(UserWarning, match="loss='mce' with psi=1: the smoothed loss"):
        CRFTagger(loss=MinimumClassificationError(psi=1.0), init="cll").fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CRFTagger(loss=MinimumClassificationError(), init="cll").fit(X, y)
