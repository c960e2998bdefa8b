"""Missing-value imputation for the SBN: Rao-Blackwellised Gibbs over hidden units and gaps.

The chain alternates one exact sequential Gibbs sweep over the hidden units
(:func:`skdgm.sbn._model.gibbs_sweep`, the visible layer with its current fill)
and a redraw of the missing visible entries from their full conditionals
(Eq. 8; with autoregression, Eq. 6, column by column). The estimate of
``E[x_miss | x_obs]`` averages those full conditional probabilities over the
kept sweeps (Rao-Blackwellisation, Gelfand and Smith 1990), not the 0/1 draws.

The exact answer, for the tests, enumerates the missing entries and the hidden
layers (:func:`exact_conditional_mean`).
"""

import numpy as np
from scipy.special import expit, logsumexp

from .._core.exact import binary_states
from .._core.mcmc import bernoulli
from .._core.numerics import softplus
from .._core import posterior
from .._core.posterior import rao_blackwell_chain
from . import _model

__all__ = ["exact_conditional_mean", "gibbs_impute", "impute_over_samples",
           "visible_missing_conditional"]

#: Missing entries per row up to which :func:`exact_conditional_mean` enumerates.
MAX_EXACT_MISSING = 12


def visible_missing_conditional(params, layers, missing, rng):
    """Redraw the missing visible entries; also return their full conditional probabilities.

    The same draws, from the same stream, as
    :func:`skdgm.sbn._model.sample_visible_missing`; the probabilities are those
    each entry was drawn with, ``p(x_j = 1 | h^(1), x_{-j})``.

    Returns
    -------
    v : ndarray of shape (n, D)
    prob : ndarray of shape (n, D)
        Meaningful in the missing entries.
    """
    v = np.array(layers[0], dtype=float)
    a = _model.activation(params, [v] + list(layers[1:]), 0)
    if params.lateral is None:
        prob = expit(a)
        draw = bernoulli(prob, rng, size=v.shape, dtype=float)
        return np.where(missing, draw, v), prob
    prob = np.zeros(v.shape)
    S = params.lateral[0]
    for j in np.flatnonzero(missing.any(axis=0)):
        s = S[j + 1:, j]
        a_rest = a[:, j + 1:] - v[:, j:j + 1] * s
        # unit j also enters the likelihood of the later visible units it feeds (Eq. 6)
        d = np.sum(v[:, j + 1:] * s - softplus(a_rest + s) + softplus(a_rest), axis=1)
        prob[:, j] = expit(a[:, j] + d)
        new = bernoulli(prob[:, j], rng, size=len(v), dtype=float)
        new = np.where(missing[:, j], new, v[:, j])
        a[:, j + 1:] = a_rest + new[:, None] * s
        v[:, j] = new
    return v, prob


def gibbs_impute(params, X, missing, rng, *, n_sweeps, n_burn, state=None,
                 rao_blackwell=True):
    """Average of the missing entries' full conditionals over a Gibbs chain given ``x_obs``.

    Parameters
    ----------
    params : SBNParams
    X : ndarray of shape (n, D)
        0/1 rows, ``NaN`` where missing.
    missing : ndarray of bool, shape (n, D)
    rng : numpy.random.Generator
    n_sweeps, n_burn : int
    state : ndarray of shape (n, D), optional
        Starting visible fill (the previous posterior sample's chain); default:
        ``Bernoulli(1/2)`` draws in the missing entries. The hidden layers start
        from a prior draw under ``params`` (hidden units can swap roles between
        posterior samples, so they are not carried over).
    rao_blackwell : bool, default=True
        Average conditional probabilities (``True``) or the 0/1 draws.

    Returns
    -------
    state : ndarray of shape (n, D)
        The final visible fill.
    estimate : ndarray of shape (n, D)
        Meaningful in the missing entries only.
    """
    if state is None:
        state = np.where(missing, bernoulli(0.5, rng, size=X.shape), X).astype(float)
    layers = [state] + _model.sample_hidden_prior(params, (len(X),), rng)

    def step(layers):
        layers = _model.gibbs_sweep(params, layers, rng)
        v, prob = visible_missing_conditional(params, layers, missing, rng)
        layers[0] = v
        return layers, v, prob

    layers, total, n_kept = rao_blackwell_chain(step, layers, n_sweeps, n_burn,
                                                rao_blackwell=rao_blackwell)
    return layers[0], total / n_kept


def exact_conditional_mean(params, X, missing):
    """Exact ``E[x_miss | x_obs]`` per row, enumerating the missing entries and the hidden units."""
    out = np.array(X, dtype=np.float64)
    for i in range(X.shape[0]):
        m = missing[i]
        k = int(m.sum())
        if k == 0:
            continue
        if k > MAX_EXACT_MISSING:
            raise ValueError(f"row {i} has {k} missing entries; exact imputation "
                             f"enumerates at most {MAX_EXACT_MISSING}")
        fills = binary_states(k)
        rows = np.tile(np.where(m, 0.0, X[i]), (len(fills), 1))
        rows[:, m] = fills
        lp = _model.log_marginal_exact(params, rows)
        out[i, m] = np.exp(lp - logsumexp(lp)) @ fills
    return out


def impute_over_samples(samples, X, missing, rng, *, n_sweeps):
    """``E[x_miss | x_obs]`` averaged over the parameter ``samples`` (Sec. 5.2).

    One :func:`gibbs_impute` chain per sample in turn from the same ``rng``, the
    visible fill carried over from the previous sample's chain, the first half of
    each chain's ``n_sweeps`` discarded.

    Returns
    -------
    X_filled : ndarray of shape (n, D)
        ``X`` with the missing entries replaced by the averaged estimates.
    """
    def impute_one(params, chain):
        return gibbs_impute(params, X, missing, rng, n_sweeps=n_sweeps,
                            n_burn=n_sweeps // 2, state=chain)

    return posterior.impute_over_states(impute_one, samples, X, missing)
