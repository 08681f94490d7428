"""The integer widths of the training objective's index arrays.

The layout keeps its state index as int32 when every flat index
``attribute * n_labels + label`` fits (intp otherwise), and the feature
kernels read the CSR's own row pointers, int32 or int64: each width gives
the same evaluation, bitwise.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_array_equal

from sklearn_crfloss._model._accumulators import StateWeights
from sklearn_crfloss._model._bigram_layout import BigramLayout
from sklearn_crfloss._model._objective import CRFObjective, kernel_csr
from sklearn_crfloss._model._parameters import index_dtype, observed_pairs, ParameterLayout
from sklearn_crfloss.losses import (ConditionalLogLikelihood, LabelwiseAccuracyLoss, MixedLoss,
                                    PointwiseLoss, Risk, SoftmaxMargin)
from sklearn_crfloss.priors import GaussianPrior

from test_objective import GenericCLL, make_objective, mixed_state_index


def with_int64_indices(X):
    """X (CSR) with int64 row pointers and columns (scipy keeps them as given)."""
    X = sp.csr_matrix(X, copy=True)
    X.indptr, X.indices = X.indptr.astype(np.int64), X.indices.astype(np.int64)
    return X


def test_index_dtype_is_int32_while_the_bound_fits():
    assert index_dtype(0) == np.int32
    assert index_dtype(2**31 - 1) == np.int32
    assert index_dtype(2**31) == np.intp
    assert index_dtype(2**40) == np.intp


def test_layout_keeps_state_index_as_int32():
    rng = np.random.default_rng(0)
    index = mixed_state_index(rng, 14, 6)
    assert index.dtype == np.intp
    layout = ParameterLayout(14, 6, index)
    assert layout.state_index.dtype == np.int32
    assert_array_equal(layout.state_index, index)
    assert ParameterLayout(14, 6).state_index.dtype == np.int32
    expert = ParameterLayout(14, 6, index, labels=[1, 4])
    assert expert.state_index.dtype == np.int32
    assert_array_equal(expert.state_index, index[np.isin(index % 6, [1, 4])])
    bigram = BigramLayout(14, 6, index, np.array([3, 9]))
    assert bigram.state_index.dtype == np.int32
    assert_array_equal(bigram.state_index, index[~np.isin(index // 6, [3, 9])])


def test_layout_keeps_wide_state_index_as_intp():
    # 2**30 attributes of 4 labels: flat indices up to 2**32 do not fit int32.
    index = np.array([0, 5, 2**31 + 3, 2**32 - 1], dtype=np.int64)
    layout = ParameterLayout(2**30, 4, index)
    assert layout.state_index.dtype == np.intp
    assert_array_equal(layout.state_index, index)


def test_observed_pairs_are_int32():
    X = sp.csr_matrix(np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0]], dtype=np.int8))
    pairs = observed_pairs(X, np.array([0, 1, 1]), 2)
    assert pairs.dtype == np.int32
    assert_array_equal(pairs, [0, 1, 3, 4])


def test_state_weights_same_for_int32_and_intp_index():
    rng = np.random.default_rng(1)
    index = mixed_state_index(rng, 30, 7)
    frequency = rng.integers(1, 50, size=30)
    wide = StateWeights(index.astype(np.intp), 30, 7, frequency)
    narrow = StateWeights(index.astype(np.int32), 30, 7, frequency)
    assert 0 < narrow.n_hot < 30
    for name in ("code", "hot_index", "hot_position"):
        assert_array_equal(getattr(narrow, name), getattr(wide, name))
    assert narrow.hot_index.dtype == narrow.hot_position.dtype == np.int32


def test_kernel_csr_keeps_int32_row_pointers():
    X = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0]]))
    assert X.indptr.dtype == np.int32
    indptr, indices, data, binary = kernel_csr(X)
    assert indptr is X.indptr and indices.dtype == np.int32 and not binary
    indptr, indices, _, _ = kernel_csr(with_int64_indices(X))
    assert indptr.dtype == np.intp and indices.dtype == np.int32
    assert_array_equal(indptr, X.indptr)


LOSSES = {
    "cll": ConditionalLogLikelihood, "generic_cll": GenericCLL,
    "softmax_margin": lambda: SoftmaxMargin(cost_scale=2.0), "risk": Risk,
    "labelwise": LabelwiseAccuracyLoss, "pointwise": PointwiseLoss, "mixed": MixedLoss,
}


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("binary", [True, False])
def test_evaluation_same_for_int32_and_int64_row_pointers(binary, n_threads):
    rng = np.random.default_rng(2)
    objective, theta, X = make_objective(rng, binary=binary, n_threads=n_threads, n_labels=5,
                                         lengths=(3, 1, 8, 5, 2, 6, 4, 7, 3, 9) * 3)
    assert objective.csr[0].dtype == np.int32
    wide = CRFObjective(with_int64_indices(X), objective.y, objective.offsets,
                        objective.layout, n_threads=n_threads)
    assert wide.csr[0].dtype == np.intp
    for name, make in LOSSES.items():
        value, grad = objective.value_and_grad(theta, make(), GaussianPrior(), 1.0)
        wide_value, wide_grad = wide.value_and_grad(theta, make(), GaussianPrior(), 1.0)
        assert value == wide_value, name
        assert_array_equal(grad, wide_grad, err_msg=name)
    assert_array_equal(objective.observed_counts(), wide.observed_counts())


def test_position_cll_same_for_int32_and_int64_row_pointers():
    rng = np.random.default_rng(3)
    offsets = np.array([0, 4, 9, 11, 18], dtype=np.intp)
    X = sp.csr_matrix((rng.random((18, 10)) < 0.4) * 1.0)
    y = rng.integers(4, size=18).astype(np.intp)
    layout = BigramLayout(10, 4, None, np.array([8, 9]))
    narrow = CRFObjective(X, y, offsets, layout)
    wide = CRFObjective(with_int64_indices(X), y, offsets, layout)
    assert narrow.csr[0].dtype == np.int32 and wide.csr[0].dtype == np.intp
    theta = rng.normal(size=layout.n_params)
    loss = ConditionalLogLikelihood()
    value, grad = narrow.loss_value_and_grad(theta, loss)
    wide_value, wide_grad = wide.loss_value_and_grad(theta, loss)
    assert value == wide_value
    assert_array_equal(grad, wide_grad)
