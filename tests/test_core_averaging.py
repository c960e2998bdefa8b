"""``skdgm._core.averaging``: the moving average and momentum against NumPy references."""

import numpy as np
import pytest

from skdgm._core.averaging import HeavyBall, ParameterAverage, ema_reference, warmup_decay


def _iterates(n, rng, dtype=np.float64):
    return [[rng.normal(size=(3, 4)).astype(dtype), rng.normal(size=4).astype(dtype)]
            for _ in range(n)]


@pytest.mark.parametrize("decay", [0.0, 0.5, 0.9, 0.999])
def test_average_equals_the_reference_of_the_iterates(decay):
    its = _iterates(40, np.random.default_rng(1))
    avg = ParameterAverage(decay)
    for params in its:
        avg.update(params)
    for got, want in zip(avg.value(), ema_reference(its, decay)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_decay_zero_is_the_last_iterate_and_warmup_follows_early_iterates():
    its = _iterates(5, np.random.default_rng(2))
    avg = ParameterAverage(0.0)
    for params in its:
        avg.update(params)
    for got, want in zip(avg.value(), its[-1]):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-15)
    # the warm-up: the average keeps 2/11 of itself at the second iterate, whatever the decay
    assert warmup_decay(0.999, 1) == pytest.approx(2 / 11)
    assert warmup_decay(0.5, 10_000) == 0.5


def test_average_value_is_a_copy_and_inputs_are_not_modified():
    its = _iterates(3, np.random.default_rng(3), np.float32)
    before = [[a.copy() for a in p] for p in its]
    avg = ParameterAverage(0.9)
    assert avg.value() is None
    for params in its:
        avg.update(params)
    v = avg.value()
    v[0][...] = 7.0
    assert not np.any(avg.value()[0] == 7.0)
    assert avg.value()[0].dtype == np.float32
    for p, q in zip(its, before):
        for a, b in zip(p, q):
            np.testing.assert_array_equal(a, b)


def test_heavy_ball_equals_the_reference_and_commits_only_when_told():
    rng = np.random.default_rng(4)
    theta = [rng.normal(size=(2, 3)), rng.normal(size=3)]
    grads = [[rng.normal(size=(2, 3)), rng.normal(size=3)] for _ in range(6)]
    opt, mu, lr = HeavyBall(0.9), 0.9, 0.1
    ref_theta, ref_v = [a.copy() for a in theta], [np.zeros_like(a) for a in theta]
    for g in grads:
        # an uncommitted (rejected) step leaves the velocity as it was
        opt.step(theta, [10 * x for x in g], lr)
        opt._pending = None
        new = opt.step(theta, g, lr)
        opt.commit()
        ref_v = [mu * v + lr * x for v, x in zip(ref_v, g)]
        ref_theta = [t + v for t, v in zip(ref_theta, ref_v)]
        theta = new
    for a, b in zip(theta, ref_theta):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    plain = HeavyBall(0.0).step(theta, grads[0], lr)
    for a, t, g in zip(plain, theta, grads[0]):
        np.testing.assert_array_equal(a, t + lr * g)


def test_copies_are_independent_of_the_original():
    rng = np.random.default_rng(5)
    its = _iterates(4, rng)
    avg = ParameterAverage(0.9)
    for params in its[:2]:
        avg.update(params)
    twin = avg.copy()
    twin.update(its[2])
    # the original has not moved; the copy continues exactly as the original would
    assert avg.n_updates == 2 and twin.n_updates == 3
    for got, want in zip(avg.value(), ema_reference(its[:2], 0.9)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    avg.update(its[2])
    for a, b in zip(avg.value(), twin.value()):
        np.testing.assert_array_equal(a, b)

    theta, g = [rng.normal(size=3)], [rng.normal(size=3)]
    opt = HeavyBall(0.5)
    opt.step(theta, g, 0.1)
    opt.commit()
    fork = opt.copy()
    fork.step(theta, g, 0.1)
    fork.commit()
    assert fork.momentum == 0.5
    np.testing.assert_array_equal(opt.velocity[0], 0.1 * g[0])
    np.testing.assert_array_equal(fork.velocity[0], 0.5 * 0.1 * g[0] + 0.1 * g[0])
