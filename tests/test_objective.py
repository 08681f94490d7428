"""The training objective's kernels: hybrid state storage, the fused CLL path, the exp.

The conditional log-likelihood takes a fused kernel (features -> potentials ->
forward-backward -> gradient, per sequence) that no other loss uses; every
test here compares it with the generic path (potentials handed to the loss,
chain rule applied after), which test_losses checks against enumeration and
finite differences.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_crfloss._chain._forward_backward import exp_nonpositive
import sklearn_crfloss._model._accumulators as accumulators_module
from sklearn_crfloss._model._accumulators import StateWeights
from sklearn_crfloss._model._objective import CRFObjective
from sklearn_crfloss._model._parameters import ParameterLayout
from sklearn_crfloss.inference import sequence_scores
from sklearn_crfloss.losses import ConditionalLogLikelihood
from sklearn_crfloss.priors import GaussianPrior

from test_losses import finite_difference_gradient


class GenericCLL(ConditionalLogLikelihood):
    """CLL through the generic path (the objective fuses only the exact class)."""


def mixed_state_index(rng, n_features, n_labels):
    """Observed-pair style indices where attributes have 0, 1, 2, 3, 4, ... or all labels.

    Attributes with more than 3 labels get dense rows, the others compact
    entries: both kinds, and attributes with no free weight, are present.
    """
    counts = [0, 1, 2, 3, 4, n_labels - 1, n_labels]
    index = []
    for a in range(n_features):
        labels = rng.choice(n_labels, size=counts[a % len(counts)], replace=False)
        index.extend(a * n_labels + np.sort(labels))
    return np.array(index, dtype=np.intp)


def make_objective(rng, *, n_labels=6, n_features=14, lengths=(1, 4, 7, 3, 9, 2),
                   binary=True, weighted=False, state_index="mixed", labels=None,
                   n_threads=1, scale=1.0):
    offsets = np.zeros(len(lengths) + 1, dtype=np.intp)
    np.cumsum(lengths, out=offsets[1:])
    n = offsets[-1]
    mask = rng.random((n, n_features)) < 0.4
    values = np.ones((n, n_features)) if binary else rng.normal(size=(n, n_features))
    X = sp.csr_matrix(mask * values)
    y = rng.integers(n_labels, size=n).astype(np.intp)
    if isinstance(state_index, str):
        state_index = mixed_state_index(rng, n_features, n_labels)
    w = rng.uniform(0.5, 2.0, size=len(lengths)) if weighted else None
    layout = ParameterLayout(n_features, n_labels, state_index, labels=labels)
    objective = CRFObjective(X, y, offsets, layout, sample_weight=w, n_threads=n_threads)
    theta = rng.normal(scale=scale, size=layout.n_params)
    return objective, theta, X


def test_hybrid_storage_has_dense_and_compact_attributes():
    rng = np.random.default_rng(0)
    objective, _, _ = make_objective(rng)
    weights = objective.state_weights
    assert 0 < weights.n_hot < objective.n_features
    assert np.any(weights.code >= 0) and np.any(weights.code < 0)
    counts = np.bincount(objective.layout.state_index // objective.n_labels,
                         minlength=objective.n_features)
    assert_array_equal(weights.code < 0, counts > StateWeights.COLD_MAX)


@pytest.mark.parametrize("binary", [True, False])
@pytest.mark.parametrize("state_index", ["mixed", None])
def test_potentials_are_X_times_W(binary, state_index):
    rng = np.random.default_rng(1)
    objective, theta, X = make_objective(rng, binary=binary, state_index=state_index)
    unary = objective.potentials(theta)[0]
    assert_allclose(unary, X @ objective.layout.dense_weights(theta), rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("binary", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("layout", ["mixed", "dense", "labels"])
def test_fused_cll_matches_generic_path(binary, weighted, n_threads, layout):
    rng = np.random.default_rng(2)
    objective, theta, _ = make_objective(
        rng, binary=binary, weighted=weighted, n_threads=n_threads,
        state_index=None if layout == "dense" else "mixed",
        labels=[0, 2, 5] if layout == "labels" else None)
    value, grad = objective.loss_value_and_grad(theta, ConditionalLogLikelihood())
    ref_value, ref_grad = objective.loss_value_and_grad(theta, GenericCLL())
    assert_allclose(value, ref_value, rtol=1e-12)
    assert_allclose(grad, ref_grad, rtol=1e-12, atol=1e-12)


def test_fused_cll_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    objective, theta, _ = make_objective(rng, n_features=7, lengths=(1, 3, 4), weighted=True,
                                         binary=False)
    prior = GaussianPrior()

    def fun(t):
        return objective.value_and_grad(t, ConditionalLogLikelihood(), prior, 0.7)

    assert_allclose(fun(theta)[1], finite_difference_gradient(lambda t: fun(t)[0], theta),
                    rtol=1e-6, atol=1e-7)


def test_fused_cll_falls_back_to_log_space():
    # Weights of magnitude ~500: the scaled pass underflows on some
    # sequences, which the fused kernel recomputes in log space.
    rng = np.random.default_rng(4)
    objective, theta, _ = make_objective(rng, binary=False, weighted=True, scale=500.0)
    value, grad = objective.loss_value_and_grad(theta, ConditionalLogLikelihood())
    ref_value, ref_grad = objective.loss_value_and_grad(theta, GenericCLL())
    assert np.isfinite(value)
    assert_allclose(value, ref_value, rtol=1e-10)
    assert_allclose(grad, ref_grad, rtol=1e-8, atol=1e-8 * np.abs(ref_grad).max())


def test_observed_counts_give_the_gold_scores():
    rng = np.random.default_rng(5)
    objective, theta, _ = make_objective(rng, binary=False, weighted=True)
    unary, T, s, e = objective.potentials(theta)
    gold = sequence_scores(unary, T, s, e, objective.y, objective.offsets)
    assert_allclose(theta @ objective.observed_counts(), objective.sample_weight @ gold,
                    rtol=1e-12)


def test_exp_nonpositive_is_within_two_ulp():
    x = np.concatenate([-np.geomspace(1e-300, 708.0, 200_001), -np.linspace(0, 708, 100_001),
                        [0.0, -0.0]])
    out = np.empty_like(x)
    exp_nonpositive(x, out)
    ref = np.exp(x)
    assert np.all(np.abs(out - ref) <= 2 * np.spacing(ref))
    # below -708 (exp < 2^-1021) and at -inf: 0; NaN stays NaN
    tail = np.array([-708.5, -745.2, -1e5, -np.inf, np.nan])
    out = np.empty_like(tail)
    exp_nonpositive(tail, out)
    assert_array_equal(out[:4], 0.0)
    assert np.isnan(out[4])


def test_int8_indicator_matrix_is_not_copied_and_gives_the_same_objective():
    rng = np.random.default_rng(6)
    objective, theta, X = make_objective(rng)
    X8 = sp.csr_matrix((np.ones(X.nnz, dtype=np.int8), X.indices, X.indptr), shape=X.shape)
    objective8 = CRFObjective(X8, objective.y, objective.offsets, objective.layout,
                              owns_features=True)
    # Handed over, neither copied nor held: the kernels read the columns
    # (ordered in place) and row pointers; the matrix is built again, the
    # same, when asked for.
    assert np.shares_memory(objective8.csr[1], X8.indices)
    assert not any(np.shares_memory(a, X8.data) for a in objective8.csr[:3])
    assert objective8._X is None
    stored = objective8.stored_X
    assert stored.dtype == np.int8 and objective8.stored_X is stored
    assert_array_equal(stored.indptr, X8.indptr)
    assert_array_equal(stored.toarray(), X.toarray())
    for loss in (ConditionalLogLikelihood(), GenericCLL()):
        value, grad = objective8.loss_value_and_grad(theta, loss)
        ref_value, ref_grad = objective.loss_value_and_grad(theta, loss)
        assert value == ref_value
        assert_array_equal(grad, ref_grad)
    assert objective8.X.dtype == np.float64  # what the online solvers read
    assert_array_equal(objective8.X.toarray(), X.toarray())


def test_fused_cll_matches_generic_path_with_padded_rows():
    # 13 labels: rows of 16 doubles, pads on both the dense weight rows and
    # the forward-backward rows.
    rng = np.random.default_rng(7)
    objective, theta, _ = make_objective(rng, n_labels=13, n_features=20, binary=False,
                                         weighted=True, n_threads=2)
    assert objective.state_weights.Lp == 16
    value, grad = objective.loss_value_and_grad(theta, ConditionalLogLikelihood())
    ref_value, ref_grad = objective.loss_value_and_grad(theta, GenericCLL())
    assert_allclose(value, ref_value, rtol=1e-12)
    assert_allclose(grad, ref_grad, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("scale", [100.0, 1e3, 1e4])
def test_fused_cll_is_finite_on_long_sequences_with_large_weights(scale):
    # Issue "Faults and bad input": the fused kernel on 2,000-token sequences
    # with weights of magnitude up to 1e4 (potentials of up to ~1e5): every
    # value finite, and the same as the generic path (forward_backward).
    rng = np.random.default_rng(6)
    objective, theta, _ = make_objective(rng, binary=False, lengths=(2000, 3, 2000),
                                         scale=scale)
    value, grad = objective.loss_value_and_grad(theta, ConditionalLogLikelihood())
    ref_value, ref_grad = objective.loss_value_and_grad(theta, GenericCLL())
    assert np.isfinite(value) and np.all(np.isfinite(grad))
    assert_allclose(value, ref_value, rtol=1e-9)
    assert_allclose(grad, ref_grad, rtol=1e-6, atol=1e-6 * np.abs(ref_grad).max())


@pytest.mark.parametrize("n_labels", [6, 300])  # above 256 labels every attribute is dense
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("disjoint", [True, False])
def test_kept_dense_row_accumulators_give_the_results_of_new_ones(n_labels, n_threads, disjoint):
    rng = np.random.default_rng(7)
    lengths = rng.integers(1, 6, size=70)  # 9 chunks of 8 sequences: every block used
    objective, theta, X_all = make_objective(rng, n_labels=n_labels, n_features=63,
                                             lengths=lengths, n_threads=n_threads)
    # disjoint: the sequences of chunk c (of 8) have attributes 7c..7c+6 alone, each
    # block its own rows; else every block has nearly all rows
    chunk = np.repeat(np.arange(len(lengths)) // 8, lengths)
    X = sp.csr_matrix((rng.random((chunk.size, 7)) < 0.5).astype(float))
    X = sp.csr_matrix((X.data, 7 * chunk[X.nonzero()[0]] + X.indices, X.indptr),
                      shape=(chunk.size, 63))
    objective = CRFObjective(X if disjoint else X_all, objective.y, objective.offsets,
                             objective.layout, n_threads=n_threads)
    X = objective.stored_X
    other = rng.normal(size=theta.shape)
    loss = ConditionalLogLikelihood()

    def fresh():
        return CRFObjective(X, objective.y, objective.offsets, objective.layout,
                            n_threads=n_threads)

    expected = fresh().loss_value_and_grad(theta, loss)
    expected_blocks = fresh().cll_blocks(theta)
    for point in (theta, other, theta):  # the second theta runs on reused accumulators
        got = objective.loss_value_and_grad(point, loss)
        # zeroed again after the evaluation: one thread sums by rounds (its
        # buffers), more keep the dense-row blocks
        kept = objective._rounds._bufs[:2] if n_threads == 1 else [objective._hot_acc._acc]
        assert all(k is not None and not np.any(k) for k in kept)
    assert got[0] == expected[0]
    assert_array_equal(got[1], expected[1])
    for got, want in zip(objective.cll_blocks(theta), expected_blocks):
        assert_array_equal(got, want)
    assert not np.any(objective._hot_acc._acc)


@pytest.mark.parametrize("n_labels", [6, 300])  # above 256 labels every attribute is dense
@pytest.mark.parametrize("n_threads", [1, 2, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_rounds_give_the_blocks_summed_in_block_order(n_labels, n_threads, weighted,
                                                      monkeypatch):
    # The fused CLL kernel by rounds (the compact attributes of one block
    # straight into the gradient, the other blocks added between rounds) gives
    # the per-block sums added in block order, bitwise, on any number of threads.
    rng = np.random.default_rng(12)
    lengths = rng.integers(1, 6, size=75)  # 10 chunks of 8 sequences
    objective, theta, _ = make_objective(rng, n_labels=n_labels, n_features=90,
                                         lengths=lengths, weighted=weighted)
    # attributes 0..29 anywhere, 30..89 six per chunk: those of one block alone
    chunk = np.repeat(np.arange(len(lengths)) // 8, lengths)
    rare = np.zeros((chunk.size, 60), dtype=bool)
    rare[np.arange(chunk.size), 6 * chunk + rng.integers(6, size=chunk.size)] = True
    X = sp.csr_matrix(np.hstack([rng.random((chunk.size, 30)) < 0.3, rare]).astype(float))
    objective = CRFObjective(X, objective.y, objective.offsets, objective.layout,
                             sample_weight=objective.sample_weight, n_threads=n_threads)
    loss = ConditionalLogLikelihood()
    monkeypatch.setattr(CRFObjective, "ROUNDS_MAX_THREADS", 0)
    want = objective.loss_value_and_grad(theta, loss)
    monkeypatch.setattr(CRFObjective, "ROUNDS_MAX_THREADS", 64)
    code, shared = objective._rounds.codes(objective.state_weights.n_blocks(n_threads))
    if n_labels <= 256:  # compact attributes of both kinds
        assert shared.size and np.any(code != objective.state_weights.code)
    for _ in range(2):  # the second on the kept buffers
        got = objective.loss_value_and_grad(theta, loss)
        assert got[0] == want[0]
        assert_array_equal(got[1], want[1])
        assert not np.any(objective._rounds._bufs[0]) and not np.any(objective._rounds._bufs[1])


def whole_matrix_block_rows(csr, code, offsets, n_blocks, n_hot):
    """The dense rows of each block's sequences from temporaries as long as the matrix."""
    indptr, indices = csr[0], csr[1]
    token_block = np.full(indptr.shape[0] - 1, -1, dtype=np.intp)
    token_block[offsets[0]:offsets[-1]] = np.repeat(
        (np.arange(offsets.shape[0] - 1) // 8) % n_blocks, np.diff(offsets))
    stored = code[indices]
    hot = stored < 0
    rows = -stored[hot] - 1
    feature_block = np.repeat(token_block, np.diff(indptr))[hot]
    blocks = [np.unique(rows[feature_block == b]) for b in range(n_blocks)]
    return [None if r.shape[0] > n_hot // 2 else r for r in blocks]


@pytest.mark.parametrize("stretch", [1, 5, 64, 1 << 18])
@pytest.mark.parametrize("n_blocks", [1, 3, 8])
@pytest.mark.parametrize("within", [False, True])  # tokens before and after the sequences
def test_block_rows_by_stretches_equal_those_of_the_whole_matrix(stretch, n_blocks, within,
                                                                  monkeypatch):
    rng = np.random.default_rng(11)
    lengths = rng.integers(1, 6, size=70)
    objective, _, _ = make_objective(rng, n_labels=6, n_features=63, lengths=lengths)
    offsets = objective.offsets
    # chunk c (of 8 sequences) has attributes 7c..7c+6 alone: few rows per block
    chunk = np.repeat(np.arange(len(lengths)) // 8, lengths)
    X = sp.csr_matrix((rng.random((chunk.size, 7)) < 0.4).astype(float))  # some rows empty
    X = sp.csr_matrix((X.data, 7 * chunk[X.nonzero()[0]] + X.indices, X.indptr),
                      shape=(chunk.size, 63))
    if within:  # the sequences are a stretch of the matrix's rows
        X = sp.vstack([X[:3], X, X[:5]]).tocsr()
        offsets = offsets + 3
    objective = CRFObjective(X, np.zeros(X.shape[0], dtype=np.intp), offsets,
                             objective.layout)
    accumulators = objective._hot_acc
    monkeypatch.setattr(accumulators_module, "STRETCH", stretch)
    weights = objective.state_weights
    got = accumulators._block_rows(n_blocks)
    want = whole_matrix_block_rows(objective.csr, weights.code, offsets, n_blocks,
                                   weights.W_hot.shape[0])
    assert len(got) == n_blocks
    assert n_blocks == 1 or all(r is not None and r.size for r in got)
    for g, w in zip(got, want):
        if w is None:
            assert g is None
        else:
            assert g.dtype == w.dtype
            assert_array_equal(g, w)


@pytest.mark.parametrize("n_labels", [6, 300])  # rows summed whole, free pairs gathered
def test_dense_row_gradient_adds_the_blocks_in_order(n_labels):
    rng = np.random.default_rng(8)
    index = np.concatenate([a * n_labels + np.sort(rng.choice(n_labels, 1 + a % 5, replace=False))
                            for a in range(14)])  # at 300 labels all rows dense, few pairs free
    objective, _, _ = make_objective(rng, n_labels=n_labels, state_index=index)
    weights = objective.state_weights
    gathered = 4 * weights.hot_position.shape[0] <= weights.W_hot.size
    assert gathered == (n_labels == 300)
    acc = rng.normal(size=(4, weights.n_state))
    hot = rng.normal(size=(4,) + weights.W_hot.shape) * 10.0 ** rng.integers(
        -8, 8, size=(4,) + weights.W_hot.shape)
    out = weights.gradient(acc, hot, np.empty(weights.n_state))
    expected = acc.sum(axis=0)
    expected[weights.hot_index] = (((hot[0] + hot[1]) + hot[2]) + hot[3]).ravel()[
        weights.hot_position]
    assert_array_equal(out, expected)


def test_release_free_heap_calls_malloc_trim_under_glibc():
    import platform

    from sklearn_crfloss._utils import release_free_heap

    assert release_free_heap() == (platform.libc_ver()[0] == "glibc")


def _class_of(code):
    """0 for a dense row, else the number of labels of a compact code (4 for none)."""
    count = (code >> 32) & 3
    return np.where(code < 0, 0, np.where(count == 0, 4, count))


@pytest.mark.parametrize("binary", [True, False])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_ordered_rows_give_the_unordered_value_and_gradient(binary, n_threads):
    # Attributes of every class (dense rows, compact with 1, 2, 3 labels,
    # none), at random in column order; the caller's matrix is not changed.
    rng = np.random.default_rng(11)
    objective, theta, X = make_objective(rng, n_labels=7, n_features=40, binary=binary,
                                         weighted=True, n_threads=n_threads,
                                         lengths=(1, 4, 7, 3, 9, 2, 12, 5, 8, 6, 1, 10))
    before = (X.indptr.copy(), X.indices.copy(), X.data.copy())
    indptr, indices, data, _ = objective.csr
    code = objective.state_weights.code
    assert set(np.unique(_class_of(code[indices]))) == {0, 1, 2, 3, 4}
    for t in range(objective.n_tokens):  # each row: its classes in order, each stable
        row = slice(indptr[t], indptr[t + 1])
        cls = _class_of(code[indices[row]])
        assert np.all(np.diff(cls) >= 0)
        given = X.indices[row]
        given_cls = _class_of(code[given])
        for k in range(5):
            assert_array_equal(indices[row][cls == k], given[given_cls == k])
            if not binary:
                assert_array_equal(data[row][cls == k], X.data[row][given_cls == k])
    for a, b in zip((X.indptr, X.indices, X.data), before):
        assert_array_equal(a, b)
    assert not np.shares_memory(indices, X.indices)
    assert not indices.flags.writeable  # a sort in place would raise, not undo the order
    # The same objective on the rows in column order.
    unordered = CRFObjective(X, objective.y, objective.offsets, objective.layout,
                             sample_weight=objective.sample_weight, n_threads=n_threads)
    unordered.csr = (X.indptr.astype(np.intp), X.indices, np.ones(1) if binary else X.data,
                     binary)
    prior = GaussianPrior()
    for loss in (ConditionalLogLikelihood(), GenericCLL()):
        value, grad = objective.value_and_grad(theta, loss, prior, 1.0)
        ref_value, ref_grad = unordered.value_and_grad(theta, loss, prior, 1.0)
        assert_allclose(value, ref_value, rtol=1e-12)
        assert_allclose(grad, ref_grad, rtol=1e-12, atol=1e-12 * np.abs(ref_grad).max())
    if not binary:
        assert_array_equal(objective.stored_X.toarray(), X.toarray())


def test_handed_over_features_are_ordered_in_place():
    rng = np.random.default_rng(12)
    objective, theta, X = make_objective(rng, binary=False)
    X = X.copy()
    data = X.data.copy()
    own = CRFObjective(X, objective.y, objective.offsets, objective.layout,
                       owns_features=True)
    assert np.shares_memory(own.csr[1], X.indices) and np.shares_memory(own.csr[2], X.data)
    assert not np.array_equal(X.data, data)  # reordered, the same matrix
    assert_array_equal(own.stored_X.toarray(), objective.stored_X.toarray())
    value, grad = own.loss_value_and_grad(theta, ConditionalLogLikelihood())
    ref_value, ref_grad = objective.loss_value_and_grad(theta, ConditionalLogLikelihood())
    assert value == ref_value
    assert_array_equal(grad, ref_grad)
    # Read-only arrays (e.g. joblib's memory maps in a worker) are copied.
    X = X.copy()
    X.indices.flags.writeable = X.data.flags.writeable = False
    before = X.indices.copy()
    copied = CRFObjective(X, objective.y, objective.offsets, objective.layout,
                          owns_features=True)
    assert not np.shares_memory(copied.csr[1], X.indices)
    assert_array_equal(X.indices, before)
    assert_array_equal(copied.csr[1], own.csr[1])
