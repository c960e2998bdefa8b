# Sums and searches shared by the deep-LDA Cython kernels (``_local_fast``,
# ``_collapsed_fast``): one definition, inlined into each kernel. The NumPy
# twins in ``_local.py`` and ``_collapsed.py`` perform the same additions in the
# same order.

cdef inline Py_ssize_t _first_above(const double* cum, Py_ssize_t n, double u) noexcept nogil:
    """The first ``k`` in ``[0, n - 1)`` with ``cum[k] > u``, else ``n - 1``: bisection
    in a non-decreasing running sum, i.e. ``min(searchsorted(cum, u, "right"), n - 1)``."""
    cdef Py_ssize_t lo = 0, hi = n - 1, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if cum[mid] > u:
            hi = mid
        else:
            lo = mid + 1
    return lo


cdef inline double _sum4(const double* a, Py_ssize_t K) noexcept nogil:
    """``sum(a[:K])`` as four interleaved sequential sums (``k mod 4``), then
    ``(s0 + s1) + (s2 + s3)``: no single chain of ``K`` dependent additions."""
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef Py_ssize_t k = 0
    while k + 3 < K:
        s0 = s0 + a[k]
        s1 = s1 + a[k + 1]
        s2 = s2 + a[k + 2]
        s3 = s3 + a[k + 3]
        k = k + 4
    if k < K:
        s0 = s0 + a[k]
    if k + 1 < K:
        s1 = s1 + a[k + 1]
    if k + 2 < K:
        s2 = s2 + a[k + 2]
    return (s0 + s1) + (s2 + s3)


cdef inline double _dot4(const double* a, const double* b, Py_ssize_t K) noexcept nogil:
    """``sum(a[:K] * b[:K])`` summed as :func:`_sum4` sums."""
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef Py_ssize_t k = 0
    while k + 3 < K:
        s0 = s0 + a[k] * b[k]
        s1 = s1 + a[k + 1] * b[k + 1]
        s2 = s2 + a[k + 2] * b[k + 2]
        s3 = s3 + a[k + 3] * b[k + 3]
        k = k + 4
    if k < K:
        s0 = s0 + a[k] * b[k]
    if k + 1 < K:
        s1 = s1 + a[k + 1] * b[k + 1]
    if k + 2 < K:
        s2 = s2 + a[k + 2] * b[k + 2]
    return (s0 + s1) + (s2 + s3)
