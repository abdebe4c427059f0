#===- test_selection_noise_experiments.py - The selection-noise commands --===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#

import json
import math
import os

import pytest

from neuroshard_bench import selection_noise as bsn


def test_command_refuses_a_bundle_of_another_machine(foreign_cpu_bundle, capsys):
    assert bsn.main([foreign_cpu_bundle, "--tasks", "1"]) == 1
    err = capsys.readouterr().err
    assert "selection_noise: error: bundle '%s' was measured on" % foreign_cpu_bundle \
        in err
    assert "not on this machine" in err


@pytest.mark.parametrize("argv, message", [
    (["--views", "1"], "--views at least 2"),
    (["--tasks", "0"], "--tasks must be at least 1"),
    (["--verify-seconds", "-1"], "--verify-seconds must be a finite"),
])
def test_command_refuses_bad_options(foreign_cpu_bundle, argv, message, capsys):
    with pytest.raises(SystemExit):
        bsn.main([foreign_cpu_bundle] + argv)
    assert message in capsys.readouterr().err


def _campaign():
    """An evaluation's setting with one verified task: the table-wise plan
    (the incumbent), lookup-greedy (raced 3 rounds), size-greedy (dropped
    after 1 round) and a search state (not measured by the evaluation)."""
    verification = {"incumbent": 0, "round_spread": 0.1, "candidates": [
        {"origin": "table-greedy-grid", "rounds": 3, "mean_ratio": 1.0},
        {"origin": "lookup-greedy", "rounds": 3, "mean_ratio": 0.8},
        {"origin": "size-greedy", "rounds": 1, "mean_ratio": 1.5},
        {"origin": "neuroshard", "rounds": 3, "mean_ratio": 0.9}]}
    return {"results": {
        "neuroshard-verified": [{"verification": verification}],
        "table-greedy-grid": [{"measured_runs_ms": [2.0, 2.0, 2.0]}],
        "lookup-greedy": [{"measured_runs_ms": [2.0, 1.8, 2.2]}],
        "size-greedy": [{"measured_runs_ms": [3.0, 3.0, 3.0]}]}}


def test_campaigns_compare_with_the_evaluations_runs(foreign_cpu_bundle, tmp_path,
                                                     capsys):
    found = bsn.campaign_comparisons(_campaign()["results"])
    assert [c["origin"] for c in found] == ["lookup-greedy"]
    logs = [0.0, math.log(0.9), math.log(1.1)]
    mean = sum(logs) / 3
    assert found[0]["d"] == pytest.approx(math.log(0.8) - mean)
    assert found[0]["round_var"] == pytest.approx(0.01 / 3)
    assert found[0]["view_var"] == pytest.approx(
        sum((x - mean) ** 2 for x in logs) / 2 / 3)

    # Four settings of it, recorded in the bundle.
    path = tmp_path / "campaign.json"
    path.write_text(json.dumps({"4dev": _campaign(), "8dev": _campaign(),
                                "acceptance": {}}))
    assert bsn.main(["--campaign", str(path), "--campaign", str(path),
                    foreign_cpu_bundle, "--write"]) == 0
    out = capsys.readouterr().out
    assert "campaign.json 4dev: selection noise" in out
    assert "all: selection noise" in out and "over 4 candidates" in out
    with open(os.path.join(foreign_cpu_bundle, "meta.json")) as f:
        noise = json.load(f)["selection_noise"]
    assert noise["comparisons"] == 4
    assert noise["campaigns"] == ["campaign.json", "campaign.json"]

    # Too few to record, and --write without a bundle.
    assert bsn.main(["--campaign", str(path)]) == 1
    assert "2 candidates could be compared (at least 4 are needed)" in \
        capsys.readouterr().err
    with pytest.raises(SystemExit):
        bsn.main(["--campaign", str(path), "--write"])
    assert "--campaign --write records the figures in a bundle" in \
        capsys.readouterr().err
