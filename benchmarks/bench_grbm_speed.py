"""Seconds per modified-CD update of GaussianBernoulliRBM against the GEMM floor.

Two shapes from the issue: 64 x 256 (batch 100, K = 100 CD steps, 10 Langevin
steps) and 784 x 4096 (batch 512, same K). For each, the script times one full
update (positive phase, negative chains from noise, statistics, clipped SGD step)
with the Cython inner loop, with its NumPy twin and with the closed-form K-step
draw (``langevin_inner="closed_form"``), and measures in the same run
the time of the matrix products such an update must do: a joint Gibbs-Langevin
CD-K update is 3K + 4 products of a (B x N) by (N x M) size (2 B N M flops each).
The "GEMM floor" is (3K + 4) times the best measured time of one such product.

Run (one core, niced, on a shared box)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/bench_grbm_speed.py

Add ``--quick`` to skip the 784 x 4096 shape (it needs ~1 minute per variant).
"""

import sys
import time

import numpy as np

from skdgm.grbm import GaussianBernoulliRBM
from skdgm.grbm import _samplers


def best_time(f, repeat):
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def gemm_time(B, N, M, dtype, repeat=20):
    rng = np.random.default_rng(0)
    V = rng.standard_normal((B, N)).astype(dtype)
    W = rng.standard_normal((M, N)).astype(dtype)
    H = rng.standard_normal((B, M)).astype(dtype)
    # the three products of one CD step: V W^T, H W, H^T V
    t1 = best_time(lambda: V @ W.T, repeat)
    t2 = best_time(lambda: H @ W, repeat)
    t3 = best_time(lambda: H.T @ V, repeat)
    return (t1 + t2 + t3) / 3


def one_case(N, M, B, K, L, dtype, repeat, variants=None):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((B, N)).astype(dtype)
    tg = gemm_time(B, N, M, dtype)
    n_gemm = 3 * K + 4
    floor = n_gemm * tg
    print(f"\n{N} x {M}, batch {B}, K = {K}, {L} Langevin steps, {np.dtype(dtype).name}")
    print(f"  one {B}x{N}x{M} GEMM: {tg * 1e3:.3f} ms "
          f"({2 * B * N * M / tg / 1e9:.1f} GFLOP/s); floor for {n_gemm} GEMMs: "
          f"{floor:.4f} s")
    variants = variants or [
        ("gibbs_langevin", False, "Cython"), ("gibbs_langevin", False, "NumPy"),
        ("gibbs_langevin", False, "closed_form"), ("gibbs_langevin", True, "Cython"),
        ("gibbs_langevin", True, "closed_form"), ("gibbs", False, "-"),
        ("langevin", False, "-"), ("langevin", True, "-")]
    for sampler, adjust, kind in variants:
        _samplers.USE_FAST = kind != "NumPy"
        est = GaussianBernoulliRBM(
            n_components=M, sampler=sampler, metropolis_adjust=adjust, adjust_after=0,
            cd_steps=K, langevin_steps=L, batch_size=B, n_iter=1, random_state=0,
            langevin_inner="closed_form" if kind == "closed_form" else "steps",
            negative_phase="noise", optimizer="sgd")
        est._check_hyper()
        est._validate_input(X, reset=True)
        est._init_params(N, np.dtype(dtype))
        est._resolve_negative_phase()
        r = np.random.default_rng(1)
        t = best_time(lambda: est._update(X, r), repeat)
        print(f"  {sampler:15s} adjust={adjust!s:5s} {kind:11s}: {t:.4f} s/update, "
              f"GEMM floor reached {floor / t * 100:5.1f} %", flush=True)
    _samplers.USE_FAST = True


if __name__ == "__main__":
    one_case(64, 256, 100, 100, 10, np.float32, repeat=5)
    one_case(64, 256, 100, 100, 10, np.float64, repeat=5)
    if "--quick" not in sys.argv:
        # one update per variant (each ~0.5 min here): the three that matter
        one_case(784, 4096, 512, 100, 10, np.float32, repeat=1,
                 variants=[("gibbs_langevin", False, "Cython"),
                           ("gibbs_langevin", False, "closed_form"),
                           ("gibbs_langevin", True, "Cython")])
