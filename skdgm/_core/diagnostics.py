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

The same definitions are in ``arviz_stats`` (``rhat``, ``ess`` with ``method``
``"bulk"``, ``"tail"``, ``"mean"``), and the tests check that the two agree to
1e-10 (9e-15 at most in benchmarks/results/topics_interop.txt) on random traces, odd
lengths, ties and constant indicators included. These
stay: ``history_`` needs them on every install, and arviz-stats' array functions
come with xarray (the optional ``skdgm[arviz]`` extra). Agreement took two fixes
(issue 27): a half-chain whose tail indicator never changed had 0/0
autocorrelations, which made ``ess_tail`` exceed the number of draws; and the Geyer sum now
ends as Stan's and ArviZ's do (the even lag of the
first pair left out is added once), with every chain split and then ranked.
"""

import numpy as np
from scipy.special import ndtri
from scipy.stats import rankdata

__all__ = ["rhat", "ess_bulk", "ess_tail", "split_rhat", "effective_sample_size",
           "autocorrelation", "autocovariance", "rank_normalize"]


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
    return _rhat_of_split(_split(_as_chains(x)))


def _rhat_of_split(x):
    m, n = x.shape
    chain_means = x.mean(axis=1)
    w = x.var(axis=1, ddof=1).mean()
    b = n * chain_means.var(ddof=1)
    if w == 0:
        return 1.0 if b == 0 else np.inf
    var_plus = (n - 1) / n * w + b / n
    return float(np.sqrt(var_plus / w))


def autocovariance(x):
    """Autocovariance of each chain at every lag, by FFT (shape of ``x``, divided by ``n``).

    Computed directly rather than as an autocorrelation times a variance, so that
    a constant chain (an indicator that never changes within a half-chain, say)
    has autocovariance 0 at every lag instead of 0/0.
    """
    x = np.atleast_2d(np.asarray(x, dtype=float))
    n = x.shape[1]
    centred = x - x.mean(axis=1, keepdims=True)
    size = 2 ** int(np.ceil(np.log2(2 * n)))
    f = np.fft.rfft(centred, n=size, axis=1)
    return np.fft.irfft(f * np.conj(f), n=size, axis=1)[:, :n] / n


def autocorrelation(x):
    """Autocorrelation of each chain at every lag, by FFT (shape of ``x``)."""
    acov = autocovariance(x)
    with np.errstate(invalid="ignore", divide="ignore"):
        return acov / acov[:, :1]


def effective_sample_size(x):
    """Effective sample size of a scalar trace over all its chains (split in halves).

    The multi-chain estimate of Gelman et al. (BDA3, Sec. 11.5) as Vehtari et al.
    (2021, Sec. 3.2) and Stan define it: the chains are split in halves, the
    autocorrelations ``rho_t = 1 - (W - mean_m acov_m(t)) / var_plus`` are summed
    in consecutive pairs while the pair sums stay positive (Geyer's initial
    positive sequence), the pair sums are made non-increasing (initial monotone
    sequence), and the even-lag term of the first pair left out (the first
    non-positive one, or the last one) is added once when it is positive (Stan's
    refinement); then
    ``ESS = m n / max(tau, 1 / log10(m n))`` with ``tau = -1 + 2 sum rho``. It
    agrees with ``arviz_stats.ess(x, method="mean")`` to rounding (tested).

    Parameters
    ----------
    x : array-like of shape (n_chains, n_draws) or (n_draws,)

    Returns
    -------
    ess : float
        For ``N`` draws of an AR(1) process with coefficient ``rho`` this tends to
        ``N (1 - rho) / (1 + rho)``.
    """
    return _ess_of_split(_split(_as_chains(x)))


def _ess_of_split(x):
    m, n = x.shape
    if np.ptp(x) < np.finfo(float).resolution:
        return float(m * n)
    acov = autocovariance(x)
    chain_means = x.mean(axis=1)
    w = acov[:, 0].mean() * n / (n - 1.0)
    var_plus = (n - 1) / n * w + (chain_means.var(ddof=1) if m > 1 else 0.0)
    rho = 1.0 - (w - acov.mean(axis=0)) / var_plus
    rho[0] = 1.0
    n_pairs = (n - 1) // 2
    pairs = rho[0: 2 * n_pairs: 2] + rho[1: 2 * n_pairs: 2]
    # Geyer: the pairs before the first non-positive one (or before the last pair,
    # when none is), forced non-increasing; then that pair's even lag once if positive
    stop = np.flatnonzero(pairs <= 0)
    k = int(stop[0]) if stop.size else n_pairs - 1
    tau = -1.0 + 2.0 * np.minimum.accumulate(pairs[:k]).sum() + max(rho[2 * k], 0.0)
    tau = max(tau, 1.0 / np.log10(m * n))
    return float(m * n / tau)


def rank_normalize(x):
    """Normal scores of the pooled ranks (Vehtari et al. 2021, Eq. 14).

    Ranks ``r`` over all draws of all chains (ties averaged) become
    ``Phi^{-1}((r - 3/8) / (S + 1/4))`` with ``S`` the number of draws, keeping the
    shape ``(n_chains, n_draws)``.
    """
    return _normal_scores(_as_chains(x))


def _normal_scores(x):
    r = rankdata(x, method="average").reshape(x.shape)
    return ndtri((r - 0.375) / (x.size + 0.25))


def rhat(x):
    """Rank-normalised split-R-hat (Vehtari et al. 2021, Sec. 4.2).

    The larger of the split-R-hat of the rank-normalised draws (bulk: differences
    in location) and of the rank-normalised folded draws ``|x - median(x)|``
    (tails: differences in scale). Values above 1.01 flag chains that disagree.
    The chains are split before ranking (with an odd number of draws the middle
    one is left out, as by ``arviz_stats.rhat``, which this equals to rounding).

    Parameters
    ----------
    x : array-like of shape (n_chains, n_draws) or (n_draws,)

    Returns
    -------
    rhat : float
    """
    x = _split(_as_chains(x))
    folded = np.abs(x - np.median(x))
    return float(max(_rhat_of_split(_normal_scores(x)),
                     _rhat_of_split(_normal_scores(folded))))


def ess_bulk(x):
    """Bulk effective sample size: the ESS of the rank-normalised split chains.

    Equals ``arviz_stats.ess(x)`` (``method="bulk"``) to rounding.

    Parameters
    ----------
    x : array-like of shape (n_chains, n_draws) or (n_draws,)

    Returns
    -------
    ess : float
    """
    return _ess_of_split(_normal_scores(_split(_as_chains(x))))


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
    return float(min(_ess_of_split(_split((x <= q).astype(float)))
                     for q in np.quantile(x, prob)))
