"""DeepLDA trained data-parallel on a Dask cluster, the rows staying on the workers (issue 28).

Three parts, one run:

1. **Quality.** The paper's 20News split (11,284 training documents, held-out
   perplexity on the test split): the in-memory ``fit`` against ``fit`` of the same
   rows as a dask array of 8 row blocks, three seeds each. With blocks, a
   minibatch's documents are sampled block by block (another chunk layout, so
   another chain of the same sampler); the blocks path gives the same fit with or
   without a client and for any number of workers (tests/test_dask_blocks.py), so it
   runs here without one. Both fits stop by ``n_iter="auto"``'s held-out plateau
   (565 documents set aside, gathered once from the blocks on the dask path), and
   each fit's ``stopping_reason_`` is printed. ``--quality-only`` runs this part
   alone, ``--first-seed`` / ``--seeds`` pick its seeds (to split a long run).
2. **Speed.** About 50k documents (the 20News training set tiled 4.43 times:
   duplicates, a speed figure only), 4 row blocks each *loaded on a worker* (the
   client never holds the corpus): wall-clock time of one ``fit`` pass on a
   ``LocalCluster`` of 1 and of 2 worker processes, one thread each, alternated,
   medians; both must fit identical topics. A control runs the same 1 vs 2
   workers on tasks of pure CPU: on a shared host it says what speed-up a second
   worker process could get at all (on this project's machine, whose CPU is shared
   between sessions, adding a process did not always add CPU).
3. **Napkin constants**, measured in this process (CPU seconds, one thread): the
   local step's cost per document, the client's global step per update, the bytes
   of the global parameters sent per update, of one block's statistics and of the
   tree's total of 4 blocks (what the client receives per update), and the round trip of an empty task on the cluster. ``doc/scaling.rst``
   turns them into an estimate for 64 workers and 10M documents.

``--overlap-only`` instead records Dask's task stream of one fit on 2 workers: the
time both workers spent sampling at once, and the share of a core the tasks got.
``--profile`` instead splits the wall time of one speed pass on 1 and on 2 workers
into phases, from Dask's task stream and the client's clock around every update
(client step between updates, dispatch to the first block task, the block tasks'
span, results back, the client-side combine, the two workers' imbalance): where
the 2-worker pass loses against half the 1-worker one.

Usage (about 10 minutes on a quiet host, 20 on a loaded one; the speed part alone,
``--skip-quality``, about two thirds of that; the overlap about 1)::

    SKDGM_DATA=../shared/data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_dask_fit.py > benchmarks/results/dask_fit.txt
    SKDGM_DATA=../shared/data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_dask_fit.py --skip-quality \\
        > benchmarks/results/dask_fit_speed.txt
    SKDGM_DATA=../shared/data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_dask_fit.py --quality-only \\
        > benchmarks/results/dask_fit_quality_auto.txt
    SKDGM_DATA=../shared/data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_dask_fit.py --overlap-only --docs 8000 \\
        > benchmarks/results/dask_fit_overlap.txt
    SKDGM_DATA=../shared/data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_dask_fit.py --profile > benchmarks/results/dask_fit_profile.txt
    SKDGM_DATA=../shared/data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/bench_dask_fit.py --skip-quality --runs 3 \\
        > benchmarks/results/dask_fit_speed_idle6.txt

``--profile`` also counts, per update, the tasks by kind, the client's gather
calls (and how many fetched straight from the workers) and the pickled bytes of
the parameters (``dask_fit_profile_slots.txt``, after the one-task-a-thread change:
``flock /work/cpu.lock /work/bin/idle.sh env ... python benchmarks/bench_dask_fit.py
--profile > benchmarks/results/dask_fit_profile_slots.txt``).

The idle runs (``dask_fit_speed_idle*.txt``) run under ``/work/bin/idle.sh`` (the
host's background runs paused); ``dask_fit_speed_idle8.txt`` is the first with
one task per worker thread and update (:meth:`skdgm._core.blocks.RowBlocks.map_rows`).
"""

import argparse
import functools
import os
import pickle
import statistics
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402
from _common import header  # noqa: E402


@functools.lru_cache(maxsize=1)
def _train_corpus(home):
    from skdgm.datasets import fetch_20newsgroups_bow

    return fetch_20newsgroups_bow(data_home=home).train


def _tiled_rows(home, start, stop):
    """Rows ``start:stop`` of the training set tiled without end (runs on a worker)."""
    train = _train_corpus(home)
    idx = np.arange(start, stop) % train.shape[0]
    return sp.csr_matrix(train[idx], dtype=np.float64)


def tiled_dask(home, n_docs, n_blocks, V):
    import dask
    import dask.array as da

    bounds = np.linspace(0, n_docs, n_blocks + 1).round().astype(int)
    blocks = [da.from_delayed(dask.delayed(_tiled_rows)(home, int(a), int(b)),
                              shape=(int(b - a), V), dtype=np.float64,
                              meta=sp.csr_matrix((0, V)))
              for a, b in zip(bounds[:-1], bounds[1:])]
    return da.concatenate(blocks, axis=0)


def quality(d, args):
    import dask.array as da
    from skdgm import DeepLDA

    print("## 1. Quality: in-memory fit vs the same rows as 8 dask blocks")
    print(f"20News train {d.train.shape[0]} documents, K = {args.quality_k}, "
          f"n_iter='auto', batch_size=200, defaults otherwise; held-out perplexity on "
          f"the {d.test_observed.shape[0]} test documents (perplexity() defaults)")
    rows = -(-d.train.shape[0] // 8)
    Xd = da.from_array(d.train, chunks=(rows, d.train.shape[1]), asarray=False)
    res = {"in-memory": [], "dask 8 blocks": []}
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        for name, X in (("in-memory", d.train), ("dask 8 blocks", Xd)):
            est = DeepLDA(n_components=args.quality_k, random_state=seed)
            t = time.process_time()
            est.fit(X)
            fit_s = time.process_time() - t
            ppl = est.perplexity(d.test_observed, d.test_heldout)
            res[name].append(ppl)
            print(f"  seed {seed}  {name:14s} perplexity {ppl:8.2f}  fit {fit_s:6.1f} CPU-s"
                  f"  passes {est.n_iter_}  updates {est.n_updates_}", flush=True)
            print(f"      stopped: {est.stopping_reason_}", flush=True)
    a, b = np.mean(res["in-memory"]), np.mean(res["dask 8 blocks"])
    spread = max(res["in-memory"]) - min(res["in-memory"])
    print(f"mean in-memory {a:.2f}, mean dask {b:.2f}: dask / in-memory = {b / a:.4f} "
          f"({100 * (b / a - 1):+.2f} %); in-memory seed-to-seed range {spread:.2f} "
          f"({100 * spread / a:.2f} %)\n", flush=True)


def _speed_clusters(home, V, args):
    """The speed pass's dask array, the fit's parameters and a ``LocalCluster`` of 1
    and of 2 worker processes (one thread each), both warmed up (imports, and the
    corpus read, on every worker): ``(Xd, params, {1: cluster, 2: cluster})``."""
    import distributed
    from skdgm import DeepLDA

    Xd = tiled_dask(home, args.docs, args.blocks, V)
    params = dict(n_components=args.speed_k, batch_size=args.batch_size, n_iter=1,
                  random_state=0)
    clusters = {w: distributed.LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                                            dashboard_address=None) for w in (1, 2)}
    for cluster in clusters.values():
        with distributed.Client(cluster) as client:
            DeepLDA(**dict(params, batch_size=100)).fit(Xd[:200])
            # every worker reads the corpus now: a fit on 200 rows reaches one worker,
            # and the other's first timed fit would read it (1.5 s, the 2-worker
            # side's first fit in dask_fit_profile_before.txt)
            client.run(_train_corpus, home)
    return Xd, params, clusters


def speed(home, V, args):
    import distributed
    from skdgm import DeepLDA

    print("## 2. Speed: LocalCluster, 1 vs 2 worker processes (1 thread each)")
    print(f"{args.docs} documents (20News train tiled), {args.blocks} blocks loaded on the "
          f"workers; DeepLDA(n_components={args.speed_k}, batch_size={args.batch_size}, "
          f"n_iter=1): {-(-args.docs // args.batch_size)} updates")
    times = {1: [], 2: []}
    client_cpu = {1: [], 2: []}
    workers_cpu = {1: [], 2: []}
    ctrl = {1: [], 2: []}
    ref = None
    identical = True
    Xd, params, clusters = _speed_clusters(home, V, args)
    try:
        for rep in range(args.repeats):
            for w in ((1, 2) if rep % 2 == 0 else (2, 1)):
                with distributed.Client(clusters[w]) as client:
                    wc = worker_cpu(client)
                    t, c = time.perf_counter(), time.process_time()
                    est = DeepLDA(**params).fit(Xd)
                    wall, cpu = time.perf_counter() - t, time.process_time() - c
                    wc = worker_cpu(client) - wc
                times[w].append(wall)
                client_cpu[w].append(cpu)
                workers_cpu[w].append(wc)
                topics = [p.copy() for p in est.topics_]
                if ref is None:
                    ref = topics
                else:
                    identical &= all(np.array_equal(x, y) for x, y in zip(ref, topics))
                print(f"  repeat {rep}  {w} worker(s)  fit {wall:7.2f} s wall  "
                      f"(client process {cpu:5.2f} CPU-s, workers {wc:6.2f} CPU-s)", flush=True)
            for w, sec in control(clusters).items():
                ctrl[w].append(sec)
            print(f"  repeat {rep}  control (8 tasks of 0.5 CPU-s): 1 worker "
                  f"{ctrl[1][-1]:.2f} s, 2 workers {ctrl[2][-1]:.2f} s wall", flush=True)
        rt = round_trip(clusters[2])
    finally:
        for cluster in clusters.values():
            cluster.close()
    m1, m2 = statistics.median(times[1]), statistics.median(times[2])
    print(f"median fit: 1 worker {m1:.2f} s, 2 workers {m2:.2f} s: speed-up {m1 / m2:.2f}x "
          f"(goal >= 1.5x); topics identical across every fit: {identical}")
    c1, c2 = statistics.median(ctrl[1]), statistics.median(ctrl[2])
    print(f"control, the same 1 vs 2 workers on pure CPU tasks: speed-up {c1 / c2:.2f}x "
          f"(2.00x on two idle cores): the fit reached {(m1 / m2) / (c1 / c2):.0%} of what "
          f"this host gave a second worker")
    print(f"median CPU per fit: client process 1 worker "
          f"{statistics.median(client_cpu[1]):.2f} s, 2 workers "
          f"{statistics.median(client_cpu[2]):.2f} s; all workers 1 worker "
          f"{statistics.median(workers_cpu[1]):.2f} s, 2 workers "
          f"{statistics.median(workers_cpu[2]):.2f} s")
    print(f"load average after the runs: {os.getloadavg()[0]:.2f} (2 cores)\n", flush=True)
    return rt, m1 / m2, c1 / c2


def _noop(x):
    return x


def _burn(seconds):
    """Spin for ``seconds`` of this process's CPU time (the control's task)."""
    t = time.process_time()
    x = 0
    while time.process_time() - t < seconds:
        x += 1
    return x


def _cpu():
    return time.process_time()


def worker_cpu(client):
    """Total CPU seconds used so far by the cluster's worker processes."""
    return sum(client.run(_cpu).values())


def control(clusters, n_tasks=8, seconds=0.5):
    """Wall seconds of ``n_tasks`` tasks of ``seconds`` CPU each, on each cluster: the
    speed-up this host gives a second worker process at this moment."""
    import distributed

    out = {}
    for w, cluster in clusters.items():
        with distributed.Client(cluster) as client:
            t = time.perf_counter()
            client.gather(client.map(_burn, [seconds] * n_tasks, pure=False))
            out[w] = time.perf_counter() - t
    return out


def round_trip(cluster, n=50):
    """Median wall seconds of submit + gather of one empty task on the cluster."""
    import distributed

    with distributed.Client(cluster) as client:
        out = []
        for i in range(n):
            t = time.perf_counter()
            client.gather(client.submit(_noop, i, pure=False))
            out.append(time.perf_counter() - t)
    return statistics.median(out)


#: The key prefix of the local-step tasks (one per worker thread and update since
#: issue 28's one-task-a-slot change; one per block, ``_on_rows``, before it).
BLOCK_TASK = "block_stats"


def _busy(intervals):
    """Merged ``(start, stop)`` intervals."""
    out = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def _length(intervals):
    return sum(b - a for a, b in intervals)


def _intersect(x, y):
    out, i, j = [], 0, 0
    while i < len(x) and j < len(y):
        a, b = max(x[i][0], y[j][0]), min(x[i][1], y[j][1])
        if a < b:
            out.append((a, b))
        if x[i][1] < y[j][1]:
            i += 1
        else:
            j += 1
    return out


def overlap(home, V, args):
    """Do the two workers sample at the same time? Dask's task stream of one fit."""
    import distributed
    from skdgm import DeepLDA

    print("## Overlap: when do the 2 workers run their local steps? (Dask's task stream)")
    print(f"{args.docs} documents (20News train tiled), {args.blocks} blocks; "
          f"DeepLDA(n_components={args.speed_k}, batch_size={args.batch_size}, n_iter=1)")
    Xd = tiled_dask(home, args.docs, args.blocks, V)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        DeepLDA(**dict(n_components=args.speed_k, batch_size=100, n_iter=1)).fit(Xd[:200])
        wc = worker_cpu(client)
        with distributed.get_task_stream(client) as ts:
            t = time.perf_counter()
            DeepLDA(n_components=args.speed_k, batch_size=args.batch_size, n_iter=1,
                    random_state=0).fit(Xd)
            wall = time.perf_counter() - t
        wc = worker_cpu(client) - wc
    per_worker = {}
    n_tasks = 0
    for rec in ts.data:
        if not str(rec["key"]).startswith(BLOCK_TASK):
            continue
        n_tasks += 1
        for ss in rec["startstops"]:
            if ss["action"] == "compute":
                per_worker.setdefault(rec["worker"], []).append((ss["start"], ss["stop"]))
    busy = [_busy(v) for v in per_worker.values()]
    any_busy = _length(_busy([iv for b in busy for iv in b]))
    both = _length(_intersect(*busy)) if len(busy) == 2 else 0.0
    task_wall = sum(_length(b) for b in busy)
    print(f"fit {wall:.2f} s wall; {n_tasks} local-step tasks on {len(busy)} workers, "
          f"{task_wall:.2f} s of task wall time for {wc:.2f} CPU-s of the workers "
          f"(the tasks got {wc / task_wall:.0%} of a core while running)")
    print(f"some worker sampling {any_busy:.2f} s ({any_busy / wall:.0%} of the fit); both at "
          f"once {both:.2f} s ({both / any_busy:.0%} of that)")
    print(f"load average: {os.getloadavg()[0]:.2f} (2 cores)\n", flush=True)


def _timed_map_rows(log):
    """Patch :meth:`RowBlocks.map_rows` so that every call records, on the client's
    clock (``time.time``, the clock of Dask's task stream on the same host), when it
    began, when its tasks were all submitted, when their results had come back and
    when the client had combined them. Returns the undo function."""
    from skdgm._core import blocks

    real_map, real_gather, real_share = (blocks.RowBlocks.map_rows, blocks.RowBlocks._gather,
                                         blocks.RowBlocks._share)

    def share(self, *a, **k):
        log[-1]["share_in"] = time.time()
        log[-1]["shared_bytes"] = len(pickle.dumps(a[0], protocol=5))
        return real_share(self, *a, **k)

    def gather(self, futs, combine):
        log[-1]["submitted"] = time.time()
        real = self.client.gather

        def spy(*a, **k):
            c = time.process_time()
            out = real(*a, **k)
            log[-1]["results"] = time.time()
            log[-1]["wait_cpu"] = log[-1].get("wait_cpu", 0.0) + time.process_time() - c
            log[-1]["gathers"] = log[-1].get("gathers", 0) + 1
            log[-1]["direct"] = log[-1].get("direct", 0) + bool(k.get("direct"))
            return out

        self.client.gather = spy
        try:
            return real_gather(self, futs, combine)
        finally:
            del self.client.gather

    def map_rows(self, *a, **k):
        log.append({"enter": time.time()})
        out = real_map(self, *a, **k)
        log[-1]["exit"] = time.time()
        return out

    blocks.RowBlocks.map_rows, blocks.RowBlocks._gather = map_rows, gather
    blocks.RowBlocks._share = share

    def undo():
        blocks.RowBlocks.map_rows, blocks.RowBlocks._gather = real_map, real_gather
        blocks.RowBlocks._share = real_share
    return undo


def _phases(log, stream):
    """Where the wall time of a fit went, update by update (seconds, summed over
    the updates): the task stream's compute intervals placed in each update's window."""
    tasks = []
    for rec in stream:
        for ss in rec["startstops"]:
            if ss["action"] == "compute":
                kind = str(rec["key"]).split("-skdgm-rows-")[0]
                tasks.append((ss["start"], ss["stop"], kind, rec["worker"]))
    out = dict(client_outside=0.0, submit=0.0, to_first_block=0.0, blocks_span=0.0,
               after_last_block=0.0, combine=0.0, params_tasks=0.0, block_cpu_wall=0.0,
               imbalance=0.0, second_worker_late=0.0, own_gaps=0.0,
               client_cpu_waiting=0.0)
    n = 0
    for i, u in enumerate(log):
        if "results" not in u:
            continue
        n += 1
        if i + 1 < len(log):
            out["client_outside"] += log[i + 1]["enter"] - u["exit"]
        mine = [t for t in tasks if u["enter"] <= t[0] <= u["results"]]
        blk = [t for t in mine if t[2] == BLOCK_TASK]
        par = [t for t in mine if t[2] == "_identity"]
        out["submit"] += u["submitted"] - u["enter"]
        out["client_cpu_waiting"] += u["wait_cpu"]
        out["combine"] += u["exit"] - u["results"]
        out["params_tasks"] += sum(b - a for a, b, _, _ in par)
        if not blk:
            continue
        first, last = min(t[0] for t in blk), max(t[1] for t in blk)
        out["to_first_block"] += first - u["enter"]
        out["blocks_span"] += last - first
        out["after_last_block"] += u["results"] - last
        busy = {}
        starts = {}
        for a, b, _, w in blk:
            busy[w] = busy.get(w, 0.0) + (b - a)
            starts[w] = min(starts.get(w, a), a)
        for w in busy:
            mine_w = [t for t in blk if t[3] == w]
            out["own_gaps"] += max(t[1] for t in mine_w) - starts[w] - busy[w]
        out["block_cpu_wall"] += sum(busy.values())
        if len(busy) > 1:
            out["imbalance"] += max(busy.values()) - min(busy.values())
            out["second_worker_late"] += max(starts.values()) - min(starts.values())
    return n, out


def _traffic(log, stream):
    """What the client sent and fetched per update, from the task stream and the
    client's log: tasks by kind, gather calls (and how many fetched straight from
    the workers, ``direct``), and the pickled bytes of an update's parameters."""
    import pickle

    kinds = {}
    for rec in stream:
        kind = str(rec["key"]).split("-skdgm-rows-")[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    n = max(1, sum("results" in u for u in log))
    out = {f"{k} tasks": v / n for k, v in sorted(kinds.items())
           if k in (BLOCK_TASK, "_identity", "_on_rows", "add_block_stats",
                    "_combine_picked")}
    out["gathers"] = sum(u.get("gathers", 0) for u in log) / n
    out["of which direct"] = sum(u.get("direct", 0) for u in log) / n
    out["parameters MB"] = log[-1].get("shared_bytes", 0) / 1e6
    return out


def profile(home, V, args):
    """Where a 2-worker pass loses against half the 1-worker pass (``--profile``)."""
    import distributed
    from skdgm import DeepLDA

    print("## Profile: one pass on 1 and on 2 worker processes, by phase (task stream)")
    print(f"{args.docs} documents (20News train tiled), {args.blocks} blocks; "
          f"DeepLDA(n_components={args.speed_k}, batch_size={args.batch_size}, n_iter=1), "
          f"{args.repeats} fits each, alternated; seconds summed over the updates of one fit, "
          f"median over the fits")
    rows = {1: [], 2: []}
    counts = {1: [], 2: []}
    Xd, params, clusters = _speed_clusters(home, V, args)
    try:
        for rep in range(args.repeats):
            for w in ((1, 2) if rep % 2 == 0 else (2, 1)):
                with distributed.Client(clusters[w]) as client:
                    log = []
                    with distributed.get_task_stream(client) as ts:
                        t, t0 = time.perf_counter(), time.time()
                        c = time.process_time()
                        undo = _timed_map_rows(log)
                        try:
                            DeepLDA(**params).fit(Xd)
                        finally:
                            undo()
                        wall, cpu = time.perf_counter() - t, time.process_time() - c
                    n, ph = _phases(log, ts.data)
                ph.update(wall=wall, client_cpu=cpu, updates=n, setup=log[0]["enter"] - t0,
                          after=t0 + wall - log[-1]["exit"])
                rows[w].append(ph)
                counts[w].append(_traffic(log, ts.data))
                print(f"  repeat {rep}  {w} worker(s)  fit {wall:6.2f} s  " + "  ".join(
                    f"{k} {v:.2f}" for k, v in ph.items() if k not in ("wall", "updates")),
                    flush=True)
    finally:
        for cluster in clusters.values():
            cluster.close()
    med = {w: {k: statistics.median(r[k] for r in rows[w]) for k in rows[w][0]} for w in rows}
    labels = [
        ("wall", "fit, wall"),
        ("setup", "fit entered -> first update (blocks loaded, checked, summarised)"),
        ("after", "last update -> fit returns"),
        ("client_outside", "client between updates (global step, next minibatch)"),
        ("submit", "client submitting an update's tasks (parameters, copies, blocks)"),
        ("to_first_block", "update entered -> first block task starts"),
        ("blocks_span", "first block task starts -> last one stops"),
        ("after_last_block", "last block task stops -> the last part on the client"),
        ("combine", "client combining after the last part came (the tree's top)"),
        ("params_tasks", "parameter and copy tasks, compute"),
        ("block_cpu_wall", "block tasks, compute (all workers)"),
        ("imbalance", "busier worker's block compute minus the other's"),
        ("second_worker_late", "later worker's first block task after the earlier's"),
        ("own_gaps", "a worker idle between its own block tasks (all workers)"),
        ("client_cpu", "client process CPU (with the scheduler's thread)"),
        ("client_cpu_waiting", "of which while fetching an update's parts"),
    ]
    print(f"\n{'phase (s per fit, median)':64s} {'1 worker':>9s} {'2 workers':>9s} "
          f"{'1w / 2':>7s}")
    for k, label in labels:
        a, b = med[1][k], med[2][k]
        print(f"{label:64s} {a:9.2f} {b:9.2f} {a / 2:7.2f}")
    lost = med[2]["wall"] - med[1]["wall"] / 2
    print("\nper update (first fit of each; the same in every fit): " + "; ".join(
        f"{w} worker(s): " + ", ".join(f"{k} {v:.2f}" for k, v in counts[w][0].items())
        for w in counts))
    print(f"\n2 workers lose {lost:.2f} s against half the 1-worker fit "
          f"({med[1]['wall'] / med[2]['wall']:.2f}x instead of 2x); the block tasks' span "
          f"is {med[2]['blocks_span'] - med[1]['blocks_span'] / 2:+.2f} s from half of 1 "
          f"worker's, the rest of each update (client, dispatch, return) "
          f"{(med[2]['wall'] - med[2]['blocks_span']) - (med[1]['wall'] - med[1]['blocks_span']) / 2:+.2f} s "
          f"from half (it does not halve: {med[2]['wall'] - med[2]['blocks_span']:.2f} s "
          f"on 2 workers, {med[1]['wall'] - med[1]['blocks_span']:.2f} s on 1)")
    print(f"load average: {os.getloadavg()[0]:.2f} (2 cores)\n", flush=True)


def napkin(d, args, rt):
    from skdgm import DeepLDA
    from skdgm.deep_lda import _global, _train

    print("## 3. Napkin constants (this process, CPU seconds, one thread)")
    est = DeepLDA(n_components=args.speed_k, batch_size=args.batch_size, n_iter=1,
                  random_state=0).fit(d.train[:4000])
    phis, r = est.topics_, est.r_
    share = args.per_worker
    X = d.train[4000:4000 + share]
    shared = {"kwargs": _train.local_kwargs(phis, r, n_burn=est.local_burn_in,
                                            n_collect=est.local_samples, collect_topics=True,
                                            a0=est.a0, b0=est.b0, e0=est.e0, f0=est.f0,
                                            link="poisson"),
              "chunk_docs": 100}
    seeds = np.random.SeedSequence(0).spawn(len(_train.chunk_layout(share, 100)))
    t = time.process_time()
    part = _train.block_stats(X, shared, seeds)
    local_s = time.process_time() - t
    V = d.train.shape[1]
    stats = _train.combine_block_stats([part], V, phis[0].shape[1])
    rng = np.random.default_rng(0)
    reps = 20
    t = time.process_time()
    for _ in range(reps):
        _global.sg_update(phis, r, est._sg_state, stats, sampler="tlasgr", eps=0.1,
                          rho=1e4, etas=est._etas_, gamma0=1.0, c0=1.0, rng=rng)
    global_s = (time.process_time() - t) / reps
    glob_b = len(pickle.dumps(shared, protocol=5))
    stats_b = len(pickle.dumps(part, protocol=5))
    # what the client receives per update: the tree's total over the minibatch's
    # blocks (one block's form, on the union of their words), here of 4 blocks
    others = [_train.block_stats(d.train[a:a + share], shared, seeds)
              for a in range(4000 + share, 4000 + 4 * share, share)]
    total = functools.reduce(_train.add_block_stats, [part] + others)
    total_b = len(pickle.dumps(total, protocol=5))
    print(f"local step: {local_s:.3f} CPU-s for {share} documents = "
          f"{1e3 * local_s / share:.3f} ms per document (K = {args.speed_k}, V = {V})")
    print(f"global step on the client: {1e3 * global_s:.1f} ms per update")
    print(f"bytes per update: global parameters sent {glob_b / 1e6:.2f} MB (to each "
          f"worker), one block's statistics returned {stats_b / 1e6:.2f} MB "
          f"({part['words'].size} distinct words of {share} documents); the tree's total "
          f"of 4 such blocks, the one array the client receives per update, "
          f"{total_b / 1e6:.2f} MB ({total['words'].size} words)")
    print(f"round trip of an empty task on the 2-worker cluster: {1e3 * rt:.1f} ms (median "
          f"of 50; this host's load, see above)")
    per_update = local_s + global_s + rt
    print(f"per update with {share} documents per worker, if the network were free: "
          f"{per_update:.3f} s (local {local_s:.3f} + global {global_s:.3f} + round trip "
          f"{rt:.3f})")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-home")
    p.add_argument("--docs", type=int, default=50_000)
    p.add_argument("--blocks", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=2_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--runs", type=int, default=1,
                   help="the speed part this many times on new clusters: each run's "
                        "speed-up, their median and range")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--per-worker", type=int, default=500,
                   help="documents per worker per update in the napkin constants")
    p.add_argument("--quality-k", type=int, default=64)
    p.add_argument("--speed-k", type=int, nargs="+", default=[128, 64, 32])
    p.add_argument("--first-seed", type=int, default=0,
                   help="the quality part's seeds are first-seed, first-seed + 1, ...")
    p.add_argument("--skip-quality", action="store_true")
    p.add_argument("--quality-only", action="store_true",
                   help="only the quality part (no cluster, no wall-clock figure)")
    p.add_argument("--overlap-only", action="store_true",
                   help="only the task stream of one fit on 2 workers (dask_fit_overlap.txt)")
    p.add_argument("--profile", action="store_true",
                   help="only where one pass's wall time goes on 1 and 2 workers "
                        "(dask_fit_profile.txt)")
    args = p.parse_args()
    args.speed_k = tuple(args.speed_k)
    warnings.simplefilter("ignore", UserWarning)
    home = _common.data_home(args.data_home)
    header([f"data: {_common.shown(home)}", f"load average at start: {os.getloadavg()[0]:.2f}"])
    from skdgm.datasets import fetch_20newsgroups_bow

    d = fetch_20newsgroups_bow(data_home=home)
    if args.overlap_only:
        overlap(str(home), d.train.shape[1], args)
        return
    if args.profile:
        profile(str(home), d.train.shape[1], args)
        return
    if not args.skip_quality:
        quality(d, args)
    if args.quality_only:
        return
    ratios = []
    for run in range(args.runs):
        if args.runs > 1:
            print(f"# run {run + 1} of {args.runs} (new clusters)")
        rt, ratio, ctrl = speed(str(home), d.train.shape[1], args)
        ratios.append((ratio, ctrl))
    if args.runs > 1:
        fit, ctrl = [r for r, _ in ratios], [c for _, c in ratios]
        print(f"## {args.runs} runs: 2-worker speed-up per run "
              f"{', '.join(f'{r:.2f}x' for r in fit)}: median {statistics.median(fit):.2f}x, "
              f"range {min(fit):.2f}-{max(fit):.2f}x (goal >= 1.5x: met in "
              f"{sum(r >= 1.5 for r in fit)} of {len(fit)} runs); control per run "
              f"{', '.join(f'{c:.2f}x' for c in ctrl)}\n", flush=True)
    napkin(d, args, rt)


if __name__ == "__main__":
    main()
