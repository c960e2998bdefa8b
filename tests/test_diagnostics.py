import numpy as np
import pytest

from skdgm._core.diagnostics import autocorrelation, effective_sample_size, split_rhat


def ar1(n_chains, n, rho, seed, offsets=None):
    rng = np.random.default_rng(seed)
    eps = rng.standard_normal((n_chains, n)) * np.sqrt(1 - rho**2)
    x = np.empty((n_chains, n))
    x[:, 0] = rng.standard_normal(n_chains)
    for t in range(1, n):
        x[:, t] = rho * x[:, t - 1] + eps[:, t]
    if offsets is not None:
        x += np.asarray(offsets)[:, None]
    return x


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9])
def test_ess_of_ar1(rho):
    # Truth: N (1 - rho) / (1 + rho). With 4 x 20,000 draws the estimator's relative
    # sd is a few percent (about sqrt(2 tau_int / N) times the summed lags); 12 % is
    # several of those.
    x = ar1(4, 20000, rho, seed=1)
    truth = x.size * (1 - rho) / (1 + rho)
    assert effective_sample_size(x) == pytest.approx(truth, rel=0.12)


def test_ess_can_tell_ar1_processes_apart():
    a = effective_sample_size(ar1(4, 5000, 0.5, seed=2))
    b = effective_sample_size(ar1(4, 5000, 0.9, seed=2))
    assert a > 3 * b


def test_autocorrelation_of_ar1():
    x = ar1(1, 50000, 0.7, seed=3)
    acf = autocorrelation(x)[0]
    np.testing.assert_allclose(acf[:4], 0.7 ** np.arange(4), atol=0.02)


def test_rhat_near_one_for_agreeing_chains_and_large_otherwise():
    good = ar1(4, 4000, 0.5, seed=4)
    assert abs(split_rhat(good) - 1) < 0.01
    bad = ar1(4, 4000, 0.5, seed=4, offsets=[0, 0, 3, 3])
    assert split_rhat(bad) > 1.5
    # A trend within each chain is caught by the splitting.
    trend = good + np.linspace(0, 5, 4000)
    assert split_rhat(trend) > 1.2


def test_bad_traces():
    with pytest.raises(ValueError, match="at least 4"):
        split_rhat([[1.0, 2.0]])
    with pytest.raises(ValueError, match="NaN"):
        effective_sample_size([1.0, np.nan, 2.0, 3.0, 4.0])
    assert split_rhat(np.ones((3, 10))) == 1.0
