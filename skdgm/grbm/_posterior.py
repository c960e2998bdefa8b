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
from ._model import hidden_activation, sigmoid

__all__ = ["hidden_moments"]


def hidden_moments(V, states, *, return_std=False):
    """Mean (and standard deviation) of ``h | v`` over the parameter ``states``.

    Parameters
    ----------
    V : ndarray of shape (n, N)
        Visible rows, in the dtype of the parameters.
    states : list of GRBMParams
    return_std : bool, default=False

    Returns
    -------
    mean : ndarray of shape (n, M)
        In the dtype of the parameters; with a single state, exactly Eq. (4).
    std : ndarray of shape (n, M), only with ``return_std``
    """
    if len(states) == 1 and not return_std:
        return sigmoid(hidden_activation(V, states[0]))
    acc = Moments()
    for p in states:
        ps = np.asarray(sigmoid(hidden_activation(V, p)), dtype=np.float64)
        acc.add(ps, var=ps * (1.0 - ps))
    dtype = states[0].W.dtype
    mean = acc.mean().astype(dtype, copy=False)
    if not return_std:
        return mean
    return mean, acc.std().astype(dtype, copy=False)
