"""The Gaussian-Bernoulli RBM itself: energies, conditionals, statistics, exact answers.

Liao et al. (2022), "Gaussian-Bernoulli RBMs without tears". Notation: ``N``
visible units, ``M`` hidden units. The weight matrix is stored as ``W`` of shape
``(M, N)`` (scikit-learn's ``components_``), i.e. the transpose of the paper's.

Energy, Eq. (1)::

    E(v, h) = 1/2 ||(v - mu) / sigma||^2 - (v / sigma^2)^T W^T h - b^T h

Conditionals, Eqs. (3)-(4)::

    p(v | h) = N(mu + W^T h, diag(sigma^2))
    p(h_j = 1 | v) = sigmoid(W (v / sigma^2) + b)_j

Marginal ("free") energy, Eq. (5)::

    E~(v) = 1/2 ||(v - mu) / sigma||^2 - sum_j softplus(W (v / sigma^2) + b)_j

Everything here is a module-level function of arrays and a ``GRBMParams``, so
joblib can ship it and the tests can call it directly.
"""

from functools import partial
from itertools import product
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp

from .._core.exact import MAX_EXACT_UNITS, iter_binary_states
from .._core.mcmc import bernoulli
from .._core.numerics import sigmoid, softplus, softplus_sum

__all__ = [
    "GRBMParams",
    "StatsAccumulator",
    "ais_log_density",
    "ais_log_z0",
    "ais_sample_base",
    "ais_transition",
    "exact_log_partition",
    "exact_moments",
    "free_energy",
    "free_energy_rows",
    "hidden_activation",
    "sigmoid",
    "softplus",
]

#: Up to this many hidden units, ``log Z`` is computed exactly by summing over
#: all ``2**M`` hidden states (Gaussian integral over ``v`` per state). The shared
#: limit under the name the estimator (and its tests) know it by.
EXACT_MAX_HIDDEN = MAX_EXACT_UNITS

_LOG_2PI = np.log(2.0 * np.pi)


class GRBMParams(NamedTuple):
    """The parameters ``theta = {W, b, mu, log sigma^2}`` of Eq. (1).

    ``W`` has shape ``(M, N)``; ``b`` ``(M,)``; ``mu`` and ``log_var`` ``(N,)``.
    """

    W: np.ndarray
    b: np.ndarray
    mu: np.ndarray
    log_var: np.ndarray

    @property
    def var(self):
        return np.exp(self.log_var)

    def astype(self, dtype):
        return GRBMParams(*(np.ascontiguousarray(p, dtype=dtype) for p in self))


def hidden_activation(v, params, var=None):
    """``W (v / sigma^2) + b``, the logits of Eq. (4), shape ``(n, M)``."""
    var = params.var if var is None else var
    return (v / var) @ params.W.T + params.b


def free_energy(v, params, a=None):
    """Marginal energy ``E~(v)`` of Eq. (5), one value per row (float64).

    ``a`` is the hidden activation of ``v`` when the caller already has it.
    """
    var = params.var
    if a is None:
        a = hidden_activation(v, params, var)
    d = v - params.mu
    d *= d
    d /= var
    quad = 0.5 * np.sum(d, axis=1, dtype=np.float64)
    return quad - softplus_sum(a)


class StatsAccumulator:
    """Running averages of the sufficient statistics ``-dE/dtheta``, Eqs. (14)-(17).

    ``add(v, h)`` takes visible states ``v`` (n, N) and hidden states or
    probabilities ``h`` (n, M). With ``h`` the sampled hidden units these are the
    joint statistics (Eqs. 14-17); with ``h = p(h | v)`` they are the marginal
    ones (Eqs. 33-36), the same formulas with ``h`` replaced by
    ``sigmoid(W v / sigma^2 + b)``.

    One matrix product per call, ``S = h^T (v / sigma^2)``: the weight statistic
    is ``S`` itself, and the cross term of the log-variance statistic needs no
    ``W^T h`` because ``sum_n v_ni (W^T h_n)_i / sigma_i^2 = sum_j W_ji S_ji``.

    ``weights`` (n,) allow exact expectations over enumerated states (tests).
    """

    def __init__(self, params):
        self.params = params
        self.var = params.var
        M, N = params.W.shape
        dt = params.W.dtype
        self.W = np.zeros((M, N), dtype=dt)
        self.b = np.zeros(M, dtype=dt)
        self.mu = np.zeros(N, dtype=dt)
        self.log_var = np.zeros(N, dtype=dt)
        self.n = 0.0

    def add(self, v, h, weights=None):
        var, mu = self.var, self.params.mu
        vs = v / var
        c = v - mu
        sq = 0.5 * c * c / var
        if weights is None:
            S = h.T @ vs                              # Eq. (14)
            self.b += h.sum(axis=0)                   # Eq. (17)
            self.mu += c.sum(axis=0) / var            # Eq. (15)
            sq = sq.sum(axis=0)
            self.n += v.shape[0]
        else:
            w = np.asarray(weights, dtype=v.dtype)
            S = (h * w[:, None]).T @ vs
            self.b += w @ h
            self.mu += (w @ c) / var
            sq = w @ sq
            self.n += float(np.sum(weights))
        self.W += S
        # Eq. (16), first term; the cross term -sum_j W_ji S_ji is linear in S and W
        # is fixed while accumulating, so it is applied once in mean().
        self.log_var += sq
        return self

    def mean(self):
        """The averaged statistics as a ``GRBMParams``-shaped tuple."""
        n = max(self.n, 1e-300)
        # Eq. (16); einsum forms sum_j W_ji S_ji without an M x N temporary
        log_var = self.log_var - np.einsum("ji,ji->i", self.params.W, self.W)
        return GRBMParams(self.W / n, self.b / n, self.mu / n, log_var / n)


# --------------------------------------------------------------------------
# Exact answers for small models (the tests' ground truth)
# --------------------------------------------------------------------------

def _log_unnorm_hidden(h, p64):
    """``log sum_v exp(-E(v, h))`` minus the constant ``N/2 log 2pi + 1/2 sum log var``.

    Completing the square in ``v``: ``b^T h + sum_i ((mu_i + (W^T h)_i)^2 - mu_i^2) / (2 var_i)``.
    """
    var = p64.var
    m = p64.mu + h @ p64.W
    return h @ p64.b + 0.5 * np.sum((m * m - p64.mu ** 2) / var, axis=1)


def exact_log_partition(params):
    """``log Z`` of Eq. (2) by summing over all hidden states (``M <= 16``)."""
    p64 = params.astype(np.float64)
    M, N = p64.W.shape
    if M > EXACT_MAX_HIDDEN:
        raise ValueError(
            f"exact log Z needs n_components <= {EXACT_MAX_HIDDEN}, got {M}; use AIS")
    parts = [logsumexp(_log_unnorm_hidden(h, p64)) for h in iter_binary_states(M, 4096)]
    const = 0.5 * N * _LOG_2PI + 0.5 * np.sum(p64.log_var)
    return float(logsumexp(parts) + const)


def exact_moments(params):
    """Exact ``E[v]``, ``E[v v^T]`` and ``E[h]`` of a small GRBM (``M <= 16``).

    ``p(h)`` is enumerated; ``v | h ~ N(mu + W^T h, sigma^2)`` gives the rest.
    """
    p64 = params.astype(np.float64)
    M, N = p64.W.shape
    if M > EXACT_MAX_HIDDEN:
        raise ValueError(f"exact moments need n_components <= {EXACT_MAX_HIDDEN}")
    h = np.concatenate(list(iter_binary_states(M, 4096)))
    logp = _log_unnorm_hidden(h, p64)
    w = np.exp(logp - logsumexp(logp))
    m = p64.mu + h @ p64.W
    Ev = w @ m
    Evv = (m * w[:, None]).T @ m + np.diag(p64.var)
    Eh = w @ h
    return Ev, Evv, Eh


def exact_model_statistics(params, n_nodes=2):
    """Exact model expectations of the statistics of Eqs. (14)-(17).

    Sums over hidden states and uses Gauss-Hermite quadrature in ``v`` (exact:
    the statistics are at most quadratic in ``v`` given ``h``). Feeds the
    enumerated ``(v, h)`` nodes with their weights through the same
    :class:`StatsAccumulator` the estimator uses, so the tests check that code.
    """
    p64 = params.astype(np.float64)
    M, N = p64.W.shape
    h = np.concatenate(list(iter_binary_states(M, 4096)))
    logp = _log_unnorm_hidden(h, p64)
    wh_prob = np.exp(logp - logsumexp(logp))
    x, gw = np.polynomial.hermite_e.hermegauss(n_nodes)
    gw = gw / gw.sum()
    nodes = np.array(list(product(range(n_nodes), repeat=N)))
    z = x[nodes]                              # (n_nodes^N, N) standard normal nodes
    zw = np.prod(gw[nodes], axis=1)
    sd = np.sqrt(p64.var)
    acc = StatsAccumulator(p64)
    for j in range(h.shape[0]):
        wh = h[j] @ p64.W
        v = p64.mu + wh + z * sd
        hh = np.broadcast_to(h[j], (v.shape[0], M))
        acc.add(v, hh, weights=wh_prob[j] * zw)
    return acc.mean()


# --------------------------------------------------------------------------
# Annealed importance sampling (through skdgm._core.ais)
# --------------------------------------------------------------------------
# Path: f_beta(v) = exp(-1/2 ||(v - mu)/sigma||^2) prod_j (1 + exp(beta a_j(v) + b_j)),
# a(v) = W (v / sigma^2): the GRBM with weights scaled by beta. At beta = 0 the
# visible units are N(mu, sigma^2), independent of the hidden ones, so
# log Z_0 = N/2 log 2pi + 1/2 sum log sigma^2 + sum_j softplus(b_j).

def ais_log_z0(params):
    p64 = params.astype(np.float64)
    N = p64.mu.shape[0]
    return float(0.5 * N * _LOG_2PI + 0.5 * np.sum(p64.log_var) + np.sum(softplus(p64.b)))


def ais_log_density(v, beta, params):
    var = params.var
    quad = 0.5 * np.sum((v - params.mu) ** 2 / var, axis=1)
    return -quad + np.sum(softplus(beta * ((v / var) @ params.W.T) + params.b), axis=1)


def ais_transition(v, beta, rng, params):
    """One Gibbs sweep of the beta-scaled GRBM (leaves ``f_beta`` invariant)."""
    var = params.var
    p = sigmoid(beta * ((v / var) @ params.W.T) + params.b)
    h = bernoulli(p, rng, dtype=np.float64)
    return params.mu + beta * (h @ params.W) + np.sqrt(var) * rng.standard_normal(v.shape)


def ais_sample_base(n_runs, rng, params):
    return params.mu + np.sqrt(params.var) * rng.standard_normal((n_runs, params.mu.shape[0]))


def ais_callables(params):
    """``(log_density, transition, sample_base, log_z0)`` for the shared AIS engine."""
    p64 = params.astype(np.float64)
    return (partial(ais_log_density, params=p64), partial(ais_transition, params=p64),
            partial(ais_sample_base, params=p64), ais_log_z0(p64))


def free_energy_rows(X, params, chunk_size):
    """:func:`free_energy` of every row of ``X``, ``chunk_size`` rows at a time.

    A CSR ``X`` is densified one chunk at a time (memory bounded by the chunk); a
    dense one goes through in blocks of :data:`FREE_ENERGY_BLOCK` rows, whose
    temporaries stay in cache (issue 25).
    """
    from .._core.base import iter_minibatches, map_row_chunks

    if sp.issparse(X):
        return map_row_chunks(lambda V: free_energy(V, params), X, chunk_size)
    out = np.empty(X.shape[0])
    for rows in iter_minibatches(X.shape[0], FREE_ENERGY_BLOCK):
        out[rows] = free_energy(X[rows], params)
    return out


#: Rows per block of :func:`free_energy_rows` on dense input.
FREE_ENERGY_BLOCK = 1000
