"""The experts of a logarithmic opinion pool (:class:`~sklearn_crfloss.LOPTagger`).
"""

from ._experts import count_trained, expert_parts, normalised_weights, pool_blocks

__all__ = ["count_trained", "expert_parts", "normalised_weights", "pool_blocks"]
