"""Giving the C heap's free memory back to the operating system."""

import ctypes
import ctypes.util
import functools

__all__ = ["release_free_heap"]


@functools.cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None (another C library, or none found)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        trim = libc.malloc_trim
    except (OSError, AttributeError, TypeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def release_free_heap():
    """Return the free pages of the C heap to the operating system (glibc; else nothing).

    A fit frees its training buffers (the L-BFGS history, the objective's
    accumulators) before it builds the fitted state; blocks of a few MB
    come from glibc's heap, which keeps their pages resident after ``free``,
    so the fitted state's new pages would add to them at the peak.
    ``malloc_trim(0)`` gives the free pages back.

    Returns
    -------
    bool
        Whether ``malloc_trim`` was called (glibc's C library found).
    """
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
