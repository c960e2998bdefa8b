"""What ``score_samples`` costs per row, and how accurate it is (issue 25).

BayesianSBN (``--only sbn_exact sbn_mnist``): CPU-ms per row, the reported per-row
standard error, the seed-to-seed standard deviation (two seeds on the same rows,
robust: ``median |a - b| / (0.6745 sqrt 2)``, the normal s.d. that median implies:
the noise a per-row s.e. should report; before issue 25's third session the
median of ``|a - b| / sqrt 2`` was printed, 0.67 of it), the share of rows with
``|a - b| <= 2 hypot(se_a, se_b)`` (0.95 when the errors are honest and normal), and
the error of the mean ``log p`` of

* ``method="stratified"`` (the default for 17-64 hidden units since issue 25's
  second session: the distinct states of short tempered Gibbs chains summed
  exactly, importance draws for the rest),
* ``method="warm_ais"`` (the previous default, now above 64 units: AIS from a
  per-row proposal fitted by a short Gibbs chain, few temperatures),
* ``method="ais"`` at the estimator's defaults (AIS from the prior, 100
  temperatures x 10 runs, the default before that),

against the exact ``log p`` of an enumerable model (16 hidden units, fitted on
2,000 binarised MNIST rows, 500 test images; ``"ais"`` on the first 100) and, on
MNIST-size models (200 hidden units trained by online VB, one epoch of 10,000
rows; the default models at 10,000 and 50,000 rows, 40 units, Gibbs, which
``bench_sbn_scaling_defaults.py --only sbn_10k`` / ``sbn_50k`` save as
``sbn_default_10000.joblib`` / ``sbn_default_50000.joblib`` in ``results/``, read from
``--models-dir`` and skipped when absent), against the better of
two long estimates per image on ``--n-ref`` test images: AIS from the prior with
1,000 temperatures x 10 runs, and ``"stratified"`` with 256 chains x 20 sweeps and
256 draws. Both are stochastic lower bounds in expectation (the visited-state sum
inside the second is a hard one), so the higher of the two is the closer.

DBMCAST and GaussianBernoulliRBM (``--only dbm grbm``): models at their default
sizes trained briefly on 10,000 MNIST rows (DBMCAST: ``--dbm-passes``, 3 and 12),
then ``log Z`` estimated once (timed apart), then ``score_samples`` on the 10,000
test rows, against one bare feed-forward pass over the same rows (the affine maps
and sigmoids / softplus of every layer, bottom-up, float64) made two ways, on all
rows at once and in blocks of 1,000 rows (faster: the temporaries stay in cache).
The calls take turns for ``--reps`` rounds and each one's median CPU time is
reported (issue 25's fourth session: single sub-second timings on this shared host
moved by up to 2x). For DBMCAST the fast bound (default), the fast bound with every
start swept in every row (the rule before the screen of issue 25's fourth session),
the fast bound from the doubled start alone, and the tight bound (one round), with
the differences per row; and ``score_samples`` as it was at ``--before`` (default
28f205d, before issue 25's session-37 speed-up: its input check and its
``_scoring``/``_model`` modules read from git and run in this process) next to the
current one, side by side in the same rounds.

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 SKDGM_DATA=... nice python \\
        benchmarks/bench_scoring_cost.py > benchmarks/results/scoring_cost.txt

Results: ``benchmarks/results/scoring_cost.txt``. CPU seconds of this process, one
BLAS thread.
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402
from _common import header, shown  # noqa: E402


def mnist(home, binary=True):
    from skdgm import datasets

    if binary:
        tr = datasets.fetch_binarized_mnist(data_home=home, subset="train",
                                            download_if_missing=False).data
        te = datasets.fetch_binarized_mnist(data_home=home, subset="test",
                                            download_if_missing=False).data
        return np.asarray(tr, dtype=np.float64), np.asarray(te, dtype=np.float64)
    b = datasets.fetch_mnist(data_home=home, subset="all", download_if_missing=False)
    X = np.asarray(b.data, dtype=np.float64)
    return X[:60000], X[60000:]


def timed(fn, *args, **kwargs):
    t = time.process_time()
    out = fn(*args, **kwargs)
    return out, time.process_time() - t


def sbn_line(label, est, X, method, ref=None, spread=False):
    (lp, se), cpu = timed(est.score_samples, X, method=method, return_std=True)
    err = ""
    if ref is not None:
        d = lp - ref
        err = (f"  error vs reference mean {d.mean():+7.3f} median {np.median(d):+7.3f} "
               f"min {d.min():+7.2f}; |error| <= 2 s.e. on {np.mean(np.abs(d) <= 2 * se):.0%}")
    if spread:
        # the same rows under another seed: the noise the s.e. should report
        other, se1 = est.set_params(random_state=1).score_samples(X, method=method,
                                                                  return_std=True)
        est.set_params(random_state=0)
        d = np.abs(lp - other)
        err += (f"  seed-to-seed s.d. {np.median(d) / (0.6745 * np.sqrt(2)):.3f}, "
                f"|a - b| <= 2 s.e. on {np.mean(d <= 2 * np.hypot(se, se1)):.0%}")
    print(f"  {label:36s} {1000 * cpu / len(X):8.2f} CPU-ms/row  mean log p {lp.mean():9.3f}  "
          f"s.e. per row median {np.median(se):.3f} max {se.max():.3f}{err}", flush=True)
    return lp


def long_stratified(est, X):
    """``"stratified"`` with 256 chains x 20 sweeps and 256 draws: a costly reference."""
    from skdgm.sbn import _stratified
    from skdgm.sbn._evaluate import call_seed

    settings = {**_stratified.STRATIFIED, "n_warm": 4, "n_sweeps": 16, "n_samples": 256,
                "chunk_rows": 8}
    (lp, se), cpu = timed(_stratified.log_marginal_stratified, est.params_, X,
                          call_seed(est.random_state), n_chains=256, **settings)
    print(f"  {'reference: stratified 256 x 20':36s} {1000 * cpu / len(X):8.2f} CPU-ms/row  "
          f"mean log p {lp.mean():9.3f}  s.e. per row median {np.median(se):.3f} "
          f"max {se.max():.3f}", flush=True)
    return lp


def sbn_exact(home):
    from skdgm import BayesianSBN

    Xtr, Xte = mnist(home)
    est = BayesianSBN(16, n_iter=40, random_state=0).fit(Xtr[:2000])
    X = Xte[:500]
    print(f"# BayesianSBN 784-16 (Gibbs, 40 passes, 2,000 rows), {len(X)} test images")
    exact = sbn_line("exact (enumeration)", est, X, None)  # ais: first 100 only
    sbn_line("stratified (default, 17-64 units)", est, X, "stratified", exact, spread=True)
    sbn_line("warm_ais (default above 64 units)", est, X, "warm_ais", exact, spread=True)
    sbn_line("ais 100 x 10 (the default before)", est, X[:100], "ais", exact[:100])


def load_model(path):
    """A saved BayesianSBN; hyper-parameters added since it was saved get their defaults."""
    import inspect

    import joblib

    est = joblib.load(path)
    for name, p in inspect.signature(type(est)).parameters.items():
        if not hasattr(est, name):
            setattr(est, name, p.default)
    return est


def sbn_mnist(home, n_ref, models_dir):
    from skdgm import BayesianSBN

    import joblib

    from _common import RESULTS

    Xtr, Xte = mnist(home)
    wide = (models_dir or RESULTS) / "sbn_online_vb_200.joblib"   # bench_scoring_budget.py's
    models = [("784-200 online VB, 1 epoch", load_model(wide) if wide.exists() else
               BayesianSBN(200, inference="online_vb", n_iter=1, random_state=0))]
    for n in (10000, 50000):
        saved = (models_dir or RESULTS) / f"sbn_default_{n}.joblib"
        if saved.exists():
            models.append((f"784-40, the default at {n:,} rows (saved)", load_model(saved)))
    for label, est in models:
        fit = 0.0
        if not hasattr(est, "params_"):
            _, fit = timed(est.fit, Xtr[:10000])
            label += " on 10,000 rows"
        print(f"# BayesianSBN {label} (fit {fit:.0f} CPU-s)", flush=True)
        est.set_params(random_state=0)
        X = Xte[:1000]
        sbn_line(f"stratified on {len(X)} test images", est, X, "stratified", spread=True)
        sbn_line(f"warm_ais on {len(X)} test images", est, X, "warm_ais", spread=True)
        R = Xte[:n_ref]
        long = est.set_params(n_ais_betas=1000)
        ais_ref = sbn_line(f"reference: ais 1000 x 10, {n_ref} images", long, R, "ais")
        est.set_params(n_ais_betas=100)
        strat_ref = long_stratified(est, R)
        ref = np.maximum(ais_ref, strat_ref)
        print(f"  best reference (per-image max): mean {ref.mean():.3f}; long ais below the long "
              f"stratified by {np.mean(strat_ref - ais_ref):+.3f} on average "
              f"(on {np.mean(strat_ref > ais_ref):.0%} of the images)", flush=True)
        sbn_line(f"ais 100 x 10, same {n_ref} images", est, R, "ais", ref)
        sbn_line(f"warm_ais, same {n_ref} images", est, R, "warm_ais", ref)
        sbn_line(f"stratified, same {n_ref} images", est, R, "stratified", ref)


def forward_cpu(X, weights, biases, last_softplus=False, block=None):
    """CPU-s of one bottom-up pass: affine map and sigmoid per layer (softplus sum at the top).

    ``block``: rows per block (each block's temporaries stay in cache), else all at once.
    """
    from scipy.special import expit

    from skdgm._core.numerics import softplus

    t = time.process_time()
    for start in range(0, len(X), block or len(X)):
        h = X[start:start + (block or len(X))]
        for i, (W, b) in enumerate(zip(weights, biases)):
            a = h @ W + b
            h = softplus(a).sum(1) if (last_softplus and i == len(weights) - 1) else expit(a)
    return time.process_time() - t


def interleaved(calls, reps):
    """Median CPU-s of each call over ``reps`` rounds, the calls taking turns (a noisy host)."""
    cpu, out = _common.alternate(calls, reps)
    return {k: float(np.median(v)) for k, v in cpu.items()}, out


def forward_calls(X, weights, biases, last_softplus=False):
    return {f"forward, {label}": (lambda b=b: forward_cpu(X, weights, biases, last_softplus, b))
            for label, b in (("all rows at once", None), ("1,000-row blocks", 1000))}


def module_at(commit, path, name, replace=()):
    """The module ``path`` as it was at ``commit`` (from git), imported as ``name``."""
    import subprocess
    import types

    src = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "show",
                          f"{commit}:{path}"], capture_output=True, text=True, check=True).stdout
    for a, b in replace:
        src = src.replace(a, b)
    mod = types.ModuleType(name)
    mod.__package__ = name.rpartition(".")[0]
    sys.modules[name] = mod
    exec(compile(src, f"{commit}:{path}", "exec"), mod.__dict__)
    return mod


def score_samples_at(commit):
    """``DBMCAST.score_samples(X)`` (dense ``X``, default bound) with the code of ``commit``.

    Its input check (``validate_data`` then the 0/1 test of ``_core.base.check_binary``)
    and its bound (``_scoring.fast_bound`` on ``_model``), both read from git.
    """
    from sklearn.utils.validation import validate_data

    import skdgm.dbm  # noqa: F401  (the package the old modules import from)

    module_at(commit, "skdgm/dbm/_model.py", "skdgm.dbm._model_before")
    scoring = module_at(commit, "skdgm/dbm/_scoring.py", "skdgm.dbm._scoring_before",
                        [("from ._model import", "from ._model_before import")])
    base = module_at(commit, "skdgm/_core/base.py", "skdgm._core._base_before")

    def score_samples(est, X):
        X = validate_data(est, X, reset=False, dtype=(np.float64, np.float32))
        base.check_binary(X, what="DBMCAST")
        return scoring.fast_bound(X, est.coefs_, est.intercepts_, est._starts()) - est.log_partition_

    return score_samples


def dbm(home, passes, reps, before):
    from skdgm import DBMCAST
    from skdgm.dbm._scoring import fast_bound

    old_score = score_samples_at(before)

    Xtr, Xte = mnist(home)
    n = len(Xte)
    for n_iter in passes:
        est = DBMCAST(n_iter=n_iter, random_state=0)
        _, fit = timed(est.fit, Xtr[:10000])
        _, logz = timed(lambda: est.log_partition_)
        print(f"# DBMCAST {est.n_components_} ({n_iter} passes over 10,000 rows, fit {fit:.0f} "
              f"CPU-s); log Z once: {logz:.1f} CPU-s; medians of {reps} interleaved rounds",
              flush=True)
        tight, tight_cpu = timed(est.score_samples, Xte, bound="tight")
        doubled = clone_params(est, mean_field_starts="doubled")
        calls = forward_calls(Xte, est.coefs_, est.intercepts_[1:])
        calls.update({
            "fast (default)": lambda: est.score_samples(Xte),
            f"fast (default) at {before}": lambda: old_score(est, Xte),
            "fast, every start swept (before)": lambda: fast_bound(
                Xte, est.coefs_, est.intercepts_, margin=np.inf) - est.log_partition_,
            "fast, mean_field_starts='doubled'": lambda: doubled.score_samples(Xte)})
        cpu, out = interleaved(calls, reps)
        cpu["tight (one round)"], out["tight (one round)"] = tight_cpu, tight
        whole, blocked = cpu["forward, all rows at once"], cpu["forward, 1,000-row blocks"]
        for label, c in cpu.items():
            mean = f"; mean bound {out[label].mean():.4f}" if "forward" not in label else ""
            print(f"  {label:36s} {1000 * c / n:.4f} CPU-ms/row = {c / whole:5.2f}x the forward "
                  f"pass on all rows, {c / blocked:5.2f}x in blocks{mean}", flush=True)
        for label in ("fast (default)", "fast, every start swept (before)",
                      "fast, mean_field_starts='doubled'"):
            d = tight - out[label]
            print(f"  tight - {label}: mean {d.mean():.5f} nats, median {np.median(d):.5f}, "
                  f"max {d.max():.4f}, min {d.min():.2e}", flush=True)
        d = np.abs(out[f"fast (default) at {before}"] - out["fast (default)"])
        print(f"  |default at {before} - default|: max {d.max():.2e} nats", flush=True)
        d = out["fast, every start swept (before)"] - out["fast (default)"]
        print(f"  every start swept - default: max {d.max():.2e} nats, rows above 1e-9: "
              f"{np.sum(d > 1e-9)} of {n}", flush=True)


def clone_params(est, **params):
    import copy

    return copy.deepcopy(est).set_params(**params)


def grbm(home, reps):
    from skdgm import GaussianBernoulliRBM

    Xtr, Xte = mnist(home, binary=False)
    keep = Xtr.std(0) > 1.0
    mu, sd = Xtr[:, keep].mean(0), Xtr[:, keep].std(0)
    Xtr, Xte = (Xtr[:, keep] - mu) / sd, (Xte[:, keep] - mu) / sd
    est = GaussianBernoulliRBM(n_iter=2, random_state=0)
    _, fit = timed(est.fit, Xtr[:10000])
    _, logz = timed(est.log_partition)
    print(f"# GaussianBernoulliRBM {est.components_.shape[0]} hidden (2 passes over 10,000 standardised "
          f"rows, fit {fit:.0f} CPU-s); log Z once: {logz:.1f} CPU-s; medians of {reps} "
          f"interleaved rounds", flush=True)
    Xs = Xte / est.variance_    # the forward pass's input scaling is not timed
    calls = forward_calls(Xs, [est.components_.T], [est.intercept_hidden_], last_softplus=True)
    calls["score_samples"] = lambda: est.score_samples(Xte)
    cpu, _ = interleaved(calls, reps)
    n = len(Xte)
    whole, blocked = cpu["forward, all rows at once"], cpu["forward, 1,000-row blocks"]
    for label, c in cpu.items():
        print(f"  {label:36s} {1000 * c / n:.4f} CPU-ms/row = {c / whole:5.2f}x the forward pass "
              f"on all rows, {c / blocked:5.2f}x in blocks", flush=True)


def dbm_screen(home, passes):
    """Per row, what the fast bound's screen of the second start sees (issue 25)."""
    from sklearn.datasets import load_digits

    from skdgm import DBMCAST
    from skdgm.dbm import _scoring as S

    X = (load_digits().data > 7).astype(float)
    models = [("digits (500, 1000), pre-training only (the old default)",
               DBMCAST((500, 1000), n_iter=0, pretrain_n_iter=5, learning_rate=0.005,
                       n_ais_betas=2, n_ais_runs=1, random_state=0), X, X[:300]),
              ("digits (12, 8), trained (tests/test_dbm_scoring.py)",
               DBMCAST((12, 8), n_iter=10, random_state=0, learning_rate=0.05,
                       pretrain_n_iter=30, pretrain_learning_rate=0.3), X, X),
              ("digits, defaults (16, 32)", DBMCAST(random_state=0), X, X)]
    Xtr, Xte = mnist(home)
    models += [(f"binarised MNIST, {n} passes over 10,000 rows", DBMCAST(n_iter=n, random_state=0),
                Xtr[:10000], Xte[:2000]) for n in passes]
    print(f"# fast bound's screen: the 'zeros' start after k sweeps minus the doubled start "
          f"after {S.FAST_SWEEPS} (float64 bounds), per row [min, median, max]; margin "
          f"{S.FAST_MARGIN} nats", flush=True)
    for label, est, Xfit, V in models:
        est.fit(Xfit)
        W, b = est.coefs_, est.intercepts_
        c32 = [w.astype(np.float32) for w in W]
        b32 = [x.astype(np.float32) for x in b]
        VW = V @ W[0]
        VW32 = VW.astype(np.float32)
        d = S._bound_at(S._swept("doubled", VW32, c32, b32, S.FAST_SWEEPS), VW, W, b)
        z = {k: S._bound_at(S._swept("zeros", VW32, c32, b32, k), VW, W, b) - d
             for k in range(S.FAST_SWEEPS + 1)}
        cols = "; ".join(f"k={k} [{v.min():.2f}, {np.median(v):.2f}, {v.max():.3f}]"
                         for k, v in z.items())
        kept = np.mean(z[1] >= -S.FAST_MARGIN)
        lost = np.maximum(z[S.FAST_SWEEPS], 0)[z[1] < -S.FAST_MARGIN]
        print(f"  {label}, {len(V)} rows: {cols}; zeros wins after {S.FAST_SWEEPS} on "
              f"{np.mean(z[S.FAST_SWEEPS] > 0):.1%} of rows; screen keeps {kept:.1%}; bound lost "
              f"on dropped rows max {lost.max() if lost.size else 0.0:.2e}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*",
                    choices=["sbn_exact", "sbn_mnist", "dbm", "grbm", "dbm_screen"],
                    default=["sbn_exact", "sbn_mnist", "dbm", "grbm"])
    ap.add_argument("--dbm-passes", type=int, nargs="*", default=[3, 12],
                    help="training passes of the DBMCAST models scored")
    ap.add_argument("--reps", type=int, default=7,
                    help="interleaved timing rounds of the DBMCAST and GRBM calls (medians)")
    ap.add_argument("--before", default="28f205d",
                    help="commit whose DBMCAST score_samples is timed next to the current one")
    ap.add_argument("--n-ref", type=int, default=20,
                    help="test images scored by the long reference AIS")
    ap.add_argument("--models-dir", type=Path, default=None,
                    help="where the saved default SBN models are (default: results/)")
    _common.add_data_home_arg(ap)
    args = ap.parse_args()
    home = _common.data_home(args.data_home)
    header([f"data: {shown(home)}"])
    warnings.simplefilter("ignore")
    for what in args.only:
        {"sbn_exact": lambda: sbn_exact(home), "sbn_mnist": lambda: sbn_mnist(home, args.n_ref, args.models_dir),
         "dbm": lambda: dbm(home, args.dbm_passes, args.reps, args.before), "grbm": lambda: grbm(home, args.reps),
         "dbm_screen": lambda: dbm_screen(home, args.dbm_passes)}[what]()


if __name__ == "__main__":
    main()
