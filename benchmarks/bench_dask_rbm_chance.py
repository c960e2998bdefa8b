"""Is the GRBM's dask-array fit a different model or another chain? (issue 28, diagnosis)

Cheap sizes: 2,000 training and 500 test rows of MNIST's training set, dequantised
(uniform noise, seed 0) and standardised per pixel; GaussianBernoulliRBM(16) (so
``score`` is exact), 5 passes, early stopping off, float32. Each seed fits the
same rows in memory, as one dask block and as 4 dask blocks (no client), and
scores the same test rows. ``objective="marginal"`` draws nothing in the positive
phase: one block must be the in-memory fit bit for bit and 4 blocks differ by the
summation order's rounding only. ``objective="joint"`` samples the hidden units
from one stream per block: another chain; the paired differences over seeds
(mean and standard error) say whether the dask path is systematically lower.

Usage (about 1 minute of one core)::

    SKDGM_DATA=... OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_dask_rbm_chance.py > benchmarks/results/dask_rbm_chance.txt
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import cpu_timed, data_home, header  # noqa: E402


def _data():
    X = np.load(os.path.join(data_home(), "mnist.npz"))["x_train"]
    X = X.reshape(X.shape[0], -1)[:2500].astype(np.float64)
    X = (X + np.random.default_rng(0).random(X.shape)) / 256.0
    X = (X - X.mean(axis=0)) / (X.std(axis=0) + 0.1)
    return X[:2000], X[2000:]


def main():
    import dask.array as da

    from skdgm import GaussianBernoulliRBM

    header()
    X, X_test = _data()
    paths = {"memory": X, "1 block": da.from_array(X, chunks=(2000, -1)),
             "4 blocks": da.from_array(X, chunks=(500, -1))}
    for objective, seeds in (("marginal", [0]), ("joint", list(range(8)))):
        scores = {k: [] for k in paths}
        for seed in seeds:
            fits = {}
            for name, data in paths.items():
                est = GaussianBernoulliRBM(n_components=16, n_iter=5, objective=objective,
                                           random_state=seed, early_stopping=False)
                fits[name], cpu = cpu_timed(est.fit, data)
                scores[name].append(float(fits[name].score(X_test)))
            diff = {k: max(float(np.max(np.abs(getattr(fits["memory"], a)
                                                - getattr(fits[k], a))))
                           for a in ("components_", "intercept_hidden_", "mean_",
                                     "log_variance_"))
                    for k in ("1 block", "4 blocks")}
            print(f"{objective} seed {seed}: " + " | ".join(
                f"{k} {scores[k][-1]:.3f}" for k in paths)
                + f" | largest parameter difference from memory: 1 block {diff['1 block']:.3g},"
                f" 4 blocks {diff['4 blocks']:.3g}", flush=True)
        if len(seeds) > 1:
            m = np.array(scores["memory"])
            for name in paths:
                s = np.array(scores[name])
                line = (f"{objective} {name}: mean {s.mean():.3f}, sd over seeds "
                        f"{s.std(ddof=1):.3f}")
                if name != "memory":
                    d = s - m
                    line += (f"; paired difference from memory {d.mean():+.3f} "
                             f"(s.e. {d.std(ddof=1) / np.sqrt(len(d)):.3f})")
                print(line, flush=True)


if __name__ == "__main__":
    main()
