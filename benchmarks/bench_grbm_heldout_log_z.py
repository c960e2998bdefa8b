"""GaussianBernoulliRBM's held-out log Z along training: which estimate ranks the passes? (issue 25)

Early stopping scores the held-out rows after every pass by their median
``log p(v) = -E~(v) - log Z``, so it ranks a pass by its ``log Z`` estimate as much as
by its model. On all 60,000 MNIST images (256 units) the default's estimate (a
fresh AIS run from the base, 300 temperatures x 16 runs, the same random numbers
every pass) fell 294 nats short for one pass and 90 for another
(``grbm_heldout_figure.txt``), and a longer cap let it keep a bad pass. This script
trains ``GaussianBernoulliRBM(random_state=0)`` (the defaults: 256 hidden units) on
``--rows`` dequantised, standardised MNIST training rows with
``early_stopping=True``, ``n_iter=--passes`` and no plateau stop, and every
``--every`` passes prints these ``log Z`` estimates of the current model:

* ``fresh T``: a fresh AIS run from the base, ``T`` temperatures x 16 runs on the
  held-out figure's fixed stream (``T = 300`` is the default's figure);
* ``tracked``: 16 particles carried from pass to pass, each printed pass reached
  from the previous pass's model by 300 AIS steps along the linear path between
  the two models' parameters (a sequential Monte Carlo sampler, resampled when the
  weights' ESS falls below half; tried as the figure and not adopted: it lives
  here only), run on every pass;
* ``reference``: AIS with ``--betas`` temperatures x ``--runs`` runs, another stream.

and each one's error against the reference. A constant error does not change
which pass is kept, so the summary gives each estimate's spread of errors over
the printed passes, the printed pass its held-out median keeps, and the
reference's median at that pass.

Usage (about 15 CPU-minutes at the defaults)::

    SKDGM_DATA=../shared/data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_grbm_heldout_log_z.py \\
        > benchmarks/results/grbm_heldout_log_z.txt
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np
from scipy.special import logsumexp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402
from _common import header, shown  # noqa: E402
from bench_defaults_convergence import load  # noqa: E402

from skdgm._core.ais import ais_log_weights, check_schedule  # noqa: E402
from skdgm._core.mcmc import effective_sample_size  # noqa: E402
from skdgm.grbm._model import GRBMParams, ais_log_density, ais_transition  # noqa: E402

FRESH = (300, 1000, 3000)


def _take_rows(state, idx):
    if isinstance(state, tuple):
        return tuple(_take_rows(s, idx) for s in state)
    return np.take(state, idx, axis=0)


def systematic_resample(log_w, rng):
    """Indices of a systematic resampling of ``len(log_w)`` particles by weight.

    One uniform draw; each particle is kept about ``n w_r / sum w`` times, with
    less spread than multinomial resampling (Douc & Cappe 2005).
    """
    n = len(log_w)
    w = np.exp(log_w - logsumexp(log_w))
    edges = np.cumsum(w)
    edges[-1] = 1.0     # rounding must not leave the last point without a particle
    return np.searchsorted(edges, (rng.random() + np.arange(n)) / n)


class TrackedLogPartition:
    """``log Z`` of each model in a sequence of nearby models, from one set of particles.

    What early stopping needs: one figure per pass whose pass-to-pass changes are
    the model's, not an estimator's. A fresh cheap AIS run from the base every pass
    is far off for a well-trained model and off by a different amount each pass (a
    GaussianBernoulliRBM(256) on MNIST: 294 nats low at one pass, 90 at another,
    ``benchmarks/results/grbm_heldout_figure.txt``). Here the particles instead
    follow training: the first model is reached from the base distribution by
    ``n_betas`` temperatures, and every next model from the one before by
    ``n_betas`` steps of a path between the two (AIS from model to model), the
    particles carried with their weights: a sequential Monte Carlo sampler (Del
    Moral, Doucet & Jasra 2006), resampled (systematic) when the weights'
    effective sample size falls below half the particles. Its ``Z`` estimate is
    unbiased for every model of the sequence, whatever the path. When the models
    move little between calls, a short path between neighbours is far more
    accurate than a path of the same length from the base, and an error made at
    the first model is a constant offset for all the later ones.

    Parameters
    ----------
    start : callable
        ``start(params) -> (log_density, transition, sample_base, log_z0)``, the
        base-to-model AIS callables (module docstring) for the first model.
    bridge : callable
        ``bridge(previous, params) -> (log_density, transition)``: ``f_0`` the
        previous model's unnormalised density, ``f_1`` the new one's, a transition
        leaving each ``f_beta`` invariant. Any path is exact in expectation; for
        models of one family, interpolating the parameters is the simplest.
    n_runs : int
        Particles.
    n_betas : int or array-like
        Temperatures of every step (a count: :func:`beta_schedule` of ``kind``).
    kind : {"sigmoid", "linear"}, default="sigmoid"

    Attributes
    ----------
    log_z : float or None
        The latest model's estimate.
    std_err : float
        Its approximate standard error: the delta-method relative variances of
        the steps, summed as if independent.
    n_models, n_resampled : int
    """

    def __init__(self, start, bridge, *, n_runs, n_betas, kind="sigmoid"):
        self.start, self.bridge = start, bridge
        self.betas, _ = check_schedule(n_betas, n_runs, 1, kind)
        self.n_runs = int(n_runs)
        self.previous = self.state = None
        self.log_w = np.zeros(self.n_runs)
        self.log_z, self._var = None, 0.0
        self.n_models = self.n_resampled = 0

    @property
    def std_err(self):
        return float(np.sqrt(self._var))

    def __call__(self, params, rng):
        """Move the particles to ``params``; returns ``(log Z, standard error)``.

        ``params`` is kept (not copied) as the next step's starting model: pass
        arrays that the caller does not change in place afterwards.
        """
        if self.previous is None:
            log_density, transition, sample_base, base_log_z = self.start(params)
        else:
            (log_density, transition), sample_base = self.bridge(self.previous, params), None
            base_log_z = self.log_z
        step_w, state = ais_log_weights(
            self.n_runs, rng, log_density=log_density, transition=transition,
            sample_base=sample_base, betas=self.betas, return_state=True, state=self.state)
        # normalised carried weights times this step's weights: Z_k / Z_{k-1}
        carried = self.log_w - logsumexp(self.log_w)
        joint = carried + step_w
        increment = logsumexp(joint)
        w_carried = np.exp(carried)
        self._var += float(np.sum(w_carried ** 2 * (np.exp(step_w - increment) - 1.0) ** 2))
        self.log_z = float(base_log_z + increment)
        self.log_w = self.log_w + step_w
        if effective_sample_size(np.exp(self.log_w - np.max(self.log_w))) < self.n_runs / 2:
            state = _take_rows(state, systematic_resample(self.log_w, rng))
            self.log_w = np.zeros(self.n_runs)
            self.n_resampled += 1
        self.previous, self.state = params, state
        self.n_models += 1
        return self.log_z, self.std_err


class ParameterPath:
    """GRBMs whose parameters run linearly from ``start`` (beta 0) to ``end`` (beta 1).

    A path between two trained models for :class:`skdgm._core.ais.TrackedLogPartition`:
    ``f_beta = exp(-E~(v; theta_beta))``, ``theta_beta = (1 - beta) theta_0 + beta
    theta_1`` (any family of densities is a valid annealing path), moved by the
    Gibbs sweep of ``theta_beta``. The interpolated parameters of the last ``beta``
    are kept, since the weight and the move at one temperature read the same ones.
    """

    def __init__(self, start, end):
        self.start, self.end = start.astype(np.float64), end.astype(np.float64)
        self._beta, self._at = None, None

    def at(self, beta):
        if beta != self._beta:
            self._beta = beta
            self._at = GRBMParams(*((1.0 - beta) * a + beta * b
                                    for a, b in zip(self.start, self.end)))
        return self._at

    def log_density(self, v, beta):
        return ais_log_density(v, 1.0, self.at(beta))

    def transition(self, v, beta, rng):
        return ais_transition(v, 1.0, rng, self.at(beta))


def ais_bridge(previous, params):
    """``(log_density, transition)`` of the path from GRBM ``previous`` to ``params``."""
    path = ParameterPath(previous, params)
    return path.log_density, path.transition


def ais_bridge(previous, params):
    path = ParameterPath(previous, params)
    return path.log_density, path.transition


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--passes", type=int, default=40)
    ap.add_argument("--every", type=int, default=4)
    ap.add_argument("--betas", type=int, default=3000)
    ap.add_argument("--runs", type=int, default=100)
    _common.add_data_home_arg(ap)
    args = ap.parse_args()
    home = _common.data_home(args.data_home)
    X, _, desc = load("GaussianBernoulliRBM", home, args.rows, 1)
    header([f"data: {shown(home)}", f"GaussianBernoulliRBM: {desc}"])
    warnings.simplefilter("ignore")

    import skdgm
    from skdgm._core.random import as_generator, seed_for
    from skdgm.grbm._model import ais_callables
    from skdgm.grbm._train import log_partition_estimate

    names = [f"fresh {t}" for t in FRESH] + ["tracked", "reference"]
    rows, cpu = [], dict.fromkeys(names, 0.0)
    tracker = TrackedLogPartition(ais_callables, ais_bridge, n_runs=16, n_betas=300)
    rng = as_generator(seed_for(0, 0x7AC))
    print(f"{'pass':>4s} " + " ".join(f"{n:>10s}" for n in names)
          + "  errors against the reference: " + " ".join(f"{n:>10s}" for n in names[:-1])
          + f" {'median -E~':>11s}")

    class Traced(skdgm.GaussianBernoulliRBM):
        def _validation_score(self, X_val, *a, **k):
            figure = super()._validation_score(X_val, *a, **k)
            p = len(self.history_.get("validation_score", [])) + 1
            params = self._params()
            t = time.process_time()
            tracked, _ = tracker(GRBMParams(*(np.array(x, dtype=np.float64) for x in params)),
                                 rng)
            cpu["tracked"] += time.process_time() - t
            if p % args.every == 0 or p == 1:
                z = {}
                for n_betas in FRESH:
                    t = time.process_time()
                    z[f"fresh {n_betas}"] = log_partition_estimate(
                        params, exact=False, n_runs=16, n_betas=n_betas,
                        random_state=seed_for(self.random_state, 0xE5))[0]
                    cpu[f"fresh {n_betas}"] += time.process_time() - t
                z["tracked"] = tracked
                t = time.process_time()
                z["reference"] = log_partition_estimate(
                    params, exact=False, n_runs=args.runs, n_betas=args.betas,
                    random_state=seed_for(0, 0xA15))[0]
                cpu["reference"] += time.process_time() - t
                med = float(np.median(-self.free_energy(X_val)))
                rows.append((p, [z[n] for n in names], med))
                print(f"{p:4d} " + " ".join(f"{z[n]:10.2f}" for n in names) + "  "
                      + " " * 30 + " ".join(f"{z[n] - z['reference']:+10.2f}"
                                            for n in names[:-1]) + f" {med:11.2f}", flush=True)
            return figure

    est = Traced(random_state=0, early_stopping=True, n_iter=args.passes,
                 n_iter_no_change=10**6)
    t = time.process_time()
    est.fit(X)
    print(f"# {est.n_iter_} passes in {time.process_time() - t:.1f} CPU-s (this trace's "
          f"AIS included); held-out rows: {int(np.ceil(0.1 * X.shape[0]))}; "
          f"tracker resampled {tracker.n_resampled} times")
    p = np.array([r[0] for r in rows])
    z = np.array([r[1] for r in rows])
    med = np.array([r[2] for r in rows])
    ref = z[:, -1]
    for j, name in enumerate(names):
        kept = int(np.argmax(med - z[:, j]))
        spread = "" if name == "reference" else (
            f"errors' s.d. over the printed passes {np.std(z[:, j] - ref):6.2f}, range "
            f"{np.ptp(z[:, j] - ref):6.2f} nats; ")
        print(f"# {name:>10s}: {spread}keeps pass {p[kept]:3d}, whose reference held-out "
              f"median is {(med - ref)[kept]:8.2f}; CPU {cpu[name]:.1f} s")


if __name__ == "__main__":
    main()
