"""The paper's Fig. 1: GRBMs on 3-component 2-D Gaussian mixtures, five samplers.

Data: 1,000 training and 1,000 held-out points from the mixtures of the paper's
Fig. 1 (the authors' code): weights 0.33, 0.33, 0.34, means (-5, -5), (5, -5),
(0, 5), standard deviations (1, 1) for each component ("isotropic") or (1.25, 0.5),
(1.25, 0.5), (0.5, 1.25) ("anisotropic"). For each sampler variant the script fits
a GaussianBernoulliRBM for ``--epochs`` epochs and reports

* the exact held-out log-likelihood (the 2-D density normalised on a grid),
* the model's mass inside each component's 3-sigma ellipse, the issue's
  criterion for "recovers the mode" (>= 0.25 each; the truth has 0.33 x 0.989),
* the share of 1,000 samples from ``sample`` inside each ellipse (the paper's
  visual criterion), the acceptance rate when adjusted, and the effective sample
  size of the annealed negative phase,

and saves density and sample plots under ``benchmarks/results/``.

Scaled down from the paper (256 hidden units, SGD at 0.01 for 50,000 epochs):
32 hidden units and CD-100 as in the paper, but Adam at 0.01 (cosine-decayed) for
``--epochs`` epochs (default 300, i.e. 3,000 updates) and, by default, the annealed
negative phase. ``--optimizer sgd --negative-phase noise`` is the paper's own
recipe. The data are divided by one global standard deviation before fitting
(densities are reported in the data's units).

``--exact N`` first runs N steps of ascent on the *exact* log-likelihood gradient
of the same model (negative statistics integrated on a grid), with SGD and with
Adam, to separate what the optimiser can do from what the sampler does.

``--quick`` keeps the 300 default epochs (3,000 updates, about what the mixtures need to
leave the single-Gaussian saddle: 100 epochs do not) but fits only the anisotropic
mixture with the default sampler (Gibbs) and Gibbs-Langevin + MH, the sampler of the
issue-3 criterion: about 4 CPU-minutes instead of about 45 for the ten fits at the 600
epochs of doc/benchmarks/grbm.rst's table. Its output says so in the header.

Usage (the committed results files; ``B="OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10
python benchmarks/bench_grbm_gmm.py"``)::

    $B --quick > benchmarks/results/grbm_gmm_quick.txt
    $B --exact 3000 --kinds anisotropic --variants none > benchmarks/results/grbm_gmm_exact.txt
    $B --epochs 600 --kinds anisotropic --variants gibbs_langevin+MH --optimizer sgd \\
        --negative-phase noise > benchmarks/results/grbm_gmm_aniso_glmh_sgd_noise.txt

The full main table of doc/benchmarks/grbm.rst is ``$B --epochs 600`` (about 45
CPU-minutes); its last output is in the git history (see benchmarks/README.md).
"""

import argparse
import os
import sys
import time

import numpy as np
from scipy.special import logsumexp

from skdgm import GaussianBernoulliRBM
from skdgm._core.numerics import sigmoid
from skdgm._core.optim import Adam
from skdgm.grbm._model import GRBMParams, StatsAccumulator, free_energy, hidden_activation

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import RESULTS, header  # noqa: E402

WEIGHTS = np.array([0.33, 0.33, 0.34])
MEANS = np.array([[-5.0, -5.0], [5.0, -5.0], [0.0, 5.0]])
STDS = {
    "isotropic": np.ones((3, 2)),
    "anisotropic": np.array([[1.25, 0.5], [1.25, 0.5], [0.5, 1.25]]),
}
VARIANTS = [("gibbs", False), ("langevin", False), ("langevin", True),
            ("gibbs_langevin", False), ("gibbs_langevin", True)]


def sample_gmm(kind, n, rng):
    z = rng.choice(3, size=n, p=WEIGHTS)
    return MEANS[z] + STDS[kind][z] * rng.standard_normal((n, 2))


def true_log_density(X, kind):
    S = STDS[kind]
    logs = [np.log(w) - 0.5 * np.sum(((X - m) / s) ** 2 + np.log(2 * np.pi * s * s), axis=1)
            for w, m, s in zip(WEIGHTS, MEANS, S)]
    return logsumexp(logs, axis=0)


def inside(P, kind):
    """Boolean (3, n): which points lie in each component's 3-sigma ellipse."""
    return np.stack([np.sum(((P - m) / s) ** 2, axis=1) <= 9.0
                     for m, s in zip(MEANS, STDS[kind])])


def grid(lim=12.0, n=241):
    g = np.linspace(-lim, lim, n)
    return g, np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2), (g[1] - g[0]) ** 2


def grid_density(params, scale, G, cell):
    """Log density on the grid ``G`` and ``log Z``, both in the data's units.

    The model sees ``x / scale``; ``p(x) = exp(-E~(x / scale)) / Z`` with
    ``Z = sum exp(-E~(G / scale)) cell`` (the Jacobian folded into ``Z``).
    """
    logf = -free_energy(G / scale, params)
    log_z = logsumexp(logf) + np.log(cell)
    return logf - log_z, log_z


def masses(logp, G, cell, kind):
    p = np.exp(logp) * cell
    return [float(p[m].sum()) for m in inside(G, kind)]


def exact_ascent(kind, n_steps, hidden, seed, init_std):
    """Ascent on the exact gradient (negative statistics integrated on a grid)."""
    rng = np.random.default_rng(0)
    X = sample_gmm(kind, 1000, rng)
    scale = X.std()
    Xs = X / scale
    g, G, cell = grid(n=121)
    Gs = G / scale
    for opt, lr in [("sgd", 0.05), ("adam", 0.01)]:
        r = np.random.default_rng(seed)
        params = [init_std * r.standard_normal((hidden, 2)),
                  np.zeros(hidden), np.zeros(2), np.zeros(2)]
        adam = Adam(params, maximize=True)
        t0 = time.process_time()
        for t in range(n_steps + 1):
            P = GRBMParams(*params)
            logp, log_z = grid_density(P, scale, G, cell)
            if t % (n_steps // 10) == 0:
                m = masses(logp, G, cell, kind)
                ll = np.mean(-free_energy(Xs, P)) - log_z
                print(f"exact gradient, {opt} lr {lr}: step {t:5d}  train LL {ll:7.3f}  "
                      f"mass {m[0]:.3f} {m[1]:.3f} {m[2]:.3f}  "
                      f"({time.process_time() - t0:.0f} s)", flush=True)
            if t == n_steps:
                break
            pos = StatsAccumulator(P).add(Xs, sigmoid(hidden_activation(Xs, P))).mean()
            w = np.exp(logp) * cell
            neg = StatsAccumulator(P).add(Gs, sigmoid(hidden_activation(Gs, P)),
                                          weights=w / w.sum()).mean()
            grads = [a - b for a, b in zip(pos, neg)]
            gnorm = np.sqrt(sum(np.sum(x * x) for x in grads))
            sc = min(1.0, 10.0 / gnorm)
            grads = [sc * x for x in grads]
            lr_t = lr * 0.5 * (1 + np.cos(np.pi * t / n_steps))     # as fit: cosine to 0
            if opt == "adam":
                params = adam.step(params, grads, learning_rate=lr_t)
            else:
                params = [p + lr_t * x for p, x in zip(params, grads)]


def _trace(est, every, scale, G, cell, kind):
    """Print the density's masses every ``every`` epochs of ``fit`` (a benchmark hook)."""
    one_pass = est._pass

    def traced(X, ctx):
        one_pass(X, ctx)
        if est.n_iter_ % every == 0:
            m = masses(grid_density(est._params(), scale, G, cell)[0], G, cell, kind)
            print(f"    epoch {est.n_iter_:5d}: mass {m[0]:.3f} {m[1]:.3f} {m[2]:.3f}  "
                  f"ESS {est.history_.get('negative_ess', [float('nan')])[-1]:.2f}", flush=True)

    est._pass = traced


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=300)
    ap.add_argument("--quick", action="store_true",
                    help="the quick setting: --kinds anisotropic --variants "
                         "gibbs,gibbs_langevin+MH (see the module docstring)")
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--cd-steps", type=int, default=100)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--optimizer", choices=["sgd", "adam"], default="adam")
    ap.add_argument("--objective", choices=["joint", "marginal"], default="joint")
    ap.add_argument("--negative-phase", choices=["noise", "annealed"], default="annealed")
    ap.add_argument("--kinds", default="isotropic,anisotropic")
    ap.add_argument("--adjust-after", type=int, default=0,
                    help="the paper's adjust step (0 = test every step, as its App. B.1)")
    ap.add_argument("--init-std", default="0.01",
                    help="initial weight std, or 'auto' for 1/sqrt(N + M)")
    ap.add_argument("--scale", choices=["global", "none"], default="global",
                    help="divide the data by one global std (default) or fit raw data")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--exact", type=int, default=0,
                    help="first run this many exact-gradient steps (SGD and Adam)")
    ap.add_argument("--trace", type=int, default=0,
                    help="print the density's masses every this many epochs")
    ap.add_argument("--long-chains", type=int, default=0,
                    help="also report the shares of samples drawn with this many steps")
    ap.add_argument("--variants", default="all",
                    help="comma list such as gibbs,gibbs_langevin+MH; 'none' to skip fits")
    args = ap.parse_args()
    if args.quick:
        args.kinds, args.variants = "anisotropic", "gibbs,gibbs_langevin+MH"
    header([f"quick setting (--quick: {args.epochs} epochs, --kinds {args.kinds} "
            f"--variants {args.variants}); the full table is --epochs 600"]
           if args.quick else None)
    kinds = args.kinds.split(",")
    if args.exact:
        for kind in kinds:
            std = 1 / np.sqrt(2 + args.hidden) if args.init_std == "auto" else float(args.init_std)
            exact_ascent(kind, args.exact, args.hidden, args.seed, std)
    if args.variants == "none":
        return
    variants = VARIANTS if args.variants == "all" else [
        (v.removesuffix("+MH"), v.endswith("+MH")) for v in args.variants.split(",")]
    RESULTS.mkdir(exist_ok=True)
    g, G, cell = grid()
    fits = {}
    for kind in kinds:
        rng = np.random.default_rng(0)
        Xtr, Xte = sample_gmm(kind, 1000, rng), sample_gmm(kind, 1000, rng)
        truth = float(np.mean(true_log_density(Xte, kind)))
        print(f"{kind:11s} {'true mixture':18s} held-out LL {truth:8.3f}  mass in 3-sigma "
              f"ellipses {' '.join(f'{w * 0.98889:.3f}' for w in WEIGHTS)}", flush=True)
        scale = Xtr.std() if args.scale == "global" else 1.0
        for sampler, adjust in variants:
            name = f"{sampler}{' +MH' if adjust else ''}"
            est = GaussianBernoulliRBM(
                n_components=args.hidden, sampler=sampler, metropolis_adjust=adjust,
                adjust_after=args.adjust_after, cd_steps=args.cd_steps, langevin_steps=10,
                negative_phase=args.negative_phase, optimizer=args.optimizer,
                objective=args.objective,
                learning_rate=args.lr, batch_size=100, n_iter=args.epochs,
                init_std=args.init_std if args.init_std == "auto" else float(args.init_std),
                random_state=args.seed)
            if args.trace:
                _trace(est, args.trace, scale, G, cell, kind)
            t = time.process_time()
            est.fit(Xtr / scale)
            fit_s = time.process_time() - t
            params = est._params()
            logp, log_z = grid_density(params, scale, G, cell)
            ll = float(np.mean(-free_energy(Xte / scale, params)) - log_z)
            m = masses(logp, G, cell, kind)
            # The training chain itself (unadjusted for the rows without MH), as in
            # the published table; since issue 12 sample() adds the test by default.
            S = scale * est.sample(1000, metropolis_adjust=est.metropolis_adjust,
                                   random_state=1)
            sh = inside(S, kind).mean(axis=1)
            # only recorded when defined (adjusted chains, annealed phase)
            acc = est.history_.get("acceptance_rate", [float("nan")])[-1]
            ess = est.history_.get("negative_ess", [float("nan")])[-1]
            fits[(kind, name)] = (logp, S[:500], Xtr)
            print(f"{kind:11s} {name:18s} held-out LL {ll:8.3f}  mass in 3-sigma ellipses "
                  f"{m[0]:.3f} {m[1]:.3f} {m[2]:.3f}  samples in them {sh[0]:.2f} {sh[1]:.2f} "
                  f"{sh[2]:.2f}  accept {acc:.2f}  ESS {ess:.2f}  fit {fit_s:.0f} s CPU  "
                  f"({est.n_updates_ / fit_s:.0f} updates/s)", flush=True)
            if args.long_chains:
                SL = scale * est.sample(1000, n_steps=args.long_chains,
                                        metropolis_adjust=est.metropolis_adjust,
                                        random_state=1)
                sl = inside(SL, kind).mean(axis=1)
                print(f"{'':30s} after {args.long_chains} steps: samples in them "
                      f"{sl[0]:.2f} {sl[1]:.2f} {sl[2]:.2f}", flush=True)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    tag = f"_{args.optimizer}_{args.negative_phase}_h{args.hidden}_k{args.cd_steps}_e{args.epochs}"
    tag += f"_seed{args.seed}" if args.seed else ""
    for kind in kinds:
        fig, ax = plt.subplots(2, len(variants), figsize=(3.4 * len(variants), 7),
                               squeeze=False)
        for j, (sampler, adjust) in enumerate(variants):
            name = f"{sampler}{' +MH' if adjust else ''}"
            logp, S, Xtr = fits[(kind, name)]
            ax[0, j].imshow(np.exp(logp).reshape(len(g), len(g)).T, origin="lower",
                            extent=[g[0], g[-1], g[0], g[-1]], cmap="viridis")
            ax[0, j].set_title(name)
            ax[1, j].scatter(Xtr[:500, 0], Xtr[:500, 1], s=2, c="0.7")
            ax[1, j].scatter(S[:, 0], S[:, 1], s=2, c="C3")
            ax[1, j].set_xlim(g[0], g[-1])
            ax[1, j].set_ylim(g[0], g[-1])
        fig.suptitle(f"GRBM on the {kind} mixture: density (top), samples (bottom)")
        out = RESULTS / f"grbm_gmm_{kind}{tag}.png"
        fig.savefig(out, dpi=80)
        print("saved", os.path.relpath(out, RESULTS.parent.parent))


if __name__ == "__main__":
    main()
