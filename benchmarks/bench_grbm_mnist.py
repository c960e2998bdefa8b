"""GaussianBernoulliRBM on MNIST: a fixed time budget per sampler, AIS test LL, samples.

Data: MNIST through :func:`skdgm.datasets.fetch_mnist` (the paper's data; the folder
is ``--data-home``, see ``benchmarks/_common.py``), standardised per pixel with
the training mean and standard deviation. Pixels whose training standard deviation
is below 1 grey level (of 255) are dropped for the likelihood: constant pixels
would drive their variance to ``min_variance`` (a density spike that says nothing
about digits), and nearly constant ones turn a single test stroke into a z-score
above 1,000 that dominates any test log-likelihood (N(0, I) scores -955 nats on the
training subset but -1909 on the test images when they are kept). They are
re-inserted as their means in the sample grids. The N(0, I) baseline is printed in
the same units.

Scaled down to fit a few minutes on one shared core: a training subset
(``--n-train``, default 10,000), ``--hidden`` hidden units (default 256, the paper
uses 4,096), CD-``--cd-steps`` (default 20, the paper 100), batch 100, and a budget
of ``--budget`` CPU seconds (default 40; CPU time of this process, so that other jobs
on a shared machine do not shorten it) of training per sampler variant
(minibatches of the subset, 2,000 random rows per pass; Gibbs-Langevin draws its
K-step inner move in closed form, ``langevin_inner="closed_form"``).
Test log-likelihood: AIS (64 runs, 1,000 sigmoid-spaced temperatures) on the first
``--n-test`` (default 1,000) test images, in nats per image over the kept pixels.

About 5 CPU-minutes. The sample grids go to ``benchmarks/results/grbm_mnist_samples.png``
(not committed).

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/bench_grbm_mnist.py \\
        > benchmarks/results/grbm_mnist.txt
"""

import argparse
import os
import sys
import time

import numpy as np

from skdgm.datasets import fetch_mnist
from skdgm.grbm import GaussianBernoulliRBM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import RESULTS, add_data_home_arg, data_home, header, shown  # noqa: E402
VARIANTS = [("gibbs", False), ("langevin", False), ("langevin", True),
            ("gibbs_langevin", False), ("gibbs_langevin", True)]


def standardise_pixels(Xtr, Xte, min_std=1.0):
    """Per-pixel z-scores with the training mean and sd, pixels of sd <= ``min_std`` dropped.

    Returns ``(Ztr, Zte, mean, std, keep)``; see the module docstring for why the
    near-constant pixels are dropped.
    """
    mean, std = Xtr.mean(0), Xtr.std(0)
    keep = std > min_std
    Ztr = ((Xtr - mean) / np.where(keep, std, 1))[:, keep]
    Zte = ((Xte - mean) / np.where(keep, std, 1))[:, keep]
    return Ztr, Zte, mean, std, keep


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-train", type=int, default=10000)
    ap.add_argument("--n-test", type=int, default=1000)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--cd-steps", type=int, default=20)
    ap.add_argument("--budget", type=float, default=40.0, help="CPU seconds per sampler")
    add_data_home_arg(ap)
    args = ap.parse_args()
    home = data_home(args.data_home)
    header([f"data: {shown(home)}"])
    Xtr = fetch_mnist(data_home=home, subset="train", download_if_missing=False,
                      return_X_y=True)[0][: args.n_train].astype(np.float32)
    Xte = fetch_mnist(data_home=home, subset="test", download_if_missing=False,
                      return_X_y=True)[0][: args.n_test].astype(np.float32)
    Ztr, Zte, mean, std, keep = standardise_pixels(Xtr, Xte)
    print(f"MNIST subset: {Ztr.shape[0]} train, {Zte.shape[0]} test, "
          f"{keep.sum()} of 784 pixels kept (std > 1 grey level)")
    base = -0.5 * keep.sum() * np.log(2 * np.pi)
    print(f"N(0, I) baseline: train {np.mean(base - 0.5 * (Ztr ** 2).sum(1)):.2f}, "
          f"test {np.mean(base - 0.5 * (Zte ** 2).sum(1)):.2f} nats per image")
    RESULTS.mkdir(exist_ok=True)
    grids = {}
    for sampler, adjust in VARIANTS:
        name = f"{sampler}{' +MH' if adjust else ''}"
        est = GaussianBernoulliRBM(
            n_components=args.hidden, sampler=sampler, metropolis_adjust=adjust,
            cd_steps=args.cd_steps, langevin_steps=10, batch_size=100,
            learning_rate=0.01, n_ais_runs=64, n_ais_betas=1000, random_state=0,
            langevin_inner="closed_form", optimizer="sgd", negative_phase="noise")
        t0 = time.process_time()
        epochs = 0
        while time.process_time() - t0 < args.budget:
            est.partial_fit(Ztr[np.random.default_rng(epochs).permutation(len(Ztr))[:2000]])
            epochs += 1
        train_s = time.process_time() - t0
        t1 = time.process_time()
        log_z, se = est.log_partition()
        ll = est.score(Zte)
        ais_s = time.process_time() - t1
        acc = est.history_.get("acceptance_rate", [float("nan")])[-1]
        print(f"{name:18s} {est.n_updates_:4d} updates in {train_s:5.1f} s; test LL "
              f"{ll:9.2f} nats (log Z {log_z:.2f} +- {se:.2f}, AIS {ais_s:.1f} s); "
              f"mean log var {np.mean(est.log_variance_):6.2f}; accept {acc:.3f}",
              flush=True)
        # the training chain, as in the published grids (sample() adds the
        # Metropolis test by default since issue 12)
        S = est.sample(64, n_steps=100, metropolis_adjust=est.metropolis_adjust,
                       random_state=0)
        full = np.zeros((64, 784), np.float32)
        full[:, keep] = S * std[keep] + mean[keep]
        full[:, ~keep] = mean[~keep]
        grids[name] = full
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(1, 5, figsize=(20, 4.5))
    for ax, (name, full) in zip(axes, grids.items()):
        img = full.reshape(8, 8, 28, 28).transpose(0, 2, 1, 3).reshape(224, 224)
        ax.imshow(np.clip(img, 0, 255), cmap="gray")
        ax.set_title(name)
        ax.set_axis_off()
    fig.suptitle("GRBM samples from noise (100 sampler steps), MNIST subset, fixed budget")
    fig.savefig(RESULTS / "grbm_mnist_samples.png", dpi=80)
    print("saved", os.path.relpath(RESULTS / "grbm_mnist_samples.png",
                                   RESULTS.parent.parent))


if __name__ == "__main__":
    main()
