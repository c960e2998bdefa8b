"""DBM features averaged over kept parameter states (``transform``).

The features are the mean-field means ``mu_l = q(h^l = 1 | v)`` of every hidden
layer (Sec. 2.1), computed under each kept state ``theta_s`` and averaged. The
standard deviation is that of the binary unit under the mixture of the
factorised ``q_s``: ``sqrt(mubar (1 - mubar))`` with ``mubar = mean_s mu_s``, i.e.
``sqrt(mean_s mu_s (1 - mu_s) + var_s mu_s)``. It is the spread of the mean-field
approximation, not of the exact posterior ``p(h | v)``: mean-field is exact only
in the marginal means it reaches, and those are a fixed point of Eq. 3, not the
true marginals.
"""

import numpy as np

from .._core.posterior import Moments

__all__ = ["hidden_moments"]


def hidden_moments(V, states, mean_field, *, return_std=False):
    """Mean (and standard deviation) of the mean-field hidden means over ``states``.

    Parameters
    ----------
    V : ndarray of shape (n, D)
    states : list of (coefs, intercepts)
    mean_field : callable
        ``mean_field(V, coefs, intercepts) -> (hidden, bound, converged)`` with
        ``hidden`` the hidden layers' means side by side.
    return_std : bool, default=False

    Returns
    -------
    mean : ndarray of shape (n, sum of hidden sizes)
    bound : ndarray of shape (n,)
        The last state's bound (the current model's when it is the only state).
    converged : ndarray of bool, shape (n,)
        Whether the row converged under every state.
    std : ndarray, only with ``return_std``
    """
    if len(states) == 1 and not return_std:
        return mean_field(V, *states[0])
    acc = Moments()
    converged = np.ones(V.shape[0], dtype=bool)
    bound = None
    for coefs, intercepts in states:
        mu, bound, conv = mean_field(V, coefs, intercepts)
        converged &= conv
        acc.add(mu, var=mu * (1.0 - mu))
    if return_std:
        return acc.mean(), bound, converged, acc.std()
    return acc.mean(), bound, converged
