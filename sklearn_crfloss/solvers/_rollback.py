"""Undoing one ``partial_solve`` call: the rows a batch touched, saved before it runs.

``partial_fit`` continues an online solver's state in place. When an epoch
over a batch ends with an objective or parameters that are not finite, the
solver puts the state back as it was before the call and raises, so that
the estimator keeps the model of its previous calls and can go on with the
next batch. A call touches only the weight rows of the attributes present
in its batch (and the small arrays: transitions, scale, step count), so
those rows are what is saved, not the whole weight matrix; a call that may
rescale every row (SGD's fold of its scale) saves the whole arrays.
"""

import numpy as np

__all__ = ["RowCheckpoint", "rng_state", "set_rng_state"]


def rng_state(rng):
    """The state of a numpy ``Generator`` or ``RandomState`` (None: None)."""
    if rng is None:
        return None
    if isinstance(rng, np.random.Generator):
        return rng.bit_generator.state
    return rng.get_state()


def set_rng_state(rng, state):
    """Put ``rng`` (a ``Generator`` or ``RandomState``) back to ``state``."""
    if rng is None:
        return
    if isinstance(rng, np.random.Generator):
        rng.bit_generator.state = state
    else:
        rng.set_state(state)


class RowCheckpoint:
    """Copies of some rows of row-indexed arrays and of whole small arrays.

    Parameters
    ----------
    rows : ndarray of intp
        The rows a call may change (rows at or past an array's length are
        new ones, removed again by :meth:`restore`).
    whole : bool, default=False
        Save the row-indexed arrays whole (a call that may change every row).
    zeros : bool, default=False
        The row-indexed arrays are all zeros (a state no call has trained
        yet): nothing is copied, :meth:`restore` fills them with zeros.

    Notes
    -----
    The arrays are named: :meth:`save_rows` and :meth:`save` take a copy
    under a name, :meth:`restore` returns the array to put back under it.
    """

    def __init__(self, rows, whole=False, zeros=False):
        self.rows = np.asarray(rows, dtype=np.intp)
        self.whole = whole and not zeros
        self.zeros = zeros
        self.saved = {}

    def save_rows(self, name, array):
        """Save the rows of ``array`` (its first axis) that the call may change."""
        n = array.shape[0]
        if self.zeros:
            self.saved[name] = (n, self.rows[self.rows < n], None)
        elif self.whole:
            self.saved[name] = (n, None, array.copy())
        else:
            rows = self.rows[self.rows < n]
            self.saved[name] = (n, rows, array[rows].copy())

    def save(self, name, array):
        """Save ``array`` whole (a small one: transitions, scale, counts)."""
        self.saved[name] = (None, None, np.array(array, copy=True))

    def restore(self, name, array):
        """``array`` as saved under ``name``: cut back to its length, its rows put back.

        Returns
        -------
        ndarray
            ``array`` itself (changed in place) or a new array.
        """
        n, rows, copy = self.saved[name]
        if n is None or rows is None:
            return copy
        out = array[:n] if array.shape[0] != n else array
        if copy is None:  # (zeros)
            out[...] = 0
        else:
            out[rows] = copy
        return out

    def finite(self, name, array):
        """Whether the rows of ``array`` that the call may have changed are finite."""
        n, rows, _ = self.saved[name]
        if n is None or rows is None:
            return bool(np.all(np.isfinite(array)))
        new = self.rows[(self.rows >= n) & (self.rows < array.shape[0])]
        return bool(np.all(np.isfinite(array[rows])) and np.all(np.isfinite(array[new])))
