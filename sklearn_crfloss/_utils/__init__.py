"""Helpers every stage uses: parameter validation, docstrings, registries, declared
records, pickle state.
"""

from ._compat import (HasMethods, Interval, StrOptions, validate_call,
                      validate_parameter_constraints, validate_params)
from ._docstring import fill_doc
from ._memory import release_free_heap
from ._pickle_state import VersionedStateMixin
from ._records import RECORD_METHOD_DOC, RECORD_NAME_DOC, declared_record
from ._registry import RESOLVER_DOC, RegisteredParamsMixin, resolve
from ._tags import SequenceTaggerTagsMixin

__all__ = ["HasMethods", "Interval", "RECORD_METHOD_DOC", "RECORD_NAME_DOC",
           "RESOLVER_DOC", "RegisteredParamsMixin",
           "SequenceTaggerTagsMixin", "StrOptions", "VersionedStateMixin", "declared_record",
           "fill_doc", "release_free_heap", "resolve", "validate_call", "validate_parameter_constraints",
           "validate_params"]
