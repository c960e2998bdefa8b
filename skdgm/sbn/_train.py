"""The training procedure of ``BayesianSBN``: passes, pre-training stages, kept samples.

An inference engine (:mod:`._engines`, :mod:`._dsghmc`) knows one step; this module
strings steps into the procedures of Gan et al. (2015): a pass over the data (a full
iteration, or an epoch of minibatches for the streaming methods), the greedy
layer-wise pre-training of Sec. 3.3 stacked into the deep net, and the choice of the
parameter samples a fit keeps. The functions take the engine, arrays, settings and
an explicit generator, never the estimator; the estimator's hooks call them in the
order of the training skeleton (:class:`skdgm._core.base.BaseGenerativeModel`).
The ``inference`` registry (:data:`INFERENCE`) and the parameters each option reads
(:data:`INFERENCE_READS`) live here too.
"""

from functools import partial

import numpy as np

from .._core.base import DIVERGENCE_BOUND, dense_rows, iter_minibatches
from .._core.blocks import RowBlocks, float_blocks
from . import _model
from ._dsghmc import DSGHMCGibbsEngine, DSGHMCNAISEngine
from ._engines import GibbsEngine, OnlineVBEngine, VBEngine
from ._priors import init_prior_states

__all__ = ["INFERENCE", "INFERENCE_READS", "dask_blocks", "divergence_parts", "engine_pass",
           "final_samples", "model_prior_states", "pretrain_stages", "stream_steps"]

#: inference name -> engine class (see ``_engines`` for the protocol)
INFERENCE = {
    "gibbs": GibbsEngine,
    "vb": VBEngine,
    "online_vb": OnlineVBEngine,
    # Du, Zhu and Zhang (2018): doubly stochastic SGHMC
    "dsghmc_gibbs": DSGHMCGibbsEngine,
    "dsghmc_nais": DSGHMCNAISEngine,
}

# The parameters only some inference methods read (every other parameter is read by
# all of them); setting one that the chosen method ignores warns at fit time. The
# user guide's table ("Which parameters each inference reads") mirrors this.
_DSGHMC_READS = {"batch_size", "total_samples", "burn_in", "learning_rate", "friction",
                 "sgmcmc", "n_sghmc_steps", "n_hidden_samples"}
#: ``{"inference": {option: parameters it reads}}``, the skeleton's ``_option_reads``
INFERENCE_READS = {"inference": {
    "gibbs": {"burn_in", "batch_size", "warm_start"},
    "vb": {"warm_start"},
    "online_vb": {"batch_size", "total_samples", "learning_offset", "learning_decay",
                  "n_local_iter"},
    "dsghmc_gibbs": _DSGHMC_READS | {"gibbs_sweeps"},
    "dsghmc_nais": _DSGHMC_READS | {"recognition_learning_rate", "n_is_samples"},
}}
# "auto" runs one of two options by the rows (_defaults.resolve_inference): each
# parameter either reads can matter
INFERENCE_READS["inference"]["auto"] = (INFERENCE_READS["inference"]["gibbs"]
                                        | INFERENCE_READS["inference"]["dsghmc_nais"])


def model_prior_states(kind, params, prior_params):
    """Fresh prior states (Eq. 9) for every row block of ``params``, one per layer."""
    return init_prior_states(kind, [
        (m.shape[0], m.shape[1] - 1) for m in map(partial(_model.row_mask, params),
                                                  range(len(params.biases)))], prior_params)


def dask_blocks(estimator, X, *, reset):
    """A row-chunked dask array of binary rows as :class:`~skdgm._core.blocks.RowBlocks`.

    The streaming options only: online VB (its local step is per row and its
    global step reads sums, :func:`skdgm.sbn._vb.local_step_blocks`) and DSGHMC
    (the hidden-unit samples and the gradient sums of every SGHMC step,
    :meth:`skdgm.sbn._dsghmc.DSGHMCTrainer._block_gradients`). The batch options
    raise a ``ValueError`` naming those, before any block is computed. The
    blocks are checked (binary, after ``binarize``) where they live, and trained
    in float64 as in memory.
    """
    name = type(estimator).__name__
    inference = estimator._chosen_inference()
    if not INFERENCE[inference].streaming:
        chose = f", which chose {inference!r} for these rows" if inference != estimator.inference else ""
        raise ValueError(
            f"{name}(inference={estimator.inference!r}{chose}) cannot train on a dask array: "
            f"use inference='online_vb', 'dsghmc_gibbs' or 'dsghmc_nais', whose "
            f"per-row steps run where the blocks live (or pass an in-memory array)")
    if estimator.autoregressive and inference == "online_vb":
        raise ValueError(
            f"{name}(autoregressive=True, inference='online_vb') cannot train on a dask "
            f"array: the visible layer's own units are its regressors, so the global "
            f"step would need the rows; use autoregressive=False, a DSGHMC inference "
            f"or an in-memory array")
    return float_blocks(estimator, X, reset=reset, binary=True, dtype=np.float64)


def _minibatch(X, rows):
    """Rows of the training data for one step: dense float rows, or for a dask
    array's blocks the :class:`~skdgm._core.blocks.RowSelection` (not gathered)."""
    if isinstance(X, RowBlocks):
        return X[rows]
    return dense_rows(X, rows).astype(float, copy=False)


def engine_pass(engine, X, rng, batch_size, ctx=None):
    """One pass over ``X``: a full iteration, or an epoch of minibatches (streaming).

    A streaming engine's minibatches are a fresh permutation of the rows drawn from
    ``rng``, each densified on its own (CSR input) and scaled to ``n_total = len(X)``
    (the online-VB and SGHMC estimates of the full-data statistics, Sec. 3.2).
    ``ctx["steps_left"]`` (``fit``'s context; ``None``: no limit) counts down the
    minibatch steps the run has left, and the pass stops when none are: the DSGHMC
    options' ``n_iter="auto"`` cuts its last pass short
    (:func:`._defaults.resolve_run_steps`).

    Returns
    -------
    metrics : dict
        The engine's metrics of the last step.
    """
    if not engine.streaming:
        return engine.step(X, rng)
    metrics = {}
    ctx = {} if ctx is None else ctx
    for batch in iter_minibatches(X.shape[0], batch_size, rng):
        if ctx.get("steps_left") is not None:
            if ctx["steps_left"] <= 0:
                break
            ctx["steps_left"] -= 1
        metrics = engine.step(_minibatch(X, batch), rng, n_total=X.shape[0])
    return metrics


def stream_steps(engine, X, rng, batch_size, n_total):
    """``partial_fit``'s pass: a step per ``batch_size`` rows of ``X``, in stream order.

    Unlike :func:`engine_pass` the rows are not shuffled (a stream's order is the
    caller's), and the statistics are scaled to ``n_total``, the stream's announced
    or seen size.
    """
    metrics = {}
    for rows in iter_minibatches(X.shape[0], batch_size):
        metrics = engine.step(_minibatch(X, rows), rng, n_total=n_total)
    return metrics


def pretrain_stages(X, sizes, rng, *, new_engine, n_passes, batch_size, log_pass,
                    prior_states, prior_params, autoregressive=False):
    """Greedy layer-wise pre-training (Sec. 3.3), stacked into the deep net.

    Stage ``s`` fits a single-layer SBN with ``sizes[s]`` hidden units to the
    previous stage's hidden units (the data for ``s = 0``) for ``n_passes`` passes,
    then hands on its *last* sample of the training set's hidden units (they belong
    to that sample's parameters; an average could mix units that swapped roles).

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
    sizes : tuple of int
        Hidden sizes of the deep net, bottom first (two or more).
    rng : numpy.random.Generator
        Drives every stage in turn.
    new_engine : callable
        ``new_engine(params)``: an engine of the chosen inference on a stage's
        initial parameters.
    n_passes, batch_size : int
    log_pass : callable
        ``log_pass(stage, metrics)`` after every pass (stages count from 1).
    prior_states : callable
        ``prior_states(params, prior_params)`` of the deep net
        (:func:`skdgm.sbn._model.assemble_stages`).
    prior_params : dict
    autoregressive : bool, default=False

    Returns
    -------
    params, states, hidden
        As :func:`skdgm.sbn._model.assemble_stages`.
    """
    if isinstance(X, RowBlocks):
        raise ValueError(
            "BayesianSBN does not pre-train on a dask array (each stage's data would be "
            "the hidden units of every row); use pretrain=False with a dask array")
    data, parts = X, []
    for s in range(len(sizes)):
        sub = _model.init_params(data.shape[1], sizes[s:s + 1], rng,
                                 autoregressive=autoregressive)
        eng = new_engine(sub)
        eng.init_data(data, rng)
        for _ in range(n_passes):
            log_pass(s + 1, engine_pass(eng, data, rng, batch_size))
        parts.append(eng.export())
        data = eng.hidden_sample(data, rng)[0]
    return _model.assemble_stages(X.shape[1], sizes, parts, prior_states, prior_params,
                                  autoregressive=autoregressive)


def final_samples(engine, kept, n_posterior_samples, rng):
    """The parameter samples a fit (or ``partial_fit``) keeps.

    Gibbs keeps the latest ``n_posterior_samples`` thinned samples of the chain
    (``kept``; its current draw if none was collected); DSGHMC those its engine
    collected in minibatch steps (``streaming_samples``); VB and online VB draw
    ``n_posterior_samples`` from ``q`` now.
    """
    if hasattr(engine, "streaming_samples"):
        return engine.streaming_samples()
    if engine.keeps_samples:
        return kept[-n_posterior_samples:] or [engine.posterior_draw(rng)]
    return [engine.posterior_draw(rng) for _ in range(n_posterior_samples)]


def divergence_parts(params):
    """The arrays the skeleton's divergence check watches, and their bound."""
    parts = {"weights": list(params.weights), "biases": list(params.biases)}
    if params.lateral:
        parts["lateral"] = list(params.lateral)
    return parts, DIVERGENCE_BOUND
