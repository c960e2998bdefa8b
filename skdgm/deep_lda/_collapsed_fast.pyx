"""Cython kernels of the theta-collapsed layer-1 sampler (see :mod:`._collapsed`).

Each kernel has a NumPy twin of the same name in :mod:`skdgm.deep_lda._collapsed`
that consumes the same uniforms in the same order and performs the same floating
point operations, and the tests check that the two agree exactly. Kernels take
``const`` memoryviews, run without the GIL and draw through numpy's own bit
generator under its lock.
"""
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport random_standard_uniform

import numpy as np

from skdgm._core._random cimport bitgen_of
from skdgm.deep_lda._sums cimport _first_above

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


cdef inline Py_ssize_t _walk_products(const double* a, const double* b, Py_ssize_t stride,
                                      Py_ssize_t K, double u) noexcept nogil:
    """The first ``k`` whose running sum of ``a[k] b[k * stride]`` exceeds ``u``,
    walked by blocks of four: each block's sum ``(p0 + p1) + (p2 + p3)`` is
    added to the running sum, and the block that takes it past ``u`` is
    searched term by term; the rest one term at a time. If rounding leaves
    ``u`` above every sum, the last topic with a positive product."""
    cdef double acc = 0.0, p0, p1, p2, p3, blk
    cdef Py_ssize_t k = 0
    while k + 3 < K:
        p0 = a[k] * b[k * stride]
        p1 = a[k + 1] * b[(k + 1) * stride]
        p2 = a[k + 2] * b[(k + 2) * stride]
        p3 = a[k + 3] * b[(k + 3) * stride]
        blk = (p0 + p1) + (p2 + p3)
        if u < acc + blk:
            acc = acc + p0
            if u < acc:
                return k
            acc = acc + p1
            if u < acc:
                return k + 1
            acc = acc + p2
            if u < acc:
                return k + 2
            return k + 3
        acc = acc + blk
        k = k + 4
    while k < K:
        acc = acc + a[k] * b[k * stride]
        if u < acc:
            return k
        k = k + 1
    k = K - 1
    while k > 0 and a[k] * b[k * stride] <= 0.0:
        k = k - 1
    return k


cdef int64 _check(const int64[::1] wptr, const int64[::1] docs, const int64[::1] counts,
                  Py_ssize_t n_phi_rows, Py_ssize_t n_z, int64[:, ::1] doc_topic,
                  double[:, ::1] word_topic, const int64[::1] word_rows, Py_ssize_t K,
                  str name) except -1:
    cdef Py_ssize_t n_docs = doc_topic.shape[0], p
    cdef int64 tokens = 0
    if (wptr.shape[0] != n_phi_rows + 1 or doc_topic.shape[1] != K
            or docs.shape[0] != counts.shape[0] or wptr[n_phi_rows] != counts.shape[0]
            or (word_topic.shape[0] > 0 and word_topic.shape[1] != K)):
        raise ValueError(f"{name}: inconsistent shapes")
    if word_topic.shape[0] > 0:
        if word_rows is None:
            if word_topic.shape[0] != n_phi_rows:
                raise ValueError(f"{name}: inconsistent shapes")
        elif word_rows.shape[0] != n_phi_rows:
            raise ValueError(f"{name}: inconsistent shapes")
        else:
            for p in range(n_phi_rows):
                if word_rows[p] < 0 or word_rows[p] >= word_topic.shape[0]:
                    raise ValueError(f"{name}: word row {p} points outside word_topic")
    for p in range(counts.shape[0]):
        if counts[p] > 0:
            tokens += counts[p]
            if docs[p] < 0 or docs[p] >= n_docs:
                raise ValueError(f"{name}: entry {p} points outside doc_topic")
    if tokens != n_z:
        raise ValueError(f"{name}: z has {n_z} tokens, the counts {tokens}")
    return tokens


def assign_tokens(const int64[::1] wptr, const int64[::1] docs, const int64[::1] counts,
                  const double[:, ::1] phi, const double[:, ::1] theta, rng, int[::1] z,
                  int64[:, ::1] doc_topic, double[:, ::1] word_topic,
                  const int64[::1] word_rows=None):
    """Each token's layer-1 topic given explicit ``theta^(1)`` (Eq. 6, the ``Mult`` line).

    The entries come words by documents: ``docs[wptr[v]:wptr[v + 1]]`` are
    the documents holding word row ``v`` (of ``phi``), ``counts`` their tokens.
    A token of word ``v`` in document ``j`` gets topic ``k`` with probability
    ``phi[v, k] theta[j, k] / sum_k'`` (a running sum and a bisection of
    ``u * total``; a zero total gives a uniform topic). Writes ``z`` (one int
    per token, in this order) and *adds* each token to ``doc_topic[j, k]`` and,
    unless it is empty, ``word_topic[v, k]`` (row ``word_rows[v]`` if given):
    how a collapsed chain starts
    from, or continues, a state that holds ``theta^(1)``.
    """
    cdef Py_ssize_t K = phi.shape[1], j, p, k, v
    cdef bint want_w = word_topic.shape[0] > 0
    cdef bint have_rows = word_rows is not None
    _check(wptr, docs, counts, phi.shape[0], z.shape[0], doc_topic, word_topic, word_rows, K,
           "assign_tokens")
    if theta.shape[0] != doc_topic.shape[0] or theta.shape[1] != K:
        raise ValueError("assign_tokens: inconsistent shapes")
    if K == 0:
        return
    cdef double[::1] cum_buf = np.empty(K, dtype=np.float64)
    cdef double* cum = &cum_buf[0]
    cdef const double* pp
    cdef const double* tp
    cdef double acc, u
    cdef int64 n, i, t = 0
    cdef bitgen_t* bg = bitgen_of(rng)
    with rng.bit_generator.lock, nogil:
        for v in range(phi.shape[0]):
            pp = &phi[v, 0]
            for p in range(wptr[v], wptr[v + 1]):
                n = counts[p]
                if n <= 0:
                    continue
                j = docs[p]
                tp = &theta[j, 0]
                acc = 0.0
                for k in range(K):
                    acc = acc + pp[k] * tp[k]
                    cum[k] = acc
                for i in range(n):
                    u = random_standard_uniform(bg)
                    if acc > 0.0:
                        k = _first_above(cum, K, u * acc)
                    else:
                        k = <Py_ssize_t>(u * K)
                        if k >= K:
                            k = K - 1
                    z[t] = <int>k
                    doc_topic[j, k] += 1
                    if want_w:
                        word_topic[word_rows[v] if have_rows else v, k] += 1.0
                    t += 1


def collapsed_partition(const int64[::1] wptr, const int64[::1] docs,
                        const int64[::1] counts, const double[:, ::1] phi,
                        const double[:, :] prior, const double[::1] prior_total,
                        bint shared, rng, int[::1] z,
                        int64[:, ::1] doc_topic, double[:, ::1] word_topic, scratch=None,
                        const int64[::1] word_rows=None):
    """One sweep of single-token Gibbs updates of the layer-1 topics, ``theta^(1)``
    integrated out.

    With ``theta_jk ~ Gam(a_jk, 1/c_j)`` and the columns of ``Phi^(1)`` on the
    simplex, the topics ``z`` of document ``j``'s tokens have the
    Dirichlet-multinomial law ``prod_t phi[v_t, z_t] prod_k Gamma(a_jk + n_jk) /
    Gamma(a_jk)`` (``n_jk`` its tokens of topic ``k``; ``c_j`` cancels), so one
    token's conditional is ``phi[v, k] (n_jk^- + a_jk)``, ``n^-`` without the
    token. The tokens are visited words by documents, as :func:`assign_tokens`
    orders them (a systematic scan: each word's rows of ``phi`` and of the
    tables stay in cache while its documents' counts are updated), each drawn
    in two buckets:

    * ``d = sum_k phi[v, k] n_jk^-`` over the topics the document holds (a
      list of (topic, count) per document, built from ``doc_topic`` at the
      start of the sweep in topic order, its emptied topics dropped at each
      of the document's entries, new ones appended;
      ``doc_topic`` is written back at the end), the products formed once per
      entry and updated by the two changed terms per token, then walked;
    * ``s = sum_k phi[v, k] a_jk``: with one prior row for every document
      (``shared``; ``prior_total[v]`` is the last of the sequential running
      sums ``cumsum(phi[v] * a)``, see :func:`prior_totals`) a bisection of
      those sums, formed once per word and sweep when the word first draws
      from this bucket; else (``prior_total[p]`` the sum of entry ``p``,
      :func:`skdgm.deep_lda._local_fast.entry_dots` of the prior rows and the
      word rows) a walk of the products over all ``K``.

    ``z`` and ``doc_topic`` hold the current state and are updated in place;
    a token with ``z = -1`` is not in ``doc_topic`` yet and is drawn without
    being removed (all of them: the sequential start of collapsed LDA
    samplers, each token drawn given those before it). Each token's new
    topic is *added* to ``word_topic`` (row ``word_rows[v]`` if given) unless
    it is empty: counts held in doubles (exact below 2**53) that the caller
    averages in place.
    ``prior`` may have any strides (a zero row stride for a shared prior). One
    uniform per token. ``scratch``, optional, is a pair of ``(n_docs, K)``
    arrays (``intc`` and ``int64``) for the lists, reused across sweeps.
    """
    cdef Py_ssize_t n_docs = doc_topic.shape[0], K = phi.shape[1], j, p, k, v, i, m, mm
    cdef bint want_w = word_topic.shape[0] > 0
    cdef bint have_rows = word_rows is not None
    _check(wptr, docs, counts, phi.shape[0], z.shape[0], doc_topic, word_topic, word_rows, K,
           "collapsed_partition")
    if prior.shape[0] != n_docs or prior.shape[1] != K or (
            prior_total.shape[0] != (phi.shape[0] if shared else counts.shape[0])):
        raise ValueError("collapsed_partition: inconsistent shapes")
    if K == 0:
        return
    cdef int64 tz
    for tz in range(z.shape[0]):
        if z[tz] < -1 or z[tz] >= K:
            raise ValueError(f"collapsed_partition: topic {z[tz]} outside [-1, {K})")
    # Each document's topics as a compact list of (topic, count) pairs, read
    # and written in place of its dense row of doc_topic: an entry touches a
    # line or two of them instead of a scattered line per topic. idx maps a
    # topic to its place in the current entry's list when stamp says it is
    # there (the entry's number), so nothing is reset between entries.
    if scratch is None:
        scratch = (np.empty((n_docs, K), dtype=np.intc), np.empty((n_docs, K), dtype=np.int64))
    cdef int[:, ::1] lists_buf = scratch[0]
    cdef int64[:, ::1] cnts_buf = scratch[1]
    if lists_buf.shape[0] < n_docs or lists_buf.shape[1] < K or cnts_buf.shape[0] < n_docs \
            or cnts_buf.shape[1] < K:
        raise ValueError("collapsed_partition: scratch arrays too small")
    cdef int[::1] len_buf = np.zeros(n_docs, dtype=np.intc)
    cdef int[::1] idx_buf = np.zeros(K, dtype=np.intc)
    cdef int64[::1] stamp_buf = np.full(K, -1, dtype=np.int64)
    cdef int64* stamp = &stamp_buf[0]
    cdef int64 eid = 0
    cdef double[::1] w_buf = np.empty(K, dtype=np.float64)
    cdef int* idx = &idx_buf[0]
    cdef double* w = &w_buf[0]
    cdef int* lst
    cdef int64* cnt
    cdef const double* pp
    cdef double* wrow = NULL
    # a word's counts gather in this row (in L1) and are added to its row of
    # word_topic in one sequential pass when the word is done: the counts are
    # integers, so the grouping changes no sum
    cdef double[::1] wacc_buf = np.zeros(K, dtype=np.float64)
    cdef double* wacc = &wacc_buf[0]
    cdef double d, s = 0.0, b, u, acc
    cdef int64 n, c, tt, t = 0
    cdef Py_ssize_t row_of = -1
    cdef double[::1] row_buf = np.empty(K, dtype=np.float64)
    cdef double* row = &row_buf[0]
    cdef bitgen_t* bg = bitgen_of(rng)
    with rng.bit_generator.lock, nogil:
        for j in range(n_docs):
            m = 0
            for k in range(K):
                c = doc_topic[j, k]
                if c > 0:
                    lists_buf[j, m] = <int>k
                    cnts_buf[j, m] = c
                    m += 1
            len_buf[j] = <int>m
        for v in range(phi.shape[0]):
            pp = &phi[v, 0]
            if want_w:
                wrow = &word_topic[word_rows[v] if have_rows else v, 0]
            if shared:
                s = prior_total[v]
            if v + 1 < phi.shape[0]:
                # the next word's row of phi, read at scattered topics by its
                # entries: fetched while this word's tokens are drawn
                for k in range(0, K, 8):
                    SKDGM_PREFETCH(&phi[v + 1, k])
            for p in range(wptr[v], wptr[v + 1]):
                n = counts[p]
                if n <= 0:
                    continue
                eid += 1
                j = docs[p]
                if p + 1 < wptr[v + 1]:
                    # the next entry's document list, a random row
                    SKDGM_PREFETCH(&lists_buf[docs[p + 1], 0])
                    SKDGM_PREFETCH(&cnts_buf[docs[p + 1], 0])
                lst = &lists_buf[j, 0]
                cnt = &cnts_buf[j, 0]
                mm = len_buf[j]
                m = 0
                d = 0.0
                for i in range(mm):
                    c = cnt[i]
                    if c > 0:
                        k = lst[i]
                        lst[m] = <int>k
                        cnt[m] = c
                        idx[k] = <int>m
                        stamp[k] = eid
                        b = pp[k] * <double>c
                        w[m] = b
                        d = d + b
                        m += 1
                if not shared:
                    s = prior_total[p]
                for tt in range(n):
                    k = z[t]
                    if k >= 0:
                        i = idx[k]
                        cnt[i] -= 1
                        b = pp[k] * <double>cnt[i]
                        d = d + (b - w[i])
                        w[i] = b
                    u = random_standard_uniform(bg) * (d + s)
                    if u < d:
                        acc = 0.0
                        i = 0
                        while i < m:
                            acc = acc + w[i]
                            if u < acc:
                                break
                            i += 1
                        if i == m:
                            # rounding: d ran ahead of the walk's sum
                            i = m - 1
                            while i > 0 and w[i] <= 0.0:
                                i -= 1
                        k = lst[i]
                    else:
                        u = u - d
                        if shared:
                            if row_of != v:
                                # this word's running sums of phi[v, k] a_k, formed
                                # at its first draw from the prior this sweep
                                acc = 0.0
                                for k in range(K):
                                    acc = acc + pp[k] * prior[0, k]
                                    row[k] = acc
                                row_of = v
                            k = _first_above(row, K, u)
                        else:
                            k = _walk_products(pp, &prior[j, 0], prior.strides[1] // 8, K, u)
                        if stamp[k] == eid:
                            i = idx[k]
                        else:
                            i = m
                            stamp[k] = eid
                            idx[k] = <int>m
                            lst[m] = <int>k
                            cnt[m] = 0
                            w[m] = 0.0
                            m += 1
                    cnt[i] += 1
                    b = pp[k] * <double>cnt[i]
                    d = d + (b - w[i])
                    w[i] = b
                    z[t] = <int>k
                    if want_w:
                        wacc[k] += 1.0
                    t += 1
                len_buf[j] = <int>m
            if want_w:
                for k in range(K):
                    wrow[k] += wacc[k]
                    wacc[k] = 0.0
        for j in range(n_docs):
            for k in range(K):
                doc_topic[j, k] = 0
            for i in range(len_buf[j]):
                doc_topic[j, lists_buf[j, i]] = cnts_buf[j, i]


def rao_blackwell(const double[:, :] prior, const int64[:, ::1] counts,
                  const double[::1] rate, double[:, ::1] theta_sum,
                  double[:, ::1] theta_norm_sum):
    """Adds ``theta^(1)``'s conditional means given the collapsed state.

    ``theta_jk | n, a, c ~ Gam(a_jk + n_jk, 1/rate_j)``, so
    ``theta_sum[j, k] += (a_jk + n_jk) / rate_j`` and, the normalised gamma
    vector being ``Dir(a_j + n_j)``, ``theta_norm_sum[j, k] += (a_jk + n_jk) /
    S_j`` with ``S_j`` the sequential sum of ``a_j + n_j`` (each division a
    product with the row's reciprocal).
    """
    cdef Py_ssize_t N = counts.shape[0], K = counts.shape[1], j, k
    cdef double S, x, inv
    if (prior.shape[0] != N or prior.shape[1] != K or rate.shape[0] != N
            or theta_sum.shape[0] != N or theta_sum.shape[1] != K
            or theta_norm_sum.shape[0] != N or theta_norm_sum.shape[1] != K):
        raise ValueError("rao_blackwell: inconsistent shapes")
    with nogil:
        for j in range(N):
            S = 0.0
            inv = 1.0 / rate[j]
            for k in range(K):
                x = prior[j, k] + <double>counts[j, k]
                S = S + x
                theta_sum[j, k] += x * inv
            inv = 1.0 / S
            for k in range(K):
                theta_norm_sum[j, k] += (prior[j, k] + <double>counts[j, k]) * inv


def prior_totals(const double[:, ::1] phi, const double[::1] a):
    """``out[v]``: the last of the sequential running sums ``cumsum(phi[v] * a)``
    (the ``prior_total`` of :func:`collapsed_partition` for a shared prior row)."""
    cdef Py_ssize_t V = phi.shape[0], K = phi.shape[1], v, k
    cdef double acc
    if a.shape[0] != K:
        raise ValueError("prior_totals: inconsistent shapes")
    out = np.empty(V, dtype=np.float64)
    cdef double[::1] o = out
    with nogil:
        for v in range(V):
            acc = 0.0
            for k in range(K):
                acc = acc + phi[v, k] * a[k]
            o[v] = acc
    return out
