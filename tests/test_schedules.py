import numpy as np
import pytest

from skdgm._core.schedules import (Constant, Cosine, InverseTime, OnlineVB, Polynomial,
                                   make_schedule)


def test_cosine_is_eq22():
    s = Cosine(initial=0.01, total=100)
    assert s(0) == pytest.approx(0.01)
    assert s(50) == pytest.approx(0.005)
    assert s(100) == pytest.approx(0.0)
    assert s(150) == pytest.approx(0.0)  # stays at the floor after the run
    t = np.arange(101)
    np.testing.assert_allclose(s(t), 0.5 * 0.01 * (1 + np.cos(np.pi * t / 100)))
    assert np.all(np.diff(s(t)) <= 0)
    assert Cosine(1.0, 10, final=0.2)(10) == pytest.approx(0.2)


def test_grbm_langevin_steps_are_the_cosine_schedule():
    # the sampler's alpha_k, k = 0..K-1, is the shared schedule over K steps, to the bit
    from skdgm.grbm._samplers import cosine_steps
    for K in (1, 5, 17):
        np.testing.assert_array_equal(cosine_steps(0.3, K), Cosine(0.3, K)(np.arange(K)))
        np.testing.assert_array_equal(cosine_steps(0.3, K),
                                      0.5 * 0.3 * (1.0 + np.cos(np.pi * np.arange(K) / K)))
    assert cosine_steps(0.3, 0).shape == (0,)


def test_online_vb_step_is_hoffman_rho():
    s = OnlineVB(offset=10.0, decay=0.7)
    t = np.arange(50)
    np.testing.assert_array_equal(s(t), (10.0 + t) ** -0.7)
    assert s(3) == (13.0) ** -0.7
    # offset + t <= 1 gives a full step (no division by zero at offset = 0)
    np.testing.assert_array_equal(OnlineVB(0.0, 0.6)([0, 1, 2]), [1.0, 1.0, 2.0 ** -0.6])
    assert make_schedule(("online_vb", {"offset": 1.0, "decay": 0.5}))(3) == 0.5
    # the steps decrease
    assert np.all(np.diff(s(np.arange(1000))) < 0)


def test_polynomial_is_the_deep_lda_step():
    # eps_t = eps0 (tau0 + t)^-kappa normalised so that eps at t = 0 is eps0.
    s = Polynomial(a=1.0, b=20.0, c=0.7)
    t = np.arange(0, 1000, 37)
    np.testing.assert_allclose(s(t), (20.0 + t) ** -0.7 / 20.0 ** -0.7)
    assert s(0) == 1.0


def test_inverse_time_is_the_dbm_rate():
    s = InverseTime(a=10.0, t0=2000.0)
    assert s(0) == pytest.approx(0.005)
    assert s(2000) == pytest.approx(0.0025)


def test_constant_and_factory():
    assert make_schedule(0.3)(1234) == 0.3
    assert np.shape(Constant(2.0)(np.arange(4))) == (4,)
    c = make_schedule(("cosine", {"initial": 1.0}), total=10)
    assert c == Cosine(1.0, 10)
    p = make_schedule(("polynomial", {"a": 1, "b": 2, "c": 0.5}))
    assert p(2) == pytest.approx(2 ** -0.5)
    f = lambda t: 1.0  # noqa: E731
    assert make_schedule(f) is f
    with pytest.raises(ValueError, match="unknown schedule"):
        make_schedule(("warp", {}))
    with pytest.raises(ValueError):
        make_schedule(object())
