"""Geweke (2004) joint-distribution tests of the SBN's Pólya-Gamma Gibbs sampler.

The unknowns are everything :func:`skdgm.sbn._gibbs.gibbs_iteration` updates: every
coefficient row ``[W | lateral | bias]`` of every layer, the prior's latent scales and
the hidden units of each data row; the data are the visible rows ``X``. The
marginal-conditional draws below follow the generative model (prior scales, weights
given scales, biases ``N(0, bias_var)``, hidden units ancestrally, then ``X``); the
transition is one call of the library's own ``gibbs_iteration`` (Cython sweep).

Statistics (bounded, because the Student-t and horseshoe weights have no finite
higher moments): for every free weight and bias ``t = tanh(theta / s)`` and ``t^2``;
every data mean ``mean_n x_nj``, hidden mean ``mean_n h_nk`` and their products
``mean_n x_nj h_nk``; cross terms of the coefficients with the data
``mean_n (x_nj - 1/2) (h_nk - 1/2) t_jk`` and ``mean_n (x_nj - 1/2) t_bias_j``; and the
log of the prior's scales where it has them.

Each test has a negative control: the same sizes and seed with a deliberately broken
kernel, which :func:`_geweke.assert_geweke_fails` must catch (a Pólya-Gamma shape of 2
where Eq. 12 has 1, or a hidden sweep that skips the children's data term). The old
Pólya-Gamma draw (``polyagamma``'s default method, ``E[PG(1, z)] = 0.16`` instead of
``~1/(2z)`` for ``z >= 200``) is caught by the hidden-unit test at ``|psi| ~ 250`` at the
end of the file (issue 12, items 1, 2 and 6). Priors wide enough to put the full
model's activations beyond 200 make the exact sampler mix too slowly for a cheap
Geweke test (weights and biases random-walk over hundreds with steps of a few units),
so that control is run on the hidden-unit kernel with the weights held fixed.
"""

import numpy as np
import pytest
from _geweke import assert_geweke_fails, assert_geweke_passes
from polyagamma import random_polyagamma

from skdgm.sbn import _gibbs, _model
from skdgm.sbn._polya_gamma import draw_polya_gamma as _exact_pg
from skdgm.sbn._priors import (
    DEFAULT_PRIOR_PARAMS,
    gibbs_update_prior,
    init_prior_state,
    prior_precision,
)

N_ROWS = 4


def _draw_prior_state(kind, shape, mask, pp, rng):
    """Latent scales of one weight block from their prior (``mask``: entries that exist)."""
    state = init_prior_state(kind, shape, pp)
    if kind == "student_t":
        lam = rng.standard_gamma(pp["df"] / 2, size=shape) / (pp["df"] * pp["scale"] ** 2 / 2)
        state["lam"] = np.where(mask, lam, state["lam"])
    elif kind == "tpbn":
        omega = rng.standard_gamma(0.5)
        phi = rng.standard_gamma(0.5, size=shape[1]) / omega
        xi = np.where(mask, rng.standard_gamma(pp["b"], size=shape) / phi, 1.0)
        zeta = np.where(mask, rng.standard_gamma(pp["a"], size=shape) / xi, 1.0)
        state.update(omega=float(omega), phi=phi, xi=xi, zeta=zeta)
    return state


class SBNProblem:
    """Marginal draws, data draws, the kernel and the statistics of one tiny SBN."""

    def __init__(self, prior, D, hidden, ar, pp, w_scale):
        self.prior, self.D, self.hidden, self.ar = prior, D, hidden, ar
        self.pp = {**DEFAULT_PRIOR_PARAMS, **pp}
        self.s = w_scale

    def sample_prior(self, rng):
        params = _model.init_params(self.D, self.hidden, rng, autoregressive=self.ar)
        states = []
        for l in range(len(params.biases)):
            mask = _model.row_mask(params, l)
            J, d = mask.shape
            st = _draw_prior_state(self.prior, (J, d - 1), mask[:, :-1], self.pp, rng)
            prec = prior_precision(self.prior, st, self.pp, (J, d - 1))
            w = rng.standard_normal((J, d - 1)) / np.sqrt(prec) * mask[:, :-1]
            bias = np.sqrt(self.pp["bias_var"]) * rng.standard_normal(J)
            _model.set_layer_rows(params, l, np.hstack([w, bias[:, None]]))
            states.append(st)
        hidden = _model.sample_hidden_prior(params, (N_ROWS,), rng)
        return params, states, hidden

    def sample_data(self, theta, rng):
        params, _, hidden = theta
        a = params.biases[0]
        if hidden:
            a = a + hidden[0] @ params.weights[0].T
        lat = None if params.lateral is None else params.lateral[0]
        return _model._sample_layer(a, lat, rng, (N_ROWS, self.D))

    def transition(self, theta, X, rng):
        params, states, hidden = theta
        new, hidden, states = _gibbs.gibbs_iteration(
            params, X, [h.copy() for h in hidden], states, self.prior, self.pp, rng)
        return new, states, hidden

    def statistics(self, theta, X):
        params, states, hidden = theta
        layers = [X] + list(hidden)
        out = []
        for l in range(len(params.biases)):
            rows = _model.layer_rows(params, l)
            mask = _model.row_mask(params, l)
            t = np.tanh(rows / self.s)[mask]
            out += [t, t * t]
            # coefficient x data: each free coefficient times its unit's value (centred)
            # and its regressor's value (centred; the bias' regressor is the constant)
            z = _model.layer_regressors(params, layers, l) - 0.5
            z[:, -1] = 1.0
            xc = layers[l] - 0.5
            cross = (xc.T @ z) / N_ROWS * np.tanh(rows / self.s)
            out.append(cross[mask])
            if not mask[:, :-1].any():
                continue
            if self.prior == "student_t":
                out.append([np.log(states[l]["lam"][mask[:, :-1]]).mean()])
            elif self.prior == "tpbn":
                st = states[l]
                out.append([np.log(st["zeta"][mask[:, :-1]]).mean(),
                            np.log(st["phi"]).mean(), np.log(st["omega"])])
        for l, h in enumerate(layers):
            out.append(h.mean(0))
            if l + 1 < len(layers):
                out.append((h.T @ layers[l + 1]).ravel() / N_ROWS)
        return np.concatenate([np.ravel(np.asarray(o, float)) for o in out])


CASES = {
    # name: (prior, D, hidden, autoregressive, prior_params, tanh scale)
    "normal": ("normal", 3, (2,), False, {"weight_var": 4.0, "bias_var": 4.0}, 2.0),
    "student_t": ("student_t", 3, (2,), False, {"scale": 1.0, "bias_var": 4.0}, 1.0),
    # a = b = 1 here; the horseshoe's a = b = 1/2 mixes too slowly for one long chain
    # and is tested through many short chains below (and its scale kernel alone)
    "tpbn": ("tpbn", 3, (2,), False, {"a": 1.0, "b": 1.0, "bias_var": 4.0}, 1.0),
    "arsbn": ("normal", 3, (2,), True, {"weight_var": 4.0, "bias_var": 4.0}, 2.0),
    "fvsbn": ("normal", 4, (), True, {"weight_var": 4.0, "bias_var": 4.0}, 2.0),
    "deep": ("normal", 2, (2, 2), False, {"weight_var": 4.0, "bias_var": 4.0}, 2.0),
}
N_ITER = 5_000


def _old_default_pg(psi, rng, b=1.0):
    """The draw before issue 12: ``polyagamma``'s default method (wrong for |z| >= 200)."""
    psi = np.asarray(psi, dtype=float)
    return random_polyagamma(b, psi, random_state=rng) if psi.size else np.zeros_like(psi)


def _wrong_shape_pg(psi, rng, b=1.0):
    """A broken kernel: ``PG(2, psi)`` where Eq. 12 has ``PG(1, psi)``."""
    return _exact_pg(psi, rng, 2.0 * b)


def _sweep_without_data(h, a_self, x_below, psi_below, gamma_below, w, lateral,
                        gamma_self, rng):
    """A broken kernel: the hidden sweep skips the children's data term of ``d_kn``
    (``x - 1/2`` replaced by 0), so the hidden units ignore what they generate."""
    _exact_sweep(h, a_self, np.full_like(x_below, 0.5), psi_below, gamma_below, w, lateral,
                 gamma_self, rng)


_exact_sweep = _gibbs.pg_hidden_sweep


def _run(name, check, seed=2026, n_iter=N_ITER):
    prob = SBNProblem(*CASES[name])
    return check(prob.sample_prior, prob.sample_data, prob.transition, prob.statistics,
                 n_iter=n_iter, rng=np.random.default_rng(seed), burn_in=200)


@pytest.mark.parametrize("name", list(CASES))
def test_gibbs_passes_geweke(name):
    _run(name, assert_geweke_passes)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_gibbs_passes_long_geweke(name):
    """Six times longer chains (17-63 CPU-s each here): max |z| 1.5-2.9 when written."""
    _run(name, assert_geweke_passes, n_iter=30_000)


@pytest.mark.parametrize("name,broken", [
    ("normal", _sweep_without_data),
    ("tpbn", _wrong_shape_pg),
    ("student_t", _wrong_shape_pg),
    ("arsbn", _wrong_shape_pg),
    ("fvsbn", _wrong_shape_pg),
    ("deep", _sweep_without_data),
])
def test_broken_gibbs_fails_geweke(name, broken, monkeypatch):
    target = "pg_hidden_sweep" if broken is _sweep_without_data else "draw_polya_gamma"
    monkeypatch.setattr(_gibbs, target, broken)
    _run(name, assert_geweke_fails)


# --- the full horseshoe model (TPBN, a = b = 1/2) through many short chains -----------
#
# The horseshoe's global scales mix too slowly for one long successive chain (log omega's
# autocorrelation time is ~260 sweeps), so batch means understate the standard error. Many
# short chains, each started from an exact joint draw, need no mixing at all: a right
# kernel keeps every chain at the joint, a wrong one drifts within 40 sweeps.

HORSESHOE = ("tpbn", 3, (2,), False, {"a": 0.5, "b": 0.5, "bias_var": 4.0}, 1.0)


def _run_horseshoe(check, n_iter=5_000, n_chains=125, seed=2026):
    prob = SBNProblem(*HORSESHOE)
    return check(prob.sample_prior, prob.sample_data, prob.transition, prob.statistics,
                 n_iter=n_iter, n_chains=n_chains, rng=np.random.default_rng(seed))


def test_horseshoe_gibbs_passes_geweke_in_short_chains():
    _run_horseshoe(assert_geweke_passes)


def test_broken_horseshoe_gibbs_fails_geweke_in_short_chains(monkeypatch):
    monkeypatch.setattr(_gibbs, "draw_polya_gamma", _wrong_shape_pg)
    _run_horseshoe(assert_geweke_fails)


@pytest.mark.slow
def test_horseshoe_gibbs_passes_long_geweke_in_short_chains():
    _run_horseshoe(assert_geweke_passes, n_iter=40_000, n_chains=1_000)


# --- the hidden-unit kernel alone, with activations beyond |psi| = 200 ----------------
#
# With the weights held fixed the unknowns are only the hidden units, whose posterior
# stays broad enough for the successive chain to mix while two visible units sit at
# |psi| ~ 250 (their x is then certain). Their PG variables still enter every hidden
# unit's logit d_kn through -gamma (2 psi w + w^2) / 2, which with the exact
# E[gamma] ~ 1/(2|psi|) cancels the data term and with the old draw (E = 0.16) swamps it.

N_HID_ROWS = 8


def _large_psi_params():
    W = np.array([[3.0, -2.0], [2.0, 3.0], [2.0, -2.0], [-1.5, 2.5]])
    return _model.SBNParams([W], [np.array([250.0, -240.0, 0.0, 0.3]),
                                  np.array([0.3, -0.5])])


def _hid_prior(rng):
    return _model.sample_hidden_prior(_large_psi_params(), (N_HID_ROWS,), rng)


def _hid_data(hidden, rng):
    p = _large_psi_params()
    return _model._sample_layer(p.biases[0] + hidden[0] @ p.weights[0].T, None, rng,
                                (N_HID_ROWS, 4))


def _hid_transition(hidden, X, rng):
    return _gibbs.pg_hidden_sweeps(_large_psi_params(), X, hidden, rng)


def _hid_stats(hidden, X):
    h = hidden[0]
    return np.concatenate([h.mean(0), X[:, 2:].mean(0), (X[:, 2:].T @ h).ravel() / N_HID_ROWS,
                           [np.mean(h[:, 0] * h[:, 1])]])


def test_hidden_sweep_at_large_psi_passes_geweke():
    assert_geweke_passes(_hid_prior, _hid_data, _hid_transition, _hid_stats, n_iter=20_000,
                         rng=np.random.default_rng(7), burn_in=200)


def test_old_polya_gamma_draw_fails_geweke(monkeypatch):
    """Negative control for items 1 and 2: the draw before issue 12 is caught."""
    monkeypatch.setattr(_gibbs, "draw_polya_gamma", _old_default_pg)
    assert_geweke_fails(_hid_prior, _hid_data, _hid_transition, _hid_stats, n_iter=20_000,
                        rng=np.random.default_rng(7), burn_in=200)


# --- the horseshoe's scale kernel alone -------------------------------------------------
#
# The full Gibbs test above uses a = b = 1: with the horseshoe (a = b = 1/2) the global
# scale mixes slowly (integrated autocorrelation time of log omega ~260 iterations even
# without data), and a few thousand iterations give unreliable batch-means errors. Here
# the unknowns are the scales of one 3 x 2 block and the "data" its weights, so the
# horseshoe's conditionals (GIG, the two gamma layers, omega) are tested on their own.

_HS_PP = {**DEFAULT_PRIOR_PARAMS, "a": 0.5, "b": 0.5}
_HS_MASK = np.ones((3, 2), bool)


def _hs_prior(rng):
    return _draw_prior_state("tpbn", _HS_MASK.shape, _HS_MASK, _HS_PP, rng)


def _hs_data(state, rng):
    return rng.standard_normal(_HS_MASK.shape) * np.sqrt(state["zeta"])


def _hs_transition(state, w, rng):
    return gibbs_update_prior("tpbn", state, w, _HS_MASK, _HS_PP, rng)


def _hs_broken(state, w, rng):
    """A broken kernel: the conditionals of xi and phi use b = 2 where the prior has 1/2."""
    return gibbs_update_prior("tpbn", state, w, _HS_MASK, {**_HS_PP, "b": 2.0}, rng)


def _hs_stats(state, w):
    t = np.tanh(w) ** 2
    lz = np.log(state["zeta"])
    return np.concatenate([[np.log(state["omega"])], np.log(state["phi"]),
                           np.log(state["xi"]).ravel(), lz.ravel(), t.ravel(),
                           [np.mean(t * lz)]])


def test_horseshoe_scale_kernel_passes_geweke():
    assert_geweke_passes(_hs_prior, _hs_data, _hs_transition, _hs_stats, n_iter=5_000,
                         rng=np.random.default_rng(11), burn_in=200)


def test_broken_horseshoe_scale_kernel_fails_geweke():
    assert_geweke_fails(_hs_prior, _hs_data, _hs_broken, _hs_stats, n_iter=5_000,
                        rng=np.random.default_rng(11), burn_in=200)
