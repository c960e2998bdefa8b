"""Exact collapsed Gibbs sweep over one hidden layer (Du et al. 2018, Eq. 15), in C.

The Cython twin of :func:`skdgm.sbn._model.gibbs_sweep` for layers without
within-layer (autoregressive) weights; :func:`skdgm.sbn._dsghmc.gibbs_sweep_fast`
calls it layer by layer and draws the uniforms exactly as the NumPy sweep does,
so both produce the same chain from the same generator.

Why it is faster: the logit of unit ``k`` needs
``sum_j [softplus(a_j + w_jk) - softplus(a_j)]`` over the ``J`` children. With
``p_j = sigmoid(a_j)`` cached and ``E = exp(W)`` computed once per sweep, each term
is ``log(1 + p_j (E_jk - 1))``; the factors are multiplied and one ``log`` taken per
run of factors (instead of two softplus per child), and when a unit flips its
children's ``p`` are updated by ``p e / (1 + p (e - 1))`` without an ``exp``.
Activations or weights beyond +-20 take the exact softplus / sigmoid branch.

The product over the children is a chain of dependent multiplications, so a row
whose activations and a unit whose weights all lie inside +-20 (tracked per row:
``n_far`` counts the children outside) take a branch-free path with four
independent products, one ``log`` per 32 children: each factor lies in
``[e^-20, e^20]``, so 32 of them stay inside the double range (issue 25: the
scoring sweeps). Only the rounding differs from the one-product loop.
"""

from libc.math cimport exp, log, log1p, fabs

cdef double FAST_LIMIT = 20.0


cdef inline double softplus(double a) noexcept nogil:
    if a > 0:
        return a + log1p(exp(-a))
    return log1p(exp(a))


cdef inline double sigmoid(double a) noexcept nogil:
    if a >= 0:
        return 1.0 / (1.0 + exp(-a))
    cdef double e = exp(a)
    return e / (1.0 + e)


cdef inline double log_factor_sum(const double[::1] e, const double[::1] p,
                                  Py_ssize_t J) noexcept nogil:
    """``sum_j log(1 + p_j (e_j - 1))`` when every ``e_j`` lies in ``[e^-20, e^20]``.

    Four independent products over blocks of 32 children (each factor in
    ``[e^-20, e^20]``, so a block's product stays within ``e^+-640``), one ``log``
    per block: the multiplications no longer wait on each other.
    """
    cdef Py_ssize_t j = 0, t
    cdef double s = 0.0, q0, q1, q2, q3
    while j + 32 <= J:
        q0 = 1.0
        q1 = 1.0
        q2 = 1.0
        q3 = 1.0
        for t in range(j, j + 32, 4):
            q0 = q0 * (1.0 + p[t] * (e[t] - 1.0))
            q1 = q1 * (1.0 + p[t + 1] * (e[t + 1] - 1.0))
            q2 = q2 * (1.0 + p[t + 2] * (e[t + 2] - 1.0))
            q3 = q3 * (1.0 + p[t + 3] * (e[t + 3] - 1.0))
        s = s + log((q0 * q1) * (q2 * q3))
        j = j + 32
    q0 = 1.0
    for t in range(j, J):
        q0 = q0 * (1.0 + p[t] * (e[t] - 1.0))
    return s + log(q0)


cdef inline double _slow_sum(const double[:, ::1] Wt, const double[:, ::1] Et,
                             const double[:, ::1] Eit, const double[:, ::1] a_below,
                             const double[::1] p, Py_ssize_t n, Py_ssize_t k, Py_ssize_t J,
                             bint off) noexcept nogil:
    """``sum_j [softplus(a1_j) - softplus(a0_j)]`` (unit k on minus off), any range.

    From the unit's current state: off, the sum of ``softplus(a + w) - softplus(a)``;
    on, minus that of ``softplus(a - w) - softplus(a)``. Each term is ``log(f)``
    with ``f = 1 + p (e^{+-w} - 1)`` in ``[e^-20, e^20]`` where both ``|w|`` and
    ``|a|`` are below the limit; the factors are multiplied and the log taken only
    when the product leaves ``[1e-150, 1e150]``, so one log serves many children.
    Beyond the limit, the exact softplus.
    """
    cdef Py_ssize_t j
    cdef double s = 0.0, prod = 1.0, w, a
    cdef double sign = 1.0 if off else -1.0
    cdef const double[:, ::1] E = Et if off else Eit
    for j in range(J):
        w = Wt[k, j]
        a = a_below[n, j]
        if fabs(w) < FAST_LIMIT and fabs(a) < FAST_LIMIT:
            prod = prod * (1.0 + p[j] * (E[k, j] - 1.0))
            if prod > 1e150 or prod < 1e-150:
                s = s + log(prod)
                prod = 1.0
        else:
            s = s + softplus(a + sign * w) - softplus(a)
    return sign * (s + log(prod))

def collapsed_sweep_layer(const double[:, ::1] Wt, const double[:, ::1] Et,
                          const double[:, ::1] Eit, const double[:, ::1] xw,
                          double[:, ::1] a_below, const double[:, ::1] a_self,
                          double[:, ::1] h, const double[:, ::1] u, double beta,
                          double[::1] p, double[:, ::1] prob, bint store_prob):
    """Sweep units ``k = 0..K-1`` of one layer for every row, in place.

    Parameters
    ----------
    Wt : (K, J) the weights from this layer to its children, transposed.
    Et, Eit : (K, J) ``exp(Wt)`` and ``exp(-Wt)``.
    xw : (N, K) ``children @ W`` (the children are fixed during this sweep).
    a_below : (N, J) the children's activations; updated when a unit flips.
    a_self : (N, K) this layer's activation from its parents (the prior logit).
    h : (N, K) this layer's units (0.0 / 1.0), updated in place.
    u : (K, N) uniforms; unit ``k`` of row ``n`` is 1 iff ``u[k, n] < sigmoid(logit)``.
    beta : multiplies the children's log likelihood (AIS tempering when they are data).
    p : (J,) scratch.
    prob : (N, K) with ``store_prob``: each unit's probability of being on at its
        update, ``sigmoid(logit)`` (Rao-Blackwellised marginals); else unread.
    """
    cdef Py_ssize_t N = h.shape[0], K = h.shape[1], J = Wt.shape[1]
    cdef Py_ssize_t n, k, j, n_far
    cdef double s, w, a, f, prod, logit, new, sign
    # units whose weights all lie inside +-FAST_LIMIT (the branch-free path's condition)
    cdef unsigned char[::1] w_near = bytearray(K)
    for k in range(K):
        w_near[k] = 1
        for j in range(J):
            if fabs(Wt[k, j]) >= FAST_LIMIT:
                w_near[k] = 0
    with nogil:
        for n in range(N):
            n_far = 0
            for j in range(J):
                p[j] = sigmoid(a_below[n, j])
                if fabs(a_below[n, j]) >= FAST_LIMIT:
                    n_far = n_far + 1
            for k in range(K):
                if n_far == 0 and w_near[k]:
                    if h[n, k] == 0.0:
                        s = log_factor_sum(Et[k], p, J)
                    else:
                        s = -log_factor_sum(Eit[k], p, J)
                else:
                    s = _slow_sum(Wt, Et, Eit, a_below, p, n, k, J, h[n, k] == 0.0)
                logit = a_self[n, k] + beta * (xw[n, k] - s)
                f = sigmoid(logit)
                if store_prob:
                    prob[n, k] = f
                new = 1.0 if u[k, n] < f else 0.0
                if new != h[n, k]:
                    h[n, k] = new
                    sign = 1.0 if new == 1.0 else -1.0
                    for j in range(J):
                        w = Wt[k, j]
                        a = a_below[n, j]
                        a_below[n, j] = a + sign * w
                        n_far = n_far + (fabs(a + sign * w) >= FAST_LIMIT) - (fabs(a) >= FAST_LIMIT)
                        if fabs(w) < FAST_LIMIT and fabs(a) < FAST_LIMIT:
                            # sigmoid(a +- w) = p e^{+-w} / (1 + p (e^{+-w} - 1)): no exp
                            f = Et[k, j] if new == 1.0 else Eit[k, j]
                            p[j] = p[j] * f / (1.0 + p[j] * (f - 1.0))
                        else:
                            p[j] = sigmoid(a_below[n, j])


def softplus_row_sums(const double[:, ::1] A, double[::1] out):
    """``out[n] = sum_j softplus(A[n, j])``, the normaliser of ``log p(x | h)`` (Eq. 7).

    The NumPy twin is ``skdgm._core.numerics.softplus(A).sum(axis=1)``. Written as
    ``sum_j max(a_j, 0) + log prod_j (1 + exp(-|a_j|))``: each factor lies in
    ``(1, 2]``, so one ``log`` serves a block of 512 and there is one ``exp`` per
    element, fused in one pass over ``A`` (the NumPy form makes five temporaries of
    ``A``'s size; the scoring of visited states spent half its time there).
    """
    cdef Py_ssize_t N = A.shape[0], J = A.shape[1], n, j, t, stop
    cdef double s, q0, q1, a0, a1
    with nogil:
        for n in range(N):
            s = 0.0
            j = 0
            while j < J:
                stop = j + 512 if j + 512 < J else J
                q0 = 1.0
                q1 = 1.0
                t = j
                while t + 1 < stop:
                    a0 = A[n, t]
                    a1 = A[n, t + 1]
                    if a0 > 0:
                        s = s + a0
                    if a1 > 0:
                        s = s + a1
                    q0 = q0 * (1.0 + exp(-fabs(a0)))
                    q1 = q1 * (1.0 + exp(-fabs(a1)))
                    t = t + 2
                if t < stop:
                    a0 = A[n, t]
                    if a0 > 0:
                        s = s + a0
                    q0 = q0 * (1.0 + exp(-fabs(a0)))
                s = s + log(q0 * q1)
                j = stop
            out[n] = s
