"""Polya-Gamma augmented sweep over one hidden layer (Gan et al. 2015, Sec. 3.1).

The NumPy twin is :func:`skdgm.sbn._gibbs.pg_hidden_sweep_numpy`; both consume one
uniform per (unit, sample) in the order of ``rng.random((K, n))`` and agree draw
for draw (tested).
"""
from libc.math cimport exp
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport random_standard_uniform

from skdgm._core._random cimport bitgen_of


def pg_hidden_sweep(double[:, ::1] h, double[:, ::1] a_self,
                    const double[:, ::1] x_below, double[:, ::1] psi_below,
                    const double[:, ::1] gamma_below, const double[:, ::1] w_t,
                    const double[:, ::1] lat_t, const double[:, ::1] gamma_self,
                    bint use_lateral, rng):
    """Update ``h`` (n, K) unit by unit; keeps ``a_self`` and ``psi_below`` current.

    ``w_t`` is ``W.T`` (K, J); ``lat_t`` the transposed lateral block (K, K) (ignored
    unless ``use_lateral``). The logit of unit k is its own activation plus, for each
    child c with weight w and PG variable g, ``(x_c - 1/2) w - g (2 psi_c^{\\k} w + w^2) / 2``
    (the d_kn of Sec. 3.1, extended to lateral children).
    """
    cdef Py_ssize_t n = h.shape[0], K = h.shape[1], J = x_below.shape[1]
    cdef Py_ssize_t i, k, j
    cdef double d, hk, w, p0, new, delta, u
    cdef bitgen_t* bg = bitgen_of(rng)
    with rng.bit_generator.lock, nogil:
        for k in range(K):
            for i in range(n):
                hk = h[i, k]
                d = a_self[i, k]
                for j in range(J):
                    w = w_t[k, j]
                    p0 = psi_below[i, j] - w * hk
                    d = d + (x_below[i, j] - 0.5) * w - 0.5 * gamma_below[i, j] * (2.0 * p0 * w + w * w)
                if use_lateral:
                    for j in range(k + 1, K):
                        w = lat_t[k, j]
                        p0 = a_self[i, j] - w * hk
                        d = d + (h[i, j] - 0.5) * w - 0.5 * gamma_self[i, j] * (2.0 * p0 * w + w * w)
                u = random_standard_uniform(bg)
                new = 1.0 if u < 1.0 / (1.0 + exp(-d)) else 0.0
                delta = new - hk
                if delta != 0.0:
                    h[i, k] = new
                    for j in range(J):
                        psi_below[i, j] = psi_below[i, j] + delta * w_t[k, j]
                    if use_lateral:
                        for j in range(k + 1, K):
                            a_self[i, j] = a_self[i, j] + delta * lat_t[k, j]
