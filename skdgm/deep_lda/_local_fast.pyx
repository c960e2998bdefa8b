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
                     const int64[::1] counts, const double[:, ::1] phi,
                     const double[:, ::1] theta, rng, int64[:, ::1] doc_topic,
                     int64[:, ::1] word_topic):
    """Multinomial partition of CSR counts over topics (Eq. 6, the ``Mult`` lines).

    Row ``j`` of the CSR matrix ``(indptr, indices, counts)`` holds the counts
    ``n_vj`` of document ``j``; each of them is split over the ``K`` topics with
    probabilities proportional to ``w_k = phi[v, k] * theta[j, k]``, one token at
    a time: a uniform ``u`` scaled by the total is located by a linear walk of
    the running sum (first ``k`` with ``w_0 + ... + w_k > u * total``). The
    total is formed from four interleaved partial sums (``k mod 4``) so that it
    is not one long chain of dependent additions; the walk stops on average
    half-way. The topic counts are *added* to ``doc_topic[j, k]`` and
    ``word_topic[v, k]`` (pass an empty ``(0, K)`` array to skip the latter).
    A row whose probabilities are all zero (an all-zero topic column) falls back
    to a uniform topic so that counts are always conserved.
    """
    cdef Py_ssize_t n_docs = indptr.shape[0] - 1
    cdef Py_ssize_t K = phi.shape[1]
    cdef bint want_word = word_topic.shape[0] > 0
    cdef double[::1] w = np.empty(K, dtype=np.float64)
    cdef bitgen_t* bg = bitgen_of(rng)
    cdef Py_ssize_t j, e, v, k
    cdef int64 n, t
    cdef double tot, u, cum, s0, s1, s2, s3
    if theta.shape[0] != n_docs or theta.shape[1] != K or doc_topic.shape[0] != n_docs:
        raise ValueError("partition_counts: inconsistent shapes")
    with rng.bit_generator.lock, nogil:
        for j in range(n_docs):
            for e in range(indptr[j], indptr[j + 1]):
                n = counts[e]
                if n <= 0:
                    continue
                v = indices[e]
                s0 = 0.0
                s1 = 0.0
                s2 = 0.0
                s3 = 0.0
                k = 0
                while k + 3 < K:
                    w[k] = phi[v, k] * theta[j, k]
                    w[k + 1] = phi[v, k + 1] * theta[j, k + 1]
                    w[k + 2] = phi[v, k + 2] * theta[j, k + 2]
                    w[k + 3] = phi[v, k + 3] * theta[j, k + 3]
                    s0 = s0 + w[k]
                    s1 = s1 + w[k + 1]
                    s2 = s2 + w[k + 2]
                    s3 = s3 + w[k + 3]
                    k = k + 4
                if k < K:
                    w[k] = phi[v, k] * theta[j, k]
                    s0 = s0 + w[k]
                if k + 1 < K:
                    w[k + 1] = phi[v, k + 1] * theta[j, k + 1]
                    s1 = s1 + w[k + 1]
                if k + 2 < K:
                    w[k + 2] = phi[v, k + 2] * theta[j, k + 2]
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
                    doc_topic[j, k] += 1
                    if want_word:
                        word_topic[v, k] += 1


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
