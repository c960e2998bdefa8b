"""Mixing of Gibbs vs adaptive simulated tempering on a DBM trained on MNIST.

Salakhutdinov (2010), Fig. 4 (left): consecutive sample particles, a fixed number
of sweeps apart, from chains started at random states after a burn-in. Each
recorded particle is shown as ``p(v | h^1)`` (the visible means), labelled by a
logistic regression trained on (grey-scale) MNIST, and the script prints how many
distinct digit classes each chain visits. Image grids go to
``benchmarks/results/dbm_mixing_<sampler>.png``.

The model is the CAST model that ``bench_dbm_samplers.py`` saves to
``benchmarks/results/dbm_cast_mnist.npz`` (not committed; ``--model`` names another
file); the header prints its SHA-256. The labeller is trained on MNIST from
:func:`skdgm.datasets.fetch_mnist` (``--data-home``, see ``benchmarks/_common.py``).

Usage (a few CPU-minutes; the first command makes the model)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 \\
        python benchmarks/bench_dbm_samplers.py --samplers cast
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 \\
        python benchmarks/bench_dbm_mixing.py > benchmarks/results/bench_dbm_mixing.txt
"""

import argparse
import os
import sys
from pathlib import Path

import numpy as np
from scipy.special import expit
from sklearn.linear_model import LogisticRegression

from skdgm._core.schedules import InverseTime
from skdgm.datasets import fetch_mnist
from skdgm.datasets._base import file_sha256
from skdgm.dbm import _model, _tempering

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import RESULTS, add_data_home_arg, data_home, header, shown  # noqa: E402


def classifier(home, n_train=20_000, seed=0):
    Xtr, ytr = fetch_mnist(data_home=home, subset="train", dtype=np.float64,
                           download_if_missing=False, return_X_y=True)
    Xte, yte = fetch_mnist(data_home=home, subset="test", dtype=np.float64,
                           download_if_missing=False, return_X_y=True)
    rng = np.random.default_rng(seed)
    idx = rng.choice(Xtr.shape[0], n_train, replace=False)
    clf = LogisticRegression(max_iter=300).fit(Xtr[idx], ytr[idx])
    return clf, clf.score(Xte, yte)


def visible_means(layers, W, b):
    return expit(layers[1] @ W[0].T + b[0])


def run(sampler, W, b, n_chains, burn_in, n_images, gap, beta_min, K, seed):
    rng = np.random.default_rng(seed)
    sizes = [x.shape[0] for x in b]
    layers = [(rng.random((n_chains, s)) < 0.5).astype(float) for s in sizes]
    frames = []
    if sampler == "gibbs":
        for _ in range(burn_in):
            _model.gibbs_sweep(layers, W, b, rng)
        for _ in range(n_images):
            for _ in range(gap):
                _model.gibbs_sweep(layers, W, b, rng)
            frames.append(visible_means(layers, W, b))
        return np.stack(frames, 1), None
    betas = _tempering.temperature_ladder(K, beta_min)
    gain = InverseTime(1000.0, 1000.0)
    last, (snaps, temps, _) = _tempering.adaptive_st_sample(
        layers, betas, gain, burn_in + n_images * gap, W, b, rng, record_every=gap)
    frames = [visible_means(s, W, b) for s in snaps[burn_in // gap:]]
    return np.stack(frames, 1), temps


def grid(frames, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n_chains, n_images = frames.shape[:2]
    img = frames.reshape(n_chains, n_images, 28, 28).transpose(0, 2, 1, 3)
    img = img.reshape(n_chains * 28, n_images * 28)
    fig, ax = plt.subplots(figsize=(n_images * 0.5, n_chains * 0.5 + 0.4))
    ax.imshow(img, cmap="gray_r", vmin=0, vmax=1)
    ax.set_axis_off()
    ax.set_title(title, fontsize=8)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-chains", type=int, default=10)
    ap.add_argument("--burn-in", type=int, default=1000)
    ap.add_argument("--n-images", type=int, default=20)
    ap.add_argument("--gap", type=int, default=300)
    ap.add_argument("--beta-min", type=float, nargs="+", default=[0.9, 0.8])
    ap.add_argument("--n-temperatures", type=int, default=20)
    ap.add_argument("--model", type=Path, default=RESULTS / "dbm_cast_mnist.npz",
                    help="the DBM's parameters (W0.., b0..), as bench_dbm_samplers.py saves them")
    add_data_home_arg(ap)
    args = ap.parse_args()
    if not args.model.is_file():
        raise SystemExit(f"{shown(args.model)} not found: run "
                         "benchmarks/bench_dbm_samplers.py --samplers cast first")
    home = data_home(args.data_home)
    checkout = RESULTS.parent.parent
    model = args.model.resolve()
    named = (os.path.relpath(model, checkout) if model.is_relative_to(checkout)
             else shown(model))
    header([f"data: {shown(home)}", f"model: {named} (sha256 {file_sha256(model)[:16]}...)"])
    p = np.load(args.model)
    L = sum(k.startswith("W") for k in p.files)
    W = [p[f"W{i}"] for i in range(L)]
    b = [p[f"b{i}"] for i in range(L + 1)]
    clf, acc = classifier(home)
    print(f"labeller: logistic regression on 20k grey MNIST images, test accuracy {acc:.3f}")
    print(f"{args.n_chains} chains, burn-in {args.burn_in} sweeps, {args.n_images} images "
          f"{args.gap} sweeps apart")
    RESULTS.mkdir(exist_ok=True)
    runs = [("gibbs", None)] + [("adaptive_st", bm) for bm in args.beta_min]
    for sampler, bm in runs:
        frames, temps = run(sampler, W, b, args.n_chains, args.burn_in, args.n_images,
                            args.gap, bm, args.n_temperatures, seed=1)
        labels = clf.predict(frames.reshape(-1, 784)).reshape(frames.shape[:2])
        distinct = np.array([len(np.unique(r)) for r in labels])
        changes = (np.diff(labels, axis=1) != 0).sum(1)
        tag = sampler if bm is None else f"{sampler}_beta{bm:g}"
        extra = ""
        if temps is not None:
            occ = np.bincount(temps.ravel(), minlength=args.n_temperatures) / temps.size
            extra = f", temperature occupancy min {occ.min():.3f} max {occ.max():.3f}"
        print(f"{tag:18s}: distinct classes per chain mean {distinct.mean():.1f} "
              f"(min {distinct.min()}, max {distinct.max()}), label changes per chain "
              f"{changes.mean():.1f}, classes over all chains "
              f"{len(np.unique(labels))}{extra}")
        grid(frames, RESULTS / f"dbm_mixing_{tag}.png",
             f"{tag}: {args.gap} sweeps between columns")


if __name__ == "__main__":
    main()
