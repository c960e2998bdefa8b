"""The scikit-learn face of deep LDA: validates, orchestrates, nothing numerical."""

from functools import partial
from collections import deque
import numbers
import time

import numpy as np
import scipy.sparse as sp
from sklearn.base import ClassNamePrefixFeaturesOutMixin
from sklearn.utils._param_validation import Interval
from sklearn.utils._set_output import _get_output_config
from sklearn.utils.validation import check_is_fitted

from .._core.base import BaseGenerativeModel, float_dtype as _float_dtype
from .._core.blocks import RowSelection, check_dask_rows, is_dask_array
from .._core.interop import InferenceDataMixin
from .._core.posterior import check_missing, check_n_sweeps
from .._core.random import as_generator, check_seed_sequence, seed_for
from . import _evaluate, _generate, _gibbs, _global, _train
from ._local import MAX_TOTAL_COUNT
from ._runs import LocalRuns
from ._defaults import (OPTION_READS, PARAMETER_CONSTRAINTS, AutoStopping, resolve_n_iter,
                        step_schedule)
from ._evaluate import PassLog
from ._posterior import inference_arrays, theta_moments
from ._topics import TopicsMixin
from ._impute import observed_counts

__all__ = ["DeepLDA"]

# history_ keeps the latest entries only, so a stream of partial_fit calls runs in
# constant memory.
_MAX_HISTORY = 10_000


class DeepLDA(AutoStopping, LocalRuns, ClassNamePrefixFeaturesOutMixin, TopicsMixin,
              InferenceDataMixin, BaseGenerativeModel):
    """Deep latent Dirichlet allocation (Poisson gamma belief network) by MCMC.

    The PGBN of Zhou et al. (2016a) in the deep-LDA form of Cong et al. (2017),
    Eq. 1 and Eq. 6-7: each document's word counts are Poisson with rates
    ``Phi^(1) theta^(1)``, and ``theta^(l) ~ Gam(Phi^(l+1) theta^(l+1), 1/c^(l+1))``
    up to ``theta^(L) ~ Gam(r, 1/c^(L+1))``; every topic ``phi_k^(l)`` lives on
    the simplex with a ``Dir(eta_l)`` prior. Documents are sampled locally with
    the upward-downward Gibbs sampler (Cython, over CSR); the topics are learned
    by topic-layer-adaptive stochastic-gradient Riemannian MCMC (TLASGR, Alg. 1)
    or one of the paper's alternatives.

    Read more in the :ref:`User Guide <deep_lda>`.

    Parameters
    ----------
    n_components : int or tuple of int, default=(128, 64, 32)
        Topics per layer, bottom first (any depth >= 1).
    sampler : {"tlasgr", "tlfsgr", "sgrld", "gibbs"}, default="tlasgr"
        Global update: TLASGR (Eq. 15-19, rate ``eps_t / M_k^(l)`` per topic and
        layer), TLFSGR (one rate ``eps_t / mean_k M_k^(1)`` for all topics),
        SGRLD (expanded mean, Eq. 5), or the batch upward-downward Gibbs sampler
        (``Phi`` from its Dirichlet conditional; every call of ``partial_fit`` is
        one sweep over its whole input).
    link : {"poisson", "bernoulli"}, default="poisson"
        ``"bernoulli"`` models 0/1 data as ``b = 1(x > 0)`` (Bernoulli-Poisson link).
    batch_size : int, default=200
        Documents per minibatch, at most: :meth:`fit` and :meth:`partial_fit` cut
        ``n`` documents into ``ceil(n / batch_size)`` minibatches of near-equal
        size, so that no sliver of a few documents is scaled up to stand for the
        corpus.
    n_iter : int or "auto", default="auto"
        Passes over the data in :meth:`fit` (sweeps for ``sampler="gibbs"``).
        ``"auto"``: the fixed rule, enough passes for about 500 global updates,
        1 to 10 passes (100 sweeps for ``sampler="gibbs"``), below 5,000
        documents; from 5,000 documents on (in memory or in a dask array, whose
        slice is gathered once to the client and never trained on),
        until converged: 5 % of them (at most 1,000) are set aside and their held-out perplexity (under
        the kept samples, 80/20 word split) is measured after every pass; burn-in ends
        when it has not improved by a relative 1e-4 for 10 passes, but not
        before the fixed rule's passes and at the latest after four times as
        many; then the passes that refill the ``n_posterior_samples`` kept
        samples (usually one) end training. The passes made are ``n_iter_``,
        why it stopped ``stopping_reason_``.
    total_samples : int, optional
        Corpus size ``|X|`` for ``rho = |X| / |minibatch|`` in :meth:`partial_fit`;
        ``None`` means the size of the data given to :meth:`fit` (in ``fit``) and
        the minibatch itself (``rho = 1``) in a bare ``partial_fit``.
    learning_rate, learning_offset, learning_decay : float, optional
        ``eps_t = learning_rate (1 + t / learning_offset)^(-learning_decay)``; ``None``
        takes the authors' values: ``(1, 20, 0.7)``, ``(0.1, 20, 0.9)`` for SGRLD.
    eta : float or sequence of float, optional
        Dirichlet concentration of each layer's topics; ``None`` is ``1/K_l``
        per layer (the paper; the authors' code uses 0.05).
    gamma0, c0 : float, default=1.0
        ``r_k ~ Gam(gamma0 / K_L, 1 / c0)``.
    a0, b0 : float, default=0.01
        ``p_j^(2) ~ Beta(a0, b0)``.
    e0, f0 : float, default=1.0
        ``c_j^(l) ~ Gam(e0, 1 / f0)``.
    local_burn_in, local_samples : int, default=5
        Local Gibbs sweeps discarded / collected per minibatch (and in
        :meth:`transform` and :meth:`perplexity`). Each document's chain starts
        from a few multiplicative EM steps of its topic proportions given the
        current topics, which spares most of the burn-in (the authors use
        ``20 L`` / ``10 L`` sweeps from a flat start: the ``"paper"`` preset
        of the user guide).
    n_posterior_samples : int, default=5
        Global samples kept (the latest ones) for :meth:`perplexity`,
        :meth:`score` and :meth:`transform`, which average over them.
    posterior_thin : int or "pass", default=1
        Keep every ``posterior_thin``-th global sample, so that the kept samples
        span ``n_posterior_samples * posterior_thin`` updates. Consecutive SG-MCMC
        samples are strongly correlated; the paper averages over 1,500 collected
        minibatches, which thinning approximates at a bounded memory.
        ``"pass"``: keep the sample that ends each pass of :meth:`fit` (each
        :meth:`partial_fit` call), so that the kept samples are one pass apart
        whatever the corpus size (on the full 20 Newsgroups, 10 of them score
        about 3 % lower than the 5 latest updates:
        ``benchmarks/results/deep_lda_gap_trace.txt``).
    random_state : int, RandomState, Generator or None, default=None
    verbose : int, default=0
        ``1``: one line per pass with ``history_``'s figures, the elapsed time
        and an estimate of the time left.
    n_jobs : int, optional
        Parallel local sampling over fixed chunks of documents (joblib: threads
        for training, processes otherwise, unless ``joblib.parallel_config``
        names a backend; results do not depend on it). A call of one chunk (a
        minibatch of the default size, a ``transform`` of up to 400 documents) or
        of little estimated work (``skdgm._core.chains``) runs in-process.
    round_counts : bool, default=False
        Round every input to the nearest integers before the check for
        non-negative integer counts (like ``binarize`` on the binary models):
        for weighted or rescaled counts, and for scikit-learn's common checks,
        which feed real-valued data. ``False``: non-integer input raises a
        ``ValueError``.

    Attributes
    ----------
    components_ : ndarray of shape (K_1, n_features)
        Layer-1 topics ``Phi^(1)`` as rows on the simplex.
    topics_ : list of ndarray
        ``topics_[l]`` is ``Phi^(l+1)`` of shape ``(K_l, K_{l+1})`` (``K_0 = V``),
        columns on the simplex.
    r_ : ndarray of shape (K_L,)
    learning_rates_ : list of ndarray
        The rates ``eps_t / M_k^(l)`` actually applied in the last update, per
        layer and topic (the paper's Fig. 2), then the rate of ``r``.
    history_ : dict of lists
        One entry per pass of :meth:`fit` and per :meth:`partial_fit` call (the
        latest 10,000 kept), the figures of the ``verbose=1`` line:
        ``train_perplexity`` (the fit-quality figure: per-word perplexity of the
        pass's own training words under each document's rates
        ``Phi^(1) theta^(1)`` averaged over its collected local samples, taken
        before each global update; an in-sample estimate, lower is better, not
        comparable with the held-out :meth:`perplexity`), ``step_size``
        (``eps_t`` of the pass's last update), ``rate_layer{l}`` (mean rate
        ``eps_t / M_k^(l)`` of that update), ``n_updates``, ``time_left`` (an
        estimate of the rest of :meth:`fit`, in seconds; 0 in
        :meth:`partial_fit`) and ``time`` (seconds since the fit started).
    n_iter_ : int
        Passes over the data made by :meth:`fit` (``n_iter`` with ``"auto"``
        resolved), plus one per :meth:`partial_fit` call.
    n_updates_ : int
        Global updates made (minibatches, or Gibbs sweeps).
    stopping_reason_ : str
        With ``n_iter="auto"``: when burn-in ended and why (the plateau or the cap).
    validation_scores_ : list of float
        With ``n_iter="auto"`` on 5,000 documents or more: the held-out figure
        (``-log`` perplexity) after each burn-in pass.
    n_features_in_ : int
    posterior_samples_ : list of (topics, r)
        The kept global samples, oldest first (see ``n_posterior_samples``).
    """

    # which parameters each option reads (warned about once per call when unused)
    _option_reads = OPTION_READS
    # the dict sits beside the defaults it constrains (_defaults.PARAMETER_CONSTRAINTS)
    _parameter_constraints = PARAMETER_CONSTRAINTS
    _element_constraints = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "eta": [Interval(numbers.Real, 0, None, closed="neither")],
    }

    def __init__(self, n_components=(128, 64, 32), *, sampler="tlasgr", link="poisson",
                 batch_size=200, n_iter="auto", total_samples=None, learning_rate=None,
                 learning_offset=20.0, learning_decay=None, eta=None, gamma0=1.0, c0=1.0,
                 a0=0.01, b0=0.01, e0=1.0, f0=1.0, local_burn_in=5, local_samples=5,
                 n_posterior_samples=5, posterior_thin=1, random_state=None, verbose=0,
                 n_jobs=None, round_counts=False):
        self.n_components = n_components
        self.sampler = sampler
        self.link = link
        self.batch_size = batch_size
        self.n_iter = n_iter
        self.total_samples = total_samples
        self.learning_rate = learning_rate
        self.learning_offset = learning_offset
        self.learning_decay = learning_decay
        self.eta = eta
        self.gamma0 = gamma0
        self.c0 = c0
        self.a0 = a0
        self.b0 = b0
        self.e0 = e0
        self.f0 = f0
        self.local_burn_in = local_burn_in
        self.local_samples = local_samples
        self.n_posterior_samples = n_posterior_samples
        self.posterior_thin = posterior_thin
        self.random_state = random_state
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.round_counts = round_counts

    # ------------------------------------------------------------------ tags
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        # Word counts are not categorical features; ``round_counts=True`` is how
        # non-integer input gets in.
        tags.input_tags.categorical = False
        # the sampler runs in float64; transform casts back at the boundary
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    # ------------------------------------------------------------ validation
    def _check_X(self, X, *, reset):
        # (a rejected training input leaves no trace: fit and partial_fit restore
        # the estimator's state on any exception)
        X = self._validate_input(X, reset=reset, accept_sparse="csr")
        return _train.check_count_rows(X, link=self.link, round_=self.round_counts,
                                       what=type(self).__name__)

    def _sweeps(self):
        """Local sweeps (burn-in, collected) per minibatch and in transform / score."""
        return int(self.local_burn_in), int(self.local_samples)

    def _resolve_n_iter(self, n_samples):
        """Passes of ``fit`` over ``n_samples`` documents (``n_iter="auto"`` resolved)."""
        return resolve_n_iter(self.n_iter, self.sampler, n_samples, self.batch_size)

    def _schedule(self):
        return step_schedule(self.sampler, self.learning_rate, self.learning_offset,
                             self.learning_decay)

    # --------------------------------------------------------------- fitting
    def _reset(self, n_features, X=None):
        (self._train_seed, self._order_seed, self._rng, self._etas_, self.topics_, self.r_,
         self._sg_state) = _train.initial_state(n_features, _global.layer_sizes(self.n_components), X,
                                                self.random_state, eta=self.eta,
                                                gamma0=self.gamma0, c0=self.c0)
        self._posterior = deque(maxlen=self.n_posterior_samples)
        self._gibbs_state = None
        # the lengths of every document trained on, as a histogram (for sample)
        self._length_values = np.zeros(0, dtype=np.int64)
        self._length_counts = np.zeros(0, dtype=np.int64)
        self.learning_rates_ = []
        self.n_updates_ = 0
        self._start_history()

    @property
    def _t(self):
        """Global updates made (the step-size schedule's ``t``)."""
        return self._sg_state["t"]

    def fit(self, X, y=None):
        """Reset and run ``n_iter`` passes of minibatch updates (or Gibbs sweeps).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            Word counts (non-negative integers), or 0/1 for ``link="bernoulli"``.
            A ``dask.array.Array`` chunked by rows (dense or CSR blocks) is never
            gathered: its blocks are checked where they live and each minibatch's
            local sampling runs block by block, on the workers holding the rows
            when a ``dask.distributed`` client is active (see
            :ref:`dask_array_fit`; not with ``sampler="gibbs"``).
        y : Ignored

        Returns
        -------
        self : DeepLDA

        Raises
        ------
        ValueError
            For invalid counts or parameters (the estimator is left as it was).
        skdgm.exceptions.DivergenceError
            If the global parameters become non-finite (the state from before
            the call is restored).

        See Also
        --------
        partial_fit : one pass over the next documents of a stream.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import DeepLDA
        >>> X = np.random.default_rng(0).poisson(1.0, (30, 12))
        >>> lda = DeepLDA(n_components=(4, 2), n_iter=2, batch_size=10,
        ...               random_state=0).fit(X)
        >>> lda.n_iter_, lda.n_updates_, [phi.shape for phi in lda.topics_]
        (2, 6, [(12, 4), (4, 2)])
        """
        return super().fit(X, y)

    def partial_fit(self, X, y=None):
        """One pass over the next documents of a stream: a global update per minibatch.

        ``X`` is cut, in order, into ``ceil(len(X) / batch_size)`` minibatches of
        near-equal size (an ``X`` of at most ``batch_size`` documents is one
        update; 201 documents are two updates of 101 and 100), each one global
        update with ``rho = total_samples / len(minibatch)``; ``total_samples=None``
        takes ``len(X)``. ``sampler="gibbs"`` runs one sweep over ``X`` instead.
        Memory does not grow with the number of calls: only the latest
        ``n_posterior_samples`` global samples are kept. Each call adds one to
        ``n_iter_`` (as :class:`~sklearn.neural_network.MLPClassifier` counts its
        ``partial_fit`` calls), one per update to ``n_updates_``, and one entry to
        ``history_``.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            The next documents' word counts (or 0/1 for ``link="bernoulli"``); a
            dask array chunked by rows is trained on where its blocks live, as in
            :meth:`fit`.
        y : Ignored

        Returns
        -------
        self : DeepLDA

        Raises
        ------
        ValueError
            For invalid counts or parameters, or a changed number of features
            (the estimator is left as it was).
        skdgm.exceptions.DivergenceError
            If the global parameters become non-finite (the state from before
            the call is restored).

        See Also
        --------
        fit : reset, then ``n_iter`` passes.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import DeepLDA
        >>> X = np.random.default_rng(0).poisson(1.0, (30, 12))
        >>> lda = DeepLDA(n_components=(4, 2), batch_size=10, random_state=0)
        >>> for docs in (X[:15], X[15:]):
        ...     lda = lda.partial_fit(docs)
        >>> lda.n_iter_, lda.n_updates_
        (2, 4)
        """
        return super().partial_fit(X, y)

    # The hooks of the training skeleton (BaseGenerativeModel.fit / partial_fit).
    # The unit is the pass: fit runs n_iter_ passes of one global update
    # (_update) per minibatch, partial_fit one pass of them over its input.
    def _is_initialized(self):
        return hasattr(self, "topics_")

    def _validate_training_data(self, X, *, reset):
        if is_dask_array(X):    # checked where its blocks live, never gathered
            check_dask_rows(self, X, reset=reset)
            return _train.count_blocks(X, sampler=self.sampler, link=self.link,
                                       round_=self.round_counts, what=type(self).__name__)
        X = self._check_X(X, reset=reset)
        if not reset:
            self._check_partial_fit_features(X)
        return X

    def _initialize(self, X, *, fit):
        self._reset(X.shape[1], X)
        self._record_lengths(X)
        # passes of this fit (0: partial_fit, whose time left is unknown); under
        # n_iter="auto" the cap, which the stopper's plateau usually cuts short
        cap = getattr(self, "_auto_cap", None)
        self._fit_passes = (cap or self._resolve_n_iter(X.shape[0])) if fit else 0
        return {}

    def _resume(self, X):
        self._record_lengths(X)
        self._fit_passes = 0
        return {}

    def _n_passes(self):
        return self._fit_passes

    def _fit_pass(self, X, ctx):
        if "order_rng" not in ctx:   # one shuffling stream for the whole fit
            ctx["order_rng"] = as_generator(self._order_seed)
        self._run_pass(X, ctx["order_rng"])

    def _partial_step(self, X, ctx):
        self._run_pass(X)           # minibatches in stream order

    def _run_pass(self, X, order_rng=None):
        """One pass: an update per minibatch (the whole of ``X`` for batch Gibbs)."""
        total = X.shape[0] if self.total_samples is None else self.total_samples
        log = PassLog()
        batches = ([X] if self.sampler == "gibbs" else
                   self._minibatches(X, order_rng))
        for batch in batches:
            self._update(batch, total, log)
        self._keep_sample(pass_end=True)
        self._log_pass(log)

    def _keep_sample(self, pass_end=False):
        self._posterior = _train.keep_sample(self._posterior, self.n_posterior_samples,
                                             self.posterior_thin, self._t, self.topics_,
                                             self.r_, pass_end=pass_end)

    def _record_lengths(self, X):
        self._length_values, self._length_counts = _train.add_lengths(
            self._length_values, self._length_counts, X)

    def _update(self, X, total, log):
        """Alg. 1 on one minibatch: local sampling, then every global update."""
        # read at every update, so that set_params(eta=...) between calls holds
        self._etas_ = _global.layer_etas(self.eta, tuple(t.shape[1] for t in self.topics_))
        eps = float(self._schedule()(self._t))
        burn, coll = self._sweeps()
        new_phis, new_r, sg_state, gibbs_state, rates, ll, nw = _train.global_update(
            X, total, self.topics_, self.r_, self._sg_state, self._gibbs_state,
            sampler=self.sampler, eps=eps, etas=self._etas_, gamma0=self.gamma0, c0=self.c0,
            rng=self._rng, gibbs_step=self._gibbs_update,
            local_stats=partial(self._local_stats, n_burn=burn, n_collect=coll))
        self.topics_, self.r_ = new_phis, new_r
        self._sg_state, self._gibbs_state = sg_state, gibbs_state
        self.learning_rates_ = rates
        self._keep_sample()
        self.n_updates_ += 1
        log.add(ll, nw, eps, rates[:len(new_phis)])

    def _local_stats(self, X, phis, r, *, n_burn, n_collect, side=None):
        """A minibatch's merged local statistics; a dask array's are formed block by block
        (``side``, the global step's normals, is then left to the global step)."""
        if isinstance(X, RowSelection):
            return _train.blocks_local_stats(X, self._train_seed, phis, r, n_burn=n_burn,
                                             n_collect=n_collect, **self._local_priors())
        return self._merge(self._local(X, self._train_seed, phis, r, n_burn=n_burn,
                                       n_collect=n_collect, collect_topics=True, keep_theta=False,
                                       side=side), stack_theta=False)

    def _gibbs_update(self, X, phis, r):
        """One batch Gibbs sweep over ``X`` (the documents' hidden units are kept)."""
        return _gibbs.gibbs_update(
            X, self._gibbs_state, phis=phis, r=r, etas=self._etas_, gamma0=self.gamma0,
            c0=self.c0, rng=self._rng, **self._local_priors(),
            map_chunks=_train.chain_mapper(self._train_seed, self.n_jobs))

    def _log_pass(self, log):
        """One ``history_`` entry (and verbose line) for the pass just made."""
        self._log_iteration(**_train.pass_metrics(
            log, self.n_updates_, getattr(self, "_fit_passes", 0),
            getattr(self, "n_iter_", 0) + 1, time.perf_counter() - self._t_start))
        # Keep memory bounded over endless partial_fit streams.
        for values in self.history_.values():
            del values[:-_MAX_HISTORY]

    def _divergence_params(self):
        if not hasattr(self, "topics_"):
            return {}, None
        return _train.divergence_parts(self.topics_, self.r_, self._sg_state["phihat"],
                                       self._length_values)

    # ------------------------------------------------------------ properties
    @property
    def _n_features_out(self):
        """Columns of :meth:`transform` (layer-1 topics), for ``get_feature_names_out``."""
        return self.topics_[0].shape[1]

    @property
    def components_(self):
        """Layer-1 topics ``Phi^(1)`` transposed, shape ``(K_1, n_features)``, rows on the simplex."""
        check_is_fitted(self, "topics_")
        return self.topics_[0].T

    def projected_topics(self, layer):
        """Layer-``layer`` topics in vocabulary space, ``Phi^(1) ... Phi^(layer)``.

        Parameters
        ----------
        layer : int
            1-based layer index.

        Returns
        -------
        topics : ndarray of shape (n_features, K_layer)
            Columns on the simplex.

        Raises
        ------
        ValueError
            If ``layer`` is not in ``1..len(n_components)``.
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        components_ : the layer-1 topics, one row per topic.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import DeepLDA
        >>> X = np.random.default_rng(0).poisson(1.0, (30, 12))
        >>> lda = DeepLDA(n_components=(4, 2), n_iter=2, batch_size=10,
        ...               random_state=0).fit(X)
        >>> top = lda.projected_topics(2)
        >>> top.shape, bool(np.allclose(top.sum(axis=0), 1.0))
        ((12, 2), True)
        """
        check_is_fitted(self, "topics_")
        if not 1 <= layer <= len(self.topics_):
            raise ValueError(f"layer must be in 1..{len(self.topics_)}, got {layer}")
        return _generate.project_topics(self.topics_, layer)

    # ------------------------------------------------------------- inference
    def _eval_seed(self, k):
        """Per-call streams from ``random_state`` (deterministic for an int), apart from training."""
        return seed_for(self.random_state).spawn(4 + k)[3 + k]

    @property
    def posterior_samples_(self):
        """The kept global samples ``(topics, r)``, oldest first (see ``n_posterior_samples``)."""
        if "topics_" not in self.__dict__:
            raise AttributeError("posterior_samples_ is available after fit or partial_fit")
        kept = list(self.__dict__.get("_posterior") or ())
        return kept or [(self.topics_, self.r_)]

    def transform(self, X, *, all_layers=False, return_std=False):
        """Posterior mean of each document's normalised hidden units ``theta^(1)``.

        The local sampler runs under each kept global sample
        (``posterior_samples_``, the latest ``n_posterior_samples``) in turn, the
        chains carried over from one to the next; ``local_burn_in`` sweeps are
        discarded under the first and ``ceil(local_samples / n_kept)`` collected
        under each, so the cost stays about that of one sample.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            A ``dask.array.Array`` chunked by rows is processed block by block
            where it lives (see :ref:`dask_array_inference`).
        all_layers : bool, default=False
            Return one array per layer instead of layer 1 only (plain arrays: not
            available under ``set_output(transform="pandas")`` or ``"polars"``,
            which wrap the layer-1 output only).
        return_std : bool, default=False
            Also return the standard deviation of the normalised ``theta^(l)`` over
            every collected local sweep under every kept global sample: the local
            posterior spread plus the spread between global samples (law of total
            variance), a Monte-Carlo estimate from that many draws.

        Returns
        -------
        doc_topic : ndarray of shape (n_samples, K_1), or list of such per layer
        doc_topic_std : same as ``doc_topic``, only with ``return_std=True``

        Raises
        ------
        ValueError
            For negative or non-integer counts (unless ``round_counts``), binary
            data violated under ``link="bernoulli"``, or a feature count other
            than the training data's.
        sklearn.exceptions.NotFittedError
            Before ``fit``.
            ``all_layers=True`` under ``set_output`` also raises ``ValueError``.

        See Also
        --------
        projected_topics : the topics these proportions weight.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import DeepLDA
        >>> X = np.random.default_rng(0).poisson(1.0, (30, 12))
        >>> lda = DeepLDA(n_components=(4, 2), n_iter=2, batch_size=10,
        ...               random_state=0).fit(X)
        >>> theta = lda.transform(X)
        >>> theta.shape, bool(np.allclose(theta.sum(axis=1), 1.0))
        ((30, 4), True)
        >>> [t.shape for t in lda.transform(X, all_layers=True)]
        [(30, 4), (30, 2)]
        """
        check_is_fitted(self, "topics_")
        dtype = _float_dtype(X)
        if all_layers and _get_output_config("transform", self)["dense"] != "default":
            raise ValueError(
                "transform(all_layers=True) returns one array per layer, which "
                "set_output cannot wrap in one container; call set_output("
                "transform='default') first, or use all_layers=False")
        X = self._check_X(X, reset=False)
        burn, coll = self._sweeps()
        out = theta_moments(self._over_samples, X, self.posterior_samples_,
                            self._eval_seed(0), n_burn=burn, n_collect=coll,
                            return_std=return_std)
        parts = out if return_std else (out,)
        parts = [[t.astype(dtype, copy=False) for t in part] for part in parts]
        parts = parts if all_layers else [part[0] for part in parts]
        return tuple(parts) if return_std else parts[0]

    def impute(self, X, n_sweeps=20):
        """Fill the ``NaN`` entries of ``X`` with the expected counts ``E[x_miss | x_obs]``.

        Held-out word completion: a ``NaN`` marks a word whose count in that
        document is unknown. Under each kept global sample in turn
        (``posterior_samples_``), the local upward-downward chain runs on the
        document with its missing counts at their current fill, which are then
        redrawn from ``Pois(Phi^(1) theta^(1))`` (data augmentation); the estimate
        averages the conditional means ``(Phi^(1) theta^(1))_miss`` over the second
        half of the sweeps of every sample (Rao-Blackwellised). With
        ``link="bernoulli"`` it is ``P(b_miss = 1 | b_obs)``, the average of
        ``1 - exp(-(Phi^(1) theta^(1))_miss)``. Re-seeded from ``random_state`` on
        every call (deterministic for an int).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Counts (after ``round_counts``), ``NaN`` where missing (a CSR matrix
            with ``NaN`` stored entries is densified: the answer is dense); every
            document needs at least one observed entry.
        n_sweeps : int, default=20
            Local sweeps per kept global sample; the first half are discarded.

        Returns
        -------
        X_filled : ndarray of shape (n_samples, n_features)
            The observed entries unchanged, the missing ones non-negative reals (float64).

        Raises
        ------
        ValueError
            For an invalid ``n_sweeps``, invalid observed counts, a document with
            every entry missing, or a feature count other than the training data's.
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        perplexity : scores held-out words instead of filling them.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import DeepLDA
        >>> X = np.random.default_rng(0).poisson(1.0, (30, 12))
        >>> lda = DeepLDA(n_components=(4, 2), n_iter=2, batch_size=10,
        ...               random_state=0).fit(X)
        >>> Xm = X[:2].astype(float)
        >>> Xm[0, 0] = np.nan
        >>> filled = lda.impute(Xm, n_sweeps=4)
        >>> bool(filled[0, 0] >= 0), bool(np.array_equal(filled[1], X[1]))
        (True, True)
        """
        check_is_fitted(self, "topics_")
        n_sweeps = check_n_sweeps(n_sweeps)
        X = self._validate_input(X, reset=False, dtype=np.float64, allow_nan=True,
                                 accept_sparse="csr")
        X = X.toarray() if sp.issparse(X) else X    # the answer is dense anyway
        missing = check_missing(X, f"{type(self).__name__}.impute")
        X = observed_counts(X, missing, link=self.link, round_counts=self.round_counts,
                            what=type(self).__name__)
        if not missing.any():
            return X.copy()
        return self._impute(X, missing, self._eval_seed(4), n_sweeps)   # one task per chunk

    def _heldout_loglik(self, X_obs, X_held, *, point, n_burn, n_collect, seed,
                        return_parts=False):
        """Per document: log predictive probability of its held-out words, and their count
        (:func:`._evaluate.heldout_loglik` under the kept global samples, or the
        latest one with ``point=True``). ``return_parts=True`` also returns each
        global sample's accumulated rates, for the jackknife of
        :func:`skdgm.deep_lda._bounds.jackknife_heldout`."""
        samples = [(self.topics_, self.r_)] if point else list(self._posterior)
        return _evaluate.heldout_loglik(X_obs, X_held, samples, self._heldout_rates,
                                        n_burn=n_burn, n_collect=n_collect, seed=seed,
                                        return_parts=return_parts)

    def perplexity(self, X_observed, X_heldout, *, point=False, n_burn=None, n_samples=None):
        """Per-held-out-word perplexity (Cong et al. 2017, Sec. 5).

        Parameters
        ----------
        X_observed : {array-like, sparse matrix} of shape (n_samples, n_features)
            The part of each document used to infer its hidden units.
        X_heldout : {array-like, sparse matrix} of shape (n_samples, n_features)
            The part scored.
        point : bool, default=False
            The paper's point perplexity: only the latest global sample.
        n_burn, n_samples : int, optional
            Local sweeps discarded (once, under the first kept global sample)
            and collected under each kept global sample; the chains carry over
            from one global sample to the next. Default ``local_burn_in`` /
            ``local_samples``; the paper's point perplexity uses 200 / 200 with
            every second kept.

        Returns
        -------
        perplexity : float
            ``exp(- sum log p(held-out words) / number of held-out words)``.

        Raises
        ------
        ValueError
            For invalid counts, ``X_observed`` and ``X_heldout`` of different
            shapes, or an ``X_heldout`` without tokens.
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        score : ``-log`` perplexity on a seeded 80/20 split of ``X`` itself.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import DeepLDA
        >>> X = np.random.default_rng(0).poisson(1.0, (30, 12))
        >>> lda = DeepLDA(n_components=(4, 2), n_iter=2, batch_size=10,
        ...               random_state=0).fit(X)
        >>> bool(1.0 < lda.perplexity(X[:10], X[10:20]) < 12.0 * 10)
        True
        """
        check_is_fitted(self, "topics_")
        Xo = self._check_X(X_observed, reset=False)
        Xh = self._check_X(X_heldout, reset=False)
        if Xo.shape != Xh.shape:
            raise ValueError(f"X_observed {Xo.shape} and X_heldout {Xh.shape} differ in shape")
        burn, coll = self._sweeps()
        ll, cnt = self._heldout_loglik(
            Xo, Xh, point=point, n_burn=burn if n_burn is None else int(n_burn),
            n_collect=coll if n_samples is None else int(n_samples), seed=self._eval_seed(1))
        if cnt.sum() == 0:
            raise ValueError("X_heldout contains no tokens")
        return float(np.exp(-ll.sum() / cnt.sum()))

    def _split(self, X):
        """Seeded 80/20 split of every document's tokens (binomial thinning)."""
        return _evaluate.split_tokens(X, 0.2, as_generator(self._eval_seed(2)))

    def _score_parts(self, X, return_parts=False):
        check_is_fitted(self, "topics_")
        X = self._check_X(X, reset=False)
        obs, held = self._split(X)
        burn, coll = self._sweeps()
        return self._heldout_loglik(obs, held, point=False, n_burn=burn, n_collect=coll,
                                    seed=self._eval_seed(3), return_parts=return_parts)

    def score_samples(self, X, *, return_std=False):
        """Per-document mean log-likelihood of held-out words on a seeded 80/20 token split.

        Documents with no held-out token score 0.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            A ``dask.array.Array`` chunked by rows is processed block by block
            where it lives (see :ref:`dask_array_inference`).
        return_std : bool, default=False
            Also return each document's Monte-Carlo standard error: the delete-one
            jackknife over the ``n_posterior_samples`` kept global samples, each
            sample's collected local sweeps one block
            (:func:`skdgm.deep_lda._bounds.jackknife_heldout`). It measures how much
            the score would move with other posterior and local draws *for this
            split*; the local chains run on from one global sample to the next, so
            it is a batch-means estimate, low when they mix slowly. NaN with a
            single kept global sample. 0 for documents with no held-out token.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
        std_err : ndarray of shape (n_samples,)
            Only with ``return_std=True``.

        Raises
        ------
        ValueError
            For negative or non-integer counts (unless ``round_counts``), binary
            data violated under ``link="bernoulli"``, or a feature count other
            than the training data's.
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        score : pooled over every held-out token.
        perplexity : with a split of the user's choosing.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import DeepLDA
        >>> X = np.random.default_rng(0).poisson(1.0, (30, 12))
        >>> lda = DeepLDA(n_components=(4, 2), n_iter=2, batch_size=10,
        ...               random_state=0).fit(X)
        >>> scores = lda.score_samples(X)
        >>> scores.shape, bool(np.all(scores <= 0))
        ((30,), True)
        """
        if not return_std:
            return _evaluate.document_scores(*self._score_parts(X))
        ll, cnt, parts = self._score_parts(X, return_parts=True)
        return _evaluate.document_scores(ll, cnt), _evaluate.heldout_std(cnt, parts)[0]

    def score(self, X, y=None, *, return_std=False):
        """Per-held-out-word log-likelihood over all documents (``-log`` perplexity).

        Pooled over every held-out token of the seeded 80/20 split (not the mean
        of :meth:`score_samples`, which would weight short documents as long ones).
        With ``return_std=True`` also its Monte-Carlo standard error, the jackknife
        of :meth:`score_samples` applied to the pooled figure (NaN with a single
        kept global sample). It is not the sampling error over documents.

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
            Nats per held-out word.
        std_err : float
            Only with ``return_std=True``.

        Raises
        ------
        ValueError
            For negative or non-integer counts (unless ``round_counts``), binary
            data violated under ``link="bernoulli"``, or a feature count other
            than the training data's.
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        score_samples : the per-document figures.
        perplexity : ``exp(-score)`` for a split of the user's choosing.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import DeepLDA
        >>> X = np.random.default_rng(0).poisson(1.0, (30, 12))
        >>> lda = DeepLDA(n_components=(4, 2), n_iter=2, batch_size=10,
        ...               random_state=0).fit(X)
        >>> bool(-np.log(12) - 1.0 < lda.score(X) < 0)
        True
        """
        if not return_std:
            return _evaluate.pooled_score(*self._score_parts(X))
        ll, cnt, parts = self._score_parts(X, return_parts=True)
        return _evaluate.pooled_score(ll, cnt), _evaluate.heldout_std(cnt, parts)[1]

    def _score_block(self, X, **kwargs):
        """Held-out log-likelihood and token count of the rows ``X`` (they add over a
        dask array's blocks into :meth:`score`'s pooled figure)."""
        ll, cnt = self._score_parts(X)
        return float(ll.sum()), float(cnt.sum())

    def log_likelihood_bounds(self, n_samples=100, n_betas=None, random_state=None, *,
                              tol=None):
        """Not available for DeepLDA: raises ``NotImplementedError`` saying why.

        The other estimators bound ``log p(x)`` or ``log Z`` by bidirectional Monte
        Carlo. The PGBN is directed, so exact ``(x, theta)`` pairs exist, but AIS
        needs a sampler for the *tempered* posterior ``p(theta) p(x | theta)^beta``,
        and the upward-downward Gibbs sampler's count augmentations exist only at
        ``beta = 1`` (see :mod:`skdgm.deep_lda._bounds`). Use
        ``score(X, return_std=True)`` for the Monte-Carlo error of the held-out
        score.

        Parameters
        ----------
        n_samples, n_betas, random_state, tol
            Accepted for the signature shared with the other estimators; unused.

        Returns
        -------
        None
            It always raises.

        Raises
        ------
        NotImplementedError
            Always.

        See Also
        --------
        score : ``score(X, return_std=True)`` gives the held-out score's error.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import DeepLDA
        >>> X = np.random.default_rng(0).poisson(1.0, (30, 12))
        >>> lda = DeepLDA(n_components=(4, 2), n_iter=2, batch_size=10,
        ...               random_state=0).fit(X)
        >>> try:
        ...     lda.log_likelihood_bounds()
        ... except NotImplementedError:
        ...     print("not available")
        not available
        """
        raise NotImplementedError(
            "DeepLDA has no log_likelihood_bounds: bidirectional Monte Carlo needs a "
            "sampler of the tempered posterior p(theta) p(x | theta)^beta, and the "
            "upward-downward Gibbs sampler's count augmentations exist only at beta = 1 "
            "(see skdgm.deep_lda._bounds). Use score(X, return_std=True) for the "
            "Monte-Carlo error of the held-out score.")

    # ------------------------------------------------------------- sampling
    def sample(self, n_samples=1, *, lengths="empirical", random_state=None):
        """Draw documents from the fitted model, with lengths like the training documents'.

        The words follow the fitted model (Eq. 1): ``theta^(L) ~ Gam(r, 1/c^(L+1))``,
        ``theta^(l) ~ Gam(Phi^(l+1) theta^(l+1), 1/c^(l+1))`` with
        ``c^(l) ~ Gam(e0, 1/f0)``, and the counts, given the document's length
        ``N``, ``Mult(N, Phi^(1) theta^(1) / |theta^(1)|)`` (a Poisson vector
        conditioned on its total). The length is not drawn from the model: its
        prior ``p^(2) ~ Beta(a0, b0)`` is never updated by training, and with the
        default ``a0 = b0 = 0.01`` it gives lengths from 0 to about 1e7.

        Parameters
        ----------
        n_samples : int, default=1
            Documents drawn.
        lengths : "empirical" or array-like of int of shape (n_samples,)
            ``"empirical"``: each length is drawn from the lengths of all the
            documents given to :meth:`fit` (or to every :meth:`partial_fit` since
            the last ``fit``). An array gives each document's length. With
            ``link="bernoulli"`` a length is the number of distinct words: each
            document's rates are scaled so that its *expected* number of ones is
            that length.
        random_state : int, RandomState, Generator or None, default=None
            Fresh randomness when None.

        Returns
        -------
        X : scipy.sparse.csr_matrix of shape (n_samples, n_features), int64

        Raises
        ------
        ValueError
            For invalid ``lengths`` (wrong shape, negative, or above the count
            limit).
        sklearn.exceptions.NotFittedError
            Before ``fit``.

        See Also
        --------
        impute : expected counts of missing words given a document's others.

        Examples
        --------
        >>> import numpy as np
        >>> from skdgm import DeepLDA
        >>> X = np.random.default_rng(0).poisson(1.0, (30, 12))
        >>> lda = DeepLDA(n_components=(4, 2), n_iter=2, batch_size=10,
        ...               random_state=0).fit(X)
        >>> docs = lda.sample(3, lengths=[5, 10, 20], random_state=0)
        >>> docs.shape, docs.sum(axis=1).A1.tolist()
        ((3, 12), [5, 10, 20])
        """
        check_is_fitted(self, "topics_")
        N = _generate.check_lengths(n_samples, lengths, link=self.link,
                                    n_features=self.n_features_in_, max_count=MAX_TOTAL_COUNT)
        rng = as_generator(check_seed_sequence(random_state))
        if N is None:
            N = _generate.sample_lengths(self._length_values, self._length_counts,
                                         int(n_samples), rng)
        X = _generate.sample_documents(self.topics_, self.r_, N, e0=self.e0, f0=self.f0,
                                       link=self.link, rng=rng)
        return sp.csr_matrix(X)

    # ArviZ (to_inference_data): the kept (Phi, r) as named arrays
    _inference_arrays = staticmethod(inference_arrays)
