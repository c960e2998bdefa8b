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
    cdef Py_ssize_t n, k, j
    cdef double s, w, a, f, prod, logit, new, sign
    with nogil:
        for n in range(N):
            for j in range(J):
                p[j] = sigmoid(a_below[n, j])
            for k in range(K):
                # s = sum_j [softplus(a1_j) - softplus(a0_j)] (unit k on minus off).
                # Fast path: each term is log(f) with f = 1 + p (e^{+-w} - 1) in
                # [e^-20, e^20]; the factors are multiplied and the log taken only when
                # the product leaves [1e-150, 1e150], so one log serves many children.
                s = 0.0
                prod = 1.0
                if h[n, k] == 0.0:
                    for j in range(J):
                        w = Wt[k, j]
                        a = a_below[n, j]
                        if fabs(w) < FAST_LIMIT and fabs(a) < FAST_LIMIT:
                            prod = prod * (1.0 + p[j] * (Et[k, j] - 1.0))
                            if prod > 1e150 or prod < 1e-150:
                                s = s + log(prod)
                                prod = 1.0
                        else:
                            s = s + softplus(a + w) - softplus(a)
                    s = s + log(prod)
                else:
                    for j in range(J):
                        w = Wt[k, j]
                        a = a_below[n, j]
                        if fabs(w) < FAST_LIMIT and fabs(a) < FAST_LIMIT:
                            prod = prod * (1.0 + p[j] * (Eit[k, j] - 1.0))
                            if prod > 1e150 or prod < 1e-150:
                                s = s - log(prod)
                                prod = 1.0
                        else:
                            s = s + softplus(a) - softplus(a - w)
                    s = s - log(prod)
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
                        if fabs(w) < FAST_LIMIT and fabs(a) < FAST_LIMIT:
                            # sigmoid(a +- w) = p e^{+-w} / (1 + p (e^{+-w} - 1)): no exp
                            f = Et[k, j] if new == 1.0 else Eit[k, j]
                            p[j] = p[j] * f / (1.0 + p[j] * (f - 1.0))
                        else:
                            p[j] = sigmoid(a_below[n, j])
