"""MCE-F in one compiled call gives the bits of the Python path.

With ``segment_match='labels'`` and one transition matrix,
``SegmentFScoreMCE.value_and_grad`` is one call of the compiled kernel
``mce_f_labels_batch`` (``_fused_mce.fused_value_and_grad``). It repeats the
Python path's arithmetic in its order (numpy's pairwise sums, no fused
multiply-add), so its value, gradient and ``saturation_`` are compared with
that path (``_fused_path = False``, itself checked against enumeration in
``test_fused_mce.py`` and ``test_mce.py``) bitwise: on chunk labels of
several types, all-``O`` sentences, single sentences, sample weights, tied
potentials, several threads; and so is a default fit (SGD epochs, then
QuickProp). Whole SGD fits at minibatches of 1 and 4 are compared with the
Python path in ``test_minibatch_fast_paths.py``.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import sklearn_crfloss.losses._mce_f_fast as fused_mce
from sklearn_crfloss import CRFTagger
from sklearn_crfloss.exceptions import UndefinedLossError
from sklearn_crfloss.losses import SegmentFScoreMCE, check_loss

from conftest import make_toy_chunks

#: IOB2 chunk labels of three types, as the estimator orders them.
CLASSES = np.array(["B-NP", "B-PP", "B-VP", "I-NP", "I-PP", "I-VP", "O"])
_O = 6


class _ReferenceMCEF(SegmentFScoreMCE):
    """MCE-F through the Python path (the kernels one by one, numpy between them)."""

    _fused_path = False


def _bits(a):
    return np.ascontiguousarray(a).tobytes()


def _chunk_labels(rng, lengths, p_outside=0.4):
    """IOB2 label indices into CLASSES: chunks of random types and lengths, O between."""
    y = []
    for n in lengths:
        t = 0
        while t < n:
            if rng.random() < p_outside:
                y.append(_O)
                t += 1
                continue
            kind, size = int(rng.integers(3)), int(rng.integers(1, 4))
            for k in range(min(size, n - t)):
                y.append(kind if k == 0 else kind + 3)
            t += min(size, n - t)
    return np.array(y, dtype=np.intp)


def _problem(seed, lengths, ties=False, all_outside=False, gold_bias=1.0):
    """Potentials favouring the gold labels by ``gold_bias``, and the gold labels.

    ``ties``: small integer potentials, so that many best paths tie.
    """
    rng = np.random.default_rng(seed)
    L = CLASSES.shape[0]
    lengths = np.asarray(lengths)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
    n = int(offsets[-1])
    y = np.full(n, _O, dtype=np.intp) if all_outside else _chunk_labels(rng, lengths)

    def draw(*shape):
        return (rng.integers(-1, 2, size=shape).astype(float) if ties
                else rng.normal(size=shape))

    unary = draw(n, L)
    unary[np.arange(n), y] += gold_bias
    return unary, draw(L, L), draw(L), draw(L), y, offsets


def _both(params, problem, sample_weight=None, n_threads=1):
    """(value, gradient, saturation_) of the one-call and of the Python path."""
    out = []
    for cls in (SegmentFScoreMCE, _ReferenceMCEF):
        loss = cls(**params).set_classes(CLASSES)
        result = loss.value_and_grad(*problem, sample_weight=sample_weight, n_threads=n_threads)
        out.append((result, loss.saturation_))
    return out


def _assert_same(fused, reference):
    (got, sat_got), (want, sat_want) = fused, reference
    assert_allclose(got[0], want[0], rtol=1e-12)
    assert _bits(got[0]) == _bits(want[0])
    assert _bits(sat_got) == _bits(sat_want)
    for g, h in zip(got[1:], want[1:]):
        assert g.shape == h.shape and g.dtype == h.dtype
        assert _bits(g) == _bits(h)


_CASES = {
    "chunks": dict(lengths=(5, 12, 1, 8, 20, 3)),
    "empty sequences": dict(lengths=(0, 6, 0, 9, 0)),
    "one sentence": dict(lengths=(17,)),
    "one token": dict(lengths=(1,)),
    "all O": dict(lengths=(4, 7, 2), all_outside=True),
    "ties": dict(lengths=(6, 9, 4, 11), ties=True),
    "ties, well fitted": dict(lengths=(6, 9, 4, 11), ties=True, gold_bias=3.0),
    "badly fitted": dict(lengths=(8, 10, 6), gold_bias=-2.0),
}


@pytest.mark.parametrize("case", list(_CASES))
@pytest.mark.parametrize("false_positives", ["gold", "max_incorrect", "viterbi"])
@pytest.mark.parametrize("weights", ["none", "random", "zeros"])
def test_one_call_gives_the_bits_of_the_python_path(case, false_positives, weights):
    for seed in range(3):
        problem = _problem(seed, **_CASES[case])
        n_seq = problem[-1].shape[0] - 1
        rng = np.random.default_rng(seed + 100)
        w = {"none": None, "random": rng.uniform(0.2, 3.0, n_seq),
             # some sequences weightless (all of them for a single sentence)
             "zeros": np.where(np.arange(n_seq) % 2 == 0, 0.0, 1.5)}[weights]
        # (alpha and gamma not powers of 2: products that round)
        params = dict(false_positives=false_positives, beta=-0.5 if seed == 2 else 0.0,
                      alpha=(1.0, 1.3, 0.7)[seed], gamma=(1.0, 0.7, 1.9)[seed])
        fused, reference = _both(params, problem, w)
        _assert_same(fused, reference)
        if case == "all O" or (weights == "zeros" and n_seq == 1):
            # no gold segment of positive weight: the false positives at TP_l = S
            assert fused[0][0] == pytest.approx(reference[0][0])


@pytest.mark.parametrize("false_positives", ["gold", "max_incorrect", "viterbi"])
def test_one_call_on_a_large_batch_and_two_threads(false_positives):
    # 300 sequences: the max-marginal tables kept between calls, many blocks
    # of 8 sequences for each thread and accumulator.
    lengths = np.random.default_rng(5).integers(0, 25, size=300)
    problem = _problem(5, lengths)
    assert problem[0].size >= fused_mce._KEEP_TABLES_FROM
    w = np.random.default_rng(6).uniform(0.5, 2.0, size=lengths.shape[0])
    params = dict(false_positives=false_positives, beta=0.0)
    one = _both(params, problem, w)
    _assert_same(*one)
    for n_threads in (2, 3):  # 3: one accumulator per thread
        two = _both(params, problem, w, n_threads=n_threads)
        _assert_same(*two)
        assert_allclose(two[0][0][0], one[0][0][0], rtol=1e-12)
    again = SegmentFScoreMCE(**params).set_classes(CLASSES).value_and_grad(
        *problem, sample_weight=w)  # the kept tables written again
    assert _bits(again[1]) == _bits(one[0][0][1])


def test_one_call_raises_where_the_python_path_raises():
    # Every gold segment far on the wrong side of a steep sigmoid: TP_l underflows.
    problem = _problem(0, (6, 8), gold_bias=-30.0)
    errors = []
    for cls in (SegmentFScoreMCE, _ReferenceMCEF):
        loss = cls(alpha=100.0, beta=0.0).set_classes(CLASSES)
        with pytest.raises(UndefinedLossError, match="TP_l underflowed") as info:
            loss.value_and_grad(*problem)
        errors.append((str(info.value), loss.saturation_))
    assert errors[0] == errors[1]
    assert errors[0][1] > 0.5


def test_one_call_checks_the_sample_weights():
    problem = _problem(0, (3, 4))
    loss = SegmentFScoreMCE().set_classes(CLASSES)
    with pytest.raises(ValueError, match=r"sample_weight must have shape \(2,\)"):
        loss.value_and_grad(*problem, sample_weight=np.ones(3))


def test_one_call_is_the_default_and_passes_check_loss(monkeypatch):
    calls = []
    kernel = fused_mce.mce_f_labels_batch

    def counted(*args, **kwargs):
        calls.append(1)
        return kernel(*args, **kwargs)

    monkeypatch.setattr(fused_mce, "mce_f_labels_batch", counted)
    for false_positives in ("gold", "viterbi"):
        report = check_loss(SegmentFScoreMCE(false_positives=false_positives), random_state=4,
                            raise_on_failure=False)
        assert report.passed, report
        assert any(r.check == "gradient" for r in report.results)
    assert calls  # the finite differences went through the compiled call
    calls.clear()
    SegmentFScoreMCE(segment_match="chunks").set_classes(CLASSES).value_and_grad(
        *_problem(1, (4, 5)))
    assert not calls  # chunks: the Python path


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_default_fit_gives_the_bits_of_the_python_path():
    # The default schedule from zero: SGD epochs on minibatches, then
    # QuickProp on the whole batch.
    X, y = make_toy_chunks(n_sequences=50, seed=4)
    fits = [CRFTagger(loss=loss, init=None, max_iter=14, random_state=0, n_jobs=1).fit(X, y)
            for loss in (_ReferenceMCEF(), SegmentFScoreMCE())]
    assert fits[1].n_iter_ > 10  # past the SGD epochs
    assert _bits(fits[0].loss_curve_) == _bits(fits[1].loss_curve_)
    assert _bits(fits[0].coef_) == _bits(fits[1].coef_)
    assert fits[0].objective_ == fits[1].objective_
    assert_array_equal(np.concatenate(fits[0].predict(X)), np.concatenate(fits[1].predict(X)))
