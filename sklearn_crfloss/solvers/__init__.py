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

from ._base import BaseSolver, get_solver_tags, SolverTags
from ._lbfgs import LBFGS, minimize_lbfgs
from ._monitor import (ConvergenceMonitor, FitInfo, HeldOutScore, hold_out, stage_summary,
                       take_sequences, takes_model)
from ._online import MIRA, OnlineState, StructuredPerceptron
from ._owlqn import OWLQN, minimize_liblbfgs
from ._quickprop import QuickProp
from ._rprop import Rprop
from ._schedule import (SOLVERS, default_solver, GPDQuickProp, make_solver, Schedule,
                        solvers_with, Suzuki2006)
from ._sgd import SGD
from ._sgd_state import SGDState

__all__ = ["BaseSolver", "ConvergenceMonitor", "GPDQuickProp", "HeldOutScore", "LBFGS", "MIRA",
           "OWLQN", "QuickProp", "Rprop", "SGD", "SOLVERS", "Schedule", "StructuredPerceptron",
           "Suzuki2006", "default_solver", "make_solver", "minimize_lbfgs", "minimize_liblbfgs",
           # the declared capabilities of a solver
           "SolverTags", "get_solver_tags", "solvers_with"]
