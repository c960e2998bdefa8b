"""A tiny binary RBM used only to test the model-agnostic AIS engine.

Kept beside the tests (not in the library) because ``skdgm._core`` knows no model.
Energy ``E(v, h) = -a.v - b.h - v.W.h``; AIS anneals the visible marginal from the
visible-bias-only base (Salakhutdinov & Murray 2008).
"""

import numpy as np
from scipy.special import expit, logsumexp

from skdgm._core.exact import binary_states


def softplus(x):
    return np.logaddexp(0.0, x)


def exact_log_z(W, a, b):
    """Enumerate the smaller layer; sum the other analytically."""
    n_v, n_h = W.shape
    if n_h <= n_v:
        H = binary_states(n_h, lsb_first=True)
        return logsumexp(H @ b + softplus(a + H @ W.T).sum(axis=1))
    V = binary_states(n_v, lsb_first=True)
    return logsumexp(V @ a + softplus(b + V @ W).sum(axis=1))


class RBMPath:
    """``f_beta(v) = exp(a.v) prod_j (1 + exp(beta (v.W_j + b_j)))``."""

    def __init__(self, W, a, b):
        self.W, self.a, self.b = W, a, b

    @property
    def log_z0(self):
        return softplus(self.a).sum() + self.W.shape[1] * np.log(2.0)

    def log_density(self, v, beta):
        return v @ self.a + softplus(beta * (v @ self.W + self.b)).sum(axis=-1)

    def transition(self, v, beta, rng):
        h = rng.random(v.shape[:-1] + (self.W.shape[1],)) < expit(beta * (v @ self.W + self.b))
        return (rng.random(v.shape) < expit(self.a + beta * (h @ self.W.T))).astype(float)

    def sample_base(self, n, rng):
        return (rng.random((n, self.W.shape[0])) < expit(self.a)).astype(float)


def random_rbm(n_v, n_h, scale, seed):
    rng = np.random.default_rng(seed)
    return (rng.normal(0, scale, (n_v, n_h)), rng.normal(0, 0.5, n_v), rng.normal(0, 0.5, n_h))
