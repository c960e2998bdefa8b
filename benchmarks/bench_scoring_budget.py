"""Where the error of BayesianSBN's ``score_samples`` comes from at ~20 CPU-ms per row (issue 25).

Two MNIST-size models, cached in ``--models-dir`` (default ``results/``, whose
``*.joblib`` files are never committed; a link to a scratch folder will do):

* the default model at 50,000 binarised MNIST rows (784-40, batch Gibbs), as
  ``bench_sbn_scaling_defaults.py --only sbn_50k`` saves it
  (``sbn_default_50000.joblib``; skipped when absent);
* a 784-200 model trained by online VB for one epoch of 10,000 rows, as
  ``bench_scoring_cost.py`` fits it (fitted here and saved as
  ``sbn_online_vb_200.joblib`` when absent).

For each, on the first ``--rows`` test images and two seeds, every line gives the
CPU-ms per row, the mean ``log p`` of both seeds, the reported per-row standard
error (median), the seed-to-seed standard deviation it should match (robust:
``median |a - b| / (0.6745 sqrt 2)``, the normal s.d. that median implies; a few
rows differ by several nats), and the share of rows with
``|a - b| <= 2 hypot(se_a, se_b)`` (0.95 when the errors are honest and normal).

* ``method="stratified"`` on the 784-40 model, by allocation: chains per row,
  tempered warm-up sweeps, sweeps at ``beta = 1``, importance draws; with the
  reported error split into its two parts (importance draws; jackknife over chains)
  and the median share of ``p_hat`` the visited states hold.
* ``method="warm_ais"`` on the 784-200 model, by allocation: chains fitting the
  proposal, AIS runs, temperatures, schedule.
* ``--only mixture``: ``"warm_ais"`` from a mixture proposal (one ``q_c`` per
  proposal chain, annealed on the pairs ``(h, c)``; ``proposal="mixture"`` of
  :func:`skdgm.sbn._evaluate.log_marginal_warm_ais`) by allocation, beside the
  default's averaged ``q`` on the same rows and seeds (issue 25, fifth session).
  Results (with ``broader``, ``--rows 512``): ``benchmarks/results/scoring_budget_proposal.txt``.
* ``--only broader``: ``"warm_ais"`` from a broader averaged ``q`` (``q_power``,
  ``q_floor``) beside the default, same rows and seeds (issue 25, fifth session).
  Results: ``benchmarks/results/scoring_budget_proposal.txt``.
* The reported error of ``"warm_ais"`` at its defaults on 4 seeds: the delta
  method alone, the log-normal error ``sqrt(expm1(s^2) / R)`` (at most ``s``, the
  s.d. of the runs' log weights) and the larger of
  the two (what is reported), against the s.d. over the 4 seeds.

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 SKDGM_DATA=... nice python \\
        benchmarks/bench_scoring_budget.py > benchmarks/results/scoring_budget.txt

Results: ``benchmarks/results/scoring_budget.txt``. CPU seconds of this process, one
BLAS thread.
"""

import argparse
import inspect
import os
import sys
import time
import warnings
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402
from _common import header, shown  # noqa: E402
from bench_scoring_cost import mnist  # noqa: E402


def seed_spread(a, b, se_a, se_b):
    d = np.abs(a - b)
    return np.median(d) / (0.6745 * np.sqrt(2)), np.mean(d <= 2 * np.hypot(se_a, se_b))


def stratified_parts():
    """``_stratified._chunk`` returning the draws' and the chains' errors apart."""
    from skdgm.sbn import _stratified

    src = inspect.getsource(_stratified._chunk).replace(
        "return scale + np.log(total), np.hypot(se_draws, se_chains)",
        "return scale + np.log(total), se_draws, se_chains, log_u - scale - np.log(total)")
    namespace = dict(vars(_stratified))
    exec(src, namespace)  # noqa: S102 - the library's own function, one line changed
    chunk = namespace["_chunk"]

    def run(params, X, seed, chunk_rows=64, **settings):
        from skdgm._core.random import as_generator, seed_for

        out = [np.empty(len(X)) for _ in range(4)]
        for j, start in enumerate(range(0, len(X), chunk_rows)):
            sl = slice(start, min(start + chunk_rows, len(X)))
            rngs = [as_generator(seed_for(seed_for(seed, p), j))
                    for p in (_stratified._CHAINS_PURPOSE, _stratified._DRAWS_PURPOSE)]
            for o, v in zip(out, chunk(params, X[sl], *rngs, **settings)):
                o[sl] = v
        return out
    return run


def stratified_grid(params, X):
    from skdgm.sbn import _stratified
    from skdgm.sbn._evaluate import call_seed

    run = stratified_parts()
    base = {k: v for k, v in _stratified.STRATIFIED.items() if k != "chunk_rows"}
    base["n_chains"] = _stratified.stratified_chains(params)
    grid = [("default", {}),
            ("before (20 chains x 4+4)", dict(n_chains=20, n_warm=4, n_sweeps=4)),
            ("more chains, 32 x 4+4", dict(n_chains=32, n_warm=4, n_sweeps=4)),
            ("shorter, 40 x 2+2", dict(n_chains=40, n_warm=2, n_sweeps=2)),
            ("24 x 8+2", dict(n_chains=24, n_warm=8, n_sweeps=2)),
            ("20 x 10+2", dict(n_chains=20, n_warm=10, n_sweeps=2)),
            ("4x draws, 256", dict(n_samples=256)),
            ("warm-up from beta 0.2", dict(beta_start=0.2))]
    for label, change in grid:
        settings = {**base, **change}
        t = time.process_time()
        a, d_a, c_a, u_a = run(params, X, call_seed(0), **settings)
        cpu = 1000 * (time.process_time() - t) / len(X)
        b, d_b, c_b, _ = run(params, X, call_seed(1), **settings)
        se_a, se_b = np.hypot(d_a, c_a), np.hypot(d_b, c_b)
        sd, cover = seed_spread(a, b, se_a, se_b)
        desc = (f"{settings['n_chains']} x {settings['n_warm']}+{settings['n_sweeps']}, "
                f"{settings['n_samples']} draws")
        print(f"  {label:26s} {desc:24s} {cpu:6.2f} CPU-ms/row  mean {a.mean():9.3f} "
              f"{b.mean():9.3f}  s.e. median {np.median(se_a):.3f} (draws {np.median(d_a):.3f}, "
              f"chains {np.median(c_a):.3f})  seed s.d. {sd:.3f}  covered {cover:.0%}  "
              f"visited share {np.exp(np.median(u_a)):.3f}", flush=True)


def warm_grid(params, X):
    from skdgm.sbn import _evaluate
    from skdgm.sbn._evaluate import call_seed

    base = {**_evaluate.WARM_AIS, "n_runs": _evaluate.warm_ais_runs(params)}
    grid = [("default", {}),
            ("before (3 runs x 15)", dict(n_runs=3, n_betas=15)),
            ("more runs, 5 x 20", dict(n_runs=5)),
            ("runs for temps, 8 x 10", dict(n_runs=8, n_betas=10)),
            ("temps for runs, 3 x 28", dict(n_runs=3, n_betas=28)),
            ("2 proposal chains, 4 x 24", dict(n_chains=2, n_betas=24)),
            ("1 proposal chain, 4 x 24", dict(n_chains=1, n_fit=4, n_betas=24)),
            ("sigmoid schedule", dict(beta_kind="sigmoid"))]
    settings_lines(params, X, base, grid)


def mixture_grid(params, X):
    """``proposal="mixture"`` (one ``q_c`` per proposal chain, AIS on the pairs
    ``(h, c)``) beside the default's averaged ``q``, same rows and seeds."""
    from skdgm.sbn import _evaluate

    base = {**_evaluate.WARM_AIS, "n_runs": _evaluate.warm_ais_runs(params)}
    mix = dict(proposal="mixture")
    grid = [("default (averaged q)", {}),
            ("mixture, 3 chains", mix),
            ("mixture, 4 chains", dict(mix, n_chains=4)),
            ("mixture, 4 chains, 4 fit", dict(mix, n_chains=4, n_fit=4)),
            ("mixture, 6 chains, 2+3", dict(mix, n_chains=6, n_fit=3)),
            ("mixture, 4 chains, 4 x 16", dict(mix, n_chains=4, n_betas=16)),
            ("mixture, 4 chains, 3 x 24", dict(mix, n_chains=4, n_runs=3, n_betas=24)),
            ("mixture, 4 chains, 8 x 10", dict(mix, n_chains=4, n_runs=8, n_betas=10)),
            ("default, 6 chains 2+3", dict(n_chains=6, n_fit=3))]
    settings_lines(params, X, base, grid)


def broader_grid(params, X):
    """A broader averaged ``q`` (``q_power``: logits scaled; ``q_floor``: every
    probability kept that far from 0 and 1) beside the default, same rows and seeds."""
    from skdgm.sbn import _evaluate

    base = {**_evaluate.WARM_AIS, "n_runs": _evaluate.warm_ais_runs(params)}
    grid = [("default", {}),
            ("power 0.85", dict(q_power=0.85)),
            ("power 0.7", dict(q_power=0.7)),
            ("power 0.5", dict(q_power=0.5)),
            ("floor 0.01", dict(q_floor=0.01)),
            ("floor 0.03", dict(q_floor=0.03)),
            ("floor 0.1", dict(q_floor=0.1)),
            ("power 0.85 + floor 0.01", dict(q_power=0.85, q_floor=0.01))]
    settings_lines(params, X, base, grid)


def settings_lines(params, X, base, grid):
    """One line per ``(label, change)``: ``"warm_ais"`` at ``base`` updated by it, two seeds."""
    from skdgm.sbn import _evaluate
    from skdgm.sbn._evaluate import call_seed

    for label, change in grid:
        settings = {**base, **change}
        (a, se_a), cpu = _common.cpu_timed(_evaluate.log_marginal_warm_ais, params, X,
                                           call_seed(0), **settings)
        b, se_b = _evaluate.log_marginal_warm_ais(params, X, call_seed(1), **settings)
        sd, cover = seed_spread(a, b, se_a, se_b)
        desc = (f"q from {settings['n_chains']} chains, {settings['n_runs']} x "
                f"{settings['n_betas']}")
        if settings.get("proposal") == "mixture":
            desc = desc.replace("q from", "mix of")
        print(f"  {label:26s} {desc:24s} {1000 * cpu / len(X):6.2f} CPU-ms/row  mean "
              f"{a.mean():9.3f} {b.mean():9.3f}  s.e. median {np.median(se_a):.3f}  seed s.d. "
              f"{sd:.3f}  covered {cover:.0%}", flush=True)


def warm_error_calibration(params, X, n_seeds=4):
    from skdgm._core.ais import annealed_importance_sampling, beta_schedule
    from skdgm._core.random import as_generator, seed_for
    from skdgm.sbn import _evaluate
    from skdgm.sbn._evaluate import call_seed

    w = _evaluate.WARM_AIS
    n_runs = _evaluate.warm_ais_runs(params)
    out = []
    for s in range(n_seeds):
        seed = call_seed(s)
        logits = _evaluate.fit_proposal(params, X, as_generator(seed_for(seed, 0x9A0F)),
                                        n_burn=w["n_burn"], n_fit=w["n_fit"],
                                        n_chains=w["n_chains"])
        res = annealed_importance_sampling(
            partial(_evaluate.warm_log_density, params=params, X=X, logits=logits, cache={}),
            partial(_evaluate.warm_transition, params=params, X=X, logits=logits),
            partial(_evaluate.warm_sample_base, logits=logits),
            0.0, beta_schedule(w["n_betas"]), n_runs, n_groups=min(n_runs, 2),
            random_state=seed)
        log_w = np.asarray(res.log_weights)
        normal = _evaluate.lognormal_std_err(log_w)
        out.append((np.asarray(res.log_z), np.asarray(res.std_err), normal,
                    _evaluate._warm_std_err(log_w, res.std_err)))
    lz = np.array([o[0] for o in out])
    sd = lz.std(0, ddof=1)
    dev = np.abs(lz - lz.mean(0)) * np.sqrt(n_seeds / (n_seeds - 1))
    print(f"  s.d. over {n_seeds} seeds per row: median {np.median(sd):.3f}")
    for i, label in [(1, "delta method alone"), (2, "log-normal alone"),
                     (3, "reported (the larger)")]:
        se = np.array([o[i] for o in out])
        print(f"  {label:24s} s.e. median {np.median(se):.3f}; median ratio to the seeds' s.d. "
              f"{np.median(se.mean(0) / sd):.2f}; |deviation from the seeds' mean| <= 2 s.e. "
              f"on {np.mean(dev <= 2 * se):.0%}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models-dir", type=Path, default=_common.RESULTS,
                    help="where the fitted models are cached (default results/, whose "
                         "*.joblib files are not committed)")
    ap.add_argument("--rows", type=int, default=256, help="test images per line")
    ap.add_argument("--only", nargs="*",
                    choices=["stratified", "warm", "calibration", "mixture", "broader"],
                    default=["stratified", "warm", "calibration"])
    _common.add_data_home_arg(ap)
    args = ap.parse_args()
    home = _common.data_home(args.data_home)
    header([f"data: {shown(home)}; first {args.rows} test images; models cached apart"])
    warnings.simplefilter("ignore")
    import joblib

    from skdgm import BayesianSBN

    Xtr, Xte = mnist(home)
    X = Xte[:args.rows]
    default = args.models_dir / "sbn_default_50000.joblib"
    if "stratified" in args.only and default.exists():
        est = joblib.load(default)
        print(f"# 784-{est.n_components_[0]} default model at 50,000 rows: method='stratified'",
              flush=True)
        stratified_grid(est.params_, X)
    wide = args.models_dir / "sbn_online_vb_200.joblib"
    if not wide.exists():
        est, fit = _common.cpu_timed(BayesianSBN(200, inference="online_vb", n_iter=1,
                                                 random_state=0).fit, Xtr[:10000])
        print(f"# fitted the 784-200 model in {fit:.0f} CPU-s", flush=True)
        joblib.dump(est, wide)
    est = joblib.load(wide)
    if "warm" in args.only:
        print("# 784-200 online VB, 1 epoch of 10,000 rows: method='warm_ais'", flush=True)
        warm_grid(est.params_, X)
    if "mixture" in args.only:
        print("# 784-200 online VB, 1 epoch of 10,000 rows: 'warm_ais' from a mixture "
              "proposal", flush=True)
        mixture_grid(est.params_, X)
    if "broader" in args.only:
        print("# 784-200 online VB, 1 epoch of 10,000 rows: 'warm_ais' from a broader q",
              flush=True)
        broader_grid(est.params_, X)
    if "calibration" in args.only:
        print("# 784-200: the reported error of 'warm_ais' at its defaults", flush=True)
        warm_error_calibration(est.params_, X)


if __name__ == "__main__":
    main()
