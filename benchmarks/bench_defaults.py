"""Each estimator at its defaults on the small real data a new user tries first.

For every estimator, ``Estimator(random_state=seed)`` (only the hidden size given where the
target says so) is fitted on a fixed train/test split and scored, and the simple
scikit-learn baselines are fitted and scored *in the same run*; CPU seconds are process
time with one BLAS thread. Each section prints one line per model and the target it is
checked against (issue 13).

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_defaults.py \\
        [--only grbm_digits dbm_digits ...] [--seeds 0 1 2]

The output begins with the command, commit, date, CPU model and thread settings; commit
it under ``benchmarks/results/defaults.txt``.
"""

import argparse
import os
import platform
import subprocess
import sys
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

N_TRAIN = 1200  # the rest of the 1,797 digits (597) is the test set


def header():
    def run(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, check=True,
                                  cwd=os.path.dirname(__file__)).stdout.strip()
        except Exception:  # noqa: BLE001 - a header field must never stop the benchmark
            return "unknown"

    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f
                       if line.startswith("model name"))
    except (OSError, StopIteration):
        cpu = platform.processor() or "unknown"
    threads = {k: os.environ.get(k, "unset")
               for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    print(f"# command: python {' '.join(sys.argv)}")
    print(f"# commit: {run(['git', 'rev-parse', '--short', 'HEAD'])}"
          f"{' (dirty)' if run(['git', 'status', '--porcelain', '--untracked-files=no']) else ''}")
    print(f"# date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    print(f"# cpu: {cpu}; threads: {threads}")
    print(flush=True)


def cpu_timed(fn, *args, **kwargs):
    """``(result, CPU seconds of this process)`` of one call."""
    t = time.process_time()
    out = fn(*args, **kwargs)
    return out, time.process_time() - t


def digits_split(seed=0):
    X, y = load_digits(return_X_y=True)
    return train_test_split(X, y, train_size=N_TRAIN, random_state=seed, stratify=y)


def report(section, model, value, unit, cpu, note=""):
    print(f"{section:14s} {model:38s} {value:10.3f} {unit:18s} {cpu:7.1f} CPU-s  {note}",
          flush=True)


# ----------------------------------------------------------------------------------------
# One function per target. Each takes the seed, fits the estimator at its defaults and the
# baselines on the same split, and prints its lines with :func:`report`.
# ----------------------------------------------------------------------------------------

SECTIONS = {}


def section(name):
    def register(fn):
        SECTIONS[name] = fn
        return fn
    return register


# --- GaussianBernoulliRBM ---------------------------------------------------------------


# --- DBMCAST ----------------------------------------------------------------------------


# --- BayesianSBN ------------------------------------------------------------------------


# --- DeepLDA ----------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", choices=sorted(SECTIONS), default=None)
    ap.add_argument("--seeds", nargs="*", type=int, default=[0])
    args = ap.parse_args()
    header()
    for name in args.only or sorted(SECTIONS):
        for seed in args.seeds:
            SECTIONS[name](seed)


if __name__ == "__main__":
    main()
