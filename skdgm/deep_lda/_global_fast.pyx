"""Cython kernel of the TLASGR / TLFSGR topic update, Eq. 15 of Cong et al. (2017).

:func:`simplex_step` equals :func:`skdgm.deep_lda._global.simplex_step` with
``noise = rng.standard_normal(phi.shape)`` (its NumPy twin; the tests compare
the two), fused into three passes over ``phi`` with the standard normals drawn
inside the loop from numpy's bit generator, in the C order ``standard_normal``
draws them: no ``(V, K)`` noise array or temporaries per minibatch.
"""
from libc.math cimport fabs, sqrt
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport random_standard_normal

import numpy as np

from skdgm._core._random cimport bitgen_of


cdef inline double _drift_step(double p, double r, double a, double b, double z) noexcept nogil:
    # Eq. 15 before the constraint: drift towards a / b plus N(0, 2 r p) noise
    return p + r * (a - b * p) + sqrt(2.0 * r * p) * z


def simplex_step(const double[:, ::1] phi, const double[::1] rate,
                 const double[:, ::1] xbar, double rho, double eta, rng, double floor,
                 const double[:, ::1] noise=None):
    """One reduced-mean Riemannian step of every column of ``phi`` (Eq. 15).

    ``b_k = rho x_{.k.} + eta V``; the rate is ``min(rate_k, 1 / b_k)``;
    ``y = phi + r_k ((rho x_{:k.} + eta) - b_k phi) + sqrt(2 r_k phi) z`` with
    ``z`` standard normal; ``x = |y - phi (1'y - 1)|`` (conditioning on the
    hyperplane, then reflection); the column renormalised and floored at
    ``floor``. ``z`` is drawn from ``rng`` in C order, or read from ``noise``
    (normals drawn beforehand, e.g. while the local step runs; ``rng`` is then
    not used): the same numbers give the same result.

    Returns
    -------
    phi_new : ndarray of shape (V, K)
    rate_used : ndarray of shape (K,)
    """
    cdef Py_ssize_t V = phi.shape[0], K = phi.shape[1], v, k
    if xbar.shape[0] != V or xbar.shape[1] != K or rate.shape[0] != K:
        raise ValueError("simplex_step: inconsistent shapes")
    out_arr = np.empty((V, K), dtype=np.float64)
    rate_arr = np.empty(K, dtype=np.float64)
    b_arr = np.zeros(K, dtype=np.float64)
    s_arr = np.zeros(K, dtype=np.float64)
    cdef double[:, ::1] out = out_arr
    cdef double[::1] r = rate_arr
    cdef double[::1] b = b_arr
    cdef double[::1] s = s_arr
    cdef bint drawn = noise is None
    if not drawn and (noise.shape[0] != V or noise.shape[1] != K):
        raise ValueError("simplex_step: noise must have phi's shape")
    cdef bitgen_t* bg = bitgen_of(rng) if drawn else NULL
    cdef double p, y, x
    with nogil:
        for v in range(V):
            for k in range(K):
                b[k] += xbar[v, k]
        for k in range(K):
            b[k] = rho * b[k] + eta * V
            r[k] = rate[k] if rate[k] < 1.0 / b[k] else 1.0 / b[k]
    if drawn:
        with rng.bit_generator.lock, nogil:
            for v in range(V):
                for k in range(K):
                    y = _drift_step(phi[v, k], r[k], rho * xbar[v, k] + eta, b[k],
                                    random_standard_normal(bg))
                    out[v, k] = y
                    s[k] += y
    else:
        with nogil:
            for v in range(V):
                for k in range(K):
                    y = _drift_step(phi[v, k], r[k], rho * xbar[v, k] + eta, b[k],
                                    noise[v, k])
                    out[v, k] = y
                    s[k] += y
    with nogil:
        for k in range(K):
            b[k] = 0.0      # now the column sums of x
        for v in range(V):
            for k in range(K):
                x = fabs(out[v, k] - phi[v, k] * (s[k] - 1.0))
                out[v, k] = x
                b[k] += x
        for v in range(V):
            for k in range(K):
                x = out[v, k] / b[k]
                out[v, k] = x if x > floor else floor
    return out_arr, rate_arr
