"""Negative-phase samplers: Gibbs (SAP), FPCD, tempered transitions, adaptive ST, CAST.

Salakhutdinov (2010): Wang-Landau (Sec. 4, Eq. 4-5), adaptive simulated tempering
(Sec. 5, Eq. 10-11, Alg. 1), Coupled Adaptive Simulated Tempering (Sec. 6.1), and
the two competitors, fast-weight PCD (Sec. 3) and tempered transitions (Sec. 7).

Each sampler is a small object holding its persistent chains (one array per layer,
visible first, leading axis = chains). ``step(coefs, intercepts, rng)`` advances the
chains by one parameter update's worth of MCMC and returns the layers whose
statistics form the negative phase (Eq. 2). ``after_update(grads)`` lets FPCD move
its fast weights. ``stats()`` reports what ``history_`` records.

The Wang-Landau weights ``log g_k`` are shared by all chains of one sampler and
updated chain after chain (the order is fixed, so results are reproducible); the
gain is ``gamma_t`` from a schedule of the sampler's step count, applied as
``log g_k += log(1 + gamma_t)`` (Eq. 5).
"""

import numpy as np

from .._core.mcmc import bernoulli, metropolis_accept
from ._model import gibbs_sweep, gibbs_sweep_energy, odd_layers, even_layers

__all__ = [
    "st_temperature_moves",
    "wang_landau_spins",
    "tempered_transition",
    "GibbsChains",
    "FastWeightChains",
    "TemperedTransitionChains",
    "AdaptiveSTChains",
    "CASTChains",
    "cast_swap",
    "temperature_ladder",
    "adaptive_st_draw",
    "adaptive_st_sample",
]


def temperature_ladder(n_temperatures, beta_min):
    """``K`` inverse temperatures spaced uniformly from 1 down to ``beta_min`` (Sec. 8.1)."""
    return np.linspace(1.0, float(beta_min), int(n_temperatures))


# --------------------------------------------------------------------------------------
# The sequential part of Alg. 1 (steps 4-5): NumPy reference of the Cython kernel.
# --------------------------------------------------------------------------------------
def st_temperature_moves_numpy(k, energies, betas, log_g, log_gain, rng):
    """Metropolis moves between neighbouring temperatures, then Eq. 5, chain by chain.

    Alg. 1, step 4: propose ``k' = k +- 1`` (``q = 1/2`` each, ``q = 1`` from an
    end), accept with ``min(1, p(x, k') q(k | k') g_k / (p(x, k) q(k' | k) g_k'))``
    where ``p(x, k) ∝ exp(-beta_k E(x))``. Step 5: ``log g_{k_new} += log_gain``.
    Two uniforms per chain are drawn whatever happens (direction, acceptance), so
    the stream use is fixed. ``k`` and ``log_g`` are updated in place.
    """
    K = betas.shape[0]
    for c in range(k.shape[0]):
        u_dir = rng.random()
        u_acc = rng.random()
        kc = int(k[c])
        if K > 1:
            if kc == 0:
                prop, log_q = 1, (np.log(0.5) if K > 2 else 0.0)
            elif kc == K - 1:
                prop, log_q = K - 2, (np.log(0.5) if K > 2 else 0.0)
            else:
                prop = kc - 1 if u_dir < 0.5 else kc + 1
                log_q = np.log(2.0) if (prop == 0 or prop == K - 1) else 0.0
            log_a = (log_g[kc] - log_g[prop] - (betas[prop] - betas[kc]) * energies[c]
                     + log_q)
            if log_a >= 0.0 or u_acc < np.exp(log_a):
                kc = prop
                k[c] = kc
        log_g[kc] += log_gain
    return k, log_g


try:  # the compiled twin; the NumPy one is the reference
    from ._tempering_fast import st_temperature_moves as _st_fast
except ImportError:  # pragma: no cover
    _st_fast = None


def st_temperature_moves(k, energies, betas, log_g, log_gain, rng, kernels="cython"):
    """Alg. 1 steps 4-5 for every chain: the Cython kernel, or with
    ``kernels="numpy"`` its NumPy twin :func:`st_temperature_moves_numpy`."""
    if kernels not in ("cython", "numpy"):
        raise ValueError(f"kernels must be 'cython' or 'numpy', got {kernels!r}")
    if kernels == "numpy" or _st_fast is None:
        return st_temperature_moves_numpy(k, energies, betas, log_g, log_gain, rng)
    _st_fast(k, np.ascontiguousarray(energies, dtype=np.float64),
             np.ascontiguousarray(betas, dtype=np.float64), log_g, float(log_gain), rng)
    return k, log_g


# --------------------------------------------------------------------------------------
# Wang-Landau on a small spin system (Sec. 4.1, Eq. 7-9): the paper's 2-node toy.
# --------------------------------------------------------------------------------------
def wang_landau_spins(log_p, n_steps, gain, x0, rng, partition=None, n_partitions=None):
    """Wang-Landau (Eq. 4-5) on ``x in {-1, 1}^n`` with single-site Gibbs moves.

    Parameters
    ----------
    log_p : callable
        ``log p*(x)`` of a ``(n,)`` vector of ``+-1``.
    n_steps : int
        Each step is one sweep over the sites.
    gain : callable
        ``gamma_t`` as a function of the step; ``0`` gives plain Gibbs.
    x0 : array-like of +-1
    partition : callable, optional
        Index (``0 .. n_partitions - 1``) of the partition of ``x``; default one
        partition per state (the paper's ``X_1 ... X_4``).

    Returns
    -------
    visits : ndarray of shape (n_steps,)
        Partition index after each step.
    log_g : ndarray
    """
    x = np.array(x0, dtype=int)
    n = x.shape[0]
    if partition is None:
        n_partitions = 1 << n

        def partition(z):
            return int(sum(((int(zi) + 1) // 2) << i for i, zi in enumerate(z)))
    log_g = np.zeros(int(n_partitions))
    visits = np.empty(n_steps, dtype=int)
    for t in range(n_steps):
        for i in range(n):
            # Eq. 8: the target inside partition k is p*(x) / g_k.
            lp = np.empty(2)
            for j, s in enumerate((-1, 1)):
                x[i] = s
                lp[j] = log_p(x) - log_g[partition(x)]
            p_up = 1.0 / (1.0 + np.exp(lp[0] - lp[1]))
            x[i] = 1 if rng.random() < p_up else -1
        k = partition(x)
        log_g[k] += np.log1p(gain(t))  # Eq. 5
        visits[t] = k
    return visits, log_g


# --------------------------------------------------------------------------------------
# Tempered transitions (Neal 1996), the Trans-SAP operator.
# --------------------------------------------------------------------------------------
def tempered_transition(layers, betas, coefs, intercepts, rng):
    """One tempered transition per chain, accepted or rejected chain by chain.

    With ``betas = (1 = beta_0 > beta_1 > ... > beta_n)``: climb with forward
    sweeps at ``beta_1 .. beta_n``, descend with reversed sweeps at
    ``beta_n .. beta_1``, and accept with probability
    ``min(1, prod_i p_i(x^_{i-1}) / p_{i-1}(x^_{i-1}) * p_{i-1}(x~_{i-1}) / p_i(x~_{i-1}))``.
    The reversed sweep (even block first) is the reversal of the forward one, as
    the method requires.

    Returns
    -------
    layers : list of ndarray
        New states (rejected chains keep theirs).
    accepted : ndarray of bool
    """
    from ._model import energy

    betas = np.asarray(betas, dtype=float)
    x = [a.copy() for a in layers]
    e = energy(x, coefs, intercepts)
    log_r = np.zeros(e.shape[0])
    n = len(betas) - 1
    for i in range(1, n + 1):
        log_r -= (betas[i] - betas[i - 1]) * e
        x, e = gibbs_sweep_energy(x, coefs, intercepts, rng, betas[i])
    for i in range(n, 0, -1):
        x, e = gibbs_sweep_energy(x, coefs, intercepts, rng, betas[i], reverse=True)
        log_r -= (betas[i - 1] - betas[i]) * e
    accepted = metropolis_accept(log_r, rng)
    out = [np.where(accepted[:, None], new, old) for new, old in zip(x, layers)]
    return out, accepted


# --------------------------------------------------------------------------------------
# Persistent-chain samplers.
# --------------------------------------------------------------------------------------
class GibbsChains:
    """``sampler="sap"``: persistent Gibbs chains, one sweep per update (Sec. 2.2)."""

    def __init__(self, layers):
        self.layers = [np.array(a) for a in layers]   # copies, in the model's dtype
        self.n_steps = 0
        self.sweep_energy = None

    def _sweep(self, coefs, intercepts, rng):
        # The same draws as gibbs_sweep; the energy of the new state under ``coefs``
        # comes from the sweep's own products, so the trainer's energy trace (R-hat,
        # ESS) costs no extra product.
        self.layers, self.sweep_energy = gibbs_sweep_energy(self.layers, coefs,
                                                            intercepts, rng)

    def step(self, coefs, intercepts, rng):
        self._sweep(coefs, intercepts, rng)
        self.n_steps += 1
        return self.layers

    def after_update(self, grads, lr):
        pass

    def stats(self):
        return {}


class FastWeightChains(GibbsChains):
    """``sampler="fpcd"``: chains driven by ``theta + theta_f`` (Sec. 3).

    The fast parameters follow the same gradient as the slow ones with their
    own constant rate ``fast_lr`` and shrink by ``fast_decay`` every update
    (Tieleman & Hinton 2009): ``theta_f <- decay theta_f + fast_lr grad``.
    """

    def __init__(self, layers, coefs, intercepts, fast_lr, fast_decay):
        super().__init__(layers)
        self.fast_coefs = [np.zeros_like(W) for W in coefs]
        self.fast_intercepts = [np.zeros_like(b) for b in intercepts]
        self.fast_lr = float(fast_lr)
        self.fast_decay = float(fast_decay)

    def _sweep(self, coefs, intercepts, rng):
        # driven by other parameters: its energy under ``coefs`` is not the sweep's
        self.sweep_energy = None
        W = [a + b for a, b in zip(coefs, self.fast_coefs)]
        c = [a + b for a, b in zip(intercepts, self.fast_intercepts)]
        gibbs_sweep(self.layers, W, c, rng)

    def after_update(self, grads, lr):
        gW, gb = grads
        self.fast_coefs = [self.fast_decay * f + self.fast_lr * g
                           for f, g in zip(self.fast_coefs, gW)]
        self.fast_intercepts = [self.fast_decay * f + self.fast_lr * g
                                for f, g in zip(self.fast_intercepts, gb)]

    def stats(self):
        return {"fast_weight_norm": float(sum(np.linalg.norm(f) for f in self.fast_coefs))}


class TemperedTransitionChains(GibbsChains):
    """``sampler="trans_sap"``: a Gibbs sweep per update, and every ``interval``
    updates a tempered transition through ``betas`` instead.

    One tempered transition costs ``2 (K - 1)`` sweeps; spacing them
    ``interval`` updates apart keeps the cost per update comparable to CAST's.
    """

    def __init__(self, layers, betas, interval):
        super().__init__(layers)
        self.betas = np.asarray(betas, dtype=float)
        self.interval = int(interval)
        self.n_accepted = 0
        self.n_proposed = 0

    def step(self, coefs, intercepts, rng):
        self.n_steps += 1
        if self.n_steps % self.interval == 0 and len(self.betas) > 1:
            self.layers, acc = tempered_transition(self.layers, self.betas, coefs,
                                                   intercepts, rng)
            self.n_accepted += int(acc.sum())
            self.n_proposed += acc.size
        else:
            gibbs_sweep(self.layers, coefs, intercepts, rng)
        return self.layers

    def stats(self):
        rate = self.n_accepted / self.n_proposed if self.n_proposed else float("nan")
        return {"tt_acceptance": rate}


class _WangLandau:
    """Adaptive ST state of a set of chains: temperatures ``k``, weights ``log g``."""

    def __init__(self, layers, betas, gain, moves=st_temperature_moves):
        self.fast = [np.array(a) for a in layers]
        self.betas = np.asarray(betas, dtype=float)
        self.k = np.zeros(self.fast[0].shape[0], dtype=np.intp)
        self.log_g = np.zeros(len(self.betas))
        self.gain = gain
        self.t = 0
        self.moves = moves
        self.occupancy = np.zeros(len(self.betas), dtype=np.int64)

    def st_step(self, coefs, intercepts, rng):
        """Alg. 1, steps 3-5, for every chain."""
        self.fast, e = gibbs_sweep_energy(self.fast, coefs, intercepts, rng,
                                          self.betas[self.k])
        log_gain = float(np.log1p(self.gain(self.t)))
        self.moves(self.k, e, self.betas, self.log_g, log_gain, rng)
        # Only differences of log g matter; pinning log g_1 = 0 keeps them bounded.
        self.log_g -= self.log_g[0]
        self.t += 1
        np.add.at(self.occupancy, self.k, 1)

    def wl_stats(self):
        occ = self.occupancy / max(1, self.occupancy.sum())
        self.occupancy[:] = 0
        return {"temperature_occupancy": occ, "adaptive_log_weights": self.log_g.copy()}


class AdaptiveSTChains(GibbsChains, _WangLandau):
    """``sampler="adaptive_st"``: ``N`` Gibbs updates alternate with one adaptive ST run.

    Each chain is a persistent state ``(x, k)`` of simulated tempering and is
    never reset to temperature 1. Every update sweeps ``x`` once at its current
    ``beta_k``, which leaves ``pi(x | k)`` invariant (plain Gibbs for the chains
    at temperature 1); every ``interval``-th update runs Alg. 1 for ``interval``
    steps instead (sweep, temperature move, Eq. 5 adaptation; the weights
    persist between runs, Sec. 6). The cost is about twice SAP's.

    The negative phase is the set of chains that are at temperature 1 at this
    update. Given only the current temperatures of independent chains at
    stationarity, those states are independent draws from ``p(x)``, whatever
    their number, so their average is unbiased; the rule looks at the current
    ``k`` only, never at the path of ``k``. (Taking each chain's state at its
    first return to temperature 1 after a run, the earlier rule, selects the
    state by the path: the arriving state was drawn at ``beta_2`` and accepted
    more readily from high energy, a bias measured in
    ``tests/test_dbm.py::test_adaptive_st_negative_phase_unbiased``.) When no
    chain is at temperature 1 the previous update's states are used again.
    """

    def __init__(self, layers, betas, gain, interval):
        GibbsChains.__init__(self, layers)
        _WangLandau.__init__(self, layers, betas, gain)
        self.interval = int(interval)
        self.neg = [a.copy() for a in self.fast]  # all chains start at temperature 1
        self._n_neg = []
        self.n_fallback = 0

    def step(self, coefs, intercepts, rng):
        self.n_steps += 1
        if len(self.betas) == 1:
            gibbs_sweep(self.layers, coefs, intercepts, rng)
            return self.layers
        if self.n_steps % self.interval == 0:
            for _ in range(self.interval):
                self.st_step(coefs, intercepts, rng)
        else:
            self.fast, _ = gibbs_sweep_energy(self.fast, coefs, intercepts, rng,
                                              self.betas[self.k])
        self.layers = self.fast
        at_one = self.k == 0
        self._n_neg.append(int(at_one.sum()))
        if at_one.any():
            self.neg = [a[at_one] for a in self.fast]
        else:
            self.n_fallback += 1
        return self.neg

    def stats(self):
        out = self.wl_stats()
        out["negative_chains"] = float(np.mean(self._n_neg)) if self._n_neg else float("nan")
        out["n_fallback"] = self.n_fallback
        self._n_neg, self.n_fallback = [], 0
        return out


def cast_swap(slow, fast, k, p_swap, rng):
    """The CAST exchange of rule ``"at_beta_one"`` (Sec. 6.1), in place.

    Every pair whose fast chain is at temperature 1 (``k == 0``) exchanges its
    slow and fast states with probability ``p_swap``. Given ``k = 0`` the fast
    state and the slow state have the same law ``p(x)`` and are independent, so
    the exchange leaves ``p(x_slow) pi(x_fast, k)`` invariant. One uniform is
    drawn per pair whatever happens, so the stream use is fixed; the choice
    depends on the current ``k`` only, never on its path.

    Parameters
    ----------
    slow, fast : list of ndarray of shape (n_chains, n_l)
        The layers of the slow and of the fast chains, visible first.
    k : ndarray of shape (n_chains,)
        Temperature index of each fast chain.
    p_swap : float
    rng : numpy.random.Generator

    Returns
    -------
    swapped : ndarray of bool of shape (n_chains,)
    """
    u = rng.random(k.shape[0])
    sel = (k == 0) & (u < p_swap)
    if sel.any():
        for a, f in zip(slow, fast):
            tmp = a[sel].copy()
            a[sel] = f[sel]
            f[sel] = tmp
    return sel


class CASTChains(GibbsChains, _WangLandau):
    """``sampler="cast"``: slow Gibbs chains coupled to fast adaptive-ST chains (Sec. 6.1).

    Both advance once per update; the slow chains' states drive the gradient.

    - ``swap="at_beta_one"`` (default): at every update at which the fast chain
      *is* at temperature 1, the two states are exchanged with probability
      ``min(1, K / interval)`` (one exchange per ``interval`` updates on average
      when the temperature histogram is flat). Given ``k_t = 1`` the fast state
      is a draw at temperature 1 and the decision depends on nothing else, so
      the exchange leaves the pair's joint target invariant.
    - ``swap="last_visit"`` (the paper, Sec. 8): every ``interval`` updates the
      slow chain is given the last state the fast chain had at temperature 1.
      That is usually the state from which it climbed to ``beta_2``, a move
      accepted more readily from high energy (``exp((beta_1 - beta_2) E)``), so
      the handed states are biased toward high energy.

    Waiting for the fast chain's first return to temperature 1 after a due time
    is biased too (the arriving state was drawn at ``beta_2``): choosing the
    moment from the path of ``k`` is what both biased rules have in common.
    """

    def __init__(self, layers, fast_layers, betas, gain, interval, swap):
        GibbsChains.__init__(self, layers)
        _WangLandau.__init__(self, fast_layers, betas, gain)
        self.interval = int(interval)
        self.swap = swap
        n = self.k.shape[0]
        # With a flat histogram a fast chain is at temperature 1 a fraction 1/K of
        # the time: this makes one exchange per ``interval`` updates on average.
        self.p_swap = min(1.0, len(self.betas) / self.interval)
        self.last_one = [a.copy() for a in self.fast]
        self.have_last = np.ones(n, dtype=bool)
        self.n_swaps = 0
        self.swapped = np.zeros(n, dtype=bool)  # chains handed a state at this step

    def step(self, coefs, intercepts, rng):
        self.n_steps += 1
        gibbs_sweep(self.layers, coefs, intercepts, rng)
        self.st_step(coefs, intercepts, rng)
        at_one = self.k == 0
        due = self.n_steps % self.interval == 0
        self.swapped[:] = False
        if self.swap == "last_visit":
            for a, f in zip(self.last_one, self.fast):
                a[at_one] = f[at_one]
            self.have_last |= at_one
            if due:
                sel = self.have_last
                for a, f in zip(self.layers, self.last_one):
                    a[sel] = f[sel]
                self.n_swaps += int(sel.sum())
                self.swapped |= sel
                # The same state is not handed over twice.
                self.have_last[:] = False
        else:
            sel = cast_swap(self.layers, self.fast, self.k, self.p_swap, rng)
            self.n_swaps += int(sel.sum())
            self.swapped |= sel
        return self.layers

    def stats(self):
        out = self.wl_stats()
        out["n_swaps"] = self.n_swaps
        self.n_swaps = 0
        return out


def adaptive_st_sample(layers, betas, gain, n_steps, coefs, intercepts, rng,
                       record_every=0):
    """Run Alg. 1 from ``layers`` for ``n_steps``; keep states seen at temperature 1.

    For pictures of a particle's path (``bench_dbm_mixing.py``): the last state
    at temperature 1 is the "last visit" rule, biased toward high energy; use
    :func:`adaptive_st_draw` for samples.

    Returns the last temperature-1 state of every chain (the starting state if a
    chain never came back), and, with ``record_every > 0``, snapshots every
    ``record_every`` steps of the layers at the last temperature-1 visit, the
    temperature index after every step and the final weights, for mixing plots.
    """
    wl = _WangLandau(layers, betas, gain)
    last = [np.array(a, dtype=float) for a in layers]
    snaps, temps = [], []
    for s in range(int(n_steps)):
        wl.st_step(coefs, intercepts, rng)
        at_one = wl.k == 0
        for a, f in zip(last, wl.fast):
            a[at_one] = f[at_one]
        if record_every and (s + 1) % record_every == 0:
            snaps.append([a.copy() for a in last])
        if record_every:
            temps.append(wl.k.copy())
    return last, (snaps, np.array(temps), wl.log_g.copy())


def adaptive_st_draw(n_samples, layers, betas, gain, n_steps, coefs, intercepts, rng):
    """Draws at temperature 1 from persistent adaptive-ST chains (Alg. 1, step 7).

    All chains run ``n_steps`` steps of Alg. 1; then the chains that are at
    temperature 1 *at that step* are harvested (the first ones in chain order
    if more than needed). If fewer than ``n_samples`` are, all chains run
    ``n_steps`` more and are harvested again, and so on. Selecting by the
    current temperature only gives draws of ``p(x)`` (see
    :class:`AdaptiveSTChains`); pass about ``K * n_samples`` chains so that one
    round usually suffices.

    Returns
    -------
    layers : list of ndarray of shape (n_samples, n_l)
    n_rounds : int
    """
    wl = _WangLandau(layers, betas, gain)
    out, n, rounds = [[] for _ in layers], 0, 0
    while n < n_samples:
        for _ in range(max(1, int(n_steps))):
            wl.st_step(coefs, intercepts, rng)
        rounds += 1
        sel = np.flatnonzero(wl.k == 0)[: n_samples - n]
        for o, f in zip(out, wl.fast):
            o.append(f[sel])
        n += sel.size
    return [np.concatenate(o) for o in out], rounds


def draw_visible(n_samples, sampler, n_steps, coefs, intercepts, rng, *, betas, gain):
    """Visible draws from chains started at uniform random states (``DBMCAST.sample``).

    ``sampler="gibbs"``: ``n_samples`` chains of ``n_steps`` blocked Gibbs sweeps,
    the last visible state of each. ``"adaptive_st"``: Alg. 1 through
    :func:`adaptive_st_draw` with ``len(betas) * n_samples`` chains (about one in
    ``K`` is at temperature 1 at the last step). Every layer starts as
    ``Bernoulli(1/2)`` in float64.
    """
    sizes = [b.shape[0] for b in intercepts]
    n_chains = int(n_samples) * (1 if sampler == "gibbs" else len(betas))
    layers = [bernoulli(np.full((n_chains, s), 0.5), rng, dtype=np.float64) for s in sizes]
    if sampler == "gibbs":
        for _ in range(int(n_steps)):
            gibbs_sweep(layers, coefs, intercepts, rng)
        return layers[0]
    draws, _ = adaptive_st_draw(int(n_samples), layers, betas, gain, n_steps, coefs,
                                intercepts, rng)
    return draws[0]


def make_chains(sampler, layers, coefs, intercepts, *, betas, gain, swap_interval, swap,
                fpcd_learning_rate, fpcd_decay):
    """The persistent negative-phase sampler named by ``DBMCAST(sampler=...)``."""
    if sampler == "sap":
        return GibbsChains(layers)
    if sampler == "fpcd":
        return FastWeightChains(layers, coefs, intercepts, fpcd_learning_rate, fpcd_decay)
    if sampler == "trans_sap":
        return TemperedTransitionChains(layers, betas, swap_interval)
    if sampler == "adaptive_st":
        return AdaptiveSTChains(layers, betas, gain, swap_interval)
    return CASTChains(layers, [a.copy() for a in layers], betas, gain, swap_interval, swap)


def refresh_chains(chains, *, betas, gain, fpcd_learning_rate, fpcd_decay):
    """Hand a persistent sampler new hyper-parameters (between ``partial_fit`` calls).

    The chains, the Wang-Landau weights and the counters carry over; the ladder,
    the gain schedule and the FPCD rates are replaced where the sampler has them.
    The number of temperatures cannot change (``ValueError``).
    """
    if hasattr(chains, "betas"):
        if len(betas) != len(chains.betas):
            raise ValueError(
                f"n_temperatures changed from {len(chains.betas)} to {len(betas)} between "
                f"partial_fit calls; the tempered chains cannot change their number of "
                f"levels: call fit to start again")
        chains.betas = np.asarray(betas, dtype=float)
    if hasattr(chains, "gain"):
        chains.gain = gain
    if hasattr(chains, "fast_lr"):
        chains.fast_lr = float(fpcd_learning_rate)
        chains.fast_decay = float(fpcd_decay)
