"""``n_iter="auto"`` runs until converged: the plateau rule of ``skdgm._core.stopping``
and how each wing applies it (issue 25)."""

import re

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skdgm import BayesianSBN, DBMCAST, DeepLDA, GaussianBernoulliRBM
from skdgm._core import stopping
from skdgm._core.stopping import TREND_Z, BurnInStop, EarlyStopping, Plateau, Trend


def first_plateau(scores, tol, patience, start=1):
    """The 1-based pass at which the rule fires, from pass ``start`` on (a plain replay)."""
    best, stale = -np.inf, 0
    for i, s in enumerate(scores, 1):
        if not np.isfinite(best) or s > best + tol * abs(best):
            stale = 0
        else:
            stale += 1
        best = max(best, s)
        if stale >= patience and i >= start:
            return i
    return None


# ---------------------------------------------------------------- the rule itself
def test_plateau_counts_passes_without_relative_progress():
    p = Plateau(tol=0.01, patience=2)
    # -100 -> -99.5: +0.5 < 0.01 * 100 = 1, no progress; -98.4 is +1.1 over the best
    # (-99.5), more than 0.995, progress; then two passes without it (+0.4, +0.1)
    out = [p.update(s) for s in (-100.0, -99.5, -98.4, -98.0, -97.9)]
    assert out == [False, False, False, False, True]
    assert p.best == -97.9 and p.best_pass == 5 and p.stale == 2


def test_plateau_is_relative():
    # the same absolute gain is progress on a small scale, none on a large one
    small, large = Plateau(tol=1e-3, patience=1), Plateau(tol=1e-3, patience=1)
    small.update(-1.0)
    large.update(-1000.0)
    assert not small.update(-0.99)      # +0.01 > 0.001
    assert large.update(-999.99)        # +0.01 < 1.0


def test_plateau_replay_agrees():
    rng = np.random.default_rng(0)
    scores = np.cumsum(rng.normal(0.2, 1.0, 200)) - 500
    p = Plateau(tol=1e-3, patience=4)
    fired = next(i for i, s in enumerate(scores, 1) if p.update(s))
    assert fired == first_plateau(scores, 1e-3, 4)


def first_trend_stop(scores, tol=1e-4, patience=10):
    rule = Trend(tol, patience)
    return next((i for i, s in enumerate(scores, 1) if rule.update(s)), None)


def test_trend_slope_is_the_least_squares_fit():
    from scipy.stats import linregress

    y = np.random.default_rng(3).normal(size=40) + 0.2 * np.arange(40)
    fit = linregress(np.arange(40), y)
    assert stopping._slope(y) == pytest.approx((fit.slope, fit.stderr), rel=1e-12)


def test_trend_stops_a_noisy_plateau_within_a_bounded_number_of_passes():
    # a flat figure with noise sd 1 (the DBM's bound jumps by about that): the slope
    # over the window is N(0, se), so each reading is flat with probability at least
    # Phi(TREND_Z) = 0.69 and a run of 10 comes soon. Never before 3 * 10 - 1
    # passes (first reading after 20, then 10 flat readings in a row); 50 seeds
    # all stop by 8 * 10 (simulated: 99 % by 62).
    stops = [first_trend_stop(-700 + np.random.default_rng(seed).normal(size=400))
             for seed in range(50)]
    assert None not in stops
    assert min(stops) >= 29 and max(stops) <= 80


def test_trend_keeps_training_a_noisy_rise():
    # rising by 0.1 per pass under noise sd 1: over the shortest window (20 passes)
    # the slope is 0.1 / se = 0.1 * sqrt(665) = 2.6 standard errors, far above
    # tol * |mean| (0.01) + TREND_Z standard errors, and the window then grows: no
    # seed stops in 300 passes, whereas the plateau rule (best + tol, 10 passes)
    # stops every one of them early
    for seed in range(50):
        y = -100 + 0.1 * np.arange(300) + np.random.default_rng(seed).normal(size=300)
        assert first_trend_stop(y) is None
        assert first_plateau(y, 1e-4, 10) is not None


def test_trend_stops_when_the_figure_turns_down_and_keeps_the_smoothed_best():
    # noiseless: rises by 1 per pass to pass 30, then falls by 1 per pass. The
    # window (last half, at least 20 passes) first fits a slope below tol * |mean|
    # at pass 40 (passes 21-40, nearly symmetric about the top); ten flat passes
    # in a row end the run at pass 49. The smoothed best (mean of the last 10)
    # first peaks with passes 25-34, around the top.
    y = -100.0 + np.minimum(np.arange(1, 61), 60 - np.arange(1, 61))
    rule = Trend(1e-4, 10)
    fired = next(i for i, s in enumerate(y, 1) if rule.update(s))
    assert fired == 49 and rule.best_pass == 34
    assert rule.best == pytest.approx(np.mean(y[24:34]))
    assert rule.reason().startswith("converged: trend -")
    assert f"+ {TREND_Z:g} s.e. for 10 passes" in rule.reason()


class _Fake:
    """Scripted figures for BurnInStop, recording when burn-in ended."""

    verbose = 0

    def __init__(self, scores):
        self.scores, self.i, self.ended, self.history_ = list(scores), 0, [], {}

    def pass_(self):
        self.history_.setdefault("fig", []).append(self.scores[self.i])
        self.i += 1

    def _end_burn_in(self, ctx, burn_in):
        self.ended.append(burn_in)


def _drive(stopper, est, cap=1000):
    for n in range(1, cap + 1):
        est.pass_()
        if stopper.after_pass(est):
            break
    stopper.finish(est)
    return n


@pytest.mark.parametrize("min_burn, expected_burn", [(1, 5), (8, 8)])
def test_burn_in_ends_at_the_plateau_not_before_min_burn(min_burn, expected_burn):
    # rises for three passes, then flat: the rule fires at pass 3 + 2 = 5
    scores = [-10, -9, -8] + [-8] * 30
    est = _Fake(scores)
    stopper = BurnInStop(tol=1e-3, patience=2, min_burn=min_burn, max_burn=20,
                         collect=lambda b: b // 2, figure=lambda e: e.history_["fig"][-1])
    n = _drive(stopper, est)
    assert est.ended == [expected_burn]
    assert n == expected_burn + expected_burn // 2
    assert est.stopping_reason_.startswith(f"burn-in ended after {expected_burn} passes")


def test_burn_in_is_capped():
    est = _Fake(np.arange(100.0))                   # always improving
    stopper = BurnInStop(tol=1e-3, patience=2, min_burn=2, max_burn=6,
                         collect=lambda b: 3, figure=lambda e: e.history_["fig"][-1])
    assert stopper.max_passes() == 9
    assert _drive(stopper, est) == 9 and est.ended == [6]
    assert "the cap of 6 burn-in passes" in est.stopping_reason_


# ------------------------------------------------ GRBM and DBM: early stopping "auto"
def _dbm(**kw):
    return DBMCAST(**{**dict(n_components=(4, 3), n_chains=8, batch_size=20,
                             pretrain_n_iter=1, n_temperatures=4, beta_min=0.6,
                             swap_interval=3, random_state=0), **kw})


def _grbm(**kw):
    return GaussianBernoulliRBM(**{**dict(n_components=4, cd_steps=3, batch_size=20,
                                          random_state=0), **kw})


def _data(name, n=120, d=6):
    rng = np.random.default_rng(0)
    return ((rng.random((n, d)) < 0.3).astype(float) if name == "DBMCAST"
            else rng.normal(size=(n, d)))


@pytest.mark.parametrize("n_rows, n_iter, on", [(4999, "auto", False), (5000, "auto", True),
                                                (5000, 12, False)])
def test_auto_early_stopping_needs_auto_and_enough_rows(n_rows, n_iter, on):
    est = _dbm(n_iter=n_iter)
    assert est.early_stopping == "auto"
    assert stopping.early_stopping_on(est, n_rows) is on
    X = np.zeros((n_rows, 2))
    assert (EarlyStopping.from_estimator(est, X) is not None) is on


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("make", [_dbm, _grbm], ids=["DBMCAST", "GaussianBernoulliRBM"])
def test_auto_stops_on_the_validation_plateau(make, monkeypatch, capsys):
    monkeypatch.setattr(stopping, "AUTO_VALIDATION_MIN_ROWS", 100)
    name = make.__name__
    X = _data("DBMCAST" if name == "_dbm" else "GRBM")
    # with a huge tol every pass the trend is read on is flat: the first reading
    # comes after 2 n_iter_no_change passes, the stop n_iter_no_change - 1 later
    est = make(tol=1e9, n_iter_no_change=2, verbose=1).fit(X)
    assert est.n_iter_ == 5 and len(est.validation_scores_) == 5
    assert re.search(r"stopped: converged: trend [-+][0-9.e+-]+ \+/- [0-9.e+-]+ per pass "
                     r"over the last 4 passes, not above tol=1e\+09 \(relative\) \+ 0.5 "
                     r"s.e. for 2 passes", capsys.readouterr().out)
    # below the threshold "auto" trains the fixed rule's passes on every row
    monkeypatch.setattr(stopping, "AUTO_VALIDATION_MIN_ROWS", 10**6)
    est = make(n_iter=4, tol=1e9, n_iter_no_change=2).fit(X)
    assert est.n_iter_ == 4 and not hasattr(est, "validation_scores_")


@pytest.mark.filterwarnings("ignore")
def test_auto_cap_is_a_multiple_of_the_fixed_rule(monkeypatch):
    from skdgm.dbm._defaults import AUTO_EARLY_STOPPING_FACTOR, AUTO_MIN_PASSES, AUTO_UPDATES
    from skdgm.dbm._defaults import auto_passes

    monkeypatch.setattr(stopping, "AUTO_VALIDATION_MIN_ROWS", 100)
    X = _data("DBMCAST")
    est = _dbm(batch_size=60, tol=1e9, n_iter_no_change=10**6)
    stopper = est._stopper(X)
    n_train = len(stopper.rows)
    assert est._resolve_n_iter(n_train) == max(AUTO_MIN_PASSES, AUTO_EARLY_STOPPING_FACTOR
                                               * auto_passes(n_train, 60, AUTO_UPDATES))


def test_auto_cap_multiplies_the_fixed_rules_updates_not_its_minimum_passes():
    from skdgm.dbm._defaults import AUTO_EARLY_STOPPING_FACTOR, resolve_fit_passes

    def passes(n, capped):
        return resolve_fit_passes("auto", n, 100, early_stopping=capped)

    assert AUTO_EARLY_STOPPING_FACTOR == 8
    # 10,000 MNIST rows less the held-out tenth: 90 updates a pass, 27 passes by the
    # fixed rule, 216 as the cap (the measured default of issue 25)
    assert passes(9_000, False) == 27
    assert passes(9_000, True) == 216
    # 100,000 rows: the fixed rule is its 5-pass minimum (3 passes give the 2,400
    # updates); the cap holds 1.1 x 8 x 2,400 updates, 24 passes, not 8 x 5
    assert passes(90_000, False) == 5
    assert passes(90_000, True) == 24
    # a pass of more than 2,400 updates: the cap is the fixed rule's 5 passes
    assert passes(10**7, False) == 5
    assert passes(10**7, True) == 5


def _cap_by_search(n_samples, batch_size, n_updates, min_passes, factor):
    """``auto_cap`` by its definition: the fewest passes, from the fixed rule's, that
    hold ``1.1 factor n_updates`` updates, but at most ``factor`` times the fixed rule."""
    per_pass = -(-n_samples // batch_size)
    fixed = max(min_passes, -(-n_updates // per_pass))
    passes = fixed
    while passes * per_pass < 1.1 * factor * n_updates - 1e-9:
        passes += 1
    return min(factor * fixed, passes)


@pytest.mark.parametrize("n_samples", [50, 900, 9000, 20_000, 45_000, 90_000, 250_000,
                                       900_000, 9_000_000])
@pytest.mark.parametrize("n_updates, min_passes", [(1000, 2), (2400, 5), (6000, 2)])
def test_auto_cap_counts_updates_on_large_data(n_samples, n_updates, min_passes):
    batch, factor = 100, 6
    per_pass = -(-n_samples // batch)
    fixed = stopping.auto_passes(n_samples, batch, n_updates, min_passes)
    cap = stopping.auto_cap(n_samples, batch, n_updates, min_passes=min_passes,
                            factor=factor)
    assert stopping.auto_cap(n_samples, batch, n_updates, min_passes=min_passes) == fixed
    assert cap == _cap_by_search(n_samples, batch, n_updates, min_passes, factor)
    assert fixed <= cap <= factor * fixed
    # the cap's updates level off: at most one pass over 1.1 factor n_updates, unless
    # the fixed rule alone (whole passes, at least min_passes) is more
    assert cap * per_pass <= max(fixed * per_pass, 1.1 * factor * n_updates + per_pass)


def test_auto_cap_of_both_optimisers_at_10k_and_100k_rows():
    from skdgm.dbm._defaults import resolve_fit_passes as dbm_passes
    from skdgm.grbm._defaults import resolve_fit_passes as grbm_passes

    # the training rows of 10,000 / 100,000 after the 10 % validation slice; at
    # 100,000 the GRBM's large-data floor (1.1 x 24 x its 1,000 updates: 30 passes)
    for n_train, dbm, grbm in [(9000, 216, 72), (90_000, 24, 30)]:
        assert dbm_passes("auto", n_train, 100, early_stopping=True) == dbm
        # MNIST for the GRBM: 652 pixels, the defaults' 256 units, CD-30
        assert grbm_passes("auto", (n_train, 652), 100, 30, 256, early_stopping=True) == grbm
    # the fixed rules and an integer n_iter are untouched
    assert dbm_passes("auto", 90_000, 100, early_stopping=False) == 5
    assert grbm_passes("auto", (90_000, 652), 100, 30, 256, early_stopping=False) == 2
    assert dbm_passes(7, 90_000, 100, early_stopping=True) == 7


def _floored_cap_by_search(n_samples, batch_size, n_updates, min_passes, factor,
                           floor_passes, floor_factor):
    """``auto_cap`` with a floor by its definition: above 10,000 rows the cap is at
    least ``floor_passes`` passes, or the fewest that hold ``1.1 floor_factor
    n_updates`` updates if those are fewer."""
    cap = _cap_by_search(n_samples, batch_size, n_updates, min_passes, factor)
    if n_samples <= 10_000:
        return cap
    per_pass = -(-n_samples // batch_size)
    floor = 1
    while floor * per_pass < 1.1 * floor_factor * n_updates - 1e-9:
        floor += 1
    return max(cap, min(floor_passes, floor))


@pytest.mark.parametrize("n_samples", [50, 900, 9000, 10_000, 10_001, 20_000, 45_000,
                                       54_000, 90_000, 250_000, 900_000, 9_000_000])
@pytest.mark.parametrize("batch_size", [10, 100])
@pytest.mark.parametrize("n_updates, min_passes", [(1000, 2), (2400, 5), (6000, 2)])
def test_auto_cap_floor_on_large_data(n_samples, batch_size, n_updates, min_passes):
    kw = dict(min_passes=min_passes, factor=6)
    plain = stopping.auto_cap(n_samples, batch_size, n_updates, **kw)
    cap = stopping.auto_cap(n_samples, batch_size, n_updates, floor_passes=48,
                            floor_factor=24, **kw)
    assert cap == _floored_cap_by_search(n_samples, batch_size, n_updates, min_passes,
                                         6, 48, 24)
    assert cap >= plain
    if n_samples <= stopping.AUTO_CAP_FLOOR_MIN_ROWS:
        assert cap == plain          # at most 10,000 training rows: as before the floor
    # the floor's updates level off with the rows: at most one pass over 1.1 x 24 x
    # n_updates, unless the cap without the floor is already more
    per_pass = -(-n_samples // batch_size)
    assert cap * per_pass <= max(plain * per_pass, 1.1 * 24 * n_updates + per_pass)
    # the fixed rule (factor 1) has no floor
    assert stopping.auto_cap(n_samples, batch_size, n_updates, min_passes=min_passes,
                             floor_passes=48, floor_factor=24) == \
        stopping.auto_passes(n_samples, batch_size, n_updates, min_passes)


def test_dbm_cap_has_no_floor():
    from skdgm.dbm._defaults import resolve_fit_passes

    # DBMCAST keeps the caps it had (a large-data floor is not measured for it): the
    # update budget's 24 passes at 90,000 training rows, 5 at ten million
    assert [resolve_fit_passes("auto", n, 100, early_stopping=True)
            for n in (9000, 54_000, 90_000, 10**7)] == [216, 40, 24, 5]


# ----------------------------------------------- the posterior samplers: BurnInStop
@pytest.fixture(scope="module")
def sbn_fit():
    X = (np.random.default_rng(1).random((60, 8)) < 0.3).astype(float)
    return BayesianSBN(n_components=3, n_posterior_samples=4, random_state=0).fit(X)


def test_sbn_burn_in_ends_where_the_log_joint_plateaus(sbn_fit):
    from skdgm.sbn._defaults import AUTO_PATIENCE, AUTO_TOL, auto_plateau_plan

    est = sbn_fit
    min_burn, max_burn, collect = auto_plateau_plan(60, "gibbs")
    assert (min_burn, collect) == (80, 120)     # the fixed rule's 40 % / 60 % of 200
    lj = est.history_["log_joint"]
    assert len(lj) == est.n_iter_ == est.burn_in_ + collect
    fired = first_plateau(lj[:est.burn_in_], AUTO_TOL, AUTO_PATIENCE, start=min_burn)
    assert est.burn_in_ == (fired if fired is not None else max_burn)
    assert len(est.posterior_samples_) == 4


def test_sbn_collects_only_after_burn_in(sbn_fit):
    # the kept samples are the chain's draws after burn_in_: the same estimator with
    # the resolved burn-in and passes fixed makes the same draws
    est = sbn_fit
    X = (np.random.default_rng(1).random((60, 8)) < 0.3).astype(float)
    fixed = BayesianSBN(n_components=3, n_posterior_samples=4, random_state=0,
                        n_iter=est.n_iter_, burn_in=est.burn_in_).fit(X)
    for a, b in zip(est.posterior_samples_, fixed.posterior_samples_):
        for wa, wb in zip(a.weights, b.weights):
            np.testing.assert_array_equal(wa, wb)


def test_sbn_fixed_n_iter_keeps_the_fixed_rule(sbn_fit):
    X = (np.random.default_rng(1).random((40, 8)) < 0.3).astype(float)
    est = BayesianSBN(n_components=3, n_iter=10, random_state=0).fit(X)
    assert est.n_iter_ == 10 and est.burn_in_ == 4
    assert est.stopping_reason_ == "fixed n_iter=10"
    # a refit with a fixed n_iter replaces the reason of an earlier auto fit
    import copy
    refit = copy.deepcopy(sbn_fit).set_params(n_iter=10).fit(X)
    assert sbn_fit.stopping_reason_.startswith("burn-in ended")
    assert refit.stopping_reason_ == "fixed n_iter=10"


@pytest.mark.filterwarnings("ignore")
def test_deep_lda_burns_in_on_held_out_perplexity(monkeypatch, capsys):
    from skdgm.deep_lda._defaults import AUTO_PATIENCE, AUTO_TOL, resolve_n_iter

    monkeypatch.setattr(stopping, "AUTO_VALIDATION_MIN_ROWS", 100)
    X = np.random.default_rng(0).poisson(0.5, (200, 20))
    est = DeepLDA(n_components=(3,), batch_size=50, random_state=0, verbose=1).fit(X)
    out = capsys.readouterr().out
    scores = est.validation_scores_           # 10 held-out documents (5 %)
    burn = len(scores)
    floor = resolve_n_iter("auto", "tlasgr", 190, 50)
    fired = first_plateau(scores, AUTO_TOL, AUTO_PATIENCE, start=floor)
    assert burn == (fired if fired is not None else 4 * floor)
    # 190 documents in minibatches of 50: 4 updates a pass, two passes refill the 5
    # kept samples
    assert est.n_iter_ == burn + 2
    assert f"stopped: burn-in ended after {burn} passes" in out
    # deterministic for an int seed, held-out figure included
    again = DeepLDA(n_components=(3,), batch_size=50, random_state=0).fit(X)
    assert again.validation_scores_ == scores
    np.testing.assert_array_equal(again.topics_[0], est.topics_[0])


@pytest.mark.filterwarnings("ignore")
def test_deep_lda_held_out_figure_averages_the_kept_samples(monkeypatch):
    # the final perplexity averages the predictive over the kept samples; the
    # burn-in figure must too (the latest sample alone flattens while the averaged
    # figure still falls: +2.98 % against 4x on 20 News, issue 25)
    from skdgm._core.random import seed_for
    from skdgm.deep_lda._defaults import validation_docs

    monkeypatch.setattr(stopping, "AUTO_VALIDATION_MIN_ROWS", 100)
    X = np.random.default_rng(1).poisson(0.5, (200, 20))
    est = DeepLDA(n_components=(3,), batch_size=50, random_state=0).fit(X)
    assert len(est.posterior_samples_) == est.n_posterior_samples == 5
    Xv = est._check_X(X[:10], reset=False)
    obs, held = est._split(Xv)
    score = est._validation_score(Xv)
    # common random numbers: the same local streams at every pass (the kept seed
    # is copied, not spawned from), so a second reading is identical
    assert est._validation_score(Xv) == score
    args = dict(n_burn=int(est.local_burn_in), n_collect=int(est.local_samples))
    ll, cnt = est._heldout_loglik(obs, held, point=False, seed=seed_for(est._val_seed), **args)
    assert score == pytest.approx(ll.sum() / cnt.sum(), rel=1e-12)
    ll1, cnt1 = est._heldout_loglik(obs, held, point=True, seed=seed_for(est._val_seed), **args)
    assert abs(ll1.sum() / cnt1.sum() - ll.sum() / cnt.sum()) > 1e-6
    # 5 % of the corpus, at most 1,000 documents
    assert validation_docs(11_284, "tlasgr") == 565
    assert validation_docs(40_000, "tlasgr") == 1000
    assert validation_docs(40_000, "gibbs") == 0


def test_deep_lda_small_data_keep_the_fixed_rule():
    from skdgm.deep_lda._defaults import resolve_n_iter

    X = np.random.default_rng(0).poisson(0.5, (60, 20))
    est = DeepLDA(n_components=(3,), batch_size=20, random_state=0).fit(X)
    assert not hasattr(est, "validation_scores_")
    assert est.n_iter_ == resolve_n_iter("auto", "tlasgr", 60, 20) == 10
    assert est.stopping_reason_ == "n_iter='auto' ran its fixed rule of 10 passes"


@pytest.mark.filterwarnings("ignore")
def test_early_stopping_names_the_cap_when_it_never_fired():
    X = _data("DBMCAST")
    est = _dbm(n_iter=3, early_stopping=True, n_iter_no_change=50).fit(X)
    assert est.n_iter_ == 3
    # the passes since the last relative progress, replayed from the scores
    s, best, stale = est.validation_scores_, -np.inf, 0
    for v in s:
        stale = 0 if not np.isfinite(best) or v > best + 1e-4 * abs(best) else stale + 1
        best = max(best, v)
    how = "while still improving" if stale == 0 else f"after {stale} passes without progress"
    assert est.stopping_reason_ == f"reached the cap of 3 passes {how}"
    # refitting until the plateau replaces the reason of the earlier fit
    est.set_params(tol=1e9, n_iter_no_change=1).fit(X)
    assert est.n_iter_ == 2 and est.stopping_reason_.startswith("no improvement")


_FIXED = {
    "GaussianBernoulliRBM": lambda: _grbm(n_iter=2),
    "DBMCAST": lambda: _dbm(n_iter=2),
    "BayesianSBN": lambda: BayesianSBN(n_components=3, n_iter=2, random_state=0),
    "DeepLDA": lambda: DeepLDA(n_components=(3,), batch_size=20, n_iter=2, random_state=0),
}


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", sorted(_FIXED))
def test_every_fit_says_why_it_stopped(name, capsys):
    X = (np.random.default_rng(0).poisson(0.5, (60, 8)) if name == "DeepLDA"
         else _data("DBMCAST" if name in ("DBMCAST", "BayesianSBN") else "GRBM", n=60))
    est = _FIXED[name]().set_params(verbose=1).fit(X)
    assert est.stopping_reason_ == "fixed n_iter=2"
    assert f"[{name}] stopped: fixed n_iter=2" in capsys.readouterr().out


class _Scripted:
    """An estimator stand-in whose held-out figure is scripted, for EarlyStopping."""

    verbose, n_iter = 0, "auto"

    def __init__(self, scores):
        self.scores, self.i, self.history_ = list(scores), 0, {}

    def _validation_score(self, X_val):
        self.i += 1
        return self.scores[self.i - 1]

    def _early_stopping_state(self):
        return {"i_kept": self.i}


@pytest.mark.parametrize("b, a, weak", [(0.05, 1.0, True), (0.08, 0.5, False)])
def test_trend_cap_claims_a_rise_only_when_it_is_measured(b, a, weak):
    # A rise of b a pass under a repeating wiggle of size a: each pass from 20 to 25
    # reads "not flat" (slope above half a standard error), so the cap ends the run
    # unconverged either way; the message calls it a rise only when the slope is
    # above SIGNIFICANT_Z standard errors (b=0.08, a=0.5), and otherwise says the
    # trend had not flattened (b=0.05, a=1: about 1.5-2 s.e.)
    i = np.arange(25)
    scores = -100.0 + b * i + a * np.where(i % 3 == 0, 1.0, -0.5)
    for t in range(20, 26):
        slope, se = stopping._slope(scores[:t][-20:])
        assert slope > 0.5 * se + 1e-4 * 100 and (slope < 2 * se) == weak
    est = _Scripted(scores)
    stopper = EarlyStopping(None, None, tol=1e-4, patience=10, trend=True)
    assert not any(stopper.after_pass(est) for _ in range(25))
    est.n_iter_ = 25
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stopper.finish(est)
    conv = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(conv) == 1
    if weak:
        assert est.stopping_reason_.startswith(
            "reached the cap of 25 passes before its trend flattened (trend +0.05")
        assert "trend had not flattened (trend" in conv[0]
        assert "within 2 standard errors of flat" in conv[0]
        assert "still improving" not in conv[0] + est.stopping_reason_
    else:
        assert est.stopping_reason_.startswith(
            "reached the cap of 25 passes while still improving (trend +0.08")
        assert "the held-out score was still improving (trend +0.08" in conv[0]


@pytest.mark.parametrize("slope", [1.0, -1.0])
def test_trend_cap_says_whether_the_figure_still_rose(slope):
    # noiseless lines, cap 25 passes: the trend is first read at pass 20. A rise
    # never reads flat; a fall reads flat at passes 20-25, six in a row, short of
    # patience 10 when the cap comes
    est = _Scripted(-100.0 + slope * np.arange(25))
    stopper = EarlyStopping(None, None, tol=1e-4, patience=10, trend=True)
    fired = [stopper.after_pass(est) for _ in range(25)]
    est.n_iter_ = 25
    # a model still improving at the cap is not converged: a ConvergenceWarning says
    # so (as MLPClassifier at max_iter); a flat or falling one stops silently
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stopper.finish(est)
    conv = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    if slope > 0:
        assert len(conv) == 1 and "cap of 25 passes while the held-out score was " \
            "still improving (trend +1 +/- 0" in str(conv[0].message)
    else:
        assert conv == []
    assert not any(fired)
    how = "while still improving" if slope > 0 else "after 6 passes without progress"
    assert est.stopping_reason_ == (
        f"reached the cap of 25 passes {how} (trend {slope:+.3g} +/- 0 per pass over the "
        f"last 20 passes)")
    # the parameters kept end the best mean of 10 figures: the last pass's on a
    # rise (nothing to restore), the first pass's on a fall
    if slope > 0:
        assert not hasattr(est, "i_kept") and stopper.best_pass == 25
    else:
        assert est.i_kept == 1 and stopper.best_pass == 1
