#===- test_torchrec_plan.py - Tests of the TorchRec plan helper -----------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#

import json
import subprocess
import sys

import pytest

from built_tools import REPO, tool
from neuroshard import torchrec_plan as trp

TASK = REPO + "/test/neuroshard-plan/Inputs/torchrec.json"


@pytest.fixture
def plan_file(tmp_path):
    path = tmp_path / "plan.json"
    subprocess.run([tool("neuroshard-plan"), TASK, "--devices", "2",
                    "--memory-gb", "0.3", "--cost-model", "analytical",
                    "--sharding-types", "table_wise,column_wise",
                    "--format", "torchrec", "--output", str(path)],
                   check=True)
    return path


def test_row_wise_and_data_parallel_tables(tmp_path, fake_torchrec):
    # The searched DCNv2 plan cuts cat_20 into row blocks; its tiny cat_5
    # is copied to every device here, and the plan priced and exported.
    task = [REPO + "/examples/mlperf-dcnv2.json", "--devices", "8",
            "--memory-gb", "80", "--reserved-memory", "0.15",
            "--cost-model", "analytical"]
    searched = tmp_path / "searched.json"
    subprocess.run([tool("neuroshard-plan")] + task +
                   ["--output", str(searched)], check=True)
    with open(searched) as f:
        shards = [s for s in json.load(f)["shards"] if s["table"] != "cat_5"]
    shards += [{"table": "cat_5", "col_begin": 0, "col_end": 128,
                "device": d, "replica": True} for d in range(8)]
    given = tmp_path / "given.json"
    given.write_text(json.dumps({"devices": 8, "shards": shards}))
    path = tmp_path / "dcnv2.json"
    subprocess.run([tool("neuroshard-plan")] + task +
                   ["--price", str(given), "--format", "torchrec",
                    "--output", str(path)], check=True)
    plan = trp.load(str(path))
    kinds = {t["sharding_type"] for t in plan["tables"].values()}
    assert {"row_wise", "data_parallel"} <= kinds
    shardings = trp.to_parameter_shardings(plan)
    for name, table in plan["tables"].items():
        sharding = shardings[name]
        assert sharding.sharding_type == table["sharding_type"]
        if table["sharding_type"] == "data_parallel":
            assert sharding.sharding_spec is None
            assert sorted(sharding.ranks) == list(range(8))
        elif table["sharding_type"] == "row_wise":
            pieces = sharding.sharding_spec.shards
            rows = [p.shard_offsets[0] for p in pieces]
            assert rows == sorted(rows) and rows[0] == 0
            assert sum(p.shard_sizes[0] for p in pieces) == 40000000


def test_objects_follow_the_plan(plan_file, fake_torchrec):
    plan = trp.load(str(plan_file))
    shardings = trp.to_parameter_shardings(plan, {"sparse.item_id": "item"})
    assert sorted(shardings) == ["item", "sparse.user_id"]
    user = shardings["sparse.user_id"]
    assert user.sharding_type == "column_wise"
    assert user.compute_kernel == "fused"
    pieces = user.sharding_spec.shards
    assert [p.shard_offsets[1] for p in pieces] == [0, pieces[0].shard_sizes[1]]
    assert sum(p.shard_sizes[1] for p in pieces) == 128
    assert [p.placement for p in pieces] == \
        ["rank:%d/cuda:%d" % (r, r) for r in user.ranks]
    item = shardings["item"]
    assert item.sharding_type == "table_wise" and len(item.ranks) == 1
    assert item.sharding_spec.shards[0].shard_sizes == [5000, 16]
    whole = trp.to_sharding_plan(plan, "sparse.ebc")
    assert list(whole.plan) == ["sparse.ebc"]


def test_without_torchrec_the_error_says_so(plan_file, monkeypatch):
    monkeypatch.setitem(sys.modules, "torchrec", None)
    with pytest.raises(trp.TorchRecPlanError, match="TorchRec is not "
                       "importable"):
        trp.to_parameter_shardings(trp.load(str(plan_file)))


@pytest.mark.parametrize("edit, message", [
    (lambda p: p.update(format="other"), "not a NeuroShard TorchRec plan"),
    (lambda p: p["tables"]["sparse.item_id"].update(sharding_type="grid"),
     "sharding_type must be one of table_wise, column_wise, row_wise"),
    (lambda p: p["tables"]["sparse.item_id"].update(
        sharding_type="data_parallel"), "a replica on every rank"),
    (lambda p: p["tables"]["sparse.user_id"]["ranks"].append(0),
     "needs one rank per shard"),
    (lambda p: p["tables"]["sparse.user_id"]["shards"][1]
     ["shard_offsets"].__setitem__(1, 8), "shard 1 starts at column 8"),
    (lambda p: p["tables"]["sparse.item_id"]["ranks"].__setitem__(0, 7),
     "shard 0 is malformed"),
])
def test_broken_files_are_refused(plan_file, tmp_path, edit, message):
    plan = json.loads(plan_file.read_text())
    edit(plan)
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(plan))
    with pytest.raises(trp.TorchRecPlanError, match=message):
        trp.load(str(broken))


def test_unreadable_files_are_refused(tmp_path):
    with pytest.raises(trp.TorchRecPlanError, match="cannot read"):
        trp.load(str(tmp_path / "missing.json"))
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(trp.TorchRecPlanError, match="not JSON"):
        trp.load(str(tmp_path / "bad.json"))
