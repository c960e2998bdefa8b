"""First-order optimisers on lists of arrays (no model knowledge).

:class:`Adam` (Kingma and Ba 2015, Alg. 1): the optimiser of the recognition
network of DSGHMC's neural adaptive proposal (Du, Zhu and Zhang 2018) and of
``GaussianBernoulliRBM(optimizer="adam")``.
"""

import numpy as np

from ._optim_fast import adam_diff_step, sq_diff_sum

__all__ = ["Adam", "sq_diff_sum_of"]


def sq_diff_sum_numpy(a, b):
    """NumPy twin of the kernel ``sq_diff_sum``: ``sum((a - b) ** 2)`` in float64."""
    d = np.subtract(a, b, dtype=np.float64)
    return float(np.vdot(d, d))


def sq_diff_sum_of(pos, neg):
    """``sum_i ||pos_i - neg_i||^2`` over two lists of arrays, in float64, one pass each.

    The squared norm of a gradient that is a difference of two statistics (the
    data and the model phases), without the float64 difference arrays.
    """
    total = 0.0
    for a, b in zip(pos, neg):
        a, b = np.asarray(a), np.asarray(b)
        # one floating type per kernel call; mixed or integer inputs go up to float64
        dt = a.dtype if a.dtype == b.dtype and a.dtype in (np.float32, np.float64) \
            else np.dtype(np.float64)
        total += sq_diff_sum(_flat(a, dt), _flat(b, dt))
    return total


def _flat(a, dtype=None):
    a = np.asarray(a)
    if dtype is not None and a.dtype != dtype:
        a = a.astype(dtype)
    elif a.dtype not in (np.float32, np.float64):
        a = a.astype(np.float64)
    return np.ascontiguousarray(a).reshape(-1)


class Adam:
    """Adam with bias-corrected moments, on a list of parameter arrays.

    Parameters
    ----------
    params : list of ndarray
        Shapes of the parameters (the moments start at zero).
    learning_rate : float, default=1e-3
        ``alpha`` (Du et al. use 0.001 or 0.0005).
    beta1, beta2, eps : float
        Kingma and Ba's defaults.
    maximize : bool, default=False
        Ascend instead of descend (the inclusive-KL objective, Du et al. Eq. 7,
        is maximised).
    """

    def __init__(self, params, *, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
                 maximize=False):
        self.learning_rate = float(learning_rate)
        self.beta1, self.beta2, self.eps = float(beta1), float(beta2), float(eps)
        self.maximize = bool(maximize)
        self.m = [np.zeros_like(p, dtype=float) for p in params]
        self.v = [np.zeros_like(p, dtype=float) for p in params]
        self.t = 0
        self._spares = {}

    def __getstate__(self):
        # The spare moment buffers are scratch space: not copied with a snapshot
        # of an estimator, not pickled.
        state = self.__dict__.copy()
        state["_spares"] = {}
        return state

    def _lr_t(self, learning_rate):
        b1, b2 = self.beta1, self.beta2
        alpha = self.learning_rate if learning_rate is None else float(learning_rate)
        return alpha * np.sqrt(1.0 - b2**self.t) / (1.0 - b1**self.t)

    def _spare(self, key, i):
        # A buffer for the new moments that is neither the current one (the
        # caller may hold it to undo this step) nor of another shape.
        buf = self._spares.get((key, i))
        current = (self.m if key == "m" else self.v)[i]
        if buf is None or buf is current or buf.shape != current.shape:
            buf = np.empty_like(current)
        return buf

    def step_difference(self, params, pos, neg, *, scale=1.0, learning_rate=None):
        """:meth:`step` on the gradients ``(pos[i] - neg[i]) * scale``, fused.

        Bit for bit the result of ``step(params, [(p - n) * scale ...])`` with the
        differences taken in float64 (the test compares them), with the
        parameters returned in their own dtype, but in one pass per array (the
        Cython kernel ``adam_diff_step``) and without new arrays for the moments:
        each step writes into the buffers of the moments two steps back, so the
        moments of the previous step, which a caller may keep to undo, are never
        written.
        """
        arrays = [np.asarray(x) for x in (*params, *pos, *neg)]
        if len({a.dtype for a in arrays}) != 1 or arrays[0].dtype not in (np.float32,
                                                                          np.float64):
            # one floating type per kernel call: anything else takes the textbook path
            grads = [np.subtract(a, b, dtype=np.float64) * scale for a, b in zip(pos, neg)]
            return [c.astype(p.dtype if p.dtype.kind == "f" else np.float64, copy=False)
                    for p, c in zip(arrays, self.step(params, grads, learning_rate))]
        self.t += 1
        step = (1.0 if self.maximize else -1.0) * self._lr_t(learning_rate)
        out = []
        for i, (p, a, b) in enumerate(zip(params, pos, neg)):
            p = np.asarray(p)
            pf, af, bf = _flat(p), _flat(a), _flat(b)
            m_new, v_new = self._spare("m", i), self._spare("v", i)
            p_new = np.empty(p.shape, dtype=p.dtype)
            adam_diff_step(pf, af, bf, self.m[i].reshape(-1), self.v[i].reshape(-1),
                           m_new.reshape(-1), v_new.reshape(-1), p_new.reshape(-1),
                           float(scale), self.beta1, self.beta2, step, self.eps)
            self._spares[("m", i)], self._spares[("v", i)] = self.m[i], self.v[i]
            self.m[i], self.v[i] = m_new, v_new
            out.append(p_new)
        return out

    def step(self, params, grads, learning_rate=None):
        """Return updated parameters (new arrays) and advance the moments.

        ``learning_rate`` overrides ``alpha`` for this step (a decaying schedule).
        The moment lists are rebound, never written in place, so a caller can
        keep ``(list(m), list(v), t)`` and restore them to undo a step.
        """
        self.t += 1
        b1, b2 = self.beta1, self.beta2
        lr_t = self._lr_t(learning_rate)
        sign = 1.0 if self.maximize else -1.0
        out = []
        for i, (p, g) in enumerate(zip(params, grads)):
            # The textbook expressions, b1 m + (1 - b1) g, b2 v + (1 - b2) g^2 and
            # p + sign lr_t m / (sqrt(v) + eps), evaluated in the same order (so
            # to the same bits) but into four new arrays instead of twelve: for a
            # GRBM of 4096 x 784 weights each fresh float64 array is 25 MB of page
            # faults, and they were ~5 % of an update (issue 15).
            g = np.asarray(g)
            m = np.multiply(self.m[i], b1)
            tmp = np.multiply(g, 1.0 - b1)     # in g's dtype, as the expression
            m += tmp
            v = np.multiply(self.v[i], b2)
            np.multiply(g, g, out=tmp)
            tmp *= 1.0 - b2
            v += tmp
            self.m[i], self.v[i] = m, v
            den = tmp if tmp.dtype == v.dtype and tmp.shape == v.shape else None
            den = np.sqrt(v, out=den)
            den += self.eps
            step = np.multiply(m, sign * lr_t)
            np.divide(step, den, out=step)
            out.append(np.add(p, step, out=step))
        return out
