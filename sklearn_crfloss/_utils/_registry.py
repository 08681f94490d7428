"""One resolver for every registry of the package (losses, priors, solvers, decoders).

An estimator parameter such as ``CRFTagger(loss=...)`` takes either a name
registered in a dict (``LOSSES``, ``PRIORS``, ...) or an object. :func:`resolve`
turns either into the object that training uses, always a fresh one, so that
training never changes the caller's object, and checks its hyperparameters
against its ``_parameter_constraints`` (scikit-learn's declarative
constraints), once, before any work is done.
"""

from sklearn.base import clone

from ._compat import validate_parameter_constraints

__all__ = ["RESOLVER_DOC", "RegisteredParamsMixin", "resolve"]

#: The docstring body of a registry's ``get_<what>`` function, to be
#: completed with ``.format(what=..., registry=..., base=...)`` and put in
#: place by ``fill_doc``.
RESOLVER_DOC = """
A thin call to :func:`sklearn_crfloss._utils._registry.resolve` with
:data:`{registry}`. :class:`~sklearn_crfloss.CRFTagger` calls it at the
start of ``fit``; call it too before calling a {what}'s
``value_and_grad`` yourself, since that method does not check the
hyperparameters.

Parameters
----------
{what} : str or object with ``value_and_grad``
    A name in :data:`{registry}`, or an instance (e.g. of a subclass of
    :class:`{base}`).

Returns
-------
{base} or object
    A new instance for a name, else an unfitted copy of ``{what}``
    (``sklearn.base.clone``: fitted attributes are dropped and the
    caller's object is never changed by training); its hyperparameters
    checked against its ``_parameter_constraints``.

Raises
------
ValueError
    If ``{what}`` is an unknown name, or a hyperparameter is out of its
    range (scikit-learn's ``InvalidParameterError``, which names it).
TypeError
    If ``{what}`` is neither a string nor an object with a
    ``value_and_grad`` method.
"""


def resolve(value, registry, what, method="value_and_grad"):
    """The object to train with, from a registered name or a user's object.

    Parameters
    ----------
    value : str or object
        A key of ``registry``, or an object with a ``method`` attribute.
    registry : dict of str -> class or object
        The registered names, e.g. :data:`sklearn_crfloss.losses.LOSSES`.
    what : str
        What ``value`` is, for messages (``'loss'``, ``'prior'``, ...).
    method : str, default='value_and_grad'
        The attribute an object must have to be accepted.

    Returns
    -------
    object
        For a name: a new instance, ``registry[value]()``, if the entry is a
        class, else the entry itself (e.g. a function). For an object: an
        unfitted copy, ``sklearn.base.clone(value, safe=False)`` (fitted
        attributes such as ``classes_`` are dropped; an object that is not
        a scikit-learn estimator is deep-copied). In both cases, if the
        result has ``_parameter_constraints`` and ``get_params``, its
        parameters have been validated against them.

    Raises
    ------
    ValueError
        If ``value`` is a string that is not a key of ``registry`` (the
        message lists the keys), or if a parameter of the object violates
        its ``_parameter_constraints`` (scikit-learn's
        ``InvalidParameterError``, a subclass of ValueError and TypeError,
        naming the parameter and what it accepts).
    TypeError
        If ``value`` is neither a string nor an object with ``method`` (a
        class is refused: pass an instance).

    Examples
    --------
    >>> from sklearn_crfloss._utils._registry import resolve
    >>> from sklearn_crfloss.losses import LOSSES, MixedLoss
    >>> resolve("mixed", LOSSES, "loss")
    MixedLoss()
    >>> resolve(MixedLoss(lam=0.9), LOSSES, "loss")
    MixedLoss(lam=0.9)
    """
    if isinstance(value, str):
        try:
            entry = registry[value]
        except KeyError:
            raise ValueError(
                f"Unknown {what} {value!r}; choose one of {sorted(registry)} or pass an "
                f"object with a {method} method."
            ) from None
        obj = entry() if isinstance(entry, type) else entry
    elif hasattr(value, method) and not isinstance(value, type):
        obj = clone(value, safe=False)
    else:
        raise TypeError(
            f"{what} must be a string or an object (not a class) with a {method} method, "
            f"got {value!r}"
        )
    constraints = getattr(obj, "_parameter_constraints", None)
    if constraints is not None and hasattr(obj, "get_params"):
        validate_parameter_constraints(constraints, obj.get_params(deep=False),
                                       caller_name=type(obj).__name__)
    return obj


class RegisteredParamsMixin:
    """``set_params`` that reaches the hyperparameters of a registered name.

    scikit-learn's ``set_params(loss__lam=0.5)`` sets ``lam`` on the object
    in ``loss``; when ``loss`` is a name such as ``'mixed'`` there is no
    object to set it on. Here a name given with (or holding) nested
    parameters is first replaced by the object it stands for (:func:`resolve`
    with its registry), so ``set_params(loss='mixed', loss__lam=0.5)`` sets
    ``loss=MixedLoss(lam=0.5)``: ``get_params`` then shows the object and
    its ``loss__lam``, and ``clone`` copies both, as in a GridSearchCV grid
    such as ``{'loss': ['mixed'], 'loss__lam': [0.1, 0.5]}``.

    A subclass lists its registered parameters in ``_registered_params``
    (parameter name -> registry dict); it must come before
    :class:`~sklearn.base.BaseEstimator` among the bases.
    """

    #: Parameter name -> registry of the names it accepts.
    _registered_params: dict = {}

    def set_params(self, **params):
        """Set the parameters; a registered name with nested parameters becomes its object.

        Parameters
        ----------
        **params : dict
            Estimator parameters, ``<component>__<parameter>`` for nested
            ones (also when ``<component>`` is, or is set here to, a
            registered name).

        Returns
        -------
        self : estimator instance

        Raises
        ------
        ValueError
            If a name with nested parameters is not registered (the message
            lists the names), or a nested parameter is not one of the
            object's.
        """
        for name, registry in self._registered_params.items():
            value = params.get(name, getattr(self, name))
            if isinstance(value, str) and any(key.startswith(f"{name}__") for key in params):
                params[name] = resolve(value, registry, name)
        return super().set_params(**params)
