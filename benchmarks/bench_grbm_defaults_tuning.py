"""The measurements behind GaussianBernoulliRBM's defaults (issue 13).

One fit per call, settings given as JSON (anything not given is the estimator's
default at the commit that ran it), on one of two data sets:

* ``digits``: ``load_digits`` split as ``bench_defaults.digits_split(0)`` (1,200 /
  597), dequantised (uniform noise on the integer grey levels) and standardised;
  prints the test log-likelihood (AIS), its standard error and the CPU seconds;
  ``digits base`` prints the Gaussian baselines instead.
* ``mixture``: the paper's anisotropic 2-D mixture (``bench_grbm_gmm.sample_gmm``,
  1,000 / 1,000), standardised per feature, ``n_components=64``; prints the true
  density's test log-likelihood, the GRBM's from a grid-normalised density and
  from ``score`` (AIS), in the data's units.

Run (the figures in ``benchmarks/results/defaults_grbm_tuning.txt``)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice python \\
        benchmarks/bench_grbm_defaults_tuning.py digits '{"optimizer": "adam", "n_iter": 60}'
"""

import json
import os
import sys
import time

import numpy as np
from scipy.special import logsumexp
from sklearn.mixture import GaussianMixture
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_defaults import digits_split  # noqa: E402
from bench_grbm_gmm import grid, sample_gmm, true_log_density  # noqa: E402

from skdgm import GaussianBernoulliRBM  # noqa: E402
from skdgm.grbm._model import free_energy  # noqa: E402


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
            print(label, g.score(Xte))
        return
    kw = json.loads(kw)
    est = GaussianBernoulliRBM(random_state=0, **kw)
    t = time.process_time()
    est.fit(Xtr)
    tf = time.process_time() - t
    t = time.process_time()
    lz, se = est.log_partition()
    s = est.score(Xte)
    ts = time.process_time() - t
    print(kw, f"test {s:.3f} logZ se {se:.3f} fit {tf:.1f}s score {ts:.1f}s "
          f"mlv {np.mean(est.log_variance_):.3f}", flush=True)


def mixture(kw):
    kind = "anisotropic"
    rng = np.random.default_rng(0)
    Xtr, Xte = sample_gmm(kind, 1000, rng), sample_gmm(kind, 1000, rng)
    truth = float(np.mean(true_log_density(Xte, kind)))
    kw = json.loads(kw)
    sc = StandardScaler().fit(Xtr)
    jac = np.sum(np.log(sc.scale_))
    est = GaussianBernoulliRBM(n_components=64, random_state=kw.pop("seed", 0), **kw)
    t = time.process_time()
    est.fit(sc.transform(Xtr))
    tf = time.process_time() - t
    _, G, cell = grid(lim=4.0, n=241)
    params = est._params()
    log_z = logsumexp(-free_energy(G, params)) + np.log(cell)
    ll = float(np.mean(-free_energy(sc.transform(Xte), params)) - log_z - jac)
    t = time.process_time()
    s = est.score(sc.transform(Xte)) - jac
    ts = time.process_time() - t
    print(kw, f"truth {truth:.3f} grid-exact {ll:.3f} score {s:.3f} fit {tf:.1f}s "
          f"score {ts:.1f}s n_iter_ {est.n_iter_}", flush=True)


if __name__ == "__main__":
    {"digits": digits, "mixture": mixture}[sys.argv[1]](sys.argv[2])
