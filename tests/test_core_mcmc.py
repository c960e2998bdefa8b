"""Tests of the shared sampler building blocks (``skdgm._core.mcmc``)."""

import numpy as np
import pytest
from scipy.special import logsumexp

from skdgm._core.mcmc import (bernoulli, effective_sample_size, importance_std_err,
                              metropolis_accept, normalised_weights)


def test_bernoulli_consumes_one_uniform_per_entry_in_c_order():
    p = np.random.default_rng(1).random((4, 5))
    r1, r2 = np.random.default_rng(7), np.random.default_rng(7)
    draws = bernoulli(p, r1)
    np.testing.assert_array_equal(draws, (r2.random((4, 5)) < p).astype(float))
    assert draws.dtype == p.dtype
    # both generators are at the same place in the stream afterwards
    assert r1.random() == r2.random()


def test_bernoulli_float32_uniforms_and_dtypes():
    p = np.random.default_rng(1).random((3, 6)).astype(np.float32)
    r1, r2 = np.random.default_rng(3), np.random.default_rng(3)
    out = bernoulli(p, r1, uniform_dtype=np.float32)
    np.testing.assert_array_equal(out, (r2.random(p.shape, dtype=np.float32) < p))
    assert out.dtype == np.float32
    assert bernoulli(0.5, np.random.default_rng(0), size=(2, 3), dtype=bool).dtype == bool


def test_bernoulli_frequency_matches_p():
    # mean of n draws has standard error sqrt(p (1 - p) / n); allow 4 of them
    p = np.array([0.0, 0.1, 0.5, 0.9, 1.0])
    n = 20_000
    freq = bernoulli(p, np.random.default_rng(0), size=(n, 5)).mean(axis=0)
    se = np.sqrt(p * (1 - p) / n)
    assert np.all(np.abs(freq - p) <= 4 * se)


def test_metropolis_accept_rate_is_min_one_ratio():
    n = 20_000
    rates = []
    for r in [0.0, 0.25, 0.8, 1.0, 3.0]:
        log_r = np.full(n, np.log(r) if r > 0 else -np.inf)
        rates.append(metropolis_accept(log_r, np.random.default_rng(5)).mean())
    target = np.minimum(1.0, [0.0, 0.25, 0.8, 1.0, 3.0])
    se = np.sqrt(target * (1 - target) / n)
    assert np.all(np.abs(np.array(rates) - target) <= 4 * se)


def test_metropolis_accept_draws_one_uniform_per_chain():
    log_r = np.array([-1.0, 0.5, -np.inf, 2.0])
    r1, r2 = np.random.default_rng(9), np.random.default_rng(9)
    acc = metropolis_accept(log_r, r1)
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(acc, np.log(r2.random(4)) < log_r)
    assert r1.random() == r2.random()


def test_normalised_weights_and_ess():
    log_w = np.random.default_rng(2).normal(size=(50, 3)) * 2 + 700   # would overflow exp
    w = normalised_weights(log_w)
    np.testing.assert_allclose(w.sum(axis=0), 1.0)
    np.testing.assert_allclose(np.log(w), log_w - logsumexp(log_w, axis=0), atol=1e-12)
    ess = effective_sample_size(w)
    np.testing.assert_allclose(ess, 1.0 / np.sum(w * w, axis=0))
    # scale invariance: unnormalised weights give the same ESS
    np.testing.assert_allclose(effective_sample_size(7.0 * w), ess)
    assert np.all((1.0 <= ess) & (ess <= 50.0))
    np.testing.assert_allclose(effective_sample_size(np.ones(8)), 8.0)
    np.testing.assert_allclose(effective_sample_size(np.eye(8)[0]), 1.0)


def test_importance_std_err_matches_delta_method():
    rng = np.random.default_rng(4)
    log_w = rng.normal(size=(400, 2))
    w = np.exp(log_w)
    expected = w.std(axis=0, ddof=1) / (np.sqrt(400) * w.mean(axis=0))
    np.testing.assert_allclose(importance_std_err(log_w), expected)
    # lognormal(0, 1) weights: sd(w) / mean(w) = sqrt(e - 1), so the s.e. at n = 400 is
    # sqrt(e - 1) / 20; 2000 replicates of log mean exp spread by that much (their
    # sample sd is within ~2 % of it), and one sample's estimate is near it
    analytic = np.sqrt(np.e - 1) / 20
    reps = np.array([logsumexp(rng.normal(size=400)) for _ in range(2000)])
    assert abs(reps.std() / analytic - 1) < 0.1
    assert abs(importance_std_err(rng.normal(size=400)) / analytic - 1) < 0.3
    np.testing.assert_array_equal(importance_std_err(np.zeros((1, 3))), np.zeros(3))
