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
from .._core.chains import run_chains
from .._core.posterior import rao_blackwell_chain
from .._core.random import as_generator
from ._local import MAX_TOTAL_COUNT, round_counts as _round_counts, upward_downward
from ._local_fast import entry_dots
from ._train import EVAL_PREFER, chunk_costs, chunk_layout, local_kwargs

__all__ = ["FilledCounts", "gibbs_impute", "impute_chain", "impute_over_samples",
           "impute_per_sweep", "impute_task", "observed_counts", "sparse_missing"]


def gibbs_impute(local_sweep, phi1, X, missing, rng, seeds, *, n_sweeps, n_burn, link,
                 state=None, rao_blackwell=True):
    """Average of ``E[x_miss | theta^(1)]`` over a data-augmented local Gibbs chain.

    :func:`impute_chain` on a dense ``X`` with ``NaN`` (or anything) at ``missing``.

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
    filled = FilledCounts(*sparse_missing(X, missing))
    state, values = impute_chain(local_sweep, phi1, filled, rng, seeds, n_sweeps=n_sweeps,
                                 n_burn=n_burn, link=link, state=state,
                                 rao_blackwell=rao_blackwell)
    est = np.zeros(X.shape)
    est[filled.rows, filled.cols] = values
    return state, est


def sparse_missing(X, missing):
    """The observed counts of a dense ``X`` as CSR, and the missing entries' rows and
    columns (row-major, as ``np.nonzero(missing)``)."""
    rows, cols = np.nonzero(missing)
    return (sp.csr_matrix(np.where(missing, 0.0, X)), rows.astype(np.int64),
            cols.astype(np.int64))


class FilledCounts:
    """The CSR matrix of observed counts with the missing entries at a fill, per sweep.

    Every sweep of the data-augmented chain hands the local sampler the documents
    with their missing entries at the current fill. Built from the observed
    entries (CSR, no stored zeros) and the missing positions (row-major) once, the
    matrix of a fill costs ``O(entries)``: the same CSR arrays (entries sorted by
    row then column, zero fills left out) that ``csr_matrix`` makes of the dense
    filled documents, whose ``O(n V)`` passes (a copy, a scatter, a scan for
    non-zeros) were most of ``impute``'s time and, being memory-bound, scaled
    badly over two workers (issue 26).
    """

    def __init__(self, obs, rows, cols):
        n, V = self.shape = obs.shape
        self.rows, self.cols = rows, cols
        obs_rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(obs.indptr))
        key = np.concatenate([obs_rows * V + obs.indices, rows * V + cols])
        # the two sets of entries are disjoint, each already row-major
        order = np.argsort(key, kind="stable")
        self.entry_rows = key[order] // V
        self.entry_cols = key[order] - self.entry_rows * V
        self.values = np.concatenate([obs.data.astype(np.float64), np.zeros(rows.size)])[order]
        self.fill_at = np.flatnonzero(order >= obs.nnz)
        # the missing entries as CSR rows, for their rates (entry_dots)
        self.miss_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n), out=self.miss_ptr[1:])

    def csr(self, fill):
        """The documents with their missing entries at ``fill`` (row-major order)."""
        self.values[self.fill_at] = fill
        keep = self.values != 0.0
        indptr = np.zeros(self.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.entry_rows[keep], minlength=self.shape[0]),
                  out=indptr[1:])
        return sp.csr_matrix((self.values[keep], self.entry_cols[keep], indptr),
                             shape=self.shape)

    def rates(self, theta1, phi1):
        """``(Phi^(1) theta^(1))`` at every missing entry, row-major."""
        return entry_dots(self.miss_ptr, self.cols, np.ascontiguousarray(phi1, dtype=np.float64),
                          np.ascontiguousarray(theta1, dtype=np.float64))


def impute_chain(local_sweep, phi1, filled, rng, seeds, *, n_sweeps, n_burn, link,
                 state=None, rao_blackwell=True):
    """:func:`gibbs_impute` on :class:`FilledCounts`: the estimates at the missing
    entries only (row-major), and the chain's state."""
    if state is None:
        state = (np.zeros(filled.rows.size), None)
    counter = iter(seeds)

    def step(st):
        fill, thetas = st
        thetas, theta1 = local_sweep(filled.csr(fill), next(counter), thetas)
        lam = filled.rates(theta1, phi1)                         # (Phi theta)_miss
        if link == "bernoulli":
            mean = -np.expm1(-lam)
            draw = (rng.random(lam.shape) < mean).astype(np.float64)
        else:
            mean = lam
            draw = rng.poisson(lam).astype(np.float64)
        return (draw, thetas), draw, mean

    state, total, n_kept = rao_blackwell_chain(step, state, n_sweeps, n_burn,
                                               rao_blackwell=rao_blackwell)
    return state, total / n_kept


def impute_over_samples(X, missing, samples, root, *, n_sweeps, a0, b0, e0, f0, link,
                        chunk_docs, n_jobs=None):
    """``X`` with its missing entries at ``E[x_miss | x_obs]`` averaged over the kept
    global samples (``DeepLDA.impute``).

    The documents are cut into the local sampler's fixed chunks
    (:func:`~._train.chunk_layout`) and each chunk is one task
    (:func:`impute_task`) for the whole protocol: under each ``(phis, r)`` of
    ``samples`` in turn, :func:`impute_chain` runs ``n_sweeps`` sweeps (the first
    half discarded) with the chain carried over from one sample to the next. One
    dispatch per chunk, not one per sweep (issue 26), so that ``n_jobs`` pays and
    no sweep pays the scatter, merge and scheduling of a whole-corpus call. A task
    carries its chunk's observed counts (CSR) and missing positions, not the dense
    rows, and returns the estimates at its missing entries only.

    Streams, from ``root`` (a ``SeedSequence``): its first child seeds the fills
    (chunk ``c`` draws them from that PCG64 stream jumped ``c`` times, so chunk 0
    draws exactly the stream every fill came from before, and no two chunks
    overlap); the next ``len(samples) * n_sweeps`` children seed the sweeps, chunk
    ``c`` of sweep ``k`` using child ``c`` of sweep seed ``k``, as the per-sweep
    calls did. So documents that fit in one chunk get the same answer as the
    per-sweep implementation, bit for bit, and every input gets the same answer
    for every ``n_jobs`` and joblib backend.

    Returns
    -------
    X_filled : ndarray of shape (n, V)
        A copy of ``X`` with the estimates at the missing entries.
    """
    fill_seed = root.spawn(1)[0]
    sweep_seeds = root.spawn(len(samples) * n_sweeps)
    layout = chunk_layout(X.shape[0], chunk_docs)
    obs, rows, cols = sparse_missing(X, missing)
    cut = np.searchsorted(rows, [sl.start for sl in layout] + [X.shape[0]])
    tasks = [(obs[sl], rows[a:b] - sl.start, cols[a:b], c)
             for c, (sl, a, b) in enumerate(zip(layout, cut[:-1], cut[1:]))]
    parts = run_chains(
        impute_task, tasks, seeds=[fill_seed] * len(tasks), n_jobs=n_jobs,
        prefer=EVAL_PREFER,
        cost=chunk_costs(obs, layout, [p.shape[1] for p in samples[0][0]],
                         n_sweeps * len(samples)),
        samples=samples, sweep_seeds=sweep_seeds, n_sweeps=n_sweeps,
        priors=dict(a0=a0, b0=b0, e0=e0, f0=f0, link=link))
    out = X.copy()
    out[rows, cols] = np.concatenate(parts)
    return out


def impute_per_sweep(local, merge, X, missing, samples, root, *, n_sweeps, link):
    """The reference for :func:`impute_over_samples`: one whole-input call per sweep.

    What ``DeepLDA.impute`` ran before issue 26: under each ``(phis, r)`` of
    ``samples`` in turn, :func:`gibbs_impute` on all the documents, each sweep one
    call of ``local(X, seed, phis, r, ...)`` (the estimator's chunked local sampler,
    ``merge`` joining its chunks), the fills drawn from one stream (the first child
    of ``root``) over every document. Kept for the tests (it gives
    :func:`impute_over_samples`'s answer on one chunk) and the benchmark of the two.
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


def _child(seed, index):
    # ``seed.spawn(n)[index]`` of a sequence that has spawned nothing, without
    # spawning: in-process, every chunk shares the same SeedSequence objects.
    return np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key + (index,),
                                  pool_size=seed.pool_size)


def impute_task(task, rng, *, samples, sweep_seeds, n_sweeps, priors):
    """``run_chains`` entry point: one chunk's data-augmented chain over every sample.

    ``task`` is ``(obs_chunk, rows, cols, c)``: the chunk's observed counts (CSR),
    its missing entries' rows (within the chunk) and columns, row-major, and its
    index; ``rng`` is the fills' generator, jumped ``c`` times here. Returns the
    chunk's estimates at its missing entries (row-major), averaged over the samples.
    """
    obs, rows, cols, c = task
    filled = FilledCounts(obs, rows, cols)
    fills = np.random.Generator(rng.bit_generator.jumped(c))
    total, state = np.zeros(rows.size), None
    for i, (phis, r) in enumerate(samples):
        kw = local_kwargs(phis, r, n_burn=0, n_collect=1, collect_topics=False, **priors)

        def sweep(Xc, seed, theta, kw=kw):
            # the own-words log-likelihood (no draw) is not read here
            res = upward_downward(Xc, as_generator(_child(seed, c)), theta=theta,
                                  loglik=False, **kw)
            return res["theta"], res["theta_sum"][0]

        state, est = impute_chain(sweep, phis[0], filled, fills,
                                  sweep_seeds[i * n_sweeps:(i + 1) * n_sweeps],
                                  n_sweeps=n_sweeps, n_burn=n_sweeps // 2,
                                  link=priors["link"], state=state)
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
