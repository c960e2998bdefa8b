"""The float32 random numbers of the GRBM kernels (issue 15): exact laws, twins.

The float32 Gibbs chain draws its normals from a ziggurat on raw 64-bit words
(``_samplers_fast.ziggurat_fill``) and its Bernoulli units from 16-bit integers
with exact tie-breaking (``_samplers_fast.bernoulli_into``). These tests check
the laws with Monte-Carlo standard errors and the NumPy twins word for word,
including the rare slow paths.
"""

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from scipy.special import ndtr

from skdgm.grbm import _samplers as S
from skdgm.grbm import _samplers_fast as F


class _CountingRng:
    """A generator stand-in that counts the words drawn through ``raw_words``."""

    def __init__(self, seed):
        self.gen = np.random.default_rng(seed)
        self.n = 0

    def integers(self, *args, size=None, **kwargs):
        self.n += int(np.prod(size))
        return self.gen.integers(*args, size=size, **kwargs)


def test_ziggurat_tables_close_the_top_layer():
    r, X, Fv, W, K = F.ziggurat_tables()
    assert abs(r - 3.6541528853610088) < 1e-12           # Marsaglia & Tsang's edge
    v = X[1:256] * (Fv[2:257] - Fv[1:256])               # every layer's area
    # the base layer: the strip [0, r) x [0, f(r)) and the tail beyond r
    base = r * Fv[1] + np.sqrt(2 * np.pi) * (1 - ndtr(r))
    assert np.allclose(v, v[0], rtol=1e-9, atol=0)
    assert np.isclose(X[0] * Fv[1], v[0], rtol=1e-12)
    assert np.all(np.diff(X[:257]) < 0) and X[256] == 0
    assert K[255] == 0 and np.all(K[:255] > 0)
    assert np.isclose(base, v[0], rtol=1e-9)


def test_ziggurat_normals_follow_the_normal_law():
    """Frequencies of 4M draws in bins (tail beyond ``r`` included) and the first
    four moments, each within 5 Monte-Carlo standard errors."""
    n = 4_000_000
    x = F.ziggurat_fill(np.empty(n, np.float32), np.random.default_rng(0)).astype(np.float64)
    r = F.ziggurat_tables()[0]
    edges = np.array([-np.inf, -4.5, -r, -3, -2, -1, -0.3, 0, 0.3, 1, 2, 3, r, 4.5, np.inf])
    freq = np.histogram(x, edges)[0] / n
    prob = np.diff(ndtr(edges))
    se = np.sqrt(prob * (1 - prob) / n)
    assert np.all(np.abs(freq - prob) <= 5 * se + 1e-12), (freq, prob, se)
    for k, (m, var) in enumerate([(0, 1), (1, 2), (0, 15), (3, 96)], start=1):
        est = np.mean(x ** k)
        assert abs(est - m) <= 5 * np.sqrt(var / n), (k, est, m)


def test_ziggurat_kernel_matches_twin_with_slow_paths():
    """Kernel and twin give the same normals and leave the stream in one state,
    on a draw whose slow words cover the tail, wedges and the overflow past the
    extra block (counted here, so the test cannot pass vacuously)."""
    n = 300_001
    kernel = F.ziggurat_fill(np.empty(n, np.float32), np.random.default_rng(5),
                             np.empty(F.zig_work_size(n), np.uint64))
    gen_k = np.random.default_rng(5)
    F.ziggurat_fill(np.empty(n, np.float32), gen_k)      # allocated buffer
    gen_t = np.random.default_rng(5)
    twin = S.ziggurat_numpy((n,), gen_t)
    assert_array_equal(kernel, twin)
    assert gen_k.random() == gen_t.random()
    gen = np.random.default_rng(5)
    words = S.raw_words((n + 1) // 2, gen).view(np.uint32)[:n]
    _, _, _, _, K = F.ziggurat_tables()
    slow = np.flatnonzero((words >> 9) >= K[words & 0xFF])
    extra = S.raw_words(F.ZIG_EXTRA * slow.size, gen).reshape(slow.size, F.ZIG_EXTRA)
    tail = np.sum((words[slow] & 0xFF) == 0)
    overflow = 0
    for k, ex in zip(slow, extra):
        stub = _CountingRng(1)
        S.ziggurat_slow(int(words[k]), ex, stub)
        overflow += stub.n > 0
    assert tail > 10 and overflow > 0, (tail, overflow)


def test_ziggurat_kernel_allocates_when_many_words_are_slow():
    """A work buffer too small for the extra block: same numbers, stream intact."""
    n = 64
    small = np.empty((n + 1) // 2, np.uint64)              # main block only
    g1, g2 = np.random.default_rng(2), np.random.default_rng(2)
    a = np.concatenate([F.ziggurat_fill(np.empty(n, np.float32), g1, small).copy()
                        for _ in range(200)])
    b = np.concatenate([S.ziggurat_numpy((n,), g2) for _ in range(200)])
    assert_array_equal(a, b)
    assert g1.random() == g2.random()


@pytest.mark.parametrize("from_tanh", [False, True])
def test_float32_bernoulli_ties_are_exact(from_tanh):
    """Probabilities below 2^-16 are drawn only through the tie words: their
    frequencies match ``p`` within 5 standard errors, as do probabilities on the
    2^-16 grid (never a tie) and just below one."""
    p = np.array([[0.3 / 65536, 2.5 / 65536, 7 / 65536, 1 - 0.6 / 65536]], dtype=np.float32)
    rows = 1 << 20
    P = np.repeat(p, rows, axis=0)
    arg = 2 * P - 1 if from_tanh else P
    # the law promised: u < q / 2^16 with q as the kernel forms it in float32
    a0 = arg[0]
    q = a0 * np.float32(32768) + np.float32(32768) if from_tanh else a0 * np.float32(65536)
    p64 = q.astype(np.float64) / 65536
    assert np.all(np.abs(p64 - p[0]) < 1e-6)
    h = np.empty_like(P)
    F.bernoulli_into(arg, h, np.empty(0), np.random.default_rng(4), from_tanh)
    freq = h.mean(axis=0, dtype=np.float64)
    se = np.sqrt(p64 * (1 - p64) / rows)
    assert np.all(np.abs(freq - p64) <= 5 * se), (freq, p64, se)
    assert h[:, 0].sum() > 0


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_wrappers_route_to_kernels_and_twins(dtype):
    """``bernoulli`` and ``standard_normal`` (the positive phase and the chains'
    starting noise): kernel and twin agree; float64 keeps numpy's own draws."""
    p = np.random.default_rng(0).uniform(size=(33, 17)).astype(dtype)
    a = S.bernoulli(p, np.random.default_rng(1), kernels="cython")
    b = S.bernoulli(p, np.random.default_rng(1), kernels="numpy")
    assert a.dtype == dtype
    assert_array_equal(a, b)
    x = S.standard_normal((33, 17), dtype, np.random.default_rng(2), kernels="cython")
    y = S.standard_normal((33, 17), dtype, np.random.default_rng(2), kernels="numpy")
    assert x.dtype == dtype and x.shape == (33, 17)
    assert_array_equal(x, y)
    if dtype == np.float64:
        assert_array_equal(a, np.random.default_rng(1).random(p.shape) < p)
        assert_array_equal(x, np.random.default_rng(2).standard_normal((33, 17)))
