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
and TorchRec does not keep: `access_hist`, the 17-bin access histogram of
one batch of the table's indices (docs/design.md §3; access_histogram of
neuroshard._core measures it), and `pooling_factor`, the mean number of
indices per bag, unless the constraints give TorchRec's `pooling_factors`.

`topology`: an object (TorchRec's `Topology`) or a dict with `world_size`
(the devices), their memory (TorchRec's `devices`, each with
`storage.hbm` bytes; or `hbm_cap`, bytes per device, as Topology's
constructor takes it; or `memory_gb`) and optionally `batch_size` (the
global batch; else give neuroshard.plan's batch_size), TorchRec's
`local_world_size` (the devices of one host: NeuroShard's node) and its
bandwidths `hbm_mem_bw`, `intra_host_bw` and `inter_host_bw` (bytes per
ms).

`constraints`: table name -> an object (TorchRec's `ParameterConstraints`)
or a dict with `sharding_types` (NeuroShard shards "table_wise" and
"column_wise"; ["table_wise"] keeps the table whole), `pooling_factors`
(one per feature that looks the table up; each such feature gets the
table's histogram) and NeuroShard's `pinned_device`.

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
# TorchRec's sharding types that NeuroShard's plans use.
SHARDING_TYPES = ("table_wise", "column_wise")


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
    hist = _required(description, "access_hist", what)
    pooling = _field(description, "pooling_factor")
    per_feature = _field(constraint, "pooling_factors")
    if pooling is None and not per_feature:
        raise ValueError("%s has no 'pooling_factor', and its constraints "
                         "no 'pooling_factors'" % what)
    if pooling is not None or len(per_feature) == 1:
        table["pooling_factor"] = pooling if pooling is not None \
            else per_feature[0]
        table["access_hist"] = hist
    else:
        table["features"] = [{"pooling_factor": p, "access_hist": hist}
                             for p in per_feature]
    kinds = _field(constraint, "sharding_types")
    if kinds is not None:
        kinds = [_name(k) for k in kinds]
        if not any(k in SHARDING_TYPES for k in kinds):
            raise ValueError("%s: NeuroShard shards tables %s, but its "
                             "constraints allow only %s" %
                             (what, " and ".join(SHARDING_TYPES),
                              ", ".join(kinds)))
        if "column_wise" not in kinds:
            table["no_split"] = True
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
    Raises ValueError for a description it cannot read and
    neuroshard.NeuroShardError (a ValueError) with the planner's message
    for a table, option or problem the planner refuses."""
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
