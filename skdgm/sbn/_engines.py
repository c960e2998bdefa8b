"""Inference engines behind ``BayesianSBN(inference=...)``.

An engine owns the state of one training run (parameters or their variational
factors, the prior's latent scales, the training data's hidden units) and offers

``Engine(params, prior_states, prior, prior_params, options)``
    start from initial parameters (e.g. assembled by layer-wise pre-training);
``init_data(X, rng, hidden=None)``
    attach training data, initialising its hidden units (or taking ``hidden``);
``step(X, rng, frozen_layers=(), n_total=None)``
    one iteration (full data for batch methods, one minibatch for streaming ones);
    returns a dict of metrics for ``history_``;
``current_params()`` / ``posterior_draw(rng)``
    the current point (posterior mean for VB) / one draw of the parameters;
``hidden_sample(X, rng)``
    binary hidden units of the training data (input of the next pre-training stage);
``export()``
    ``(params, prior_states, hidden)``;
``refresh(options)``
    take new hyper-parameters between ``partial_fit`` calls (``set_params``).

``streaming = True`` marks engines whose ``step`` takes minibatches (``partial_fit``);
``auto_counts_updates = True`` those whose ``fit(n_iter="auto")`` runs a fixed number of
updates rather than whole passes (:func:`skdgm.sbn._defaults.resolve_run_steps`).
The DSGHMC engines (:mod:`skdgm.sbn._dsghmc`) follow the same protocol; the
``_train.INFERENCE`` table maps every ``inference`` option to its engine.
Shared steps come from ``_core``: Bernoulli draws from :mod:`skdgm._core.mcmc`,
the online-VB step size ``rho_t`` from :class:`skdgm._core.schedules.OnlineVB`.
"""

import numpy as np
import scipy.sparse as sp

from .._core.base import check_finite_params
from .._core.blocks import RowSelection
from .._core.mcmc import bernoulli
from .._core.schedules import OnlineVB
from . import _gibbs, _model, _vb

__all__ = ["GibbsEngine", "OnlineVBEngine", "VBEngine", "map_rows"]


def map_rows(func, X, chunk_size):
    """``func(rows)`` over consecutive chunks of ``X`` (dense ones), outputs concatenated.

    ``func`` returns a list of arrays with one row per input row (hidden layers); a CSR
    ``X`` is densified one chunk at a time. A dense ``X`` is one call.
    """
    if not sp.issparse(X):
        return func(np.asarray(X, dtype=float))
    n = X.shape[0]
    size = max(1, int(chunk_size or n))
    outs = [func(X[s:s + size].toarray().astype(float)) for s in range(0, n, size)]
    return [np.concatenate(parts) for parts in zip(*outs)]


class GibbsEngine:
    """Pólya-Gamma Gibbs sampling (Sec. 3.1); ``step`` is one full iteration."""

    streaming = False
    auto_counts_updates = False
    keeps_samples = True

    def __init__(self, params, prior_states, prior, prior_params, options):
        self.params = params
        self.prior_states = list(prior_states)
        self.prior, self.prior_params, self.options = prior, prior_params, options
        self.hidden = None

    def init_data(self, X, rng, hidden=None):
        if hidden is None:
            hidden = _model.sample_hidden_prior(self.params, (X.shape[0],), rng)
        self.hidden = [np.array(h, dtype=float) for h in hidden]

    def step(self, X, rng, frozen_layers=(), n_total=None):
        # X may be CSR: the iteration reads it ``chunk_size`` rows at a time
        chunk = self.options.get("chunk_size")
        hidden = [h.copy() for h in self.hidden]
        new, hidden, states = _gibbs.gibbs_iteration(
            self.params, X, hidden, self.prior_states, self.prior, self.prior_params, rng,
            frozen_layers=frozen_layers, kernels=self.options.get("kernels", "cython"),
            chunk_size=chunk, workspace=self.__dict__.setdefault("_workspace", {}))
        check_finite_params({"weights": new.weights, "biases": new.biases}, "Gibbs step")
        self.params, self.hidden, self.prior_states = new, hidden, states
        return {"log_joint": _gibbs.log_joint_mean(self.params, X, self.hidden, chunk)}

    def refresh(self, options):
        self.options.update(options)

    def __getstate__(self):
        # the iteration's scratch buffers are not state: not copied, not pickled
        return {k: v for k, v in self.__dict__.items() if k != "_workspace"}

    def current_params(self):
        return self.params

    def posterior_draw(self, rng):
        return self.params.copy()

    def hidden_sample(self, X, rng):
        return [h.copy() for h in self.hidden]

    def export(self):
        return self.params, self.prior_states, self.hidden


class VBEngine:
    """Batch mean-field VB (Sec. 3.2); ``step`` is one coordinate-ascent sweep.

    Metrics: ``bound`` (the augmented bound ``L'`` per sample, exact, never decreases)
    and ``elbo`` (Eq. 15 per sample, logistic terms by Monte Carlo with 10 draws).
    """

    streaming = False
    auto_counts_updates = False
    keeps_samples = False

    def __init__(self, params, prior_states, prior, prior_params, options):
        self.template = params.copy()
        self.state = _vb.init_vb_state(params, prior_states)
        self.prior, self.prior_params, self.options = prior, prior_params, options
        self.hidden = None

    def init_data(self, X, rng, hidden=None):
        if hidden is None:
            sizes = _model.layer_sizes(self.template)[1:]
            hidden = [rng.random((X.shape[0], k)) for k in sizes]
        self.hidden = [np.array(h, dtype=float) for h in hidden]

    def step(self, X, rng, frozen_layers=(), n_total=None):
        if sp.issparse(X):
            # Batch VB reads the whole data in every coordinate sweep, and its per-row
            # factors are (n, K) dense already: a CSR input is densified here (the
            # user guide says so; Gibbs and the streaming options read it by chunks).
            X = X.toarray()
        M_old = [m.copy() for m in self.state["M"]]
        V_old = [v.copy() for v in self.state["V"]]
        prior_old = list(self.state["prior"])
        _vb.vb_iteration(self.template, self.state, X, self.hidden, self.prior,
                         self.prior_params, n_local=1, frozen_layers=frozen_layers)
        try:
            check_finite_params({"M": self.state["M"], "V": self.state["V"]}, "VB step")
        except FloatingPointError:
            self.state["M"], self.state["V"], self.state["prior"] = M_old, V_old, prior_old
            raise
        n = len(X)
        out = {"bound": _vb.augmented_bound(self.template, self.state, X, self.hidden,
                                            self.prior, self.prior_params) / n}
        if self.options.get("mc_elbo", True):
            out["elbo"] = _vb.mc_bound(self.template, self.state, X, self.hidden, self.prior,
                                       self.prior_params, rng) / n
        return out

    def refresh(self, options):
        self.options.update(options)

    def current_params(self):
        return _vb.params_from_state(self.template, self.state)

    def posterior_draw(self, rng):
        return _vb.sample_params(self.template, self.state, rng)

    def hidden_sample(self, X, rng):
        return [bernoulli(pi, rng, dtype=float) for pi in self.hidden]

    def export(self):
        return self.current_params(), self.state["prior"], self.hidden


class OnlineVBEngine(VBEngine):
    """Online (stochastic natural-gradient) VB (Sec. 3.2); ``step`` is one minibatch.

    Step ``rho_t = (learning_offset + t)^(-learning_decay)``; the minibatch's local
    factors get ``n_local_iter`` coordinate sweeps (the paper uses 4).
    """

    streaming = True

    def __init__(self, params, prior_states, prior, prior_params, options):
        super().__init__(params, prior_states, prior, prior_params, options)
        self.t = 0

    def init_data(self, X, rng, hidden=None):
        self.hidden = None if hidden is None else [np.array(h, float) for h in hidden]

    def step(self, X, rng, frozen_layers=(), n_total=None):
        o = self.options
        n = X.shape[0]
        n_total = n if n_total is None else max(n_total, n)
        sizes = _model.layer_sizes(self.template)[1:]
        hidden = [rng.random((n, k)) for k in sizes]
        zc = None
        if isinstance(X, RowSelection):
            # a dask array's minibatch: the local step runs where its blocks live,
            # from the same starting means; the global step reads their sums only
            hidden, zc = _vb.local_step_blocks(self.template, self.state, X, hidden,
                                               o.get("n_local_iter", 4))
        else:
            _vb.local_step(self.template, self.state, X, hidden,
                           n_iter=o.get("n_local_iter", 4))
        layers_mean = [X] + hidden
        gbar = [_vb.pg_mean(np.sqrt(_vb.expected_psi(
            _model.layer_regressors(self.template, layers_mean, l), self.state["M"][l],
            self.state["V"][l])[1])) for l in range(self.template.n_hidden_layers + 1)]
        # rho_t in (0, 1] weighs the minibatch's natural-gradient target against the
        # current factors (learning_offset=0 gives rho = 1 at first, a plain replacement).
        rho = float(OnlineVB(o.get("learning_offset", 10.0), o.get("learning_decay", 0.7))(self.t))
        M_old = [m.copy() for m in self.state["M"]]
        V_old = [v.copy() for v in self.state["V"]]
        prior_old = list(self.state["prior"])
        _vb.global_step(self.template, self.state, X, hidden, gbar, self.prior,
                        self.prior_params, scale=n_total / n, rho=rho,
                        frozen_layers=frozen_layers, visible_zc=zc)
        try:
            check_finite_params({"M": self.state["M"], "V": self.state["V"]}, "online VB step")
        except FloatingPointError:
            self.state["M"], self.state["V"], self.state["prior"] = M_old, V_old, prior_old
            raise
        self.t += 1
        self._last_hidden = hidden
        return {"batch_bound": _vb.augmented_bound(
            self.template, self.state, X, hidden, self.prior, self.prior_params,
            visible_zc=zc) / n_total, "rho": rho}

    def hidden_sample(self, X, rng):
        sizes = _model.layer_sizes(self.template)[1:]

        def rows(Xc):
            hidden = [np.full((len(Xc), k), 0.5) for k in sizes]
            _vb.local_step(self.template, self.state, Xc, hidden,
                           n_iter=self.options.get("n_local_iter", 4))
            return [bernoulli(pi, rng, dtype=float) for pi in hidden]
        return map_rows(rows, X, self.options.get("chunk_size"))

    def export(self):
        return self.current_params(), self.state["prior"], None
