#===- test_calibrate.py - Tests of the one-command calibration -----------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#

import argparse
import io
import json
import os
import subprocess
import sys

import pytest

from neuroshard import _core
from neuroshard import calibrate
from neuroshard import collect
from neuroshard import experience

import built_tools

# A calibration in seconds: a small pool, few samples and epochs, a short
# curve, and rows capped so that the tool allocates little.
TINY = ["--base-tables", "20", "--samples", "30", "--epochs", "2",
        "--scaling-sets", "3", "--batch-sizes", "256,1024,4096",
        "--validate-batch-sizes", "2048", "--validate-sets", "3",
        "--scaling-warmup", "1", "--max-rows", "20000",
        "--experience-tasks", "2", "--verify-seconds", "0"]


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    """(bundle, work directory, stdout, stderr) of a tiny calibration with
    the real timing tool."""
    tool = built_tools.tool("neuroshard-collect")
    root = tmp_path_factory.mktemp("calibrate")
    out = str(root / "cpu-here")
    process = subprocess.run(
        [sys.executable, "-m",
         "neuroshard.calibrate", "--out", out, "--tool", tool] + TINY,
        capture_output=True, text=True, timeout=300)
    assert process.returncode == 0, process.stderr
    return out, str(root / "cpu-here-work"), process.stdout, process.stderr


def test_calibration_writes_a_complete_bundle(calibrated):
    out, work, stdout, stderr = calibrated
    assert sorted(os.listdir(out)) == ["compute.pt", "meta.json"]
    assert sorted(os.listdir(work)) == ["cpu-here", "experience.jsonl",
                                        "pool.json", "samples.jsonl"]
    with open(os.path.join(out, "meta.json")) as f:
        meta = json.load(f)
    assert meta["trained"] is True and meta["batch_size"] == 1024
    assert meta["hardware"] == _core.host_cpu_model()
    assert meta["host"] == _core.host_description()
    assert meta["dataset_size"]["compute"] == 30
    # A share of the samples' tables are row pieces, timed with the real
    # tool, and the bundle says it has seen them.
    samples = collect.load_samples(os.path.join(work, "samples.jsonl"))
    assert any(collect.is_row_piece(e) for s in samples for e in s["tables"])
    assert meta["row_pieces"] is True
    assert meta["training"]["epochs"] == 2
    ranges = meta["trained_ranges"]
    assert set(ranges) == {"rows", "dim", "pooling_factor", "tables_per_set"}
    assert ranges["dim"][0] >= 4 and ranges["dim"][1] <= 128
    scaling = meta["batch_scaling"]
    assert scaling["batch_sizes"] == [256, 1024, 4096]
    assert scaling["ratios"][1] == 1.0
    assert scaling["ratios"][0] < 1.0 < scaling["ratios"][2]
    assert scaling["sets"] == 3
    validation = scaling["validation"]
    assert validation["batch_sizes"] == [2048]
    assert len(validation["scaling_mape"]) == 1
    assert len(validation["prediction_mape"]) == 1
    # Every phase says how far it is; the end says how to use the bundle.
    for phase in ("[pool]", "[collect]", "[train]", "[experience]",
                  "[batch scaling]", "[report]"):
        assert "calibrate: %s" % phase in stderr
    assert "intermediate files in %s" % work in stderr
    assert "calibrated '%s' for %s" % (out, _core.host_cpu_model()) in stdout
    assert "30 samples at batch 1024, held-out MAPE" in stdout
    assert "batch scaling 256..4096" in stdout
    # A model of this CPU plans for CPU execution.
    assert ("neuroshard-plan TASK.json --cost-model %s --device-kind cpu" %
            out) in stdout
    assert "--neuroshard-shard=\"cost-model=%s device-kind=cpu\"" % out \
        in stdout


def test_calibration_times_the_sets_its_plans_use(calibrated):
    out, work, stdout, stderr = calibrated
    # Two tasks of the pool's train tables, planned with measured selection:
    # every set timed is a line of the experience file.
    lines = experience.load_experience(os.path.join(work,
                                                    "experience.jsonl"))
    assert "calibrate: [experience] experience-0: " in stderr
    assert "calibrate: [experience] experience-1: " in stderr
    assert len(lines) >= 2
    for line in lines:
        assert (line["hardware"], line["device"], line["batch_size"],
                line["bundle"]) == (_core.host_cpu_model(), "cpu", 1024,
                                    "cpu-here")
        assert all(entry["rows"] <= 20000 for entry in line["tables"])
    # Then the bundle is refined on them (kept only if it predicts the
    # held-out sets better), or the stage says why not.
    with open(os.path.join(out, "meta.json")) as f:
        meta = json.load(f)
    if "calibrate: [experience] refined the bundle" in stderr:
        assert meta["refined"]["experience_samples"] == len(lines)
        assert meta["refined"]["calibration_data"] == os.path.join(
            work, "samples.jsonl")
        assert "experience: %d sets timed in 2 plans; refined" % \
            len(lines) in stdout
    else:
        assert "refined" not in meta
        assert "calibrate: [experience] kept the trained bundle" in \
            stderr or "calibrate: [experience] not refined: " in stderr
    # The plans' candidates are timed again apart from their plannings, for
    # the host's noise of measured selection, recorded where enough were
    # compared.
    if "selection_noise" in meta:
        noise = meta["selection_noise"]
        assert noise["comparisons"] >= 4 and noise["views"] == 3
        assert noise["tasks"] in (1, 2) and noise["verify_seconds"] == 0
        assert 0 <= noise["log_sd"] <= noise["raw_log_sd"]
        assert "calibrate: [selection noise] selection noise " in stderr
        assert "measured selection: selection noise %.1f%%" % \
            (100 * noise["log_sd"]) in stdout
    else:
        assert "calibrate: [selection noise] not recorded: " in stderr


def test_the_planner_loads_the_calibrated_bundle(calibrated, tmp_path):
    out = calibrated[0]
    plan = built_tools.tool("neuroshard-plan")
    # Six f32 tables whose every looked-up row is hit once per batch.
    task = tmp_path / "task.json"
    task.write_text(json.dumps({"tables": [
        {"name": "t%d" % i, "rows": 2000000 * (i + 1), "dim": 16 << (i % 4),
         "pooling_factor": 2 + 2 * i, "access_hist": [1.0] + [0.0] * 16}
        for i in range(6)]}))
    result = subprocess.run([plan, str(task), "--devices", "2",
                             "--cost-model", out, "--format", "table"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "neural cost model 'cpu-here' (measured on %s; batch 1024" % \
        _core.host_cpu_model() in result.stdout


def test_calibration_at_the_batch_planned(tmp_path):
    # --batch-size: the pool's histograms, the samples, the experience
    # tasks and the curve's reference are all at that batch.
    tool = built_tools.tool("neuroshard-collect")
    out = str(tmp_path / "cpu-b4096")
    # The options after TINY replace its curve and experience tasks.
    process = subprocess.run(
        [sys.executable, "-m", "neuroshard.calibrate", "--out", out,
         "--tool", tool] + TINY +
        ["--batch-size", "4096", "--batch-sizes", "1024,4096",
         "--experience-tasks", "1"],
        capture_output=True, text=True, timeout=300)
    assert process.returncode == 0, process.stderr
    work = str(tmp_path / "cpu-b4096-work")
    with open(os.path.join(work, "pool.json")) as f:
        assert json.load(f)["sample_bags"] == 4096
    samples = collect.load_samples(os.path.join(work, "samples.jsonl"))
    assert {s["batch_size"] for s in samples} == {4096}
    with open(os.path.join(out, "meta.json")) as f:
        meta = json.load(f)
    assert meta["batch_size"] == 4096
    scaling = meta["batch_scaling"]
    assert scaling["batch_sizes"] == [1024, 4096]
    assert scaling["ratios"][0] < scaling["ratios"][1] == 1.0
    lines = experience.load_experience(os.path.join(work,
                                                    "experience.jsonl"))
    assert lines and {line["batch_size"] for line in lines} == {4096}
    assert "measuring up to 30 samples at batch 4096" in process.stderr
    assert "30 samples at batch 4096, held-out MAPE" in process.stdout


@pytest.mark.parametrize("argv, message", [
    (["--out", "x", "--batch-size", "0"],
     "--batch-size must be in [1, 16777216] (the timing tool's largest "
     "batch), got 0"),
    (["--out", "x", "--batch-size", str((1 << 24) + 1)],
     "--batch-size must be in [1, 16777216] (the timing tool's largest "
     "batch), got 16777217"),
    (["--refine", "x", "--batch-size", "4096"],
     "--refine takes --experience, --out, --force, --epochs, --seed, --data "
     "and --pool, not --batch-size"),
])
def test_calibration_refuses_a_batch_it_cannot_time(argv, message, capsys):
    with pytest.raises(SystemExit) as exit:
        calibrate.main(argv)
    assert exit.value.code == 2
    assert message in capsys.readouterr().err


def test_calibration_refuses_to_overwrite(calibrated, tmp_path, capsys):
    out = calibrated[0]
    before = open(os.path.join(out, "meta.json")).read()
    assert calibrate.main(["--out", out] + TINY) == 1
    err = capsys.readouterr().err
    assert err == ("calibrate: error: '%s' exists and is not an empty "
                   "directory: choose another --out, or pass --force to "
                   "replace its bundle\n" % out)
    assert open(os.path.join(out, "meta.json")).read() == before
    shipped = os.path.join(built_tools.REPO, "models", "cpu-here")
    assert calibrate.main(["--out", shipped] + TINY) == 1
    assert "is under the source tree's models/" in capsys.readouterr().err
    assert not os.path.exists(shipped)
    # A file is not a bundle directory either; an empty directory is fine.
    (tmp_path / "file").write_text("x")
    with pytest.raises(calibrate.CalibrateError, match="not an empty"):
        calibrate.check_out_dir(str(tmp_path / "file"), force=False)
    (tmp_path / "empty").mkdir()
    calibrate.check_out_dir(str(tmp_path / "empty"), force=False)
    calibrate.check_out_dir(out, force=True)
    calibrate.check_out_dir(shipped, force=True)


def test_install_replaces_a_whole_bundle(tmp_path):
    staged, out = tmp_path / "staged", tmp_path / "out"
    staged.mkdir()
    out.mkdir()
    (staged / "compute.pt").write_text("new")
    (staged / "meta.json").write_text("{}")
    for name in ("compute.pt", "comm_fw.pt", "comm_bw.pt", "notes.txt"):
        (out / name).write_text("old")
    calibrate.install_bundle(str(staged), str(out))
    # Stale comm models would be loaded with the new compute model.
    assert sorted(os.listdir(out)) == ["compute.pt", "meta.json",
                                       "notes.txt"]
    assert (out / "compute.pt").read_text() == "new"


def test_work_directory(tmp_path):
    out = str(tmp_path / "bundles" / "mine")
    assert calibrate.work_dir(out, None) == str(tmp_path / "bundles" /
                                                "mine-work")
    assert calibrate.work_dir(out, "/elsewhere") == "/elsewhere"
    beside_shipped = calibrate.work_dir(
        os.path.join(built_tools.REPO, "models", "mine"), None)
    try:
        assert not beside_shipped.startswith(
            os.path.join(built_tools.REPO, "models"))
    finally:
        os.rmdir(beside_shipped)


def test_epochs_fit_the_training_budget(tmp_path, small_pool_path,
                                        fake_tool, monkeypatch):
    data = str(tmp_path / "samples.jsonl")
    args = argparse.Namespace(samples=60, tool=fake_tool, seed=0,
                              batch_size=calibrate.BATCH_SIZE,
                              max_rows=None, memory_cap_gb=4.0,
                              row_pieces=calibrate.DEFAULT_ROW_PIECES)
    calibrate.collect_samples(args, small_pool_path, data,
                              calibrate.Clock(60.0, io.StringIO()), 60.0)
    # The probe's epoch is the training loop's own time per epoch.
    choice = calibrate.choose_epochs(small_pool_path, data, 0, 10.0)
    assert choice["epoch_s"] > 0.0
    assert choice["epochs"] == max(calibrate.MIN_EPOCHS, min(
        calibrate.MAX_EPOCHS, int(10.0 / choice["epoch_s"])))
    # As many epochs of that time as the budget holds, within the bounds.
    probes = []

    def probe(training, valid, epochs, seed):
        probes.append(epochs)
        return None, {"epoch_s": 2.0}
    monkeypatch.setattr(calibrate.tr, "train_compute_model", probe)
    for budget, epochs in ((31.0, 15), (1.0, calibrate.MIN_EPOCHS),
                           (1e6, calibrate.MAX_EPOCHS)):
        assert calibrate.choose_epochs(small_pool_path, data, 0,
                                       budget) == {"epochs": epochs,
                                                   "epoch_s": 2.0}
    assert probes == [1, 1, 1]


def test_collection_stops_when_its_budget_is_spent(tmp_path,
                                                   small_pool_path,
                                                   fake_tool):
    data = str(tmp_path / "samples.jsonl")
    args = argparse.Namespace(samples=5000, tool=fake_tool, seed=0,
                              batch_size=calibrate.BATCH_SIZE,
                              max_rows=None, memory_cap_gb=4.0,
                              row_pieces=calibrate.DEFAULT_ROW_PIECES)
    log = io.StringIO()
    clock = calibrate.Clock(60.0, log)
    have = calibrate.collect_samples(args, small_pool_path, data, clock,
                                     budget_s=0.01)
    # One round runs (it measures the rate), then the budget is spent.
    assert have == calibrate.COLLECT_ROUND
    assert len(collect.load_samples(data)) == have
    assert "collection budget spent: stopping at 50 of 5000 samples" in \
        log.getvalue()
    # The next call resumes the same dataset.
    args.samples = 60
    assert calibrate.collect_samples(args, small_pool_path, data, clock,
                                     budget_s=60.0) == 60
    assert [s["id"] for s in collect.load_samples(data)] == list(range(60))


def test_selection_noise_stage_compares_the_experience_plans(monkeypatch):
    timed = []

    def time_apart(task, plan, pool_dims, pool_path, tool, options):
        timed.append((task["name"], options.views, options.iters))
        return [{"d": plan["d"], "round_var": 0.0, "view_var": 0.0}] * 2

    monkeypatch.setattr(calibrate.sn, "time_apart", time_apart)
    args = argparse.Namespace(batch_size=1024, seed=0, tool="tool",
                              verify_seconds=2.0)
    plans = [({"name": "a", "tables": [], "pool_ids": []}, {"d": 0.1}),
             ({"name": "b", "tables": [], "pool_ids": []}, {"d": -0.1})]
    log = io.StringIO()
    clock = calibrate.Clock(60.0, log)
    figures = calibrate.measure_selection_noise(args, plans, {}, "pool",
                                                clock, 30.0)
    assert timed == [("a", 3, 10), ("b", 3, 10)]
    assert figures["log_sd"] == pytest.approx(0.1)
    assert figures["comparisons"] == 4 and figures["tasks"] == 2
    assert figures["views"] == 3 and figures["verify_seconds"] == 2.0
    assert "calibrate: [selection noise] selection noise 10.0%" in \
        log.getvalue()

    # Too few comparisons: nothing is recorded, and the stage says so.
    figures = calibrate.measure_selection_noise(args, plans[:1], {}, "pool",
                                                clock, 30.0)
    assert figures is None
    assert "not recorded: 2 candidates compared, 4 needed" in log.getvalue()
