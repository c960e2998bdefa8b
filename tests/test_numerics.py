import numpy as np
from scipy.special import expit

from skdgm._core.numerics import sigmoid, softplus


def test_softplus_and_sigmoid_match_the_definitions_without_overflow():
    x = np.linspace(-800, 800, 4001)
    np.testing.assert_allclose(softplus(x), np.logaddexp(0.0, x), rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(sigmoid(x), expit(x), rtol=1e-14, atol=1e-15)
    assert np.all(np.isfinite(softplus(x))) and softplus(800.0) == 800.0


def test_float32_stays_float32():
    x = np.linspace(-30, 30, 7, dtype=np.float32)
    assert softplus(x).dtype == np.float32 and sigmoid(x).dtype == np.float32
