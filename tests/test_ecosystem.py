"""The scikit-learn ecosystem contract (issue 14), for every estimator at cheap sizes.

``binarize`` on the binary models, feature names and ``set_output``, dtypes, sparse
input, warnings for parameters the chosen option does not read, and the cost of
streaming through ``partial_fit``.
"""

import numpy as np
import pytest

import skdgm

CHEAP = {
    "GaussianBernoulliRBM": dict(n_components=4, cd_steps=3, langevin_steps=2, n_iter=2,
                                 batch_size=16, random_state=0),
    "BayesianSBN": dict(n_components=(3,), n_iter=2, burn_in=1, n_posterior_samples=2,
                        random_state=0),
    "DeepLDA": dict(n_components=(3, 2), n_iter=2, batch_size=50, local_burn_in=2,
                    local_samples=2, n_posterior_samples=2, random_state=0),
    "DBMCAST": dict(n_components=(6, 4), n_iter=2, n_chains=10, batch_size=50,
                    pretrain_n_iter=1, n_temperatures=4, beta_min=0.6, swap_interval=3,
                    random_state=0),
}
ALL = sorted(CHEAP)
BINARY = ["BayesianSBN", "DBMCAST"]


def make(name, **params):
    return getattr(skdgm, name)(**{**CHEAP[name], **params})


def data(name, n=60, d=5, seed=0):
    """Input each estimator accepts: 0/1, counts, or real values."""
    rng = np.random.default_rng(seed)
    if name in BINARY:
        return (rng.random((n, d)) < 0.4).astype(np.float64)
    if name == "DeepLDA":
        return rng.poisson(2.0, (n, d)).astype(np.float64)
    return rng.standard_normal((n, d))


# --- binarize -------------------------------------------------------------------


@pytest.mark.parametrize("name", BINARY)
def test_binarize_none_rejects_continuous_input_and_names_the_option(name):
    X = np.random.default_rng(0).random((30, 4))
    est = make(name)
    with pytest.raises(ValueError, match="binary data.*binarize="):
        est.fit(X)


@pytest.mark.parametrize("name", BINARY)
def test_binarize_thresholds_like_binarizer(name):
    from sklearn.preprocessing import Binarizer

    X = np.random.default_rng(1).random((40, 4))
    Xb = Binarizer(threshold=0.3).fit_transform(X)
    a = make(name, binarize=0.3).fit(X)
    b = make(name).fit(Xb)
    np.testing.assert_array_equal(a.transform(X), b.transform(Xb))
    np.testing.assert_array_equal(a.score_samples(X), b.score_samples(Xb))
    # X itself is left alone
    assert not np.all((X == 0) | (X == 1))


def test_binarize_keeps_missing_entries_for_impute():
    rng = np.random.default_rng(2)
    X = rng.random((40, 4))
    est = make("BayesianSBN", binarize=0.5).fit(X)
    Xm = X.copy()
    Xm[0, 1] = np.nan
    out = est.impute(Xm)
    assert 0.0 <= out[0, 1] <= 1.0                  # a conditional probability
    np.testing.assert_array_equal(np.delete(out, 0, axis=0), np.delete(X > 0.5, 0, axis=0))


# --- feature names and set_output -------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_get_feature_names_out_matches_transform(name):
    X = data(name)
    est = make(name).fit(X)
    names = est.get_feature_names_out()
    Z = est.transform(X)
    assert names.shape == (Z.shape[1],)
    prefix = name.lower()
    assert list(names) == [f"{prefix}{i}" for i in range(Z.shape[1])]


@pytest.mark.parametrize("name", ALL)
def test_pandas_pipeline(name):
    pd = pytest.importorskip("pandas")
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X = data(name)
    index = [f"row{i}" for i in range(len(X))]
    df = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])], index=index)
    pipe = make_pipeline(make(name), StandardScaler()).set_output(transform="pandas")
    out = pipe.fit_transform(df)
    est = pipe[0]
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == list(est.get_feature_names_out())
    assert list(out.index) == index
    assert list(est.feature_names_in_) == list(df.columns)
    # the bare estimator too, and its numbers are those of the default output
    Z = est.transform(df)
    assert isinstance(Z, pd.DataFrame)
    np.testing.assert_allclose(Z.to_numpy(), est.set_output(transform="default").transform(df))


def test_deep_lda_all_layers_under_pandas_output_names_the_problem():
    pytest.importorskip("pandas")
    X = data("DeepLDA")
    est = make("DeepLDA").fit(X).set_output(transform="pandas")
    with pytest.raises(ValueError, match="all_layers=True"):
        est.transform(X, all_layers=True)
    layers = est.set_output(transform="default").transform(X, all_layers=True)
    assert [t.shape[1] for t in layers] == [3, 2]


# --- streaming cost: log Z only when a score needs it ---------------------------------


def test_dbm_log_partition_is_lazy_and_cached_against_the_parameters(monkeypatch):
    from skdgm.dbm import _model as dbm_model

    calls = []
    real = dbm_model.ais_log_partition

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(dbm_model, "ais_log_partition", counting)
    # 20 odd units: above the enumeration limit, so log Z is an AIS estimate
    est = make("DBMCAST", n_components=(20, 3), n_ais_betas=20, n_ais_runs=4)
    X = data("DBMCAST", n=40, d=6)
    for start in range(0, 40, 10):
        est.partial_fit(X[start:start + 10])
    assert calls == []                       # training never estimates log Z
    first = est.score_samples(X)
    assert len(calls) == 1
    log_z = est.log_partition_
    np.testing.assert_array_equal(est.score_samples(X), first)
    assert len(calls) == 1                   # cached while the parameters stand
    est.partial_fit(X[:10])                  # any update invalidates it
    assert est.log_partition_ != log_z
    assert len(calls) == 2
    # the cached estimate is the one an explicit call with the same seed gives
    again = make("DBMCAST", n_components=(20, 3), n_ais_betas=20, n_ais_runs=4)
    again.__dict__.update({k: v for k, v in est.__dict__.items() if k != "_log_z_cache"})
    assert again.log_partition_ == est.log_partition_


def test_dbm_log_partition_unavailable_before_fit():
    est = make("DBMCAST")
    assert not hasattr(est, "log_partition_")
    assert not hasattr(est, "log_partition_std_")


# --- parameters the chosen option does not read -----------------------------------

# (estimator, option that ignores the parameter, parameter=value, option that reads it)
UNUSED = [
    ("BayesianSBN", dict(inference="gibbs"), dict(learning_rate=0.1),
     dict(inference="dsghmc_gibbs")),
    ("BayesianSBN", dict(inference="vb"), dict(batch_size=10), dict(inference="online_vb")),
    ("BayesianSBN", dict(inference="dsghmc_nais"), dict(gibbs_sweeps=2),
     dict(inference="dsghmc_gibbs")),
    ("DBMCAST", dict(sampler="sap"), dict(swap="last_visit"), dict(sampler="cast")),
    ("DBMCAST", dict(sampler="cast"), dict(fpcd_decay=0.5), dict(sampler="fpcd")),
    ("DBMCAST", dict(pretrain=False), dict(pretrain_n_iter=2), dict(pretrain=True)),
    ("GaussianBernoulliRBM", dict(sampler="gibbs"), dict(langevin_step_size=0.1),
     dict(sampler="langevin")),
    ("GaussianBernoulliRBM", dict(sampler="langevin"), dict(langevin_steps=3),
     dict(sampler="gibbs_langevin")),
    ("DeepLDA", dict(sampler="gibbs"), dict(learning_rate=0.5), dict(sampler="sgrld")),
]


@pytest.mark.parametrize("name, option, param, reader", UNUSED,
                         ids=[f"{u[0]}-{next(iter(u[2]))}" for u in UNUSED])
def test_parameter_the_option_ignores_warns(name, option, param, reader):
    import warnings

    X = data(name, n=30)
    (pname, value), = param.items()
    (switch, chosen), = option.items()
    est = make(name, **option, **param)
    with pytest.warns(UserWarning, match=rf": {pname}=.*{switch}={chosen!r}") as rec:
        est.fit(X)
    (w,) = [r for r in rec if f": {pname}=" in str(r.message)]
    assert repr(reader[switch]) in str(w.message)  # names the option that reads it
    # the same value under an option that reads it, or the default: no such warning
    import inspect

    default = inspect.signature(getattr(skdgm, name)).parameters[pname].default
    for est in (make(name, **reader, **param), make(name, **option, **{pname: default})):
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=f".*: {pname}=.* has no effect with",
                                    category=UserWarning)
            est.fit(X)


def test_grid_over_learning_rate_with_gibbs_warns():
    from sklearn.model_selection import GridSearchCV

    X = data("BayesianSBN", n=30)
    # explicit: the default "auto" may run DSGHMC, which reads learning_rate
    grid = GridSearchCV(make("BayesianSBN", inference="gibbs"), {"learning_rate": [0.01, 0.1]},
                        cv=2)
    with pytest.warns(UserWarning, match="learning_rate=0.1 has no effect with "
                                         "inference='gibbs'"):
        grid.fit(X)


# --- dtypes ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_float32_in_float32_out(name):
    X64 = data(name)
    X32 = X64.astype(np.float32)
    est = make(name).fit(X32)
    assert "float32" in est.__sklearn_tags__().transformer_tags.preserves_dtype
    Z32 = est.transform(X32)
    assert Z32.dtype == np.float32
    Z64 = est.transform(X64)
    assert Z64.dtype == np.float64
    # same numbers, up to the float32 rounding of the output
    np.testing.assert_allclose(Z32, Z64, rtol=1e-6, atol=1e-7)
    # integer input (counts, 0/1) gives float64
    assert est.transform(X64.astype(np.int64)).dtype == np.float64


# --- DeepLDA input tags and round_counts ------------------------------------------------


def test_deep_lda_tags_do_not_claim_categorical_input():
    tags = make("DeepLDA").__sklearn_tags__()
    assert not tags.input_tags.categorical
    assert tags.input_tags.positive_only and tags.input_tags.sparse


def test_deep_lda_round_counts_rounds_like_rint():
    X = np.random.default_rng(3).gamma(1.0, 2.0, (40, 6))
    with pytest.raises(ValueError, match="non-integer"):
        make("DeepLDA").fit(X)
    a = make("DeepLDA", round_counts=True).fit(X)
    b = make("DeepLDA").fit(np.rint(X))
    np.testing.assert_array_equal(a.transform(X), b.transform(np.rint(X)))
    assert not np.all(X == np.rint(X))      # the input itself is left alone


# --- sparse input ---------------------------------------------------------------------

SPARSE = ["BayesianSBN", "DBMCAST", "GaussianBernoulliRBM"]


def _sparse_data(name, n=60):
    X = data(name, n=n)
    if name == "GaussianBernoulliRBM":
        X = np.where(np.abs(X) > 1.0, X, 0.0)  # mostly zeros, as sparse data are
    return X


@pytest.mark.parametrize("name", SPARSE + ["DeepLDA"])
def test_sparse_input_gives_the_dense_results(name):
    import scipy.sparse as sp

    X = _sparse_data(name)
    assert make(name).__sklearn_tags__().input_tags.sparse
    # small minibatches, so that the sparse paths run over several chunks
    dense = make(name, batch_size=16).fit(X)
    sparse = make(name, batch_size=16).fit(sp.csr_matrix(X))
    for method in ("transform", "score_samples"):
        expect = getattr(dense, method)(X)
        # the same model scores sparse input by chunks exactly as dense input
        np.testing.assert_allclose(getattr(dense, method)(sp.csr_matrix(X)), expect,
                                   rtol=1e-12, atol=1e-12)
        # training on sparse input runs the same updates; only the summation order
        # of sparse products differs (DBMCAST's pre-training), hence not bit for bit
        np.testing.assert_allclose(getattr(sparse, method)(sp.csr_matrix(X)), expect,
                                   rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", SPARSE)
def test_sparse_input_is_densified_one_minibatch_at_a_time(name, monkeypatch):
    import scipy.sparse as sp

    X = sp.csr_matrix(_sparse_data(name, n=80))
    est = make(name, batch_size=16)
    if name == "BayesianSBN":
        # partial_fit streams with online VB; fit below runs the default Gibbs,
        # which reads the CSR rows batch_size at a time too.
        est.set_params(inference="online_vb")
    seen = []
    real = sp.csr_matrix.toarray

    def recording(self, *args, **kwargs):
        seen.append(self.shape[0])
        return real(self, *args, **kwargs)

    monkeypatch.setattr(sp.csr_matrix, "toarray", recording)
    for start in range(0, 80, 16):
        est.partial_fit(X[start:start + 16])
    if name == "BayesianSBN":
        est.set_params(inference="gibbs")
    est.fit(X)
    est.transform(X)
    est.score_samples(X)
    assert seen and max(seen) <= max(16, CHEAP[name].get("n_chains", 0))


# --- the shared helpers -----------------------------------------------------------------


def test_binarize_input_dense_sparse_and_nan():
    import scipy.sparse as sp

    from skdgm._core.base import binarize_input

    X = np.array([[0.0, 0.2, 0.7], [1.5, np.nan, 0.5]])
    np.testing.assert_array_equal(binarize_input(np.nan_to_num(X), 0.5),
                                  [[0, 0, 1], [1, 0, 0]])
    out = binarize_input(X, 0.5, allow_nan=True)
    assert np.isnan(out[1, 1]) and out[0, 2] == 1
    S = binarize_input(sp.csr_matrix(np.nan_to_num(X)), 0.1)
    np.testing.assert_array_equal(S.toarray(), [[0, 1, 1], [1, 0, 1]])
    assert S.nnz == 4                       # the thresholded-away entries are dropped
    with pytest.raises(ValueError, match="negative"):
        binarize_input(sp.csr_matrix(X), -0.5)
    est = make("DBMCAST", binarize=-0.5)
    with pytest.raises(ValueError, match="implicit zero"):
        est.fit(sp.csr_matrix(np.eye(4)))


def test_map_row_chunks_and_float_dtype():
    import scipy.sparse as sp

    from skdgm._core.base import float_dtype, map_row_chunks

    X = np.random.default_rng(0).random((23, 4))
    X[X < 0.5] = 0

    def f(V):
        return V.sum(axis=1), V * 2

    whole = f(X)
    for chunk in (1, 5, 23, 100):
        parts = map_row_chunks(f, sp.csr_matrix(X), chunk)
        assert isinstance(parts, tuple)
        for a, b in zip(parts, whole):
            np.testing.assert_allclose(a, b)
    assert float_dtype(X.astype(np.float32)) == np.float32
    assert float_dtype(sp.csr_matrix(X, dtype=np.float32)) == np.float32
    assert float_dtype([[1, 0]]) == np.float64
    assert float_dtype(X.astype(np.int8)) == np.float64


def test_dbm_log_partition_survives_pickling():
    import pickle

    est = make("DBMCAST", n_components=(20, 3), n_ais_betas=20, n_ais_runs=4,
               random_state=None).fit(data("DBMCAST", n=40, d=6))
    log_z = est.log_partition_
    again = pickle.loads(pickle.dumps(est))
    assert again.log_partition_ == log_z     # the estimate travels; no fresh AIS run
