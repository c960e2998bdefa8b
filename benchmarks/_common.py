"""What every benchmark script shares: the results header, CPU timing and data lookup.

Every script prints :func:`header` first, so a results file says which command, commit,
date, CPU and thread settings made it. Data is found through :mod:`skdgm.datasets`:
:func:`data_home` is the ``--data-home`` flag, else the ``SKDGM_DATA`` environment variable
(the library's own rule), else a ``shared/data`` folder beside or above the checkout (the
project's workspace), else ``~/skdgm_data``. No machine path is ever printed: the header
names the data folder relative to the checkout or by its last two components.
"""

import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def _run(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True,
                              cwd=HERE).stdout.strip()
    except Exception:  # noqa: BLE001 - a header field must never stop the benchmark
        return "unknown"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "unknown"


def header(extra=None):
    """Print the command, commit, date, CPU model, thread settings (and ``extra`` lines)."""
    threads = {k: os.environ.get(k, "unset")
               for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    script = os.path.relpath(os.path.abspath(sys.argv[0]), HERE.parent)
    print(f"# command: python {' '.join([script] + sys.argv[1:])}")
    # The results file being written (the shell empties it before the script starts)
    # and a paper run's committed checkpoint being rewritten are not changes to the
    # code that made them.
    dirty = _run(["git", "status", "--porcelain", "--untracked-files=no", "--",
                  ":(top)", ":(top,exclude)benchmarks/results",
                  ":(top,exclude)benchmarks/checkpoints"])
    print(f"# commit: {_run(['git', 'rev-parse', '--short', 'HEAD'])}"
          f"{' (dirty)' if dirty and dirty != 'unknown' else ''}")
    print(f"# date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    print(f"# cpu: {cpu_model()}; threads: {threads}")
    for line in extra or ():
        print(f"# {line}")
    print(flush=True)


def alternate(funcs, repeats):
    """CPU seconds of each function (lists), repetitions alternating between them, and the last outputs."""
    times = {k: [] for k in funcs}
    out = {}
    for _ in range(repeats):
        for k, f in funcs.items():
            t = time.process_time()
            out[k] = f()
            times[k].append(time.process_time() - t)
    return times, out


def cpu_timed(fn, *args, **kwargs):
    """``(result, CPU seconds of this process)`` of one call."""
    t = time.process_time()
    out = fn(*args, **kwargs)
    return out, time.process_time() - t


def data_home(flag=None):
    """Where the benchmark data lives (see the module docstring); a ``Path`` or ``None``."""
    if flag:
        return Path(flag).expanduser()
    if os.environ.get("SKDGM_DATA"):
        return Path(os.environ["SKDGM_DATA"]).expanduser()
    for parent in HERE.parents:
        if (parent / "shared" / "data").is_dir():
            return parent / "shared" / "data"
    home = Path("~/skdgm_data").expanduser()
    return home if home.is_dir() else None


def shown(path):
    """A data path as results files show it: never the machine's absolute path."""
    if path is None:
        return "none"
    path = Path(path).resolve()
    try:
        return str(path.relative_to(HERE.parent.parent))
    except ValueError:
        return "/".join(path.parts[-2:])


def add_data_home_arg(parser):
    parser.add_argument("--data-home", default=None,
                        help="folder with the data files (default: $SKDGM_DATA, else a "
                             "shared/data folder above the checkout, else ~/skdgm_data)")
    return parser
