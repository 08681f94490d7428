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
from sklearn.utils._param_validation import validate_params as validate_function_params

__all__ = [
    "HasMethods",
    "Interval",
    "StrOptions",
    "validate_function_params",
    "validate_parameter_constraints",
    "validate_params",
]


def validate_params(estimator):
    """Check ``estimator``'s parameters against its ``_parameter_constraints``.

    Raises
    ------
    sklearn.utils._param_validation.InvalidParameterError
        A subclass of both ValueError and TypeError, naming the parameter.
    """
    estimator._validate_params()
