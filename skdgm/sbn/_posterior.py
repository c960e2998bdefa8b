"""SBN features averaged over the kept posterior samples (``transform``).

The feature of a row is ``E[h^(1) | x]`` averaged over the kept parameter samples
``theta_s`` (Gibbs: thinned posterior samples; VB: draws from ``q``): exactly, by
enumerating the hidden layers, when they hold at most ``MAX_EXACT_UNITS`` units,
else as the mean of the binary draws of a Pólya-Gamma Gibbs chain on ``h | x``
under each sample. Its standard deviation is that of the binary unit under the
mixture over samples (and, on the chain path, over the draws):
``sqrt(pbar (1 - pbar))`` with ``pbar`` the returned mean, i.e.
``sqrt(mean_s p_s (1 - p_s) + var_s p_s)``. For a binary unit the mixture's
spread is a function of its mean.
"""

import numpy as np

from .._core.exact import MAX_EXACT_UNITS
from .._core.interop import network_draws
from .._core.posterior import bernoulli_std
from . import _gibbs, _model

__all__ = ["hidden_moments", "inference_arrays"]


def hidden_moments(samples, X, rngs, *, n_burn, n_keep, return_std=False):
    """Mean (and standard deviation) of ``h^(1) | x`` over the parameter ``samples``.

    Parameters
    ----------
    samples : list of SBNParams
    X : ndarray of shape (n, D)
    rngs : list of numpy.random.Generator
        One per sample (used on the chain path only).
    n_burn, n_keep : int
        Chain path: sweeps discarded, then sweeps whose draws are averaged.
    return_std : bool, default=False

    Returns
    -------
    mean : ndarray of shape (n, K_1)
    std : ndarray of shape (n, K_1), only with ``return_std``
    """
    n_hidden = sum(len(b) for b in samples[0].biases[1:])
    if n_hidden <= MAX_EXACT_UNITS:
        mean = np.mean([_model.posterior_mean_exact(p, X) for p in samples], axis=0)
    else:
        mean = np.zeros((len(X), len(samples[0].biases[1])))
        for p, rng in zip(samples, rngs):
            hidden = _model.sample_hidden_prior(p, (len(X),), rng)
            for t in range(n_burn + n_keep):
                # the augmented sweep (Cython) leaves p(h | x) invariant, like the exact one
                hidden = _gibbs.pg_hidden_sweeps(p, X, hidden, rng)
                if t >= n_burn:
                    mean += hidden[0]
        mean /= n_keep * len(samples)
    if return_std:
        return mean, bernoulli_std(mean)
    return mean


def inference_arrays(states, X=None):
    """The kept samples for ``to_inference_data`` (:mod:`skdgm._core.interop`).

    ``weights_l``, ``biases_l`` (and ``lateral_l``) per sample; with ``X``, the
    exact ``log p(x | theta_s)`` of every row, by enumerating the hidden units
    (at most ``MAX_EXACT_UNITS``; a ``ValueError`` above).
    """
    draws, dims = network_draws(states)
    if X is None:
        return draws, dims, None
    n_hidden = sum(len(b) for b in states[0].biases[1:])
    if n_hidden > MAX_EXACT_UNITS:
        raise ValueError(
            f"an exact log p(x | state) enumerates the hidden units: at most "
            f"{MAX_EXACT_UNITS}, this model has {n_hidden}; call to_inference_data with "
            f"log_likelihood=False (score_samples estimates it by AIS)")
    return draws, dims, np.array([_model.log_marginal_exact(p, X) for p in states])
