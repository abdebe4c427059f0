#===- test_batch_scaling.py - Tests of the batch-scaling curve -----------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#

import json
import math
import os
import stat
import statistics
import sys

import pytest

from neuroshard import _core
from neuroshard import batch_scaling as bs
from neuroshard import collect
from neuroshard import cost_model as cm
from neuroshard import metrics
from neuroshard import table_pool as tp

import built_tools
import conftest

CURVE = {"reference_batch": 1024, "batch_sizes": [256, 1024, 4096],
         "ratios": [0.25, 1.0, 4.4]}
# Options of a quick run: few sets, three curve batch sizes, one to
# validate at.
QUICK = ["--sets", "4", "--batch-sizes", "256,1024,4096",
         "--validate-batch-sizes", "2048", "--validate-sets", "3",
         "--iters", "10", "--warmup", "1"]


def test_scale_ratio_at_and_between_the_points():
    for batch, ratio in zip(CURVE["batch_sizes"], CURVE["ratios"]):
        assert bs.scale_ratio(CURVE, batch) == ratio
    # Linear in (log B, log r): halfway between 1024 and 4096 in log B is
    # halfway in log r.
    assert bs.scale_ratio(CURVE, 2048) == pytest.approx(math.sqrt(4.4))
    assert bs.scale_ratio(CURVE, 512) == pytest.approx(0.5)
    slope = math.log(4.4) / math.log(4)
    assert bs.scale_ratio(CURVE, 3000) == pytest.approx(
        (3000 / 1024) ** slope)


def test_scale_ratio_extrapolates_the_end_segments():
    # Above the curve: the last segment's slope goes on.
    assert bs.scale_ratio(CURVE, 16384) == pytest.approx(4.4 * 4.4)
    # Below: the first segment's (slope 1 here).
    assert bs.scale_ratio(CURVE, 64) == pytest.approx(0.0625)
    assert bs.scale_ratio(CURVE, 1) == pytest.approx(1 / 1024)


def test_scale_ratio_of_one_point_is_proportional():
    single = {"reference_batch": 1024, "batch_sizes": [1024],
              "ratios": [1.0]}
    assert bs.scale_ratio(single, 1024) == 1.0
    assert bs.scale_ratio(single, 4096) == 4.0
    assert bs.scale_ratio(single, 256) == 0.25
    with pytest.raises(ValueError, match="positive"):
        bs.scale_ratio(CURVE, 0)
    with pytest.raises(ValueError, match="as many ratios"):
        bs.scale_ratio(dict(CURVE, ratios=[1.0]), 2048)


def test_check_curve_names_a_non_monotone_pair():
    bs.check_curve([256, 1024, 4096], [0.25, 1.0, 4.4], 1024)
    with pytest.raises(bs.ScalingError) as error:
        bs.check_curve([256, 1024, 4096, 16384], [0.25, 1.0, 4.4, 4.3],
                       1024, sets=48)
    message = str(error.value)
    assert "r(4096) = 4.4 but r(16384) = 4.3 (medians over 48 sets)" in \
        message and "more --iters" in message
    with pytest.raises(bs.ScalingError, match=r"r\(256\) = 1 but r\(1024\)"):
        bs.check_curve([256, 1024], [1.0, 1.0], 1024)
    with pytest.raises(bs.ScalingError, match="do not include the "
                       "reference batch 2048"):
        bs.check_curve([256, 1024], [0.25, 1.0], 2048)
    with pytest.raises(bs.ScalingError, match="exactly 1"):
        bs.check_curve([256, 1024], [0.25, 1.01], 1024)
    with pytest.raises(bs.ScalingError, match="finite and positive"):
        bs.check_curve([256, 1024], [-0.5, 1.0], 1024)


@pytest.fixture
def host_tool(fake_tool, monkeypatch):
    """The fake timing tool, reporting this machine's CPU model."""
    monkeypatch.setenv("FAKE_TOOL_HARDWARE", _core.host_cpu_model())
    return fake_tool


def make_bundle(path, trained=False, batch_size=1024):
    """An untrained bundle that says it was measured on this machine."""
    cm.export_untrained(str(path), seed=0, devices=None,
                        batch_size=batch_size)
    meta_path = path / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta.update(hardware=_core.host_cpu_model(), trained=trained)
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    return str(path)


def read_meta(bundle):
    with open(os.path.join(bundle, "meta.json")) as f:
        return json.load(f)


def read_log(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def test_curve_is_measured_and_written(tmp_path, small_pool_path, host_tool,
                                       monkeypatch, capsys):
    log = tmp_path / "tool.log"
    monkeypatch.setenv("FAKE_TOOL_LOG", str(log))
    bundle = make_bundle(tmp_path / "b")
    before = read_meta(bundle)
    assert bs.main(["--bundle", bundle, "--pool", small_pool_path, "--tool",
                    host_tool] + QUICK) == 0
    captured = capsys.readouterr()
    meta = read_meta(bundle)
    # Every other field, and their order, stay as they were.
    assert list(meta) == list(before) + ["batch_scaling"]
    assert {k: meta[k] for k in before} == before
    with open(os.path.join(bundle, "meta.json")) as f:
        assert f.read().startswith('{\n  "format"')
    scaling = meta["batch_scaling"]
    assert list(scaling) == ["reference_batch", "batch_sizes", "ratios",
                             "sets", "iters", "validation"]
    assert scaling["reference_batch"] == 1024
    assert scaling["batch_sizes"] == [256, 1024, 4096]
    assert scaling["ratios"][1] == 1.0
    assert 0 < scaling["ratios"][0] < 1.0 < scaling["ratios"][2]
    assert (scaling["sets"], scaling["iters"]) == (4, 10)
    validation = scaling["validation"]
    # An untrained bundle's network is not worth a prediction MAPE.
    assert validation.keys() == {"batch_sizes", "sets", "scaling_mape"}
    assert validation["batch_sizes"] == [2048] and validation["sets"] == 3
    # The figures are those of the fake tool's known cost function.
    pool = tp.load_pool(small_pool_path)
    cap = int(bs.DEFAULT_MEMORY_CAP_GB * 2**30)
    curve_sets = bs.draw_sets(pool, 0, bs._CURVE_KEY, 4, cap, "train")
    test_sets = bs.draw_sets(pool, 0, bs._VALIDATION_KEY, 3, cap, "test")
    for batch, ratio in zip(scaling["batch_sizes"], scaling["ratios"]):
        assert ratio == pytest.approx(statistics.median(
            fake_cost(pool, k, s, batch) / fake_cost(pool, k, s, 1024)
            for k, s in curve_sets.items()), rel=1e-5)
    ratio = bs.scale_ratio(scaling, 2048)
    assert validation["scaling_mape"][0] == pytest.approx(metrics.mape(
        [fake_cost(pool, k, s, 1024) * ratio for k, s in test_sets.items()],
        [fake_cost(pool, k, s, 2048) for k, s in test_sets.items()]),
        rel=1e-4)

    # The reference first, each batch size in one run of the tool, the
    # curve on train-split sets other than the training samples', the
    # validation on test-split sets.
    runs = read_log(log)
    batches = [int(r["argv"][r["argv"].index("--batch-size") + 1])
               for r in runs]
    assert batches == [1024, 256, 4096, 1024, 2048]
    split = {t["id"]: t["split"] for t in pool["tables"]}
    for run in runs:
        argv = run["argv"]
        assert argv[argv.index("--device") + 1] == "cpu"
        assert argv[argv.index("--iters") + 1] == "10"
        assert argv[argv.index("--warmup") + 1] == "1"
    assert all(split[t] == "train" for s in curve_sets.values() for t in s)
    assert all(split[t] == "test" for s in test_sets.values() for t in s)
    assert [collect.sample_set(pool, 0, k, cap) for k in range(4)] != \
        list(curve_sets.values())
    assert "r(B)" in captured.out and "updated %s" % os.path.join(
        bundle, "meta.json") in captured.out
    assert "batch_scaling: curve batch 4096 (3 of 5): 4/4 sets" in \
        captured.err and "left" in captured.err


def test_prediction_mape_of_a_trained_bundle(tmp_path, small_pool_path,
                                             host_tool, capsys):
    bundle = make_bundle(tmp_path / "b", trained=True)
    assert bs.main(["--bundle", bundle, "--pool", small_pool_path, "--tool",
                    host_tool, "--dry-run"] + QUICK) == 0
    out = capsys.readouterr().out
    assert "prediction MAPE" in out and "dry run" in out
    assert "batch_scaling" not in read_meta(bundle)
    assert bs.main(["--bundle", bundle, "--pool", small_pool_path, "--tool",
                    host_tool] + QUICK) == 0
    scaling = read_meta(bundle)["batch_scaling"]
    validation = scaling["validation"]
    # prediction = network at the reference x r(B), against the measured
    # costs, which the fake tool computes deterministically.
    pool = tp.load_pool(small_pool_path)
    sets = bs.draw_sets(pool, 0, bs._VALIDATION_KEY, 3,
                        int(bs.DEFAULT_MEMORY_CAP_GB * 2**30), "test")
    network = bs.network_predictions(bundle, pool, sets)
    measured = [fake_cost(pool, k, sets[k], 2048) for k in sorted(sets)]
    expected = metrics.mape([network[k] * bs.scale_ratio(scaling, 2048)
                             for k in sorted(sets)], measured)
    assert validation["prediction_mape"][0] == pytest.approx(expected,
                                                             rel=1e-4)


def fake_cost(pool, set_id, tables, batch):
    """The fake tool's cost of a set (conftest.FAKE_COST)."""
    by_id = {t["id"]: t for t in pool["tables"]}
    return conftest.fake_set_ms(by_id, set_id, tables, batch)


def test_the_real_tool_measures_an_increasing_curve(tmp_path):
    """End to end with neuroshard-collect on a small pool (rows capped so
    that it takes seconds)."""
    tool = built_tools.tool("neuroshard-collect")
    pool = tmp_path / "pool.json"
    pool.write_text(json.dumps(tp.generate_pool(seed=0, base_tables=20)))
    bundle = make_bundle(tmp_path / "b")
    assert bs.main(["--bundle", bundle, "--pool", str(pool), "--tool", tool,
                    "--sets", "3", "--batch-sizes", "256,1024,4096",
                    "--validate-batch-sizes", "2048", "--validate-sets", "3",
                    "--iters", "10", "--warmup", "1", "--max-rows",
                    "20000"]) == 0
    scaling = read_meta(bundle)["batch_scaling"]
    ratios = scaling["ratios"]
    assert ratios[1] == 1.0 and 0 < ratios[0] < 1.0 < ratios[2]
    assert len(scaling["validation"]["scaling_mape"]) == 1


def write_tool(path, script):
    path.write_text("#!%s\n%s" % (sys.executable, script))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


# A timing tool whose costs fall from batch 1024 to 4096.
NOISY_TOOL = r'''
import json, sys
argv = sys.argv[1:]
batch = int(argv[argv.index("--batch-size") + 1])
for line in open(argv[argv.index("--sets") + 1]):
    s = json.loads(line)
    cost = {256: 0.3, 1024: 1.0, 4096: 0.9}.get(batch, 2.0)
    print(json.dumps({"id": s["id"], "cost_ms": cost, "min_ms": cost,
                      "max_ms": cost, "runs": 10, "device": "cpu",
                      "hardware": HARDWARE, "batch_size": batch}))
'''


def test_errors_are_one_line(tmp_path, small_pool_path, host_tool,
                             monkeypatch, capsys):
    bundle = make_bundle(tmp_path / "b")

    def fails(message, *options, bundle=bundle, pool=small_pool_path,
              tool=host_tool):
        assert bs.main(["--bundle", bundle, "--pool", pool, "--tool", tool]
                       + QUICK + list(options)) == 1
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert err.startswith("batch_scaling: error: ") and message in err, \
            err
        assert "Traceback" not in err

    fails("cannot read pool '%s'" % (tmp_path / "missing.json"),
          pool=str(tmp_path / "missing.json"))
    other = make_bundle(tmp_path / "other")
    meta = read_meta(other)
    meta["hardware"] = "Some Other CPU"
    (tmp_path / "other" / "meta.json").write_text(json.dumps(meta))
    fails("bundle '%s' was measured on 'Some Other CPU', but this machine "
          "is '%s'" % (other, _core.host_cpu_model()), bundle=other)
    fails("must include the bundle's reference batch 1024",
          "--batch-sizes", "256,4096")
    fails("--validate-batch-sizes 4096 are also curve batch sizes",
          "--validate-batch-sizes", "2048,4096")
    monkeypatch.setenv("FAKE_TOOL_FAIL_ID", "2")
    fails("failed (exit status 3) after 2 of 4 sets: neuroshard-collect: "
          "error: cannot allocate set 2")
    monkeypatch.delenv("FAKE_TOOL_FAIL_ID")
    noisy = write_tool(tmp_path / "noisy", NOISY_TOOL.replace(
        "HARDWARE", json.dumps(_core.host_cpu_model())))
    fails("the batch-scaling curve does not increase: r(1024) = 1 but "
          "r(4096) = 0.9 (medians over 4 sets)", tool=noisy)
    fails("is not a directory", bundle=str(tmp_path / "nothing"))
    # Nothing of the failed runs reached meta.json.
    assert "batch_scaling" not in read_meta(bundle)
