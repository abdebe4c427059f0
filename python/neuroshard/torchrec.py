#===- torchrec.py - Planning in TorchRec's terms --------------------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""NeuroShard's planner for TorchRec users: tables, topology and constraints
described as TorchRec describes them, and a TorchRec `ShardingPlan` back.

    from neuroshard import torchrec as nstr
    plan = nstr.plan(tables, topology, constraints, module_path="sparse.ebc")
    model = DistributedModelParallel(model, plan=plan, ...)

`tables`: one description per table, an object (TorchRec's
`EmbeddingBagConfig`) or a dict, with `name`, `num_embeddings`,
`embedding_dim` and optionally `data_type` (TorchRec's `DataType` or
"fp32", "fp16", "bf16"), plus the statistics NeuroShard's cost models price
and TorchRec does not keep: `pooling_factor`, the mean number of indices
per bag, unless the constraints give TorchRec's `pooling_factors`; and,
optionally, `access_hist`, the 17-bin access histogram of one batch of the
table's indices (docs/design.md §3; access_histogram of neuroshard._core
measures it), with `hist_batch_size`, the bags of that batch when it is not
the task's. Without `access_hist` the planner derives the histogram from
the pooling factor and a power law over the rows, whose exponent
`zipf_alpha` may set (docs/planner.md, "Access statistics a task may leave
out"), as for a task file: rows, dim and a pooling factor are enough.

`topology`: an object (TorchRec's `Topology`) or a dict with `world_size`
(the devices), their memory (TorchRec's `devices`, each with
`storage.hbm` bytes; or `hbm_cap`, bytes per device, as Topology's
constructor takes it; or `memory_gb`) and optionally `batch_size` (the
global batch; else give neuroshard.plan's batch_size), TorchRec's
`local_world_size` (the devices of one host: NeuroShard's node) and its
bandwidths `hbm_mem_bw`, `intra_host_bw` and `inter_host_bw` (bytes per
ms).

`constraints`: table name -> an object (TorchRec's `ParameterConstraints`)
or a dict with any of `sharding_types`, `pooling_factors` and NeuroShard's
`pinned_device`. `sharding_types` (TorchRec's `ShardingType`s or their
names) are the kinds the table may take; NeuroShard plans "table_wise",
"column_wise", "row_wise", "table_row_wise" and "data_parallel", so
["table_wise"] keeps the table whole. TorchRec's "table_column_wise" and
"grid_shard" are not planned: they are dropped from a list that allows a
kind NeuroShard plans, and a list of nothing else, or a name that is no
TorchRec sharding type, is a ValueError.
`pooling_factors` gives one pooling factor per feature that looks the table
up; each such feature gets the table's `access_hist` (or its derived
histogram) and `hist_batch_size` or `zipf_alpha`.

Further keyword arguments are neuroshard.plan's options (cost_model,
algorithm, optimizer, reserved_memory, ...). The result is a TorchRec
`ShardingPlan` for the EmbeddingBagCollection at `module_path` when
`torchrec` imports; without TorchRec it is the TorchRec plan as a dict
(`neuroshard-plan --format torchrec`'s JSON), which
neuroshard.torchrec_plan.to_sharding_plan turns into one later.
"""

from typing import Any, Dict, Mapping, Optional, Sequence

import neuroshard
from neuroshard import _core
from neuroshard import torchrec_plan

# TorchRec's DataType values -> the task's dtype names.
DATA_TYPES = {"fp32": "f32", "fp16": "f16", "bf16": "bf16"}
# TorchRec's sharding types that NeuroShard plans: the task's
# "sharding_types" names, and those of the plans it returns.
SHARDING_TYPES = torchrec_plan.SHARDING_TYPES
# TorchRec's sharding types that NeuroShard does not plan, and why.
UNPLANNED_TYPES = {
    "table_column_wise": "NeuroShard does not confine a table's column "
                         "shards to one host",
    "grid_shard": "NeuroShard does not cut a table by both columns and rows",
}
# Optional statistics of a table, given to each of its features.
STATISTICS = ("access_hist", "hist_batch_size", "zipf_alpha")


def _field(description: Any, name: str, default: Any = None) -> Any:
    """A field of a dict or an attribute of an object."""
    if isinstance(description, Mapping):
        return description.get(name, default)
    return getattr(description, name, default)


def _required(description: Any, name: str, what: str) -> Any:
    value = _field(description, name)
    if value is None:
        raise ValueError("%s has no '%s'" % (what, name))
    return value


def _name(value: Any) -> str:
    """An enum's value or a string, lower case ("FP32" -> "fp32")."""
    return str(getattr(value, "value", value)).lower()


def _sharding_types(kinds: Sequence[Any], what: str) -> list:
    """The task's "sharding_types" of a table's constrained kinds: those
    NeuroShard plans, in order; TorchRec's kinds it does not plan are
    dropped unless nothing else is allowed."""
    names = [_name(k) for k in kinds]
    for name in names:
        if name not in SHARDING_TYPES and name not in UNPLANNED_TYPES:
            raise ValueError("%s: its constraints' sharding type '%s' is not "
                             "one of TorchRec's (%s)" %
                             (what, name, ", ".join(SHARDING_TYPES +
                                                    tuple(UNPLANNED_TYPES))))
    planned = [n for n in dict.fromkeys(names) if n in SHARDING_TYPES]
    if not planned:
        if not names:
            raise ValueError("%s: its constraints allow no sharding type "
                             "('sharding_types' is empty)" % what)
        unplanned = list(dict.fromkeys(names))
        raise ValueError("%s: its constraints allow only %s, which "
                         "NeuroShard does not plan (%s); it plans %s" %
                         (what, ", ".join(unplanned),
                          "; ".join("%s: %s" % (n, UNPLANNED_TYPES[n])
                                    for n in unplanned),
                          ", ".join(SHARDING_TYPES)))
    return planned


def _table(description: Any, constraint: Any) -> Dict:
    """The task JSON table of one TorchRec-style table."""
    name = _required(description, "name", "a table")
    what = "table '%s'" % name
    table = {"name": name,
             "rows": _required(description, "num_embeddings", what),
             "dim": _required(description, "embedding_dim", what)}
    data_type = _field(description, "data_type")
    if data_type is not None:
        kind = _name(data_type)
        table["dtype"] = DATA_TYPES.get(kind, kind)
    stats = {}
    for key in STATISTICS:
        value = _field(description, key)
        if value is not None:
            stats[key] = value
    pooling = _field(description, "pooling_factor")
    per_feature = _field(constraint, "pooling_factors")
    if pooling is None and not per_feature:
        raise ValueError("%s has no 'pooling_factor', and its constraints "
                         "no 'pooling_factors'" % what)
    if pooling is not None or len(per_feature) == 1:
        table["pooling_factor"] = pooling if pooling is not None \
            else per_feature[0]
        table.update(stats)
    else:
        table["features"] = [dict(pooling_factor=p, **stats)
                             for p in per_feature]
    kinds = _field(constraint, "sharding_types")
    if kinds is not None:
        table["sharding_types"] = _sharding_types(kinds, what)
    pinned = _field(constraint, "pinned_device")
    if pinned is not None:
        table["pinned_device"] = pinned
    return table


def _topology(topology: Any) -> Dict:
    """neuroshard.plan's options for a TorchRec-style topology."""
    options = {"devices": _required(topology, "world_size", "the topology")}
    # TorchRec's compute_device ("cuda" by default) is NeuroShard's device
    # kind: "cpu" plans for CPU execution, anything else for GPUs.
    compute = _field(topology, "compute_device")
    if compute is not None:
        options["device_kind"] = "cpu" if _name(compute) == "cpu" else "gpu"
    devices = _field(topology, "devices")
    capacity = _field(topology, "hbm_cap")
    if devices is not None:
        options["memory_gb"] = [d.storage.hbm / _core.BYTES_PER_GB
                                for d in devices]
    elif capacity is not None:
        options["memory_gb"] = capacity / _core.BYTES_PER_GB
    else:
        options["memory_gb"] = _required(
            topology, "memory_gb", "the topology (nor 'devices' nor "
            "'hbm_cap')")
    batch = _field(topology, "batch_size")
    if batch is not None:
        options["batch_size"] = batch
    # TorchRec's hosts are NeuroShard's nodes.
    local = _field(topology, "local_world_size")
    if local is not None:
        options["devices_per_node"] = local
    # TorchRec's bandwidths are bytes per ms; NeuroShard's GB per s.
    for torchrec_name, name in (("hbm_mem_bw", "hbm_gbps"),
                                ("intra_host_bw", "intra_node_gbps"),
                                ("inter_host_bw", "inter_node_gbps")):
        bandwidth = _field(topology, torchrec_name)
        if bandwidth is not None:
            options[name] = bandwidth * 1000.0 / _core.BYTES_PER_GB
    return options


def plan(tables: Sequence[Any], topology: Any,
         constraints: Optional[Mapping[str, Any]] = None,
         module_path: str = "", **options):
    """Plans the sharding of TorchRec-style tables (see the module
    docstring): a TorchRec ShardingPlan for the EmbeddingBagCollection at
    `module_path` when TorchRec imports, else the TorchRec plan dict.
    Each table takes the sharding type the search chooses among those its
    constraints allow (all that NeuroShard plans when unconstrained):
    table_wise, column_wise, row_wise, table_row_wise or data_parallel.
    Raises ValueError for a description it cannot read (among them a table
    whose constraints allow only sharding types NeuroShard does not plan,
    table_column_wise or grid_shard) and neuroshard.NeuroShardError (a
    ValueError) with the planner's message for a table, option or problem
    the planner refuses."""
    constraints = constraints or {}
    names = [_field(t, "name") for t in tables]
    unknown = sorted(set(constraints) - set(names))
    if unknown:
        raise ValueError("constraints name %s, which %s no table" %
                         (", ".join("'%s'" % u for u in unknown),
                          "is" if len(unknown) == 1 else "are"))
    task = [_table(t, constraints.get(_field(t, "name"))) for t in tables]
    devices = _topology(topology)
    clash = sorted(set(options) & set(devices))
    if clash:
        raise TypeError("%s come%s from the topology" %
                        (", ".join(clash), "s" if len(clash) == 1 else ""))
    options.update(devices)
    result = neuroshard.plan(task, format="torchrec", **options)
    try:
        import torchrec.distributed.types  # noqa: F401
    except ImportError:
        return result
    return torchrec_plan.to_sharding_plan(result, module_path)
