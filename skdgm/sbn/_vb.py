"""Mean-field VB and online VB for deep (autoregressive) SBNs (Gan et al. 2015, Sec. 3.2).

Factorisation (the paper's ``Q``): ``q(w_ji) = N(M_ji, V_ji)`` for every coefficient of
every unit's row ``[w_j, s_j, c_j]`` (see :func:`skdgm.sbn._model.layer_rows`),
``q(h_kn) = Bernoulli(pi_kn)``, ``q(gamma_jn) = PG(1, sqrt(<psi_jn^2>))`` (Eq. 17), and
the prior's factors (:func:`skdgm.sbn._priors.vb_update_prior`).

Every update is an exact coordinate-ascent step on the augmented bound ``L'`` (Eq. 15
with Eq. 16 substituted), so ``L'`` never decreases in batch VB. With ``q(gamma)`` at its
optimum the data term of ``L'`` per unit is the closed form
``-log 2 + (x - 1/2) <psi> - log cosh(sqrt(<psi^2>) / 2)`` (what :func:`augmented_bound`
returns). The un-augmented bound ``L`` (Eq. 15) is estimated by Monte Carlo over
``q(W)`` and ``q(H)`` (:func:`mc_bound`), as the paper reports it.

Online VB (Hoffman et al. 2013): a minibatch's local factors are fitted with the
global ones fixed; then every coefficient's natural parameters (precision and
precision x mean) move a step ``rho_t`` towards the values the coordinate update
would give if the minibatch were replicated ``N / |B|`` times.
"""

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from .._core.mcmc import bernoulli
from . import _model
from ._priors import prior_precision, vb_prior_bound, vb_update_prior

__all__ = [
    "augmented_bound",
    "expected_psi",
    "init_vb_state",
    "local_step",
    "local_step_blocks",
    "mc_bound",
    "pg_mean",
    "rows_update",
    "vb_iteration",
    "visible_statistic",
]

_LOG2 = np.log(2.0)


def pg_mean(c):
    """``E[gamma]`` for ``gamma ~ PG(1, c)``: ``tanh(c / 2) / (2 c)`` (1/4 at c = 0)."""
    c = np.abs(np.asarray(c, dtype=float))
    small = c < 1e-6
    safe = np.where(small, 1.0, c)
    return np.where(small, 0.25 - c * c / 48.0, np.tanh(safe / 2) / (2 * safe))


def _log_cosh_half(c):
    c = np.abs(c)
    return c / 2 + np.log1p(np.exp(-c)) - _LOG2


def expected_psi(zbar, M, V):
    """``<psi>`` and ``<psi^2>`` of a layer under the factorised ``q`` (binary or constant z).

    With ``E[z_i^2] = E[z_i] = zbar_i``: ``<psi^2> = <psi>^2 + (zbar - zbar^2) M^2 + zbar V``.
    """
    psi = zbar @ M.T
    psi2 = psi * psi + (zbar - zbar * zbar) @ (M * M).T + zbar @ V.T
    return psi, np.maximum(psi2, 0.0)


def init_vb_state(params, prior_states, variance=1e-2):
    """Global factors: means from ``params``, a small common variance, the prior's factors."""
    L = params.n_hidden_layers
    M = [_model.layer_rows(params, l) for l in range(L + 1)]
    masks = [_model.row_mask(params, l) for l in range(L + 1)]
    V = [np.where(m, variance, 0.0) for m in masks]
    return {"M": M, "V": V, "masks": masks, "prior": list(prior_states)}


def params_from_state(template, state):
    """An :class:`SBNParams` holding the posterior means ``M``."""
    p = template.copy()
    for l, M in enumerate(state["M"]):
        _model.set_layer_rows(p, l, M)
    return p


def _zbar(template, layers_mean, l):
    return _model.layer_regressors(template, layers_mean, l)


def _hidden_update(l, template, state, layers_mean, psi, gbar):
    """Coordinate update of every ``pi_kn`` of layer ``l`` (the VB analogue of the d_kn of Sec. 3.1).

    For unit k with child weights ``m`` (means) and ``v`` (variances), the logit is
    ``<psi_k> + sum_c (xbar_c - 1/2) m_c - gbar_c (<psi_c> - pi_k m_c) m_c - gbar_c (m_c^2 + v_c) / 2``;
    the sums over children are matrix products, with ``gbar * <psi>`` kept current.
    """
    L = template.n_hidden_layers
    sizes = _model.layer_sizes(template)
    K = sizes[l]
    Mb, Vb = state["M"][l - 1][:, :K], state["V"][l - 1][:, :K]
    pi = layers_mean[l]
    g = gbar[l - 1]
    base = (layers_mean[l - 1] - 0.5) @ Mb - 0.5 * (g @ (Mb * Mb + Vb))      # (n, K)
    g_m2 = g @ (Mb * Mb)
    gpsi = g * psi[l - 1]
    lat_off = sizes[l + 1] if l < L else 0
    for k in range(K):
        mk = Mb[:, k]
        d = psi[l][:, k] + base[:, k] - gpsi @ mk + pi[:, k] * g_m2[:, k]
        if template.lateral is not None and k + 1 < K:
            ms = state["M"][l][k + 1:, lat_off + k]
            vs = state["V"][l][k + 1:, lat_off + k]
            q0 = psi[l][:, k + 1:] - pi[:, k:k + 1] * ms
            d = d + (pi[:, k + 1:] - 0.5) @ ms \
                - 0.5 * (gbar[l][:, k + 1:] * (2 * q0 * ms + ms * ms + vs)).sum(1)
        new = expit(d)
        delta = new - pi[:, k]
        pi[:, k] = new
        step = np.outer(delta, mk)
        psi[l - 1] += step
        gpsi += g * step
        if template.lateral is not None and k + 1 < K:
            psi[l][:, k + 1:] = q0 + new[:, None] * ms


def local_step(template, state, X, hidden_means, n_iter=1):
    """Fit ``q(H)`` and ``q(gamma)`` of the rows of ``X`` with the global factors fixed.

    ``hidden_means`` ``[pi_1..pi_L]`` is updated in place; returns ``gbar`` per layer.
    """
    L = template.n_hidden_layers
    layers_mean = [X] + hidden_means
    for _ in range(n_iter):
        psi, gbar = [], []
        for l in range(L + 1):
            p, p2 = expected_psi(_zbar(template, layers_mean, l), state["M"][l], state["V"][l])
            psi.append(p)
            gbar.append(pg_mean(np.sqrt(p2)))                    # Eq. 17
        for l in range(1, L + 1):
            _hidden_update(l, template, state, layers_mean, psi, gbar)
    return gbar


def _centred_moment(zbar, xbar):
    """``sum_n zbar_ni (xbar_nj - 1/2)``, shape ``(d, J)``: the only place the rows'
    values ``xbar`` enter a layer's coordinate update (and, with ``<psi>``, the bound)."""
    return zbar.T @ (xbar - 0.5)


def visible_statistic(template, X, hidden_means):
    """The visible layer's :func:`_centred_moment`, summable over blocks of rows.

    What a block of a dask array returns (with its rows' ``q(H)``) so that the
    client's :func:`global_step` and :func:`augmented_bound` never read the rows
    (non-autoregressive models: the visible layer's regressors are then
    ``[pi_1, 1]``, held by the client).
    """
    return _centred_moment(_zbar(template, [X] + list(hidden_means), 0), X)


def _local_block(X, shared, hidden_means):
    """The per-row part of an online-VB step on one block's rows (where the block lives).

    ``shared = (template, {"M", "V"}, n_iter)``; ``hidden_means`` are the rows'
    starting ``pi`` (drawn on the client as in memory). Returns the fitted
    ``q(H)`` of the rows and their :func:`visible_statistic`.
    """
    template, state, n_iter = shared
    X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float)
    hidden = [np.array(h, dtype=float) for h in hidden_means]
    local_step(template, state, X, hidden, n_iter=n_iter)
    return hidden, visible_statistic(template, X, hidden)


def _join_blocks(a, b):
    """Two consecutive blocks' :func:`_local_block` results as one (the ``combine`` of
    their tree): the rows' ``q(H)`` stacked in block order, the statistics added."""
    return [np.concatenate(pair) for pair in zip(a[0], b[0])], a[1] + b[1]


def _rows_in(rows):
    return rows.stop - rows.start if isinstance(rows, slice) else len(rows)


def local_step_blocks(template, state, X, hidden_means, n_iter):
    """:func:`local_step` on a dask array's minibatch ``X`` (a
    :class:`~skdgm._core.blocks.RowSelection`), each block's rows where the block lives.

    The per-row coordinate sweeps are independent across rows, so each block
    runs them on its share of the rows from its share of the starting means
    ``hidden_means``; only the rows' ``q(H)`` (``K`` numbers a row, not the
    ``D`` pixels) and the parameter-sized :func:`visible_statistic` come back,
    joined by a tree in block order (:func:`_join_blocks`; on the workers
    above :data:`~skdgm._core.blocks.TREE_ON_WORKERS_ABOVE` blocks, so one
    total reaches the client). The global factors are broadcast once per step.

    Returns
    -------
    hidden_means : list of ndarray
        The minibatch's fitted ``pi`` per hidden layer, rows in minibatch order.
    visible_zc : ndarray of shape (d_0, n_features)
        Summed over the blocks by the tree (pairs in block order).
    """
    shared = (template, {"M": state["M"], "V": state["V"]}, n_iter)

    def extras(parts):          # each block's share of the starting means, in row order
        out, start = [], 0
        for _, rows in parts:
            stop = start + _rows_in(rows)
            out.append([h[start:stop] for h in hidden_means])
            start = stop
        return out

    [(hidden, zc)] = X.map(_local_block, shared, extras, combine=_join_blocks)
    return hidden, zc


def rows_update(zbar, xbar, gbar, M, V, prior_prec, mask, *, scale=1.0, rho=1.0, zc=None):
    """Coordinate update of every ``q(w_ji)`` of one layer, coefficient by coefficient.

    For coefficient ``i`` of all rows at once: precision
    ``P_ji = scale * sum_n gbar_nj zbar_ni + prior_ji`` and
    ``P_ji M_ji = scale * sum_n zbar_ni [(xbar_nj - 1/2) - gbar_nj (<psi_nj> - zbar_ni M_ji)]``.
    ``scale = N / |B|`` and ``rho < 1`` give the online (natural-gradient) step, which
    blends the natural parameters ``(P, P M)``. ``M`` and ``V`` are updated in place.
    ``zc``: :func:`_centred_moment` summed over blocks of rows (then ``xbar`` is
    not read).
    """
    psi = zbar @ M.T                                                # (n, J)
    gpsi = gbar * psi
    if zc is None:
        zc = _centred_moment(zbar, xbar)                            # (d, J)
    zg = zbar.T @ gbar                                              # (d, J); E[z^2] = zbar
    z2g = (zbar * zbar).T @ gbar                                    # E[z_i] E[z_i] terms
    for i in range(M.shape[1]):
        m = mask[:, i]
        if not m.any():
            continue
        z = zbar[:, i]
        prec_hat = scale * zg[i] + prior_prec[:, i]
        lin_hat = scale * (zc[i] - z @ gpsi + z2g[i] * M[:, i])
        if rho < 1.0:
            prec_old = np.where(m, 1.0 / np.where(V[:, i] > 0, V[:, i], 1.0), 0.0)
            prec_new = (1 - rho) * prec_old + rho * prec_hat
            lin_new = (1 - rho) * prec_old * M[:, i] + rho * lin_hat
        else:
            prec_new, lin_new = prec_hat, lin_hat
        new_m = np.where(m, lin_new / prec_new, 0.0)
        gpsi += np.outer(z, new_m - M[:, i]) * gbar
        M[:, i] = new_m
        V[:, i] = np.where(m, 1.0 / prec_new, 0.0)


def _prior_prec_rows(prior, st, prior_params, mask, vb=True):
    prec = np.empty(mask.shape)
    prec[:, :-1] = prior_precision(prior, st, prior_params, (mask.shape[0], mask.shape[1] - 1),
                                   vb=vb)
    prec[:, -1] = 1.0 / prior_params["bias_var"]
    return prec


def global_step(template, state, X, hidden_means, gbar, prior, prior_params, *,
                scale=1.0, rho=1.0, frozen_layers=(), visible_zc=None):
    """Update every layer's ``q(w)`` (and then the prior's factors) given ``q(H)``, ``q(gamma)``.

    ``visible_zc``: :func:`visible_statistic` summed over the blocks of a dask
    array's minibatch, in place of reading ``X``.
    """
    L = template.n_hidden_layers
    layers_mean = [X] + hidden_means
    for l in range(L + 1):
        if l in frozen_layers:
            continue
        mask = state["masks"][l]
        prec = _prior_prec_rows(prior, state["prior"][l], prior_params, mask)
        rows_update(_zbar(template, layers_mean, l), layers_mean[l], gbar[l],
                    state["M"][l], state["V"][l], prec, mask, scale=scale, rho=rho,
                    zc=visible_zc if l == 0 else None)
        w2 = state["M"][l][:, :-1] ** 2 + state["V"][l][:, :-1]
        state["prior"][l] = vb_update_prior(prior, state["prior"][l], w2, mask[:, :-1],
                                            prior_params)


def vb_iteration(template, state, X, hidden_means, prior, prior_params, *, n_local=1,
                 frozen_layers=()):
    """One batch VB sweep: ``q(gamma)``, ``q(H)``, ``q(W)``, prior factors."""
    gbar = local_step(template, state, X, hidden_means, n_iter=n_local)
    # q(gamma) must see the new q(H) before the rows are updated (exact coordinate ascent)
    layers_mean = [X] + hidden_means
    gbar = [pg_mean(np.sqrt(expected_psi(_zbar(template, layers_mean, l), state["M"][l],
                                         state["V"][l])[1]))
            for l in range(template.n_hidden_layers + 1)]
    global_step(template, state, X, hidden_means, gbar, prior, prior_params,
                frozen_layers=frozen_layers)


def _bernoulli_entropy(p):
    p = np.clip(p, 1e-300, 1.0)
    q = np.clip(1.0 - p, 1e-300, 1.0)
    return -(p * np.log(p) + q * np.log(q))


def augmented_bound(template, state, X, hidden_means, prior, prior_params, *, visible_zc=None):
    """``L'`` with ``q(gamma)`` at its optimum (exact; never decreases in batch VB).

    ``visible_zc`` (a dask array's minibatch): the visible layer's
    ``sum (x - 1/2) <psi>`` is ``sum_ij zc_ij M_ji``, linear in the means, so the
    rows are not read (the same value, summed in another order).
    """
    L = template.n_hidden_layers
    layers_mean = [X] + hidden_means
    total = 0.0
    for l in range(L + 1):
        psi, psi2 = expected_psi(_zbar(template, layers_mean, l), state["M"][l], state["V"][l])
        if l == 0 and visible_zc is not None:
            total += np.sum(-_LOG2 - _log_cosh_half(np.sqrt(psi2)))
            total += np.sum(visible_zc * state["M"][0].T)
        else:
            total += np.sum(-_LOG2 + (layers_mean[l] - 0.5) * psi
                            - _log_cosh_half(np.sqrt(psi2)))
        if l >= 1:
            total += np.sum(_bernoulli_entropy(hidden_means[l - 1]))
    return total + _global_bound(state, prior, prior_params)


def _global_bound(state, prior, prior_params):
    total = 0.0
    for l, (M, V, mask) in enumerate(zip(state["M"], state["V"], state["masks"])):
        w2 = M[:, :-1] ** 2 + V[:, :-1]
        total += vb_prior_bound(prior, state["prior"][l], w2, mask[:, :-1], prior_params)
        bv = prior_params["bias_var"]
        total += np.sum(-0.5 * np.log(2 * np.pi * bv) - (M[:, -1] ** 2 + V[:, -1]) / (2 * bv))
        total += np.sum(np.where(mask, 0.5 * np.log(2 * np.pi * np.e * np.where(mask, V, 1.0)),
                                 0.0))
    return float(total)


def mc_bound(template, state, X, hidden_means, prior, prior_params, rng, n_samples=10):
    """The bound ``L`` of Eq. 15, the logistic terms by Monte Carlo over ``q(W) q(H)``."""
    L = template.n_hidden_layers
    acc = 0.0
    for _ in range(n_samples):
        p = template.copy()
        for l in range(L + 1):
            W = state["M"][l] + np.sqrt(state["V"][l]) * rng.standard_normal(state["M"][l].shape)
            _model.set_layer_rows(p, l, W)
        hidden = [bernoulli(pi, rng, dtype=float) for pi in hidden_means]
        acc += np.sum(_model.log_joint(p, [X] + hidden))
    total = acc / n_samples
    total += sum(np.sum(_bernoulli_entropy(pi)) for pi in hidden_means)
    return float(total + _global_bound(state, prior, prior_params))


def sample_params(template, state, rng):
    """One draw of the parameters from ``q(W)``."""
    p = template.copy()
    for l in range(template.n_hidden_layers + 1):
        W = state["M"][l] + np.sqrt(state["V"][l]) * rng.standard_normal(state["M"][l].shape)
        _model.set_layer_rows(p, l, np.where(state["masks"][l], W, 0.0))
    return p
