"""The shortcuts of SGD's minibatch path give exactly the results of the plain computation.

An SGD epoch of MCE-F makes thousands of small ``value_and_grad`` calls and
sparse steps; three shortcuts make each cheaper without changing a bit of
the result: the generic step adds only the nonzero entries of a sparse
gradient row, MCE-F decodes segments with a :class:`ChunkDecoder` built
once per label set (not the validated public decoder; the one compiled
call of MCE-F, ``test_mce_f_one_call.py``, with that decoder's compiled
core), and a small minibatch gets fresh max-marginal tables instead of kept
ones. Each is compared here with the straightforward computation, bitwise.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from _oracle import random_problem
from numpy.testing import assert_array_equal

import sklearn_crfloss.losses._mce_f_fast as fused_mce
from sklearn_crfloss import CRFTagger
from sklearn_crfloss.solvers._sgd_loops import sgd_step
from sklearn_crfloss.losses import SegmentFScoreMCE
from sklearn_crfloss.losses._chunks import ChunkDecoder
from sklearn_crfloss.segments import segments_from_codes
from sklearn_crfloss.solvers import SGD

from conftest import make_toy_chunks


def _bits(a):
    return np.ascontiguousarray(a).tobytes()


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("averaging", [False, True])
@pytest.mark.parametrize("binary", [False, True])
def test_sparse_gradient_rows_step_the_same_parameters(masked, averaging, binary):
    rng = np.random.default_rng(0)
    L, n_features, lengths = 7, 12, [3, 5, 4]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
    n = offsets[-1]
    X = sp.random(n, n_features, density=0.4, random_state=1, format="csr")
    if not binary:
        X.data = rng.uniform(0.5, 3.0, X.data.shape[0])
    indptr = X.indptr.astype(np.intp)
    indices = X.indices.astype(np.int32)
    data = np.ones(0) if binary else X.data
    # Rows of the gradient: zero, one or two nonzero entries (the sparse
    # case), and dense.
    d_unary = np.zeros((n, L))
    for t in range(n):
        kind = t % 4
        if kind in (1, 2):
            d_unary[t, rng.choice(L, size=kind, replace=False)] = rng.normal(size=kind)
        elif kind == 3:
            d_unary[t] = rng.normal(size=L)
    W = rng.normal(size=(n_features, L))
    mask = ((rng.random((n_features, L)) < 0.7).astype(np.uint8) if masked
            else np.zeros((0, L), dtype=np.uint8))
    tail = rng.normal(size=L * L + 2 * L)
    BW = rng.normal(size=W.shape) if averaging else np.zeros((0, L))
    Btail = rng.normal(size=tail.shape) if averaging else np.zeros(0)
    # state [a, t, S, n_avg, n_folds]: S != 0 once averaging has begun.
    state = np.array([0.7, 5.0, 2.5 if averaging else 0.0, 3.0, 0.0])
    y = np.zeros(n, dtype=np.intp)
    seqs = np.array([2, 0, 1], dtype=np.intp)
    out = {}
    for sparse_rows in (False, True):
        params = [W.copy(), tail.copy(), BW.copy(), Btail.copy(), state.copy()]
        sgd_step(indptr, indices, data, binary, y, offsets, seqs, params[0], mask, params[1],
                 np.ones_like(tail), params[2], params[3], d_unary[np.r_[8:12, 0:3, 3:8]],
                 np.full(tail.shape, 0.1), params[4], 0.3, 0.01,
                 0.0 if averaging else np.inf, sparse_rows=sparse_rows)
        out[sparse_rows] = params
    assert not np.array_equal(out[True][0], W)  # the step did something
    for plain, sparse in zip(out[False], out[True]):
        assert _bits(plain) == _bits(sparse)


# Label sets and schemes, degenerate conlleval labels included.
_LABEL_SETS = [
    (["B-NP", "I-NP", "O", "B-VP", "I-VP", "B-PP"], "conlleval"),
    (["O", "PER", "o", "B-0", ".", "[", "]", "I-X", "E-X", "B-ARGM-LOC"], "conlleval"),
    (["B-PER", "I-PER", "O", "B-LOC", "I-LOC"], "iob1"),
    (["B-PER", "I-PER", "O", "B-LOC", "I-LOC"], "iob2"),
    (["I-PER", "E-PER", "O", "I-LOC", "E-LOC"], "ioe2"),
    (["B-PER", "I-PER", "E-PER", "S-PER", "O", "S-LOC", "B-LOC", "E-LOC"], "iobes"),
    (["B-PER", "I-PER", "L-PER", "U-PER", "O", "U-LOC"], "bilou"),
    (["O", "NN", "VB", "DT"], "raw"),
]


@pytest.mark.parametrize("classes, scheme", _LABEL_SETS)
def test_chunk_decoder_gives_the_segments_of_segments_from_codes(classes, scheme):
    rng = np.random.default_rng(len(classes))
    decoder = ChunkDecoder(np.array(classes), scheme)
    for lengths in ([5, 0, 1, 7, 3, 0], [0], [1], [12, 9], [0, 0, 4]):
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
        codes = rng.integers(len(classes), size=offsets[-1]).astype(np.intp)
        *expected, type_names = segments_from_codes(codes, offsets, classes, scheme=scheme)
        got = decoder.segments(codes, offsets)
        assert decoder.n_types == len(type_names)
        for a, b in zip(got, expected):
            assert a.dtype == b.dtype
            assert_array_equal(a, b)


class _PublicDecoderMCEF(SegmentFScoreMCE):
    """MCE-F whose segments come from the public, validated decoder (the plain computation).

    Through the Python path: the one compiled call decodes inside the kernel.
    """

    _fused_path = False

    def _segments(self, labels, offsets):
        seq, begin, stop, tcode, type_names = segments_from_codes(
            labels, offsets, self.classes_, scheme=self.scheme)
        n_tokens = np.int64(labels.shape[0] + 1)
        key = ((begin + offsets[seq]).astype(np.int64) * n_tokens
               + (stop - begin)) * max(len(type_names), 1) + tcode
        return seq, begin, stop, key, tcode


_CLASSES = np.array(["B-NP", "I-NP", "O", "B-VP", "I-VP"])
_KEEP_TABLES_FROM = fused_mce._KEEP_TABLES_FROM


@pytest.mark.parametrize("false_positives", ["gold", "max_incorrect", "viterbi"])
@pytest.mark.parametrize("segment_match", ["labels", "chunks"])
def test_mce_f_value_and_grad_as_with_the_public_decoder_and_kept_tables(
        false_positives, segment_match, monkeypatch):
    params = dict(false_positives=false_positives, segment_match=segment_match, beta=0.0)
    for seed in range(4):
        problem = random_problem(np.random.default_rng(seed), 5, (1, 4, 6, 0, 3, 7), 1.5)
        results = []
        # 0: the max-marginal tables are kept (the full-batch path); the
        # default: fresh tables for a minibatch this small.
        for cls, keep_from in ((_PublicDecoderMCEF, 0), (SegmentFScoreMCE, _KEEP_TABLES_FROM)):
            monkeypatch.setattr(fused_mce, "_KEEP_TABLES_FROM", keep_from)
            loss = cls(**params).set_classes(_CLASSES)
            results.append(loss.value_and_grad(*problem, sample_weight=np.arange(1.0, 7.0)))
        assert results[0][0] == results[1][0]
        for a, b in zip(results[0][1:], results[1][1:]):
            assert _bits(a) == _bits(b)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("batch_size", [1, 4])
def test_sgd_fit_of_mce_f_as_with_the_public_decoder(batch_size):
    # The plain computation (the public decoder, the Python path) against
    # the default (MCE-F's one compiled call): the same bits.
    X, y = make_toy_chunks(n_sequences=40, seed=2)
    fits = [CRFTagger(loss=loss, init=None, max_iter=3, n_jobs=1,
                      solver=SGD(eta0=0.1, random_state=0, batch_size=batch_size)).fit(X, y)
            for loss in (_PublicDecoderMCEF(), SegmentFScoreMCE())]
    assert fits[1].loss_curve_[-1] < fits[1].loss_curve_[0]  # it trained
    assert _bits(fits[0].loss_curve_) == _bits(fits[1].loss_curve_)
    assert _bits(fits[0].coef_) == _bits(fits[1].coef_)
    assert _bits(fits[0].transition_) == _bits(fits[1].transition_)
