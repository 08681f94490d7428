"""Fitted state published at once, read at once.

A fit builds the whole fitted state on a private copy of the estimator and
then publishes it, :func:`fitted_state` of the copy, with one
``dict.update`` of the estimator's ``__dict__``; a prediction method decorated with
:func:`on_snapshot` runs on a copy of the estimator's ``__dict__`` taken
in one step. Both steps are single operations on a dict whose keys are
strings, which CPython runs without releasing the global interpreter
lock, so a thread that predicts while another one refits the same
estimator sees the old model or the new one, never ``coef_`` of one and
``transition_`` of the other.
"""

import functools

__all__ = ["fitted_state", "on_snapshot", "snapshot_methods"]


def fitted_state(staged, params):
    """The fitted state a fit set on its copy of the estimator, to publish at once.

    The estimator publishes it with ``self.__dict__.update(...)``, one
    C-level update: atomic for other threads.

    Parameters
    ----------
    staged : dict
        ``vars()`` of a shallow copy of the estimator (``copy.copy``) on
        which the fit set its state.
    params : dict
        The estimator's ``get_params(deep=False)``: the entries left out.

    Returns
    -------
    dict
    """
    return {k: v for k, v in staged.items() if k not in params}


def on_snapshot(method):
    """Decorator: run ``method`` on a consistent snapshot of the estimator.

    The snapshot is a new instance whose ``__dict__`` is a copy of the
    estimator's, taken in one step, so a concurrent publication of a fit is
    either wholly before or wholly after it.

    Parameters
    ----------
    method : callable
        A method reading several fitted attributes.

    Returns
    -------
    callable
    """
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        snapshot = object.__new__(type(self))
        snapshot.__dict__ = self.__dict__.copy()  # one C-level copy
        return method(snapshot, *args, **kwargs)

    return wrapper


def snapshot_methods(*names):
    """Class decorator: wrap the methods ``names`` with :func:`on_snapshot`.

    Parameters
    ----------
    *names : str
        Names of methods defined by the decorated class.

    Returns
    -------
    callable
        The class decorator.
    """
    def decorate(cls):
        for name in names:
            setattr(cls, name, on_snapshot(vars(cls)[name]))
        return cls

    return decorate
