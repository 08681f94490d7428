"""Warnings and errors of sklearn-crfloss."""

__all__ = ["InconsistentVersionWarning", "PotentialMagnitudeError", "UndefinedLossError"]


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


class UndefinedLossError(ValueError):
    """A loss that is undefined on the sequences it was given, at these parameters.

    Raised by the ``value_and_grad`` of a loss that is not a sum over
    sequences (an F-score such as ``loss='mce_f'``) when its value on the
    batch has no finite value: for example when every gold segment of the
    batch is misclassified by so wide a margin that the smoothed count of
    true positives underflows to 0 and the F-score ratio is undefined.

    On the full training set it reaches the user as a ``ValueError`` (it is
    one): the problem is ill-posed at those parameters. On a minibatch of
    :class:`~sklearn_crfloss.solvers.SGD` (and the SGD epochs of the
    default schedules) the solver catches it and takes the step on a larger
    minibatch instead (see there).
    """


class PotentialMagnitudeError(ValueError):
    """Potentials of a magnitude whose marginals double precision cannot resolve.

    Raised by :func:`~sklearn_crfloss.inference.forward_backward` when the
    node marginals of a sequence do not sum to 1 (to within 1e-6), and by
    :func:`~sklearn_crfloss.inference.marginals_vjp` when its product is not
    finite: potentials of magnitude beyond about ``1e10`` (the marginals'
    error grows as the magnitude times 1e-16; exponentials overflow from
    about ``1e20``). The message names the sequence and the magnitude.

    It is a ``ValueError``. During training it means that the weights grew
    far out of range (a step size too large, features of a huge magnitude):
    the training stage reports it as a divergence.
    """
