"""``log p(x)`` of an SBN: the states Gibbs chains visit, summed exactly, plus importance
sampling of the rest (``score_samples(method="stratified")``, issue 25).

A trained SBN's posterior ``p(h | x)`` is sharp and many-moded (large weights: one
flip moves ``log p(x | h)`` by many nats), so ``p(x)`` sits on a modest number of
configurations, each a local mode that a single-site sampler or a few annealing
temperatures rarely leave. Split the sum over ``h`` in two strata:

* ``U``, the distinct configurations that ``n_chains`` collapsed Gibbs chains per
  row (started from the prior, ``n_warm`` tempered sweeps then ``n_sweeps`` at
  ``beta = 1``) visit: their ``p(x, h)`` is summed exactly;
* the rest, estimated by importance sampling from a mixture ``q`` of the factorised
  Bernoulli laws the chains' sweeps computed (each unit's probability at its
  update, one component per chain and sweep, kept inside ``[floor, 1 - floor]``);
  a draw inside ``U`` weighs 0.

``p_hat = sum_{h in U} p(x, h) + mean_s p(x, h_s) 1[h_s not in U] / q(h_s)``.
``U`` and ``q`` come from their own stream, independent of the draws ``h_s``, so
``p_hat`` is unbiased for ``p(x)`` whatever the chains found (``q`` reaches every
state), and ``log p_hat`` is a stochastic lower bound; the first term alone is a
hard lower bound. The reported standard error is the delta-method error of the
second term, ``sd(w) / (sqrt(S) p_hat)``, combined with a leave-one-chain-out
jackknife over the chains (:func:`log_marginal_stratified`): it measures the
noise, not the mass of modes no chain and no draw reached.
"""

import numpy as np

from .._core.numerics import softplus
from .._core.random import as_generator, seed_for
from . import _model
from ._dsghmc import gibbs_sweep_fast
from ._dsghmc_fast import softplus_row_sums

__all__ = ["STRATIFIED", "STRATIFIED_MAX_UNITS", "STRATIFIED_UNIT_SWEEPS", "log_marginal_stratified",
           "stratified_chains"]

#: Defaults of ``method="stratified"`` (measured in ``benchmarks/bench_scoring_cost.py``):
#: per chain, ``n_warm`` sweeps at inverse temperatures rising linearly from
#: ``beta_start`` (a flattened likelihood lets a chain leave the first mode it meets)
#: then ``n_sweeps`` at ``beta = 1``; importance draws per row; the proposal's
#: probability floor; rows per chunk. The chains per row follow the model's width
#: (:func:`stratified_chains`). A long tempered warm-up and few chains beat many short
#: chains at the same cost: on the 784-40 default models the error is that of the
#: modes a chain misses, and tempering finds them (``bench_scoring_budget.py``).
STRATIFIED = {"n_warm": 14, "beta_start": 0.4, "n_sweeps": 2, "n_samples": 64, "floor": 1e-3,
              "chunk_rows": 64}
#: The default route's widest model: above it ``score_samples`` uses ``"warm_ais"``.
#: A narrow net trained by Gibbs (the default model: 40 units at 10,000 MNIST rows)
#: has a sharp posterior whose mass a few hundred visited states hold; a wide one
#: trained by VB (200 units) spreads its mass over far more states than chains
#: visit, and there AIS from a fitted proposal was the more precise at the same cost
#: (``benchmarks/bench_scoring_cost.py``; widths between 40 and 200 not measured).
STRATIFIED_MAX_UNITS = 64
#: Hidden-unit sweeps per row that :func:`stratified_chains` spreads over the chains.
STRATIFIED_UNIT_SWEEPS = 10240
# purpose keys of the chains' and the draws' streams
_CHAINS_PURPOSE, _DRAWS_PURPOSE = 0x5E71, 0x5E72


def stratified_chains(params):
    """Chains per row of the default ``"stratified"``: 4 to 32, fewer for wider nets.

    A sweep costs in proportion to the hidden units, so a fixed budget of
    :data:`STRATIFIED_UNIT_SWEEPS` unit-sweeps per row keeps the cost per row near
    constant: 32 chains up to 20 units, 16 at 40, 4 from 142 units. More chains rather than
    longer ones: each starts from its own prior draw and finds its own modes, and
    the jackknife over chains needs several.
    """
    units = sum(map(len, params.biases[1:]))
    per_chain = units * (STRATIFIED["n_warm"] + STRATIFIED["n_sweeps"])
    return int(np.clip(round(STRATIFIED_UNIT_SWEEPS / per_chain), 4, 32))


def _pack(states, rows):
    """One byte-string key per ``(row, state)``: the row (big-endian) then the packed bits."""
    bits = np.packbits(states.astype(np.uint8), axis=-1)
    head = rows.astype(">u4").view(np.uint8).reshape(len(rows), 4)
    return np.ascontiguousarray(np.concatenate([head, bits], axis=1))


def _log_joint_rows(params, XW, Xc, states, rows):
    """``log p(x_r, h)`` (Eq. 7) for states ``(N, K_total)`` of rows ``rows`` (indices into ``XW``).

    ``sum_d x_d a_d`` is ``(x W)_r . h_1 + x_r . c`` (``XW``, ``Xc`` precomputed per
    row): no ``(N, D)`` copy of the data, only the softplus of ``a``.
    """
    sizes = [len(b) for b in params.biases[1:]]
    layers = np.split(states, np.cumsum(sizes)[:-1], axis=-1)
    h1 = layers[0]
    A = h1 @ params.weights[0].T + params.biases[0]
    norm = np.empty(len(A))
    softplus_row_sums(np.ascontiguousarray(A), norm)   # softplus(A).sum(1), fused (C twin)
    visible = np.einsum("nk,nk->n", XW[rows], h1) + Xc[rows] - norm
    return visible + _model.log_prior_hidden(params, [None] + layers)


def _segment_logsumexp(values, starts, n_rows, rows_of_segments):
    """``log sum exp`` of ``values`` over the segments beginning at ``starts``, per row."""
    out = np.full(n_rows, -np.inf)
    if len(values):
        top = np.maximum.reduceat(values, starts)
        sums = np.add.reduceat(np.exp(values - np.repeat(top, np.diff(np.append(starts, len(values))))),
                               starts)
        out[rows_of_segments] = top + np.log(sums)
    return out


def _chunk(params, X, chains_rng, draws_rng, *, n_chains, n_warm, beta_start, n_sweeps,
           n_samples, floor):
    n, K = len(X), sum(map(len, params.biases[1:]))
    layers = [X] + _model.sample_hidden_prior(params, (n_chains, n), chains_rng)
    visited, comps = [], []
    betas = np.r_[np.linspace(beta_start, 1.0, n_warm + 1)[:-1], np.ones(n_sweeps)]
    for beta in betas:
        layers, probs = gibbs_sweep_fast(params, layers, chains_rng, beta, return_probs=True)
        visited.append(np.concatenate(layers[1:], axis=-1))       # (C, n, K)
        comps.append(np.concatenate(probs, axis=-1))
    XW, Xc = X @ params.weights[0], X @ params.biases[0]

    # stratum U: distinct visited states per row, summed exactly
    states = np.concatenate(visited).reshape(-1, K)
    rows = np.tile(np.arange(n), len(betas) * n_chains)
    chain = np.tile(np.repeat(np.arange(n_chains), n), len(betas))
    keys, first, inv = np.unique(_pack(states, rows), axis=0, return_index=True,
                                 return_inverse=True)
    inv = inv.ravel()
    u_rows = rows[first]                                          # sorted by row
    lj = _log_joint_rows(params, XW, Xc, states[first], u_rows)
    starts = np.flatnonzero(np.r_[True, u_rows[1:] != u_rows[:-1]])
    log_u = _segment_logsumexp(lj, starts, n, u_rows[starts])
    # which chains found each state: the leave-one-chain-out sums of the jackknife
    lo = np.full(len(keys), n_chains)
    hi = np.full(len(keys), -1)
    np.minimum.at(lo, inv, chain)
    np.maximum.at(hi, inv, chain)
    sole = np.where(lo == hi, lo, -1)
    log_u_without = np.array([
        _segment_logsumexp(np.where(sole == c, -np.inf, lj), starts, n, u_rows[starts])
        for c in range(n_chains)])                                # (C, n)

    # the rest: draws from the mixture q, weight 0 inside U
    mu = np.clip(np.concatenate(comps), floor, 1.0 - floor)       # (M, n, K)
    M = len(mu)
    pick = draws_rng.integers(M, size=(n_samples, n))
    H = (draws_rng.random((n_samples, n, K)) < mu[pick, np.arange(n)]).astype(float)
    log1, log0 = np.log(mu), np.log1p(-mu)
    # log q(h) = log mean_m prod_k mu_mk^h_k (1 - mu_mk)^(1 - h_k), all components at once
    comp = np.matmul(H.transpose(1, 0, 2), (log1 - log0).transpose(1, 2, 0)) \
        + log0.sum(axis=-1).T[:, None, :]                         # (n, S, M)
    top = comp.max(axis=-1, keepdims=True)
    log_q = (top[..., 0] + np.log(np.exp(comp - top).sum(axis=-1)) - np.log(M)).T  # (S, n)
    d_rows = np.tile(np.arange(n), n_samples)
    flat = H.reshape(-1, K)
    log_w = _log_joint_rows(params, XW, Xc, flat, d_rows).reshape(n_samples, n) - log_q
    all_keys = np.concatenate([keys, _pack(flat, d_rows)])
    _, inverse = np.unique(all_keys, axis=0, return_inverse=True)
    inside = np.isin(inverse[len(keys):], inverse[:len(keys)]).reshape(n_samples, n)
    log_w[inside] = -np.inf

    scale = np.maximum(log_u, log_w.max(axis=0))
    w = np.exp(log_w - scale)                                     # (S, n), 0 inside U
    rest = w.mean(axis=0)
    total = np.exp(log_u - scale) + rest
    se_draws = w.std(axis=0, ddof=1) / (np.sqrt(n_samples) * total)
    with np.errstate(divide="ignore"):
        loo = np.log(np.exp(log_u_without - scale) + rest)        # (C, n)
    se_chains = np.sqrt((n_chains - 1) * np.mean((loo - loo.mean(axis=0)) ** 2, axis=0))
    return scale + np.log(total), np.hypot(se_draws, se_chains)


def log_marginal_stratified(params, X, seed, *, n_chains, n_warm, beta_start, n_sweeps,
                            n_samples, floor=1e-3, chunk_rows=64):
    """``log p(x)`` per row: visited states summed exactly plus importance sampling of the rest.

    See the module docstring. The standard error combines the delta-method error
    of the importance draws, ``sd(w) / (sqrt(S) p_hat)``, and a leave-one-chain-out
    jackknife of ``log p_hat`` over the chains that built ``U`` (each chain's
    states are independent of the others'): when one chain alone found the states
    that carry the mass, the estimate hinges on it and the error says so. The
    jackknife keeps the draws' term fixed.

    Parameters
    ----------
    params : SBNParams
        A model without lateral weights.
    X : ndarray of shape (n, D)
    seed : numpy.random.SeedSequence
        Chunk ``j`` of ``chunk_rows`` rows draws its chains and its importance draws
        from two children of ``seed`` keyed by ``j``: a row's estimate depends on the
        rows of its chunk, never on ``n_jobs``.
    n_chains : int
        Collapsed Gibbs chains per row (Du et al. 2018, Eq. 15: the C kernel of
        :func:`._dsghmc.gibbs_sweep_fast`), each from its own prior draw (at least 2).
    n_warm, beta_start : int, float
        Sweeps at inverse temperatures ``linspace(beta_start, 1, n_warm + 1)[:-1]``
        (the visible likelihood tempered) before the ``n_sweeps`` at ``beta = 1``;
        every state any sweep leaves joins ``U`` (the sum is exact for any set).
    n_sweeps : int
    n_samples : int
        Importance draws per row from the chains' mixture ``q`` (at least 2).
    floor : float, default=1e-3
        ``q``'s probabilities are kept inside ``[floor, 1 - floor]`` (full support).
    chunk_rows : int, default=64
        Rows processed together (bounds the memory: ``n_samples * chunk_rows``
        draws and their densities under the ``n_chains * (n_warm + n_sweeps)``
        components).

    Returns
    -------
    log_px, std_err : ndarray of shape (n,)
    """
    X = np.asarray(X, dtype=float)
    n = len(X)
    log_px, std_err = np.empty(n), np.empty(n)
    settings = dict(n_chains=n_chains, n_warm=n_warm, beta_start=beta_start,
                    n_sweeps=n_sweeps, n_samples=n_samples, floor=floor)
    for j, start in enumerate(range(0, n, chunk_rows)):
        sl = slice(start, min(start + chunk_rows, n))
        rngs = [as_generator(seed_for(seed_for(seed, purpose), j))
                for purpose in (_CHAINS_PURPOSE, _DRAWS_PURPOSE)]
        log_px[sl], std_err[sl] = _chunk(params, X[sl], *rngs, **settings)
    return log_px, std_err
