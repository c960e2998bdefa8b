"""Hidden features of a GRBM averaged over kept parameter states (``transform``).

The conditional of Eq. (4), ``p(h_j = 1 | v) = sigmoid(W (v / sigma^2) + b)_j``, is
exact, so no latent draws are needed: the features are these probabilities
averaged over the kept states ``theta_s`` (``n_posterior_samples``; iterates of the
last training passes, see the estimator), and their standard deviation is that of
the binary unit under the mixture,
``sqrt(pbar (1 - pbar))`` with ``pbar = mean_s p_s``, which equals
``sqrt(mean_s p_s (1 - p_s) + var_s p_s)``.
"""

import numpy as np

from .._core.posterior import Moments
from ._model import exact_log_partition, free_energy, hidden_activation, sigmoid

__all__ = ["hidden_moments", "inference_arrays"]

# GRBMParams fields -> the estimator's attribute names (without the trailing _)
_NAMES = {"W": "components", "b": "intercept_hidden", "mu": "mean", "log_var": "log_variance"}
_DIMS = {"components": ["hidden", "visible"], "intercept_hidden": ["hidden"],
         "mean": ["visible"], "log_variance": ["visible"]}


def hidden_moments(V, states, *, return_std=False):
    """Mean (and standard deviation) of ``h | v`` over the parameter ``states``.

    Parameters
    ----------
    V : ndarray of shape (n, N)
        Visible rows, in the dtype of the parameters or float64.
    states : list of GRBMParams
    return_std : bool, default=False

    Returns
    -------
    mean : ndarray of shape (n, M)
        In the wider of ``V``'s and the parameters' dtype; with a single state,
        exactly Eq. (4).
    std : ndarray of shape (n, M), only with ``return_std``
    """
    if len(states) == 1 and not return_std:
        return sigmoid(hidden_activation(V, states[0]))
    acc = Moments()
    for p in states:
        ps = np.asarray(sigmoid(hidden_activation(V, p)), dtype=np.float64)
        acc.add(ps, var=ps * (1.0 - ps))
    dtype = np.result_type(V.dtype, states[0].W.dtype)   # float64 rows: float64 answers
    mean = acc.mean().astype(dtype, copy=False)
    if not return_std:
        return mean
    return mean, acc.std().astype(dtype, copy=False)


def inference_arrays(states, X=None):
    """The kept states for ``to_inference_data`` (:mod:`skdgm._core.interop`).

    Named as the fitted attributes (``components``, ``intercept_hidden``,
    ``mean``, ``log_variance``); with ``X``, the exact ``log p(v)`` of every row,
    ``-F(v) - log Z`` with ``log Z`` summed over the hidden states (``ValueError``
    above 16 hidden units).
    """
    draws = [{_NAMES[f]: np.asarray(getattr(p, f)) for f in _NAMES} for p in states]
    if X is None:
        return draws, dict(_DIMS), None
    loglik = []
    for p in states:
        p64 = p.astype(np.float64)
        loglik.append(-free_energy(X, p64) - exact_log_partition(p64))
    return draws, dict(_DIMS), np.array(loglik)
