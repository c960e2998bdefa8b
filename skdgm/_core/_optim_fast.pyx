# cython: language_level=3
"""Fused element-wise passes of :class:`skdgm._core.optim.Adam` (issue 15).

The NumPy twins are :func:`skdgm._core.optim.sq_diff_sum_numpy` and
:meth:`skdgm._core.optim.Adam.step`. For a GRBM of 4096 x 784 weights the
textbook Adam expressions are a dozen passes over 25 MB float64 arrays; one pass
that reads the two sufficient statistics, the parameter and the moments and
writes the new ones takes less than half their time
(``benchmarks/bench_grbm_speed.py``, "Adam step alone").
"""

from cython cimport floating
from libc.math cimport sqrt


def sq_diff_sum(const floating[::1] a, const floating[::1] b):
    """``sum((a - b) ** 2)`` with the differences and the sum in float64."""
    cdef Py_ssize_t i, n = a.shape[0]
    cdef double d, s = 0.0
    if b.shape[0] != n:
        raise ValueError("sq_diff_sum: the two arrays differ in length")
    with nogil:
        for i in range(n):
            d = <double>a[i] - <double>b[i]
            s += d * d
    return s


def adam_diff_step(const floating[::1] p, const floating[::1] pos, const floating[::1] neg,
                   const double[::1] m, const double[::1] v, double[::1] m_out,
                   double[::1] v_out, floating[::1] p_out, double scale, double beta1,
                   double beta2, double step, double eps):
    """One Adam step (Kingma and Ba 2015, Alg. 1) on the gradient ``(pos - neg) * scale``.

    ``step`` is the signed, bias-corrected ``lr_t``. Every operation is the one
    :meth:`~skdgm._core.optim.Adam.step` performs, in float64 and in the same
    order, so the two agree bit for bit: ``m' = b1 m + (1 - b1) g``,
    ``v' = b2 v + (1 - b2) g^2``, ``p' = p + step m' / (sqrt(v') + eps)``, rounded
    once to the parameters' dtype.
    """
    cdef Py_ssize_t i, n = p.shape[0]
    cdef double g, mi, vi, c1 = 1.0 - beta1, c2 = 1.0 - beta2
    if not (pos.shape[0] == n and neg.shape[0] == n and m.shape[0] == n
            and v.shape[0] == n and m_out.shape[0] == n and v_out.shape[0] == n
            and p_out.shape[0] == n):
        raise ValueError("adam_diff_step: the arrays differ in length")
    with nogil:
        for i in range(n):
            g = (<double>pos[i] - <double>neg[i]) * scale
            mi = m[i] * beta1 + g * c1
            vi = v[i] * beta2 + (g * g) * c2
            m_out[i] = mi
            v_out[i] = vi
            p_out[i] = <floating>(<double>p[i] + (mi * step) / (sqrt(vi) + eps))
