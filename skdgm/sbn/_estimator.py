"""``BayesianSBN``: the scikit-learn face of the deep sigmoid belief net wing.

Validates, resolves the ``"auto"`` settings (``_defaults``), runs the training skeleton
of :class:`skdgm._core.base.BaseGenerativeModel` through its hooks, and stores the
fitted attributes. The numerics live in module-level functions: ``_model`` (the model,
stacking of pre-training stages), ``_gibbs`` / ``_vb`` / ``_dsghmc`` (the samplers,
with their Cython twins), ``_engines`` (one training state per ``inference``),
``_train`` (passes, pre-training stages, kept samples; the ``inference`` registry),
``_priors``, ``_posterior`` (``transform``), ``_evaluate`` (``score_samples``),
``_impute`` and ``_bounds``; ``_defaults`` holds the ``"auto"`` rules and the
parameter constraints.
"""

import numbers
import time

import numpy as np
import scipy.sparse as sp
from sklearn.base import ClassNamePrefixFeaturesOutMixin
from sklearn.utils._param_validation import Interval
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .._core.bdmc import check_bounds_args
from .._core.base import BaseGenerativeModel, float_dtype as _float_dtype
from .._core.blocks import is_dask_array
from .._core.exact import MAX_EXACT_UNITS
from .._core.interop import InferenceDataMixin
from .._core.posterior import check_missing, check_n_sweeps
from .._core.random import as_generator, check_seed_sequence, seed_for, spawn_generators
from . import _bounds, _defaults, _gibbs, _model, _train
from ._evaluate import call_seed, check_method, log_marginal, map_chunks
from ._impute import impute_over_samples
from ._posterior import hidden_moments, inference_arrays
from ._priors import DEFAULT_PRIOR_PARAMS, resolve_prior_params
from ._train import INFERENCE as _INFERENCE, INFERENCE_READS as _INFERENCE_READS
from ._warm import WarmStart

__all__ = ["BayesianSBN"]

# A unit counts as active when some weight leaving it has |w| above this (the weights
# of units the shrinkage prior switched off collapse towards 0).
_ACTIVE_THRESHOLD = 0.1
# n_ais_betas="auto": points simulated for the BDMC gap, and the purpose key of its
# streams (apart from training and scoring).
_AUTO_BDMC_POINTS = 100
_BDMC_PURPOSE = 0xBD3C
# transform / impute: sweeps per posterior sample (discarded, then averaged)
_TRANSFORM_BURN, _TRANSFORM_KEEP = 5, 10


def _streaming(est):
    return _INFERENCE[est.inference].streaming if est.inference in _INFERENCE else False


class BayesianSBN(_defaults.AutoStopping, WarmStart, ClassNamePrefixFeaturesOutMixin,
                  InferenceDataMixin, BaseGenerativeModel):
    """Deep sigmoid belief net with Bayesian inference (Gan, Henao, Carlson, Carin 2015).

    The generative model (Eq. 7-8): ``p(h^(L)_k = 1) = sigmoid(c^(L+1)_k)`` and
    ``p(h^(l-1)_k = 1 | h^(l)) = sigmoid(w^(l)_k . h^(l) + c^(l)_k)`` down to the
    visible layer ``v = h^(0)``. With ``autoregressive=True`` every unit also sees the
    earlier units of its own layer (the ARSBN of Eq. 6); ``n_components=()`` with
    ``autoregressive=True`` is the fully visible SBN.

    Parameters
    ----------
    n_components : int, tuple of int or "auto", default="auto"
        Units per hidden layer, bottom first (upper bounds: the TPBN prior can switch
        units off). ``"auto"``: one layer of 16 units below 5,000 training rows (the
        most whose likelihood ``score_samples`` computes exactly), else one unit per
        250 rows up to 200 (the paper's width), and up to 40 when batch Gibbs
        (``inference="gibbs"``) trains it, whose pass costs ``O(N D K^2)``;
        stored in ``n_components_``. The paper's
        settings are presets in the user guide.
    inference : {"auto", "gibbs", "vb", "online_vb", "dsghmc_gibbs", "dsghmc_nais"}, default="auto"
        Pólya-Gamma Gibbs sampling (Eq. 10-14), batch mean-field VB (Eq. 15-17), or
        online VB over minibatches (what ``partial_fit`` runs); or the doubly
        stochastic SGHMC of Du, Zhu and Zhang (2018) with gradients from collapsed
        Gibbs samples (``"dsghmc_gibbs"``) or from a neural adaptive importance
        sampler (``"dsghmc_nais"``), both streaming (see the DSGHMC user guide).
        ``"auto"`` (``fit`` only; ``partial_fit`` needs a streaming option): batch
        ``"gibbs"`` below 12,500 training rows, ``"dsghmc_nais"`` from there on,
        whose default fit of 2,000 minibatch updates stops growing with the rows
        (measured on binarised MNIST at 10,000, 12,500, 15,000, 25,000 and 50,000
        rows: the SBN user guide, "Defaults at scale"); the
        choice is stored in ``inference_`` (the default was ``"gibbs"`` at every
        size before issue 25: see the changelog).
    prior : {"tpbn", "student_t", "normal"} or None, default=None
        Prior on the weights (Eq. 9; ``a = b = 1/2`` is the horseshoe); the biases get
        ``N(0, bias_var)``. See ``prior_params``. ``None``: ``"tpbn"`` for the part-1
        methods, and for the DSGHMC options the paper's Student-t (scale 0.09,
        ``df = 2.2``) on every parameter, biases included.
    autoregressive : bool, default=False
        Lower-triangular within-layer weights (Eq. 6).
    n_iter : int or "auto", default="auto"
        Passes over the data: Gibbs iterations / VB sweeps (batch methods) or epochs
        of minibatches (streaming methods), per pre-training stage and again for the
        global refinement. ``"auto"``: the fixed rule ``n0 = clip(240000 / n_samples,
        60, 200)`` for the batch methods' pre-training stages; the streaming
        methods move once per minibatch, so they count updates: online VB at most
        the whole passes that make 2,640 minibatch updates (``n0`` up to 4,400
        rows, 27 passes at 10,000 rows, 3 at 100,000, one from about 264,000; its
        step ``rho_t`` decays with the updates, Sec. 3.2), DSGHMC 2,000 updates
        in ``fit`` (``n0`` passes up to 1,000 rows; 20 passes at 10,000 rows, 4 at
        50,000, 2 at 100,000), the last pass cut short where the updates run
        out (at 1,000,000 rows a fifth of one pass). For Gibbs
        (with ``burn_in="auto"``) and VB, until converged: burn-in (VB: training)
        lasts until the pass's training figure (the mean log joint of the rows and
        their sampled hidden units; VB's augmented bound) has not improved by a relative
        1e-4 for 10 passes, but at least the fixed rule's burn-in (0.4 ``n0``; VB
        ``n0``) and at most four times it (Gibbs: and at most 2,000,000 row visits,
        i.e. 40 passes at 50,000 rows, as a Gibbs pass costs ``O(N D K^2)``; this
        binds above 20,833 rows); Gibbs then collects for 0.6 ``n0`` passes. On
        small data that converge in time this is the fixed rule. The passes made
        are ``n_iter_``, why they stopped ``stopping_reason_``.
    batch_size : int, default=100
        Minibatch size of the streaming methods (at most: ``n`` rows are cut into
        ``ceil(n / batch_size)`` near-equal minibatches), and the rows a Gibbs
        iteration reads (densifies, for sparse input) at a time.
    burn_in : int or "auto", default="auto"
        What is discarded before collecting samples, in the unit the inference
        collects in. Gibbs: passes of the final phase; ``"auto"``: until the
        plateau with ``n_iter="auto"`` (see ``n_iter``), else 40 % of the resolved
        ``n_iter``. The paper burns in 40 and collects 100 (Sec. 5):
        ``n_iter=140, burn_in=40``. The DSGHMC options: minibatch steps, in ``fit``
        and ``partial_fit`` alike (an epoch is ``ceil(n / batch_size)`` steps);
        ``"auto"`` is 40 passes' steps in ``fit``, at most two thirds of the run's
        steps, after which ``fit`` keeps a sample every
        ``(steps left) // n_posterior_samples`` steps (so even a one-pass run keeps
        ``n_posterior_samples``); 40 steps in ``partial_fit``, which keeps one
        every 10 steps. (An int in DSGHMC's ``fit`` used to count passes: see
        the changelog.)
    n_posterior_samples : int, default=10
        Thinned parameter samples kept (Gibbs), or draws from ``q`` (VB).
        ``transform`` averages over them.
    pretrain : bool, default=True
        Greedy layer-wise pre-training then global refinement (Sec. 3.3); only
        matters with two or more hidden layers. With Gibbs, each stage hands on its
        *last* sample (parameters and the training set's hidden units together), not a
        posterior mean: the next stage's data are those hidden units, which belong to
        that sample's parameters, and an average over samples can mix hidden units that
        swapped roles. The stages only start the global refinement, whose samples are
        averaged.
    prior_params : dict, optional
        Overrides of ``weight_var`` (normal), ``df`` and ``scale`` (Student-t),
        ``a`` and ``b`` (TPBN), ``bias_var`` (every bias).
    learning_offset, learning_decay : float, default=10.0, 0.7
        Online VB step ``rho_t = (learning_offset + t)^(-learning_decay)``, capped
        at 1 (``learning_offset=0`` starts with ``rho_0 = 1``).
    n_local_iter : int, default=4
        Local coordinate sweeps per minibatch in online VB (the paper uses 4).
    total_samples : int, optional
        Dataset size ``N`` that online VB scales minibatch statistics to in
        ``partial_fit`` (default: samples seen so far; ``fit`` uses ``len(X)``).
    learning_rate : float or schedule, default=0.01
        DSGHMC: per-datum SGHMC step size (Du et al. appendix C; the step on the
        full-data gradient is ``learning_rate / N``); a number or a schedule spec of
        :func:`skdgm._core.schedules.make_schedule` over minibatches.
    friction : float, default=0.1
        DSGHMC: momentum decay ``xi`` of Eq. 4 (the SGNHT diffusion with ``sgmcmc="sgnht"``).
    sgmcmc : {"sghmc", "sgnht"}, default="sghmc"
        DSGHMC: SGHMC (Eq. 4) or the Nosé-Hoover thermostat variant.
    n_sghmc_steps : int, default=10
        DSGHMC: SGHMC steps per minibatch (appendix C).
    n_hidden_samples : int, default=5
        DSGHMC: hidden-layer samples ``L`` per data point and step (Eq. 5-6).
    gibbs_sweeps : int, default=5
        ``"dsghmc_gibbs"``: Gibbs burn-in sweeps (Eq. 15) per minibatch.
    recognition_learning_rate : float, default=1e-3
        ``"dsghmc_nais"``: Adam step of the recognition network (Eq. 10).
    n_is_samples : int, default=1000
        ``score_samples(method="is")``: proposals per point (the paper used 100,000).
    n_ais_betas : int or "auto", default=100
        Temperatures of the AIS from the prior: ``score_samples(method="ais")``,
        the default route of autoregressive models above 16 hidden units (the
        default ``"stratified"`` has its own settings), and
        :meth:`log_likelihood_bounds`. ``"auto"``: the count is doubled from 100 (up to 12,800) until the bidirectional Monte Carlo
        gap on 100 points simulated from the model (:meth:`log_likelihood_bounds`)
        is below ``ais_tol``; a ``ConvergenceWarning`` names the gap reached when
        the cap stops it. The choice is made on first use and kept while the
        parameters and an int ``random_state`` are unchanged.
    n_ais_runs : int, default=10
        Chains per point of the AIS from the prior in ``score_samples`` (see
        ``n_ais_betas``) and per point and direction in :meth:`log_likelihood_bounds`.
    ais_tol : float, default=0.5
        The BDMC gap, in nats per point, that ``n_ais_betas="auto"`` aims for
        (``|gap| + 2 standard errors < ais_tol``).
    random_state : int, RandomState, Generator or None
    verbose : int, default=0
    n_jobs : int, optional
        Workers for AIS chains.
    binarize : float or None, default=None
        Threshold for binarising the input (``X > binarize`` becomes 1, the rest 0)
        in every method that takes ``X``, as :class:`sklearn.neural_network.BernoulliRBM`
        users do with :class:`~sklearn.preprocessing.Binarizer`. ``None``: the input
        must already be 0/1 (anything else raises a ``ValueError``).
    warm_start : bool, default=False
        Batch ``"gibbs"`` and ``"vb"``: a ``fit`` keeps the state of its chain (the
        engine, the generator, every draw after burn-in), and the next ``fit`` on
        the same ``X`` continues that chain for ``n_iter`` (an int) more passes
        instead of starting afresh, so that a long fit can be split into calls and
        checkpointed (pickle the estimator between calls). ``fit(n_iter=n)`` then
        ``fit(n_iter=m)`` equals one ``fit(n_iter=n + m)`` bit for bit when
        ``burn_in`` is an int (the burn-in and pre-training are the first call's;
        the kept samples follow the fixed rule over the whole chain). Memory: one
        parameter sample per post-burn-in pass. Another ``inference`` starts afresh;
        other rows raise a ``ValueError``.

    Attributes
    ----------
    coefs_ : list of ndarray
        Posterior-mean weights; ``coefs_[l]`` has shape ``(sizes[l], sizes[l+1])`` and
        maps layer ``l+1`` to layer ``l`` (``coefs_[0]`` is ``W^(1)``, visible x K_1).
    intercepts_ : list of ndarray
        Posterior-mean biases of layers ``0..L`` (the last is the top prior bias).
    lateral_coefs_ : list of ndarray or None
        Strictly lower-triangular within-layer weights ``S, U^(1), ...`` (ARSBN).
    params_ : SBNParams
        The same posterior means as one object (see :mod:`skdgm.sbn._model`).
    posterior_samples_ : list of SBNParams
    n_active_units_ : list of int
        Units per hidden layer with some outgoing weight above 0.1 in magnitude.
    history_ : dict of lists
        Per-iteration metrics (``log_joint`` for Gibbs; ``bound`` and ``elbo`` per
        sample for VB; ``batch_bound`` for online VB; ``step_size`` for DSGHMC, plus
        ``log_px_is`` and ``ess_ratio`` for ``"dsghmc_nais"``) and ``stage`` (0 = global),
        one entry per pass over the data; the latest 10,000 entries are kept, so an
        endless stream of ``partial_fit`` calls runs in constant memory.
    inference_ : str
        The inference the last ``fit`` ran (``inference`` with ``"auto"`` resolved
        for the training rows; see ``inference``).
    n_components_ : tuple of int
        The hidden sizes used (``n_components`` with ``"auto"`` resolved).
    burn_in_ : int
        The burn-in used (``burn_in`` with ``"auto"`` resolved): passes, minibatch
        steps for the DSGHMC options.
    n_iter_ : int
        Passes over the data run by the last ``fit`` (pre-training stages included:
        a full Gibbs iteration or VB sweep, or an epoch of minibatches), plus one per
        ``partial_fit`` call.
    """

    # which parameters each option reads (warned about once per call when unused)
    _option_reads = _INFERENCE_READS
    # the dict sits beside the defaults it constrains (_defaults.PARAMETER_CONSTRAINTS)
    _parameter_constraints = _defaults.PARAMETER_CONSTRAINTS
    _element_constraints = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
    }
    _entry_constraints = {
        "prior_params": {k: [Interval(numbers.Real, 0, None, closed="neither")]
                         for k in DEFAULT_PRIOR_PARAMS},
    }

    def __init__(self, n_components="auto", *, inference="auto", prior=None,
                 autoregressive=False, n_iter="auto", batch_size=100, burn_in="auto",
                 n_posterior_samples=10, pretrain=True, prior_params=None,
                 learning_offset=10.0, learning_decay=0.7, n_local_iter=4,
                 total_samples=None, learning_rate=0.01, friction=0.1, sgmcmc="sghmc",
                 n_sghmc_steps=10, n_hidden_samples=5, gibbs_sweeps=5,
                 recognition_learning_rate=1e-3, n_is_samples=1000, n_ais_betas=100, n_ais_runs=10, ais_tol=0.5,
                 random_state=None, verbose=0, n_jobs=None, binarize=None, warm_start=False):
        self.n_components = n_components
        self.inference = inference
        self.prior = prior
        self.autoregressive = autoregressive
        self.n_iter = n_iter
        self.batch_size = batch_size
        self.burn_in = burn_in
        self.n_posterior_samples = n_posterior_samples
        self.pretrain = pretrain
        self.prior_params = prior_params
        self.learning_offset = learning_offset
        self.learning_decay = learning_decay
        self.n_local_iter = n_local_iter
        self.total_samples = total_samples
        self.learning_rate = learning_rate
        self.friction = friction
        self.sgmcmc = sgmcmc
        self.n_sghmc_steps = n_sghmc_steps
        self.n_hidden_samples = n_hidden_samples
        self.gibbs_sweeps = gibbs_sweeps
        self.recognition_learning_rate = recognition_learning_rate
        self.n_is_samples = n_is_samples
        self.n_ais_betas = n_ais_betas
        self.n_ais_runs = n_ais_runs
        self.ais_tol = ais_tol
        self.random_state = random_state
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.binarize = binarize
        self.warm_start = warm_start

    # ------------------------------------------------------------------ helpers
    def _validate(self, X, reset, allow_nan=False, dense=True, keep_float32=False):
        """Binary float64 ``X``, or float32 kept (``NaN`` allowed only for ``impute``).

        A CSR ``X`` stays sparse with ``dense=False`` (for :meth:`_by_chunks`);
        training densifies it: the batch methods keep dense per-row state of the
        same size anyway, and ``partial_fit``'s input is one minibatch.
        ``keep_float32`` (the streaming inferences, whose minibatches are made
        float64 one at a time): a dense float32 ``X`` is returned as it is, since
        0 and 1 are exact in float32 and a float64 copy would double a large
        fit's memory (6.3 GB more at a million MNIST rows).
        """
        X = self._validate_input(X, reset=reset, dtype=(np.float64, np.float32),
                                 binary=True, allow_nan=allow_nan, accept_sparse="csr")
        if sp.issparse(X):
            return X.toarray() if dense else X.astype(np.float64)
        return X if keep_float32 and X.dtype == np.float32 else np.asarray(X, np.float64)

    def _by_chunks(self, X, func):
        """``func(rows, chunk)`` over ``X``: whole when dense, else ``batch_size`` dense rows
        at a time, each chunk with its own random streams (``chunk`` = 0, 1, ...)."""
        return map_chunks(X, func, self.batch_size)

    def _call_seed(self, chunk=0):
        """Per-call seed from ``random_state`` (same int, same answer); one per chunk."""
        return call_seed(self.random_state, chunk)

    def _check_settings(self, n_samples=None, n_features=None):
        """Validated hidden sizes and prior parameters; ``"auto"`` resolved for ``X``'s shape."""
        self._validate_params()
        if n_samples is None and isinstance(self.n_components, str):
            return (), {}
        sizes = _defaults.resolve_sizes(self.n_components, self.autoregressive, n_samples,
                                        n_features, MAX_EXACT_UNITS, self._chosen_inference())
        return sizes, resolve_prior_params(getattr(
            _INFERENCE[self._chosen_inference()], "default_prior_params", {}), self.prior_params)

    def _options(self):
        return {"n_local_iter": self.n_local_iter, "learning_offset": self.learning_offset,
                "learning_decay": self.learning_decay,
                # DSGHMC (Du et al. 2018)
                "learning_rate": self.learning_rate, "friction": self.friction,
                "sampler": self.sgmcmc, "n_sghmc_steps": self.n_sghmc_steps,
                "n_samples": self.n_hidden_samples, "gibbs_sweeps": self.gibbs_sweeps,
                "recognition_learning_rate": self.recognition_learning_rate,
                "burn_in": getattr(self, "burn_in_", self.burn_in),
                "n_posterior_samples": self.n_posterior_samples,
                "run_steps": getattr(self, "_run_steps", 0),
                # rows of a (sparse) training set densified at a time
                "chunk_size": self.batch_size}

    def _prior_kind(self):
        """``prior``, or the inference method's default when it is ``None``."""
        return self.prior if self.prior is not None else getattr(
            _INFERENCE[self._chosen_inference()], "default_prior", "tpbn")

    def _prior_states(self, params, pp):
        return _train.model_prior_states(self._prior_kind(), params, pp)

    def _new_engine(self, params, pp, prior_states=None):
        if prior_states is None:
            prior_states = self._prior_states(params, pp)
        return _INFERENCE[self._chosen_inference()](params, prior_states, self._prior_kind(), pp,
                                          self._options())

    def _log_pass(self, stage, metrics):
        """One ``history_`` entry (and verbose line) per pass, with the time still to go."""
        done = getattr(self, "n_iter_", 0) + 1
        elapsed = time.perf_counter() - self._t_start
        left = elapsed / done * max(0, self._total_passes - done)
        self._log_iteration(stage=stage, **metrics, time_left=left)

    def _finish(self, engine, samples):
        mean = _model.mean_params(samples) if engine.keeps_samples else engine.current_params()
        self.params_ = mean
        self.posterior_samples_ = samples
        self.coefs_ = list(mean.weights)
        self.intercepts_ = list(mean.biases)
        self.lateral_coefs_ = None if mean.lateral is None else list(mean.lateral)
        self.n_active_units_ = _model.active_units(mean, _ACTIVE_THRESHOLD)
        self._engine = engine

    # ------------------------------------------------ the training skeleton's hooks
    # fit = _initialize (with the greedy pre-training stages of Sec. 3.3 when deep)
    # + n_iter passes (_fit_pass) + _end_call (posterior mean of the kept samples);
    # partial_fit = one streaming step on its minibatch (_partial_step).
    def _validate_training_data(self, X, *, reset):
        if reset:
            self._resolve_inference(X)
            self._check_settings()
        if is_dask_array(X):    # online VB: checked and trained where its blocks live
            return _train.dask_blocks(self, X, reset=reset)
        # CSR stays sparse: the engines read it one chunk of rows at a time
        streams = _train.INFERENCE[self._chosen_inference()].streaming
        return self._validate(X, reset=reset, dense=False, keep_float32=streams)

    def _is_initialized(self):
        return hasattr(self, "_engine")

    def _fresh_start(self, X, fit):
        n, D = X.shape
        if self.total_samples and not fit:
            n = self.total_samples          # partial_fit: the stream's announced size
        sizes, pp = self._check_settings(n, D)
        self.n_components_ = sizes
        self._n_iter_resolved, self.burn_in_ = _defaults.resolve_run_length(
            self.n_iter, self.burn_in, n, self._chosen_inference(), self.batch_size, fit=fit)
        # DSGHMC collects in steps and spreads fit's samples over its known length
        self._run_steps = (_defaults.resolve_run_steps(
            self.n_iter, n, self._chosen_inference(), self.batch_size) if fit else 0)
        self._seed_seq = seed_for(self.random_state)
        rng = as_generator(self._seed_seq.spawn(1)[0])
        self._start_history()
        self._n_seen = 0
        return sizes, pp, rng

    def _initialize(self, X, *, fit):
        if fit and self._continues(X):          # warm_start: the same chain, n_iter more
            return self._continue_chain(X)
        sizes, pp, rng = self._fresh_start(X, fit)
        self._hold_collection()
        stages = len(sizes) if (fit and self.pretrain and len(sizes) > 1) else 0
        self._total_passes = self._n_iter_resolved * stages + self._n_passes()
        D, L = X.shape[1], len(sizes)
        if fit and self.pretrain and L > 1:
            # Sec. 3.3: one single-layer SBN per stage on the previous stage's hidden
            # units, each run for n_iter passes, then stacked into the deep net
            params, states, hidden = _train.pretrain_stages(
                X, sizes, rng, new_engine=lambda sub: self._new_engine(sub, pp),
                n_passes=self._n_iter_resolved, batch_size=self.batch_size,
                log_pass=self._log_pass, prior_states=self._prior_states,
                prior_params=pp, autoregressive=self.autoregressive)
            engine = self._new_engine(params, pp, states)
            engine.init_data(X, rng, hidden)
        else:
            params = _model.init_params(D, sizes, rng, autoregressive=self.autoregressive)
            engine = self._new_engine(params, pp)
            engine.init_data(X, rng)
        return self._chain_start(engine, rng, fit=fit, n_rows=X.shape[0])

    def _fit_pass(self, X, ctx):
        engine, rng = ctx["engine"], ctx["rng"]
        self._log_pass(0, _train.engine_pass(engine, X, rng, self.batch_size, ctx))
        ctx["t"] += 1
        done = ctx["t"] - self.burn_in_
        if engine.keeps_samples and not engine.streaming and done > 0 and done % ctx["thin"] == 0:
            ctx["samples"].append(engine.posterior_draw(rng))

    def _end_call(self, ctx):
        if not ctx["fit"]:
            return
        engine, rng = ctx["engine"], ctx["rng"]
        self._finish(engine, _train.final_samples(engine, self._kept_samples(ctx),
                                                  self.n_posterior_samples, rng))
        self._n_seen = ctx["n_rows"]
        # the Gibbs iteration's scratch statistics (J x d x d per layer) are not state
        engine.__dict__.pop("_workspace", None)

    def fit(self, X, y=None):
        """Train on binary ``X``: greedy pre-training when deep (Sec. 3.3), then ``n_iter`` passes.

        The training skeleton of every skdgm estimator: a reset, the pre-training
        stages (two or more hidden layers and ``pretrain=True``), then ``n_iter``
        passes of the chosen inference (a Gibbs iteration, a VB sweep, or an epoch
        of the minibatch steps ``partial_fit`` runs). ``"auto"`` settings are
        resolved from the shape of ``X`` first.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            Binary data (or thresholded by ``binarize``). A CSR matrix is read
            ``batch_size`` rows at a time (batch ``inference="vb"`` densifies it).
            A ``dask.array.Array`` chunked by rows (the streaming inferences
            ``"online_vb"``, not autoregressive, and the DSGHMC options;
            ``pretrain=False`` when deep) is never gathered: its blocks are
            checked and its rows' per-row work runs where they live (see
            :ref:`dask_array_fit`).
        y : Ignored

        Returns
        -------
        self : BayesianSBN

        Raises
        ------
        ValueError
            For non-binary input or invalid parameters (the estimator is left as
            it was).
        skdgm.exceptions.DivergenceError
            If the parameters become non-finite or run away (the state from
            before the call is restored).

        See Also
        --------
        partial_fit : streaming updates (``inference="online_vb"`` and DSGHMC).

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import BayesianSBN
        >>> X = (np.random.default_rng(0).random((40, 6)) < 0.3).astype(float)
        >>> sbn = BayesianSBN(n_components=3, n_iter=5, random_state=0).fit(X)
        >>> sbn.n_components_, sbn.n_iter_, len(sbn.history_["log_joint"])
        ((3,), 5, 5)
        """
        return super().fit(X, y)

    @available_if(_streaming)
    def partial_fit(self, X, y=None):
        """One streaming pass over ``X``: a step per near-equal minibatch of at most
        ``batch_size`` rows.

        Available for the streaming inferences: online VB (a natural-gradient step,
        Sec. 3.2) and the DSGHMC options (``n_sghmc_steps`` SGHMC steps). The first
        call initialises the model; an ``X`` of at most ``batch_size`` rows is one
        step. Each call adds one to ``n_iter_`` and one entry to ``history_``.
        Hyper-parameters changed with ``set_params`` between calls are used.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            The next rows of a stream of binary data; a dask array chunked by
            rows is trained on where its blocks live, as in :meth:`fit`.
        y : Ignored

        Returns
        -------
        self : BayesianSBN

        Raises
        ------
        ValueError
            For non-binary input, invalid parameters or a changed feature count
            (the estimator is left as it was).
        skdgm.exceptions.DivergenceError
            If the step diverges (the state from before the call is restored).

        See Also
        --------
        fit : train from scratch on a whole data set.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import BayesianSBN
        >>> X = (np.random.default_rng(0).random((40, 6)) < 0.3).astype(float)
        >>> sbn = BayesianSBN(n_components=3, inference="online_vb", random_state=0)
        >>> for start in (0, 20):
        ...     sbn = sbn.partial_fit(X[start:start + 20])
        >>> sbn.n_iter_
        2
        """
        return super().partial_fit(X, y)

    def _resume(self, X):
        self._run_steps = 0                 # a stream after a fit: STREAM_THIN
        self._refresh_engine(self._engine)
        return {"engine": self._engine, "rng": as_generator(self._seed_seq.spawn(1)[0]),
                "fit": False}

    def _partial_step(self, X, ctx):
        engine, rng = ctx["engine"], ctx["rng"]
        self._n_seen += X.shape[0]
        n_total = self.total_samples or self._n_seen
        metrics = _train.stream_steps(engine, X, rng, self.batch_size, n_total)
        self._log_iteration(stage=0, **metrics)
        self._finish(engine, _train.final_samples(engine, [], self.n_posterior_samples, rng))

    def _refresh_engine(self, engine):
        """Hand the engine the current hyper-parameters (``set_params`` between calls)."""
        engine.refresh({k: v for k, v in self._options().items() if v is not None})

    def _divergence_params(self):
        if not hasattr(self, "params_"):
            return {}, None
        return _train.divergence_parts(self.params_)

    # --------------------------------------------------------------- inference
    def _call_rng(self, chunk=0):
        """Fresh per-call generator seeded from ``random_state`` (same int, same answer)."""
        return as_generator(self._call_seed(chunk))

    def transform(self, X, *, return_std=False):
        """``E[h^(1) | x]`` averaged over the posterior samples (exact when small).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features), binary
            A ``dask.array.Array`` chunked by rows is processed block by block
            where it lives (see :ref:`dask_array_inference`).
        return_std : bool, default=False
            Also return the standard deviation of each first-layer hidden unit under
            the posterior ``p(h^(1) | x, theta_s)`` mixed over the kept
            ``posterior_samples_`` (and, above 16 hidden units, over the Gibbs
            draws): ``sqrt(pbar (1 - pbar))`` with ``pbar`` the returned mean, which
            is ``sqrt(mean_s p_s (1 - p_s) + var_s p_s)``, the spread within a sample
            plus the spread between samples (not the mean of the per-sample
            standard deviations).

        Returns
        -------
        H : ndarray of shape (n_samples, K_1)
            ``K_1`` is the first hidden layer's size. Computed in float64 and returned
            in the dtype of ``X`` (float32 or float64).
        H_std : ndarray of shape (n_samples, K_1)
            Only with ``return_std=True``.

        Raises
        ------
        ValueError
            If ``X`` is not binary, has another number of features than the training
            data, or the model has no hidden layer (the fully visible SBN).
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        score_samples : log-likelihood of each row.
        impute : fill missing entries.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import BayesianSBN
        >>> X = (np.random.default_rng(0).random((40, 6)) < 0.3).astype(float)
        >>> sbn = BayesianSBN(n_components=3, n_iter=5, random_state=0).fit(X)
        >>> sbn.transform(X).shape
        (40, 3)
        >>> H, H_std = sbn.transform(X, return_std=True)
        >>> bool(np.all((H_std >= 0) & (H_std <= 0.5)))
        True
        """
        check_is_fitted(self)
        dtype = _float_dtype(X)
        X = self._validate(X, reset=False, dense=False)
        if not return_std:
            return self._by_chunks(X, self._transform).astype(dtype, copy=False)
        both = self._by_chunks(X, lambda rows, chunk: np.concatenate(
            self._transform(rows, chunk, return_std=True), axis=1))
        k = both.shape[1] // 2
        return both[:, :k].astype(dtype, copy=False), both[:, k:].astype(dtype, copy=False)

    def _transform(self, X, chunk=0, return_std=False):
        if not self.params_.weights:
            raise ValueError("the fully visible SBN has no hidden units to transform to")
        rngs = spawn_generators(self._call_seed(chunk), len(self.posterior_samples_))
        return hidden_moments(self.posterior_samples_, X, rngs, n_burn=_TRANSFORM_BURN,
                              n_keep=_TRANSFORM_KEEP, return_std=return_std)

    @property
    def _n_features_out(self):
        return len(self.params_.biases[1]) if self.params_.weights else 0

    def score_samples(self, X, method=None, *, return_std=False):
        """``log p(x)`` of each row under the posterior-mean parameters (Eq. 7-8).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            A ``dask.array.Array`` chunked by rows is processed block by block
            where it lives (see :ref:`dask_array_inference`).
            Binary data; a CSR matrix is densified ``batch_size`` rows at a time.
        method : {None, "stratified", "warm_ais", "ais", "is"}, default=None
            ``None``: exact by enumeration when the hidden layers hold at most 16
            units, else ``"stratified"`` up to 64 units and ``"warm_ais"`` above
            (``"ais"`` for an autoregressive model).
            ``"stratified"``: per row, 4 to 32 collapsed Gibbs chains (fewer for
            wider nets: 16 at 40 units; 16 sweeps each, the first 14 with the
            likelihood tempered) start from the prior; the distinct states they
            visit are summed exactly, and 64 importance draws from a mixture of
            the chains' factorised conditionals estimate the rest of ``p(x)``,
            vectorised over rows: about 10 CPU-ms per row at 784-40, unbiased for
            ``p(x)`` whatever the chains found (see the user guide).
            ``"warm_ais"``: per row, 3 short Gibbs chains fit a factorised
            Bernoulli proposal ``q(h | x)``, then 4 to 16 AIS runs (4 at 200
            units) anneal from ``q`` to the posterior through 20 temperatures
            (about 20 CPU-ms per row at 784-200).
            ``"ais"``: annealed importance
            sampling from the prior (``n_ais_runs`` chains per point,
            ``n_ais_betas`` temperatures, Pólya-Gamma augmented sweeps as
            transitions), the route :meth:`log_likelihood_bounds` checks.
            ``"is"`` (``inference="dsghmc_nais"`` only): importance sampling with
            the trained recognition network as proposal, ``n_is_samples`` per point
            (Du et al. appendix B.1), rows in blocks of bounded memory.
        return_std : bool, default=False
            Also return each row's Monte-Carlo standard error: 0 when exact; for
            ``"stratified"`` the delta-method error of the importance draws
            combined with a leave-one-chain-out jackknife over the chains; for
            ``"warm_ais"`` the larger of the delta-method error of the runs'
            weights and the log-normal one, ``sqrt(expm1(s^2) / n_runs)`` (at most
            ``s``) with ``s^2`` the variance of the runs' log weights (a few runs
            miss the weights' tail, which the delta method alone cannot see);
            else the delta-method error ``sd(w) / (sqrt(n_runs) mean(w))``
            (:func:`skdgm._core.mcmc.importance_std_err`).
            It measures run-to-run noise, not the mass of posterior modes that
            no chain or run reached (the log of an unbiased estimate is a
            stochastic lower bound); :meth:`log_likelihood_bounds` measures that
            for ``"ais"``.

        Returns
        -------
        log_px : ndarray of shape (n_samples,)
            Exact values, or AIS / IS estimates (stochastic lower bounds in
            expectation), seeded from ``random_state``.
        std_err : ndarray of shape (n_samples,)
            Only with ``return_std=True``.

        Raises
        ------
        ValueError
            For non-binary ``X``, a feature count other than the training data's,
            an unknown ``method``, or ``method="is"`` without a recognition network.
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        score : the mean of these values.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import BayesianSBN
        >>> X = (np.random.default_rng(0).random((40, 6)) < 0.3).astype(float)
        >>> sbn = BayesianSBN(n_components=3, n_iter=5, random_state=0).fit(X)
        >>> bool(np.all(sbn.score_samples(X) < 0))
        True
        """
        check_is_fitted(self)
        check_method(method, self.params_, getattr(self._engine, "recognition", None))
        X = self._validate(X, reset=False, dense=False)
        out = self._by_chunks(
            X, lambda rows, chunk: np.column_stack(self._score(rows, chunk, method)))
        return (out[:, 0], out[:, 1]) if return_std else out[:, 0]

    def score(self, X, y=None, *, return_std=False):
        """Mean ``log p(x)`` over the rows of ``X`` (see :meth:`score_samples`).

        With ``return_std=True`` also its Monte-Carlo standard error,
        ``sqrt(sum se_i^2) / n`` (every row has its own independent AIS runs; 0 when
        exact). It is *not* the sampling error over rows; for a table comparing
        models add ``std(score_samples(X)) / sqrt(n)`` for that. A dask array
        chunked by rows is scored block by block (``return_std=False`` only; see
        :ref:`dask_array_inference`).
        """
        lp, se = self.score_samples(X, return_std=True)
        mean = float(np.mean(lp))
        if not return_std:
            return mean
        return mean, float(np.sqrt(np.sum(se ** 2)) / max(len(se), 1))

    def _score(self, X, chunk, method):
        return log_marginal(self.params_, X, self._call_seed(chunk), method=method,
                            n_betas=self._ais_betas, n_runs=self.n_ais_runs,
                            n_jobs=self.n_jobs,
                            recognition=getattr(self._engine, "recognition", None),
                            n_is_samples=self.n_is_samples)

    def _ais_betas(self):
        """``n_ais_betas``, or the count ``"auto"`` chose for these parameters."""
        if self.n_ais_betas != "auto":
            return self.n_ais_betas
        rs = self.random_state
        seeded = isinstance(rs, (numbers.Integral, np.random.SeedSequence))
        key = (id(self.params_), self.n_ais_runs, self.ais_tol,
               repr(rs.state if isinstance(rs, np.random.SeedSequence) else rs))
        cache = self.__dict__.get("_auto_betas_cache")
        if seeded and cache is not None and cache[0] == key and cache[1] is self.params_:
            return cache[2]
        res = self.log_likelihood_bounds(_AUTO_BDMC_POINTS, "auto")
        self._auto_betas_cache = (key, self.params_, res.n_betas)
        return res.n_betas

    def log_likelihood_bounds(self, n_samples=100, n_betas=None, random_state=None, *,
                              tol=None):
        """Sandwich bounds on ``log p(x)`` by bidirectional Monte Carlo (Grosse et al. 2015).

        Simulates ``n_samples`` points ``(x, h)`` from the fitted model by exact
        ancestral sampling (posterior-mean parameters), then runs, per point,
        forward AIS from the prior (a stochastic lower bound on ``log p(x)``, the
        estimate :meth:`score_samples` makes) and reverse AIS from the generating
        ``h``, an exact posterior draw (a stochastic upper bound). Both use this
        estimator's AIS path, transitions and ``n_ais_runs``. The gap
        ``upper - lower`` bounds the AIS error at this many temperatures on data
        like the model's own; if it is small there, ``score_samples`` is
        trustworthy on held-out data of the same kind (Grosse et al. 2016).

        Parameters
        ----------
        n_samples : int, default=100
            Points simulated.
        n_betas : int or "auto", optional
            Inverse temperatures (default ``n_ais_betas``). ``"auto"``: doubled
            from 100 up to 12,800 until ``|gap| + 2 std err < tol``, with a
            ``ConvergenceWarning`` naming the gap when the cap stops it.
        random_state : None, int, SeedSequence, Generator or RandomState
            Default: derived from the estimator's ``random_state`` (the same int
            gives the same bounds).
        tol : float, optional
            Target gap for ``"auto"``, in nats per point (default ``ais_tol``).

        Returns
        -------
        result : skdgm._core.bdmc.BDMCResult
            ``lower``, ``upper``, ``gap`` (means over the simulated points) and
            their standard errors, ``n_betas``, ``exact_start=True``,
            ``target="log_likelihood"``, and ``exact``: the enumerated mean
            ``log p(x)`` of the simulated points when the hidden layers hold at
            most 16 units (else ``None``).
        """
        check_is_fitted(self)
        n_betas = self.n_ais_betas if n_betas is None else n_betas
        tol = self.ais_tol if tol is None else tol
        check_bounds_args(n_samples, n_betas, tol)
        seed = seed_for(self.random_state if random_state is None else random_state,
                        _BDMC_PURPOSE)
        return _bounds.log_likelihood_bounds_search(
            self.params_, n_samples, n_betas=n_betas, n_runs=self.n_ais_runs, tol=tol,
            seed=seed, transition=_gibbs.ais_transition_pg, n_jobs=self.n_jobs,
            what=type(self).__name__)

    def sample(self, n_samples=1, random_state=None):
        """Ancestral samples of the visible layer under the posterior-mean parameters.

        Parameters
        ----------
        n_samples : int, default=1
        random_state : int, Generator, SeedSequence or None, default=None
            Fresh randomness with ``None``; the same seed gives the same samples.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            Binary (0.0 / 1.0) rows drawn top layer first (Eq. 7-8).

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        impute : conditional samples given observed entries.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import BayesianSBN
        >>> X = (np.random.default_rng(0).random((40, 6)) < 0.3).astype(float)
        >>> sbn = BayesianSBN(n_components=3, n_iter=5, random_state=0).fit(X)
        >>> sbn.sample(4, random_state=0).shape
        (4, 6)
        """
        check_is_fitted(self)
        rng = as_generator(check_seed_sequence(random_state))
        return _model.sample_ancestral(self.params_, int(n_samples), rng)[0]

    def impute(self, X, n_sweeps=20):
        """Fill the ``NaN`` entries of binary ``X`` with estimates of ``P(x_miss = 1 | x_obs)``.

        A Gibbs chain per row alternates exact sweeps over the hidden units and
        redraws of the missing pixels from their full conditionals (Sec. 5.2), under
        each posterior sample in turn (the fill carried over, the hidden units
        restarted from the prior). The estimate is the missing pixels' full
        conditional probability averaged over the second half of the sweeps of
        every sample (Rao-Blackwellised), not a vote over the noisy 0/1 draws;
        threshold it at 0.5 for a 0/1 completion. Re-seeded from ``random_state``
        on every call (deterministic for an int).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            0/1 entries (after ``binarize``), ``NaN`` where missing; every row needs
            at least one observed entry.
        n_sweeps : int, default=20
            Gibbs sweeps per posterior sample; the first half are discarded.

        Returns
        -------
        X_filled : ndarray of shape (n_samples, n_features)
            The observed entries unchanged, the missing ones in ``[0, 1]`` (float64).

        Raises
        ------
        ValueError
            If the observed entries are not binary, a row has no observed entry,
            ``n_sweeps`` is invalid or the feature count differs.
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        sample : unconditional samples.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import BayesianSBN
        >>> X = (np.random.default_rng(0).random((40, 6)) < 0.3).astype(float)
        >>> sbn = BayesianSBN(n_components=3, n_iter=5, random_state=0).fit(X)
        >>> Xm = X[:2].copy()
        >>> Xm[0, 0] = np.nan
        >>> filled = sbn.impute(Xm)
        >>> bool(np.isnan(filled).any()), bool(0.0 <= filled[0, 0] <= 1.0)
        (False, True)
        """
        check_is_fitted(self)
        n_sweeps = check_n_sweeps(n_sweeps)
        X = self._validate(X, reset=False, allow_nan=True)
        missing = check_missing(X, f"{type(self).__name__}.impute")
        if not missing.any():
            return X.copy()
        return impute_over_samples(self.posterior_samples_, X, missing, self._call_rng(),
                                   n_sweeps=n_sweeps)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        # the kernels run in float64; transform casts back at the boundary
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        tags.input_tags.sparse = True
        return tags

    # ArviZ (to_inference_data): the kept states as named arrays
    _inference_arrays = staticmethod(inference_arrays)
