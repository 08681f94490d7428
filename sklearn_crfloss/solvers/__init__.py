"""Training procedures of :class:`~sklearn_crfloss.CRFTagger` (``solver=...``).

Each solver is a small class (a :class:`BaseSolver`, so its hyperparameters
are ``__init__`` arguments) registered in :data:`SOLVERS` under the name
``CRFTagger(solver=name)`` accepts. Every solver minimises ``loss + prior``
through the objective's ``value_and_grad`` (batch solvers) or the loss's
``value_and_grad`` on one sequence (online solvers), and reports every
iteration or epoch to one :class:`ConvergenceMonitor`. A list of solvers,
e.g. ``[('sgd', 10), 'quickprop']``, is a :class:`Schedule`: the solvers run
in turn, each from the last one's result.

To add a solver: subclass :class:`BaseSolver`, implement ``solve`` (and
``check`` for the losses and priors it cannot train), register it here.
"""

from .._registry import resolve
from ..losses._base import get_loss_tags
from ._base import BaseSolver
from ._lbfgs import LBFGS, minimize_lbfgs
from ._monitor import ConvergenceMonitor, HeldOutScore
from ._online import MIRA, StructuredPerceptron
from ._owlqn import OWLQN, minimize_liblbfgs
from ._quickprop import QuickProp
from ._rprop import Rprop
from ._schedule import Schedule, Suzuki2006
from ._sgd import SGD

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
}

__all__ = ["BaseSolver", "ConvergenceMonitor", "HeldOutScore", "LBFGS", "MIRA", "OWLQN",
           "QuickProp", "Rprop", "SGD", "SOLVERS", "Schedule", "StructuredPerceptron", "Suzuki2006",
           "default_solver", "make_solver", "minimize_lbfgs", "minimize_liblbfgs"]


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
    from ..priors import LaplacianPrior

    default = get_loss_tags(loss).default_solver
    if isinstance(default, str) and default == "lbfgs" and isinstance(prior, LaplacianPrior):
        return "owlqn"
    return default
