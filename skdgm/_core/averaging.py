"""Iterate averaging and heavy-ball momentum for stochastic-approximation training.

Stochastic approximation (Robbins & Monro 1951; the DBM's Eq. 2 of Salakhutdinov
2010) leaves its iterate wandering around the optimum by an amount set by the step
size and the noise of the gradient. Averaging the iterates (Polyak & Juditsky 1992;
Ruppert 1988) removes most of that wander without slowing the iterate itself: the
average is read, the raw iterate keeps driving the persistent chains. The average
here is exponential (a moving window), so that it keeps up with an iterate that is
still improving, with a warm-up that lets the early average follow the iterate
closely (``decay_t = min(decay, (1 + t) / (10 + t))``).

Model-free: lists of arrays in, lists of arrays out. Used by
:mod:`skdgm.dbm._train`; any wing's stochastic-approximation loop can hold one.
Both update in place over a pass of many updates; a pass works on their
``copy()`` and hands it back, so that a pass that diverges half-way leaves the
caller's average and velocity with the iterate they belong to.
"""

import numpy as np

__all__ = ["HeavyBall", "ParameterAverage", "ema_reference", "warmup_decay"]


def warmup_decay(decay, t):
    """The decay applied at the average's ``t``-th update (``t = 0`` first).

    ``min(decay, (1 + t) / (10 + t))``: the first updates weigh the new iterate
    heavily, so the average is not held back by where training started.
    """
    return min(float(decay), (1.0 + t) / (10.0 + t))


class ParameterAverage:
    """Exponential moving average of a list of parameter arrays.

    Parameters
    ----------
    decay : float in [0, 1)
        Per-update decay: the average forgets with a time constant of about
        ``1 / (1 - decay)`` updates. ``0`` makes the average the last iterate.

    Notes
    -----
    ``update(params)`` after every parameter update; ``value()`` returns fresh
    arrays (the caller may keep them while the average moves on). The average is
    kept in the parameters' dtype and updated in place,
    ``m += (1 - decay_t) (p - m)``.
    """

    def __init__(self, decay):
        self.decay = float(decay)
        self.n_updates = 0
        self.mean = None

    def update(self, params):
        if self.mean is None:
            self.mean = [np.array(p, copy=True) for p in params]
        else:
            w = 1.0 - warmup_decay(self.decay, self.n_updates)
            for m, p in zip(self.mean, params):
                m += m.dtype.type(w) * (p - m)
        self.n_updates += 1

    def value(self):
        """The average, as new arrays (``None`` before the first update)."""
        return None if self.mean is None else [m.copy() for m in self.mean]

    def copy(self):
        """An independent average (its own arrays): a pass updates it, the caller
        keeps it only once every update of the pass has been accepted."""
        new = ParameterAverage(self.decay)
        new.n_updates, new.mean = self.n_updates, self.value()
        return new


def ema_reference(iterates, decay):
    """NumPy reference of :class:`ParameterAverage` over a list of iterates (float64).

    ``iterates`` is a list of parameter lists, oldest first; returns the average
    after the last one, from the definition (not in place).
    """
    mean = [np.asarray(p, dtype=np.float64) for p in iterates[0]]
    for t, params in enumerate(iterates[1:]):
        d = warmup_decay(decay, t + 1)
        mean = [d * m + (1.0 - d) * np.asarray(p, dtype=np.float64)
                for m, p in zip(mean, params)]
    return mean


class HeavyBall:
    """Momentum for an ascent step: ``v = mu v + lr g``, ``theta = theta + v`` (Polyak 1964).

    The authors' DBM code uses it (momentum 0.5, then 0.9). ``momentum=0`` is the
    plain step and keeps no velocity. Returns new arrays, never modifies its inputs
    (the caller commits a step only after checking it); the velocity is replaced
    by ``commit`` once the step is accepted.
    """

    def __init__(self, momentum):
        self.momentum = float(momentum)
        self.velocity = None
        self._pending = None

    def step(self, params, grads, lr):
        if self.momentum == 0.0:
            return [p + lr * g for p, g in zip(params, grads)]
        old = self.velocity or [np.zeros_like(p) for p in params]
        self._pending = [self.momentum * v + lr * g for v, g in zip(old, grads)]
        return [p + v for p, v in zip(params, self._pending)]

    def commit(self):
        if self._pending is not None:
            self.velocity, self._pending = self._pending, None

    def copy(self):
        """An independent optimiser with the committed velocity (the arrays are
        replaced on commit, never modified, so they are shared)."""
        new = HeavyBall(self.momentum)
        new.velocity = None if self.velocity is None else list(self.velocity)
        return new
