"""Checked chains: CRF potentials validated once and converted to the kernels' layout.

Every inference function and every loss that calls a kernel directly starts
from a :class:`Chain` (the potentials, the sequence boundaries and the
thread count, checked by :func:`check_potentials`); :func:`transition_table`
gives the max-product kernels their ``(table, index)`` view of one
transition matrix or of position-dependent transitions.
"""

import re
import textwrap
from typing import NamedTuple

import numpy as np

from ._position_transitions import PositionTransitions
from ._threads import usable_threads

__all__ = ["CHAIN_PARAMETERS", "Chain", "chain_doc", "check_potentials", "nonempty_sequences",
           "transition_table"]


# The docstring parts every function here shares, written once: the
# decorator below writes each where a docstring says {name}.
CHAIN_PARAMETERS = """\
unary : array-like of shape (n_tokens, n_labels)
    Unary (state) potentials of all tokens, the sequences laid end to end.
transition : array-like of shape (n_labels, n_labels)
    ``transition[i, j]`` scores label ``i`` followed by label ``j``.
start, end : array-like of shape (n_labels,)
    Potentials of the first and of the last label of a sequence.
offsets : array-like of int of shape (n_sequences + 1,)
    Sequence boundaries (CSR ``indptr`` style): non-decreasing,
    ``offsets[0] == 0`` and ``offsets[-1] == n_tokens``; sequence ``i`` is
    rows ``offsets[i]:offsets[i + 1]`` (empty sequences are allowed)."""

_N_THREADS = """\
n_threads : int, default=1
    OpenMP threads over sequences."""

_CHAIN_DOC = {
    "chain_parameters": CHAIN_PARAMETERS,
    "n_threads": _N_THREADS,
    "chain_parameters_n_threads": CHAIN_PARAMETERS + "\n" + _N_THREADS,
    "shape_error": "ValueError\n    On inconsistent shapes (see :func:`check_potentials`).",
    # the reference; the docstring goes on with the equation or section
    "suzuki2006": "J. Suzuki, E. McDermott, H. Isozaki (2006). Training conditional random\n"
                  "fields with multivariate evaluation measures. ACL",
}


def chain_doc(func):
    """Write the shared parts where a line of ``func``'s docstring starts with
    ``{name}``, a name of ``_CHAIN_DOC`` (``chain_parameters``, ``n_threads``, ...)."""
    if func.__doc__:
        func.__doc__ = re.sub(
            r"^([ \t]*)\{(" + "|".join(_CHAIN_DOC) + r")\}",
            lambda m: textwrap.indent(_CHAIN_DOC[m.group(2)], m.group(1)),
            func.__doc__,
            flags=re.MULTILINE,
        )
    return func


@chain_doc
def check_potentials(unary, transition, start, end, offsets, positions=False):
    """Validate and convert CRF potentials to the kernels' layout.

    Parameters
    ----------
    {chain_parameters}
    positions : bool, default=False
        Whether the caller takes position-dependent transitions
        (:class:`~sklearn_crfloss.inference.PositionTransitions`).

    Returns
    -------
    unary, transition, start, end : ndarray of float64, C-contiguous
        The potentials, converted (copied only where needed).
    offsets : ndarray of intp
        The sequence boundaries, converted.

    Raises
    ------
    ValueError
        If shapes disagree, there are no labels (``n_labels == 0``), or
        offsets are not integers forming a valid partition of the tokens;
        if ``transition`` is position-dependent and ``positions`` is False.
    """
    unary = np.ascontiguousarray(unary, dtype=np.float64)
    by_position = isinstance(transition, PositionTransitions)
    if by_position and not positions:
        raise ValueError(
            "position-dependent transitions (observation-dependent label bigrams) are taken "
            "by forward_backward, marginals_vjp, viterbi, viterbi_nbest, viterbi_excluding, "
            "max_marginals, segment_margins and sequence_scores only, not by this function")
    if not by_position:
        transition = np.ascontiguousarray(transition, dtype=np.float64)
    start = np.ascontiguousarray(start, dtype=np.float64)
    end = np.ascontiguousarray(end, dtype=np.float64)
    raw_offsets = np.asarray(offsets)
    if raw_offsets.dtype.kind not in "iub" and raw_offsets.size:
        if raw_offsets.dtype.kind != "f" or not np.array_equal(raw_offsets,
                                                               np.round(raw_offsets)):
            raise ValueError(f"offsets must be integers, got dtype {raw_offsets.dtype}")
    offsets = np.ascontiguousarray(raw_offsets, dtype=np.intp)
    if unary.ndim != 2:
        raise ValueError(f"unary potentials must be 2-D, got shape {unary.shape}")
    n_tokens, n_labels = unary.shape
    if n_labels == 0:
        raise ValueError("unary potentials have no labels (shape "
                         f"{unary.shape}); a chain needs at least one label")
    if by_position:
        transition = transition.checked(n_tokens, n_labels)
    elif transition.shape != (n_labels, n_labels):
        raise ValueError(
            f"transition must have shape {(n_labels, n_labels)}, got {transition.shape}"
        )
    if start.shape != (n_labels,) or end.shape != (n_labels,):
        raise ValueError(
            f"start and end must have shape {(n_labels,)}, got {start.shape} and {end.shape}"
        )
    if (
        offsets.ndim != 1
        or offsets.shape[0] < 1
        or offsets[0] != 0
        or offsets[-1] != n_tokens
        or np.any(np.diff(offsets) < 0)
    ):
        raise ValueError(
            "offsets must be a non-decreasing 1-D array starting at 0 and "
            f"ending at n_tokens={n_tokens}"
        )
    return unary, transition, start, end, offsets


class Chain(NamedTuple):
    """Checked potentials of a batch, with the sizes and buffers the wrappers need."""

    unary: np.ndarray
    transition: np.ndarray
    start: np.ndarray
    end: np.ndarray
    offsets: np.ndarray
    n_threads: int

    @classmethod
    def checked(cls, unary, transition, start, end, offsets, n_threads, positions=False):
        """:func:`check_potentials` and a valid thread count (:func:`usable_threads`)."""
        return cls(*check_potentials(unary, transition, start, end, offsets, positions),
                   usable_threads(n_threads))

    @property
    def n_tokens(self):
        return self.unary.shape[0]

    @property
    def n_labels(self):
        return self.unary.shape[1]

    @property
    def n_seq(self):
        return self.offsets.shape[0] - 1

    def rows(self, width=1, dtype=np.float64):
        """An uninitialised (n_tokens, width * n_labels) table (e.g. backpointers)."""
        return np.empty((self.n_tokens, width * self.n_labels), dtype=dtype)

    def scratch(self, width):
        """Per-thread scratch rows of ``width`` doubles."""
        return np.empty((self.n_threads, max(1, width)))

    def labels(self, y, name):
        """``y`` as intp label indices of every token; ValueError otherwise."""
        y = np.ascontiguousarray(y, dtype=np.intp)
        if y.shape != (self.n_tokens,) or np.any((y < 0) | (y >= self.n_labels)):
            raise ValueError(
                f"{name} must hold {self.n_tokens} label indices in [0, {self.n_labels})"
            )
        return y


def nonempty_sequences(offsets):
    """Indices of the non-empty sequences and their offsets alone (the scaled kernels' input)."""
    nonempty = np.flatnonzero(np.diff(offsets) > 0)
    if nonempty.shape[0] == offsets.shape[0] - 1:
        return nonempty, offsets
    return nonempty, np.ascontiguousarray(np.append(offsets[nonempty], offsets[-1]),
                                          dtype=np.intp)


def transition_table(transition):
    """``(table, index)`` of the max-product kernels: the matrix ``index[t]`` scores edge t.

    A plain (n_labels, n_labels) matrix is a table of one matrix with an
    empty index (the same matrix on every edge).
    """
    if isinstance(transition, PositionTransitions):
        return transition.table, transition.index
    return transition[None], np.zeros(0, dtype=np.intp)
