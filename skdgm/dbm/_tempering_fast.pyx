"""Compiled twin of :func:`skdgm.dbm._tempering.st_temperature_moves_numpy`.

The temperature moves of Alg. 1 (Salakhutdinov 2010, steps 4-5) are sequential
over chains because the Wang-Landau weights they share change after every chain;
this loop is the one part of adaptive ST that NumPy cannot vectorise.
"""
from libc.math cimport exp, log
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport random_standard_uniform

from skdgm._core._random cimport bitgen_of


def st_temperature_moves(Py_ssize_t[::1] k, const double[::1] energies,
                         const double[::1] betas, double[::1] log_g,
                         double log_gain, rng):
    """Metropolis moves between neighbouring temperatures and the Eq. 5 update.

    Same arithmetic and the same two uniforms per chain as the NumPy twin;
    ``k`` and ``log_g`` are updated in place.
    """
    cdef Py_ssize_t K = betas.shape[0], n = k.shape[0], c, kc, prop
    cdef double u_dir, u_acc, log_q, log_a
    cdef double log_half = log(0.5), log_two = log(2.0)
    cdef bitgen_t* bg = bitgen_of(rng)
    with rng.bit_generator.lock, nogil:
        for c in range(n):
            u_dir = random_standard_uniform(bg)
            u_acc = random_standard_uniform(bg)
            kc = k[c]
            if K > 1:
                if kc == 0:
                    prop = 1
                    log_q = log_half if K > 2 else 0.0
                elif kc == K - 1:
                    prop = K - 2
                    log_q = log_half if K > 2 else 0.0
                else:
                    prop = kc - 1 if u_dir < 0.5 else kc + 1
                    log_q = log_two if (prop == 0 or prop == K - 1) else 0.0
                log_a = (log_g[kc] - log_g[prop] - (betas[prop] - betas[kc]) * energies[c]
                         + log_q)
                if log_a >= 0.0 or u_acc < exp(log_a):
                    kc = prop
                    k[c] = kc
            log_g[kc] += log_gain
