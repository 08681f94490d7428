"""The loss, prior and solver an estimator trains with, resolved and checked together.

:class:`~sklearn_crfloss.CRFTagger` and
:class:`~sklearn_crfloss.dask.DaskCRFTagger` resolve their ``loss``,
``prior`` and ``solver`` parameters here, at the start of ``fit``, and read
what they need from a loss through its declared record
(:func:`~sklearn_crfloss.losses.get_loss_tags`).
"""

from ..losses import get_loss, get_loss_tags
from ..priors import get_prior
from ..solvers import default_solver, get_solver_tags, make_solver

__all__ = ["check_token_weight_use", "resolve_components"]


def resolve_components(loss, prior, solver, *, average, eta0, random_state, init, warm):
    """The resolved loss, prior and solver of an estimator's parameters.

    Parameters
    ----------
    loss, prior, solver
        The estimator's ``loss``, ``prior`` and ``solver`` parameters
        (names, objects, or None for the loss's default solver).
    average, eta0, random_state
        The estimator's parameters of those names, for a named solver.
    init : {'auto', 'cll'} or None
        The estimator's ``init``.
    warm : bool
        Whether training continues a previous fit (``warm_start=True`` on
        a fitted estimator).

    Returns
    -------
    loss, prior, solver
        Fresh objects (the caller's are never changed by training).

    Raises
    ------
    ValueError
        On an unknown name, a hyperparameter out of range, an invalid
        schedule of loss stages, or a solver that refuses the loss or prior.
    TypeError
        If a component is neither a name nor an object of the contract.
    """
    spec = solver
    loss = get_loss(loss)
    prior = get_prior(prior)
    tags = get_loss_tags(loss)  # a schedule's values are checked here, before any training
    spec = default_solver(loss, prior) if spec is None else spec
    solver = make_solver(spec, average=average, eta0=eta0, random_state=random_state)
    from_zero = not (warm or starts_from_cll(init, tags, warm))
    if get_solver_tags(solver).for_start:  # a schedule's warm-up runs from zero only
        solver = solver.for_start(from_zero=from_zero)
    if tags.for_start:  # MCE-F's beta='auto'
        loss = loss.for_start(from_zero=from_zero)
    solver.check(loss, prior)
    return loss, prior, solver


def starts_from_cll(init, tags, warm):
    """Whether training runs a CLL stage first (``init='cll'``, or ``'auto'``).

    Parameters
    ----------
    init : {'auto', 'cll'} or None
        The estimator's ``init``.
    tags : LossTags
        The loss's tags (:func:`~sklearn_crfloss.losses.get_loss_tags`).
    warm : bool
        Whether training continues a previous fit (``warm_start=True``).

    Returns
    -------
    bool
        True for ``init='cll'`` with any loss but CLL, and for
        ``init='auto'`` with a loss trained from a fit (``needs_init``:
        MCE, MCE-F, the marginal losses, risk, Jensen risk bound) unless training
        warm-starts: Suzuki et al. (2006) start MCE and MCE-F from the MAP
        model (their Table 2), which scored higher than a start from zero.
    """
    if init is None or (tags.name or "") == "cll":
        return False
    return init == "cll" or (tags.needs_init and not warm)


def check_token_weight_use(loss, solver):
    """Raise unless ``loss`` and ``solver`` can train with per-token weights.

    Parameters
    ----------
    loss : loss object
    solver : solver object

    Raises
    ------
    ValueError
        If the loss does not declare ``supports_token_weight``, or the
        solver is an online one.
    """
    tags = get_loss_tags(loss)
    if not tags.supports_token_weight:
        raise ValueError(f"token_weight is not supported by loss {tags.name or loss!r}; "
                         "use 'pointwise', 'mixed' or 'labelwise'.")
    if solver.dense_states:
        raise ValueError(f"token_weight needs a batch solver such as 'lbfgs', "
                         f"not {solver.name!r}.")
