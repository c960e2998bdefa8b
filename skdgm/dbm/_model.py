"""Deep Boltzmann machine: energies, conditionals, mean-field, Gibbs sweeps, exact helpers.

Notation (Salakhutdinov 2010, Sec. 2, with the biases the paper omits for clarity):
the layers are ``x_0 = v, x_1 = h^1, ..., x_L = h^L``, the weights ``W_l`` of shape
``(n_l, n_{l+1})`` couple layer ``l`` to layer ``l + 1`` and ``b_l`` is the bias of
layer ``l``. The energy (Eq. 1 plus biases) is

    E(x) = - sum_l x_l^T W_l x_{l+1} - sum_l b_l^T x_l.

Layers of one parity are conditionally independent given the other parity, so a
Gibbs sweep samples the odd layers given the even ones and then the even layers
given the odd ones; and the even layers can be summed out analytically, which is
what the exact helpers and the AIS path use (the state is the odd layers only).

Everything here takes plain arrays (``coefs``: list of ``W_l``; ``intercepts``: list
of ``b_l``, visible first) and, where random, an explicit ``numpy.random.Generator``.
Tempering (``beta``) is per chain: an array of shape ``(n_chains,)`` or a scalar.
A path between the model and a fully factorised base model with biases ``c_l`` is
used by AIS: ``p_beta(x) ∝ exp(-beta E(x) + (1 - beta) sum_l c_l^T x_l)``.
"""

import time
from typing import NamedTuple

import numpy as np
from scipy.special import expit, log_expit, logsumexp

from .._core.exact import MAX_EXACT_UNITS, binary_states, iter_binary_states  # noqa: F401
from .._core.mcmc import bernoulli
from .._core.numerics import sigmoid, softplus, softplus_sum

__all__ = [
    "energy",
    "layer_input",
    "sample_layers",
    "gibbs_sweep",
    "gibbs_sweep_energy",
    "mean_field_init",
    "mean_field",
    "mean_field_update",
    "MeanFieldResult",
    "MEAN_FIELD_STARTS",
    "lower_bound_unnormalised",
    "log_marginal_odd",
    "exact_log_partition",
    "exact_log_prob",
    "odd_layers",
    "even_layers",
]


def odd_layers(n_layers):
    """Indices of the odd layers (``h^1, h^3, ...``) of a model with ``n_layers`` layers."""
    return list(range(1, n_layers, 2))


def even_layers(n_layers):
    """Indices of the even layers (``v, h^2, ...``)."""
    return list(range(0, n_layers, 2))


def _col(beta):
    beta = np.asarray(beta, dtype=float)
    return beta[:, None] if beta.ndim == 1 else beta


def energy(layers, coefs, intercepts, *, first_product=None):
    """Energy ``E(x)`` of Eq. 1 (with biases), one value per row.

    Parameters
    ----------
    layers : list of ndarray of shape (n_rows, n_l)
        States (or mean-field means) of every layer, visible first.
    coefs, intercepts : list of ndarray
        ``W_l`` and ``b_l``.
    first_product : ndarray of shape (n_rows, n_1), optional
        ``layers[0] @ coefs[0]`` when the caller already has it (mean-field
        keeps the bottom-up input of the data).

    Returns
    -------
    E : ndarray of shape (n_rows,), float64
    """
    e = np.zeros(layers[0].shape[0])
    for l, W in enumerate(coefs):
        prod = first_product if (l == 0 and first_product is not None) else layers[l] @ W
        e -= np.einsum("ij,ij->i", prod, layers[l + 1], dtype=np.float64)
    for l, b in enumerate(intercepts):
        e -= layers[l] @ b
    return e


def layer_input(l, layers, coefs, intercepts, beta=1.0, base_intercepts=None, *,
                below=None):
    """Total input to layer ``l`` from its neighbours at inverse temperature ``beta``.

    ``beta * (b_l + x_{l-1} W_{l-1} + x_{l+1} W_l^T) + (1 - beta) c_l``, where ``c_l``
    (``base_intercepts``) defaults to ``b_l`` (then the path tempers only the weights
    and the biases of the base model equal the model's). ``below`` is
    ``x_{l-1} W_{l-1}`` when the caller has it already (mean-field caches the data's
    ``V W_0``). The result keeps the dtype of the states and weights (float32 models
    stay float32).
    """
    a = None
    if l > 0:
        a = (layers[l - 1] @ coefs[l - 1]) if below is None else below + 0
    if l + 1 < len(layers):
        top = layers[l + 1] @ coefs[l].T
        a = top if a is None else np.add(a, top, out=a)
    if a is None:
        n_rows = next(x for x in layers if x is not None).shape[0]
        a = np.zeros((n_rows, intercepts[l].shape[0]), dtype=intercepts[l].dtype)
    a += intercepts[l]
    if np.ndim(beta) == 0 and beta == 1.0:
        return a
    beta = _col(beta)
    c = intercepts[l] if base_intercepts is None else base_intercepts[l]
    return beta * a + (1.0 - beta) * c


def sample_layers(which, layers, coefs, intercepts, rng, beta=1.0, base_intercepts=None):
    """Resample the layers listed in ``which`` (one parity) given the others, in place."""
    for l in which:
        a = layer_input(l, layers, coefs, intercepts, beta, base_intercepts)
        layers[l] = bernoulli(sigmoid(a, out=a), rng)
    return layers


def gibbs_sweep(layers, coefs, intercepts, rng, beta=1.0, *, reverse=False,
                clamp_visible=False, base_intercepts=None):
    """One blocked Gibbs sweep: odd layers given even, then even layers given odd.

    ``reverse=True`` runs the two blocks in the opposite order (the reversal of the
    forward sweep, which tempered transitions need). ``clamp_visible`` leaves
    ``v`` untouched. ``layers`` is updated in place and returned.
    """
    n = len(layers)
    odd = odd_layers(n)
    even = [l for l in even_layers(n) if not (clamp_visible and l == 0)]
    blocks = (even, odd) if reverse else (odd, even)
    for block in blocks:
        sample_layers(block, layers, coefs, intercepts, rng, beta, base_intercepts)
    return layers


def gibbs_sweep_energy(layers, coefs, intercepts, rng, beta=1.0, *, reverse=False):
    """:func:`gibbs_sweep` that also returns the energy ``E(x)`` of the new state.

    Every weight couples an odd and an even layer, so with ``a_l`` the untempered
    input of the block sampled last, ``E = -sum_{l in last} x_l^T a_l
    - sum_{l in first} b_l^T x_l``: the energy costs no extra matrix product.
    Here ``beta`` tempers the whole energy, biases included,
    ``p_beta(x) ∝ exp(-beta E(x))`` (Eq. 11), unlike the AIS path of
    :func:`gibbs_sweep`, whose base model keeps its own biases.
    """
    n = len(layers)
    odd, even = odd_layers(n), even_layers(n)
    first, last = (even, odd) if reverse else (odd, even)
    beta_c = _col(beta) if np.ndim(beta) else float(beta)
    for l in first:
        a = beta_c * layer_input(l, layers, coefs, intercepts)
        layers[l] = bernoulli(sigmoid(a, out=a), rng)
    e = np.zeros(layers[0].shape[0])
    for l in last:
        a = layer_input(l, layers, coefs, intercepts)
        layers[l] = bernoulli(sigmoid(beta_c * a), rng)
        e -= np.einsum("ij,ij->i", layers[l], a)
    for l in first:
        e -= layers[l] @ intercepts[l]
    return layers, e


MEAN_FIELD_STARTS = ("doubled", "zeros")


def _even_hidden_layers(n_layers):
    return [l for l in even_layers(n_layers) if l > 0]


def mean_field_init(V, coefs, intercepts, start="doubled", *, VW=None):
    """Starting means of the mean-field iteration.

    A sweep of :func:`mean_field_update` recomputes the odd layers first, from
    ``v`` and the even hidden layers, so what a start really fixes is the even
    hidden layers (``h^2, h^4, ...``); the odd ones are returned too so that the
    start is a complete ``Q``.

    Parameters
    ----------
    V : ndarray of shape (n_rows, n_0)
    coefs, intercepts : list of ndarray
    start : {"doubled", "zeros"}, default="doubled"
        ``"doubled"``: a bottom-up pass with doubled weights (Salakhutdinov &
        Hinton 2009, Sec. 3.1): every hidden layer but the top one receives input
        from above as well as from below, so the single bottom-up pass doubles the
        input from below to stand in for the missing top-down half,
        ``mu_l = sigma(s_l mu_{l-1} W_{l-1} + b_l)`` with ``s_l = 2`` below the top
        layer and ``s_L = 1``. ``"zeros"``: every odd hidden layer off
        (``mu_l = 0``) and the even hidden layers at their mean-field value given
        that, ``sigma(b_l)``. The two can lead to different fixed points of the
        bound (Eq. 3): when the units of ``h^2`` are many and weakly coupled, a mode
        with ``h^1`` off and ``h^2`` free carries far more entropy than the one the
        bottom-up pass walks into (see :func:`mean_field`).

    VW : ndarray of shape (n_rows, n_1), optional
        ``V @ coefs[0]``, when the caller has it.

    Returns
    -------
    mus : list of ndarray
        ``[V, mu_1, ..., mu_L]``.
    """
    mus = [V]
    L = len(coefs)
    if start == "doubled":
        for l in range(1, L + 1):
            scale = 2.0 if l < L else 1.0
            prod = VW if (l == 1 and VW is not None) else mus[l - 1] @ coefs[l - 1]
            a = scale * prod
            a += intercepts[l]
            mus.append(sigmoid(a, out=a))
        return mus
    if start == "zeros":
        n = V.shape[0]
        dtype = np.result_type(V, coefs[0])
        mus += [np.zeros((n, b.shape[0]), dtype=dtype) for b in intercepts[1:]]
        # the odd layers are off, so an even layer's input is its bias alone
        for l in _even_hidden_layers(L + 1):
            mus[l][:] = expit(intercepts[l]).astype(dtype)
        return mus
    raise ValueError(f"start must be one of {MEAN_FIELD_STARTS}, got {start!r}")


def _mean_field_sweep(mus, coefs, intercepts, VW=None, layers=None, track=True):
    # One parity-ordered sweep (or the given layers only, in order); returns the new
    # means and each row's largest change (None with track=False). VW = V W_0, the
    # input of h^1 from the clamped data: the same in every sweep (mus[0] is then
    # never read).
    mus = list(mus)
    n = len(mus)
    delta = np.zeros(mus[1].shape[0]) if track else None
    for l in odd_layers(n) + _even_hidden_layers(n) if layers is None else layers:
        new = layer_input(l, mus, coefs, intercepts, below=VW if l == 1 else None)
        sigmoid(new, out=new)
        if track and new.size:
            change = np.subtract(new, mus[l])
            np.maximum(delta, np.max(np.abs(change, out=change), axis=1), out=delta)
        mus[l] = new
    return mus, delta


def mean_field_update(mus, coefs, intercepts):
    """One sweep of the mean-field fixed-point equations, odd hidden layers first.

    ``mu_l <- sigma(b_l + mu_{l-1} W_{l-1} + mu_{l+1} W_l^T)``: the stationarity
    conditions of the lower bound (Eq. 3) in ``mu_l``. Updating one parity at a time
    is coordinate ascent, so the bound never decreases. Returns a new list and the
    largest absolute change.
    """
    mus, delta = _mean_field_sweep(mus, coefs, intercepts)
    return mus, float(delta.max()) if delta.size else 0.0


class MeanFieldResult(NamedTuple):
    """What :func:`mean_field` found for each row."""

    mus: list
    """``[V, mu_1, ..., mu_L]``, each row from the start with the highest bound."""
    bound: np.ndarray
    """The bound plus ``log Z`` (:func:`lower_bound_unnormalised`) of each row
    (``None`` for one start asked ``with_bound=False``)."""
    converged: np.ndarray
    """Whether the chosen start's last sweep moved no mean of the row by more than
    ``tol`` (``False`` for every row when no sweep was made)."""
    start: np.ndarray
    """Index into ``starts`` of the chosen start of each row."""
    n_sweeps: int
    """Sweeps made by the slowest row."""


def mean_field(V, coefs, intercepts, n_iter=5, tol=0.0, starts=MEAN_FIELD_STARTS,
               return_info=False, with_bound=True):
    """Mean-field posterior ``Q(h | v)`` of every hidden layer (Sec. 2.1).

    The bound of Eq. 3 is not concave in the means: it can have several fixed
    points, and which one the iteration reaches depends on the start. So every
    start in ``starts`` (:func:`mean_field_init`) is iterated, all of them in one
    stacked array so each sweep is one matrix product per layer, for at most
    ``n_iter`` sweeps of :func:`mean_field_update`; a row stops as soon as none
    of its means moves by more than ``tol``; then each row keeps the start with the
    highest bound (the first listed on a tie). Each extra start costs one more
    mean-field run.

    No damping is applied: the sweep updates one parity at a time, and each
    parity's update is the exact maximiser of the bound given the other parity
    (coordinate ascent), so the bound never decreases and the means cannot
    oscillate. A poor fixed point is a matter of the start, not of step size.

    Why two starts: on binarised digits with ``(500, 1000)`` layers (the old default)
    after pre-training, the doubled-weight start converges to a fixed point
    with ``h^1`` near 1/2 and ``h^2`` off, about 290 nats per row below the
    fixed point that the ``"zeros"`` start reaches (``h^1`` off, ``h^2`` free);
    on small models the starts agree.

    Parameters
    ----------
    V : ndarray of shape (n_rows, n_0)
    coefs, intercepts : list of ndarray
    n_iter : int, default=5
        Maximum sweeps.
    tol : float, default=0.0
        A row stops when none of its means moves by more than this in a sweep.
    starts : sequence of {"doubled", "zeros"}, default=("doubled", "zeros")
    return_info : bool, default=False
        Return a :class:`MeanFieldResult` instead of the means alone.
    with_bound : bool, default=True
        With a single start nothing needs the bound to pick a start, and
        ``with_bound=False`` skips it (the training update, whose cost it would
        raise by one product of the largest size and an entropy pass); the
        result's ``bound`` is then ``None``. Several starts always compute it.

    Returns
    -------
    mus : list of ndarray
        ``[V, mu_1, ..., mu_L]``; or a :class:`MeanFieldResult`.
    """
    starts = tuple(starts)
    if not starts:
        raise ValueError("mean_field needs at least one start")
    n_layers = len(intercepts)
    if not _even_hidden_layers(n_layers):
        # No even hidden layer (an RBM): the first sweep is exact from any start.
        starts = starts[:1]
    n, S = V.shape[0], len(starts)
    # The data's bottom-up input V W_0 is computed once per solve: every start and
    # every sweep reuses it (one product of the largest layer saved per sweep).
    VW = V @ coefs[0]
    inits = [mean_field_init(V, coefs, intercepts, s, VW=VW) for s in starts]
    mus = (list(inits[0]) if S == 1 else
           [np.concatenate([m[l] for m in inits]) for l in range(n_layers)])
    VW_all = np.concatenate([VW] * S) if S > 1 else VW
    delta = np.full(n * S, np.inf)
    active = np.arange(n * S)
    sweeps = 0
    for _ in range(int(n_iter)):
        if active.size == 0:
            break
        # Only rows still moving are swept: a row's result then depends on that row
        # alone, not on which other rows share its batch, and converged rows cost nothing.
        every = active.size == n * S
        sub, d = _mean_field_sweep(mus if every else [m[active] for m in mus], coefs,
                                   intercepts, VW_all if every else VW_all[active])
        if every:
            mus[1:] = sub[1:]
        else:
            for m, x in zip(mus[1:], sub[1:]):
                m[active] = x
        delta[active] = d
        active = active[d > tol]
        sweeps += 1
    if S == 1:
        # one start: nothing to choose, so no row gather and the bound only on request
        out = [V] + mus[1:]
        if not return_info:
            return out
        bound = (lower_bound_unnormalised(out, coefs, intercepts, first_product=VW)
                 if with_bound else None)
        return MeanFieldResult(out, bound, delta <= tol, np.zeros(n, dtype=np.intp), sweeps)
    bound = lower_bound_unnormalised(mus, coefs, intercepts,
                                     first_product=VW_all).reshape(S, n)
    best = np.argmax(bound, axis=0)
    rows = best * n + np.arange(n)
    out = [V] + [m[rows] for m in mus[1:]]
    if not return_info:
        return out
    return MeanFieldResult(out, bound[best, np.arange(n)], delta[rows] <= tol, best,
                           sweeps)


def _entropy(mu):
    # Bernoulli entropy per row, 0 log 0 = 0, as -(mu (log mu - log(1 - mu)) + log(1 - mu))
    # in place: two logs and no other temporary, 2.3x faster than the textbook form
    # on (10,000, 392) float64. Only mu in {0, 1} make a NaN (0 * inf), where the term is 0.
    with np.errstate(divide="ignore", invalid="ignore"):
        log_off = np.log1p(-mu)
        h = np.log(mu)
        h -= log_off
        h *= mu
        h += log_off
    np.nan_to_num(h, copy=False, nan=0.0)
    return -h.sum(axis=1, dtype=np.float64)


def lower_bound_unnormalised(mus, coefs, intercepts, *, first_product=None):
    """``sum_h Q log P*(v, h) + H(Q)`` of Eq. 3, i.e. the bound plus ``log Z``.

    Under a fully factorised ``Q`` the expected energy is the energy at the means
    (layers interact bilinearly and are independent under ``Q``).
    ``first_product`` is ``mus[0] @ coefs[0]`` when the caller has it.
    """
    h = sum(_entropy(mu) for mu in mus[1:])
    return -energy(mus, coefs, intercepts, first_product=first_product) + h


def log_marginal_odd(odd_states, coefs, intercepts, beta=1.0, base_intercepts=None,
                     visible=None, *, first_product=None, visible_bias=None):
    """``log sum_{even} f_beta(x)``: the odd layers' unnormalised log marginal.

    Parameters
    ----------
    odd_states : list of ndarray of shape (n_rows, n_l)
        States of the odd layers ``h^1, h^3, ...`` in order.
    beta : float or ndarray of shape (n_rows,)
        Inverse temperature on the path to the base model (see module docstring).
    visible : ndarray of shape (n_rows, n_0), optional
        Clamp ``v`` instead of summing it out (for ``log P*(v)``).
    first_product : ndarray of shape (n_rows, n_1), optional
        ``visible @ coefs[0]`` when the caller has it (``v`` is then clamped;
        ``visible`` may be left out when ``visible_bias`` is given).
    visible_bias : float or ndarray of shape (n_rows,), optional
        ``visible @ intercepts[0]`` when the caller has it; ``0.0`` leaves the term
        out (a caller comparing several ``Q`` of the same rows adds it once).

    Returns
    -------
    log_f : ndarray of shape (n_rows,)
        Summed in float64; the even layers' inputs keep the dtype of the states
        and weights (float32 means give a float32-rounded value).
    """
    n_layers = len(intercepts)
    dtype = np.result_type(odd_states[0], coefs[0])
    untempered = np.ndim(beta) == 0 and beta == 1.0 and base_intercepts is None
    layers = [None] * n_layers
    for l, x in zip(odd_layers(n_layers), odd_states):
        layers[l] = x
    n_rows = odd_states[0].shape[0]
    beta_c = _col(beta) if np.ndim(beta) else float(beta)
    base = intercepts if base_intercepts is None else base_intercepts
    out = np.zeros(n_rows)
    for l in odd_layers(n_layers):
        if untempered:
            out += layers[l] @ intercepts[l]     # no (n_rows, n_l) temporary
        else:
            out += np.sum(layers[l] * (beta_c * intercepts[l] + (1.0 - beta_c) * base[l]),
                          axis=1)
    for l in even_layers(n_layers):
        if l == 0 and (visible is not None or first_product is not None):
            # v is given: its bias term and its coupling to h^1 (beta = 1 here).
            out += visible @ intercepts[0] if visible_bias is None else visible_bias
            vw = visible @ coefs[0] if first_product is None else first_product
            out += np.einsum("ij,ij->i", vw, layers[1])
            continue
        parts = ([layers[l - 1] @ coefs[l - 1]] if l > 0 else []) + (
            [layers[l + 1] @ coefs[l].T] if l + 1 < n_layers else [])
        a = np.zeros((n_rows, intercepts[l].shape[0]), dtype=dtype) if not parts else parts[0]
        for part in parts[1:]:
            a += part
        if untempered:
            a += intercepts[l]       # the same values as below at beta = 1, two passes fewer
        else:
            a = beta_c * (a + intercepts[l]) + (1.0 - beta_c) * base[l]
        out += softplus_sum(a)
    return out


def _odd_sizes(intercepts):
    return [intercepts[l].shape[0] for l in odd_layers(len(intercepts))]


def _enumerate(sizes, chunk=1 << 14):
    """All binary configurations of the odd layers, in chunks of rows, split per layer."""
    for flat in iter_binary_states(int(sum(sizes)), chunk, lsb_first=True):
        yield np.split(flat, np.cumsum(sizes)[:-1], axis=1)


#: Tests and benchmarks call it by this name.
all_states = binary_states

MAX_ENUMERATED_UNITS = 22


def _check_enumerable(intercepts):
    n = sum(_odd_sizes(intercepts))
    if n > MAX_ENUMERATED_UNITS:
        raise ValueError(
            f"exact enumeration needs at most {MAX_ENUMERATED_UNITS} units in the odd "
            f"layers (h1, h3, ...); this model has {n}"
        )


def exact_log_partition(coefs, intercepts):
    """``log Z`` by enumerating the odd layers and summing the even ones out."""
    _check_enumerable(intercepts)
    parts = [logsumexp(log_marginal_odd(cfg, coefs, intercepts))
             for cfg in _enumerate(_odd_sizes(intercepts))]
    return float(logsumexp(parts))


def exact_log_prob(V, coefs, intercepts, log_z=None):
    """Exact ``log p(v)`` per row of ``V`` (enumerate odd hidden layers, sum out even)."""
    _check_enumerable(intercepts)
    if log_z is None:
        log_z = exact_log_partition(coefs, intercepts)
    V = np.asarray(V, dtype=float)
    sizes = _odd_sizes(intercepts)
    out = np.empty(V.shape[0])
    for i, v in enumerate(V):
        parts = []
        for cfg in _enumerate(sizes):
            vis = np.broadcast_to(v, (cfg[0].shape[0], v.shape[0]))
            parts.append(logsumexp(log_marginal_odd(cfg, coefs, intercepts, visible=vis)))
        out[i] = logsumexp(parts)
    return out - log_z


# --------------------------------------------------------------------------------------
# AIS through the shared engine: state = odd layers, even layers summed out.
# --------------------------------------------------------------------------------------
def _split_odd(state, intercepts):
    sizes = _odd_sizes(intercepts)
    return np.split(state, np.cumsum(sizes)[:-1], axis=1)


def _base(intercepts, base_intercepts):
    return intercepts if base_intercepts is None else base_intercepts


def ais_log_density(state, beta, *, coefs, intercepts, base_intercepts=None):
    """``log f_beta`` of the odd layers (:func:`log_marginal_odd`) for the AIS engine."""
    return log_marginal_odd(_split_odd(state, intercepts), coefs, intercepts, beta,
                            base_intercepts)


def ais_transition(state, beta, rng, *, coefs, intercepts, base_intercepts=None):
    """Even layers given odd, then odd given even, at ``beta`` on the AIS path."""
    n_layers = len(intercepts)
    layers = [None] * n_layers
    for l, x in zip(odd_layers(n_layers), _split_odd(state, intercepts)):
        layers[l] = x
    sample_layers(even_layers(n_layers), layers, coefs, intercepts, rng, beta,
                  base_intercepts)
    sample_layers(odd_layers(n_layers), layers, coefs, intercepts, rng, beta,
                  base_intercepts)
    return np.hstack([layers[l] for l in odd_layers(n_layers)])


def ais_sample_base(n_runs, rng, *, intercepts, base_intercepts=None):
    """Exact draws of the odd layers from the factorised base model."""
    c = _base(intercepts, base_intercepts)
    p = np.concatenate([expit(c[l]) for l in odd_layers(len(intercepts))])
    return bernoulli(np.broadcast_to(p, (n_runs, p.shape[0])).copy(), rng)


def ais_log_partition(coefs, intercepts, *, n_betas=1000, n_runs=100,
                      base_intercepts=None, n_groups=None, random_state=None, n_jobs=None):
    """``log Z`` by annealed importance sampling (Neal 2001; Salakhutdinov 2008).

    The path runs from the factorised base model with biases ``c`` (default the
    model's own biases; a data base rate for ``v`` usually cuts the variance) to
    the DBM, ``f_beta ∝ exp(-beta E + (1 - beta) sum_l c_l^T x_l)``. The AIS state
    is the odd layers; the even layers are summed out analytically in ``f_beta``
    and resampled inside each transition. ``log Z_0 = sum softplus(c)``.

    Returns
    -------
    result : skdgm._core.ais.AISResult
    """
    from functools import partial

    from .._core.ais import annealed_importance_sampling, beta_schedule

    kw = dict(coefs=[np.asarray(W, float) for W in coefs],
              intercepts=[np.asarray(b, float) for b in intercepts],
              base_intercepts=None if base_intercepts is None
              else [np.asarray(b, float) for b in base_intercepts])
    c = _base(kw["intercepts"], kw["base_intercepts"])
    log_z0 = float(sum(softplus(b).sum() for b in c))
    betas = beta_schedule(n_betas, "sigmoid") if np.isscalar(n_betas) else n_betas
    return annealed_importance_sampling(
        partial(ais_log_density, **kw), partial(ais_transition, **kw),
        partial(ais_sample_base, intercepts=kw["intercepts"],
                base_intercepts=kw["base_intercepts"]),
        log_z0, betas, n_runs, n_groups=n_groups, random_state=random_state, n_jobs=n_jobs)


def n_odd_units(intercepts):
    """Units in the odd layers, the ones ``log Z`` enumerates or anneals over."""
    return sum(intercepts[l].shape[0] for l in odd_layers(len(intercepts)))


def log_partition_estimate(coefs, intercepts, base_intercepts, *, exact, n_betas, n_runs,
                           random_state=None, n_jobs=None, verbose_name=None, n_groups=None):
    """``(log Z, standard error)`` of a DBM, by enumeration or AIS, in float64.

    ``exact=True`` enumerates the odd layers (:func:`exact_log_partition`, standard
    error 0); otherwise :func:`ais_log_partition` from the factorised base model
    with biases ``base_intercepts``. Everything is computed in float64 whatever the
    model's dtype: the sums over states and the AIS weights need the precision.
    With ``verbose_name`` the AIS run is announced and its result printed;
    ``n_groups`` is :func:`ais_log_partition`'s.
    """
    coefs = [W.astype(np.float64) for W in coefs]
    intercepts = [b.astype(np.float64) for b in intercepts]
    if exact:
        return float(exact_log_partition(coefs, intercepts)), 0.0
    base = [np.asarray(b, dtype=np.float64) for b in base_intercepts]
    if verbose_name:
        print(f"[{verbose_name}] AIS estimate of log Z: {n_runs} runs x "
              f"{n_betas} inverse temperatures ...", flush=True)
    t0 = time.perf_counter()
    res = ais_log_partition(coefs, intercepts, n_betas=n_betas, n_runs=n_runs,
                            base_intercepts=base, random_state=random_state, n_jobs=n_jobs,
                            n_groups=n_groups)
    if verbose_name:
        print(f"[{verbose_name}] AIS log Z = {float(res.log_z):.4f} "
              f"+- {float(res.std_err):.4f} (standard error), time = "
              f"{time.perf_counter() - t0:.2f}s", flush=True)
    return float(res.log_z), float(res.std_err)
