"""Every private scikit-learn import of the package, in one place.

scikit-learn's parameter-validation helpers are private; if a release moves
them, this is the only file to change.
"""

from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    StrOptions,
    validate_parameter_constraints,
)
from sklearn.utils._param_validation import validate_params as validate_call

__all__ = [
    "HasMethods",
    "Interval",
    "StrOptions",
    "validate_call",
    "validate_parameter_constraints",
    "validate_params",
]

# ``validate_call(constraints, prefer_skip_nested_validation=True)`` is
# scikit-learn's ``validate_params`` decorator for public functions: it checks
# the arguments against ``constraints`` (the same constraint language as
# ``_parameter_constraints``) and raises ``InvalidParameterError`` naming the
# function and the parameter. Renamed here because ``validate_params`` below
# checks an estimator.


def validate_params(estimator):
    """Check ``estimator``'s parameters against its ``_parameter_constraints``.

    Raises
    ------
    sklearn.utils._param_validation.InvalidParameterError
        A subclass of both ValueError and TypeError, naming the parameter.
    """
    estimator._validate_params()
