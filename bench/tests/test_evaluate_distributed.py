#===- test_evaluate_distributed.py - Tests of measured plan runs ----------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#

import shutil

import pytest

from built_tools import tool
from neuroshard_bench import evaluate_distributed as evd


def row(task, algorithm, predicted, step):
    return {"task": task, "algorithm": algorithm, "predicted_ms": predicted,
            "step_ms": step, "max_compute_ms": step / 2,
            "exchange_ms": step / 4}


def test_summary_averages_over_common_tasks():
    # lookup-greedy has no plan for task b.
    rows = [row("a", "neuroshard", 1.0, 2.0),
            row("a", "lookup-greedy", 2.0, 4.0),
            row("b", "neuroshard", 3.0, 3.0)]
    s = evd.summarise(rows, ["neuroshard", "lookup-greedy"])
    assert s["common_tasks"] == 1 and s["tasks"] == 2
    mine = s["algorithms"]["neuroshard"]
    assert mine["plans"] == 2 and mine["predicted_ms"] == 1.0
    assert mine["measured_ms"] == 2.0 and mine["error_percent"] == 50.0
    assert s["algorithms"]["lookup-greedy"]["plans"] == 1


def test_results_block_replaces_only_its_own(tmp_path):
    path = tmp_path / "results.md"
    path.write_text("# Results\nkept\n")
    summary = evd.summarise([row("a", "neuroshard", 1.0, 2.0)],
                            ["neuroshard"])
    evd.write_block(str(path), evd.markdown(summary, "cmd 1", "m"))
    evd.write_block(str(path), evd.markdown(summary, "cmd 2", "m"))
    text = path.read_text()
    assert text.startswith("# Results\nkept\n")
    assert text.count(evd.RESULTS_BEGIN) == 1 and "cmd 2" in text
    assert "| neuroshard | 1 / 1 | 1.0000 | 2.0000 |" in text


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun")
def test_one_task_planned_and_measured_on_two_ranks(tmp_path, monkeypatch):
    opt, run = tool("neuroshard-opt"), tool("neuroshard-run")
    hist = [0.6, 0.4] + [0.0] * 15
    task = {"name": "tiny", "devices": 2, "memory_gb": 1.0,
            "batch_size": 64,
            "tables": [{"name": "a", "rows": 300, "dim": 32,
                        "pooling_factor": 3.0, "access_hist": hist},
                       {"name": "b", "rows": 200, "dim": 16,
                        "pooling_factor": 2.0, "access_hist": hist}]}
    module = tmp_path / "tiny.mlir"
    module.write_text(evd.module_text(task))
    planned = evd.shard(opt, str(module), "neuroshard", "analytical",
                        str(tmp_path), "tiny")
    assert planned["plan"]["devices"] == 2 and planned["plan"]["cost_ms"] > 0
    # Open MPI refuses root unless told it is wanted (CI runs as root).
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    measured = evd.measure(["mpirun"], run, planned["module"], 2, warmup=0,
                           iters=2)
    assert measured["step_ms"] > 0 and len(measured["per_rank"]) == 2
    assert measured["step_ms"] >= measured["exchange_ms"]
