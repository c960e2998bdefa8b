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

import math

import numpy as np
import scipy.sparse as sp

from .._core.chains import even_chunks, map_threads
from .._core.posterior import Moments
from . import _collapsed, _local_fast

__all__ = [
    "RowSlice",
    "StandardNormals",
    "rows_of",
    "partition_counts",
    "partition_sparse",
    "partition_dense",
    "crt",
    "scale_rates",
    "zero_truncated_poisson",
    "gamma_theta",
    "add_rows",
    "upward_downward",
    "gibbs_upward",
    "gibbs_downward",
    "local_task",
    "samples_task",
    "LocalChain",
    "merge_chunks",
    "words_loglik",
    "round_counts",
]

_TINY = np.finfo(np.float64).tiny
#: Smallest value of a hidden unit theta, a topic entry phi or a shape r. The
#: gamma and Dirichlet draws of small shapes land far below it (Gam(0.01) is
#: below 1e-100 with probability ~0.1), and the products theta * phi of the
#: partitions then fall into the subnormal range, whose arithmetic is up to
#: ~100x slower on some CPUs (K = 512 cost 56x K = 32 with a 2.2e-308 floor).
#: With every factor >= 1e-100 the products stay >= 1e-200, normal doubles.
#: An entry at the floor carries a relative weight below 1e-100 next to any
#: non-negligible one, so no probability the samplers compute changes at
#: double precision (the exact and Geweke tests pass unchanged).
FLOOR = 1e-100
#: Bucket threshold of the layer-1 partition (:func:`partition_sparse`): a
#: document's topics with ``theta_k >= TAU_FRAC * |theta| / K`` are summed
#: exactly, the rest are reached by rejection. Larger values shrink the buckets
#: and raise the rejection rate (at most ``TAU_FRAC`` of the envelope's mass
#: for an average word); the law of the draws does not depend on it.
TAU_FRAC = 0.1
#: Layer-1 counts (entries summed over the chunks) from which two threads join a
#: minibatch's chunks (:func:`merge_chunks`): about 0.3 ms of additions, several
#: times the start of two threads; a 2,000-document minibatch of 20 Newsgroups at
#: K = 128 holds about 1.9 million, a default minibatch of 200 documents (one
#: chunk) about 230,000
JOIN_SPLIT_ENTRIES = 1 << 18
# entries per block of the own-words log-likelihood (a few hundred kB at K = 128)
_LOGLIK_BLOCK = 1024
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


def _sum4(a):
    """Row sums as the kernels form them: four interleaved sequential sums, then
    ``(s0 + s1) + (s2 + s3)``."""
    part = [np.cumsum(a[:, i::4], axis=1)[:, -1] if a.shape[1] > i else np.zeros(len(a))
            for i in range(4)]
    return (part[0] + part[1]) + (part[2] + part[3])


def _buckets(col_factor, tau_frac):
    """Per column ``c``: ``tau_c`` and ``B_c`` by decreasing weight, ties by index."""
    tau = tau_frac * _sum4(col_factor) / col_factor.shape[1]
    buckets = []
    for c in range(col_factor.shape[0]):
        b = np.flatnonzero(col_factor[c] >= tau[c])
        buckets.append(b[np.argsort(-col_factor[c, b], kind="stable")])
    return tau, buckets


def partition_sparse(indptr, indices, counts, row_factor, col_factor, tau_frac, rng,
                     row_out, col_out, row_sum=None, row_cum=None):
    """NumPy twin of :func:`._local_fast.partition_sparse` (adds in place).

    The same buckets, running sums (``np.cumsum`` adds sequentially, as the C
    loop does), bisections and rejection loop, one token at a time: a reference
    for the tests and the ``kernels="numpy"`` sampler, not a fast path.
    """
    K = row_factor.shape[1]
    if not 0.0 <= tau_frac < 1.0:
        raise ValueError(f"partition_sparse: tau_frac must be in [0, 1), got {tau_frac}")
    if K == 0:
        return
    tau, buckets = _buckets(col_factor, tau_frac)
    want_row, want_col = row_out.shape[0] > 0, col_out.shape[0] > 0
    for i in range(len(indptr) - 1):
        if indptr[i] == indptr[i + 1]:
            continue
        rp = row_factor[i]
        rcum = np.cumsum(rp) if row_cum is None else row_cum[i]
        S = _sum4(rp[None, :])[0] if row_sum is None else row_sum[i]
        for e in range(indptr[i], indptr[i + 1]):
            n = int(counts[e])
            if n <= 0:
                continue
            c = int(indices[e])
            cp, tc, b = col_factor[c], tau[c], buckets[c]
            wb = np.cumsum(rp[b] * cp[b])
            P = wb[-1] if b.size else 0.0
            E = P + tc * S
            dense = not (E > 0.0 and P >= 0.5 * E)
            if dense:
                wb = np.cumsum(rp * cp)
                P = wb[-1]
            for _ in range(n):
                if dense:
                    x = rng.random()
                    if P > 0.0:
                        k = int(np.searchsorted(wb[:-1], x * P, side="right"))
                    else:
                        k = min(int(x * K), K - 1)
                else:
                    while True:
                        x = rng.random() * E
                        if x < P:
                            k = int(b[np.searchsorted(wb[:-1], x, side="right")])
                            break
                        with np.errstate(invalid="ignore", divide="ignore"):
                            y = (x - P) / tc
                        k = int(np.searchsorted(rcum[:-1], y, side="right"))
                        if cp[k] < tc and rng.random() * tc < cp[k]:
                            break
                if want_row:
                    row_out[i, k] += 1
                if want_col:
                    col_out[c, k] += 1


def row_sums(a):
    """NumPy twin of :func:`._local_fast.row_sums`."""
    return _sum4(a), np.cumsum(a, axis=1)


def add_rows(out, rows, values):
    """NumPy twin of :func:`._local_fast.add_rows`: ``out[rows] += values``."""
    out[rows] += values


def entry_dots(indptr, loc, left, right):
    """NumPy twin of :func:`._local_fast.entry_dots` (by blocks of entries: the
    gathered rows of a whole chunk would be tens of megabytes)."""
    rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    out = np.empty(rows.size)
    for s in range(0, out.size, _LOGLIK_BLOCK):
        e = slice(s, s + _LOGLIK_BLOCK)
        out[e] = _sum4(left[loc[e]] * right[rows[e]])
    return out


def crt(counts, shape, rng, out=None, column_sums=False):
    """NumPy twin of :func:`._local_fast.crt`: ``m = 1 + sum_{i=1}^{n-1} [u_i < s/(s+i)]``."""
    if column_sums:
        return crt(counts, shape, rng).sum(axis=0)
    counts = np.asarray(counts, dtype=np.int64)
    shape = np.asarray(shape, dtype=np.float64)
    if out is None:
        out = np.zeros(counts.shape, dtype=np.int64)
    elif out.shape != counts.shape:
        raise ValueError("crt: out has the wrong shape")
    else:
        out.fill(0)
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


def _gs_propose(a, e):
    """Twin of the kernel's GS proposal: ``(branch, x, y)``, branch 0 when
    accepted for sure. Python floats and :mod:`math` call the same C library
    functions as the kernel, so the values agree bit for bit."""
    if e >= a / (1.0 - a):
        common = True
    elif e < a:
        common = False
    else:
        common = e >= -math.log1p(-a)
    if common:
        return 1, math.exp(-e / a), 0.0
    y = -math.log(-math.expm1(-e) / a)
    x = math.pow(1.0 - a + a * y, 1.0 / a)
    return (0 if x <= y else 2), x, y


def _gs_accept(branch, x, y, u):
    if branch == 1:
        return u <= 1.0 - x or u <= math.exp(-x)
    return u <= math.exp(y - x)


def gamma_theta(shape, counts, rate, rng, floor):
    """NumPy twin of :func:`._local_fast.gamma_theta`: the same draws in the same
    order, one entry at a time (a reference, not a fast path)."""
    A = np.asarray(shape, dtype=np.float64) + np.asarray(counts)
    out = np.zeros(A.shape)
    for idx, a in np.ndenumerate(A):
        a = float(a)
        if a >= 1.0:
            out[idx] = rng.standard_gamma(a)
        elif a > 0.0:
            while True:
                br, x, y = _gs_propose(a, float(rng.standard_exponential()))
                if br == 0 or _gs_accept(br, x, y, float(rng.random())):
                    break
            out[idx] = x
    return np.maximum(out / rate[:, None], floor)


def scale_rates(lengths, shape_sums, theta_sums, rng, a0, b0, e0, f0, clip):
    """NumPy twin of :func:`._local_fast.scale_rates`: ``rates`` (one row per layer)
    and ``1 / rates[0]``."""
    p2 = rng.beta(a0 + lengths, b0 + shape_sums[0])
    np.clip(p2, clip, 1.0 - clip, out=p2)
    rates = np.empty((len(shape_sums), p2.size))
    rates[0] = (1.0 - p2) / p2
    for l in range(1, len(shape_sums)):
        rates[l] = rng.standard_gamma(e0 + shape_sums[l]) / (f0 + theta_sums[l])
    return rates, 1.0 / rates[0]


_KERNELS = {
    "cython": (_local_fast.partition_counts, _local_fast.partition_dense, _local_fast.crt,
               _local_fast.zero_truncated_poisson, _local_fast.gamma_theta,
               _local_fast.partition_sparse, _local_fast.row_sums, _local_fast.entry_dots,
               _local_fast.scale_rates),
    "numpy": (partition_counts, partition_dense, crt, zero_truncated_poisson, gamma_theta,
              partition_sparse, row_sums, entry_dots, scale_rates),
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
    order), which the layer-1 partition walks. Only the chunk's own words
    (``words``, sorted) take part: ``phi_words`` holds their rows of
    ``Phi^(1)``, and the layer-1 topic counts are kept for them alone, so the
    work of a sweep grows with the chunk's words, not with the vocabulary.
    """

    def __init__(self, X, phis, r, link):
        self._lay_out(X, phis[0].shape[0], link)
        self.bind(phis)

    @classmethod
    def of_rows(cls, X, n_features, link):
        """The chunk's layout before any global parameters are known: what depends
        on its documents alone, to be :meth:`bind`-ed to the topics later.

        A training update lays out its next minibatch's chunks this way on a
        helper thread while its own global step runs (:class:`~._train.MinibatchPipeline`,
        issue 26); the arrays are the ones ``_Layout(X, phis, r, link)`` builds.
        """
        lay = cls.__new__(cls)
        lay._lay_out(X, n_features, link)
        lay.phi_words = None
        return lay

    def bind(self, phis):
        """Attach the global topics ``phis`` (the rows of ``Phi^(1)`` of the chunk's
        words, the upper layers); the envelope sums are formed at the next sweep.
        Returns the layout."""
        self.Ks = [p.shape[1] for p in phis]
        self.phi_words = np.ascontiguousarray(phis[0][self.words])
        # the envelope terms of the layer-1 partition that depend on Phi^(1)
        # alone (kernels' row_sums), formed once for all sweeps by _upward
        self.phi_sums = None
        self.phis_upper = phis[1:]
        return self

    def _lay_out(self, X, n_features, link):
        self.indptr, self.indices, self.data = _as_int_csr(X)
        self.n = len(self.indptr) - 1
        self.V = n_features
        self.link = link
        self.rows = np.repeat(np.arange(self.n), np.diff(self.indptr))
        # a stable sort by word keeps each word's documents in row order: the
        # CSR layout of the transpose, without building it
        # (16-bit keys take NumPy's radix sort, five times faster here)
        keys = self.indices.astype(np.uint16) if self.V <= 1 << 16 else self.indices
        self.perm = np.argsort(keys, kind="stable").astype(np.int64)
        self.wdocs = self.rows[self.perm]
        per_word = np.bincount(self.indices, minlength=self.V)
        self.words = np.flatnonzero(per_word)
        # rows of the transpose for the chunk's words only: an absent word has
        # no entry and draws no random number, so the stream is unchanged
        self.wptr = np.zeros(self.words.size + 1, dtype=np.int64)
        np.cumsum(per_word[self.words], out=self.wptr[1:])
        self.data_t = self.data[self.perm]
        # each CSR entry's row in words / phi_words (a table lookup: a binary
        # search per entry cost more than a sweep's gamma draws)
        where = np.empty(self.V, dtype=np.int64)
        where[self.words] = np.arange(self.words.size)
        self.loc = where[self.indices]

    def start_theta(self, theta, em_steps=0, em_kernel=None):
        if theta is None:
            lengths = np.bincount(self.rows, weights=self.data, minlength=self.n)
            theta = initial_theta(lengths, self.Ks)
            if em_steps and self.indices.size:
                theta[0] = _em_start(self, theta[0], em_steps, em_kernel)
                for l in range(1, len(self.Ks)):
                    theta[l] = _em_upper(theta[l - 1], self.phis_upper[l - 1], theta[l],
                                         em_steps)
            return theta
        return [np.array(t, dtype=np.float64, order="C") for t in theta]


def _em_start(lay, theta, n_steps, em_steps_=None):
    """``theta^(1)`` moved towards the documents' words by multiplicative EM steps.

    Each step is the mixture-proportion update ``theta_jk <- theta_jk sum_v
    x_vj phi_vk / [Phi theta_j]_v`` (it keeps ``|theta_j|`` at the document's
    length): a deterministic start that spares the Gibbs chain most of the
    burn-in it would spend leaving the uniform start. The chain's stationary
    law does not depend on its start. ``em_steps_``, optional, is the kernel
    :func:`._local_fast.em_steps`; without it the steps run here, in NumPy,
    with the same sums in the same order.
    """
    x = lay.data.astype(np.float64)
    theta = np.array(theta, dtype=np.float64, order="C")
    if em_steps_ is not None:
        em_steps_(lay.indptr, lay.loc, x, lay.phi_words, theta, n_steps, _TINY)
        return np.maximum(theta, FLOOR)
    for _ in range(n_steps):
        rate = entry_dots(lay.indptr, lay.loc, lay.phi_words, theta)
        S = sp.csr_matrix((x / np.maximum(rate, _TINY), lay.loc, lay.indptr),
                          shape=(lay.n, lay.words.size))
        theta *= S @ lay.phi_words
    return np.maximum(theta, FLOOR)


def _em_upper(theta_below, phi, theta, n_steps):
    """The same EM steps one layer up, with ``theta^(l)`` as the "counts" that
    ``Phi^(l+1) theta^(l+1)`` explains (its mean up to the scale ``c``)."""
    theta = theta * (theta_below.sum(axis=1, keepdims=True) / theta.sum(axis=1, keepdims=True))
    for _ in range(n_steps):
        theta = theta * ((theta_below / np.maximum(theta @ phi.T, _TINY)) @ phi)
    return np.maximum(theta, FLOOR)


def _prior_shape(l, theta, phis, r, n):
    """Gamma shape of ``theta^(l)``: ``Phi^(l+1) theta^(l+1)``, or ``r`` at the top."""
    if l < len(phis) - 1:
        return np.ascontiguousarray(theta[l + 1] @ phis[l + 1].T)
    # a read-only view with a zero row stride: the kernels take any row stride,
    # and an (n, K) copy of r, twice a sweep, only evicted the chain's arrays
    return np.broadcast_to(np.ascontiguousarray(r), (n, phis[-1].shape[1]))


def _partition_layer1(lay, theta, phis, rng, kern, A, W):
    """The layer-1 partition of the words given explicit ``theta^(1)``."""
    ztp, partition_sparse_ = kern[3], kern[5]
    if lay.link == "bernoulli":
        lam = np.einsum("ek,ek->e", phis[0][lay.indices], theta[0][lay.rows])
        counts_t = ztp(lam, rng)[lay.perm]
    else:
        counts_t = lay.data_t
    # Layer 1 runs words by documents: each word's topic row is read once per
    # sweep while the chunk's theta stays in cache; the sparse envelope skips
    # the topics a document holds (almost) nothing of.
    if lay.phi_sums is None:
        lay.phi_sums = kern[6](lay.phi_words)
    partition_sparse_(lay.wptr, lay.wdocs, counts_t, lay.phi_words, theta[0], TAU_FRAC, rng,
                      W[0], A[0], *lay.phi_sums)


def _upward(lay, theta, phis, r, rng, kern, A, W, layer1=True, tables=None, shape0=None):
    """Upward pass (Eq. 6): partition, CRT, partition, ... up to the top tables.

    Adds the per-document topic counts ``A[l]`` (``x^(l)_{.kj}``) and, unless
    ``W[l]`` is empty, the topic counts ``W[l]`` (``x^(l)_{:k.}``; for layer 1
    the rows of the chunk's words, ``lay.words``, only) to the arrays given.
    With ``layer1=False`` the layer-1 counts are already in ``A[0]`` and
    ``W[0]`` (the collapsed sampler, :mod:`._collapsed`) and the pass starts
    at the CRT above them. ``tables``, optional, holds one int64 buffer per
    layer for the CRT draws, and ``shape0`` layer 1's prior shapes if the
    caller has them already. Returns the top-layer tables summed over the
    documents, ``x^(L+1)_{k.}``, and the prior shapes used by the CRT draws.
    """
    partition_dense_, crt_ = kern[1], kern[2]
    L = len(phis)
    if layer1:
        _partition_layer1(lay, theta, phis, rng, kern, A, W)
    shapes = []
    top = None
    for l in range(L):
        shape_l = (shape0 if l == 0 and shape0 is not None
                   else _prior_shape(l, theta, phis, r, lay.n))
        shapes.append(shape_l)
        if l < L - 1:
            m = crt_(A[l], shape_l, rng, None if tables is None else tables[l])
            partition_dense_(m, theta[l + 1], phis[l + 1], rng, A[l + 1], W[l + 1])
        else:
            top = crt_(A[l], shape_l, rng, column_sums=True)
    return top, shapes


def _scales(A0, shapes, theta, rng, a0, b0, e0, f0, lengths=None, scale_rates_=scale_rates,
            r_total=None):
    """Downward auxiliaries: ``p_j^(2)``, ``c_j^(l)`` and ``q_j^(l)`` (Lemma 3.1).

    ``p^(2) ~ Beta(a0 + x^(1)_{..j}, b0 + sum_k shape_kj)`` (``theta^(1)``
    marginalised), ``c^(l+1) ~ Gam(e0 + sum_k shape_kj, 1/(f0 + theta^(l)_{.j}))``;
    ``q^(1) = 1``, ``q^(l+1) = ln(1 + q^(l) / c^(l+1))``. None of these depends
    on ``Phi`` (its columns sum to one). The draws are ``scale_rates_``'s (the
    kernel set's :func:`scale_rates`). Returns the rates of the ``theta^(l)``
    conditionals, ``c^(l+1) + q^(l)`` per layer (``c^(1) = (1 - p^(2)) / p^(2)``),
    and ``q^(L+1)``. ``lengths``, optional, is ``A0.sum(axis=1)`` known beforehand
    (with the Poisson link, the documents' lengths); ``r_total``, optional, is
    ``r.sum()`` as a read-only ``(1, n_docs)`` array (:func:`_row_totals`), the
    prior shapes' row sums of a one-layer model: it spares summing ``r`` over each
    row at every sweep.
    """
    n, L = A0.shape[0], len(shapes)
    if lengths is None:
        lengths = A0.sum(axis=1)
    if L == 1 and r_total is not None:
        sums = tsums = r_total
    else:
        sums = np.array([s.sum(axis=1) for s in shapes]).reshape(L, n)
        tsums = np.array([sums[0]] + [theta[l].sum(axis=1) for l in range(1, L)])
    rates, inv = scale_rates_(np.ascontiguousarray(lengths, dtype=np.int64), sums, tsums, rng,
                              a0, b0, e0, f0, _P_CLIP)
    # q^(1) = 1: the first ratio q^(1) / c^(1) is the kernel's 1 / rates[0]
    rate_q = [rates[0] + 1.0]
    q = np.log1p(inv)
    for l in range(1, L):
        rate_q.append(rates[l] + q)
        q = np.log1p(q / rates[l])
    return rate_q, q


def _row_totals(r, n):
    """``r.sum()`` for each of ``n`` documents, a ``(1, n)`` view with zero strides:
    the sum of each row of ``r`` broadcast over them (the same pairwise sum)."""
    return np.broadcast_to(np.full((1, 1), np.asarray(r).sum()), (1, n))


def _downward_theta(theta, phis, r, A, rate_q, rng, gamma_, lowest=0):
    """``theta^(l) ~ Gam(shape + x^(l)_{.kj}, 1/(c^(l+1) + q^(l)))``, top layer first,
    down to layer ``lowest`` (0-based)."""
    n = A[0].shape[0]
    for l in reversed(range(lowest, len(phis))):
        theta[l] = gamma_(_prior_shape(l, theta, phis, r, n), A[l], rate_q[l], rng, FLOOR)
    return theta


def upward_downward(X, rng, *, phis, r, a0=0.01, b0=0.01, e0=1.0, f0=1.0,
                    n_burn=0, n_collect=1, link="poisson", collect_topics=True,
                    theta=None, kernels="cython", compact_words=False, em_steps=0,
                    collapse_theta=True, keep_theta=True, loglik=True):
    """Upward-downward Gibbs sweeps on the documents of ``X`` under fixed globals.

    This is the local sampler of Alg. 1, line 3 (the globals stay fixed while
    it runs). The batch Gibbs sampler, which also draws the globals, is
    :func:`gibbs_upward` and :func:`gibbs_downward` with the global draws in
    between (see :func:`skdgm.deep_lda._gibbs.gibbs_sweep`).

    The work of a sweep is proportional to the chunk's entries and documents
    (times the topics), never to the vocabulary: layer-1 topic counts are kept
    for the chunk's own words only, and accumulate over the collected sweeps in
    one integer buffer.

    Parameters
    ----------
    X : sparse matrix of shape (n_docs, V)
        Word counts (``link="poisson"``) or 0/1 occurrences (``"bernoulli"``),
        or the same chunk laid out ahead by ``_Layout.of_rows`` (the same results).
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
    compact_words : bool, default=False
        Return the layer-1 topic counts for the chunk's words only
        (``topic_counts[0][i]`` is the row of word ``words[i]``) instead of a
        ``(V, K_1)`` array that is zero outside them.
    em_steps : int, default=0
        Without ``theta``, start ``theta^(1)`` from this many multiplicative EM
        steps of the documents' topic proportions (given ``Phi^(1)``) instead
        of spreading each document's length evenly.
    collapse_theta : bool, default=True
        With the Poisson link, integrate ``theta^(1)`` out (:mod:`._collapsed`):
        the first sweep assigns every token given the starting ``theta^(1)``,
        later sweeps redraw each token's topic from ``phi_vk (n_jk^- + a_jk)``;
        the collected ``theta^(1)`` sums hold its conditional means
        ``(a_jk + n_jk) / (c_j^(2) + 1)`` and ``(a_jk + n_jk) / sum_k (...)``
        (Rao-Blackwellised), and the final ``theta^(1)`` is one draw from its
        conditional. Same stationary law as the explicit sampler
        (``False``, the only one for the Bernoulli link), with a few topics'
        work per token instead of ``K`` and no gamma draws of ``theta^(1)``.
    keep_theta : bool, default=True
        Return the chain's final ``theta`` (to continue it later). ``False``
        returns ``None`` and spares the collapsed ``theta^(1)``'s final draw, which
        comes after every other: the other results are the same.
    loglik : bool, default=True
        Compute ``loglik`` (no random draw: ``False`` returns 0 and changes
        nothing else).

    Returns
    -------
    result : dict
        ``topic_counts`` (list, per layer, ``E[x_{:k.}]`` summed over documents),
        ``words`` (the chunk's words, sorted), ``top_tables``
        (``E[x^(L+1)_{k.}]``), ``q_top`` (``E[sum_j q_j^(L+1)]``),
        ``theta_sum`` / ``theta_norm_sum`` (per layer, summed over collected
        sweeps), ``n_collect``, the final ``theta``, and ``loglik`` /
        ``n_words``: the log-probability of the chunk's own words (counts, or
        ones) under its collected rates ``Phi^(1) theta^(1)``, averaged and
        normalised per document as
        :func:`skdgm.deep_lda._evaluate.heldout_loglik` does, and their
        number, for a training-perplexity estimate.
    """
    chain = LocalChain(X, phis=phis, r=r, a0=a0, b0=b0, e0=e0, f0=f0, link=link,
                       theta=theta, kernels=kernels, compact_words=compact_words,
                       em_steps=em_steps, collapse_theta=collapse_theta,
                       collect_topics=collect_topics and n_collect > 0,
                       n_sweeps=n_burn + n_collect)
    chain.run(rng, n_burn, n_collect)
    return chain.result(rng, collect_topics=collect_topics, keep_theta=keep_theta,
                        loglik=loglik)


class LocalChain:
    """The state of :func:`upward_downward` on one chunk, kept between calls.

    ``upward_downward`` is one ``LocalChain`` run once. Held across calls, the
    chain continues without rebuilding its layout or, with ``theta^(1)``
    collapsed, re-assigning its tokens: :meth:`set_globals` swaps in another
    global sample (the held-out protocol's test chains, carried over from one
    kept sample to the next) and :meth:`run` adds sweeps. The parameters are
    those of :func:`upward_downward`; ``collect_topics`` allocates the
    topic-count buffers and ``n_sweeps`` (the sweeps the chain will make, if
    known) lets a chain that makes none skip the collapsed state.
    """

    def __init__(self, X, *, phis, r, a0=0.01, b0=0.01, e0=1.0, f0=1.0, link="poisson",
                 theta=None, kernels="cython", compact_words=False, em_steps=0,
                 collapse_theta=True, collect_topics=True, n_sweeps=None):
        self.kern = kern = _KERNELS[kernels]
        self.hyper = (a0, b0, e0, f0)
        self.link = link
        self.phis = phis = [np.ascontiguousarray(p, dtype=np.float64) for p in phis]
        self.r = r = np.asarray(r, dtype=np.float64)
        # a chunk laid out ahead (_Layout.of_rows) is only bound to the topics
        self.lay = lay = (X.bind(phis) if isinstance(X, _Layout)
                          else _Layout(X, phis, r, link))
        n, L, Ks = lay.n, len(phis), lay.Ks
        self.compact_words = compact_words
        # a collapsed chain with no theta to start from draws its tokens in turn
        # (the sequential start of collapsed LDA): near its typical set at once
        self.fresh = theta is None and not em_steps
        self.theta = lay.start_theta(theta, em_steps,
                                     _local_fast.em_steps if kernels == "cython" else None)
        self.started = False
        self.reset_sums()
        self.norm_buf = [np.empty((n, K)) for K in Ks]
        # count buffers are reused across sweeps: fresh arrays every sweep cost
        # page faults and evict Phi^(1) from cache. The topic counts W are added
        # to by every collected sweep and averaged once at the end.
        self.A = [np.zeros((n, K), dtype=np.int64) for K in Ks]
        self.rows_w = [lay.words.size] + [phis[l].shape[0] for l in range(1, L)]
        self.W = ([np.zeros((self.rows_w[l], Ks[l]), dtype=np.int64) for l in range(L)]
                  if collect_topics else None)
        self.W_none = [np.zeros((0, K), dtype=np.int64) for K in Ks]
        self.tables = [np.empty((n, K), dtype=np.int64) for K in Ks]
        # the layer-1 counts of a document always add up to its length
        self.lengths = (np.bincount(lay.rows, weights=lay.data, minlength=n).astype(np.int64)
                        if link == "poisson" else None)
        self.collapsed = None
        if collapse_theta and link == "poisson" and (n_sweeps is None or n_sweeps > 0):
            # its layer-1 topic counts are held in doubles, in the rows of the
            # array returned (every word's, unless compact_words), and averaged in
            # place: no int-to-float copy and no (V, K) scatter at the end, fresh
            # arrays whose page faults cost as much as a sweep
            dense_rows = not compact_words
            self.collapsed = _collapsed.Layer1(lay, kernels, shared=r if L == 1 else None,
                                               word_rows=lay.words if dense_rows else None,
                                               entry_dots=kern[7])
            self.A[0] = self.collapsed.doc_topic
            self.W_none[0] = np.zeros((0, Ks[0]))
            if self.W is not None:
                self.W[0] = np.zeros((lay.V if dense_rows else lay.words.size, Ks[0]))
        self.low = 0 if self.collapsed is None else 1
        # layer 1's prior shapes Phi^(2) theta^(2) (or r), formed once per change
        # of theta^(2): read by the layer-1 step, the CRT and the collected sums
        self.prior0 = _prior_shape(0, self.theta, phis, r, n)
        self.r_total = _row_totals(r, n)
        self.rate_q = None

    def reset_sums(self):
        """Zero the collected sums (``theta_sum``, ``theta_norm_sum``, tables, ``q``)."""
        n, Ks = self.lay.n, self.lay.Ks
        if getattr(self, "theta_sum", None) is None:
            self.theta_sum = [np.zeros((n, K)) for K in Ks]
            self.theta_norm_sum = [np.zeros((n, K)) for K in Ks]
        else:
            for a in self.theta_sum + self.theta_norm_sum:
                a.fill(0.0)
        self.top_sum = np.zeros(Ks[-1])
        self.q_sum = 0.0
        self.n_collected = 0

    def set_globals(self, phis, r):
        """Continue the chain under other globals of the same shapes (the state is kept)."""
        lay = self.lay
        self.phis = phis = [np.ascontiguousarray(p, dtype=np.float64) for p in phis]
        self.r = r = np.asarray(r, dtype=np.float64)
        lay.bind(phis)
        if self.collapsed is not None and self.collapsed.shared:
            self.collapsed.total = self.collapsed.kern[3](lay.phi_words, r)
        self.prior0 = _prior_shape(0, self.theta, phis, r, lay.n)
        self.r_total = _row_totals(r, lay.n)

    def run(self, rng, n_burn, n_collect, collect_topics=None):
        """``n_burn`` sweeps, then ``n_collect`` whose statistics are added to the sums."""
        lay, kern, phis, r = self.lay, self.kern, self.phis, self.r
        n, L = lay.n, len(phis)
        a0, b0, e0, f0 = self.hyper
        collapsed, low, theta, A = self.collapsed, self.low, self.theta, self.A
        collect_topics = self.W is not None if collect_topics is None else collect_topics
        for sweep in range(n_burn + n_collect):
            collect = sweep >= n_burn
            for a in A[low:]:
                a.fill(0)
            W = self.W if collect and collect_topics else self.W_none
            if collapsed is not None:
                if not self.started:
                    collapsed.start(None if self.fresh else theta[0], rng, W[0], self.prior0)
                else:
                    collapsed.sweep(self.prior0, rng, W[0])
            self.started = True
            top, shapes = _upward(lay, theta, phis, r, rng, kern, A, W,
                                  layer1=collapsed is None, tables=self.tables,
                                  shape0=self.prior0)
            rate_q, q_top = _scales(A[0], shapes, theta, rng, a0, b0, e0, f0, self.lengths,
                                    kern[8], self.r_total)
            self.rate_q = rate_q
            theta = self.theta = _downward_theta(theta, phis, r, A, rate_q, rng, kern[4],
                                                 lowest=low)
            if L > 1:
                self.prior0 = _prior_shape(0, theta, phis, r, n)
            if collect:
                self.n_collected += 1
                self.top_sum += top
                self.q_sum += q_top.sum()
                if collapsed is not None:
                    # theta^(1)'s conditional means, not a draw (Rao-Blackwell)
                    collapsed.collect(self.prior0, rate_q[0], self.theta_sum[0],
                                      self.theta_norm_sum[0])
                for l in range(low, L):
                    self.theta_sum[l] += theta[l]
                    np.divide(theta[l], theta[l].sum(axis=1, keepdims=True),
                              out=self.norm_buf[l])
                    self.theta_norm_sum[l] += self.norm_buf[l]

    def final_theta(self, rng):
        """The chain's hidden units, with a collapsed ``theta^(1)`` drawn from its conditional."""
        if self.collapsed is not None and self.rate_q is not None:
            self.theta[0] = self.kern[4](self.prior0, self.A[0], self.rate_q[0], rng, FLOOR)
        return self.theta

    def result(self, rng, collect_topics=True, loglik=True, keep_theta=True):
        """The dict :func:`upward_downward` returns, for the sweeps collected so far."""
        lay, L, Ks = self.lay, len(self.phis), self.lay.Ks
        theta = self.final_theta(rng) if keep_theta else None
        n_collect = self.n_collected
        nc = max(n_collect, 1)
        counts = None
        if collect_topics:
            if self.W is None or n_collect == 0:
                counts = [np.zeros((self.rows_w[l], Ks[l])) for l in range(L)]
            else:
                # the collapsed layer's counts are doubles already: averaged in place
                counts = [np.divide(w, nc, out=w) if w.dtype == np.float64 else w / nc
                          for w in self.W]
            if not self.compact_words and counts[0].shape[0] != lay.V:
                dense = np.zeros((lay.V, Ks[0]))
                dense[lay.words] = counts[0]
                counts[0] = dense
        ll, n_words = (_own_words_loglik(lay, self.theta_sum[0], self.kern[7])
                       if n_collect > 0 and loglik else (0.0, 0.0))
        return {
            "topic_counts": counts,
            "words": lay.words,
            "top_tables": self.top_sum / nc,
            "q_top": self.q_sum / nc,
            "theta_sum": self.theta_sum,
            "theta_norm_sum": self.theta_norm_sum,
            "n_collect": n_collect,
            "theta": theta,
            "loglik": ll,
            "n_words": n_words,
        }


def _own_words_loglik(lay, theta_sum, entry_dots_=_local_fast.entry_dots):
    """``sum x log p(word)`` of the chunk's entries under ``Phi^(1) theta_sum`` normalised.

    The columns of ``Phi^(1)`` sum to one, so a document's predictive
    distribution is ``Phi^(1) theta_j / |theta_j|``; ``entry_dots_`` is the
    kernel set's :func:`entry_dots`.
    """
    if lay.indices.size == 0:
        return 0.0, 0.0
    num = entry_dots_(lay.indptr, lay.loc, lay.phi_words,
                      np.ascontiguousarray(theta_sum, dtype=np.float64))
    den = theta_sum.sum(axis=1)[lay.rows]
    x = lay.data.astype(np.float64)
    with np.errstate(divide="ignore"):
        return float(np.sum(x * np.log(num / den))), float(x.sum())


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
    W = [np.zeros((lay.words.size if l == 0 else p.shape[0], p.shape[1]), dtype=np.int64)
         for l, p in enumerate(phis)]
    top, shapes = _upward(lay, theta, phis, r, rng, kern, A, W)
    rate_q, q_top = _scales(A[0], shapes, theta, rng, a0, b0, e0, f0, scale_rates_=kern[8])
    counts = [w.astype(np.float64) for w in W]
    dense = np.zeros((lay.V, lay.Ks[0]))
    dense[lay.words] = counts[0]
    counts[0] = dense
    return {
        "topic_counts": counts,
        "top_tables": top.astype(np.float64),
        "q_top": float(q_top.sum()),
        "carry": {"theta": theta, "A": A, "rate": rate_q},
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


def samples_task(task, rng, *, samples, n_burn, n_collect, what, em_steps=0, **kwargs):
    """``run_chains`` entry point: one chunk's chain carried over every kept global sample.

    The chain (a :class:`LocalChain` on the documents ``task``, built once)
    makes ``n_burn`` sweeps under the first of ``samples`` (a list of ``(phis,
    r)``), then ``n_collect`` collected sweeps under each sample in turn, its
    state kept from one sample to the next: the protocol of
    :func:`skdgm.deep_lda._posterior.theta_moments` and
    :func:`skdgm.deep_lda._evaluate.heldout_loglik` in one task, so that a call
    pays one layout, one start and one dispatch per chunk.

    ``what="moments"``: every collected sweep's normalised ``theta^(l)`` (layer 1
    Rao-Blackwellised when collapsed) is one draw of the documents' features;
    returns ``{"mean": [...], "var": [...]}`` per layer over all the draws
    (``what="mean"``: the means only, half the data to send back).
    ``what="theta_sums"``: returns the list, per sample, of ``theta^(1)`` summed
    over its collected sweeps. ``what="heldout"``: ``task`` is ``(X_chunk,
    X_held_chunk)`` (CSR, the same documents); returns the list, per sample, of
    ``(num, den)``: the rate ``Phi^(1) theta_sum`` of every held-out entry (in CSR
    order) and the documents' ``|theta_sum|``, the sums
    :func:`skdgm.deep_lda._evaluate.heldout_loglik` reduces. Formed here, in the
    worker, rather than from ``theta_sums`` in the calling process: the same
    arithmetic row by row, so the same numbers, with only ``O(entries)`` returned
    and no serial pass over them (issue 26).
    """
    held = None
    if what == "heldout":
        task, held = task
        held = rows_of(held)
        held_ptr, held_loc = held.indptr.astype(np.int64), held.indices.astype(np.int64)
    task = rows_of(task)
    chain = None
    out = [] if what in ("theta_sums", "heldout") else None
    for i, (phis, r) in enumerate(samples):
        if chain is None:
            chain = LocalChain(task, phis=phis, r=r, theta=None, em_steps=em_steps,
                               collect_topics=False, **kwargs)
        else:
            chain.set_globals(phis, r)
        burn = n_burn if i == 0 else 0
        if held is not None:
            chain.run(rng, burn, n_collect)
            th = chain.theta_sum[0]
            out.append((_local_fast.entry_dots(held_ptr, held_loc, chain.phis[0], th),
                        th.sum(axis=1)))
            chain.reset_sums()
            continue
        if what == "theta_sums":
            chain.run(rng, burn, n_collect)
            out.append(chain.theta_sum[0].copy())
            chain.reset_sums()
            continue
        chain.run(rng, burn, 0)
        for _ in range(n_collect):
            chain.run(rng, 0, 1)
            if out is None:
                out = [Moments() for _ in chain.theta_norm_sum]
            for acc, draw in zip(out, chain.theta_norm_sum):
                acc.add(draw)
            chain.reset_sums()
    if what in ("theta_sums", "heldout"):
        return out
    return {"mean": [a.mean() for a in out],
            "var": [a.var() for a in out] if what == "moments" else None}


class RowSlice:
    """The rows ``sl`` of a matrix ``X``, cut by the task that reads them.

    A chunk handed to a thread worker as ``RowSlice`` is cut by that worker
    (:func:`rows_of`), not by the calling thread before the chunks start: cutting
    a minibatch of 2,000 documents into chunks cost the calling thread about 1 ms
    an update, and a perplexity call about 10 ms, serial time two workers cannot
    share (``bench_parallel.py --profile``, issue 26). Sent to a process worker it
    is pickled as the cut rows alone. The rows are those of ``X[sl]`` either way.
    """

    __slots__ = ("X", "sl")

    def __init__(self, X, sl):
        self.X, self.sl = X, sl

    def __reduce__(self):
        return _as_is, (self.X[self.sl],)


def _as_is(rows):
    return rows


def rows_of(task):
    """The rows a :class:`RowSlice` stands for (anything else as it is)."""
    return task.X[task.sl] if isinstance(task, RowSlice) else task


class StandardNormals:
    """The next ``size`` standard normals of the generator ``rng``, drawn as one more
    task of a training update's local step.

    The global step (:func:`skdgm.deep_lda._global.sg_update`) draws its normals
    from its own generator, which the local step never reads: drawn by a worker
    beside the chunks, the costliest-first order of thread workers leaves them to
    the end, where the other thread would wait for the last chunk, and the serial
    global step after the local one is shorter by their draw (issue 26).
    :meth:`receive` takes the task's result and sets ``rng`` to the state it had
    after the draw, so a process worker, which drew from a copy, leaves the
    caller's generator where a thread worker or the caller itself would have: the
    same normals, the same stream after them, for every ``n_jobs`` and backend.
    """

    __slots__ = ("rng", "size", "noise")

    #: CPU seconds per normal, rounded up (about 4 ms per million): the task's cost
    #: for :func:`skdgm._core.chains.run_chains`' order and threshold
    SECONDS_PER_DRAW = 5e-9

    def __init__(self, rng, size):
        self.rng, self.size, self.noise = rng, int(size), None

    @property
    def cost(self):
        return self.size * self.SECONDS_PER_DRAW

    def draw(self):
        return self.rng.standard_normal(self.size), self.rng.bit_generator.state

    def receive(self, result):
        self.noise, state = result
        self.rng.bit_generator.state = state


def local_task(task, rng, **kwargs):
    """``run_chains`` entry point: ``task`` is ``X_chunk`` or ``(X_chunk, theta)``,
    ``X_chunk`` a matrix or a :class:`RowSlice` of one, or a :class:`StandardNormals`
    drawn beside the chunks (``rng`` unused)."""
    if isinstance(task, StandardNormals):
        return task.draw()
    if isinstance(task, tuple):
        X, theta = task
        return upward_downward(rows_of(X), rng, theta=theta, **kwargs)
    return upward_downward(rows_of(task), rng, **kwargs)


def merge_chunks(results, n_features, stack_theta=True, kernels="cython", n_jobs=None):
    """The statistics of a minibatch from its chunks' :func:`upward_downward` results.

    Sums the topic counts (adding each chunk's layer-1 rows, kept for its own
    words only, into a ``(n_features, K_1)`` array, chunk by chunk in order),
    the top-layer tables, ``q`` and the own-words log-likelihoods, and, with
    ``stack_theta``, stacks the documents' sums of ``theta`` (a training update
    reads none of them: ``False`` leaves them out, the rest unchanged).
    ``kernels`` picks :func:`._local_fast.add_rows` or its NumPy twin for the
    layer-1 rows (the same sums). With ``n_jobs`` workers, threads add into
    disjoint ranges of the words (:func:`skdgm._core.chains.map_threads`): every
    entry still receives the chunks' counts in chunk order, so the sums are the
    same; the join left the calling thread's serial path (issue 26).
    """
    L = len(results[0]["theta_sum"])
    out = {
        "top_tables": sum(res["top_tables"] for res in results),
        "q_top": float(sum(res["q_top"] for res in results)),
        "n_collect": results[0]["n_collect"],
        "loglik": float(sum(res["loglik"] for res in results)),
        "n_words": float(sum(res["n_words"] for res in results)),
    }
    if results[0]["topic_counts"] is not None:
        first = _join_first_layer(results, n_features, kernels, n_jobs)
        out["topic_counts"] = [first] + [sum(res["topic_counts"][l] for res in results)
                                         for l in range(1, L)]
    if stack_theta:
        for key in ("theta_sum", "theta_norm_sum"):
            out[key] = [np.vstack([res[key][l] for res in results]) for l in range(L)]
    return out


def _join_first_layer(results, n_features, kernels, n_jobs):
    """The chunks' layer-1 topic counts added into one ``(n_features, K_1)`` array,
    chunk by chunk in order, on up to ``n_jobs`` threads, each over its own range
    of words (a chunk's ``words`` are sorted: its rows of a range are a slice)."""
    add = _local_fast.add_rows if kernels == "cython" else add_rows
    first = np.zeros((n_features, results[0]["topic_counts"][0].shape[1]))
    parts = [(None, c) if c.shape[0] == n_features else
             (np.asarray(res["words"], dtype=np.int64),
              np.ascontiguousarray(c, dtype=np.float64))
             for res in results for c in [res["topic_counts"][0]]]

    def join(span):
        for words, counts in parts:
            if words is None:
                first[span] += counts[span]
            else:
                a, b = np.searchsorted(words, (span.start, span.stop))
                add(first, words[a:b], counts[a:b])

    # two ranges whatever n_jobs is (the sums do not depend on them); a small join
    # (one chunk of a default minibatch) stays on the calling thread, where it
    # costs less than starting two threads
    entries = sum(c.size for _, c in parts)
    map_threads(join, even_chunks(n_features, 2),
                n_jobs=n_jobs if entries >= JOIN_SPLIT_ENTRIES else 1)
    return first


def words_loglik(X, phi, theta):
    """``sum x log p(word)`` of the entries of ``X`` under ``phi theta_j / |theta_j|``.

    The log-probability of each document's own words under its rates
    ``Phi^(1) theta_j^(1)`` (columns of ``Phi^(1)`` on the simplex), and the
    number of words: for a training-perplexity estimate.

    Returns
    -------
    loglik, n_words : float
    """
    lay = _Layout(X, [phi], np.ones(phi.shape[1]), "poisson")
    return _own_words_loglik(lay, np.asarray(theta, dtype=np.float64))


def round_counts(X):
    """``X`` rounded to the nearest integers (a new array or CSR matrix)."""
    if sp.issparse(X):
        X = X.copy()
        X.data = np.rint(X.data)
        X.eliminate_zeros()
        return X
    return np.rint(X)
