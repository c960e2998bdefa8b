"""Cython kernels of the upward-downward Gibbs sampler (Zhou et al., 2016a).

Each kernel has a NumPy twin of the same name in :mod:`skdgm.deep_lda._local`
that consumes the same random numbers in the same order, and the tests check
that the two agree exactly. Kernels take ``const`` memoryviews (joblib's process
backend hands large arrays over as read-only memmaps), run without the GIL, and
draw through numpy's own bit generator under its lock.
"""
from libc.math cimport exp, expm1, log, log1p, pow
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport (random_standard_uniform, random_poisson,
                                           random_standard_gamma, random_beta,
                                           random_standard_exponential)

import numpy as np

from skdgm._core._random cimport bitgen_of
from skdgm.deep_lda._sums cimport _dot4, _first_above, _sum4

ctypedef long long int64

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define SKDGM_PREFETCH(p) __builtin_prefetch((const void *)(p))
    #else
    #define SKDGM_PREFETCH(p) ((void)(p))
    #endif
    """
    void SKDGM_PREFETCH(const void* p) noexcept nogil

# Entries with at least this many tokens bisect a running sum instead of walking it:
# building the sum costs about two walks (K additions vs K / 2 each), so two
# tokens gain nothing and three or more do.
cdef enum:
    _BISECT_MIN = 3


def partition_counts(const int64[::1] indptr, const int64[::1] indices,
                     const int64[::1] counts, const double[:, ::1] row_factor,
                     const double[:, ::1] col_factor, rng, int64[:, ::1] row_out,
                     int64[:, ::1] col_out):
    """Multinomial partition of CSR counts over topics (Eq. 6, the ``Mult`` lines).

    Entry ``(i, c)`` of the CSR matrix ``(indptr, indices, counts)`` is split
    over the ``K`` topics with probabilities proportional to
    ``w_k = row_factor[i, k] * col_factor[c, k]``, one token at a time: a uniform
    ``u`` scaled by the total is located by a linear walk of the running sum
    (first ``k`` with ``w_0 + ... + w_k > u * total``, else ``K - 1``); an
    entry of three or more tokens stores that running sum once and bisects it,
    which yields the same ``k`` with O(log K) work per token. The
    total is formed from four interleaved partial sums (``k mod 4``) so that it
    is not one long chain of dependent additions; the walk stops on average
    half-way. The topic counts are *added* to ``row_out[i, k]`` and
    ``col_out[c, k]`` (pass an empty ``(0, K)`` array to skip either).

    Documents by words (rows = documents, ``row_factor = theta``,
    ``col_factor = phi``) or words by documents (the transpose, which keeps each
    word's topic row in cache while the minibatch's ``theta`` stays in L2) give
    the same law; the random numbers are used in the row-major order of the
    matrix given. A row of all-zero probabilities falls back to a uniform topic
    so that counts are always conserved.
    """
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1
    cdef Py_ssize_t K = row_factor.shape[1]
    cdef bint want_row = row_out.shape[0] > 0
    cdef bint want_col = col_out.shape[0] > 0
    cdef double[::1] w = np.empty(K, dtype=np.float64)
    cdef bitgen_t* bg = bitgen_of(rng)
    cdef Py_ssize_t i, e, c, k
    cdef int64 n, t
    cdef double tot, u, cum, s0, s1, s2, s3, a0, a1, a2, a3
    cdef const double* rp
    cdef const double* cp
    cdef double* wp = &w[0] if K > 0 else NULL
    if (row_factor.shape[0] < n_rows or col_factor.shape[1] != K
            or (want_row and row_out.shape[0] < n_rows)):
        raise ValueError("partition_counts: inconsistent shapes")
    with rng.bit_generator.lock, nogil:
        for i in range(n_rows):
            for e in range(indptr[i], indptr[i + 1]):
                n = counts[e]
                if n <= 0:
                    continue
                c = indices[e]
                # raw rows: no per-access stride arithmetic, products kept in
                # registers for the four partial sums
                rp = &row_factor[i, 0]
                cp = &col_factor[c, 0]
                s0 = 0.0
                s1 = 0.0
                s2 = 0.0
                s3 = 0.0
                k = 0
                while k + 3 < K:
                    a0 = rp[k] * cp[k]
                    a1 = rp[k + 1] * cp[k + 1]
                    a2 = rp[k + 2] * cp[k + 2]
                    a3 = rp[k + 3] * cp[k + 3]
                    wp[k] = a0
                    wp[k + 1] = a1
                    wp[k + 2] = a2
                    wp[k + 3] = a3
                    s0 = s0 + a0
                    s1 = s1 + a1
                    s2 = s2 + a2
                    s3 = s3 + a3
                    k = k + 4
                if k < K:
                    wp[k] = rp[k] * cp[k]
                    s0 = s0 + wp[k]
                if k + 1 < K:
                    wp[k + 1] = rp[k + 1] * cp[k + 1]
                    s1 = s1 + wp[k + 1]
                if k + 2 < K:
                    wp[k + 2] = rp[k + 2] * cp[k + 2]
                    s2 = s2 + wp[k + 2]
                tot = (s0 + s1) + (s2 + s3)
                if n >= _BISECT_MIN and tot > 0.0:
                    # Several tokens share these weights: build the running sum once
                    # (the very additions the walk would make) and bisect it per
                    # token, which finds the walk's k exactly.
                    cum = 0.0
                    for k in range(K):
                        cum = cum + wp[k]
                        wp[k] = cum
                for t in range(n):
                    u = random_standard_uniform(bg)
                    if tot > 0.0 and n >= _BISECT_MIN:
                        u = u * tot
                        k = _first_above(wp, K, u)
                    elif tot > 0.0:
                        u = u * tot
                        cum = 0.0
                        k = 0
                        while k < K - 1:
                            cum = cum + wp[k]
                            if cum > u:
                                break
                            k = k + 1
                    else:
                        k = <Py_ssize_t>(u * K)
                        if k >= K:
                            k = K - 1
                    if want_row:
                        row_out[i, k] += 1
                    if want_col:
                        col_out[c, k] += 1


def partition_sparse(const int64[::1] indptr, const int64[::1] indices,
                     const int64[::1] counts, const double[:, ::1] row_factor,
                     const double[:, ::1] col_factor, double tau_frac, rng,
                     int64[:, ::1] row_out, int64[:, ::1] col_out, row_sum=None,
                     row_cum=None):
    """:func:`partition_counts` by exact rejection from a sparse envelope (Eq. 6, ``Mult``).

    Same law as :func:`partition_counts` (entry ``(i, c)`` split over topics with
    probabilities proportional to ``w_k = row_factor[i, k] * col_factor[c, k]``),
    at a cost per token that grows with the number of *large* entries of
    ``col_factor[c]`` instead of with ``K``. The layer-1 partition is called
    words by documents (``row_factor = Phi^(1)`` rows, ``col_factor = theta^(1)``),
    and a document's ``theta`` is effectively sparse: the topics it holds no
    token of get ``Gam(r_k)`` draws with small shapes.

    For column ``c`` let ``tau_c = tau_frac * sum_k col_factor[c, k] / K``
    (sums here are four interleaved partial sums, see :func:`_sum4`) and
    ``B_c = {k : col_factor[c, k] >= tau_c}`` (never empty when the sum is
    positive and ``tau_frac < 1``). The envelope of ``w`` is ``w_k`` on ``B_c``
    plus ``tau_c * row_factor[i, k]`` on every ``k``; ``B_c`` is ordered by
    decreasing ``col_factor[c, k]`` (ties by index). Its total is
    ``E = P + tau_c * S_i`` with ``P = sum_{k in B_c} w_k`` and ``S_i`` the
    row sum of ``row_factor``. One uniform ``u`` places ``u E``: below ``P`` it
    picks ``k`` in ``B_c`` from the running sum of ``w`` over ``B_c`` and is
    accepted; above,
    ``(u E - P) / tau_c`` locates ``k`` in the running sum of ``row_factor[i]``
    (bisection), which is rejected if ``k`` is in ``B_c`` and otherwise
    accepted when a second uniform ``u'`` has ``u' tau_c < col_factor[c, k]``.
    Accepted draws then have density ``w_k`` on ``B_c`` and
    ``tau_c row_factor[i, k] * col_factor[c, k] / tau_c = w_k`` off it: exactly
    the multinomial's. A rejection restarts the token.

    An entry whose acceptance bound ``P / E`` is below one half (``B_c`` misses
    the word's mass) uses the dense running sum of all ``K`` products instead
    (bisected per token), which keeps the expected number of attempts below
    two; a column of zero weights falls back to a uniform topic, as
    :func:`partition_counts` does. ``tau_frac = 0`` takes every topic into
    ``B_c`` and never rejects. Counts are *added* to ``row_out`` and ``col_out``
    (an empty ``(0, K)`` array skips either); the NumPy twin
    :func:`skdgm.deep_lda._local.partition_sparse` consumes the same uniforms.

    ``row_sum`` (``S_i`` as :func:`_sum4` forms it) and ``row_cum`` (the
    sequential running sums of the rows) may be passed in when ``row_factor``
    is reused across calls (``Phi^(1)`` stays fixed over all sweeps of a local
    chain); otherwise they are formed here.
    """
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1
    cdef Py_ssize_t n_cols = col_factor.shape[0]
    cdef Py_ssize_t K = row_factor.shape[1]
    cdef bint want_row = row_out.shape[0] > 0
    cdef bint want_col = col_out.shape[0] > 0
    if (col_factor.shape[1] != K or (want_row and row_out.shape[0] < n_rows)
            or (want_col and (col_out.shape[0] < n_cols or col_out.shape[1] != K))
            or (want_row and row_out.shape[1] != K) or row_factor.shape[0] < n_rows):
        raise ValueError("partition_sparse: inconsistent shapes")
    if not (0.0 <= tau_frac < 1.0):
        raise ValueError(f"partition_sparse: tau_frac must be in [0, 1), got {tau_frac}")
    if K == 0:
        return
    cdef bint given_cum = row_cum is not None
    cdef bint fill_sum
    if row_sum is None:
        row_sum = np.empty(n_rows, dtype=np.float64)
        fill_sum = True
    else:
        fill_sum = False
    cdef const double[::1] S_v = row_sum
    cdef const double[:, ::1] rc_v = row_cum if given_cum else np.empty((0, K))
    if S_v.shape[0] < n_rows or (given_cum and (rc_v.shape[0] < n_rows
                                               or rc_v.shape[1] != K)):
        raise ValueError("partition_sparse: inconsistent shapes")
    cdef double* S_fill = NULL
    cdef double[::1] S_w
    if fill_sum:
        S_w = row_sum
        S_fill = &S_w[0] if n_rows > 0 else NULL
    tau_a = np.empty(n_cols, dtype=np.float64)
    bptr_a = np.zeros(n_cols + 1, dtype=np.int64)
    bidx_a = np.empty(n_cols * K, dtype=np.intc)
    bval_a = np.empty(n_cols * K, dtype=np.float64)
    rcum_a = np.empty(K, dtype=np.float64)
    wb_a = np.empty(K, dtype=np.float64)
    cdef double[::1] tau = tau_a
    cdef int64[::1] bptr = bptr_a
    cdef int[::1] bidx = bidx_a
    cdef double[::1] bval = bval_a
    cdef double[::1] rcum_v = rcum_a
    cdef double[::1] wb_v = wb_a
    wrow_a = np.zeros(K, dtype=np.int64)
    touched_a = np.empty(K, dtype=np.int64)
    cdef int64[::1] wrow = wrow_a
    cdef int64[::1] touched = touched_a
    cdef Py_ssize_t n_touched = 0
    cdef double* rbuf = &rcum_v[0]
    cdef const double* rcum = rbuf
    cdef double* wb = &wb_v[0]
    cdef bitgen_t* bg = bitgen_of(rng)
    cdef Py_ssize_t i, e, c, k, j, nb, b0, kk
    cdef int64 n, t
    cdef double S, P, E, x, y, tc, cum, v
    cdef const double* rp
    cdef const double* cp
    cdef bint dense, have_rcum
    with rng.bit_generator.lock, nogil:
        # buckets of the columns: one pass over col_factor per call
        for c in range(n_cols):
            cp = &col_factor[c, 0]
            tc = tau_frac * _sum4(cp, K) / K
            tau[c] = tc
            b0 = bptr[c]
            # members first, without a branch per topic (which of them pass is
            # random), then an insertion sort by decreasing weight, stable on
            # ties, so that the per-token walks over B_c stop early
            nb = b0
            for k in range(K):
                bidx[nb] = <int>k
                nb = nb + (cp[k] >= tc)
            for j in range(b0, nb):
                kk = bidx[j]
                v = cp[kk]
                e = j
                while e > b0 and bval[e - 1] < v:
                    bidx[e] = bidx[e - 1]
                    bval[e] = bval[e - 1]
                    e = e - 1
                bidx[e] = <int>kk
                bval[e] = v
            bptr[c + 1] = nb
        for i in range(n_rows):
            if indptr[i] == indptr[i + 1]:
                continue
            rp = &row_factor[i, 0]
            if i + 1 < n_rows:
                # the next row, while this one's dozen entries are drawn: its
                # topics are read in bucket order, which no hardware prefetcher
                # follows
                for k in range(0, K, 8):
                    SKDGM_PREFETCH(rp + K + k)
            # the row sum bounds the envelope; its running sum is only needed
            # by rejection proposals, so unless given it is built on the row's first one
            if fill_sum:
                S_fill[i] = _sum4(rp, K)
            S = S_v[i]
            if given_cum:
                rcum = &rc_v[i, 0]
                have_rcum = True
                if i + 1 < n_rows:
                    # likewise the next row's running sum, which a row's
                    # (about one) rejection proposal bisects
                    for k in range(0, K, 8):
                        SKDGM_PREFETCH(rcum + K + k)
            else:
                rcum = rbuf
                have_rcum = False
            if want_row:
                # this row of row_out is written once, after the row's
                # entries: fetch it now, while they are drawn
                for k in range(0, K, 8):
                    SKDGM_PREFETCH(&row_out[i, k])
            for e in range(indptr[i], indptr[i + 1]):
                n = counts[e]
                if n <= 0:
                    continue
                c = indices[e]
                if e + 2 < indptr[i + 1]:
                    # the bucket of the entry after next (a random column)
                    j = bptr[indices[e + 2]]
                    SKDGM_PREFETCH(&bidx[j])
                    SKDGM_PREFETCH(&bidx[j] + 16)
                    SKDGM_PREFETCH(&bval[j])
                    SKDGM_PREFETCH(&bval[j] + 8)
                    SKDGM_PREFETCH(&bval[j] + 16)
                cp = &col_factor[c, 0]
                tc = tau[c]
                b0 = bptr[c]
                nb = bptr[c + 1] - b0
                P = 0.0
                for j in range(nb):
                    P = P + rp[bidx[b0 + j]] * bval[b0 + j]
                    wb[j] = P
                E = P + tc * S
                dense = not (E > 0.0 and P >= 0.5 * E)
                if dense:
                    # B_c misses this word: exact running sum over all K
                    P = 0.0
                    for k in range(K):
                        P = P + rp[k] * cp[k]
                        wb[k] = P
                for t in range(n):
                    if dense:
                        x = random_standard_uniform(bg)
                        if P > 0.0:
                            x = x * P
                            k = _first_above(wb, K, x)
                        else:
                            k = <Py_ssize_t>(x * K)
                            if k >= K:
                                k = K - 1
                    else:
                        while True:
                            x = random_standard_uniform(bg) * E
                            if x < P:
                                j = 0
                                while j < nb - 1 and not (wb[j] > x):
                                    j = j + 1
                                k = bidx[b0 + j]
                                break
                            y = (x - P) / tc
                            if not have_rcum:
                                cum = 0.0
                                for k in range(K):
                                    cum = cum + rp[k]
                                    rbuf[k] = cum
                                have_rcum = True
                            k = _first_above(rcum, K, y)
                            if cp[k] < tc and random_standard_uniform(bg) * tc < cp[k]:
                                break
                    if want_row:
                        if wrow[k] == 0:
                            touched[n_touched] = k
                            n_touched = n_touched + 1
                        wrow[k] = wrow[k] + 1
                    if want_col:
                        col_out[c, k] += 1
            # The row's counts go out once, after its entries: row_out is
            # (words, K) and each word's row is visited once per call, so
            # adding to it token by token would miss the cache on every token.
            for j in range(n_touched):
                k = touched[j]
                row_out[i, k] += wrow[k]
                wrow[k] = 0
            n_touched = 0


def row_sums(const double[:, ::1] a):
    """Row sums as :func:`_sum4` forms them and the rows' sequential running sums.

    The envelope terms of :func:`partition_sparse` that depend on its
    ``row_factor`` alone (``row_sum``, ``row_cum``), formed once per local
    chain in one pass: NumPy's strided cumulative sums of the twin cost more
    than the sweeps save.
    """
    cdef Py_ssize_t n = a.shape[0], K = a.shape[1], i, k
    s_a = np.empty(n, dtype=np.float64)
    c_a = np.empty((n, K), dtype=np.float64)
    cdef double[::1] s = s_a
    cdef double[:, ::1] cm = c_a
    cdef double cum
    with nogil:
        for i in range(n):
            s[i] = _sum4(&a[i, 0], K) if K > 0 else 0.0
            cum = 0.0
            for k in range(K):
                cum = cum + a[i, k]
                cm[i, k] = cum
    return s_a, c_a


def add_rows(double[:, ::1] out, const int64[::1] rows, const double[:, ::1] values):
    """``out[rows[i]] += values[i]`` for every ``i`` (``rows`` without repeats), in place.

    Joins a chunk's layer-1 topic counts, kept for its own words, into the
    minibatch's ``(V, K_1)`` counts: the additions NumPy's fancy-indexed ``+=``
    makes, so the same numbers, in one pass without the gathered copy (the
    chunks hold most of the vocabulary, and the join ran in the calling
    process, serial to the chunks' work; issue 26).
    """
    cdef Py_ssize_t n = rows.shape[0], K = out.shape[1], i, k
    cdef int64 V = out.shape[0], w
    if values.shape[0] != n or (n and values.shape[1] != K):
        raise ValueError("add_rows: inconsistent shapes")
    for i in range(n):
        if rows[i] < 0 or rows[i] >= V:
            raise ValueError("add_rows: row out of range")
    with nogil:
        for i in range(n):
            w = rows[i]
            for k in range(K):
                out[w, k] = out[w, k] + values[i, k]


def entry_dots(const int64[::1] indptr, const int64[::1] loc, const double[:, ::1] left,
               const double[:, ::1] right):
    """``sum_k left[loc[e], k] * right[i, k]`` for each entry ``e`` of CSR row ``i``.

    The rate of each (document, word) entry under ``Phi^(1) theta`` for the
    own-words log-likelihood, without gathering the ``(nnz, K)`` rows; the sum
    is four interleaved partial sums (``k mod 4``), as :func:`_sum4`.
    """
    cdef Py_ssize_t n = indptr.shape[0] - 1, K = left.shape[1], i, e
    if right.shape[1] != K or right.shape[0] < n or loc.shape[0] < indptr[n]:
        raise ValueError("entry_dots: inconsistent shapes")
    out_a = np.empty(indptr[n], dtype=np.float64)
    cdef double[::1] out = out_a
    cdef const double* lp
    cdef const double* rp
    with nogil:
        for i in range(n):
            rp = &right[i, 0] if K > 0 else NULL
            for e in range(indptr[i], indptr[i + 1]):
                lp = &left[loc[e], 0] if K > 0 else NULL
                out[e] = _dot4(lp, rp, K)
    return out_a


def crt(const int64[:, ::1] counts, const double[:, :] shape, rng, out=None,
        bint column_sums=False):
    """Chinese-restaurant-table counts ``m ~ CRT(n, s)`` entrywise (Eq. 6, ``SumLog``).

    ``m = sum_{i=0}^{n-1} b_i`` with ``b_i ~ Bernoulli(s / (s + i))``; the first
    customer always opens a table, so ``b_0 = 1`` needs no draw, and each later
    customer uses one uniform, in C order over entries. ``s <= 0`` gives 0.
    ``shape`` may have any strides (the top layer's is ``r`` broadcast over
    the documents). ``out``, optional, is an ``(N, K)`` int64 array to write
    into (a sweep's tables, reused by the next sweep). With ``column_sums``
    only the tables' column sums are returned, a ``(K,)`` int64 array (the
    same draws; the top layer's tables are only ever summed over documents).
    """
    cdef Py_ssize_t N = counts.shape[0], K = counts.shape[1], j, k
    cdef int64 n, i, m
    cdef double s
    cdef int64[:, ::1] o
    if column_sums:
        out = np.zeros(K, dtype=np.int64)
        o = out.reshape(1, K)
    else:
        if out is None:
            out = np.zeros((N, K), dtype=np.int64)
        o = out
        if o.shape[0] != N or o.shape[1] != K:
            raise ValueError("crt: out has the wrong shape")
    cdef bitgen_t* bg = bitgen_of(rng)
    if shape.shape[0] != N or shape.shape[1] != K:
        raise ValueError("crt: counts and shape differ in shape")
    with rng.bit_generator.lock, nogil:
        for j in range(N):
            for k in range(K):
                n = counts[j, k]
                s = shape[j, k]
                if n <= 0 or s <= 0.0:
                    if not column_sums:
                        o[j, k] = 0
                    continue
                m = 1
                for i in range(1, n):
                    if random_standard_uniform(bg) < s / (s + i):
                        m += 1
                if column_sums:
                    o[0, k] += m
                else:
                    o[j, k] = m
    return out


def zero_truncated_poisson(const double[::1] lam, rng):
    """One draw of ``x ~ Poisson(lam) | x >= 1`` per entry (the Bernoulli-Poisson link).

    For ``lam >= 1`` Poisson draws are rejected until positive (acceptance
    ``1 - exp(-lam) >= 0.63``); below 1 the pmf is inverted from one uniform.
    """
    cdef Py_ssize_t n = lam.shape[0], i
    out = np.empty(n, dtype=np.int64)
    cdef int64[::1] o = out
    cdef bitgen_t* bg = bitgen_of(rng)
    cdef double lm, p, cum, target
    cdef int64 x
    with rng.bit_generator.lock, nogil:
        for i in range(n):
            lm = lam[i]
            if lm >= 1.0:
                x = 0
                while x < 1:
                    x = random_poisson(bg, lm)
            elif lm > 0.0:
                p = exp(-lm)
                target = p + random_standard_uniform(bg) * (1.0 - p)
                x = 1
                p = p * lm
                cum = exp(-lm) + p
                while cum < target and x < 1000:
                    x += 1
                    p = p * lm / x
                    cum = cum + p
            else:
                x = 1
            o[i] = x
    return out


def partition_dense(const int64[:, ::1] counts, const double[:, ::1] row_factor,
                    const double[:, ::1] col_factor, rng, int64[:, ::1] row_out,
                    int64[:, ::1] col_out):
    """:func:`partition_counts` on the nonzero entries of a dense count matrix.

    Used for the upper layers, whose counts (the table counts of the layer
    below) come out of :func:`crt` dense: the entries are visited in row-major
    order, exactly the CSR order of the same matrix, so the result equals
    ``partition_counts`` on its CSR form (same stream, same counts) without
    building that form every sweep.
    """
    cdef Py_ssize_t n_rows = counts.shape[0], n_cols = counts.shape[1], i, c
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    cdef int64[::1] ip = indptr
    cdef int64 nnz = 0
    with nogil:
        for i in range(n_rows):
            for c in range(n_cols):
                if counts[i, c] > 0:
                    nnz += 1
            ip[i + 1] = nnz
    indices = np.empty(nnz, dtype=np.int64)
    data = np.empty(nnz, dtype=np.int64)
    cdef int64[::1] ix = indices
    cdef int64[::1] dv = data
    nnz = 0
    with nogil:
        for i in range(n_rows):
            for c in range(n_cols):
                if counts[i, c] > 0:
                    ix[nnz] = c
                    dv[nnz] = counts[i, c]
                    nnz += 1
    partition_counts(indptr, indices, data, row_factor, col_factor, rng, row_out, col_out)


cdef inline int _gs_propose(double a, double e, double* x, double* y) noexcept nogil:
    """One proposal of Ahrens and Dieter's GS rejection sampler of ``Gam(a)``, ``0 < a < 1``.

    numpy's ``random_standard_gamma`` runs GS for ``a < 1`` from a uniform ``U``
    and an exponential; here ``U = exp(-e)`` with ``e ~ Exp(1)``, which has the
    same law and turns its common branch ``U <= 1 - a``, ``x = U^(1/a)``, into
    ``x = exp(-e / a)`` (one ``exp`` instead of a ``pow``). The branch is
    decided by ``e >= -log1p(-a)``; that threshold lies in ``[a, a / (1 - a)]``,
    so ``log1p`` is only evaluated for ``e`` between the two. The other branch
    (probability ``a``) proposes ``x = (1 - a + a y)^(1/a)`` with
    ``y = -log((1 - U) / a) ~ Exp(1)``. Returns 0 if ``x`` is accepted for sure
    (that branch with ``x <= y``), else the branch (1 or 2) for :func:`_gs_accept`.
    """
    cdef bint common
    if e >= a / (1.0 - a):
        common = True
    elif e < a:
        common = False
    else:
        common = e >= -log1p(-a)
    if common:
        x[0] = exp(-e / a)
        return 1
    y[0] = -log(-expm1(-e) / a)
    x[0] = pow(1.0 - a + a * y[0], 1.0 / a)
    return 0 if x[0] <= y[0] else 2


cdef inline bint _gs_accept(int branch, double x, double y, double u) noexcept nogil:
    """GS's acceptance of a proposal from uniform ``u``: with probability ``exp(-x)``
    (common branch; ``1 - x`` is a squeeze below it) or ``exp(y - x)``."""
    if branch == 1:
        return u <= 1.0 - x or u <= exp(-x)
    return u <= exp(y - x)


def gamma_theta(const double[:, :] shape, const int64[:, ::1] counts,
                const double[::1] rate, rng, double floor):
    """Downward draw of the hidden units, Eq. 1 with its count conditional.

    ``theta[j, k] = max(Gam(a_jk, 1) / rate[j], floor)`` with
    ``a_jk = shape[j, k] + counts[j, k]``, entry by entry in C order: ``a >= 1``
    by numpy's ``random_standard_gamma`` (Marsaglia and Tsang); ``0 < a < 1``
    (the topics a document holds no token of, most entries) by GS (Ahrens and
    Dieter, 1974, see :func:`_gs_propose`), each attempt one exponential and
    one uniform (none when it is accepted for sure), repeated until accepted;
    ``a = 0`` gives 0. The law is ``Gam(a)`` exactly, as numpy's; numpy's own
    GS spends a ``pow`` per small shape, most of this kernel's former cost.
    The NumPy twin :func:`skdgm.deep_lda._local.gamma_theta` makes the same
    draws in the same order. ``shape`` may have any strides (the top layer's
    is ``r`` broadcast over the documents).
    """
    cdef Py_ssize_t N = shape.shape[0], K = shape.shape[1], j, k
    cdef double g, d, a, x, y
    cdef int br
    if counts.shape[0] != N or counts.shape[1] != K or rate.shape[0] != N:
        raise ValueError("gamma_theta: inconsistent shapes")
    out = np.empty((N, K), dtype=np.float64)
    cdef double[:, ::1] o = out
    cdef bitgen_t* bg = bitgen_of(rng)
    with rng.bit_generator.lock, nogil:
        for j in range(N):
            d = rate[j]
            for k in range(K):
                a = shape[j, k] + <double>counts[j, k]
                if a >= 1.0:
                    x = random_standard_gamma(bg, a)
                elif a > 0.0:
                    # one loop over the entries, an exponential and a uniform per
                    # attempt: skipping the uniform when the acceptance is all but
                    # certain, or drawing by passes, cost more in mispredicted branches
                    while True:
                        br = _gs_propose(a, random_standard_exponential(bg), &x, &y)
                        if br == 0 or _gs_accept(br, x, y, random_standard_uniform(bg)):
                            break
                else:
                    x = 0.0
                g = x / d
                o[j, k] = g if g > floor else floor
    return out


def em_steps(const int64[::1] indptr, const int64[::1] loc, const double[::1] x,
             const double[:, ::1] phi, double[:, ::1] theta, int n_steps, double tiny):
    """Multiplicative EM steps of every document's topic proportions, in place.

    ``theta_jk <- theta_jk sum_e x_e phi[loc[e], k] / max([phi theta_j]_{loc[e]}, tiny)``
    over the entries ``e`` of CSR row ``j``, ``n_steps`` times (the start of
    :func:`skdgm.deep_lda._local._em_start`). One document at a time, its row of
    ``theta`` and its words' rows of ``phi`` in cache, with no ``(nnz, K)``
    gather; the rate is :func:`_dot4`'s sum and the accumulation runs over the
    entries in order, as the NumPy twin's sparse product does.
    """
    cdef Py_ssize_t n = indptr.shape[0] - 1, K = phi.shape[1], j, e, k
    cdef int s
    cdef double rate, w
    if theta.shape[1] != K or theta.shape[0] < n or loc.shape[0] < indptr[n] \
            or x.shape[0] < indptr[n]:
        raise ValueError("em_steps: inconsistent shapes")
    acc_a = np.empty(K, dtype=np.float64)
    cdef double[::1] acc = acc_a
    cdef const double* lp
    cdef double* tp
    if K == 0:
        return
    with nogil:
        for j in range(n):
            tp = &theta[j, 0]
            for s in range(n_steps):
                for k in range(K):
                    acc[k] = 0.0
                for e in range(indptr[j], indptr[j + 1]):
                    lp = &phi[loc[e], 0]
                    rate = _dot4(lp, tp, K)
                    if not rate >= tiny:
                        rate = tiny
                    w = x[e] / rate
                    for k in range(K):
                        acc[k] += w * lp[k]
                for k in range(K):
                    tp[k] *= acc[k]


def scale_rates(const int64[::1] lengths, const double[:, :] shape_sums,
                const double[:, :] theta_sums, rng, double a0, double b0, double e0,
                double f0, double clip):
    """The rates of the downward step's scales (Lemma 3.1), one call per sweep.

    ``rates[0, j] = (1 - p_j) / p_j`` with ``p_j = clip(Beta(a0 + lengths[j], b0 +
    shape_sums[0, j]))`` (``p_j^(2)``, ``theta^(1)`` marginalised) and, for
    ``l >= 1``, ``rates[l, j] = Gam(e0 + shape_sums[l, j]) / (f0 + theta_sums[l, j])``
    (``c_j^(l+1)``); also ``1 / rates[0]``, the first ``q`` ratio. The beta draws
    (every document's), then each layer's gammas, through numpy's own
    ``random_beta`` and ``random_standard_gamma``: the draws ``Generator.beta``
    and ``Generator.standard_gamma`` make on the same arrays, so the NumPy twin
    :func:`skdgm.deep_lda._local.scale_rates` gives the same numbers. The sums may
    have any strides (a top layer's ``r`` broadcast over the documents); row 0 of
    ``theta_sums`` is not read. Formed here rather than by a dozen NumPy calls a
    sweep, whose GIL-held overhead made two training threads wait on each other
    (issue 26).
    """
    cdef Py_ssize_t n = lengths.shape[0], L = shape_sums.shape[0], j, l
    cdef double p, lo = clip, hi = 1.0 - clip
    if shape_sums.shape[1] != n or theta_sums.shape[0] != L or theta_sums.shape[1] != n:
        raise ValueError("scale_rates: inconsistent shapes")
    rates_a = np.empty((L, n), dtype=np.float64)
    inv_a = np.empty(n, dtype=np.float64)
    cdef double[:, ::1] rates = rates_a
    cdef double[::1] inv = inv_a
    cdef bitgen_t* bg = bitgen_of(rng)
    with rng.bit_generator.lock, nogil:
        for j in range(n):
            p = random_beta(bg, a0 + <double>lengths[j], b0 + shape_sums[0, j])
            # np.clip's order: the lower bound, then the upper
            if p < lo:
                p = lo
            if p > hi:
                p = hi
            rates[0, j] = (1.0 - p) / p
            inv[j] = 1.0 / rates[0, j]
        for l in range(1, L):
            for j in range(n):
                rates[l, j] = (random_standard_gamma(bg, e0 + shape_sums[l, j])
                               / (f0 + theta_sums[l, j]))
    return rates_a, inv_a
