import numpy as np
from scipy.special import expit

from skdgm._core.numerics import sigmoid, softplus, softplus_sum


def test_softplus_and_sigmoid_match_the_definitions_without_overflow():
    x = np.linspace(-800, 800, 4001)
    np.testing.assert_allclose(softplus(x), np.logaddexp(0.0, x), rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(sigmoid(x), expit(x), rtol=1e-14, atol=1e-15)
    assert np.all(np.isfinite(softplus(x))) and softplus(800.0) == 800.0


def test_float32_stays_float32():
    x = np.linspace(-30, 30, 7, dtype=np.float32)
    assert softplus(x).dtype == np.float32 and sigmoid(x).dtype == np.float32


def test_softplus_sum_is_the_row_sum_of_softplus():
    rng = np.random.default_rng(0)
    x = np.vstack([np.linspace(-800, 800, 401), rng.normal(0, 5, 401), np.zeros(401),
                   np.full(401, -750.0), np.full(401, 700.0)])
    want = np.logaddexp(0.0, x).sum(axis=1)
    got = softplus_sum(x)
    assert got.dtype == np.float64 and got.shape == (5,)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-300)
    # float32 input: float32 elementwise work, float64 sums
    x32 = x[1:3].astype(np.float32)
    np.testing.assert_allclose(softplus_sum(x32), np.logaddexp(0.0, x32.astype(float)).sum(1),
                               rtol=1e-6)
