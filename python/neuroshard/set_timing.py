#===- set_timing.py - Timing a plan's device sets with neuroshard-collect -===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""A plan's device sets as neuroshard-collect times them, and their timing:
device_sets() turns a plan's shards into the tool's set entries (pool
tables, column and row pieces of them) in the order a device's fused lookup
runs them, set_key() and add_set() number the distinct sets of a
measurement, measure_sets() times them in one run of the tool and
measure_repeated() repeats that run in alternating order over draws of the
index streams. Calibration times measured selection's candidates with them
(neuroshard.selection_noise); the evaluation harness (bench/) times whole
plans."""

import json
import os
import shlex
import subprocess
import tempfile
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from neuroshard import _core


class SetTimingError(Exception):
    """A plan whose sets cannot be timed, or a timing run that failed; the
    message names the task, the table or the tool."""


def device_sets(task: Dict, plan: Dict, pool_dims: Sequence[int]
                ) -> List[List]:
    """Per device, the entries of neuroshard-collect's sets its shards
    amount to: a shard of width w of pool table (base, dim) is pool table
    (base, w) where the pool has that width, else the column piece
    {"table": the table's pool id, "cols": [first, end]} (merged pieces,
    such as 48 of 64 columns); a row piece adds "rows": [first, end] (as a
    dictionary {"table", "rows"[, "cols"]}). Replicas are refused: the
    tool times no slice of the batch."""
    by_name = {t["name"]: t for t in task["tables"]}
    index = {t["name"]: i for i, t in enumerate(task["tables"])}
    sets = [[] for _ in range(task["devices"])]
    for shard in plan["shards"]:
        table = by_name.get(shard["table"])
        if table is None:
            raise SetTimingError("plan of task '%s' names unknown table "
                                  "'%s'" % (task["name"], shard["table"]))
        if shard.get("replica"):
            raise SetTimingError(
                "task '%s': the plan replicates table '%s'; the evaluation "
                "times whole tables and their column and row pieces, not "
                "replicas" % (task["name"], shard["table"]))
        device = int(shard["device"])
        if not 0 <= device < task["devices"]:
            raise SetTimingError("task '%s': shard on device %d of %d" %
                                  (task["name"], device, task["devices"]))
        begin, end = int(shard["col_begin"]), int(shard["col_end"])
        width = end - begin
        piece = {}
        if width in pool_dims:
            base = table["pool_id"] // len(pool_dims)
            entry = base * len(pool_dims) + list(pool_dims).index(width)
        elif 0 <= begin < end <= int(table["dim"]) and \
                width % _core.COLUMN_ALIGNMENT == 0:
            entry = table["pool_id"]
            piece["cols"] = [begin, end]
        else:
            raise SetTimingError(
                "task '%s': shard [%d, %d) of table '%s' is not a range of "
                "its %d columns whose width is a multiple of %d" %
                (task["name"], begin, end, shard["table"], table["dim"],
                 _core.COLUMN_ALIGNMENT))
        if "row_begin" in shard:
            piece["rows"] = [int(shard["row_begin"]), int(shard["row_end"])]
        # fusedOrder's key: row pieces last, then the task's table, the
        # first row and the first column.
        order = ("rows" in piece, index[shard["table"]],
                 piece.get("rows", [0])[0], begin)
        sets[device].append((order, dict(piece, table=entry) if piece
                             else entry))
    # A device runs its whole tables and column pieces by the task's table
    # order, then its row pieces (fusedOrder in PlanVerification.h), and
    # the order moves a set's time: each set is listed as it runs.
    return [[entry for _, entry in sorted(entries, key=lambda p: p[0])]
            for entries in sets]


def _entry_key(entry) -> Tuple[int, ...]:
    """A set entry's sort key: (id,) for a pool table, (id, first row,
    end row, first column, end column) for a piece (-1 where whole)."""
    if not isinstance(entry, dict):
        return (int(entry),)
    rows = entry.get("rows", (-1, -1))
    cols = entry.get("cols", (-1, -1))
    return (int(entry["table"]), *map(int, rows), *map(int, cols))


def set_key(entries: Sequence) -> Tuple[Tuple[int, ...], ...]:
    """The key of a set of device_sets entries: equal for the same entries
    in any order."""
    return tuple(sorted(_entry_key(e) for e in entries))


def measure_sets(tool: str, pool_path: str, sets: Dict[int, List],
                 args, draw: int = 0, extra: Sequence[str] = ()
                 ) -> Dict[int, float]:
    """Median forward + backward + SGD time (ms) of each non-empty set,
    timed by one neuroshard-collect run in the order of `sets` on draw
    `draw` of the index streams (an empty set costs 0); `extra` are more
    of the tool's options."""
    costs = {k: 0.0 for k, ids in sets.items() if not ids}
    pending = {k: ids for k, ids in sets.items() if ids}
    if not pending:
        return costs
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl",
                                     delete=False) as f:
        for k, ids in pending.items():
            f.write(json.dumps({"id": k, "tables": ids}) + "\n")
        sets_path = f.name
    command = [tool, "--pool", pool_path, "--sets", sets_path] + \
        collect_options(args, draw) + list(extra)
    try:
        result = subprocess.run(command, capture_output=True, text=True)
    finally:
        os.unlink(sets_path)
    if result.returncode != 0:
        raise SetTimingError("'%s' exited with %d: %s" %
                              (shlex.join(command), result.returncode,
                               result.stderr.strip()))
    for line in result.stdout.splitlines():
        try:
            sample = json.loads(line)
            costs[int(sample["id"])] = float(sample["cost_ms"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            raise SetTimingError("'%s' printed an unexpected line: %.200s"
                                  % (tool, line))
    missing = sorted(set(pending) - set(costs))
    if missing:
        raise SetTimingError("'%s' timed no set %s" % (tool, missing[:5]))
    return costs


def measure_repeated(sets: Dict[int, List[int]], repeats: int,
                     measure: Callable[[Dict[int, List[int]], int],
                                       Dict[int, float]],
                     runs: Optional[Dict[int, List[float]]] = None,
                     draws: int = 1) -> Dict[int, float]:
    """Times `sets` `repeats` times with `measure` (one tool run over a dict
    of sets, timed in the dict's order, on the draw of the index streams it
    is given): in the given order on even repeats, reversed on odd ones, so
    that no set is always timed first or last, and repeat r on draw r mod
    `draws`. Returns per set the median over repeats; with `runs`, also
    fills it with each set's cost in every repeat, in repeat order."""
    if repeats < 1:
        raise SetTimingError("--measure-repeats must be at least 1, got %d"
                              % repeats)
    if draws < 1:
        raise SetTimingError("--draws must be at least 1, got %d" % draws)
    keys = list(sets)
    samples = {k: [] for k in keys}
    for r in range(repeats):
        order = keys if r % 2 == 0 else keys[::-1]
        costs = measure({k: sets[k] for k in order}, r % draws)
        for k in keys:
            samples[k].append(float(costs[k]))
    if runs is not None:
        runs.update(samples)
    return {k: float(np.median(v)) for k, v in samples.items()}


def add_set(keys: Dict, sets: Dict[int, List], ids: List) -> int:
    """The number of set `ids` among the distinct sets of a measurement
    (`keys`: set_key to number; `sets`: number to its entries, in the order
    of the first `ids` that held them: device_sets' order, the one the
    fused lookup runs), numbering it next where it is new."""
    key = set_key(ids)
    if key not in keys:
        keys[key] = len(keys)
        sets[keys[key]] = list(ids)
    return keys[key]


def collect_options(args, draw: int = 0) -> List[str]:
    """neuroshard-collect's timing options, after --pool and --sets, on draw
    `draw` of the index streams (seed --seed + draw)."""
    return ["--device", "cpu", "--batch-size", str(args.batch_size),
            "--warmup",
            str(args.warmup), "--iters", str(args.iters), "--seed",
            str(args.seed + draw)]

