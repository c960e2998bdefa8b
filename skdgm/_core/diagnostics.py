"""Convergence diagnostics for scalar MCMC traces: R-hat and effective sample size.

``split_rhat`` and ``effective_sample_size`` are the classic definitions of Gelman
et al., *Bayesian Data Analysis* (3rd ed., Sec. 11.4-11.5): chains split in halves
for R-hat, and the multi-chain autocorrelation summed with Geyer's initial
monotone sequence truncation. ``rhat``, ``ess_bulk`` and ``ess_tail`` are the
rank-normalised versions of Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021,
"Rank-normalization, folding, and localization", Bayesian Analysis 16(2)), the
current standard: they also work for heavy tails and catch chains that differ in
scale but not in location. ``DBMCAST`` reports ``rhat`` and ``ess_bulk`` of its
negative chains' energies in ``history_``; the tests use the rest.
"""

import numpy as np
from scipy.special import ndtri
from scipy.stats import rankdata

__all__ = ["rhat", "ess_bulk", "ess_tail", "split_rhat", "effective_sample_size",
           "autocorrelation", "rank_normalize"]


def _as_chains(x):
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:
        x = x[None, :]
    if x.ndim != 2:
        raise ValueError("expected a trace of shape (n_chains, n_draws) or (n_draws,)")
    if x.shape[1] < 4:
        raise ValueError(f"need at least 4 draws per chain, got {x.shape[1]}")
    if not np.all(np.isfinite(x)):
        raise ValueError("the trace contains NaN or inf")
    return x


def _split(x):
    half = x.shape[1] // 2
    return np.concatenate([x[:, :half], x[:, x.shape[1] - half:]], axis=0)


def split_rhat(x):
    """Split potential scale reduction factor R-hat of a scalar trace.

    Parameters
    ----------
    x : array-like of shape (n_chains, n_draws) or (n_draws,)

    Returns
    -------
    rhat : float
        Close to 1 for chains that agree; values above ~1.01 flag non-convergence.
    """
    x = _split(_as_chains(x))
    m, n = x.shape
    chain_means = x.mean(axis=1)
    w = x.var(axis=1, ddof=1).mean()
    b = n * chain_means.var(ddof=1)
    if w == 0:
        return 1.0 if b == 0 else np.inf
    var_plus = (n - 1) / n * w + b / n
    return float(np.sqrt(var_plus / w))


def autocorrelation(x):
    """Autocorrelation of each chain at every lag, by FFT (shape of ``x``)."""
    x = np.atleast_2d(np.asarray(x, dtype=float))
    n = x.shape[1]
    centred = x - x.mean(axis=1, keepdims=True)
    size = 2 ** int(np.ceil(np.log2(2 * n)))
    f = np.fft.rfft(centred, n=size, axis=1)
    acov = np.fft.irfft(f * np.conj(f), n=size, axis=1)[:, :n] / n
    with np.errstate(invalid="ignore", divide="ignore"):
        return acov / acov[:, :1]


def effective_sample_size(x):
    """Effective sample size of a scalar trace over all its chains.

    Parameters
    ----------
    x : array-like of shape (n_chains, n_draws) or (n_draws,)

    Returns
    -------
    ess : float
        For ``N`` draws of an AR(1) process with coefficient ``rho`` this tends to
        ``N (1 - rho) / (1 + rho)``.
    """
    x = _split(_as_chains(x)) if np.ndim(x) == 2 and np.shape(x)[0] > 1 else _as_chains(x)
    m, n = x.shape
    acov = autocorrelation(x) * x.var(axis=1)[:, None]
    chain_means = x.mean(axis=1)
    w = x.var(axis=1, ddof=1).mean()
    var_plus = (n - 1) / n * w + (chain_means.var(ddof=1) if m > 1 else 0.0)
    if var_plus == 0:
        return float(m * n)
    rho = 1.0 - (w - acov.mean(axis=0)) / var_plus
    rho[0] = 1.0
    # Geyer: sum consecutive pairs while positive, forcing them to be non-increasing.
    n_pairs = (n - 1) // 2
    pairs = rho[0: 2 * n_pairs: 2] + rho[1: 2 * n_pairs: 2]
    positive = pairs > 0
    k = int(np.argmin(positive)) if not positive.all() else len(pairs)
    pairs = np.minimum.accumulate(pairs[:k])
    tau = -1.0 + 2.0 * pairs.sum()
    tau = max(tau, 1.0 / np.log10(m * n))
    return float(m * n / tau)


def rank_normalize(x):
    """Normal scores of the pooled ranks (Vehtari et al. 2021, Eq. 14).

    Ranks ``r`` over all draws of all chains (ties averaged) become
    ``Phi^{-1}((r - 3/8) / (S + 1/4))`` with ``S`` the number of draws, keeping the
    shape ``(n_chains, n_draws)``.
    """
    x = _as_chains(x)
    r = rankdata(x, method="average").reshape(x.shape)
    return ndtri((r - 0.375) / (x.size + 0.25))


def rhat(x):
    """Rank-normalised split-R-hat (Vehtari et al. 2021, Sec. 4.2).

    The larger of the split-R-hat of the rank-normalised draws (bulk: differences
    in location) and of the rank-normalised folded draws ``|x - median(x)|``
    (tails: differences in scale). Values above 1.01 flag chains that disagree.

    Parameters
    ----------
    x : array-like of shape (n_chains, n_draws) or (n_draws,)

    Returns
    -------
    rhat : float
    """
    x = _as_chains(x)
    folded = np.abs(x - np.median(x))
    return float(max(split_rhat(rank_normalize(x)), split_rhat(rank_normalize(folded))))


def ess_bulk(x):
    """Bulk effective sample size: the ESS of the rank-normalised split chains.

    Parameters
    ----------
    x : array-like of shape (n_chains, n_draws) or (n_draws,)

    Returns
    -------
    ess : float
    """
    return effective_sample_size(rank_normalize(x))


def ess_tail(x, prob=(0.05, 0.95)):
    """Tail effective sample size: the smaller ESS of the 5 % and 95 % quantile indicators.

    Parameters
    ----------
    x : array-like of shape (n_chains, n_draws) or (n_draws,)
    prob : pair of float, default=(0.05, 0.95)

    Returns
    -------
    ess : float
    """
    x = _as_chains(x)
    out = []
    for q in np.quantile(x, prob):
        ind = (x <= q).astype(float)
        out.append(effective_sample_size(ind) if ind.std() > 0 else float(x.size))
    return float(min(out))
