"""Does the GRBM's held-out figure rank a paper row's kept passes as the test does? (issue 25)

Under ``n_iter="auto"`` GaussianBernoulliRBM's early stopping scores its held-out
rows after every pass by their median ``log p(v)`` with a *cheap* ``log Z`` (AIS at
300 temperatures, 16 runs, the same random numbers every pass), and keeps the pass
whose mean of 10 such figures is best. On all 60,000 MNIST training images (256
units) the default kept pass 24 of a 41-pass run and read far below the plateau
run that kept pass 34 (``paper_grbm_mnist_fit_auto.txt`` against
``paper_grbm_mnist_fit48.txt``). This script takes the trained models those runs
left in their checkpoints (``--checkpoint-dir`` of ``bench_paper_tables.py --row
grbm_mnist --fit``, ``state.joblib``, one or more) and prints, for each:

* the held-out figure exactly as training read it (``_validation_score`` on the
  run's held-out rows, the seeded 10 % of the training images) and the cheap
  ``log Z`` inside it;
* ``log Z`` by AIS at ``--betas`` temperatures x ``--runs`` runs (the row's final
  setting), and with it the held-out median and mean ``log p`` and the mean test
  ``log p`` on all 10,000 test images.

If the cheap ``log Z`` is off by different amounts for different passes, the
held-out figure ranks the passes by that error rather than by the model.

Usage (about 1 CPU-minute per checkpoint at the defaults)::

    SKDGM_DATA=../shared/data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_grbm_heldout_figure.py --checkpoint-dir DIR [DIR ...] \\
        > benchmarks/results/grbm_heldout_figure.txt
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
    ap.add_argument("--checkpoint-dir", required=True, nargs="+",
                    help="grbm_mnist --fit runs' --checkpoint-dir (their state.joblib)")
    ap.add_argument("--betas", type=int, default=3000)
    ap.add_argument("--runs", type=int, default=100)
    args = ap.parse_args(argv)
    home = data_home(args.data_home)

    from bench_paper_tables import load_mnist_standardised

    from skdgm._core.stopping import held_out_split

    header([f"data: {shown(home)}"])
    data = None
    for i, ckdir in enumerate(args.checkpoint_dir, 1):
        saved = joblib.load(Path(ckdir) / "state.joblib")
        est, prog = saved["est"], saved["prog"]
        if prog["settings"]["row"] != "grbm_mnist" or not prog["settings"].get("fit"):
            raise SystemExit(f"{ckdir}: not a grbm_mnist --fit run")
        final = (prog.get("final") or {}).get("ours", float("nan"))
        print(f"model {i}: the checkpoint of '{prog['command']}' (commits "
              f"{', '.join(prog['commits'])}; its final test figure {final:.3f})")
        print(f"  its fit: {est.n_iter_} passes, stopped: {est.stopping_reason_}; "
              f"parameters of pass {est.best_iter_} kept")
        if data is None:
            ns = argparse.Namespace(n_train=prog["settings"]["n_train"],
                                    n_test=prog["settings"]["n_test"], curve_n_test=1)
            data = load_mnist_standardised(home, ns)
        X = data["train"]
        n_val = int(np.ceil(est.validation_fraction * X.shape[0]))
        val, _ = held_out_split(X.shape[0], n_val, est.random_state)
        X_val = X[val]
        t = time.process_time()
        neg_f_val = -est.free_energy(X_val)
        figure = est._validation_score(X_val)
        cheap = float(np.median(neg_f_val)) - figure
        print(f"  held-out figure as training read it (median log p, {len(val):,} rows): "
              f"{figure:.3f}, its cheap log Z {cheap:.3f} "
              f"(its history at pass {est.best_iter_}: "
              f"{est.validation_scores_[est.best_iter_ - 1]:.3f}) "
              f"[{time.process_time() - t:.0f} CPU-s]")
        t = time.process_time()
        est.set_params(n_ais_betas=args.betas, n_ais_runs=args.runs, n_jobs=1, verbose=0)
        log_z, se = est.log_partition()
        neg_f_test = -est.free_energy(data["test"])
        print(f"  log Z by AIS {args.betas:,} x {args.runs}: {log_z:.3f} (s.e. {se:.3f}); "
              f"minus the cheap one: {log_z - cheap:+.3f}")
        print(f"  with it: held-out median {np.median(neg_f_val) - log_z:.3f}, held-out "
              f"mean {neg_f_val.mean() - log_z:.3f}, test mean {neg_f_test.mean() - log_z:.3f} "
              f"({len(neg_f_test):,} images) [{time.process_time() - t:.0f} CPU-s]")
        print()


if __name__ == "__main__":
    main()
