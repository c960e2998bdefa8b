"""The Geweke joint-distribution helper itself, on a conjugate normal model.

theta ~ N(0, 1), y_i | theta ~ N(theta, 1) for i < 3: the exact Gibbs kernel draws
theta | y ~ N(sum(y) / 4, 1 / 4). The helper must pass it and fail kernels that are
wrong in the variance, the mean, or the dependence on y.
"""

import numpy as np
import pytest
from _geweke import assert_geweke_fails, assert_geweke_passes, batch_means_se

N_OBS = 3


def prior(rng):
    return rng.normal()


def data(theta, rng):
    return theta + rng.normal(size=N_OBS)


def stats(theta, y):
    return np.array([theta, theta**2, theta * y.sum()])


def exact(theta, y, rng, prec=N_OBS + 1.0, shift=0.0):
    return y.sum() / prec + shift + rng.normal() / np.sqrt(prec)


def test_exact_kernel_passes():
    assert_geweke_passes(prior, data, exact, stats, n_iter=20_000,
                         rng=np.random.default_rng(0))


@pytest.mark.parametrize("broken", [
    lambda t, y, rng: exact(t, y, rng, prec=N_OBS),           # variance too large
    lambda t, y, rng: exact(t, y, rng, shift=0.05),           # biased mean
    lambda t, y, rng: 0.5 * t + 0.5 * exact(t, y, rng),       # not invariant
], ids=["variance", "mean", "mixture"])
def test_broken_kernels_fail(broken):
    assert_geweke_fails(prior, data, broken, stats, n_iter=20_000,
                        rng=np.random.default_rng(0))


def test_batch_means_se_of_ar1():
    """AR(1) with coefficient 0.9: the SE of the mean is sqrt((1+a)/(1-a)) larger."""
    rng = np.random.default_rng(1)
    a, n = 0.9, 200_000
    e = rng.normal(size=n) * np.sqrt(1 - a * a)
    x = np.empty(n)
    x[0] = rng.normal()
    for i in range(1, n):
        x[i] = a * x[i - 1] + e[i]
    se = batch_means_se(x, 50)[0]
    expected = np.sqrt((1 + a) / (1 - a) / n)
    # 50 batches: the SE estimate itself has relative sd ~ 1/sqrt(2*49) = 0.1
    assert abs(se / expected - 1) < 0.35


def test_many_short_chains():
    """n_chains > 1: chains started from the joint, SE from the spread of chain means."""
    assert_geweke_passes(prior, data, exact, stats, n_iter=20_000, n_chains=1_000,
                         rng=np.random.default_rng(0))
    assert_geweke_fails(prior, data, lambda t, y, rng: exact(t, y, rng, prec=N_OBS),
                        stats, n_iter=20_000, n_chains=1_000, rng=np.random.default_rng(0))
