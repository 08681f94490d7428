"""Parameters and potentials: the parameter layout, label bigrams, the training objective.

:class:`ParameterLayout` maps the flat parameter vector ``theta`` to state
weights, transitions, start and end potentials; ``_bigram_layout`` adds the
blocks of observation-dependent label bigrams; :class:`CRFObjective` binds
the data once and evaluates ``loss + prior`` and its gradient in ``theta``
(asking each loss for its own fused evaluation first, ``losses/_fused.py``),
built by :func:`make_objective`;
``_bigram_rows`` gives the
online solvers one sequence's rows and transitions.
"""

from ._bigram_layout import (BIGRAM_DOC, bigram_columns, bigram_state, BigramGroups, BigramLayout,
                             make_layout, model_transitions, saved_layout)
from ._bigram_rows import (local_chain, local_columns, local_transitions, pack_blocks,
                           split_bigram_columns)
from ._objective import CRFObjective, kernel_csr, LabelExpertObjective, make_objective
from ._parameters import observed_pairs, ParameterLayout

__all__ = ["BIGRAM_DOC", "BigramGroups", "BigramLayout", "CRFObjective", "LabelExpertObjective",
           "ParameterLayout", "bigram_columns", "bigram_state", "kernel_csr", "local_chain",
           "local_columns", "local_transitions", "make_layout", "make_objective", "model_transitions",
           "observed_pairs", "pack_blocks", "saved_layout",
           "split_bigram_columns"]
