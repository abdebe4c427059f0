#===- test_torchrec.py - Tests of planning in TorchRec's terms ------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#

import enum
import json
import sys
import types

import pytest

import neuroshard
from built_tools import REPO
from neuroshard import torchrec as nstr

TASK = REPO + "/test/neuroshard-plan/Inputs/torchrec.json"
GB = 2**30


class DataType(enum.Enum):
    """TorchRec's DataType, in part."""
    FP32 = "FP32"
    FP16 = "FP16"


def tables():
    """The tables of TASK, as TorchRec's EmbeddingBagConfig describes them
    (objects), with the statistics NeuroShard prices."""
    task = json.load(open(TASK))
    return [types.SimpleNamespace(
        name=t["name"], num_embeddings=t["rows"], embedding_dim=t["dim"],
        data_type=DataType.FP32, pooling_factor=t["pooling_factor"],
        access_hist=t["access_hist"]) for t in task["tables"]]


TOPOLOGY = {"world_size": 2, "hbm_cap": int(0.3 * GB), "batch_size": 1024}
CONSTRAINTS = {"sparse.item_id": {"sharding_types": ["table_wise"]}}


@pytest.fixture
def no_torchrec(monkeypatch):
    monkeypatch.setitem(sys.modules, "torchrec", None)


def test_without_torchrec_the_plan_is_the_torchrec_plan_dict(no_torchrec):
    plan = nstr.plan(tables(), TOPOLOGY, CONSTRAINTS,
                     cost_model="analytical")
    # The task file says the same: batch 1024, item_id kept whole.
    assert plan == neuroshard.plan(TASK, devices=2, memory_gb=0.3,
                                   cost_model="analytical",
                                   format="torchrec")
    assert plan["format"] == "neuroshard-torchrec-1"
    assert plan["world_size"] == 2
    assert plan["tables"]["sparse.item_id"]["sharding_type"] == "table_wise"


def test_with_torchrec_the_plan_is_a_sharding_plan(fake_torchrec):
    plan = nstr.plan(tables(), TOPOLOGY, CONSTRAINTS, module_path="sparse.ebc",
                     cost_model="analytical")
    assert isinstance(plan, fake_torchrec.ShardingPlan)
    shardings = plan.plan["sparse.ebc"]
    assert sorted(shardings) == ["sparse.item_id", "sparse.user_id"]
    item = shardings["sparse.item_id"]
    assert isinstance(item, fake_torchrec.ParameterSharding)
    assert item.sharding_type == "table_wise"
    assert item.sharding_spec.shards[0].shard_sizes == [5000, 16]


def test_descriptions_may_be_dicts_with_torchrec_names(no_torchrec):
    described = [{"name": "a", "num_embeddings": 100000, "embedding_dim": 64,
                  "data_type": "fp16", "access_hist": [1.0] + [0.0] * 16},
                 {"name": "b", "num_embeddings": 200000, "embedding_dim": 32,
                  "pooling_factor": 0.5, "access_hist": [1.0] + [0.0] * 16}]
    constraints = {"a": {"pooling_factors": [0.5, 0.25], "pinned_device": 1,
                         "sharding_types": ["column_wise", "table_wise"]}}
    topology = types.SimpleNamespace(world_size=2, hbm_cap=GB,
                                     batch_size=1024,
                                     hbm_mem_bw=897 * GB / 1000,
                                     intra_host_bw=300 * GB / 1000)
    plan = nstr.plan(described, topology, constraints,
                     cost_model="analytical")
    # The same task, written as the planner's task JSON.
    task = {"batch_size": 1024, "tables": [
        {"name": "a", "rows": 100000, "dim": 64, "dtype": "f16",
         "pinned_device": 1, "features": [
             {"pooling_factor": 0.5, "access_hist": [1.0] + [0.0] * 16},
             {"pooling_factor": 0.25, "access_hist": [1.0] + [0.0] * 16}]},
        {"name": "b", "rows": 200000, "dim": 32, "pooling_factor": 0.5,
         "access_hist": [1.0] + [0.0] * 16}]}
    assert plan == neuroshard.plan(task, devices=2, memory_gb=1.0,
                                   intra_node_gbps=300.0,
                                   cost_model="analytical",
                                   format="torchrec")
    assert plan["tables"]["a"]["ranks"] == [1]


def test_hosts_are_nodes(no_torchrec):
    described = [{"name": "t%d" % i, "num_embeddings": 100000,
                  "embedding_dim": 64, "pooling_factor": 8.0,
                  "access_hist": [1.0] + [0.0] * 16} for i in range(6)]
    topology = types.SimpleNamespace(world_size=4, local_world_size=2,
                                     hbm_cap=GB, batch_size=4096,
                                     inter_host_bw=10 * GB / 1000)
    plan = nstr.plan(described, topology, cost_model="analytical")
    task = {"batch_size": 4096, "tables": [
        {"name": "t%d" % i, "rows": 100000, "dim": 64, "pooling_factor": 8.0,
         "access_hist": [1.0] + [0.0] * 16} for i in range(6)]}
    assert plan == neuroshard.plan(task, devices=4, devices_per_node=2,
                                   memory_gb=1.0, inter_node_gbps=10.0,
                                   cost_model="analytical",
                                   format="torchrec")
    priced = neuroshard.plan(task, devices=4, devices_per_node=2,
                             memory_gb=1.0, inter_node_gbps=10.0,
                             cost_model="analytical")
    assert (priced["nodes"], priced["devices_per_node"]) == (2, 2)
    one_host = neuroshard.plan(task, devices=4, memory_gb=1.0,
                               inter_node_gbps=10.0, cost_model="analytical")
    assert one_host["nodes"] == 1
    # The slow links between hosts make the same tables cost more.
    assert priced["cost_ms"] > one_host["cost_ms"]


@pytest.mark.parametrize("described,topology,constraints,error,message", [
    ([{"name": "a", "embedding_dim": 8}], TOPOLOGY, {}, ValueError,
     "table 'a' has no 'num_embeddings'"),
    ([{"name": "a", "num_embeddings": 10, "embedding_dim": 8,
       "pooling_factor": 1.0}], TOPOLOGY, {}, ValueError,
     "table 'a' has no 'access_hist'"),
    ([{"name": "a", "num_embeddings": 10, "embedding_dim": 8,
       "access_hist": [1.0] + [0.0] * 16}], TOPOLOGY, {}, ValueError,
     "table 'a' has no 'pooling_factor', and its constraints no "
     "'pooling_factors'"),
    ([{"name": "a", "num_embeddings": 10, "embedding_dim": 8,
       "pooling_factor": 0.01, "access_hist": [1.0] + [0.0] * 16}],
     TOPOLOGY, {"a": {"sharding_types": ["row_wise"]}}, ValueError,
     "table 'a': NeuroShard shards tables table_wise and column_wise, but "
     "its constraints allow only row_wise"),
    ([{"name": "a", "num_embeddings": 10, "embedding_dim": 8,
       "pooling_factor": 0.01, "access_hist": [1.0] + [0.0] * 16}],
     TOPOLOGY, {"b": {}}, ValueError, "constraints name 'b', which is no "
     "table"),
    ([{"name": "a", "num_embeddings": 10, "embedding_dim": 8,
       "pooling_factor": 0.01, "access_hist": [1.0] + [0.0] * 16}],
     {"world_size": 2}, {}, ValueError,
     "the topology (nor 'devices' nor 'hbm_cap') has no 'memory_gb'"),
    # What the planner refuses, it refuses in its words; TorchRec's
    # bandwidths (bytes per ms) reach it as GB/s.
    ([{"name": "a", "num_embeddings": 10, "embedding_dim": 8,
       "pooling_factor": 0.01, "access_hist": [1.0] + [0.0] * 16}],
     dict(TOPOLOGY, intra_host_bw=GB / 1e9), {}, neuroshard.NeuroShardError,
     "intra_node_gbps: must be between 0.001 and 1e+09 GB/s, got 1e-06"),
    ([{"name": "a", "num_embeddings": 10, "embedding_dim": 8,
       "pooling_factor": 0.01, "access_hist": [1.0] + [0.0] * 16}],
     dict(TOPOLOGY, hbm_mem_bw=2 * GB / 1e9), {}, neuroshard.NeuroShardError,
     "hbm_gbps: must be between 0.001 and 1e+09 GB/s, got 2e-06"),
    ([{"name": "a", "num_embeddings": 10, "embedding_dim": 6,
       "pooling_factor": 0.01, "access_hist": [1.0] + [0.0] * 16}],
     TOPOLOGY, {}, neuroshard.NeuroShardError,
     "tables[0] ('a'): 'dim' must be a positive multiple of 4, got 6"),
    ([{"name": "a", "num_embeddings": 10, "embedding_dim": 8,
       "data_type": "int8", "pooling_factor": 0.01,
       "access_hist": [1.0] + [0.0] * 16}],
     TOPOLOGY, {}, neuroshard.NeuroShardError,
     "'dtype' must be one of f32, f16, bf16, got 'int8'"),
])
def test_descriptions_it_cannot_plan(no_torchrec, described, topology,
                                     constraints, error, message):
    with pytest.raises(error) as info:
        nstr.plan(described, topology, constraints, cost_model="analytical")
    assert message in str(info.value), str(info.value)


def test_a_torchrec_topology_gives_each_device_its_memory(no_torchrec):
    """TorchRec's Topology keeps each device's HBM in devices[i].storage."""
    def device(gb):
        return types.SimpleNamespace(storage=types.SimpleNamespace(
            hbm=int(gb * GB), ddr=0))
    topology = types.SimpleNamespace(world_size=2, compute_device="cuda",
                                     devices=[device(0.2), device(0.5)],
                                     batch_size=1024)
    plan = nstr.plan(tables(), topology, CONSTRAINTS,
                     cost_model="analytical")
    assert plan == neuroshard.plan(TASK, memory_gb=[0.2, 0.5],
                                   cost_model="analytical",
                                   format="torchrec")
    # A CPU topology plans for CPU execution, and its plan says so.
    topology.compute_device = "cpu"
    plan = nstr.plan(tables(), topology, CONSTRAINTS,
                     cost_model="analytical")
    assert plan["compute_device"] == "cpu"
    assert plan == neuroshard.plan(TASK, memory_gb=[0.2, 0.5],
                                   cost_model="analytical", device_kind="cpu",
                                   format="torchrec")


def test_the_topology_is_not_given_twice(no_torchrec):
    with pytest.raises(TypeError, match="devices comes from the topology"):
        nstr.plan(tables(), TOPOLOGY, devices=4)
