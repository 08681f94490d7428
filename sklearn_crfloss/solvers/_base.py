"""The solver contract: how a loss and a prior on bound data are minimised."""

from sklearn.base import BaseEstimator

from ..losses import get_loss_tags

__all__ = ["BaseSolver", "prior_name"]


def prior_name(tags, prior):
    """A prior's name for a message: its declared ``tags.name``, else the object itself."""
    return prior if tags.name is None else tags.name


class BaseSolver(BaseEstimator):
    """Base class of training procedures (``CRFTagger(solver=name)``).

    A solver minimises ``loss + prior`` over the free parameters of a
    :class:`~sklearn_crfloss._model._objective.CRFObjective`. Its hyperparameters
    are ``__init__`` arguments; :class:`~sklearn_crfloss.CRFTagger` builds it
    from the estimator parameters of the same names (``eta0``, ``average``,
    ``random_state``).

    Attributes
    ----------
    name : str
        Registry name.
    dense_states : bool
        Whether it trains a weight for every (attribute, label) pair (the
        online rules, whose steps touch every label of an attribute);
        otherwise it trains the estimator's layout (observed pairs unless
        ``all_possible_states``).
    default_max_iter : int
        ``max_iter`` when the estimator's is None (iterations or epochs).
    unit : str
        What one report to the monitor counts (``'iter'``, ``'epoch'``),
        for the verbose lines.

    Notes
    -----
    The monitor contract: after every iteration (epoch), call
    ``monitor.report(objective, theta=..., **fields)`` with the current
    parameters ``theta`` (an array of shape (n_params,), or a function of no
    argument returning it when assembling them costs a pass over the
    weights; the monitor calls it only for early stopping and callbacks that
    take the model) and the fields to print with ``verbose`` (step size
    ``eta=...``, gradient norm ...); stop when it returns True; end with
    ``monitor.finish(converged, message)``. Early stopping, verbose output
    and callbacks then work for the solver with no code of its own: the
    estimator keeps the parameters of the best validation score
    (``monitor.result(theta)``).
    """

    name = None
    dense_states = False
    default_max_iter = 1000
    unit = "iter"

    def check(self, loss, prior):
        """Raise ValueError if this solver cannot train ``loss`` with ``prior``.

        Parameters
        ----------
        loss : loss object
        prior : prior object

        Raises
        ------
        ValueError
            Here: if ``loss`` is trained by its own online rule (its
            ``default_solver`` is ``'perceptron'`` or ``'mira'``) and this
            solver is not that rule. Subclasses add their own conditions
            and call this one.
        """
        default = get_loss_tags(loss).default_solver
        if isinstance(default, str) and default in ("perceptron", "mira") \
                and default != self.name:
            raise ValueError(f"loss={default!r} is trained by its own online rule; leave "
                             f"solver=None (got solver={self.name!r}).")

    def solve(self, objective, loss, prior, C, x0, monitor):
        """Minimise ``objective.value_and_grad(theta, loss, prior, C)`` from ``x0``.

        Parameters
        ----------
        objective : CRFObjective
            The bound training data.
        loss : loss object
        prior : prior object
        C : float
        x0 : ndarray of float64 of shape (objective.n_params,)
            Starting point (not modified).
        monitor : ConvergenceMonitor
            Receives one report per iteration or epoch and the outcome
            (:meth:`ConvergenceMonitor.finish`).

        Returns
        -------
        ndarray of float64 of shape (objective.n_params,)
            The final parameters.
        """
        raise NotImplementedError
