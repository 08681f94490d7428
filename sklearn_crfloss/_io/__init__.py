"""Model files: the package's own format and CRFsuite's.

``_native_format`` writes and reads an estimator as numeric arrays and JSON
(no pickle); ``_crfsuite_format`` reads and writes CRFsuite model files.
The public face is :mod:`sklearn_crfloss.io`.
"""

from ._crfsuite_format import read_model, write_model
from ._native_format import dict_features, read_estimator, write_estimator

__all__ = ["dict_features", "read_estimator", "read_model", "write_estimator",
           "write_model"]
