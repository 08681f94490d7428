"""What ``SGD.partial_solve`` carries from one ``partial_fit`` call to the next.

:class:`SGDState` holds the scaled iterate and the averaging sums of
:class:`~sklearn_crfloss.solvers.SGD` between calls, with what undoing one
call needs (:meth:`SGDState.checkpoint`, :meth:`SGDState.rollback`);
:func:`may_fold` tells whether a call may fold the scale into every row
(then the whole weights are saved, not only the rows of the batch).
"""

import numpy as np

from ._rollback import RowCheckpoint, rng_state, set_rng_state

__all__ = ["SGDState", "may_fold"]

#: The scale below which the compiled steps fold it into every row
#: (``MIN_SCALE_FACTOR`` of ``_ext/_sgd_loops.pyx``).
_MIN_SCALE = 1e-9


def may_fold(state, n_seq, lam, max_step):
    """Whether an epoch of ``n_seq`` sequences may fold ``state``'s scale into every row.

    A step on ``m`` sequences multiplies the scale by ``1 - eta lam m >=
    1 - eta0 lam m`` (``eta <= eta0``); over steps of at most ``max_step``
    sequences that add up to ``n_seq``, by at least ``(1 - eta0 lam
    max_step) ** (n_seq / max_step)`` (the logarithm is concave in ``m``).
    A first call (``eta0`` not calibrated yet) starts from zeros and may.
    """
    if lam == 0.0:
        return False
    if state.eta0 is None:
        return True
    shrink = state.eta0 * lam * max_step
    if shrink >= 1.0:
        return True
    bound = np.log(state.state[0]) + n_seq / max_step * np.log1p(-shrink)
    return bool(bound < np.log(2.0 * _MIN_SCALE))


class SGDState:
    """What :meth:`SGD.partial_solve` carries from one call to the next.

    The scaled iterate ``theta = a V`` and the averaging corrections of
    :class:`SGD` (see the module docstring), in the natural row order, with
    the step count, the step size and the random generator, so that calls
    on successive batches continue one run of the schedule.

    Parameters
    ----------
    n_features : int
    n_labels : int
    all_states : bool
        If False, only the (attribute, label) pairs marked in ``mask`` (see
        :meth:`observe`) are trained, the others stay 0 (CRFsuite's
        observed pairs); if True, all.
    average : bool
        Whether the averaging corrections are kept.

    Attributes
    ----------
    W : ndarray of shape (n_features, n_labels)
        ``V``'s state weights.
    tail : ndarray of shape (n_labels ** 2 + 2 n_labels,)
        ``V``'s transitions, start and end potentials.
    mask : ndarray of uint8 of shape (n_features, n_labels) or (0, n_labels)
    BW, Btail : ndarray
        Averaging corrections (0 rows without averaging).
    B, BB : ndarray of shape (n_bigram * n_labels ** 2,)
        ``V``'s blocks of the bigram attributes (observation-dependent label
        bigrams, in the order of their columns) and their averaging
        corrections (empty without averaging).
    state : ndarray of shape (5,)
        ``[a, t, S, n_avg, n_folds]`` (scale, sequences seen, ...).
    n_seen : int
        Sequences seen by all calls (the ``n`` of ``lam = 1 / (C n)``).
    eta0 : float or None
        The first step size, calibrated by the first call if None.
    average_start : int or None
    rng : numpy.random.Generator or None
    """

    def __init__(self, n_features, n_labels, all_states=False, average=True):
        L = n_labels
        self.W = np.zeros((n_features, L))
        self.tail = np.zeros(L * L + 2 * L)
        self.mask = np.zeros((0 if all_states else n_features, L), dtype=np.uint8)
        rows = n_features if average else 0
        self.BW, self.Btail = np.zeros((rows, L)), np.zeros(self.tail.shape[0] if average else 0)
        self.B, self.BB, self.average = np.zeros(0), np.zeros(0), average
        self.state = np.array([1.0, 0.0, 0.0, 0.0, 0.0])
        self.n_seen = 0
        self.eta0 = None
        self.average_start = None
        self.rng = None

    def grow(self, n_features, n_bigram=0):
        """Add zero rows for new attributes (a vocabulary that grows with the stream),
        and zero blocks for new bigram attributes (their columns after the old ones)."""
        L = self.W.shape[1]
        extra = n_bigram * L * L - self.B.shape[0]
        if extra > 0:  # (the scale multiplies zeros: no fold needed)
            self.B = np.concatenate([self.B, np.zeros(extra)])
            if self.average:
                self.BB = np.concatenate([self.BB, np.zeros(extra)])
        extra = n_features - self.W.shape[0]
        if extra > 0:
            def pad(A):
                return A if A.shape[0] == 0 else np.concatenate(
                    [A, np.zeros((extra, A.shape[1]), dtype=A.dtype)])
            self.W, self.mask, self.BW = pad(self.W), pad(self.mask), pad(self.BW)

    def checkpoint(self, rows, whole=False):
        """What :meth:`rollback` needs to undo a call that touches ``rows`` (see ``_rollback``).

        Parameters
        ----------
        rows : ndarray of intp
            The attribute rows the call may change (new ones included).
        whole : bool, default=False
            Save ``W`` and ``BW`` whole: the call may fold the scale into
            every row.

        Returns
        -------
        RowCheckpoint
        """
        saved = RowCheckpoint(rows, whole, zeros=self.rng is None)  # (no call yet: zeros)
        for name in ("W", "mask", "BW"):
            saved.save_rows(name, getattr(self, name))
        for name in ("tail", "Btail", "B", "BB", "state"):
            saved.save(name, getattr(self, name))
        saved.scalars = (self.n_seen, self.eta0, self.average_start, self.rng,
                         rng_state(self.rng))
        return saved

    def rollback(self, saved):
        """Put the state back as :meth:`checkpoint` found it."""
        for name in ("W", "mask", "BW", "tail", "Btail", "B", "BB", "state"):
            setattr(self, name, saved.restore(name, getattr(self, name)))
        self.n_seen, self.eta0, self.average_start, self.rng, rng = saved.scalars
        set_rng_state(self.rng, rng)

    def finite(self, saved):
        """Whether every entry a call from :meth:`checkpoint` may have changed is finite."""
        return all(saved.finite(name, getattr(self, name))
                   for name in ("W", "BW", "tail", "Btail", "B", "BB", "state"))

    def observe(self, X, y):
        """Mark the (attribute, gold label) pairs of a batch as trained.

        Parameters
        ----------
        X : scipy.sparse.csr_matrix of shape (n_tokens, n_features)
        y : ndarray of intp of shape (n_tokens,)
        """
        if self.mask.shape[0]:
            rows = np.repeat(np.asarray(y, dtype=np.intp), np.diff(X.indptr))
            self.mask[X.indices, rows] = 1

    def parameters(self):
        """``(W, transition, start, end, blocks)``: the average of the iterates once
        averaging has begun, else the current iterate (new arrays); ``blocks`` of
        shape (n_bigram, n_labels, n_labels)."""
        a, _, S, n_avg, _ = self.state
        if self.BW.shape[0] and n_avg > 0:
            W = (S * self.W - self.BW) / n_avg
            tail = (S * self.tail - self.Btail) / n_avg
            B = (S * self.B - self.BB) / n_avg
        else:
            W, tail, B = a * self.W, a * self.tail, a * self.B
        L = self.W.shape[1]
        return (W, tail[:L * L].reshape(L, L), tail[L * L:L * L + L], tail[L * L + L:],
                B.reshape(-1, L, L))
