"""SAP, FPCD, Trans-SAP, adaptive ST and CAST on binarized MNIST, and one long CAST run.

Salakhutdinov (2010), Table 1 and Fig. 4 (right). Two uses:

**Sampler comparison (the default).** Scaled down to a few CPU-minutes of one core: a
784-100-200 DBM, a 5,000-image training subset, 2,000 updates. All samplers start from
the same pre-trained parameters (same seed) and make the same number of updates.
Printed per sampler: the variational lower bound (Eq. 3) on a test subset, with
``log Z`` by AIS (500 betas, 25 runs, its standard error printed), at every checkpoint,
its oscillation over the last checkpoints (standard deviation and mean absolute change),
the training cost per update relative to SAP in the same run, the tempered-transitions
acceptance rate (Trans-SAP), the temperature occupancy (adaptive ST, CAST) and, for
adaptive ST, how many chains were at temperature 1 per update (its negative phase).
The final CAST parameters are saved to ``benchmarks/results/dbm_cast_mnist.npz`` for
``bench_dbm_mixing.py``.

Usage (about 15 CPU-minutes)::

    SKDGM_DATA=/path/to/data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_dbm_samplers.py > benchmarks/results/bench_dbm_samplers.txt

**The paper's model under a CPU budget** (``--cpu-budget SECONDS``). DBMCAST with its
defaults (CAST sampler, greedy pre-training, learning rate 0.05 (2000 / (2000 + t)),
100 chains, batch 100) trains the paper's 784-500-1000 model on all 50,000 images of
the binarized MNIST training split until SECONDS of training CPU time
(``time.process_time``, pre-training included, checkpoints not) are spent, in chunks of
``--chunk`` rows through ``partial_fit``. Checkpoints every ``--checkpoint-every``
training CPU-seconds give the test bound on ``--checkpoint-n-test`` images with a cheap
AIS; the end gives the bound on ``--final-n-test`` test images with an AIS ``log Z`` of
``--final-ais-betas`` / ``--final-ais-runs`` and its standard error. The paper trained
for 200,000 updates and used 20,000 betas.

Usage of the long run (``results/dbm_mnist_hour.txt``, checkpoints every 600 CPU-s)::

    SKDGM_DATA=/path/to/data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_dbm_samplers.py --samplers cast --n-train 0 \\
        --n-test 0 --hidden 500 1000 --defaults --cpu-budget 3600 \\
        --checkpoint-every 600 --checkpoint-ais-betas 500 --checkpoint-ais-runs 20 \\
        --final-ais-betas 5000 --final-ais-runs 40 > benchmarks/results/dbm_mnist_hour.txt

Data comes from :func:`skdgm.datasets.fetch_binarized_mnist` (``--data-home``, else
``$SKDGM_DATA``; see ``_common.data_home``).
"""

import argparse
import time

import numpy as np

from _common import RESULTS, add_data_home_arg, data_home, header, shown
from skdgm.datasets import fetch_binarized_mnist
from skdgm.dbm import DBMCAST


def load_mnist(home, n_train, n_test, seed=0):
    """Train / test rows as float32 (0 = the whole split), a random subset otherwise."""
    tr = fetch_binarized_mnist(data_home=home, subset="train").data
    te = fetch_binarized_mnist(data_home=home, subset="test").data
    rng = np.random.default_rng(seed)
    if n_train:
        tr = tr[rng.choice(tr.shape[0], n_train, replace=False)]
    if n_test:
        te = te[rng.choice(te.shape[0], n_test, replace=False)]
    # float32 input keeps the model float32: the update is ~1.8x cheaper than float64
    return tr.astype(np.float32), te.astype(np.float32)


def compare(args, Xtr, Xte):
    print(f"DBM 784-{'-'.join(map(str, args.hidden))}, batch 100, 100 chains, "
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
        bounds, t_train, ses = [], 0.0, []
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
            save(est, "dbm_cast_mnist.npz")
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


def save(est, name):
    RESULTS.mkdir(exist_ok=True)
    np.savez(RESULTS / name,
             **{f"W{i}": W for i, W in enumerate(est.coefs_)},
             **{f"b{i}": b for i, b in enumerate(est.intercepts_)})


def evaluate(est, X, n_betas, n_runs, seed):
    """(bound, AIS s.e. of log Z, s.e. over rows, log Z, CPU-s of AIS, CPU-s of the bound)."""
    _, t_ais = cpu(est.log_partition, n_betas=n_betas, n_runs=n_runs, random_state=seed)
    rows, t_mf = cpu(est.score_samples, X)
    return (float(rows.mean()), float(est.log_partition_std_),
            float(rows.std(ddof=1) / np.sqrt(len(rows))), float(est.log_partition_),
            t_ais, t_mf)


def cpu(fn, *a, **k):
    t = time.process_time()
    out = fn(*a, **k)
    return out, time.process_time() - t


def budget_run(args, Xtr, Xte):
    """The paper's model trained for ``args.cpu_budget`` CPU-seconds (see the docstring)."""
    params = dict(n_components=tuple(args.hidden), sampler=args.samplers[0], n_iter=0,
                  random_state=0)
    if not args.defaults:
        params.update(n_chains=100, pretrain_n_iter=10, learning_rate=0.005)
    est = DBMCAST(**params)
    print(f"DBMCAST({', '.join(f'{k}={v!r}' for k, v in params.items())}), otherwise defaults; "
          f"training CPU budget {args.cpu_budget:g} s (pre-training included, checkpoints "
          f"not), chunks of {args.chunk} rows through partial_fit", flush=True)
    rng = np.random.default_rng(1)
    sub = Xte[rng.choice(len(Xte), min(args.checkpoint_n_test, len(Xte)), replace=False)]
    _, t_train = cpu(est.fit, Xtr)
    print(f"pre-training ({est.pretrain_n_iter_} epochs per RBM): {t_train:.1f} CPU-s",
          flush=True)
    print(f"checkpoints: bound on {len(sub)} test images, AIS {args.checkpoint_ais_betas} "
          f"betas x {args.checkpoint_ais_runs} runs")
    print(f"{'updates':>8s} {'train CPU-s':>11s} {'ms/update':>9s} {'test bound':>10s} "
          f"{'AIS se':>6s} {'rows se':>7s} {'log Z':>9s} {'eval CPU-s':>10s}", flush=True)
    next_ck, order, pos, k = args.checkpoint_every, rng.permutation(len(Xtr)), 0, 0
    last_u, last_t = est.n_updates_, t_train
    while t_train < args.cpu_budget:
        if pos >= len(order):
            order, pos = rng.permutation(len(Xtr)), 0
        chunk = Xtr[order[pos:pos + args.chunk]]
        pos += args.chunk
        _, dt = cpu(est.partial_fit, chunk)
        t_train += dt
        if t_train >= next_ck or t_train >= args.cpu_budget:
            next_ck += args.checkpoint_every
            k += 1
            b, se, rse, lz, ta, tm = evaluate(est, sub, args.checkpoint_ais_betas,
                                              args.checkpoint_ais_runs, 100 + k)
            ms = 1e3 * (t_train - last_t) / max(1, est.n_updates_ - last_u)
            last_u, last_t = est.n_updates_, t_train
            print(f"{est.n_updates_:8d} {t_train:11.1f} {ms:9.1f} {b:10.3f} {se:6.3f} "
                  f"{rse:7.3f} {lz:9.2f} {ta + tm:10.1f}", flush=True)
    print(f"\nbudget spent: {est.n_updates_} updates ({est.n_iter_} partial_fit calls) in "
          f"{t_train:.1f} training CPU-s", flush=True)
    b, se, rse, lz, ta, tm = evaluate(est, Xte, args.final_ais_betas, args.final_ais_runs, 7)
    print(f"final: test bound on {len(Xte)} test images {b:.3f} "
          f"(log Z {lz:.3f}, AIS {args.final_ais_betas} betas x {args.final_ais_runs} runs, "
          f"s.e. {se:.3f}; s.e. over rows {rse:.3f}); AIS {ta:.1f} CPU-s, bound {tm:.1f} "
          f"CPU-s")
    print("paper (Salakhutdinov 2010, Table 1): CAST -84.12 after 200,000 updates "
          "(SAP -87.23, FPCD -86.72, Trans-SAP -85.41)")
    save(est, "dbm_mnist_hour.npz")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_data_home_arg(ap)
    ap.add_argument("--n-train", type=int, default=5_000, help="0 = all 50,000")
    ap.add_argument("--n-test", type=int, default=2_000, help="0 = all 10,000")
    ap.add_argument("--hidden", type=int, nargs="+", default=[100, 200])
    ap.add_argument("--passes", type=int, default=40, help="passes over the training subset")
    ap.add_argument("--eval-every", type=int, default=4, help="passes between checkpoints")
    ap.add_argument("--last", type=int, default=5, help="checkpoints used for oscillation")
    ap.add_argument("--ais-betas", type=int, default=500)
    ap.add_argument("--ais-runs", type=int, default=25)
    ap.add_argument("--samplers", nargs="+",
                    default=["sap", "fpcd", "trans_sap", "adaptive_st", "cast"])
    ap.add_argument("--cpu-budget", type=float, default=None,
                    help="train the first sampler until this many training CPU-seconds "
                         "are spent (the long run; see the docstring)")
    ap.add_argument("--defaults", action="store_true",
                    help="with --cpu-budget: DBMCAST's defaults (else the comparison's "
                         "settings: 100 chains, 10 pre-training epochs, rate 0.005)")
    ap.add_argument("--chunk", type=int, default=2_000, help="rows per partial_fit call")
    ap.add_argument("--checkpoint-every", type=float, default=600.0,
                    help="training CPU-seconds between checkpoints")
    ap.add_argument("--checkpoint-n-test", type=int, default=500)
    ap.add_argument("--checkpoint-ais-betas", type=int, default=200)
    ap.add_argument("--checkpoint-ais-runs", type=int, default=10)
    ap.add_argument("--final-ais-betas", type=int, default=2_000)
    ap.add_argument("--final-ais-runs", type=int, default=50)
    args = ap.parse_args()

    home = data_home(args.data_home)
    header([f"data: {shown(home)} (skdgm.datasets.fetch_binarized_mnist)"])
    Xtr, Xte = load_mnist(home, args.n_train, args.n_test)
    print(f"binarized MNIST: {Xtr.shape[0]} train / {Xte.shape[0]} test images")
    if args.cpu_budget is None:
        compare(args, Xtr, Xte)
    else:
        budget_run(args, Xtr, Xte)


if __name__ == "__main__":
    main()
