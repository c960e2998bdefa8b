"""Small Cython kernels that exercise the shared random-stream plumbing.

They are the smallest users of :mod:`skdgm._core._random` and exist so that the
tests can prove, once for every wing, that a nogil Cython draw through numpy's
``c_distributions`` is bit-identical to the NumPy call it mirrors.
"""
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport (
    random_standard_normal, random_standard_gamma, random_standard_uniform,
)

import numpy as np

from skdgm._core._random cimport bitgen_of


def standard_normal(rng, Py_ssize_t n):
    """n standard normal draws, in the order ``rng.standard_normal(n)`` makes them."""
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] o = out
    cdef bitgen_t* bg = bitgen_of(rng)
    cdef Py_ssize_t i
    with rng.bit_generator.lock, nogil:
        for i in range(n):
            o[i] = random_standard_normal(bg)
    return out


def standard_gamma(rng, const double[::1] shape):
    """One gamma(shape[i], 1) draw per entry, as ``rng.standard_gamma(shape)``."""
    cdef Py_ssize_t n = shape.shape[0], i
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] o = out
    cdef bitgen_t* bg = bitgen_of(rng)
    with rng.bit_generator.lock, nogil:
        for i in range(n):
            o[i] = random_standard_gamma(bg, shape[i])
    return out


def bernoulli(rng, const double[:, ::1] p):
    """Bernoulli(p) as uint8: the Cython twin of ``skdgm._core.mcmc.bernoulli(p, rng)``."""
    cdef Py_ssize_t n = p.shape[0], d = p.shape[1], i, j
    out = np.empty((n, d), dtype=np.uint8)
    cdef unsigned char[:, ::1] o = out
    cdef bitgen_t* bg = bitgen_of(rng)
    with rng.bit_generator.lock, nogil:
        for i in range(n):
            for j in range(d):
                o[i, j] = random_standard_uniform(bg) < p[i, j]
    return out
