#===- test_search_speed.py - Tests of the planning-time benchmark ---------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#

import json
import os

import pytest

from built_tools import tool
from neuroshard_bench import search_speed


def test_settings_read_tables_devices_model_and_target():
    assert search_speed.parse_setting("60x4:default:1") == \
        (60, 4, "default", 1.0)
    assert search_speed.parse_setting("8x2:analytical") == \
        (8, 2, "analytical", None)
    for bad in ["60x4", "60:default", "0x4:analytical", "ax4:default:1"]:
        with pytest.raises(ValueError):
            search_speed.parse_setting(bad)


def test_devices_keep_half_their_memory_free():
    small = {"tables": [{"rows": 1000, "dim": 16}]}
    assert search_speed.device_gb(small, 4) == 80
    # 400 GB of f32 weights on 4 devices: 200 GB each with half free.
    big = {"tables": [{"rows": 400 * 2 ** 28, "dim": 1}]}
    assert search_speed.device_gb(big, 4) == 240


def test_tasks_are_drawn_from_the_mix_by_seed():
    mix = [{"name": "a", "rows": 10, "dim": 4, "pooling_factor": 1.0},
           {"name": "b", "rows": 20, "dim": 8, "pooling_factor": 2.0}]
    one = search_speed.draw_task(mix, 5, 3)
    assert one == search_speed.draw_task(mix, 5, 3)
    assert [t["name"] for t in one["tables"]] == ["t0", "t1", "t2", "t3", "t4"]
    assert all(t["rows"] in (10, 20) for t in one["tables"])


def test_prints_a_row_per_setting_against_its_target(tmp_path, capsys,
                                                       monkeypatch):
    workloads = tmp_path / "workloads"
    workloads.mkdir()
    (workloads / "mix.json").write_text(json.dumps({"tables": [
        {"name": "hot", "rows": 100000, "dim": 64, "pooling_factor": 20.0},
        {"name": "cold", "rows": 5000, "dim": 16, "pooling_factor": 1.0}]}))
    out = tmp_path / "rows.json"
    monkeypatch.setattr("sys.argv", [
        "search_speed", "--workloads", str(workloads),
        "--settings", "6x2:analytical:600", "--repeats", "1",
        "--tools-dir", os.path.dirname(tool("neuroshard-plan")),
        "--json", str(out)])
    assert search_speed.main() == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].split()[:3] == ["setting", "model", "GB/dev"]
    row = lines[2].split()
    assert row[:2] == ["6x2", "analytical"] and row[5:7] == ["600", "yes"]
    rows = json.loads(out.read_text())
    assert rows[0]["new"]["cost_ms"] > 0 and rows[0]["new"]["gap"] >= 0


def test_an_empty_workloads_directory_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr("sys.argv", [
        "search_speed", "--workloads", str(tmp_path)])
    with pytest.raises(SystemExit):
        search_speed.main()
