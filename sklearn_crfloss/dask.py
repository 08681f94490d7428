"""One CRF trained on a dask cluster, where the data lie: :class:`DaskCRFTagger`.

The data are :class:`dask.bag.Bag`\\ s of sequences (X) and of label
sequences (y) with the same partitions. Training, as
``xgboost.dask.DaskXGBClassifier`` and ``lightgbm.DaskLGBMClassifier`` do it
for their models:

1. each worker checks its partitions and counts their attributes and labels
   (the vocabulary is the sum of the counts, ``min_freq`` applied to it);
2. each worker vectorises its partitions with that vocabulary (or the
   hashing columns) into the compact CSR the kernels read, and keeps them,
   bound to the parameter layout, as a
   :class:`~sklearn_crfloss._objective.CRFObjective`;
3. the solver (L-BFGS, OWL-QN, any batch solver, and the ``init='cll'``
   stage) runs in the client process; each evaluation of the objective
   sends the parameter vector to every worker once, each partition returns
   its loss and gradient, and the client adds them in partition order and
   adds the prior.

Dask retries a failed task and recomputes the partitions a lost worker held
from their graph; a fit that still fails raises and leaves the estimator
as it was (unfitted if it was).
"""

import inspect
import time

import numpy as np
import scipy.sparse as sp
from joblib import effective_n_jobs

from ._tagger import CRFTagger
from ._compat import HasMethods, validate_params
from ._objective import CRFObjective
from ._label_bigrams import check_no_bigrams
from ._params import ParameterLayout, observed_pairs
from ._validation import (check_sample_weight, check_sequences, encode_known_labels,
                          encode_labels)
from ._streaming import hashed_counts, renumber_sequences
from ._vectorize import SequenceVectorizer, attribute_counts, column_counts

__all__ = ["DaskCRFTagger", "DistributedObjective"]

#: Times dask retries a failed task of a fit.
RETRIES = 3


def _local(X, y, sample_weight, start, own_vocabulary):
    """Check one partition; vectorise feature dicts on the partition's own vocabulary.

    Returns a dict: ``kind``, ``offsets``, ``y`` (the label sequences),
    ``classes`` (its labels), ``weights``, and either ``rows`` and ``names``
    (the partition's CSR matrix and column names: the feature dicts are
    dropped) or ``tokens`` (arrays, or dicts to hash).
    """
    try:
        kind, tokens, offsets = check_sequences(list(X))
        y = list(y)
        classes = _partition_labels(y, offsets)
        weights = (None if sample_weight is None
                   else check_sample_weight(list(sample_weight), offsets.shape[0] - 1))
        part = {"kind": kind, "offsets": offsets, "y": y, "classes": classes,
                "weights": weights}
        if kind == "dict" and own_vocabulary:
            own = SequenceVectorizer()
            part["rows"] = own.fit_transform(kind, tokens, offsets)
            part["names"] = own.attributes
        else:
            part["tokens"] = tokens
    except (TypeError, ValueError) as exc:
        raise renumber_sequences(exc, start) from exc
    return part


def _summary(part, count_hashed):
    """``(kind, labels, width, n_sequences, attribute counts or None)`` of a partition."""
    counts = None
    if "rows" in part:
        counts = dict(zip(part["names"].tolist(), column_counts(part["rows"]).tolist()))
    elif part["kind"] == "dict" and count_hashed:
        counts = attribute_counts(part["tokens"])
    width = part["tokens"].shape[1] if part["kind"] == "array" else None
    return part["kind"], part["classes"], width, part["offsets"].shape[0] - 1, counts


def _partition_labels(y, offsets):
    """The distinct labels of a partition (a single one is fine here)."""
    lengths = np.diff(offsets)
    try:
        return encode_labels(y, lengths)[0]
    except ValueError as exc:
        if "single label" not in str(exc):
            raise
        return np.unique(np.asarray([lab for labels in y for lab in labels]))


def _shard(part, features, classes, start):
    """The partition in the fitted columns: ``(Xc, y_enc, offsets, sample_weight)``."""
    offsets = part["offsets"]
    try:
        y_enc = encode_known_labels(part["y"], np.diff(offsets), classes)
        if "rows" in part:  # the partition's own columns -> the fitted ones
            vocabulary = features.vectorizer.vocabulary_
            column = np.array([vocabulary.get(name, -1) for name in part["names"].tolist()],
                              dtype=np.int64)
            rows = part["rows"]
            indices = column[rows.indices]
            kept = indices >= 0
            indptr = np.concatenate([[0], np.cumsum(kept)])[rows.indptr]
            Xc = sp.csr_matrix((rows.data[kept], indices[kept].astype(np.int32), indptr),
                               shape=(rows.shape[0], features.n_features))
            Xc.sort_indices()
        else:
            Xc = features.transform(part["tokens"], offsets)
    except (TypeError, ValueError) as exc:
        raise renumber_sequences(exc, start) from exc
    return Xc, y_enc, offsets, part["weights"]


def _hold(obj):
    return obj


def _pairs(shard, n_labels):
    Xc, y_enc, offsets, _ = shard
    return observed_pairs(Xc, y_enc, n_labels)


def _bind(shard, layout, n_jobs):
    """The partition's ``CRFObjective`` (None if it is empty); ``n_jobs`` as on this worker."""
    Xc, y_enc, offsets, weights = shard
    if offsets.shape[0] < 2:
        return None
    return CRFObjective(Xc, y_enc, offsets, layout, sample_weight=weights,
                        n_threads=effective_n_jobs(n_jobs))


def _loss_value_and_grad(theta, loss, *objectives):
    """The summed loss and gradient of a worker's partitions, in their order."""
    value, grad = 0.0, np.zeros(theta.shape[0])
    for objective in objectives:
        if objective is not None:
            v, g = objective.loss_value_and_grad(theta, loss)
            value += v
            grad += g
    return value, grad


class DistributedObjective:
    """A :class:`~sklearn_crfloss._objective.CRFObjective` whose data sit on dask workers.

    Parameters
    ----------
    client : dask.distributed.Client
    parts : list of dask.distributed.Future
        One bound ``CRFObjective`` (or None for an empty partition) per
        partition, on the worker that holds it.
    layout : ParameterLayout

    Attributes
    ----------
    n_params : int
    n_evaluations : int
        Evaluations so far (one broadcast of ``theta`` each).
    """

    def __init__(self, client, parts, layout):
        self.client = client
        self.parts = parts
        self.layout = layout
        # The partitions grouped by the worker that holds them (in partition
        # order): one task and one gradient sent back per worker.
        from distributed import wait

        wait(parts)
        for part in parts:
            if part.status == "error":
                part.result()  # raises the partition's error here
        holders = client.who_has(parts)
        groups = {}
        for part in parts:
            where = holders.get(part.key) or (None,)
            groups.setdefault(sorted(where)[0], []).append(part)
        self.groups = list(groups.items())
        self.n_params = layout.n_params
        self.n_evaluations = 0

    def loss_value_and_grad(self, theta, loss):
        """Sum over the partitions of ``loss``'s value and gradient at ``theta``.

        ``theta`` is sent to every worker once, as an argument of its task
        (not scattered: a task's arguments survive the loss of a worker);
        each worker adds its partitions' results and sends one back; the
        client adds those in a fixed order, so that the sum does not depend
        on which worker answers first (nor on a worker lost and replaced).

        Parameters
        ----------
        theta : ndarray of float64 of shape (n_params,)
        loss : loss object

        Returns
        -------
        value : float
        grad : ndarray of shape (n_params,)
        """
        self.n_evaluations += 1
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        futures = [self.client.submit(_loss_value_and_grad, theta, loss, *group, pure=False,
                                      retries=RETRIES, workers=None if worker is None else [worker],
                                      allow_other_workers=True)
                   for worker, group in self.groups]
        results = self.client.gather(futures)
        value = 0.0
        grad = np.zeros(self.n_params)
        for v, g in results:
            value += v
            grad += g
        return value, grad

    # ``loss + prior`` and its gradient, the prior added in this process.
    value_and_grad = CRFObjective.value_and_grad


def _predict_partition(X, model, method):
    return getattr(model, method)(list(X))


class DaskCRFTagger(CRFTagger):
    """DaskCRFTagger(*, client=None, **params)

    A :class:`~sklearn_crfloss.CRFTagger` trained on a dask cluster, fed dask bags.

    Every parameter of :class:`~sklearn_crfloss.CRFTagger`, plus ``client``.
    :meth:`fit` takes :class:`dask.bag.Bag`\\ s of sequences and of label
    sequences with the same partitions (or lists, split into one partition
    per worker): the vocabulary is counted on the workers, each partition is
    vectorised and kept on the worker that holds it, and the batch solver
    runs here, each evaluation summed from the workers (see
    :mod:`sklearn_crfloss.dask`). The fitted model is the one
    :class:`~sklearn_crfloss.CRFTagger` trains on the concatenated data
    (the same objective, rounding apart); :meth:`to_local` returns it as a
    plain :class:`~sklearn_crfloss.CRFTagger`, which pickles.

    Parameters
    ----------
    client : dask.distributed.Client or None, default=None
        The cluster to train on; None: the current client
        (:func:`distributed.get_client`).
    **params
        The parameters of :class:`~sklearn_crfloss.CRFTagger`. ``n_jobs`` is
        the number of kernel threads per task on a worker. Batch solvers
        only (``'lbfgs'``, ``'owlqn'``, ``'quickprop'``, ``'rprop'``, a loss
        whose default is one of them, and ``init='cll'``); ``warm_start``
        and ``early_stopping`` are not available.

    Attributes
    ----------
    n_partitions_ : int
        Partitions of the training bags.
    n_evaluations_ : int
        Objective evaluations (one broadcast of the parameters, and one
        gradient per partition sent back, each).
    **attributes
        Those of :class:`~sklearn_crfloss.CRFTagger`.

    See Also
    --------
    sklearn_crfloss.CRFTagger : The same model on one machine.

    References
    ----------
    XGBoost's ``xgboost.dask`` and LightGBM's ``lightgbm.dask`` estimators
    (the interface); R. McDonald, K. Hall, G. Mann (2010), Distributed
    training strategies for the structured perceptron, NAACL (the sum of
    per-shard gradients for batch training, Section 2).

    Examples
    --------
    >>> import dask.bag as db
    >>> from dask.distributed import Client, LocalCluster
    >>> from sklearn_crfloss.dask import DaskCRFTagger
    >>> X = [[{"w": "the"}, {"w": "dog"}], [{"w": "a"}, {"w": "cat"}, {"w": "runs"}]] * 4
    >>> y = [["B-NP", "I-NP"], ["B-NP", "I-NP", "B-VP"]] * 4
    >>> with LocalCluster(n_workers=1, processes=False,
    ...                   dashboard_address=None) as cluster, Client(cluster):
    ...     crf = DaskCRFTagger(C=10.0).fit(db.from_sequence(X, npartitions=2),
    ...                                     db.from_sequence(y, npartitions=2))
    >>> crf.to_local().predict(X[:2])
    [['B-NP', 'I-NP'], ['B-NP', 'I-NP', 'B-VP']]
    """

    _parameter_constraints = {**CRFTagger._parameter_constraints,
                              "client": [None, HasMethods(["submit", "gather"])]}

    def __init__(self, *, client=None, **params):
        super().__init__(**params)
        self.client = client

    def __sklearn_clone__(self):
        # The client is shared, not copied (a Client cannot be deep-copied).
        from sklearn.base import clone

        params = self.get_params(deep=False)
        client = params.pop("client")
        return type(self)(client=client, **{k: clone(v, safe=False) for k, v in params.items()})

    # -------------------------------------------------------------- fit

    def _client(self):
        if self.client is not None:
            return self.client
        from distributed import get_client

        try:
            return get_client()
        except ValueError as exc:
            raise ValueError("DaskCRFTagger needs a dask.distributed Client: pass client=... "
                             "or create one first.") from exc

    def _bags(self, client, X, y, sample_weight):
        """The delayed partitions of X, y and sample_weight, checked to match."""
        import dask.bag as db

        n_workers = max(1, len(client.scheduler_info()["workers"]))
        bags = []
        for name, data in (("X", X), ("y", y), ("sample_weight", sample_weight)):
            if data is None or (name == "sample_weight" and not isinstance(data, db.Bag)):
                bags.append(None)  # an array of weights is split as X here
                continue
            if not isinstance(data, db.Bag):
                if isinstance(data, (str, bytes)) or not hasattr(data, "__len__"):
                    raise TypeError(f"{name} must be a dask Bag or a list, got "
                                    f"{type(data).__name__}.")
                data = db.from_sequence(list(data), npartitions=min(n_workers, max(1, len(data))))
            bags.append(data.to_delayed())
        for name, parts in (("y", bags[1]), ("sample_weight", bags[2])):
            if parts is not None and len(parts) != len(bags[0]):
                raise ValueError(f"X and {name} must have the same partitions, got "
                                 f"{len(bags[0])} and {len(parts)}.")
        return bags

    def fit(self, X, y, sample_weight=None):
        """Train the CRF on the cluster.

        Parameters
        ----------
        X : dask.bag.Bag or list of sequences
            The sequences, as for :meth:`CRFTagger.fit`.
        y : dask.bag.Bag or list of sequences of labels
            Partitioned as X (same number of partitions, same lengths).
        sample_weight : dask.bag.Bag of float, array-like or None, default=None
            One non-negative weight per sequence, partitioned as X.

        Returns
        -------
        self : DaskCRFTagger

        Raises
        ------
        ValueError
            On invalid parameters, an online solver, ``warm_start`` or
            ``early_stopping``, partitions that do not match, no client,
            or inconsistent data (the message names the sequence's index in
            X); the estimator is then left as it was.
        TypeError
            If X or y is not a bag or list of sequences.
        Exception
            A task that failed after its retries, or a lost cluster: the
            estimator is left as it was.
        """
        validate_params(self)
        if self.warm_start or self.early_stopping:
            raise ValueError("DaskCRFTagger supports neither warm_start nor early_stopping.")
        loss, prior, solver = self._components()
        if solver.dense_states or getattr(solver, "unit", "iter") != "iter":
            raise ValueError(f"DaskCRFTagger trains with batch solvers (e.g. 'lbfgs', "
                             f"'owlqn'), not {getattr(solver, 'name', solver)!r}.")
        client = self._client()
        X_parts, y_parts, w_parts = self._bags(client, X, y, sample_weight)

        def submit(fn, *args, where=None):
            # ``where``: a future whose holder should run the task (no transfer of it).
            workers = None
            if where is not None:
                holders = client.who_has([where]).get(where.key)
                workers = list(holders) if holders else None
            return client.submit(fn, *args, pure=False, retries=RETRIES, workers=workers,
                                 allow_other_workers=workers is not None)

        # The partitions, computed on the workers and kept there.
        X_f = client.compute(X_parts, retries=RETRIES)
        y_f = client.compute(y_parts, retries=RETRIES)
        w_f = None if w_parts is None else client.compute(w_parts, retries=RETRIES)
        sizes = client.gather([submit(len, p) for p in X_f])
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int).tolist()
        if sample_weight is not None and w_f is None:
            weights = check_sample_weight(sample_weight, int(np.sum(sizes)))
            w_f = [weights[a:a + n] for a, n in zip(starts, sizes)]
        t0 = time.perf_counter()
        # 1. Check, vectorise on the partition's own vocabulary, count attributes and labels.
        parts = [submit(_local, xp, yp, None if w_f is None else w_f[i], starts[i],
                        self.feature_hashing is None, where=xp)
                 for i, (xp, yp) in enumerate(zip(X_f, y_f))]
        del X_f, y_f, w_f  # the partitions live on in the parts (and their graph)
        summaries = client.gather([submit(_summary, part, self.min_freq > 1)
                                   for part in parts])
        kinds = {s[0] for s, n in zip(summaries, sizes) if n}
        if not kinds:
            raise ValueError("X holds no sequence.")
        if len(kinds) > 1:
            raise ValueError("X mixes partitions of feature dicts with partitions of arrays.")
        kind = kinds.pop()
        classes = np.unique(np.concatenate([s[1] for s in summaries if s[3]]))
        if classes.shape[0] < 2:
            raise ValueError(f"y has a single label {classes[0]!r}; a CRF needs at least two "
                             "distinct labels.")
        features = SequenceVectorizer(self.min_freq, self.feature_hashing)
        if kind == "dict":
            counts = {}
            for s in summaries:
                for name, c in (s[4] or {}).items():
                    counts[name] = counts.get(name, 0) + c
            if self.feature_hashing is not None and self.min_freq > 1:
                counts = hashed_counts(self.feature_hashing, counts)
            features.fit_counts(counts)
        else:
            widths = {s[2] for s in summaries if s[3]}
            if len(widths) > 1:
                raise ValueError(f"The partitions of X have different widths {sorted(widths)}.")
            n_input = widths.pop()
            features.fit_transform("array", sp.csr_matrix((0, n_input)), np.zeros(1, np.intp))
        # 2. Vectorise each partition where it is; the layout from the pairs seen.
        # Sent once in a task, not scattered: a task's result is recomputed
        # if the worker holding it is lost, scattered data are not.
        features_f, classes_f = submit(_hold, features), submit(_hold, classes)
        shards = [submit(_shard, part, features_f, classes_f, start)
                  for part, start in zip(parts, starts)]
        L = classes.shape[0]
        dense = self.all_possible_states or solver.dense_states
        state_index = None
        if not dense:
            pairs = client.gather([submit(_pairs, s, L) for s in shards])
            state_index = np.unique(np.concatenate(pairs)) if pairs else np.zeros(0, np.intp)
        check_no_bigrams(features, "DaskCRFTagger")
        layout = ParameterLayout(features.n_features, L, state_index)
        if hasattr(loss, "set_classes"):
            loss.set_classes(classes)
        layout_f = submit(_hold, layout)
        parts = [submit(_bind, s, layout_f, self.n_jobs) for s in shards]
        del shards  # they live on in the bound objectives
        objective = DistributedObjective(client, parts, layout)
        if self.verbose >= 2:
            print(f"vectorised {int(np.sum(sizes))} sequences in {len(parts)} partitions on the "
                  f"workers into {features.n_features} attributes in "
                  f"{time.perf_counter() - t0:.2f} s", flush=True)
        # 3. Train here, each evaluation summed from the workers.
        theta, info = self._train(
            objective, loss, prior, solver, layout.zeros(), from_zero=True,
            snapshot=lambda t: self._snapshot(features, classes, layout, t, loss, prior))
        self._set_fitted(features, classes, layout, theta, info, loss, prior)
        self.n_partitions_ = len(parts)
        self.n_evaluations_ = objective.n_evaluations
        return self

    # ---------------------------------------------------------- predict

    def to_local(self):
        """The fitted model as a plain :class:`~sklearn_crfloss.CRFTagger`.

        Returns
        -------
        CRFTagger
            With the same parameters (``client`` aside) and fitted state; it
            pickles and predicts without a cluster.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before fit.
        """
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        params = self.get_params(deep=False)
        params.pop("client")
        local = CRFTagger(**params)
        local.__dict__.update({k: v for k, v in self.__dict__.items()
                               if k not in params and k != "client"
                               and k not in ("n_partitions_", "n_evaluations_")})
        return local

    def _on_bag(self, X, method):
        import dask.bag as db

        if isinstance(X, db.Bag):
            return X.map_partitions(_predict_partition, self.to_local(), method)
        return getattr(super(), method)(X)

    def predict(self, X):
        """Decoded label sequences; a bag of them for a bag.

        Parameters
        ----------
        X : dask.bag.Bag or list of sequences

        Returns
        -------
        dask.bag.Bag or list of list
            For a bag, a bag with the same partitions (lazy: ``.compute()``
            runs it), each element the label list of one sequence.
        """
        return self._on_bag(X, "predict")

    def predict_marginals(self, X):
        """Posterior marginals of every label at every token; a bag of them for a bag.

        Parameters
        ----------
        X : dask.bag.Bag or list of sequences

        Returns
        -------
        dask.bag.Bag or list of ndarray of shape (n_tokens_i, n_classes)
        """
        return self._on_bag(X, "predict_marginals")


# CRFTagger's parameters and ``client``, as scikit-learn reads them (get_params, clone).
DaskCRFTagger.__init__.__signature__ = inspect.signature(CRFTagger.__init__).replace(
    parameters=[*inspect.signature(CRFTagger.__init__).parameters.values(),
                inspect.Parameter("client", inspect.Parameter.KEYWORD_ONLY, default=None)])
