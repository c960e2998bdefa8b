"""``log p(x)`` of an SBN by the route ``BayesianSBN.score_samples`` picks.

Exact by enumerating the hidden layers when they hold at most ``MAX_EXACT_UNITS``
units (Eq. 7-8 summed over every ``h``); else, by default, the states short Gibbs
chains visit summed exactly plus importance sampling of the rest
(:func:`._stratified.log_marginal_stratified`); or annealed importance sampling from a
per-row approximation of the posterior fitted by a short Gibbs chain, with a few
temperatures (:func:`log_marginal_warm_ais`), or from the prior with Pólya-Gamma
augmented sweeps as transitions (:func:`._model.log_marginal_ais`, the autoregressive
models' default);
or, with a trained recognition network, importance sampling with it as proposal
(Du et al. 2018, appendix B.1, :func:`._dsghmc.log_marginal_is`). Each route also
returns the Monte-Carlo standard error of every row (0 when exact).
"""

from functools import partial

import numpy as np
import scipy.sparse as sp

from .._core.ais import annealed_importance_sampling, beta_schedule
from .._core.base import iter_minibatches
from .._core.exact import MAX_EXACT_UNITS
from .._core.mcmc import bernoulli
from .._core.numerics import softplus
from .._core.random import as_generator, seed_for
from . import _gibbs, _model
from ._dsghmc import gibbs_sweep_fast, log_marginal_is
from ._stratified import STRATIFIED, STRATIFIED_MAX_UNITS, log_marginal_stratified, stratified_chains

__all__ = ["WARM_AIS", "WARM_AIS_UNIT_SWEEPS", "call_seed", "check_method", "fit_proposal",
           "log_marginal", "log_marginal_warm_ais",
           "map_chunks", "warm_ais_runs"]

#: Settings of ``method="warm_ais"`` (measured in ``benchmarks/bench_scoring_cost.py``):
#: Gibbs chains per row fitting the proposal ``q``, their sweeps discarded, then
#: averaged into ``q``; AIS temperatures from ``q`` to the posterior. The runs per row
#: follow the model's size (:func:`warm_ais_runs`).
WARM_AIS = {"n_chains": 3, "n_burn": 2, "n_fit": 5, "n_betas": 20}
#: Hidden-unit sweeps per row that :func:`warm_ais_runs` spreads over the AIS runs
#: (divided by the temperatures): 4 runs at 784-200, about 18 CPU-ms per row
#: (``bench_scoring_budget.py``: there more temperatures beat more runs).
WARM_AIS_UNIT_SWEEPS = 16000
# purpose key of the proposal's stream (apart from the AIS runs' streams)
_PROPOSAL_PURPOSE = 0x9A0F
# floor of a proposal probability (and 1 - its ceiling): full support
_MIN_PROB = 1e-6


def log_marginal(params, X, seed, *, method=None, n_betas, n_runs, n_jobs=None,
                 recognition=None, n_is_samples=None):
    """``log p(x)`` of each row of ``X`` and its standard error.

    Parameters
    ----------
    params : SBNParams
    X : ndarray of shape (n, D)
    seed : numpy.random.SeedSequence
        The AIS chains' (or the proposals') randomness.
    method : {None, "stratified", "warm_ais", "ais", "is"}, default=None
        ``None``: exact when enumerable, else ``"stratified"``
        (:func:`._stratified.log_marginal_stratified` with
        :data:`._stratified.STRATIFIED`) up to
        :data:`._stratified.STRATIFIED_MAX_UNITS` hidden units and ``"warm_ais"``
        above, or ``"ais"`` for an autoregressive model (whose sweeps have no fast
        kernel). ``"warm_ais"``:
        :func:`log_marginal_warm_ais` with :data:`WARM_AIS`.
    n_betas : int or callable
        Temperatures of ``"ais"`` (from the prior); a callable ``n_betas()`` is
        called only when that AIS runs (``n_ais_betas="auto"`` is a costly search).
    n_runs : int
        Chains per row of ``"ais"``.
    n_jobs : int, optional
    recognition : RecognitionParams, optional
        The proposal of ``method="is"``.
    n_is_samples : int, optional
        Proposals per row for ``method="is"``.

    Returns
    -------
    log_px, std_err : ndarray of shape (n,)
    """
    if method == "is":
        return log_marginal_is(params, recognition, X, n_is_samples, as_generator(seed))
    if method is None and sum(map(len, params.biases[1:])) <= MAX_EXACT_UNITS:
        lp = _model.log_marginal_exact(params, X)
        return lp, np.zeros_like(lp)
    if method is None and params.lateral is None:
        units = sum(map(len, params.biases[1:]))
        method = "stratified" if units <= STRATIFIED_MAX_UNITS else "warm_ais"
    if method == "stratified" and params.n_hidden_layers:
        return log_marginal_stratified(params, X, seed, n_chains=stratified_chains(params),
                                       **STRATIFIED)
    if method == "warm_ais" and params.n_hidden_layers:
        return log_marginal_warm_ais(params, X, seed, n_runs=warm_ais_runs(params),
                                     n_jobs=n_jobs, **WARM_AIS)
    return _model.log_marginal_ais(params, X, n_betas=n_betas() if callable(n_betas) else n_betas,
                                   n_runs=n_runs, random_state=seed, n_jobs=n_jobs,
                                   transition=_gibbs.ais_transition_pg)


def check_method(method, params, recognition):
    """Raise a ``ValueError`` naming the problem if ``method`` cannot score ``params``."""
    if method not in (None, "stratified", "warm_ais", "ais", "is"):
        raise ValueError("method must be None, 'stratified', 'warm_ais', 'ais' or 'is', "
                         f"got {method!r}")
    if method in ("stratified", "warm_ais") and params.lateral is not None:
        raise ValueError(f"method={method!r} needs a model without lateral weights "
                         "(autoregressive=False); use method='ais'")
    if method == "is" and recognition is None:
        raise ValueError("method='is' needs the recognition network of "
                         "inference='dsghmc_nais'")


def call_seed(random_state, chunk=0):
    """The seed of one inference call (chunk ``chunk`` of its rows) from ``random_state``.

    The same int gives the same answer on every call; chunk 0 (a dense ``X``) uses
    ``random_state``'s own sequence, the further chunks of a CSR ``X`` children of
    it, so that each chunk's chains have their own streams.
    """
    ss = seed_for(random_state)
    if chunk == 0:
        return ss
    return np.random.SeedSequence(ss.entropy, spawn_key=tuple(ss.spawn_key) + (0xC5, chunk))


def map_chunks(X, func, batch_size):
    """``func(rows, chunk)`` over ``X``: whole when dense, else ``batch_size`` dense rows
    at a time (``chunk`` = 0, 1, ...), the outputs concatenated along the rows."""
    if not sp.issparse(X):
        return func(X, 0)
    return np.concatenate([func(X[sl].toarray(), k) for k, sl in
                           enumerate(iter_minibatches(X.shape[0], batch_size))])


# --- AIS started from a per-row approximation of the posterior ("warm_ais") ---------

def warm_ais_runs(params):
    """AIS runs per row of the default ``"warm_ais"``: 3 to 16, fewer for wider nets.

    A sweep's cost grows with the hidden units, so a fixed budget of unit-sweeps
    per row (:data:`WARM_AIS_UNIT_SWEEPS` over ``n_betas`` temperatures) buys 4
    runs at 200 units and 16 up to 50: small nets get the extra runs their
    multimodal posteriors need (duplicate units) at a similar cost per row.
    """
    units = sum(map(len, params.biases[1:]))
    per_run = WARM_AIS["n_betas"] * units
    return int(np.clip(round(WARM_AIS_UNIT_SWEEPS / per_run), 3, 16))

def fit_proposal(params, X, rng, *, n_burn, n_fit, n_chains=1, per_chain=False,
                 floor=_MIN_PROB, power=1.0):
    """Per-row factorised Bernoulli ``q(h | x)`` from a short Gibbs chain at ``beta = 1``.

    ``n_chains`` chains per row start from the prior, discard ``n_burn`` exact
    collapsed sweeps and average, over the next ``n_fit`` and over the chains (which
    may sit in different modes: duplicate units, say, the posterior switches one of
    at a time), each unit's probability of being
    on at its update (Rao-Blackwellised: a unit the posterior keeps off gets a
    probability near its true one, not the ``1 / n_fit`` a count could resolve).
    They are kept inside ``[1e-6, 1 - 1e-6]``, because an importance proposal must
    reach every state the posterior can take; a ``q`` that sits on the posterior's
    mode is what makes a few temperatures enough.

    With ``per_chain`` every chain's average is kept apart: one ``q_c`` per chain,
    the components of the mixture proposal of :func:`log_marginal_warm_ais`.
    ``floor`` (default 1e-6) bounds every probability inside ``[floor, 1 - floor]``,
    and ``power`` scales the logits (``q^power``, renormalised): both broaden ``q``
    towards a half, for a proposal that a few sweeps made too sure of itself.

    Returns
    -------
    logits : list of ndarray of shape (n, K_l), or (n_chains, n, K_l) with ``per_chain``
        ``logit q`` per hidden layer.
    """
    layers = [X] + _model.sample_hidden_prior(params, (n_chains, len(X)), rng)
    sums = [0.0 for _ in layers[1:]]
    for i in range(n_burn + n_fit):
        layers, probs = gibbs_sweep_fast(params, layers, rng, return_probs=True)
        if i >= n_burn:
            sums = [s + (p if per_chain else p.sum(axis=0)) for s, p in zip(sums, probs)]
    mu = [np.clip(s / (n_fit * (1 if per_chain else n_chains)), floor, 1.0 - floor)
          for s in sums]
    return [power * (np.log(m) - np.log1p(-m)) for m in mu]


def _bernoulli_log_prob(logits, state):
    """``log q(h)`` of factorised Bernoulli layers, summed over their units."""
    return sum(np.sum(h * a - softplus(a), axis=-1) for a, h in zip(logits, state))


def warm_log_density(state, beta, *, params, X, logits, cache=None):
    """``(1 - beta) log q(h) + beta log p(x, h)``: normalised at both ends (``Z_1 = p(x)``).

    AIS asks for the same state at two temperatures in a row (after a transition,
    then at the next temperature); ``cache`` (a dict) keeps the two logs of the last
    state it saw, held by reference so that only that very state matches (one entry,
    read once: run groups sharing it in threads never mix their states).
    """
    entry = None if cache is None else cache.get("last")
    if entry is not None and len(entry[0]) == len(state) and \
            all(a is b for a, b in zip(entry[0], state)):
        log_p, log_q = entry[1]
    else:
        log_p = _model.log_joint(params, [X] + list(state))
        log_q = _bernoulli_log_prob(logits, state)
        if cache is not None:
            cache["last"] = (list(state), (log_p, log_q))
    return beta * log_p + (1.0 - beta) * log_q


def warm_transition(state, beta, rng, *, params, X, logits):
    """One collapsed Gibbs sweep leaving ``q^(1 - beta) p(x, .)^beta`` invariant."""
    return gibbs_sweep_fast(params, [X] + list(state), rng, beta, base_logits=logits)[1:]


def warm_sample_base(n_runs, rng, *, logits):
    """Exact draws from ``q`` (the ``beta = 0`` end): ``(n_runs, n, K_l)`` per layer."""
    return [bernoulli(1.0 / (1.0 + np.exp(-a)), rng, size=(n_runs,) + a.shape, dtype=float)
            for a in logits]


# --- the mixture proposal: one component per proposal chain -----------------------
# AIS on the pairs (h, c), c a component of the mixture (1/C) sum_c q_c: the path
# f_beta(h, c) = q_c(h)^(1 - beta) p(x, h)^beta / C is normalised at both ends
# (sum_c q_c / C = 1; sum_c p(x, h) / C = p(x)), every q_c is factorised, so a
# sweep over h given c is the tempered collapsed sweep, and c given h is drawn
# exactly from q_c(h)^(1 - beta) (uniform at beta = 1).

def _component_logits(logits, c):
    """Every run's ``logit q_c`` per layer: ``(R, n, K_l)`` from ``(C, n, K_l)``."""
    rows = np.arange(c.shape[1])
    return [a[c, rows] for a in logits]


def _components_log_q(logits, state):
    """``log q_c(h)`` of every component: ``(C, R, n)``."""
    return sum(np.einsum("rnk,cnk->crn", h, a) - softplus(a).sum(axis=-1)[:, None]
               for a, h in zip(logits, state))


def mixture_log_density(state, beta, *, params, X, logits, cache=None):
    """``(1 - beta) log q_c(h) + beta log p(x, h)`` of the pairs ``state = [h..., c]``
    (the constant ``-log C`` left out: it cancels in every ratio)."""
    *h, c = state
    return warm_log_density(h, beta, params=params, X=X, logits=_component_logits(logits, c),
                            cache=cache)


def mixture_transition(state, beta, rng, *, params, X, logits):
    """A tempered collapsed sweep of ``h`` given ``c``, then ``c`` drawn given ``h``."""
    *h, c = state
    h = gibbs_sweep_fast(params, [X] + h, rng, beta,
                         base_logits=_component_logits(logits, c))[1:]
    log_q = (1.0 - beta) * _components_log_q(logits, h)              # (C, R, n)
    cum = np.cumsum(np.exp(log_q - log_q.max(axis=0)), axis=0)
    u = rng.random(c.shape) * cum[-1]
    return h + [np.minimum((cum < u).sum(axis=0), len(cum) - 1)]


def mixture_sample_base(n_runs, rng, *, logits):
    """Exact draws from the mixture, its components spread over the runs.

    A uniform offset per row, then the runs take consecutive components: each run's
    component is uniform (so the draws are from ``f_0``), and a row's runs start
    in different components, not by chance in the same one.
    """
    C, n = logits[0].shape[:2]
    c = (rng.integers(C, size=n)[None, :] + np.arange(n_runs)[:, None]) % C
    comp = _component_logits(logits, c)
    return [bernoulli(1.0 / (1.0 + np.exp(-a)), rng, dtype=float) for a in comp] + [c]


def log_marginal_warm_ais(params, X, seed, *, n_burn, n_fit, n_betas, n_runs, n_chains=1,
                          n_jobs=None, beta_kind="linear", proposal="average",
                          q_floor=_MIN_PROB, q_power=1.0):
    """``log p(x)`` per row by AIS from a per-row proposal ``q(h | x)`` (and its standard error).

    :func:`fit_proposal` fits ``q`` with its own stream; then, per row, ``n_runs`` AIS
    runs anneal from ``q`` to the posterior ``p(h | x)`` along
    ``q(h)^(1 - beta) p(x, h)^beta`` (Neal 2001), ``n_betas`` linearly spaced
    temperatures, with collapsed Gibbs sweeps (:func:`warm_transition`) as transitions.
    Both ends are normalised (``q`` is, and ``p(x, h)`` sums to ``p(x)``), so the mean
    weight is an unbiased estimate of ``p(x)`` for any ``q`` with full support, whatever
    the chain that fitted it; its log is a stochastic lower bound. ``n_betas=2`` is
    plain importance sampling from ``q``. The runs are vectorised over all rows (one
    batched sweep per temperature), split into two groups for ``n_jobs``. The
    standard error is the larger of the delta-method and the log-normal errors of
    the runs' weights (:func:`_warm_std_err`).

    ``proposal="average"`` fits one ``q`` from all the chains; ``"mixture"`` keeps
    one ``q_c`` per chain (chains may sit in different modes, which one factorised
    ``q`` can only smear) and anneals from their mixture, on the pairs ``(h, c)``
    (:func:`mixture_transition`): still unbiased for ``p(x)``. ``q_floor`` and
    ``q_power`` broaden ``q`` (:func:`fit_proposal`); any of them keeps the
    estimate unbiased, as ``q`` keeps full support.

    Returns
    -------
    log_px, std_err : ndarray of shape (n,)
    """
    if proposal not in ("average", "mixture"):
        raise ValueError(f"proposal must be 'average' or 'mixture', got {proposal!r}")
    X = np.asarray(X, dtype=float)
    mixture = proposal == "mixture"
    logits = fit_proposal(params, X, as_generator(seed_for(seed, _PROPOSAL_PURPOSE)),
                          n_burn=n_burn, n_fit=n_fit, n_chains=n_chains, per_chain=mixture,
                          floor=q_floor, power=q_power)
    density, transition, base = ((mixture_log_density, mixture_transition,
                                  mixture_sample_base) if mixture else
                                 (warm_log_density, warm_transition, warm_sample_base))
    res = annealed_importance_sampling(
        partial(density, params=params, X=X, logits=logits, cache={}),
        partial(transition, params=params, X=X, logits=logits),
        partial(base, logits=logits),
        0.0, beta_schedule(n_betas, beta_kind), n_runs,
        n_groups=min(n_runs, 2), random_state=seed, n_jobs=n_jobs,
    )
    return np.asarray(res.log_z), _warm_std_err(np.asarray(res.log_weights), res.std_err)


def _warm_std_err(log_w, delta):
    """The larger of the delta-method error and the log-normal one, per row.

    With a few runs the delta method, ``sd(w) / (sqrt(R) mean(w))``, cannot see the
    weights' upper tail that the runs did not reach: at 784-200 it read about half
    the seed-to-seed standard deviation (``bench_scoring_budget.py``). AIS log
    weights are close to normal (Neal 2001), and for ``log w ~ N(m, s^2)`` the
    relative error of the mean of ``R`` weights is ``sqrt(expm1(s^2) / R)``
    (:func:`lognormal_std_err`), with ``s^2`` the runs' sample variance of
    ``log w``: it reads the spread of the log weights, which a few runs do
    measure. Both agree when the weights are even.
    """
    if log_w.shape[0] < 2:
        return np.asarray(delta)
    return np.maximum(np.asarray(delta), lognormal_std_err(log_w))


def lognormal_std_err(log_w):
    """``sqrt(expm1(s^2) / R)``, at most ``s``: the error of ``log mean w`` for log-normal weights.

    ``s^2`` is the sample variance of the ``R`` log weights per row (along axis 0).
    Beyond ``s`` the linearisation fails (a mean of far-spread weights is their
    largest, whose log varies about as one log weight does), so ``s`` caps it.
    """
    R = log_w.shape[0]
    s2 = log_w.var(axis=0, ddof=1)
    return np.minimum(np.sqrt(np.expm1(np.minimum(s2, 50.0)) / R), np.sqrt(s2))
