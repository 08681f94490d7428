"""The ``verbose`` header of :meth:`CRFTagger.fit <sklearn_crfloss.CRFTagger.fit>`."""

__all__ = ["print_header"]


def print_header(loss, prior, solver, shape, offsets, n_labels, n_params, *, C, init, tol,
                 max_iter):
    """Print what is trained, how, and on how much data (``verbose >= 1``).

    ``shape``: ``(n_tokens, n_attributes)`` of the training features;
    ``C``, ``init``, ``tol`` and ``max_iter`` are the estimator's parameters.
    """
    def name(obj):
        return repr(getattr(obj, "name", None) or type(obj).__name__)

    print(f"CRFTagger: loss={name(loss)}, prior={name(prior)}, C={float(C):g}, "
          f"solver={name(solver)}, init={init!r}, tol={tol:g}, "
          f"max_iter={max_iter or solver.default_max_iter} per stage", flush=True)
    print(f"data: {offsets.shape[0] - 1} sequences, {shape[0]} tokens, "
          f"{shape[1]} attributes, {n_labels} labels, {n_params} parameters", flush=True)
