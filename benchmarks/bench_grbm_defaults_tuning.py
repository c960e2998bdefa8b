"""The measurements behind GaussianBernoulliRBM's defaults (issue 13).

One fit per setting, settings given as JSON (anything not given is the estimator's
default at the commit that ran it), on one of two data sets:

* ``digits``: ``load_digits`` split as ``bench_defaults.digits_split(0)`` (1,200 /
  597), dequantised (uniform noise on the integer grey levels) and standardised;
  prints the test log-likelihood (AIS), its standard error and the CPU seconds;
  ``digits base`` prints the Gaussian baselines instead.
* ``mixture``: the paper's anisotropic 2-D mixture (``bench_grbm_gmm.sample_gmm``,
  1,000 / 1,000), standardised per feature, ``n_components=64``; prints the true
  density's test log-likelihood, the GRBM's from a grid-normalised density and
  from ``score`` (AIS), in the data's units.

``suite`` runs the settings of :data:`SUITE` in one process: the defaults as they
stand, and the alternatives they were chosen against, each spelled out in full
(sampler, CD steps, optimiser, negative phase, passes) so that a line does not
change meaning when a default changes. ``suite --quick`` runs the rows marked quick
(about 3 CPU-minutes instead of about 8). Times are CPU seconds, one BLAS thread.

Usage (the committed ``benchmarks/results/defaults_grbm_tuning.txt`` is the quick
suite)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice python \\
        benchmarks/bench_grbm_defaults_tuning.py suite --quick \\
        > benchmarks/results/defaults_grbm_tuning.txt
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice python \\
        benchmarks/bench_grbm_defaults_tuning.py digits '{"optimizer": "adam", "n_iter": 60}'
"""

import argparse
import json
import os
import sys

import numpy as np
from scipy.special import logsumexp
from sklearn.mixture import GaussianMixture
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import cpu_timed, header  # noqa: E402
from bench_defaults import digits_split  # noqa: E402
from bench_grbm_gmm import grid, sample_gmm, true_log_density  # noqa: E402

from skdgm import GaussianBernoulliRBM  # noqa: E402
from skdgm.grbm._model import free_energy  # noqa: E402

_OLD = dict(sampler="gibbs_langevin", cd_steps=100)        # the pre-issue-13 sampler
_NEW = dict(sampler="gibbs", cd_steps=30, optimizer="adam")
# (data set, settings, in the quick suite)
SUITE = [
    ("digits", "base", True),
    ("digits", {}, True),
    ("digits", {**_NEW, "negative_phase": "noise", "n_iter": 60}, True),
    ("digits", {**_OLD, "optimizer": "adam", "negative_phase": "noise", "n_iter": 60}, False),
    ("digits", {"sampler": "gibbs", "cd_steps": 100, "optimizer": "adam",
                "negative_phase": "noise", "n_iter": 60}, False),
    ("digits", {**_OLD, "optimizer": "adam", "negative_phase": "annealed", "n_iter": 60},
     False),
    ("digits", {**_OLD, "optimizer": "sgd", "negative_phase": "noise", "n_iter": 170,
                "learning_rate": 0.03}, False),
    ("mixture", {}, True),
    ("mixture", {**_NEW, "negative_phase": "annealed", "n_iter": 100}, True),
    ("mixture", {**_NEW, "negative_phase": "annealed", "n_iter": 300}, True),
    ("mixture", {**_NEW, "negative_phase": "annealed", "n_iter": 300,
                 "learning_rate": 0.03}, False),
    ("mixture", {**_NEW, "negative_phase": "annealed", "n_iter": 600}, False),
]


def digits(kw):
    Xtr, Xte, _, _ = digits_split(0)
    rng = np.random.default_rng(0)
    Xtr = Xtr + rng.random(Xtr.shape)
    Xte = Xte + rng.random(Xte.shape)
    sc = StandardScaler().fit(Xtr)
    Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
    if kw == "base":
        for label, k, cov in [("full-covariance Gaussian", 1, "full"),
                              ("diagonal Gaussian", 1, "diag"),
                              ("GaussianMixture(5, full)", 5, "full")]:
            g = GaussianMixture(k, covariance_type=cov, random_state=0).fit(Xtr)
            print(f"digits  {label}: test {g.score(Xte):.3f}", flush=True)
        return
    est = GaussianBernoulliRBM(random_state=0, **kw)
    _, tf = cpu_timed(est.fit, Xtr)
    ((lz, se), s), ts = cpu_timed(lambda: (est.log_partition(), est.score(Xte)))
    print(f"digits  {json.dumps(kw)} test {s:.3f} logZ se {se:.3f} fit {tf:.1f}s "
          f"score {ts:.1f}s mlv {np.mean(est.log_variance_):.3f} n_iter_ {est.n_iter_}",
          flush=True)


def mixture(kw):
    kind = "anisotropic"
    rng = np.random.default_rng(0)
    Xtr, Xte = sample_gmm(kind, 1000, rng), sample_gmm(kind, 1000, rng)
    truth = float(np.mean(true_log_density(Xte, kind)))
    kw = dict(kw)
    seed = kw.pop("seed", 0)
    sc = StandardScaler().fit(Xtr)
    jac = np.sum(np.log(sc.scale_))
    est = GaussianBernoulliRBM(n_components=64, random_state=seed, **kw)
    _, tf = cpu_timed(est.fit, sc.transform(Xtr))
    _, G, cell = grid(lim=4.0, n=241)
    params = est._params()
    log_z = logsumexp(-free_energy(G, params)) + np.log(cell)
    ll = float(np.mean(-free_energy(sc.transform(Xte), params)) - log_z - jac)
    s, ts = cpu_timed(est.score, sc.transform(Xte))
    s -= jac
    print(f"mixture {json.dumps(kw)} seed {seed} truth {truth:.3f} grid-exact {ll:.3f} "
          f"score {s:.3f} fit {tf:.1f}s score {ts:.1f}s n_iter_ {est.n_iter_}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset", choices=["digits", "mixture", "suite"])
    ap.add_argument("settings", nargs="?", default="{}",
                    help="JSON settings, or 'base' for the digits baselines")
    ap.add_argument("--quick", action="store_true", help="suite: the quick rows only")
    args = ap.parse_args()
    run = {"digits": digits, "mixture": mixture}
    if args.dataset == "suite":
        header(["quick suite (--quick): the SUITE rows marked quick"] if args.quick
               else None)
        for name, kw, quick in SUITE:
            if quick or not args.quick:
                run[name](kw)
        return
    header()
    run[args.dataset](args.settings if args.settings == "base" else json.loads(args.settings))


if __name__ == "__main__":
    main()
