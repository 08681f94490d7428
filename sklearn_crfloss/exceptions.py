"""Warnings of sklearn-crfloss."""

__all__ = ["InconsistentVersionWarning"]


class InconsistentVersionWarning(UserWarning):
    """An estimator unpickled under another version of sklearn-crfloss than it was pickled with.

    :class:`~sklearn_crfloss.CRFTagger` and :class:`~sklearn_crfloss.LOPTagger`
    record ``sklearn_crfloss.__version__`` when they are pickled and warn
    with this class when the version that unpickles them differs (the
    fitted attributes or their meaning may have changed: refit, or load
    under the recorded version). scikit-learn's own
    :class:`sklearn.exceptions.InconsistentVersionWarning` covers a change
    of the scikit-learn version. Turn the warning into an error with
    ``warnings.simplefilter("error", InconsistentVersionWarning)``.

    Parameters
    ----------
    estimator_name : str
        The class name of the unpickled estimator.
    current_version : str
        The version of sklearn-crfloss that unpickles it.
    original_version : str
        The version that pickled it (``'unknown'`` for a pickle that did not
        record it).

    Attributes
    ----------
    estimator_name : str
    current_version : str
    original_version : str
    """

    def __init__(self, *, estimator_name, current_version, original_version):
        self.estimator_name = estimator_name
        self.current_version = current_version
        self.original_version = original_version
        super().__init__(str(self))

    def __str__(self):
        return (
            f"Trying to unpickle estimator {self.estimator_name} from sklearn-crfloss version "
            f"{self.original_version} when using version {self.current_version}. This might "
            "lead to breaking code or invalid results. Use at your own risk."
        )
