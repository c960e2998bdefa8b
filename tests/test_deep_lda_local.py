"""The local sampler's fast kernels (issue 15).

:func:`skdgm.deep_lda._local_fast.partition_sparse`, the layer-1 partition by
rejection from a sparse envelope, must draw exactly the multinomial of
:func:`~skdgm.deep_lda._local_fast.partition_counts` (checked against the exact
probabilities, with a wrong envelope as the test's own control) and agree bit
for bit with its NumPy twin; :func:`~skdgm.deep_lda._local_fast.gamma_theta`'s
small-shape sampler must draw the exact gamma law (its twin test is in
``test_deep_lda.py``).
"""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from skdgm.deep_lda import _local, _local_fast

from _parallel import count_threads  # noqa: F401 - fixture

# One word (row) in one document (column): theta holds two large topics and
# four below tau = 0.9 * |theta| / 6 = 0.9975, which only the rejection branch
# reaches; P / E = 0.64, so the sparse path (not the dense fallback) is used.
PHI_V = np.array([[0.3, 0.3, 0.1, 0.1, 0.1, 0.1]])
THETA_N = np.array([[4.0, 2.0, 0.3, 0.2, 0.1, 0.05]])
TAU_FRAC = 0.9


def _one_entry(fn, n, seed):
    """Topic counts of one entry of ``n`` tokens, words-by-documents layout."""
    K = PHI_V.shape[1]
    out = np.zeros((1, K), np.int64)
    fn(np.array([0, 1], np.int64), np.array([0], np.int64), np.array([n], np.int64),
       PHI_V, THETA_N, TAU_FRAC, np.random.default_rng(seed), out, np.zeros((0, K), np.int64))
    return out[0]


def _chi2_pvalue(counts):
    p = (PHI_V * THETA_N)[0]
    p = p / p.sum()
    return stats.chisquare(counts, counts.sum() * p).pvalue


def test_envelope_case_uses_rejection_branch():
    tau, buckets = _local._buckets(THETA_N, TAU_FRAC)
    assert buckets[0].tolist() == [0, 1]
    P = float((PHI_V[0, :2] * THETA_N[0, :2]).sum())
    E = P + tau[0] * PHI_V.sum()
    assert 0.5 <= P / E < 0.7
    # the topics off the bucket carry 3.5% of the mass: 7000 of 200000 draws
    assert (PHI_V * THETA_N)[0, 2:].sum() / (PHI_V * THETA_N).sum() > 0.03


@pytest.mark.parametrize("fn, n", [(_local_fast.partition_sparse, 200_000),
                                   (_local.partition_sparse, 20_000)])
def test_partition_sparse_draws_the_exact_multinomial(fn, n):
    # chi-square against the exact probabilities w_k / sum w, 5 degrees of
    # freedom, fixed seeds; a correct sampler fails at 1e-4 one time in 10^4
    counts = _one_entry(fn, n, seed=11)
    assert counts.sum() == n
    assert _chi2_pvalue(counts) > 1e-4


def test_partition_sparse_chi2_rejects_a_wrong_envelope(monkeypatch):
    # Control of the test above: a quarter of tau in the envelope while the
    # buckets stay. The envelope then lies below the target on the topics
    # with theta in [tau / 4, tau) (here topic 2, theta 0.3 against 0.25),
    # whose draws are all rejected; the same chi-square must see it. (Halving
    # tau would stay exact here: no theta lies in [tau / 2, tau).)
    right = _local._buckets

    def wrong(col_factor, tau_frac):
        tau, buckets = right(col_factor, tau_frac)
        return tau / 4, buckets

    monkeypatch.setattr(_local, "_buckets", wrong)
    counts = _one_entry(_local.partition_sparse, 20_000, seed=11)
    assert counts[2] == 0
    assert _chi2_pvalue(counts) < 1e-10


def _random_case(seed, n_docs=40, V=30, K=12, shape=0.1):
    rng = np.random.default_rng(seed)
    X = sp.random(n_docs, V, 0.3, format="csr", random_state=seed)
    X.data = rng.integers(1, 6, X.data.size).astype(float)
    Xt = X.T.tocsr()
    csr = (Xt.indptr.astype(np.int64), Xt.indices.astype(np.int64), Xt.data.astype(np.int64))
    phi = rng.dirichlet(np.ones(V), K).T.copy()
    theta = rng.gamma(shape, 1.0, (n_docs, K))
    theta[3] = 0.0  # a document of zero weights: uniform fallback
    theta[5, 2:] = 1e-100  # mass on two topics only: dense fallback for most words
    return X, csr, phi, theta


@pytest.mark.parametrize("tau_frac", [0.0, 0.1, 0.5, 0.9])
def test_partition_sparse_matches_twin_and_conserves(tau_frac):
    X, csr, phi, theta = _random_case(1)
    outs = []
    for fn in (_local_fast.partition_sparse, _local.partition_sparse):
        w = np.zeros(phi.shape, np.int64)
        d = np.zeros(theta.shape, np.int64)
        rng = np.random.default_rng(5)
        fn(*csr, phi, theta, tau_frac, rng, w, d)
        outs.append((w, d, rng.random()))   # the same stream position after
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    assert outs[0][2] == outs[1][2]
    w, d, _ = outs[0]
    np.testing.assert_array_equal(d.sum(1), np.asarray(X.sum(1)).ravel())
    np.testing.assert_array_equal(w.sum(1), np.asarray(X.sum(0)).ravel())


@pytest.mark.parametrize("fn", [_local_fast.partition_sparse, _local.partition_sparse])
def test_partition_sparse_given_row_sums_changes_nothing(fn):
    # the row sums and running sums passed in (formed once per local chain)
    # are the ones the kernel would form: same counts, same stream position
    X, csr, phi, theta = _random_case(6)
    rows = phi[:len(csr[0]) - 1]
    outs = []
    for extra in ((), (_local._sum4(rows), np.cumsum(rows, axis=1))):
        w = np.zeros(phi.shape, np.int64)
        d = np.zeros(theta.shape, np.int64)
        rng = np.random.default_rng(8)
        fn(*csr, phi, theta, 0.5, rng, w, d, *extra)
        outs.append((w, d, rng.random()))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    assert outs[0][2] == outs[1][2]


def test_partition_sparse_without_tau_is_the_exact_walk():
    # tau_frac = 0 puts every topic in the bucket (by decreasing theta), so it
    # never rejects: one uniform per token, like partition_counts
    _, csr, phi, theta = _random_case(2, shape=1.0)
    theta[3] = 1.0
    rng = np.random.default_rng(0)
    a = np.zeros(theta.shape, np.int64)
    _local_fast.partition_sparse(*csr, phi, theta, 0.0, rng, np.zeros((0, 12), np.int64), a)
    n_tokens = int(csr[2].sum())
    ref = np.random.default_rng(0)
    ref.random(n_tokens)
    assert rng.random() == ref.random()


def test_partition_sparse_topic_frequencies_over_many_entries():
    # Many documents and words at once (both branches and the dense fallback):
    # the total counts per (document, topic) against their exact expectations
    # sum_v x_vn w_vnk / sum_k w_vnk, with a Monte-Carlo z-score per document.
    X, csr, phi, theta = _random_case(3, n_docs=20, V=15, K=8, shape=0.3)
    theta[3] = 1.0
    X = X.multiply(200).tocsr()
    Xt = X.T.tocsr()
    csr = (Xt.indptr.astype(np.int64), Xt.indices.astype(np.int64), Xt.data.astype(np.int64))
    d = np.zeros(theta.shape, np.int64)
    _local_fast.partition_sparse(*csr, phi, theta, 0.5, np.random.default_rng(7),
                                 np.zeros((0, 8), np.int64), d)
    Xd = X.toarray()
    mean = np.zeros(theta.shape)
    var = np.zeros(theta.shape)
    for n in range(theta.shape[0]):
        p = phi * theta[n]
        p = p / p.sum(1, keepdims=True)
        mean[n] = Xd[n] @ p
        var[n] = Xd[n] @ (p * (1 - p))
    z = (d - mean) / np.sqrt(np.maximum(var, 1e-12))
    ok = var > 0
    assert np.all(d[~ok] == np.rint(mean[~ok]))
    # 160 z-scores: chi-square of their squares at 1e-4
    assert stats.chi2.sf(np.sum(z[ok] ** 2), ok.sum()) > 1e-4


@pytest.mark.parametrize("fn", [_local_fast.partition_sparse, _local.partition_sparse])
def test_partition_sparse_rejects_bad_tau(fn):
    _, csr, phi, theta = _random_case(4)
    for bad in (-0.1, 1.0, np.nan):
        with pytest.raises(ValueError, match="tau_frac"):
            fn(*csr, phi, theta, bad, np.random.default_rng(0),
               np.zeros(phi.shape, np.int64), np.zeros(theta.shape, np.int64))


# ------------------------------------------------- gamma_theta's small-shape sampler
# The shapes below one take GS with an exponential in place of numpy's uniform
# (the topics a document holds no token of); the others numpy's Marsaglia-Tsang.
GS_SHAPES = np.array([0.01, 0.035, 0.3, 0.7, 0.97, 1.0, 2.5])


def _gamma_columns(n, seed):
    shape = np.ascontiguousarray(np.broadcast_to(GS_SHAPES, (n, GS_SHAPES.size)))
    return _local_fast.gamma_theta(shape, np.zeros(shape.shape, np.int64), np.ones(n),
                                   np.random.default_rng(seed), 0.0)


def test_gamma_theta_draws_the_exact_gamma():
    # Each column against Gam(a): its mean within 5 standard errors sqrt(a / n)
    # (Var Gam(a) = a), and a Kolmogorov-Smirnov test at 1e-4 against the exact
    # cdf (fixed seed; a correct sampler fails one time in 10^4 per column). The
    # draws of a = 0.01 that underflow to 0 (probability 8e-4) only add that much
    # to the KS distance, far below its 1e-4 critical value 0.0064.
    n = 100_000
    g = _gamma_columns(n, seed=21)
    for a, col in zip(GS_SHAPES, g.T):
        assert abs(col.mean() - a) < 5 * np.sqrt(a / n), a
        assert stats.kstest(col, stats.gamma(a).cdf).pvalue > 1e-4, a


def test_gamma_theta_ks_sees_a_five_percent_shape_error():
    # Control of the test above: the same draws against Gam(1.05 a) fail it.
    g = _gamma_columns(100_000, seed=21)
    for a, col in zip(GS_SHAPES[:5], g.T):
        assert stats.kstest(col, stats.gamma(1.05 * a).cdf).pvalue < 1e-6, a


# ------------------------------------------------- per-chain helpers of the sampler
@pytest.mark.parametrize("K", [1, 7, 12])
def test_row_sums_and_entry_dots_match_twins(K):
    X, csr, phi, theta = _random_case(7, K=K)
    a = _local_fast.row_sums(phi)
    b = _local.row_sums(phi)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_allclose(a[0], phi.sum(1), rtol=1e-14)
    # documents by words, as the own-words log-likelihood calls it
    ip, ix = X.indptr.astype(np.int64), X.indices.astype(np.int64)
    d1 = _local_fast.entry_dots(ip, ix, phi, theta)
    d2 = _local.entry_dots(ip, ix, phi, theta)
    np.testing.assert_array_equal(d1, d2)
    rows = np.repeat(np.arange(X.shape[0]), np.diff(ip))
    np.testing.assert_allclose(d1, np.einsum("ek,ek->e", phi[ix], theta[rows]), rtol=1e-13)


@pytest.mark.parametrize("K", [1, 7, 12])
def test_add_rows_matches_twin_and_fancy_indexing(K):
    rng = np.random.default_rng(K)
    out = rng.random((30, K))
    rows = rng.permutation(30)[:17].astype(np.int64)
    values = rng.random((17, K)) * 1e3
    a, b = out.copy(), out.copy()
    _local_fast.add_rows(a, rows, values)
    _local.add_rows(b, rows, values)
    np.testing.assert_array_equal(a, b)
    ref = out.copy()
    ref[rows] += values
    np.testing.assert_array_equal(a, ref)
    with pytest.raises(ValueError, match="out of range"):
        _local_fast.add_rows(a, np.array([30], dtype=np.int64), values[:1])
    with pytest.raises(ValueError, match="inconsistent"):
        _local_fast.add_rows(a, rows[:3], values)


def test_merge_chunks_sums_chunks_in_order_and_can_skip_theta():
    """Issue 26: the layer-1 counts joined by ``add_rows`` are the chunk-ordered
    fancy-indexed sums the merge made before, bit for bit; ``stack_theta=False``
    leaves the documents' sums out and nothing else changes."""
    X, _, phi, _ = _random_case(4, n_docs=60, V=30, K=5)
    chunks = [X[a:a + 20] for a in (0, 20, 40)]
    rng = np.random.default_rng(0)
    res = [_local.upward_downward(c, rng, phis=[phi, rng.dirichlet(np.ones(5), 3).T.copy()],
                                  r=np.ones(3), n_burn=2, n_collect=3, compact_words=True)
           for c in chunks]
    merged = _local.merge_chunks(res, 30)
    ref = np.zeros((30, 5))
    for r in res:
        ref[r["words"]] += r["topic_counts"][0]
    np.testing.assert_array_equal(merged["topic_counts"][0], ref)
    twin = _local.merge_chunks(res, 30, kernels="numpy")
    np.testing.assert_array_equal(twin["topic_counts"][0], ref)
    lean = _local.merge_chunks(res, 30, stack_theta=False)
    assert "theta_sum" not in lean and merged["theta_sum"][0].shape == (60, 5)
    for x, y in zip(lean["topic_counts"], merged["topic_counts"]):
        np.testing.assert_array_equal(x, y)
    for key in ("top_tables", "q_top", "loglik", "n_words"):
        np.testing.assert_array_equal(lean[key], merged[key])



def test_merge_chunks_on_threads_adds_in_chunk_order(count_threads, monkeypatch):
    """With ``n_jobs=2`` two threads join the layer-1 counts, each over half of the
    words: every entry still gets the chunks' counts in chunk order, so the sums are
    those of one thread (and of the NumPy twin), bit for bit, with compact and full
    (vocabulary-sized) chunks mixed and a chunk holding no word of one half. Below
    ``JOIN_SPLIT_ENTRIES`` the join stays on the calling thread."""
    X, _, phi, _ = _random_case(5, n_docs=80, V=30, K=5)
    rng = np.random.default_rng(1)
    chunks = [X[a:a + 20] for a in (0, 20, 40, 60)]
    res = [_local.upward_downward(c, rng, phis=[phi], r=np.ones(5), n_burn=1, n_collect=3,
                                  compact_words=i != 2)
           for i, c in enumerate(chunks)]
    res[3]["words"] = res[3]["words"][res[3]["words"] < 10]
    res[3]["topic_counts"][0] = res[3]["topic_counts"][0][:res[3]["words"].size].copy()
    ref = np.zeros((30, 5))
    for r in res:
        if r["topic_counts"][0].shape[0] == 30:
            ref += r["topic_counts"][0]
        else:
            ref[r["words"]] += r["topic_counts"][0]
    for split_from in (0, 10**9):       # threads from any size / never (a small join)
        monkeypatch.setattr(_local, "JOIN_SPLIT_ENTRIES", split_from)
        for kernels in ("cython", "numpy"):
            for n_jobs in (None, 1, 2):
                count_threads.clear()
                got = _local.merge_chunks(res, 30, stack_theta=False, kernels=kernels,
                                          n_jobs=n_jobs)
                np.testing.assert_array_equal(got["topic_counts"][0], ref)
                assert len(count_threads) == (n_jobs == 2 and split_from == 0)


@pytest.mark.parametrize("K", [1, 7, 12])
def test_em_steps_kernel_matches_twin_and_is_the_mixture_em(K):
    X, csr, phi, _ = _random_case(3, K=K)
    lay = _local._Layout(X, [phi], np.ones(K), "poisson")
    start = np.random.default_rng(3).gamma(1.0, 1.0, (X.shape[0], K))
    a = _local._em_start(lay, start, 4, _local_fast.em_steps)
    b = _local._em_start(lay, start, 4)
    np.testing.assert_array_equal(a, b)
    # the textbook update on dense arrays, one step at a time
    dense = X.toarray()
    t = start.copy()
    for _ in range(4):
        t = t * ((dense / np.maximum(t @ phi.T, np.finfo(float).tiny)) @ phi)
    np.testing.assert_allclose(a, np.maximum(t, _local.FLOOR), rtol=1e-10)
    # each step keeps a document's total at its length
    np.testing.assert_allclose(a.sum(1), dense.sum(1), rtol=1e-10)
    with pytest.raises(ValueError, match="inconsistent"):
        _local_fast.em_steps(lay.indptr, lay.loc, lay.data.astype(float), lay.phi_words,
                             np.zeros((lay.n, K + 1)), 1, 1e-300)


def _scales_as_formulas(lengths, shapes, theta, rng, a0, b0, e0, f0):
    # Lemma 3.1's draws written out with NumPy's samplers (the code before the
    # scale_rates kernel, issue 26): rates c^(l+1) + q^(l) per layer and q^(L+1)
    p2 = np.clip(rng.beta(a0 + lengths, b0 + shapes[0].sum(axis=1)), 1e-12, 1 - 1e-12)
    rates = [(1.0 - p2) / p2]
    for l in range(1, len(shapes)):
        rates.append(rng.standard_gamma(e0 + shapes[l].sum(axis=1)) / (f0 + theta[l].sum(axis=1)))
    q = [np.ones(len(lengths))]
    for l in range(len(shapes)):
        q.append(np.log1p(q[l] / rates[l]))
    return [rates[l] + q[l] for l in range(len(shapes))], q[-1]


@pytest.mark.parametrize("Ks", [(1,), (7,), (128,), (13, 5, 3)])
def test_scale_rates_kernel_matches_twin_and_the_formulas(Ks):
    n, hyper = 37, (0.01, 0.01, 1.0, 1.0)
    g = np.random.default_rng(5)
    lengths = g.integers(0, 40, size=n)
    lengths[:3] = 0                                  # empty documents
    theta = [g.gamma(0.3, size=(n, K)) + 1e-100 for K in Ks]
    r = g.gamma(0.5, size=Ks[-1])
    shapes = [theta[l + 1] @ g.dirichlet(np.ones(Ks[l]), size=Ks[l + 1])
              for l in range(len(Ks) - 1)] + [np.broadcast_to(r, (n, Ks[-1]))]
    A0 = np.zeros((n, Ks[0]), dtype=np.int64)
    A0[:, 0] = lengths
    ref = np.random.default_rng(9)
    want_rq, want_q = _scales_as_formulas(lengths, shapes, theta, ref, *hyper)
    next_draw = ref.random()
    r_total = _local._row_totals(r, n)
    for fn in (_local_fast.scale_rates, _local.scale_rates):
        for total in (None, r_total):
            rng = np.random.default_rng(9)
            rq, q = _local._scales(A0, shapes, theta, rng, *hyper, scale_rates_=fn,
                                   r_total=total)
            assert len(rq) == len(Ks)
            for x, y in zip(rq, want_rq):
                np.testing.assert_array_equal(x, y)
            np.testing.assert_array_equal(q, want_q)
            # the same draws, no more: the stream goes on where NumPy's left it
            assert rng.random() == next_draw
    # the sampled p^(2) stays inside (0, 1) for an empty document: finite rates
    assert np.all(np.isfinite(want_rq[0])) and np.all(want_rq[0] > 1.0)


def test_scale_rates_rejects_inconsistent_shapes():
    with pytest.raises(ValueError, match="scale_rates"):
        _local_fast.scale_rates(np.zeros(3, dtype=np.int64), np.ones((1, 4)), np.ones((1, 3)),
                                np.random.default_rng(0), 0.01, 0.01, 1.0, 1.0, 1e-12)
