"""Benchmarks people can trust (issue 15): provenance of every committed result.

Fast checks of files only (no benchmark runs):

* every committed file in ``benchmarks/results/`` starts with ``# command:`` and
  holds ``# commit:`` and ``# cpu:`` lines (the header of ``benchmarks/_common.py``)
  and no absolute path of the machine that made it; a ``.csv`` table (a header row of
  column names, which a ``#`` line would break for CSV readers) instead names its
  ``command`` and ``commit`` on every row, each row's own results file holding the
  full header;
* every ``benchmarks/bench_*.py`` has a ``Usage`` line in its module docstring;
* every results file is named in ``benchmarks/README.md``.

Files of other owners that have not been brought up to the first two rules yet
are in :data:`PENDING`; those checks are expected to fail (strict ``xfail``), so a
file that has been fixed fails here until it is taken off the list.
"""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
RESULTS = BENCH / "results"

pytestmark = pytest.mark.skipif(not RESULTS.is_dir(), reason="no benchmarks/ folder here")

# Paths relative to benchmarks/ whose owners update them in their own branches
# (issue 15). The lead empties this set at merge, file by file, as each is fixed.
PENDING = set()   # every committed file is up to the rules (issue 15)

# A leaked absolute path: a folder at the root of a Unix machine or a Windows drive.
MACHINE_PATH = re.compile(r"(?<![\w.~])(/(work|home|tmp|root|Users|mnt|scratch)/|[A-Z]:\\)")

# What a results folder may hold that is not a result (ignored by git).
NOT_RESULTS = {".png", ".npz", ".joblib"}


def _results_files():
    try:
        out = subprocess.run(["git", "ls-files", "benchmarks/results"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
        files = [ROOT / line for line in out.splitlines() if line]
    except (OSError, subprocess.CalledProcessError):
        files = []
    if not files:  # not a git checkout: every file but the ignored kinds
        files = [p for p in RESULTS.iterdir()
                 if p.is_file() and p.suffix not in NOT_RESULTS]
    return sorted(p for p in files if p.is_file())


def _scripts():
    return sorted(BENCH.glob("bench_*.py"))


def _params(paths, pending=True):
    out = []
    for p in paths:
        rel = p.relative_to(BENCH).as_posix()
        marks = [pytest.mark.xfail(strict=True, reason="PENDING: its owner updates it")
                 ] if pending and rel in PENDING else []
        out.append(pytest.param(p, id=rel, marks=marks))
    return out


def header_problems(text):
    """What is missing or wrong in a results file's text (empty list: nothing)."""
    problems = []
    if not text.startswith("# command:"):
        problems.append('does not start with "# command:"')
    for key in ("# commit:", "# cpu:"):
        if not re.search(rf"^{re.escape(key)}", text, flags=re.MULTILINE):
            problems.append(f'has no "{key}" line')
    leaked = MACHINE_PATH.search(text)
    if leaked:
        line = text[:leaked.start()].count("\n") + 1
        problems.append(f"machine path {leaked.group(0)!r} on line {line}")
    return problems


def csv_problems(text):
    """What is missing or wrong in a results table (empty list: nothing)."""
    import csv
    import io

    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        return ["is empty"]
    problems = []
    for key in ("command", "commit"):
        if key not in rows[0]:
            problems.append(f'has no "{key}" column')
        else:
            i = rows[0].index(key)
            empty = [n for n, r in enumerate(rows[1:], 2) if len(r) <= i or not r[i].strip()]
            if empty:
                problems.append(f'empty "{key}" on line {empty[0]}')
    if any(len(r) != len(rows[0]) for r in rows[1:]):
        problems.append("rows of another length than the header")
    leaked = MACHINE_PATH.search(text)
    if leaked:
        line = text[:leaked.start()].count("\n") + 1
        problems.append(f"machine path {leaked.group(0)!r} on line {line}")
    return problems


@pytest.mark.parametrize("path", _params(_results_files()))
def test_results_file_has_header_and_no_machine_path(path):
    check = csv_problems if path.suffix == ".csv" else header_problems
    problems = check(path.read_text(errors="replace"))
    assert not problems, f"{path.name}: " + "; ".join(problems)


@pytest.mark.parametrize("path", _params(_scripts()))
def test_script_docstring_has_usage(path):
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    assert re.search(r"^Usage\b", doc, flags=re.MULTILINE), (
        f"{path.name}: no 'Usage' line in the module docstring (the exact command and "
        f"the results file it writes)")


# The README names every file, pending or not: it is this branch's to keep.
@pytest.mark.parametrize("path", _params(_results_files(), pending=False))
def test_results_file_named_in_readme(path):
    readme = BENCH / "README.md"
    assert readme.is_file(), "benchmarks/README.md is missing"
    assert path.name in readme.read_text(), f"{path.name} is not named in benchmarks/README.md"


def test_pending_names_exist():
    # a stale entry would hide nothing and mislead: every name must be a real file
    missing = sorted(p for p in PENDING if not (BENCH / p).is_file())
    assert not missing, f"PENDING names files that do not exist: {missing}"


@pytest.mark.parametrize("text, expected", [
    ("# command: python b.py\n# commit: abc\n# cpu: X\n\n1.0\n", []),
    ("result 1.0\n# commit: abc\n# cpu: X\n", ['does not start with "# command:"']),
    ("# command: python b.py\n# cpu: X\n", ['has no "# commit:" line']),
    ("# command: python b.py\n# commit: abc\n", ['has no "# cpu:" line']),
    ("# command: python b.py\n# commit: abc\n# cpu: X\nsaved /work/main/x.png\n",
     ["machine path '/work/' on line 4"]),
    ("# command: python b.py\n# commit: abc\n# cpu: X\ndata: shared/data\n", []),
])
def test_header_problems_finds_each_defect(text, expected):
    # the checker itself must be able to fail
    assert header_problems(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("a,command,commit\n1,python b.py,abc\n", []),
    ("a,commit\n1,abc\n", ['has no "command" column']),
    ("a,command,commit\n1,python b.py,\n", ['empty "commit" on line 2']),
    ("a,command,commit\n1,python b.py\n", ['empty "commit" on line 2',
                                             "rows of another length than the header"]),
    ("a,command,commit\n1,python b.py --x /home/me,abc\n",
     ["machine path '/home/' on line 2"]),
])
def test_csv_problems_finds_each_defect(text, expected):
    assert csv_problems(text) == expected


def test_header_marks_code_changes_dirty_but_not_results_or_checkpoints(tmp_path):
    # A paper run's checkpoint is committed so that it outlives the machine, and is then
    # rewritten every few minutes; that must not mark the run's own results file dirty,
    # while any change to code still must.
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    bench = tmp_path / "benchmarks"
    (bench / "checkpoints" / "row").mkdir(parents=True)
    (bench / "results").mkdir()
    (bench / "_common.py").write_text((BENCH / "_common.py").read_text())
    for name in ("checkpoints/row/state.joblib", "results/r.txt", "bench_x.py"):
        (bench / name).write_text("0\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run([*git, "-C", str(tmp_path), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(tmp_path), "commit", "-qm", "x"], check=True)

    def commit_line():
        code = ("import sys; sys.argv = ['bench_x.py']; import _common; _common.header()")
        out = subprocess.run([sys.executable, "-c", code], cwd=bench, capture_output=True,
                             text=True, check=True).stdout
        return next(line for line in out.splitlines() if line.startswith("# commit:"))

    (bench / "checkpoints" / "row" / "state.joblib").write_text("1\n")
    (bench / "results" / "r.txt").write_text("1\n")
    assert "(dirty)" not in commit_line()
    (bench / "bench_x.py").write_text("1\n")
    assert "(dirty)" in commit_line()
