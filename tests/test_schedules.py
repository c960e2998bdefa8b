import numpy as np
import pytest

from skdgm._core.schedules import Constant, Cosine, InverseTime, Polynomial, make_schedule


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
