"""Cython kernels of the GRBM samplers: the element-wise work between the products.

Each kernel draws its random numbers inside the loop from the generator's
``bitgen_t``. float64 models use numpy's own samplers
(``random_standard_uniform_fill``, the ziggurat ``random_standard_normal``), one
per element in C order: exactly the numbers ``rng.random(shape)`` and
``rng.standard_normal(shape)`` would give. float32 models, whose small updates
are bound by the random numbers between the products, read the generator's raw
64-bit words (``next_uint64``, the words ``rng.integers(0, 2**64 - 1,
endpoint=True, dtype=np.uint64)`` returns) in blocks: four 16-bit uniforms per
word for the Bernoulli draws and two 32-bit ziggurat words per word for the
normals, with the rare elements that need more randomness served after the block
(see each kernel). The NumPy twins in ``_samplers.py`` make the same draws, so a
kernel and its twin give identical states from one stream (the tests check it).
"""
from cython cimport floating
from libc.math cimport exp, log
from libc.stdlib cimport free, malloc
from libc.stdint cimport uint16_t, uint32_t, uint64_t
from numpy.random cimport bitgen_t
from numpy.random.c_distributions cimport (
    random_standard_normal, random_standard_normal_f, random_standard_normal_fill,
    random_standard_uniform_fill,
)

import math

import numpy as np

from skdgm._core._random cimport bitgen_of


# --------------------------------------------------------------------------
# The float32 ziggurat (Marsaglia & Tsang 2000): 256 layers of equal area
# --------------------------------------------------------------------------

#: 64-bit words served from a block to each ziggurat word that misses its fast
#: test: two attempts of the slow path. Further attempts (rare) draw directly.
cdef enum:
    ZIG_EXTRA_C = 4
ZIG_EXTRA = ZIG_EXTRA_C


def _zig_layers(r):
    """Widths ``X[0] > X[1] = r > ... > X[255]`` for a base edge ``r``, and the
    mismatch ``f(X[255]) + v / X[255] - 1`` that the right ``r`` makes zero."""
    f = lambda x: math.exp(-0.5 * x * x)
    v = r * f(r) + math.sqrt(0.5 * math.pi) * math.erfc(r / math.sqrt(2.0))
    x = [v / f(r), r]
    last = r
    for _ in range(254):
        y = f(last) + v / last
        if y >= 1.0:
            return x, 1.0
        last = math.sqrt(-2.0 * math.log(y))
        x.append(last)
    return x, f(last) + v / last - 1.0


def ziggurat_tables():
    """The tables of the float32 ziggurat, ``(r, X, F, W, K)``.

    Layer ``i >= 1`` is the box ``[0, X[i]) x [F[i], F[i + 1])`` under
    ``f(x) = exp(-x^2 / 2)`` (``F = f(X)``), all of one area ``v``; layer 0 is the
    strip ``[0, r) x [0, f(r))`` plus the tail beyond ``r``, of virtual width
    ``X[0] = v / f(r)``. ``r`` is solved so that the top layer closes at
    ``X[256] = 0`` (``r ~ 3.65415``, Marsaglia and Tsang's value). A 32-bit word
    ``w`` picks the layer ``i = w & 255``, the sign ``(w >> 8) & 1`` and
    ``x = (w >> 9) W[i]`` (``W = X / 2^23`` in float32), which lies under the
    curve without a test when ``(w >> 9) < K[i] = floor(2^23 X[i + 1] / X[i])``.
    """
    lo, hi = 3.0, 4.0
    for _ in range(100):                 # the mismatch falls as r grows
        mid = 0.5 * (lo + hi)
        if _zig_layers(mid)[1] > 0:
            lo = mid
        else:
            hi = mid
    r = hi
    X = np.array(_zig_layers(r)[0] + [0.0])
    F = np.exp(-0.5 * X * X)
    F[256] = 1.0
    W = (X[:256] * 2.0 ** -23).astype(np.float32)
    K = np.floor(X[1:] / X[:256] * 2.0 ** 23).astype(np.uint32)
    return r, X, F, W, K


cdef double ZR
cdef double ZF[257]
cdef float ZW[256]
cdef uint32_t ZK[256]


def _load_tables():
    global ZR
    r, X, F, W, K = ziggurat_tables()
    ZR = r
    for i in range(256):
        ZF[i] = F[i]
        ZW[i] = W[i]
        ZK[i] = K[i]
    ZF[256] = F[256]


_load_tables()

# 2^-53: (word >> 11) * 2^-53 is a double uniform on [0, 1)
cdef double U53 = 1.1102230246251565e-16


cdef inline float _zig_slow(uint32_t w, const uint64_t* ex, Py_ssize_t n_ex,
                            bitgen_t* bg) noexcept nogil:
    """The normal of a ziggurat word (twin: ``_samplers.ziggurat_slow``).

    Each attempt of the slow path takes two 64-bit words ``(a, b)``, the first
    ``n_ex`` from ``ex``, the rest from the generator. In the tail (layer 0),
    ``a`` and ``b`` make Marsaglia's exponential proposal beyond ``r``, repeated
    until accepted; in a wedge, ``a`` places ``y`` in the layer's band and, when
    ``y`` is above the curve, the low half of ``b`` is a fresh word.
    """
    cdef Py_ssize_t used = 0
    cdef uint64_t a, b
    cdef uint32_t i = 0, ra = 0
    cdef float x, sgn = 1
    cdef double xd, y, e
    cdef bint tail = False
    while True:
        if not tail:
            i = w & 0xFF
            ra = w >> 9
            sgn = <float> 1.0 - <float> 2.0 * <float> ((w >> 8) & 1)
            if ra < ZK[i]:
                return (<float> ra * ZW[i]) * sgn
        if used + 2 <= n_ex:
            a = ex[used]
            b = ex[used + 1]
        else:
            a = bg.next_uint64(bg.state)
            b = bg.next_uint64(bg.state)
        used += 2
        if i == 0:
            tail = True
            xd = -log(1.0 - <double> (a >> 11) * U53) / ZR
            e = -log(1.0 - <double> (b >> 11) * U53)
            if e + e > xd * xd:
                return (<float> (ZR + xd)) * sgn
        else:
            x = <float> ra * ZW[i]
            xd = <double> x
            y = ZF[i] + (<double> (a >> 11) * U53) * (ZF[i + 1] - ZF[i])
            if y < exp(-0.5 * (xd * xd)):
                return x * sgn
            w = <uint32_t> (b & 0xFFFFFFFFu)


cdef inline Py_ssize_t _zig_words(Py_ssize_t n) noexcept nogil:
    """64-bit words of the main block of ``n`` normals."""
    return (n + 1) // 2


cdef int _ziggurat(float* out, Py_ssize_t n, uint64_t* raw, uint64_t* ex_buf,
                   Py_ssize_t ex_cap, bitgen_t* bg) except -1 nogil:
    """``n`` float32 normals into ``out`` (the stream is described in ``ziggurat_fill``).

    ``raw`` holds ``ceil(n / 2)`` words; ``ex_buf`` ``ex_cap`` more for the slow
    paths (a call with more slow words allocates its extra block: same stream).
    """
    cdef Py_ssize_t n64 = _zig_words(n), k, r, nrej = 0
    cdef const uint32_t* words = <const uint32_t*> raw
    cdef uint32_t w, i, ra
    cdef float x
    for k in range(n64):
        raw[k] = bg.next_uint64(bg.state)
    # branch-free fast path; the ~1 % of words outside their layer's
    # rectangle are only counted here
    for k in range(n):
        w = words[k]
        i = w & 0xFF
        ra = w >> 9
        x = <float> ra * ZW[i]
        out[k] = x * (<float> 1.0 - <float> 2.0 * <float> ((w >> 8) & 1))
        nrej += ra >= ZK[i]
    if nrej == 0:
        return 0
    # the extra block: ZIG_EXTRA_C words per slow word, all drawn before any
    # slow path runs (its overflow draws come after the whole block)
    cdef uint64_t* ex = ex_buf
    if ZIG_EXTRA_C * nrej > ex_cap:
        ex = <uint64_t*> malloc(ZIG_EXTRA_C * nrej * sizeof(uint64_t))
        if ex == NULL:
            with gil:
                raise MemoryError("no memory for the ziggurat's extra block")
    for k in range(ZIG_EXTRA_C * nrej):
        ex[k] = bg.next_uint64(bg.state)
    r = 0
    for k in range(n):
        w = words[k]
        if (w >> 9) >= ZK[w & 0xFF]:
            out[k] = _zig_slow(w, ex + ZIG_EXTRA_C * r, ZIG_EXTRA_C, bg)
            r += 1
    if ex != ex_buf:
        free(ex)
    return 0


def ziggurat_fill(float[::1] out, rng, work=None):
    """Fill ``out`` with standard normals from the float32 ziggurat (twin: ``ziggurat_numpy``).

    The stream: ``ceil(n / 2)`` 64-bit words read as ``n`` 32-bit words in memory
    order (element ``k`` takes word ``k``); then, if ``R`` of them miss their fast
    test, ``ZIG_EXTRA * R`` words, ``ZIG_EXTRA`` for each of those in element
    order; then any further words their slow paths need, in element order.
    ``work``: a uint64 buffer of at least ``zig_work_size(n)`` words, reused
    across calls (a fresh one is allocated otherwise).
    """
    cdef Py_ssize_t n = out.shape[0]
    work = _zig_work(work, n)
    cdef uint64_t[::1] buf = work
    cdef Py_ssize_t n64 = _zig_words(n)
    cdef bitgen_t* bg = bitgen_of(rng)
    if n:
        with rng.bit_generator.lock, nogil:
            _ziggurat(&out[0], n, &buf[0], &buf[n64], buf.shape[0] - n64, bg)
    return np.asarray(out)


def zig_work_size(Py_ssize_t n):
    """Words of a ziggurat work buffer for ``n`` normals: the main block and an
    extra block for up to one slow word in 16 (about 1 in 80 miss; a call with
    more allocates its extra block)."""
    return _zig_words(n) + ZIG_EXTRA_C * (n // 16 + 8)


def _zig_work(work, Py_ssize_t n):
    if (work is None or work.dtype != np.uint64 or work.ndim != 1
            or not work.flags.c_contiguous or work.size < zig_work_size(n)):
        return np.empty(zig_work_size(n), dtype=np.uint64)
    return work


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


# --------------------------------------------------------------------------
# Bernoulli draws (Eq. 4)
# --------------------------------------------------------------------------

def bern_work_size(Py_ssize_t n, bint single):
    """64-bit words of a ``bernoulli_into`` work buffer for ``n`` draws."""
    return (n + 3) // 4 if single else n


def bernoulli_into(const floating[:, ::1] p, floating[:, ::1] out, double[::1] colsum, rng,
                   bint from_tanh=False, work=None):
    """``out = (u < p)``, one uniform ``u`` per entry in C order (Eq. 4).

    float64 models use ``u = rng.random(p.shape)``. float32 models read
    ``ceil(n / 4)`` 64-bit words as ``n`` 16-bit integers ``k`` (memory order) and
    compare ``k + 1 <= 2^16 p``: one when true, zero when ``k >= 2^16 p``; the
    about one entry in 65,536 with ``k < 2^16 p < k + 1`` (a tie) takes one more
    word ``c`` after the block, in C order, and is one when
    ``(c >> 11) 2^-53 < 2^16 p - k``. That is ``u < p`` for a uniform ``u`` of
    69 bits, exactly, with a quarter of a generator call per entry (the 24-bit
    uniforms this replaces took half a call).

    With ``from_tanh`` the first argument holds ``t = tanh(a / 2)`` and
    ``2^16 p = 2^15 t + 2^15`` (``p = sigmoid(a)``, as ``_core.numerics.sigmoid``
    forms it) is formed on the fly. When ``colsum`` has an entry per column,
    ``colsum += out.sum(axis=0)`` as well (exact: sums of zeros and ones in
    float64). ``out`` may not alias ``p``. ``work``, a uint64 array of at least
    ``bern_work_size(p.size, float32)`` words, holds the block (a chain passes
    one buffer to all its steps: on a 512 x 4096 batch a fresh one was megabytes
    of page faults per step).
    """
    cdef Py_ssize_t n = p.shape[0], d = p.shape[1], i, j, nd = n * d
    cdef int ties
    cdef const floating* prow
    cdef floating* orow
    cdef const uint16_t* krow
    cdef bint acc = colsum.shape[0] == d
    cdef bint single = floating is float
    cdef Py_ssize_t need = bern_work_size(nd, single)
    if (work is None or work.dtype != np.uint64 or work.ndim != 1
            or not work.flags.c_contiguous or work.size < need):
        work = np.empty(max(need, 1), dtype=np.uint64)
    cdef uint64_t[::1] raw = work
    cdef const uint16_t* k16 = <const uint16_t*> &raw[0]
    cdef double* u64f = <double*> &raw[0]
    cdef float ps, kf
    cdef floating x
    cdef uint64_t c
    cdef bitgen_t* bg = bitgen_of(rng)
    if nd == 0:
        return out
    with rng.bit_generator.lock, nogil:
        # All the random words first, then loops without calls that the
        # compiler vectorises: compared one by one, ``u < p`` became a branch,
        # mispredicted half the time as p is near 1/2 (3x slower).
        if floating is float:
            for i in range(need):
                raw[i] = bg.next_uint64(bg.state)
        else:
            random_standard_uniform_fill(bg, nd, u64f)
        for i in range(n):
            if floating is float:
                # plain pointers and a 32-bit count keep this loop vectorised
                prow = &p[i, 0]
                orow = &out[i, 0]
                krow = k16 + i * d
                ties = 0
                if from_tanh:
                    for j in range(d):
                        ps = prow[j] * <float> 32768.0 + <float> 32768.0
                        kf = <float> krow[j]
                        orow[j] = <float> (kf + <float> 1.0 <= ps)
                        ties += (kf < ps) & (kf + <float> 1.0 > ps)
                else:
                    for j in range(d):
                        ps = prow[j] * <float> 65536.0
                        kf = <float> krow[j]
                        orow[j] = <float> (kf + <float> 1.0 <= ps)
                        ties += (kf < ps) & (kf + <float> 1.0 > ps)
                if ties:
                    for j in range(d):
                        if from_tanh:
                            ps = prow[j] * <float> 32768.0 + <float> 32768.0
                        else:
                            ps = prow[j] * <float> 65536.0
                        kf = <float> krow[j]
                        if kf < ps and kf + <float> 1.0 > ps:
                            c = bg.next_uint64(bg.state)
                            orow[j] = <float> (<double> (c >> 11) * U53
                                               < <double> ps - <double> kf)
            else:
                if from_tanh:
                    for j in range(d):
                        x = <floating> (u64f[i * d + j] < <floating> 0.5 + <floating> 0.5 * p[i, j])
                        out[i, j] = x
                else:
                    for j in range(d):
                        x = <floating> (u64f[i * d + j] < p[i, j])
                        out[i, j] = x
            if acc:
                for j in range(d):
                    colsum[j] += out[i, j]
    return out


# --------------------------------------------------------------------------
# Gaussian draws (Eqs. 3 and 11)
# --------------------------------------------------------------------------

def gaussian_into(const floating[:, ::1] loc, const floating[::1] mu,
                  const floating[::1] scale, const floating[::1] var, floating[:, ::1] v,
                  floating[:, ::1] vs, double[::1] csum, double[::1] sqsum, rng, work=None):
    """``v = (mu + loc) + scale * xi`` and ``vs = v / var`` in one pass.

    With standard normals ``xi`` in C order: ``rng.standard_normal(v.shape)`` for
    float64, the float32 ziggurat of ``ziggurat_fill`` for float32 (drawn into
    ``vs`` first; ``work`` is its buffer, see ``zig_work_size``). Gibbs's draw of
    ``v | h`` (Eq. 3, ``loc = W^T h``, ``scale = sigma``) and the closed-form
    K-step move (Eq. 11, ``mu`` zero, ``scale = sqrt(c) sigma``). When ``csum``
    has an entry per column, the visible statistics of Eqs. (15)-(16) are
    accumulated too: ``csum += sum_i (v - mu)``, ``sqsum += sum_i (v - mu)^2``
    (float64). ``v`` may alias ``loc``; ``vs`` may alias neither.
    """
    cdef Py_ssize_t n = v.shape[0], d = v.shape[1], i, j
    cdef bint acc = csum.shape[0] == d
    dtype = np.float32 if floating is float else np.float64
    row = np.empty(d if floating is double else 0, dtype=np.float64)
    cdef double[::1] xi = row
    cdef uint64_t[::1] buf
    cdef Py_ssize_t n64 = _zig_words(n * d)
    cdef floating x, c
    cdef bitgen_t* bg = bitgen_of(rng)
    if n * d == 0:
        return v
    if floating is float:
        work = _zig_work(work, n * d)
        buf = work
    with rng.bit_generator.lock, nogil:
        if floating is float:
            _ziggurat(&vs[0, 0], n * d, &buf[0], &buf[n64], buf.shape[0] - n64, bg)
        for i in range(n):
            if floating is double:
                # the row's normals first, so that the arithmetic loop vectorises
                random_standard_normal_fill(bg, d, &xi[0])
                for j in range(d):
                    x = (mu[j] + loc[i, j]) + scale[j] * xi[j]
                    v[i, j] = x
                    vs[i, j] = x / var[j]
            else:
                for j in range(d):
                    x = (mu[j] + loc[i, j]) + scale[j] * vs[i, j]
                    v[i, j] = x
                    vs[i, j] = x / var[j]
            if acc:
                for j in range(d):
                    c = v[i, j] - mu[j]
                    csum[j] += c
                    sqsum[j] += <double> c * c
    return v
