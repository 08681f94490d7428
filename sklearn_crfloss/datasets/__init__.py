"""Sequence-labelling data sets and CoNLL-format input/output.

Loaders for CoNLL-2000 chunking and CoNLL-2002 Spanish named entity
recognition (read from the data folder given by :func:`get_data_home`,
downloaded when missing), and a reader and writer for the CoNLL column
format, and the synthetic HMM sequences of Gross et al. (2006)
(:func:`make_hmm_sequences`, the offline demo data set).
"""

from ._conll import get_data_home, load_conll2000, load_conll2002, read_conll, write_conll
from ._synthetic import HMM_PARAMETERS, make_hmm_sequences

__all__ = [
    "HMM_PARAMETERS",
    "get_data_home",
    "load_conll2000",
    "load_conll2002",
    "make_hmm_sequences",
    "read_conll",
    "write_conll",
]
