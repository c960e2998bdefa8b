"""Missing-value imputation for the GRBM: Rao-Blackwellised Gibbs over the missing entries.

Given ``h`` the visible units are independent Gaussians (Eq. 3),
``v_i | h ~ N(mu_i + (W^T h)_i, sigma_i^2)``, so a Gibbs chain alternates
``h ~ p(h | v)`` (Eq. 4, with the missing entries at their current values) and
``v_miss ~ p(v_miss | h)``. The estimate of ``E[v_miss | v_obs]`` averages the
conditional means ``mu + W^T h`` over the kept sweeps (Rao-Blackwellisation):
the Gaussian noise of each draw never enters it.

The exact answer, for the tests, enumerates ``h``:
``p(h | v_obs) ∝ exp(b^T h + sum_{i obs} v_i (W^T h)_i / sigma_i^2
+ sum_{i miss} ((mu_i + (W^T h)_i)^2 - mu_i^2) / (2 sigma_i^2))`` (the missing
entries integrated out), and ``E[v_miss | v_obs] = sum_h p(h | v_obs) (mu + W^T h)_miss``.
"""

import numpy as np
from scipy.special import logsumexp

from .._core.exact import MAX_EXACT_UNITS, binary_states
from .._core.mcmc import bernoulli
from .._core import posterior
from .._core.posterior import rao_blackwell_chain
from ._model import sigmoid

__all__ = ["exact_conditional_mean", "gibbs_impute", "impute_over_states"]


def gibbs_impute(params, X, missing, rng, *, n_sweeps, n_burn, state=None,
                 rao_blackwell=True):
    """Average of ``E[v_miss | h]`` over a Gibbs chain on ``(h, v_miss)`` given ``v_obs``.

    Parameters
    ----------
    params : GRBMParams
        float64 parameters.
    X : ndarray of shape (n, N)
        The rows, ``NaN`` where missing.
    missing : ndarray of bool, shape (n, N)
    rng : numpy.random.Generator
    n_sweeps, n_burn : int
        Sweeps run; sweeps discarded first.
    state : ndarray of shape (n, N), optional
        Starting visible state (the previous parameter state's chain); default:
        the observed entries and ``mu`` in the missing ones.
    rao_blackwell : bool, default=True
        Average conditional means (``True``) or the draws themselves.

    Returns
    -------
    state : ndarray of shape (n, N)
        The final visible state of the chain.
    estimate : ndarray of shape (n, N)
        The average over the kept sweeps (meaningful in the missing entries only).
    """
    var = params.var
    sd = np.sqrt(var)
    if state is None:
        state = np.where(missing, params.mu, X)

    def step(v):
        h = bernoulli(sigmoid((v / var) @ params.W.T + params.b), rng, dtype=np.float64)
        m = params.mu + h @ params.W                                 # Eq. (3)
        draw = m + sd * rng.standard_normal(v.shape)
        return np.where(missing, draw, v), draw, m

    state, total, n_kept = rao_blackwell_chain(step, state, n_sweeps, n_burn,
                                               rao_blackwell=rao_blackwell)
    return state, total / n_kept


def exact_conditional_mean(params, X, missing):
    """Exact ``E[v_miss | v_obs]`` per row by enumerating the hidden states (``M <= 16``)."""
    M = params.W.shape[0]
    if M > MAX_EXACT_UNITS:
        raise ValueError(f"exact imputation needs n_components <= {MAX_EXACT_UNITS}, got {M}")
    H = binary_states(M)
    WH = H @ params.W                                     # (C, N): (W^T h)^T per state
    var, mu = params.var, params.mu
    out = np.array(X, dtype=np.float64)
    for i in range(X.shape[0]):
        obs = ~missing[i]
        v = np.where(obs, X[i], 0.0)
        logp = (H @ params.b + WH[:, obs] @ (v[obs] / var[obs])
                + 0.5 * np.sum(((mu[~obs] + WH[:, ~obs]) ** 2 - mu[~obs] ** 2) / var[~obs],
                               axis=1))
        w = np.exp(logp - logsumexp(logp))
        out[i, ~obs] = mu[~obs] + w @ WH[:, ~obs]
    return out


def impute_over_states(states, X, missing, rng, *, n_sweeps):
    """``X`` with its missing entries replaced by ``E[v_miss | v_obs]`` averaged over states.

    One :func:`gibbs_impute` chain per row runs ``n_sweeps`` sweeps under each kept
    parameter state (in float64) in turn, continuing from the previous state's
    last sweep, and keeps the second half of each; the estimates are averaged.

    Parameters
    ----------
    states : list of GRBMParams
    X : ndarray of shape (n_samples, n_features)
    missing : ndarray of bool, same shape
    rng : numpy.random.Generator
    n_sweeps : int

    Returns
    -------
    X_filled : ndarray of shape (n_samples, n_features), float64
    """
    def impute_one(params, chain):
        return gibbs_impute(params.astype(np.float64), X, missing, rng,
                            n_sweeps=n_sweeps, n_burn=n_sweeps // 2, state=chain)

    return posterior.impute_over_states(impute_one, states, X, missing)
