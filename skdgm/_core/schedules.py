"""Step-size and learning-rate schedules shared by every estimator.

Each schedule is a small immutable callable ``s(t)`` of the (0-based) iteration
count ``t``; it accepts scalars or arrays. :func:`make_schedule` turns a user's
``float`` or ``(name, params)`` choice into one.
"""

from dataclasses import dataclass
import numbers

import numpy as np

__all__ = ["Constant", "Cosine", "Polynomial", "InverseTime", "OnlineVB", "make_schedule"]


@dataclass(frozen=True)
class Constant:
    """``s(t) = value``."""

    value: float

    def __call__(self, t):
        return self.value * np.ones_like(np.asarray(t, dtype=float))[()]


@dataclass(frozen=True)
class Cosine:
    """Cosine annealing from ``initial`` to ``final`` over ``total`` steps.

    ``s(t) = final + (initial - final) (1 + cos(pi t / total)) / 2`` for
    ``0 <= t <= total`` and ``final`` afterwards: Liao et al. (2022), Eq. (22), with
    ``final = 0``. The GRBM uses it twice: for the learning rate over a fit and for
    the Langevin step sizes ``alpha_k``, ``k = 0 .. K-1``, inside one sampler call.

    Examples
    --------
    >>> from skdgm._core.schedules import Cosine
    >>> Cosine(1.0, 4)([0, 2, 4, 9]).tolist()
    [1.0, 0.5, 0.0, 0.0]
    """

    initial: float
    total: int
    final: float = 0.0

    def __call__(self, t):
        total = max(self.total, 1)
        t = np.clip(np.asarray(t, dtype=float), 0, total)
        return (self.final + 0.5 * (self.initial - self.final)
                * (1 + np.cos(np.pi * t / total)))[()]


@dataclass(frozen=True)
class Polynomial:
    """``s(t) = a (1 + t / b)^(-c)``: the deep-LDA paper's step size.

    Cong et al. (2017) write ``eps_t = eps0 (tau0 + t)^(-kappa)`` normalised so the
    first step is ``eps0``; that is this schedule with ``a = eps0``,
    ``b = tau0`` and ``c = kappa``.
    """

    a: float
    b: float
    c: float

    def __call__(self, t):
        t = np.asarray(t, dtype=float)
        return (self.a * (1.0 + t / self.b) ** (-self.c))[()]


@dataclass(frozen=True)
class InverseTime:
    """``s(t) = a / (t0 + t)``: stochastic approximation (Salakhutdinov 2010, Sec. 2.2).

    The paper's rate decreases as ``10 / (2000 + t)``.
    """

    a: float
    t0: float

    def __call__(self, t):
        return (self.a / (self.t0 + np.asarray(t, dtype=float)))[()]


@dataclass(frozen=True)
class OnlineVB:
    """``rho_t = (offset + t)^(-decay)``, capped at 1: the online-VB step size.

    Hoffman et al. (2010), Sec. 2.2 (``tau_0 = offset``, ``kappa = decay``): with
    ``decay`` in ``(0.5, 1]`` the steps satisfy the Robbins-Monro conditions. Where
    ``offset + t <= 1`` the step is 1 (the update replaces the current factors by
    the minibatch's target), so ``offset = 0`` makes the first step a full one.

    Examples
    --------
    >>> from skdgm._core.schedules import OnlineVB
    >>> [float(OnlineVB(0.0, 0.5)(t)) for t in (0, 1, 4)]
    [1.0, 1.0, 0.25]
    """

    offset: float = 10.0
    decay: float = 0.7

    def __call__(self, t):
        base = self.offset + np.asarray(t, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(base <= 1.0, 1.0, base ** (-self.decay))[()]


_SCHEDULES = {
    "constant": Constant,
    "cosine": Cosine,
    "polynomial": Polynomial,
    "inverse_time": InverseTime,
    "online_vb": OnlineVB,
}


def make_schedule(spec, **defaults):
    """Build a schedule from a number, a schedule, or ``(name, {params})``.

    A bare number is a :class:`Constant`. ``defaults`` fill parameters the spec
    leaves out (an estimator passes e.g. ``total=n_updates`` for a cosine).
    """
    if callable(spec):
        return spec
    if isinstance(spec, numbers.Real) and not isinstance(spec, bool):
        return Constant(float(spec))
    if isinstance(spec, str):
        name, params = spec, {}
    else:
        try:
            name, params = spec
        except (TypeError, ValueError):
            raise ValueError(f"cannot make a schedule from {spec!r}") from None
    if name not in _SCHEDULES:
        raise ValueError(f"unknown schedule {name!r}; choose one of {sorted(_SCHEDULES)}")
    cls = _SCHEDULES[name]
    fields = cls.__dataclass_fields__
    kw = {k: v for k, v in defaults.items() if k in fields}
    kw.update(params)
    return cls(**kw)
