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


# ------------------------------------------- rank-normalised (Vehtari et al. 2021)
from skdgm._core.diagnostics import ess_bulk, ess_tail, rank_normalize, rhat  # noqa: E402


def test_rank_normalize_is_normal_scores():
    x = np.array([[3.0, 1.0, 2.0, 10.0], [5.0, 4.0, 7.0, 6.0]])
    z = rank_normalize(x)
    assert z.shape == x.shape
    # monotone in x, symmetric about 0, and invariant to a monotone transform
    np.testing.assert_array_equal(np.argsort(z, axis=None), np.argsort(x, axis=None))
    assert abs(z.sum()) < 1e-12
    np.testing.assert_allclose(rank_normalize(np.exp(x)), z)


def test_rhat_detects_location_and_scale_differences():
    good = ar1(4, 4000, 0.5, seed=4)
    assert abs(rhat(good) - 1) < 0.01
    shifted = ar1(4, 4000, 0.5, seed=4, offsets=[0, 0, 3, 3])
    assert rhat(shifted) > 1.5
    # Same location, different scales: the classic split-R-hat misses it, the
    # folded rank-normalised R-hat does not.
    scaled = good * np.array([1.0, 1.0, 4.0, 4.0])[:, None]
    assert split_rhat(scaled) < 1.01
    assert rhat(scaled) > 1.1


def test_rhat_and_ess_bulk_work_for_heavy_tails():
    # iid Cauchy chains agree, but their variance does not exist: the classic
    # diagnostics are at the mercy of a few draws, the rank-based ones are not.
    x = np.random.default_rng(5).standard_cauchy((4, 4000))
    assert abs(rhat(x) - 1) < 0.01
    assert ess_bulk(x) == pytest.approx(x.size, rel=0.15)


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9])
def test_ess_bulk_of_ar1(rho):
    # Ranks are a monotone transform of a Gaussian AR(1): the ESS is nearly the same.
    x = ar1(4, 20000, rho, seed=1)
    truth = x.size * (1 - rho) / (1 + rho)
    assert ess_bulk(x) == pytest.approx(truth, rel=0.12)


def test_ess_tail_of_ar1():
    # Exact truth: for a stationary Gaussian AR(1), the indicator I(x <= q) has
    # lag-k autocovariance Phi2(q, q; rho^k) - p^2 (bivariate normal CDF), so its
    # ESS is N / (1 + 2 sum_k corr_k). The tail ESS is the smaller over q05, q95
    # (equal by symmetry).
    from scipy.stats import multivariate_normal, norm
    rho, p = 0.9, 0.05
    q = norm.ppf(p)
    corr = [(multivariate_normal(cov=[[1, rho**k], [rho**k, 1]]).cdf([q, q]) - p * p)
            / (p * (1 - p)) for k in range(1, 150)]
    x = ar1(4, 20000, rho, seed=6)
    truth = x.size / (1 + 2 * np.sum(corr))
    # Over 30 seeds the ratio estimate/truth had mean 0.976 and sd 0.060: 20 % is
    # over three sd.
    assert ess_tail(x) == pytest.approx(truth, rel=0.2)
    iid = ar1(4, 20000, 0.0, seed=6)
    assert ess_tail(iid) == pytest.approx(iid.size, rel=0.15)
