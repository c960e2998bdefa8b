"""Training a DBM: greedy pre-training and one stochastic-approximation update.

Salakhutdinov & Hinton (2009), Sec. 3.1 (the greedy stack of RBMs with doubled
weights) and Salakhutdinov (2010), Sec. 2.2 (the stochastic-approximation update of
Eq. 2: data-dependent statistics from mean-field, model statistics from persistent
chains). Module-level functions of arrays, settings and an explicit random
generator; the estimator validates, keeps the chains and commits.

Every function keeps the dtype of its inputs: a float32 model trains in float32
(the estimator's dtype follows its training input).
"""

import numbers
import time
from typing import NamedTuple

import numpy as np
from scipy.linalg import get_blas_funcs
from scipy.special import expit, logit

import scipy.sparse as sp

from .._core.averaging import HeavyBall, ParameterAverage
from .._core.base import check_finite_params, dense_rows, iter_minibatches
from .._core.blocks import RowBlocks, RowSelection, add_parts, column_means, gather_rows
from .._core.diagnostics import ess_bulk, rhat
from .._core.mcmc import bernoulli
from .._core.numerics import softplus
from .._core.schedules import InverseTime, make_schedule
from . import _model
from ._pretrain_blocks import (SAMPLE_UP_ROWS, cd1_minibatch, recon_error_sum, sample_up,
                              skip_sample_up)

__all__ = ["PassResult", "PositiveSums", "SAUpdate", "energy_diagnostics", "init_params",
           "initial_chain_layers", "moment_difference", "moment_product", "positive_block",
           "pretrain_recon_error", "pretrain_rbm", "pretrain_stack", "pretrain_verbose",
           "product_difference",
           "rate_schedule", "reconstruction_error", "record_arrays", "sa_pass", "sa_update",
           "split_sampler_stats", "time_left", "TrainingState", "negative_phase"]


def reconstruction_error(V, mu_h, W, b_v):
    """Cross-entropy of ``V`` under ``p(v | h = mu_h) = sigma(mu_h W^T + b_v)``, summed over rows.

    Nats; the verbose figure of training (one matrix product).
    """
    a = mu_h @ W.T + b_v
    return float(np.sum(softplus(a) - V * a, dtype=np.float64))


def pretrain_rbm(X, n_hidden, *, up, down, n_epochs, learning_rate, batch_size, rng):
    """CD-1 training of one RBM of the greedy stack, with scaled directions.

    ``up`` and ``down`` multiply the weights in ``p(h | v)`` and ``p(v | h)``:
    2 where the DBM layer will receive input from both sides but the RBM sees
    only one (Salakhutdinov & Hinton 2009, Sec. 3.1). The parameters take the
    dtype of ``X`` (a float32 ``X`` draws the same random numbers as a float64
    one). Returns ``W, b_v, b_h``.
    """
    n, d = X.shape
    dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    W = rng.normal(0.0, 0.01, (d, n_hidden)).astype(dtype)
    bv = logit(np.clip(column_means(X), 1e-3, 1 - 1e-3)).astype(dtype)
    bh = np.zeros(n_hidden, dtype=dtype)
    for _ in range(int(n_epochs)):
        for sl in iter_minibatches(n, batch_size, rng):
            # one minibatch at a time, densified (CSR) or summed where its blocks live
            gW, gbv, gbh, m = cd1_minibatch(X, sl, W, bv, bh, up, down, rng)
            W += learning_rate * gW / m
            bv += learning_rate * (gbv / m)      # a mean, as the rows' mean
            bh += learning_rate * (gbh / m)
    return W, bv, bh


def pretrain_stack(X, sizes, *, n_epochs, learning_rate, batch_size, rng, report=None):
    """The greedy stack of :func:`pretrain_rbm` (Salakhutdinov & Hinton 2009, Sec. 3.1).

    Returns ``(coefs, intercepts)``: one weight matrix per RBM and one bias per
    layer, a middle layer's the average of the two RBMs it belongs to.
    ``report(l, data, W, b_v, b_h, up, down)`` is called after each RBM (verbose).
    """
    L = len(sizes)
    data = X
    coefs, bottoms, tops = [], [], []
    for l in range(L):
        up = 2.0 if l < L - 1 else 1.0
        down = 2.0 if l > 0 else 1.0
        W, bv, bh = pretrain_rbm(data, sizes[l], up=up, down=down, n_epochs=n_epochs,
                                 learning_rate=learning_rate, batch_size=batch_size,
                                 rng=rng)
        coefs.append(W)
        bottoms.append(bv)
        tops.append(bh)
        if report is not None:
            report(l, data, W, bv, bh, up, down)
        if l < L - 1:
            data = sample_up(data, W, bh, up, rng)
        else:
            # no RBM reads the top layer's states (a million MNIST rows' were 1.6 GB),
            # but their uniforms are drawn, so that the stream, and every fit, stay
            # as they were
            skip_sample_up(data, W, rng)
    intercepts = [bottoms[0]] + [0.5 * (tops[l - 1] + bottoms[l]) for l in range(1, L)] \
        + [tops[L - 1]]
    return coefs, intercepts


class SAUpdate(NamedTuple):
    """One stochastic-approximation step, not committed."""

    coefs: list                 # candidate W_l
    intercepts: list            # candidate b_l
    grads: tuple                # (gW, gb), for samplers that adapt to them (FPCD)
    mean_field: tuple           # positive phase: rows unconverged, rows started at zeros
    negative: list              # the chains' states after their step
    bound: float                # summed unnormalised bound of the batch, or NaN
    recon: float                # summed reconstruction error, or NaN


def moment_difference(a, b, c, d, sa, sc):
    """``sa a^T b - sc c^T d`` (C-ordered), by two BLAS ``gemm`` calls into one buffer.

    The gradient of Eq. 2 for one weight matrix: the scaling and the difference are
    folded into ``gemm``'s ``alpha`` and ``beta``, so no intermediate of the
    weights' size is made or passed over (three passes and three allocations of
    an ``n_l x n_{l+1}`` array fewer per weight and update than ``a.T @ b / n -
    c.T @ d / m``). It equals that expression up to rounding. The result is
    computed as the Fortran-ordered transpose, whose ``.T`` is C-ordered like the
    weights, and each C-ordered input is handed to BLAS as its Fortran-ordered
    transpose, so nothing is copied.
    """
    dtype = np.result_type(a, b, c, d)
    a, b, c, d = (np.ascontiguousarray(x, dtype=dtype) for x in (a, b, c, d))
    gemm = get_blas_funcs("gemm", dtype=dtype)
    # (b^T a) as Fortran = (a^T b)^T; b.T and a.T are Fortran views of C arrays
    out = gemm(sa, b.T, a.T, trans_b=1)
    return _minus_moment(out, c, d, sc, gemm)


def moment_product(a, b):
    """``a^T b`` (C-ordered) by the ``gemm`` call of :func:`moment_difference`.

    A dask block's share of the positive phase: scaled by ``sa`` and handed to
    :func:`product_difference`, one block's product gives the same bits as
    :func:`moment_difference` on the same rows (``gemm`` scales its finished sums
    by ``alpha``).
    """
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return get_blas_funcs("gemm", dtype=np.result_type(a, b))(1.0, b.T, a.T, trans_b=1).T


def product_difference(product, c, d, sa, sc):
    """``sa product - sc c^T d`` for a summed :func:`moment_product` (C-ordered)."""
    dtype = np.result_type(product, c, d)
    c, d = (np.ascontiguousarray(x, dtype=dtype) for x in (c, d))
    out = np.multiply(product, dtype.type(sa), dtype=dtype).T   # Fortran, for gemm's c
    return _minus_moment(out, c, d, sc, get_blas_funcs("gemm", dtype=dtype))


def _minus_moment(out, c, d, sc, gemm):
    out = gemm(-sc, d.T, c.T, beta=1.0, c=out, trans_b=1, overwrite_c=1)
    return out.T


def sa_update(coefs, intercepts, V, chains, rng, *, learning_rate, n_mean_field,
              mean_field_tol, starts, monitor=True, n_gibbs_steps=1, optimizer=None):
    """One stochastic-approximation update (Salakhutdinov 2010, Sec. 2.2, Eq. 2).

    Parameters
    ----------
    coefs, intercepts : list of ndarray
        The current parameters (not modified).
    V : ndarray of shape (batch, n_features) or RowSelection
        The minibatch, or a dask array's minibatch: its blocks run
        :func:`positive_block` where they live and return sums.
    chains : object with ``step(coefs, intercepts, rng) -> layers``
        The persistent negative-phase sampler (``_tempering``); advanced here.
    rng : numpy.random.Generator
    learning_rate : float
    n_mean_field, mean_field_tol, starts
        The positive phase's mean-field (:func:`._model.mean_field`).
    monitor : bool, default=True
        Also compute the unnormalised bound of the batch under the new
        parameters and the reconstruction error (verbose figures; three more
        products). The estimator asks for them every few updates only.
    n_gibbs_steps : int, default=1
        Steps of the persistent sampler per update (the authors' code runs 5
        Gibbs sweeps): the negative statistics come from the last state.
    optimizer : HeavyBall or None
        Momentum (:class:`skdgm._core.averaging.HeavyBall`) applied to the
        gradient of Eq. 2; ``None`` is the plain step. Its velocity is committed
        by the caller once the step is accepted.

    Returns
    -------
    SAUpdate
    """
    shared = dict(coefs=coefs, intercepts=intercepts, n_mean_field=n_mean_field,
                  mean_field_tol=mean_field_tol, starts=starts, monitor=monitor)
    if isinstance(V, RowSelection):      # a dask array's minibatch, summed from its blocks
        # summed by a tree where the blocks are: one total reaches the client
        pos, = V.map(positive_block, shared, lambda parts: [None] * len(parts),
                     combine=add_parts)
        neg = negative_phase(chains, coefs, intercepts, rng, n_gibbs_steps)
        nb, nc = V.shape[0], neg[0].shape[0]
        gW = [product_difference(pos.pairs[l], neg[l], neg[l + 1], 1.0 / nb, 1.0 / nc)
              for l in range(len(coefs))]
        gb = [s / nb - x.mean(axis=0) for s, x in zip(pos.sums, neg)]
    else:
        # in memory the means themselves: the weight gradient in two gemm calls
        pos, mus = positive_block(V, shared, None, keep=True)
        neg = negative_phase(chains, coefs, intercepts, rng, n_gibbs_steps)
        nb, nc = V.shape[0], neg[0].shape[0]
        gW = [moment_difference(mus[l], mus[l + 1], neg[l], neg[l + 1], 1.0 / nb, 1.0 / nc)
              for l in range(len(coefs))]
        gb = [mu.mean(axis=0) - x.mean(axis=0) for mu, x in zip(mus, neg)]
    with np.errstate(over="ignore", invalid="ignore"):  # the caller checks finiteness
        step = (optimizer or HeavyBall(0.0)).step(list(coefs) + list(intercepts),
                                                   list(gW) + list(gb), learning_rate)
    new_W, new_b = step[:len(coefs)], step[len(coefs):]
    bound = float("nan")
    if monitor and isinstance(V, RowSelection):
        # the energy is bilinear in the means: the batch's sum is read off the
        # sums the blocks returned, under the new parameters
        bound = float(sum(np.sum(W * P, dtype=np.float64) for W, P in zip(new_W, pos.pairs))
                      + sum(b @ s for b, s in zip(new_b, pos.sums)) + pos.entropy)
    elif monitor:
        bound = float(np.sum(_model.lower_bound_unnormalised(mus, new_W, new_b)))
    return SAUpdate(new_W, new_b, (gW, gb), (pos.n_unconverged, pos.n_zeros_start), neg,
                    bound, pos.recon if monitor else float("nan"))


def negative_phase(chains, coefs, intercepts, rng, n_steps):
    """The persistent sampler advanced ``n_steps`` times; its last state."""
    for _ in range(int(n_steps)):
        neg = chains.step(coefs, intercepts, rng)
    return neg


class PositiveSums(NamedTuple):
    """The positive phase of a minibatch (or a block's rows of it), as sums over rows."""

    pairs: list                 # sum_n mu_l mu_{l+1}^T per weight matrix
    sums: list                  # sum_n mu_l per layer (the data itself for l = 0)
    entropy: float              # sum_n of the hidden layers' Bernoulli entropies (monitor)
    recon: float                # summed reconstruction error (monitor)
    n_rows: int
    n_unconverged: int          # rows whose mean-field stopped at n_mean_field sweeps
    n_zeros_start: int          # rows whose best start was "zeros"


def positive_block(V, shared, _seed, *, keep=False):
    """Mean-field positive phase (Salakhutdinov 2010, Sec. 2.1) of rows ``V``, as sums.

    The per-row part of :func:`sa_update`, run where a dask array's block lives
    (:mod:`skdgm._core.blocks`); deterministic, so it takes no seed. With
    ``keep`` (in memory) the means are returned too, for the bound.
    """
    V = V.toarray() if sp.issparse(V) else V
    coefs, intercepts, monitor = shared["coefs"], shared["intercepts"], shared["monitor"]
    mf = _model.mean_field(V, coefs, intercepts, shared["n_mean_field"],
                           shared["mean_field_tol"], starts=shared["starts"], return_info=True,
                           with_bound=False)
    mus = mf.mus
    recon = (reconstruction_error(V, mus[1], coefs[0], intercepts[0]) if monitor
             else float("nan"))
    entropy = (float(sum(np.sum(_model._entropy(mu)) for mu in mus[1:]))
               if monitor and not keep else 0.0)
    # in memory (keep) the caller forms the weight gradient from the means themselves
    pos = PositiveSums(None if keep else [moment_product(mus[l], mus[l + 1])
                                          for l in range(len(coefs))],
                       [mu.sum(axis=0) for mu in mus], entropy, recon, V.shape[0],
                       int(np.count_nonzero(~mf.converged)),
                       int(np.count_nonzero(np.asarray(shared["starts"])[mf.start] == "zeros")))
    return (pos, mus) if keep else pos


def init_params(X, sizes, rng):
    """Fresh parameters for ``fit``: small random weights, the data's base rate on ``v``.

    Weights ``N(0, 0.01^2)`` layer after layer, bottom first (one ``rng.normal`` call
    each); the visible bias is the logit of each pixel's mean (clipped to
    ``[1e-3, 1 - 1e-3]``), the hidden biases 0. Returns ``(coefs, intercepts,
    base_visible)`` in the dtype of ``X``, ``base_visible`` (float64) being also the
    AIS base model's visible bias.
    """
    all_sizes = [X.shape[1]] + list(sizes)
    dtype = X.dtype
    coefs = [rng.normal(0.0, 0.01, (a, b)).astype(dtype)
             for a, b in zip(all_sizes[:-1], all_sizes[1:])]
    base_visible = logit(np.clip(column_means(X), 1e-3, 1 - 1e-3))
    intercepts = [base_visible.astype(dtype)] + [np.zeros(s, dtype=dtype) for s in sizes]
    return coefs, intercepts, base_visible


def initial_chain_layers(X, n_chains, coefs, intercepts, rng):
    """Start of the persistent chains: random training rows, hidden layers drawn from mean-field.

    ``n_chains`` rows of ``X`` (with replacement) as the visible layer, each hidden
    layer a Bernoulli draw from the mean-field means of the current parameters.
    """
    rows = rng.integers(0, X.shape[0], n_chains)
    start = gather_rows(X, rows)     # a dask array's few rows are gathered
    mus = _model.mean_field_init(start, coefs, intercepts)
    return [start.copy()] + [bernoulli(m, rng, dtype=start.dtype) for m in mus[1:]]


def split_sampler_stats(stats):
    """Split a sampler's ``stats()`` into scalars for ``history_`` and per-pass arrays.

    The arrays (temperature occupancy, adaptive log-weights) go to
    ``sampler_history_``; the occupancy's flatness ``K * min_k occupancy_k`` (1 when
    flat) joins the scalars, first.
    """
    arrays = {k: stats.pop(k) for k in ("temperature_occupancy", "adaptive_log_weights")
              if k in stats}
    if "temperature_occupancy" in arrays:
        occ = arrays["temperature_occupancy"]
        stats = {"temperature_flatness": float(occ.size * occ.min()), **stats}
    return stats, arrays


def pretrain_recon_error(data, W, bv, bh, up, down):
    """Mean cross-entropy reconstruction of one greedy-stack RBM (its verbose figure).

    ``p(h | v) = sigma(up * v W + bh)`` and ``p(v | h) = sigma(h (down W)^T + bv)``,
    per row of ``data``.
    """
    if isinstance(data, RowBlocks):
        return recon_error_sum(data, W, bv, bh, up, down) / data.shape[0]
    # by chunks of rows: all rows' activations at once were a temporary the size
    # of the data times the width ratio (verbose only), and a RowView has no ``@``
    total = 0.0
    for a in range(0, data.shape[0], SAMPLE_UP_ROWS):
        v = dense_rows(data, slice(a, a + SAMPLE_UP_ROWS))
        total += reconstruction_error(v, expit(up * (v @ W) + bh), down * W, bv)
    return total / data.shape[0]


def energy_diagnostics(trace):
    """Split-R-hat and bulk ESS of the negative chains' energies (``history_``).

    ``trace`` lists one energy array of shape ``(n_chains,)`` per update; NaN for
    both while it holds fewer than 4 updates. The parameters move during the
    window, so the figures mix slow mixing with the drift of the target: both show
    as R-hat above 1.
    """
    if len(trace) < 4:
        return {"energy_split_rhat": float("nan"), "energy_ess": float("nan")}
    x = np.stack(trace, axis=1)
    return {"energy_split_rhat": rhat(x), "energy_ess": ess_bulk(x)}


def rate_schedule(spec, t0):
    """A learning-rate or Wang-Landau gain schedule from the estimator's parameter.

    A float ``a`` is ``a * t0 / (t0 + t)``, the decay like ``1 / t`` that stochastic
    approximation (Salakhutdinov 2010, Sec. 2.2, Eq. 2) and the Wang-Landau weights
    (Eq. 5-6) need to converge; anything else is a
    :func:`skdgm._core.schedules.make_schedule` spec or callable.
    """
    if isinstance(spec, numbers.Real) and not isinstance(spec, bool):
        return InverseTime(float(spec) * t0, t0)
    return make_schedule(spec)


def pretrain_verbose(X, sizes, *, n_epochs, learning_rate, batch_size, rng, name=None):
    """:func:`pretrain_stack`, printing one line per RBM when ``name`` is given.

    The line (prefixed ``[name]``) gives the RBM's reconstruction cross-entropy
    (:func:`pretrain_recon_error`), the time so far and an estimate of the time
    left. The printing draws no random numbers: the stack is the same either way.

    Returns
    -------
    coefs, intercepts : list of ndarray
        As :func:`pretrain_stack`.
    """
    L = len(sizes)
    t0 = time.perf_counter()

    def report(l, data, W, bv, bh, up, down):
        if name is None:
            return
        err = pretrain_recon_error(data, W, bv, bh, up, down)
        elapsed = time.perf_counter() - t0
        print(f"[{name}] Pre-training RBM {l + 1}/{L} "
              f"({W.shape[0]}-{W.shape[1]}, {n_epochs} CD-1 passes): "
              f"reconstruction_error = {err:.4f}, time = {elapsed:.2f}s, "
              f"time left ~ {elapsed / (l + 1) * (L - l - 1):.1f}s", flush=True)

    return pretrain_stack(X, sizes, n_epochs=n_epochs, learning_rate=learning_rate,
                          batch_size=batch_size, rng=rng, report=report)


class PassResult(NamedTuple):
    """One pass of stochastic approximation, every update already checked."""

    coefs: list                 # W_l after the pass
    intercepts: list            # b_l after the pass
    n_updates: int              # the update counter after the pass
    metrics: dict               # the pass's scalar figures, in history_'s order
    arrays: dict                # the tempering samplers' per-pass arrays
    optimizer: object = None    # the pass's HeavyBall (a copy of the one passed in)
    average: object = None      # the pass's ParameterAverage (likewise), or None


def sa_pass(X, coefs, intercepts, chains, rng, *, lr_schedule, n_updates, batch_size,
            n_mean_field, mean_field_tol, starts, energy_trace=None, monitor_every=10,
            trace_window=50, name="DBMCAST", divergence_bound=None, n_gibbs_steps=1,
            optimizer=None, average=None):
    """One pass of :func:`sa_update` over shuffled minibatches (Salakhutdinov 2010, Alg. 1).

    Each update's learning rate is ``lr_schedule(t)`` at the running update count
    ``t``; its candidate parameters are checked (finite, below
    ``divergence_bound``, moved by less than ``DIVERGENCE_GROWTH`` times their
    previous magnitude) before the next update starts from them, and the chains
    then see the gradient (``chains.after_update``, FPCD's fast weights).

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        Binary rows; minibatches are densified one at a time.
    coefs, intercepts : list of ndarray
        The parameters at the start of the pass (not modified).
    chains : object
        The persistent negative-phase sampler of :mod:`._tempering` (advanced here).
    rng : numpy.random.Generator
        Shuffles the rows, then drives every update, in that order.
    lr_schedule : callable
        Update count -> learning rate (Eq. 2's decreasing step).
    n_updates : int
        Updates made before this pass.
    batch_size, n_mean_field, mean_field_tol, starts
        As :func:`sa_update`.
    energy_trace : list or None
        The negative chains' energy per update (appended to, the last
        ``trace_window`` kept), behind the split-R-hat and ESS figures; ``None``
        for a sampler whose negative set changes size (adaptive ST).
    monitor_every : int, default=10
        The verbose figures are computed on every ``monitor_every``-th update, the
        first included (they cost about 15 % of an update).
    trace_window : int, default=50
    name : str
        Names the estimator in the divergence error.
    divergence_bound : float, optional
        Largest parameter magnitude allowed.
    n_gibbs_steps, optimizer
        As :func:`sa_update`. Not modified: the pass steps a copy, whose velocity
        is committed with each accepted update, and returns it.
    average : ParameterAverage or None
        Not modified: a copy is updated with every accepted iterate (``coefs +
        intercepts``) and returned. It reads the iterates only, so the chains'
        trajectory does not depend on it.

    Returns
    -------
    PassResult
        With the pass's optimizer and average, for the caller to keep
        (:meth:`TrainingState.advance`).

    Raises
    ------
    skdgm.exceptions.DivergenceError
        When an update's parameters are not finite or exceed the bound; the
        ``optimizer`` and ``average`` passed in are then as they were (the
        chains have moved: the estimator's call restores them).
    """
    # A divergence half-way through the pass must not leave an average and a
    # velocity that took updates the iterate never kept: the pass works on copies.
    optimizer = None if optimizer is None else optimizer.copy()
    average = None if average is None else average.copy()
    bound, recon, n_rows = 0.0, 0.0, 0
    lr = float(lr_schedule(n_updates))
    unconv = from_zeros = n_mf = 0
    for i, sl in enumerate(iter_minibatches(X.shape[0], batch_size, rng)):
        V = dense_rows(X, sl)
        monitor = i % monitor_every == 0
        res = sa_update(coefs, intercepts, V, chains, rng,
                        learning_rate=float(lr_schedule(n_updates)),
                        n_mean_field=n_mean_field, mean_field_tol=mean_field_tol,
                        starts=starts, monitor=monitor, n_gibbs_steps=n_gibbs_steps,
                        optimizer=optimizer)
        unconv += res.mean_field[0]
        from_zeros += res.mean_field[1]
        n_mf += V.shape[0]
        if energy_trace is not None:
            # plain Gibbs chains hand over the energy their sweep computed for free
            e = getattr(chains, "sweep_energy", None)
            energy_trace.append(_model.energy(res.negative, coefs, intercepts)
                                if e is None else e)
            del energy_trace[:-trace_window]
        lr = float(lr_schedule(n_updates))
        check_finite_params({"coefs_": res.coefs, "intercepts_": res.intercepts},
                            f"{name} update {n_updates}", bound=divergence_bound,
                            previous={"coefs_": coefs, "intercepts_": intercepts})
        coefs, intercepts = res.coefs, res.intercepts
        if optimizer is not None:
            optimizer.commit()
        if average is not None:
            average.update(coefs + intercepts)
        chains.after_update(res.grads, lr)
        n_updates += 1
        if monitor:
            bound, recon, n_rows = bound + res.bound, recon + res.recon, n_rows + V.shape[0]
    stats = chains.stats()
    if energy_trace is not None:
        stats.update(energy_diagnostics(energy_trace))
    stats, arrays = split_sampler_stats(stats)
    metrics = dict(reconstruction_error=recon / n_rows, unnormalised_bound=bound / n_rows,
                   learning_rate=lr, mean_field_unconverged=float(unconv / n_mf),
                   mean_field_zeros_start=float(from_zeros / n_mf), **stats)
    return PassResult(coefs, intercepts, n_updates, metrics, arrays, optimizer, average)


class TrainingState:
    """The raw stochastic-approximation iterate, its momentum and its average.

    The raw iterate (``coefs``, ``intercepts``) drives the persistent chains and
    the next update; the fitted parameters (:meth:`fitted`) are the exponential
    average of the iterates when ``average > 0`` (:mod:`skdgm._core.averaging`),
    the raw iterate otherwise. :meth:`configure` reads the hyper-parameters
    before every pass, so ``set_params`` between :meth:`partial_fit` calls holds:
    switching the average on starts it from the current iterate, switching it off
    drops it; a changed decay applies from the next update.
    """

    def __init__(self, coefs, intercepts):
        self.coefs, self.intercepts = list(coefs), list(intercepts)
        self.optimizer = HeavyBall(0.0)
        self.average = None

    @classmethod
    def of(cls, est):
        """``est._iterate`` (made from ``coefs_`` after a reset), configured from ``est``."""
        it = est.__dict__.get("_iterate") or cls(est.coefs_, est.intercepts_)
        est._iterate = it.configure(est.average, est.momentum)
        return it

    def configure(self, average, momentum):
        self.optimizer.momentum = float(momentum)
        if not average:
            self.average = None
            return self
        if self.average is None:
            self.average = ParameterAverage(average)
        self.average.decay = float(average)
        return self

    def advance(self, res):
        """Keep a pass's raw iterate, momentum and average; return the fitted ``(coefs, intercepts)``.

        Called only after the whole pass succeeded (:func:`sa_pass` raises
        otherwise, having touched none of the three): the average and the
        velocity are always those of the iterate kept.
        """
        self.coefs, self.intercepts = list(res.coefs), list(res.intercepts)
        if res.optimizer is not None:
            self.optimizer = res.optimizer
        self.average = res.average
        return self.fitted()

    def fitted(self):
        mean = None if self.average is None else self.average.value()
        if mean is None:
            return list(self.coefs), list(self.intercepts)
        return mean[:len(self.coefs)], mean[len(self.coefs):]


def record_arrays(history, arrays, cap):
    """Append a pass's per-pass arrays to ``sampler_history_``, keeping the latest ``cap``."""
    for k, v in arrays.items():
        history.setdefault(k, []).append(v)
        del history[k][:-cap]


def time_left(t_start, done, total):
    """Seconds left after ``done`` of ``total`` passes begun at ``t_start`` (0 without a total).

    Extrapolated from the mean time per pass so far (``time.perf_counter`` clock).
    """
    if not total or done >= total:
        return 0.0
    elapsed = time.perf_counter() - t_start
    return float(elapsed / done * (total - done))
