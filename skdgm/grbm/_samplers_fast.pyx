"""Cython kernels of the GRBM samplers: the element-wise inner loops.

Twin of ``langevin_inner_np`` in ``_samplers.py``: it draws the same numbers from
the same stream in the same order (float32 models draw float32 normals, as
``rng.standard_normal(dtype=np.float32)`` does).
On a 64 x 256 model the NumPy inner loop is overhead-bound (K passes over a small
array, each a handful of temporaries); here each element runs its K steps in
registers.
"""
from cython cimport floating
from libc.math cimport sqrt
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport (
    random_standard_normal, random_standard_normal_f,
)

import numpy as np

from skdgm._core._random cimport bitgen_of


def langevin_inner(const floating[:, ::1] v0, const floating[:, ::1] m,
                   const floating[::1] sigma, const double[::1] alphas, rng):
    """K preconditioned Langevin steps per element: ``v <- v - a_k (v - m) + sqrt(2 a_k) sigma xi``."""
    cdef Py_ssize_t n = v0.shape[0], d = v0.shape[1], K = alphas.shape[0]
    cdef Py_ssize_t i, j, k
    dtype = np.float32 if floating is float else np.float64
    out = np.empty((n, d), dtype=dtype)
    cdef floating[:, ::1] o = out
    al_arr = np.asarray(alphas).astype(dtype)
    sq_arr = np.sqrt(2.0 * np.asarray(alphas)).astype(dtype)
    cdef floating[::1] al = al_arr
    cdef floating[::1] sq = sq_arr
    cdef floating x, mm, s, xi
    cdef bitgen_t* bg = bitgen_of(rng)
    with rng.bit_generator.lock, nogil:
        for i in range(n):
            for j in range(d):
                x = v0[i, j]
                mm = m[i, j]
                s = sigma[j]
                for k in range(K):
                    if floating is float:
                        xi = random_standard_normal_f(bg)
                    else:
                        xi = random_standard_normal(bg)
                    x = (x - al[k] * (x - mm)) + (sq[k] * s) * xi
                o[i, j] = x
    return out
