#===- test_gpu_calibrate.py - The GPU calibration's manifests and samples ===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""The manifests neuroshard.gpu_calibrate writes for the runner and the
checks on what the runner returns. test/neuroshard-cuda-runner/
gpu-calibrate.test runs the three steps end to end under the runner's
emulation."""

import json

import pytest

from neuroshard import _core
from neuroshard import gpu_calibrate as gc
from neuroshard import table_pool as tp

TEMPLATE = """neuroshard-cuda-manifest 2
module kernels.cubin cubin sm_90
kernels f32 f64 b32 b64
run 128 1024 0 0.01
table t0 10 4 1 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
lookup 0 0
device 0 i32
shard 0 0 4 sum
"""


@pytest.fixture
def template(tmp_path):
    path = tmp_path / "template.txt"
    path.write_text(TEMPLATE)
    return gc.read_template(str(path))


@pytest.fixture
def pool():
    return tp.generate_pool(3, 4, sample_bags=256)


def test_manifest_has_one_launch_per_set(template, pool):
    sets = {7: [0, 7], 2: [13]}
    text = gc.manifest_text(template, pool, sets, 256, 5)
    lines = text.splitlines()
    assert lines[1] == "module ../kernels.cubin cubin sm_90"
    assert lines[2] == "kernels f32 f64 b32 b64"
    # The template's threads and learning rate; the batch and seed asked.
    assert lines[3] == "run 128 256 5 0.01"
    tables = [l.split() for l in lines if l.startswith("table ")]
    assert [t[1] for t in tables] == ["p0", "p7", "p13"]
    by_id = {t["id"]: t for t in pool["tables"]}
    for words in tables:
        t = by_id[int(words[1][1:])]
        assert int(words[2]) == t["rows"] and int(words[3]) == t["dim"]
        # At the pool's own batch the histogram is the pool's.
        assert [float(b) for b in words[5:]] == pytest.approx(
            t["access_hist"])
    launches = text.split("device ")[1:]
    assert [l.split()[0] for l in launches] == ["2", "7"]
    assert text.startswith("neuroshard-cuda-manifest 3\n")

    def whole(lookup, table_id):
        t = by_id[table_id]
        return "shard %d 0 %d 0 %d sum" % (lookup, t["dim"], t["rows"])

    assert whole(2, 13) in launches[0]
    assert whole(0, 0) in launches[1]
    assert whole(1, 7) in launches[1]


def test_manifest_holds_row_pieces_as_rows_of_the_tables_lookup(template,
                                                                pool):
    by_id = {t["id"]: t for t in pool["tables"]}
    rows = by_id[7]["rows"]
    sets = {0: [{"table": 7, "rows": [0, rows // 2]}, 13],
            1: [{"table": 7, "rows": [rows // 2, rows]}, 7]}
    text = gc.manifest_text(template, pool, sets, 256, 5)
    # One table and one lookup per pool table, whichever rows a set takes.
    assert [l.split()[1] for l in text.splitlines()
            if l.startswith("table ")] == ["p7", "p13"]
    launches = text.split("device ")[1:]
    dim = by_id[7]["dim"]
    assert launches[0].splitlines()[1:] == [
        "shard 0 0 %d 0 %d sum" % (dim, rows // 2),
        "shard 1 0 %d 0 %d sum" % (by_id[13]["dim"], by_id[13]["rows"])]
    assert launches[1].splitlines()[1:] == [
        "shard 0 0 %d %d %d sum" % (dim, rows // 2, rows),
        "shard 0 0 %d 0 %d sum" % (dim, rows)]


def test_manifest_carries_histograms_to_its_batch(template, pool):
    text = gc.manifest_text(template, pool, {0: [0]}, 64, 0)
    words = [l for l in text.splitlines() if l.startswith("table ")][0]
    table = pool["tables"][0]
    expected = _core.rescale_access_histogram(
        table["access_hist"], table["rows"], table["pooling_factor"], 256, 64)
    assert [float(b) for b in words.split()[5:]] == pytest.approx(expected)


def test_template_must_be_a_manifest(tmp_path):
    path = tmp_path / "other.txt"
    path.write_text("hello\n")
    with pytest.raises(gc.GPUCalibrateError, match="is not a launch manifest"):
        gc.read_template(str(path))
    path.write_text("neuroshard-cuda-manifest 2\nmodule k.cubin cubin sm_90\n")
    with pytest.raises(gc.GPUCalibrateError,
                       match="has no kernels or run record"):
        gc.read_template(str(path))
    with pytest.raises(gc.GPUCalibrateError, match="cannot read"):
        gc.read_template(str(tmp_path / "missing.txt"))


def _line(**fields):
    line = {"id": 3, "cost_ms": 1.5, "min_ms": 1.4, "max_ms": 1.6,
            "runs": 12, "device": "cuda", "hardware": "GPU",
            "batch_size": 1024, "l2_bytes": 1 << 20, "tables": 2}
    line.update(fields)
    return json.dumps(line)


@pytest.mark.parametrize("line, message", [
    (_line(id=4), "set 4 was not asked for"),
    (_line(tables=3), "set 3 was timed with 3 table\\(s\\) at batch 1024, "
                      "but it holds 2"),
    (_line(batch_size=512), "at batch 512, but it holds 2 table\\(s\\) and "
                            "was asked at batch 1024"),
    (json.dumps({"id": 3, "cost_ms": 1.0}), "has no \"min_ms\""),
    ("[1, 2]", "not a result of the runner"),
])
def test_runner_samples_are_checked(tmp_path, line, message):
    path = tmp_path / "samples.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(gc.GPUCalibrateError, match=message):
        gc.read_runner_samples(str(path), {3: [1, 2]}, 1024)


def test_runner_samples_by_id(tmp_path):
    path = tmp_path / "samples.jsonl"
    path.write_text(_line() + "\n")
    assert gc.read_runner_samples(str(path), {3: [1, 2]},
                                  1024)[3]["cost_ms"] == 1.5
