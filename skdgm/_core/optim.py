"""First-order optimisers on lists of arrays (no model knowledge).

:class:`Adam` (Kingma and Ba 2015, Alg. 1): the optimiser of the recognition
network of DSGHMC's neural adaptive proposal (Du, Zhu and Zhang 2018) and of
``GaussianBernoulliRBM(optimizer="adam")``.
"""

import numpy as np

__all__ = ["Adam"]


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

    def step(self, params, grads, learning_rate=None):
        """Return updated parameters (new arrays) and advance the moments.

        ``learning_rate`` overrides ``alpha`` for this step (a decaying schedule).
        The moment lists are rebound, never written in place, so a caller can
        keep ``(list(m), list(v), t)`` and restore them to undo a step.
        """
        self.t += 1
        b1, b2 = self.beta1, self.beta2
        alpha = self.learning_rate if learning_rate is None else float(learning_rate)
        lr_t = alpha * np.sqrt(1.0 - b2**self.t) / (1.0 - b1**self.t)
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
