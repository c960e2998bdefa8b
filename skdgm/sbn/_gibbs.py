"""Pólya-Gamma augmented Gibbs sampling for deep (autoregressive) SBNs (Gan et al. 2015, Sec. 3.1).

One iteration, given the data and the current hidden units, weights and prior scales:

1. ``gamma_lj ~ PG(1, psi_lj)`` for every unit of every layer (Eq. 12), where ``psi`` is
   the unit's activation; drawn by the ``polyagamma`` package, vectorised.
2. Hidden units one at a time, vectorised over samples, bottom layer first
   (:func:`pg_hidden_sweep`, the ``d_kn`` of Sec. 3.1; Cython with a NumPy twin).
3. Every unit's coefficient row ``[w_j, s_j, c_j]`` from its Gaussian conditional
   (Eq. 13-14). The bias is drawn jointly with its row (a blocked Gibbs step; the paper
   draws it separately, which mixes more slowly and has the same stationary law).
4. The prior's latent scales (:func:`skdgm.sbn._priors.gibbs_update_prior`).
"""

import numpy as np
from polyagamma import random_polyagamma

from . import _model
from ._gibbs_fast import pg_hidden_sweep as _pg_hidden_sweep_fast
from ._priors import gibbs_update_prior, prior_precision

__all__ = [
    "draw_polya_gamma",
    "gibbs_iteration",
    "pg_hidden_sweep",
    "pg_hidden_sweep_numpy",
    "row_conditional",
    "sample_rows",
]

_ROW_CHUNK = 32


def draw_polya_gamma(psi, rng):
    """``PG(1, psi)`` draws of the shape of ``psi`` (Eq. 12)."""
    psi = np.asarray(psi, dtype=float)
    if psi.size == 0:
        return np.zeros_like(psi)
    return random_polyagamma(1.0, psi, random_state=rng)


def pg_hidden_sweep_numpy(h, a_self, x_below, psi_below, gamma_below, w, lateral,
                          gamma_self, rng):
    """NumPy reference of :func:`pg_hidden_sweep`; updates the arrays in place.

    ``h`` (n, K) units of the layer; ``a_self`` (n, K) their activations (kept current
    through the lateral weights); ``x_below``, ``psi_below``, ``gamma_below`` (n, J):
    the children's values, activations (kept current) and PG variables; ``w`` (J, K);
    ``lateral`` (K, K) or None; ``gamma_self`` (n, K) PG variables of the layer itself.
    """
    n, K = h.shape
    u = rng.random((K, n))
    xc = x_below - 0.5
    for k in range(K):
        wk = w[:, k]
        hk = h[:, k].copy()
        p0 = psi_below - hk[:, None] * wk
        d = a_self[:, k] + xc @ wk - 0.5 * ((gamma_below * (2.0 * p0 * wk + wk * wk)).sum(1))
        if lateral is not None and k + 1 < K:
            s = lateral[k + 1:, k]
            q0 = a_self[:, k + 1:] - hk[:, None] * s
            d = d + (h[:, k + 1:] - 0.5) @ s \
                - 0.5 * (gamma_self[:, k + 1:] * (2.0 * q0 * s + s * s)).sum(1)
        new = (u[k] < 1.0 / (1.0 + np.exp(-d))).astype(float)
        h[:, k] = new
        psi_below[...] = p0 + new[:, None] * wk
        if lateral is not None and k + 1 < K:
            a_self[:, k + 1:] = q0 + new[:, None] * s


def pg_hidden_sweep(h, a_self, x_below, psi_below, gamma_below, w, lateral, gamma_self,
                    rng):
    """Cython version of :func:`pg_hidden_sweep_numpy` (same arguments, same draws)."""
    use_lat = lateral is not None
    lat_t = np.ascontiguousarray(lateral.T) if use_lat else np.zeros((1, 1))
    g_self = np.ascontiguousarray(gamma_self, dtype=float) if use_lat else np.zeros((1, 1))
    _pg_hidden_sweep_fast(h, a_self, np.ascontiguousarray(x_below, dtype=float), psi_below,
                          np.ascontiguousarray(gamma_below, dtype=float),
                          np.ascontiguousarray(w.T), lat_t, g_self, use_lat, rng)


def row_conditional(Z, x, gamma, prior_prec):
    """Precision and mean of one row's Gaussian conditional (Eq. 13-14, bias included).

    ``Z`` (n, d) regressors, ``x`` (n,) the unit's values, ``gamma`` (n,) its PG
    variables, ``prior_prec`` (d,). ``P = Z' diag(gamma) Z + diag(prior_prec)``,
    ``mean = P^-1 Z' (x - 1/2)``.
    """
    P = (Z.T * gamma) @ Z + np.diag(prior_prec)
    return P, np.linalg.solve(P, Z.T @ (x - 0.5))


def _gaussian_from_precision(P, b, eps):
    """``N(P^-1 b, P^-1)`` draws for a stack of precisions, using ``eps ~ N(0, I)``."""
    L = np.linalg.cholesky(P)
    y = np.linalg.solve(L, b[..., None])
    mean = np.linalg.solve(np.swapaxes(L, -1, -2), y)[..., 0]
    noise = np.linalg.solve(np.swapaxes(L, -1, -2), eps[..., None])[..., 0]
    return mean + noise


def sample_rows(Z, X, G, prior_prec, mask, rng):
    """Draw every row of a layer from its conditional (Eq. 13-14).

    ``Z`` (n, d) regressors, ``X`` (n, J) the layer's units, ``G`` (n, J) their PG
    variables, ``prior_prec`` (J, d), ``mask`` (J, d). Rows that share the full mask
    are drawn in chunks of ``_ROW_CHUNK``; autoregressive rows one by one on their own
    coefficients. Normals are drawn chunk by chunk, as ``rng.standard_normal((c, d))``.
    """
    J, d = mask.shape
    theta = np.zeros((J, d))
    full = bool(mask.all())
    xc = X - 0.5
    if full:
        for s in range(0, J, _ROW_CHUNK):
            sl = slice(s, min(s + _ROW_CHUNK, J))
            g = G[:, sl].T                                        # (c, n)
            P = np.matmul(Z.T[None] * g[:, None, :], Z)           # (c, d, d)
            idx = np.arange(d)
            P[:, idx, idx] += prior_prec[sl]
            b = xc[:, sl].T @ Z                                   # (c, d)
            eps = rng.standard_normal((g.shape[0], d))
            theta[sl] = _gaussian_from_precision(P, b, eps)
        return theta
    for j in range(J):
        cols = np.flatnonzero(mask[j])
        Zj = Z[:, cols]
        P = (Zj.T * G[:, j]) @ Zj
        P[np.diag_indices_from(P)] += prior_prec[j, cols]
        eps = rng.standard_normal(len(cols))
        theta[j, cols] = _gaussian_from_precision(P, Zj.T @ xc[:, j], eps)
    return theta


def gibbs_iteration(params, X, hidden, prior_states, prior, prior_params, rng, *,
                    frozen_layers=(), use_cython=True):
    """One full Gibbs iteration (module docstring); returns ``(params, hidden, states)``.

    ``hidden`` is ``[h_1, ..., h_L]`` (n, K_l) binary floats, updated in place.
    ``prior_states[l]`` belongs to the weight block of layer ``l`` (its ``[W | lateral]``
    part of the rows). Layers in ``frozen_layers`` keep their rows (layer-wise
    pre-training). The candidate parameters are returned as a new object.
    """
    L = params.n_hidden_layers
    layers = [X] + hidden
    psi = [_model.activation(params, layers, l) for l in range(L + 1)]
    gam = [draw_polya_gamma(p, rng) for p in psi]
    sweep = pg_hidden_sweep if use_cython else pg_hidden_sweep_numpy
    for l in range(1, L + 1):
        lat = None if params.lateral is None else params.lateral[l]
        # psi[l - 1] is updated in place; it starts from the current units
        sweep(layers[l], psi[l], layers[l - 1], psi[l - 1], gam[l - 1],
              params.weights[l - 1], lat, gam[l], rng)
    new = params.copy()
    states = list(prior_states)
    for l in range(L + 1):
        if l in frozen_layers:
            continue
        mask = _model.row_mask(params, l)
        Z = _model.layer_regressors(params, layers, l)
        prec = np.empty(mask.shape)
        prec[:, :-1] = prior_precision(prior, states[l], prior_params, (mask.shape[0],
                                       mask.shape[1] - 1))
        prec[:, -1] = 1.0 / prior_params["bias_var"]
        theta = sample_rows(Z, layers[l], gam[l], prec, mask, rng)
        _model.set_layer_rows(new, l, theta)
        states[l] = gibbs_update_prior(prior, states[l], theta[:, :-1], mask[:, :-1],
                                       prior_params, rng)
    return new, hidden, states

