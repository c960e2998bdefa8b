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
                    const double[:, ::1] c1, const double[:, ::1] c2,
                    double[:, ::1] psi_below, double[:, ::1] gpsi,
                    const double[:, ::1] gamma_below, const double[:, ::1] w_t,
                    const double[:, ::1] lat_t, const double[:, ::1] gamma_self,
                    bint use_lateral, rng):
    """Update ``h`` (n, K) unit by unit; keeps ``a_self``, ``psi_below`` and ``gpsi`` current.

    The augmented conditional is linear in the unit, so with ``c1 = (x - 1/2) W``,
    ``c2 = gamma (W * W)`` (fixed during the sweep) and ``gpsi = gamma * psi`` the
    logit of unit k is ``a_k + c1_k - gpsi . w_k - (1/2 - h_k) c2_k`` (the d_kn of
    Sec. 3.1), plus, with lateral weights, the same terms for the later units of the
    layer. ``w_t`` is ``W.T`` (K, J); ``lat_t`` the transposed lateral block (K, K).
    """
    cdef Py_ssize_t n = h.shape[0], K = h.shape[1], J = psi_below.shape[1]
    cdef Py_ssize_t i, k, j
    cdef double d, hk, w, p0, new, delta, u, dot
    cdef bitgen_t* bg = bitgen_of(rng)
    with rng.bit_generator.lock, nogil:
        for k in range(K):
            for i in range(n):
                hk = h[i, k]
                dot = 0.0
                for j in range(J):
                    dot = dot + gpsi[i, j] * w_t[k, j]
                d = a_self[i, k] + c1[i, k] - dot - (0.5 - hk) * c2[i, k]
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
                        w = delta * w_t[k, j]
                        psi_below[i, j] = psi_below[i, j] + w
                        gpsi[i, j] = gpsi[i, j] + gamma_below[i, j] * w
                    if use_lateral:
                        for j in range(k + 1, K):
                            a_self[i, j] = a_self[i, j] + delta * lat_t[k, j]
