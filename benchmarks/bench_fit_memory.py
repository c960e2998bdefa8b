"""What ``fit`` holds beside the data: its peak memory above the input, per estimator.

Each estimator is fitted in a fresh child process on ``--rows`` float32 rows of
MNIST's width (784 binary pixels for DBMCAST and BayesianSBN, 662 standard-normal
columns for GaussianBernoulliRBM, random: memory does not depend on the values), and
the child reports the peak of ``tracemalloc``'s traced bytes during ``fit`` above what
was traced before it (NumPy reports its buffers to ``tracemalloc``), in MB and as a
multiple of the data's bytes, with the fit's CPU seconds. The fits are short but walk
every stage a default fit walks on large data:

* DBMCAST: the defaults (greedy pre-training included) with ``n_iter=1,
  early_stopping=True`` (the held-out slice and figure of ``n_iter="auto"``);
* GaussianBernoulliRBM: likewise ``n_iter=1, early_stopping=True``;
* BayesianSBN: ``inference="dsghmc_nais"`` (what ``"auto"`` runs from 12,500 rows),
  ``n_components=20`` and ``n_iter=1`` (fewer units than the default's, for time:
  the data's copy is what this measures).

``--verbose`` fits with ``verbose=1`` (DBMCAST's pre-training prints a
reconstruction error over all rows, which must not cost a copy of their activations).

``--python A B ...`` runs the children under each interpreter in turn (for example a
virtual environment with an older checkout of the library installed), so that two
versions of the library are measured side by side in one run; each line names the
commit of the library its child imported.

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice python benchmarks/bench_fit_memory.py \\
        [--rows 200000] [--only DBMCAST ...] [--verbose] [--python OLD_PYTHON NEW_PYTHON]

Results: ``benchmarks/results/fit_memory.txt`` (and ``fit_memory_view.txt``,
``fit_memory_verbose.txt``).
"""

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import header  # noqa: E402

NAMES = ("DBMCAST", "GaussianBernoulliRBM", "BayesianSBN")

CHILD = r"""
import json, os, subprocess, sys, time, tracemalloc, warnings
import numpy as np
import skdgm
name, n, verbose = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
if name == "GaussianBernoulliRBM":
    X = rng.standard_normal((n, 662), dtype=np.float32)
    est = skdgm.GaussianBernoulliRBM(n_iter=1, early_stopping=True, random_state=0,
                                     verbose=verbose)
else:
    X = np.empty((n, 784), dtype=np.float32)
    for a in range(0, n, 50_000):
        X[a:a + 50_000] = rng.random((min(50_000, n - a), 784)) < 0.13
    est = (skdgm.DBMCAST(n_iter=1, early_stopping=True, random_state=0, verbose=verbose)
           if name == "DBMCAST" else
           skdgm.BayesianSBN(inference="dsghmc_nais", n_components=20, n_iter=1,
                             random_state=0, verbose=verbose))
here = os.path.dirname(skdgm.__file__)
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here,
                        capture_output=True, text=True).stdout.strip() or "unknown"
tracemalloc.start()
before = tracemalloc.get_traced_memory()[0]
t = time.process_time()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    est.fit(X)
cpu = time.process_time() - t
peak = tracemalloc.get_traced_memory()[1] - before
print(json.dumps(dict(commit=commit, data=X.nbytes, peak=peak, cpu=cpu)))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--only", nargs="*", choices=NAMES, default=list(NAMES))
    ap.add_argument("--verbose", action="store_true", help="fit with verbose=1")
    ap.add_argument("--python", nargs="*", default=[sys.executable],
                    help="interpreters to run the children under, in turn")
    args = ap.parse_args()
    header([f"{args.rows} float32 rows, verbose={int(args.verbose)}; peak traced "
            "bytes during fit above those before it (tracemalloc), one fresh process per line"])
    print(f"{'estimator':22s} {'library':>9s} {'data MB':>8s} {'peak MB':>8s} "
          f"{'x data':>7s} {'fit CPU-s':>9s}")
    for name in args.only:
        for python in args.python:
            out = subprocess.run([python, "-c", CHILD, name, str(args.rows),
                                  str(int(args.verbose))],
                                 capture_output=True, text=True, check=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            print(f"{name:22s} {r['commit']:>9s} {r['data'] / 1e6:8.1f} "
                  f"{r['peak'] / 1e6:8.1f} {r['peak'] / r['data']:7.2f} {r['cpu']:9.1f}",
                  flush=True)


if __name__ == "__main__":
    main()
