"""Priors (regularisers) on the CRF parameters.

A prior is an object with ``value_and_grad(theta, C) -> (value, grad)``
where ``theta`` is the flat vector of every parameter the optimiser sees:
state weights, transitions, start and end potentials, in that order (see
:class:`~sklearn_crfloss.CRFTagger`). ``C`` is the estimator's single
strength knob: larger ``C``, weaker prior, as in scikit-learn's
``LogisticRegression`` and CRF++ ``-c``.

All parameters, transitions and start/end potentials included, are
penalised, as CRFsuite and CRF++ do: the transitions of a chunking model are
few (L^2) but unpenalised they can grow large on rare label pairs, and
penalising them keeps ``C`` comparable with those tools (CRFsuite's
``c2 = 1 / (2 C)``).

Register a new prior in :data:`PRIORS`.
"""

import numpy as np
from sklearn.base import BaseEstimator

__all__ = ["PRIORS", "BasePrior", "GaussianPrior", "NoPrior", "get_prior"]


class BasePrior(BaseEstimator):
    """Base class of priors; see the module docstring for the contract."""

    name = None

    def value_and_grad(self, theta, C):
        """Penalty (negative log prior up to a constant) and its gradient.

        Parameters
        ----------
        theta : ndarray of float64 of shape (n_params,)
            All parameters.
        C : float
            Inverse strength, ``C > 0``.

        Returns
        -------
        value : float
        grad : ndarray of shape (n_params,)
        """
        raise NotImplementedError


class GaussianPrior(BasePrior):
    """Gaussian prior (``prior='l2'``): penalty ``||theta - mean||^2 / (2 C)``.

    The negative log density of independent normal priors of variance
    ``C`` on every parameter, up to a constant (Smith & Osborne 2005,
    section 3.1). With ``C = 1`` it equals CRFsuite's L2 term with
    ``c2 = 0.5``.

    Parameters
    ----------
    mean : float or ndarray of shape (n_params,), default=0.0
        Prior mean ``mu``.

    References
    ----------
    S. F. Chen, R. Rosenfeld (1999). A Gaussian prior for smoothing maximum
    entropy models. CMU-CS-99-108.
    A. Smith, M. Osborne (2005). Regularisation techniques for conditional
    random fields: parameterised versus parameter-free. IJCNLP, section 3.1.
    """

    name = "l2"

    def __init__(self, mean=0.0):
        self.mean = mean

    def value_and_grad(self, theta, C):
        # Docstring inherited.
        diff = theta - self.mean if np.any(self.mean) else theta
        grad = diff / C
        return float(np.dot(diff, diff)) / (2.0 * C), grad


class NoPrior(BasePrior):
    """No prior (``prior='none'``): maximum-likelihood training.

    The penalty is 0 and ``C`` is ignored. Without a prior the weights of
    separable features grow until the optimiser's tolerance stops them.
    """

    name = "none"

    def value_and_grad(self, theta, C):
        # Docstring inherited.
        return 0.0, np.zeros_like(theta)


#: Registry of prior names accepted by ``CRFTagger(prior=...)``.
PRIORS = {
    "l2": GaussianPrior,
    "none": NoPrior,
}


def get_prior(prior):
    """Resolve a prior name or object into a prior object.

    Parameters
    ----------
    prior : str or object with ``value_and_grad``
        A name in :data:`PRIORS`, or a prior instance (returned as is).

    Returns
    -------
    BasePrior or object

    Raises
    ------
    ValueError
        If ``prior`` is an unknown name.
    TypeError
        If ``prior`` is neither a string nor has a ``value_and_grad`` method.
    """
    if isinstance(prior, str):
        try:
            return PRIORS[prior]()
        except KeyError:
            raise ValueError(
                f"Unknown prior {prior!r}; choose one of {sorted(PRIORS)} or pass an object "
                "with a value_and_grad method."
            ) from None
    if not hasattr(prior, "value_and_grad"):
        raise TypeError(f"prior must be a string or have a value_and_grad method, got {prior!r}")
    return prior
