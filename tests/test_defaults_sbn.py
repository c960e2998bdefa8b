"""BayesianSBN's defaults stay useful (issue 13): a cheap version of the benchmark target.

``benchmarks/bench_defaults.py --only sbn_digits`` is the full target (1,200 training
digits, within 0.5 nats of BernoulliRBM(16), well under 60 CPU-s). Here a smaller subset
with the same binarisation (pixels > 7 -> 1) must still show the defaults learning: the
test log-likelihood, exact because the automatic width is enumerable, beats independent
pixels fitted in the test by a margin.
"""

import re

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from skdgm import BayesianSBN
from skdgm._core.exact import MAX_EXACT_UNITS
from skdgm.sbn import _model


def _digits(n_train=600, n_test=200):
    X, y = load_digits(return_X_y=True)
    X = (X > 7).astype(np.float64)
    Xtr, Xte = train_test_split(X, train_size=n_train, test_size=n_test, random_state=0,
                                stratify=y)
    return Xtr, Xte


def _independent_loglik(Xtr, Xte):
    p = np.clip(Xtr.mean(axis=0), 1e-3, 1 - 1e-3)
    return Xte @ np.log(p) + (1 - Xte) @ np.log1p(-p)


@pytest.fixture(scope="module")
def fitted():
    Xtr, Xte = _digits()
    est = BayesianSBN(random_state=0).fit(Xtr)
    return est, Xtr, Xte, est.score_samples(Xte)


def test_defaults_beat_independent_pixels(fitted):
    est, Xtr, Xte, scores = fitted
    gain = scores.mean() - _independent_loglik(Xtr, Xte).mean()
    # measured: 5.84 nats (seed 0) with 600 rows; a single pass (n_iter=1) gives -1.76.
    # A model that learns nothing sits at or below 0 (the bias-only SBN is independent
    # pixels).
    assert gain > 4.0, f"defaults only {gain:.2f} nats above independent pixels"
    assert min(np.abs(W).mean() for W in est.coefs_) > 0.05   # the weights moved


def test_auto_settings_are_resolved_and_stored(fitted):
    est, Xtr, _, _ = fitted
    assert est.n_components == "auto" and est.n_iter == "auto" and est.burn_in == "auto"
    assert est.n_components_ == (MAX_EXACT_UNITS,)
    # 600 rows: the fixed rule clip(240000 / 600, 60, 200) = 200 passes, 40 % of them
    # burn-in; "auto" burns in at least that long, until the log joint's plateau
    # (issue 25; measured: 85 passes with seed 0), at most four times, then collects
    # the fixed rule's 120 passes
    assert 80 <= est.burn_in_ <= 320 and est.n_iter_ == est.burn_in_ + 120
    assert est.stopping_reason_.startswith(f"burn-in ended after {est.burn_in_} passes")
    assert len(est.history_["log_joint"]) == est.n_iter_


def test_default_score_is_exact(fitted):
    est, _, Xte, scores = fitted
    np.testing.assert_allclose(scores, _model.log_marginal_exact(est.params_, Xte))


def test_verbose_prints_a_finite_quality_figure_and_time_left(capsys):
    Xtr, _ = _digits(n_train=100, n_test=10)
    BayesianSBN(random_state=0, n_iter=3, verbose=1).fit(Xtr)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("[")]
    # the first line names what inference="auto" chose (issue 25)
    assert len(lines) == 5 and lines[-1] == "[BayesianSBN] stopped: fixed n_iter=3"
    assert lines[0].startswith("[BayesianSBN] inference='auto': 'gibbs' for 100 rows")
    for ln in lines[1:-1]:
        lj = float(re.search(r"log_joint = (-?[0-9.]+)", ln).group(1))
        left = float(re.search(r"time_left = ([0-9.]+)", ln).group(1))
        assert np.isfinite(lj) and lj < 0 and left >= 0
        assert re.search(r"time = [0-9.]+s$", ln)


def test_auto_burn_in_of_dsghmc_counts_minibatch_steps():
    # DSGHMC's burn-in counts minibatch steps (also in partial_fit): "auto" keeps the
    # 40 steps its benchmarks used rather than 40 % of a number of passes
    Xtr, _ = _digits(n_train=100, n_test=10)
    est = BayesianSBN(n_components=3, inference="dsghmc_gibbs", n_sghmc_steps=1,
                      prior="normal", random_state=0).partial_fit(Xtr[:50])
    assert est.burn_in_ == 40
    assert BayesianSBN(n_components=3, n_iter=10, random_state=0).fit(Xtr).burn_in_ == 4


def test_online_vb_auto_passes_level_off_in_updates():
    # issue 25: online VB's "auto" counts minibatch updates (2,400, with the 10 % slack
    # of whole passes 2,640), not the 60-pass floor that grew with the rows; the other
    # inferences keep the pass rule
    from skdgm.sbn._defaults import resolve_n_iter, resolve_run_length

    rows = (1_000, 10_000, 100_000, 1_000_000)
    assert [resolve_n_iter(n, "online_vb") for n in rows] == [200, 27, 3, 1]
    assert [resolve_n_iter(n) for n in rows] == [200, 60, 60, 60]
    assert [resolve_n_iter(n, "gibbs") for n in rows] == [200, 60, 60, 60]
    # the updates level off from 4,400 rows: never more than one pass over 2,640
    for n in (4_401, 10_000, 100_000, 1_000_000, 10**7):
        per_pass = -(-n // 100)
        passes = resolve_n_iter(n, "online_vb")
        assert passes >= 1 and (passes - 1) * per_pass < 2640
        assert passes == 1 or passes * per_pass >= 2640
    # small data keep the pass rule exactly (the 1,797 digits: 134 passes)
    assert all(resolve_n_iter(n, "online_vb") == resolve_n_iter(n) for n in range(1, 4401))
    assert resolve_n_iter(1797, "online_vb") == 134
    # the minibatch size sets the updates a pass makes
    assert resolve_n_iter(100_000, "online_vb", batch_size=1000) == 27
    assert resolve_run_length("auto", "auto", 100_000, inference="online_vb") == (3, 1)
    assert resolve_run_length(5, "auto", 100_000, inference="online_vb") == (5, 2)


def test_online_vb_auto_fit_stops_after_its_update_budget(capsys):
    # a fit in the update-counted range: 60 rows in minibatches of one, 60 updates a
    # pass, so 2,640 updates are 44 passes (the pass rule would make 200)
    X = (np.random.default_rng(0).random((60, 8)) < 0.3).astype(float)
    est = BayesianSBN(n_components=3, inference="online_vb", batch_size=1, prior="normal",
                      random_state=0, verbose=1).fit(X)
    assert est.n_iter_ == 44 and est._engine.t == 44 * 60
    assert est.stopping_reason_ == "n_iter='auto' ran its fixed rule of 44 passes"
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "[BayesianSBN] stopped: n_iter='auto' ran its fixed rule of 44 passes"


@pytest.mark.parametrize("inference", ["dsghmc_gibbs", "dsghmc_nais"])
def test_dsghmc_auto_run_is_2000_updates_at_any_size(inference):
    # issue 25: DSGHMC moves once per minibatch, at a cost that does not depend on the
    # rows, so its "auto" is 2,000 updates, the last pass cut short (4 passes at 50,000
    # rows: about 750 CPU-s, where online VB's rounded-up 3,000 took 1,121.5; one pass
    # at 1,000,000 would be 10,000 updates); fit's burn-in (minibatch steps, 40 passes'
    # worth) is at most two thirds of the run's steps, partial_fit's stays 40 steps
    from skdgm.sbn._defaults import (AUTO_DSGHMC_UPDATES, resolve_n_iter,
                                     resolve_run_length, resolve_run_steps)

    assert AUTO_DSGHMC_UPDATES == 2000
    rows = (1_000, 1_797, 10_000, 50_000, 100_000, 1_000_000)
    assert [resolve_n_iter(n, inference) for n in rows] == [200, 112, 20, 4, 2, 1]
    assert [resolve_run_length("auto", "auto", n, inference=inference) for n in rows] == [
        (200, 400), (112, 720), (20, 1333), (4, 1333), (2, 1333), (1, 1333)]
    assert all(resolve_run_length("auto", "auto", n, inference=inference, fit=False)[1] == 40
               for n in rows)
    for n in (1_001, 4_401, 10_000, 50_000, 99_999, 100_001, 200_000, 10**7):
        per_pass = -(-n // 100)
        passes = resolve_n_iter(n, inference)
        assert resolve_run_steps("auto", n, inference) == 2000
        assert (passes - 1) * per_pass < 2000 <= passes * per_pass
    # up to 1,000 rows the pass rule (200 passes of at most 10 updates) is the smaller
    assert all(resolve_n_iter(n, inference) == resolve_n_iter(n) for n in range(1, 1001))
    assert resolve_run_steps("auto", 450, inference) == 200 * 5
    # an explicit n_iter runs whole passes, never cut
    assert resolve_run_steps(3, 10**6, inference) == 30_000
    # online VB keeps its own budget (2,400 updates rounded up to whole passes)
    assert [resolve_n_iter(n, "online_vb") for n in (10_000, 50_000)] == [27, 6]
    assert resolve_run_steps("auto", 50_000, "online_vb") == 3000
    assert resolve_n_iter(100_000, inference, batch_size=1000) == 20
    # an explicit n_iter keeps a burn-in that leaves samples to collect
    assert resolve_run_length(20, "auto", 100_000, inference=inference) == (20, 13_333)
    # an int burn_in is minibatch steps, in fit as in partial_fit (not passes)
    assert resolve_run_length(20, 5, 100_000, inference=inference) == (20, 5)
    assert resolve_run_length(20, 5, 100_000, inference=inference, fit=False) == (20, 5)


def test_dsghmc_auto_fit_stops_after_its_update_budget(capsys):
    # 60 rows in minibatches of one: 60 updates a pass; 2,000 updates are 33 passes and
    # 20 steps of a 34th (the pass rule would make 200); burn-in 1,333 steps (two
    # thirds), then the 10 kept samples one every 667 // 10 = 66 steps
    X = (np.random.default_rng(0).random((60, 8)) < 0.3).astype(float)
    est = BayesianSBN(n_components=3, inference="dsghmc_nais", batch_size=1, prior="normal",
                      n_sghmc_steps=1, n_hidden_samples=2, pretrain=False, random_state=0,
                      verbose=1).fit(X)
    assert est.n_iter_ == 34 and est._engine._n_steps == 2000
    assert est.burn_in_ == 1333 and len(est.posterior_samples_) == 10
    assert est._engine.kept_steps == list(range(1333 + 66, 2001, 66)) == [
        1399 + 66 * i for i in range(10)]
    assert est.stopping_reason_ == "n_iter='auto' ran its fixed rule of 34 passes"
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "[BayesianSBN] stopped: n_iter='auto' ran its fixed rule of 34 passes"
    # an explicit n_iter=34 runs the 34th pass whole
    whole = BayesianSBN(n_components=3, inference="dsghmc_nais", batch_size=1, n_iter=34,
                        prior="normal", n_sghmc_steps=1, n_hidden_samples=2, pretrain=False,
                        random_state=0).fit(X)
    assert whole._engine._n_steps == 34 * 60


def test_dsghmc_fit_of_one_pass_keeps_its_samples_thinned_in_steps():
    # issue 25: a fit whose run is one pass of many minibatches (the update-counted
    # "auto" from 264,000 rows) burns in two thirds of its steps and keeps
    # n_posterior_samples from the last third, spread evenly (it used to keep one)
    X = (np.random.default_rng(1).random((90, 6)) < 0.3).astype(float)
    est = BayesianSBN(n_components=3, inference="dsghmc_gibbs", n_iter=1, batch_size=2,
                      prior="normal", n_sghmc_steps=1, n_hidden_samples=2, gibbs_sweeps=1,
                      n_posterior_samples=5, pretrain=False, random_state=0).fit(X)
    assert est.n_iter_ == 1 and est._engine._n_steps == 45 and est.burn_in_ == 30
    assert est._engine.kept_steps == [33, 36, 39, 42, 45]      # thin (45 - 30) // 5
    kept = est.posterior_samples_
    assert len(kept) == 5 and all(
        not np.array_equal(a.weights[0], b.weights[0]) for a, b in zip(kept, kept[1:]))
    assert np.array_equal(kept[-1].weights[0], est._engine.params.weights[0])
    # an int burn_in of fit counts minibatch steps: 0, then 7 (it counted passes, so
    # 7 passes of 45 steps burned in past the end of the run and kept nothing)
    kw = dict(n_components=3, inference="dsghmc_gibbs", n_iter=1, batch_size=2,
              prior="normal", n_sghmc_steps=1, n_hidden_samples=2, gibbs_sweeps=1,
              n_posterior_samples=5, pretrain=False, random_state=0)
    est0 = BayesianSBN(burn_in=0, **kw).fit(X)
    assert est0.burn_in_ == 0 and est0._engine.kept_steps == [9, 18, 27, 36, 45]
    est7 = BayesianSBN(burn_in=7, **kw).fit(X)
    assert est7.burn_in_ == 7 and est7._engine.kept_steps == [14, 21, 28, 35, 42]
    # the burn-in's steps are those of a 7-step partial_fit stream of the same rows
    stream = BayesianSBN(burn_in=7, **kw)
    for i in range(7):
        stream.partial_fit(X[2 * i:2 * i + 2])
    assert stream.burn_in_ == 7 and stream._engine._n_steps == 7
