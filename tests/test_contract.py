"""The training contract of issue 14, run for all four estimators at cheap sizes.

Every estimator's ``fit`` / ``partial_fit`` goes through
:class:`skdgm._core.base.BaseGenerativeModel`: validation of parameters (with the
elements of sequences and the entries of dicts), atomic failure (a failed call
leaves the estimator exactly as it was), hyper-parameters read at every call
(``set_params`` between ``partial_fit`` calls), and one divergence rule.
"""

import numbers
import pickle

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from skdgm import BayesianSBN, DBMCAST, DeepLDA, GaussianBernoulliRBM
from skdgm._core.base import DIVERGENCE_BOUND
from skdgm.exceptions import DivergenceError

# Cheap settings; SBN streams with online VB (its default Gibbs has no partial_fit).
CHEAP = {
    "BayesianSBN": dict(n_components=(3,), inference="online_vb", n_iter=2,
                        n_posterior_samples=2, batch_size=20, random_state=0),
    "DBMCAST": dict(n_components=(4, 3), n_iter=1, n_chains=8, batch_size=20,
                    pretrain_n_iter=1, n_temperatures=4, beta_min=0.6, swap_interval=3,
                    n_ais_betas=20, n_ais_runs=4, random_state=0),
    "DeepLDA": dict(n_components=(3, 2), n_iter=1, batch_size=20, local_burn_in=2,
                    local_samples=2, n_posterior_samples=2, random_state=0),
    "GaussianBernoulliRBM": dict(n_components=3, cd_steps=3, langevin_steps=2, n_iter=1,
                                 batch_size=20, random_state=0),
}
CLASSES = {c.__name__: c for c in (BayesianSBN, DBMCAST, DeepLDA, GaussianBernoulliRBM)}
NAMES = sorted(CLASSES)


def make(name, **kw):
    return CLASSES[name](**{**CHEAP[name], **kw})


def data(name, n=40, d=5, seed=0):
    rng = np.random.default_rng(seed)
    if name in ("BayesianSBN", "DBMCAST"):
        return (rng.random((n, d)) < 0.4).astype(float)
    if name == "DeepLDA":
        return rng.poisson(2.0, (n, d)).astype(float)
    return rng.normal(size=(n, d))


def bad_data(name, d=5):
    """Input of the right shape that the estimator must reject (after validate_data)."""
    X = data(name, d=d)
    if name == "DeepLDA":
        X[0, 0] = -1.0                # negative count
    elif name == "GaussianBernoulliRBM":
        X[0, 0] = np.inf
    else:
        X[0, 0] = 0.5                 # not binary
    return X


def frozen(est):
    """The whole fitted state of an estimator (all but its parameters), as bytes."""
    params = set(est.get_params(deep=False))
    return pickle.dumps({k: v for k, v in est.__dict__.items() if k not in params})


class Fault(RuntimeError):
    pass


def inject_fault(monkeypatch, est, after=1):
    """Make the estimator fail mid-training, after ``after`` logged iterations."""
    calls = {"n": 0}
    original = type(est)._log_iteration

    def failing(self, **metrics):
        original(self, **metrics)
        calls["n"] += 1
        if calls["n"] >= after:
            raise Fault("injected fault")

    monkeypatch.setattr(type(est), "_log_iteration", failing)


def assert_unfitted(est, name):
    assert set(est.__dict__) == set(CLASSES[name]().get_params()), sorted(est.__dict__)
    with pytest.raises(NotFittedError):
        check_is_fitted(est)


# --------------------------------------------------------------- atomic failure
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_rejected_input_leaves_unfitted(name, method):
    est = make(name)
    with pytest.raises(ValueError):
        getattr(est, method)(bad_data(name))
    assert_unfitted(est, name)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_fault_mid_training_leaves_unfitted(name, method, monkeypatch):
    est = make(name)
    inject_fault(monkeypatch, est)
    with pytest.raises(Fault):
        getattr(est, method)(data(name))
    assert_unfitted(est, name)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_failed_call_keeps_fitted_model(name, method, monkeypatch):
    X = data(name)
    est = getattr(make(name), method)(X)
    before = frozen(est)
    Z = est.transform(X)
    # another feature count: fit rejects it after reset, partial_fit at validation
    with pytest.raises(ValueError):
        getattr(est, method)(bad_data(name, d=7))
    assert frozen(est) == before
    with pytest.raises(ValueError):
        getattr(est, method)(bad_data(name))
    assert frozen(est) == before
    inject_fault(monkeypatch, est)
    with pytest.raises(Fault):
        getattr(est, method)(X)
    assert frozen(est) == before
    monkeypatch.undo()
    np.testing.assert_array_equal(est.transform(X), Z)


@pytest.mark.parametrize("name", NAMES)
def test_bad_params_after_fit_keep_model(name):
    est = make(name).partial_fit(data(name))
    before = frozen(est)
    est.set_params(batch_size=0)
    with pytest.raises(ValueError, match="batch_size"):
        est.partial_fit(data(name))
    est.set_params(batch_size=CHEAP[name]["batch_size"])
    assert frozen(est) == before


# ------------------------------------------------------------------ validation
_SIZES = {"BayesianSBN": "n_components", "DBMCAST": "n_components",
          "DeepLDA": "n_components"}


@pytest.mark.parametrize("name", sorted(_SIZES))
@pytest.mark.parametrize("sizes, where", [((2.5,), 0), (("3",), 0), ((3, 2.5), 1),
                                          ((3, 0), 1), ((3, True), 1)])
def test_layer_sizes_must_be_positive_ints(name, sizes, where):
    param = _SIZES[name]
    est = make(name, **{param: sizes})
    with pytest.raises(ValueError, match=rf"{param}\[{where}\]"):
        est.fit(data(name))
    assert_unfitted(est, name)


@pytest.mark.parametrize("value", [2.5, "3", 0])
def test_grbm_n_components_must_be_positive_int(value):
    est = make("GaussianBernoulliRBM", n_components=value)
    with pytest.raises(ValueError, match="n_components"):
        est.fit(data("GaussianBernoulliRBM"))


@pytest.mark.parametrize("prior, entry", [
    ("normal", {"bias_var": -1}), ("normal", {"weight_var": 0}),
    ("student_t", {"df": 0}), ("student_t", {"scale": -0.1}),
    ("tpbn", {"a": -1}), ("tpbn", {"b": float("nan")}), ("tpbn", {"a": "1"}),
])
def test_sbn_prior_params_entries(prior, entry):
    est = make("BayesianSBN", prior=prior, prior_params=entry)
    (key,) = entry
    with pytest.raises(ValueError, match=rf"prior_params\['{key}'\]"):
        est.fit(data("BayesianSBN"))
    assert_unfitted(est, "BayesianSBN")
    with pytest.raises(ValueError, match="unknown prior_params"):
        make("BayesianSBN", prior_params={"nope": 1.0}).fit(data("BayesianSBN"))


def test_deep_lda_eta_entries():
    est = make("DeepLDA", eta=(0.1, -1.0))
    with pytest.raises(ValueError, match=r"eta\[1\]"):
        est.fit(data("DeepLDA"))
    assert_unfitted(est, "DeepLDA")


def test_sbn_learning_offset_zero_trains():
    """The boundary learning_offset=0 is allowed, so it must work (rho_0 = 1)."""
    X = data("BayesianSBN")
    est = make("BayesianSBN", learning_offset=0.0).fit(X)
    assert est.history_["rho"][0] == 1.0
    assert np.all(np.isfinite(est.score_samples(X)))
    make("BayesianSBN", learning_offset=0.0).partial_fit(X).partial_fit(X)


def test_dbm_learning_rate_zero_rejected():
    """A zero rate would train nothing: the constraint excludes it."""
    est = make("DBMCAST", learning_rate=0.0)
    with pytest.raises(ValueError, match="learning_rate"):
        est.fit(data("DBMCAST"))
    assert_unfitted(est, "DBMCAST")


def _closed_boundaries():
    """(estimator, parameter, value) for every closed end of an Interval constraint."""
    out = []
    for name in NAMES:
        for param, constraints in CLASSES[name]._parameter_constraints.items():
            for c in constraints:
                if not isinstance(c, Interval):
                    continue
                ends = [c.left] if c.closed in ("left", "both") else []
                ends += [c.right] if c.closed in ("right", "both") else []
                for v in ends:
                    if v is not None:
                        v = int(v) if c.type is numbers.Integral else float(v)
                        out.append((name, param, v))
    return out


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name, param, value", _closed_boundaries())
def test_allowed_boundaries_work(name, param, value):
    """A value the constraints allow trains and scores (no ZeroDivisionError & co)."""
    X = data(name)
    make(name, **{param: value}).fit(X).score_samples(X[:5])
    make(name, **{param: value}).partial_fit(X).partial_fit(X).score_samples(X[:5])


@pytest.mark.parametrize("name", NAMES)
def test_partial_fit_validates_set_params(name):
    """Parameters set between partial_fit calls are validated like at the first call."""
    est = make(name).partial_fit(data(name))
    est.set_params(random_state="not a seed")
    with pytest.raises(ValueError, match="random_state"):
        est.partial_fit(data(name))


@pytest.mark.parametrize("name", NAMES)
def test_n_jobs_zero_after_partial_work(name):
    """n_jobs=0 means nothing to joblib: rejected up front, the model kept."""
    est = make(name).partial_fit(data(name))
    before = frozen(est)
    est.set_params(n_jobs=0)
    with pytest.raises(ValueError, match="n_jobs"):
        est.partial_fit(data(name, n=250))
    assert frozen(est) == before
    est.set_params(n_jobs=-1)
    est.partial_fit(data(name))


def test_deep_lda_counts_beyond_int64_keep_model():
    X = data("DeepLDA")
    est = make("DeepLDA").partial_fit(X)
    before = frozen(est)
    big = X.copy()
    big[0, 0] = 2.0 ** 63
    with pytest.raises(ValueError, match="int64"):
        est.partial_fit(big)
    assert frozen(est) == before


# ------------------------------------------------------ set_params between calls
def test_sbn_online_vb_schedule_read_each_call():
    X = data("BayesianSBN")
    est = make("BayesianSBN").partial_fit(X)
    est.set_params(learning_offset=100.0, learning_decay=0.5)
    est.partial_fit(X)
    # 40 rows in minibatches of 20: steps t = 0, 1 in the first call, 2, 3 in this one
    assert est.history_["rho"][-1] == pytest.approx((100.0 + 3) ** -0.5)


def test_sbn_dsghmc_step_and_friction_read_each_call():
    X = data("BayesianSBN")
    est = make("BayesianSBN", inference="dsghmc_gibbs", n_sghmc_steps=2,
               learning_rate=0.01).partial_fit(X)
    est.set_params(learning_rate=0.5, friction=0.3)
    est.partial_fit(X)
    # the SGHMC step is learning_rate / N (N = samples seen when total_samples is None)
    assert est.history_["step_size"][-1] == pytest.approx(0.5 / (2 * len(X)))
    assert est._engine.trainer.sampler.friction == 0.3


def test_sbn_dsghmc_friction_changes_the_chain():
    """Behaviour, not only the attribute: a new friction gives another chain."""
    X = data("BayesianSBN")
    runs = []
    for friction in (0.1, 0.9):
        est = make("BayesianSBN", inference="dsghmc_gibbs", n_sghmc_steps=2).partial_fit(X)
        est.set_params(friction=friction)
        runs.append(est.partial_fit(X).coefs_[0])
    assert not np.allclose(runs[0], runs[1])


@pytest.mark.parametrize("sampler", ["cast", "adaptive_st"])
def test_dbm_tempering_read_each_call(sampler):
    X = data("DBMCAST")
    est = make("DBMCAST", sampler=sampler).partial_fit(X)
    est.set_params(beta_min=0.2, wl_gain=3.0)
    est.partial_fit(X)
    obj = est._sampler_obj
    np.testing.assert_allclose(obj.betas, np.linspace(1.0, 0.2, 4))
    assert obj.gain(0) == pytest.approx(3.0)


def test_dbm_fpcd_rate_read_each_call():
    X = data("DBMCAST")
    est = make("DBMCAST", sampler="fpcd").partial_fit(X)
    est.set_params(fpcd_learning_rate=0.0, fpcd_decay=0.0)
    est.partial_fit(X)
    # no fast rate and full decay: the fast weights are exactly zero after an update
    assert all(np.all(f == 0) for f in est._sampler_obj.fast_coefs)


def test_deep_lda_eta_read_each_call():
    X = data("DeepLDA")
    est = make("DeepLDA").partial_fit(X)
    est.set_params(eta=0.37)
    est.partial_fit(X)
    assert est._etas_ == [0.37, 0.37]


def test_deep_lda_eta_changes_the_update():
    """Behaviour, not only the attribute: the same stream with another eta differs."""
    X = data("DeepLDA")
    runs = []
    for eta in (None, 50.0):
        est = make("DeepLDA").partial_fit(X)
        est.set_params(eta=eta)
        runs.append(est.partial_fit(X).topics_[0])
    assert not np.allclose(runs[0], runs[1])


def test_grbm_learning_rate_read_each_call():
    X = data("GaussianBernoulliRBM")
    est = make("GaussianBernoulliRBM").partial_fit(X)
    W = est.components_.copy()
    est.set_params(learning_rate=1e-12)
    est.partial_fit(X)
    np.testing.assert_allclose(est.components_, W, atol=1e-9)


# ------------------------------------------------------------------ divergence
# (diverging settings, recovering settings) per estimator
_DIVERGE = {
    # A step far beyond the stability limit of a stiff prior (eta / weight_var >> 2)
    # makes the SGHMC iterates grow geometrically.
    "BayesianSBN": (dict(learning_rate=1.0), dict(learning_rate=1e-9)),
    "DBMCAST": (dict(learning_rate=1e250), dict(learning_rate=1e-3)),
    # TLASGR's rates are capped (it cannot diverge); SGRLD's expanded mean can.
    "DeepLDA": (dict(learning_rate=1e300), dict(learning_rate=1e-3)),
    "GaussianBernoulliRBM": (dict(learning_rate=1e250, clip_grad_norm=None),
                             dict(learning_rate=1e-3)),
}
_DIVERGE_BASE = {
    "BayesianSBN": dict(inference="dsghmc_gibbs", n_sghmc_steps=2, prior="normal",
                        prior_params={"weight_var": 1e-8}, learning_rate=1e-9),
    "DeepLDA": dict(sampler="sgrld"),
}


def _params(est):
    return est._divergence_params()[0]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", NAMES)
def test_divergence_raises_restores_and_recovers(name):
    X = data(name)
    est = make(name, **_DIVERGE_BASE.get(name, {})).partial_fit(X)
    before = frozen(est)
    bad, good = _DIVERGE[name]
    est.set_params(**bad)
    with pytest.raises(DivergenceError):
        for _ in range(20):
            est.partial_fit(X)
            # a call that did not diverge yet must still be within the bound
            params, bound = est._divergence_params()
            for v in params.values():
                for a in (v if isinstance(v, list) else [v]):
                    assert np.all(np.abs(a) <= bound)
            before = frozen(est)
    assert frozen(est) == before
    est.set_params(**good)
    est.partial_fit(X)
    for v in _params(est).values():
        for a in (v if isinstance(v, list) else [v]):
            assert np.all(np.isfinite(a))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", NAMES)
def test_divergence_in_fit_leaves_unfitted(name):
    bad, _ = _DIVERGE[name]
    est = make(name, **{**_DIVERGE_BASE.get(name, {}), **bad, "n_iter": 20})
    with pytest.raises(DivergenceError):
        est.fit(data(name))
    assert_unfitted(est, name)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name, base, big", [
    ("BayesianSBN", dict(inference="dsghmc_gibbs", n_sghmc_steps=2), 1e12),
    ("DBMCAST", {}, 1e20),
])
def test_runaway_growth_is_divergence(name, base, big):
    """Finite but huge parameters (1e301 came out of large steps, unflagged) diverge too."""
    X = data(name)
    est = make(name, **base).partial_fit(X)
    before = frozen(est)
    est.set_params(learning_rate=big)
    with pytest.raises(DivergenceError, match="grew beyond"):
        est.partial_fit(X)
    assert frozen(est) == before
    assert DIVERGENCE_BOUND == 1e8


# ---------------------------------------------------------------- one vocabulary
# The names every estimator shares (doc/api.rst, "One vocabulary"); the old
# dialects must be gone.
SHARED_NAMES = {"n_components", "n_iter", "batch_size", "learning_rate", "random_state",
                "verbose", "n_jobs"}
RETIRED_NAMES = {"hidden_layer_sizes", "step_size", "step_offset", "step_decay",
                 "use_cython", "kernels", "fast"}


@pytest.mark.parametrize("name", NAMES)
def test_one_vocabulary(name):
    params = set(CLASSES[name]().get_params())
    assert SHARED_NAMES <= params, SHARED_NAMES - params
    assert not params & RETIRED_NAMES
    # a schedule's offset and decay go by the same names wherever one exists
    if {"learning_offset", "learning_decay"} & params:
        assert {"learning_offset", "learning_decay"} <= params


@pytest.mark.parametrize("name", NAMES)
def test_n_components_int_or_tuple(name):
    """An int is one hidden layer of that size, for every estimator."""
    X = data(name)
    one = make(name, n_components=3).fit(X)
    assert one.transform(X[:4]).shape[0] == 4
    if name != "GaussianBernoulliRBM":    # one hidden layer by construction
        a = make(name, n_components=(3,)).fit(X).transform(X[:4])
        np.testing.assert_array_equal(a, one.transform(X[:4]))


@pytest.mark.parametrize("name", NAMES)
def test_n_iter_counts_passes(name):
    """``n_iter_`` counts passes over the data in fit, and one per partial_fit."""
    X = data(name)
    est = make(name, n_iter=3, batch_size=10).fit(X)    # 4 minibatches per pass
    assert est.n_iter_ == 3
    est.partial_fit(X[:10])
    assert est.n_iter_ == 4


@pytest.mark.parametrize("name", NAMES)
def test_random_state_types_accepted_alike(name):
    """None, int, SeedSequence, Generator and RandomState are all accepted; an int and
    a SeedSequence are seeds (the same value gives the same fit, and the caller's
    SeedSequence is not advanced)."""
    X = data(name)
    ref = make(name, random_state=0).fit(X).transform(X[:5])
    seq = np.random.SeedSequence(0)
    a = make(name, random_state=seq).fit(X).transform(X[:5])
    b = make(name, random_state=seq).fit(X).transform(X[:5])
    np.testing.assert_array_equal(a, ref)
    np.testing.assert_array_equal(b, ref)
    assert seq.n_children_spawned == 0
    for rs in (None, np.random.default_rng(0), np.random.RandomState(0)):
        assert np.all(np.isfinite(make(name, random_state=rs).fit(X).transform(X[:5])))


def test_dbm_n_temperatures_change_between_calls():
    """The tempered chains cannot change their number of levels mid-stream: a clear
    error naming the parameter, the model kept; fit starts again with the new count."""
    X = data("DBMCAST")
    est = make("DBMCAST").partial_fit(X)
    before = frozen(est)
    est.set_params(n_temperatures=7)
    with pytest.raises(ValueError, match="n_temperatures changed from 4 to 7"):
        est.partial_fit(X)
    assert frozen(est) == before
    est.fit(X)
    assert est.n_iter_ == 1 and np.all(np.isfinite(est.score_samples(X[:3])))


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", NAMES)
def test_partial_fit_is_one_pass_of_minibatch_updates(name, monkeypatch):
    """partial_fit(X) makes one update per minibatch, ceil(len(X) / batch_size)
    near-equal minibatches of at most batch_size rows (an X of at most batch_size
    rows is one update), and adds one to n_iter_."""
    X = data(name, n=45)
    est = make(name, batch_size=20)
    if name == "BayesianSBN":
        from skdgm.sbn._engines import OnlineVBEngine

        steps = []
        real = OnlineVBEngine.step
        monkeypatch.setattr(OnlineVBEngine, "step",
                            lambda self, X, *a, **k: steps.append(len(X)) or real(self, X, *a, **k))
        est.partial_fit(X[:20])
        est.partial_fit(X)
        assert steps == [20, 15, 15, 15]
    else:
        est.partial_fit(X[:20])
        assert est.n_updates_ == 1
        est.partial_fit(X)
        assert est.n_updates_ == 4
    assert est.n_iter_ == 2


def test_one_name_for_the_cython_numpy_switch():
    """Kernels choose between Cython and their NumPy twin by ``kernels={"cython",
    "numpy"}`` only; twins are named ``<kernel>_numpy``."""
    import importlib
    import inspect
    import pkgutil

    import skdgm

    bad = []
    for info in pkgutil.walk_packages(skdgm.__path__, "skdgm."):
        mod = importlib.import_module(info.name)
        for name, obj in vars(mod).items():
            if getattr(obj, "__module__", None) != mod.__name__:
                continue
            funcs = [obj] if inspect.isfunction(obj) else (
                [f for f in vars(obj).values() if inspect.isfunction(f)]
                if inspect.isclass(obj) else [])
            for f in funcs:
                sig = inspect.signature(f).parameters
                # a switch has a default (cast_swap's ``fast`` is CAST's fast chains)
                params = {p for p, v in sig.items() if v.default is not inspect.Parameter.empty}
                if params & {"fast", "use_cython", "kernel", "use_numpy", "backend"}:
                    bad.append(f"{info.name}.{f.__qualname__}")
            if inspect.isfunction(obj) and name.endswith(("_py", "_np")):
                bad.append(f"{info.name}.{name}")
    assert not bad, bad


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", NAMES)
def test_history_is_capped_for_endless_streams(name, monkeypatch):
    """history_ keeps the latest entries only (the cap is lowered here to test it)."""
    import skdgm._core.base as base_mod
    import skdgm.dbm._estimator as dbm_mod
    import skdgm.deep_lda._estimator as lda_mod
    import skdgm.grbm._estimator as grbm_mod

    monkeypatch.setattr(base_mod, "HISTORY_CAP", 3)
    monkeypatch.setattr(dbm_mod, "HISTORY_CAP", 3)
    monkeypatch.setattr(grbm_mod, "_MAX_HISTORY", 3)
    monkeypatch.setattr(lda_mod, "_MAX_HISTORY", 3)
    est = make(name)
    X = data(name, n=20)
    for _ in range(6):
        est.partial_fit(X)
    assert est.n_iter_ == 6
    assert all(len(v) <= 3 for v in est.history_.values()), {
        k: len(v) for k, v in est.history_.items()}
