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

import warnings
from functools import partial

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._core.base import map_row_chunks
from .._core.interop import network_draws
from .._core.posterior import Moments
from ._model import exact_log_prob, mean_field

__all__ = ["hidden_moments", "inference_arrays", "mean_field_features",
           "mean_field_inference"]


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


def _mean_field_summary(V, coefs, intercepts, *, n_iter, tol, starts):
    info = mean_field(V, coefs, intercepts, n_iter, tol, starts=starts, return_info=True)
    return np.hstack(info.mus[1:]), info.bound, info.converged


def mean_field_features(X, states, *, n_iter, tol, starts, batch_size, return_std=False):
    """:func:`hidden_moments` with the mean-field of :func:`._model.mean_field`, by chunks.

    Each row's fixed point is the best (highest bound) among ``starts``, after up to
    ``n_iter`` sweeps; a CSR ``X`` is densified ``batch_size`` rows at a time.
    Returns ``(hidden, bound, converged)`` and, with ``return_std``, the standard
    deviation last.
    """
    mf = partial(_mean_field_summary, n_iter=n_iter, tol=tol, starts=starts)
    return map_row_chunks(lambda V: hidden_moments(V, states, mf, return_std=return_std),
                          X, batch_size)


def mean_field_inference(X, states, *, n_iter, tol, starts, batch_size, return_std=False,
                         stacklevel=2):
    """:func:`mean_field_features` that warns about rows short of a fixed point.

    Returns the hidden means (all layers side by side) and the bound of Eq. 3 of
    every row (then their standard deviation with ``return_std``), averaged over
    ``states``.

    Warns
    -----
    ConvergenceWarning
        Naming how many rows still moved by more than ``tol`` after ``n_iter``
        sweeps (their bound and means are not at a fixed point).
    """
    out = mean_field_features(X, states, n_iter=n_iter, tol=tol, starts=starts,
                              batch_size=batch_size, return_std=return_std)
    hidden, bound, converged = out[:3]
    n_bad = int(np.count_nonzero(~converged))
    if n_bad:
        warnings.warn(
            f"mean-field did not converge for {n_bad} of {X.shape[0]} rows within "
            f"n_mean_field_eval={n_iter} sweeps (a mean still moved "
            f"by more than mean_field_tol={tol:g}); their bound and "
            f"means are not at a fixed point. Increase n_mean_field_eval.",
            ConvergenceWarning, stacklevel=stacklevel + 1)
    return (hidden, bound) + ((out[3],) if return_std else ())


def inference_arrays(states, X=None):
    """The kept states for ``to_inference_data`` (:mod:`skdgm._core.interop`).

    ``weights_l`` and ``biases_l`` per state; with ``X``, the exact ``log p(v)``
    of every row under each state (the odd layers enumerated, the even ones
    summed out: ``ValueError`` above 22 odd-layer units).
    """
    draws, dims = network_draws(states)
    if X is None:
        return draws, dims, None
    return draws, dims, np.array([exact_log_prob(X, c, b) for c, b in states])
