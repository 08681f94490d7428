"""Training in another tag scheme: the glue between CRFTagger and segments.

``CRFTagger(tag_scheme=...)`` converts the labels given to ``fit`` into the
training scheme (:func:`~sklearn_crfloss.segments.convert_scheme`), records
the pair ``(scheme of the given labels, training scheme)`` as
``tag_schemes_``, decodes under the training scheme's constraints
(:func:`~sklearn_crfloss.decoding.check_decoding`) and converts the decoded
sequences back. This module holds the two conversions and the docstring text.
"""

from ..segments import convert_scheme, detect_scheme

__all__ = ["TAG_SCHEME_DOC", "refuse_tag_scheme", "to_model_labels", "to_training_labels",
           "to_user_labels"]

TAG_SCHEME_DOC = dict(
    tag_scheme_parameter="""tag_scheme : {None, 'iob2', 'iobes', 'bilou'}, default=None
    Chunk tagging scheme to train and decode in. None: the labels as given.
    Otherwise ``fit`` detects the scheme of the labels (IOB1, IOB2, IOBES or
    BILOU; :func:`~sklearn_crfloss.segments.detect_scheme`), converts them
    to ``tag_scheme`` (:func:`~sklearn_crfloss.segments.convert_scheme`:
    the same chunks, exactly invertible for well-formed sequences; the rare
    ill-formed chunk is read as conlleval reads it), trains on them and
    decodes under the constraints of ``tag_scheme`` (which replace
    ``constraints``: every decoded sequence is well formed); ``predict``,
    ``predict_nbest``, ``decode`` and ``score`` answer in the scheme of the
    labels given to ``fit``, and ``sequence_log_proba`` reads ``y`` in it.
    ``classes_``, the weights and ``predict_marginals`` are those of the
    training labels. The labels must be ``'O'`` or ``<prefix>-<type>``.
    ``fit`` on a stream (which then reads the labels at once), model files
    (:func:`~sklearn_crfloss.io.save_model`), pickles and the experts of a
    :class:`~sklearn_crfloss.LOPTagger` keep it; ``partial_fit`` and
    ``DaskCRFTagger`` refuse it (the scheme is detected on all the labels at
    once), and so does :func:`~sklearn_crfloss.io.export_crfsuite`.""",
    tag_schemes_attribute="""tag_schemes_ : tuple of (str, str) or None
    ``(scheme of the labels given to fit, training scheme)`` with
    ``tag_scheme``, else None.""",
)


def to_training_labels(tag_scheme, y):
    """The label sequences to train on, in ``tag_scheme``, and the two schemes.

    The estimator keeps the schemes until training has succeeded, then
    publishes them as ``tag_schemes_`` (an interrupted fit leaves
    ``tag_schemes_`` as it was).

    Parameters
    ----------
    tag_scheme : str or None
        The estimator's ``tag_scheme``: the training scheme.
    y : list of label sequences
        The labels given to ``fit``.

    Returns
    -------
    y_train : list of label sequences
        ``y`` itself if ``tag_scheme`` is None or the detected scheme,
        else ``y`` converted to ``tag_scheme``.
    schemes : tuple of (str, str) or None
        ``(detected scheme, tag_scheme)``; None without a ``tag_scheme``.

    Raises
    ------
    ValueError
        If a label is in no chunk tagging scheme (the message names the
        sequence).
    """
    if tag_scheme is None:
        return y, None
    source = detect_scheme(y)
    y_train = y if source == tag_scheme else convert_scheme(y, tag_scheme, source=source)
    return y_train, (source, tag_scheme)


def _convert(y, schemes, forward):
    if schemes is None or schemes[0] == schemes[1]:
        return y
    source, target = schemes if forward else schemes[::-1]
    return convert_scheme(y, target, source=source)


def to_user_labels(schemes, y):
    """Decoded label sequences (training scheme) in the scheme of the fit labels.

    ``schemes`` is the fitted ``tag_schemes_`` (None: ``y`` itself).
    """
    return _convert(y, schemes, forward=False)


def to_model_labels(schemes, y):
    """Label sequences in the scheme of the fit labels, in the training scheme.

    ``schemes`` is the fitted ``tag_schemes_`` (None: ``y`` itself).
    """
    return _convert(y, schemes, forward=True)


def refuse_tag_scheme(tag_scheme, path, reason):
    """Refuse a ``tag_scheme`` on a training path that cannot apply it.

    Parameters
    ----------
    tag_scheme : str or None
        The estimator's ``tag_scheme``; None passes.
    path : str
        The training path, as the message names it (e.g. ``'partial_fit'``).
    reason : str
        Why the path cannot apply it.

    Raises
    ------
    ValueError
        If ``tag_scheme`` is not None, naming the option, its value, the
        path and what to do instead.
    """
    if tag_scheme is not None:
        raise ValueError(
            f"{path} does not apply tag_scheme={tag_scheme!r}: {reason}. Convert the labels "
            f"first (sklearn_crfloss.segments.convert_scheme(y, {tag_scheme!r})) and train "
            f"with tag_scheme=None (constraints={tag_scheme!r} decodes well-formed "
            "sequences), or use CRFTagger.fit (on lists or a stream).")
