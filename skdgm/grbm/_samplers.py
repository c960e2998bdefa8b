"""Gibbs, Langevin and Gibbs-Langevin samplers for the GRBM, with Metropolis tests.

Liao et al. (2022): Gibbs (Alg. 5), Langevin on the marginal energy (Alg. 1,
Eqs. 6-7, 21-23) and Gibbs-Langevin (Alg. 2, Eqs. 8-12, 24-32).

Two deliberate differences from the paper's code (see the user guide):

* **Temperature 1.** Energies are never divided by the batch size, so every
  chain targets the model itself.
* **Preconditioned steps.** Visible unit ``d`` moves with step ``alpha * sigma_d^2``
  instead of one shared step. The drift then contracts ``v_d`` towards its
  conditional mean by the factor ``1 - alpha`` whatever ``sigma_d`` is, so with
  ``0 < alpha < 2`` no variance, however small, can make an inner loop explode.
  Preconditioning a Langevin proposal by a constant diagonal matrix keeps the
  Metropolis tests exact (the proposal density just uses the matching covariance).

Step sizes follow the cosine schedule of Eq. (22) indexed from ``k = 0`` (the
first step uses the full ``alpha``; the paper's ``k = K`` step would be zero and
wasted).

Each chain update computes ``a = W (v / sigma^2) + b`` once and ``W^T h`` once and
reuses them in the Langevin steps, the Metropolis test and the learning
statistics: a Gibbs-Langevin CD-K update is ``3K + 4`` matrix products (two per
step plus one for the statistics; two for the start of the chains and two for the
positive phase), for either objective.

The Gibbs-Langevin inner loop (K element-wise Langevin steps per unit) has a
Cython twin in ``_samplers_fast.pyx``; ``kernels="numpy"`` selects the NumPy reference
version, which consumes the random stream in the same order. ``inner="closed_form"``
draws the same K-step move from its exact Gaussian law instead (Eq. 11).
"""

import math
from typing import NamedTuple

import numpy as np
from scipy.linalg.blas import get_blas_funcs

from .._core import mcmc
from .._core.ais import ais_log_weights
from .._core.numerics import sigmoid, softplus
from .._core.schedules import Cosine
from ._model import GRBMParams, free_energy, hidden_activation
from ._samplers_fast import bernoulli_into as _bernoulli_into_fast
from ._samplers_fast import ZIG_EXTRA, ziggurat_tables
from ._samplers_fast import ziggurat_fill as _ziggurat_fill_fast
from ._samplers_fast import bern_work_size, zig_work_size
from ._samplers_fast import gaussian_into as _gaussian_into_fast
from ._samplers_fast import langevin_inner as _langevin_inner_fast

__all__ = [
    "ChainResult",
    "SAMPLERS",
    "bernoulli",
    "cosine_steps",
    "gibbs_langevin_proposal",
    "langevin_inner",
    "run_annealed_chain",
    "run_chain",
    "tempered_log_density",
    "tempered_params",
]

SAMPLERS = ("gibbs", "langevin", "gibbs_langevin")

#: Default of every ``kernels=None`` argument, ``"cython"`` or ``"numpy"`` (benchmarks
#: flip it to time the NumPy twins).
KERNELS = "cython"


def cosine_steps(step_size, n):
    """``alpha_k = alpha_0 (1 + cos(pi k / n)) / 2`` for ``k = 0..n-1`` (Eq. 22)."""
    return np.asarray(Cosine(float(step_size), n)(np.arange(n, dtype=np.float64)))


# --------------------------------------------------------------------------
# NumPy reference twins of the Cython kernels
# --------------------------------------------------------------------------

def bernoulli_numpy(p, rng):
    """``h = (u < p)`` with ``u = rng.random(p.shape, dtype=p.dtype)``, as ``p.dtype``."""
    return mcmc.bernoulli(p, rng, uniform_dtype=p.dtype)


def langevin_inner_numpy(v, m, sigma, alphas, rng):
    """``K`` preconditioned Langevin steps on ``E(v, h)`` with ``h`` fixed (Alg. 2, l. 2-6).

    ``v <- v - alpha_k (v - m) + sqrt(2 alpha_k) sigma xi``, ``m = mu + W^T h``:
    Eq. (29) with the per-unit step ``alpha_k sigma^2``. The ``K`` normals of
    element ``(i, d)`` are consecutive in the stream (shape ``(n, N, K)``).
    """
    dt = v.dtype.type
    noise = rng.standard_normal(v.shape + (len(alphas),), dtype=v.dtype)
    v = v.copy()
    for k, a in enumerate(alphas):
        scale = dt(np.sqrt(2.0 * a)) * sigma
        v = v - dt(a) * (v - m) + scale * noise[:, :, k]
    return v


def raw_words(n, rng):
    """``n`` 64-bit words of the bit generator, as the kernels' ``next_uint64`` draws them."""
    return rng.integers(0, 2**64 - 1, size=n, dtype=np.uint64, endpoint=True)


_ZR, _ZX, _ZF, _ZW, _ZK = ziggurat_tables()
_U53 = 2.0 ** -53


def ziggurat_slow(w, extra, rng):
    """Twin of the kernel's slow path: the normal of the ziggurat word ``w``.

    Each attempt takes two 64-bit words, first from ``extra`` (``ZIG_EXTRA`` of
    them), then from ``rng``: Marsaglia's exponential tail proposal beyond ``r``
    in layer 0, otherwise the wedge test ``y < exp(-x^2 / 2)``, whose failure
    makes the low half of the second word a fresh ziggurat word. Double-precision
    arithmetic through ``math`` (the C library's ``exp`` and ``log``, as in the
    kernel) and float32 where the kernel uses float.
    """
    extra = [int(e) for e in extra]
    tail = False
    i = ra = 0
    sgn = np.float32(1.0)
    while True:
        if not tail:
            i, ra = w & 0xFF, w >> 9
            sgn = np.float32(1.0 - 2.0 * ((w >> 8) & 1))
            if ra < _ZK[i]:
                return np.float32(np.float32(ra) * _ZW[i]) * sgn
        if len(extra) >= 2:
            a, b = extra.pop(0), extra.pop(0)
        else:
            a, b = (int(x) for x in raw_words(2, rng))
        if i == 0:
            tail = True
            xd = -math.log(1.0 - float(a >> 11) * _U53) / _ZR
            e = -math.log(1.0 - float(b >> 11) * _U53)
            if e + e > xd * xd:
                return np.float32(_ZR + xd) * sgn
        else:
            x = np.float32(np.float32(ra) * _ZW[i])
            xd = float(x)
            y = _ZF[i] + (float(a >> 11) * _U53) * (_ZF[i + 1] - _ZF[i])
            if y < math.exp(-0.5 * (xd * xd)):
                return x * sgn
            w = b & 0xFFFFFFFF


def ziggurat_numpy(shape, rng):
    """Twin of ``ziggurat_fill``: float32 standard normals of the given shape.

    ``ceil(n / 2)`` 64-bit words read as ``n`` 32-bit words (memory order), the
    branch-free fast path on all of them, then ``ZIG_EXTRA`` words for each of
    the ``R`` words that missed it and their slow paths in element order.
    """
    n = int(np.prod(shape))
    words = raw_words((n + 1) // 2, rng).view(np.uint32)[:n]
    layer, ra = words & 0xFF, words >> 9
    x = ra.astype(np.float32) * _ZW[layer]
    x *= (np.float32(1.0) - np.float32(2.0) * ((words >> 8) & 1).astype(np.float32))
    slow = np.flatnonzero(ra >= _ZK[layer])
    if slow.size:
        extra = raw_words(ZIG_EXTRA * slow.size, rng).reshape(slow.size, ZIG_EXTRA)
        # The first wedge test of every slow word at once (the kernel's double
        # arithmetic, exp through ``math`` as the C library's); the tail words and
        # the wedge misses then finish one by one, in element order, as the kernel
        # would (the misses restart from the low half of their second word).
        i = layer[slow]
        xd = (ra[slow].astype(np.float32) * _ZW[i]).astype(np.float64)
        u = (extra[:, 0] >> np.uint64(11)).astype(np.float64) * _U53
        y = _ZF[i] + u * (_ZF[i + 1] - _ZF[i])
        bound = np.array([math.exp(-0.5 * (t * t)) for t in xd.tolist()])
        sign = np.where(((words[slow] >> 8) & 1) == 1, -1.0, 1.0)
        done = (i != 0) & (y < bound)
        x[slow[done]] = (xd[done] * sign[done]).astype(np.float32)
        # a wedge miss restarts from the low half of its second word, which
        # usually passes the fast test at once
        w2 = (extra[:, 1] & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        l2, r2 = w2 & 0xFF, w2 >> 9
        fast2 = ~done & (i != 0) & (r2 < _ZK[l2])
        x2 = r2[fast2].astype(np.float32) * _ZW[l2[fast2]]
        x[slow[fast2]] = x2 * np.where(((w2[fast2] >> 8) & 1) == 1, -1, 1).astype(np.float32)
        rest = ~(done | fast2)
        for k, w, ex, tail in zip(slow[rest].tolist(), words[slow[rest]].tolist(),
                                  extra[rest], (i[rest] == 0).tolist()):
            if tail:
                x[k] = ziggurat_slow(w, ex, rng)
            else:
                x[k] = ziggurat_slow(int(ex[1]) & 0xFFFFFFFF, ex[2:], rng)
    return x.reshape(shape)


def bernoulli_into_numpy(p, out, colsum, rng, from_tanh=False, work=None):
    """Twin of ``bernoulli_into``: ``out[...] = u < p``, ``colsum += out.sum(0)``.

    float64: ``u = rng.random(p.shape)`` (with ``from_tanh``, ``p`` holds
    ``tanh(a / 2)`` and the probabilities are ``0.5 + 0.5 * p``, as
    ``_core.numerics.sigmoid`` forms them). float32: 16-bit integers ``k`` from
    ``ceil(n / 4)`` words against ``q = 2^16 p`` (``2^15 t + 2^15`` from
    ``t = tanh(a / 2)``), one more word per tie ``k < q < k + 1`` in C order.
    ``work`` (the kernel's buffer) is accepted and not needed.
    """
    if p.dtype != np.float32:
        if from_tanh:
            p = 0.5 + 0.5 * p
        out[...] = rng.random(p.shape) < p
    else:
        n = p.size
        k = raw_words((n + 3) // 4, rng).view(np.uint16)[:n].reshape(p.shape)
        k = k.astype(np.float32)
        if from_tanh:
            q = p * np.float32(32768.0) + np.float32(32768.0)
        else:
            q = p * np.float32(65536.0)
        k1 = k + np.float32(1.0)
        h = k1 <= q
        ties = np.flatnonzero((k < q) & (k1 > q))
        if ties.size:
            c = raw_words(ties.size, rng)
            h.flat[ties] = ((c >> np.uint64(11)).astype(np.float64) * _U53
                            < q.flat[ties].astype(np.float64) - k.flat[ties])
        out[...] = h
    if colsum.shape[0] == p.shape[1]:
        colsum += out.sum(axis=0, dtype=np.float64)
    return out


def gaussian_into_numpy(loc, mu, scale, var, v, vs, csum, sqsum, rng, work=None):
    """Twin of ``gaussian_into``: ``v = (mu + loc) + scale xi``, ``vs = v / var``, and sums.

    ``xi`` is ``rng.standard_normal`` for float64, ``ziggurat_numpy`` for float32.
    """
    if v.dtype == np.float32:
        xi = ziggurat_numpy(v.shape, rng)
    else:
        xi = rng.standard_normal(v.shape, dtype=v.dtype)
    v[...] = (mu + loc) + scale * xi
    np.divide(v, var, out=vs)
    if csum.shape[0] == v.shape[1]:
        c = (v - mu).astype(np.float64)
        csum += c.sum(axis=0)
        sqsum += (c * c).sum(axis=0)
    return v


def _use_cython(kernels):
    kernels = KERNELS if kernels is None else kernels
    if kernels not in ("cython", "numpy"):
        raise ValueError(f"kernels must be 'cython' or 'numpy', got {kernels!r}")
    return kernels == "cython"


def bernoulli(p, rng, kernels=None):
    """``h ~ Bernoulli(p)`` for a 2-D ``p`` through ``bernoulli_into`` (or its twin).

    float64 draws ``rng.random(p.shape)`` as before; float32 the kernel's 16-bit
    words (a quarter of a generator call per unit instead of one).
    """
    p = np.asanyarray(p)
    if p.ndim != 2 or p.dtype not in (np.float32, np.float64):
        return bernoulli_numpy(p, rng)
    out = np.empty_like(p, order="C")         # p's array type, as NumPy's u < p keeps it
    kernel = _bernoulli_into_fast if _use_cython(kernels) else bernoulli_into_numpy
    kernel(np.ascontiguousarray(p), out.view(np.ndarray), np.empty(0), rng)
    return out


def standard_normal(shape, dtype, rng, kernels=None):
    """Standard normals of ``dtype``: the float32 ziggurat of the kernels for float32
    (``ziggurat_fill`` or its twin), ``rng.standard_normal`` otherwise."""
    if np.dtype(dtype) != np.float32:
        return rng.standard_normal(shape, dtype=dtype)
    if _use_cython(kernels):
        out = np.empty(int(np.prod(shape)), dtype=np.float32)
        return _ziggurat_fill_fast(out, rng).reshape(shape)
    return ziggurat_numpy(shape, rng)


def langevin_inner(v, m, sigma, alphas, rng, kernels=None):
    alphas = np.ascontiguousarray(alphas, dtype=np.float64)
    if _use_cython(kernels):
        return _langevin_inner_fast(np.ascontiguousarray(v), np.ascontiguousarray(m),
                                    np.ascontiguousarray(sigma), alphas, rng)
    return langevin_inner_numpy(v, m, sigma, alphas, rng)


def gibbs_langevin_proposal(alphas):
    """The scalars of the closed-form K-step proposal, Eqs. (11), (30)-(31).

    With the preconditioned steps, ``beta_k = prod_{j>k} (1 - alpha_j)`` is the
    same for every unit and the proposal is
    ``N(beta_0 v + A m, c sigma^2)`` with ``A = sum_k beta_k alpha_k = 1 - beta_0``
    and ``c = sum_k 2 alpha_k beta_k^2``. Returns ``(beta_0, A, c)``.
    """
    alphas = np.asarray(alphas, dtype=np.float64)
    K = len(alphas)
    betas = np.ones(K + 1)
    for k in range(K - 1, -1, -1):      # betas[k] = prod_{j=k+1}^{K} (1 - alpha_j)
        betas[k] = betas[k + 1] * (1.0 - alphas[k])
    # alphas[k] is the paper's alpha_{k+1}; its beta is betas[k + 1].
    A = float(np.sum(betas[1:] * alphas))
    c = float(np.sum(2.0 * alphas * betas[1:] ** 2))
    return float(betas[0]), A, c


# --------------------------------------------------------------------------
# The chain driver
# --------------------------------------------------------------------------

def _sigmoid_into(a, out):
    """``out = sigmoid(a)`` as ``_core.numerics.sigmoid`` computes it, without temporaries."""
    np.multiply(a, 0.5, out=out)
    np.tanh(out, out=out)
    np.multiply(out, 0.5, out=out)
    np.add(out, 0.5, out=out)
    return out


#: From this many weights on, the statistics' GEMM accumulates in place (BLAS
#: ``beta = 1``): a separate addition pass over ``S`` cost ~2 % of a 784 x 4096
#: update. Below it NumPy's product and an addition were the faster pair.
_INPLACE_GEMM_SIZE = 1 << 18


class _StateSums:
    """Sums over chain states of the statistics of Eqs. (14)-(17), kept in place.

    ``S = sum h^T (v / sigma^2)`` takes one GEMM per state, the vector sums are
    kept in float64; :meth:`into` hands them to a :class:`StatsAccumulator`
    once per chain run.
    """

    def __init__(self, M, N, dtype):
        self.S = np.zeros((M, N), dtype=dtype)
        self.hsum = np.zeros(M)
        self.csum = np.zeros(N)
        self.sqsum = np.zeros(N)
        self.n = 0
        self._gemm = self._tmp = None
        if M * N >= _INPLACE_GEMM_SIZE:
            self._gemm = get_blas_funcs("gemm", dtype=dtype)
        else:
            self._tmp = np.empty((M, N), dtype=dtype)

    def add_product(self, h, vs):
        if self._gemm is not None:
            # S is C-ordered, so S.T is a Fortran array: S.T += vs^T h in place.
            out = self._gemm(1.0, vs.T, h.T, beta=1.0, c=self.S.T, trans_b=True,
                             overwrite_c=True)
            if not np.shares_memory(out, self.S):    # a copy was made after all
                self.S[...] = out.T
        else:
            np.matmul(h.T, vs, out=self._tmp)       # Eq. (14)
            np.add(self.S, self._tmp, out=self.S)
        self.n += h.shape[0]

    def into(self, stats, var):
        dt = self.S.dtype
        var64 = var.astype(np.float64)
        stats.W += self.S
        stats.b += self.hsum.astype(dt)
        stats.mu += (self.csum / var64).astype(dt)
        stats.log_var += (0.5 * self.sqsum / var64).astype(dt)
        stats.n += self.n
        return stats


def _run_gibbs(params, v0, rng, n_steps, stats, objective, burn_in, kernels):
    """Block Gibbs (Alg. 5) on preallocated buffers: three products per step.

    One step draws ``h ~ p(h | v)`` (Eq. 4), ``v ~ p(v | h)`` (Eq. 3) and adds
    ``(v, h)`` (joint) or ``(v, p(h | v))`` (marginal) to the statistics. The
    draws run in the Cython kernels ``bernoulli_into`` / ``gaussian_into``, or in
    their twins with ``kernels="numpy"`` (identical states from the same stream).
    """
    # the kernels take one float type for every array: the states' and the model's
    dt = np.result_type(v0.dtype, params.W.dtype)
    W, b, mu = (np.ascontiguousarray(x, dtype=dt) for x in (params.W, params.b, params.mu))
    var = np.exp(np.asarray(params.log_var, dtype=dt))
    sigma = np.sqrt(var)
    n, N = v0.shape
    M = W.shape[0]
    use_fast = _use_cython(kernels)
    bern = _bernoulli_into_fast if use_fast else bernoulli_into_numpy
    gauss = _gaussian_into_fast if use_fast else gaussian_into_numpy
    # sigmoid(a) = 1/2 + tanh(a / 2) / 2 with a / 2 = (v / sigma^2) (W / 2)^T + b / 2:
    # halving W and b is exact, so forming a / 2 costs no pass of its own.
    # (a C-ordered W^T also makes the product a plain NN GEMM, ~15 % faster here)
    W2T = np.ascontiguousarray((W * dt.type(0.5)).T)
    b2 = b * dt.type(0.5)
    joint = objective == "joint"
    sums = _StateSums(M, N, dt) if stats is not None else None
    v = np.array(v0, dtype=dt, order="C")
    vs = np.divide(v, var)
    h = np.empty((n, M), dtype=dt)
    p = np.empty((n, M), dtype=dt) if not joint else None
    t2 = np.empty((n, M), dtype=dt)              # tanh(a / 2)
    wh = np.empty((n, N), dtype=dt)
    # the kernels' random words, one buffer each for the whole chain
    single = dt == np.float32
    work = np.empty(bern_work_size(n * M, single), dtype=np.uint64)
    gwork = np.empty(zig_work_size(n * N), dtype=np.uint64) if single else None
    np.matmul(vs, W2T, out=t2)
    np.add(t2, b2, out=t2)
    np.tanh(t2, out=t2)
    empty = np.empty(0)
    for t in range(1, n_steps + 1):
        keep = sums is not None and t > burn_in
        bern(t2, h, sums.hsum if keep and joint else empty, rng, True, work)   # Eq. (4)
        np.matmul(h, W, out=wh)
        gauss(wh, mu, sigma, var, v, vs, sums.csum if keep else empty,
              sums.sqsum if keep else empty, rng, gwork)                   # Eq. (3)
        np.matmul(vs, W2T, out=t2)
        np.add(t2, b2, out=t2)
        np.tanh(t2, out=t2)
        if keep:
            if joint:
                sums.add_product(h, vs)
            else:
                np.multiply(t2, 0.5, out=p)
                np.add(p, 0.5, out=p)
                sums.hsum += p.sum(axis=0, dtype=np.float64)
                sums.add_product(p, vs)
    if n_steps == 0:
        bern(t2, h, empty, rng, True, work)
    if sums is not None:
        sums.into(stats, var)
    return ChainResult(v, h, 0, 0)


class ChainResult(NamedTuple):
    """Final state of a batch of chains and the Metropolis counts."""

    v: np.ndarray
    h: np.ndarray
    n_accepted: int
    n_proposed: int


def _gaussian_log_ratio(F_new, F, fwd_residual, bwd_residual, var, scale):
    """``log r`` of a move between marginal log densities ``F -> F_new`` under a
    Gaussian proposal with covariance ``(scale / 2) diag(var)``, given the forward and
    backward residuals ``x' - mean(x)`` and ``x - mean(x')`` (sums in float64).
    """
    fwd = np.sum(fwd_residual ** 2 / var, axis=1, dtype=np.float64)
    bwd = np.sum(bwd_residual ** 2 / var, axis=1, dtype=np.float64)
    return F_new - F - (bwd - fwd) / scale


def _metropolis_step(log_r, rng, new, old):
    """Accept chain by chain; returns the acceptances and the kept state of every array.

    ``new`` and ``old`` are matching tuples of per-chain arrays (leading axis = chain).
    """
    acc = mcmc.metropolis_accept(log_r, rng)
    return acc, tuple(np.where(acc.reshape(acc.shape + (1,) * (x.ndim - 1)), x_new, x)
                      for x_new, x in zip(new, old))


def run_chain(params, v0, rng, *, sampler="gibbs_langevin", n_steps=100, step_size=0.2,
              langevin_steps=10, metropolis_adjust=False, adjust_after=0, stats=None,
              objective="joint", burn_in=0, kernels=None, inner="steps"):
    """Run ``n`` chains (rows of ``v0``) for ``n_steps`` steps of one sampler.

    Parameters
    ----------
    params : GRBMParams
    v0 : ndarray of shape (n, N)
        Starting visible states (noise for modified CD, Alg. 3-4 line 5-6).
    rng : numpy.random.Generator
    sampler : {"gibbs", "langevin", "gibbs_langevin"}
        Alg. 5, Alg. 1 or Alg. 2.
    n_steps : int
        Outer steps ``T`` (the CD steps ``K`` of Alg. 3-4 during training).
    step_size : float in (0, 2)
        ``alpha_0``: the drift coefficient of the preconditioned Langevin steps.
        Cosine-annealed over the ``n_steps`` steps for ``"langevin"`` (Alg. 1)
        and over the ``langevin_steps`` inner steps for ``"gibbs_langevin"``.
    metropolis_adjust : bool
        MALA test (Eq. 7/23) for Langevin, the closed-form K-step test
        (Eq. 12/32) for Gibbs-Langevin. Gibbs needs none (always accepted).
    adjust_after : int
        The paper's adjust step ``eta``: no test during the first ``eta`` steps.
    stats : StatsAccumulator, optional
        Receives the states ``t = burn_in + 1, ..., n_steps`` (negative phase).
    objective : {"joint", "marginal"}
        Joint statistics use the sampled ``h`` (Eqs. 14-17); marginal ones use
        ``p(h | v)`` (Eqs. 33-36).
    inner : {"steps", "closed_form"}
        How Gibbs-Langevin moves ``v`` given ``h``: simulate the ``langevin_steps``
        steps (the paper's Alg. 2), or draw the K-step move in one go from its
        exact law ``N(beta_0 v + A m, c sigma^2)`` (Eq. 11): the same Markov
        kernel with one normal per unit instead of K.
    kernels : {"cython", "numpy"}, optional
        The Cython kernels or their NumPy twins (same stream); default
        ``KERNELS``.

    Returns
    -------
    ChainResult
    """
    if sampler == "gibbs":
        return _run_gibbs(params, v0, rng, n_steps, stats, objective, burn_in, kernels)
    # the Gaussian kernel takes one float type for every array
    common = np.result_type(v0.dtype, params.W.dtype)
    if params.W.dtype != common:
        params = params.astype(common)
    v0 = np.asarray(v0, dtype=common)
    W, mu = params.W, params.mu
    var = params.var
    sigma = np.sqrt(var)
    dt = v0.dtype.type
    n = v0.shape[0]
    v = np.ascontiguousarray(v0)
    a = hidden_activation(v, params, var)
    p = sigmoid(a)
    adjust = bool(metropolis_adjust) and sampler != "gibbs"
    n_acc = n_prop = 0

    if sampler == "langevin":
        alphas = cosine_steps(step_size, n_steps)                 # Alg. 1 line 3
        ws = p @ W
        g = (v - mu) - ws                                         # sigma^2 dE~/dv, Eq. (21)
        F = -free_energy(v, params, a)
        # the Langevin move draws its normals inside the Gaussian kernel
        gauss = _gaussian_into_fast if _use_cython(kernels) else gaussian_into_numpy
        zero = np.zeros_like(mu)
        scratch = np.empty_like(v)
        empty = np.empty(0)
        for t in range(1, n_steps + 1):
            al = alphas[t - 1]
            v_new = np.empty_like(v)                              # Alg. 1 line 4, Eq. (6)
            gauss(v - dt(al) * g, zero, dt(np.sqrt(2.0 * al)) * sigma, var, v_new, scratch,
                  empty, empty, rng)
            a_new = hidden_activation(v_new, params, var)
            p_new = sigmoid(a_new)
            ws_new = p_new @ W
            g_new = (v_new - mu) - ws_new
            F_new = -free_energy(v_new, params, a_new)
            if adjust and t > adjust_after:
                # MALA with covariance 2 alpha sigma^2 (Eq. 7/23), in float64
                log_r = _gaussian_log_ratio(F_new, F, v_new - v + dt(al) * g,
                                            v - v_new + dt(al) * g_new, var, 4.0 * al)
                acc, (v, a, p, ws, g, F) = _metropolis_step(
                    log_r, rng, (v_new, a_new, p_new, ws_new, g_new, F_new), (v, a, p, ws, g, F))
                n_acc += int(acc.sum())
                n_prop += n
            else:
                v, a, p, ws, g, F = v_new, a_new, p_new, ws_new, g_new, F_new
            if stats is not None and t > burn_in:
                if objective == "joint":
                    h = bernoulli(p, rng, kernels)
                    stats.add(v, h)
                else:
                    stats.add(v, p)
        return ChainResult(v, bernoulli(p, rng, kernels), n_acc, n_prop)

    if sampler == "gibbs_langevin":
        alphas = cosine_steps(step_size, langevin_steps)          # Alg. 2 line 4
        beta0, A, c = gibbs_langevin_proposal(alphas)
        # the closed-form move draws its normals inside the Gaussian kernel
        gauss = _gaussian_into_fast if _use_cython(kernels) else gaussian_into_numpy
        zero = np.zeros_like(mu)
        c_scale = dt(np.sqrt(c)) * sigma
        scratch = np.empty_like(v)
        empty = np.empty(0)
        h = bernoulli(p, rng, kernels)                               # h_0 ~ p(h | v_0), Alg. 3 l. 6
        wh = h @ W
        F = -free_energy(v, params, a) if adjust else None
        for t in range(1, n_steps + 1):
            m = mu + wh
            if inner == "closed_form":                            # Eq. (11)
                v_new = np.empty_like(v)
                gauss(dt(beta0) * v + dt(A) * m, zero, c_scale, var, v_new, scratch,
                      empty, empty, rng)
            else:
                v_new = langevin_inner(v, m, sigma, alphas, rng, kernels)   # Alg. 2 line 9
            a_new = hidden_activation(v_new, params, var)
            p_new = sigmoid(a_new)
            h_new = bernoulli(p_new, rng, kernels)                   # Alg. 2 line 10
            wh_new = h_new @ W
            if adjust and t > adjust_after:
                # Eq. (12)/(32): -E(v,h) - log q(h|v) = -E~(v), so the h terms
                # collapse to the free energies; the K-step proposal is
                # N(beta0 v + A m, c sigma^2) (Eq. 11).
                F_new = -free_energy(v_new, params, a_new)
                m_new = mu + wh_new
                log_r = _gaussian_log_ratio(F_new, F, v_new - dt(beta0) * v - dt(A) * m,
                                            v - dt(beta0) * v_new - dt(A) * m_new, var,
                                            2.0 * c)
                acc, (v, a, p, h, wh, F) = _metropolis_step(
                    log_r, rng, (v_new, a_new, p_new, h_new, wh_new, F_new), (v, a, p, h, wh, F))
                n_acc += int(acc.sum())
                n_prop += n
            else:
                v, a, p, h, wh = v_new, a_new, p_new, h_new, wh_new
                if adjust:
                    F = -free_energy(v, params, a)
            if stats is not None and t > burn_in:
                if objective == "joint":
                    stats.add(v, h)
                else:
                    stats.add(v, p)
        return ChainResult(v, h, n_acc, n_prop)

    raise ValueError(f"unknown sampler {sampler!r}; choose one of {SAMPLERS}")


# --------------------------------------------------------------------------
# Annealed negative phase: from the N(0, I) noise of modified CD to the model
# --------------------------------------------------------------------------
# The path tempers the joint energy, E_beta(v, h) = beta E(v, h) + (1 - beta) ||v||^2 / 2,
# so that beta = 0 is exactly the noise that starts modified-CD chains (times a
# uniform h) and beta = 1 is the model. Completing the square shows that every
# intermediate distribution is itself a GRBM, so each sampler moves along the
# path unchanged, Metropolis tests included.

def tempered_params(params, beta):
    """The GRBM whose joint energy is ``beta E(v, h) + (1 - beta) ||v||^2 / 2``.

    Its variances are ``1 / (beta / sigma^2 + 1 - beta)``, its mean
    ``var_beta beta mu / sigma^2``, its weights ``beta W var_beta / sigma^2`` and
    its hidden biases ``beta b``; at ``beta = 1`` it is ``params`` itself.
    """
    beta = float(beta)
    dt = params.W.dtype
    var = params.var.astype(np.float64)
    var_b = 1.0 / (beta / var + (1.0 - beta))
    ratio = beta * var_b / var
    return GRBMParams(
        (params.W * ratio.astype(dt)).astype(dt, copy=False),
        (beta * params.b).astype(dt, copy=False),
        (ratio * params.mu).astype(dt),
        np.log(var_b).astype(dt),
    )


def tempered_log_density(v, beta, params):
    """``log f_beta(v)``: the marginal of the tempered joint, up to one constant for all beta.

    ``-beta ||(v - mu) / sigma||^2 / 2 - (1 - beta) ||v||^2 / 2 + sum_j softplus(beta a_j(v))``
    with ``a(v) = W (v / sigma^2) + b``; at ``beta = 1`` it is ``-E~(v)`` (Eq. 5).
    """
    var = params.var
    quad = 0.5 * np.sum((v - params.mu) ** 2 / var, axis=1, dtype=np.float64)
    sq = 0.5 * np.sum(v * v, axis=1, dtype=np.float64)
    a = hidden_activation(v, params, var)
    sp = np.sum(softplus(beta * a), axis=1, dtype=np.float64)
    return -beta * quad - (1.0 - beta) * sq + sp


class AnnealedResult(NamedTuple):
    """Final states of annealed chains with their AIS log weights."""

    v: np.ndarray
    log_weights: np.ndarray
    n_accepted: int
    n_proposed: int


class _TemperedStep:
    """One sampler step at inverse temperature ``beta`` (the AIS transition)."""

    def __init__(self, params, kwargs):
        self.params = params
        self.kwargs = kwargs
        self.n_accepted = 0
        self.n_proposed = 0

    def __call__(self, v, beta, rng):
        res = run_chain(tempered_params(self.params, beta), v, rng, n_steps=1,
                        adjust_after=0, **self.kwargs)
        self.n_accepted += res.n_accepted
        self.n_proposed += res.n_proposed
        return res.v


def run_annealed_chain(params, v0, rng, *, betas, **sampler_kwargs):
    """Anneal chains from the noise ``v0 ~ N(0, I)`` to the model along ``betas``.

    One step of the chosen sampler (``sampler_kwargs`` as in :func:`run_chain`,
    every step tested when ``metropolis_adjust``) at each inverse temperature,
    with the AIS weights of the shared engine
    (:func:`skdgm._core.ais.ais_log_weights`). ``betas`` runs from 0 to 1; the
    chains make ``len(betas) - 1`` steps, the last at the model itself.

    Returns
    -------
    AnnealedResult
        ``v`` and ``log_weights``: ``sum_i w_i f(v_i) / sum_i w_i`` estimates
        ``E[f(v)]`` under the model whichever modes the chains ended in.
    """
    step = _TemperedStep(params, sampler_kwargs)
    log_w, v = ais_log_weights(
        v0.shape[0], rng, log_density=lambda x, beta: tempered_log_density(x, beta, params),
        transition=step, sample_base=None, betas=betas, return_state=True, state=v0)
    return AnnealedResult(v, log_w, step.n_accepted, step.n_proposed)
