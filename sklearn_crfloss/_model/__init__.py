"""Parameters and potentials: the parameter layout, label bigrams, the training objective.

:class:`ParameterLayout` maps the flat parameter vector ``theta`` to state
weights, transitions, start and end potentials; ``_bigram_layout`` adds the
blocks of observation-dependent label bigrams; :class:`CRFObjective` binds
the data once and evaluates ``loss + prior`` and its gradient in ``theta``
(asking each loss for its own fused evaluation first, ``losses/_fused.py``),
built by :func:`make_objective`; ``_second_order`` adds the label-trigram
weights of a second-order chain and its objective; ``_bigram_rows`` gives
the online solvers one sequence's rows and transitions.
"""

from ._bigram_layout import (BIGRAM_DOC, bigram_columns, bigram_state, BigramGroups, BigramLayout,
                             make_layout, model_transitions, saved_layout)
from ._bigram_rows import (local_chain, local_columns, local_transitions, pack_blocks,
                           split_bigram_columns)
from ._factory import make_objective
from ._objective import CRFObjective, kernel_csr, LabelExpertObjective
from ._parameters import observed_pairs, ParameterLayout
from ._second_order import (allowed_label_pairs, check_second_order, ORDER_DOC,
                            second_order_state, SecondOrderLayout, SecondOrderObjective)

__all__ = ["allowed_label_pairs", "bigram_columns", "BIGRAM_DOC", "bigram_state",
           "BigramGroups", "BigramLayout", "check_second_order", "CRFObjective",
           "kernel_csr", "LabelExpertObjective", "local_chain", "local_columns",
           "local_transitions", "make_layout", "make_objective", "model_transitions",
           "observed_pairs", "ORDER_DOC", "pack_blocks", "ParameterLayout",
           "saved_layout", "second_order_state", "SecondOrderLayout",
           "SecondOrderObjective", "split_bigram_columns"]
