"""Cython kernels of the upward-downward Gibbs sampler (Zhou et al., 2016a).

Each kernel has a NumPy twin of the same name in :mod:`skdgm.deep_lda._local`
that consumes the same random numbers in the same order, and the tests check
that the two agree exactly. Kernels take ``const`` memoryviews (joblib's process
backend hands large arrays over as read-only memmaps), run without the GIL, and
draw through numpy's own bit generator under its lock.
"""
from libc.math cimport exp
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport random_standard_uniform, random_poisson

import numpy as np

from skdgm._core._random cimport bitgen_of

ctypedef long long int64


def partition_counts(const int64[::1] indptr, const int64[::1] indices,
                     const int64[::1] counts, const double[:, ::1] row_factor,
                     const double[:, ::1] col_factor, rng, int64[:, ::1] row_out,
                     int64[:, ::1] col_out):
    """Multinomial partition of CSR counts over topics (Eq. 6, the ``Mult`` lines).

    Entry ``(i, c)`` of the CSR matrix ``(indptr, indices, counts)`` is split
    over the ``K`` topics with probabilities proportional to
    ``w_k = row_factor[i, k] * col_factor[c, k]``, one token at a time: a uniform
    ``u`` scaled by the total is located by a linear walk of the running sum
    (first ``k`` with ``w_0 + ... + w_k > u * total``, else ``K - 1``). The
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
    cdef double tot, u, cum, s0, s1, s2, s3
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
                s0 = 0.0
                s1 = 0.0
                s2 = 0.0
                s3 = 0.0
                k = 0
                while k + 3 < K:
                    w[k] = row_factor[i, k] * col_factor[c, k]
                    w[k + 1] = row_factor[i, k + 1] * col_factor[c, k + 1]
                    w[k + 2] = row_factor[i, k + 2] * col_factor[c, k + 2]
                    w[k + 3] = row_factor[i, k + 3] * col_factor[c, k + 3]
                    s0 = s0 + w[k]
                    s1 = s1 + w[k + 1]
                    s2 = s2 + w[k + 2]
                    s3 = s3 + w[k + 3]
                    k = k + 4
                if k < K:
                    w[k] = row_factor[i, k] * col_factor[c, k]
                    s0 = s0 + w[k]
                if k + 1 < K:
                    w[k + 1] = row_factor[i, k + 1] * col_factor[c, k + 1]
                    s1 = s1 + w[k + 1]
                if k + 2 < K:
                    w[k + 2] = row_factor[i, k + 2] * col_factor[c, k + 2]
                    s2 = s2 + w[k + 2]
                tot = (s0 + s1) + (s2 + s3)
                for t in range(n):
                    u = random_standard_uniform(bg)
                    if tot > 0.0:
                        u = u * tot
                        cum = 0.0
                        k = 0
                        while k < K - 1:
                            cum = cum + w[k]
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


def crt(const int64[:, ::1] counts, const double[:, ::1] shape, rng):
    """Chinese-restaurant-table counts ``m ~ CRT(n, s)`` entrywise (Eq. 6, ``SumLog``).

    ``m = sum_{i=0}^{n-1} b_i`` with ``b_i ~ Bernoulli(s / (s + i))``; the first
    customer always opens a table, so ``b_0 = 1`` needs no draw, and each later
    customer uses one uniform, in C order over entries. ``s <= 0`` gives 0.
    """
    cdef Py_ssize_t N = counts.shape[0], K = counts.shape[1], j, k
    cdef int64 n, i, m
    cdef double s
    out = np.zeros((N, K), dtype=np.int64)
    cdef int64[:, ::1] o = out
    cdef bitgen_t* bg = bitgen_of(rng)
    if shape.shape[0] != N or shape.shape[1] != K:
        raise ValueError("crt: counts and shape differ in shape")
    with rng.bit_generator.lock, nogil:
        for j in range(N):
            for k in range(K):
                n = counts[j, k]
                s = shape[j, k]
                if n <= 0 or s <= 0.0:
                    continue
                m = 1
                for i in range(1, n):
                    if random_standard_uniform(bg) < s / (s + i):
                        m += 1
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
