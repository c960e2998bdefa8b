"""The paper-scale runner's checkpoint and resume machinery (issue 24).

``benchmarks/bench_paper_tables.py`` trains for hours across sessions; what must hold
is that a run stopped at a checkpoint (or killed after one) and resumed ends exactly
where an uninterrupted run ends, and that its table has exactly the issue's columns.
The runs here use a cheap row (a 10-unit DSGHMC-Gibbs SBN on 300 images, a few AIS
temperatures) and deterministic checkpoints every two chunks.
"""

import argparse
import csv
import os
import subprocess
import sys
from pathlib import Path

import joblib
import numpy as np
from threadpoolctl import threadpool_limits
import pytest

from _bench import bench_module

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
SCRIPT = BENCH / "bench_paper_tables.py"
DATA = ROOT.parent / "shared" / "data"
COLUMNS = ["estimator", "dataset", "config", "metric", "ours", "ours_se", "paper",
           "paper_source", "train_cpu_hours", "command", "commit"]

pytestmark = pytest.mark.skipif(not SCRIPT.is_file(), reason="no benchmarks/ folder here")
needs_data = pytest.mark.skipif(not any(DATA.glob("binarized_mnist*.npz")),
                                reason="binarized MNIST not in ../shared/data")

TINY = ["--row", "sbn_dsghmc_gibbs", "--n-train", "300", "--n-test", "20", "--chunk", "100",
        "--max-steps", "6", "--checkpoint-steps", "2", "--curve-n-test", "5",
        "--curve-ais-betas", "5", "--curve-ais-runs", "2", "--final-ais-betas", "10",
        "--final-ais-runs", "2", "--sbn-score", "ais", "--set", "n_components=(10,)"]


def _bench_module():
    return bench_module("bench_paper_tables")


# a batch row: a probe pass, then one warm_start pass per step (6 passes, burn-in 2)
TINY_BATCH = ["--n-train", "300", "--n-test", "20", "--checkpoint-steps", "2",
              "--curve-n-test", "5", "--curve-ais-betas", "5", "--curve-ais-runs", "2",
              "--final-ais-betas", "10", "--final-ais-runs", "2",
              "--set", "n_components=(10,)", "--set", "n_iter=6"]


def _run(tmp, name, *extra, check=True, tiny=TINY):
    env = {**os.environ, "SKDGM_DATA": str(DATA), "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, str(SCRIPT), *tiny, "--checkpoint-dir", str(tmp / name),
         "--csv", str(tmp / f"{name}.csv"), "--results-file", str(tmp / f"{name}.txt"),
         *extra], capture_output=True, text=True, env=env, cwd=ROOT)
    if check:
        assert out.returncode == 0, out.stderr[-3000:]
    return out


def _state(tmp, name):
    return joblib.load(tmp / name / "state.joblib")


def _csv(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


@needs_data
def test_resume_continues_where_it_stopped_and_matches_an_uninterrupted_run(tmp_path):
    _run(tmp_path, "whole")
    # stopped at the checkpoint of step 4, i.e. an interrupted session
    stopped = _run(tmp_path, "split", "--stop-after-steps", "3")
    assert "stopping at step 4" in stopped.stdout
    mid = _state(tmp_path, "split")["prog"]
    assert mid["steps"] == 4 and mid["final"] is None and len(mid["curve"]) == 2
    assert not (tmp_path / "split.csv").exists()
    # without --resume the checkpoint is not overwritten by accident
    refused = _run(tmp_path, "split", check=False)
    assert refused.returncode != 0 and "--resume" in refused.stderr
    resumed = _run(tmp_path, "split", "--resume")
    assert "resumed at step 4" in resumed.stdout

    whole, split = _state(tmp_path, "whole"), _state(tmp_path, "split")
    assert split["prog"]["sessions"] == 2 and split["prog"]["steps"] == 6
    # the same learning curve and final figure, to the last bit
    assert ([c["figure"] for c in split["prog"]["curve"]]
            == [c["figure"] for c in whole["prog"]["curve"]])
    assert [c["steps"] for c in whole["prog"]["curve"]] == [2, 4, 6]
    assert split["prog"]["final"]["ours"] == whole["prog"]["final"]["ours"]
    # and the same model: its draws from a fixed seed agree exactly
    np.testing.assert_array_equal(split["est"].sample(5, random_state=0),
                                  whole["est"].sample(5, random_state=0))

    a, b = _csv(tmp_path / "whole.csv"), _csv(tmp_path / "split.csv")
    assert a[0] == b[0] == COLUMNS
    assert len(a) == len(b) == 2
    skip = {COLUMNS.index("train_cpu_hours")}   # CPU time is measured, not replayed
    assert [v for i, v in enumerate(a[1]) if i not in skip] == \
        [v for i, v in enumerate(b[1]) if i not in skip]
    row = dict(zip(COLUMNS, a[1]))
    assert row["dataset"] == "binarized_mnist" and row["config"] == "10 dsghmc_gibbs"
    assert row["metric"] == "test_log_p" and float(row["paper"]) == -102.9
    # the recorded command makes the run; the flags of one process are not part of it
    assert row["command"].startswith("python benchmarks/bench_paper_tables.py --row")
    assert "--checkpoint-dir" not in row["command"] and "--csv" not in row["command"]
    assert "--resume" not in b[1][COLUMNS.index("command")]


@needs_data
@pytest.mark.parametrize("row", ["sbn_gibbs", "sbn_vb"])
def test_batch_sbn_rows_resume_mid_fit_and_equal_one_fit(tmp_path, row):
    from skdgm import BayesianSBN

    tiny = ["--row", row, *TINY_BATCH] + (["--set", "burn_in=2"] if row == "sbn_gibbs" else [])
    _run(tmp_path, "whole", tiny=tiny)
    # step 1 is the probe, steps 2-7 the six passes: stop at the checkpoint of step 4,
    # i.e. after three passes, in the middle of the chain
    stopped = _run(tmp_path, "split", "--stop-after-steps", "3", tiny=tiny)
    assert "stopping at step 4" in stopped.stdout
    mid = _state(tmp_path, "split")
    assert mid["prog"]["batch_passes"] == 3 and mid["est"].n_iter_ == 3
    resumed = _run(tmp_path, "split", "--resume", tiny=tiny)
    assert "resumed at step 4" in resumed.stdout
    whole, split = _state(tmp_path, "whole"), _state(tmp_path, "split")
    assert split["prog"]["steps"] == whole["prog"]["steps"] == 7
    assert split["prog"]["final"]["ours"] == whole["prog"]["final"]["ours"]
    # the chain in pieces is the chain of one fit with all the passes
    X = _bench_module().load_sbn_mnist(DATA, argparse.Namespace(
        n_train=300, n_test=20, curve_n_test=5))["train"]
    params = dict(n_components=(10,), inference=row.removeprefix("sbn_"), random_state=0,
                  n_posterior_samples=5, n_iter=6)
    # the script's processes run one BLAS thread (_run); so must the reference, or
    # a threaded BLAS sums in another order
    with threadpool_limits(1):
        one = BayesianSBN(**params, **({"burn_in": 2} if row == "sbn_gibbs" else {})).fit(X)
    for est in (whole["est"], split["est"]):
        assert est.n_iter_ == 6
        for a, b in zip(est.posterior_samples_, one.posterior_samples_):
            for x, y in zip(a.weights + a.biases, b.weights + b.biases):
                np.testing.assert_array_equal(x, y)


needs_mnist = pytest.mark.skipif(not (DATA / "mnist.npz").is_file(),
                                 reason="MNIST not in ../shared/data")


@needs_mnist
def test_fit_trains_the_grbm_row_by_one_fit_of_all_training_rows(tmp_path):
    from skdgm.grbm import GaussianBernoulliRBM

    tiny = ["--row", "grbm_mnist", "--fit", "--n-train", "300", "--n-test", "20",
            "--curve-n-test", "5", "--curve-ais-betas", "5", "--curve-ais-runs", "2",
            "--final-ais-betas", "10", "--final-ais-runs", "2", "--sample-steps", "2",
            "--set", "n_components=6", "--set", "n_iter=3", "--set", "batch_size=50"]
    out = _run(tmp_path, "fit", tiny=tiny)
    assert "paired over the same images" in out.stdout
    # the gallery lands beside the results file, not over the committed row's
    assert (tmp_path / "fit_samples.png").is_file()
    st = _state(tmp_path, "fit")
    assert st["prog"]["steps"] == 1 and st["prog"]["fitted"]
    assert st["prog"]["settings"]["fit"] is True
    X = _bench_module().load_mnist_standardised(DATA, argparse.Namespace(
        n_train=300, n_test=20, curve_n_test=5))["train"]
    with threadpool_limits(1):
        one = GaussianBernoulliRBM(6, n_iter=3, batch_size=50, random_state=0).fit(X)
    assert st["est"].n_iter_ == 3
    np.testing.assert_array_equal(st["est"].components_, one.components_)


def test_fit_is_refused_for_rows_with_their_own_schedule():
    with pytest.raises(SystemExit):
        _bench_module().parse_args(["--row", "dbm_cast", "--fit"])


def test_flat_local_start_is_refused_for_other_rows():
    with pytest.raises(SystemExit):
        _bench_module().parse_args(["--row", "sbn_vb", "--local-start", "flat"])


def test_flat_local_start_skips_the_em_steps_in_training_only(monkeypatch):
    """``--local-start flat``: training's chains start from the flat theta (no EM
    step), which changes the fit; a transform still takes the library's EM start."""
    import scipy.sparse as sp

    from skdgm import DeepLDA
    from skdgm.deep_lda import _local, _train

    X = sp.csr_matrix(np.random.default_rng(0).poisson(1.0, (60, 30)))
    calls = []
    real = _local._em_start
    monkeypatch.setattr(_local, "_em_start", lambda *a, **k: calls.append(1) or real(*a, **k))
    kw = dict(n_components=(4, 2), total_samples=60, random_state=0, local_burn_in=2,
              local_samples=2)
    em = DeepLDA(**kw).partial_fit(X)
    assert calls
    monkeypatch.setattr(_train, "local_task", _train.local_task)   # undone after the test
    _bench_module()._flat_training_starts()
    calls.clear()
    flat = DeepLDA(**kw).partial_fit(X)
    assert not calls
    assert not np.allclose(flat.components_, em.components_)
    flat.transform(X[:5])
    assert calls


@needs_data
def test_resume_refuses_other_settings(tmp_path):
    _run(tmp_path, "r", "--stop-after-steps", "1")
    other = _run(tmp_path, "r", "--resume", "--n-train", "200", check=False)
    assert other.returncode != 0 and "other settings" in other.stderr


def test_command_drops_process_flags():
    mod = _bench_module()
    cmd = mod._command(["--row", "dbm_cast", "--resume", "--stop-after-hours", "1",
                        "--checkpoint-dir=/x", "--eval-jobs", "2", "--set", "n_chains=50"])
    assert cmd.endswith("bench_paper_tables.py --row dbm_cast --set n_chains=50")


def test_budget_is_capped_at_three_cpu_hours():
    mod = _bench_module()
    assert mod.parse_args(["--row", "fa_mnist"]).budget_hours == 3.0
    with pytest.raises(SystemExit):
        mod.parse_args(["--row", "fa_mnist", "--budget-hours", "3.5"])


def test_update_csv_keeps_one_line_per_model_and_refuses_other_columns(tmp_path):
    mod = _bench_module()
    assert mod.COLUMNS == COLUMNS
    path = tmp_path / "t.csv"

    def line(est, config, ours):
        return dict(zip(COLUMNS, [est, "mnist", config, "test_log_p", ours, "", "", "",
                                  "1.0", "python benchmarks/bench_paper_tables.py", "abc"]))

    mod.update_csv(path, [line("A", "64", "-1.0"), line("B", "64", "-2.0")])
    mod.update_csv(path, [line("A", "64", "-0.5"), line("A", "32", "-3.0")])
    rows = _csv(path)
    assert rows[0] == COLUMNS
    # A 64 replaced by the later run, B kept, A 32 added
    assert [(r[0], r[2], r[4]) for r in rows[1:]] == [("B", "64", "-2.0"), ("A", "64", "-0.5"),
                                                       ("A", "32", "-3.0")]
    path.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="columns"):
        mod.update_csv(path, [])
    assert path.read_text() == "a,b\n1,2\n"


def test_committed_table_has_exactly_the_columns():
    path = BENCH / "results" / "paper_tables.csv"
    if not path.is_file():
        pytest.skip("no paper_tables.csv committed yet")
    rows = _csv(path)
    assert rows[0] == COLUMNS
    for r in rows[1:]:
        assert len(r) == len(COLUMNS)
        d = dict(zip(COLUMNS, r))
        assert d["dataset"] in {"binarized_mnist", "20news", "mnist"}
        assert d["metric"] in {"test_bound", "test_log_p", "perplexity"}
        assert d["command"].startswith("python benchmarks/bench_paper_tables.py")
        assert d["commit"] and "dirty" not in d["commit"]
        float(d["ours"])
