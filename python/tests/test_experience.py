#===- test_experience.py - Tests of learning from measured plans ---------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#

import json
import os
import shutil

import numpy as np
import pytest
import torch

from neuroshard import _core
from neuroshard import calibrate
from neuroshard import collect
from neuroshard import cost_model as cm
from neuroshard import experience as ex
from neuroshard import table_pool as tp
from neuroshard import train

import built_tools

# What the fake timing tool says it measured on.
HARDWARE = "Test CPU 9000"


@pytest.fixture(scope="module")
def calibration(tmp_path_factory, small_pool_path, shared_fake_tool):
    """(pool, dataset, bundle) of a small calibration "measured" by the
    fake tool at batch 1024, the batch the pool's histograms describe."""
    root = tmp_path_factory.mktemp("calibration")
    data = str(root / "samples.jsonl")
    assert collect.main(["--pool", small_pool_path, "--out", data,
                         "--tool", shared_fake_tool, "--samples", "160",
                         "--batch-size", "1024", "--memory-cap-gb", "2",
                         "--sets-per-run", "160"]) == 0
    bundle = str(root / "cpu-test")
    train.train_bundle(small_pool_path, data, bundle, epochs=3, seed=1,
                       allow_other_host=True)
    return small_pool_path, data, bundle


def make_lines(bundle, pool_path, count, factor=2.0, seed=3):
    """`count` experience lines of sets of 2 to 11 train tables of the pool
    (about a third of them as their first column half), each "measured" at
    `factor` times what the bundle predicts for it."""
    pool = tp.load_pool(pool_path)
    tables = [t for t in pool["tables"] if t["split"] == "train"]
    model = torch.jit.load(os.path.join(bundle, "compute.pt"))
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(count):
        picks = rng.choice(len(tables), size=int(rng.integers(2, 12)),
                           replace=False)
        entries = []
        for p in picks:
            t = tables[int(p)]
            half = t["dim"] >= 8 and rng.uniform() < 0.3
            entries.append({"name": t["name"], "rows": t["rows"],
                            "dim": t["dim"] // 2 if half else t["dim"],
                            "pooling_factor": t["pooling_factor"],
                            "access_hist": t["access_hist"]})
        features = torch.tensor([cm.table_features(
            e["rows"], e["dim"], e["pooling_factor"], e["access_hist"])
            for e in entries])
        with torch.no_grad():
            predicted = float(model(features, torch.zeros(
                len(entries), dtype=torch.long), 1)[0])
        cost = factor * predicted
        lines.append({"format": "neuroshard-experience", "version": 1,
                      "hardware": HARDWARE, "device": "cpu",
                      "batch_size": 1024, "bundle": "cpu-test",
                      "cost_ms": cost, "min_ms": 0.97 * cost,
                      "max_ms": 1.05 * cost, "runs": 12,
                      "predicted_ms": predicted, "tables": entries})
    return lines


def write_lines(path, lines, blank=False):
    text = "".join(("\n" if blank else "") + json.dumps(line) + "\n"
                   for line in lines)
    path.write_text(text)
    return str(path)


@pytest.fixture(scope="module")
def experience_file(calibration, tmp_path_factory):
    """80 timed sets at twice the bundle's predictions."""
    pool, _, bundle = calibration
    path = tmp_path_factory.mktemp("experience") / "experience.jsonl"
    return write_lines(path, make_lines(bundle, pool, 80))


def one_line():
    hist = [0.5, 0.25, 0.25] + [0.0] * 14
    return {"format": "neuroshard-experience", "version": 1,
            "hardware": HARDWARE, "device": "cpu", "batch_size": 1024,
            "bundle": "cpu-test", "cost_ms": 1.5, "min_ms": 1.25,
            "max_ms": 2.0, "runs": 12, "predicted_ms": 1.25,
            "tables": [{"name": "t0", "rows": 1000, "dim": 16,
                        "pooling_factor": 3.5, "access_hist": hist},
                       {"name": "t1", "rows": 50, "dim": 8,
                        "pooling_factor": 1, "access_hist": list(hist)}]}


def test_load_experience_reads_every_line(tmp_path):
    lines = [one_line() for _ in range(3)]
    lines[1]["cost_ms"] = 1.75
    path = write_lines(tmp_path / "e.jsonl", lines, blank=True)
    assert ex.load_experience(path) == lines
    (tmp_path / "empty.jsonl").write_text("\n\n")
    assert ex.load_experience(str(tmp_path / "empty.jsonl")) == []


def test_load_experience_reads_what_the_planner_writes(tmp_path):
    """The planner (C++) writes experience lines and load_experience() reads
    them: both name the same fields, LINE_FIELDS and ENTRY_FIELDS."""
    path = tmp_path / "experience.jsonl"
    task = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "test", "neuroshard-plan", "Inputs",
        "torchrec.json")
    plan = _core.plan(task, devices=2, memory_gb=0.3,
                      cost_model="analytical", device_kind="cpu",
                      verify_top=3, verify_seconds=0, experience=str(path))
    lines = ex.load_experience(str(path))
    assert len(lines) == plan["verification"]["sets"] > 0
    for line in lines:
        assert set(line) == set(ex.LINE_FIELDS)
        for entry in line["tables"]:
            assert set(entry) == set(ex.ENTRY_FIELDS)


def _set(line, path, value):
    """line with the field at `path` (keys and indices) set to value, or
    removed for value None."""
    target = line
    for key in path[:-1]:
        target = target[key]
    if value is None:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return line


LINE_ERRORS = [
    (("cost_ms",), None, 'has no "cost_ms"'),
    (("cost_ms",), "fast", ': "cost_ms" has the wrong type (\'fast\')'),
    (("runs",), True, ': "runs" has the wrong type (True)'),
    (("format",), "plans", ': "format" must be "neuroshard-experience", got '
     "'plans'"),
    (("version",), 2, ': "version" 2 is not one this reader knows (1)'),
    (("runs",), 0, ': "runs" must be positive, got 0'),
    (("cost_ms",), 0, ': "cost_ms" must be a finite number > 0, got 0'),
    (("max_ms",), -2.0, ': "max_ms" must be a finite number > 0, got -2.0'),
    (("min_ms",), 1.75, ': the median "cost_ms" 1.5 is not between "min_ms" '
     '1.75 and "max_ms" 2.0'),
    (("predicted_ms",), -1, ': "predicted_ms" must be a finite number >= 0, '
     'got -1'),
    (("tables",), [], ': "tables" is empty; a timed set looks up at least '
     'one table'),
    (("tables", 1, "dim"), None, ': tables[1] has no "dim"'),
    (("tables", 1, "rows"), 2.5, ': tables[1]: "rows" has the wrong type '
     '(2.5)'),
    (("tables", 0, "dim"), 6, ": tables[0] ('t0'): 'dim' must be a positive "
     "multiple of 4, got 6"),
    (("tables", 1, "rows"), 0, ": tables[1] ('t1'): 'rows' must be "
     "positive, got 0"),
    (("tables", 0, "pooling_factor"), -1.0, ": tables[0] ('t0'): "
     "'pooling_factor' must be a finite number >= 0, got -1"),
    (("tables", 0, "access_hist"), [1.0] * 16, ": tables[0] ('t0'): "
     "'access_hist' must have 17 bins, got 16"),
    (("tables", 0, "access_hist"), [0.5] + [0.0] * 16, ": tables[0] ('t0'): "
     "'access_hist' must sum to 1 (or be all zero for a table never hit), "
     "got 0.5"),
    (("tables", 1, "access_hist", 2), "x", ": tables[1] ('t1'): "
     "access_hist[2] is 'x'; expected a number"),
]


@pytest.mark.parametrize("field,value,message", LINE_ERRORS)
def test_loader_names_file_line_field_and_value(tmp_path, field, value,
                                                message):
    path = tmp_path / "e.jsonl"
    # Blank lines before each: line 2 is good, line 4 bad.
    write_lines(path, [one_line(), _set(one_line(), field, value)],
                blank=True)
    with pytest.raises(ex.ExperienceError) as caught:
        ex.load_experience(str(path))
    where = "experience '%s' line 4" % path
    assert str(caught.value) == where + (message if message[0] in ":"
                                         else " " + message)


def test_loader_refuses_mixed_files_and_bad_text(tmp_path):
    path = tmp_path / "e.jsonl"
    for field, value in (("batch_size", 2048), ("hardware", "Other CPU"),
                         ("device", "cuda")):
        write_lines(path, [one_line(), one_line(),
                           dict(one_line(), **{field: value})])
        with pytest.raises(ex.ExperienceError) as caught:
            ex.load_experience(str(path))
        assert str(caught.value) == (
            "experience '%s' line 3 has %s %r, but line 1 has %r: an "
            "experience file must not mix sets timed with different %s" %
            (path, field, value, one_line()[field], field))
    path.write_text(json.dumps(one_line()) + "\n[1, 2]\n")
    with pytest.raises(ex.ExperienceError) as caught:
        ex.load_experience(str(path))
    assert str(caught.value) == ("experience '%s' line 2: expected a JSON "
                                 "object" % path)
    path.write_text(json.dumps(one_line()) + "\n{\"cost_ms\": \n")
    with pytest.raises(ex.ExperienceError,
                       match="^experience '%s' line 2 is not valid JSON" %
                       path):
        ex.load_experience(str(path))
    with pytest.raises(ex.ExperienceError) as caught:
        ex.load_experience(str(tmp_path / "missing.jsonl"))
    assert str(caught.value) == ("cannot read experience '%s': No such file "
                                 "or directory" % (tmp_path /
                                                   "missing.jsonl"))


def test_split_keys_sets_by_their_content():
    line = one_line()
    shuffled = dict(line, tables=[dict(t, name="x") for t in
                                  reversed(line["tables"])], cost_ms=1.9)
    assert ex.set_key(line) == ex.set_key(shuffled)
    wider = _set(one_line(), ("tables", 0, "dim"), 32)
    assert ex.set_key(line) != ex.set_key(wider)
    lines = []
    for k in range(400):
        lines.append(_set(one_line(), ("tables", 0, "rows"), 100 + k))
    fitted, held = ex.split_experience(lines, 5, 0.25)
    assert 0.19 < len(held) / len(lines) < 0.31
    assert len(fitted) + len(held) == len(lines)
    assert ex.split_experience(lines, 5, 0.25) == (fitted, held)
    assert ex.split_experience(lines, 6, 0.25)[1] != held


def test_load_compute_model_rebuilds_the_bundle(calibration, tmp_path):
    bundle = calibration[2]
    model = cm.load_compute_model(bundle)
    meta = json.load(open(os.path.join(bundle, "meta.json")))
    assert model.members == meta["compute_model"]["ensemble"] == 4
    assert model.describe() == meta["compute_model"]
    scripted = torch.jit.load(os.path.join(bundle, "compute.pt"))
    features = cm._plausible_features(torch.Generator().manual_seed(9), 7)
    ids = torch.tensor([0, 0, 1, 2, 2, 2, 3])
    with torch.no_grad():
        assert torch.allclose(model(features, ids, 4),
                              scripted(features, ids, 4), rtol=1e-6)
    # Its parameters train.
    assert all(p.requires_grad for p in model.parameters())
    with pytest.raises(cm.BundleError, match="^cannot load '%s'" %
                       os.path.join(str(tmp_path), "compute.pt")):
        cm.load_compute_model(str(tmp_path))
    shipped = os.path.join(built_tools.REPO, "models", "cpu-zen5-b1024")
    if os.path.exists(os.path.join(shipped, "compute.pt")):
        with pytest.raises(cm.BundleError) as caught:
            cm.load_compute_model(shipped)
        assert str(caught.value).startswith(
            "'%s' is not a physics prior x bounded correction compute model"
            % os.path.join(shipped, "compute.pt"))


def test_refining_moves_a_bias_towards_zero(calibration, experience_file,
                                            tmp_path):
    pool, _, bundle = calibration
    out = str(tmp_path / "refined")
    before_bytes = open(os.path.join(bundle, "compute.pt"), "rb").read()
    result = ex.refine_bundle(bundle, [experience_file], out, epochs=15,
                              seed=0)
    record = result["refined"]
    # Every set measured twice as slow as predicted: -50% before.
    assert record["held_out_before"]["signed_error"] == pytest.approx(-0.5,
                                                                      abs=1e-3)
    assert record["held_out_as_planned_signed_error"] == pytest.approx(-0.5)
    assert record["held_out_after"]["signed_error"] > \
        record["held_out_before"]["signed_error"] + 0.15
    assert record["held_out_after"]["mape"] < \
        record["held_out_before"]["mape"] - 0.15
    assert result["written"] and result["improved"]
    assert record["experience_samples"] == 80
    assert record["train_samples"] + record["held_out_samples"] == 80
    assert record["epochs"] == 15 and 1 <= record["best_epoch"] <= 15
    assert record["experience"] == [os.path.abspath(experience_file)]
    assert record["calibration_data"] is None
    # The refined bundle predicts what the record says, and keeps the rest
    # of meta.json; the source bundle is untouched.
    assert sorted(os.listdir(out)) == ["compute.pt", "meta.json"]
    meta = json.load(open(os.path.join(out, "meta.json")))
    source = json.load(open(os.path.join(bundle, "meta.json")))
    assert meta["refined"] == json.loads(json.dumps(record))
    for key in ("host", "hardware", "batch_size", "training", "held_out",
                "seed", "compute_model", "encoding_dim"):
        assert meta[key] == source[key], key
    ranges = meta["trained_ranges"]
    assert ranges["rows"][0] <= source["trained_ranges"]["rows"][0]
    assert ranges["tables_per_set"][1] >= 11
    held = ex.split_experience(ex.load_experience(experience_file), 0,
                               ex.DEFAULT_VALIDATION_FRACTION)[1]
    refined = torch.jit.load(os.path.join(out, "compute.pt"))
    figures = ex.error_figures(refined, ex.experience_set(held))
    assert figures["mape"] == pytest.approx(
        record["held_out_after"]["mape"], rel=1e-5)
    assert open(os.path.join(bundle, "compute.pt"), "rb").read() == \
        before_bytes
    # The refined bundle loads back and refines again; the record keeps
    # the earlier one.
    again = ex.refine_bundle(out, [experience_file], str(tmp_path / "again"),
                             epochs=2, seed=0, keep_worse=True)
    assert again["refined"]["previous"] == meta["refined"]


def test_refining_replays_the_calibration_samples(calibration,
                                                  experience_file, tmp_path):
    pool, data, bundle = calibration
    out = str(tmp_path / "refined")
    result = ex.refine_bundle(bundle, [experience_file], out, epochs=8,
                              seed=0, data_path=data, pool_path=pool)
    record = result["refined"]
    assert record["calibration_data"] == os.path.abspath(data)
    assert record["calibration_replayed_per_epoch"] == min(
        2 * record["train_samples"],
        json.load(open(os.path.join(bundle, "meta.json")))["training"]
        ["train_samples"])
    source = json.load(open(os.path.join(bundle, "meta.json")))
    assert record["calibration_held_out_mape_before"] == pytest.approx(
        source["held_out"]["compute_mape"], rel=1e-5)
    assert result["meta"]["held_out"]["compute_mape"] == \
        record["calibration_held_out_mape_after"]
    # The log error is the refined model's too, not the bundle's.
    refined_held = result["meta"]["held_out"]
    assert refined_held["compute_log_error_sd"] > 0.0
    assert refined_held["compute_log_error_sd"] != \
        source["held_out"]["compute_log_error_sd"]
    assert record["held_out_after"]["signed_error"] > \
        record["held_out_before"]["signed_error"]


def refuses(message, *args, **kwargs):
    with pytest.raises(ex.ExperienceError) as caught:
        ex.refine_bundle(*args, **kwargs)
    assert str(caught.value) == message


def test_refine_refusals(calibration, experience_file, tmp_path):
    pool, data, bundle = calibration
    lines = ex.load_experience(experience_file)
    out = str(tmp_path / "out")
    other = write_lines(tmp_path / "other.jsonl",
                        [dict(l, hardware="Other CPU") for l in lines])
    refuses("experience '%s' was measured on 'Other CPU', but bundle '%s' "
            "models 'Test CPU 9000' (meta.json \"hardware\"): refine a bundle "
            "with the experience of its own machine" % (other, bundle),
            bundle, [experience_file, other], out)
    batch = write_lines(tmp_path / "batch.jsonl",
                        [dict(l, batch_size=4096) for l in lines])
    refuses("experience '%s' was timed at batch size 4096, but bundle '%s' "
            "models batch size 1024 (meta.json \"batch_size\"): plan at the "
            "bundle's batch size to collect experience for it" %
            (batch, bundle), bundle, [batch], out)
    gpu = write_lines(tmp_path / "gpu.jsonl",
                      [dict(l, device="cuda") for l in lines])
    refuses("experience '%s' was timed on device 'cuda', but bundle '%s' "
            "models device 'cpu' (meta.json \"measured_device\")" %
            (gpu, bundle), bundle, [gpu], out)
    few = write_lines(tmp_path / "few.jsonl", lines[:7])
    refuses("'%s' holds 7 timed sets; refining needs at least 10" % few,
            bundle, [few], out)
    same = write_lines(tmp_path / "same.jsonl", [lines[0]] * 12)
    with pytest.raises(ex.ExperienceError,
                       match=r"^12 timed sets \(1 distinct\) split into "):
        ex.refine_bundle(bundle, [same], out)
    missing = str(tmp_path / "none.jsonl")
    with pytest.raises(ex.ExperienceError,
                       match="^experience '%s' does not exist: plan with "
                       "this bundle" % missing):
        ex.refine_bundle(bundle, [missing], out)
    refuses("the calibration dataset and its pool go together: give both "
            "--data and --pool, or neither", bundle, [experience_file], out,
            data_path=data)
    # Where the refined bundle would go.
    refuses("refining '%s' in place replaces its compute.pt and meta.json "
            "(the old ones are kept in %s/): pass --force to do so, or --out "
            "DIR to write the refined bundle elsewhere" %
            (bundle, os.path.join(bundle, "before-refine")),
            bundle, [experience_file], bundle)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("x")
    full = str(tmp_path / "full")
    refuses("'%s' exists and is not an empty directory: choose another "
            "--out, or pass --force to replace its bundle" % full,
            bundle, [experience_file], full)
    shipped = os.path.join(built_tools.REPO, "models", "cpu-refined")
    with pytest.raises(ex.ExperienceError,
                       match="is under the source tree's models/"):
        ex.refine_bundle(bundle, [experience_file], shipped)
    assert not os.path.exists(shipped) and not os.path.exists(out)
    untrained = str(tmp_path / "untrained")
    cm.export_untrained(untrained, seed=0, devices=None, batch_size=1024)
    refuses("'%s' says \"trained\": False; refine a trained bundle "
            "(neuroshard.train or neuroshard.calibrate)" %
            os.path.join(untrained, "meta.json"), untrained,
            [experience_file], out)
    assert not os.path.exists(out)


def test_refine_command_line(calibration, experience_file, tmp_path,
                             capsys):
    bundle = str(tmp_path / "cpu-test")
    shutil.copytree(calibration[2], bundle)
    # Comm models travel unchanged with a refined copy.
    (tmp_path / "cpu-test" / "comm_fw.pt").write_bytes(b"fw")
    (tmp_path / "cpu-test" / "comm_bw.pt").write_bytes(b"bw")
    shutil.copy(experience_file, os.path.join(bundle, "experience.jsonl"))
    original = {name: open(os.path.join(bundle, name), "rb").read()
                for name in ("compute.pt", "meta.json")}
    # In place only with --force.
    assert calibrate.main(["--refine", bundle, "--epochs", "4"]) == 1
    assert "calibrate: error: refining '%s' in place" % bundle in \
        capsys.readouterr().err
    copy = str(tmp_path / "copy")
    assert calibrate.main(["--refine", bundle, "--out", copy, "--epochs",
                           "6"]) == 0
    out = capsys.readouterr().out
    assert "held-out experience (" in out and "of 80 sets): MAPE " in out
    assert "signed error -50.00% -> " in out
    assert "wrote the refined bundle to '%s'" % copy in out
    assert sorted(os.listdir(copy)) == ["comm_bw.pt", "comm_fw.pt",
                                        "compute.pt", "meta.json"]
    assert open(os.path.join(copy, "comm_fw.pt"), "rb").read() == b"fw"
    assert calibrate.main(["--refine", bundle, "--force", "--epochs",
                           "6"]) == 0
    assert "refined '%s' in place" % bundle in capsys.readouterr().out
    backup = os.path.join(bundle, "before-refine")
    for name, content in original.items():
        assert open(os.path.join(backup, name), "rb").read() == content
    meta = json.load(open(os.path.join(bundle, "meta.json")))
    assert meta["refined"]["experience"] == [
        os.path.abspath(os.path.join(bundle, "experience.jsonl"))]
    # Options of a calibration are not refinement's, and refinement's
    # options need --refine.
    with pytest.raises(SystemExit):
        calibrate.main(["--refine", bundle, "--samples", "30"])
    assert "--refine takes --experience" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        calibrate.main(["--out", copy, "--experience", experience_file])
    assert "--experience goes with --refine" in capsys.readouterr().err
    assert calibrate.main(["--refine", str(tmp_path / "nothing")]) == 1
    assert "bundle '%s' is not a directory" % (tmp_path / "nothing") in \
        capsys.readouterr().err


def test_experience_tasks_are_seeded_and_capped(small_pool_path):
    pool = tp.load_pool(small_pool_path)
    tasks = calibrate.experience_tasks(pool, 0, 6, memory_cap_gb=0.5,
                                       max_rows=200000)
    assert tasks == calibrate.experience_tasks(pool, 0, 6, 0.5, 200000)
    assert tasks != calibrate.experience_tasks(pool, 1, 6, 0.5, 200000)
    train_ids = {t["id"] for t in pool["tables"] if t["split"] == "train"}
    for task in tasks:
        assert task["devices"] == 4 and task["batch_size"] == 1024
        assert 1 <= len(task["tables"]) <= 60
        assert task["memory_gb"] <= 0.5 + 1 / 1024
        total = sum(tp.table_bytes(t) for t in task["tables"])
        assert 1.05 * total <= 4 * task["memory_gb"] * 2**30 <= \
            1.6 * total + 4 * 2**20
        names = [t["name"] for t in task["tables"]]
        assert len(set(names)) == len(names)
        for table in task["tables"]:
            assert table["rows"] <= 200000
            assert tp.table_bytes(table) <= 0.25 * 2**30
            assert int(table["name"].split("_p")[1]) in train_ids
    # Without a binding cap, the counts are those drawn: 10 to 60.
    loose = calibrate.experience_tasks(pool, 0, 6, memory_cap_gb=64.0)
    assert all(10 <= len(t["tables"]) <= 60 for t in loose)
    with pytest.raises(calibrate.CalibrateError,
                       match="no train table of the pool is under half"):
        calibrate.experience_tasks(pool, 0, 1, memory_cap_gb=1e-9)


def test_gather_experience_plans_with_measured_selection(
        small_pool_path, tmp_path, monkeypatch):
    pool = tp.load_pool(small_pool_path)
    calls = []

    def plan(task, **options):
        calls.append((task, options))
        return {"verification": {"sets": 5, "chosen": len(calls) % 2}}

    monkeypatch.setattr(_core, "plan", plan)
    monkeypatch.setattr(_core, "neural_cost_models_built", lambda: True)
    args = calibrate.argparse.Namespace(
        experience_tasks=3, seed=0, memory_cap_gb=1.0, max_rows=None,
        verify_seconds=0.5)
    log = calibrate.io.StringIO()
    clock = calibrate.Clock(60.0, log)
    path = str(tmp_path / "experience.jsonl")
    summary = calibrate.gather_experience(args, "BUNDLE", pool, path, clock,
                                          30.0)
    plans = summary.pop("plans")
    assert summary == {"planned": 3, "changed": 2, "sets": 15,
                       "skipped": None}
    tasks = calibrate.experience_tasks(pool, 0, 3, 1.0)
    # Each task with its plan, for the host's selection noise.
    assert [task for task, _ in plans] == tasks
    assert [plan["verification"]["chosen"] for _, plan in plans] == [1, 0, 1]
    for (task, options), expected in zip(calls, tasks):
        assert task == {"batch_size": 1024, "tables": expected["tables"]}
        assert options == {"devices": 4, "memory_gb": expected["memory_gb"],
                           "cost_model": "BUNDLE", "device_kind": "cpu",
                           "verify_top": 4, "verify_seconds": 0.5,
                           "experience": path}
    assert "calibrate: [experience] experience-0: " in log.getvalue()
    assert "measured selection chose candidate 2" in log.getvalue()

    # A task without a plan is reported and skipped; a binding that cannot
    # time plans skips the stage.
    def no_plan(task, **options):
        raise _core.NeuroShardError("no valid plan: tables do not fit")

    monkeypatch.setattr(_core, "plan", no_plan)
    summary = calibrate.gather_experience(args, "BUNDLE", pool, path, clock,
                                          30.0)
    assert summary["planned"] == 0 and summary["skipped"] is None
    assert "no plan: no valid plan: tables do not fit" in log.getvalue()

    def old_plan(task, **options):
        raise TypeError("plan() got an unexpected keyword argument "
                        "'verify_top'")

    monkeypatch.setattr(_core, "plan", old_plan)
    summary = calibrate.gather_experience(args, "BUNDLE", pool, path, clock,
                                          30.0)
    assert summary["skipped"].startswith("neuroshard.plan cannot time plans")


def test_errors_by_the_sets_footprint_over_the_cache(tmp_path, capsys):
    # one_line()'s set holds 1000 x 16 + 50 x 8 floats = 65600 bytes.
    small, large = one_line(), one_line()
    large["tables"][0]["rows"] = 4000000    # 256 MB: 3906x a 64 KiB cache
    large["predicted_ms"], large["cost_ms"] = 3.0, 2.0    # +50%
    small["predicted_ms"], small["cost_ms"] = 1.5, 2.0    # -25%
    lines = [small, small, large]
    rows = ex.error_by_footprint(lines, 65536.0)
    assert [(r["low"], r["high"], r["sets"]) for r in rows] == [
        (1.0, 4.0, 2), (64.0, np.inf, 1), (None, None, 3)]
    assert rows[0]["signed"] == pytest.approx(-0.25)
    assert rows[1]["signed"] == pytest.approx(0.5)
    assert rows[2]["signed"] == pytest.approx((-0.25 - 0.25 + 0.5) / 3)
    assert rows[2]["absolute"] == pytest.approx(1.0 / 3)
    with pytest.raises(ex.ExperienceError, match="positive number of bytes"):
        ex.error_by_footprint(lines, 0)

    path = write_lines(tmp_path / "e.jsonl", lines)
    assert ex.main([path, "--llc-mib", "0.0625"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("| set weights / last-level cache (0.0625 MiB) |")
    assert out[2] == "| 1x to 4x | 2 | -25.00% | 25.00% |"
    assert out[3] == "| 64x and more | 1 | +50.00% | 50.00% |"
    assert out[4] == "| all | 3 | +0.00% | 33.33% |"
    (tmp_path / "none.jsonl").write_text("\n")
    assert ex.main([str(tmp_path / "none.jsonl"), "--llc-mib", "32"]) == 1
    assert "hold no timed sets" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        ex.main([path, "--llc-mib", "-1"])
