"""What freed memory handed back to the kernel costs DeepLDA's public calls (issue 26).

glibc returns the top of its heaps to the kernel once enough is free there, so a
call that allocates and frees many large arrays gets its pages faulted in (and
zeroed) again and again. This script runs the same public calls in child
processes started with glibc's defaults and with glibc told to keep freed memory
(``GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296``,
a setting for the whole process, which a library cannot make for its user),
alternating the two settings over ``--repeats`` rounds, and prints per call the
wall clock, user and system CPU and minor page faults of the whole process (all
threads, ``getrusage``), medians over the rounds. The setting moves only where
memory comes from: the results are checked to be bit-for-bit the same.

Calls: ``DeepLDA(128).fit`` of 10,000 20 Newsgroups documents (batch 2,000, one
pass) at ``n_jobs=1`` and ``n_jobs=2``, and ``transform`` of 2,000 documents
(``n_jobs=1``).

Usage::

    SKDGM_DATA=... OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/bench_page_faults.py [--repeats 5] [--calls 5]
"""

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

from _common import header

KEEP = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296"
SETTINGS = {"glibc defaults": None, "keep freed memory": KEEP}


def _workloads(data_home):
    from _deep_lda_data import load_20news

    from skdgm import DeepLDA

    X = load_20news(data_home)[0].tocsr()
    model = DeepLDA(128, n_iter=1, random_state=0, n_jobs=1).fit(X[:2000])

    def fit(nj):
        return lambda: DeepLDA(128, batch_size=2000, n_iter=1, random_state=0,
                               n_jobs=nj).fit(X[:10000]).components_

    return {
        "DeepLDA(128).fit 10,000 docs, n_jobs=1": fit(1),
        "DeepLDA(128).fit 10,000 docs, n_jobs=2": fit(2),
        "DeepLDA(128).transform 2,000 docs, n_jobs=1": lambda: model.transform(X[:2000]),
    }


def child(args):
    """Time each call ``--calls`` times after one untimed call; print JSON."""
    out = {}
    for name, call in _workloads(args.data_home).items():
        value = call()
        rows = []
        for _ in range(args.calls):
            r0, t = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            value = call()
            wall = time.perf_counter() - t
            r1 = resource.getrusage(resource.RUSAGE_SELF)
            rows.append([wall, r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime,
                         r1.ru_minflt - r0.ru_minflt])
        digest = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
        out[name] = {"per_call": np.median(rows, axis=0).tolist(), "digest": digest}
    print(json.dumps(out))


def _round(setting, args):
    env = dict(os.environ)
    env.pop("GLIBC_TUNABLES", None)
    if SETTINGS[setting] is not None:
        env["GLIBC_TUNABLES"] = SETTINGS[setting]
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--calls", str(args.calls)]
    if args.data_home:
        cmd += ["--data-home", args.data_home]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5, help="rounds of each setting")
    ap.add_argument("--calls", type=int, default=5, help="timed calls per round")
    ap.add_argument("--data-home", default=None)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    header([f"cores: {os.cpu_count()}; load average at start: "
            f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}",
            f"settings: {SETTINGS}"])
    names = list(SETTINGS)
    rounds = {s: [] for s in names}
    for rep in range(args.repeats):
        for s in (names if rep % 2 == 0 else names[::-1]):
            rounds[s].append(_round(s, args))
    print(f"\nper call, medians of {args.calls} calls in a process, then medians over "
          f"{args.repeats} processes of each setting (alternating)\n")
    print(f"{'call':<46} {'setting':<18} {'wall s':>8} {'user s':>8} {'sys s':>8} "
          f"{'faults':>8} {'wall vs defaults':>17}  results")
    for call in rounds[names[0]][0]:
        base = None
        digests = {r[call]["digest"] for s in names for r in rounds[s]}
        for s in names:
            wall, user, sys_, flt = np.median([r[call]["per_call"] for r in rounds[s]], axis=0)
            base = wall if base is None else base
            print(f"{call:<46} {s:<18} {wall:8.3f} {user:8.3f} {sys_:8.4f} {flt:8.0f} "
                  f"{wall / base:16.2f}x  {'identical' if len(digests) == 1 else 'DIFFERENT'}",
                  flush=True)
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
