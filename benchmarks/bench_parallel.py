"""``n_jobs=2`` against ``n_jobs=1`` on the public methods, wall clock, same results (issue 26).

Each row times one public call (``transform``, ``score_samples``, ``perplexity``,
``impute``, ``partial_fit``, ``fit``, ``log_partition``) on an estimator set to
``n_jobs=1`` and to ``n_jobs=2`` (the workers the library picks with no
``joblib.parallel_config``: threads for DeepLDA's training, whose local runs pass
``prefer="threads"``, loky processes for its evaluation methods and the GRBM;
``--backend loky`` or ``threading`` forces one), alternating the two settings over
``--repeats`` repeats, after one untimed call of each (so that the worker
processes are running, as they are for every call but a session's
first). The figure is the ratio of the median wall-clock seconds; the two outputs
are checked to be identical (bit for bit) on every row. Wall-clock speed-ups depend
on the machine's other load: the load average is printed at the start and the end.
``--spread`` adds, under each row, the spread of the paired readings (repeat
``i``'s two calls ran back to back) and a bootstrap interval of the row's figure:
with many ``--repeats``, what a noisy host lets one say about it.

Because a shared machine can hide any speed-up, each row also gives a figure that
other jobs do not change: the CPU seconds of this process and of its worker
processes (read from ``/proc``; Linux only) at ``n_jobs=2``. "CPU x" is the
CPU of ``n_jobs=1`` over the total CPU of ``n_jobs=2`` (1.0: the second worker
costs nothing extra); "idle-machine bound" is the CPU of ``n_jobs=1`` over the
busiest process's CPU at ``n_jobs=2`` (this process plus its busiest worker):
the speed-up the call would see with two free cores, up to waiting. Thread
workers live in this process, so the bound is printed for process workers only.

``--serial`` instead profiles the ``n_jobs=1`` calls: the CPU seconds inside the
``run_chains`` tasks (what workers can share) and outside them (validation, the
token split, stacking and reducing the tasks' results: what stays serial in the
calling process), and the Amdahl bound ``1 / (serial + tasks / 2)`` for two
workers.

Workloads: DeepLDA(128) on 20 Newsgroups (topics from one pass over 2,000
documents, five kept global samples), and GaussianBernoulliRBM(64) on
scikit-learn's digits (standardised pixels) with AIS for ``log Z``.

``--profile`` instead lists, for the rows below their goal in
``parallel_idle.txt`` (issue 26), the calling thread's CPU in one ``n_jobs=2``
call by function (``cProfile`` on ``time.thread_time``: the serial share, since
the workers are not profiled), then per ``run_chains`` call its wall clock, the
tasks' CPU at ``n_jobs=2`` against the same tasks' at ``n_jobs=1``, the CPU of
each worker (load imbalance: the busiest against the mean) and the lag from the
last task's end to the return.

``--timeline`` instead dissects one ``n_jobs=2`` DeepLDA ``transform`` of the
whole training set and one GRBM AIS ``log Z``: the very tasks and arguments
``run_chains`` sends, through ``joblib.Parallel`` (``pre_dispatch="all"``, as
``run_chains``) in 2 to 16 batches, DeepLDA's kept samples also left to joblib
(hashed and dumped into a per-call folder, as before issue 26's shared files),
printing for each batch the worker, its start and end (seconds after the call),
the CPU inside the batch, and the idle time of the workers before the first
batch, between batches and after the last one.

``--updates`` instead dissects DeepLDA's training updates of 2,000 documents
(``partial_fit`` 2 x 2,000 docs, ``fit`` of 4,000 docs at batch 2,000), where
two thread workers stayed below the Amdahl bound of ``--serial``: for ``n_jobs=1``
and for ``n_jobs=2`` through each route to the thread workers, joblib's threading
backend (the route before issue 26's ``_run_threads``) and ``run_chains``' own
threads, alternating, it prints the wall clock of the call, its speed-up, and per
update the wall inside ``run_chains``, the lag from entering it to the first task's
start, the lag from the last task's end to its return, the gap between the two
threads' last ends (load imbalance), the threads' summed CPU in the tasks
(``time.thread_time``) against ``n_jobs=1``'s, and the serial time outside
``run_chains``; then one update's chunks (tokens, wall, CPU).

``--fit-docs N`` makes ``--updates``' ``fit`` row ``N`` documents (five updates at
10,000).

``--look-ahead`` instead times DeepLDA ``fit`` at ``n_jobs=2`` with issue 26's
``MinibatchPipeline`` on and off, alternating in one process (wall clock and the
calling thread's CPU).

``--no-look-ahead`` runs any of these modes with DeepLDA's training laying out no
minibatch ahead (``_train.look_ahead`` returns ``None``: every chunk is laid out by
the task that samples it, as before issue 26's ``MinibatchPipeline``), for a
side-by-side comparison on the same commit; the results are the same either way.

``--pair`` instead measures the machine's ceiling for two workers: two processes
(forked after the data are loaded) each run the same ``n_jobs=1`` DeepLDA ``fit``
(4,000 and 10,000 documents at batch 2,000, one pass), alone (the other process
idle) and both at the same time (one per core), alternating over ``--repeats``;
it prints per process the wall clock and CPU seconds alone and paired and their
ratio (medians). Two independent fits share no Python objects, no GIL and no
lock: CPU that grows when they run together is the hardware's (shared cache,
memory bandwidth, the VM), and ``2 x alone / paired`` wall is the speed-up any
design of ``n_jobs=2`` could reach on this host.

``--replay`` instead isolates the chunks' kernel from everything around it: it
records the chunk tasks of one update of a 10,000-document ``fit`` (batch 2,000,
the third update) and runs that update's chunks, in order, with the same
arguments: alone, and as two copies at the same time (their own streams, started
together), once as two threads of this process and once as two forked processes,
alternating over ``--repeats``. It prints the median CPU seconds one copy spends
(``time.thread_time``) and its ratio to running alone, and the copy's system CPU
seconds and minor page faults (``getrusage(RUSAGE_THREAD)``). Threads and processes
doing the same kernel work side by side: if both grow alike, the growth is the
hardware's, not the threads'; if only threads grow, something in the process is
shared. The environment's ``GLIBC_TUNABLES`` is printed: run once with
``GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296``
(glibc keeps freed memory instead of handing it back to the kernel) or
``GLIBC_TUNABLES=glibc.malloc.arena_max=1`` (every thread allocates from the
main thread's heap) to see whether the threads' extra CPU is memory handed back
and faulted in again. Every mode's header prints ``GLIBC_TUNABLES``.

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 \\
        python benchmarks/bench_parallel.py [--repeats 5] [--quick] \\
        | tee benchmarks/results/parallel.txt
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/bench_parallel.py --timeline > benchmarks/results/parallel_timeline.txt
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/bench_parallel.py --serial > benchmarks/results/parallel_serial.txt
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/bench_parallel.py --updates > benchmarks/results/parallel_updates.txt
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_parallel.py \\
        --updates --fit-docs 10000 > benchmarks/results/parallel_updates_10k.txt
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/bench_parallel.py --profile > benchmarks/results/parallel_profile.txt
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_parallel.py \\
        --only deep_lda --rows training --no-look-ahead > benchmarks/results/parallel_x.txt
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/bench_parallel.py --look-ahead --repeats 15 > benchmarks/results/parallel_y.txt
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/bench_parallel.py --pair --repeats 9 > benchmarks/results/parallel_z.txt
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/bench_parallel.py --replay --repeats 15 > benchmarks/results/parallel_w.txt
"""

import argparse
import contextlib
import os
import time

import numpy as np

from skdgm import DeepLDA, GaussianBernoulliRBM

from _common import header
from _deep_lda_data import load_20news


def _same(a, b):
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if hasattr(a, "components_"):
        return _same(a.components_, b.components_)
    return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)


def _descendants_cpu():
    """CPU seconds (user + system) of every live descendant process, by pid."""
    tick = os.sysconf("SC_CLK_TCK")
    parent, cpu = {}, {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(pid)] = int(rest[1])
        cpu[int(pid)] = (int(rest[11]) + int(rest[12])) / tick
    mine, todo = {}, [os.getpid()]
    while todo:
        p = todo.pop()
        for c, pp in parent.items():
            if pp == p and c not in mine:
                mine[c] = cpu[c]
                todo.append(c)
    return mine


_BACKEND = {"name": None}


def _config():
    if _BACKEND["name"] is None:
        return contextlib.nullcontext()
    from joblib import parallel_config
    return parallel_config(backend=_BACKEND["name"])


#: ``--rows``: which DeepLDA rows to run (all by default)
ROWS = {"kinds": None}
_SMALL = {("DeepLDA(128).transform", "200 docs"), ("DeepLDA(128).transform", "2,000 docs"),
          ("DeepLDA(128).impute", "400 docs, 1% missing"),
          ("DeepLDA(128).partial_fit", "10 calls x 200 docs")}


def row_kind(name, size):
    """``"small"`` (calls that must not be slower), ``"training"`` (the other
    ``partial_fit`` and ``fit`` rows) or ``"eval"`` (the rest)."""
    if (name, size) in _SMALL:
        return "small"
    return "training" if name.endswith(("partial_fit", ".fit")) else "eval"


def compare(name, size, call, repeats, workers="processes"):
    """``call(n_jobs)`` timed alternately at 1 and 2 workers; prints one row."""
    if ROWS["kinds"] is not None and row_kind(name, size) not in ROWS["kinds"]:
        return None
    if _BACKEND["name"] is not None:
        workers = "threads" if _BACKEND["name"] == "threading" else "processes"
    if SERIAL["on"]:
        return serial_row(name, size, call)
    if PROFILE["on"]:
        return profile_row(name, size, call) if PROFILE["rows"](name, size) else None

    def run(nj):
        with _config():
            return call(nj)

    outs = {nj: run(nj) for nj in (1, 2)}    # untimed: workers up, caches warm
    wall, cpu, busiest, total = {1: [], 2: []}, {1: [], 2: []}, [], []
    for rep in range(repeats):
        order = (1, 2) if rep % 2 == 0 else (2, 1)
        for nj in order:
            kids = _descendants_cpu()
            c, t = time.process_time(), time.perf_counter()
            outs[nj] = run(nj)
            wall[nj].append(time.perf_counter() - t)
            cpu[nj].append(time.process_time() - c)
            if nj == 2:
                grown = [v - kids.get(p, 0.0) for p, v in _descendants_cpu().items()]
                busiest.append(cpu[2][-1] + max(grown, default=0.0))
                total.append(cpu[2][-1] + sum(grown))
    a, b = np.median(wall[1]), np.median(wall[2])
    c1 = np.median(cpu[1])
    same = "identical" if _same(outs[1], outs[2]) else "DIFFERENT"
    bound = f"{c1 / np.median(busiest):6.2f}x" if workers == "processes" else f"{'-':>7}"
    print(f"{name:<38} {size:<34} {workers:<9} {a:8.3f} s {b:8.3f} s {a / b:6.2f}x "
          f"{c1 / np.median(total):6.2f} {bound}  {same}", flush=True)
    if SPREAD["on"]:
        print(spread_line(wall[1], wall[2]), flush=True)


SPREAD = {"on": False, "goal": 1.7}


def spread_line(wall1, wall2, n_boot=2000, seed=0):
    """How far the row's figure can be trusted on a noisy host (``--spread``).

    The repeats alternate, so repeat ``i``'s two calls ran next to each other:
    their ratio is one paired reading of the speed-up. The line gives the
    paired ratios' median and quartiles, how many reach the goal, and a
    bootstrap 90 % interval of the row's own figure (ratio of the medians),
    resampling the pairs.
    """
    w1, w2 = np.asarray(wall1), np.asarray(wall2)
    pairs = w1 / w2
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(pairs), size=(n_boot, len(pairs)))
    boot = np.median(w1[idx], axis=1) / np.median(w2[idx], axis=1)
    lo, hi = np.quantile(boot, [0.05, 0.95])
    q1, q2, q3 = np.quantile(pairs, [0.25, 0.5, 0.75])
    goal = SPREAD["goal"]
    return (f"    paired ratios: median {q2:.2f}x (quartiles {q1:.2f}-{q3:.2f}), "
            f"{int((pairs >= goal).sum())} of {len(pairs)} >= {goal}x; ratio of medians, "
            f"bootstrap 90 % interval [{lo:.2f}, {hi:.2f}]")


SERIAL = {"on": False}


def compare_lda(*args):
    """:func:`compare` for DeepLDA's evaluation methods (joblib's default workers)."""
    return compare(*args, workers="processes")


def compare_lda_training(*args):
    """:func:`compare` for DeepLDA's training, whose local runs prefer thread workers."""
    return compare(*args, workers="threads")


def serial_row(name, size, call):
    """CPU of ``call(1)`` inside the ``run_chains`` tasks and outside them."""
    from skdgm._core import chains

    inside = [0.0]
    real = chains._call_batch

    def timed(func, tasks, seeds, kwargs):
        c = time.process_time()
        try:
            return real(func, tasks, seeds, kwargs)
        finally:
            inside[0] += time.process_time() - c

    call(1)                                   # untimed: caches warm
    chains._call_batch = timed
    try:
        rows = []
        for _ in range(3):
            inside[0] = 0.0
            c = time.process_time()
            call(1)
            rows.append((time.process_time() - c, inside[0]))
    finally:
        chains._call_batch = real
    total, tasks = (float(np.median([r[i] for r in rows])) for i in range(2))
    serial = total - tasks
    bound = total / (serial + tasks / 2)
    print(f"{name:<38} {size:<34} {total:8.3f} s {tasks:8.3f} s {serial:8.3f} s "
          f"{100 * serial / total:7.1f} % {bound:6.2f}x", flush=True)


def deep_lda_rows(args):
    X, Xo, Xh, _ = load_20news(args.data_home)
    X = X.tocsr()
    model = DeepLDA(128, n_iter=1, random_state=0, n_jobs=1).fit(X[:2000])

    def with_jobs(nj):
        return model.set_params(n_jobs=nj)

    n_all = X.shape[0] if not args.quick else 4000
    compare_lda("DeepLDA(128).transform", "200 docs",
            lambda nj: with_jobs(nj).transform(X[:200]), args.repeats)
    compare_lda("DeepLDA(128).transform", "2,000 docs",
            lambda nj: with_jobs(nj).transform(X[:2000]), args.repeats)
    compare_lda("DeepLDA(128).transform", f"{n_all:,} docs",
            lambda nj: with_jobs(nj).transform(X[:n_all]), args.repeats)
    compare_lda("DeepLDA(128).score_samples", f"{n_all:,} docs",
            lambda nj: with_jobs(nj).score_samples(X[:n_all]), args.repeats)
    n_test = Xo.shape[0] if not args.quick else 2000
    compare_lda("DeepLDA(128).perplexity", f"{n_test:,} test docs",
            lambda nj: with_jobs(nj).perplexity(Xo[:n_test], Xh[:n_test]), args.repeats)
    for n_imp in (400, 2000):       # one chunk of documents, then eight
        Xm = X[:n_imp].toarray()
        Xm[np.random.default_rng(0).random(Xm.shape) < 0.01] = np.nan
        compare_lda("DeepLDA(128).impute", f"{n_imp:,} docs, 1% missing",
                lambda nj, Xm=Xm: with_jobs(nj).impute(Xm), args.repeats)

    def stream(nj, batch, n_docs, batch_size=None):
        m = DeepLDA(128, total_samples=X.shape[0], random_state=0, n_jobs=nj,
                    **({} if batch_size is None else {"batch_size": batch_size}))
        for i in range(0, n_docs, batch):
            m.partial_fit(X[i:i + batch])
        return m

    # the default minibatch (200 documents, one chunk) has nothing to share out
    compare_lda_training("DeepLDA(128).partial_fit", "10 calls x 200 docs",
                lambda nj: stream(nj, 200, 2000), args.repeats)
    compare_lda_training("DeepLDA(128).partial_fit", "2 calls x 2,000 docs, batch 2,000",
                lambda nj: stream(nj, 2000, 4000, 2000), args.repeats)
    n_big = 10000 if not args.quick else 4000
    compare_lda_training("DeepLDA(128).partial_fit", f"1 call x {n_big:,} docs, batch {n_big:,}",
                lambda nj: stream(nj, n_big, n_big, n_big), args.repeats)
    compare_lda_training("DeepLDA(128).fit", "4,000 docs, batch 2,000, 1 pass",
            lambda nj: DeepLDA(128, batch_size=2000, n_iter=1, random_state=0,
                               n_jobs=nj).fit(X[:4000]), args.repeats)
    # five updates a pass: four of them laid out ahead (MinibatchPipeline)
    compare_lda_training("DeepLDA(128).fit", f"{n_big:,} docs, batch 2,000, 1 pass",
            lambda nj: DeepLDA(128, batch_size=2000, n_iter=1, random_state=0,
                               n_jobs=nj).fit(X[:n_big]), args.repeats)


def _grbm_model(args):
    from sklearn.datasets import load_digits
    from sklearn.preprocessing import StandardScaler

    X = StandardScaler().fit_transform(load_digits().data)
    X = X[:, X.std(axis=0) > 0]
    betas = 3000 if not args.quick else 1000
    return GaussianBernoulliRBM(n_components=64, n_iter=2, random_state=0, n_jobs=1,
                                n_ais_betas=betas).fit(X)


def grbm_rows(args):
    model = _grbm_model(args)
    betas = model.n_ais_betas

    def log_z(nj):
        model.set_params(n_jobs=nj)
        model.__dict__.pop("_log_z_cache", None)      # time the estimate, not the cache
        return model.log_partition()

    compare("GaussianBernoulliRBM(64).log_partition", f"AIS 100 runs x {betas} betas",
            log_z, args.repeats)


def _timed_batch(func, tasks, seeds, kwargs):
    from skdgm._core.chains import _call_batch
    w, c = time.time(), time.process_time()
    out = _call_batch(func, tasks, seeds, kwargs)
    return os.getpid(), w, time.time(), time.process_time() - c, out


def _spied_call(module, call):
    """The function, tasks and keyword arguments that ``call()`` hands ``module.run_chains``."""
    from skdgm._core import chains

    seen = {}
    real = module.run_chains

    def spy(func, tasks, **kw):
        seen.update(func=func, tasks=tasks, kw=kw)
        return real(func, tasks, **kw)

    module.run_chains = spy
    try:
        call()
    finally:
        module.run_chains = real
    kw = dict(seen["kw"])
    tasks = list(range(seen["tasks"]) if isinstance(seen["tasks"], int) else seen["tasks"])
    seeds = kw.pop("seeds", None)
    if seeds is None:
        seeds = chains.spawn_seeds(kw.pop("random_state"), len(tasks))
    kw.pop("random_state", None), kw.pop("n_jobs", None), kw.pop("cost", None)
    return seen["func"], tasks, list(seeds), kw


def dissect(title, func, tasks, seeds, modes, repeats):
    """Each ``(label, kwargs, n_batches)`` of ``modes`` through ``Parallel(n_jobs=2)``, timed."""
    from joblib import Parallel, delayed

    from skdgm._core import chains

    c = time.process_time()
    chains._call_batch(func, tasks, seeds, modes[0][1])
    serial = time.process_time() - c
    print(f"{title}: {len(tasks)} tasks; in-process CPU {serial:.3f} s\n")
    rows = {}
    for rep in range(repeats + 1):
        for label, kwargs, n_batches in modes:
            groups = chains.even_chunks(len(tasks), n_batches)
            t = time.time()
            res = Parallel(n_jobs=2, pre_dispatch="all")(
                delayed(_timed_batch)(func, tasks[g], seeds[g], kwargs) for g in groups)
            wall = time.time() - t
            if rep == 0:
                continue                     # untimed: workers up, files written
            per = {}
            for pid, a, b, cpu, _ in res:
                per.setdefault(pid, []).append((a - t, b - t, cpu))
            first = min(a for spans in per.values() for a, _, _ in spans)
            gaps = sum(x[0] - (y[1] if y else 0.0) for spans in per.values()
                       for y, x in zip([None] + sorted(spans)[:-1], sorted(spans)))
            tail = wall - max(b for spans in per.values() for _, b, _ in spans)
            cpu = sum(c for spans in per.values() for _, _, c in spans)
            busiest = max(sum(c for _, _, c in spans) for spans in per.values())
            rows.setdefault((label, n_batches), []).append(
                (wall, first, gaps, tail, cpu, busiest))
            if rep == 1:
                print(f"{label}, {n_batches} batches, repeat 1 (worker, start s, end s, CPU s):")
                for k, pid in enumerate(sorted(per)):
                    print("  worker", k, " ".join(f"[{a:.3f} {b:.3f} {c:.3f}]"
                                                  for a, b, c in sorted(per[pid])))
    print(f"\nmedians of {repeats} repeats (pre_dispatch='all', as run_chains)")
    print(f"{'arguments':<14} {'batches':>7} {'wall s':>7} {'first start s':>13} "
          f"{'idle before/between s':>21} {'after last s':>12} {'workers CPU s':>13} "
          f"{'busiest worker CPU s':>20} {'speed-up vs in-process CPU':>26}")
    for (label, n_batches), vals in rows.items():
        w, f, g, t, c, b = (float(np.median([v[i] for v in vals])) for i in range(6))
        print(f"{label:<14} {n_batches:>7} {w:7.3f} {f:13.3f} {g:21.3f} {t:12.3f} {c:13.3f} "
              f"{b:20.3f} {serial / w:25.2f}x")
    print()


def timeline(args):
    """Where the wall clock of an ``n_jobs=2`` call goes, batch by batch."""
    import skdgm._core.ais as ais
    import skdgm.deep_lda._train as train
    from skdgm._core import chains

    print(f"run_chains sends {chains.BATCHES_PER_WORKER} batches per worker\n")
    if "deep_lda" in args.only:
        X, _, _, _ = load_20news(args.data_home)
        X = X.tocsr()
        model = DeepLDA(128, n_iter=1, random_state=0, n_jobs=1).fit(X[:2000])
        func, tasks, seeds, kw = _spied_call(train, lambda: model.transform(X))
        shared = chains.share_arguments(kw)      # what run_chains sends to process workers
        n_shared = sum(isinstance(a, np.memmap) for p, r in shared["samples"] for a in [*p, r])
        print(f"{n_shared} arrays of the kept samples go as shared files; 'joblib dumps' "
              f"leaves them to joblib (hashed and dumped per call, as before issue 26)")
        dissect(f"DeepLDA(128).transform of {X.shape[0]:,} documents", func, tasks, seeds,
                [("joblib dumps", kw, 8)] + [("shared files", shared, n) for n in (2, 4, 8, 16)],
                args.repeats)
    if "grbm" in args.only:
        model = _grbm_model(args)
        func, tasks, seeds, kw = _spied_call(ais, lambda: model.log_partition())
        dissect(f"GaussianBernoulliRBM(64).log_partition, AIS groups of runs {tasks}",
                func, tasks, seeds, [("as sent", kw, n) for n in (2, 4, 8)], args.repeats)


def look_ahead_ab(args):
    """``--look-ahead``: DeepLDA ``fit`` at batch 2,000 (4,000 and 10,000 documents)
    at ``n_jobs=2``, with ``MinibatchPipeline`` on and off alternately in one
    process: medians of ``--repeats`` calls of the wall clock and of the calling
    thread's CPU (``time.thread_time``, not profiled: the serial share), and the
    topics checked identical."""
    from skdgm.deep_lda import _train

    X = load_20news(args.data_home)[0].tocsr()
    real = _train.look_ahead
    settings = {"on": real, "off": lambda n_jobs, **kwargs: None}
    print(f"n_jobs=2, medians of {args.repeats} alternating calls per setting\n")
    print(f"{'call':<46} {'look-ahead':>10} {'wall ms':>9} {'caller CPU ms':>14}  results")
    for n_docs in (4000, 10000):
        def fit():
            return DeepLDA(128, batch_size=2000, n_iter=1, random_state=0,
                           n_jobs=2).fit(X[:n_docs]).components_
        wall, cpu, out = {k: [] for k in settings}, {k: [] for k in settings}, {}
        try:
            for rep in range(args.repeats + 1):
                for key in (("on", "off") if rep % 2 == 0 else ("off", "on")):
                    _train.look_ahead = settings[key]
                    w, c = time.perf_counter(), time.thread_time()
                    out[key] = fit()
                    if rep > 0:                     # the first round is untimed
                        cpu[key].append(time.thread_time() - c)
                        wall[key].append(time.perf_counter() - w)
        finally:
            _train.look_ahead = real
        same = "identical" if _same(out["on"], out["off"]) else "DIFFERENT"
        for key in settings:
            print(f"{f'DeepLDA(128).fit {n_docs:,} docs, batch 2,000':<46} {key:>10} "
                  f"{1e3 * np.median(wall[key]):9.1f} {1e3 * np.median(cpu[key]):14.1f}  {same}",
                  flush=True)


def _training_calls(X, n_fit=4000):
    """``(stream, fit)``: the two training rows of 2,000-document updates as functions
    of ``n_jobs`` returning the topics (``partial_fit`` 2 x 2,000 documents, ``fit``
    of ``n_fit`` documents at batch 2,000)."""
    def stream(nj):
        m = DeepLDA(128, total_samples=X.shape[0], batch_size=2000, random_state=0, n_jobs=nj)
        for i in range(0, 4000, 2000):
            m.partial_fit(X[i:i + 2000])
        return m.components_

    def fit(nj):
        return DeepLDA(128, batch_size=2000, n_iter=1, random_state=0,
                       n_jobs=nj).fit(X[:n_fit]).components_

    return stream, fit


def updates(args):
    """Where the wall clock of DeepLDA's training updates of 2,000 documents goes."""
    import threading

    import skdgm.deep_lda._train as train
    from skdgm._core import chains

    X, _, _, _ = load_20news(args.data_home)
    X = X.tocsr()
    tasks, spans = [], []
    real_task, real_run = train.local_task, train.run_chains

    def timed_task(task, rng, **kw):
        from skdgm.deep_lda._local import rows_of

        # the chunk's documents: the first part of the task that is a matrix
        parts = [rows_of(x) for x in (task if isinstance(task, tuple) else (task,))]
        part = next((x for x in parts if hasattr(x, "sum")), None)
        w, c = time.perf_counter(), time.thread_time()
        out = real_task(task, rng, **kw)
        tasks.append((threading.get_ident(), w, time.perf_counter(),
                      time.thread_time() - c, -1 if part is None else int(part.sum())))
        return out

    def timed_run(*a, **kw):
        t = time.perf_counter()
        out = real_run(*a, **kw)
        spans.append((t, time.perf_counter()))
        return out

    stream, fit = _training_calls(X, args.fit_docs)

    routes = [("n_jobs=1", 1, False), ("joblib threading", 2, True),
              ("run_chains threads", 2, False)]
    train.local_task, train.run_chains = timed_task, timed_run
    try:
        for title, call in (("partial_fit 2 calls x 2,000 docs, batch 2,000", stream),
                            (f"fit {args.fit_docs:,} docs, batch 2,000, 1 pass", fit)):
            rows = {name: [] for name, _, _ in routes}
            outs, example = {}, None
            for rep in range(args.repeats + 1):
                order = routes if rep % 2 == 0 else routes[::-1]
                for name, nj, joblib_route in order:
                    chains._JOBLIB_THREADS = joblib_route
                    tasks.clear(), spans.clear()
                    t = time.perf_counter()
                    outs[name] = call(nj)
                    wall = time.perf_counter() - t
                    if rep == 0:
                        continue                  # untimed: caches warm
                    per = []
                    for a, b in spans:
                        mine = [x for x in tasks if a <= x[1] <= b]
                        ends = {}
                        for tid, _, end, _, _ in mine:
                            ends[tid] = max(ends.get(tid, 0.0), end)
                        per.append((b - a, min(x[1] for x in mine) - a, b - max(ends.values()),
                                    max(ends.values()) - min(ends.values()),
                                    sum(x[3] for x in mine)))
                        if example is None and nj == 2 and not joblib_route:
                            example = sorted(mine, key=lambda x: x[1])
                    rows[name].append((wall, wall - sum(b - a for a, b in spans),
                                       *(np.mean([u[i] for u in per]) for i in range(5))))
            base = np.median([r[0] for r in rows["n_jobs=1"]])
            same = all(_same(outs["n_jobs=1"], o) for o in outs.values())
            print(f"{title}: medians of {args.repeats} alternating repeats, "
                  f"results {'identical' if same else 'DIFFERENT'}")
            print(f"{'route':<20} {'call s':>7} {'speed-up':>8} {'serial s':>8} | per update: "
                  f"{'wall s':>7} {'lag to 1st task ms':>18} {'lag after last ms':>17} "
                  f"{'threads end apart ms':>20} {'tasks CPU s':>11}")
            for name, _, _ in routes:
                v = [float(np.median([r[i] for r in rows[name]])) for i in range(7)]
                print(f"{name:<20} {v[0]:7.3f} {base / v[0]:7.2f}x {v[1]:8.3f} | "
                      f"{v[2]:13.3f} {1e3 * v[3]:18.1f} {1e3 * v[4]:17.1f} "
                      f"{1e3 * v[5]:20.1f} {v[6]:11.3f}")
            print()
        ids = sorted({x[0] for x in example})
        t0 = min(x[1] for x in example)
        print("one update of run_chains' threads, chunks in start order "
              "(thread, tokens, start ms, wall ms, CPU ms):")
        for tid, a, b, c, tok in example:
            print(f"  {ids.index(tid)} {tok:6d} {1e3 * (a - t0):7.1f} {1e3 * (b - a):6.1f} "
                  f"{1e3 * c:6.1f}")
    finally:
        train.local_task, train.run_chains = real_task, real_run
        chains._JOBLIB_THREADS = False


PROFILE = {"on": False, "top": 12}


def profile_row(name, size, call):
    """The calling thread's CPU in one ``call(2)``, by function (``cProfile`` on
    ``time.thread_time``): thread workers and process workers are not profiled, so
    what is listed is the serial share that two workers cannot share."""
    import cProfile
    import pstats

    call(2)                                    # untimed: workers up, caches warm
    prof = cProfile.Profile(time.thread_time)
    c = time.thread_time()
    prof.runcall(call, 2)
    total = time.thread_time() - c
    stats = pstats.Stats(prof).stats
    rows = sorted(((tt, ct, n, f"{os.path.basename(fn)}:{line}({func})")
                   for (fn, line, func), (_, n, tt, ct, _) in stats.items()), reverse=True)
    print(f"{name} {size}: calling thread {1e3 * total:.1f} ms CPU at n_jobs=2 "
          f"(profiled; the profiler adds its own)")
    print(f"  {'own ms':>7} {'cumul. ms':>9} {'calls':>6}  function")
    for tt, ct, n, where in rows[:PROFILE["top"]]:
        print(f"  {1e3 * tt:7.1f} {1e3 * ct:9.1f} {n:6d}  {where}")
    _task_balance(call)
    print(flush=True)


class _TimedTask:
    """``func`` returning ``(result, worker, start, end, CPU s)``: its thread's CPU
    (``time.thread_time``) in the task, whatever the worker (thread or process)."""

    def __init__(self, func):
        self.func = func

    def __call__(self, task, rng, **kw):
        import threading
        w, c = time.time(), time.thread_time()
        out = self.func(task, rng, **kw)
        return out, (os.getpid(), threading.get_ident()), w, time.time(), time.thread_time() - c


def _task_balance(call):
    """Per ``run_chains`` call of one more ``call(2)``: its wall clock, the tasks' CPU
    (and the same tasks' in one more ``call(1)``: what the workers add), the tasks'
    CPU per worker (the busiest against the mean: load imbalance) and the lag from
    the last task's end to the call's return."""
    import skdgm._core.ais as ais
    import skdgm.deep_lda._train as train

    calls, modules = [], (train, ais)
    real = {m: m.run_chains for m in modules}

    def spy_for(module):
        def spy(func, tasks, **kw):
            t = time.time()
            got = real[module](_TimedTask(func), tasks, **kw)
            end = time.time()
            calls.append((t, end, [g[1:] for g in got]))
            return [g[0] for g in got]
        return spy

    for m in modules:
        m.run_chains = spy_for(m)
    try:
        call(1)
        serial = [sum(g[3] for g in got) for _, _, got in calls]
        calls.clear()
        kids, c = _descendants_cpu(), time.process_time()
        call(2)
        main = time.process_time() - c
        procs = sum(v - kids.get(p, 0.0) for p, v in _descendants_cpu().items())
    finally:
        for m in modules:
            m.run_chains = real[m]
    print(f"  run_chains calls at n_jobs=2: tasks, wall ms, tasks' CPU ms (at n_jobs=1), "
          f"per-worker CPU ms (busiest / mean), ms from the call to the first task's "
          f"start, ms from the last task's end to the return")
    for (t, end, got), cpu1 in zip(calls, serial):
        per = {}
        for worker, _, _, cpu in got:
            per[worker] = per.get(worker, 0.0) + cpu
        load = sorted(per.values(), reverse=True)
        last = max(b for _, _, b, _ in got)
        first = min(a for _, a, _, _ in got)
        print(f"  {len(got):4d} {1e3 * (end - t):8.1f} {1e3 * sum(load):8.1f} "
              f"({1e3 * cpu1:6.1f})   "
              f"{' '.join(f'{1e3 * x:6.1f}' for x in load)}   "
              f"({max(load) / np.mean(load):.3f})   {1e3 * (first - t):5.1f}   "
              f"{1e3 * (end - last):5.1f}")
    in_tasks = sum(g[3] for _, _, got in calls for g in got)
    if procs > 0:        # process workers: their CPU outside the tasks, read from /proc
        print(f"  worker processes: {1e3 * procs:.1f} ms CPU, {1e3 * (procs - in_tasks):.1f} "
              f"outside the tasks; this process: {1e3 * main:.1f} ms")
    else:
        print(f"  this process (calling thread and thread workers): {1e3 * main:.1f} ms CPU, "
              f"{1e3 * (main - in_tasks):.1f} outside the tasks")


# ------------------------------------------------------------------ --gil
# What the thread workers of a training update wait on (issue 26). Per task, the
# thread's CPU (time.thread_time) and the kernel's count of its time runnable but
# waiting for a core (/proc/self/task/<tid>/schedstat) split the task's wall clock
# into running, waiting for a core (other load) and sleeping: a task reads no file and takes no
# lock of its own, so its sleep is a wait for a lock held by the other thread.
# Wrappers around the Cython kernels (every one of them runs its loops without the
# GIL) give the task's CPU inside them; the rest of its CPU (Python between kernel
# calls, NumPy calls, the chunk's layout) is the most it holds the GIL. A second
# pass, with a sampler process reading every thread's wait channel
# (/proc/<pid>/task/<tid>/wchan) every 2 ms, names the lock slept on: a futex (the
# GIL is a mutex and condition variable) or the memory map's lock (page faults
# and mmap/munmap of large arrays).

_SAMPLER = r"""
import json, os, sys, time
pid, stop, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
seen = {}
while not os.path.exists(stop):
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        break
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            with open(f"/proc/{pid}/task/{tid}/wchan") as f:
                chan = f.read().strip() or "-"
        except OSError:
            continue
        key = f"{state} {chan if state != 'R' else 'running'}"
        d = seen.setdefault(tid, {})
        d[key] = d.get(key, 0) + 1
    time.sleep(0.002)
with open(out, "w") as f:
    json.dump(seen, f)
"""


def _schedstat():
    """This thread's (ns on a CPU, ns runnable waiting for a CPU) so far."""
    import threading
    with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as f:
        run, wait, _ = f.read().split()
    return int(run), int(wait)


def _voluntary_switches():
    import threading
    with open(f"/proc/self/task/{threading.get_native_id()}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("voluntary"))


class _KernelClock:
    """Wraps the DeepLDA local sampler's Cython kernels: per thread, the CPU
    (``thread_time``) and wall seconds spent inside them."""

    def __init__(self):
        import threading
        self.local = threading.local()

    def wrap(self, f):
        def timed(*a, **kw):
            w, c = time.perf_counter(), time.thread_time()
            try:
                return f(*a, **kw)
            finally:
                self.local.cpu = getattr(self.local, "cpu", 0.0) + time.thread_time() - c
                self.local.wall = getattr(self.local, "wall", 0.0) + time.perf_counter() - w
        return timed

    def read(self):
        return getattr(self.local, "cpu", 0.0), getattr(self.local, "wall", 0.0)


def gil(args):
    """Per task of the two training rows at ``n_jobs=1`` and ``n_jobs=2``: wall, CPU,
    CPU inside the GIL-free kernels, sleep and run-queue wait; then the wait channels."""
    import json
    import resource
    import subprocess
    import sys
    import tempfile
    import threading

    import skdgm.deep_lda._collapsed as collapsed
    import skdgm.deep_lda._local as local
    import skdgm.deep_lda._train as train

    X, _, _, _ = load_20news(args.data_home)
    X = X.tocsr()
    clock = _KernelClock()
    records = []
    real_task = train.local_task

    def timed_task(task, rng, **kw):
        k0, v0 = clock.read(), _voluntary_switches()
        u0 = resource.getrusage(resource.RUSAGE_THREAD)
        # the wall clock brackets the schedstat reads, so that it covers what they count
        w = time.perf_counter()
        s0 = _schedstat()
        c = time.thread_time()
        out = real_task(task, rng, **kw)
        cpu = time.thread_time() - c
        s1 = _schedstat()
        wall = time.perf_counter() - w
        v1, k1 = _voluntary_switches(), clock.read()
        u1 = resource.getrusage(resource.RUSAGE_THREAD)
        # CPU from thread_time (exact: the kernel brings the running thread's sum up
        # to date), the run-queue wait from schedstat (updated at every switch-in)
        queued = (s1[1] - s0[1]) / 1e9
        records.append(dict(tid=threading.get_native_id(), wall=wall, cpu=cpu,
                            kernel_cpu=k1[0] - k0[0], kernel_wall=k1[1] - k0[1],
                            queued=queued, slept=wall - cpu - queued,
                            switches=v1 - v0, system=u1.ru_stime - u0.ru_stime,
                            faults=u1.ru_minflt - u0.ru_minflt))
        return out

    stream, fit = _training_calls(X)

    real = {"local": local._KERNELS["cython"], "collapsed": collapsed.KERNELS["cython"],
            "em": local._local_fast.em_steps}
    train.local_task = timed_task
    local._KERNELS["cython"] = tuple(clock.wrap(f) for f in real["local"])
    collapsed.KERNELS["cython"] = tuple(clock.wrap(f) for f in real["collapsed"])
    local._local_fast.em_steps = clock.wrap(real["em"])
    rows = (("partial_fit 2 calls x 2,000 docs, batch 2,000", stream),
            ("fit 4,000 docs, batch 2,000, 1 pass", fit))
    try:
        print("per task (a chunk of about 250 documents), medians over the tasks of "
              f"{args.repeats} calls, ms; sums per update in brackets. wall = CPU + queued "
              "(runnable, waiting for a core) + slept (waiting for a lock); kernels = CPU "
              "inside the GIL-free Cython kernels, GIL-held = CPU - kernels (at most what "
              "the task holds the GIL); switches = voluntary context switches (sleeps); "
              "system = kernel-mode CPU (summed per update: it is counted in ticks), "
              "faults = minor page faults "
              "(getrusage(RUSAGE_THREAD))\n")
        print(f"{'row':<46} {'n_jobs':>6} {'wall':>6} {'CPU':>6} {'kernels':>8} "
              f"{'GIL-held':>8} {'slept':>6} {'queued':>6} {'switches':>8} {'system':>6} "
              f"{'faults':>6}")
        outs = {}
        for title, call in rows:
            for nj in (1, 2):
                outs[nj] = call(nj)            # untimed: caches warm
                records.clear()
                for _ in range(args.repeats):
                    outs[nj] = call(nj)
                per_update = len(records) / (2 * args.repeats)
                med = {k: 1e3 * float(np.median([r[k] for r in records]))
                       for k in ("wall", "cpu", "kernel_cpu", "slept", "queued")}
                tot = {k: 1e3 * sum(r[k] for r in records) / (2 * args.repeats)
                       for k in ("wall", "cpu", "kernel_cpu", "slept", "queued")}
                held = [r["cpu"] - r["kernel_cpu"] for r in records]
                sw, flt = (float(np.median([r[k] for r in records]))
                           for k in ("switches", "faults"))
                sys_ms = 1e3 * sum(r["system"] for r in records) / (2 * args.repeats)
                print(f"{title:<46} {nj:>6} {med['wall']:6.2f} {med['cpu']:6.2f} "
                      f"{med['kernel_cpu']:8.2f} {1e3 * float(np.median(held)):8.2f} "
                      f"{med['slept']:6.2f} {med['queued']:6.2f} {sw:8.0f} {sys_ms:6.2f} "
                      f"{flt:6.0f}")
                print(f"{'':<46} {'':>6} [{tot['wall']:5.1f}] [{tot['cpu']:5.1f}] "
                      f"[{tot['kernel_cpu']:6.1f}] [{tot['cpu'] - tot['kernel_cpu']:6.1f}] "
                      f"[{tot['slept']:4.1f}] [{tot['queued']:4.1f}]   "
                      f"({per_update:.0f} tasks an update)")
            same = _same(outs[1], outs[2])
            print(f"{'':<46} results {'identical' if same else 'DIFFERENT'}")
        print("\nwait channels of the worker threads while they ran tasks, n_jobs=2, "
              "sampled every 2 ms by another process (samples; 'R running' = on a CPU "
              "or runnable)")
        for title, call in rows:
            records.clear()
            with tempfile.TemporaryDirectory() as tmp:
                stop, out = os.path.join(tmp, "stop"), os.path.join(tmp, "out.json")
                proc = subprocess.Popen([sys.executable, "-c", _SAMPLER, str(os.getpid()),
                                         stop, out])
                try:
                    time.sleep(0.3)
                    for _ in range(args.repeats):
                        call(2)
                finally:
                    open(stop, "w").close()
                    proc.wait()
                with open(out) as f:
                    seen = json.load(f)
            workers = {str(r["tid"]) for r in records}
            hist = {}
            for tid in workers:
                for key, n in seen.get(tid, {}).items():
                    hist[key] = hist.get(key, 0) + n
            total = sum(hist.values())
            print(f"  {title}: {total} samples of {len(workers)} worker threads")
            for key, n in sorted(hist.items(), key=lambda kv: -kv[1]):
                print(f"    {n:6d} {100 * n / total:5.1f} %  {key}")
    finally:
        train.local_task = real_task
        local._KERNELS["cython"] = real["local"]
        collapsed.KERNELS["cython"] = real["collapsed"]
        local._local_fast.em_steps = real["em"]


def _pair_child(conn, X):
    """Runs ``fit`` of ``X[:n]`` at ``n_jobs=1`` for each ``n`` received; sends wall, CPU."""
    while True:
        n = conn.recv()
        if n is None:
            return
        c, t = time.process_time(), time.perf_counter()
        DeepLDA(128, batch_size=2000, n_iter=1, random_state=0, n_jobs=1).fit(X[:n])
        conn.send((time.perf_counter() - t, time.process_time() - c))


def pair(args):
    """Two independent ``n_jobs=1`` fits, alone and at the same time (the ceiling)."""
    import multiprocessing as mp

    X = load_20news(args.data_home)[0].tocsr()
    ctx = mp.get_context("fork")
    conns, procs = [], []
    for _ in range(2):
        a, b = ctx.Pipe()
        p = ctx.Process(target=_pair_child, args=(b, X), daemon=True)
        p.start()
        conns.append(a)
        procs.append(p)

    def run(which, n):
        for i in which:
            conns[i].send(n)
        return {i: conns[i].recv() for i in which}

    print(f"DeepLDA(128).fit, batch 2,000, 1 pass, n_jobs=1, in two processes; medians of "
          f"{args.repeats} alternating repeats (alone: the other process idle)\n")
    print(f"{'size':<12} {'proc':>4} {'wall alone':>11} {'wall paired':>12} {'ratio':>6} "
          f"{'CPU alone':>10} {'CPU paired':>11} {'ratio':>6}", flush=True)
    sizes = (4000, 10000) if not args.quick else (4000,)
    for n in sizes:
        run((0, 1), n)                                    # untimed: caches warm
        alone, paired = {0: [], 1: []}, {0: [], 1: []}
        for rep in range(args.repeats):
            steps = ["a0", "a1", "p"] if rep % 2 == 0 else ["p", "a1", "a0"]
            for step in steps:
                if step == "p":
                    for i, v in run((0, 1), n).items():
                        paired[i].append(v)
                else:
                    i = int(step[1])
                    alone[i].append(run((i,), n)[i])
        med = {k: {i: np.median(np.array(d[i]), axis=0) for i in (0, 1)}
               for k, d in (("alone", alone), ("paired", paired))}
        for i in (0, 1):
            (wa, ca), (wp, cp) = med["alone"][i], med["paired"][i]
            print(f"{n:<12,} {i:>4} {wa:9.3f} s {wp:10.3f} s {wp / wa:6.3f} "
                  f"{ca:8.3f} s {cp:9.3f} s {cp / ca:6.3f}", flush=True)
        # two fits' work done in the paired wall: the speed-up of a perfect n_jobs=2
        both = np.median([max(a[0], b[0]) for a, b in zip(paired[0], paired[1])])
        ceiling = (med["alone"][0][0] + med["alone"][1][0]) / both
        print(f"{'':<12} two fits alone {med['alone'][0][0] + med['alone'][1][0]:.3f} s, "
              f"together {both:.3f} s: ceiling {ceiling:.2f}x", flush=True)
    for c in conns:
        c.send(None)
    for p in procs:
        p.join()


def _replay_chunks(tasks, seed):
    """Runs an update's recorded chunk tasks in order; the calling thread's CPU
    seconds, system CPU seconds and minor page faults."""
    import resource

    import skdgm.deep_lda._train as train

    a, c = resource.getrusage(resource.RUSAGE_THREAD), time.thread_time()
    for i, (task, kw) in enumerate(tasks):
        train.local_task(task, np.random.default_rng([seed, i]), **kw)
    c, b = time.thread_time() - c, resource.getrusage(resource.RUSAGE_THREAD)
    return np.array([c, b.ru_stime - a.ru_stime, b.ru_minflt - a.ru_minflt])


def _replay_child(conn, barrier, tasks):
    """Replays ``tasks`` on each seed received, after ``barrier`` when told to pair."""
    while True:
        msg = conn.recv()
        if msg is None:
            return
        seed, paired = msg
        if paired:
            barrier.wait()
        conn.send(_replay_chunks(tasks, seed))


def replay(args):
    """One update's chunks alone and as two copies at once, in threads and processes."""
    import multiprocessing as mp
    import threading

    import skdgm.deep_lda._train as train

    X = load_20news(args.data_home)[0].tocsr()[:10000]
    calls, real = [], train.local_task

    def record(task, rng, **kw):
        calls.append((task, kw))
        return real(task, rng, **kw)

    train.local_task = record
    try:
        DeepLDA(128, batch_size=2000, n_iter=1, random_state=0, n_jobs=1).fit(X)
    finally:
        train.local_task = real
    # one update's tasks share its topics; the third update's chunks (not the
    # global step's normals, drawn as one more task beside them)
    from skdgm.deep_lda._local import StandardNormals

    updates = []
    for task, kw in calls:
        if not updates or updates[-1][0] is not kw["phis"]:
            updates.append((kw["phis"], []))
        if not isinstance(task, StandardNormals):
            updates[-1][1].append((task, kw))
    tasks = updates[2][1]
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(2)
    conns, procs = [], []
    for _ in range(2):
        a, b = ctx.Pipe()
        p = ctx.Process(target=_replay_child, args=(b, barrier, tasks), daemon=True)
        p.start()
        conns.append(a)
        procs.append(p)

    def threads(seed):
        out, gate = [None, None], threading.Barrier(2)

        def one(i):
            gate.wait()
            out[i] = _replay_chunks(tasks, seed + i)

        ts = [threading.Thread(target=one, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return np.mean(out, axis=0)

    def processes(seed, paired):
        which = (0, 1) if paired else (0,)
        for i in which:
            conns[i].send((seed + i, paired))
        return np.mean([conns[i].recv() for i in which], axis=0)

    modes = {"thread alone": lambda s: _replay_chunks(tasks, s),
             "two threads": threads,
             "process alone": lambda s: processes(s, False),
             "two processes": lambda s: processes(s, True)}
    res = {k: [] for k in modes}
    for rep in range(args.repeats + 1):
        order = list(modes) if rep % 2 == 0 else list(modes)[::-1]
        for k in order:
            v = modes[k](1000 * rep)
            if rep:                                   # the first repeat warms caches
                res[k].append(v)
    for c in conns:
        c.send(None)
    for p in procs:
        p.join()
    print(f"DeepLDA(128).fit, 10,000 documents, batch 2,000: the {len(tasks)} chunk tasks of "
          f"its third update replayed in order; CPU seconds of one copy, medians of "
          f"{args.repeats} alternating repeats\n")
    print(f"{'mode':<16} {'CPU s':>7} {'vs alone':>9} {'system CPU s':>13} {'page faults':>12}")
    for k in modes:
        alone = np.median([r[0] for r in res["thread alone" if "thread" in k
                                            else "process alone"]])
        v = np.median(np.array(res[k]), axis=0)
        print(f"{k:<16} {v[0]:7.3f} {v[0] / alone:8.3f}x {v[1]:13.3f} {v[2]:12.0f}",
              flush=True)


def _near_miss(name, size):
    """The rows below their goal in ``parallel_idle.txt`` (issue 26)."""
    return (name.endswith(("perplexity", "log_partition", ".fit"))
            or (name.endswith("partial_fit") and size.startswith("2 calls")))


def all_rows(args):
    """The rows of the workloads named by ``--only``."""
    if "deep_lda" in args.only:
        deep_lda_rows(args)
    if "grbm" in args.only:
        grbm_rows(args)


def _tunables():
    """glibc's malloc settings, which change what freed memory costs threads (``--replay``)."""
    return f"GLIBC_TUNABLES: {os.environ.get('GLIBC_TUNABLES', 'unset')}"


def _with_load(mode, args):
    """The header with the load average at the start, ``mode(args)``, the load at the end."""
    header([f"cores: {os.cpu_count()}; load average at start: "
            f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", _tunables()])
    mode(args)
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a smoke test)")
    ap.add_argument("--only", nargs="*", default=["deep_lda", "grbm"])
    ap.add_argument("--data-home", default=None)
    ap.add_argument("--timeline", action="store_true",
                    help="dissect one n_jobs=2 transform batch by batch instead")
    ap.add_argument("--backend", choices=["loky", "threading"], default=None,
                    help="force this joblib backend (default: the library's choice)")
    ap.add_argument("--serial", action="store_true",
                    help="CPU inside and outside the run_chains tasks at n_jobs=1 instead")
    ap.add_argument("--updates", action="store_true",
                    help="dissect DeepLDA's training updates of 2,000 documents instead")
    ap.add_argument("--profile", action="store_true",
                    help="the calling thread's CPU by function at n_jobs=2 instead "
                         "(the near-miss rows of issue 26)")
    ap.add_argument("--gil", action="store_true",
                    help="what DeepLDA's training threads wait on instead (sleep, run "
                         "queue, CPU outside the GIL-free kernels, wait channels)")
    ap.add_argument("--rows", nargs="*", choices=["small", "training", "eval"], default=None,
                    help="only these kinds of rows (row_kind; default: every row)")
    ap.add_argument("--look-ahead", action="store_true",
                    help="DeepLDA fit with MinibatchPipeline on and off, alternating "
                         "(wall and calling thread's CPU) instead")
    ap.add_argument("--no-look-ahead", action="store_true",
                    help="DeepLDA's training lays out no minibatch ahead (the chunks' "
                         "tasks lay themselves out, as before MinibatchPipeline)")
    ap.add_argument("--pair", action="store_true",
                    help="two n_jobs=1 DeepLDA fits in two processes, alone and at the "
                         "same time (the machine's ceiling) instead")
    ap.add_argument("--replay", action="store_true",
                    help="one update's chunk tasks alone and as two copies at once, in "
                         "threads and in processes (CPU per copy) instead")
    ap.add_argument("--spread", action="store_true",
                    help="under each row, the paired ratios' spread and a bootstrap "
                         "interval of the row's figure (use with many --repeats)")
    ap.add_argument("--fit-docs", type=int, default=4000,
                    help="--updates: the documents of its fit row (batch 2,000)")
    args = ap.parse_args()
    if args.no_look_ahead:
        from skdgm.deep_lda import _train
        _train.look_ahead = lambda n_jobs, **kwargs: None
    _BACKEND["name"] = args.backend
    ROWS["kinds"] = args.rows
    SPREAD["on"] = args.spread
    if args.pair:
        return _with_load(pair, args)
    if args.replay:
        return _with_load(replay, args)
    if args.gil:
        return _with_load(gil, args)
    if args.look_ahead:
        return _with_load(look_ahead_ab, args)
    if args.profile:
        PROFILE.update(on=True, rows=_near_miss)
        header([f"cores: {os.cpu_count()}"])
        return all_rows(args)
    if args.updates:
        return _with_load(updates, args)
    if args.serial:
        SERIAL["on"] = True
        header([f"cores: {os.cpu_count()}"])
        print("n_jobs=1, CPU seconds, medians of 3 calls: the whole call, inside the "
              "run_chains tasks, outside them (serial); Amdahl bound for 2 workers\n")
        print(f"{'method':<38} {'size':<34} {'call':>10} {'tasks':>10} {'serial':>10} "
              f"{'serial':>9} {'bound':>7}", flush=True)
        return all_rows(args)
    if args.timeline:
        return _with_load(timeline, args)
    header([f"cores: {os.cpu_count()}; load average at start: "
            f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", _tunables()])
    backend = args.backend or "the library's choice (no parallel_config)"
    print(f"wall-clock medians of {args.repeats} alternating repeats; backend: {backend}\n")
    print(f"{'method':<38} {'size':<34} {'workers':<9} {'n_jobs=1':>10} {'n_jobs=2':>10} "
          f"{'wall x':>7} {'CPU x':>6} {'idle-machine bound':>7}  results", flush=True)
    all_rows(args)
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
