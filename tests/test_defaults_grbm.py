"""GaussianBernoulliRBM's defaults stay useful (issue 13).

Cheap versions of the targets of ``benchmarks/bench_defaults.py`` (sections
``grbm_digits`` and ``grbm_mixture``): the estimator at its defaults, with only
``n_components`` lowered to 16 so that ``log Z`` is exact (no AIS noise in the
comparison) and the fit takes seconds, against the baseline computed in the same
test. They fail when a change makes the defaults learn nothing (the single
Gaussian with diagonal covariance is what a GRBM that learned no weights is).
"""

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.datasets import load_digits
from sklearn.mixture import GaussianMixture
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skdgm import GaussianBernoulliRBM
from skdgm.grbm import _estimator as grbm_estimator
from skdgm.grbm import _defaults as grbm_defaults
from skdgm.grbm import _train as grbm_train

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _digits(n_train=400, n_test=400, seed=0):
    X, y = load_digits(return_X_y=True)
    Xtr, Xte = train_test_split(X, train_size=n_train, test_size=n_test, random_state=seed,
                                stratify=y)
    rng = np.random.default_rng(seed)
    Xtr = Xtr + rng.random(Xtr.shape)        # dequantise the integer grey levels
    Xte = Xte + rng.random(Xte.shape)
    sc = StandardScaler().fit(Xtr)
    return sc.transform(Xtr), sc.transform(Xte)


def test_defaults_learn_on_digits():
    """The defaults move well past the diagonal Gaussian towards the full-covariance one.

    Every default but the hidden size (16, exact ``log Z``) and the number of
    passes (125 of 4 minibatches, 500 updates; ``"auto"`` would run 6,000 for
    so small a model, see ``test_auto_passes_from_the_work_budget``).
    """
    Xtr, Xte = _digits()
    diag = GaussianMixture(1, covariance_type="diag", random_state=0).fit(Xtr).score(Xte)
    full = GaussianMixture(1, covariance_type="full", random_state=0).fit(Xtr).score(Xte)
    est = GaussianBernoulliRBM(n_components=16, n_iter=125, random_state=0).fit(Xtr)
    ll = est.score(Xte)                        # exact log Z at 16 hidden units
    assert est.negative_phase_ == "noise"
    # A model that learned no weights scores like the diagonal Gaussian; the old
    # defaults (SGD, 10 passes) were within 0.5 nats of it on the full split.
    # Measured: diagonal -91.3, GRBM -79.5, full covariance -75.0 nats.
    assert ll > diag + 10.0, (ll, diag, full)
    assert ll - diag > 0.5 * (full - diag), (ll, diag, full)
    assert np.all(np.isfinite(est.history_["recon_error"]))


@pytest.mark.slow
def test_defaults_find_the_modes_of_the_2d_mixture():
    """The paper's anisotropic mixture: the defaults leave the single-Gaussian saddle.

    All defaults but the hidden size (16, exact ``log Z``): 6,000 updates of the
    annealed phase, about 30 CPU-s, hence ``slow``.
    """
    sys.path.insert(0, str(BENCH))
    try:
        from bench_grbm_gmm import sample_gmm, true_log_density
    finally:
        sys.path.remove(str(BENCH))
    rng = np.random.default_rng(0)
    Xtr, Xte = sample_gmm("anisotropic", 1000, rng), sample_gmm("anisotropic", 1000, rng)
    truth = float(np.mean(true_log_density(Xte, "anisotropic")))
    single = GaussianMixture(1, covariance_type="full", random_state=0).fit(Xtr).score(Xte)
    sc = StandardScaler().fit(Xtr)
    est = GaussianBernoulliRBM(n_components=16, random_state=0).fit(sc.transform(Xtr))
    ll = est.score(sc.transform(Xte)) - float(np.sum(np.log(sc.scale_)))
    assert est.negative_phase_ == "annealed"
    # The single Gaussian (the saddle the old defaults stayed on) is ~2.4 nats
    # below the truth.
    assert ll > single + 1.5, (ll, single, truth)
    assert ll > truth - 1.0, (ll, single, truth)


def test_auto_passes_from_the_work_budget():
    f = grbm_train.auto_passes
    # 1,200 rows x 64 features, 256 hidden, CD-30, batches of 100
    assert f(1200, 64, 100, 30, 256) == 170
    assert f(1000, 2, 100, 30, 64) == 600            # capped at 6,000 updates
    assert f(100_000, 64, 100, 30, 256) == 3         # large data: a few passes
    assert f(2000, 784, 100, 30, 256) == 50          # at least 1,000 updates
    assert f(10, 3, 100, 30, 256) == 6000            # one minibatch per pass
    X = np.random.default_rng(0).normal(size=(30, 3))
    est = GaussianBernoulliRBM(n_components=2, cd_steps=2, batch_size=10,
                               random_state=0).fit(X)
    assert est.n_iter_ == f(30, 3, 10, 2, 2)
    assert len(est.history_["time"]) == est.n_iter_


def _resolved_cap(n_rows, n_features=652):
    """``fit``'s passes at the defaults on ``n_rows`` rows of MNIST's 652 pixels, without
    the fit: the early-stopping switch and split of ``"auto"``, then the resolver."""
    from skdgm._core.stopping import early_stopping_on
    from skdgm.grbm._defaults import resolve_fit_passes

    est = GaussianBernoulliRBM()
    on = early_stopping_on(est, n_rows)
    n_train = n_rows - int(np.ceil(est.validation_fraction * n_rows)) if on else n_rows
    passes = resolve_fit_passes(est.n_iter, (n_train, n_features), est.batch_size,
                                est.cd_steps, est.n_components, early_stopping=on)
    return passes, passes * -(-n_train // est.batch_size)


def test_auto_cap_from_1k_to_a_million_rows():
    # 1,000 rows: no held-out slice, the fixed rule's 1,000 updates (100 passes of 10);
    # 10,000: six times the 12-pass rule (72 passes of 90 minibatches). Above 10,000
    # training rows the large-data floor (measured on 60,000 MNIST rows,
    # paper_grbm_mnist_fit_floor.txt): at least 48 passes or 1.1 x 24 x the fixed
    # rule's 1,000 updates, whichever is fewer.
    assert _resolved_cap(1000) == (100, 1000)
    assert _resolved_cap(10_000) == (72, 6480)
    assert _resolved_cap(12_000) == (60, 6480)      # six times the rule is above 48
    assert _resolved_cap(60_000) == (48, 25_920)
    assert _resolved_cap(60_000, n_features=662) == (48, 25_920)   # the paper row's
    assert _resolved_cap(100_000) == (30, 27_000)
    assert _resolved_cap(1_000_000) == (3, 27_000)


def test_auto_cap_with_the_floor_off(monkeypatch):
    # Without the floor, from about 15,000 rows the cap holds about 1.1 x 6 x 1,000
    # updates: 12 passes at 60,000 rows, 8 at 100,000 (six times the fixed rule's
    # 2-pass floor would be 12), and the fixed rule's 2 at a million.
    monkeypatch.setattr(grbm_defaults, "AUTO_CAP_FLOOR_PASSES", 0)
    assert _resolved_cap(1000) == (100, 1000)
    assert _resolved_cap(10_000) == (72, 6480)
    assert _resolved_cap(60_000) == (12, 6480)
    assert _resolved_cap(100_000) == (8, 7200)
    assert _resolved_cap(1_000_000) == (2, 18_000)


def test_auto_cap_in_a_fit_sets_n_iter_and_the_stopped_line(monkeypatch, capsys):
    # A tiny fit in the large-data regime: 20 updates a fixed rule (patched), 36
    # minibatches of 10 per pass, so the fixed rule is its 2-pass floor; six times it
    # would be 12 passes, the update cap ceil(1.1 * 6 * 20 / 36) = 4.
    monkeypatch.setattr(grbm_train, "_MIN_UPDATES", 20)
    monkeypatch.setattr(grbm_train, "_MAX_UPDATES", 20)
    X = np.random.default_rng(0).normal(size=(400, 3))
    # the trend is first read at pass 20, so a 4-pass cap ends the run unjudged: it
    # warns (not converged by the rule) without claiming that the score still rose
    with pytest.warns(ConvergenceWarning, match="cap of 4 passes while the held-out "
                      "score's trend is read from pass 20 on, so whether it still "
                      "rose was not judged"):
        est = GaussianBernoulliRBM(n_components=2, cd_steps=2, batch_size=10,
                                   early_stopping=True, verbose=1, random_state=0).fit(X)
    assert est.n_iter_ == 4 and len(est.validation_scores_) == 4
    assert est._lr_total == 4 * 36          # the cosine schedule spans the cap
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1] == ("[GaussianBernoulliRBM] stopped: reached the cap of 4 passes "
                         "before its trend could be read (from pass 20)")


def test_auto_cap_floor_in_a_fit_sets_n_iter_and_the_schedule(monkeypatch):
    # The same tiny fit with the large-data floor on (48 passes) and its threshold
    # lowered below the 360 training rows: the floor (48 passes, or 1.1 x 24 x 20 = 528 updates = 15
    # passes of 36, the fewer) lifts the cap of 4, and the cosine schedule spans it.
    from skdgm._core import stopping

    monkeypatch.setattr(grbm_train, "_MIN_UPDATES", 20)
    monkeypatch.setattr(grbm_train, "_MAX_UPDATES", 20)
    monkeypatch.setattr(stopping, "AUTO_CAP_FLOOR_MIN_ROWS", 100)
    monkeypatch.setattr(grbm_defaults, "AUTO_CAP_FLOOR_PASSES", 48)
    X = np.random.default_rng(0).normal(size=(400, 3))
    with pytest.warns(ConvergenceWarning, match="cap of 15 passes while the held-out"):
        est = GaussianBernoulliRBM(n_components=2, cd_steps=2, batch_size=10,
                                   early_stopping=True, random_state=0).fit(X)
    assert est.n_iter_ == 15 and len(est.validation_scores_) == 15
    assert est._lr_total == 15 * 36


def test_negative_phase_auto_resolves_from_the_features():
    X2 = np.random.default_rng(0).normal(size=(20, 2))
    X20 = np.random.default_rng(0).normal(size=(20, 20))
    kw = dict(n_components=2, cd_steps=2, n_iter=1, random_state=0)
    assert GaussianBernoulliRBM(**kw).fit(X2).negative_phase_ == "annealed"
    assert GaussianBernoulliRBM(**kw).fit(X20).negative_phase_ == "noise"
    # annealing needs burn_in=0; with a burn-in "auto" keeps the noise phase
    assert GaussianBernoulliRBM(**kw, burn_in=1).fit(X2).negative_phase_ == "noise"
    assert GaussianBernoulliRBM(**kw, negative_phase="noise").fit(X2).negative_phase_ == "noise"


@pytest.mark.parametrize("phase", ["noise", "annealed"])
def test_verbose_prints_finite_named_figures_and_time_left(phase, capsys):
    X = np.random.default_rng(0).normal(size=(40, 3))
    est = GaussianBernoulliRBM(n_components=4, cd_steps=3, n_iter=3, batch_size=20,
                               negative_phase=phase, verbose=1, random_state=0).fit(X)
    lines = capsys.readouterr().out.strip().splitlines()
    # one line per pass, then why the fit stopped
    assert len(lines) == 4 and lines.pop() == "[GaussianBernoulliRBM] stopped: fixed n_iter=3"
    for i, line in enumerate(lines, 1):
        assert line.startswith(f"[GaussianBernoulliRBM] pass {i}/3, ")
        assert "nan" not in line.lower()
        assert "recon_error = " in line and "time = " in line and "left ~ " in line
        assert ("train_loglik_ais = " in line) == (phase == "annealed")
        assert "acceptance_rate" not in line        # not adjusted: undefined
    for key, values in est.history_.items():
        assert len(values) == 3 and np.all(np.isfinite(values)), key
    if phase == "annealed":
        # the AIS progress figure tracks the exact training log-likelihood (log Z
        # exact at 4 hidden units) within the noise of 20 runs at 3 temperatures
        exact = est.score(X)
        assert abs(est.history_["train_loglik_ais"][-1] - exact) < 5.0
    # partial_fit: no total, so no estimate of the time left
    est.partial_fit(X)
    line = capsys.readouterr().out.strip()
    assert line.startswith("[GaussianBernoulliRBM] pass 4, ") and "left" not in line


def test_history_is_capped(monkeypatch):
    monkeypatch.setattr(grbm_estimator, "_MAX_HISTORY", 5)
    X = np.random.default_rng(0).normal(size=(10, 2))
    est = GaussianBernoulliRBM(n_components=2, cd_steps=2, n_iter=3, random_state=0).fit(X)
    for _ in range(6):
        est.partial_fit(X)
    assert est.n_iter_ == 9
    assert all(len(v) == 5 for v in est.history_.values())


def test_verbose_line_has_no_nan_for_adjusted_chains(capsys):
    X = np.random.default_rng(0).normal(size=(40, 3))
    GaussianBernoulliRBM(n_components=4, cd_steps=4, n_iter=2, sampler="gibbs_langevin",
                         metropolis_adjust=True, negative_phase="noise", verbose=1,
                         random_state=0).fit(X)
    out = capsys.readouterr().out
    assert re.search(r"acceptance_rate = [0-9.]+", out)
    assert "nan" not in out.lower() and "negative_ess" not in out


def test_the_held_out_figure_anneals_longer_on_large_data(monkeypatch):
    # 300 temperatures up to 1,000 held-out rows (every fit of at most 10,000 rows at
    # validation_fraction=0.1 reads the figure it did), then half a temperature per
    # further row, at most 3,000: 60,000 MNIST rows hold out 6,000 and anneal 2,800
    assert [grbm_defaults.validation_betas(n) for n in (1, 1000, 1001, 2000, 6000, 6400,
                                                        10**6)] == [300, 300, 300, 800,
                                                                    2800, 3000, 3000]
    est = GaussianBernoulliRBM(n_components=20, n_iter=1, batch_size=50,
                               random_state=0).fit(np.random.default_rng(0).normal(size=(100, 3)))
    seen = []

    def spy(params, **kw):
        seen.append(kw["n_betas"])
        return 0.0, 0.0

    monkeypatch.setattr(grbm_estimator, "log_partition_estimate", spy)
    for n in (900, 2000):
        X_val = np.random.default_rng(1).normal(size=(n, 3))
        assert est._validation_score(X_val) == -np.median(est.free_energy(X_val))
    assert seen == [300, 800]
