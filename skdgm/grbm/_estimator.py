"""The scikit-learn face of the Gaussian-Bernoulli RBM: validates and orchestrates."""

import contextlib
import numbers
import time

import numpy as np
import scipy.sparse as sp
from sklearn.base import ClassNamePrefixFeaturesOutMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._core.base import (DIVERGENCE_BOUND, EARLY_STOPPING_READS, BaseGenerativeModel,
                          check_finite_params, dense_rows, float_dtype as _float_dtype,
                          iter_minibatches, map_row_chunks, working_dtype)
from .._core.blocks import float_blocks, is_dask_array, max_abs
from .._core.random import as_generator, check_seed_sequence, seed_for, spawn_seeds
from .._core.interop import InferenceDataMixin
from .._core.posterior import IterateKeeper, check_missing, check_n_sweeps
from ._model import (
    EXACT_MAX_HIDDEN,
    GRBMParams,
    free_energy_rows,
)
from . import _bounds, _defaults
from ._impute import impute_over_states
from ._posterior import hidden_moments, inference_arrays
from ._defaults import OPTION_READS, PARAMETER_CONSTRAINTS, check_burn_in
from ._train import (RawIterate, TrainSettings, blas_limit, blas_shape, checked_cd_update,
                     draw_samples, init_params, learning_rate_at, log_partition_estimate,
                     log_pass, pass_metrics, recon_error, resolve_negative_phase)

__all__ = ["GaussianBernoulliRBM"]


def _blas_scope(est, X):
    """The BLAS thread limit of one ``fit`` / ``partial_fit`` call, entered once per call.

    Sized from ``X`` before validation; input without a 2-D shape gets no limit
    (validation then rejects it or the call is too small to matter).
    """
    shape = blas_shape(X, est.batch_size, est.n_components)
    return contextlib.nullcontext() if shape is None else blas_limit(*shape)


# history_ keeps the latest entries only, so an endless stream of partial_fit calls
# runs in constant memory (the cap is documented under ``history_``).
_MAX_HISTORY = 10_000


class GaussianBernoulliRBM(ClassNamePrefixFeaturesOutMixin, InferenceDataMixin,
                           BaseGenerativeModel):
    """Gaussian-Bernoulli RBM trained by modified contrastive divergence.

    The model of Liao et al. (2022), "Gaussian-Bernoulli RBMs without tears":
    real visible units ``v`` with a learned mean and one learned log-variance each,
    binary hidden units ``h``, energy

    ``E(v, h) = 1/2 ||(v - mu) / sigma||^2 - (v / sigma^2)^T W^T h - b^T h``  (Eq. 1).

    Learning is modified CD (Alg. 3 / 4): positive statistics from the data,
    negative statistics from ``cd_steps`` steps of a sampler started from
    ``N(0, I)`` noise; the gradient is clipped to norm ``clip_grad_norm`` and
    Adam (SGD in the paper) runs with the learning rate cosine-decayed to 0 over
    the ``fit`` (Eq. 22).

    The defaults are chosen for the data a user tries first (hundreds to
    hundreds of thousands of standardised rows): exact Gibbs sampling, CD-30,
    Adam, a number of passes from a work budget and, on low-dimensional data,
    the annealed negative phase. The paper's settings are presets in the user
    guide.

    Every sampler targets the model at temperature 1, and Langevin steps are
    preconditioned by the variances (step ``langevin_step_size * sigma_d^2`` for
    unit ``d``), so the drift coefficient is ``langevin_step_size < 2`` for every
    unit and no inner loop can explode however small a variance becomes.

    Parameters
    ----------
    n_components : int, default=256
        Number of binary hidden units ``M``.
    sampler : {"gibbs", "gibbs_langevin", "langevin"}, default="gibbs"
        Gibbs (Alg. 5), Langevin on the marginal energy (Alg. 1) or the hybrid
        Gibbs-Langevin sampler (Alg. 2), for training and for :meth:`sample`.
        The default is exact Gibbs: unadjusted Gibbs-Langevin (the paper's
        choice, see the presets in the user guide) learns variances about
        11 % too small, at about the same cost per update.
    metropolis_adjust : bool, default=False
        Metropolis-Hastings test in the training chains: MALA (Eq. 7) for
        Langevin, the closed-form K-step proposal (Eqs. 11-12) for
        Gibbs-Langevin. Ignored by Gibbs (exact). Without it the negative
        statistics are biased: unadjusted Gibbs-Langevin at the default steps
        samples ``v | h`` with 1.126 times its variance, and on Gaussian data the
        learned ``variance_`` came out 11 % small (measured, see the user
        guide). :meth:`sample` applies the test by default regardless.
    adjust_after : int or None, default=None
        The paper's adjust step ``eta``: the first ``adjust_after`` steps of each
        chain are not tested. ``None`` means half of the chain (``cd_steps // 2``,
        or ``n_steps // 2`` in :meth:`sample`). Testing from the very first step
        (``0``) lets chains that start in noise far from the model reject almost
        every move (the reverse K-step proposal back to the noise is improbable);
        the stuck negative samples then shrink the variances, which we measured
        collapsing a 2-D fit.
    cd_steps : int, default=30
        Sampler steps ``K`` per update (Alg. 3-4). The paper uses 100; 30 Gibbs
        steps gave a better test likelihood on digits for the same CPU time
        (more updates), see the user guide.
    burn_in : int, default=0
        ``M`` of Alg. 3-4: negative statistics average the states
        ``burn_in + 1, ..., cd_steps`` (the noise start is never used).
    negative_phase : {"auto", "noise", "annealed"}, default="auto"
        ``"auto"`` is ``"annealed"`` for data with at most 10 features (and
        ``burn_in=0``) and ``"noise"`` otherwise; the choice is stored in
        ``negative_phase_``.
        ``"noise"`` is the paper's modified CD: ``cd_steps`` sampler steps from
        ``N(0, I)`` noise. Its negative statistics are those of the short-run
        sampler, so when the chains cannot cross between the modes of the model,
        the share of mass each mode gets is not learned (it drifts: on the 2-D
        mixtures of the paper's Fig. 1 a mode the samples still reach can end with
        no density mass). ``"annealed"`` (our extension, not in the paper) runs
        the same chains along a path from the noise to the model, one sampler
        step per inverse temperature (the joint energy times ``beta`` plus
        ``(1 - beta) ||v||^2 / 2``; every intermediate is again a GRBM), and
        weights the final states by their annealed-importance-sampling weights
        (Neal 2001, through the shared AIS code), so that the statistics estimate
        the model's own expectations. Same cost order (about twice the products
        per step); needs ``burn_in=0``; ``history_["negative_ess"]`` reports the
        weights' effective sample size. :meth:`sample` then resamples by weight.
    langevin_steps : int, default=10
        Inner Langevin steps per Gibbs-Langevin step (Alg. 2).
    langevin_inner : {"closed_form", "steps"}, default="closed_form"
        How Gibbs-Langevin moves ``v`` given ``h``. ``"closed_form"`` draws the
        whole ``langevin_steps``-step move from its exact Gaussian law (Eq. 11);
        ``"steps"`` simulates the steps one by one (Alg. 2, Cython inner loop).
        Both are the same Markov kernel (same proposal law, same Metropolis
        test), but the closed form draws one normal per unit instead of
        ``langevin_steps``: 3.5x faster per float32 update on a 64 x 256 model
        and 1.4x on 784 x 4096 (measured, see the benchmarks page), hence the
        default. ``"steps"`` is kept as the literal algorithm of the paper; its
        Cython loop is no faster than its NumPy twin (both are bound by the
        normal generator).
    langevin_step_size : float in (0, 2), default=0.5
        Initial (dimensionless) Langevin step ``alpha_0``; unit ``d`` moves with
        ``alpha_0 sigma_d^2``, cosine-annealed (Eq. 22). The paper's "initial step
        times the mean variance", made per unit.
    objective : {"joint", "marginal"}, default="joint"
        Learn with the joint statistics (Alg. 3, Eqs. 13-17, sampled ``h``) or
        the marginal ones (Alg. 4, Eqs. 18-19, 33-36, ``h`` replaced by
        ``p(h | v)``).
    optimizer : {"adam", "sgd"}, default="adam"
        Plain SGD on the clipped gradient, as the paper; or Adam (Kingma and Ba
        2015, the shared :class:`skdgm._core.optim.Adam`), our option. GRBM
        likelihoods are badly conditioned: on the 2-D mixtures of the paper's
        Fig. 1, ascent on the *exact* gradient with SGD at 0.05 never left
        the single-Gaussian saddle in 3,000 steps, while Adam at 0.01 found all three modes in about 900
        (``benchmarks/bench_grbm_gmm.py --exact``).
    learning_rate : float, default=0.01
        Initial step (SGD's or Adam's), decayed to 0 by the cosine schedule over
        ``fit`` (constant in stand-alone :meth:`partial_fit` calls).
    clip_grad_norm : float or None, default=10.0
        Clip the global norm of the gradient (of the mean log-likelihood).
    batch_size : int, default=100
        Rows per minibatch (at most: ``n`` rows are cut into ``ceil(n / batch_size)``
        near-equal minibatches), also the number of negative chains per update.
    n_iter : int or "auto", default="auto"
        Passes (epochs) over the data in :meth:`fit`. ``"auto"`` chooses the
        number of updates (minibatches) from a budget of ``1e11`` sampler
        multiply-adds, ``batch_size * cd_steps * n_components * n_features`` per
        update, kept between 1,000 and 6,000 updates, and runs enough passes for
        them (at least 2): 170 passes (2,040 updates) on 1,200 rows of 64
        features with the defaults, 600 passes on 1,000 rows of 2-D data, 3
        passes on 100,000 rows (see the user guide's "Defaults" section). The
        number run is ``n_iter_``.
    early_stopping : bool or "auto", default="auto"
        Hold out ``validation_fraction`` of the rows given to :meth:`fit`, score
        them after every pass, stop when the score has not improved by more than
        a relative ``tol`` for ``n_iter_no_change`` passes, and keep the parameters
        of the best pass (as :class:`~sklearn.neural_network.MLPClassifier`). The
        scores are in ``validation_scores_`` and ``history_["validation_score"]``,
        the best in ``best_validation_score_``, why training stopped in
        ``stopping_reason_``. ``"auto"``: on when ``n_iter="auto"`` and ``fit`` gets
        at least 5,000 rows; ``n_iter="auto"`` then caps the passes at six times its
        fixed rule (72 passes, about 300 CPU-s, on 10,000 MNIST rows), but at no
        more than hold 1.1 times six times its updates, and above 10,000 training
        rows at least 48 passes or 1.1 times 24 times its updates where those are
        fewer (48 passes at 60,000 MNIST rows, 30 at 100,000, 3 at a million;
        :func:`skdgm._core.stopping.auto_cap`), and stops on
        the median's least-squares trend rather than its best, which the median's
        noise defeats (:class:`skdgm._core.stopping.Trend`; the user guide's
        "When training stops"). The same on a dask array: the held-out rows
        (the same as in memory) are gathered to the client once, and only the
        others are trained on, where their blocks live. :meth:`partial_fit`
        ignores it.
    validation_fraction : float, default=0.1
        Fraction of the rows held out with ``early_stopping`` (at least one row
        each side).
    n_iter_no_change : int, default=10
        Passes without an improvement of more than ``tol`` before stopping.
    tol : float, default=1e-4
        Relative improvement of the validation score (the held-out rows' median
        log-likelihood, robust to a few rows the model rates very low) that counts
        as progress: ``score > best + tol * |best|``.
    init_std : float or "auto", default=0.01
        Standard deviation of the initial weights; ``"auto"`` means
        ``1 / sqrt(n_features + n_components)``, the scale of the authors' code.
        With plain SGD, weights this small can leave a fit on the saddle of the
        best single Gaussian for thousands of updates (the 2-D mixtures of the
        benchmarks); Adam leaves it at once.
    min_variance : float, default=1e-6
        Floor of every variance ``sigma_d^2`` (on ``log sigma^2``).
    n_posterior_samples : int, default=1
        Parameter states kept for :meth:`transform` and :meth:`impute`, which
        average over them: the parameters at the end of each of the last
        ``n_posterior_samples`` passes (of :meth:`fit`, or one per
        :meth:`partial_fit` call). Modified CD with Adam or SGD is a stochastic
        optimiser, not a posterior sampler: these are an *iterate ensemble*
        whose spread reflects the noise of the updates and the learning rate
        (small at the end of the cosine schedule of :meth:`fit`), not posterior
        uncertainty. ``1`` keeps only the current parameters (no extra memory),
        the behaviour before this option existed.
    average : float in [0, 1), default=0.0
        Decay of an exponential moving average of the parameters over updates
        (iterate averaging, Polyak & Juditsky 1992; the shared
        :class:`skdgm._core.averaging.ParameterAverage`, as DBMCAST's
        ``average``): the fitted parameters, hence early stopping's held-out
        figure, :meth:`score_samples`, :meth:`transform` and :meth:`sample`, are
        the average, whose time constant is about ``1 / (1 - average)`` updates
        (with a warm-up that follows the first iterates closely); the raw iterate
        takes the next update. ``0``: no average, the fitted parameters are the
        iterate.
    n_ais_runs : int, default=100
        AIS runs for ``log Z`` when ``n_components > 16`` (exact otherwise).
    n_ais_betas : int or "auto", default=3000
        Inverse temperatures of the AIS path. On a GRBM fitted to digits at
        the defaults (64 features, 256 hidden units) two seeds at 1,000
        differed by 0.35 nats and sat 0.4-1.2 below the estimates at 5,000;
        at 3,000 the reported standard error was 0.37 (for ~4 s of CPU).
        Check :meth:`log_partition`'s standard error before comparing models
        closer than a few times it. With ``verbose`` the AIS run is announced
        and its result printed. ``"auto"``: doubled from 100 (up to 12,800)
        until the bidirectional Monte Carlo gap on ``log Z``
        (:meth:`log_likelihood_bounds`) is within ``ais_tol``, with a
        ``ConvergenceWarning`` naming the gap reached when the cap stops it; the
        forward run of the last round is then the ``log Z`` estimate.
    ais_tol : float, default=0.5
        The BDMC gap on ``log Z``, in nats, that ``n_ais_betas="auto"`` aims for
        (``|gap| + 2 standard errors < ais_tol``).
    random_state : int, RandomState, Generator or None, default=None
        Seeds initialisation and training; :meth:`score_samples` re-seeds from
        it on every call (deterministic for an int).
    verbose : int, default=0
        Print one line per epoch: the figures of ``history_`` by name, the
        elapsed time and, in :meth:`fit`, an estimate of the time left.
    n_jobs : int, default=None
        Workers for the AIS run groups (results do not depend on it).
    dtype : {"float32", "float64"} or None, default="float32"
        Precision of the parameters and of training. ``fit`` (and a first
        ``partial_fit``) converts the data to it once per call, so float64 and
        float32 input give the same fit; ``None`` follows the training input's
        dtype (float32 stays float32, anything else trains in float64). A float32
        update at the defaults costs about half a float64 one (the float32
        kernels draw their random numbers from raw bits; see the user guide,
        "Speed"). Later ``partial_fit`` calls keep the fitted model's dtype;
        ``transform`` returns the dtype of its input.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        ``W`` (the transpose of the paper's ``N x M`` matrix).
    intercept_hidden_ : ndarray of shape (n_components,)
        ``b``.
    mean_ : ndarray of shape (n_features,)
        ``mu``.
    variance_ : ndarray of shape (n_features,)
        ``sigma^2``.
    log_variance_ : ndarray of shape (n_features,)
        ``log sigma^2``, the learned parameter.
    n_iter_ : int
        Epochs (passes) run (with ``n_iter="auto"``, the number chosen).
    n_updates_ : int
        Parameter updates (minibatches) made so far.
    negative_phase_ : {"noise", "annealed"}
        The negative phase in use (``negative_phase`` with ``"auto"`` resolved).
    history_ : dict of lists
        Per epoch, the figures the verbose line prints, all finite:
        ``train_loglik_ais`` (annealed negative phase only: the mean over the
        epoch's minibatches of their mean ``log p(v)`` with ``log Z`` estimated
        from the annealing weights of the same update; a rough progress
        figure, biased upwards), ``recon_error`` (mean squared error of
        ``mu + W^T p(h | v)`` on the epoch's last minibatch, under the
        parameters after its update), ``grad_norm``
        (mean norm before clipping), ``mean_log_var``, ``acceptance_rate``
        (only when the training chains are Metropolis-adjusted),
        ``negative_ess`` (annealed only: mean effective sample size of the
        weights as a fraction of the chains), and ``time`` (seconds since the
        model was initialised). Only the latest 10,000 epochs are kept, so
        endless ``partial_fit`` streams run in constant memory.
    n_features_in_ : int
    posterior_samples_ : list of GRBMParams
        The kept parameter states, oldest first (``n_posterior_samples``; the
        current parameters alone by default). An iterate ensemble, not posterior
        samples.

    Notes
    -----
    Divergence policy: every update is checked before it is committed; a
    non-finite candidate (including the derived ``variance_`` or its inverse,
    which overflow long before ``log_variance_`` does) raises
    :class:`skdgm.exceptions.DivergenceError` and the estimator keeps the last
    finite parameters.

    References
    ----------
    Liao, Kornblith, Ren, Fleet and Hinton (2022). Gaussian-Bernoulli RBMs
    without tears. arXiv:2210.10318.
    """

    # which parameters each option reads (warned about once per call when unused)
    _option_reads = {**OPTION_READS, **EARLY_STOPPING_READS}
    # the dict lives beside the wing's option table (issue 16: the estimator orchestrates)
    _parameter_constraints = PARAMETER_CONSTRAINTS

    def __init__(self, n_components=256, *, sampler="gibbs", metropolis_adjust=False,
                 adjust_after=None, cd_steps=30, burn_in=0, negative_phase="auto",
                 langevin_steps=10, langevin_inner="closed_form", langevin_step_size=0.5,
                 objective="joint", optimizer="adam", learning_rate=0.01, clip_grad_norm=10.0,
                 batch_size=100,
                 n_iter="auto", early_stopping="auto",
                 validation_fraction=0.1, n_iter_no_change=10, tol=1e-4, init_std=0.01,
                 min_variance=1e-6, n_posterior_samples=1, average=0.0,
                 n_ais_runs=100, n_ais_betas=3000, ais_tol=0.5, random_state=None, verbose=0,
                 n_jobs=None, dtype="float32"):
        self.n_components = n_components
        self.sampler = sampler
        self.metropolis_adjust = metropolis_adjust
        self.adjust_after = adjust_after
        self.cd_steps = cd_steps
        self.burn_in = burn_in
        self.negative_phase = negative_phase
        self.langevin_steps = langevin_steps
        self.langevin_inner = langevin_inner
        self.langevin_step_size = langevin_step_size
        self.objective = objective
        self.optimizer = optimizer
        self.learning_rate = learning_rate
        self.clip_grad_norm = clip_grad_norm
        self.batch_size = batch_size
        self.n_iter = n_iter
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.init_std = init_std
        self.min_variance = min_variance
        self.n_posterior_samples = n_posterior_samples
        self.average = average
        self.n_ais_runs = n_ais_runs
        self.n_ais_betas = n_ais_betas
        self.ais_tol = ais_tol
        self.random_state = random_state
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.dtype = dtype

    # ------------------------------------------------------------------
    # parameters
    # ------------------------------------------------------------------
    def _params(self):
        return GRBMParams(self.components_, self.intercept_hidden_, self.mean_,
                          self.log_variance_)

    def _set_params(self, params, variance=None):
        (self.components_, self.intercept_hidden_, self.mean_, self.log_variance_) = params
        self.variance_ = np.exp(params.log_var) if variance is None else variance

    def _check_hyper(self):
        self._validate_params()
        check_burn_in(self.burn_in, self.cd_steps, self.negative_phase)

    def _init_params(self, n_features, dtype):
        self._seed_seq = seed_for(self.random_state)
        rng = as_generator(spawn_seeds(self._seed_seq, 1)[0])
        # unit variances, as in the paper
        (self.components_, self.intercept_hidden_, self.mean_,
         self.log_variance_) = init_params(n_features, self.n_components, self.init_std,
                                           dtype, rng)
        self.variance_ = np.exp(self.log_variance_)
        self.n_updates_ = 0
        self._lr_total = None
        self._log_z_cache = None
        self._adam = self._iterate = None
        self._iterates = IterateKeeper(self.n_posterior_samples)
        self._start_history()

    # ------------------------------------------------------------------
    # learning
    # ------------------------------------------------------------------
    def fit(self, X, y=None):
        """Reset, then run ``n_iter`` passes of minibatch modified CD.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            Real-valued data (standardise it first, as the paper does); a CSR
            matrix is densified one minibatch at a time. A ``dask.array.Array``
            chunked by rows is never gathered: its blocks are checked where they
            live and each minibatch's positive phase runs there, on the workers
            when a ``dask.distributed`` client is active; the negative phase and
            the update stay on the client (see :ref:`dask_array_fit`). Early
            stopping holds out the same seeded rows as in memory, gathered to the
            client once and scored there; the other rows stay in their blocks.
        y : Ignored

        Returns
        -------
        self : GaussianBernoulliRBM

        Raises
        ------
        ValueError
            For invalid parameters (e.g. ``burn_in >= cd_steps``) or non-finite
            input (the estimator is left as it was).
        skdgm.exceptions.DivergenceError
            If an update would make the parameters non-finite or run away (the
            state from before the call is restored).

        See Also
        --------
        partial_fit : one pass over new rows, continuing the current model.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import GaussianBernoulliRBM
        >>> X = np.random.default_rng(0).standard_normal((40, 4))
        >>> grbm = GaussianBernoulliRBM(n_components=3, n_iter=2, batch_size=20,
        ...                             random_state=0).fit(X)
        >>> grbm.n_iter_, grbm.n_updates_, grbm.components_.shape
        (2, 4, (3, 4))
        """
        with _blas_scope(self, X):
            return super().fit(X, y)

    def partial_fit(self, X, y=None):
        """One pass of minibatch modified CD over the rows of ``X``.

        The first call initialises the model. Outside :meth:`fit` the learning
        rate is the constant ``learning_rate``.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            The next rows (same number of features as before); a dask array
            chunked by rows is trained on where its blocks live, as in :meth:`fit`.
        y : Ignored

        Returns
        -------
        self : GaussianBernoulliRBM

        Raises
        ------
        ValueError
            For invalid parameters, non-finite input or a changed number of
            features (the estimator is left as it was).
        skdgm.exceptions.DivergenceError
            If an update would make the parameters non-finite or run away (the
            state from before the call is restored).

        See Also
        --------
        fit : reset, then ``n_iter`` passes with a cosine-decayed learning rate.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import GaussianBernoulliRBM
        >>> X = np.random.default_rng(0).standard_normal((40, 4))
        >>> grbm = GaussianBernoulliRBM(n_components=3, batch_size=20, random_state=0)
        >>> for rows in (X[:20], X[20:]):
        ...     grbm = grbm.partial_fit(rows)
        >>> grbm.n_iter_, grbm.n_updates_
        (2, 2)
        """
        with _blas_scope(self, X):
            return super().partial_fit(X, y)

    # The hooks of the training skeleton (BaseGenerativeModel.fit / partial_fit).
    def _is_initialized(self):
        return hasattr(self, "components_")

    def _validate_training_data(self, X, *, reset):
        self._check_hyper()
        if is_dask_array(X):    # checked where its blocks live, never gathered
            return float_blocks(self, X, reset=reset,
                                model_dtype=None if reset else self.components_.dtype)
        X = self._validate_input(X, reset=reset, accept_sparse="csr")
        fitted = None if reset else self.components_.dtype
        return X.astype(working_dtype(self.dtype, X, fitted, training=True), copy=False)

    def _initialize(self, X, *, fit):
        self._init_params(X.shape[1], X.dtype)
        self._resolve_negative_phase()
        self._passes_total = None
        if fit:
            # the cosine schedule spans the whole fit
            n_batches = -(-X.shape[0] // min(self.batch_size, X.shape[0]))
            self._passes_total = _defaults.resolve_fit_passes(
                self.n_iter, X.shape, self.batch_size, self.cd_steps, self.n_components,
                early_stopping=getattr(self, "_early_stop_on", False))
            self._lr_total = self._passes_total * n_batches
        self._call_start = (time.perf_counter(), 0)

    def _resolve_negative_phase(self):
        self.negative_phase_ = resolve_negative_phase(self.negative_phase,
                                                      self.n_features_in_, self.burn_in)

    def _resume(self, X):
        self._resolve_negative_phase()
        self._lr_total = None
        self._passes_total = None
        self._call_start = (time.perf_counter(), self.n_iter_)

    def _n_passes(self):
        return self._passes_total

    def _log_iteration(self, **metrics):
        """Record one pass in ``history_`` (latest ``_MAX_HISTORY``) and print it."""
        log_pass(self, metrics, _MAX_HISTORY)

    def _pass(self, X, ctx):
        # (the BLAS thread limit is entered once per fit / partial_fit call)
        self._one_pass(X)
        self._keep_iterate()

    def _keep_iterate(self):
        # one state per pass, the last n_posterior_samples of them (read at every
        # pass, so set_params between partial_fit calls holds)
        keeper = self.__dict__.setdefault("_iterates", IterateKeeper(1))
        keeper.set_size(self.n_posterior_samples)
        keeper.keep(self._params())

    def _one_pass(self, X):
        # The scale of the data seen so far, against which runaway growth of the
        # parameters is judged (mean_ and W live in the data's units).
        if X.size:
            self._x_scale = max(getattr(self, "_x_scale", 0.0), max_abs(X))
        rng = as_generator(spawn_seeds(self._seed_seq, 1)[0])
        it = RawIterate.of(self)
        norms, ess, lls, n_acc, n_prop = [], [], [], 0, 0
        for idx in iter_minibatches(X.shape[0], self.batch_size, rng):
            gnorm, _, acc, prop, e, ll = self._update(dense_rows(X, idx), rng)
            norms.append(gnorm)
            ess.append(e)
            lls.append(ll)
            n_acc += acc
            n_prop += prop
        if it is not None:
            self._set_params(it.fitted())
        # Reconstruction error of the last minibatch only (mean-field, under the
        # parameters after its update, as a dask array's blocks compute it), so the
        # updates themselves stay at 3K + 4 matrix products.
        recon = recon_error(dense_rows(X, idx), self._params())
        self._log_z_cache = None
        self._log_iteration(**pass_metrics(
            annealed=self.negative_phase_ == "annealed", lls=lls, recon=recon, norms=norms,
            log_var=self.log_variance_,
            adjusted=bool(self.metropolis_adjust) and self.sampler != "gibbs",
            n_acc=n_acc, n_prop=n_prop, ess=ess))

    def _settings(self, n_steps):
        return TrainSettings.of(self, self._adjust_after(n_steps))

    def _update(self, V, rng):
        """One modified-CD update (``_train.checked_cd_update``), committed if finite."""
        it = self.__dict__.get("_iterate")
        res = checked_cd_update(
            self._params() if it is None else it.params, V, rng,
            self._settings(self.cd_steps), adam=self._adam,
            learning_rate=learning_rate_at(self.learning_rate, self.n_updates_,
                                           self._lr_total),
            where=f"{type(self).__name__}.partial_fit (update {self.n_updates_ + 1})",
            bound=self._divergence_bound(), check=check_finite_params)
        self._adam = res.adam
        if it is None:
            self._set_params(res.params, res.variance)
        else:
            it.commit(res.params)
        self.n_updates_ += 1
        return (res.grad_norm, res.p_pos, res.n_accepted, res.n_proposed, res.ess,
                res.loglik)

    def _divergence_bound(self):
        return DIVERGENCE_BOUND * max(1.0, getattr(self, "_x_scale", 1.0))

    def _divergence_params(self):
        if not hasattr(self, "components_"):
            return {}, None
        bound = self._divergence_bound()
        check_finite_params({"log_variance_": self.log_variance_,
                             "variance_": self.variance_}, type(self).__name__)
        return ({"components_": self.components_, "intercept_hidden_": self.intercept_hidden_,
                 "mean_": self.mean_}, bound)

    # ------------------------------------------------------------------
    # inference
    # ------------------------------------------------------------------
    def _check_X(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=(np.float64, np.float32),
                          accept_sparse="csr")
        # float64 input is answered in float64 (float32 parameters promoted), so
        # results do not depend on how rows are chunked or ordered to float32 rounding
        return X.astype(np.result_type(X.dtype, self.components_.dtype), copy=False)

    @property
    def posterior_samples_(self):
        """The kept parameter states (``GRBMParams``), oldest first (see ``n_posterior_samples``)."""
        if "components_" not in self.__dict__:
            raise AttributeError("posterior_samples_ is available after fit or partial_fit")
        keeper = self.__dict__.get("_iterates") or IterateKeeper(1)
        return keeper.states(self._params())

    def transform(self, X, *, return_std=False):
        """``P(h = 1 | v)`` of Eq. (4), averaged over ``posterior_samples_``.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            A ``dask.array.Array`` chunked by rows is processed block by block
            where it lives (see :ref:`dask_array_inference`).
        return_std : bool, default=False
            Also return the standard deviation of each hidden unit under the
            mixture of the conditionals ``p(h | v, theta_s)`` over the kept states:
            ``sqrt(pbar (1 - pbar))`` with ``pbar`` the returned mean, which is
            ``sqrt(mean_s p_s (1 - p_s) + var_s p_s)`` (the Bernoulli spread
            within a state plus the spread between states; not the mean of the
            per-state standard deviations). The conditional means are exact, so
            no latent draws enter. With ``n_posterior_samples=1`` it is the
            Bernoulli standard deviation of the current model's unit.

        Returns
        -------
        H : ndarray of shape (n_samples, n_components)
            Computed in the wider of the model's dtype and ``X``'s (float64 input
            with the float32 default model: float64), returned in that of ``X``.
        H_std : ndarray of shape (n_samples, n_components)
            Only with ``return_std=True``.

        Raises
        ------
        ValueError
            For non-finite input or a feature count other than the training data's.
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        impute : the conditional means of missing visible entries instead.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import GaussianBernoulliRBM
        >>> X = np.random.default_rng(0).standard_normal((40, 4))
        >>> grbm = GaussianBernoulliRBM(n_components=3, n_iter=2, batch_size=20,
        ...                             random_state=0).fit(X)
        >>> H, H_std = grbm.transform(X, return_std=True)
        >>> H.shape, bool(np.all((H > 0) & (H < 1))), bool(np.all(H_std <= 0.5))
        ((40, 3), True, True)
        """
        dtype = _float_dtype(X)
        X = self._check_X(X)
        states = self.posterior_samples_
        out = map_row_chunks(lambda V: hidden_moments(V, states, return_std=return_std), X,
                             self.batch_size)
        if return_std:
            return tuple(o.astype(dtype, copy=False) for o in out)
        return out.astype(dtype, copy=False)

    def impute(self, X, n_sweeps=50):
        """Fill the ``NaN`` entries of ``X`` with estimates of ``E[v_miss | v_obs]``.

        A Gibbs chain per row alternates ``h ~ p(h | v)`` (Eq. 4) and
        ``v_miss ~ N(mu + W^T h, sigma^2)`` (Eq. 3) under each kept parameter state
        in turn (the chain continuing from one state to the next); the estimate is
        the conditional mean ``mu + W^T h`` averaged over the second half of the
        sweeps of every state (Rao-Blackwellised: the visible noise never enters).
        Re-seeded from ``random_state`` on every call (deterministic for an int).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            ``NaN`` marks a missing entry; every row needs at least one observed one.
        n_sweeps : int, default=50
            Gibbs sweeps per kept parameter state; the first half are discarded.

        Returns
        -------
        X_filled : ndarray of shape (n_samples, n_features)
            The observed entries unchanged, the missing ones imputed (float64).

        Raises
        ------
        ValueError
            For an invalid ``n_sweeps``, infinite entries, a row with every
            entry missing, or a feature count other than the training data's.
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        transform : the hidden units' conditional means.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import GaussianBernoulliRBM
        >>> X = np.random.default_rng(0).standard_normal((40, 4))
        >>> grbm = GaussianBernoulliRBM(n_components=3, n_iter=2, batch_size=20,
        ...                             random_state=0).fit(X)
        >>> Xm = X[:2].copy()
        >>> Xm[0, 0] = np.nan
        >>> filled = grbm.impute(Xm, n_sweeps=10)
        >>> bool(np.isnan(filled).any()), bool(np.array_equal(filled[1], X[1]))
        (False, True)
        """
        check_is_fitted(self)
        n_sweeps = check_n_sweeps(n_sweeps)
        X = validate_data(self, X, reset=False, dtype=np.float64,
                          ensure_all_finite="allow-nan", accept_sparse="csr")
        X = X.toarray() if sp.issparse(X) else X    # the answer is dense anyway
        missing = check_missing(X, f"{type(self).__name__}.impute")
        if not missing.any():
            return X.copy()
        rng = as_generator(seed_for(self.random_state, 0x1317))
        return impute_over_states(self.posterior_samples_, X, missing, rng, n_sweeps=n_sweeps)

    def free_energy(self, X):
        """Marginal energy ``E~(v)`` of Eq. (5) per row (``log p(v) = -E~(v) - log Z``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        energy : ndarray of shape (n_samples,)
            In the wider of the model's dtype and ``X``'s; exact (no sampling).

        Raises
        ------
        ValueError
            For non-finite input or a feature count other than the training data's.
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        log_partition : the ``log Z`` that turns it into ``log p(v)``.
        score_samples : ``-free_energy(X) - log Z``.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import GaussianBernoulliRBM
        >>> X = np.random.default_rng(0).standard_normal((40, 4))
        >>> grbm = GaussianBernoulliRBM(n_components=3, n_iter=2, batch_size=20,
        ...                             random_state=0).fit(X)
        >>> log_z, _ = grbm.log_partition()
        >>> bool(np.allclose(-grbm.free_energy(X) - log_z, grbm.score_samples(X)))
        True
        """
        return free_energy_rows(self._check_X(X), self._params(), self.batch_size)

    def log_partition(self):
        """``(log Z, standard error)``: exact for ``n_components <= 16``, else AIS.

        AIS (Neal 2001) anneals the weights from 0 to ``W`` (base: ``N(mu, sigma^2)``
        visibles, independent ``Bernoulli(sigmoid(b))`` hiddens) with
        ``n_ais_betas`` sigmoid-spaced temperatures and ``n_ais_runs`` runs,
        through :func:`skdgm._core.ais.annealed_importance_sampling`, seeded from
        ``random_state`` (deterministic for an int). Reused while the parameters,
        ``random_state`` (an int) and the AIS settings are unchanged.

        Returns
        -------
        log_z : float
            The estimate of ``log Z``.
        std_err : float
            Its Monte-Carlo standard error over the AIS runs (0.0 when exact).

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        log_likelihood_bounds : sandwich bounds on ``log Z`` (BDMC).
        score_samples : ``log p(v)`` with this ``log Z``.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import GaussianBernoulliRBM
        >>> X = np.random.default_rng(0).standard_normal((40, 4))
        >>> grbm = GaussianBernoulliRBM(n_components=3, n_iter=2, batch_size=20,
        ...                             random_state=0).fit(X)
        >>> log_z, std_err = grbm.log_partition()   # 3 hidden units: enumerated
        >>> round(log_z, 2), std_err
        (5.76, 0.0)
        """
        check_is_fitted(self)
        params = self._params()
        exact = self.n_components <= EXACT_MAX_HIDDEN
        rs = self.random_state
        seeded = isinstance(rs, numbers.Integral) and not isinstance(rs, bool)
        # The estimate depends on the parameter arrays, the AIS settings and the
        # seed; any of them can change after fit (set_params, direct assignment),
        # so the key holds all of them. Without an int seed every call draws
        # fresh randomness, as score_samples promises, and nothing is reused.
        key = (self.n_updates_, exact, int(rs) if seeded else None, self.n_ais_runs,
               self.n_ais_betas, self.ais_tol)
        cache = getattr(self, "_log_z_cache", None)
        if (cache is not None and cache[0] == key and (exact or seeded)
                and all(a is b for a, b in zip(cache[1], params))):
            return cache[2]
        out = _bounds.estimate_log_partition(
            params, exact=exact, n_runs=self.n_ais_runs, n_betas=self.n_ais_betas,
            tol=self.ais_tol, random_state=self.random_state, n_jobs=self.n_jobs,
            name=type(self).__name__, verbose=bool(self.verbose))
        self._log_z_cache = (key, tuple(params), out)
        return out

    def _validation_score(self, X_val):
        """Early stopping's held-out figure: median ``log p(v)`` with a cheap ``log Z``.

        The median, not the mean: on 10,000 MNIST rows ten of 1,000 held-out rows
        fell from -9.6k to -31k nats while the held-out median and the test mean
        rose until pass 18, and the mean stopped training at pass 2, 80 nats short
        (``benchmarks/results/grbm_validation_trace.txt``).

        Exact when ``log Z`` is; otherwise AIS with at most 16 runs on a fixed
        stream (common random numbers across passes, so that pass-to-pass changes
        are not AIS noise), not cached, at 300 temperatures up to 1,000 held-out
        rows and more above, up to 3,000 (:func:`skdgm.grbm._defaults.validation_betas`):
        at 300 the estimate of a trained 256-unit model falls short by an amount
        that grows with training, and the figure ranks passes by it
        (``benchmarks/results/grbm_heldout_log_z.txt``).
        """
        params = self._params()
        exact = self.n_components <= EXACT_MAX_HIDDEN
        log_z, _ = log_partition_estimate(
            params, exact=exact, n_runs=min(self.n_ais_runs, 16),
            n_betas=_defaults.validation_betas(X_val.shape[0]),
            random_state=None if exact else seed_for(self.random_state, 0xE5),
            n_jobs=self.n_jobs)
        return float(-np.median(self.free_energy(X_val)) - log_z)

    def score_samples(self, X, *, return_std=False):
        """``log p(v)`` per row: ``-E~(v) - log Z`` (Eq. 5).

        ``log Z`` is exact when ``n_components <= 16`` (sum over the ``2**M``
        hidden states, Gaussian integral over ``v``), else estimated by AIS (see
        :meth:`log_partition`).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            A ``dask.array.Array`` chunked by rows is processed block by block
            where it lives (see :ref:`dask_array_inference`).
        return_std : bool, default=False
            Also return each row's Monte-Carlo standard error: that of ``log Z``
            (0 when exact), the same for every row since ``E~(v)`` is exact.

        Returns
        -------
        log_pv : ndarray of shape (n_samples,)
        std_err : ndarray of shape (n_samples,)
            Only with ``return_std=True``.

        Raises
        ------
        ValueError
            For non-finite input or a feature count other than the training data's.
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        score : the mean of these values.
        log_likelihood_bounds : how far the AIS ``log Z`` can be off.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import GaussianBernoulliRBM
        >>> X = np.random.default_rng(0).standard_normal((40, 4))
        >>> grbm = GaussianBernoulliRBM(n_components=3, n_iter=2, batch_size=20,
        ...                             random_state=0).fit(X)
        >>> log_pv, std_err = grbm.score_samples(X, return_std=True)
        >>> log_pv.shape, bool(np.all(std_err == 0))   # log Z is exact here
        ((40,), True)
        """
        X = self._check_X(X)
        log_z, se = self.log_partition()
        out = -free_energy_rows(X, self._params(), self.batch_size) - log_z
        return (out, np.full(out.shape, se)) if return_std else out

    def score(self, X, y=None, *, return_std=False):
        """Mean ``log p(v)`` over the rows of ``X``.

        With ``return_std=True`` also its Monte-Carlo standard error, that of
        ``log Z`` (shared by every row, so it does not shrink with more rows). It
        is not the sampling error over rows (``std(score_samples(X)) / sqrt(n)``).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            A ``dask.array.Array`` chunked by rows is processed block by block
            where it lives (see :ref:`dask_array_inference`).
        y : Ignored
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
            For non-finite input or a feature count other than the training data's.
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        score_samples : the per-row values.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import GaussianBernoulliRBM
        >>> X = np.random.default_rng(0).standard_normal((40, 4))
        >>> grbm = GaussianBernoulliRBM(n_components=3, n_iter=2, batch_size=20,
        ...                             random_state=0).fit(X)
        >>> round(grbm.score(X), 2)
        -5.53
        """
        out, se = self.score_samples(X, return_std=True)
        mean = float(np.mean(out))
        return (mean, float(se[0]) if se.size else 0.0) if return_std else mean

    def log_likelihood_bounds(self, n_samples=None, n_betas=None, random_state=None, *,
                              tol=None):
        """Sandwich bounds on ``log Z`` by bidirectional Monte Carlo (Grosse et al. 2015).

        Forward AIS along :meth:`log_partition`'s path gives a stochastic lower
        bound on ``log Z`` (so an upper bound on every ``log p(v)``); reverse AIS
        started from ``n_samples`` draws of ``v`` from the model a stochastic
        upper bound. The draws are exact when ``n_components <= 16`` (the
        hidden states are enumerated, then ``v | h`` is Gaussian); above that
        they are the end states of 1,000 Gibbs sweeps from the base
        ``N(mu, sigma^2)``, and the upper bound is only approximate: the result
        says so with ``exact_start=False``. The gap ``upper - lower`` bounds the
        error of the AIS ``log Z``, and so of every :meth:`score_samples` value,
        at this many temperatures.

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
            (the enumerated ``log Z`` when ``n_components <= 16``, else ``None``).

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
        >>> from skdgm import GaussianBernoulliRBM
        >>> X = np.random.default_rng(0).standard_normal((40, 4))
        >>> grbm = GaussianBernoulliRBM(n_components=3, n_iter=2, batch_size=20,
        ...                             random_state=0).fit(X)
        >>> res = grbm.log_likelihood_bounds(n_samples=10, n_betas=50)
        >>> bool(res.lower - 0.1 < res.exact < res.upper + 0.1), res.exact_start
        (True, True)
        """
        check_is_fitted(self)
        return _bounds.bdmc_log_partition(
            self._params(), n_samples=self.n_ais_runs if n_samples is None else n_samples,
            n_betas=self.n_ais_betas if n_betas is None else n_betas,
            tol=self.ais_tol if tol is None else tol,
            random_state=self.random_state if random_state is None else random_state,
            n_jobs=self.n_jobs, name=type(self).__name__)

    def sample(self, n_samples=1, *, n_steps=None, metropolis_adjust=True, random_state=None):
        """Draw visible samples from ``N(0, I)`` noise with the estimator's sampler.

        By default every sampler is exact here, whatever the estimator's own
        ``metropolis_adjust`` (which governs training only): Gibbs needs no test,
        and Langevin and Gibbs-Langevin get their Metropolis test (Eq. 7/23 and
        Eq. 12/32) from step ``adjust_after`` on (half the chain by default).
        The draws are then exact in the limit of ``n_steps``; at finite
        ``n_steps`` they are the states of chains started in noise, so check
        that the chains mix (a model with well-separated modes may need
        ``negative_phase="annealed"`` or more steps).

        With ``negative_phase="annealed"`` the chains are annealed from the noise
        to the model and then resampled in proportion to their importance
        weights (multinomial), so that every mode gets its share of the model's
        mass even when the chains cannot move between modes; expect repeated
        rows when the weights are uneven.

        Parameters
        ----------
        n_samples : int, default=1
            Independent chains, one draw each.
        n_steps : int, optional
            Sampler steps (default ``cd_steps``, as in training).
        metropolis_adjust : bool, default=True
            Metropolis-test the Langevin and Gibbs-Langevin moves (exact
            sampling). ``False`` runs them unadjusted, like training chains with
            ``metropolis_adjust=False``: their stationary law is *not* the
            model. The preconditioned Langevin move draws ``v | h`` with its
            variance inflated by ``c / (1 - beta_0^2)``, 1.126 at the defaults
            (``langevin_step_size=0.5``, ``langevin_steps=10``); on a fitted 2-D
            model we measured the samples' variances +12 to +13 % above the
            model's exact ones (see the user guide). Ignored by ``"gibbs"``.
        random_state : int, Generator or None
            Fresh randomness when None.

        Returns
        -------
        X : ndarray of shape (n_samples, n_features)
            In the dtype the model was fitted in.

        Raises
        ------
        ValueError
            If ``metropolis_adjust`` is not a bool.
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        impute : conditional draws' means given some observed entries.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import GaussianBernoulliRBM
        >>> X = np.random.default_rng(0).standard_normal((40, 4))
        >>> grbm = GaussianBernoulliRBM(n_components=3, n_iter=2, batch_size=20,
        ...                             random_state=0).fit(X)
        >>> grbm.sample(5, n_steps=20, random_state=0).shape
        (5, 4)
        """
        check_is_fitted(self)
        if not isinstance(metropolis_adjust, (bool, np.bool_)):
            raise ValueError(
                f"metropolis_adjust must be True or False, got {metropolis_adjust!r}")
        n_steps = self.cd_steps if n_steps is None else int(n_steps)
        rng = as_generator(check_seed_sequence(random_state))
        params = self._params()
        v0 = rng.standard_normal((int(n_samples), self.n_features_in_),
                                 dtype=params.W.dtype)
        with blas_limit(v0.shape[0], v0.shape[1], self.n_components):
            return draw_samples(params, v0, rng, self._settings(n_steps), n_steps,
                                bool(metropolis_adjust))

    @property
    def _n_features_out(self):
        """Columns of :meth:`transform`, for ``get_feature_names_out``."""
        return self.components_.shape[0]

    def _adjust_after(self, n_steps):
        return n_steps // 2 if self.adjust_after is None else self.adjust_after

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = True
        # fits in float32 natively (float32 input, float32 parameters)
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    # ArviZ (to_inference_data): the kept states as named arrays
    _inference_arrays = staticmethod(inference_arrays)
