"""Online trainers: structured perceptron, 1-best MIRA and stochastic (sub)gradient descent.

These visit one sequence at a time in an order shuffled every epoch with the
estimator's ``random_state``. A step touches only the weight rows of the
attributes present in the sequence, so an epoch costs about one pass over the
data. The parameters are dense: ``W`` (n_features, n_labels), transitions,
start and end potentials.

- ``rule='perceptron'``: Collins (2002): if the Viterbi path differs from the
  gold one, add the gold features and subtract the predicted ones.
- ``rule='mira'``: 1-best MIRA with cost-augmented inference (Crammer et al.
  2006, the PA-I update): predict ``argmax score + cost``, then take the
  smallest step that makes the gold path win by the cost, clipped at ``C``:
  ``tau = min(C, (score(pred) + cost - score(gold)) / ||df||^2)``.
- ``rule='sgd'``: stochastic (sub)gradient descent on
  ``loss_i + ||theta||^2 / (2 C n)`` for any loss that is a sum over
  sequences (its ``value_and_grad`` on one sequence gives the step; for
  ``max_margin`` that is a subgradient). Step size
  ``eta_t = 1 / (lambda (t0 + t))`` with ``lambda = 1 / (C n)`` and ``t0``
  such that ``eta_0 = eta0`` (the schedule of Bottou's crfsgd and
  scikit-learn's ``learning_rate='optimal'``). The L2 shrinkage uses the
  scaled representation ``theta = a * V`` so a step stays sparse.

Averaging (``average=True``): the returned parameters are the mean of the
parameters after every example. Perceptron and MIRA keep it with the
``W - U / c`` trick (Daume III 2006); SGD, whose shrinkage rescales every
weight at every step, with the same idea on the scaled representation:
``sum_t a_t V_t = S V - B`` with ``S = sum_t a_t`` and ``B`` the sum of the
sparse steps ``D_t`` times ``S`` before them (Polyak-Ruppert averaging, as
in Bottou's ASGD), also at no extra cost per step beyond the touched rows.
"""

import time

import numpy as np
import scipy.sparse as sp

from .inference import sequence_scores, viterbi

__all__ = ["online_fit"]


def _transition_counts(path, n_labels):
    counts = np.zeros((n_labels, n_labels))
    np.add.at(counts, (path[:-1], path[1:]), 1.0)
    return counts


def online_fit(X, y, offsets, n_labels, *, rule, loss=None, cost_matrix=None, C=1.0,
               max_iter=10, average=True, eta0=0.1, random_state=None, init=None,
               sample_weight=None, verbose=0, callback=None):
    """Train with an online rule; see the module docstring.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix of shape (n_tokens, n_features)
    y : ndarray of intp of shape (n_tokens,)
    offsets : ndarray of intp of shape (n_sequences + 1,)
    n_labels : int
    rule : {'perceptron', 'mira', 'sgd'}
    loss : loss object or None
        The loss stepped on by ``'sgd'``.
    cost_matrix : ndarray of shape (n_labels, n_labels) or None
        Cost ``c[gold, predicted]`` for MIRA's cost-augmented inference
        (Hamming when None).
    C : float or None, default=1.0
        MIRA's step clip; the Gaussian prior's strength for ``'sgd'`` (None:
        no prior, step ``eta0 / sqrt(1 + t / n_sequences)``).
    max_iter : int, default=10
        Epochs.
    average : bool, default=True
        Return the parameters averaged over all steps.
    eta0 : float, default=0.1
        First step size of ``'sgd'``.
    random_state : numpy.random.Generator
        Source of the shuffles.
    init : tuple (W, T, start, end) or None
        Starting parameters (zeros when None).
    sample_weight : ndarray of shape (n_sequences,) or None
        Scales each sequence's step.
    verbose : int
    callback : callable or None
        ``callback(epoch, value)`` after every epoch, with the epoch's number
        of mistakes (perceptron, MIRA) or summed loss (sgd).

    Returns
    -------
    (W, T, start, end) : the trained parameters
    curve : list of float
        Mistakes or summed loss per epoch.
    """
    X = sp.csr_matrix(X)
    n_seq = offsets.shape[0] - 1
    F = X.shape[1]
    L = n_labels
    if init is None:
        params = [np.zeros((F, L)), np.zeros((L, L)), np.zeros(L), np.zeros(L)]
    else:
        params = [np.array(p, dtype=np.float64) for p in init]
    sums = [np.zeros_like(p) for p in params] if (average and rule != "sgd") else None
    # sgd averaging (theta_t = scale_t * V_t, V changed sparsely by D_t):
    # sum_t theta_t = S V - B with S = sum_t scale_t and B = sum_t D_t S_{t-1}
    # (S_{t-1}: the sum before step t); A0 keeps the sum across scale folds.
    sgd_avg = average and rule == "sgd"
    if sgd_avg:
        B = [np.zeros_like(p) for p in params]
        A0 = [np.zeros_like(p) for p in params]
        S = 0.0
        n_steps = 0
    if cost_matrix is None:
        cost_matrix = 1.0 - np.eye(L)
    weights = np.ones(n_seq) if sample_weight is None else sample_weight
    # sgd: C=None means no prior (then eta_t = eta0 / sqrt(1 + t / n)).
    lam = 0.0 if C is None else 1.0 / (C * n_seq)
    t0 = 1.0 / (lam * eta0) if lam > 0 else 0.0
    scale = 1.0  # theta = scale * params (sgd only)
    step_count = 1  # examples seen + 1 (averaging)
    t = 0
    curve = []
    start_time = time.perf_counter()
    for epoch in range(max_iter):
        value = 0.0
        for i in random_state.permutation(n_seq):
            a, b = offsets[i], offsets[i + 1]
            Xi = X[a:b]
            cols, local = np.unique(Xi.indices, return_inverse=True)
            Xs = sp.csr_matrix((Xi.data, local, Xi.indptr - Xi.indptr[0]),
                               shape=(b - a, cols.shape[0]))
            W, T, s, e = params
            unary = scale * (Xs @ W[cols])
            Ts, ss, es = scale * T, scale * s, scale * e
            gold = y[a:b]
            one = np.array([0, b - a])
            if rule == "sgd":
                eta = (1.0 / (lam * (t0 + t)) if lam > 0
                       else eta0 / np.sqrt(1.0 + t / n_seq))
                t += 1
                v, dU, dT, ds, de = loss.value_and_grad(
                    np.ascontiguousarray(unary), Ts, ss, es, gold, one)
                value += weights[i] * v
                scale *= 1.0 - eta * lam
                if scale < 1e-9:  # fold the scale back into the parameters
                    if sgd_avg:
                        for a0, bb, p in zip(A0, B, params):
                            a0 += S * p - bb
                            bb[...] = 0.0
                        S = 0.0
                    for p in params:
                        p *= scale
                    scale = 1.0
                step = -eta * weights[i] / scale
                dW = step * (Xs.T @ dU)
                W[cols] += dW
                T += step * dT
                s += step * ds
                e += step * de
                if sgd_avg:
                    B[0][cols] += S * dW
                    B[1] += (S * step) * dT
                    B[2] += (S * step) * ds
                    B[3] += (S * step) * de
                    S += scale
                    n_steps += 1
                continue
            aug = unary + cost_matrix[gold] if rule == "mira" else unary
            path, _ = viterbi(aug, Ts, ss, es, one)
            if np.array_equal(path, gold):
                step_count += 1
                continue
            value += 1.0
            D = np.zeros((b - a, L))
            D[np.arange(b - a), gold] += 1.0
            D[np.arange(b - a), path] -= 1.0
            G = Xs.T @ D
            dT = _transition_counts(gold, L) - _transition_counts(path, L)
            ds = np.zeros(L)
            ds[gold[0]] += 1.0
            ds[path[0]] -= 1.0
            de = np.zeros(L)
            de[gold[-1]] += 1.0
            de[path[-1]] -= 1.0
            if rule == "perceptron":
                tau = 1.0
            else:  # MIRA, PA-I
                scores = sequence_scores(np.vstack([unary, unary]), Ts, ss, es,
                                         np.concatenate([gold, path]),
                                         np.array([0, b - a, 2 * (b - a)]))
                margin = scores[1] + cost_matrix[gold, path].sum() - scores[0]
                norm = float((G * G).sum() + (dT * dT).sum() + ds @ ds + de @ de)
                if margin <= 0 or norm == 0:
                    step_count += 1
                    continue
                tau = min(C, margin / norm)
            tau *= weights[i]
            W[cols] += tau * G
            T += tau * dT
            s += tau * ds
            e += tau * de
            if sums is not None:
                sums[0][cols] += step_count * tau * G
                sums[1] += step_count * tau * dT
                sums[2] += step_count * tau * ds
                sums[3] += step_count * tau * de
            step_count += 1
        curve.append(value)
        if verbose:
            label = "loss" if rule == "sgd" else "mistakes"
            print(f"epoch {epoch + 1:4d}  {label} {value:.6g}  "
                  f"{time.perf_counter() - start_time:8.2f} s", flush=True)
        if callback is not None:
            callback(epoch + 1, value)
    if rule == "sgd":
        if sgd_avg and n_steps:
            return [(a0 + S * p - bb) / n_steps for a0, p, bb in zip(A0, params, B)], curve
        return [scale * p for p in params], curve
    if sums is not None:
        return [p - q / step_count for p, q in zip(params, sums)], curve
    return params, curve
