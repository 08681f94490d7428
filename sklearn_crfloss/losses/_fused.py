"""The losses' fused evaluations: a compiled kernel on the objective's features.

:meth:`CRFObjective.loss_value_and_grad
<sklearn_crfloss._model.CRFObjective.loss_value_and_grad>` asks the loss's
``fused_value_and_grad(objective, theta)`` first (:class:`BaseLoss`'s
returns ``None``); a loss with a fused kernel overrides it and calls one of
the functions here, which read the objective only through its public
members (``csr``, ``state_weights``, ``kernel_weights``,
``sequence_weights``, ``cll_value_and_grad``, ``kept``, ...). Otherwise the
loss takes the general path (``U = X @ W``, the loss's ``value_and_grad``,
``X.T @ dU``). A fused evaluation makes one pass over the features per
sequence and builds no (n_tokens, n_labels) array:

* the conditional log-likelihood runs the objective's own kernel
  (:meth:`~sklearn_crfloss._model.CRFObjective.cll_value_and_grad`,
  label bigrams included);
* softmax-margin (Gimpel & Smith 2010, Eq. 6) is the conditional
  log-likelihood on ``U + cost(y*_t, .)``: the log-likelihood's own kernel,
  on the features with one more column per token, the indicator of its gold
  label, whose weights are the rows of the cost matrix (:func:`softmax_margin`);
* risk (Eq. 5), labelwise accuracy (Gross et al. 2006, Eqs. (9)-(10) and
  footnote 5) and the pointwise log loss (Tsuboi & Kashima, Definition 2)
  run ``_fused_losses.marginal_loss_features_batch`` (:func:`marginal_loss`):
  forward-backward, the loss's dl/dmu and the marginals' vector-Jacobian
  product per sequence (see its design notes);
* the λ-mixed loss (Tsuboi & Kashima, Definition 3) runs the same kernel:
  ``(1 - λ)`` times the pointwise terms plus ``λ`` times the log-likelihood's
  log Z and expected counts, from the same forward-backward; the observed
  counts are subtracted afterwards. ``λ = 1`` takes the log-likelihood's
  own kernel. When a sequence leaves the scaled passes, the whole
  evaluation takes the general path.

Only the exact loss classes take the fused path (:func:`applies`: a
subclass may change ``value_and_grad``), and, but for the log-likelihood,
only without observation-dependent label bigrams: the kernels take the plain
(n_labels, n_labels) transition matrix of the objective's layout. Gradients
equal those of the general path up to rounding (tests/test_fused_losses.py).
A sequence that the scaled passes cannot do (potentials of magnitude ~700) is
evaluated by the general path.
"""

import numpy as np

from .._chain import (Accumulators, exp_potentials, fused_scratch_width,
                      marginal_loss_features_batch, pair_gradient, row_width)
from ._base import get_loss_tags

__all__ = ["LABELWISE_MODES", "MIXED", "POINTWISE", "RISK", "CostColumns", "applies",
           "marginal_loss", "softmax_margin"]

# The kernel's modes (see _ext/_fused_losses.pyx): the risk, each labelwise
# ``q``, the pointwise log loss, the λ-mixed loss.
RISK = 0
LABELWISE_MODES = {"sigmoid": 1, "identity": 2, "log": 3}
POINTWISE = 3
MIXED = 4


def applies(loss, cls, objective):
    """Whether ``loss`` takes the fused kernel of ``cls`` on ``objective``.

    Exact types only (a subclass may change ``value_and_grad``), and no
    observation-dependent label bigrams (the objective's ``bigram`` is
    None): the kernels take one transition matrix for every position.
    """
    return type(loss) is cls and objective.bigram is None


def _sequence_token_weights(objective):
    """Every token's sequence weight (ones without sample_weight)."""
    return np.repeat(objective.sequence_weights(), np.diff(objective.offsets))


class CostColumns:
    """The features with one more column per token: its gold label's cost row.

    Softmax-margin's potentials are ``U + cost(y*_t, .)``, i.e. the
    potentials of the features with a column ``n_features + y*_t`` set on
    every token, whose dense weight rows (after the state weights' own) are
    the rows of the cost matrix. The log-likelihood's fused kernel then
    evaluates softmax-margin unchanged; the gradient of the extra rows is
    dropped.

    Parameters
    ----------
    objective : CRFObjective
    cost : ndarray of shape (n_labels, n_labels)

    Attributes
    ----------
    csr : tuple
        ``(indptr, indices, data, binary)`` of the widened features.
    code : ndarray of int64
        The attribute codes, the cost columns' last.
    Notes
    -----
    The observed counts stay those of the original features, so the value
    is ``log Z(U + cost) - score(y*)`` (Eq. 6) even for a cost whose
    diagonal is not 0.
    """

    def __init__(self, objective, cost):
        indptr, indices, data, binary = objective.csr
        n_tokens, L = objective.n_tokens, objective.n_labels
        y = np.asarray(objective.y, dtype=np.intp)
        extra = indptr[1:] + np.arange(n_tokens)  # each row's last slot in the widened CSR
        new_indices = np.empty(indices.shape[0] + n_tokens, dtype=np.int32)
        keep = np.ones(new_indices.shape[0], dtype=bool)
        keep[extra] = False
        new_indices[keep] = indices
        new_indices[extra] = objective.n_features + y
        if not binary:
            new_data = np.empty(new_indices.shape[0])
            new_data[keep] = data
            new_data[extra] = 1.0
            data = new_data
        self.csr = (indptr + np.arange(n_tokens + 1), new_indices, data, binary)
        weights = objective.state_weights
        self._n_hot = weights.W_hot.shape[0]
        self.code = np.concatenate([weights.code,
                                    -(self._n_hot + np.arange(L, dtype=np.int64) + 1)])
        self._W_hot = np.zeros((self._n_hot + L, weights.Lp))
        self._W_hot[self._n_hot:, :L] = cost

    def weights(self, W_hot, hot_acc):
        """The dense rows (the state weights' ``W_hot``, then the cost) and their accumulators."""
        self._W_hot[:self._n_hot] = W_hot
        return self._W_hot, np.zeros((hot_acc.shape[0],) + self._W_hot.shape)


def softmax_margin(objective, theta, cost):
    """Softmax-margin with ``cost``: the log-likelihood kernel on the cost-widened features.

    The widened features are kept by the objective (:meth:`kept`) for the
    next evaluation with the same cost.
    """
    columns = objective.kept(("cost", cost.tobytes()), lambda: CostColumns(objective, cost))
    return objective.cll_value_and_grad(theta, extra_columns=columns)


def marginal_loss(objective, theta, loss, mode, alpha=0.0, cost=None, token_weight=None,
                  lam=0.0):
    """Risk, labelwise, pointwise or mixed by ``marginal_loss_features_batch``.

    Parameters
    ----------
    objective : CRFObjective
    theta : ndarray of float64 of shape (n_params,)
    loss : loss object
        Its ``value_and_grad`` evaluates the sequences the kernel leaves to
        log space.
    mode : int
        :data:`RISK`, one of :data:`LABELWISE_MODES`, :data:`POINTWISE` or
        :data:`MIXED`.
    alpha : float, default=0.0
        The labelwise sigmoid's sharpness.
    cost : ndarray of shape (n_labels, n_labels) or None
        The risk's cost matrix.
    token_weight : ndarray of shape (n_tokens,) or None
        Each token's weight; None: its sequence's weight (the risk).
    lam : float, default=0.0
        The log-likelihood's weight (mode :data:`MIXED`).

    Returns
    -------
    (float, ndarray of shape (n_params,)) or None
        None in mode :data:`MIXED` when a sequence fails the scaled passes:
        the caller then takes the general path.
    """
    layout = objective.layout
    L = objective.n_labels
    Lp = row_width(L)
    n_state = layout.n_state
    offsets = objective.offsets
    y = np.ascontiguousarray(objective.y, dtype=np.intp)
    if token_weight is None:  # the risk takes no token weights
        token_weight = _sequence_token_weights(objective)
    transition, start, end = (np.ascontiguousarray(a, dtype=np.float64)
                              for a in layout.unpack_tail(theta))
    exp_trans, exp_start, exp_end, shifts = exp_potentials(transition, start, end)
    E = np.zeros((Lp, Lp))
    E[:L, :L] = exp_trans
    es, ee = np.zeros(Lp), np.zeros(Lp)
    es[:L], ee[:L] = exp_start, exp_end
    n_seq = offsets.shape[0] - 1
    values = np.zeros(n_seq)
    failed = np.zeros(n_seq, dtype=np.int8)
    grad = np.empty(objective.n_params)
    state_weights = objective.state_weights
    grad_acc, hot_acc = state_weights.accumulators(objective.n_threads, grad[:n_state])
    acc = Accumulators(objective.n_threads, L)
    max_length = int(np.diff(offsets).max())
    scratch = np.empty((objective.n_threads, fused_scratch_width(L, max_length)))
    n_failed = marginal_loss_features_batch(
        *objective.csr, *objective.kernel_weights(theta), transition,
        start, E, np.ascontiguousarray(E.T), es, ee, offsets, y, token_weight,
        np.zeros((1, 1)) if cost is None else cost, mode, alpha, values, grad_acc, hot_acc,
        acc.pair, acc.boundary, scratch, max_length, failed, objective.n_threads,
        objective.sequence_weights(), lam)
    if mode == MIXED and n_failed:
        return None
    state_weights.gradient(grad_acc, hot_acc, grad[:n_state])
    d_trans, d_start, d_end = acc.counts(exp_trans, 0)
    value = float(values.sum())
    if n_failed:
        v, g_state, tail = _general_on(objective, theta, loss, np.flatnonzero(failed))
        value += v
        grad[:n_state] += g_state
        d_trans, d_start, d_end = d_trans + tail[0], d_start + tail[1], d_end + tail[2]
    grad[n_state:] = layout.pack_tail(d_trans, d_start, d_end)
    if mode == MIXED:  # the log-likelihood's shifts and observed counts
        weights = objective.sequence_weights()
        lengths = np.diff(offsets)
        observed = objective.observed_counts()
        value += lam * (float(np.dot(weights, shifts[1] + shifts[2] + (lengths - 1) * shifts[0]))
                        - float(np.dot(theta, observed)))
        grad -= lam * observed
    return value, grad


def _general_on(objective, theta, loss, sequences):
    """The general path on some sequences: value, state gradient, (dT, dstart, dend).

    For the sequences the fused kernel leaves to log space.
    """
    offsets = objective.offsets
    lengths = np.diff(offsets)[sequences]
    rows = np.concatenate([np.arange(offsets[k], offsets[k + 1]) for k in sequences])
    sub_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
    unary, transition, start, end = objective.potentials(theta)
    extra = {}
    if objective.token_weight is not None and get_loss_tags(loss).supports_token_weight:
        extra["token_weight"] = np.asarray(objective.token_weight)[rows]
    sample_weight = (None if objective.sample_weight is None
                     else np.asarray(objective.sample_weight)[sequences])
    value, d_unary, d_trans, d_start, d_end = loss.value_and_grad(
        np.ascontiguousarray(unary[rows]), transition, start, end, objective.y[rows],
        sub_offsets, sample_weight=sample_weight, n_threads=objective.n_threads, **extra)
    state_weights = objective.state_weights
    g_state = np.empty(objective.layout.n_state)
    acc, hot_acc = state_weights.accumulators(1, g_state)
    X = objective.X[rows]  # float64 CSR
    pair_gradient(X.indptr.astype(np.intp), X.indices.astype(np.int32), X.data, False,
                  state_weights.code,
                  np.ascontiguousarray(d_unary, dtype=np.float64), acc, hot_acc, 1)
    state_weights.gradient(acc, hot_acc, g_state)
    return value, g_state, (d_trans, d_start, d_end)
