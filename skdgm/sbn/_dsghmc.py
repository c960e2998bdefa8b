"""Doubly stochastic gradient MCMC for deep SBNs (Du, Zhu and Zhang 2018).

SGHMC (Eq. 4, :mod:`skdgm._core.sgmcmc`) runs on the collapsed parameters
``theta``; the intractable per-datum gradient (Eq. 3)

    grad log p(x | theta) = E_{p(h | x, theta)} [grad log p(x, h | theta)]

is estimated from ``L`` samples of the hidden layers, either

* by the exact collapsed Gibbs conditional of Eq. 15 (:func:`gibbs_gradient`,
  Eq. 5; :func:`gibbs_sweep_fast` is the C twin of the model core's
  :func:`~skdgm.sbn._model.gibbs_sweep`), or
* by self-normalised importance sampling from a recognition network
  (:func:`nais_gradient`, Eq. 6), whose parameters ascend the inclusive KL
  objective with the same samples (Eq. 7-10).

Everything is module level and takes arrays plus an explicit generator; the
estimator keeps one :class:`DSGHMCTrainer` (momenta, recognition network, Adam
moments, Gibbs settings) between ``partial_fit`` calls.
"""

import copy

import numpy as np
import scipy.sparse as sp
from scipy.special import expit, logsumexp

from .._core.base import check_finite_params
from .._core.blocks import RowSelection, add_parts, block_seeds
from .._core.mcmc import effective_sample_size, importance_std_err, normalised_weights
from .._core.optim import Adam
from .._core.schedules import make_schedule
from .._core.sgmcmc import SGHMCState, per_datum_step_size
from ._dsghmc_fast import collapsed_sweep_layer
from ._engines import map_rows
from ._model import SBNParams, activation, gibbs_sweep, log_joint, sample_hidden_prior
from ._priors import gibbs_update_prior, init_prior_state, prior_precision
from ..exceptions import DivergenceError
from ._recognition import (
    flatten_params,
    init_recognition,
    recognition_log_prob_grad,
    sample_recognition,
)
from ._warm import fixed_thin

__all__ = [
    "DSGHMC_PRIOR_PARAMS",
    "DSGHMCTrainer",
    "PriorGradient",
    "flatten_params",
    "gibbs_gradient",
    "gibbs_sweep_fast",
    "log_joint_grad",
    "log_marginal_is",
    "nais_gradient",
    "prior_grad",
    "snis_weights",
    "unflatten_params",
]


# --- parameter plumbing -----------------------------------------------------------

def unflatten_params(params, arrays):
    """Inverse of :func:`flatten_params` with the layout of ``params``."""
    nw, nb = len(params.weights), len(params.biases)
    lat = None
    if params.lateral is not None:
        # Keep the within-layer weights strictly lower triangular (Eq. 13-14).
        lat = [np.tril(a, -1) for a in arrays[nw + nb:]]
    return SBNParams(list(arrays[:nw]), list(arrays[nw:nw + nb]), lat)


# --- the exact collapsed Gibbs sweep (Eq. 15), fast ------------------------------

def gibbs_sweep_fast(params, layers, rng, beta=1.0, base_logits=None, return_probs=False):
    """Same chain as :func:`skdgm.sbn._model.gibbs_sweep`, with the C kernel.

    The uniforms are drawn as the NumPy sweep draws them (one ``rng.random(lead)``
    per unit, bottom layer first), so from the same generator state both return
    the same hidden layers. Autoregressive models use the NumPy sweep.

    With ``base_logits`` (one array per hidden layer, broadcasting against its
    layer: the logits of a factorised Bernoulli ``q(h)``) the sweep instead leaves
    ``q(h)^(1 - beta) p(x, h)^beta`` invariant, the path of AIS started from ``q``
    (:func:`skdgm.sbn._evaluate.log_marginal_warm_ais`): every unit's prior logit
    becomes ``(1 - beta) logit q + beta a`` and every layer's children term, not
    only the data's, is weighted by ``beta``. Not autoregressive models only.

    With ``return_probs=True`` also returns, per hidden layer, every unit's
    probability of being on at its update (the Rao-Blackwellised draw).
    """
    if params.lateral is not None:
        if base_logits is not None or return_probs:
            raise ValueError("base_logits and return_probs need a model without lateral "
                             "weights")
        return gibbs_sweep(params, layers, rng, beta)
    lead = np.broadcast_shapes(*(np.shape(h)[:-1] for h in layers))
    n = int(np.prod(lead))
    # Copies: the kernel writes the hidden layers in place.
    flat = [np.array(np.broadcast_to(h, lead + np.shape(h)[-1:]).reshape(n, -1), dtype=float)
            for h in layers]
    probs = []
    for l in range(1, params.n_hidden_layers + 1):
        W = params.weights[l - 1]                      # (n_children, K)
        Wt = np.ascontiguousarray(W.T)
        K = Wt.shape[0]
        u = rng.random((K,) + lead).reshape(K, n)
        a_below = np.ascontiguousarray(activation(params, flat, l - 1))
        a_self = activation(params, flat, l)
        children_beta = float(beta) if l == 1 else 1.0
        if base_logits is not None:
            base = np.broadcast_to(base_logits[l - 1], lead + (K,)).reshape(n, K)
            a_self = (1.0 - beta) * base + beta * a_self
            children_beta = float(beta)
        a_self = np.ascontiguousarray(np.broadcast_to(a_self, (n, K)))
        xw = np.ascontiguousarray(flat[l - 1] @ W)
        prob = np.empty((n, K) if return_probs else (1, 1))
        collapsed_sweep_layer(Wt, np.exp(Wt), np.exp(-Wt), xw, a_below, a_self, flat[l], u,
                              children_beta, np.empty(Wt.shape[1]), prob, return_probs)
        if return_probs:
            probs.append(prob.reshape(lead + (K,)))
    out = [layers[0]] + [h.reshape(lead + h.shape[-1:]) for h in flat[1:]]
    return (out, probs) if return_probs else out


# --- gradients of the model ------------------------------------------------------

def log_joint_grad(params, layers, weights):
    """``sum over leading axes of weights * grad_theta log p(x, h | theta)``.

    For every layer ``l`` with activation ``a_l`` (see :mod:`._model`),
    ``d log p / d a_l = h_l - sigmoid(a_l)`` (Eq. 11-14), so the gradient of
    ``weights[l]`` is ``r_l^T h_{l+1}``, of ``biases[l]`` the sum of ``r_l``
    and of ``lateral[l]`` the strictly lower part of ``r_l^T h_l``, with
    ``r_l = weights * (h_l - sigmoid(a_l))``.

    Parameters
    ----------
    params : SBNParams
    layers : list ``[x, h_1, ..., h_L]``
        Arrays whose leading axes broadcast to ``weights.shape``.
    weights : ndarray
        One weight per sample (e.g. ``(L, n)``: SNIS weights over ``L``
        proposals of ``n`` rows, or ``1 / L``).

    Returns
    -------
    grad : SBNParams
    """
    weights = np.asarray(weights, dtype=float)
    lead = weights.shape
    n = int(np.prod(lead))
    flat = [np.broadcast_to(h, lead + np.shape(h)[-1:]).reshape(n, -1) for h in layers]
    w = weights.reshape(n, 1)
    L = params.n_hidden_layers
    gw, gb, gl = [None] * L, [None] * (L + 1), None
    if params.lateral is not None:
        gl = [None] * (L + 1)
    for l in range(L + 1):
        a = activation(params, flat, l)
        r = w * (flat[l] - expit(a))
        gb[l] = r.sum(axis=0)
        if l < L:
            gw[l] = r.T @ flat[l + 1]
        if gl is not None:
            gl[l] = np.tril(r.T @ flat[l], -1)
    return SBNParams(gw, gb, gl)


def prior_grad(arrays, *, kind="student_t", scale=0.09, df=2.2):
    """``grad log p_0(theta)`` for independent priors on every entry.

    ``"student_t"``: location 0, scale ``s``, ``nu`` degrees of freedom
    (Du et al. appendix C: ``s = 0.09``, ``nu = 2.2``),
    ``d/dw log p_0 = -(nu + 1) w / (nu s^2 + w^2)``.
    ``"normal"``: ``N(0, s^2)``, ``-w / s^2``.
    """
    if kind == "student_t":
        c = df * scale * scale
        # w / (c + w^2) -> 0 for huge |w| (w^2 may overflow to inf on the way).
        with np.errstate(over="ignore"):
            return [-(df + 1.0) * a / (c + a * a) for a in arrays]
    if kind == "normal":
        return [-a / (scale * scale) for a in arrays]
    raise ValueError(f"prior_grad supports 'student_t' and 'normal', got {kind!r}")


#: Prior hyper-parameters of the DSGHMC options: Du et al.'s Student-t (appendix C),
#: and part 1's values for the other priors.
DSGHMC_PRIOR_PARAMS = {"scale": 0.09, "df": 2.2, "weight_var": 1.0, "bias_var": 10.0,
                       "a": 0.5, "b": 0.5}


class PriorGradient:
    """``grad log p_0(theta)`` for every prior of :mod:`._priors`.

    ``"student_t"`` (the DSGHMC default): the collapsed Student-t on *every*
    parameter, biases included, as Du et al. (Sec. 3) do. ``"normal"``: normal
    weights (``weight_var``). ``"tpbn"``: the three-parameter beta normal has no
    closed-form marginal, so its latent scales are kept as auxiliary variables and
    redrawn from their full conditionals (:func:`._priors.gibbs_update_prior`)
    once per minibatch (Gibbs within SGHMC); the weights then see the Gaussian
    gradient ``-w / zeta``. With ``"normal"`` and ``"tpbn"`` the biases have the
    normal prior of part 1 (``bias_var``). Weight blocks are as in part 1: the
    weights into layer ``l`` and its lateral weights side by side.
    """

    def __init__(self, params, kind, prior_params):
        if kind not in ("student_t", "normal", "tpbn"):
            raise ValueError(f"unknown prior {kind!r}; use 'student_t', 'normal' or 'tpbn'")
        self.kind = kind
        self.pp = dict(prior_params)
        self.states = []
        if kind != "student_t":
            for l in range(len(params.biases)):
                blk, mask = self._block(params, l)
                self.states.append(init_prior_state(kind, blk.shape, self.pp)
                                   if blk.size else {})

    @staticmethod
    def _block(params, l):
        parts, masks = [], []
        if l < params.n_hidden_layers:
            parts.append(params.weights[l])
            masks.append(np.ones(params.weights[l].shape, bool))
        if params.lateral is not None:
            parts.append(params.lateral[l])
            masks.append(np.tril(np.ones(params.lateral[l].shape, bool), -1))
        if not parts:
            k = len(params.biases[l])
            return np.zeros((k, 0)), np.zeros((k, 0), bool)
        return np.hstack(parts), np.hstack(masks)

    def resample(self, params, rng):
        """Redraw the latent scales given the current weights (TPBN only)."""
        if self.kind != "tpbn":
            return
        for l, st in enumerate(self.states):
            blk, mask = self._block(params, l)
            if blk.size:
                self.states[l] = gibbs_update_prior("tpbn", st, blk, mask, self.pp, rng)

    def __call__(self, params):
        if self.kind == "student_t":
            return prior_grad(flatten_params(params), kind="student_t",
                              scale=self.pp["scale"], df=self.pp["df"])
        L = params.n_hidden_layers
        gw = [None] * L
        gl = None if params.lateral is None else [None] * (L + 1)
        for l, st in enumerate(self.states):
            blk, mask = self._block(params, l)
            if not blk.size:
                continue
            g = -prior_precision(self.kind, st, self.pp, blk.shape) * blk * mask
            c = 0
            if l < L:
                c = params.weights[l].shape[1]
                gw[l] = g[:, :c]
            if gl is not None:
                gl[l] = g[:, c:]
        gb = [-b / self.pp["bias_var"] for b in params.biases]
        return flatten_params(SBNParams(gw, gb, gl))


def snis_weights(log_p, log_q):
    """Self-normalised importance weights over the sample axis 0 (Eq. 6).

    Returns the normalised weights (shape of ``log_p``), the per-row estimate
    ``log mean exp(log_p - log_q)`` of ``log p(x)``, and the per-row effective
    sample size ``1 / sum w^2``.
    """
    log_w = log_p - log_q
    w = normalised_weights(log_w)
    log_px = logsumexp(log_w, axis=0) - np.log(log_w.shape[0])
    return w, log_px, effective_sample_size(w)


def gibbs_gradient(params, X, hidden, rng, *, n_sweeps=1):
    """Eq. 5 with Gibbs samples (Eq. 15): run ``n_sweeps`` sweeps, then average.

    Parameters
    ----------
    params : SBNParams
    X : ndarray of shape (n, D)
    hidden : list of ndarray of shape (L, n, K_l)
        Current states of ``L`` Gibbs chains per row (warm start).
    rng : numpy.random.Generator
    n_sweeps : int

    Returns
    -------
    grad : SBNParams
        ``sum_n (1/L) sum_s grad log p(x_n, h^(s)_n | theta)``.
    hidden : list of ndarray
        The chains' new states.
    """
    layers = [X] + list(hidden)
    for _ in range(int(n_sweeps)):
        layers = gibbs_sweep_fast(params, layers, rng)
    L = layers[1].shape[0]
    weights = np.full(layers[1].shape[:2], 1.0 / L)
    return log_joint_grad(params, layers, weights), layers[1:]


def nais_gradient(params, phi, X, n_samples, rng):
    """Eq. 6 and Eq. 9 from one set of ``L`` recognition samples per row.

    Returns
    -------
    grad_theta : SBNParams
        ``sum_n sum_s w_ns grad log p(x_n, h^(s) | theta)`` (self-normalised).
    grad_phi : RecognitionParams
        ``sum_n sum_s w_ns grad_phi log q(h^(s) | x_n)`` (the same weights, Eq. 9).
    log_px : ndarray of shape (n,)
        The importance estimate ``log mean_s w_ns`` (a lower bound in expectation).
    ess : ndarray of shape (n,)
        ``1 / sum_s w_ns^2`` (between 1 and ``L``).
    """
    hidden, log_q = sample_recognition(phi, X, n_samples, rng)
    layers = [X] + hidden
    w, log_px, ess = snis_weights(log_joint(params, layers), log_q)
    return (log_joint_grad(params, layers, w), recognition_log_prob_grad(phi, X, hidden, w),
            log_px, ess)


#: Most array entries (proposals x rows x units, visible included) one importance-
#: sampling step holds at once: 2**25 float64 entries are 256 MB per array. Without a
#: bound, scoring 10,000 MNIST rows at 200-200 with 1,000 proposals asked for tens of GB.
IS_MAX_ELEMENTS = 2 ** 25


def log_marginal_is(params, phi, X, n_samples, rng, *, chunk=1000,
                    max_elements=IS_MAX_ELEMENTS):
    """``log p(x)`` per row by importance sampling from the recognition model.

    Du et al. appendix B.1: ``p(x) ~= mean_s p(x, h_s) / q(h_s | x)``; the log
    of it is biased low by ``O(1/n_samples)`` (Jensen). Proposals are drawn in
    chunks of ``chunk`` per row, and the rows in blocks small enough that a
    chunk's arrays hold at most ``max_elements`` entries, so memory is bounded
    whatever the number of rows. Blocks draw from ``rng`` one after another: a
    call whose rows fit in one block draws exactly as an unblocked call.

    Returns ``(log_px, std_err)``; ``std_err`` is the delta-method standard error
    ``sd(w) / (sqrt(S) mean(w))`` of the estimate.
    """
    X = np.asarray(X, dtype=float)
    n_samples = int(n_samples)
    width = sum(len(b) for b in params.biases)
    rows = max(1, int(max_elements) // (min(chunk, n_samples) * max(width, 1)))
    out = [_log_marginal_is_rows(params, phi, X[i:i + rows], n_samples, rng, chunk)
           for i in range(0, X.shape[0], rows)] or [(np.zeros(0), np.zeros(0))]
    return tuple(np.concatenate(parts) for parts in zip(*out))


def _log_marginal_is_rows(params, phi, X, n_samples, rng, chunk):
    parts = []
    for start in range(0, n_samples, chunk):
        m = min(chunk, n_samples - start)
        hidden, log_q = sample_recognition(phi, X, m, rng)
        parts.append(log_joint(params, [X] + hidden) - log_q)
    log_w = np.concatenate(parts, axis=0)
    return logsumexp(log_w, axis=0) - np.log(n_samples), importance_std_err(log_w)


# --- the training state kept by the estimator -------------------------------------

class DSGHMCTrainer:
    """State and minibatch step of DSGHMC-Gibbs / DSGHMC-NAIS (Alg. 1).

    Parameters
    ----------
    params : SBNParams
        Initial ``theta`` (shapes only are kept here).
    proposal : {"gibbs", "nais"}
    n_samples : int
        ``L`` hidden-layer samples per data point and SGHMC step (paper: 5).
    gibbs_sweeps : int
        Burn-in sweeps of the Gibbs chains at the start of each minibatch (paper:
        5); the chains then move one sweep per further SGHMC step, warm-started
        because ``theta`` moves little within a minibatch.
    n_sghmc_steps : int
        Inner SGHMC steps per minibatch (paper appendix C: 10).
    learning_rate : float or schedule spec
        Per-datum step size (appendix C), evaluated at the minibatch counter;
        the SGHMC step is ``learning_rate / n_total``.
    friction : float
        Momentum decay ``xi`` (paper: 0.1 or 0.05).
    sampler : {"sghmc", "sgnht"}
    recognition_learning_rate : float
        Adam step for the recognition network (paper: 0.001 or 0.0005).
    prior : {"student_t", "normal", "tpbn"}
    prior_params : dict
        Keys of :data:`DSGHMC_PRIOR_PARAMS` (see :class:`PriorGradient`).
    rng : numpy.random.Generator
        Initialises the recognition network.
    """

    def __init__(self, params, *, proposal, n_samples=5, gibbs_sweeps=5, n_sghmc_steps=10,
                 learning_rate=0.01, friction=0.1, sampler="sghmc",
                 recognition_learning_rate=1e-3, prior="student_t", prior_params=None,
                 rng=None):
        if proposal not in ("gibbs", "nais"):
            raise ValueError(f"unknown DSGHMC proposal {proposal!r}")
        self.proposal = proposal
        self.n_samples = int(n_samples)
        self.gibbs_sweeps = int(gibbs_sweeps)
        self.n_sghmc_steps = int(n_sghmc_steps)
        self.schedule = make_schedule(learning_rate)
        self.sampler = SGHMCState(flatten_params(params), method=sampler, friction=friction)
        pp = dict(DSGHMC_PRIOR_PARAMS)
        pp.update(prior_params or {})
        self.prior = PriorGradient(params, prior, pp)
        self.t = 0
        self.phi = self.adam = None
        if proposal == "nais":
            sizes = [len(b) for b in params.biases]
            self.phi = init_recognition(sizes[0], sizes[1:], rng,
                                        autoregressive=params.lateral is not None)
            self.adam = Adam(self.phi.flat(), learning_rate=recognition_learning_rate,
                             maximize=True)

    def full_gradient(self, params, grad_sum, batch_size, n_total):
        """Prior gradient plus ``n_total / |B|`` times the minibatch sum (Eq. 4)."""
        scale = float(n_total) / batch_size
        prior = self.prior(params)
        return [p + scale * g for p, g in zip(prior, flatten_params(grad_sum))]

    def minibatch(self, params, X, n_total, rng):
        """``n_sghmc_steps`` SGHMC steps on one minibatch (Alg. 1, lines 4-8).

        Returns the new parameters and a dict of diagnostics: the step size,
        for NAIS the mean importance estimate of ``log p(x)`` and the mean
        relative ESS ``ess / L`` over the minibatch.
        """
        if not isinstance(X, RowSelection):
            X = np.asarray(X, dtype=float)
        n = X.shape[0]
        eta = per_datum_step_size(self.schedule(self.t), n_total)
        self.prior.resample(params, rng)
        # The caller reverts the parameters to the start of the minibatch when a step
        # diverges; revert the sampler's and the recognition network's state with them
        # so momenta and parameters stay in step.
        saved = (self.sampler.momenta, self.sampler.thermostat, self.phi,
                 copy.deepcopy(self.adam))
        try:
            params, log_px, ess = self._steps(params, X, n, n_total, eta, rng)
        except DivergenceError:
            (self.sampler.momenta, self.sampler.thermostat, self.phi, self.adam) = saved
            raise
        self.t += 1
        metrics = {"step_size": eta}
        if log_px:
            metrics["log_px_is"] = float(np.mean(log_px))
            metrics["ess_ratio"] = float(np.mean(ess))
        return params, metrics

    def _gradients(self, params, X, n, i, state, rng):
        """Step ``i``'s minibatch gradients (Eq. 5 or 6, 9) from the rows in memory:
        ``(grad_theta, flat grad_phi or None, mean log_px, mean ESS / L, state)``,
        ``state`` being the Gibbs chains carried to the next step."""
        if self.proposal == "gibbs":
            if state is None:
                state = sample_hidden_prior(params, (self.n_samples, n), rng)
            sweeps = self.gibbs_sweeps if i == 0 else 1
            g, state = gibbs_gradient(params, X, state, rng, n_sweeps=sweeps)
            return g, None, None, None, state
        g, g_phi, lp, es = nais_gradient(params, self.phi, X, self.n_samples, rng)
        return g, g_phi.flat(), lp.mean(), es.mean() / self.n_samples, None

    def _block_gradients(self, params, X, n, i, state, rng):
        """:meth:`_gradients` of a dask array's minibatch (a ``RowSelection``), each
        block's rows where the block lives, from a stream per block and step; the
        Gibbs chains stay with their block between steps (``state``), and only the
        parameter-sized sums come back, added by a tree in block order (on the
        workers above :data:`~skdgm._core.blocks.TREE_ON_WORKERS_ABOVE` blocks)."""
        sweeps = self.gibbs_sweeps if i == 0 else 1
        shared = (params, self.phi, self.proposal, self.n_samples, sweeps)
        [total], state = X.map_carry(_block_gradient, shared, block_seeds(rng), state,
                                     combine=add_parts)
        g = unflatten_params(params, _unpack(total[0], flatten_params(params)))
        if self.proposal == "gibbs":
            return g, None, None, None, state
        g_phi = _unpack(total[1], self.phi.flat())
        return g, g_phi, total[2][0] / n, total[2][1] / n / self.n_samples, None

    def _steps(self, params, X, n, n_total, eta, rng):
        gradients = self._block_gradients if isinstance(X, RowSelection) else self._gradients
        state = None
        log_px, ess = [], []
        for i in range(self.n_sghmc_steps):
            g, g_phi, lp, es, state = gradients(params, X, n, i, state, rng)
            if g_phi is not None:
                log_px.append(lp)
                ess.append(es)
            grads = self.full_gradient(params, g, n, n_total)
            new, aux = self.sampler.step(flatten_params(params), grads, step_size=eta,
                                         rng=rng)
            check_finite_params({"theta": new}, "DSGHMC step",
                                previous={"theta": flatten_params(params)})
            self.sampler.commit(aux)
            params = unflatten_params(params, new)
            if self.proposal == "nais":
                # Per-datum gradient (Eq. 10 divided by |D|): Adam is scale-free anyway.
                g_phi = [a / n for a in g_phi]
                phi_new = self.adam.step(self.phi.flat(), g_phi)
                check_finite_params({"phi": phi_new}, "recognition-network step")
                self.phi = self.phi.from_flat(phi_new)
                if self.phi.lateral is not None:
                    self.phi = self.phi._replace(lateral=[np.tril(a, -1)
                                                          for a in self.phi.lateral])
        return params, log_px, ess


def _pack(arrays):
    return np.concatenate([np.ravel(a) for a in arrays])


def _unpack(vector, like):
    out, start = [], 0
    for a in like:
        out.append(vector[start:start + a.size].reshape(a.shape))
        start += a.size
    return out


def _block_gradient(X, shared, seed, chains):
    """One SGHMC step's gradient sums over one block's rows of a minibatch, where
    the block lives (:meth:`DSGHMCTrainer._block_gradients`).

    ``shared = (params, phi, proposal, L, sweeps)``; ``chains``: the rows' Gibbs
    chains from the previous step (``None`` at a minibatch's first step: drawn
    from the prior). Returns ``(sums, chains)`` with ``sums`` the flattened
    ``grad_theta`` and, for NAIS, the flattened ``grad_phi`` and the sums of
    ``log_px`` and of the ESS over the rows.
    """
    params, phi, proposal, L, sweeps = shared
    X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float)
    rng = np.random.default_rng(seed)
    if proposal == "gibbs":
        if chains is None:
            chains = sample_hidden_prior(params, (L, X.shape[0]), rng)
        g, chains = gibbs_gradient(params, X, chains, rng, n_sweeps=sweeps)
        return (_pack(flatten_params(g)),), chains
    g, g_phi, lp, es = nais_gradient(params, phi, X, L, rng)
    return (_pack(flatten_params(g)), _pack(g_phi.flat()),
            np.array([lp.sum(), es.sum()])), None


# --- engines for BayesianSBN(inference="dsghmc_gibbs" | "dsghmc_nais") ---------------

#: ``partial_fit`` keeps one posterior sample every this many minibatches after
#: ``burn_in`` minibatches (the most recent ``n_posterior_samples`` are kept); ``fit``,
#: whose run has a known length (``run_steps``), spreads them over its collection instead.
STREAM_THIN = 10

#: Estimator options the engines read, with their defaults.
DSGHMC_OPTIONS = {
    "learning_rate": 0.01,             # per-datum step (appendix C)
    "friction": 0.1,                   # xi of Eq. 4
    "sampler": "sghmc",
    "n_sghmc_steps": 10,               # appendix C
    "n_samples": 5,                    # L (Sec. 4.1)
    "gibbs_sweeps": 5,                 # Sec. 4.1
    "recognition_learning_rate": 1e-3,  # Adam (Sec. 4.1)
    "burn_in": 40,                     # minibatch steps
    "n_posterior_samples": 10,
    "run_steps": 0,                    # fit: the run's minibatch steps; 0: a stream
}


class _DSGHMCEngine:
    """The engine protocol of :mod:`._engines` around a :class:`DSGHMCTrainer`.

    ``step`` is one minibatch of ``n_sghmc_steps`` SGHMC steps, so ``fit`` runs
    epochs of minibatches and ``partial_fit`` streams (``streaming = True``).
    Both collect here, in minibatch steps: after ``burn_in`` steps, one sample every
    ``thin`` steps, the latest ``n_posterior_samples`` kept. ``fit`` knows its
    length (``run_steps``), so ``thin`` spreads the samples evenly over the steps
    after burn-in (:func:`._warm.fixed_thin`; a run of one pass still keeps
    ``n_posterior_samples``); a stream's length is unknown, so ``partial_fit``
    thins by :data:`STREAM_THIN`.
    """

    streaming = True
    #: ``fit``'s ``n_iter="auto"`` is a count of updates, not of passes
    #: (``_defaults.AUTO_DSGHMC_UPDATES``)
    auto_counts_updates = True
    keeps_samples = True
    proposal = None
    #: The paper's prior (Sec. 3, appendix C), the default of these options.
    default_prior = "student_t"
    default_prior_params = {"scale": 0.09, "df": 2.2}

    def __init__(self, params, prior_states, prior, prior_params, options):
        o = {**DSGHMC_OPTIONS, **{k: v for k, v in options.items() if v is not None}}
        self.options = o
        self.params = params
        self.prior_states = list(prior_states)
        self.prior, self.prior_params = prior, dict(prior_params)
        self.trainer = None
        self._stream = []           # (step, sample), newest last
        self._n_steps = 0

    def _ensure_trainer(self, rng):
        if self.trainer is None:
            o = self.options
            self.trainer = DSGHMCTrainer(
                self.params, proposal=self.proposal, n_samples=o["n_samples"],
                gibbs_sweeps=o["gibbs_sweeps"], n_sghmc_steps=o["n_sghmc_steps"],
                learning_rate=o["learning_rate"], friction=o["friction"],
                sampler=o["sampler"],
                recognition_learning_rate=o["recognition_learning_rate"],
                prior=self.prior, prior_params=self.prior_params, rng=rng)

    def init_data(self, X, rng, hidden=None):
        self._ensure_trainer(rng)

    def step(self, X, rng, frozen_layers=(), n_total=None):
        self._ensure_trainer(rng)
        n = X.shape[0]
        n_total = n if n_total is None else max(n_total, n)
        self.params, metrics = self.trainer.minibatch(self.params, X, n_total, rng)
        self._n_steps += 1
        o = self.options
        done = self._n_steps - o["burn_in"]
        thin = (fixed_thin(o["run_steps"], o["burn_in"], o["n_posterior_samples"])
                if o["run_steps"] else STREAM_THIN)
        if done > 0 and done % thin == 0:
            self._stream = (self._stream + [(self._n_steps, self.params.copy())])[
                -o["n_posterior_samples"]:]
        return metrics

    def refresh(self, options):
        """New hyper-parameters between ``partial_fit`` calls (``set_params``).

        The trainer keeps its step schedule (evaluated at its own minibatch counter,
        so a new one continues from there), friction and step counts: replaced here.
        """
        self.options.update(options)
        trainer = self.trainer
        if trainer is None:
            return
        o = self.options
        trainer.schedule = make_schedule(o["learning_rate"])
        trainer.sampler.friction = float(o["friction"])
        trainer.n_sghmc_steps = int(o["n_sghmc_steps"])
        trainer.n_samples = int(o["n_samples"])
        trainer.gibbs_sweeps = int(o["gibbs_sweeps"])
        if trainer.adam is not None:
            trainer.adam.learning_rate = float(o["recognition_learning_rate"])

    def current_params(self):
        return self.params

    def posterior_draw(self, rng):
        return self.params.copy()

    def streaming_samples(self):
        """The thinned samples kept (see the class), newest last; the current
        parameters if none was kept yet."""
        return [p for _, p in self._stream] or [self.params.copy()]

    @property
    def kept_steps(self):
        """The minibatch steps (counted from 1) after which the kept samples were taken."""
        return [t for t, _ in self._stream]

    def hidden_sample(self, X, rng):
        """One posterior draw of the hidden layers per row (input of the next
        pre-training stage): Gibbs sweeps, or SNIS resampling of ``L`` proposals.
        A CSR ``X`` is read one chunk of rows at a time."""
        return map_rows(lambda Xc: self._hidden_rows(Xc, rng), X,
                        self.options.get("chunk_size"))

    def _hidden_rows(self, X, rng):
        if self.proposal == "nais":
            hidden, log_q = sample_recognition(self.trainer.phi, X, self.options["n_samples"],
                                               rng)
            w, _, _ = snis_weights(log_joint(self.params, [X] + hidden), log_q)
            cum = np.cumsum(w, axis=0)
            pick = np.minimum((rng.random(w.shape[1]) > cum).sum(axis=0), w.shape[0] - 1)
            rows = np.arange(w.shape[1])
            return [h[pick, rows] for h in hidden]
        layers = [X] + sample_hidden_prior(self.params, (len(X),), rng)
        for _ in range(self.options["gibbs_sweeps"]):
            layers = gibbs_sweep_fast(self.params, layers, rng)
        return layers[1:]

    def export(self):
        return self.params, self.prior_states, None

    @property
    def recognition(self):
        """The recognition network (``None`` for the Gibbs proposal)."""
        return None if self.trainer is None else self.trainer.phi


class DSGHMCGibbsEngine(_DSGHMCEngine):
    """``inference="dsghmc_gibbs"``: gradients from collapsed Gibbs samples (Eq. 5, 15)."""

    proposal = "gibbs"


class DSGHMCNAISEngine(_DSGHMCEngine):
    """``inference="dsghmc_nais"``: SNIS gradients from a recognition network (Eq. 6-10)."""

    proposal = "nais"
