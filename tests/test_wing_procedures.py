"""The procedures issue 16 moved out of the SBN and DeepLDA estimators, called directly.

Each takes arrays, settings and explicit seeds or generators (never the estimator),
so joblib can ship it and these tests can call it without fitting through the class.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from skdgm import BayesianSBN, DeepLDA
from skdgm.deep_lda import _defaults as lda_defaults
from skdgm.deep_lda import _evaluate as lda_evaluate
from skdgm.deep_lda import _generate as lda_generate
from skdgm.deep_lda import _impute as lda_impute
from skdgm.deep_lda import _train as lda_train
from skdgm.sbn import _defaults as sbn_defaults
from skdgm.sbn import _evaluate as sbn_evaluate
from skdgm.sbn import _impute as sbn_impute
from skdgm.sbn import _model as sbn_model
from skdgm.sbn import _train as sbn_train


def _binary(n=40, d=6, seed=0):
    return (np.random.default_rng(seed).random((n, d)) < 0.3).astype(float)


# ----------------------------------------------------------------------- SBN
def test_sbn_log_marginal_routes():
    params = sbn_model.init_params(6, (3,), np.random.default_rng(0), scale=1.0)
    X = _binary(8)
    seed = np.random.SeedSequence(1)
    lp, se = sbn_evaluate.log_marginal(params, X, seed, n_betas=20, n_runs=4)
    np.testing.assert_array_equal(lp, sbn_model.log_marginal_exact(params, X))
    assert np.all(se == 0)
    # the AIS route is taken for method="ais"; a callable n_betas is resolved only there
    calls = []

    def n_betas():
        calls.append(1)
        return 200

    sbn_evaluate.log_marginal(params, X, seed, n_betas=n_betas, n_runs=4)
    assert calls == []
    lp_ais, se_ais = sbn_evaluate.log_marginal(params, X, seed, method="ais",
                                               n_betas=n_betas, n_runs=4)
    assert calls == [1]
    assert np.all(se_ais > 0)
    # AIS is a stochastic lower bound: on average at most the exact value (+ noise)
    assert np.mean(lp_ais - lp) < 4 * np.sqrt(np.mean(se_ais ** 2))


def test_sbn_call_seed_and_map_chunks():
    ss = sbn_evaluate.call_seed(3)
    assert ss.entropy == np.random.SeedSequence(3).entropy
    child = sbn_evaluate.call_seed(3, 2)
    assert child.spawn_key[-2:] == (0xC5, 2)
    X = _binary(25)
    seen = []

    def func(rows, chunk):
        seen.append(chunk)
        return rows * 2

    out = sbn_evaluate.map_chunks(sp.csr_matrix(X), func, 10)
    np.testing.assert_array_equal(out, X * 2)
    assert seen == [0, 1, 2]
    np.testing.assert_array_equal(sbn_evaluate.map_chunks(X, lambda r, c: r + c + 1, 10), X + 1)


def test_sbn_resolve_sizes_errors():
    assert sbn_defaults.resolve_sizes("auto", False, None, None, 16) == ()
    assert sbn_defaults.resolve_sizes((4, 2), False, 10, 6, 16) == (4, 2)
    assert sbn_defaults.resolve_sizes("auto", False, 100, 6, 16) == (16,)
    # batch Gibbs's pass costs O(N D K^2): its automatic width stops at 40 (issue 25);
    # the streaming inferences keep the rule's 200, and small data are unchanged
    assert sbn_defaults.resolve_sizes("auto", False, 50_000, 784, 16, "gibbs") == (40,)
    assert sbn_defaults.resolve_sizes("auto", False, 10_000, 784, 16, "gibbs") == (40,)
    assert sbn_defaults.resolve_sizes("auto", False, 50_000, 784, 16, "online_vb") == (200,)
    assert sbn_defaults.resolve_sizes("auto", False, 100, 6, 16, "gibbs") == (16,)
    assert sbn_defaults.resolve_sizes((300,), False, 50_000, 784, 16, "gibbs") == (300,)
    with pytest.raises(ValueError, match="positive ints"):
        sbn_defaults.resolve_sizes((3, 0), False, 10, 6, 16)
    with pytest.raises(ValueError, match="autoregressive=True"):
        sbn_defaults.resolve_sizes((), False, 10, 6, 16)
    assert sbn_defaults.resolve_run_length("auto", "auto", 4000) == (60, 24)
    assert sbn_defaults.resolve_run_length(10, 3, 4000) == (10, 3)


def test_sbn_impute_over_one_sample_is_one_chain():
    params = sbn_model.init_params(6, (3,), np.random.default_rng(0), scale=1.0)
    X = _binary(5)
    missing = np.zeros_like(X, dtype=bool)
    missing[:, 1] = True
    Xm = np.where(missing, np.nan, X)
    got = sbn_impute.impute_over_samples([params], Xm, missing, np.random.default_rng(4),
                                         n_sweeps=6)
    _, est = sbn_impute.gibbs_impute(params, Xm, missing, np.random.default_rng(4),
                                     n_sweeps=6, n_burn=3)
    np.testing.assert_array_equal(got[missing], est[missing])
    np.testing.assert_array_equal(got[~missing], X[~missing])


def test_sbn_pretrain_stages_matches_the_estimator():
    X = _binary(30)
    est = BayesianSBN(n_components=(3, 2), n_iter=2, random_state=0, pretrain=True)
    est._resolve_inference(X)          # what fit does first ("auto": gibbs at 30 rows)
    sizes, pp, rng = est._fresh_start(X, True)
    logged = []
    params, states, hidden = sbn_train.pretrain_stages(
        X, sizes, rng, new_engine=lambda sub: est._new_engine(sub, pp), n_passes=2,
        batch_size=100, log_pass=lambda stage, m: logged.append(stage),
        prior_states=est._prior_states, prior_params=pp)
    assert logged == [1, 1, 2, 2]
    assert [W.shape for W in params.weights] == [(6, 3), (3, 2)]
    assert len(states) == 3 and [h.shape for h in hidden] == [(30, 3), (30, 2)]


def test_sbn_final_samples():
    class Engine:
        keeps_samples = True

        def posterior_draw(self, rng):
            return "draw"

    eng = Engine()
    assert sbn_train.final_samples(eng, [1, 2, 3], 2, None) == [2, 3]
    assert sbn_train.final_samples(eng, [], 2, None) == ["draw"]
    eng.keeps_samples = False
    assert sbn_train.final_samples(eng, [1, 2, 3], 2, None) == ["draw", "draw"]


# ------------------------------------------------------------------- DeepLDA
def test_lda_minibatches_cover_every_document():
    X = sp.csr_matrix(np.arange(23, dtype=float)[:, None] + 1)
    stream = list(lda_train.minibatches(X, 10))
    assert [b.shape[0] for b in stream] == [8, 8, 7]
    np.testing.assert_array_equal(sp.vstack(stream).toarray(), X.toarray())
    shuffled = list(lda_train.minibatches(X, 10, np.random.default_rng(0)))
    rows = np.sort(np.concatenate([b.toarray().ravel() for b in shuffled]))
    np.testing.assert_array_equal(rows, X.toarray().ravel())


def test_lda_partial_fit_never_scales_a_sliver_up_to_the_corpus(monkeypatch):
    # A stream in chunks of batch_size + 1 documents used to run an update on a
    # single document with rho = total_samples (TLASGR's 20News perplexity went
    # from ~890 to ~1170 in the benchmark, issue 15).
    X = sp.csr_matrix(np.random.default_rng(0).poisson(1.0, size=(21, 6)).astype(float))
    seen = []
    update = DeepLDA._update

    def spy(self, batch, total, log):
        seen.append((batch.shape[0], total))
        return update(self, batch, total, log)

    monkeypatch.setattr(DeepLDA, "_update", spy)
    m = DeepLDA((3,), batch_size=10, total_samples=100, local_burn_in=1, local_samples=1,
                random_state=0).partial_fit(X)
    assert seen == [(7, 100), (7, 100), (7, 100)]
    assert m.n_updates_ == 3
    seen.clear()
    DeepLDA((3,), batch_size=20, n_iter=1, local_burn_in=1, local_samples=1,
            random_state=0).fit(X)
    assert seen == [(11, 21), (10, 21)]


def test_sbn_stream_steps_are_near_equal():
    class Engine:
        def __init__(self):
            self.rows = []

        def step(self, X, rng, n_total):
            self.rows.append((X.shape[0], n_total))
            return {}

    eng = Engine()
    sbn_train.stream_steps(eng, np.zeros((201, 3)), None, 200, 1000)
    assert eng.rows == [(101, 1000), (100, 1000)]


def test_lda_keep_sample_thins_and_resizes():
    from collections import deque
    post = deque(maxlen=2)
    phis, r = [np.ones((3, 2))], np.ones(2)
    for t in range(1, 8):
        post = lda_train.keep_sample(post, 2, 3, t, phis, r)
    assert len(post) == 2          # kept at t = 1, 4, 7, the latest 2
    post = lda_train.keep_sample(post, 5, 3, 8, phis, r)
    assert post.maxlen == 5 and len(post) == 2


def test_lda_run_local_is_the_same_for_any_n_jobs():
    X = sp.csr_matrix(np.random.default_rng(0).poisson(1.0, (25, 12)).astype(float))
    lda = DeepLDA(n_components=(3, 2), n_iter=1, batch_size=25, random_state=0).fit(X)
    kw = dict(n_burn=1, n_collect=2, collect_topics=True, a0=0.01, b0=0.01, e0=1.0,
              f0=1.0, link="poisson", chunk_docs=10)
    one = lda_train.run_local(X, np.random.SeedSequence(5), lda.topics_, lda.r_, n_jobs=1,
                              **kw)
    two = lda_train.run_local(X, np.random.SeedSequence(5), lda.topics_, lda.r_, n_jobs=2,
                              **kw)
    assert len(one) == 3
    for a, b in zip(one, two):
        for x, y in zip(a["theta"], b["theta"]):
            np.testing.assert_array_equal(x, y)


def test_lda_scores_and_projection():
    ll, cnt = np.array([-4.0, 0.0, -9.0]), np.array([2.0, 0.0, 3.0])
    np.testing.assert_array_equal(lda_evaluate.document_scores(ll, cnt), [-2.0, 0.0, -3.0])
    assert lda_evaluate.pooled_score(ll, cnt) == pytest.approx(-13.0 / 5.0)
    rng = np.random.default_rng(0)
    topics = [rng.dirichlet(np.ones(5), size=3).T, rng.dirichlet(np.ones(3), size=2).T]
    top = lda_generate.project_topics(topics, 2)
    np.testing.assert_allclose(top, topics[0] @ topics[1])
    np.testing.assert_allclose(top.sum(axis=0), 1.0)


def test_lda_observed_counts_checks_only_the_observed_entries():
    X = np.array([[1.0, np.nan], [2.0, 3.0]])
    missing = np.isnan(X)
    out = lda_impute.observed_counts(X, missing, link="poisson", round_counts=False,
                                     what="DeepLDA")
    np.testing.assert_array_equal(np.isnan(out), missing)
    with pytest.raises(ValueError):
        lda_impute.observed_counts(np.array([[1.5, np.nan]]), np.array([[False, True]]),
                                   link="poisson", round_counts=False, what="DeepLDA")
    with pytest.raises(ValueError):
        lda_impute.observed_counts(np.array([[2.0, np.nan]]), np.array([[False, True]]),
                                   link="bernoulli", round_counts=False, what="DeepLDA")


def test_lda_step_schedule_defaults():
    sched = lda_defaults.step_schedule("sgrld", None, 20.0, None)
    assert sched(0) == pytest.approx(0.1)
    assert sched(20) == pytest.approx(0.1 * 2.0 ** -0.9)
    sched = lda_defaults.step_schedule("tlasgr", 0.5, 10.0, 0.6)
    assert sched(5) == pytest.approx(0.5 * 1.5 ** -0.6)
