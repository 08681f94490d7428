"""What each inference kernel does with finite potentials of a given magnitude.

    python benchmarks/kernel_magnitudes.py

Random potentials uniform in ``[-M, M]`` (3 labels, sequences of 4 and 3
tokens, seeds 0-4) for ``M`` from 1e-300 to 1e307, against the enumeration of
every labelling (scores summed in the kernels' order, ``logsumexp``). For
each kernel: how many of the 5 it refused (a ``ValueError``), and the
largest error of the others (marginals: absolute; ``log_z``: relative).
"""

import itertools
import warnings

import numpy as np
from scipy.special import logsumexp

from sklearn_crfloss import inference

MAGNITUDES = [1e-300, 1.0, 1e4, 1e8, 1e10, 1e12, 1e15, 1e20, 1e100, 1e155, 1e200, 1e300,
              1e307]


def problem(M, seed):
    rng = np.random.default_rng(seed)
    lengths = (4, 3)
    U = rng.uniform(-1, 1, size=(sum(lengths), 3)) * M
    T, s, e = (rng.uniform(-1, 1, size=shape) * M for shape in ((3, 3), 3, 3))
    return U, T, s, e, np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)


def enumeration(U, T, s, e, off):
    """log Z, marginals and the best score of each sequence, by enumeration."""
    L = U.shape[1]
    log_z, best, marginals = [], [], np.zeros_like(U)
    for a, b in zip(off[:-1], off[1:]):
        paths = list(itertools.product(range(L), repeat=b - a))
        scores = []
        for p in paths:
            v = s[p[0]] + U[a, p[0]]
            for t in range(1, b - a):
                v = (v + T[p[t - 1], p[t]]) + U[a + t, p[t]]
            scores.append(v + e[p[-1]])
        scores = np.array(scores)
        log_z.append(logsumexp(scores))
        best.append(scores.max())
        for p, w in zip(paths, np.exp(scores - log_z[-1])):
            marginals[a + np.arange(b - a), list(p)] += w
    return np.array(log_z), marginals, np.array(best)


def outcome(action):
    """('ok', result), ('refused', None) on a ValueError, or ('warned', result) when
    numpy warned (an overflow) on the way."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        try:
            result = action()
        except ValueError:
            return "refused", None
    return ("warned" if caught else "ok"), result


def main():
    print("| M | forward_backward | marginals_vjp | viterbi, n-best, max-marginals |")
    print("|---|---|---|---|")
    for M in MAGNITUDES:
        fb_note, vjp_note, mp_ok = [], [], True
        for seed in range(5):
            U, T, s, e, off = problem(M, seed)
            log_z, marginals, best = enumeration(U, T, s, e, off)
            status, fb = outcome(lambda: inference.forward_backward(U, T, s, e, off))
            if fb is None:
                fb_note.append("refused")
            else:
                fb_note.append(max(np.abs(fb.marginals - marginals).max(),
                                   np.abs(fb.log_z - log_z).max() / np.abs(log_z).max()))
            status, vjp = outcome(lambda: inference.marginals_vjp(U, T, s, e, off,
                                                                  np.ones_like(U)))
            vjp_note.append("refused" if vjp is None else
                            "finite" if all(np.all(np.isfinite(v)) for v in vjp) else
                            "NaN with overflow warnings" if status == "warned" else "NaN")
            _, score = inference.viterbi(U, T, s, e, off)
            _, nbest = inference.viterbi_nbest(U, T, s, e, off, 3)
            mm = inference.max_marginals(U, T, s, e, off)
            mp_ok &= bool(np.all(score == best) and np.all(nbest[:, 0] == best)
                          and np.all(np.isfinite(mm.alpha)) and np.all(np.isfinite(mm.beta)))
        refused = sum(n == "refused" for n in fb_note)
        errors = [n for n in fb_note if n != "refused"]
        fb_text = (f"{refused}/5 refused" if refused else "") + (
            (", " if refused else "") + f"error <= {max(errors):.1g}" if errors else "")
        vjp_text = ", ".join(f"{vjp_note.count(k)}/5 {k}" for k in (
            "finite", "refused", "NaN", "NaN with overflow warnings") if vjp_note.count(k))
        print(f"| {M:g} | {fb_text} | {vjp_text} | "
              f"{'exact (5/5)' if mp_ok else 'WRONG'} |", flush=True)


if __name__ == "__main__":
    main()
