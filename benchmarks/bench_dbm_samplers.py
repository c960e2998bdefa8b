"""SAP, FPCD, Trans-SAP, adaptive ST and CAST on binarized MNIST at equal updates.

Salakhutdinov (2010), Table 1 and Fig. 4 (right), scaled down to fit a few minutes
of one shared core: a small DBM, a training subset, a few thousand updates. All
samplers start from the same pre-trained parameters (same seed) and make the same
number of parameter updates. Printed per sampler:

- the variational lower bound (Eq. 3) on the test subset, with ``log Z`` by AIS,
  at every checkpoint, and its oscillation over the last checkpoints
  (standard deviation and mean absolute change between checkpoints);
- the training cost per update relative to SAP, measured in the same run;
- the tempered-transitions acceptance rate (Trans-SAP), the temperature
  histogram (adaptive ST, CAST) and, for adaptive ST, how many chains were at
  temperature 1 per update (those alone form its negative phase).

The final CAST parameters are saved to ``benchmarks/results/dbm_cast_mnist.npz``
for ``bench_dbm_mixing.py``.

``log Z`` is estimated by AIS with 500 betas and 25 runs at each checkpoint (its
standard error is printed); the checkpoints cost about a third of the run.

Usage (about 5 minutes of CPU)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 \
        python benchmarks/bench_dbm_samplers.py
"""

import argparse
import time
from pathlib import Path

import numpy as np

from skdgm.dbm import DBMCAST

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
RESULTS = Path(__file__).resolve().parent / "results"


def load_mnist(n_train, n_test, seed=0):
    d = np.load(DATA / "binarized_mnist_larochelle.npz")
    tr = np.unpackbits(d["train_bits"], axis=1, count=784).astype(np.float64)
    te = np.unpackbits(d["test_bits"], axis=1, count=784).astype(np.float64)
    rng = np.random.default_rng(seed)
    return (tr[rng.choice(tr.shape[0], n_train, replace=False)],
            te[rng.choice(te.shape[0], n_test, replace=False)])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-train", type=int, default=5_000)
    ap.add_argument("--n-test", type=int, default=2_000)
    ap.add_argument("--hidden", type=int, nargs="+", default=[100, 200])
    ap.add_argument("--passes", type=int, default=40, help="passes over the training subset")
    ap.add_argument("--eval-every", type=int, default=4, help="passes between checkpoints")
    ap.add_argument("--last", type=int, default=5, help="checkpoints used for oscillation")
    ap.add_argument("--ais-betas", type=int, default=500)
    ap.add_argument("--ais-runs", type=int, default=25)
    ap.add_argument("--samplers", nargs="+",
                    default=["sap", "fpcd", "trans_sap", "adaptive_st", "cast"])
    args = ap.parse_args()

    Xtr, Xte = load_mnist(args.n_train, args.n_test)
    print(f"binarized MNIST: {Xtr.shape[0]} train / {Xte.shape[0]} test images, "
          f"DBM 784-{'-'.join(map(str, args.hidden))}, batch 100, 100 chains, "
          f"{args.passes} passes = {args.passes * Xtr.shape[0] // 100} updates")
    common = dict(n_components=tuple(args.hidden), n_chains=100, batch_size=100,
                  n_iter=0, pretrain=True, pretrain_n_iter=10, pretrain_learning_rate=0.05,
                  n_temperatures=20, beta_min=0.9, swap_interval=50, n_mean_field=5,
                  learning_rate=0.005, n_ais_betas=2, n_ais_runs=1, random_state=0)
    rows = {}
    for name in args.samplers:
        # The paper's CAST keeps 50 slow + 50 fast chains against SAP's 100.
        extra = {"n_chains": 50} if name == "cast" else {}
        est = DBMCAST(sampler=name, **{**common, **extra}).fit(Xtr)
        bounds, t_train, updates, ses = [], 0.0, [], []
        for p in range(1, args.passes + 1):
            t0 = time.process_time()
            est.partial_fit(Xtr)
            t_train += time.process_time() - t0
            if p % args.eval_every == 0:
                est.log_partition(n_betas=args.ais_betas, n_runs=args.ais_runs,
                                  random_state=p)
                b = est.score(Xte)
                bounds.append(b)
                ses.append(est.log_partition_std_)
                updates.append(est.n_updates_)
                print(f"  {name:11s} update {est.n_updates_:6d}: test bound {b:9.3f} "
                      f"(log Z {est.log_partition_:.2f} +- {est.log_partition_std_:.3f})",
                      flush=True)
        tail = np.array(bounds[-args.last:])
        rows[name] = dict(bound=bounds[-1], osc_sd=tail.std(ddof=1),
                          osc_step=np.abs(np.diff(tail)).mean(),
                          per_update=t_train / est.n_updates_,
                          hist={**est.history_, **est.sampler_history_},
                          ais_se=float(np.mean(ses)))
        if name == "cast":
            RESULTS.mkdir(exist_ok=True)
            np.savez(RESULTS / "dbm_cast_mnist.npz",
                     **{f"W{i}": W for i, W in enumerate(est.coefs_)},
                     **{f"b{i}": b for i, b in enumerate(est.intercepts_)})
    ref = rows.get("sap", next(iter(rows.values())))["per_update"]
    print(f"\n{'sampler':11s} {'test bound':>10s} {'sd(last)':>9s} {'|step|':>7s} "
          f"{'ms/update':>9s} {'x SAP':>6s} {'AIS se':>6s}")
    for name, r in rows.items():
        print(f"{name:11s} {r['bound']:10.3f} {r['osc_sd']:9.3f} {r['osc_step']:7.3f} "
              f"{1e3 * r['per_update']:9.2f} {r['per_update'] / ref:6.2f} "
              f"{r['ais_se']:6.3f}")
    if "trans_sap" in rows:
        # The sampler's counters cover every tempered transition of the run.
        acc = rows["trans_sap"]["hist"]["tt_acceptance"][-1]
        print(f"trans_sap: tempered-transition acceptance rate {acc:.3f} "
              f"(every {common['swap_interval']} updates, 100 chains)")
    if "adaptive_st" in rows:
        h = rows["adaptive_st"]["hist"]
        print(f"adaptive_st: chains at temperature 1 per update (its negative phase) "
              f"{np.mean(h['negative_chains']):.1f} of 100 on average, "
              f"{int(np.sum(h['n_fallback']))} updates with none")
    for name in ("adaptive_st", "cast"):
        if name in rows and "temperature_occupancy" in rows[name]["hist"]:
            occ = rows[name]["hist"]["temperature_occupancy"][-1]
            print(f"{name}: last-pass temperature occupancy min {occ.min():.3f} "
                  f"max {occ.max():.3f} (flat = {1 / occ.size:.3f})")


if __name__ == "__main__":
    main()
