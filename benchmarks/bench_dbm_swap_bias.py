"""Bias of the two CAST swap rules against exact moments of a small RBM.

CAST (Salakhutdinov 2010, Sec. 6.1 and 8) hands a slow chain the *last* state its
fast adaptive-ST partner had at temperature 1 (``swap="last_visit"``). That state
is typically the one from which the fast chain climbed to a higher temperature, a
move accepted more readily from high energy, so the handed states are biased. The
default ``swap="at_beta_one"`` exchanges states only while the fast chain is at
temperature 1. With fixed parameters (no learning), the slow chains should sample
the model; this script prints the largest error over all first and second moments
(exact by enumeration) and the mean energy against the exact mean, for both rules,
on 12 x 8 RBMs with random weights, twice: over all slow-chain states, and over the
handed states only (the slow chains' states right after a swap). The second is
what a slow chain that cannot mix by Gibbs (a large multimodal model) is left with.

Usage (about 20 CPU-seconds)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 \\
        python benchmarks/bench_dbm_swap_bias.py > benchmarks/results/bench_dbm_swap_bias.txt
"""

import argparse
import os
import sys

import numpy as np
from scipy.special import expit, logsumexp

from skdgm._core.exact import binary_states
from skdgm._core.schedules import InverseTime
from skdgm.dbm import _model, _tempering

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import cpu_timed, header  # noqa: E402


def exact(W, b):
    H = W[0].shape[1]
    Hs = binary_states(H)
    a = Hs @ W[0].T + b[0]
    lf = Hs @ b[1] + np.logaddexp(0, a).sum(1)
    p = np.exp(lf - logsumexp(lf))
    Ev = expit(a)
    D = W[0].shape[0]
    m_vv = np.einsum("n,ni,nj->ij", p, Ev, Ev)
    m_vv[np.diag_indices(D)] = p @ Ev
    moments = [p @ Ev, p @ Hs, (Ev * p[:, None]).T @ Hs, m_vv, (Hs * p[:, None]).T @ Hs]
    # E[E] = -E[v^T W h] - b_v.E[v] - b_h.E[h]
    mean_e = -(np.sum(moments[2] * W[0]) + b[0] @ moments[0] + b[1] @ moments[1])
    return moments, mean_e


class Acc:
    def __init__(self):
        self.s = [0.0] * 5
        self.e = 0.0
        self.n = 0

    def add(self, v, h, W, b):
        for i, st in enumerate((v.sum(0), h.sum(0), v.T @ h, v.T @ v, h.T @ h)):
            self.s[i] = self.s[i] + st
        self.e += _model.energy([v, h], W, b).sum()
        self.n += v.shape[0]

    def report(self, mom, mean_e):
        err = max(np.abs(a / self.n - m).max() for a, m in zip(self.s, mom))
        return err, self.e / self.n - mean_e


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8000)
    ap.add_argument("--chains", type=int, default=50)
    ap.add_argument("--interval", type=int, default=50)
    ap.add_argument("--scales", type=float, nargs="+", default=[1.0, 1.5, 2.0])
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    header()
    _, cpu = cpu_timed(run, args)
    print(f"\ntotal {cpu:.0f} CPU-s")


def run(args):
    print(f"12x8 RBMs, W ~ N(0, s^2), b ~ N(0, 0.25); CAST with K = 10 temperatures "
          f"down to 0.3, swap every {args.interval} updates; {args.steps} steps x "
          f"{args.chains} chains, first 20% discarded")
    print(f"{'':4s} {'':4s} {'':12s} {'all slow states':>20s} {'handed states':>28s}")
    print(f"{'s':>4s} {'seed':>4s} {'rule':>12s} {'max err':>10s} {'E-E*':>9s} "
          f"{'max err':>10s} {'E-E*':>9s} {'n':>7s}")
    for scale in args.scales:
        for seed in range(args.seeds):
            rng0 = np.random.default_rng(seed)
            W = [rng0.normal(0, scale, (12, 8))]
            b = [rng0.normal(0, 0.5, 12), rng0.normal(0, 0.5, 8)]
            mom, mean_e = exact(W, b)
            for swap in ("at_beta_one", "last_visit"):
                rng = np.random.default_rng(100 + seed)
                layers = [(rng.random((args.chains, s)) < 0.5).astype(float) for s in (12, 8)]
                ch = _tempering.CASTChains(layers, [a.copy() for a in layers],
                                           _tempering.temperature_ladder(10, 0.3),
                                           InverseTime(100.0, 100.0), args.interval, swap)
                acc = [Acc(), Acc()]
                for s in range(args.steps):
                    v, h = ch.step(W, b, rng)
                    if s >= args.steps // 5:
                        acc[0].add(v, h, W, b)
                        sel = ch.swapped
                        if sel.any():
                            acc[1].add(v[sel], h[sel], W, b)
                out = [a.report(mom, mean_e) for a in acc]
                print(f"{scale:4.1f} {seed:4d} {swap:>12s} {out[0][0]:10.4f} {out[0][1]:9.4f}"
                      f" {out[1][0]:10.4f} {out[1][1]:9.4f} {acc[1].n:7d}", flush=True)


if __name__ == "__main__":
    main()
