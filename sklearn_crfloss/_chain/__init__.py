"""Inference on potentials: checked chains, transition tables, the kernels.

The stage between the losses and the compiled kernels of ``_ext/``:
:class:`Chain` checks a batch of potentials once (:func:`check_potentials`);
:class:`PositionTransitions` and its functions handle position-dependent
transitions (observation-dependent label bigrams); ``_dispatch`` picks the
widest vector build of the chain kernels this CPU runs; ``_log_space`` holds
the log-space reference paths; ``_trigram`` the second-order (label-trigram)
chains over allowed label pairs. The public face of this stage is
:mod:`sklearn_crfloss.inference`; the other stages import from here.
"""

from ._checked import Chain, chain_doc, check_potentials, nonempty_sequences, transition_table
from ._dispatch import (KERNEL_BUILD, chunk_queries_batch, chunk_segments, cll_features_batch,
                        forward_backward_batch, marginal_loss_features_batch, marginals_vjp_batch,
                        max_incorrect_batch, max_incorrect_from_tables, max_marginals_batch,
                        mce_f_labels_batch, n_best_batch, pair_gradient, pair_potentials,
                        position_cll_features_batch, position_forward_backward_batch,
                        segment_margins_batch, span_gradients_batch, viterbi_batch)
from ._forward_backward import (CHUNK, N_BLOCKS, accumulator_blocks, Accumulators, exp_potentials,
                                row_width, scratch_width)
from ._fused_losses import fused_scratch_width
from ._log_space import marginals_vjp_log_space
from ._position_transitions import (position_forward_backward, position_gold_counts,
                                    position_scores, position_viterbi, PositionTransitions)
from ._positions import exp_tables, position_scratch_width
from ._potentials import order_entries, pair_counts
from ._threads import kernel_threads, usable_threads
from ._trigram import (PairStates, second_order_forward_backward, second_order_gold_counts,
                       second_order_scores, second_order_viterbi, SecondOrderResult)

__all__ = ["Accumulators", "CHUNK", "Chain", "KERNEL_BUILD", "N_BLOCKS",
           "PairStates", "PositionTransitions", "SecondOrderResult", "accumulator_blocks", "chain_doc", "check_potentials",
           "chunk_queries_batch", "chunk_segments", "cll_features_batch",
           "exp_potentials", "exp_tables", "forward_backward_batch",
           "fused_scratch_width", "kernel_threads", "marginal_loss_features_batch",
           "marginals_vjp_batch",
           "marginals_vjp_log_space", "max_incorrect_batch",
           "max_incorrect_from_tables", "max_marginals_batch", "mce_f_labels_batch",
           "n_best_batch", "nonempty_sequences", "order_entries", "pair_counts", "pair_gradient",
           "pair_potentials", "position_cll_features_batch",
           "position_forward_backward", "position_forward_backward_batch",
           "position_gold_counts", "position_scores", "position_scratch_width",
           "position_viterbi", "row_width", "scratch_width", "second_order_forward_backward",
           "second_order_gold_counts", "second_order_scores", "second_order_viterbi",
           "segment_margins_batch",
           "span_gradients_batch", "transition_table", "usable_threads", "viterbi_batch"]
