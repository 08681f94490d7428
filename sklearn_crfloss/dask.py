"""One CRF trained on a dask cluster, where the data lie: :class:`DaskCRFTagger`.

The data are :class:`dask.bag.Bag`\\ s of sequences (X) and of label
sequences (y) with the same partitions. Training, as
``xgboost.dask.DaskXGBClassifier`` and ``lightgbm.DaskLGBMClassifier`` do it
for their models:

1. each worker checks its partitions and counts their attributes and labels
   (the vocabulary is the sum of the counts, ``min_freq`` applied to it);
2. each worker vectorises its partitions with that vocabulary (or the
   hashing columns) into the compact CSR the kernels read;
3. the sequences are redistributed once: each worker gets its share of
   them (whole blocks of the kernels' sums, see
   :mod:`sklearn_crfloss._dask._distributed`), bound to the parameter layout as
   one :class:`~sklearn_crfloss._model._objective.CRFObjective`;
4. the solver (L-BFGS, OWL-QN, any batch solver, and the ``init='cll'``
   stage) runs in the client process; each evaluation of the objective
   calls a dask actor on every worker once, directly (not through the
   scheduler), with the parameters its sequences use; each worker returns
   its part, and the client adds the parts in a fixed order and adds the
   prior. For the conditional log-likelihood on up to four workers the
   sums are those of ``CRFTagger(n_jobs=1)``, rounding included, so the
   fit follows the same path.

Dask retries a failed task and recomputes the partitions a lost worker held
from their graph, and the evaluation is made again with a new actor where
the data then are; a fit that still fails raises and leaves the estimator
as it was (unfitted if it was).
"""

import inspect
import operator
import time

import numpy as np
import scipy.sparse as sp

from ._dask import (RETRIES, assign_groups, DistributedObjective, ParameterMixing,
                    select_sequences, WorkerData)
from ._data import (attribute_counts, check_sample_weight, check_sequences, classes_array,
                    column_counts, encode_known_labels, encode_labels, hashed_counts,
                    renumber_sequences, SequenceVectorizer)
from ._model import make_layout, observed_pairs
from ._tagger import CRFTagger
from ._training import fitted_state, refuse_tag_scheme
from ._utils import HasMethods, validate_params
from .losses import get_loss_tags
from .solvers import get_solver_tags, solvers_with

__all__ = ["DaskCRFTagger", "DistributedObjective"]

def _local(X, y, sample_weight, start, own_vocabulary, count_hashed, pairs):
    """Check one partition; vectorise feature dicts on the partition's own vocabulary.

    Returns a dict: ``kind``, ``offsets``, ``y`` (the label sequences),
    ``classes`` (its labels), ``weights``, either ``rows`` and ``names``
    (the partition's CSR matrix and column names: the feature dicts are
    dropped) or ``tokens`` (arrays, or dicts to hash), and ``summary``
    (:func:`_summary`: made here, so that no task has to move the partition
    to read it).
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
    part["summary"] = _summary(part, count_hashed, pairs)
    return part


def _summary(part, count_hashed, pairs):
    """``(kind, labels, width, n_sequences, attribute counts or None, pairs or None)``.

    The counts of a partition vectorised on its own vocabulary follow its
    columns' order; with ``pairs``, its observed (attribute, label) pairs in
    its own columns and labels (:func:`~sklearn_crfloss._model._parameters.observed_pairs`).
    """
    counts = own_pairs = None
    if "rows" in part:
        counts = dict(zip(part["names"].tolist(), column_counts(part["rows"]).tolist()))
        if pairs:
            labels = part["classes"]
            y_own = encode_known_labels(part["y"], np.diff(part["offsets"]), labels)
            own_pairs = observed_pairs(part["rows"], y_own, labels.shape[0])
    elif part["kind"] == "dict" and count_hashed:
        counts = attribute_counts(part["tokens"])
    width = part["tokens"].shape[1] if part["kind"] == "array" else None
    return part["kind"], part["classes"], width, part["offsets"].shape[0] - 1, counts, own_pairs


def _fitted_pairs(own_pairs, column, labels, classes):
    """A partition's observed pairs (:func:`_summary`) in the fitted columns and labels."""
    n_own = labels.shape[0]
    index = {label: j for j, label in enumerate(classes.tolist())}
    label = np.array([index[lab] for lab in labels.tolist()], dtype=np.intp)
    attribute = column[own_pairs // n_own]
    kept = attribute >= 0  # not dropped by min_freq
    return attribute[kept] * classes.shape[0] + label[own_pairs[kept] % n_own]


def _partition_labels(y, offsets):
    """The distinct labels of a partition (one, or none, is fine here), kept as given."""
    lengths = np.diff(offsets)
    try:
        return encode_labels(y, lengths)[0]
    except ValueError as exc:
        if "single label" not in str(exc) and "no labels" not in str(exc):
            raise
        return classes_array(list(dict.fromkeys(lab for labels in y for lab in labels)))


def _shard(part, columns, classes, start):
    """The partition in the fitted columns: ``(Xc, y_enc, offsets, sample_weight)``.

    ``columns``: for a partition vectorised on its own vocabulary, the
    fitted column of each of its own (-1: dropped) and the number of fitted
    columns; otherwise the fitted ``SequenceVectorizer``.
    """
    offsets = part["offsets"]
    try:
        y_enc = encode_known_labels(part["y"], np.diff(offsets), classes)
        if "rows" in part:  # the partition's own columns -> the fitted ones
            column, n_features = columns
            rows = part["rows"]
            indices = column[rows.indices]
            kept = indices >= 0
            indptr = np.concatenate([[0], np.cumsum(kept)])[rows.indptr]
            Xc = sp.csr_matrix((rows.data[kept], indices[kept].astype(np.int32), indptr),
                               shape=(rows.shape[0], n_features))
            Xc.sort_indices()
        else:
            Xc = columns.transform(part["tokens"], offsets)
    except (TypeError, ValueError) as exc:
        raise renumber_sequences(exc, start) from exc
    return Xc, y_enc, offsets, part["weights"]


def _hold(obj):
    return obj


def _pairs(shard, n_labels):
    Xc, y_enc, offsets, _ = shard
    return observed_pairs(Xc, y_enc, n_labels)


def _predict_partition(X, model, method):
    return getattr(model, method)(list(X))


def _submitter(client):
    """``submit(fn, *args, where=None)``: a task on ``client``, retried, not pure.

    ``where``: a future whose holder should run the task (no transfer of it:
    the scheduler underrates the size of object arrays); awaited first, for
    its holder to be known.
    """
    from distributed import wait

    def submit(fn, *args, where=None):
        workers = None
        if where is not None:
            wait([where])
            holders = client.who_has([where]).get(where.key)
            workers = list(holders) if holders else None
        return client.submit(fn, *args, pure=False, retries=RETRIES, workers=workers,
                             allow_other_workers=workers is not None)

    return submit


class _Partitions:
    """The partitions of a fit: the delayed X parts, their futures and sizes."""

    def __init__(self, X_parts, X_f, y_f, w_f, sizes, starts):
        self.X_parts, self.X_f, self.y_f, self.w_f = X_parts, X_f, y_f, w_f
        self.sizes, self.starts = sizes, starts


class DaskCRFTagger(CRFTagger):
    """DaskCRFTagger(*, client=None, **params)

    A :class:`~sklearn_crfloss.CRFTagger` trained on a dask cluster, fed dask bags.

    Every parameter of :class:`~sklearn_crfloss.CRFTagger`, plus ``client``.
    :meth:`fit` takes :class:`dask.bag.Bag`\\ s of sequences and of label
    sequences with the same partitions (or lists, split into one partition
    per worker): the vocabulary is counted on the workers, each partition is
    vectorised on the worker that holds it, the sequences are shared out
    among the workers once, and the batch solver runs here, each
    evaluation summed from the workers (see :mod:`sklearn_crfloss.dask`).
    The fitted model is the one :class:`~sklearn_crfloss.CRFTagger` trains
    on the concatenated data: for the conditional log-likelihood on up to
    four workers bitwise that of ``CRFTagger(n_jobs=1)``, otherwise (other
    losses, more workers, observation-dependent label bigrams) the same
    objective up to the order of the additions; :meth:`to_local` returns it
    as a plain :class:`~sklearn_crfloss.CRFTagger`, which pickles.

    Parameters
    ----------
    client : dask.distributed.Client or None, default=None
        The cluster to train on; None: the current client
        (:func:`distributed.get_client`). The objective's evaluations go
        from the client to the workers directly, unless the client was made
        with ``direct_to_workers=False`` (then through the scheduler,
        slower).
    **params
        The parameters of :class:`~sklearn_crfloss.CRFTagger`. ``n_jobs`` is
        the number of kernel threads per task on a worker. Batch solvers
        (``'lbfgs'``, ``'owlqn'``, ``'quickprop'``, ``'rprop'``, a loss
        whose default is one of them, and ``init='cll'``) and ``'sgd'``, by
        iterative parameter mixing (every epoch, each worker runs one epoch
        over its sequences from the mixed parameters; the client averages
        them, weighted by the workers' shares of the sequences; see
        :class:`~sklearn_crfloss._dask._distributed.ParameterMixing`). The
        perceptron, MIRA and schedules are not available, nor
        ``warm_start``, ``early_stopping`` and ``tag_scheme`` (convert the
        labels with :func:`~sklearn_crfloss.segments.convert_scheme` first).

    Attributes
    ----------
    n_partitions_ : int
        Partitions of the training bags.
    n_evaluations_ : int
        Objective evaluations (the parameters sent to every worker and one
        reply from each, each).
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
    per-shard gradients for batch training, Section 2; iterative parameter
    mixing for ``solver='sgd'``, Section 3, Figure 2).

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
            On invalid parameters, a solver other than a batch solver or
            ``'sgd'``, ``order=2``, a loss that is not a
            sum over sequences (``'mce_f'``), ``warm_start``,
            ``early_stopping`` or ``tag_scheme``, partitions that do not match, no client,
            or inconsistent data (the message names the sequence's index in
            X); the estimator is then left as it was.
        TypeError
            If X or y is not a bag or list of sequences.
        Exception
            A task that failed after its retries, or a lost cluster: the
            estimator is left as it was.
        """
        validate_params(self)
        if self.order != 1:
            raise ValueError("order=2 is not supported by DaskCRFTagger (its workers sum "
                             "first-order counts); use CRFTagger")
        if self.warm_start or self.early_stopping:
            raise ValueError("DaskCRFTagger supports neither warm_start nor early_stopping.")
        refuse_tag_scheme(self.tag_scheme, "DaskCRFTagger",
                          "the labels stay on the workers, and their scheme is detected on "
                          "all of them at once")
        loss, prior, solver = self._components()
        tags = get_loss_tags(loss)
        if not tags.additive:
            raise ValueError(f"DaskCRFTagger sums the loss over the partitions: loss="
                             f"{tags.name or loss!r} is not a sum over sequences.")
        solver_tags = get_solver_tags(solver)
        mixing = solver_tags.shard_epochs  # iterative parameter mixing
        if not mixing and (solver.dense_states or solver_tags.unit != "iter"):
            raise ValueError(f"DaskCRFTagger trains with batch solvers (e.g. 'lbfgs', "
                             f"'owlqn') or 'sgd', not {solver_tags.name or solver!r}.")
        client = self._client()
        submit = _submitter(client)
        data = self._partitions(client, submit, X, y, sample_weight)
        t0 = time.perf_counter()
        dense = self.all_possible_states or solver.dense_states
        parts, summaries, kind, classes = self._check_on_workers(client, submit, data, dense)
        features = self._fit_vocabulary(summaries, kind)
        shards, state_index = self._vectorise_on_workers(client, submit, data, parts, summaries,
                                                         kind, classes, features, dense)
        layout = make_layout(features, features.n_features, classes.shape[0], state_index,
                             labels=None, boundary=self.boundary_potentials, loss=loss,
                             solver_tags=solver_tags,
                             warm=self.warm_start and hasattr(self, "coef_"),
                             solvers_with=solvers_with)
        if tags.needs_classes:
            loss.set_classes(classes)
        objective = self._objective(client, submit, shards, data, layout, mixing)
        del parts, shards  # they live on in the workers' data (and their graph)
        if self.verbose >= 2:
            print(f"vectorised {int(np.sum(data.sizes))} sequences in {len(data.X_parts)} "
                  f"partitions on {len(objective.parts)} workers into {features.n_features} "
                  f"attributes in {time.perf_counter() - t0:.2f} s", flush=True)
        # 3. Train here, each evaluation summed from the workers.
        if mixing:
            solver = ParameterMixing(solver)
        theta, info = self._train(
            objective, loss, prior, solver, layout.zeros(), from_zero=True,
            snapshot=lambda t: self._snapshot(features, classes, layout, t, loss, prior))
        staged = self._snapshot(features, classes, layout, theta, loss, prior, info)
        staged.n_partitions_ = len(data.X_parts)
        staged.n_evaluations_ = objective.n_evaluations
        # every fitted attribute in one update (see _training/_fitted_state.py)
        self.__dict__.update(fitted_state(vars(staged), self.get_params(deep=False)))
        return self

    def _partitions(self, client, submit, X, y, sample_weight):
        """The partitions of X, y and the weights, computed on the workers and kept there."""
        X_parts, y_parts, w_parts = self._bags(client, X, y, sample_weight)
        X_f = client.compute(X_parts, retries=RETRIES)
        y_f = client.compute(y_parts, retries=RETRIES)
        w_f = None if w_parts is None else client.compute(w_parts, retries=RETRIES)
        sizes = client.gather([submit(len, p) for p in X_f])
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int).tolist()
        if sample_weight is not None and w_f is None:
            weights = check_sample_weight(sample_weight, int(np.sum(sizes)))
            w_f = [weights[a:a + n] for a, n in zip(starts, sizes)]
        return _Partitions(X_parts, X_f, y_f, w_f, sizes, starts)

    def _check_on_workers(self, client, submit, data, dense):
        """1. Check, vectorise on the partition's own vocabulary, count attributes and labels.

        Returns the parts (futures of :func:`_local`), their summaries, the
        kind of X ('dict' or arrays) and the sorted labels.
        """
        own_vocabulary = self.feature_hashing is None
        parts = [submit(_local, xp, yp, None if data.w_f is None else data.w_f[i],
                        data.starts[i], own_vocabulary, self.min_freq > 1, not dense, where=xp)
                 for i, (xp, yp) in enumerate(zip(data.X_f, data.y_f))]
        # The partitions live on in the parts (and their graph).
        data.X_f = data.y_f = data.w_f = None
        summaries = client.gather([submit(operator.itemgetter("summary"), part, where=part)
                                   for part in parts])
        kinds = {s[0] for s, n in zip(summaries, data.sizes) if n}
        if not kinds:
            raise ValueError("X holds no sequence.")
        if len(kinds) > 1:
            raise ValueError("X mixes partitions of feature dicts with partitions of arrays.")
        kind = kinds.pop()
        # The partitions' labels merged as fit orders them (kept as given: a
        # tuple or a mix of ints and strings does not go through np.asarray).
        labels = [label for s in summaries for label in s[1].tolist()]
        classes = encode_labels([labels], np.array([len(labels)]))[0]
        # An empty partition (e.g. after Bag.filter), its labels checked, takes no part.
        kept = [i for i, s in enumerate(summaries) if s[3]]
        data.starts = [data.starts[i] for i in kept]
        return [parts[i] for i in kept], [summaries[i] for i in kept], kind, classes

    def _fit_vocabulary(self, summaries, kind):
        """The vectoriser fitted on the sum of the partitions' counts (or their width)."""
        features = SequenceVectorizer(self.min_freq, self.feature_hashing)
        if kind == "dict":
            counts = dict(summaries[0][4] or {})
            for s in summaries[1:]:
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
        return features

    def _vectorise_on_workers(self, client, submit, data, parts, summaries, kind, classes,
                              features, dense):
        """2. Vectorise each partition where it is; the state pairs seen (None if dense).

        Sent in tasks, not scattered: a task's result is recomputed if the
        worker holding it is lost, scattered data are not. A partition on
        its own vocabulary gets the fitted column of each of its columns
        (not the vocabulary), and its pairs come with its summary.
        """
        L = classes.shape[0]
        mapped = kind == "dict" and self.feature_hashing is None
        if mapped:
            vocabulary = features.vectorizer.vocabulary_
            columns = [(np.array([vocabulary.get(name, -1) for name in s[4]], dtype=np.int64),
                        features.n_features) for s in summaries]
        else:
            columns = [submit(_hold, features)] * len(parts)
        classes_f = submit(_hold, classes)
        shards = [submit(_shard, part, c, classes_f, start, where=part)
                  for part, c, start in zip(parts, columns, data.starts)]
        if dense:
            return shards, None
        pairs = ([_fitted_pairs(s[5], c[0], s[1], classes) for s, c in zip(summaries, columns)]
                 if mapped else client.gather([submit(_pairs, s, L, where=s) for s in shards]))
        seen = np.zeros(features.n_features * L, dtype=bool)
        for p in pairs:
            seen[p] = True
        return shards, np.flatnonzero(seen)

    def _objective(self, client, submit, shards, data, layout, mixing):
        """The sequences redistributed once, bound to the layout on each worker.

        Each worker gets its share of the chunks (whole blocks of the
        kernels' sums: see _distributed).
        """
        layout_f = submit(_hold, layout)
        workers = sorted(client.scheduler_info()["workers"])
        n_groups, groups, pad = assign_groups(len(workers))
        pad = pad and not mixing  # SGD steps on every sequence held: no fillers
        parts = []
        for worker, held in zip(workers, groups):
            pieces = [submit(select_sequences, shard, start, n_groups, held, where=shard)
                      for shard, start in zip(shards, data.starts)]
            parts.append((worker, client.submit(
                WorkerData, pieces, layout_f, n_groups, held, pad, self.n_jobs, pure=False,
                retries=RETRIES, workers=[worker], allow_other_workers=True)))
        return DistributedObjective(client, parts, layout, int(np.sum(data.sizes)), pad)

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
            return X.map_partitions(_predict_partition, self._shared_model(), method)
        return getattr(super(), method)(X)

    def _shared_model(self):
        """The local model, sent once to every worker (a future), not inside each graph.

        Without a client (a bag computed by dask's local schedulers) the
        model itself: nothing is sent.
        """
        model = self.to_local()
        try:
            client = self._client()
        except ValueError:
            return model
        return client.scatter(model, broadcast=True)

    def predict(self, X):
        """Decoded label sequences; a bag of them for a bag.

        Parameters
        ----------
        X : dask.bag.Bag or list of sequences

        Returns
        -------
        dask.bag.Bag or list of list
            For a bag, a bag with the same partitions (lazy: ``.compute()``
            runs it), each element the label list of one sequence. The
            model is sent to every worker of the client once, when
            ``predict`` is called, and the bag's tasks refer to it (the
            graph does not carry it); the bag is computed on that client.
        """
        return self._on_bag(X, "predict")

    def predict_marginals(self, X):
        """Posterior marginals of every label at every token; a bag of them for a bag.

        As :meth:`predict`, each element an ndarray of shape (n_tokens_i,
        n_classes) instead of a label list.
        """
        return self._on_bag(X, "predict_marginals")


# CRFTagger's parameters and ``client``, as scikit-learn reads them (get_params, clone).
DaskCRFTagger.__init__.__signature__ = inspect.signature(CRFTagger.__init__).replace(
    parameters=[*inspect.signature(CRFTagger.__init__).parameters.values(),
                inspect.Parameter("client", inspect.Parameter.KEYWORD_ONLY, default=None)])
