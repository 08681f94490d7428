"""Schedules of solvers (``solver=[('sgd', 10), 'quickprop']``) and the solver registry.

A schedule resolves its stages by :func:`make_solver`, and :func:`make_solver`
turns a list into a schedule: both live here, with :data:`SOLVERS`, so that
no two modules of the package import each other.
"""

import copy
import warnings
from numbers import Integral

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._utils import resolve
from ..losses import get_loss_tags
from ..priors import get_prior_tags
from ._base import BaseSolver, get_solver_tags
from ._lbfgs import LBFGS
from ._online import MIRA, StructuredPerceptron
from ._owlqn import OWLQN
from ._quickprop import QuickProp
from ._rprop import Rprop
from ._sgd import SGD

__all__ = ["GPDQuickProp", "SOLVERS", "Schedule", "Suzuki2006", "default_solver", "make_solver"]


class Schedule(BaseSolver):
    """Solvers run one after the other, each starting from the last one's result.

    ``CRFTagger(solver=[('sgd', 10), 'quickprop'])`` (a list, which
    :func:`make_solver` turns into a ``Schedule``) is the training of
    Suzuki et al. (2006, footnote 2): "online GPD optimization for the
    first ten iterations", then QuickProp; it is the default of
    ``loss='mce'`` and ``loss='mce_f'``.

    Every stage reports to its own :class:`ConvergenceMonitor` (a copy of
    the estimator's, with the stage's budget, an empty history and the
    stage's name for ``verbose`` and warnings; a stage with its own
    ``n_iter`` before the last one does not warn that it did not converge,
    since it is meant to stop there); their histories are
    concatenated, so ``n_iter_`` and ``loss_curve_`` cover all stages and
    the ``callback`` numbers iterations across them. Each stage starts from
    the parameters the previous one returned; the outcome of the last stage
    is the schedule's (``converged_``). An online stage's ``loss_curve_``
    entries are its epochs' summed losses, a batch stage's the objective.

    The first ``warm_up`` stages are a warm-up: they run only when training
    starts from zero parameters, where every label sequence has the same
    score and the nonsmooth MCE losses give no useful batch direction; from
    a fit (``init='cll'``, ``warm_start=True``) they are skipped. The
    default schedule of ``'mce'`` and ``'mce_f'`` is
    ``Schedule([('sgd', 10), 'quickprop'], warm_up=1)``, registered as
    ``'suzuki2006'`` (:class:`Suzuki2006`); a list passed as
    ``solver`` has no warm-up (every stage runs).

    Parameters
    ----------
    stages : list
        One entry per stage, in order: a solver (a name of :data:`SOLVERS`
        or a :class:`BaseSolver` instance), or a pair ``(solver, n_iter)``
        where ``n_iter`` (int >= 1) is the stage's budget of iterations or
        epochs. A stage without ``n_iter`` gets the estimator's ``max_iter``
        (None: the stage solver's ``default_max_iter``). Named stages take
        the estimator's ``eta0``, ``average`` and ``random_state`` as
        :func:`make_solver` gives them; solver objects are used as given.
    warm_up : int, default=0
        How many leading stages run only from zero parameters (above); at
        most ``len(stages) - 1``.

    Attributes
    ----------
    dense_states : bool
        True if any stage trains a weight for every (attribute, label) pair
        (the online solvers): every stage then trains that layout.
    default_max_iter : None
        Each stage without ``n_iter`` runs its own solver's
        ``default_max_iter`` when the estimator's ``max_iter`` is None.

    Raises
    ------
    ValueError
        On an empty list, a malformed stage, an unknown solver name, or a
        stage solver that cannot train the loss and prior
        (:meth:`check`).

    References
    ----------
    J. Suzuki, E. McDermott, H. Isozaki (2006). Training conditional random
    fields with multivariate evaluation measures. ACL. Section 5.1,
    footnote 2.

    Examples
    --------
    >>> from sklearn_crfloss.solvers import make_solver
    >>> schedule = make_solver([("sgd", 10), "quickprop"], eta0=0.05)
    >>> [(type(s).__name__, n) for s, n in schedule.stages_]
    [('SGD', 10), ('QuickProp', None)]
    >>> schedule.stages_[0][0].eta0
    0.05
    """

    name = "schedule"

    def __init__(self, stages, warm_up=0):
        self.stages = stages
        self.warm_up = warm_up

    def bind(self, **params):
        """Resolve the stages' solvers with the estimator's hyperparameters.

        Parameters
        ----------
        **params
            Passed to :func:`make_solver` for every named stage.

        Returns
        -------
        self : Schedule
            With ``stages_``, a list of ``(solver, n_iter or None)``.

        Raises
        ------
        ValueError
            On an empty list, a malformed stage or an unknown name.
        """
        stages = self.stages
        if isinstance(stages, (str, BaseSolver)) or not hasattr(stages, "__len__"):
            raise ValueError(f"a schedule is a list of stages, got {stages!r}")
        if len(stages) == 0:
            raise ValueError("a schedule needs at least one stage, got an empty list")
        if (not isinstance(self.warm_up, Integral) or isinstance(self.warm_up, bool)
                or not 0 <= self.warm_up < len(stages)):
            raise ValueError(f"warm_up must be an int in [0, {len(stages) - 1}] (the number "
                             f"of leading warm-up stages), got {self.warm_up!r}")
        resolved = []
        for stage in stages:
            n_iter = None
            if isinstance(stage, tuple):
                if len(stage) != 2:
                    raise ValueError(f"a schedule stage is a solver or a pair (solver, "
                                     f"n_iter), got {stage!r}")
                stage, n_iter = stage
                if (not isinstance(n_iter, Integral) or isinstance(n_iter, bool)
                        or n_iter < 1):
                    raise ValueError(f"the n_iter of a schedule stage must be an int >= 1, "
                                     f"got {n_iter!r}")
                n_iter = int(n_iter)
            if isinstance(stage, (list, tuple)):
                raise ValueError(f"a schedule stage cannot be a list, got {stage!r}")
            resolved.append((make_solver(stage, **params), n_iter))
        self.stages_ = resolved
        return self

    def for_start(self, from_zero):
        """The solver that trains from zero parameters or from a fit.

        Parameters
        ----------
        from_zero : bool
            Whether training starts from zero parameters.

        Returns
        -------
        BaseSolver
            ``self`` from zero; from a fit, the schedule without its
            ``warm_up`` stages (the remaining solver itself if one stage is
            left), so that the estimator builds the layout of the stages
            that run.
        """
        stages = self._bound()
        if from_zero or not self.warm_up:
            return self
        rest = stages[self.warm_up:]
        if len(rest) == 1 and rest[0][1] is None:
            return rest[0][0]
        out = copy.copy(self)
        out.stages_ = rest
        out.warm_up = 0
        return out

    def _bound(self):
        return self.stages_ if hasattr(self, "stages_") else self.bind().stages_

    @property
    def dense_states(self):
        return any(s.dense_states for s, _ in self._bound())

    default_max_iter = None

    def __solver_tags__(self):
        # Docstring inherited: takes bigrams if every stage does; the longest
        # early-stopping patience of its stages.
        tags = super().__solver_tags__()
        tags.takes_bigrams = all(get_solver_tags(s).takes_bigrams for s, _ in self._bound())
        tags.for_start = True  # the warm-up runs from zero only
        tags.n_iter_no_change = max(get_solver_tags(s).n_iter_no_change
                                    for s, _ in self._bound())
        return tags

    def check(self, loss, prior):
        # Docstring inherited: every stage's check.
        for solver, _ in self._bound():
            solver.check(loss, prior)

    def solve(self, objective, loss, prior, C, x0, monitor):
        # Docstring inherited.
        stages = self._bound()
        if np.any(x0):  # from a fit: no warm-up
            stages = stages[self.warm_up:]
        x = x0
        for k, (solver, n_iter) in enumerate(stages):
            label = f"{solver.name} {k + 1}/{len(stages)}"
            budget = n_iter or monitor.max_iter or solver.default_max_iter
            offset = monitor.n_iter
            child = monitor.for_stage(budget,
                                      f"{monitor.stage} {label}" if monitor.stage else label,
                                      offset, get_solver_tags(solver).unit)
            with warnings.catch_warnings():
                if n_iter is not None and k < len(stages) - 1:
                    # A stage of a set length before the last is not meant to converge.
                    warnings.simplefilter("ignore", ConvergenceWarning)
                x = solver.solve(objective, loss, prior, C, x, child)
            if monitor.end_stage(child):
                break
        return x


class Suzuki2006(Schedule):
    """Suzuki et al.'s schedule (``solver='suzuki2006'``): ten SGD epochs, then QuickProp.

    ``Schedule([('sgd', 10), 'quickprop'], warm_up=1)`` under a name, so
    that a loss can name it as its default solver (the default of
    ``loss='mce'`` and ``loss='mce_f'``): "online GPD optimization for the
    first ten iterations", then QuickProp (Suzuki et al. 2006, section 5.1
    and footnote 2). The SGD epochs run only from zero parameters; from a
    fit (``init='cll'``, ``warm_start=True``) QuickProp runs alone.

    Parameters
    ----------
    stages : list, default=[('sgd', 10), 'quickprop']
        As :class:`Schedule`'s.
    warm_up : int, default=1
        As :class:`Schedule`'s.

    References
    ----------
    J. Suzuki, E. McDermott, H. Isozaki (2006). Training conditional random
    fields with multivariate evaluation measures. ACL. Section 5.1,
    footnote 2.
    """

    name = "suzuki2006"

    def __init__(self, stages=(("sgd", 10), "quickprop"), warm_up=1):
        super().__init__(stages, warm_up=warm_up)


class GPDQuickProp(Suzuki2006):
    """Ten SGD epochs, then QuickProp, from any start (``solver='gpd_quickprop'``).

    Suzuki et al.'s schedule (:class:`Suzuki2006`, section 5.1 and footnote
    2 of their 2006 paper) with its SGD ("online GPD") epochs run from a fit
    too, as the paper describes them for every start. The default of
    ``loss='mce_f'``: from the MAP model of ``C = 1`` on CoNLL-2000 it scored
    above QuickProp alone on the development split (93.64 against 93.52
    F1), and from zero it is the same schedule.

    Parameters
    ----------
    stages : list, default=[('sgd', 10), 'quickprop']
        The stages, run in order (:class:`Schedule`).
    warm_up : int, default=0
        No stage is skipped when training starts from a fit.

    See Also
    --------
    Suzuki2006 : The same stages, the SGD epochs from zero only.
    """

    name = "gpd_quickprop"

    def __init__(self, stages=(("sgd", 10), "quickprop"), warm_up=0):
        super().__init__(stages, warm_up=warm_up)


#: Registry of solver names accepted by ``CRFTagger(solver=...)``.
SOLVERS = {
    "lbfgs": LBFGS,
    "owlqn": OWLQN,
    "rprop": Rprop,
    "quickprop": QuickProp,
    "sgd": SGD,
    "perceptron": StructuredPerceptron,
    "mira": MIRA,
    "suzuki2006": Suzuki2006,
    "gpd_quickprop": GPDQuickProp,
}


def solvers_with(tag):
    """The names of the registered solvers (not schedules) whose record sets ``tag``.

    Parameters
    ----------
    tag : str
        A boolean field of :class:`SolverTags`, e.g. ``'takes_bigrams'``.

    Returns
    -------
    tuple of str
        In the order of :data:`SOLVERS` (for messages that list them).
    """
    return tuple(name for name, cls in SOLVERS.items()
                 if not issubclass(cls, Schedule) and getattr(get_solver_tags(cls()), tag))

# What CRFTagger reads of a solver besides ``solve`` (BaseSolver defines them all).
_SOLVER_INTERFACE = ("check", "name", "dense_states", "default_max_iter")


def make_solver(solver, **params):
    """A solver of the registry, a solver object or a schedule, ready to train.

    Parameters
    ----------
    solver : str, BaseSolver or list
        A key of :data:`SOLVERS`; a solver object (an unfitted copy is
        used, its hyperparameters as given); or a list (or tuple) of stages,
        which becomes a :class:`Schedule` (see there for the syntax,
        e.g. ``[('sgd', 10), 'quickprop']``).
    **params
        Candidate hyperparameters (e.g. the estimator's ``eta0``,
        ``average``, ``random_state``) for a named solver and the named
        stages of a schedule; those a solver's ``__init__`` does not take
        are ignored.

    Returns
    -------
    BaseSolver

    Raises
    ------
    ValueError
        If a name is not registered, or a schedule is malformed.
    TypeError
        If ``solver`` is neither a name, a list nor an object with ``solve``,
        or an object without the rest of :class:`BaseSolver`'s interface
        (``check``, ``name``, ``dense_states``, ``default_max_iter``).
    """
    if isinstance(solver, (list, tuple)):
        solver = Schedule(list(solver))
    obj = resolve(solver, SOLVERS, "solver", method="solve")
    if isinstance(obj, Schedule):
        return obj.bind(**params)
    if not isinstance(solver, str):
        missing = [a for a in _SOLVER_INTERFACE if not hasattr(obj, a)]
        if missing:
            raise TypeError(
                f"The solver object {type(obj).__name__} has 'solve' but not "
                f"{', '.join(repr(a) for a in missing)}, which training also uses: derive it "
                "from sklearn_crfloss.solvers.BaseSolver (which defines them) or define them.")
        return obj
    return obj.set_params(**{k: v for k, v in params.items()
                             if k in obj.get_params(deep=False)})


def default_solver(loss, prior):
    """The solver ``CRFTagger(solver=None)`` trains ``loss`` with ``prior`` by.

    The loss's ``default_solver`` (``'lbfgs'`` for smooth losses; a
    schedule for ``'mce'`` and ``'mce_f'``; the online rules for the margin
    losses), except that a smooth loss with ``prior='l1'`` or ``'elasticnet'`` trains with
    ``'owlqn'`` (OWL-QN; see the solvers guide for the measurements).

    Parameters
    ----------
    loss : loss object
    prior : prior object

    Returns
    -------
    str or tuple
        A name of :data:`SOLVERS` or a schedule (for :func:`make_solver`).
    """
    default = get_loss_tags(loss).default_solver
    if isinstance(default, str) and default == "lbfgs" and get_prior_tags(prior).l1:
        return "owlqn"
    return default
