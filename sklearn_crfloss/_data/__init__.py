"""Sequences in: validation, vectorisation (vocabulary or hashing), attribute names, streams.

``_validation`` checks ``X``, ``y`` and weights and encodes labels;
``_vectorize`` turns feature dicts, arrays or sparse rows into one CSR
matrix (:class:`SequenceVectorizer`, with the compiled vocabulary lookup
``_vocabulary`` and the hashing path ``_hashing``); ``_attribute_names``
names attributes as python-crfsuite does; ``_streaming`` vectorises a stream
chunk by chunk; ``_feature_sets`` and ``_word_representations`` turn
sentences of token tuples into the feature dicts of the field's feature sets
(public face: ``features.py``).
"""

from ._attribute_names import (BIGRAM_PREFIX, CRFSUITE_SEPARATOR, SEPARATOR, attribute_key,
                               crfsuite_attributes, crfsuite_name, join_nested_keys, names_like,
                               separator)
from ._feature_sets import (ChunkFeatures, NERFeatures, POSFeatures, SequenceTransformerMixin,
                            short_word_shape, word_shape)
from ._streaming import hashed_counts, is_stream, renumber_sequences, vectorize_stream
from ._validation import (check_sample_weight, check_sequences, check_token_weight, classes_array,
                          encode_known_labels, encode_labels)
from ._vectorize import attribute_counts, column_counts, columns_with_prefix, SequenceVectorizer
from ._word_representations import (EmbeddingFeatures, FeatureDictUnion, WordClusterFeatures,
                                    read_word_clusters)

__all__ = ["BIGRAM_PREFIX", "CRFSUITE_SEPARATOR", "ChunkFeatures", "EmbeddingFeatures",
           "FeatureDictUnion", "NERFeatures", "POSFeatures", "SEPARATOR",
           "SequenceTransformerMixin", "SequenceVectorizer", "WordClusterFeatures",
           "attribute_counts", "attribute_key", "check_sample_weight",
           "check_sequences", "check_token_weight", "classes_array", "column_counts",
           "columns_with_prefix",
           "crfsuite_attributes", "crfsuite_name", "encode_known_labels",
           "encode_labels", "hashed_counts", "is_stream", "join_nested_keys",
           "names_like", "read_word_clusters", "renumber_sequences", "separator",
           "short_word_shape", "vectorize_stream", "word_shape"]
