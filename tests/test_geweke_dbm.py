"""Joint-distribution (Geweke 2004) tests of the DBM wing's MCMC kernels.

The DBM has no parameter prior, so the "joint" is the model itself on a tiny DBM
(3 visible, 3 + 3 hidden units: 512 states), or simulated tempering's joint
``pi(x, k) ∝ exp(-log g_k - beta_k E(x))`` with frozen weights ``log g``. The
marginal-conditional simulator draws exactly by enumeration; "y" is one block of the
state (``v``, ``h^1``, or the temperature index ``k``) and the library's kernel
updates the rest, alternating with an exact draw of ``y`` given the rest (computed
here from the enumerated table, not with the library's conditionals). Kernels that
update the whole state (an Alg. 1 step, a CAST step) are tested as chains on the
joint itself: ``y`` is then empty and the successive-conditional simulator is the
chain, the marginal-conditional one exact draws.

Each kernel has a negative control that runs a deliberately broken variant through
:func:`assert_geweke_fails` with the same sizes and seed.
"""

import numpy as np
import pytest
from _geweke import assert_geweke_fails, assert_geweke_passes
from scipy.special import expit, logsumexp

from skdgm._core.exact import binary_states
from skdgm._core.schedules import Constant
from skdgm.dbm import _model as M
from skdgm.dbm import _tempering as T

SIZES = (3, 3, 3)
N_ITER = 20_000
# Kernels on the whole joint cost ~0.5 ms a step (every library call on 1-row arrays).
N_ITER_JOINT = 10_000
BETAS = np.array([1.0, 0.75, 0.5, 0.25])
K = BETAS.size


def _model():
    rng = np.random.default_rng(2024)
    W = [rng.normal(0.0, 1.2, (a, b)) for a, b in zip(SIZES[:-1], SIZES[1:])]
    b = [rng.normal(0.0, 1.0, s) for s in SIZES]
    return W, b


W, B = _model()
_ALL = binary_states(sum(SIZES), lsb_first=True)
_CUT = np.cumsum(SIZES)[:-1]


_BITS = 1 << np.arange(sum(SIZES))


def _index(x):
    """Row of ``_ALL`` holding the state x."""
    return int(np.asarray(x) @ _BITS)


def _energy_all(x):
    """Energy of joint states (rows: v, h1, h2 concatenated), written out here."""
    v, h1, h2 = np.split(np.atleast_2d(x), _CUT, axis=1)
    return -(np.einsum("ni,ij,nj->n", v, W[0], h1) + np.einsum("ni,ij,nj->n", h1, W[1], h2)
             + v @ B[0] + h1 @ B[1] + h2 @ B[2])


_E = _energy_all(_ALL)


def _energy(x):
    return _E[_index(x)]
# log Z(beta_k) of p_beta ∝ exp(-beta E) (the whole energy tempered, Eq. 11)
_LOG_Z = np.array([logsumexp(-be * _E) for be in BETAS])
# Frozen Wang-Landau weights: near log Z(beta_k) (a flat-ish histogram) but not equal
# to it, so that pi(k) is not uniform and a wrong acceptance ratio has room to show.
LOG_G = _LOG_Z - _LOG_Z[0] + np.array([0.0, 0.3, -0.2, 0.4])
_LOG_PI_K = _LOG_Z - LOG_G
_PI_K = np.exp(_LOG_PI_K - logsumexp(_LOG_PI_K))
_P_BETA = [np.exp(-be * _E - lz) for be, lz in zip(BETAS, _LOG_Z)]
_CDF_BETA = [np.cumsum(p) for p in _P_BETA]


def _exact_state(rng, k=0):
    """One exact draw of x = (v, h1, h2) from p_{beta_k}, by enumeration."""
    i = min(int(np.searchsorted(_CDF_BETA[k], rng.random())), _ALL.shape[0] - 1)
    return _ALL[i].copy()


def _split(x):
    return [a[None, :].copy() for a in np.split(x, _CUT)]


def _join(layers):
    return np.concatenate([a[0] for a in layers])


_LO = np.r_[0, _CUT]
# For each block, the row offsets of its 2^n_l configurations (other units off).
_OFFSETS = [(_ALL[: 1 << n, :n] @ _BITS[:n]).astype(int) << int(lo)
            for n, lo in zip(SIZES, _LO)]


def _cond_draw(x, block, rng, beta=1.0):
    """Exact draw of one block of x given the others at inverse temperature beta:
    the rows of the table that agree with x outside the block, weighted by
    exp(-beta E)."""
    lo, hi = _LO[block], _LO[block] + SIZES[block]
    rest = _index(x) - int(x[lo:hi] @ _BITS[lo:hi])
    cand = rest + _OFFSETS[block]
    lp = -beta * _E[cand]
    p = np.cumsum(np.exp(lp - lp.max()))
    j = min(int(np.searchsorted(p, rng.random() * p[-1])), cand.size - 1)
    return _ALL[cand[j]].copy()


def _model_stats(x):
    """First moments of every unit, v-h1 and h1-h2 products, energy and its square."""
    v, h1, h2 = np.split(x, _CUT)
    e = _energy(x)
    return np.concatenate([x, np.outer(v, h1).ravel(), np.outer(h1, h2).ravel(),
                           [e, e * e]])


def _model_names():
    n = [f"v{i}" for i in range(3)] + [f"h1_{i}" for i in range(3)] + \
        [f"h2_{i}" for i in range(3)]
    n += [f"v{i}*h1_{j}" for i in range(3) for j in range(3)]
    n += [f"h1_{i}*h2_{j}" for i in range(3) for j in range(3)]
    return n + ["E", "E^2"]


# ------------------------------------------------------------------ Gibbs sweeps
# theta is the full state x; the kernel must not change the block y, which the
# harness then redraws exactly.
class _Block:
    """A Geweke set-up where y is block ``block`` of x at inverse temperature beta."""

    def __init__(self, block, beta=1.0):
        self.block, self.beta = block, beta
        self.k = int(np.flatnonzero(BETAS == beta)[0])

    def prior(self, rng):
        return _exact_state(rng, self.k)

    def data(self, x, rng):
        # y | rest, exactly; the harness passes it to the kernel, which must keep it.
        x[:] = _cond_draw(x, self.block, rng, self.beta)
        lo = int(np.r_[0, _CUT][self.block])
        return x[lo:lo + SIZES[self.block]].copy()

    def stats(self, x, y):
        return _model_stats(x)


def _sweep_sap(x, y, rng):
    """The negative phase of ``sampler="sap"``: one GibbsChains step from (y, h1, h2).

    The sweep draws h1 | v, h2 and then (v, h2) | h1; the new v is discarded (v is the
    data block y). Since v and h2 are conditionally independent given h1, the h2 it
    draws is a draw of h2 | h1, v: the kernel leaves p(h1, h2 | v) invariant.
    """
    ch = T.GibbsChains(_split(x))
    ch.layers[0][0] = y
    out = ch.step(W, B, rng)
    new = _join(out)
    new[:SIZES[0]] = y
    return new


def _sweep_sap_broken(x, y, rng):
    """Negative control: h1 drawn without its top-down input from h2."""
    layers = _split(x)
    layers[0][0] = y
    h2 = layers[2]
    layers[2] = np.zeros_like(h2)
    M.sample_layers([1], layers, W, B, rng)
    layers[2] = h2
    M.sample_layers([2], layers, W, B, rng)
    return _join(layers)


def _sweep_reverse(x, y, rng):
    """A reversed sweep (even block first) from (v, y, h2): (v, h2) | h1, then h1 | v, h2.

    The second half redraws h1, the data block here; it is discarded, so the kernel
    is the library's exact draw of the even layers given h1.
    """
    layers = _split(x)
    layers[1][0] = y
    M.gibbs_sweep(layers, W, B, rng, reverse=True)
    new = _join(layers)
    new[SIZES[0]:SIZES[0] + SIZES[1]] = y
    return new


def _sweep_reverse_broken(x, y, rng):
    """Negative control: the even layers drawn with the h2 bias dropped."""
    layers = _split(x)
    layers[1][0] = y
    M.sample_layers([0, 2], layers, W, [B[0], B[1], np.zeros_like(B[2])], rng)
    return _join(layers)


BETA_T = 0.5


def _sweep_tempered(x, y, rng):
    """The sweep of Alg. 1 step 3 at beta = 0.5 (gibbs_sweep_energy), v = y discarded."""
    layers = _split(x)
    layers[0][0] = y
    layers, _ = M.gibbs_sweep_energy(layers, W, B, rng, np.array([BETA_T]))
    new = _join(layers)
    new[:SIZES[0]] = y
    return new


def _sweep_tempered_broken(x, y, rng):
    """Negative control: tempering the weights only, the AIS path's convention
    (gibbs_sweep with beta), where simulated tempering needs the whole energy (Eq. 11)."""
    layers = _split(x)
    layers[0][0] = y
    M.gibbs_sweep(layers, W, B, rng, np.array([BETA_T]))
    new = _join(layers)
    new[:SIZES[0]] = y
    return new


_SWEEPS = {
    "sap_sweep": (_Block(0), _sweep_sap, _sweep_sap_broken),
    "reverse_sweep": (_Block(1), _sweep_reverse, _sweep_reverse_broken),
    "tempered_sweep": (_Block(0, BETA_T), _sweep_tempered, _sweep_tempered_broken),
}


@pytest.mark.parametrize("name", list(_SWEEPS))
def test_geweke_gibbs_sweep(name):
    setup, kernel, _ = _SWEEPS[name]
    assert_geweke_passes(setup.prior, setup.data, kernel, setup.stats, n_iter=N_ITER,
                         rng=np.random.default_rng(1), names=_model_names())


@pytest.mark.parametrize("name", list(_SWEEPS))
def test_geweke_gibbs_sweep_negative_control(name):
    setup, _, broken = _SWEEPS[name]
    assert_geweke_fails(setup.prior, setup.data, broken, setup.stats, n_iter=N_ITER,
                        rng=np.random.default_rng(1), names=_model_names())


# ------------------------------------------------------------------ temperature moves
# theta = k, y = x: the Metropolis move of Alg. 1 step 4 with frozen weights
# (log_gain = 0) must leave pi(k | x) ∝ exp(-log g_k - beta_k E(x)) invariant.
def _st_prior(rng):
    return int(min(np.searchsorted(np.cumsum(_PI_K), rng.random()), K - 1))


def _st_data(k, rng):
    return _exact_state(rng, k)


def _st_stats(k, x):
    e = _energy(x)
    ind = (np.arange(K) == k).astype(float)
    return np.concatenate([ind, e * ind, [e, BETAS[k] * e, x[:3].sum() * BETAS[k]]])


_ST_NAMES = [f"k={j}" for j in range(K)] + [f"E*[k={j}]" for j in range(K)] + \
    ["E", "beta_k*E", "sum(v)*beta_k"]


def _st_kernel(moves):
    def transition(k, x, rng):
        kk = np.array([k], dtype=np.intp)
        log_g = LOG_G.copy()
        moves(kk, np.array([_energy(x)]), BETAS, log_g, 0.0, rng)
        assert np.array_equal(log_g, LOG_G)  # frozen: a zero gain adds nothing
        return int(kk[0])
    return transition


def _moves_no_hastings(k, energies, betas, log_g, log_gain, rng):
    """Negative control: the move of Alg. 1 without the proposal ratio q(k | k') /
    q(k' | k) at the ends of the ladder (the rest as in the library's kernel)."""
    for c in range(k.shape[0]):
        u_dir, u_acc = rng.random(), rng.random()
        kc = int(k[c])
        if kc == 0:
            prop = 1
        elif kc == K - 1:
            prop = K - 2
        else:
            prop = kc - 1 if u_dir < 0.5 else kc + 1
        log_a = log_g[kc] - log_g[prop] - (betas[prop] - betas[kc]) * energies[c]
        if log_a >= 0.0 or u_acc < np.exp(log_a):
            k[c] = prop


def _moves_energy_sign(k, energies, betas, log_g, log_gain, rng):
    """Negative control: the library's kernel handed -E (a sign slip in the ratio)."""
    T.st_temperature_moves(k, -np.asarray(energies), betas, log_g, log_gain, rng)


_MOVES = {"cython": T.st_temperature_moves, "numpy": T.st_temperature_moves_numpy}


@pytest.mark.parametrize("twin", list(_MOVES))
def test_geweke_st_temperature_move(twin):
    if twin == "cython" and T._st_fast is None:  # pragma: no cover
        pytest.skip("compiled kernel not built")
    assert_geweke_passes(_st_prior, _st_data, _st_kernel(_MOVES[twin]), _st_stats,
                         n_iter=N_ITER, rng=np.random.default_rng(1), names=_ST_NAMES)


@pytest.mark.parametrize("broken", [_moves_no_hastings, _moves_energy_sign],
                         ids=["no_hastings", "energy_sign"])
def test_geweke_st_temperature_move_negative_control(broken):
    assert_geweke_fails(_st_prior, _st_data, _st_kernel(broken), _st_stats,
                        n_iter=N_ITER, rng=np.random.default_rng(1), names=_ST_NAMES)


# ------------------------------------------------------------------ whole ST step and CAST
# These kernels move every part of the state, so y is empty and the test compares the
# chain with exact draws of the joint.
def _no_data(theta, rng):
    return np.zeros(0)


def _joint_prior(rng):
    k = _st_prior(rng)
    return (_exact_state(rng, k), k)


def _joint_stats(theta, y):
    x, k = theta
    # _model_stats already has E: drop the copy in _st_stats
    return np.concatenate([_model_stats(x), np.delete(_st_stats(k, x), 2 * K)])


_JOINT_NAMES = _model_names() + _ST_NAMES[:2 * K] + _ST_NAMES[2 * K + 1:]


def _st_step_kernel(moves=T.st_temperature_moves):
    def transition(theta, y, rng):
        x, k = theta
        wl = T._WangLandau(_split(x), BETAS, Constant(0.0), moves=moves)
        wl.k[0] = k
        wl.log_g[:] = LOG_G
        wl.st_step(W, B, rng)
        return (_join(wl.fast), int(wl.k[0]))
    return transition


def test_geweke_adaptive_st_step_frozen_weights():
    # Alg. 1 steps 3-5 as the samplers run them (_WangLandau.st_step: sweep at beta_k,
    # temperature move on the new energy, Eq. 5 with gain 0): a chain on pi(x, k).
    assert_geweke_passes(_joint_prior, _no_data, _st_step_kernel(), _joint_stats,
                         n_iter=N_ITER_JOINT, rng=np.random.default_rng(2),
                         names=_JOINT_NAMES)


def test_geweke_adaptive_st_step_negative_control():
    assert_geweke_fails(_joint_prior, _no_data, _st_step_kernel(_moves_no_hastings),
                        _joint_stats, n_iter=N_ITER_JOINT, rng=np.random.default_rng(2),
                        names=_JOINT_NAMES)


def _cast_prior(rng):
    k = _st_prior(rng)
    return (_exact_state(rng, 0), _exact_state(rng, k), k)


def _cast_stats(theta, y):
    slow, fast, k = theta
    e_s, e_f = _energy(slow), _energy(fast)
    # the slow chain's law, the fast pair's law, and their independence
    return np.concatenate([_model_stats(slow), _st_stats(k, fast),
                           [e_s * e_f, e_s * (k == 0), slow[:3].sum() * fast[:3].sum()]])


_CAST_NAMES = ["slow " + n for n in _model_names()] + ["fast " + n for n in _ST_NAMES] + \
    ["E_slow*E_fast", "E_slow*[k=0]", "sum(v_slow)*sum(v_fast)"]


def _cast_step(theta, y, rng):
    slow, fast, k = theta
    # swap_interval = K: p_swap = min(1, K / interval) = 1, an exchange at every step
    # at which the fast chain is at temperature 1 (the most exchanges the rule makes).
    ch = T.CASTChains(_split(slow), _split(fast), BETAS, Constant(0.0), K, "at_beta_one")
    ch.k[0] = k
    ch.log_g[:] = LOG_G
    ch.step(W, B, rng)
    return (_join(ch.layers), _join(ch.fast), int(ch.k[0]))


def test_geweke_cast_step_frozen_weights():
    # CASTChains.step: a slow Gibbs sweep, an Alg. 1 step of the fast chain, then the
    # exchange (cast_swap) must leave p(x_slow) pi(x_fast, k) invariant.
    assert_geweke_passes(_cast_prior, _no_data, _cast_step, _cast_stats,
                         n_iter=N_ITER_JOINT, rng=np.random.default_rng(3),
                         names=_CAST_NAMES)


def test_geweke_cast_step_negative_control(monkeypatch):
    # The same step with the exchange's temperature index off by one: pairs whose fast
    # chain is at beta_2 hand the slow chain a tempered state.
    swap = T.cast_swap
    monkeypatch.setattr(T, "cast_swap",
                        lambda slow, fast, k, p, rng: swap(slow, fast, k - 1, p, rng))
    assert_geweke_fails(_cast_prior, _no_data, _cast_step, _cast_stats,
                        n_iter=N_ITER_JOINT, rng=np.random.default_rng(3),
                        names=_CAST_NAMES)


# ------------------------------------------------------------------ stronger versions
def _strong_cases():
    cases = {name: (s.prior, s.data, k, s.stats, 1) for name, (s, k, _) in _SWEEPS.items()}
    for twin, moves in _MOVES.items():
        cases[f"st_move_{twin}"] = (_st_prior, _st_data, _st_kernel(moves), _st_stats, 1)
    cases["st_step"] = (_joint_prior, _no_data, _st_step_kernel(), _joint_stats, 2)
    cases["cast_step"] = (_cast_prior, _no_data, _cast_step, _cast_stats, 3)
    return cases


@pytest.mark.slow
@pytest.mark.parametrize("name", list(_strong_cases()))
def test_geweke_dbm_kernels_long(name):
    # 100,000 steps: a bias 2.2-3x smaller than the fast tests can see is detected.
    prior, data, kernel, stats, seed = _strong_cases()[name]
    assert_geweke_passes(prior, data, kernel, stats, n_iter=100_000,
                         rng=np.random.default_rng(seed))
