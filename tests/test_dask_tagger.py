"""DaskCRFTagger: one CRF trained on a LocalCluster equals the one CRFTagger trains here."""

import os
import pickle
import signal

import cloudpickle
import dask.bag as db
import numpy as np
import pytest
from dask.distributed import Client, LocalCluster
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.dask import DaskCRFTagger

from conftest import make_toy_chunks


@pytest.fixture(scope="module")
def client():
    # One cluster for the module: a LocalCluster takes seconds to start.
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as c:
        yield c


def _bags(X, y, n=4):
    return db.from_sequence(X, npartitions=n), db.from_sequence(y, npartitions=n)


@pytest.mark.parametrize("params", [
    {},
    {"min_freq": 2, "loss": "softmax_margin", "prior": "l1", "C": 10.0, "max_iter": 30},
    {"feature_hashing": 64, "min_freq": 2, "all_possible_states": True, "loss": "labelwise",
     "init": "cll", "solver": "lbfgs", "max_iter": 15},
    {"boundary_potentials": False, "max_iter": 40},
])
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_dask_fit_equals_local_fit(client, params):
    X, y = make_toy_chunks(150, seed=11)
    local = CRFTagger(n_jobs=1, **params).fit(X, y)
    bags = _bags(X, y)
    remote = DaskCRFTagger(client=client, n_jobs=1, **params).fit(*bags)
    assert remote.n_partitions_ == bags[0].npartitions > 1 and remote.n_evaluations_ >= remote.n_iter_
    assert_array_equal(remote.attributes_, local.attributes_)
    assert_array_equal(remote.classes_, local.classes_)
    assert remote.n_parameters_ == local.n_parameters_
    assert_allclose(remote.objective_, local.objective_, rtol=1e-6)
    assert_allclose(remote.coef_, local.coef_, atol=1e-3)
    assert remote.predict(X) == local.predict(X)
    if not params:  # CLL: the blocks of the sums added as one process adds them
        assert remote.objective_ == local.objective_ and remote.n_iter_ == local.n_iter_
        assert_array_equal(remote.coef_, local.coef_)


def test_cll_fit_on_conll2000_is_bitwise_that_of_one_process(client, corpus):
    # A subset of CoNLL-2000 (its first 400 sentences) in a bag of 3
    # partitions (boundaries that are not those of the kernels' blocks) on
    # 2 workers: the same objective, iterations and weights as
    # CRFTagger(n_jobs=1). (The toy test above checks 4 partitions.)
    from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures
    from sklearn_crfloss.metrics import segment_f1_score

    X, y = corpus("conll2000", "train")
    F = TemplateFeatures(CONLL2000_TEMPLATE).fit_transform(X[:400])
    local = CRFTagger(C=1.0, n_jobs=1).fit(F, y[:400])
    remote = DaskCRFTagger(client=client, C=1.0, n_jobs=1).fit(*_bags(F, y[:400], 3))
    assert remote.objective_ == local.objective_ and remote.n_iter_ == local.n_iter_
    assert_array_equal(remote.coef_, local.coef_)
    assert_array_equal(remote.transition_, local.transition_)
    X_test, y_test = corpus("conll2000", "test")
    F_test = TemplateFeatures(CONLL2000_TEMPLATE).fit_transform(X_test[:200])
    assert segment_f1_score(y_test[:200], remote.predict(F_test)) == segment_f1_score(
        y_test[:200], local.predict(F_test))



def test_label_bigrams_on_conll2000_match_one_process(client, corpus):
    # CONLL2000_TEMPLATE plus B01:%x[0,1] (a transition matrix per POS tag
    # of the token) on 200 sentences in 3 partitions: the bigram blocks are
    # trained on the cluster, to the objective and predictions of
    # CRFTagger(n_jobs=1) (the sums in another order: 1e-6 relative).
    from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures

    X, y = corpus("conll2000", "train")
    features = TemplateFeatures(CONLL2000_TEMPLATE + "B01:%x[0,1]\n")
    F = features.fit_transform(X[:200])
    local = CRFTagger(C=1.0, n_jobs=1, max_iter=60).fit(F, y[:200])
    remote = DaskCRFTagger(client=client, C=1.0, n_jobs=1, max_iter=60).fit(
        *_bags(F, y[:200], 3))
    assert local.bigram_coef_.shape[0] == remote.bigram_coef_.shape[0] > 10
    assert_array_equal(remote.bigram_attributes_, local.bigram_attributes_)
    assert_allclose(remote.objective_, local.objective_, rtol=1e-6)
    assert_allclose(remote.bigram_coef_, local.bigram_coef_, atol=1e-3)
    assert np.abs(remote.bigram_coef_).max() > 0.1  # the blocks are trained
    F_test = features.transform(corpus("conll2000", "test")[0][:100])
    assert remote.predict(F_test) == local.predict(F_test)
    assert remote.to_local().predict(F_test) == local.predict(F_test)


def test_a_worker_reads_and_returns_only_the_parameters_its_sequences_touch():
    # What makes the shortened messages exact. A worker evaluates from
    # theta[take] alone (zeros elsewhere): its blocks equal those of the whole
    # objective at theta random everywhere, and the entries it leaves out of
    # its reply are exact zeros in them.
    from sklearn_crfloss._dask._distributed import WorkerData, assign_groups, select_sequences
    from sklearn_crfloss._chain._forward_backward import N_BLOCKS
    from sklearn_crfloss._model._objective import CRFObjective
    from sklearn_crfloss._model._parameters import ParameterLayout, observed_pairs
    from sklearn_crfloss._data._validation import check_sequences, encode_labels
    from sklearn_crfloss._data._vectorize import SequenceVectorizer
    from sklearn_crfloss.losses import ConditionalLogLikelihood

    X, y = make_toy_chunks(150, seed=21)
    kind, tokens, offsets = check_sequences(X)
    classes, y_enc = encode_labels(y, np.diff(offsets))
    Xc = SequenceVectorizer().fit_transform(kind, tokens, offsets)
    L = classes.shape[0]
    layout = ParameterLayout(Xc.shape[1], L, observed_pairs(Xc, y_enc, L))
    whole = CRFObjective(Xc, y_enc, offsets, layout, n_threads=1)
    assert whole.n_blocks == N_BLOCKS
    theta = np.random.default_rng(0).normal(size=layout.n_params)
    log_z, blocks = (a.copy() for a in whole.cll_blocks(theta)[:2])
    n_groups, groups, pad = assign_groups(2)
    left_out = 0
    for held in groups:
        data = WorkerData([select_sequences((Xc, y_enc, offsets, None), 0, n_groups, held)],
                          layout, n_groups, held, pad, 1)
        reply = data.evaluate(theta[data.take], ConditionalLogLikelihood(), True)
        state_index = data.describe()[5]
        expected = [blocks[0] + blocks[1]] if data.first else [blocks[g] for g in held]
        assert len(reply["state"]) == len(state_index) == len(expected)
        for sent, index, block in zip(reply["state"], state_index, expected):
            assert_array_equal(sent, block[index])
            assert not np.delete(block, index).any()
            left_out += block.shape[0] - index.shape[0]
        assert_array_equal(reply["log_z"], log_z[data.global_index])
    assert left_out > 0  # the replies are shorter


def test_evaluations_keep_the_clients_direct_to_workers(client):
    # The actors are called directly for the fit's evaluations; the client's
    # setting is left as it was, and a client that routes through the
    # scheduler (direct_to_workers=False) gives the same fit.
    X, y = make_toy_chunks(60, seed=22)
    assert client.direct_to_workers is None
    direct = DaskCRFTagger(client=client, n_jobs=1).fit(*_bags(X, y))
    assert client.direct_to_workers is None
    with Client(client.scheduler.address, direct_to_workers=False,
                set_as_default=False) as routed:
        through = DaskCRFTagger(client=routed, n_jobs=1).fit(*_bags(X, y))
        assert routed.direct_to_workers is False
    assert through.objective_ == direct.objective_ and through.n_iter_ == direct.n_iter_


def test_predict_on_a_bag_sample_weight_and_to_local(client):
    X, y = make_toy_chunks(80, seed=12)
    w = np.random.default_rng(0).uniform(0.5, 2.0, size=len(X))
    local = CRFTagger(n_jobs=1).fit(X, y, sample_weight=w)
    remote = DaskCRFTagger(client=client, n_jobs=1).fit(
        *_bags(X, y, 3), sample_weight=db.from_sequence(w.tolist(), npartitions=3))
    assert_allclose(remote.objective_, local.objective_, rtol=1e-6)
    as_array = DaskCRFTagger(client=client, n_jobs=1).fit(*_bags(X, y, 3), sample_weight=w)
    assert_allclose(as_array.objective_, remote.objective_, rtol=1e-12)
    bag = db.from_sequence(X, npartitions=3)
    predicted = remote.predict(bag)
    assert isinstance(predicted, db.Bag)
    assert predicted.compute() == local.predict(X)
    # The model went to the workers once: the graph refers to it, it does not hold it.
    graph_bytes = [len(cloudpickle.dumps(dict(b.__dask_graph__()))) for b in (predicted, bag)]
    assert graph_bytes[0] - graph_bytes[1] < len(pickle.dumps(remote.to_local())) / 10
    plain = pickle.loads(pickle.dumps(remote.to_local()))
    assert type(plain) is CRFTagger and "client" not in plain.get_params()
    assert plain.predict(X) == local.predict(X)
    assert set(clone(remote).get_params()) == set(CRFTagger().get_params()) | {"client"}


def test_bad_input_names_the_sequence_and_leaves_it_unfitted(client):
    X, y = make_toy_chunks(40, seed=13)
    y = [list(s) for s in y]
    y[25] = y[25][:-1]
    est = DaskCRFTagger(client=client)
    with pytest.raises(ValueError, match="Sequence 25 has"):
        est.fit(*_bags(X, y))
    with pytest.raises(ValueError, match="same partitions"):
        est.fit(db.from_sequence(X, npartitions=4), db.from_sequence(y, npartitions=2))
    with pytest.raises(ValueError, match="batch solvers"):
        DaskCRFTagger(client=client, loss="perceptron").fit(*_bags(X, y))
    with pytest.raises(ValueError, match="'mce_f' is not a sum over sequences"):
        DaskCRFTagger(client=client, loss="mce_f", init="cll", solver="quickprop").fit(
            *_bags(X, y))
    with pytest.raises(AttributeError):
        check_is_fitted(est)
        est.coef_


def test_empty_partitions_and_labels_of_mixed_types_train_as_one_process(client):
    # Bag.filter leaves empty partitions; labels that are tuples and a mix
    # of ints and strings stay the objects given (no np.asarray on them).
    X, y = make_toy_chunks(60, seed=17)
    names = {"O": 0, "B-NP": ("B", "NP"), "I-NP": ("I", "NP")}
    y = [[names.get(label, label) for label in s] for s in y]
    # 6 partitions of 10 sequences; the 2nd, 4th and 6th filtered out whole.
    pairs = db.from_sequence(list(enumerate(zip(X, y))), npartitions=6).filter(
        lambda p: p[0] // 10 % 2 == 0)
    sizes = [len(p) for p in client.compute(pairs.to_delayed(), sync=True)]
    kept = [p for i, p in enumerate(zip(X, y)) if i // 10 % 2 == 0]
    local = CRFTagger(n_jobs=1).fit([x for x, _ in kept], [t for _, t in kept])
    remote = DaskCRFTagger(client=client, n_jobs=1).fit(pairs.map(lambda p: p[1][0]),
                                                        pairs.map(lambda p: p[1][1]))
    assert sizes == [10, 0, 10, 0, 10, 0] and remote.n_partitions_ == 6
    assert remote.classes_.tolist() == local.classes_.tolist()
    assert ("B", "NP") in remote.classes_.tolist() and 0 in remote.classes_.tolist()
    assert remote.objective_ == local.objective_
    assert_array_equal(remote.coef_, local.coef_)
    assert remote.predict([x for x, _ in kept]) == local.predict([x for x, _ in kept])


def test_sgd_by_iterative_parameter_mixing_trains(client):
    # McDonald et al. (2010): per-worker epochs, parameters mixed between
    # epochs. On held-out data it scores close to SGD in one process.
    from sklearn_crfloss.metrics import segment_f1_score

    X, y = make_toy_chunks(400, seed=15)
    X_test, y_test = make_toy_chunks(200, seed=16)
    params = dict(solver="sgd", max_iter=8, random_state=0)
    local = CRFTagger(n_jobs=1, **params).fit(X, y)
    remote = DaskCRFTagger(client=client, n_jobs=1, **params).fit(*_bags(X, y))
    assert remote.n_iter_ == 8 and len(remote.loss_curve_) == 8
    assert remote.loss_curve_[-1] < 0.5 * remote.loss_curve_[0]
    f1_local = segment_f1_score(y_test, local.predict(X_test))
    f1_remote = segment_f1_score(y_test, remote.predict(X_test))
    assert f1_remote > 0.5 and abs(f1_remote - f1_local) < 0.03
    again = DaskCRFTagger(client=client, n_jobs=1, **params).fit(*_bags(X, y))
    assert_array_equal(again.coef_, remote.coef_)  # random_state fixes every epoch's order


def test_killing_a_worker_during_fit(client):
    # Its own cluster: a worker of it is killed.
    X, y = make_toy_chunks(150, seed=14)
    reference = CRFTagger(n_jobs=1).fit(X, y).objective_
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as own:
        pids = list(own.run(os.getpid).values())
        killed = []

        def kill_one(iteration, objective):
            if iteration == 2 and not killed:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(iteration)

        est = DaskCRFTagger(client=own, n_jobs=1, callback=kill_one)
        try:
            est.fit(*_bags(X, y))
        except Exception:
            # A fit that cannot finish leaves nothing fitted.
            assert not hasattr(est, "coef_") and not hasattr(est, "objective_")
        else:
            assert est.objective_ == reference  # dask recomputed the lost data: same sums
        assert killed == [2]
