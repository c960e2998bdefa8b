"""``BayesianSBN``: the scikit-learn face of the deep sigmoid belief net wing.

Validates, orchestrates and stores; the numerics live in ``_model`` (the model),
``_gibbs`` / ``_vb`` (the kernels) and ``_engines`` (one training state per method).
"""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import ClassNamePrefixFeaturesOutMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .._core.base import (DIVERGENCE_BOUND, N_JOBS_CONSTRAINT, BaseGenerativeModel,
                          float_dtype as _float_dtype, iter_minibatches)
from .._core.exact import MAX_EXACT_UNITS
from .._core.schedules import make_schedule
from .._core.random import (RANDOM_STATE_CONSTRAINT, as_generator, check_seed_sequence, seed_for,
                            spawn_generators)
from . import _gibbs, _model
from ._dsghmc import DSGHMCGibbsEngine, DSGHMCNAISEngine, log_marginal_is
from ._engines import GibbsEngine, OnlineVBEngine, VBEngine
from ._priors import DEFAULT_PRIOR_PARAMS, init_prior_state
from .._core.posterior import check_missing, check_n_sweeps
from ._impute import gibbs_impute
from ._posterior import hidden_moments

__all__ = ["BayesianSBN"]

# inference name -> engine class (see ``_engines`` for the protocol). Part 2 adds
# "dsghmc_gibbs" / "dsghmc_nais" here.
_INFERENCE = {
    "gibbs": GibbsEngine,
    "vb": VBEngine,
    "online_vb": OnlineVBEngine,
    # part 2 (Du, Zhu and Zhang 2018): doubly stochastic SGHMC
    "dsghmc_gibbs": DSGHMCGibbsEngine,
    "dsghmc_nais": DSGHMCNAISEngine,
}

# The parameters only some inference methods read (every other parameter is read by
# all of them); setting one that the chosen method ignores warns at fit time. The
# user guide's table ("Which parameters each inference reads") mirrors this.
_DSGHMC_READS = {"batch_size", "total_samples", "burn_in", "learning_rate", "friction",
                 "sgmcmc", "n_sghmc_steps", "n_hidden_samples"}
_INFERENCE_READS = {"inference": {
    "gibbs": {"burn_in"},
    "vb": set(),
    "online_vb": {"batch_size", "total_samples", "learning_offset", "learning_decay",
                  "n_local_iter"},
    "dsghmc_gibbs": _DSGHMC_READS | {"gibbs_sweeps"},
    "dsghmc_nais": _DSGHMC_READS | {"recognition_learning_rate", "n_is_samples"},
}}

# A unit counts as active when some weight leaving it has |w| above this (the weights
# of units the shrinkage prior switched off collapse towards 0).
_ACTIVE_THRESHOLD = 0.1
# transform / impute: sweeps per posterior sample (discarded, then averaged)
_TRANSFORM_BURN, _TRANSFORM_KEEP = 5, 10


def _streaming(est):
    return _INFERENCE[est.inference].streaming if est.inference in _INFERENCE else False


class BayesianSBN(ClassNamePrefixFeaturesOutMixin, BaseGenerativeModel):
    """Deep sigmoid belief net with Bayesian inference (Gan, Henao, Carlson, Carin 2015).

    The generative model (Eq. 7-8): ``p(h^(L)_k = 1) = sigmoid(c^(L+1)_k)`` and
    ``p(h^(l-1)_k = 1 | h^(l)) = sigmoid(w^(l)_k . h^(l) + c^(l)_k)`` down to the
    visible layer ``v = h^(0)``. With ``autoregressive=True`` every unit also sees the
    earlier units of its own layer (the ARSBN of Eq. 6); ``n_components=()`` with
    ``autoregressive=True`` is the fully visible SBN.

    Parameters
    ----------
    n_components : int or tuple of int, default=(200,)
        Units per hidden layer, bottom first (upper bounds: the TPBN prior can switch
        units off).
    inference : {"gibbs", "vb", "online_vb", "dsghmc_gibbs", "dsghmc_nais"}, default="gibbs"
        Pólya-Gamma Gibbs sampling (Eq. 10-14), batch mean-field VB (Eq. 15-17), or
        online VB over minibatches (what ``partial_fit`` runs); or the doubly
        stochastic SGHMC of Du, Zhu and Zhang (2018) with gradients from collapsed
        Gibbs samples (``"dsghmc_gibbs"``) or from a neural adaptive importance
        sampler (``"dsghmc_nais"``), both streaming (see the DSGHMC user guide).
    prior : {"tpbn", "student_t", "normal"} or None, default=None
        Prior on the weights (Eq. 9; ``a = b = 1/2`` is the horseshoe); the biases get
        ``N(0, bias_var)``. See ``prior_params``. ``None``: ``"tpbn"`` for the part-1
        methods, and for the DSGHMC options the paper's Student-t (scale 0.09,
        ``df = 2.2``) on every parameter, biases included.
    autoregressive : bool, default=False
        Lower-triangular within-layer weights (Eq. 6).
    n_iter : int, default=100
        Gibbs iterations / VB sweeps (batch methods) or epochs (online VB), per
        pre-training stage and again for the global refinement.
    batch_size : int, default=100
        Minibatch size of online VB.
    burn_in : int, default=40
        Gibbs iterations of the final phase discarded before collecting samples. The
        defaults collect over ``n_iter - burn_in = 60`` iterations; the paper burns in
        40 and collects 100 (Sec. 5): ``n_iter=140`` reproduces it. The shorter default
        keeps a 784-200 fit near ten minutes here (~5 s per iteration).
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
    n_ais_betas, n_ais_runs : int, default=100, 10
        AIS schedule length and chains per point in ``score_samples`` (used when the
        hidden layers have more than 16 units in all; otherwise log p(x) is exact).
    random_state : int, RandomState, Generator or None
    verbose : int, default=0
    n_jobs : int, optional
        Workers for AIS chains.
    binarize : float or None, default=None
        Threshold for binarising the input (``X > binarize`` becomes 1, the rest 0)
        in every method that takes ``X``, as :class:`sklearn.neural_network.BernoulliRBM`
        users do with :class:`~sklearn.preprocessing.Binarizer`. ``None``: the input
        must already be 0/1 (anything else raises a ``ValueError``).

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
        ``log_px_is`` and ``ess_ratio`` for ``"dsghmc_nais"``) and ``stage`` (0 = global).
    n_iter_ : int
    """

    # which parameters each option reads (warned about once per call when unused)
    _option_reads = _INFERENCE_READS
    _parameter_constraints = {
        "n_components": ["array-like", Interval(numbers.Integral, 1, None, closed="left")],
        "inference": [StrOptions(set(_INFERENCE))],
        "prior": [StrOptions({"tpbn", "student_t", "normal"}), None],
        "autoregressive": ["boolean"],
        "n_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "burn_in": [Interval(numbers.Integral, 0, None, closed="left")],
        "n_posterior_samples": [Interval(numbers.Integral, 1, None, closed="left")],
        "pretrain": ["boolean"],
        "prior_params": [dict, None],
        "learning_offset": [Interval(numbers.Real, 0, None, closed="left")],
        "learning_decay": [Interval(numbers.Real, 0.5, 1.0, closed="both")],
        "n_local_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "total_samples": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "learning_rate": [Interval(numbers.Real, 0, None, closed="neither"), tuple, callable],
        "friction": [Interval(numbers.Real, 0, 1, closed="right")],
        "sgmcmc": [StrOptions({"sghmc", "sgnht"})],
        "n_sghmc_steps": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_hidden_samples": [Interval(numbers.Integral, 1, None, closed="left")],
        "gibbs_sweeps": [Interval(numbers.Integral, 1, None, closed="left")],
        "recognition_learning_rate": [Interval(numbers.Real, 0, None, closed="neither")],
        "n_is_samples": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_ais_betas": [Interval(numbers.Integral, 2, None, closed="left")],
        "n_ais_runs": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "verbose": ["verbose"],
        "n_jobs": N_JOBS_CONSTRAINT,
        "binarize": [Interval(numbers.Real, None, None, closed="neither"), None],
    }
    _element_constraints = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
    }
    _entry_constraints = {
        "prior_params": {k: [Interval(numbers.Real, 0, None, closed="neither")]
                         for k in DEFAULT_PRIOR_PARAMS},
    }

    def __init__(self, n_components=(200,), *, inference="gibbs", prior=None,
                 autoregressive=False, n_iter=100, batch_size=100, burn_in=40,
                 n_posterior_samples=10, pretrain=True, prior_params=None,
                 learning_offset=10.0, learning_decay=0.7, n_local_iter=4,
                 total_samples=None, learning_rate=0.01, friction=0.1, sgmcmc="sghmc",
                 n_sghmc_steps=10, n_hidden_samples=5, gibbs_sweeps=5,
                 recognition_learning_rate=1e-3, n_is_samples=1000, n_ais_betas=100, n_ais_runs=10, random_state=None,
                 verbose=0, n_jobs=None, binarize=None):
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
        self.random_state = random_state
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.binarize = binarize

    # ------------------------------------------------------------------ helpers
    def _validate(self, X, reset, allow_nan=False, dense=True):
        """Binary float64 ``X`` (``NaN`` allowed only for ``impute``).

        A CSR ``X`` stays sparse with ``dense=False`` (for :meth:`_by_chunks`);
        training densifies it: the batch methods keep dense per-row state of the
        same size anyway, and ``partial_fit``'s input is one minibatch.
        """
        X = self._validate_input(X, reset=reset, dtype=(np.float64, np.float32),
                                 binary=True, allow_nan=allow_nan, accept_sparse="csr")
        if sp.issparse(X):
            return X.toarray() if dense else X.astype(np.float64)
        return np.asarray(X, dtype=np.float64)

    def _by_chunks(self, X, func):
        """``func(rows, chunk)`` over ``X``: whole when dense, else ``batch_size`` dense rows
        at a time, each chunk with its own random streams (``chunk`` = 0, 1, ...)."""
        if not sp.issparse(X):
            return func(X, 0)
        return np.concatenate([func(X[sl].toarray(), k) for k, sl in
                               enumerate(iter_minibatches(X.shape[0], self.batch_size))])

    def _call_seed(self, chunk=0):
        """Per-call seed from ``random_state`` (same int, same answer); one per chunk."""
        ss = seed_for(self.random_state)
        if chunk == 0:
            return ss
        return np.random.SeedSequence(ss.entropy, spawn_key=tuple(ss.spawn_key) + (0xC5, chunk))

    def _check_settings(self):
        self._validate_params()
        sizes = tuple(int(k) for k in np.atleast_1d(np.asarray(self.n_components,
                                                                dtype=object)))
        if any(k < 1 for k in sizes):
            raise ValueError(f"n_components must hold positive ints, got {sizes}")
        if not sizes and not self.autoregressive:
            raise ValueError("n_components=() needs autoregressive=True (the FVSBN)")
        pp = dict(DEFAULT_PRIOR_PARAMS)
        pp.update(getattr(_INFERENCE[self.inference], "default_prior_params", {}))
        if self.prior_params:
            unknown = set(self.prior_params) - set(pp)
            if unknown:
                raise ValueError(f"unknown prior_params {sorted(unknown)}; "
                                 f"known: {sorted(pp)}")
            pp.update(self.prior_params)
        return sizes, pp

    def _options(self):
        return {"n_local_iter": self.n_local_iter, "learning_offset": self.learning_offset,
                "learning_decay": self.learning_decay,
                # DSGHMC (part 2)
                "learning_rate": self.learning_rate, "friction": self.friction,
                "sampler": self.sgmcmc, "n_sghmc_steps": self.n_sghmc_steps,
                "n_samples": self.n_hidden_samples, "gibbs_sweeps": self.gibbs_sweeps,
                "recognition_learning_rate": self.recognition_learning_rate,
                "burn_in": self.burn_in, "n_posterior_samples": self.n_posterior_samples}

    def _prior_kind(self):
        """``prior``, or the inference method's default when it is ``None``."""
        if self.prior is not None:
            return self.prior
        return getattr(_INFERENCE[self.inference], "default_prior", "tpbn")

    def _prior_states(self, params, pp):
        return [init_prior_state(self._prior_kind(),
                                 (len(b), _model.row_mask(params, l).shape[1] - 1), pp)
                for l, b in enumerate(params.biases)]

    def _new_engine(self, params, pp, prior_states=None):
        if prior_states is None:
            prior_states = self._prior_states(params, pp)
        return _INFERENCE[self.inference](params, prior_states, self._prior_kind(), pp,
                                          self._options())

    def _run(self, engine, X, rng, n_iter, stage, collect):
        """``n_iter`` iterations (or epochs) of ``engine`` on ``X``; thinned samples if asked."""
        samples = []
        thin = max(1, (n_iter - self.burn_in) // self.n_posterior_samples)
        for t in range(n_iter):
            if engine.streaming:
                metrics = {}
                for batch in iter_minibatches(len(X), self.batch_size, rng):
                    metrics = engine.step(X[batch], rng, n_total=len(X))
            else:
                metrics = engine.step(X, rng)
            self._log_iteration(stage=stage, **metrics)
            done = t + 1 - self.burn_in
            if collect and engine.keeps_samples and done > 0 and done % thin == 0:
                samples.append(engine.posterior_draw(rng))
        if collect:
            if engine.keeps_samples:
                samples = samples[-self.n_posterior_samples:] or [engine.posterior_draw(rng)]
            else:
                samples = [engine.posterior_draw(rng) for _ in range(self.n_posterior_samples)]
        return samples

    def _finish(self, engine, samples):
        if engine.keeps_samples:
            mean = samples[0].copy()
            for part in ("weights", "biases") + (("lateral",) if mean.lateral else ()):
                for i in range(len(getattr(mean, part))):
                    getattr(mean, part)[i][...] = np.mean(
                        [getattr(s, part)[i] for s in samples], axis=0)
        else:
            mean = engine.current_params()
        self.params_ = mean
        self.posterior_samples_ = samples
        self.coefs_ = list(mean.weights)
        self.intercepts_ = list(mean.biases)
        self.lateral_coefs_ = None if mean.lateral is None else list(mean.lateral)
        self.n_active_units_ = [int(np.sum(np.abs(W).max(axis=0) > _ACTIVE_THRESHOLD))
                                for W in mean.weights]
        self._engine = engine

    # --------------------------------------------------------------------- fit
    def _reset(self, X):
        """What ``fit`` and a first ``partial_fit`` share: checks, fresh streams, history."""
        X = self._validate_training_data(X, reset=True)
        return (X,) + self._fresh_start()

    def _validate_training_data(self, X, *, reset):
        if reset:
            self._check_settings()
        # with reset=False, validate_data names a changed feature count
        return self._validate(X, reset=reset)

    def _fresh_start(self):
        sizes, pp = self._check_settings()
        self._seed_seq = seed_for(self.random_state)
        rng = as_generator(self._seed_seq.spawn(1)[0])
        self._start_history()
        self._n_seen = 0
        return sizes, pp, rng

    def fit(self, X, y=None):
        """Train on binary ``X`` (n_samples, n_features); greedy pre-training first when deep."""
        X, sizes, pp, rng = self._reset(X)
        D, L = X.shape[1], len(sizes)
        if self.pretrain and L > 1:
            data, parts = X, []
            for s in range(L):
                sub = _model.init_params(data.shape[1], sizes[s:s + 1], rng,
                                         autoregressive=self.autoregressive)
                eng = self._new_engine(sub, pp)
                eng.init_data(data, rng)
                self._run(eng, data, rng, self.n_iter, stage=s + 1, collect=False)
                parts.append(eng.export())
                data = eng.hidden_sample(data, rng)[0]
            params, states, hidden = self._assemble(D, sizes, parts, pp)
            engine = self._new_engine(params, pp, states)
            engine.init_data(X, rng, hidden)
        else:
            params = _model.init_params(D, sizes, rng, autoregressive=self.autoregressive)
            engine = self._new_engine(params, pp)
            engine.init_data(X, rng)
        samples = self._run(engine, X, rng, self.n_iter, stage=0, collect=True)
        self._finish(engine, samples)
        self._n_seen = len(X)
        return self

    def _assemble(self, D, sizes, parts, pp):
        """Stack the single-layer stages (Sec. 3.3) into one deep SBN."""
        params = _model.init_params(D, sizes, np.random.default_rng(0),
                                    autoregressive=self.autoregressive)
        states = self._prior_states(params, pp)
        hidden = []
        for s, (p, st, h) in enumerate(parts):
            _model.set_layer_rows(params, s, _model.layer_rows(p, 0))
            states[s] = st[0]
            hidden.append(None if h is None else h[0])
        top = parts[-1][0]
        # the top stage's hidden prior rows [lateral | bias] become the deep top rows
        _model.set_layer_rows(params, len(sizes), _model.layer_rows(top, 1))
        states[len(sizes)] = parts[-1][1][1]
        return params, states, (None if any(h is None for h in hidden) else hidden)

    @available_if(_streaming)
    def partial_fit(self, X, y=None):
        """One online-VB step on the minibatch ``X`` (initialises the model on first call)."""
        return super().partial_fit(X, y)

    # The hooks of the training skeleton that partial_fit runs
    # (BaseGenerativeModel.partial_fit); fit keeps its own stages (Sec. 3.3).
    def _is_initialized(self):
        return hasattr(self, "_engine")

    def _initialize(self, X, *, fit):
        sizes, pp, rng = self._fresh_start()
        params = _model.init_params(X.shape[1], sizes, rng,
                                    autoregressive=self.autoregressive)
        engine = self._new_engine(params, pp)
        engine.init_data(X, rng)
        return engine, rng

    def _resume(self, X):
        self._refresh_engine(self._engine)
        return self._engine, as_generator(self._seed_seq.spawn(1)[0])

    def _partial_step(self, X, ctx):
        engine, rng = ctx
        self._n_seen += len(X)
        n_total = self.total_samples or self._n_seen
        metrics = engine.step(X, rng, n_total=n_total)
        self._log_iteration(stage=0, **metrics)
        if hasattr(engine, "streaming_samples"):    # DSGHMC: thinned samples of the stream
            samples = engine.streaming_samples()
        else:
            samples = [engine.posterior_draw(rng) for _ in range(self.n_posterior_samples)]
        self._finish(engine, samples)

    def _refresh_engine(self, engine):
        """Hand the engine the current hyper-parameters (``set_params`` between calls).

        Engines read ``options`` at every step; the DSGHMC trainer keeps its step
        schedule (evaluated at its own minibatch counter, so a new one continues
        from there) and its friction, which are replaced here.
        """
        opts = {k: v for k, v in self._options().items() if v is not None}
        engine.options.update(opts)
        trainer = getattr(engine, "trainer", None)
        if trainer is not None:
            trainer.schedule = make_schedule(self.learning_rate)
            trainer.sampler.friction = float(self.friction)
            trainer.n_sghmc_steps = int(self.n_sghmc_steps)
            trainer.n_samples = int(self.n_hidden_samples)
            trainer.gibbs_sweeps = int(self.gibbs_sweeps)
            if trainer.adam is not None:
                trainer.adam.learning_rate = float(self.recognition_learning_rate)

    def _divergence_params(self):
        if not hasattr(self, "params_"):
            return {}, None
        p = self.params_
        parts = {"weights": list(p.weights), "biases": list(p.biases)}
        if p.lateral:
            parts["lateral"] = list(p.lateral)
        return parts, DIVERGENCE_BOUND

    # --------------------------------------------------------------- inference
    def _call_rng(self, chunk=0):
        """Fresh per-call generator seeded from ``random_state`` (same int, same answer)."""
        return as_generator(self._call_seed(chunk))

    def _n_hidden_total(self):
        return sum(len(b) for b in self.params_.biases[1:])

    def transform(self, X, *, return_std=False):
        """``E[h^(1) | x]`` averaged over the posterior samples (exact when small).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features), binary
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
        H : ndarray of shape (n_samples, n_components[0])
            Computed in float64 and returned in the dtype of ``X`` (float32 or float64).
        H_std : ndarray of shape (n_samples, n_components[0])
            Only with ``return_std=True``.
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

    def score_samples(self, X, method=None):
        """``log p(x)`` under the posterior-mean parameters.

        ``method=None``: exact by enumeration when the hidden layers hold at most 16
        units, else AIS from the prior (``n_ais_runs`` chains per point,
        ``n_ais_betas`` temperatures, Pólya-Gamma augmented sweeps as transitions).
        ``"ais"``: always AIS. ``"is"`` (``inference="dsghmc_nais"`` only):
        importance sampling with the trained recognition network as proposal,
        ``n_is_samples`` per point (Du et al. appendix B.1).
        """
        check_is_fitted(self)
        if method not in (None, "ais", "is"):
            raise ValueError(f"method must be None, 'ais' or 'is', got {method!r}")
        X = self._validate(X, reset=False, dense=False)
        if method == "is" and getattr(self._engine, "recognition", None) is None:
            raise ValueError("method='is' needs the recognition network of "
                             "inference='dsghmc_nais'")
        return self._by_chunks(X, lambda rows, chunk: self._score(rows, chunk, method))

    def _score(self, X, chunk, method):
        if method == "is":
            lp, _ = log_marginal_is(self.params_, self._engine.recognition, X,
                                    self.n_is_samples, self._call_rng(chunk))
            return lp
        if method is None and self._n_hidden_total() <= MAX_EXACT_UNITS:
            return _model.log_marginal_exact(self.params_, X)
        lp, _ = _model.log_marginal_ais(self.params_, X, n_betas=self.n_ais_betas,
                                        n_runs=self.n_ais_runs,
                                        random_state=self._call_seed(chunk),
                                        n_jobs=self.n_jobs,
                                        transition=_gibbs.ais_transition_pg)
        return lp

    def sample(self, n_samples=1, random_state=None):
        """Ancestral samples of the visible layer (posterior-mean parameters)."""
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
        """
        check_is_fitted(self)
        n_sweeps = check_n_sweeps(n_sweeps)
        X = self._validate(X, reset=False, allow_nan=True)
        missing = check_missing(X, f"{type(self).__name__}.impute")
        if not missing.any():
            return X.copy()
        rng = self._call_rng()
        total, state = np.zeros(X.shape), None
        for p in self.posterior_samples_:
            state, est = gibbs_impute(p, X, missing, rng, n_sweeps=n_sweeps,
                                      n_burn=n_sweeps // 2, state=state)
            total += est
        return np.where(missing, total / len(self.posterior_samples_), X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        # the kernels run in float64; transform casts back at the boundary
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        tags.input_tags.sparse = True
        return tags
