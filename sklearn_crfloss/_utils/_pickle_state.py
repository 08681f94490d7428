"""The package version in the pickled state of an estimator.

scikit-learn's ``BaseEstimator.__getstate__`` records ``_sklearn_version``
only for classes of scikit-learn's own modules; :class:`VersionedStateMixin`
records ``sklearn_crfloss.__version__`` as ``_sklearn_crfloss_version`` and
warns with :class:`~sklearn_crfloss.exceptions.InconsistentVersionWarning`
when an estimator is unpickled under another version.
"""

import warnings

from .._version import __version__
from ..exceptions import InconsistentVersionWarning

__all__ = ["VersionedStateMixin"]

_KEY = "_sklearn_crfloss_version"


class VersionedStateMixin:
    """Mixin (before ``BaseEstimator``) that records and checks the package version."""

    def __getstate__(self):
        # A copy: object.__getstate__ may return the instance's own __dict__.
        return dict(super().__getstate__(), **{_KEY: __version__})

    def __setstate__(self, state):
        state = dict(state)
        original = state.pop(_KEY, "unknown")
        if original != __version__:
            warnings.warn(InconsistentVersionWarning(
                estimator_name=type(self).__name__, current_version=__version__,
                original_version=original))
        super().__setstate__(state)
