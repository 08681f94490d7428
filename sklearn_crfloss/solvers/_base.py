"""The solver contract: how a loss and a prior on bound data are minimised.

What the estimators read from a solver besides ``solve`` and ``check`` is
one record, :class:`SolverTags`, returned by ``__solver_tags__`` and read
through :func:`get_solver_tags` (as :class:`~sklearn_crfloss.losses.LossTags`
is for losses).
"""

from dataclasses import dataclass

from sklearn.base import BaseEstimator

from .._utils import RECORD_METHOD_DOC, RECORD_NAME_DOC, declared_record, fill_doc
from ..losses import get_loss_tags

__all__ = ["BaseSolver", "SolverTags", "get_solver_tags", "prior_name"]


@fill_doc(record_name=RECORD_NAME_DOC.format(what="solver"))
@dataclass
class SolverTags:
    """The capabilities of a solver that training reads (``BaseSolver.__solver_tags__``).

    {record_name}
    unit : str, default='iter'
        What one report to the monitor counts (``'iter'``, ``'epoch'``).
    own_rule : bool, default=False
        Whether it follows its own update rule rather than minimise the
        objective (the perceptron, MIRA): training then does not check that
        the objective fell.
    online : bool, default=False
        Whether ``partial_fit`` continues it, one epoch per call: it has
        ``new_state(n_features, n_labels, all_states)``,
        ``partial_solve(...)`` on that state (which grows it to the batch's
        attributes, and puts it back as it was when it raises, e.g. on an
        objective or parameters that are not finite) and
        ``parameters_of(state)``.
    takes_bigrams : bool, default=False
        Whether it trains the blocks of observation-dependent label bigrams
        (a schedule: whether every stage does).
    trains_label_experts : bool, default=False
        Whether it trains bigram blocks of ``LOPTagger``'s label experts: a
        batch solver, whose steps are made of the objective's gradient,
        which is 0 on the blocks' entries outside an expert's labels.
    line_search : bool, default=False
        Whether it is a quasi-Newton method with a line search (L-BFGS,
        OWL-QN), which usually stops at once from a point where the
        (sub)gradient gives no descent.
    shard_epochs : bool, default=False
        Whether it has ``shard_epoch``, with which
        :class:`~sklearn_crfloss.dask.DaskCRFTagger` trains by iterative
        parameter mixing (SGD).
    for_start : bool, default=False
        Whether the solver depends on where training starts (a schedule
        whose warm-up runs from zero only): training then runs
        ``solver.for_start(from_zero)``.
    n_iter_no_change : int, default=5
        Early stopping's patience when the estimator's ``n_iter_no_change``
        is None: the reports (iterations or epochs, ``unit``) without an
        improvement of the held-out score before it stops. An SGD epoch
        passes over every sequence; an L-BFGS iteration is one step, and
        its held-out score rises in steps separated by flat stretches, so
        it needs a longer patience.
    """

    name: str = None
    unit: str = "iter"
    own_rule: bool = False
    online: bool = False
    takes_bigrams: bool = False
    trains_label_experts: bool = False
    line_search: bool = False
    shard_epochs: bool = False
    for_start: bool = False
    n_iter_no_change: int = 5


def get_solver_tags(solver):
    """The declared capabilities of a solver: ``solver.__solver_tags__()``.

    The one place where the defaults of a solver object that declares no
    record (an object with BaseSolver's interface only) are set: its
    ``name`` and ``unit`` are read, the other fields are False.

    Parameters
    ----------
    solver : solver object

    Returns
    -------
    SolverTags

    Examples
    --------
    >>> from sklearn_crfloss.solvers import get_solver_tags, make_solver
    >>> tags = get_solver_tags(make_solver("sgd"))
    >>> tags.unit, tags.online, tags.takes_bigrams
    ('epoch', True, True)
    """
    return declared_record(solver, "__solver_tags__", lambda solver: SolverTags(
        name=getattr(solver, "name", None), unit=getattr(solver, "unit", "iter")))


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

    @fill_doc(record_method=RECORD_METHOD_DOC.format(method="__solver_tags__",
                                                     record="SolverTags"))
    def __solver_tags__(self):
        """The solver's declared capabilities (see :class:`SolverTags`).

        {record_method}
            Here: ``name`` and ``unit`` from the class attributes, the
            other fields at their defaults.
        """
        return SolverTags(name=self.name, unit=self.unit)

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
