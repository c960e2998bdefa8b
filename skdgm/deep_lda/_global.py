"""Global updates of the topics ``Phi^(l)`` and the top-layer shapes ``r``.

All functions are pure: arrays and noise (or a generator) in, new arrays out.
Noise is passed explicitly as standard normals so that the tests can replay one
step of Eq. 15 / Eq. 5 / Eq. 17 on fixed numbers.

Notation (Cong et al., 2017): for one layer, ``phi`` is ``(K_{l-1}, K_l)`` with
columns ``phi_k`` on the simplex; ``xbar`` the minibatch counts
``x_{:k.}`` averaged over the collected local samples (``E[.]`` of Eq. 18);
``rho = |X| / |X_minibatch|``.
"""

import numbers

import numpy as np

__all__ = [
    "update_metric",
    "simplex_step",
    "project_simplex",
    "sgrld_step",
    "r_step",
    "gibbs_phi",
    "gibbs_r",
    "sg_update",
    "noise_size",
    "initial_topics",
    "layer_sizes",
    "layer_etas",
]

from . import _global_fast
from ._local import FLOOR

_TINY = np.finfo(np.float64).tiny


def update_metric(M, stat, rho, weight):
    """Annealed-weighting estimate of the Fisher metric, Eq. 18 / Eq. 19.

    ``M' = (1 - w) M + w rho E[stat]``, with ``stat = x~_{.k.}`` per topic for
    ``Phi^(l)`` (Eq. 18) or ``q~_.^(L+1)`` for ``r`` (Eq. 19); the paper's
    ``w = eps'_t = eps_t``.
    """
    return (1.0 - weight) * M + weight * rho * np.asarray(stat, dtype=np.float64)


def project_simplex(y, phi):
    """The constraint ``[.]_angle`` of Eq. 15.

    First the exact conditioning of ``N(mu, c diag(phi))`` on the hyperplane
    ``sum_v phi_vk = 1`` (Cong, Chen & Zhou 2017, Theorem 2): with that
    covariance ``Sigma 1 / (1' Sigma 1) = phi / sum(phi) = phi``, so
    ``x = y - phi (1'y - 1)``. This is the O(V) simulation of the reduced-mean
    update Eq. 14 in V dimensions. Then non-negativity: negative entries are
    reflected (``|.|``, as in Eq. 5) and the column renormalised.
    """
    x = y - phi * (y.sum(axis=0, keepdims=True) - 1.0)
    x = np.abs(x)
    x /= x.sum(axis=0, keepdims=True)
    return np.maximum(x, FLOOR)


def simplex_step(phi, rate, xbar, rho, eta, noise):
    """One reduced-mean Riemannian step for every column of ``phi``, Eq. 15.

    ``phi_k <- [phi_k + r_k ((rho x_{:k.} + eta) - (rho x_{.k.} + eta V) phi_k)
    + N(0, 2 r_k diag(phi_k))]_angle`` with ``r_k = eps_t / M_k`` (TLASGR) or a
    rate shared by all topics (TLFSGR).

    The rate is capped at ``1 / (rho x_{.k.} + eta V)``: at that value the drift
    lands exactly on the conditional posterior mean, and larger values overshoot
    it (the Euler step of a linear drift diverges past twice that). The cap is
    only active when ``M_k`` is small, e.g. for a topic the minibatch hardly
    uses, where the uncapped rate would blow up.

    Parameters
    ----------
    phi : ndarray of shape (V, K)
    rate : ndarray of shape (K,) or float
    xbar : ndarray of shape (V, K)
        ``E[x~_{vk.}]`` of the minibatch.
    rho : float
    eta : float
    noise : ndarray of shape (V, K)
        Standard normal draws.

    Returns
    -------
    phi_new : ndarray of shape (V, K)
    rate_used : ndarray of shape (K,)
    """
    V = phi.shape[0]
    a = rho * xbar + eta
    b = rho * xbar.sum(axis=0) + eta * V
    rate = np.minimum(np.broadcast_to(np.asarray(rate, dtype=np.float64), b.shape), 1.0 / b)
    y = phi + rate * (a - b * phi) + np.sqrt(2.0 * rate * phi) * noise
    return project_simplex(y, phi), rate


def sgrld_step(phihat, eps, xbar, rho, eta, noise):
    """Expanded-mean SGRLD of Patterson & Teh (2013), Eq. 5.

    ``phihat_k <- | phihat_k + eps ((rho x_{:k} + eta) - (rho x_{.k} + phihat_{.k}) phi_k)
    + N(0, 2 eps diag(phihat_k)) |`` with ``phi_k = phihat_k / phihat_{.k}``.

    Returns
    -------
    phihat_new, phi_new : ndarray of shape (V, K)
    """
    phi = phihat / phihat.sum(axis=0, keepdims=True)
    drift = (rho * xbar + eta) - (rho * xbar.sum(axis=0) + phihat.sum(axis=0)) * phi
    new = np.abs(phihat + eps * drift + np.sqrt(2.0 * eps * phihat) * noise)
    new = np.maximum(new, FLOOR)
    return new, np.maximum(new / new.sum(axis=0, keepdims=True), FLOOR)


def r_step(r, rate, x_top, q_top, rho, gamma0, c0, noise):
    """Riemannian step for the top-layer shapes, Eq. 17.

    ``r <- | r + (eps/M) ((rho x~_{:.}^(L+1) + gamma0/K_L) - r (c0 + rho q~_.^(L+1)))
    + N(0, 2 (eps/M) diag(r)) |``; the rate is capped at
    ``1 / (c0 + rho q~)`` for the reason given in :func:`simplex_step`, and the
    absolute value keeps ``r`` positive.
    """
    K = r.shape[0]
    b = c0 + rho * q_top
    rate = min(float(rate), 1.0 / b)
    y = r + rate * ((rho * x_top + gamma0 / K) - r * b) + np.sqrt(2.0 * rate * r) * noise
    return np.maximum(np.abs(y), FLOOR), rate


def gibbs_phi(xbar, eta, rng):
    """Batch Gibbs draw ``phi_k ~ Dir(eta + x_{1k.}, ..., eta + x_{Vk.})`` (Sec. 3.2)."""
    g = rng.standard_gamma(eta + np.asarray(xbar, dtype=np.float64))
    g = np.maximum(g, FLOOR)
    # floored after normalising too (a column's sum can exceed 1); the columns
    # then sum to 1 within V * 1e-100
    return np.maximum(g / g.sum(axis=0, keepdims=True), FLOOR)


def gibbs_r(x_top, q_top, gamma0, c0, rng):
    """Batch Gibbs draw ``r_k ~ Gam(gamma0/K + x_{k.}^(L+1), 1/(c0 + q_.^(L+1)))`` (Eq. 7)."""
    K = x_top.shape[0]
    g = rng.standard_gamma(gamma0 / K + np.asarray(x_top, dtype=np.float64))
    return np.maximum(g / (c0 + q_top), FLOOR)


def noise_size(phis, r):
    """How many standard normals :func:`sg_update` draws: one per entry of every
    layer's topics, then one per entry of ``r`` (every sampler but batch Gibbs)."""
    return sum(p.size for p in phis) + r.size


def sg_update(phis, r, state, stats, *, sampler, eps, rho, etas, gamma0, c0, rng,
              kernels="cython", noise=None):
    """One global update of Alg. 1 (lines 4-9) from a minibatch's local statistics.

    For every layer the metric (Eq. 18) and the topics, by TLASGR (Eq. 15 with
    the rate ``eps / M_k^(l)``), TLFSGR (one rate ``eps / mean_k M_k^(1)``) or
    SGRLD (Eq. 5 on the expanded mean); then the metric of ``r`` (Eq. 19) and
    ``r`` (Eq. 17). Nothing is modified in place.

    Parameters
    ----------
    phis : list of ndarray
        ``Phi^(l)``, shape ``(K_{l-1}, K_l)``, columns on the simplex.
    r : ndarray of shape (K_L,)
    state : dict
        ``M`` (list, per layer, the metric of each topic), ``M_top`` (float, the
        metric of ``r``), ``phihat`` (list, SGRLD's expanded means) and ``t``
        (the number of updates made so far: ``M`` starts at its first estimate).
    stats : dict
        The minibatch's collected local statistics: ``topic_counts`` (list, per
        layer, ``E[x~_{:k.}]`` of shape ``(K_{l-1}, K_l)``), ``top_tables``
        (``E[x~^(L+1)_{k.}]``) and ``q_top`` (``E[q~_.^(L+1)]``).
    sampler : {"tlasgr", "tlfsgr", "sgrld"}
    eps : float
        The step size ``eps_t``.
    rho : float
        ``|X| / |minibatch|``.
    etas : list of float
        Dirichlet concentration of each layer's topics.
    gamma0, c0 : float
        ``r_k ~ Gam(gamma0 / K_L, 1 / c0)``.
    rng : numpy.random.Generator
        The standard normals of every layer's noise (``phi.shape``, C order,
        bottom layer first), then those of ``r``.
    kernels : {"cython", "numpy"}
        ``"cython"`` runs the TLASGR / TLFSGR step of each layer as one fused
        kernel (:func:`._global_fast.simplex_step`, normals drawn inside);
        ``"numpy"`` its twin :func:`simplex_step` on a drawn noise array.
    noise : ndarray of shape (noise_size(phis, r),), optional
        The normals ``rng`` would give, drawn beforehand in the same order
        (:func:`noise_size`); ``rng`` is then not used. The training draws them
        on a worker while the local step runs (:class:`._local.StandardNormals`),
        which takes them off the serial path of an update (issue 26); the same
        numbers give the same update.

    Returns
    -------
    phis : list of ndarray
    r : ndarray of shape (K_L,)
    state : dict
        The new ``M``, ``M_top``, ``phihat`` and ``t + 1``.
    rates : list of ndarray
        The rates applied, per layer and topic, then that of ``r`` (shape (1,)).
    """
    L = len(phis)
    tiny = _TINY
    # Eq. 18: M starts at its first estimate (forgetting weight 1 at t = 0)
    w = 1.0 if state["t"] == 0 else min(eps, 1.0)
    M = [update_metric(state["M"][l], stats["topic_counts"][l].sum(axis=0), rho, w)
         for l in range(L)]
    M_top = float(update_metric(state["M_top"], stats["q_top"], rho, w))
    phihat = list(state["phihat"])
    new_phis, rates = [], []
    normals = _normals(rng, noise)
    for l in range(L):
        xbar = stats["topic_counts"][l]
        if sampler == "sgrld":
            phihat[l], phi = sgrld_step(phihat[l], eps, xbar, rho, etas[l],
                                        normals(phis[l].shape))
            rate = np.full(phi.shape[1], eps)
        else:
            if sampler == "tlasgr":
                rate = eps / np.maximum(M[l], tiny)
            else:  # tlfsgr: one rate from the mean layer-1 metric
                rate = np.full(phis[l].shape[1], eps / max(M[0].mean(), tiny))
            if kernels == "cython":
                phi, rate = _global_fast.simplex_step(
                    np.ascontiguousarray(phis[l]), np.ascontiguousarray(rate, dtype=np.float64),
                    np.ascontiguousarray(xbar, dtype=np.float64), float(rho),
                    float(etas[l]), rng, FLOOR,
                    None if noise is None else normals(phis[l].shape))
            else:
                phi, rate = simplex_step(phis[l], rate, xbar, rho, etas[l],
                                         normals(phis[l].shape))
        new_phis.append(phi)
        rates.append(np.array(rate, dtype=float, copy=True))
    new_r, r_rate = r_step(r, eps / max(M_top, tiny), stats["top_tables"], stats["q_top"],
                           rho, gamma0, c0, normals(r.shape))
    rates.append(np.array([r_rate]))
    return new_phis, new_r, {"M": M, "M_top": M_top, "phihat": phihat,
                             "t": state["t"] + 1}, rates


def _normals(rng, noise):
    """``normals(shape)``: the next standard normals, from ``rng`` or, in turn, from
    the pre-drawn flat ``noise`` (a view, in C order)."""
    if noise is None:
        return rng.standard_normal
    used = [0]

    def take(shape):
        n = int(np.prod(shape))
        if used[0] + n > noise.size:
            raise ValueError(f"sg_update: noise holds {noise.size} normals, fewer than needed")
        out = noise[used[0]:used[0] + n].reshape(shape)
        used[0] += n
        return out

    return take


def initial_topics(n_features, n_components, X, rng):
    """Starting topics: ``Dir(1)`` columns, the layer-1 ones seeded on documents.

    Each layer-1 topic is seeded on one random document of ``X`` (its word
    frequencies plus an equal weight of ``Dir(1)`` noise), so that the topics
    start apart, which avoids most merged-topic modes; the upper layers are
    ``Dir(1)``. ``X`` may be ``None`` or empty (no seeding).

    Returns
    -------
    phis : list of ndarray
        ``phis[l]`` of shape ``(K_{l-1}, K_l)`` with ``K_{-1} = n_features``.
    """
    dims = (n_features,) + tuple(n_components)
    phis = [rng.dirichlet(np.ones(dims[l]), size=dims[l + 1]).T.copy()
            for l in range(len(n_components))]
    if X is not None and X.nnz:
        K = n_components[0]
        rows = rng.choice(X.shape[0], size=K, replace=X.shape[0] < K)
        docs = X[rows].toarray().T
        lengths = np.maximum(docs.sum(axis=0), 1.0)
        start = docs / lengths + phis[0]
        phis[0] = start / start.sum(axis=0)
    return phis


def layer_sizes(n_components):
    """``n_components`` (an int or a sequence, bottom layer first) as a tuple of ints."""
    K = (n_components,) if isinstance(n_components, numbers.Integral) else n_components
    K = tuple(int(k) for k in K)
    if len(K) == 0 or any(k < 1 for k in K):
        raise ValueError(f"n_components must be positive ints, got {n_components!r}")
    return K


def layer_etas(eta, Ks):
    """Each layer's Dirichlet concentration: ``None`` is ``1/K_l`` (the paper), a
    number is shared by every layer, a sequence gives one per layer."""
    if eta is None:
        return [1.0 / k for k in Ks]
    if isinstance(eta, numbers.Real):
        return [float(eta)] * len(Ks)
    etas = [float(e) for e in eta]
    if len(etas) != len(Ks) or any(e <= 0 for e in etas):
        raise ValueError(f"eta must be one positive value per layer ({len(Ks)}), got {eta!r}")
    return etas
