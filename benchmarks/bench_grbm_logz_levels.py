"""Is a GRBM paper row's ``log Z`` settled? AIS against its temperatures, and BDMC (issue 24).

``bench_paper_tables.py --row grbm_mnist`` scores the model with ``log Z`` by AIS at
the estimator's 3,000 temperatures. AIS underestimates ``log Z`` in expectation,
so a test ``log p`` above FactorAnalysis could be AIS error; this script checks it
on the trained model that the run left in its checkpoint (``--checkpoint-dir`` of
that run, ``state.joblib``):

* ``log Z`` by forward AIS at ``--betas`` temperatures (``--runs`` runs each): an
  estimate that rises towards the truth as the path gets finer, so where it levels
  off says how far the row's 3,000 were from it;
* the bidirectional Monte Carlo sandwich (``log_likelihood_bounds``) at
  ``--bdmc-betas``: forward AIS below, reverse AIS from model draws above (the
  draws are 1,000 Gibbs sweeps from the base, not exact at 256 units, so the upper
  bound is approximate, as the result says);
* for each ``log Z``, the mean test ``log p`` on the run's test images and its
  paired difference with FactorAnalysis(64) fitted here on the same data as the
  row does. With the BDMC *upper* bound on ``log Z`` the GRBM's figure is a
  (stochastic, approximate) lower bound on its test ``log p``.

The data are the row's (``bench_paper_tables.load_mnist_standardised``, all
60,000 training and 10,000 test images by default).

Usage (about 10 CPU-minutes at the defaults), after the row's run::

    SKDGM_DATA=../shared/data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_grbm_logz_levels.py --checkpoint-dir DIR \\
        > benchmarks/results/grbm_logz_levels.txt
"""

import argparse
import os
import sys
import time
from pathlib import Path

import joblib
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import add_data_home_arg, data_home, header, shown  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_home_arg(ap)
    ap.add_argument("--checkpoint-dir", required=True,
                    help="the grbm_mnist run's --checkpoint-dir (its state.joblib)")
    ap.add_argument("--betas", type=int, nargs="+", default=[1000, 3000, 10000, 30000])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--bdmc-betas", type=int, nargs="+", default=[3000, 10000])
    ap.add_argument("--bdmc-samples", type=int, default=100)
    ap.add_argument("--n-train", type=int, default=0)
    ap.add_argument("--n-test", type=int, default=0)
    args = ap.parse_args(argv)
    home = data_home(args.data_home)

    from bench_paper_tables import FARow, load_mnist_standardised, paired_gap

    saved = joblib.load(Path(args.checkpoint_dir) / "state.joblib")
    est, prog = saved["est"], saved["prog"]
    header([f"data: {shown(home)}",
            f"model: the checkpoint of the run '{prog['command']}' "
            f"(commits {', '.join(prog['commits'])}; its final figure "
            f"{(prog.get('final') or {}).get('ours', float('nan')):.3f})"])
    if prog["settings"]["row"] != "grbm_mnist":
        raise SystemExit("the checkpoint is not a grbm_mnist run")
    if getattr(est, "stopping_reason_", None):
        best = getattr(est, "best_iter_", None)
        print(f"its fit: {est.n_iter_} passes, stopped: {est.stopping_reason_}"
              + ("" if best is None else f"; parameters of pass {best} kept"))
    ns = argparse.Namespace(n_train=args.n_train or prog["settings"]["n_train"],
                            n_test=args.n_test or prog["settings"]["n_test"],
                            curve_n_test=1)
    data = load_mnist_standardised(home, ns)
    X_test = data["test"]
    neg_f = -est.free_energy(X_test)
    t = time.process_time()
    fa_est = FARow("fa_mnist", args, overrides={}).step(None, data, {})
    fa = fa_est.score_samples(X_test)
    print(f"{type(est).__name__}({est.n_components}) on {X_test.shape[0]} test images, "
          f"{data['kept_pixels']} pixels; FactorAnalysis(64) refitted here: mean "
          f"{fa.mean():.3f} [{time.process_time() - t:.0f} CPU-s]")

    def line(what, log_z, se, cpu):
        gap, gap_se = paired_gap(neg_f - log_z, fa, se)
        print(f"{what:<44s} log Z {log_z:10.3f} (s.e. {se:5.3f})  test log p "
              f"{(neg_f - log_z).mean():9.3f}  GRBM - FA {gap:8.3f} (s.e. {gap_se:5.3f})"
              f"  [{cpu:4.0f} CPU-s]")

    print()
    print("forward AIS (a stochastic lower bound on log Z, so an upper bound on log p):")
    for b in args.betas:
        t = time.process_time()
        est.set_params(n_ais_betas=b, n_ais_runs=args.runs, n_jobs=1)
        log_z, se = est.log_partition()
        line(f"  AIS {b:,} temperatures x {args.runs} runs", log_z, se,
             time.process_time() - t)
    print()
    print("bidirectional Monte Carlo (reverse runs from 1,000-sweep Gibbs draws; "
          "the upper bound is approximate when exact_start is False):")
    for b in args.bdmc_betas:
        t = time.process_time()
        res = est.log_likelihood_bounds(n_samples=args.bdmc_samples, n_betas=b,
                                        random_state=1)
        cpu = time.process_time() - t
        print(f"  {b:,} temperatures, {args.bdmc_samples} runs each way: lower "
              f"{res.lower:.3f}, upper {res.upper:.3f}, gap {res.gap:.3f}; "
              f"exact_start {res.exact_start}")
        line(f"  with the upper bound on log Z ({b:,})", res.upper, res.upper_std_err, cpu)


if __name__ == "__main__":
    main()
