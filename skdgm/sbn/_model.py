"""The deep (autoregressive) sigmoid belief net as arrays: densities, conditionals, sampling.

Everything here is pure NumPy, module level, and takes the parameters and a random
generator explicitly, so every inference method (Gibbs, VB, online VB, SGHMC) and the
tests share one definition of the model (Gan et al. 2015, Eq. 1-8).

Parameter layout (:class:`SBNParams`)
-------------------------------------
Layers are numbered from the bottom: layer 0 is the visible vector ``v = h^(0)``,
layers ``1..L`` are the hidden layers, ``sizes = (D, K_1, ..., K_L)``.

``weights[l]`` for ``l = 0..L-1``, shape ``(sizes[l], sizes[l + 1])``
    ``W^(l+1)`` of Eq. 8: row ``j`` maps the layer above to unit ``j`` of layer ``l``
    (``n_lower x n_upper``).
``biases[l]`` for ``l = 0..L``, shape ``(sizes[l],)``
    ``c^(l+1)`` of Eq. 8, the bias of layer ``l``. ``biases[L]`` is the top-layer prior
    bias ``c^(L+1)`` (``p(h^(L)_k = 1) = sigmoid(c^(L+1)_k)``). For the fully visible
    SBN (``L = 0``) ``biases[0]`` is the visible bias.
``lateral[l]`` for ``l = 0..L`` (``None`` when not autoregressive), shape ``(sizes[l], sizes[l])``
    the strictly lower-triangular within-layer weights of the ARSBN (Eq. 6): ``S`` for
    the visible layer (``l = 0``), ``U`` for the hidden layers. Entries on or above the
    diagonal are always zero.

The activation of layer ``l`` (the argument of the sigmoid of every unit) is

    ``a_l = biases[l] + h_{l+1} @ weights[l].T + h_l @ lateral[l].T``

(the middle term absent for the top layer, the last absent without autoregression),
and ``log p(h_l | h_{l+1}) = sum_j h_lj a_lj - softplus(a_lj)``. Unit ``j`` only sees
units ``< j`` of its own layer because ``lateral[l]`` is strictly lower triangular.

``layers`` (a list ``[v, h_1, ..., h_L]``) holds float arrays of shape
``(..., sizes[l])``; any leading axes broadcast (e.g. ``(n_runs, n_points, K)`` for AIS
with the data ``(n_points, D)``).
"""

from functools import partial
from typing import NamedTuple

import numpy as np
from scipy.special import expit, logsumexp

from .._core.ais import annealed_importance_sampling
from .._core.exact import binary_states
from .._core.mcmc import bernoulli
from .._core.numerics import softplus

__all__ = [
    "SBNParams",
    "activation",
    "ais_log_density",
    "ais_sample_base",
    "ais_transition",
    "conditional_logit",
    "gibbs_sweep",
    "init_params",
    "layer_regressors",
    "layer_rows",
    "layer_sizes",
    "active_units",
    "assemble_stages",
    "log_conditional",
    "log_joint",
    "log_marginal_ais",
    "log_marginal_exact",
    "log_prior_hidden",
    "mean_params",
    "posterior_mean_exact",
    "row_mask",
    "sample_ancestral",
    "sample_hidden_prior",
    "sample_visible_missing",
    "set_layer_rows",
    "softplus",
]

MAX_ENUMERATED_UNITS = 20


class SBNParams(NamedTuple):
    """Parameters of a deep SBN (see the module docstring for the layout)."""

    weights: list
    biases: list
    lateral: list | None = None

    @property
    def n_hidden_layers(self):
        return len(self.weights)

    @property
    def autoregressive(self):
        return self.lateral is not None

    def copy(self):
        lat = None if self.lateral is None else [s.copy() for s in self.lateral]
        return SBNParams([w.copy() for w in self.weights], [b.copy() for b in self.biases], lat)


def layer_sizes(params):
    """``(D, K_1, ..., K_L)``."""
    return tuple(len(b) for b in params.biases)


# --- row view: every unit is a logistic regression on its parents plus a bias ---
#
# Unit j of layer l regresses on z = [h_{l+1}, h_l (autoregressive only), 1] with the
# coefficient row theta_j = [weights[l][j], lateral[l][j], biases[l][j]]; row_mask says
# which coefficients exist (strictly lower lateral part). Gibbs (Eq. 13-14) and VB update
# these rows; the parameter layout above stays the public one.

def layer_rows(params, l):
    """``theta_l`` of shape ``(sizes[l], dim_l)``: ``[W | lateral | bias]`` of layer ``l``."""
    parts = []
    if l < params.n_hidden_layers:
        parts.append(params.weights[l])
    if params.lateral is not None:
        parts.append(params.lateral[l])
    parts.append(params.biases[l][:, None])
    return np.hstack(parts)


def set_layer_rows(params, l, theta):
    """Write ``theta_l`` back into ``params`` (in place)."""
    c = 0
    if l < params.n_hidden_layers:
        k = params.weights[l].shape[1]
        params.weights[l][...] = theta[:, :k]
        c = k
    if params.lateral is not None:
        k = params.lateral[l].shape[1]
        params.lateral[l][...] = np.tril(theta[:, c:c + k], -1)
        c += k
    params.biases[l][...] = theta[:, c]


def row_mask(params, l):
    """Which entries of ``layer_rows(params, l)`` are free parameters."""
    sizes = layer_sizes(params)
    parts = []
    if l < params.n_hidden_layers:
        parts.append(np.ones((sizes[l], sizes[l + 1]), bool))
    if params.lateral is not None:
        parts.append(np.tril(np.ones((sizes[l], sizes[l]), bool), -1))
    parts.append(np.ones((sizes[l], 1), bool))
    return np.hstack(parts)


def layer_regressors(params, layers, l):
    """``z = [h_{l+1}, h_l (autoregressive), 1]`` for every sample: ``(n, dim_l)``."""
    h = layers[l]
    parts = []
    if l < params.n_hidden_layers:
        parts.append(layers[l + 1])
    if params.lateral is not None:
        parts.append(h)
    parts.append(np.ones(h.shape[:-1] + (1,)))
    return np.concatenate([np.asarray(q, float) for q in parts], axis=-1)


def init_params(n_features, n_components, rng, *, autoregressive=False, scale=0.1):
    """Weights from ``N(0, scale^2)`` (the paper's initialisation, Sec. 5.1), zero biases."""
    sizes = (int(n_features),) + tuple(int(k) for k in n_components)
    weights = [scale * rng.standard_normal((sizes[l], sizes[l + 1]))
               for l in range(len(sizes) - 1)]
    biases = [np.zeros(k) for k in sizes]
    lateral = None
    if autoregressive:
        lateral = [np.tril(scale * rng.standard_normal((k, k)), -1) for k in sizes]
    return SBNParams(weights, biases, lateral)


def mean_params(samples):
    """Entry-wise mean of parameter samples (the posterior mean the estimator reports)."""
    mean = samples[0].copy()
    for part in ("weights", "biases") + (("lateral",) if mean.lateral else ()):
        for i in range(len(getattr(mean, part))):
            getattr(mean, part)[i][...] = np.mean([getattr(s, part)[i] for s in samples],
                                                  axis=0)
    return mean


def assemble_stages(n_features, sizes, parts, prior_states, prior_params, *,
                    autoregressive=False):
    """Stack single-layer SBNs of greedy pre-training into one deep SBN (Sec. 3.3).

    Parameters
    ----------
    n_features : int
    sizes : tuple of int
        Hidden sizes of the deep net, bottom first.
    parts : list of tuple
        ``(params, prior_states, hidden)`` of each stage (an engine's ``export()``):
        stage ``s`` models layer ``s`` given layer ``s + 1``; its hidden units are the
        training set's ``h^(s+1)`` (``None`` when the engine keeps none).
    prior_states : callable
        ``prior_states(params, prior_params)``: fresh prior states of a deep net.
    prior_params : dict

    Returns
    -------
    params : SBNParams
        Layer ``s``'s rows from stage ``s``; the top layer's prior rows (``[lateral |
        bias]``) from the top stage's hidden prior.
    states : list of dict
    hidden : list of ndarray or None
        The stages' hidden units, or ``None`` if a stage kept none.
    """
    # the values are all overwritten below; the generator only fills the template
    params = init_params(n_features, sizes, np.random.default_rng(0),
                         autoregressive=autoregressive)
    states = prior_states(params, prior_params)
    hidden = []
    for s, (p, st, h) in enumerate(parts):
        set_layer_rows(params, s, layer_rows(p, 0))
        states[s] = st[0]
        hidden.append(None if h is None else h[0])
    set_layer_rows(params, len(sizes), layer_rows(parts[-1][0], 1))
    states[len(sizes)] = parts[-1][1][1]
    return params, states, (None if any(h is None for h in hidden) else hidden)


def active_units(params, threshold):
    """Units per hidden layer with some outgoing weight above ``threshold`` in magnitude."""
    return [int(np.sum(np.abs(W).max(axis=0) > threshold)) for W in params.weights]


def activation(params, layers, l):
    """Sigmoid argument of every unit of layer ``l`` given its parents (Eq. 6 and 8)."""
    a = params.biases[l]
    if l < params.n_hidden_layers:
        a = a + layers[l + 1] @ params.weights[l].T
    if params.lateral is not None:
        a = a + layers[l] @ params.lateral[l].T
    shape = np.broadcast_shapes(np.shape(a), np.shape(layers[l]))
    if np.shape(a) != shape:
        a = np.broadcast_to(a, shape)
    return np.array(a, dtype=float, order="C")


def log_conditional(params, layers, l):
    """``log p(h_l | h_{l+1})`` (or the top prior), summed over the units of layer ``l``."""
    a = activation(params, layers, l)
    a, x = np.broadcast_arrays(a, layers[l])
    return np.sum(x * a - softplus(a), axis=-1)


def log_prior_hidden(params, layers):
    """``log p(h_1, ..., h_L)``: every hidden layer's term of Eq. 7."""
    out = 0.0
    for l in range(1, params.n_hidden_layers + 1):
        out = out + log_conditional(params, layers, l)
    return out


def log_joint(params, layers, beta=1.0):
    """``log p(h) + beta * log p(v | h_1)`` (Eq. 7); ``beta = 1`` is the joint."""
    return log_prior_hidden(params, layers) + beta * log_conditional(params, layers, 0)


def _children_delta(params, layers, l, k, a_below, a_self, beta):
    """Change in the log density of the children of unit ``(l, k)`` when it goes 0 -> 1.

    ``a_below`` / ``a_self``: current activations of layer ``l - 1`` and of layer ``l``.
    Returns the delta and the two activations with unit k's contribution removed.
    """
    hk = layers[l][..., k:k + 1]
    w = params.weights[l - 1][:, k]
    a0 = a_below - hk * w
    a1 = a0 + w
    x = layers[l - 1]
    d = np.sum(x * w - softplus(a1) + softplus(a0), axis=-1)
    if l - 1 == 0:
        d = beta * d
    s0 = None
    if params.lateral is not None:
        s = params.lateral[l][k + 1:, k]
        if s.size:
            s0 = a_self[..., k + 1:] - hk * s
            s1 = s0 + s
            d = d + np.sum(layers[l][..., k + 1:] * s - softplus(s1) + softplus(s0), axis=-1)
    return d, a0, s0


def conditional_logit(params, layers, l, k, beta=1.0):
    """Exact logit of ``p(h_lk = 1 | everything else)`` (``l >= 1``).

    With ``beta < 1`` the visible-layer likelihood is tempered (the AIS path). This is
    the un-augmented conditional: the Polya-Gamma Gibbs sampler must leave it invariant.
    """
    a_self = activation(params, layers, l)
    a_below = activation(params, layers, l - 1)
    d, _, _ = _children_delta(params, layers, l, k, a_below, a_self, beta)
    return a_self[..., k] + d


def gibbs_sweep(params, layers, rng, beta=1.0):
    """One exact sequential Gibbs sweep over every hidden unit, bottom layer first.

    Vectorised over the leading axes of ``layers``; ``layers[0]`` (the data) is kept.
    One uniform per unit and leading index, drawn unit by unit with
    ``rng.random(leading_shape)``. Returns a new list (the data array is shared).
    """
    layers = [layers[0]] + [np.array(h, dtype=float) for h in layers[1:]]
    for l in range(1, params.n_hidden_layers + 1):
        lead = np.broadcast_shapes(layers[l].shape[:-1], np.shape(layers[0])[:-1])
        if layers[l].shape[:-1] != lead:
            layers[l] = np.broadcast_to(layers[l], lead + layers[l].shape[-1:]).copy()
        a_below = activation(params, layers, l - 1)
        a_self = activation(params, layers, l)
        for k in range(layers[l].shape[-1]):
            d, a0, s0 = _children_delta(params, layers, l, k, a_below, a_self, beta)
            new = bernoulli(expit(a_self[..., k] + d), rng, size=lead, dtype=float)
            layers[l][..., k] = new
            a_below = a0 + new[..., None] * params.weights[l - 1][:, k]
            if s0 is not None:
                a_self[..., k + 1:] = s0 + new[..., None] * params.lateral[l][k + 1:, k]
    return layers


def sample_visible_missing(params, layers, missing, rng):
    """Redraw the visible entries flagged in ``missing`` from their exact conditionals.

    Without autoregression the visible units are independent given ``h_1``
    (one ``rng.random(v.shape)``); with it, column by column (``rng.random(n)`` per
    column holding a missing entry), each conditional including the later visible
    units it feeds through ``S``.
    """
    v = np.array(layers[0], dtype=float)
    a = activation(params, [v] + list(layers[1:]), 0)
    if params.lateral is None:
        draw = bernoulli(expit(a), rng, size=v.shape, dtype=float)
        return np.where(missing, draw, v)
    S = params.lateral[0]
    for j in np.flatnonzero(missing.any(axis=0)):
        s = S[j + 1:, j]
        a_rest = a[:, j + 1:] - v[:, j:j + 1] * s
        d = np.sum(v[:, j + 1:] * s - softplus(a_rest + s) + softplus(a_rest), axis=1)
        new = bernoulli(expit(a[:, j] + d), rng, size=len(v), dtype=float)
        new = np.where(missing[:, j], new, v[:, j])
        a[:, j + 1:] = a_rest + new[:, None] * s
        v[:, j] = new
    return v


def _sample_layer(a_fixed, lateral, rng, shape):
    """Draw one layer given the activation from above; sequential when autoregressive."""
    if lateral is None:
        return bernoulli(expit(a_fixed), rng, size=shape, dtype=float)
    h = np.zeros(shape)
    a_fixed = np.broadcast_to(a_fixed, shape)
    for j in range(shape[-1]):
        a = a_fixed[..., j] + h[..., :j] @ lateral[j, :j]
        h[..., j] = bernoulli(expit(a), rng, size=shape[:-1], dtype=bool)
    return h


def sample_hidden_prior(params, shape, rng):
    """Ancestral draw of the hidden layers only: list ``[h_1, ..., h_L]`` of ``shape + (K_l,)``."""
    shape = tuple(np.atleast_1d(shape))
    sizes = layer_sizes(params)
    L = params.n_hidden_layers
    hidden = [None] * (L + 1)
    above = None
    for l in range(L, 0, -1):
        a = params.biases[l] if l == L else params.biases[l] + above @ params.weights[l].T
        lat = None if params.lateral is None else params.lateral[l]
        hidden[l] = _sample_layer(a, lat, rng, shape + (sizes[l],))
        above = hidden[l]
    return hidden[1:]


def sample_ancestral(params, n_samples, rng):
    """Ancestral sampling (Sec. 2.3): returns ``[v, h_1, ..., h_L]`` with ``n_samples`` rows."""
    hidden = sample_hidden_prior(params, (n_samples,), rng)
    a = params.biases[0]
    if hidden:
        a = a + hidden[0] @ params.weights[0].T
    lat = None if params.lateral is None else params.lateral[0]
    v = _sample_layer(a, lat, rng, (n_samples, len(params.biases[0])))
    return [v] + hidden


def _all_hidden_configs(params):
    sizes = layer_sizes(params)[1:]
    total = sum(sizes)
    if total == 0:
        return []
    if total > MAX_ENUMERATED_UNITS:
        raise ValueError(f"{total} hidden units are too many to enumerate "
                         f"(limit {MAX_ENUMERATED_UNITS}); use AIS")
    configs = binary_states(total)
    bounds = np.cumsum((0,) + sizes)
    return [configs[:, a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def _log_joint_all_configs(params, X, hidden=None):
    """``log p(x_n, h_c)`` for every row n and every hidden configuration c: ``(n, C)``."""
    hidden = _all_hidden_configs(params) if hidden is None else hidden
    X = np.asarray(X, dtype=float)
    if not hidden:
        return log_conditional(params, [X], 0)[:, None]
    prior = log_prior_hidden(params, [None] + hidden)            # (C,)
    A = hidden[0] @ params.weights[0].T + params.biases[0]       # (C, D)
    if params.lateral is None:
        # sum_j x_j a_j - softplus(a_j) as one matrix product: no (n, C, D) array
        return X @ A.T - softplus(A).sum(axis=1) + prior
    A = A[None] + (X @ params.lateral[0].T)[:, None, :]           # (n, C, D)
    return np.sum(X[:, None, :] * A - softplus(A), axis=-1) + prior


def _row_chunks(params, n, budget=2_000_000):
    C = 2 ** sum(layer_sizes(params)[1:])
    per_row = C * (len(params.biases[0]) if params.lateral is not None else 1)
    step = max(1, budget // max(per_row, 1))
    return [slice(s, min(s + step, n)) for s in range(0, n, step)]


def log_marginal_exact(params, X):
    """Exact ``log p(x)`` per row by summing over every hidden configuration."""
    X = np.asarray(X, dtype=float)
    hidden = _all_hidden_configs(params)
    out = np.empty(len(X))
    for sl in _row_chunks(params, len(X)):
        out[sl] = logsumexp(_log_joint_all_configs(params, X[sl], hidden), axis=1)
    return out


def posterior_mean_exact(params, X, layer=1):
    """Exact ``E[h_layer | x]`` per row by enumeration."""
    X = np.asarray(X, dtype=float)
    hidden = _all_hidden_configs(params)
    out = np.empty((len(X), hidden[layer - 1].shape[1]))
    for sl in _row_chunks(params, len(X)):
        lj = _log_joint_all_configs(params, X[sl], hidden)
        post = np.exp(lj - logsumexp(lj, axis=1, keepdims=True))
        out[sl] = post @ hidden[layer - 1]
    return out


# --- AIS adapter: geometric path p(h) p(x | h)^beta from the prior, one path per point ---

def ais_log_density(state, beta, *, params, X):
    """``log p(h) + beta log p(x | h_1)`` for a state ``[h_1..h_L]`` of ``(n_runs, n_points, K_l)``."""
    return log_joint(params, [X] + list(state), beta)


def ais_transition(state, beta, rng, *, params, X, n_sweeps=1):
    """Exact Gibbs sweeps over the hidden units of the tempered posterior."""
    layers = [X] + list(state)
    for _ in range(n_sweeps):
        layers = gibbs_sweep(params, layers, rng, beta)
    return layers[1:]


def ais_sample_base(n_runs, rng, *, params, n_points):
    """Exact draws from the prior over hidden layers (the ``beta = 0`` end, ``log Z_0 = 0``)."""
    return sample_hidden_prior(params, (n_runs, n_points), rng)


def log_marginal_ais(params, X, *, n_betas=100, n_runs=10, random_state=None, n_jobs=None,
                     beta_kind="sigmoid", transition=None):
    """``log p(x)`` per row by AIS through :func:`skdgm._core.ais.annealed_importance_sampling`.

    The base is the prior ``p(h)`` (normalised, ``log Z_0 = 0``), the target
    ``p(h) p(x | h)``, whose normaliser is ``p(x)``; every row has its own path and
    ``n_runs`` chains. ``transition(state, beta, rng, *, params, X)`` defaults to
    :func:`ais_transition` (exact sweeps); the Pólya-Gamma augmented sweep of
    :func:`skdgm.sbn._gibbs.ais_transition_pg` is a faster valid alternative.
    Returns ``(log_px, std_err)``.
    """
    transition = ais_transition if transition is None else transition
    X = np.asarray(X, dtype=float)
    if params.n_hidden_layers == 0:
        lp = log_conditional(params, [X], 0)
        return lp, np.zeros_like(lp)
    from .._core.ais import beta_schedule
    res = annealed_importance_sampling(
        partial(ais_log_density, params=params, X=X),
        partial(transition, params=params, X=X),
        partial(ais_sample_base, params=params, n_points=len(X)),
        0.0, beta_schedule(n_betas, beta_kind), n_runs,
        n_groups=min(n_runs, 2), random_state=random_state, n_jobs=n_jobs,
    )
    return np.asarray(res.log_z), np.asarray(res.std_err)
