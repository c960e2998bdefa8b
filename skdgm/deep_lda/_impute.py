"""Missing-count imputation for deep LDA: data augmentation inside the local Gibbs sampler.

Under the model (Eq. 1) a document's counts are independent given its layer-1
units, ``x_v ~ Pois(lambda_v)``, ``lambda = Phi^(1) theta^(1)`` (with
``link="bernoulli"``, ``b_v = 1(x_v > 0)``, so ``P(b_v = 1) = 1 - exp(-lambda_v)``).
So the missing entries can be sampled as part of the local chain (Tanner and Wong
1987): a sweep of the upward-downward sampler (Alg. 1, line 3) on the document with
its missing entries at their current fill, then a fresh fill
``x_miss ~ Pois(lambda_miss)``. The estimate of ``E[x_miss | x_obs]`` averages the
conditional means ``lambda_miss`` (or ``1 - exp(-lambda_miss)``) over the kept
sweeps (Rao-Blackwellised), under each kept global sample in turn.

This is held-out word completion: a ``NaN`` says "this word's count is unknown",
which is not the same as a zero count; the answer is the expected count of that
word given the rest of the document (not a probability over the vocabulary, which
:meth:`DeepLDA.perplexity` scores).
"""

import numpy as np
import scipy.sparse as sp

from .._core.base import check_binary, check_counts
from .._core.posterior import rao_blackwell_chain
from .._core.random import as_generator
from ._local import MAX_TOTAL_COUNT, round_counts as _round_counts

__all__ = ["gibbs_impute", "impute_over_samples", "observed_counts"]


def gibbs_impute(local_sweep, phi1, X, missing, rng, seeds, *, n_sweeps, n_burn, link,
                 state=None, rao_blackwell=True):
    """Average of ``E[x_miss | theta^(1)]`` over a data-augmented local Gibbs chain.

    Parameters
    ----------
    local_sweep : callable
        ``local_sweep(X_csr, seed_seq, thetas) -> (thetas, theta1)``: one sweep of
        the local sampler under fixed globals, from the chains ``thetas`` (``None``
        to start them), returning the new chains and the stacked ``theta^(1)``.
    phi1 : ndarray of shape (V, K_1)
        ``Phi^(1)`` of the global sample.
    X : ndarray of shape (n, V)
        Counts (or 0/1 with ``link="bernoulli"``), ``NaN`` where missing.
    missing : ndarray of bool, shape (n, V)
    rng : numpy.random.Generator
        Draws the fills.
    seeds : list of numpy.random.SeedSequence
        One per sweep, for the local sampler.
    n_sweeps, n_burn : int
    link : {"poisson", "bernoulli"}
    state : tuple, optional
        ``(fill, thetas)`` of a previous global sample's chain.
    rao_blackwell : bool, default=True

    Returns
    -------
    state : tuple
        ``(fill, thetas)``.
    estimate : ndarray of shape (n, V)
        Meaningful in the missing entries only.
    """
    obs = np.where(missing, 0.0, X)
    rows, cols = np.nonzero(missing)
    if state is None:
        state = (np.zeros(rows.size), None)
    counter = iter(seeds)

    def step(st):
        fill, thetas = st
        full = obs.copy()
        full[rows, cols] = fill
        thetas, theta1 = local_sweep(sp.csr_matrix(full), next(counter), thetas)
        lam = np.einsum("ek,ek->e", theta1[rows], phi1[cols])     # (Phi theta)_miss
        if link == "bernoulli":
            mean = -np.expm1(-lam)
            draw = (rng.random(lam.shape) < mean).astype(np.float64)
        else:
            mean = lam
            draw = rng.poisson(lam).astype(np.float64)
        return (draw, thetas), draw, mean

    state, total, n_kept = rao_blackwell_chain(step, state, n_sweeps, n_burn,
                                               rao_blackwell=rao_blackwell)
    est = np.zeros(X.shape)
    est[rows, cols] = total / n_kept
    return state, est


def impute_over_samples(local, merge, X, missing, samples, root, *, n_sweeps, link):
    """``E[x_miss | x_obs]`` averaged over the kept global samples (``DeepLDA.impute``).

    Under each ``(phis, r)`` of ``samples`` in turn, :func:`gibbs_impute` runs
    ``n_sweeps`` sweeps (the first half discarded) with the chain carried over from
    one sample to the next. ``local(X, seed, phis, r, ...)`` is the estimator's local
    sampler over chunks of documents and ``merge`` joins its chunks. ``root`` (a
    ``SeedSequence``) gives the fills' generator (its first child) and one child per
    sweep for the local sampler.

    Returns
    -------
    estimate : ndarray of shape (n, V)
        Meaningful in the missing entries only.
    """
    rng = as_generator(root.spawn(1)[0])
    seeds = root.spawn(len(samples) * n_sweeps)
    total, state = np.zeros(X.shape), None
    for i, (phis, r) in enumerate(samples):
        def sweep(Xc, seed, thetas, phis=phis, r=r):
            res = local(Xc, seed, phis, r, n_burn=0, n_collect=1, collect_topics=False,
                        thetas=thetas)
            return [part["theta"] for part in res], merge(res)["theta_sum"][0]

        state, est = gibbs_impute(sweep, phis[0], X, missing, rng,
                                  seeds[i * n_sweeps:(i + 1) * n_sweeps], n_sweeps=n_sweeps,
                                  n_burn=n_sweeps // 2, link=link, state=state)
        total += est
    return total / len(samples)


def observed_counts(X, missing, *, link, round_counts, what):
    """``X`` with its observed entries checked as counts (or 0/1), ``NaN`` where missing.

    With ``round_counts`` the observed entries are rounded first, as ``fit`` rounds
    its input.

    Raises
    ------
    ValueError
        If an observed entry is not a non-negative integer (not 0/1 under
        ``link="bernoulli"``), or a document's counts sum past the samplers' limit.
    """
    obs = np.where(missing, 0.0, X)
    if round_counts:
        obs = _round_counts(obs)
    if link == "bernoulli":
        check_binary(obs, what=f"{what}(link='bernoulli')")
    else:
        check_counts(obs, what=what, max_total=MAX_TOTAL_COUNT)
    return np.where(missing, np.nan, obs)
