"""Declared records: what training reads from a loss, a prior or a solver.

Each of them declares its capabilities in one dataclass record
(``LossTags``, ``PriorTags``, ``SolverTags``), returned by a method of its
base class (``__loss_tags__``, ``__prior_tags__``, ``__solver_tags__``) and
read through one function (``get_loss_tags``, ...), as scikit-learn's
``__sklearn_tags__`` is for estimators. :func:`declared_record` is how
those functions read it; :data:`RECORD_NAME_DOC` and
:data:`RECORD_METHOD_DOC` are the text the records and the declaring methods
share.
"""

__all__ = ["RECORD_METHOD_DOC", "RECORD_NAME_DOC", "declared_record"]

#: The start of a record's Parameters section, its ``name`` field, to be
#: completed with ``.format(what=...)`` (``"loss"``, ...) and put in place by
#: ``fill_doc``.
RECORD_NAME_DOC = """Parameters
----------
name : str or None, default=None
    The registry name (``CRFTagger({what}=name)``); None for a {what} that
    is not registered."""

#: The docstring body of a declaring method (``__loss_tags__``, ...), after
#: its summary line, to be completed with ``.format(method=..., record=...)``
#: and put in place by ``fill_doc``; the description of the record the
#: method returns follows the marker, indented below it.
RECORD_METHOD_DOC = """Override it in a subclass to change fields: call
``super().{method}()``, set them, return the record.

Returns
-------
{record}"""


def declared_record(obj, method, undeclared):
    """The record that ``obj`` declares, or the one of an object that declares none.

    The declaring method is looked up on the class, as Python looks up
    special methods, so an attribute of the instance is never taken for it.

    Parameters
    ----------
    obj : object
        A loss, prior or solver: an instance of its base class or any
        object with the methods training calls.
    method : str
        The name of the declaring method, e.g. ``"__loss_tags__"``.
    undeclared : callable
        ``undeclared(obj)`` makes the record of an object whose class has
        no such method (its defaults, read from what the object has).

    Returns
    -------
    object
        ``type(obj).<method>(obj)``, else ``undeclared(obj)``.
    """
    declare = getattr(type(obj), method, None)
    return undeclared(obj) if declare is None else declare(obj)
