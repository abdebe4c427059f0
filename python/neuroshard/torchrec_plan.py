#===- torchrec_plan.py - NeuroShard plans as TorchRec sharding plans ------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""NeuroShard plans as TorchRec sharding plans.

`neuroshard-plan --format torchrec` and `--neuroshard-shard="torchrec-out=F"`
write, per table, the fields of TorchRec's `ParameterSharding`. This module
reads such a file and, when `torchrec` is importable, builds the objects
`DistributedModelParallel` takes:

    from neuroshard import torchrec_plan
    plan = torchrec_plan.load("plan.torchrec.json")
    module_plan = torchrec_plan.to_parameter_shardings(plan)   # {table: ParameterSharding}
    sharding_plan = torchrec_plan.to_sharding_plan(plan, "sparse.ebc")
    model = DistributedModelParallel(model, plan=sharding_plan, ...)

Tables are keyed by the names the plan was made for: the names of the task
JSON, or the table symbols of the module. `rename` maps them to the names of
the model's `EmbeddingBagConfig`s when they differ.
"""

import json
from typing import Dict, Mapping, Optional

FORMAT = "neuroshard-torchrec-1"
SHARDING_TYPES = ("table_wise", "column_wise", "row_wise", "table_row_wise",
                  "data_parallel")
ROW_TYPES = ("row_wise", "table_row_wise")


class TorchRecPlanError(Exception):
    """A file that is not a valid NeuroShard TorchRec plan, or no TorchRec."""


def _check_table(name: str, table: Mapping, world_size: int) -> None:
    where = "table '%s'" % name
    kind = table.get("sharding_type")
    if kind not in SHARDING_TYPES:
        raise TorchRecPlanError("%s: sharding_type must be one of %s, got %r"
                                % (where, ", ".join(SHARDING_TYPES), kind))
    shards, ranks = table.get("shards"), table.get("ranks")
    if not isinstance(shards, list) or not shards or \
            not isinstance(ranks, list) or len(ranks) != len(shards):
        raise TorchRecPlanError("%s: needs one rank per shard and at least one "
                                "shard" % where)
    if kind == "table_wise" and len(shards) != 1:
        raise TorchRecPlanError("%s: a table_wise table has one shard, not %d"
                                % (where, len(shards)))
    if kind == "data_parallel" and sorted(ranks) != list(range(world_size)):
        raise TorchRecPlanError("%s: a data_parallel table has a replica on "
                                "every rank, got ranks %r" % (where, ranks))
    # Column pieces follow one another along the columns; row pieces, which
    # hold every column, along the rows; replicas are all the whole table.
    along = 0 if kind in ROW_TYPES else 1
    position = 0
    for i, (shard, rank) in enumerate(zip(shards, ranks)):
        offsets, sizes = shard.get("shard_offsets"), shard.get("shard_sizes")
        ok = (isinstance(rank, int) and 0 <= rank < world_size and
              isinstance(offsets, list) and isinstance(sizes, list) and
              len(offsets) == 2 and len(sizes) == 2 and
              all(isinstance(v, int) and v >= 0 for v in offsets + sizes))
        if not ok:
            raise TorchRecPlanError("%s: shard %d is malformed (rank %r, "
                                    "offsets %r, sizes %r)" %
                                    (where, i, rank, offsets, sizes))
        expected = 0 if kind == "data_parallel" else position
        if offsets[along] != expected:
            raise TorchRecPlanError("%s: shard %d starts at %s %d, expected %d"
                                    % (where, i, ("row", "column")[along],
                                       offsets[along], expected))
        if shard.get("placement") != "rank:%d/cuda:%d" % (rank, rank):
            raise TorchRecPlanError("%s: shard %d is placed on %r but its rank "
                                    "is %d" % (where, i, shard.get("placement"),
                                               rank))
        position += sizes[along]


def load(path: str) -> Dict:
    """Reads and checks a plan file."""
    try:
        with open(path, encoding="utf-8") as f:
            plan = json.load(f)
    except OSError as e:
        raise TorchRecPlanError("cannot read '%s': %s" % (path, e.strerror))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise TorchRecPlanError("%s: not JSON (%s)" % (path, e))
    if not isinstance(plan, dict) or plan.get("format") != FORMAT:
        raise TorchRecPlanError("%s: not a NeuroShard TorchRec plan (expected "
                                "\"format\": \"%s\")" % (path, FORMAT))
    world = plan.get("world_size")
    if not isinstance(world, int) or world < 1 or \
            not isinstance(plan.get("tables"), dict):
        raise TorchRecPlanError("%s: needs a positive world_size and tables"
                                % path)
    for name, table in plan["tables"].items():
        _check_table(name, table, world)
    return plan


def _torchrec():
    try:
        # TorchRec re-exports PyTorch's shard specs next to its own types.
        from torchrec.distributed.types import (EnumerableShardingSpec,
                                                ParameterSharding,
                                                ShardMetadata)
    except (ImportError, ValueError) as e:
        raise TorchRecPlanError(
            "TorchRec is not importable (%s); the plan file itself holds "
            "every ParameterSharding field" % e)
    return ParameterSharding, EnumerableShardingSpec, ShardMetadata


def to_parameter_shardings(plan: Mapping,
                           rename: Optional[Mapping[str, str]] = None
                           ) -> Dict[str, object]:
    """{table name: torchrec ParameterSharding} of a loaded plan."""
    ParameterSharding, EnumerableShardingSpec, ShardMetadata = _torchrec()
    rename = rename or {}
    result = {}
    for name, table in plan["tables"].items():
        if table["sharding_type"] == "data_parallel":
            # TorchRec's replicas carry no shard spec.
            result[rename.get(name, name)] = ParameterSharding(
                sharding_type="data_parallel",
                compute_kernel=table["compute_kernel"],
                ranks=list(table["ranks"]), sharding_spec=None)
            continue
        spec = EnumerableShardingSpec([
            ShardMetadata(shard_offsets=list(s["shard_offsets"]),
                          shard_sizes=list(s["shard_sizes"]),
                          placement=s["placement"])
            for s in table["shards"]])
        result[rename.get(name, name)] = ParameterSharding(
            sharding_type=table["sharding_type"],
            compute_kernel=table["compute_kernel"],
            ranks=list(table["ranks"]), sharding_spec=spec)
    return result


def to_sharding_plan(plan: Mapping, module_path: str,
                     rename: Optional[Mapping[str, str]] = None):
    """A torchrec ShardingPlan that shards the EmbeddingBagCollection at
    `module_path` of the model (e.g. "sparse.ebc") as the plan says."""
    try:
        from torchrec.distributed.types import ShardingPlan
    except (ImportError, ValueError) as e:
        raise TorchRecPlanError("TorchRec is not importable (%s)" % e)
    return ShardingPlan({module_path: to_parameter_shardings(plan, rename)})
