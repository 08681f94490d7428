"""sklearn-crfsuite's estimator, parameter for parameter, over :class:`~sklearn_crfloss.CRFTagger`.

:class:`CRF` takes the arguments of ``sklearn_crfsuite.CRF`` (with the same
names and defaults: None stands for CRFsuite's own default) and has its
fitted attributes and methods, so code written for sklearn-crfsuite runs with
its import changed::

    from sklearn_crfloss import crfsuite as sklearn_crfsuite
    from sklearn_crfloss import metrics

Each CRFsuite option is either mapped to an option of
:class:`~sklearn_crfloss.CRFTagger` with the same effect, or accepted at its
default and refused at ``fit`` with a message naming it when set to a value
this package cannot honour (the class docstring says which). The trained
model is CRFsuite's: a first-order CRF without start and end potentials
(``boundary_potentials=False``), trained on the same objective by the same
optimiser (libLBFGS, L-BFGS or OWL-QN) for ``algorithm='lbfgs'``.
"""

from collections import namedtuple
from fractions import Fraction
import os
import tempfile
import time

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from . import metrics
from ._tagger import CRFTagger
from .io import export_crfsuite, import_crfsuite
from .priors import ElasticNetPrior
from .solvers import OWLQN

__all__ = ["CRF", "LabelScore", "TrainingLog", "crfsuite_prior"]

#: Per-label scores of a development set, as python-crfsuite's log parser gives them.
LabelScore = namedtuple("LabelScore", "match model ref precision recall f1")

ALGORITHMS = ("lbfgs", "l2sgd", "ap", "pa", "arow")

# CRFsuite's parameters of each algorithm and their defaults (pycrfsuite's
# Trainer(algorithm).get_params()); a parameter set for another algorithm is
# an error, as in python-crfsuite.
_COMMON = {"min_freq": 0.0, "all_possible_states": False, "all_possible_transitions": False}
_ALGORITHM_PARAMS = {
    "lbfgs": {"c1": 0.0, "c2": 1.0, "max_iterations": None, "num_memories": 6,
              "epsilon": 1e-5, "period": 10, "delta": 1e-5, "linesearch": "MoreThuente",
              "max_linesearch": 20},
    "l2sgd": {"c2": 1.0, "max_iterations": 1000, "period": 10, "delta": 1e-6,
              "calibration_eta": 0.1, "calibration_rate": 2.0, "calibration_samples": 1000,
              "calibration_candidates": 10, "calibration_max_trials": 20},
    "ap": {"max_iterations": 100, "epsilon": 0.0},
    "pa": {"pa_type": 1, "c": 1.0, "error_sensitive": True, "averaging": True,
           "max_iterations": 100, "epsilon": 0.0},
    "arow": {"variance": 1.0, "gamma": 1.0, "max_iterations": 100, "epsilon": 0.0},
}
# The CRFsuite parameters whose only value honoured here is CRFsuite's default.
_FIXED = {"period", "linesearch", "calibration_eta", "calibration_rate", "calibration_samples",
          "calibration_candidates", "calibration_max_trials", "pa_type", "error_sensitive"}


class TrainingLog:
    """The training log of :class:`CRF`, as sklearn-crfsuite's ``training_log_``.

    The fields that python-crfsuite's log parser (``TrainLogParser``) fills
    and tutorials read: ``iterations`` (one dict per iteration or epoch)
    and ``last_iteration`` (the last of them), with the same keys.

    Attributes
    ----------
    iterations : list of dict
        One dict per iteration (epoch for the online algorithms) with
        ``'num'`` (int, from 1), ``'loss'`` (float: the objective, loss plus
        prior; the number of mistakes for ``'ap'`` and ``'pa'``), ``'time'``
        (float, seconds of the iteration), ``'active_features'`` (int,
        non-zero weights), ``'feature_norm'`` (float, Euclidean norm of the
        weights) and ``'scores'`` (dict of :class:`LabelScore` per label of
        the development set; empty without one). With a development set
        (``fit(X, y, X_dev, y_dev)``) also ``'avg_precision'``,
        ``'avg_recall'``, ``'avg_f1'`` (macro averages over the labels),
        ``'item_accuracy'`` and ``'instance_accuracy'`` (:class:`fractions.Fraction`
        of tokens and of sequences labelled correctly) and their
        ``'..._float'`` values.
    last_iteration : dict or None
        ``iterations[-1]`` (None before the first iteration).
    training_seconds : float or None
        Seconds of training (vectorisation included).
    featgen_num_features : int or None
        Number of trained parameters (CRFsuite's "Number of features":
        state features and transitions).
    """

    def __init__(self):
        self.iterations = []
        self.last_iteration = None
        self.training_seconds = None
        self.featgen_num_features = None

    def __repr__(self):
        return f"TrainingLog({len(self.iterations)} iterations)"


class _Recorder:
    """The ``callback`` of the wrapped CRFTagger: fills a :class:`TrainingLog`.

    Takes the model snapshot of each iteration (three-argument callback) to
    count its non-zero weights and score the development set.
    """

    def __init__(self, log, X_dev=None, y_dev=None):
        self.log = log
        self.X_dev = X_dev
        self.y_dev = y_dev
        self.t0 = time.perf_counter()

    def __call__(self, iteration, objective, model):
        now = time.perf_counter()
        weights = [model.coef_, model.transition_]
        entry = {"num": len(self.log.iterations) + 1, "scores": {}, "loss": float(objective),
                 "feature_norm": float(np.sqrt(sum(float((w * w).sum()) for w in weights))),
                 "active_features": int(sum(np.count_nonzero(w) for w in weights)),
                 "time": now - self.t0}
        if self.X_dev is not None:
            entry.update(_holdout_scores(self.y_dev, model.predict(self.X_dev),
                                        model.classes_.tolist()))
        self.log.iterations.append(entry)
        self.log.last_iteration = entry
        self.t0 = time.perf_counter()  # the scoring is not the iteration's time


def _holdout_scores(y_true, y_pred, labels):
    """CRFsuite's evaluation of a development set (its per-iteration holdout report).

    Parameters
    ----------
    y_true, y_pred : list of list of str
        Gold and predicted label sequences, of the same lengths.
    labels : list of str
        The model's labels.

    Returns
    -------
    dict
        ``'scores'``: ``{label: LabelScore(match, model, ref, precision,
        recall, f1)}`` (precision, recall, F1 None when undefined, as
        CRFsuite prints ``******``); ``'avg_precision'``, ``'avg_recall'``,
        ``'avg_f1'``: their macro averages (undefined ones count as 0, as in
        CRFsuite); ``'item_accuracy'``, ``'instance_accuracy'`` (Fractions)
        and their ``'_float'`` values.
    """
    gold = np.concatenate([np.asarray(s, dtype=object) for s in y_true]) if y_true else []
    pred = np.concatenate([np.asarray(s, dtype=object) for s in y_pred]) if y_pred else []
    scores, sums = {}, np.zeros(3)
    for label in labels:
        match = int(np.sum((gold == label) & (pred == label)))
        model, ref = int(np.sum(pred == label)), int(np.sum(gold == label))
        p = match / model if model else None
        r = match / ref if ref else None
        f = 2 * p * r / (p + r) if p and r else (0.0 if p is not None and r is not None else None)
        scores[label] = LabelScore(match, model, ref, p, r, f)
        sums += [p or 0.0, r or 0.0, f or 0.0]
    avg = sums / max(len(labels), 1)
    items = Fraction(int(np.sum(gold == pred)), max(len(gold), 1))
    instances = Fraction(sum(list(a) == list(b) for a, b in zip(y_true, y_pred)),
                         max(len(y_true), 1))
    return {"scores": scores, "avg_precision": float(avg[0]), "avg_recall": float(avg[1]),
            "avg_f1": float(avg[2]), "item_accuracy": items, "item_accuracy_float": float(items),
            "instance_accuracy": instances, "instance_accuracy_float": float(instances)}


def crfsuite_prior(c1, c2):
    """CRFTagger's ``prior`` and ``C`` for CRFsuite's ``c1 ||w||_1 + c2 ||w||^2``.

    Parameters
    ----------
    c1, c2 : float
        CRFsuite's L1 and L2 coefficients, ``>= 0``.

    Returns
    -------
    prior : str or ElasticNetPrior
        ``ElasticNetPrior(l1_ratio=c1 / (c1 + 2 c2))`` if both are positive,
        ``'l1'`` or ``'l2'`` if only one is, ``'none'`` if both are 0.
    C : float
        ``1 / (c1 + 2 c2)`` (1.0 when both are 0).

    Examples
    --------
    >>> crfsuite_prior(0.1, 0.1)
    (ElasticNetPrior(l1_ratio=0.333...), 3.333...)
    >>> crfsuite_prior(0.0, 1.0)
    ('l2', 0.5)
    """
    if c1 == 0 and c2 == 0:
        return "none", 1.0
    C = 1.0 / (c1 + 2.0 * c2)
    if c1 == 0:
        return "l2", C
    if c2 == 0:
        return "l1", C
    return ElasticNetPrior(l1_ratio=c1 / (c1 + 2.0 * c2)), C


class CRF(BaseEstimator):
    """sklearn-crfsuite's ``CRF``, parameter for parameter, trained by :class:`~sklearn_crfloss.CRFTagger`.

    A compatibility layer: it takes sklearn-crfsuite's arguments, builds the
    :class:`~sklearn_crfloss.CRFTagger` that trains the same model (a
    first-order CRF without start and end potentials, every transition
    trained) and exposes sklearn-crfsuite's fitted attributes and methods.
    The fitted CRFTagger is ``estimator_``: use it for what this package adds
    (other losses, n-best, constraints, :func:`sklearn_crfloss.io.save_model`).
    ``get_params``, ``set_params`` and :func:`~sklearn.base.clone` work on
    these arguments, so a :class:`~sklearn.model_selection.RandomizedSearchCV`
    over ``c1`` and ``c2`` runs as with sklearn-crfsuite.

    Every argument defaults to None, standing for CRFsuite's default of the
    algorithm (listed below). An argument of another algorithm than
    ``algorithm`` is an error at ``fit``, as in python-crfsuite, and so is
    a value this package cannot honour; one ``ValueError`` names all of them.

    Parameters
    ----------
    algorithm : {'lbfgs', 'l2sgd', 'ap', 'pa', 'arow'} or None, default=None
        None: ``'lbfgs'``. ``'lbfgs'``: L-BFGS through libLBFGS (as
        CRFsuite), OWL-QN when ``c1 > 0`` (``solver=OWLQN(...)``).
        ``'l2sgd'``: ``solver='sgd'`` (Bottou's SGD, step calibrated on 1,000
        sequences from 0.1 by factors of 2, as CRFsuite's), with averaging
        off as in CRFsuite. ``'ap'``: ``loss='perceptron'`` (averaged).
        ``'pa'``: ``loss='mira'`` (passive-aggressive PA-I, ``C=c``).
        ``'arow'``: not offered (a ``ValueError`` says so).
    min_freq : float or None, default=None (0)
        Mapped to ``min_freq = floor(min_freq) + 1``: CRFsuite drops the
        features seen at most ``min_freq`` times; here an attribute is kept
        when it occurs in at least ``floor(min_freq) + 1`` tokens (counted
        per attribute, not per (attribute, label) feature, so at least as
        many weights are kept).
    all_possible_states : bool or None, default=None (False)
        ``all_possible_states``: the same meaning.
    all_possible_transitions : bool or None, default=None (False)
        Accepted; every transition is always trained here (as with True).
        With False, CRFsuite leaves the transitions never seen in training at
        0; here they are trained (usually to negative weights).
    c1 : float or None, default=None (0)
        L1 coefficient (``'lbfgs'`` only). With ``c2``: ``prior`` and ``C``
        as :func:`crfsuite_prior` gives them, ``C = 1 / (c1 + 2 c2)`` and
        ``ElasticNetPrior(l1_ratio=c1 / (c1 + 2 c2))``; c1 = 0: L2 prior,
        ``C = 1 / (2 c2)``; both 0: no prior.
    c2 : float or None, default=None (1.0)
        L2 coefficient (``'lbfgs'``, ``'l2sgd'``).
    max_iterations : int or None, default=None
        ``max_iter`` (iterations, or epochs of the online algorithms). None:
        CRFsuite's default, 100 for ``'ap'``/``'pa'``, 1,000 for ``'l2sgd'``;
        for ``'lbfgs'`` (unlimited in CRFsuite) 1,000 iterations.
    num_memories : int or None, default=None (6)
        ``OWLQN(max_corrections=num_memories)``.
    epsilon : float or None, default=None
        ``'lbfgs'`` (1e-5): ``OWLQN(epsilon=epsilon)``, the same gradient-norm
        test. ``'ap'``, ``'pa'`` (0): only 0 is honoured (training stops after
        an epoch without a mistake); another value is refused.
    period : int or None, default=None (10)
        Only 10 is honoured (the stopping rule compares with the objective
        10 iterations back); another value is refused.
    delta : float or None, default=None (1e-5; 1e-6 for ``'l2sgd'``)
        ``tol``: the same relative-improvement test over ``period``
        iterations for ``'lbfgs'``. ``'l2sgd'`` here runs all
        ``max_iterations`` epochs (SGD's per-epoch objective is an estimate
        that the test does not read), so set ``max_iterations`` to the
        epochs wanted; CRFsuite usually stops earlier on ``delta``.
    linesearch : str or None, default=None ('MoreThuente')
        Only ``'MoreThuente'`` is honoured (libLBFGS's; OWL-QN, ``c1 > 0``,
        uses backtracking as in CRFsuite); another value is refused.
    max_linesearch : int or None, default=None (20)
        ``OWLQN(max_linesearch=max_linesearch)``.
    calibration_eta, calibration_rate, calibration_samples, calibration_candidates, calibration_max_trials : default=None
        ``'l2sgd'``'s step calibration: CRFsuite's defaults (0.1, 2.0, 1000,
        10, 20) are what ``eta0='auto'`` does; another value is refused.
    pa_type : int or None, default=None (1)
        Only 1 (PA-I) is honoured; 0 and 2 are refused.
    c : float or None, default=None (1.0)
        ``'pa'``: ``C=c``, the aggressiveness of PA-I.
    error_sensitive : bool or None, default=None (True)
        ``'pa'``: only True is honoured, with a difference: the margin
        demanded of the gold sequence is the number of wrong labels
        (``loss='mira'``'s Hamming cost) where CRFsuite uses its square
        root. False is refused.
    averaging : bool or None, default=None (True)
        ``'pa'``: ``average``.
    variance, gamma : float or None, default=None
        ``'arow'``'s; refused with it.
    verbose : bool, default=False
        ``verbose=1``: a header, one line per iteration and a summary.
    model_filename : str or None, default=None
        As in sklearn-crfsuite: ``fit`` writes the model there as a CRFsuite
        file (:func:`sklearn_crfloss.io.export_crfsuite`), and an unfitted
        estimator with an existing file predicts with that model
        (:func:`sklearn_crfloss.io.import_crfsuite`), without training.
    keep_tempfiles : bool, default=False
        Accepted, no effect: no temporary files are written.
    trainer_cls : None, default=None
        A ``pycrfsuite.Trainer`` subclass in sklearn-crfsuite; any value but
        None is refused.

    Attributes
    ----------
    estimator_ : CRFTagger
        The fitted tagger.
    classes_ : list of str
        The labels (sorted; CRFsuite lists them in order of appearance).
    state_features_ : dict of {(str, str): float}
        Non-zero state weights ``{(attribute, label): weight}``.
    transition_features_ : dict of {(str, str): float}
        Non-zero transition weights ``{(label_from, label_to): weight}``.
    attributes_ : list of str
        The attributes with at least one non-zero weight, as in a CRFsuite
        model (python-crfsuite's names, e.g. ``'word.lower():de'``).
    num_attributes_ : int
        ``len(attributes_)``.
    size_ : int
        Size in bytes of the model as a CRFsuite model file.
    training_log_ : TrainingLog
        ``iterations`` and ``last_iteration`` as python-crfsuite's log parser.

    See Also
    --------
    sklearn_crfloss.CRFTagger : The estimator underneath, with the options of
        this package.

    Notes
    -----
    Differences from sklearn-crfsuite: ``predict`` and ``predict_marginals``
    return lists (sklearn-crfsuite: object arrays of lists), ``classes_`` is
    sorted, and an attribute of value 0 (``False``) is no attribute (CRFsuite
    keeps it with value 0, which adds nothing to a score).

    Examples
    --------
    >>> from sklearn_crfloss import crfsuite as sklearn_crfsuite
    >>> X = [[{"w": "the"}, {"w": "dog"}], [{"w": "a"}, {"w": "cat"}, {"w": "runs"}]]
    >>> y = [["B-NP", "I-NP"], ["B-NP", "I-NP", "B-VP"]]
    >>> crf = sklearn_crfsuite.CRF(c1=0.01, c2=0.01, all_possible_transitions=True).fit(X, y)
    >>> crf.predict_single(X[1])
    ['B-NP', 'I-NP', 'B-VP']
    >>> crf.classes_
    ['B-NP', 'B-VP', 'I-NP']
    >>> crf.estimator_.prior, round(crf.estimator_.C, 2)
    (ElasticNetPrior(l1_ratio=0.333...), 33.33)
    >>> crf.training_log_.last_iteration["num"] == len(crf.training_log_.iterations)
    True
    >>> sklearn_crfsuite.CRF(algorithm="arow").fit(X, y)
    Traceback (most recent call last):
    ...
    ValueError: CRF cannot train this model: algorithm='arow' (AROW) is not offered; ...
    """

    def __init__(self, algorithm=None, min_freq=None, all_possible_states=None,
                 all_possible_transitions=None, c1=None, c2=None, max_iterations=None,
                 num_memories=None, epsilon=None, period=None, delta=None, linesearch=None,
                 max_linesearch=None, calibration_eta=None, calibration_rate=None,
                 calibration_samples=None, calibration_candidates=None,
                 calibration_max_trials=None, pa_type=None, c=None, error_sensitive=None,
                 averaging=None, variance=None, gamma=None, verbose=False, model_filename=None,
                 keep_tempfiles=False, trainer_cls=None):
        self.algorithm = algorithm
        self.min_freq = min_freq
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions
        self.c1 = c1
        self.c2 = c2
        self.max_iterations = max_iterations
        self.num_memories = num_memories
        self.epsilon = epsilon
        self.period = period
        self.delta = delta
        self.linesearch = linesearch
        self.max_linesearch = max_linesearch
        self.calibration_eta = calibration_eta
        self.calibration_rate = calibration_rate
        self.calibration_samples = calibration_samples
        self.calibration_candidates = calibration_candidates
        self.calibration_max_trials = calibration_max_trials
        self.pa_type = pa_type
        self.c = c
        self.error_sensitive = error_sensitive
        self.averaging = averaging
        self.variance = variance
        self.gamma = gamma
        self.verbose = verbose
        self.model_filename = model_filename
        self.keep_tempfiles = keep_tempfiles
        self.trainer_cls = trainer_cls

    # ------------------------------------------------------------- mapping

    def _crfsuite_params(self):
        """The algorithm and its CRFsuite parameters, None replaced by the defaults.

        Raises
        ------
        ValueError
            Naming every argument that cannot be honoured, in one message.
        """
        algorithm = "lbfgs" if self.algorithm is None else self.algorithm
        if algorithm not in ALGORITHMS:
            raise ValueError(f"CRF: algorithm={algorithm!r} is not one of {ALGORITHMS}.")
        own = _ALGORITHM_PARAMS[algorithm]
        given = self.get_params(deep=False)
        problems = []
        if algorithm == "arow":
            problems.append("algorithm='arow' (AROW) is not offered; use 'pa' (passive-"
                            "aggressive) or 'lbfgs'")
        other = sorted(name for spec in _ALGORITHM_PARAMS.values() for name in spec
                       if name not in own and given[name] is not None)
        problems += [f"{name}={given[name]!r} is not a parameter of algorithm={algorithm!r}"
                     for name in dict.fromkeys(other)]
        params = {name: own[name] if given[name] is None else given[name] for name in own}
        params.update({name: default if given[name] is None else given[name]
                       for name, default in _COMMON.items()})
        problems += [f"{name}={params[name]!r} (only CRFsuite's default {own[name]!r} is "
                     f"offered)" for name in sorted(_FIXED & set(own))
                     if params[name] != own[name]]
        if algorithm in ("ap", "pa") and params["epsilon"] != 0:
            problems.append(f"epsilon={params['epsilon']!r} with algorithm={algorithm!r} (only 0: "
                            "stop after an epoch without a mistake)")
        if self.trainer_cls is not None:
            problems.append(f"trainer_cls={self.trainer_cls!r} (a python-crfsuite trainer; "
                            "training here is CRFTagger's)")
        if problems:
            raise ValueError("CRF cannot train this model: " + "; ".join(problems) + ".")
        return algorithm, params

    def _tagger_params(self):
        """The arguments of the :class:`~sklearn_crfloss.CRFTagger` that trains this model."""
        algorithm, p = self._crfsuite_params()
        kwargs = {"min_freq": int(np.floor(p["min_freq"])) + 1,
                  "all_possible_states": bool(p["all_possible_states"]),
                  "boundary_potentials": False, "max_iter": p["max_iterations"],
                  "verbose": int(bool(self.verbose))}
        if algorithm == "lbfgs":
            prior, C = crfsuite_prior(p["c1"], p["c2"])
            kwargs.update(prior=prior, C=C, tol=p["delta"], solver=OWLQN(
                max_corrections=p["num_memories"], epsilon=p["epsilon"],
                max_linesearch=p["max_linesearch"]))
        elif algorithm == "l2sgd":
            prior, C = crfsuite_prior(0.0, p["c2"])
            kwargs.update(prior=prior, C=C, tol=p["delta"], solver="sgd", average=False)
        elif algorithm == "ap":
            kwargs.update(loss="perceptron", prior="none", average=True)
        else:  # pa
            kwargs.update(loss="mira", prior="none", C=float(p["c"]),
                          average=bool(p["averaging"]))
        return kwargs

    # ----------------------------------------------------------------- fit

    def fit(self, X, y, X_dev=None, y_dev=None):
        """Train a model, as sklearn-crfsuite's ``CRF.fit``.

        Parameters
        ----------
        X : list of list of dict
            Feature dicts of the tokens of each sequence (python-crfsuite's
            format).
        y : list of list of str
            Labels of each sequence.
        X_dev, y_dev : list or None, default=None
            A development set, scored after every iteration into
            ``training_log_`` (CRFsuite's holdout evaluation; it does not
            change training).

        Returns
        -------
        self : CRF

        Raises
        ------
        ValueError
            If only one of ``X_dev`` and ``y_dev`` is given, if an argument
            cannot be honoured (see the class docstring), or as
            :meth:`sklearn_crfloss.CRFTagger.fit` on bad data.
        """
        if (X_dev is None) != (y_dev is None):
            raise ValueError("Pass both X_dev and y_dev to use the holdout data")
        log = TrainingLog()
        t0 = time.perf_counter()
        tagger = CRFTagger(**self._tagger_params(),
                           callback=_Recorder(log, X_dev, y_dev))
        tagger.fit(X, y)
        tagger.set_params(callback=None)  # the fitted model keeps no reference to the log
        log.training_seconds = time.perf_counter() - t0
        log.featgen_num_features = int(tagger.n_parameters_)
        self.estimator_ = tagger
        self.training_log_ = log
        if self.model_filename is not None:
            export_crfsuite(tagger, self.model_filename)
        return self

    # ------------------------------------------------------------- predict

    def _tagger(self):
        """The fitted CRFTagger, or the one read from ``model_filename`` before fit."""
        if "estimator_" not in self.__dict__ and self.model_filename is not None \
                and os.path.exists(self.model_filename):
            self.estimator_ = import_crfsuite(self.model_filename)
        check_is_fitted(self, "estimator_")
        return self.estimator_

    def predict(self, X):
        """Label sequences of X (Viterbi).

        Parameters
        ----------
        X : list of list of dict
            Feature dicts in python-crfsuite's format.

        Returns
        -------
        list of list of str
            One label list per sequence (sklearn-crfsuite returns an object
            array of these lists).
        """
        return self._tagger().predict(X)

    def predict_single(self, xseq):
        """Label sequence of one sequence.

        Parameters
        ----------
        xseq : list of dict

        Returns
        -------
        list of str
        """
        return self.predict([xseq])[0]

    def predict_marginals(self, X):
        """Marginal probability of each label at each token, as dicts.

        Parameters
        ----------
        X : list of list of dict

        Returns
        -------
        list of list of dict
            Per sequence, per token a ``{label: probability}`` dict.
        """
        tagger = self._tagger()
        labels = tagger.classes_.tolist()
        return [[dict(zip(labels, row)) for row in m.tolist()]
                for m in tagger.predict_marginals(X)]

    def predict_marginals_single(self, xseq):
        """Marginals of one sequence: per token a ``{label: probability}`` dict.

        Parameters
        ----------
        xseq : list of dict

        Returns
        -------
        list of dict
        """
        return self.predict_marginals([xseq])[0]

    def score(self, X, y):
        """Token accuracy of :meth:`predict` (sklearn-crfsuite's ``flat_accuracy_score``).

        Parameters
        ----------
        X : list of list of dict
        y : list of list of str

        Returns
        -------
        float
        """
        return metrics.flat_accuracy_score(y, self.predict(X))

    # ---------------------------------------------------------- attributes

    @property
    def classes_(self):
        # Documented in the class docstring (Attributes).
        return self._tagger().classes_.tolist()

    @property
    def state_features_(self):
        # Documented in the class docstring (Attributes).
        return self._tagger().state_features_

    @property
    def transition_features_(self):
        # Documented in the class docstring (Attributes).
        return self._tagger().transition_features_

    @property
    def attributes_(self):
        # Documented in the class docstring (Attributes).
        tagger = self._tagger()
        used = np.flatnonzero(np.any(np.asarray(tagger.coef_) != 0, axis=0))
        return [str(a) for a in np.asarray(tagger.attributes_)[used]]

    @property
    def num_attributes_(self):
        # Documented in the class docstring (Attributes).
        return len(self.attributes_)

    @property
    def size_(self):
        # Documented in the class docstring (Attributes).
        tagger = self._tagger()
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "model.crfsuite")
            export_crfsuite(tagger, path)
            return os.path.getsize(path)
