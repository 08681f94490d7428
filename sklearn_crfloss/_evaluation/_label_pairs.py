"""Two batches of label sequences encoded in one label table (the metrics' first step)."""

import numpy as np

from ..segments import encode_labels

__all__ = ["encode_pair"]


def encode_pair(y_true, y_pred):
    """Codes of y_true and y_pred in one label table ("O" is code 0), and offsets.

    Parameters
    ----------
    y_true, y_pred : list of label sequences
        Of the same lengths.

    Returns
    -------
    codes_true, codes_pred : ndarray of intp of shape (n_tokens,)
    offsets : ndarray of intp of shape (n_sequences + 1,)
    classes : ndarray of shape (n_classes,)
        The label table, ``"O"`` first.

    Raises
    ------
    ValueError
        If the numbers of sequences, or of labels of a sequence (named),
        differ.
    """
    codes_true, offsets, classes = encode_labels(y_true, classes=["O"], input_name="y_true")
    codes_pred, offsets_pred, classes = encode_labels(
        y_pred, classes=classes, input_name="y_pred")
    if offsets.shape != offsets_pred.shape:
        raise ValueError(
            f"y_true has {offsets.shape[0] - 1} sequences but y_pred has "
            f"{offsets_pred.shape[0] - 1}."
        )
    if not np.array_equal(offsets, offsets_pred):
        len_true, len_pred = np.diff(offsets), np.diff(offsets_pred)
        i = int(np.flatnonzero(len_true != len_pred)[0])
        raise ValueError(
            f"Sequence {i}: y_true has {len_true[i]} labels but y_pred has {len_pred[i]}."
        )
    return codes_true, codes_pred, offsets, classes
