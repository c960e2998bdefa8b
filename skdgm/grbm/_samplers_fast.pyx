"""Cython kernels of the GRBM samplers: the element-wise work between the products.

Each kernel draws its random numbers inside the loop from the generator's
``bitgen_t`` through numpy's own samplers (``random_standard_uniform_f`` and the
float32 ziggurat ``random_standard_normal_f``, or their float64 versions for
float64 models), one per element in C order: exactly the numbers
``rng.random(shape, dtype)`` and ``rng.standard_normal(shape, dtype)`` would give,
in the same order. Their NumPy twins in ``_samplers.py`` make those calls, so a
kernel and its twin give identical states from one stream (the tests check it).
What the kernels save is the round trip through a NumPy array of random numbers
and the temporaries of the arithmetic around it.
"""
from cython cimport floating
from libc.stdint cimport uint32_t, uint64_t
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport (
    random_standard_normal, random_standard_normal_f,
    random_standard_normal_fill, random_standard_normal_fill_f,
    random_standard_uniform_fill,
)

import numpy as np

from skdgm._core._random cimport bitgen_of


def langevin_inner(const floating[:, ::1] v0, const floating[:, ::1] m,
                   const floating[::1] sigma, const double[::1] alphas, rng):
    """K preconditioned Langevin steps per element: ``v <- v - a_k (v - m) + sqrt(2 a_k) sigma xi``.

    Twin of ``langevin_inner_numpy``: the ``K`` normals of element ``(i, d)`` are
    consecutive in the stream, as ``rng.standard_normal((n, N, K))`` orders them.
    """
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


def bernoulli_into(const floating[:, ::1] p, floating[:, ::1] out, double[::1] colsum, rng,
                   bint from_tanh=False, work=None):
    """``out = (u < p)``, one uniform ``u`` per entry in C order (Eq. 4).

    float64 models use ``u = rng.random(p.shape)``. float32 models split each
    64-bit output of the bit generator into two 24-bit uniforms, low half first
    (``uniform24`` in ``_samplers.py`` is the NumPy expression): the same
    resolution as ``rng.random(dtype=np.float32)``, half the calls into the
    generator.

    With ``from_tanh`` the first argument holds ``t = tanh(a / 2)`` and the
    probabilities ``p = 1/2 + t / 2 = sigmoid(a)`` are formed on the fly, as
    ``_core.numerics.sigmoid`` forms them (two passes over the array saved).
    When ``colsum`` has an entry per column, ``colsum += out.sum(axis=0)`` as well
    (exact: sums of zeros and ones in float64). ``out`` may not alias ``p``.
    ``work``, an array of at least ``p.size + 1`` entries of ``p``'s dtype, holds
    the uniforms (a chain passes one buffer to all its steps: on a 512 x 4096
    batch a fresh one was 8 MB of page faults per step).
    """
    cdef Py_ssize_t n = p.shape[0], d = p.shape[1], i, j, k, nd = n * d
    cdef bint acc = colsum.shape[0] == d
    dtype = np.float32 if floating is float else np.float64
    if work is not None and work.dtype == dtype and work.size > nd and work.flags.c_contiguous:
        buf = work.reshape(-1)
    else:
        buf = np.empty(nd + 1, dtype=dtype)
    cdef floating[::1] u = buf
    cdef floating x
    cdef uint64_t r
    cdef float scale = 1.0 / 16777216.0
    cdef bitgen_t* bg = bitgen_of(rng)
    with rng.bit_generator.lock, nogil:
        # All the uniforms first, then loops without calls that the compiler
        # vectorises: compared one by one, ``u < p`` became a branch,
        # mispredicted half the time as p is near 1/2 (3x slower).
        if floating is float:
            for k in range(0, nd, 2):
                r = bg.next_uint64(bg.state)
                u[k] = <float> (<uint32_t> (r & 0xFFFFFFFFu) >> 8) * scale
                u[k + 1] = <float> (<uint32_t> (r >> 32) >> 8) * scale
        else:
            random_standard_uniform_fill(bg, nd, &u[0])
        for i in range(n):
            if from_tanh:
                for j in range(d):
                    x = <floating> (u[i * d + j] < <floating> 0.5 + <floating> 0.5 * p[i, j])
                    out[i, j] = x
            else:
                for j in range(d):
                    x = <floating> (u[i * d + j] < p[i, j])
                    out[i, j] = x
            if acc:
                for j in range(d):
                    colsum[j] += out[i, j]
    return out


def gaussian_into(const floating[:, ::1] loc, const floating[::1] mu,
                  const floating[::1] scale, const floating[::1] var, floating[:, ::1] v,
                  floating[:, ::1] vs, double[::1] csum, double[::1] sqsum, rng):
    """``v = (mu + loc) + scale * xi`` and ``vs = v / var`` in one pass.

    With ``xi = rng.standard_normal(v.shape, dtype)``: Gibbs's draw of ``v | h``
    (Eq. 3, ``loc = W^T h``, ``scale = sigma``) and the closed-form K-step move
    (Eq. 11, ``mu`` zero, ``scale = sqrt(c) sigma``). When ``csum`` has an entry
    per column, the visible statistics of Eqs. (15)-(16) are accumulated too:
    ``csum += sum_i (v - mu)``, ``sqsum += sum_i (v - mu)^2`` (float64).
    ``v`` may alias ``loc``.
    """
    cdef Py_ssize_t n = v.shape[0], d = v.shape[1], i, j
    cdef bint acc = csum.shape[0] == d
    dtype = np.float32 if floating is float else np.float64
    row = np.empty(d, dtype=dtype)
    cdef floating[::1] xi = row
    cdef floating x, c
    cdef bitgen_t* bg = bitgen_of(rng)
    with rng.bit_generator.lock, nogil:
        for i in range(n):
            # the row's normals first, so that the arithmetic loop vectorises
            if floating is float:
                random_standard_normal_fill_f(bg, d, &xi[0])
            else:
                random_standard_normal_fill(bg, d, &xi[0])
            for j in range(d):
                x = (mu[j] + loc[i, j]) + scale[j] * xi[j]
                v[i, j] = x
                vs[i, j] = x / var[j]
            if acc:
                for j in range(d):
                    c = v[i, j] - mu[j]
                    csum[j] += c
                    sqsum[j] += <double> c * c
    return v
