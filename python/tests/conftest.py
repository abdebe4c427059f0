#===- conftest.py - Shared fixtures of the Python tests -------------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#

import dataclasses
import json
import os
import shutil
import stat
import subprocess
import sys
import types
from typing import List

import pytest

from neuroshard import table_pool as tp

# A stand-in for the C++ timing tool with its exact command-line interface
# (python/neuroshard/collect.py). Its "measurement" is a known function of
# the tables' statistics (a row piece's as the cost model sees it): a
# roofline-like byte count in which hot rows are
# cheaper and narrow rows pay a penalty, summed over the set, plus a launch
# cost and a deterministic +-1% jitter per set. Environment knobs let the
# tests make it fail: FAKE_TOOL_FAIL_ID (exit 3 on reaching that set),
# FAKE_TOOL_GARBAGE (print a non-JSON line), FAKE_TOOL_LOG (append the
# arguments and the asked ids of each run). The tool's text is FAKE_COST,
# the cost function, followed by FAKE_TOOL, the command line.
FAKE_COST = r'''
import math


def table_ms(t, batch):
    lookups = batch * t["pooling_factor"]
    hot = sum(t["access_hist"][4:])
    row_bytes = t["dim"] * 4 * (1.0 - 0.6 * hot)
    if t["rows"] * t["dim"] * 4 < 2**21:
        row_bytes *= 0.5
    penalty = 1.6 if t["dim"] < 16 else (1.2 if t["dim"] < 64 else 1.0)
    nbytes = lookups * (4 + row_bytes) + batch * t["dim"] * 4
    return 3.0 * nbytes / 20e9 * 1e3 * penalty + 0.002


def entry_stats(tables, entry):
    if not isinstance(entry, dict):
        return tables[entry]
    first, end = entry["rows"]
    piece = dict(tables[entry["table"]])
    piece["pooling_factor"] *= (end - first) / piece["rows"]
    piece["rows"] = end - first
    return piece


def set_ms(tables, set_id, ids, batch):
    cost = 0.01 + sum(table_ms(entry_stats(tables, t), batch) for t in ids)
    return cost * (1.0 + 0.01 * math.sin(12.9898 * set_id))
'''

# The fake tool's cost of a set, for tests that check what it measured.
_fake_cost_namespace = {}
exec(FAKE_COST, _fake_cost_namespace)
fake_set_ms = _fake_cost_namespace["set_ms"]

FAKE_TOOL = r'''
import argparse, json, math, os, sys
parser = argparse.ArgumentParser()
for option in ("--pool", "--sets", "--device"):
    parser.add_argument(option, required=True)
for option in ("--batch-size", "--warmup", "--iters", "--seed"):
    parser.add_argument(option, type=int, required=True)
parser.add_argument("--max-rows", type=int)
args = parser.parse_args()
tables = {t["id"]: t for t in json.load(open(args.pool))["tables"]}
sets = [json.loads(line) for line in open(args.sets)]
if os.environ.get("FAKE_TOOL_LOG"):
    with open(os.environ["FAKE_TOOL_LOG"], "a") as log:
        log.write(json.dumps({"argv": sys.argv[1:],
                              "ids": [s["id"] for s in sets]}) + "\n")
if os.environ.get("FAKE_TOOL_GARBAGE"):
    print("Segmentation fault (core dumped)")
    sys.exit(0)


for s in sets:
    if str(s["id"]) == os.environ.get("FAKE_TOOL_FAIL_ID"):
        print("neuroshard-collect: error: cannot allocate set %d" % s["id"],
              file=sys.stderr)
        sys.exit(3)
    cost = set_ms(tables, s["id"], s["tables"], args.batch_size)
    print(json.dumps({"id": s["id"], "cost_ms": cost, "min_ms": 0.98 * cost,
                      "max_ms": 1.05 * cost, "runs": args.iters,
                      "device": args.device,
                      "hardware": os.environ.get("FAKE_TOOL_HARDWARE",
                                                 "Test CPU 9000"),
                      "batch_size": args.batch_size}), flush=True)
'''


def write_fake_tool(directory):
    path = directory / "fake-neuroshard-collect"
    path.write_text("#!%s\n%s\n%s" % (sys.executable, FAKE_COST, FAKE_TOOL))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.fixture
def fake_tool(tmp_path):
    return write_fake_tool(tmp_path)


@pytest.fixture(scope="session")
def shared_fake_tool(tmp_path_factory):
    """The fake tool for module- and session-scoped fixtures."""
    return write_fake_tool(tmp_path_factory.mktemp("tool"))


@pytest.fixture(scope="session")
def small_pool_path(tmp_path_factory):
    """A 40-base-table pool (240 tables) written to a file."""
    path = tmp_path_factory.mktemp("pool") / "pool.json"
    with open(path, "w") as f:
        json.dump(tp.generate_pool(seed=7, base_tables=40), f)
    return str(path)


@pytest.fixture
def collect_args():
    """Command-line arguments of neuroshard.collect for the tests."""

    def make(pool, out, tool, samples, *extra):
        return ["--pool", pool, "--out", out, "--tool", tool, "--samples",
                str(samples), "--batch-size", "2048",
                "--memory-cap-gb", "2"] + list(extra)

    return make


@pytest.fixture
def plan_with_bundle(tmp_path):
    """Runs the built neuroshard-plan (NEUROSHARD_TOOLS_DIR, else
    build/bin; the test is skipped when it is not built) on six small
    tables with a bundle: plan_with_bundle(bundle, devices) returns the
    completed process (table format)."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    plan = os.path.join(os.environ.get("NEUROSHARD_TOOLS_DIR",
                                       os.path.join(repo, "build", "bin")),
                        "neuroshard-plan")
    if not os.access(plan, os.X_OK):
        pytest.skip("neuroshard-plan is not built (%s)" % plan)
    task = tmp_path / "plan-task.json"
    hist = [0.47, 0.15, 0.14, 0.11, 0.07, 0.03, 0.01, 0.02] + [0.0] * 9
    # Batch 1024, the trained bundles' reference: a histogram describes one
    # batch, and this one is a possible one for these tables at that batch.
    task.write_text(json.dumps({"batch_size": 1024, "tables": [
        {"name": "t%d" % i, "rows": 10**(4 + i % 4), "dim": 64,
         "pooling_factor": 4 + 3 * i, "access_hist": hist}
        for i in range(6)]}))

    def run(bundle, devices):
        return subprocess.run([plan, str(task), "--devices", str(devices),
                               "--cost-model", bundle, "--format=table"],
                              capture_output=True, text=True)
    return run


@pytest.fixture
def fake_torchrec(monkeypatch):
    """torchrec.distributed.types with the fields of TorchRec's classes."""
    @dataclasses.dataclass
    class ShardMetadata:
        shard_offsets: List[int]
        shard_sizes: List[int]
        placement: str

    @dataclasses.dataclass
    class EnumerableShardingSpec:
        shards: List[ShardMetadata]

    @dataclasses.dataclass
    class ParameterSharding:
        sharding_type: str
        compute_kernel: str
        ranks: List[int]
        sharding_spec: EnumerableShardingSpec

    @dataclasses.dataclass
    class ShardingPlan:
        plan: dict

    module = types.ModuleType("torchrec.distributed.types")
    for cls in (ShardMetadata, EnumerableShardingSpec, ParameterSharding,
                ShardingPlan):
        setattr(module, cls.__name__, cls)
    for name in ("torchrec", "torchrec.distributed"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "torchrec.distributed.types", module)
    return module


@pytest.fixture
def foreign_cpu_bundle(tmp_path):
    """A copy of a shipped CPU bundle, of a CPU named unlike any host."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    path = tmp_path / "here"
    shutil.copytree(os.path.join(repo, "models", "cpu-zen4-b1024"), path)
    meta_path = path / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["hardware"] = "a CPU that is not this one"
    meta_path.write_text(json.dumps(meta))
    return str(path)
