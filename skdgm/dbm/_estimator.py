"""``DBMCAST``: the scikit-learn face of the deep Boltzmann machine wing.

It validates, keeps the random streams and the persistent chains, and orchestrates
the kernels of :mod:`._model` (energies, mean-field, Gibbs, AIS, exact helpers),
:mod:`._tempering` (the negative-phase samplers), :mod:`._train` (greedy
pre-training and the stochastic-approximation step of Sec. 2.2), :mod:`._bounds`,
:mod:`._impute` and :mod:`._posterior`. The estimator commits a step only after the
divergence check.
"""

import time

import numpy as np
import scipy.sparse as sp
from sklearn.base import ClassNamePrefixFeaturesOutMixin
from sklearn.utils.validation import check_is_fitted

from .._core.base import (DIVERGENCE_BOUND, EARLY_STOPPING_READS, HISTORY_CAP,
                          BaseGenerativeModel, float_dtype as _float_dtype, working_dtype)
from .._core.blocks import float_blocks, is_dask_array
from .._core.random import as_generator, check_seed_sequence, seed_for, spawn_seeds
from .._core.interop import InferenceDataMixin
from .._core.posterior import IterateKeeper, check_missing, check_n_sweeps
from . import _bounds, _tempering
from ._impute import impute_over_states
from ._defaults import (AUTO_PRETRAIN_UPDATES, ELEMENT_CONSTRAINTS, MF_STARTS, OPTION_READS,
                        PARAMETER_CONSTRAINTS, auto_n_components, auto_passes, check_sizes,
                        resolve_fit_passes)
from ._posterior import inference_arrays, mean_field_inference
from ._scoring import HELD_OUT_RUNS, check_bound, fast_bound_rows, held_out_bound
from ._train import (TrainingState, init_params, initial_chain_layers, pretrain_verbose,
                     rate_schedule, record_arrays, sa_pass, time_left)

__all__ = ["DBMCAST"]

# The paper's stochastic-approximation rate is 10 / (2000 + t): 0.005 at t = 0.
_LR_T0 = 2000.0
# Wang-Landau gain gamma_t = wl_gain * 1000 / (1000 + t): decays like 1/t, as the
# convergence of the weights (Eq. 6) requires, after about a thousand steps.
_WL_T0 = 1000.0
# The verbose figures (the batch's unnormalised bound and reconstruction error, three
# products) are computed on every _MONITOR_EVERY-th update of a pass, the first
# included; the others skip them (issue 15: they cost ~15 % of an update).
_MONITOR_EVERY = 10
# Updates of the negative chains' energy trace behind history_'s split-R-hat and ESS.
_RHAT_WINDOW = 50





class DBMCAST(ClassNamePrefixFeaturesOutMixin, InferenceDataMixin, BaseGenerativeModel):
    """Binary deep Boltzmann machine trained by stochastic approximation with CAST.

    Salakhutdinov (2010), "Learning Deep Boltzmann Machines using Adaptive MCMC".
    The positive phase is mean-field (Sec. 2.1; by default the better, per
    row, of a doubled-weight start and a start with the odd layers off);
    the negative phase uses persistent chains advanced by ``sampler`` (Sec. 2.2,
    3, 5, 6.1); parameters follow Eq. 2 with a decreasing learning rate.

    Parameters
    ----------
    n_components : tuple of int or "auto", default="auto"
        Units per hidden layer (any depth >= 1; depth 1 is an RBM). ``"auto"``
        is ``(h, 2 h)`` with ``h = n_features // 4`` clipped to [16, 500]
        (16-32 on 8x8 digits, whose 16 odd units keep ``log Z`` exact; 196-392 on
        MNIST); the sizes used are in ``n_components_``. The paper's MNIST
        model is ``(500, 1000)`` (see the presets in the user guide).
    sampler : {"cast", "sap", "fpcd", "trans_sap", "adaptive_st"}, default="cast"
        Negative-phase sampler: coupled adaptive simulated tempering (Sec. 6.1),
        plain persistent Gibbs (SAP/PCD), fast-weight PCD (Sec. 3), tempered
        transitions every ``swap_interval`` updates (Trans-SAP), or
        ``swap_interval`` Gibbs updates alternating with one adaptive ST run
        (Sec. 6; persistent tempered chains, of which those at temperature 1
        form the negative phase).
    n_temperatures : int, default=20
        Number ``K`` of inverse temperatures, spaced uniformly from 1 to
        ``beta_min`` (also the levels of tempered transitions).
    beta_min : float, default=0.9
        Lowest inverse temperature (the paper's MNIST setting). Small or
        strongly bimodal models need it much lower (the 2-node toy needs ~0).
    wl_gain : float or schedule, default=1.0
        Wang-Landau gain of Eq. 5. A float ``g`` means
        ``gamma_t = g * 1000 / (1000 + t)`` over the sampler's ST steps; any
        :func:`skdgm._core.schedules.make_schedule` spec or callable is used as is.
    swap_interval : int, default=50
        Mean number of updates between CAST swaps (Sec. 8), and the number
        between tempered transitions (``trans_sap``) and between adaptive ST runs
        (``adaptive_st``, the ``N`` of Sec. 6, also the length of each run).
    swap : {"at_beta_one", "last_visit"}, default="at_beta_one"
        How a CAST slow chain gets its fast partner's state. ``"last_visit"``
        is the paper's rule: every ``swap_interval`` updates, the last state the
        fast chain had at temperature 1, which is biased toward high energy.
        ``"at_beta_one"`` exchanges the two states, at updates at which the fast
        chain is at temperature 1, with probability
        ``min(1, n_temperatures / swap_interval)``; the choice depends on the
        current temperature only, so the exchange is unbiased.
    n_chains : int, default=100
        Persistent chains (slow chains for CAST, each with one fast partner).
    n_mean_field : int, default=5
        Maximum mean-field sweeps in the positive phase of training (the paper
        uses 5 to speed up learning).
    n_mean_field_eval : int, default=100
        Maximum mean-field sweeps in :meth:`transform` and :meth:`score_samples`,
        which warn (``ConvergenceWarning``) about rows that have not converged.
    mean_field_tol : float, default=1e-4
        A row's mean-field stops when none of its means moves by more than this
        in a sweep; it has converged if that happened within the allowed sweeps.
    mean_field_starts : {"auto", "best", "doubled", "zeros"}, default="auto"
        Where mean-field starts: ``"doubled"``, a bottom-up pass with doubled
        weights (Salakhutdinov & Hinton 2009); ``"zeros"``, the odd hidden layers
        off; ``"best"``, both, keeping per row the fixed point with the higher
        bound (Eq. 3), at the cost of a second mean-field run; each in training
        and in inference alike. ``"auto"``: the positive phase of training from
        ``"doubled"`` alone (the paper's update), inference (``transform``,
        ``score_samples``) from both. The bound has several fixed points on
        large models, and the doubled start alone reached one ~290 nats below
        the other on binarised digits with the layer sizes (500, 1000), so
        inference keeps both; training does not need the second start: on
        binarized MNIST the one-start model scored 5.6 nats higher at the same
        CPU (issue 26; see the user guide).
    learning_rate : float or schedule, default=0.05
        A float ``a`` means ``a * 2000 / (2000 + t)`` over updates ``t`` (the
        paper: 0.005 decreased as 10 / (2000 + t), for its 200,000 updates);
        or a schedule spec. A float must be positive (0 would train nothing and
        is rejected). The default is ten times the paper's so that the few
        thousand updates of ``n_iter="auto"`` move the weights.
    fpcd_learning_rate : float, default=0.005
        Constant rate of the FPCD fast weights.
    fpcd_decay : float, default=0.95
        Per-update shrinkage of the FPCD fast weights.
    batch_size : int, default=100
        Rows per minibatch, at most: ``n`` rows are cut into ``ceil(n / batch_size)``
        near-equal minibatches.
    n_iter : int or "auto", default="auto"
        Passes over the data in :meth:`fit` (after pre-training). ``"auto"``:
        enough passes for 2,400 parameter updates and at least 5 passes, i.e.
        ``max(5, ceil(2400 / ceil(n_samples / batch_size)))`` (200 passes of
        1,200 rows, 5 passes of 60,000); ``n_iter_`` is the number made.
    early_stopping : bool or "auto", default="auto"
        Hold out ``validation_fraction`` of the rows given to :meth:`fit`, score
        them after every pass, stop when the score has not improved by more than
        a relative ``tol`` for ``n_iter_no_change`` passes, and keep the parameters
        of the best pass (as :class:`~sklearn.neural_network.MLPClassifier`). The
        scores are in ``validation_scores_`` and ``history_["validation_score"]``,
        the best in ``best_validation_score_``, why training stopped in
        ``stopping_reason_``. ``"auto"``: on when ``n_iter="auto"`` and ``fit`` gets
        at least 5,000 rows. ``n_iter="auto"`` then stops when the bound's
        least-squares trend over the last half of the passes is flat, as the noisy
        bound's best-so-far cannot tell (:class:`skdgm._core.stopping.Trend`), within
        eight times its fixed rule (216 passes on 10,000 MNIST rows, within 300
        CPU-s) and the passes that hold 1.1 times eight times its 2,400 updates (24
        passes at 100,000 rows, not eight times the floor of 5;
        :func:`skdgm._core.stopping.auto_cap`). The held-out figure is the fast
        bound (as :meth:`score`) minus a cheap AIS ``log Z`` (300 temperatures, at
        most 8 runs, on a fixed stream). The same on a dask array: the held-out
        rows (the same as in memory) are gathered to the client once, and only the
        others are trained on, where their blocks live (pre-training too).
        :meth:`partial_fit` ignores it.
    validation_fraction : float, default=0.1
        Fraction of the rows held out with ``early_stopping`` (at least one row
        each side).
    n_iter_no_change : int, default=10
        Passes without an improvement of more than ``tol`` before stopping.
    tol : float, default=1e-4
        Relative improvement of the validation score (per-row mean bound) that
        counts as progress: ``score > best + tol * |best|``.
    pretrain : bool, default=True
        Greedy layer-wise RBM pre-training with doubled weights before joint
        training.
    pretrain_n_iter : int or "auto", default="auto"
        CD-1 passes per RBM of the pre-training stack. ``"auto"``: enough passes
        for 600 CD-1 updates per RBM and at least one
        (``max(1, ceil(600 / ceil(n_samples / batch_size)))``); the number used
        is in ``pretrain_n_iter_``.
    pretrain_learning_rate : float, default=0.05
        CD-1 step size of the pre-training RBMs; must be positive (0 would leave
        the random initial weights in place while reporting a pre-training: pass
        ``pretrain=False`` instead).
    n_ais_betas : int or "auto", default=1000
        Inverse temperatures of the AIS estimate of ``log Z``, made lazily when
        ``log_partition_`` (or :meth:`score_samples`) first needs it after an
        update, and cached against the parameters (exact enumeration instead
        when the odd layers have at most 16 units). ``"auto"``: doubled from 100
        (up to 12,800) until the bidirectional Monte Carlo gap on ``log Z``
        (:meth:`log_likelihood_bounds`) is below ``ais_tol``, with a
        ``ConvergenceWarning`` naming the gap reached when the cap stops it; the
        forward run of the last round is then the estimate.
    n_ais_runs : int, default=100
    ais_tol : float, default=0.5
        The BDMC gap on ``log Z``, in nats, that ``n_ais_betas="auto"`` aims for
        (``|gap| + 2 standard errors < ais_tol``).
    n_posterior_samples : int, default=1
        Parameter states kept for :meth:`transform` and :meth:`impute`, which
        average over them: the parameters at the end of each of the last
        ``n_posterior_samples`` passes of stochastic approximation (of
        :meth:`fit`, or one per :meth:`partial_fit` call). Stochastic
        approximation is an optimiser of the likelihood, not a posterior sampler:
        these are an *iterate ensemble* whose spread reflects the noise of the
        updates and the learning rate, not posterior uncertainty. ``1`` keeps
        only the current parameters (no extra memory), the behaviour before this
        option existed.
    average : float in [0, 1), default=0.999
        Decay of an exponential moving average of the parameters over updates
        (iterate averaging, Polyak & Juditsky 1992, against the noise floor of
        stochastic approximation; :mod:`skdgm._core.averaging`): ``coefs_`` and
        ``intercepts_``, hence early stopping's held-out figure,
        :meth:`transform`, :meth:`score_samples` and ``log_partition_``, are the
        average, whose time constant is about ``1 / (1 - average)`` updates
        (with a warm-up that follows the first iterates closely). The raw
        iterate alone drives the persistent chains and the next update, so the
        Markov chain's path does not depend on it. ``0``: no average (the
        behaviour before issue 25). The default's window, about 1,000 updates
        (10 passes of 10,000 rows), with the warm-up averages roughly the last
        tenth of a shorter run.
    momentum : float in [0, 1), default=0.0
        Heavy-ball momentum on the update of Eq. 2 (``v = momentum v + lr g``);
        the authors' code uses 0.5, then 0.9. ``0``: the plain step.
    n_gibbs_steps : int, default=1
        Steps of the persistent negative-phase sampler per parameter update
        (the authors' code runs 5 Gibbs sweeps); each costs one sweep of every
        chain (two for CAST's slow and fast chains).
    random_state : None, int, SeedSequence or Generator, default=None
    verbose : int, default=0
        ``1``: one line per pass (see ``history_``) with the elapsed time and an
        estimate of the time left in :meth:`fit`, one line per pre-trained RBM
        (its reconstruction cross-entropy) and one per ``log Z`` estimate.
    n_jobs : int, default=None
        Workers for the AIS runs (results do not depend on it).
    binarize : float or None, default=None
        Threshold for binarising the input (``X > binarize`` becomes 1, the rest 0)
        in every method that takes ``X``, as :class:`sklearn.neural_network.BernoulliRBM`
        users do with :class:`~sklearn.preprocessing.Binarizer`. ``None``: the input
        must already be 0/1 (anything else raises a ``ValueError``).
    dtype : {"float32", "float64"} or None, default="float32"
        Precision of the parameters and of training. ``fit`` (and a first
        ``partial_fit``) converts the data to it once per call (0/1 data are exact
        in float32), so float64 and float32 input give the same fit; ``None``
        follows the training input's dtype (the rule before issue 26). A float32
        update costs about half a float64 one. Later ``partial_fit`` calls keep
        the fitted model's dtype; inference runs in the wider of the model's and
        the input's dtype, ``log Z`` in float64.

    Attributes
    ----------
    coefs_ : list of ndarray
        ``W_l`` of shape ``(n_l, n_{l+1})``, visible-to-first-hidden first. In the
        dtype of the input the model was first fitted on: float32 input trains a
        float32 model (about twice as fast per update), anything else float64.
        ``log Z`` is always computed in float64.
    intercepts_ : list of ndarray
        Biases ``b_l`` of every layer, visible first (dtype as ``coefs_``).
    log_partition_ : float
        Estimate of ``log Z`` for the current parameters; ``log_partition_std_``
        is its standard error (0 when exact). Computed on first access after a
        parameter update and cached until the next one (training itself never
        needs it, so a stream of :meth:`partial_fit` calls pays for it only
        when a score is asked for). Seeded from ``random_state``: the same int
        gives the same estimate.
    history_ : dict of lists of float
        One scalar per pass, the figures of the verbose line (the last
        ``HISTORY_CAP`` = 10,000 passes are kept):
        ``reconstruction_error`` (the fit-quality figure: mean over the rows of
        the monitored minibatches, every 10th of a pass from the first, of the
        cross-entropy, in nats per row, of ``v`` under ``p(v | h^1 = mu_1)`` at
        the positive-phase mean-field means, computed before the update; lower
        is better), ``unnormalised_bound`` (mean of Eq. 3 plus ``log Z`` over the
        same rows; ``log Z`` moves with the parameters, so it is not comparable
        across passes), ``learning_rate``, ``mean_field_unconverged``
        (the fraction of the pass's rows whose positive-phase mean-field stopped
        at ``n_mean_field`` sweeps before converging), ``mean_field_zeros_start``
        (the fraction whose best fixed point came from the ``"zeros"`` start),
        the sampler's scalar statistics: ``temperature_flatness`` (adaptive ST,
        CAST: ``K`` times the smallest temperature occupancy of the pass, 1 for a
        flat histogram, 0 when a temperature was never visited), ``n_swaps``
        (CAST), ``tt_acceptance`` (Trans-SAP, over the run so far; NaN before
        the first tempered transition), ``fast_weight_norm`` (FPCD),
        ``negative_chains`` (adaptive ST: mean number of chains at temperature 1,
        which alone form the negative phase) and ``n_fallback`` (adaptive ST:
        updates with none, which reused the previous set);
        ``energy_split_rhat`` and ``energy_ess`` (every sampler but adaptive ST,
        whose negative set changes size: the rank-normalised split-R-hat and bulk
        effective sample size of Vehtari et al. (2021),
        :mod:`skdgm._core.diagnostics`, of the negative chains' energy over the
        last 50 updates, NaN before the fourth update; the parameters move
        within that window, so an R-hat above 1 mixes slow mixing with the drift
        of the model); ``time_left`` (an
        estimate, in seconds, of the rest of :meth:`fit`; 0 in
        :meth:`partial_fit`) and ``time`` (seconds since the end of pre-training).
    sampler_history_ : dict of lists of ndarray
        Per pass, the tempering samplers' arrays: ``temperature_occupancy`` (the
        fraction of the pass's fast-chain steps at each temperature) and
        ``adaptive_log_weights`` (``log g_k``, pinned to ``log g_1 = 0``); empty
        for the other samplers. Capped like ``history_``.
    n_components_ : tuple of int
        The sizes used (``n_components`` with ``"auto"`` resolved).
    pretrain_n_iter_ : int
        CD-1 passes made per pre-trained RBM by the last :meth:`fit` (0 without
        pre-training).
    n_iter_ : int
        Passes of stochastic approximation made (by :meth:`fit`, then one per
        :meth:`partial_fit`).
    n_updates_ : int
        Parameter updates made so far.
    posterior_samples_ : list of (coefs, intercepts)
        The kept parameter states, oldest first (``n_posterior_samples``; the
        current parameters alone by default). An iterate ensemble, not posterior
        samples.
    """

    # which parameters each option reads (warned about once per call when unused)
    _option_reads = {**OPTION_READS, **EARLY_STOPPING_READS}
    # the dict lives beside the wing's defaults (issue 16: the estimator file orchestrates)
    _parameter_constraints = PARAMETER_CONSTRAINTS
    _element_constraints = ELEMENT_CONSTRAINTS

    def __init__(self, n_components="auto", *, sampler="cast", n_temperatures=20,
                 beta_min=0.9, wl_gain=1.0, swap_interval=50, swap="at_beta_one",
                 n_chains=100, n_mean_field=5, n_mean_field_eval=100, mean_field_tol=1e-4,
                 mean_field_starts="auto", learning_rate=0.05, fpcd_learning_rate=0.005,
                 fpcd_decay=0.95, batch_size=100, n_iter="auto",
                 early_stopping="auto", validation_fraction=0.1, n_iter_no_change=10, tol=1e-4,
                 pretrain=True, pretrain_n_iter="auto", pretrain_learning_rate=0.05,
                 n_ais_betas=1000, n_ais_runs=100, ais_tol=0.5, n_posterior_samples=1,
                 average=0.999, momentum=0.0, n_gibbs_steps=1, random_state=None, verbose=0,
                 n_jobs=None, binarize=None, dtype="float32"):
        self.n_components = n_components
        self.sampler = sampler
        self.n_temperatures = n_temperatures
        self.beta_min = beta_min
        self.wl_gain = wl_gain
        self.swap_interval = swap_interval
        self.swap = swap
        self.n_chains = n_chains
        self.n_mean_field = n_mean_field
        self.n_mean_field_eval = n_mean_field_eval
        self.mean_field_tol = mean_field_tol
        self.mean_field_starts = mean_field_starts
        self.learning_rate = learning_rate
        self.fpcd_learning_rate = fpcd_learning_rate
        self.fpcd_decay = fpcd_decay
        self.batch_size = batch_size
        self.n_iter = n_iter
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.pretrain = pretrain
        self.pretrain_n_iter = pretrain_n_iter
        self.pretrain_learning_rate = pretrain_learning_rate
        self.n_ais_betas = n_ais_betas
        self.n_ais_runs = n_ais_runs
        self.ais_tol = ais_tol
        self.n_posterior_samples = n_posterior_samples
        self.average, self.momentum, self.n_gibbs_steps = average, momentum, n_gibbs_steps
        self.random_state = random_state
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.dtype = dtype
        self.binarize = binarize

    # ------------------------------------------------------------------ validation
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.non_deterministic = False
        # the model runs in the dtype it was fitted on; transform casts to X's
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    def _check_params(self):
        """The hidden sizes as a list of int, or ``None`` for ``"auto"`` (resolved in ``_reset``)."""
        self._validate_params()
        return check_sizes(self.n_components)

    def _validate(self, X, reset, training=False):
        X = self._validate_input(X, reset=reset, dtype=(np.float64, np.float32), binary=True,
                                 accept_sparse="csr")
        # ``dtype`` (float32: half the memory traffic of every product) for a new model,
        # converted once per call; see _core.base.working_dtype for a fitted one
        fitted = None if reset or not hasattr(self, "coefs_") else self.coefs_[0].dtype
        return X.astype(working_dtype(self.dtype, X, fitted, training=training), copy=False)

    # ------------------------------------------------------------------ set-up
    def _rng(self):
        """A fresh stream for one fit/partial_fit call (reproducible for an int seed)."""
        return as_generator(spawn_seeds(self._seed_seq, 1)[0])

    def _betas(self):
        return _tempering.temperature_ladder(self.n_temperatures, self.beta_min)

    def _reset(self, X, sizes):
        self._seed_seq = seed_for(self.random_state)
        rng = self._rng()
        sizes = list(auto_n_components(X.shape[1])) if sizes is None else sizes
        self.n_components_ = tuple(int(s) for s in sizes)
        self.coefs_, self.intercepts_, self._base_visible = init_params(X, sizes, rng)
        self.n_updates_ = 0
        self.pretrain_n_iter_ = 0
        self._start_history()
        self.sampler_history_ = {}
        self._sampler_obj = None
        self._energy_trace = []
        self._iterates, self._iterate = IterateKeeper(self.n_posterior_samples), None
        return rng

    def _init_chains(self, X, rng):
        layers = initial_chain_layers(X, self.n_chains, self.coefs_, self.intercepts_, rng)
        return _tempering.make_chains(
            self.sampler, layers, self.coefs_, self.intercepts_, betas=self._betas(),
            gain=rate_schedule(self.wl_gain, _WL_T0), swap_interval=self.swap_interval,
            swap=self.swap, fpcd_learning_rate=self.fpcd_learning_rate,
            fpcd_decay=self.fpcd_decay)

    def _refresh_sampler(self):
        """Hand the persistent sampler the current hyper-parameters (``set_params``).

        The chains, the Wang-Landau weights and the counters carry over; the
        ladder (``beta_min``), the gain schedule (continued at the sampler's own
        step counter) and the FPCD rates are read again at every call.
        """
        _tempering.refresh_chains(self._sampler_obj, betas=self._betas(),
                                  gain=rate_schedule(self.wl_gain, _WL_T0),
                                  fpcd_learning_rate=self.fpcd_learning_rate,
                                  fpcd_decay=self.fpcd_decay)

    def _divergence_params(self):
        return (({"coefs_": self.coefs_, "intercepts_": self.intercepts_}, DIVERGENCE_BOUND)
                if hasattr(self, "coefs_") else ({}, None))

    def _pretrain(self, X, rng):
        """Greedy stack of RBMs with doubled weights (``_train.pretrain_verbose``)."""
        n_epochs = self.pretrain_n_iter
        if n_epochs == "auto":
            n_epochs = auto_passes(X.shape[0], self.batch_size, AUTO_PRETRAIN_UPDATES)
        self.pretrain_n_iter_ = int(n_epochs)
        self.coefs_, self.intercepts_ = pretrain_verbose(
            X, [W.shape[1] for W in self.coefs_], n_epochs=n_epochs,
            learning_rate=self.pretrain_learning_rate, batch_size=self.batch_size,
            rng=rng, name=type(self).__name__ if self.verbose else None)

    # ------------------------------------------------------------------ learning
    def _one_pass(self, X, rng):
        """One pass of stochastic approximation (``_train.sa_pass``), then its records."""
        trace = (None if self.sampler == "adaptive_st"   # its negative set changes size
                 else self.__dict__.setdefault("_energy_trace", []))
        it = TrainingState.of(self)    # the raw iterate, its momentum and its average
        res = sa_pass(X, it.coefs, it.intercepts, self._sampler_obj, rng,
                      lr_schedule=self._lr_schedule, n_updates=self.n_updates_,
                      batch_size=self.batch_size, n_mean_field=self.n_mean_field,
                      mean_field_tol=self.mean_field_tol, starts=self._starts(training=True),
                      energy_trace=trace, monitor_every=_MONITOR_EVERY,
                      trace_window=_RHAT_WINDOW, name=type(self).__name__,
                      divergence_bound=DIVERGENCE_BOUND, n_gibbs_steps=self.n_gibbs_steps,
                      optimizer=it.optimizer, average=it.average)
        (self.coefs_, self.intercepts_), self.n_updates_ = it.advance(res), res.n_updates
        record_arrays(self.sampler_history_, res.arrays, HISTORY_CAP)
        # seconds left in this fit, from the passes so far (0 in partial_fit)
        self._passes_done = getattr(self, "_passes_done", 0) + 1
        self._log_iteration(**res.metrics, time_left=time_left(
            self._t_start, self._passes_done, getattr(self, "_fit_passes", None)))

    def fit(self, X, y=None):
        """Pre-train (optionally), then ``n_iter`` passes of stochastic approximation.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            Binary data (or thresholded by ``binarize``). A ``dask.array.Array``
            chunked by rows (dense or CSR blocks) is never gathered: its blocks
            are checked where they live and each minibatch's mean-field positive
            phase runs there, on the workers when a ``dask.distributed`` client is
            active; the persistent chains and the update stay on the client (see
            :ref:`dask_array_fit`), as do the greedy stack's CD-1 sums (one seed
            per block). Early stopping holds out the same seeded rows as in
            memory, gathered to the client once and scored there; the other rows
            stay in their blocks and are the only ones trained on.
        y : Ignored

        Returns
        -------
        self : DBMCAST

        Raises
        ------
        ValueError
            For non-binary input or invalid parameters (the estimator is left as
            it was).
        skdgm.exceptions.DivergenceError
            If an update would make the parameters non-finite or run away (the
            state from before the call is restored).

        See Also
        --------
        partial_fit : one pass over new rows, continuing the chains.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import DBMCAST
        >>> X = (np.random.default_rng(0).random((40, 6)) < 0.3).astype(float)
        >>> dbm = DBMCAST(n_components=(3, 2), n_iter=2, batch_size=20,
        ...               random_state=0).fit(X)
        >>> dbm.n_iter_, [W.shape for W in dbm.coefs_]
        (2, [(6, 3), (3, 2)])
        """
        return super().fit(X, y)

    def partial_fit(self, X, y=None):
        """One pass of stochastic approximation over ``X`` (no pre-training).

        The first call initialises small random weights and the chains; later
        calls continue the chains, the learning-rate schedule and the Wang-Landau
        weights. ``log_partition_`` is not re-estimated here: it is computed when
        next read (see ``log_partition_``).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            The next binary rows (same number of features as before); a dask
            array chunked by rows is trained on where its blocks live, as in
            :meth:`fit`.
        y : Ignored

        Returns
        -------
        self : DBMCAST

        Raises
        ------
        ValueError
            For non-binary input, invalid parameters or a changed number of
            features (the estimator is left as it was).
        skdgm.exceptions.DivergenceError
            If an update would make the parameters non-finite or run away (the
            state from before the call is restored).

        See Also
        --------
        fit : reset, optional pre-training, then ``n_iter`` passes.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import DBMCAST
        >>> X = (np.random.default_rng(0).random((40, 6)) < 0.3).astype(float)
        >>> dbm = DBMCAST(n_components=(3, 2), batch_size=20, random_state=0)
        >>> for rows in (X[:20], X[20:]):
        ...     dbm = dbm.partial_fit(rows)
        >>> dbm.n_iter_
        2
        """
        return super().partial_fit(X, y)

    # The hooks of the training skeleton (BaseGenerativeModel.fit / partial_fit).
    def _is_initialized(self):
        return hasattr(self, "coefs_")

    def _validate_training_data(self, X, *, reset):
        self._check_params()
        if is_dask_array(X):    # checked where its blocks live, never gathered
            return float_blocks(self, X, reset=reset, binary=True,
                                model_dtype=None if reset else self.coefs_[0].dtype)
        # With reset=False, validation names a changed feature count
        # ("X has 3 features, but DBMCAST is expecting 4 features as input").
        return self._validate(X, reset=reset, training=True)

    def _initialize(self, X, *, fit):
        rng = self._reset(X, self._check_params())
        self._fit_passes = self._resolve_n_iter(X.shape[0]) if fit else None
        self._passes_done = 0
        if fit and self.pretrain:
            self._pretrain(X, rng)
        # timing of the passes starts after pre-training, for the time-left estimate
        self._t_start = time.perf_counter()
        self._lr_schedule = rate_schedule(self.learning_rate, _LR_T0)
        self._sampler_obj = self._init_chains(X, rng)
        return rng

    def _resolve_n_iter(self, n_samples):
        return resolve_fit_passes(self.n_iter, n_samples, self.batch_size,
                                  early_stopping=getattr(self, "_early_stop_on", False))

    def _n_passes(self):
        return self._fit_passes

    def _end_call(self, ctx):
        self._fit_passes = None

    def _resume(self, X):
        rng = self._rng()
        self._fit_passes, self._passes_done = None, 0
        self._lr_schedule = rate_schedule(self.learning_rate, _LR_T0)
        if self._sampler_obj is None:
            self._sampler_obj = self._init_chains(X, rng)
        else:
            self._refresh_sampler()
        return rng

    def _pass(self, X, rng):
        self._one_pass(X, rng)
        # one state per pass, the last n_posterior_samples of them (read at every
        # pass, so set_params between partial_fit calls holds)
        keeper = self.__dict__.setdefault("_iterates", IterateKeeper(1))
        keeper.set_size(self.n_posterior_samples)
        keeper.keep((self.coefs_, self.intercepts_))

    # ------------------------------------------------------------------ log Z
    def _param_arrays(self):
        return tuple(self.coefs_) + tuple(self.intercepts_) + (self._base_visible,)

    def _log_z_key(self):
        # Updates replace the parameter arrays (never modify them in place), so the
        # update count plus the arrays' identities (checked with ``is`` against the
        # arrays the cache holds, which pickling preserves) tell whether it is stale.
        return (self.n_updates_, len(self.coefs_))

    def _cached_log_partition(self):
        check_is_fitted(self)
        cache = self.__dict__.get("_log_z_cache")
        if cache is None or cache[0] != self._log_z_key() or not all(
                a is b for a, b in zip(cache[1], self._param_arrays())):
            self.log_partition(random_state=self._log_z_seed())
            cache = self._log_z_cache
        return cache[2]

    def _log_z_seed(self):
        # Its own stream apart from the training children, rebuilt on every call
        # so that an int random_state always gives the same estimate.
        return seed_for(self.random_state, 0x10C2)

    @property
    def log_partition_(self):
        """Estimate of ``log Z`` for the current parameters (lazy, cached)."""
        if "coefs_" not in self.__dict__:
            raise AttributeError("log_partition_ is available after fit or partial_fit")
        return self._cached_log_partition()[0]

    @property
    def log_partition_std_(self):
        """Standard error of ``log_partition_`` (0 when exact)."""
        if "coefs_" not in self.__dict__:
            raise AttributeError("log_partition_std_ is available after fit or partial_fit")
        return self._cached_log_partition()[1]

    def log_partition(self, n_betas=None, n_runs=None, *, exact=None, random_state=None):
        """Estimate ``log Z`` now; ``log_partition_`` returns it until the next update.

        AIS through :func:`skdgm._core.ais.annealed_importance_sampling` with the
        odd layers as state and the even layers summed out; the base model has
        the data's base rate on ``v`` and the model's biases elsewhere. With
        ``exact=None`` the odd layers are enumerated instead when they have at
        most 16 units (``exact=True`` forces enumeration, up to 22 units).

        Parameters
        ----------
        n_betas : int or "auto", optional
            Inverse temperatures of the AIS path (default ``n_ais_betas``);
            ``"auto"`` takes the forward half of :meth:`log_likelihood_bounds`'
            last round.
        n_runs : int, optional
            AIS runs (default ``n_ais_runs``).
        exact : bool or None, default=None
            Force (``True``) or forbid (``False``) enumeration of the odd layers;
            ``None`` enumerates up to 16 odd-layer units.
        random_state : None, int, SeedSequence or Generator, optional
            Seeds AIS (default: derived from the estimator's ``random_state``).

        Returns
        -------
        log_z : float
            Also cached as ``log_partition_`` (its standard error as
            ``log_partition_std_``).

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        log_likelihood_bounds : sandwich bounds on ``log Z`` (BDMC).
        score_samples : the variational bound, which subtracts this ``log Z``.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import DBMCAST
        >>> X = (np.random.default_rng(0).random((40, 6)) < 0.3).astype(float)
        >>> dbm = DBMCAST(n_components=(3, 2), n_iter=2, batch_size=20,
        ...               random_state=0).fit(X)
        >>> round(dbm.log_partition(), 2)          # 3 odd-layer units: enumerated
        5.49
        >>> bool(abs(dbm.log_partition(exact=False, n_betas=200) - 5.49) < 0.1)
        True
        """
        check_is_fitted(self)
        out = _bounds.estimate_log_partition(
            self.coefs_, self.intercepts_, self._ais_base(), exact=exact,
            n_betas=self.n_ais_betas if n_betas is None else n_betas,
            n_runs=self.n_ais_runs if n_runs is None else n_runs,
            random_state=self._log_z_seed() if random_state is None else random_state,
            bounds_random_state=self._bounds_random_state(random_state), tol=self.ais_tol,
            n_jobs=self.n_jobs, name=type(self).__name__, verbose=bool(self.verbose))
        self._log_z_cache = (self._log_z_key(), self._param_arrays(), out)
        return out[0]

    def _ais_base(self):
        # the AIS base model: the data's base rate on v, the model's biases elsewhere
        return [self._base_visible] + list(self.intercepts_[1:])

    def log_likelihood_bounds(self, n_samples=None, n_betas=None, random_state=None, *,
                              tol=None):
        """Sandwich bounds on ``log Z`` by bidirectional Monte Carlo (Grosse et al. 2015).

        Forward AIS along :meth:`log_partition`'s path gives a stochastic lower
        bound on ``log Z`` (so an upper bound on every ``log p(v)``); reverse AIS
        started from ``n_samples`` draws of the odd layers from the model a
        stochastic upper bound. The draws are exact when the odd layers hold at
        most 16 units (enumerated, even layers summed out); above that they are
        the states after 1,000 blocked Gibbs sweeps from the base model, and the
        upper bound is only approximate: the result says so with
        ``exact_start=False``. The gap ``upper - lower`` bounds the error of the
        AIS ``log Z`` at this many temperatures; it says nothing about the
        mean-field part of :meth:`score_samples`.

        Parameters
        ----------
        n_samples : int, optional
            Model draws starting the reverse runs, and forward runs (default
            ``n_ais_runs``).
        n_betas : int or "auto", optional
            Inverse temperatures (default ``n_ais_betas``). ``"auto"``: doubled
            from 100 up to 12,800 until ``|gap| + 2 std err < tol``, with a
            ``ConvergenceWarning`` naming the gap when the cap stops it.
        random_state : None, int, SeedSequence, Generator or RandomState
            Default: derived from the estimator's ``random_state`` (the same int
            gives the same bounds).
        tol : float, optional
            Target gap for ``"auto"``, in nats (default ``ais_tol``).

        Returns
        -------
        result : skdgm._core.bdmc.BDMCResult
            ``target="log_partition"``: ``lower``, ``upper``, ``gap`` on ``log Z``
            and their standard errors, ``n_betas``, ``exact_start``, and ``exact``
            (the enumerated ``log Z`` when the odd layers hold at most 16 units).

        Raises
        ------
        ValueError
            For an invalid ``n_samples``, ``n_betas`` or ``tol``.
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        log_partition : the AIS (or exact) estimate these bounds bracket.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import DBMCAST
        >>> X = (np.random.default_rng(0).random((40, 6)) < 0.3).astype(float)
        >>> dbm = DBMCAST(n_components=(3, 2), n_iter=2, batch_size=20,
        ...               random_state=0).fit(X)
        >>> res = dbm.log_likelihood_bounds(n_samples=10, n_betas=50)
        >>> bool(res.lower - 0.1 < res.exact < res.upper + 0.1), res.exact_start
        (True, True)
        """
        check_is_fitted(self)
        return _bounds.bdmc_log_partition(
            self.coefs_, self.intercepts_, self._ais_base(),
            n_samples=self.n_ais_runs if n_samples is None else n_samples,
            n_betas=self.n_ais_betas if n_betas is None else n_betas,
            tol=self.ais_tol if tol is None else tol,
            random_state=self._bounds_random_state(random_state), n_jobs=self.n_jobs,
            name=type(self).__name__)

    def _bounds_random_state(self, random_state):
        # seeded in _bounds with its own purpose, so an int gives the same bounds
        return self.random_state if random_state is None else random_state

    # ------------------------------------------------------------------ inference
    def _starts(self, training=False):
        return MF_STARTS[self.mean_field_starts][training]

    def _mean_field(self, X, states=None, return_std=False):
        """Mean-field for inference: up to ``n_mean_field_eval`` sweeps, with a warning.

        Returns the hidden means (all layers side by side) and the bound of every
        row (then their standard deviation with ``return_std``), averaged over the
        parameter ``states`` (default: the current parameters only); a CSR ``X``
        is densified ``batch_size`` rows at a time.
        """
        states = [(self.coefs_, self.intercepts_)] if states is None else states
        # stacklevel 3: the warning names the line calling transform or score_samples
        return mean_field_inference(X, states, n_iter=self.n_mean_field_eval,
                                    tol=self.mean_field_tol, starts=self._starts(),
                                    batch_size=self.batch_size, return_std=return_std,
                                    stacklevel=3)

    @property
    def posterior_samples_(self):
        """The kept parameter states ``(coefs, intercepts)``, oldest first (see ``n_posterior_samples``)."""
        if "coefs_" not in self.__dict__:
            raise AttributeError("posterior_samples_ is available after fit or partial_fit")
        keeper = self.__dict__.get("_iterates") or IterateKeeper(1)
        return keeper.states((self.coefs_, self.intercepts_))

    def transform(self, X, *, return_std=False):
        """Mean-field posterior means of every hidden layer, concatenated.

        Each row's means are the fixed point with the highest bound among the
        ``mean_field_starts``, iterated for up to ``n_mean_field_eval`` sweeps
        (the same fixed point :meth:`score_samples` scores), averaged over
        ``posterior_samples_`` (the current parameters with the default
        ``n_posterior_samples=1``).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features), binary
            A ``dask.array.Array`` chunked by rows is processed block by block
            where it lives (see :ref:`dask_array_inference`).
        return_std : bool, default=False
            Also return the standard deviation of each hidden unit under the
            mixture of the mean-field posteriors ``q_s(h | v)`` over the kept
            states: ``sqrt(mubar (1 - mubar))`` with ``mubar`` the returned mean,
            i.e. ``sqrt(mean_s mu_s (1 - mu_s) + var_s mu_s)`` (not the mean of the
            per-state standard deviations). No latent draws enter. It describes the
            mean-field approximation, not the exact posterior.

        Returns
        -------
        H : ndarray of shape (n_samples, sum(n_components))
            ``[q(h^1 = 1 | v), ..., q(h^L = 1 | v)]``, bottom layer first; computed
            in the model's dtype and returned in the dtype of ``X`` (float32 or
            float64).
        H_std : ndarray of shape (n_samples, sum(n_components))
            Only with ``return_std=True``.

        Warns
        -----
        ConvergenceWarning
            When some row has not reached a fixed point within
            ``n_mean_field_eval`` sweeps.

        Raises
        ------
        ValueError
            For non-binary input or a feature count other than the training data's.
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        score_samples : the bound of the same fixed point.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import DBMCAST
        >>> X = (np.random.default_rng(0).random((40, 6)) < 0.3).astype(float)
        >>> dbm = DBMCAST(n_components=(3, 2), n_iter=2, batch_size=20,
        ...               random_state=0).fit(X)
        >>> H = dbm.transform(X)
        >>> H.shape, bool(np.all((H > 0) & (H < 1)))
        ((40, 5), True)
        """
        dtype = _float_dtype(X)
        X = self._validate(X, reset=False)
        out = self._mean_field(X, self.posterior_samples_, return_std=return_std)
        if return_std:
            return out[0].astype(dtype, copy=False), out[2].astype(dtype, copy=False)
        return out[0].astype(dtype, copy=False)

    def impute(self, X, n_sweeps=50):
        """Fill the ``NaN`` entries of binary ``X`` with estimates of ``P(v_miss = 1 | v_obs)``.

        A blocked Gibbs chain per row alternates the odd layers given the even
        ones and the even layers given the odd ones, redrawing only the missing
        visible entries, under each kept parameter state in turn (the chain
        continuing from one state to the next). The estimate is the conditional
        probability ``sigmoid(b_0 + W_0 h^1)`` averaged over the second half of
        the sweeps of every state (Rao-Blackwellised: the 0/1 draws never enter).
        Threshold it at 0.5 for a 0/1 completion. Re-seeded from
        ``random_state`` on every call (deterministic for an int).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            0/1 entries (after ``binarize``), ``NaN`` where missing; every row
            needs at least one observed entry.
        n_sweeps : int, default=50
            Gibbs sweeps per kept parameter state; the first half are discarded.

        Returns
        -------
        X_filled : ndarray of shape (n_samples, n_features)
            The observed entries unchanged, the missing ones in ``[0, 1]`` (float64).

        Raises
        ------
        ValueError
            For an invalid ``n_sweeps``, non-binary observed entries, a row with
            every entry missing, or a feature count other than the training data's.
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        transform : the hidden layers' mean-field means.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import DBMCAST
        >>> X = (np.random.default_rng(0).random((40, 6)) < 0.3).astype(float)
        >>> dbm = DBMCAST(n_components=(3, 2), n_iter=2, batch_size=20,
        ...               random_state=0).fit(X)
        >>> Xm = X[:2].copy()
        >>> Xm[0, 0] = np.nan
        >>> filled = dbm.impute(Xm, n_sweeps=10)
        >>> bool(0.0 <= filled[0, 0] <= 1.0), bool(np.array_equal(filled[1], X[1]))
        (True, True)
        """
        check_is_fitted(self)
        n_sweeps = check_n_sweeps(n_sweeps)
        X = self._validate_input(X, reset=False, dtype=np.float64, binary=True,
                                 allow_nan=True, accept_sparse="csr")
        X = X.toarray() if sp.issparse(X) else X    # the answer is dense anyway
        missing = check_missing(X, f"{type(self).__name__}.impute")
        if not missing.any():
            return X.copy()
        rng = as_generator(seed_for(self.random_state, 0x1317))
        return impute_over_states(self.posterior_samples_, X, missing, rng, n_sweeps=n_sweeps)

    def _validation_score(self, X_val):
        """Early stopping's held-out figure (``_scoring.held_out_bound``), on a fixed stream."""
        return held_out_bound(X_val, self.coefs_, self.intercepts_, self._ais_base(),
                              self._starts(), self.batch_size, n_runs=min(self.n_ais_runs, HELD_OUT_RUNS),
                              random_state=seed_for(self.random_state, 0xE5), n_jobs=self.n_jobs)

    def score_samples(self, X, *, bound="fast", return_std=False):
        """Variational lower bound of Eq. 3 on ``log p(v)``, per row.

        ``sum_h Q log P*(v, h) + H(Q) - log Z`` with a mean-field ``Q`` and
        ``log Z = log_partition_``; it underestimates ``log p(v)`` by the KL
        divergence from ``Q`` to the true posterior (plus the error of ``log Z``).
        Any factorised ``Q`` gives a valid bound; ``bound`` picks how hard to look.

        Parameters
        ----------
        X : {array-like, dask array} of shape (n_samples, n_features)
            A ``dask.array.Array`` chunked by rows is processed block by block
            where it lives (see :ref:`dask_array_inference`).
        bound : {"fast", "tight"}, default="fast"
            ``"fast"``: 3 mean-field sweeps (float32) from the first of
            ``mean_field_starts``; the other start is swept on only in the rows
            where, after one sweep, its bound is within 5 nats of that (float64
            bound, the better ``Q`` per row): about two forward passes per row,
            within 0.002 nats per row of ``"tight"`` on average on DBMs trained
            on binarised MNIST (see the user guide). ``"tight"``: per row, the mean-field fixed point with the
            highest bound among the ``mean_field_starts`` (up to
            ``n_mean_field_eval`` sweeps), the ``Q`` that :meth:`transform` uses
            (the default before issue 25; about 25 forward passes per row).
        return_std : bool, default=False
            Also return each row's Monte-Carlo standard error: that of ``log Z``
            (``log_partition_std_``, 0 when exact), the same for every row. The
            mean-field part is deterministic; its KL gap is a bias no standard
            error shows.

        Returns
        -------
        bound : ndarray of shape (n_samples,)
        std_err : ndarray of shape (n_samples,)
            Only with ``return_std=True``.

        Warns
        -----
        ConvergenceWarning
            With ``bound="tight"``, when some row has not reached a fixed point
            within ``n_mean_field_eval`` sweeps.

        Raises
        ------
        ValueError
            For non-binary input, a feature count other than the training data's,
            or a ``bound`` other than ``"fast"`` and ``"tight"``.
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        score : the mean of these values.
        log_partition : the ``log Z`` subtracted.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import DBMCAST
        >>> X = (np.random.default_rng(0).random((40, 6)) < 0.3).astype(float)
        >>> dbm = DBMCAST(n_components=(3, 2), n_iter=2, batch_size=20,
        ...               random_state=0).fit(X)
        >>> bound, std_err = dbm.score_samples(X, return_std=True)
        >>> bound.shape, bool(np.all(bound < 0)), bool(np.all(std_err == 0))
        ((40,), True, True)
        """
        X = self._validate(X, reset=False)
        out = (self._mean_field(X)[1] if check_bound(bound) == "tight" else fast_bound_rows(
            X, self.coefs_, self.intercepts_, self._starts(), self.batch_size)) - self.log_partition_
        return (out, np.full(out.shape, self.log_partition_std_)) if return_std else out

    def score(self, X, y=None, *, bound="fast", return_std=False):
        """Mean variational bound over the rows of ``X`` (see :meth:`score_samples`).

        With ``return_std=True`` also its Monte-Carlo standard error, that of
        ``log Z`` (shared by every row). It is not the sampling error over rows
        (``std(score_samples(X)) / sqrt(n)``).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            A ``dask.array.Array`` chunked by rows is processed block by block
            where it lives (see :ref:`dask_array_inference`).
        y : Ignored
        bound : {"fast", "tight"}, default="fast"
            See :meth:`score_samples`.
        return_std : bool, default=False
            Also return the Monte-Carlo standard error.

        Returns
        -------
        score : float
        std_err : float
            Only with ``return_std=True``.

        Raises
        ------
        ValueError
            For non-binary input or a feature count other than the training data's.
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        score_samples : the per-row bounds.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import DBMCAST
        >>> X = (np.random.default_rng(0).random((40, 6)) < 0.3).astype(float)
        >>> dbm = DBMCAST(n_components=(3, 2), n_iter=2, batch_size=20,
        ...               random_state=0).fit(X)
        >>> round(dbm.score(X), 2)
        -3.47
        """
        out, se = self.score_samples(X, bound=bound, return_std=True)
        mean = float(np.mean(out))
        return (mean, float(se[0]) if se.size else 0.0) if return_std else mean

    def sample(self, n_samples=1, *, sampler="gibbs", n_steps=1000, random_state=None):
        """Visible samples from chains started at random states.

        Parameters
        ----------
        n_samples : int, default=1
            Independent chains, one sample each.
        sampler : {"gibbs", "adaptive_st"}
            Blocked Gibbs sweeps, or Alg. 1 with this estimator's temperatures and
            gain: ``n_temperatures * n_samples`` chains run ``n_steps`` steps and
            those at temperature 1 at the last step are returned (``n_steps``
            more steps when too few are; see
            :func:`skdgm.dbm._tempering.adaptive_st_draw`).
        n_steps : int, default=1000
            Sweeps (or tempering steps) per chain.
        random_state : None, int or Generator
            Fresh randomness by default.

        Returns
        -------
        V : ndarray of shape (n_samples, n_features)
            0/1 visible states (float64).

        Raises
        ------
        ValueError
            For an unknown ``sampler``.
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        impute : conditional probabilities of missing entries given observed ones.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import DBMCAST
        >>> X = (np.random.default_rng(0).random((40, 6)) < 0.3).astype(float)
        >>> dbm = DBMCAST(n_components=(3, 2), n_iter=2, batch_size=20,
        ...               random_state=0).fit(X)
        >>> V = dbm.sample(4, n_steps=20, random_state=0)
        >>> V.shape, bool(np.isin(V, (0.0, 1.0)).all())
        ((4, 6), True)
        """
        check_is_fitted(self)
        if sampler not in ("gibbs", "adaptive_st"):
            raise ValueError(f"sampler must be 'gibbs' or 'adaptive_st', got {sampler!r}")
        rng = as_generator(check_seed_sequence(random_state))
        return _tempering.draw_visible(n_samples, sampler, n_steps, self.coefs_,
                                       self.intercepts_, rng, betas=self._betas(),
                                       gain=rate_schedule(self.wl_gain, _WL_T0))

    @property
    def _n_features_out(self):
        return int(sum(b.shape[0] for b in self.intercepts_[1:]))

    # ArviZ (to_inference_data): the kept states as named arrays
    _inference_arrays = staticmethod(inference_arrays)
