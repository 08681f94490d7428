"""Model files on CoNLL-2000: sizes and times of save/load, CRFsuite export/import.

Trains ``CRFTagger(boundary_potentials=False)`` on the first ``--n-train``
sentences (CONLL2000_TEMPLATE features), then measures: pickle, save_model
and export_crfsuite (file size, seconds), load_model and import_crfsuite
(seconds), predict on the 2,012 test sentences with the fitted, the loaded
and the imported model (best of ``--repeat``), and python-crfsuite's tagger
on the exported file; it checks that all four label the test set alike.

    SKLEARN_CRFLOSS_DATA=../shared/data python benchmarks/model_files.py --n-train 1000
"""

import argparse
import os
import pickle
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.dirname(__file__))

import pycrfsuite  # noqa: E402

from _common import Timer, machine_info  # noqa: E402
from sklearn_crfloss import CRFTagger  # noqa: E402
from sklearn_crfloss.datasets import load_conll2000  # noqa: E402
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures  # noqa: E402
from sklearn_crfloss.io import (export_crfsuite, import_crfsuite, load_model,  # noqa: E402
                                save_model)


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-train", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-iter", type=int, default=100)
    args = parser.parse_args()
    data = os.environ.get("SKLEARN_CRFLOSS_DATA")
    X_train, y_train = load_conll2000("train", data_home=data, download_if_missing=False)
    X_test, _ = load_conll2000("test", data_home=data, download_if_missing=False)
    features = TemplateFeatures(CONLL2000_TEMPLATE)
    F_train = features.fit_transform(X_train[:args.n_train])
    F_test = features.transform(X_test)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        crf = CRFTagger(boundary_potentials=False, C=10.0, max_iter=args.max_iter)
        crf.fit(F_train, y_train[:args.n_train])
    print(f"machine: {machine_info()}")
    print(f"{args.n_train} training sentences, {crf.n_features_in_} attributes, "
          f"{crf.n_parameters_} parameters, {len(F_test)} test sentences")
    folder = tempfile.mkdtemp()
    paths = {k: os.path.join(folder, k) for k in ("pickle", "native", "crfsuite")}
    rows = []
    with Timer() as t:
        with open(paths["pickle"], "wb") as f:
            pickle.dump(crf, f)
    rows.append(("pickle.dump", t.wall, os.path.getsize(paths["pickle"])))
    with Timer() as t:
        save_model(crf, paths["native"])
    rows.append(("save_model", t.wall, os.path.getsize(paths["native"])))
    with Timer() as t:
        export_crfsuite(crf, paths["crfsuite"])
    rows.append(("export_crfsuite", t.wall, os.path.getsize(paths["crfsuite"])))
    with Timer() as t:
        with open(paths["pickle"], "rb") as f:
            pickle.load(f)
    rows.append(("pickle.load", t.wall, None))
    with Timer() as t:
        loaded = load_model(paths["native"])
    rows.append(("load_model", t.wall, None))
    with Timer() as t:
        imported = import_crfsuite(paths["crfsuite"])
    rows.append(("import_crfsuite", t.wall, None))
    tagger = pycrfsuite.Tagger()
    tagger.open(paths["crfsuite"])
    predictions = {}
    for name, fn in [("predict (fitted)", lambda: crf.predict(F_test)),
                     ("predict (load_model)", lambda: loaded.predict(F_test)),
                     ("predict (import_crfsuite)", lambda: imported.predict(F_test)),
                     ("pycrfsuite.Tagger.tag", lambda: [
                         tagger.tag(pycrfsuite.ItemSequence(x)) for x in F_test])]:
        seconds, predictions[name] = best(fn, args.repeat)
        rows.append((name, seconds, None))
    same = all(p == predictions["predict (fitted)"] for p in predictions.values())
    print(f"{'step':28s} {'seconds':>8s} {'bytes':>10s}")
    for name, seconds, size in rows:
        print(f"{name:28s} {seconds:8.3f} {'' if size is None else size:>10}")
    print(f"all four label the test sentences alike: {same}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
