"""Helpers every stage uses: parameter validation, docstrings, registries, pickle state.
"""

from ._compat import (HasMethods, Interval, StrOptions, validate_call,
                      validate_parameter_constraints, validate_params)
from ._docstring import fill_doc
from ._pickle_state import VersionedStateMixin
from ._registry import RESOLVER_DOC, RegisteredParamsMixin, resolve
from ._tags import SequenceTaggerTagsMixin

__all__ = ["HasMethods", "Interval", "RESOLVER_DOC", "RegisteredParamsMixin",
           "SequenceTaggerTagsMixin", "StrOptions", "VersionedStateMixin", "fill_doc", "resolve", "validate_call",
           "validate_parameter_constraints", "validate_params"]
