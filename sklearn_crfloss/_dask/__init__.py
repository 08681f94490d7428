"""The distributed training of :class:`~sklearn_crfloss.dask.DaskCRFTagger`.

Workers hold whole blocks of sequences in one objective each; the
:class:`DistributedObjective` adds their parts in the order one process adds
them, and :class:`ParameterMixing` runs SGD by iterative parameter mixing.
"""

from ._distributed import (
    RETRIES, DistributedObjective, ParameterMixing, WorkerData, assign_groups, select_sequences,
)

__all__ = ["DistributedObjective", "ParameterMixing", "RETRIES", "WorkerData",
           "assign_groups", "select_sequences"]
