"""Training procedures of :class:`~sklearn_crfloss.CRFTagger` (``solver=...``).

Each solver is a small class (a :class:`BaseSolver`, so its hyperparameters
are ``__init__`` arguments) registered in :data:`SOLVERS` under the name
``CRFTagger(solver=name)`` accepts. Every solver minimises ``loss + prior``
through the objective's ``value_and_grad`` (batch solvers) or the loss's
``value_and_grad`` on one sequence (online solvers), and reports every
iteration or epoch to one :class:`ConvergenceMonitor`.

To add a solver: subclass :class:`BaseSolver`, implement ``solve`` (and
``check`` for the losses and priors it cannot train), register it here.
"""

from .._registry import resolve
from ._base import BaseSolver
from ._lbfgs import LBFGS, minimize_lbfgs
from ._monitor import ConvergenceMonitor, HeldOutScore
from ._online import MIRA, StructuredPerceptron
from ._sgd import SGD

#: Registry of solver names accepted by ``CRFTagger(solver=...)``.
SOLVERS = {
    "lbfgs": LBFGS,
    "sgd": SGD,
    "perceptron": StructuredPerceptron,
    "mira": MIRA,
}

__all__ = ["BaseSolver", "ConvergenceMonitor", "HeldOutScore", "LBFGS", "MIRA", "SGD",
           "SOLVERS", "StructuredPerceptron", "make_solver", "minimize_lbfgs"]


def make_solver(name, **params):
    """A solver of the registry, built from the estimator parameters it takes.

    Parameters
    ----------
    name : str or BaseSolver
        A key of :data:`SOLVERS`, or a solver object (cloned; ``params``
        are not applied to it).
    **params
        Candidate hyperparameters (e.g. the estimator's ``eta0``,
        ``average``, ``random_state``); those the solver's ``__init__`` does
        not take are ignored.

    Returns
    -------
    BaseSolver

    Raises
    ------
    ValueError
        If ``name`` is not registered, or a parameter of a solver object is
        out of its range.
    """
    solver = resolve(name, SOLVERS, "solver", method="solve")
    if not isinstance(name, str):
        return solver
    return solver.set_params(**{k: v for k, v in params.items()
                                if k in solver.get_params(deep=False)})
