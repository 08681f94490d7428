"""The fused conditional log-likelihood with observation-dependent label bigrams.

``CRFObjective`` evaluates the exact ``ConditionalLogLikelihood`` class with
one kernel (``_positions.position_cll_features_batch``): the unary rows from
the features, the scaled forward-backward with each edge's own matrix, the
pair sums per distinct matrix and the scatter into the gradient. A subclass
of the loss takes the general path (potentials, forward-backward over the
table, the chain rule), which these tests compare it with, and both are
checked against brute-force enumeration.
"""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from _oracle import position_brute_force

from sklearn_crfloss._chain._forward_backward import N_BLOCKS
from sklearn_crfloss._model._bigram_layout import BigramLayout
from sklearn_crfloss._model._objective import CRFObjective
from sklearn_crfloss.losses import ConditionalLogLikelihood


class _GeneralCLL(ConditionalLogLikelihood):
    """The same loss by the general path (the objective fuses the exact class only)."""


def _problem(seed, n_seq, n_labels, max_len, n_state=8, n_bigram=5, n_threads=1):
    """A bound objective with bigram blocks, a random theta, and its data.

    State attributes have random free labels (some dense rows, some compact
    attributes of at most three labels) and values 1, 0.5 or 2; each token
    has zero, one or more active bigram attributes.
    """
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, max_len + 1, size=n_seq)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
    n = int(offsets[-1])
    values = np.zeros((n, n_state + n_bigram))
    values[:, :n_state] = ((rng.random((n, n_state)) < 0.5)
                           * rng.choice([1.0, 0.5, 2.0], size=(n, n_state)))
    values[:, 0] = 1.0  # a bias
    values[:, n_state:] = rng.random((n, n_bigram)) < 0.35
    X = sp.csr_matrix(values)
    y = rng.integers(n_labels, size=n).astype(np.intp)
    free = rng.random((n_state + n_bigram, n_labels)) < 0.6
    free[0] = True
    state_index = np.flatnonzero(free.ravel()).astype(np.intp)
    layout = BigramLayout(X.shape[1], n_labels, state_index,
                          np.arange(n_state, n_state + n_bigram, dtype=np.intp))
    weights = rng.uniform(0.5, 2.0, size=n_seq)
    objective = CRFObjective(X, y, offsets, layout, sample_weight=weights, n_threads=n_threads)
    theta = rng.normal(size=layout.n_params)
    return objective, theta, X, y, offsets, weights


@pytest.mark.parametrize("seed", [0, 1])
def test_fused_equals_general_path(seed):
    # 60 sequences: every accumulator block gets several chunks of 8.
    objective, theta, *_ = _problem(seed, n_seq=60, n_labels=6, max_len=14)
    assert objective.n_blocks == N_BLOCKS
    value, grad = objective.loss_value_and_grad(theta, ConditionalLogLikelihood())
    general_value, general_grad = objective.loss_value_and_grad(theta, _GeneralCLL())
    assert value == pytest.approx(general_value, rel=1e-12)
    np.testing.assert_allclose(grad, general_grad, rtol=1e-9, atol=1e-10)
    layout = objective.layout
    assert np.abs(grad[layout.n_base:]).max() > 1e-2  # the blocks get their gradient


@pytest.mark.parametrize("where", ["blocks", "one attribute"])
def test_fused_equals_general_path_in_log_space(where):
    # Potentials of a few hundred: the scaled passes would lose the mass.
    # Large blocks widen the range bound of every sequence: all run in log
    # space; a large attribute only that of the sequences that hold it.
    objective, theta, X, y, offsets, _ = _problem(2, n_seq=40, n_labels=5, max_len=10)
    layout = objective.layout
    theta = theta.copy()
    if where == "blocks":
        theta[layout.n_base:] *= 150.0
    else:
        theta[np.flatnonzero(layout.state_index // layout.n_labels == 1)] *= 5000.0
    n_fallback = objective.cll_blocks(theta)[-1]
    has = np.add.reduceat(X[:, 1].toarray().ravel() != 0, offsets[:-1]) > 0
    assert n_fallback == (40 if where == "blocks" else has.sum()) and has.sum() < 40
    value, grad = objective.loss_value_and_grad(theta, ConditionalLogLikelihood())
    general_value, general_grad = objective.loss_value_and_grad(theta, _GeneralCLL())
    assert value == pytest.approx(general_value, rel=1e-12)
    np.testing.assert_allclose(grad, general_grad, rtol=1e-8, atol=1e-8)


def _by_enumeration(objective, theta, X, y, offsets, weights):
    """The weighted CLL and its gradient in theta's order, by enumerating every path."""
    layout = objective.layout
    L = layout.n_labels
    W = layout.dense_weights(theta)
    transition, start, end = layout.unpack_tail(theta)
    blocks = layout.bigram_weights(theta)
    Xb = X[:, layout.bigram_columns].toarray()
    per_token = transition + np.einsum("tb,bij->tij", Xb, blocks)  # T_t of the edge into t
    unary = X @ W
    log_z, marg, pair, start_c, end_c, _, _ = position_brute_force(
        unary, per_token, start, end, offsets, weights)
    lengths = np.diff(offsets)
    token_weight = np.repeat(weights, lengths)
    first = offsets[:-1]
    inner = np.setdiff1d(np.arange(y.shape[0]), first)
    score = np.bincount(np.repeat(np.arange(lengths.shape[0]), lengths),
                        weights=unary[np.arange(y.shape[0]), y])
    np.add.at(score, np.repeat(np.arange(lengths.shape[0]), lengths)[inner],
              per_token[inner, y[inner - 1], y[inner]])
    score += start[y[first]] + end[y[offsets[1:] - 1]]
    value = float(np.dot(weights, log_z - score))
    d_unary = token_weight[:, None] * (marg - np.eye(L)[y])
    d_pair = pair.copy()
    np.add.at(d_pair, (inner, y[inner - 1], y[inner]), -token_weight[inner])
    d_start = start_c - np.bincount(y[first], weights=weights, minlength=L)
    d_end = end_c - np.bincount(y[offsets[1:] - 1], weights=weights, minlength=L)
    grad = np.concatenate([
        np.asarray(X.T @ d_unary).ravel()[layout.state_index],
        layout.pack_tail(d_pair.sum(axis=0), d_start, d_end),
        np.einsum("tb,tij->bij", Xb, d_pair).ravel()])
    return value, grad


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_value_and_gradient_match_enumeration(seed):
    objective, theta, X, y, offsets, weights = _problem(seed, n_seq=6, n_labels=3, max_len=5)
    value, grad = objective.loss_value_and_grad(theta, ConditionalLogLikelihood())
    expected_value, expected_grad = _by_enumeration(objective, theta, X, y, offsets, weights)
    assert value == pytest.approx(expected_value, rel=1e-11)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-9, atol=1e-11)


def test_block_sums_do_not_depend_on_the_threads():
    one, theta, *_ = _problem(6, n_seq=70, n_labels=4, max_len=9)
    two = _problem(6, n_seq=70, n_labels=4, max_len=9, n_threads=2)[0]
    assert one.n_blocks == two.n_blocks == N_BLOCKS
    for a, b in zip(one.cll_blocks(theta), two.cll_blocks(theta)):
        np.testing.assert_array_equal(a, b)
    first, second = (o.loss_value_and_grad(theta, ConditionalLogLikelihood()) for o in (one, two))
    assert first[0] == second[0]
    np.testing.assert_array_equal(first[1], second[1])


def test_a_pickled_objective_evaluates_the_same():
    # The kept per-matrix sums hold a lock: a copy starts with new ones.
    objective, theta, *_ = _problem(7, n_seq=20, n_labels=4, max_len=6)
    value, grad = objective.loss_value_and_grad(theta, ConditionalLogLikelihood())
    copy = pickle.loads(pickle.dumps(objective))
    for _ in range(2):  # new sums, then the kept ones zeroed
        copy_value, copy_grad = copy.loss_value_and_grad(theta, ConditionalLogLikelihood())
        assert copy_value == value
        np.testing.assert_array_equal(copy_grad, grad)
