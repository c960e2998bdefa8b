"""Missing-value imputation for the DBM: Rao-Blackwellised blocked Gibbs.

Given the odd layers, the units of the even layers are independent, and the
visible ones are ``p(v_i = 1 | h^1) = sigmoid(b_0 + W_0 h^1)_i`` (Eq. 1's
conditionals). The chain alternates the odd layers given the even ones (the
missing visible entries at their current values) and the even layers given the
odd ones, redrawing only the missing visible entries; the estimate of
``E[v_miss | v_obs]`` averages ``sigmoid(b_0 + W_0 h^1)`` over the kept sweeps
(Rao-Blackwellisation) instead of the 0/1 draws.

The exact answer, for the tests, enumerates the odd layers: with ``v_obs``
clamped and the missing visible units and the even hidden layers summed out,
``log p(odd | v_obs) = const + sum_{odd l} b_l^T x_l + v_obs^T a_obs
+ sum_miss softplus(a_miss) + sum_{even l > 0} sum softplus(input_l)``,
``a = b_0 + W_0 h^1``; then ``E[v_miss | v_obs] = sum p(odd | v_obs) sigmoid(a_miss)``.
"""

import numpy as np
from scipy.special import expit, logsumexp

from .._core.mcmc import bernoulli
from .._core.numerics import softplus
from .._core import posterior
from .._core.posterior import rao_blackwell_chain
from . import _model

__all__ = ["exact_conditional_mean", "gibbs_impute", "impute_over_states"]


def gibbs_impute(coefs, intercepts, X, missing, rng, *, n_sweeps, n_burn, state=None,
                 rao_blackwell=True):
    """Average of ``E[v_miss | h^1]`` over a blocked Gibbs chain given ``v_obs``.

    Parameters
    ----------
    coefs, intercepts : list of ndarray
    X : ndarray of shape (n, D)
        0/1 rows, ``NaN`` where missing.
    missing : ndarray of bool, shape (n, D)
    rng : numpy.random.Generator
    n_sweeps, n_burn : int
    state : list of ndarray, optional
        Starting layers ``[v, h^1, ...]`` (the previous parameter state's chain);
        default: the missing entries at ``sigmoid(b_0)`` draws and the hidden
        layers drawn from a doubled-weights bottom-up pass.
    rao_blackwell : bool, default=True
        Average conditional probabilities (``True``) or the 0/1 draws.

    Returns
    -------
    state : list of ndarray
    estimate : ndarray of shape (n, D)
        Meaningful in the missing entries only.
    """
    n_layers = len(intercepts)
    odd = _model.odd_layers(n_layers)
    even_hidden = [l for l in _model.even_layers(n_layers) if l > 0]
    obs = np.where(missing, 0.0, X)
    if state is None:
        p0 = np.broadcast_to(expit(intercepts[0]), X.shape)
        v = np.where(missing, bernoulli(p0, rng, dtype=np.float64), obs)
        mus = _model.mean_field_init(v, coefs, intercepts)
        state = [v] + [bernoulli(m, rng, dtype=np.float64) for m in mus[1:]]

    def step(layers):
        layers = list(layers)
        _model.sample_layers(odd, layers, coefs, intercepts, rng)
        p = expit(_model.layer_input(0, layers, coefs, intercepts))
        draw = bernoulli(p, rng, dtype=np.float64)
        layers[0] = np.where(missing, draw, obs)
        _model.sample_layers(even_hidden, layers, coefs, intercepts, rng)
        return layers, draw, p

    state, total, n_kept = rao_blackwell_chain(step, state, n_sweeps, n_burn,
                                               rao_blackwell=rao_blackwell)
    return state, total / n_kept


def exact_conditional_mean(coefs, intercepts, X, missing):
    """Exact ``E[v_miss | v_obs]`` per row by enumerating the odd layers (small models)."""
    _model._check_enumerable(intercepts)
    n_layers = len(intercepts)
    odd = _model.odd_layers(n_layers)
    sizes = [intercepts[l].shape[0] for l in odd]
    out = np.array(X, dtype=np.float64)
    for i in range(X.shape[0]):
        m = missing[i]
        v = np.where(m, 0.0, X[i])
        parts, sig_parts = [], []
        for cfg in _model._enumerate(sizes):
            layers = [None] * n_layers
            for l, x in zip(odd, cfg):
                layers[l] = x
            logf = sum(layers[l] @ intercepts[l] for l in odd)
            a = intercepts[0] + layers[1] @ coefs[0].T
            logf = logf + a[:, ~m] @ v[~m] + softplus(a[:, m]).sum(axis=1)
            for l in _model.even_layers(n_layers):
                if l == 0:
                    continue
                inp = intercepts[l] + layers[l - 1] @ coefs[l - 1]
                if l + 1 < n_layers:
                    inp = inp + layers[l + 1] @ coefs[l].T
                logf = logf + softplus(inp).sum(axis=1)
            parts.append(logf)
            sig_parts.append(expit(a[:, m]))
        logf = np.concatenate(parts)
        w = np.exp(logf - logsumexp(logf))
        out[i, m] = w @ np.concatenate(sig_parts)
    return out


def impute_over_states(states, X, missing, rng, *, n_sweeps):
    """``X`` with its missing entries replaced by ``E[v_miss | v_obs]`` averaged over states.

    One :func:`gibbs_impute` chain per row runs ``n_sweeps`` sweeps under each kept
    parameter state in turn, continuing from the previous state's last sweep, and
    keeps the second half of each; the estimates are averaged over the states.

    Parameters
    ----------
    states : list of (coefs, intercepts)
    X : ndarray of shape (n_samples, n_features)
        0/1 where observed.
    missing : ndarray of bool, same shape
    rng : numpy.random.Generator
    n_sweeps : int

    Returns
    -------
    X_filled : ndarray of shape (n_samples, n_features), float64
    """
    def impute_one(params, chain):
        return gibbs_impute(*params, X, missing, rng, n_sweeps=n_sweeps,
                            n_burn=n_sweeps // 2, state=chain)

    return posterior.impute_over_states(impute_one, states, X, missing)
