"""The scikit-learn tags of the package's sequence taggers.

:class:`SequenceTaggerTagsMixin` says what :class:`~sklearn_crfloss.CRFTagger`
and :class:`~sklearn_crfloss.lop.LOPTagger` take: X a list of sequences (of
feature dicts or sparse rows), not a 2-D array, and y required, a list of
label sequences, not 1-D labels.
"""

__all__ = ["SequenceTaggerTagsMixin"]


class SequenceTaggerTagsMixin:
    """Mixin (before ``BaseEstimator``) with the tags of a sequence tagger."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        tags.target_tags.one_d_labels = False
        return tags
