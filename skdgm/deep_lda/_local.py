"""Local (per-document) inference: the upward-downward Gibbs sampler.

Given the global parameters (the topic matrices ``Phi^(l)`` and the top-layer
shapes ``r``), documents are independent, and each one is sampled with the
upward-downward Gibbs sampler of Zhou et al. (2016a) that Alg. 1, line 3 of
Cong et al. (2017) calls:

* upward: the word counts are partitioned over the layer-1 topics (Eq. 6,
  ``x_vkj ~ Mult``), each layer's topic counts are turned into table counts by
  the Chinese-restaurant-table (sum-logarithmic) distribution (Eq. 6,
  ``m ~ SumLog``), and those are partitioned over the next layer's topics;
* downward: ``p_j^(2)``, ``c_j^(l)`` and the gamma hidden units ``theta^(l)``
  (Eq. 1) are drawn from their conditionals, top layer first.

The counting loops live in :mod:`._local_fast` (Cython); this module holds their
NumPy twins (same random numbers, same order, same results) and the NumPy
orchestration of a sweep, which is shared by both: ``kernels="numpy"`` runs the
whole sampler on the twins.

Shapes: ``phis[l]`` is ``(K_{l-1}, K_l)`` with ``K_{-1} = V`` (columns on the
simplex); ``theta[l]`` is ``(n_docs, K_l)``.
"""

import numpy as np
import scipy.sparse as sp

from . import _local_fast

__all__ = [
    "partition_counts",
    "partition_dense",
    "crt",
    "zero_truncated_poisson",
    "gamma_theta",
    "upward_downward",
    "gibbs_upward",
    "gibbs_downward",
    "local_task",
]

_TINY = np.finfo(np.float64).tiny
# The samplers count tokens in int64 (the Cython kernels' ``long long``): the
# largest total count of one call's documents that no counter can wrap on.
MAX_TOTAL_COUNT = int(np.iinfo(np.int64).max)
# p_j^(2) ~ Beta(a0 + ., b0 + .) with a0 = b0 = 0.01 can round to exactly 0 or 1
# for an empty document; keep it inside (0, 1) so c_j^(2) stays finite.
_P_CLIP = 1e-12


# --------------------------------------------------------------------------
# NumPy twins of the Cython kernels
# --------------------------------------------------------------------------
def partition_counts(indptr, indices, counts, row_factor, col_factor, rng, row_out, col_out):
    """NumPy twin of :func:`._local_fast.partition_counts` (adds in place)."""
    n_rows = len(indptr) - 1
    K = row_factor.shape[1]
    counts = np.asarray(counts)
    keep = counts > 0
    rows = np.repeat(np.arange(n_rows), np.diff(indptr))[keep]
    cols = np.asarray(indices)[keep]
    cnt = counts[keep]
    if cnt.size == 0:
        return
    # The C loop's arithmetic, operation for operation: products, a total from
    # four interleaved sequential partial sums, and a sequential running sum.
    w = row_factor[rows] * col_factor[cols]
    part = [np.cumsum(w[:, i::4], axis=1)[:, -1] if K > i else np.zeros(len(w))
            for i in range(4)]
    tot = (part[0] + part[1]) + (part[2] + part[3])
    cum = np.cumsum(w, axis=1)
    entry = np.repeat(np.arange(cnt.size), cnt)
    u = rng.random(entry.size)
    target = u * tot[entry]
    # the walk stops at the first k with cum[k] > target, else at K - 1
    k = np.sum(cum[entry][:, :-1] <= target[:, None], axis=1)
    dead = tot[entry] <= 0.0
    k[dead] = np.minimum((u[dead] * K).astype(np.int64), K - 1)
    if row_out.shape[0] > 0:
        np.add.at(row_out, (rows[entry], k), 1)
    if col_out.shape[0] > 0:
        np.add.at(col_out, (cols[entry], k), 1)


def crt(counts, shape, rng):
    """NumPy twin of :func:`._local_fast.crt`: ``m = 1 + sum_{i=1}^{n-1} [u_i < s/(s+i)]``."""
    counts = np.asarray(counts, dtype=np.int64)
    shape = np.asarray(shape, dtype=np.float64)
    out = np.zeros(counts.shape, dtype=np.int64)
    flat_n = counts.ravel()
    flat_s = shape.ravel()
    active = np.flatnonzero((flat_n > 0) & (flat_s > 0.0))
    if active.size == 0:
        return out
    extra = flat_n[active] - 1
    owner = np.repeat(np.arange(active.size), extra)
    # i = 1, ..., n - 1 within each entry
    starts = np.cumsum(extra) - extra
    i = np.arange(owner.size) - starts[owner] + 1
    s = flat_s[active][owner]
    u = rng.random(owner.size)
    hits = np.bincount(owner, weights=(u < s / (s + i)), minlength=active.size)
    out.ravel()[active] = 1 + hits.astype(np.int64)
    return out


def zero_truncated_poisson(lam, rng):
    """NumPy twin of :func:`._local_fast.zero_truncated_poisson`."""
    lam = np.asarray(lam, dtype=np.float64)
    out = np.empty(lam.shape[0], dtype=np.int64)
    for i, lm in enumerate(lam):
        if lm >= 1.0:
            x = 0
            while x < 1:
                x = int(rng.poisson(lm))
        elif lm > 0.0:
            p = np.exp(-lm)
            target = p + rng.random() * (1.0 - p)
            x = 1
            p = p * lm
            cum = np.exp(-lm) + p
            while cum < target and x < 1000:
                x += 1
                p = p * lm / x
                cum = cum + p
        else:
            x = 1
        out[i] = x
    return out


def partition_dense(counts, row_factor, col_factor, rng, row_out, col_out):
    """NumPy twin of :func:`._local_fast.partition_dense` (adds in place)."""
    ip, ix, cm = _dense_to_csr(counts)
    partition_counts(ip, ix, cm, row_factor, col_factor, rng, row_out, col_out)


def gamma_theta(shape, counts, rate, rng, floor):
    """NumPy twin of :func:`._local_fast.gamma_theta`."""
    return np.maximum(rng.standard_gamma(shape + counts) / rate[:, None], floor)


_KERNELS = {
    "cython": (_local_fast.partition_counts, _local_fast.partition_dense, _local_fast.crt,
               _local_fast.zero_truncated_poisson, _local_fast.gamma_theta),
    "numpy": (partition_counts, partition_dense, crt, zero_truncated_poisson, gamma_theta),
}


# --------------------------------------------------------------------------
# One sampler, shared by both kernel sets
# --------------------------------------------------------------------------
def _dense_to_csr(m):
    rows, cols = np.nonzero(m)
    indptr = np.zeros(m.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=m.shape[0]), out=indptr[1:])
    return indptr, cols.astype(np.int64), np.ascontiguousarray(m[rows, cols], dtype=np.int64)


def _as_int_csr(X):
    if not (sp.issparse(X) and X.format == "csr"):
        X = sp.csr_matrix(X)
    return (X.indptr.astype(np.int64), X.indices.astype(np.int64),
            np.rint(X.data).astype(np.int64))


def initial_theta(doc_lengths, n_components):
    """Deterministic start: each document's length spread evenly over every layer's topics."""
    scale = (np.asarray(doc_lengths, dtype=np.float64) + 1.0)[:, None]
    return [np.repeat(scale / K, K, axis=1) for K in n_components]


class _Layout:
    """One chunk of documents laid out for the counting kernels.

    The CSR entries as int64 arrays, their row of each entry, and the
    words-by-documents order of the same entries (``perm`` maps it to the CSR
    order), which the layer-1 partition walks.
    """

    def __init__(self, X, phis, r, link):
        self.indptr, self.indices, self.data = _as_int_csr(X)
        self.n = len(self.indptr) - 1
        self.V = phis[0].shape[0]
        self.Ks = [p.shape[1] for p in phis]
        self.link = link
        self.rows = np.repeat(np.arange(self.n), np.diff(self.indptr))
        # a stable sort by word keeps each word's documents in row order: the
        # CSR layout of the transpose, without building it
        self.perm = np.argsort(self.indices, kind="stable").astype(np.int64)
        self.wdocs = self.rows[self.perm]
        self.wptr = np.zeros(self.V + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.indices, minlength=self.V), out=self.wptr[1:])
        self.data_t = self.data[self.perm]

    def start_theta(self, theta):
        if theta is None:
            lengths = np.bincount(self.rows, weights=self.data, minlength=self.n)
            return initial_theta(lengths, self.Ks)
        return [np.array(t, dtype=np.float64, order="C") for t in theta]


def _prior_shape(l, theta, phis, r, n):
    """Gamma shape of ``theta^(l)``: ``Phi^(l+1) theta^(l+1)``, or ``r`` at the top."""
    if l < len(phis) - 1:
        return np.ascontiguousarray(theta[l + 1] @ phis[l + 1].T)
    return np.ascontiguousarray(np.broadcast_to(r, (n, phis[-1].shape[1])))


def _upward(lay, theta, phis, r, rng, kern, A, W):
    """Upward pass (Eq. 6): partition, CRT, partition, ... up to the top tables.

    Fills the per-document topic counts ``A[l]`` (``x^(l)_{.kj}``) and, unless
    ``W[l]`` is empty, the topic counts ``W[l]`` (``x^(l)_{:k.}``); both must
    come in zeroed. Returns the top-layer tables ``x^(L+1)_{kj}`` and the prior
    shapes used by the CRT draws.
    """
    partition, partition_dense_, crt_, ztp, _ = kern
    L = len(phis)
    if lay.link == "bernoulli":
        lam = np.einsum("ek,ek->e", phis[0][lay.indices], theta[0][lay.rows])
        counts_t = ztp(lam, rng)[lay.perm]
    else:
        counts_t = lay.data_t
    # Layer 1 runs words by documents: each word's topic row is read once per
    # sweep while the chunk's theta stays in cache.
    partition(lay.wptr, lay.wdocs, counts_t, phis[0], theta[0], rng, W[0], A[0])
    shapes = []
    top = None
    for l in range(L):
        shape_l = _prior_shape(l, theta, phis, r, lay.n)
        shapes.append(shape_l)
        m = crt_(A[l], shape_l, rng)
        if l < L - 1:
            partition_dense_(m, theta[l + 1], phis[l + 1], rng, A[l + 1], W[l + 1])
        else:
            top = m
    return top, shapes


def _scales(A0, shapes, theta, rng, a0, b0, e0, f0):
    """Downward auxiliaries: ``p_j^(2)``, ``c_j^(l)`` and ``q_j^(l)`` (Lemma 3.1).

    ``p^(2) ~ Beta(a0 + x^(1)_{..j}, b0 + sum_k shape_kj)`` (``theta^(1)``
    marginalised), ``c^(l+1) ~ Gam(e0 + sum_k shape_kj, 1/(f0 + theta^(l)_{.j}))``;
    ``q^(1) = 1``, ``q^(l+1) = ln(1 + q^(l) / c^(l+1))``. None of these depends
    on ``Phi`` (its columns sum to one). Returns the per-layer rates ``c^(l+1)``
    (``rates[0] = (1 - p^(2)) / p^(2)``) and ``q``.
    """
    p2 = rng.beta(a0 + A0.sum(axis=1), b0 + shapes[0].sum(axis=1))
    np.clip(p2, _P_CLIP, 1.0 - _P_CLIP, out=p2)
    rates = [(1.0 - p2) / p2]
    for l in range(1, len(shapes)):
        rates.append(rng.standard_gamma(e0 + shapes[l].sum(axis=1))
                     / (f0 + theta[l].sum(axis=1)))
    q = [np.ones(A0.shape[0])]
    for l in range(len(shapes)):
        q.append(np.log1p(q[l] / rates[l]))
    return rates, q


def _downward_theta(theta, phis, r, A, rate_q, rng, gamma_):
    """``theta^(l) ~ Gam(shape + x^(l)_{.kj}, 1/(c^(l+1) + q^(l)))``, top layer first."""
    n = A[0].shape[0]
    for l in reversed(range(len(phis))):
        theta[l] = gamma_(_prior_shape(l, theta, phis, r, n), A[l], rate_q[l], rng, _TINY)
    return theta


def upward_downward(X, rng, *, phis, r, a0=0.01, b0=0.01, e0=1.0, f0=1.0,
                    n_burn=0, n_collect=1, link="poisson", collect_topics=True,
                    theta=None, kernels="cython"):
    """Upward-downward Gibbs sweeps on the documents of ``X`` under fixed globals.

    This is the local sampler of Alg. 1, line 3 (the globals stay fixed while
    it runs). The batch Gibbs sampler, which also draws the globals, is
    :func:`gibbs_upward` and :func:`gibbs_downward` with the global draws in
    between (see :func:`skdgm.deep_lda._gibbs.gibbs_sweep`).

    Parameters
    ----------
    X : sparse matrix of shape (n_docs, V)
        Word counts (``link="poisson"``) or 0/1 occurrences (``"bernoulli"``).
    rng : numpy.random.Generator
        The only source of randomness.
    phis : list of ndarray
        ``phis[l]`` of shape ``(K_{l-1}, K_l)``, columns on the simplex.
    r : ndarray of shape (K_L,)
        Top-layer gamma shapes.
    a0, b0, e0, f0 : float
        Priors ``p_j^(2) ~ Beta(a0, b0)`` and ``c_j^(l) ~ Gam(e0, 1/f0)``.
    n_burn, n_collect : int
        Sweeps discarded, then sweeps whose statistics are averaged.
    link : {"poisson", "bernoulli"}
        With ``"bernoulli"`` each observed 1 is given a latent count
        ``x ~ Pois(lam) | x >= 1`` every sweep (the Bernoulli-Poisson link).
    collect_topics : bool
        Accumulate the topic-by-word (and topic-by-topic) counts ``x_{:k.}``.
    theta : list of ndarray, optional
        Starting hidden units (e.g. test chains carried over from one global
        sample to the next).
    kernels : {"cython", "numpy"}
        The counting kernels; both give identical results on one stream.

    Returns
    -------
    result : dict
        ``topic_counts`` (list, per layer, ``E[x_{:k.}]`` summed over documents),
        ``top_tables`` (``E[x^(L+1)_{k.}]``), ``q_top`` (``E[sum_j q_j^(L+1)]``),
        ``theta_sum`` / ``theta_norm_sum`` (per layer, summed over collected
        sweeps), ``n_collect`` and the final ``theta``.
    """
    kern = _KERNELS[kernels]
    phis = [np.ascontiguousarray(p, dtype=np.float64) for p in phis]
    r = np.asarray(r, dtype=np.float64)
    lay = _Layout(X, phis, r, link)
    n, L, Ks = lay.n, len(phis), lay.Ks
    theta = lay.start_theta(theta)

    topic_sums = [np.zeros((phis[l].shape[0], Ks[l])) for l in range(L)] if collect_topics else None
    top_sum = np.zeros(Ks[-1])
    q_sum = 0.0
    theta_sum = [np.zeros((n, K)) for K in Ks]
    theta_norm_sum = [np.zeros((n, K)) for K in Ks]

    # count buffers are reused across sweeps: fresh multi-MB arrays every
    # sweep cost page faults and evict Phi^(1) from cache
    A_buf = [np.zeros((n, K), dtype=np.int64) for K in Ks]
    W_buf = ([np.zeros((phis[l].shape[0], Ks[l]), dtype=np.int64) for l in range(L)]
             if collect_topics and n_collect > 0 else None)
    W_none = [np.zeros((0, K), dtype=np.int64) for K in Ks]
    for sweep in range(n_burn + n_collect):
        collect = sweep >= n_burn
        want = collect and collect_topics
        for a in A_buf:
            a.fill(0)
        if want:
            for w_ in W_buf:
                w_.fill(0)
        A = A_buf
        W = W_buf if want else W_none
        top, shapes = _upward(lay, theta, phis, r, rng, kern, A, W)
        rates, q = _scales(A[0], shapes, theta, rng, a0, b0, e0, f0)
        theta = _downward_theta(theta, phis, r, A, [rates[l] + q[l] for l in range(L)],
                                rng, kern[4])
        if collect:
            if collect_topics:
                for l in range(L):
                    topic_sums[l] += W[l]
            top_sum += top.sum(axis=0)
            q_sum += q[L].sum()
            for l in range(L):
                theta_sum[l] += theta[l]
                theta_norm_sum[l] += theta[l] / theta[l].sum(axis=1, keepdims=True)
    nc = max(n_collect, 1)
    return {
        "topic_counts": [t / nc for t in topic_sums] if collect_topics else None,
        "top_tables": top_sum / nc,
        "q_top": q_sum / nc,
        "theta_sum": theta_sum,
        "theta_norm_sum": theta_norm_sum,
        "n_collect": n_collect,
        "theta": theta,
    }


def gibbs_upward(task, rng, *, phis, r, a0=0.01, b0=0.01, e0=1.0, f0=1.0,
                 link="poisson", kernels="cython"):
    """First half of one batch Gibbs sweep: everything the global draws need.

    Draws the augmented counts (upward pass, Eq. 6) given the current
    ``theta``, ``Phi`` and ``r``, then ``p_j^(2)``, ``c_j^(l)`` and ``q_j^(l)``
    given the current ``theta``. With every ``theta`` marginalised, the
    conditionals of ``Phi^(l)`` and ``r`` given these counts and ``q`` are the
    Dirichlet and gamma of Eq. 7, so the globals are drawn next
    (:func:`skdgm.deep_lda._global.gibbs_phi`, :func:`~skdgm.deep_lda._global.gibbs_r`)
    and only then the hidden units, by :func:`gibbs_downward`, under the *new*
    globals (the paper's upward-downward order, Zhou et al. 2016a).

    Parameters
    ----------
    task : tuple ``(X, theta)``
        The chunk's documents and its hidden units (``theta=None`` starts
        them as :func:`initial_theta` does).
    rng : numpy.random.Generator
    phis, r, a0, b0, e0, f0, link, kernels
        As in :func:`upward_downward`.

    Returns
    -------
    result : dict
        ``topic_counts`` (per layer, ``x^(l)_{:k.}`` summed over the chunk),
        ``top_tables`` (``x^(L+1)_{k.}``), ``q_top`` (``sum_j q_j^(L+1)``) and
        ``carry``, the state :func:`gibbs_downward` continues from.
    """
    X, theta = task
    kern = _KERNELS[kernels]
    phis = [np.ascontiguousarray(p, dtype=np.float64) for p in phis]
    r = np.asarray(r, dtype=np.float64)
    lay = _Layout(X, phis, r, link)
    theta = lay.start_theta(theta)
    L = len(phis)
    A = [np.zeros((lay.n, K), dtype=np.int64) for K in lay.Ks]
    W = [np.zeros((p.shape[0], p.shape[1]), dtype=np.int64) for p in phis]
    top, shapes = _upward(lay, theta, phis, r, rng, kern, A, W)
    rates, q = _scales(A[0], shapes, theta, rng, a0, b0, e0, f0)
    return {
        "topic_counts": [w.astype(np.float64) for w in W],
        "top_tables": top.sum(axis=0).astype(np.float64),
        "q_top": float(q[L].sum()),
        "carry": {"theta": theta, "A": A, "rate": [rates[l] + q[l] for l in range(L)]},
    }


def gibbs_downward(carry, rng, *, phis, r, kernels="cython"):
    """Second half of one batch Gibbs sweep: ``theta`` top-down under the new globals.

    ``carry`` is :func:`gibbs_upward`'s; ``phis`` and ``r`` are the globals drawn
    from the counts it returned. Returns the new ``theta`` (list per layer).
    """
    phis = [np.ascontiguousarray(p, dtype=np.float64) for p in phis]
    r = np.asarray(r, dtype=np.float64)
    theta = [t.copy() for t in carry["theta"]]
    return _downward_theta(theta, phis, r, carry["A"], carry["rate"], rng,
                           _KERNELS[kernels][4])


def local_task(task, rng, **kwargs):
    """``run_chains`` entry point: ``task`` is ``X_chunk`` or ``(X_chunk, theta)``."""
    if isinstance(task, tuple):
        X, theta = task
        return upward_downward(X, rng, theta=theta, **kwargs)
    return upward_downward(task, rng, **kwargs)
