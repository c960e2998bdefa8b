"""Training the GRBM: one modified-CD update and the choices around it.

Liao et al. (2022), Alg. 3 (joint statistics, Eqs. 13-17) and Alg. 4 (marginal
statistics, Eqs. 18-19, 33-36): positive statistics from the data, negative
statistics from chains started in ``N(0, I)`` noise, a clipped ascent step on the
mean log-likelihood. Module-level functions of arrays, settings and an explicit
random generator; the estimator validates, orchestrates and commits.
"""

import contextlib
import time
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from threadpoolctl import ThreadpoolController

from .._core.averaging import ParameterAverage
from .._core.blocks import RowSelection, add_parts, block_seeds
from .._core.random import as_generator
from .._core.ais import annealed_importance_sampling, beta_schedule, log_mean_exp
from .._core.mcmc import normalised_weights
from .._core.optim import Adam, sq_diff_sum_of
from .._core.schedules import Cosine
from .._core.stopping import auto_cap
from ._model import (GRBMParams, StatsAccumulator, ais_callables,
                     exact_log_partition, free_energy, hidden_activation, sigmoid)
from ._samplers import bernoulli, run_annealed_chain, run_chain, standard_normal

__all__ = [
    "ISSUE12_SETTINGS",
    "RawIterate",
    "TrainSettings",
    "UpdateResult",
    "anneal",
    "auto_passes",
    "auto_updates",
    "blas_limit",
    "draw_samples",
    "init_params",
    "learning_rate_at",
    "log_partition_estimate",
    "log_pass",
    "modified_cd_update",
    "positive_block",
    "positive_phase",
    "pass_line",
    "pass_metrics",
    "recon_error",
    "resolve_negative_phase",
]

# Below this many multiply-adds per matrix product, BLAS threads cost more than
# they save (measured on the shared 2-core box: a 100x64x128 product took 2.4 ms
# with OpenBLAS threads and 0.17 ms with one), so small models run single-threaded.
_SMALL_GEMM = 1 << 22

_CONTROLLER = []


def blas_limit(n_rows, n_features, n_components):
    """One BLAS thread for products of ``n_rows x n_features x n_components`` below ``_SMALL_GEMM``.

    A context manager; the caller enters it once per ``fit`` / ``partial_fit``
    call, not per update.
    """
    if n_rows * n_features * n_components < _SMALL_GEMM:
        # One controller for the process: building one (as threadpool_limits does
        # on every call) scans the loaded libraries, ~5 ms, as much as a small
        # partial_fit call's own work (benchmarks/bench_streaming_cost.py).
        if not _CONTROLLER:
            _CONTROLLER.append(ThreadpoolController())
        return _CONTROLLER[0].limit(limits=1, user_api="blas")
    return contextlib.nullcontext()


# n_iter="auto": the number of updates (minibatches) comes from a budget of work,
# _AUTO_WORK multiply-adds of the sampler, batch_size * cd_steps * n_components *
# n_features per update, kept within [_MIN_UPDATES, _MAX_UPDATES]; then enough
# passes for it, at least _MIN_PASSES. Measured (user guide, "Defaults"): on
# digits (64 features, 256 hidden) the test likelihood still improved from 720 to
# 2,000 updates; the 2-D mixtures need ~3,000 updates to leave the single-Gaussian
# saddle and ~6,000 to get within 0.5 nats of the truth, which costs little there.
_AUTO_WORK = 1e11
_MIN_UPDATES = 1000
_MAX_UPDATES = 6000
_MIN_PASSES = 2


def auto_updates(n_samples, n_features, batch_size, cd_steps, n_components):
    """Minibatch updates of ``n_iter="auto"``'s fixed rule (see ``_AUTO_WORK``)."""
    batch = max(1, min(batch_size, n_samples))
    work = float(batch) * cd_steps * n_components * n_features
    return int(np.clip(_AUTO_WORK / work, _MIN_UPDATES, _MAX_UPDATES))


def auto_passes(n_samples, n_features, batch_size, cd_steps, n_components, *, factor=1,
                floor_passes=0, floor_factor=0):
    """Passes of ``n_iter="auto"``: the fixed rule, or with ``factor > 1`` (early
    stopping on) its cap, which counts updates on large data and has a floor there
    (:func:`skdgm._core.stopping.auto_cap`)."""
    updates = auto_updates(n_samples, n_features, batch_size, cd_steps, n_components)
    return auto_cap(n_samples, batch_size, updates, min_passes=_MIN_PASSES, factor=factor,
                    floor_passes=floor_passes, floor_factor=floor_factor)


#: The estimator's defaults when the sampler-correctness issue (12) was fixed.
#: Tests and benchmarks that study the samplers pin their models to these, so a
#: later change of defaults does not change what they measure.
ISSUE12_SETTINGS = dict(
    sampler="gibbs_langevin", metropolis_adjust=False, adjust_after=None, cd_steps=100,
    burn_in=0, negative_phase="noise", langevin_steps=10, langevin_inner="closed_form",
    langevin_step_size=0.5, objective="joint", optimizer="sgd", learning_rate=0.01,
    clip_grad_norm=10.0, batch_size=100, n_iter=10, init_std=0.01, min_variance=1e-6,
    # float64 data trained float64 models then (issue 26 made float32 the default)
    dtype="float64")


class TrainSettings(NamedTuple):
    """The hyper-parameters one update reads (the estimator's, resolved)."""

    sampler: str
    cd_steps: int
    burn_in: int
    objective: str
    negative_phase: str          # "noise" or "annealed" (never "auto" here)
    langevin_step_size: float
    langevin_steps: int
    langevin_inner: str
    metropolis_adjust: bool
    adjust_after: int            # resolved for cd_steps
    optimizer: str
    clip_grad_norm: float
    min_variance: float

    @classmethod
    def of(cls, est, adjust_after):
        """An estimator's settings (``negative_phase_`` resolved), ``adjust_after`` given."""
        return cls(est.sampler, est.cd_steps, est.burn_in, est.objective,
                   est.negative_phase_, est.langevin_step_size, est.langevin_steps,
                   est.langevin_inner, bool(est.metropolis_adjust), adjust_after,
                   est.optimizer, est.clip_grad_norm, est.min_variance)


class UpdateResult(NamedTuple):
    """Candidate parameters of one update and its figures (nothing committed yet)."""

    params: GRBMParams
    variance: np.ndarray         # exp(log_var) of the candidate, in its dtype
    precision: np.ndarray        # 1 / variance (overflows before log_var does)
    adam: object                 # the optimiser after the step (None for SGD)
    grad_norm: float
    p_pos: np.ndarray            # p(h | v) of the minibatch, for the verbose figures
    n_accepted: int
    n_proposed: int
    ess: float
    loglik: float


def anneal(params, v0, n_steps, rng, settings, metropolis_adjust):
    """Chains annealed from the noise ``v0`` to the model over ``n_steps`` steps."""
    return run_annealed_chain(
        params, v0, rng, betas=beta_schedule(n_steps + 1), sampler=settings.sampler,
        step_size=settings.langevin_step_size, langevin_steps=settings.langevin_steps,
        inner=settings.langevin_inner, metropolis_adjust=metropolis_adjust)


def positive_block(V, shared, seed):
    """The positive phase on one block's rows of a minibatch (Alg. 3 l. 3-5, Alg. 4 l. 3-4).

    The per-row part of an update, run where a dask array's block lives
    (:mod:`skdgm._core.blocks`): the unnormalised sums of Eqs. (14)-(17) (or
    33-36 with ``p(h | v)``), the free energies' sum when ``shared["annealed"]``
    (for the annealed phase's progress figure) and, with ``shared["recon"]``, the
    squared error of ``mu + W^T p(h | v)``. Sampled hidden units come from
    ``seed``, this block's own stream. O(parameters) bytes travel back.
    """
    params = shared["params"]
    V = V.toarray() if sp.issparse(V) else V
    a = hidden_activation(V, params)
    p = sigmoid(a)
    h = bernoulli(p, as_generator(seed)) if shared["objective"] == "joint" else p
    acc = StatsAccumulator(params).add(V, h)
    fe = float(np.sum(free_energy(V, params, a))) if shared["annealed"] else 0.0
    sq = (float(np.sum((V - params.mu - p @ params.W) ** 2, dtype=np.float64))
          if shared["recon"] else 0.0)
    return (acc.W, acc.b, acc.mu, acc.log_var), acc.n, fe, sq


def _block_pass(params, V, shared, extras):
    # summed by a tree where the blocks are: one total reaches the client
    (sums, n, fe, sq), = V.map(positive_block, dict(shared, params=params), extras,
                               combine=add_parts)
    acc = StatsAccumulator(params)
    acc.W, acc.b, acc.mu, acc.log_var = sums
    acc.n = float(n)
    return acc, fe, sq


def positive_phase(params, V, rng, objective, annealed):
    """Positive statistics of the minibatch ``V`` (Alg. 3 l. 3-5, Alg. 4 l. 3-4).

    ``V`` is an array, or the :class:`~skdgm._core.blocks.RowSelection` of a dask
    array's minibatch, whose statistics are summed from its blocks'
    :func:`positive_block` (the sampled hidden units then come from one stream
    per block, seeded from one draw of ``rng``: the same answer for any number of
    workers, though not the in-memory draws).

    Returns
    -------
    pos : GRBMParams-shaped tuple
        The averaged statistics.
    p_pos : ndarray or None
        ``p(h | v)`` of the rows (``None`` for a dask minibatch).
    mean_free_energy : callable
        ``() -> float``, the rows' mean free energy (the annealed figure's).
    """
    if isinstance(V, RowSelection):
        extras = block_seeds(rng) if objective == "joint" else (lambda parts: [None] * len(parts))
        acc, fe, _ = _block_pass(params, V, dict(objective=objective, annealed=annealed,
                                                 recon=False), extras)
        return acc.mean(), None, lambda: fe / V.shape[0]
    a_pos = hidden_activation(V, params)
    p_pos = sigmoid(a_pos)
    h_pos = bernoulli(p_pos, rng) if objective == "joint" else p_pos
    pos = StatsAccumulator(params).add(V, h_pos).mean()
    return pos, p_pos, lambda: float(np.mean(free_energy(V, params, a_pos)))


def _negative_phase(params, V, mean_free_energy, rng, s):
    """Negative statistics from ``N(0, I)`` noise (modified CD, Alg. 3-4 l. 6-8)."""
    dtype = params.W.dtype
    v0 = standard_normal(V.shape, dtype, rng)
    neg = StatsAccumulator(params)
    if s.negative_phase != "annealed":
        res = run_chain(
            params, v0, rng, sampler=s.sampler, n_steps=s.cd_steps,
            step_size=s.langevin_step_size, langevin_steps=s.langevin_steps,
            inner=s.langevin_inner, metropolis_adjust=s.metropolis_adjust,
            adjust_after=s.adjust_after, stats=neg, objective=s.objective,
            burn_in=s.burn_in)
        return neg, res, float("nan"), float("nan")
    res = anneal(params, v0, s.cd_steps, rng, s, s.metropolis_adjust)
    w = normalised_weights(res.log_weights)
    ess = float(1.0 / np.sum(w * w) / w.shape[0])
    # The annealing weights estimate log Z for free: the path starts at N(0, I)
    # times uniform hiddens, normaliser (2 pi)^(N/2) 2^M. With the minibatch's
    # free energies (its activations are at hand) that is a training
    # log-likelihood estimate; with cd_steps temperatures and batch_size runs it
    # is rough and, like all AIS, biased upwards in log p (log Z low), so it is a
    # progress figure, not a score.
    N, M = V.shape[1], params.W.shape[0]
    log_z = 0.5 * N * np.log(2.0 * np.pi) + M * np.log(2.0) + log_mean_exp(res.log_weights)
    loglik = float(-mean_free_energy() - log_z)
    p_neg = sigmoid(hidden_activation(res.v, params))
    h_neg = bernoulli(p_neg, rng) if s.objective == "joint" else p_neg
    neg.add(res.v, h_neg, weights=w.astype(dtype))
    return neg, res, ess, loglik


def modified_cd_update(params, V, rng, settings, *, learning_rate, adam=None):
    """One modified-CD update on the minibatch ``V`` (Alg. 3 or 4), not committed.

    Parameters
    ----------
    params : GRBMParams
        The current parameters (not modified).
    V : ndarray of shape (batch, n_features) or RowSelection
        The minibatch, in the parameters' dtype, or a dask array's minibatch
        (:func:`positive_phase`).
    rng : numpy.random.Generator
    settings : TrainSettings
    learning_rate : float
        This update's step (the cosine schedule of Eq. 22 is the caller's).
    adam : skdgm._core.optim.Adam, optional
        The optimiser for ``settings.optimizer == "adam"`` (created on first use).
        Its moments are rebound, not written in place, so the caller can keep
        ``(list(adam.m), list(adam.v), adam.t)`` to undo a rejected step.

    Returns
    -------
    UpdateResult
        The candidate parameters (log-variances floored at ``min_variance``)
        with their variances and precisions, for the caller's divergence check.
    """
    s = settings
    W = params.W
    dtype = W.dtype
    pos, p_pos, mean_fe = positive_phase(params, V, rng, s.objective,
                                         s.negative_phase == "annealed")
    neg_acc, res, ess, loglik = _negative_phase(params, V, mean_fe, rng, s)
    neg = neg_acc.mean()
    # The gradient of the mean log-likelihood (Eq. 13 / 18) is pos - neg; its
    # norm and the clipped step are taken in float64 by fused passes, never as
    # float64 gradient arrays (at 784 x 4096 those passes were the largest cost of
    # an update after the products, issue 15).
    gnorm = float(np.sqrt(sq_diff_sum_of(pos, neg)))
    scale = 1.0
    if s.clip_grad_norm is not None and gnorm > s.clip_grad_norm:
        scale = s.clip_grad_norm / gnorm
    if s.optimizer == "adam":
        if adam is None:
            adam = Adam(params, maximize=True)
        cand = adam.step_difference(list(params), pos, neg, scale=scale,
                                    learning_rate=learning_rate)   # in the params' dtype
    else:
        cand = [(p + learning_rate * (np.subtract(a, b, dtype=np.float64) * scale)).astype(dtype)
                for p, a, b in zip(params, pos, neg)]
    cand[3] = np.maximum(cand[3], dtype.type(np.log(s.min_variance)))
    # The samplers and the likelihood use sigma^2 and 1 / sigma^2, not log sigma^2:
    # a finite log-variance above ~88.7 (float32) or ~709.8 (float64) overflows to
    # an infinite variance, and one below the range of the dtype to a zero
    # variance (infinite precision); the caller checks both as derived parameters.
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        var = np.exp(cand[3])
        prec = np.divide(1, var, dtype=dtype)
    return UpdateResult(GRBMParams(*cand), var, prec, adam, gnorm, p_pos,
                        res.n_accepted, res.n_proposed, ess, loglik)


def learning_rate_at(learning_rate, n_updates, total):
    """The step of update ``n_updates``: cosine-decayed over ``total`` updates (Eq. 22),
    constant when ``total`` is ``None`` (stand-alone ``partial_fit``)."""
    if total is None:
        return float(learning_rate)
    return float(Cosine(learning_rate, total)(n_updates))


def draw_samples(params, v0, rng, settings, n_steps, metropolis_adjust):
    """Visible samples from the noise ``v0`` with the estimator's sampler (``sample``).

    ``n_steps`` sampler steps, Metropolis-tested from step ``settings.adjust_after``
    when ``metropolis_adjust``; with the annealed negative phase the chains are
    annealed from the noise and resampled in proportion to their AIS weights.
    """
    s = settings
    if s.negative_phase == "annealed":
        res = anneal(params, v0, n_steps, rng, s, metropolis_adjust)
        w = normalised_weights(res.log_weights)
        return res.v[rng.choice(w.shape[0], size=w.shape[0], p=w)]
    res = run_chain(
        params, v0, rng, sampler=s.sampler, n_steps=n_steps,
        step_size=s.langevin_step_size, langevin_steps=s.langevin_steps,
        inner=s.langevin_inner, metropolis_adjust=metropolis_adjust,
        adjust_after=s.adjust_after)
    return res.v


def log_partition_estimate(params, *, exact, n_runs, n_betas, random_state, n_jobs=None,
                           verbose_name=None):
    """``(log Z, standard error)``: exact (``M <= EXACT_MAX_HIDDEN``), else AIS.

    AIS (Neal 2001) anneals the weights from 0 to ``W`` (base: ``N(mu, sigma^2)``
    visibles, independent ``Bernoulli(sigmoid(b))`` hiddens) over ``n_betas``
    sigmoid-spaced temperatures with ``n_runs`` runs, through
    :func:`skdgm._core.ais.annealed_importance_sampling`. ``verbose_name``
    announces the run and its result under that name.
    """
    if exact:
        return exact_log_partition(params), 0.0
    log_density, transition, sample_base, log_z0 = ais_callables(params)
    t0 = time.perf_counter()
    if verbose_name:
        print(f"[{verbose_name}] AIS for log Z: {n_runs} runs x {n_betas} "
              f"temperatures ...", flush=True)
    res = annealed_importance_sampling(
        log_density, transition, sample_base, log_z0, beta_schedule(n_betas, "sigmoid"),
        n_runs, random_state=random_state, n_jobs=n_jobs)
    out = (float(res.log_z), float(res.std_err))
    if verbose_name:
        print(f"[{verbose_name}] AIS log Z = {out[0]:.3f} +- {out[1]:.3f} (standard "
              f"error), time = {time.perf_counter() - t0:.1f}s", flush=True)
    return out


def init_params(n_features, n_components, init_std, dtype, rng):
    """Fresh parameters: ``W ~ N(0, std^2)``, zero biases and means, unit variances.

    ``init_std="auto"`` is ``1 / sqrt(n_features + n_components)``, the scale of the
    authors' code. Small weights keep the first updates gentle at large learning
    rates; with SGD they can also leave the fit on the saddle of the best single
    Gaussian (where every weight's gradient vanishes if the data's covariance is
    diagonal) for thousands of updates.
    """
    M = n_components
    std = 1.0 / np.sqrt(n_features + M) if init_std == "auto" else init_std
    W = (std * rng.standard_normal((M, n_features))).astype(dtype)
    return GRBMParams(W, np.zeros(M, dtype=dtype), np.zeros(n_features, dtype=dtype),
                      np.zeros(n_features, dtype=dtype))


def recon_error(V, params):
    """Mean squared error of the mean-field reconstruction ``mu + W^T p(h | v)`` of ``V``,
    with ``p(h | v)`` and the reconstruction both under ``params``.

    For a dask array's minibatch (a ``RowSelection``) summed from its blocks.
    """
    if isinstance(V, RowSelection):
        _, _, sq = _block_pass(params, V, dict(objective="marginal", annealed=False,
                                               recon=True), lambda parts: [None] * len(parts))
        return sq / V.shape[0] / V.shape[1]
    p = sigmoid(hidden_activation(V, params))
    return float(np.mean((V - params.mu - p @ params.W) ** 2))


# negative_phase="auto" anneals up to this many features (visible units).
ANNEALED_MAX_FEATURES = 10


def resolve_negative_phase(negative_phase, n_features, burn_in):
    """``negative_phase="auto"`` made concrete: ``"annealed"`` or ``"noise"``.

    The annealed phase where its importance weights stay useful at ``cd_steps``
    temperatures (low-dimensional data, whose separated modes the noise phase
    cannot weigh); the plain noise phase otherwise. On digits (64-D) the annealed
    phase cost twice as much per update and learned a worse model (user guide,
    "Defaults").
    """
    if negative_phase != "auto":
        return negative_phase
    return "annealed" if n_features <= ANNEALED_MAX_FEATURES and burn_in == 0 else "noise"


def pass_metrics(*, annealed, lls, recon, norms, log_var, adjusted, n_acc, n_prop, ess):
    """The figures of one pass for ``history_``, only those defined for the options.

    Every entry is finite, so the verbose line holds no NaN: ``train_loglik_ais``
    and ``negative_ess`` only with the annealed phase, ``acceptance_rate`` only
    when the training chains are Metropolis-adjusted.
    """
    metrics = {}
    if annealed:
        metrics["train_loglik_ais"] = float(np.mean(lls))
    metrics["recon_error"] = recon
    metrics["grad_norm"] = float(np.mean(norms))
    metrics["mean_log_var"] = float(np.mean(log_var))
    if adjusted and n_prop:
        metrics["acceptance_rate"] = float(n_acc / n_prop)
    if annealed:
        metrics["negative_ess"] = float(np.mean(ess))
    return metrics


def pass_line(name, n_iter, metrics, elapsed, total=None, call_time=0.0, call_passes=0):
    """The verbose line of one pass: every figure by name, the elapsed time and,
    inside ``fit`` (``total`` passes), the time left (passes left times the mean
    time per pass of this call: ``call_time`` over ``call_passes``)."""
    parts = [f"{k} = {v:.4g}" for k, v in metrics.items()]
    if total:
        left = call_time / call_passes * (total - call_passes)
        head = f"pass {n_iter}/{total}"
        parts += [f"time = {elapsed:.1f}s", f"left ~ {left:.1f}s"]
    else:
        head = f"pass {n_iter}"
        parts.append(f"time = {elapsed:.1f}s")
    return f"[{name}] {head}, " + ", ".join(parts)


def blas_shape(X, batch_size, n_components):
    """``(rows per product, n_features, n_components)`` for :func:`blas_limit`, or ``None``.

    Sized from ``X`` before validation; input without a 2-D shape (or settings
    that are not numbers) gives ``None``: validation then rejects it, or the call
    is too small to matter.
    """
    try:
        shape = getattr(X, "shape", None)
        n_rows, n_features = np.shape(X) if shape is None else shape
        n_components = int(n_components)
    except (TypeError, ValueError):
        return None
    return min(int(batch_size), n_rows), n_features, n_components


def checked_cd_update(params, V, rng, settings, *, learning_rate, adam, where, bound,
                      check):
    """:func:`modified_cd_update`, then the divergence check of its candidate.

    ``check(arrays, where, bound=None)`` (the estimator's
    :func:`skdgm._core.base.check_finite_params`) covers ``W``, ``b`` and ``mu``
    against ``bound`` (which includes finiteness), then the log-variances, the
    variances and the precisions for finiteness. When it raises, the Adam moments
    and step count are put back as they were, so the optimiser is untouched.

    Returns
    -------
    UpdateResult
        Not committed: the caller stores ``params``, ``variance`` and ``adam``.
    """
    saved = None if adam is None else (list(adam.m), list(adam.v), adam.t)
    res = modified_cd_update(params, V, rng, settings, adam=adam, learning_rate=learning_rate)
    cand = res.params
    try:
        # the bounded check covers finiteness too: each array is read once
        check({"components_": cand.W, "intercept_hidden_": cand.b, "mean_": cand.mu},
              where, bound=bound)
        check({"log_variance_": cand.log_var, "variance_": res.variance,
               "1 / variance_": res.precision}, where)
    except FloatingPointError:
        if saved is not None:
            adam.m, adam.v, adam.t = saved
        raise
    return res


class RawIterate:
    """The raw modified-CD iterate beside its exponential average (``average > 0``).

    With ``average`` the fitted parameters (``components_``, ...) are the moving
    average of the iterates (:class:`skdgm._core.averaging.ParameterAverage`,
    Polyak & Juditsky 1992), while the raw iterate kept here takes the next update:
    the gradient is read where the optimiser is, the model a user scores is the
    average. Without it nothing is kept and the fitted parameters are the iterate.
    """

    def __init__(self, params, decay):
        # seeded with the parameters it starts from (the initial ones in fit); the
        # warm-up of ParameterAverage lets the first iterates outweigh them at once
        self.params, self.average = params, ParameterAverage(decay)
        self.average.update(list(params))

    @classmethod
    def of(cls, est):
        """``est._iterate`` configured from ``est.average`` (read at every pass, so
        ``set_params`` between :meth:`partial_fit` calls holds), or ``None``.

        Switched on, the average starts from the current parameters; switched off,
        the fitted parameters become the raw iterate again, which trains on.
        """
        it = est.__dict__.get("_iterate")
        if not est.average:
            if it is not None:
                est._set_params(it.params)
            est._iterate = None
            return None
        if it is None:
            it = cls(est._params(), est.average)
        it.average.decay = float(est.average)
        est._iterate = it
        return it

    def commit(self, params):
        """Keep an accepted update's parameters and fold them into the average."""
        self.params = params
        self.average.update(list(params))

    def fitted(self):
        return GRBMParams(*self.average.value())


def log_pass(est, metrics, max_history):
    """Record one pass in ``est.history_`` (the latest ``max_history``) and print it.

    The verbose line names each figure and adds the elapsed time and, inside
    ``fit``, an estimate of the time left (passes left times the mean time per
    pass of this call).
    """
    if not hasattr(est, "history_"):
        est._start_history()
    est.n_iter_ = getattr(est, "n_iter_", 0) + 1
    now = time.perf_counter()
    elapsed = now - est._t_start
    for k, v in metrics.items():
        est.history_.setdefault(k, []).append(v)
    est.history_.setdefault("time", []).append(elapsed)
    for values in est.history_.values():
        del values[:-max_history]
    if est.verbose:
        t0, done0 = getattr(est, "_call_start", (est._t_start, 0))
        print(pass_line(type(est).__name__, est.n_iter_, metrics, elapsed,
                        getattr(est, "_passes_total", None), now - t0,
                        est.n_iter_ - done0), flush=True)
