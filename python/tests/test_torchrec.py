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


class ShardingType(enum.Enum):
    """TorchRec's ShardingType, in part."""
    ROW_WISE = "row_wise"
    GRID_SHARD = "grid_shard"


def test_rows_dim_and_pooling_factor_are_enough(no_torchrec):
    """Without `access_hist` the planner derives each histogram from the
    pooling factor, as it does for a task file that leaves it out."""
    described = [{"name": "t%d" % i, "num_embeddings": 10000 * (i + 1),
                  "embedding_dim": 32, "pooling_factor": 4.0}
                 for i in range(3)]
    described[2]["zipf_alpha"] = 0.5
    plan = nstr.plan(described, TOPOLOGY, cost_model="analytical")
    task = {"batch_size": 1024, "tables": [
        {"name": "t%d" % i, "rows": 10000 * (i + 1), "dim": 32,
         "pooling_factor": 4.0} for i in range(3)]}
    task["tables"][2]["zipf_alpha"] = 0.5
    assert plan == neuroshard.plan(task, devices=2, memory_gb=0.3,
                                   cost_model="analytical",
                                   format="torchrec")
    assert sorted(plan["tables"]) == ["t0", "t1", "t2"]


def test_pooling_factors_per_feature_without_a_histogram(no_torchrec):
    described = [{"name": "shared", "num_embeddings": 100000,
                  "embedding_dim": 64},
                 {"name": "b", "num_embeddings": 20000, "embedding_dim": 16,
                  "pooling_factor": 2.0}]
    constraints = {"shared": {"pooling_factors": [4.0, 1.0]}}
    plan = nstr.plan(described, TOPOLOGY, constraints,
                     cost_model="analytical")
    task = {"batch_size": 1024, "tables": [
        {"name": "shared", "rows": 100000, "dim": 64,
         "features": [{"pooling_factor": 4.0}, {"pooling_factor": 1.0}]},
        {"name": "b", "rows": 20000, "dim": 16, "pooling_factor": 2.0}]}
    assert plan == neuroshard.plan(task, devices=2, memory_gb=0.3,
                                   cost_model="analytical",
                                   format="torchrec")
    # Two features cost more than the first alone.
    one = neuroshard.plan(dict(task, tables=[
        {"name": "shared", "rows": 100000, "dim": 64, "pooling_factor": 4.0},
        task["tables"][1]]), devices=2, memory_gb=0.3,
        cost_model="analytical")
    two = neuroshard.plan(task, devices=2, memory_gb=0.3,
                          cost_model="analytical")
    assert two["cost_ms"] > one["cost_ms"]


def test_a_row_wise_constraint_is_honoured(no_torchrec):
    described = [{"name": "t%d" % i, "num_embeddings": 100000,
                  "embedding_dim": 32, "pooling_factor": 4.0}
                 for i in range(3)]
    constraints = {"t1": types.SimpleNamespace(
        sharding_types=[ShardingType.ROW_WISE], pooling_factors=None)}
    plan = nstr.plan(described, TOPOLOGY, constraints,
                     cost_model="analytical")
    t1 = plan["tables"]["t1"]
    assert t1["sharding_type"] == "row_wise"
    assert len(t1["ranks"]) == 2
    # Unconstrained, the search keeps it whole.
    free = nstr.plan(described, TOPOLOGY, cost_model="analytical")
    assert free["tables"]["t1"]["sharding_type"] == "table_wise"
    # The constraint is the task's sharding_types, as the command line
    # reads it.
    task = {"batch_size": 1024, "tables": [
        {"name": "t%d" % i, "rows": 100000, "dim": 32,
         "pooling_factor": 4.0} for i in range(3)]}
    task["tables"][1]["sharding_types"] = ["row_wise"]
    assert plan == neuroshard.plan(task, devices=2, memory_gb=0.3,
                                   cost_model="analytical",
                                   format="torchrec")
    # A kind NeuroShard does not plan is dropped when another is allowed.
    constraints["t1"].sharding_types.append(ShardingType.GRID_SHARD)
    assert nstr.plan(described, TOPOLOGY, constraints,
                     cost_model="analytical") == plan


def test_the_search_returns_the_kinds_it_chooses(no_torchrec):
    """Unconstrained, a table too large for any device but too narrow to
    split by columns is cut by rows, and a small one is replicated."""
    described = [{"name": "big", "num_embeddings": 100000000,
                  "embedding_dim": 4, "pooling_factor": 2.0},
                 {"name": "small", "num_embeddings": 1000,
                  "embedding_dim": 16, "pooling_factor": 1.0}]
    topology = {"world_size": 4, "hbm_cap": GB // 2, "batch_size": 4096}
    plan = nstr.plan(described, topology, cost_model="analytical")
    assert plan["tables"]["big"]["sharding_type"] == "row_wise"
    assert plan["tables"]["big"]["ranks"] == [0, 1, 2, 3]
    assert plan["tables"]["small"]["sharding_type"] == "data_parallel"


def test_a_row_wise_plan_is_a_sharding_plan(fake_torchrec):
    described = [{"name": "big", "num_embeddings": 100000000,
                  "embedding_dim": 4, "pooling_factor": 2.0}]
    topology = {"world_size": 4, "hbm_cap": GB // 2, "batch_size": 4096}
    plan = nstr.plan(described, topology, module_path="sparse.ebc",
                     cost_model="analytical")
    big = plan.plan["sparse.ebc"]["big"]
    assert big.sharding_type == "row_wise"
    sizes = [s.shard_sizes for s in big.sharding_spec.shards]
    assert len(sizes) == 4 and all(width == 4 for _, width in sizes)
    assert sum(rows for rows, _ in sizes) == 100000000


@pytest.mark.parametrize("described,topology,constraints,error,message", [
    ([{"name": "a", "embedding_dim": 8}], TOPOLOGY, {}, ValueError,
     "table 'a' has no 'num_embeddings'"),
    ([{"name": "a", "num_embeddings": 10, "embedding_dim": 8,
       "access_hist": [1.0] + [0.0] * 16}], TOPOLOGY, {}, ValueError,
     "table 'a' has no 'pooling_factor', and its constraints no "
     "'pooling_factors'"),
    # TorchRec's kinds NeuroShard does not plan, with nothing else allowed.
    ([{"name": "a", "num_embeddings": 10, "embedding_dim": 8,
       "pooling_factor": 0.01}],
     TOPOLOGY, {"a": {"sharding_types": ["grid_shard"]}}, ValueError,
     "table 'a': its constraints allow only grid_shard, which NeuroShard "
     "does not plan (grid_shard: NeuroShard does not cut a table by both "
     "columns and rows); it plans table_wise, column_wise, row_wise, "
     "table_row_wise, data_parallel"),
    ([{"name": "a", "num_embeddings": 10, "embedding_dim": 8,
       "pooling_factor": 0.01}],
     TOPOLOGY, {"a": {"sharding_types": ["table_column_wise"]}}, ValueError,
     "table 'a': its constraints allow only table_column_wise, which "
     "NeuroShard does not plan (table_column_wise: NeuroShard does not "
     "confine a table's column shards to one host)"),
    ([{"name": "a", "num_embeddings": 10, "embedding_dim": 8,
       "pooling_factor": 0.01}],
     TOPOLOGY, {"a": {"sharding_types": ["row_wide", "table_wise"]}},
     ValueError, "table 'a': its constraints' sharding type 'row_wide' is "
     "not one of TorchRec's (table_wise, column_wise, row_wise, "
     "table_row_wise, data_parallel, table_column_wise, grid_shard)"),
    ([{"name": "a", "num_embeddings": 10, "embedding_dim": 8,
       "pooling_factor": 0.01}],
     TOPOLOGY, {"a": {"sharding_types": []}}, ValueError,
     "table 'a': its constraints allow no sharding type ('sharding_types' "
     "is empty)"),
    # Statistics the task JSON refuses reach the planner, which names them.
    ([{"name": "a", "num_embeddings": 10, "embedding_dim": 8,
       "pooling_factor": 0.01, "zipf_alpha": 1.2,
       "access_hist": [1.0] + [0.0] * 16}], TOPOLOGY, {},
     neuroshard.NeuroShardError,
     "tables[0] ('a'): give 'access_hist' or 'zipf_alpha', not both"),
    ([{"name": "a", "num_embeddings": 10, "embedding_dim": 8,
       "pooling_factor": 0.01, "hist_batch_size": 512}], TOPOLOGY, {},
     neuroshard.NeuroShardError,
     "tables[0] ('a'): 'hist_batch_size' names the batch of an "
     "'access_hist', which is not given"),
    ([{"name": "a", "num_embeddings": 10, "embedding_dim": 8,
       "zipf_alpha": 9.0}], TOPOLOGY,
     {"a": {"pooling_factors": [1.0, 2.0]}}, neuroshard.NeuroShardError,
     "tables[0] ('a'): features[0]: 'zipf_alpha' must be a number in [0, 4], "
     "got 9"),
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
