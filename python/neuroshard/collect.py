#===- collect.py - Compute-cost data collection driver --------------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""Measures compute-cost samples (docs/design.md §6) by driving the C++
timing tool.

Sample k is a set of 1..15 tables from the pool's train split, with
distinct base tables and a total size under a memory cap, drawn from
mix_seed(seed, k) alone: the same (pool, seed, k) is always the same set, so
a run can stop anywhere and resume. With --row-pieces F, each table of a set
is, with probability F, replaced by one row piece of it (one of 2..8 equal
row blocks), as the planner cuts a row-sharded table: an entry of a set is a
pool table id or {"table": ID, "rows": [FIRST, END]}. The driver writes a
batch of sets to a sets file, runs

  neuroshard-collect --pool POOL --sets SETS --device D --batch-size B
                     --warmup W --iters N --seed S [--max-rows R]

which compiles the fused kernel once and prints one JSON line per set
({"id", "cost_ms", "min_ms", "max_ms", "runs", "device", "hardware",
"batch_size"}), and appends each result as it arrives to the dataset, a JSON
Lines file with one sample per line (SAMPLE_FIELDS; docs/cost-model.md):

  {"id": 17, "tables": [402, 1187, 95], "cost_ms": 1.93, "min_ms": 1.90,
   "max_ms": 2.11, "runs": 10, "device": "cpu", "hardware": "AMD EPYC ...",
   "batch_size": 4096, "warmup": 3, "seed": 0, "pool": "3f2a9c0e5d1b7a64"}

"pool" is the pool's fingerprint (table_pool.pool_fingerprint): samples
never get paired with another pool.
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Sequence, TextIO

import numpy as np

from neuroshard import _core
from neuroshard import jsonio
from neuroshard import table_pool as tp

MAX_TABLES_PER_SET = 15
# A set's tables take at most this much memory unless --memory-cap-gb says.
DEFAULT_MEMORY_CAP_GB = 4.0
# A sampled row piece is one of 2..MAX_ROW_PIECES equal row blocks.
MAX_ROW_PIECES = 8
# Keys the row-piece draws apart from the table draws of the same sample.
_PIECE_KEY = 0x90B1
# A large sample (sample_large_set): at most this many row pieces of the
# large tier's tables, and this many other tables whole beside them.
MAX_LARGE_PER_SET = 3
MAX_SMALL_WITH_LARGE = 4
# Keys the large samples' draws apart from the others'.
_LARGE_KEY = 0x1A26
TOOL_NAME = "neuroshard-collect"
# Fields of a dataset line and their types.
SAMPLE_FIELDS = {"id": int, "tables": list, "cost_ms": (int, float),
                 "min_ms": (int, float), "max_ms": (int, float),
                 "runs": int, "device": str, "hardware": str,
                 "batch_size": int, "warmup": int, "seed": int, "pool": str}
# Fields of a timing-tool line that the dataset copies.
TOOL_FIELDS = ("cost_ms", "min_ms", "max_ms", "runs", "device", "hardware",
               "batch_size")
# The devices of samples timed on a GPU by neuroshard-cuda-runner
# (neuroshard.gpu_calibrate), or under its emulation.
GPU_DEVICES = ("cuda", "cuda-emulated")
# A collection's settings: every sample of one dataset shares them.
SETTING_FIELDS = ("device", "batch_size", "warmup", "runs", "seed", "pool")


class CollectError(Exception):
    """A problem that stops collection; the message names the file or the
    tool."""


def is_row_piece(entry) -> bool:
    """Whether a set's entry is a row piece ({"table", "rows"}) rather than
    a whole pool table (its id)."""
    return isinstance(entry, dict)


def entry_table(entry) -> int:
    """The pool table id of a set's entry."""
    return entry["table"] if is_row_piece(entry) else entry


def entry_key(entry):
    """A hashable key of a set's entry: the id of a whole table, (id, first,
    end) of a row piece."""
    if is_row_piece(entry):
        return (entry["table"], entry["rows"][0], entry["rows"][1])
    return entry


def entry_stats(entry, table: Dict) -> Dict:
    """What the cost model sees of a set's entry of pool table `table`: the
    table itself, or for its rows [first, end), a fraction f of its rows, a
    table of end - first rows with pooling factor f times the table's and
    the table's histogram (the planner's pieceSpec; docs/cost-model.md)."""
    if not is_row_piece(entry):
        return table
    first, end = entry["rows"]
    piece = dict(table)
    piece["rows"] = end - first
    piece["pooling_factor"] = table["pooling_factor"] * \
        (end - first) / table["rows"]
    return piece


# What an entry of a set is, for messages.
_ENTRY_SHAPE = 'a pool table id or a row piece {"table": ID, "rows": ' \
    '[FIRST, END]}'


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def row_piece_problem(entry, table: Optional[Dict]) -> Optional[str]:
    """Why a set's entry is neither a table id nor a row piece of `table`
    (None if it is one; with `table` None only the entry's shape and its
    range's order are checked)."""
    if _is_int(entry):
        return None
    rows = entry.get("rows") if isinstance(entry, dict) else None
    if not (isinstance(entry, dict) and set(entry) == {"table", "rows"}
            and _is_int(entry["table"]) and isinstance(rows, list)
            and len(rows) == 2 and all(_is_int(r) for r in rows)):
        return "entry %s is not %s" % (json.dumps(entry), _ENTRY_SHAPE)
    first, end = rows
    limit = None if table is None else table["rows"]
    if first < 0 or first >= end or (limit is not None and end > limit):
        return "row piece of table %d: rows [%d, %d) are not a range of %s" \
            % (entry["table"], first, end, "rows (0 <= first < end)"
               if limit is None else "its %d rows" % limit)
    return None


def _take_whole(tables: List[Dict], order, count: int, bases: set,
                total: int, memory_cap_bytes: int):
    """Up to `count` of `tables` whole, in `order`, each taken if its base
    table is not in `bases` yet and the bytes stay under the cap; returns
    their ids and the bytes with them (`bases` gains theirs)."""
    taken = []
    for k in order:
        if len(taken) == count:
            break
        table = tables[int(k)]
        size = tp.table_bytes(table)
        if table["base"] in bases or total + size > memory_cap_bytes:
            continue
        taken.append(int(table["id"]))
        bases.add(table["base"])
        total += size
    return taken, total


def sample_set(pool: Dict, seed: int, sample_id: int,
               memory_cap_bytes: int,
               max_tables: int = MAX_TABLES_PER_SET,
               split: str = "train", row_pieces: float = 0.0) -> List:
    """The entries of sample `sample_id`: a table count uniform in
    1..max_tables, then tables of the split (train unless said otherwise;
    never of the large tier, which sample_large_set draws) in a random
    order, each taken if its base table is not in the set yet
    and the set stays under the cap (so a set can hold fewer tables than
    drawn when the cap binds). Each table is then, with probability
    `row_pieces`, replaced by one of 2..MAX_ROW_PIECES equal row blocks of
    it (drawn from a stream of their own, so the tables are those drawn
    without pieces)."""
    train = [t for t in pool["tables"] if t["split"] == split
             and not tp.is_large(t)
             and tp.table_bytes(t) <= memory_cap_bytes]
    if not train:
        raise CollectError("no %s table of the pool fits under the "
                           "memory cap of %.3g GB" %
                           (split, memory_cap_bytes / 2**30))
    random = _core.Random(_core.mix_seed(seed, sample_id))
    count = 1 + random.below(max_tables)
    order = np.argsort(random.uniform_block(len(train)), kind="stable")
    chosen, _ = _take_whole(train, order, count, set(), 0, memory_cap_bytes)
    if row_pieces <= 0.0:
        return chosen
    by_id = {t["id"]: t for t in train}
    draws = _core.Random(_core.mix_seed(_core.mix_seed(seed, _PIECE_KEY),
                                        sample_id))
    entries = []
    for table_id in chosen:
        rows = by_id[table_id]["rows"]
        cut = draws.uniform() < row_pieces
        pieces = min(rows, 2 + draws.below(MAX_ROW_PIECES - 1))
        which = draws.below(pieces)
        if not cut or pieces < 2:
            entries.append(table_id)
            continue
        entries.append({"table": table_id,
                        "rows": [rows * which // pieces,
                                 rows * (which + 1) // pieces]})
    return entries


def sample_large_set(pool: Dict, seed: int, sample_id: int,
                     memory_cap_bytes: int,
                     split: str = "train") -> List:
    """The entries of large sample `sample_id`: 1..MAX_LARGE_PER_SET
    tables of the pool's large tier (of `split`, distinct base tables),
    each a row piece of it: one of at least 2..MAX_ROW_PIECES equal row
    blocks, more where that is needed for the pieces to share the memory
    cap; then up to MAX_SMALL_WITH_LARGE other tables of the split whole,
    where they fit under the cap, as a device holds a large table's row
    block beside smaller ones. Drawn from mix_seed(seed, key, sample_id)
    alone, like sample_set."""
    large = [t for t in pool["tables"] if t["split"] == split
             and tp.is_large(t)]
    if not large:
        raise CollectError("the pool has no %s table of the large tier: "
                           "generate it with large tables" % split)
    random = _core.Random(_core.mix_seed(_core.mix_seed(seed, _LARGE_KEY),
                                         sample_id))
    count = 1 + random.below(MAX_LARGE_PER_SET)
    share = memory_cap_bytes // count
    order = np.argsort(random.uniform_block(len(large)), kind="stable")
    entries, bases, total = [], set(), 0
    for k in order:
        table = large[int(k)]
        if table["base"] in bases:
            continue
        rows = table["rows"]
        row_bytes = tp.table_bytes(table) // rows
        pieces = max(2 + random.below(MAX_ROW_PIECES - 1),
                     -(-rows * row_bytes // max(share, 1)))
        if rows // pieces < 1:
            continue
        which = random.below(pieces)
        first, end = rows * which // pieces, rows * (which + 1) // pieces
        entries.append({"table": int(table["id"]), "rows": [first, end]})
        bases.add(table["base"])
        total += (end - first) * row_bytes
        if len(entries) == count:
            break
    small = [t for t in pool["tables"] if t["split"] == split
             and not tp.is_large(t)]
    wanted = random.below(MAX_SMALL_WITH_LARGE + 1)
    order = np.argsort(random.uniform_block(len(small)), kind="stable") \
        if small else []
    taken, _ = _take_whole(small, order, wanted, bases, total,
                           memory_cap_bytes)
    return entries + taken


def load_samples(path: str, allow_missing: bool = False) -> List[Dict]:
    """The samples of a dataset file, checked line by line; errors name the
    file and the line. A missing file is an error unless allow_missing (then
    it holds no samples). Duplicate ids are errors."""
    if allow_missing and not os.path.exists(path):
        return []
    samples, seen = [], set()
    for _, where, sample in jsonio.json_lines(path, "dataset", CollectError):
        check_sample(sample, where)
        if sample["id"] in seen:
            raise CollectError("%s: sample id %d appears twice" %
                               (where, sample["id"]))
        seen.add(sample["id"])
        samples.append(sample)
    return samples


def check_fields(sample, fields, where: str, error=None) -> None:
    """Checks that `sample` is a JSON object with every field of `fields`
    (name -> Python type; a bool is no number) or raises `error`
    (CollectError by default) naming the place and the field."""
    error = error or CollectError
    if not isinstance(sample, dict):
        raise error("%s: expected a JSON object" % where)
    for field, kind in fields.items():
        if field not in sample:
            raise error("%s has no \"%s\"" % (where, field))
        if not isinstance(sample[field], kind) or isinstance(sample[field],
                                                              bool):
            raise error("%s: \"%s\" has the wrong type (%r)" %
                        (where, field, sample[field]))


def check_sample(sample, where: str) -> None:
    check_fields(sample, SAMPLE_FIELDS, where)
    tables = sample["tables"]
    if not tables:
        raise CollectError("%s: \"tables\" must be a non-empty list of pool "
                           "table ids and row pieces" % where)
    for entry in tables:
        why = row_piece_problem(entry, None)
        if why:
            raise CollectError("%s: %s" % (where, why))
    if not (math.isfinite(sample["cost_ms"]) and sample["cost_ms"] > 0):
        raise CollectError("%s: cost_ms must be a finite number > 0, got %r"
                           % (where, sample["cost_ms"]))


def check_one_setting(samples: Sequence[Dict], path: str) -> Dict:
    """The settings all samples share; an error if they differ (a dataset
    measured on two machines or batch sizes cannot train one model)."""
    settings = {}
    for field in SETTING_FIELDS + ("hardware",):
        values = sorted(set(str(s[field]) for s in samples))
        if len(values) > 1:
            raise CollectError("dataset '%s' mixes samples with different "
                               "%s: %s" % (path, field, ", ".join(values)))
        settings[field] = samples[0][field]
    return settings


def find_tool(tool: Optional[str]) -> str:
    """The timing tool: `tool` if given, else neuroshard-collect on PATH,
    else the repository's build/bin."""
    if tool:
        if not (os.path.isfile(tool) and os.access(tool, os.X_OK)):
            raise CollectError("timing tool '%s' is not an executable file"
                               % tool)
        return tool
    found = shutil.which(TOOL_NAME)
    if found:
        return found
    repo = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    candidate = os.path.join(repo, "build", "bin", TOOL_NAME)
    if os.access(candidate, os.X_OK):
        return candidate
    raise CollectError("cannot find %s on PATH or in %s; build it "
                       "(ninja -C build %s) or pass --tool" %
                       (TOOL_NAME, os.path.dirname(candidate), TOOL_NAME))


def _parse_tool_line(line: str, tool: str, pending: Dict[int, List[int]],
                     args) -> Dict:
    """A sample from one line of the tool's output, checked against what was
    asked of it."""
    try:
        result = json.loads(line)
    except json.JSONDecodeError as e:
        raise CollectError("%s printed a line that is not JSON (%s): %r" %
                           (tool, e, line[:200]))
    if not isinstance(result, dict) or not isinstance(result.get("id"), int):
        raise CollectError("%s printed a result without an integer \"id\": %r"
                           % (tool, line[:200]))
    sample_id = result["id"]
    if sample_id not in pending:
        raise CollectError("%s returned set %d, which was not asked for or "
                           "came twice" % (tool, sample_id))
    missing = [f for f in TOOL_FIELDS if f not in result]
    if missing:
        raise CollectError("%s: the result of set %d has no %s" %
                           (tool, sample_id, ", ".join(missing)))
    if result["device"] != args.device or result["batch_size"] != \
            args.batch_size:
        raise CollectError("%s measured set %d on %s with batch %s, but %s "
                           "with batch %d was asked for" %
                           (tool, sample_id, result["device"],
                            result["batch_size"], args.device,
                            args.batch_size))
    if args.hardware is not None and result["hardware"] != args.hardware:
        raise CollectError("%s measured set %d on '%s', but the dataset was "
                           "measured on '%s'" % (tool, sample_id,
                                                 result["hardware"],
                                                 args.hardware))
    sample = {"id": sample_id, "tables": pending.pop(sample_id)}
    for field in TOOL_FIELDS:
        sample[field] = result[field]
    sample.update(warmup=args.warmup, seed=args.seed, pool=args.fingerprint)
    check_sample(sample, "%s's result for set %d" % (tool, sample_id))
    return sample


def run_batch(tool: str, sets: Dict[int, List[int]], args, sets_path: str,
              out: TextIO) -> int:
    """Times one batch of sets with the tool, appending each sample to `out`
    as soon as the tool prints it. Returns the number of samples."""
    with open(sets_path, "w") as f:
        for sample_id, tables in sets.items():
            f.write(json.dumps({"id": sample_id, "tables": tables}) + "\n")
    command = [tool, "--pool", args.pool, "--sets", sets_path,
               "--device", args.device, "--batch-size", str(args.batch_size),
               "--warmup", str(args.warmup), "--iters", str(args.iters),
               "--seed", str(args.seed)]
    if args.max_rows is not None:
        command += ["--max-rows", str(args.max_rows)]
    pending = dict(sets)
    written = 0
    # stderr goes to a file: a chatty tool must not block on a full pipe
    # while stdout is being read.
    with tempfile.TemporaryFile("w+") as errors, subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=errors,
            text=True) as process:
        try:
            for line in process.stdout:
                if not line.strip():
                    continue
                sample = _parse_tool_line(line, tool, pending, args)
                if args.hardware is None:
                    args.hardware = sample["hardware"]
                out.write(json.dumps(sample) + "\n")
                out.flush()
                written += 1
        except CollectError:
            process.kill()
            raise
        status = process.wait()
        errors.seek(0)
        stderr = errors.read()
    if status != 0:
        raise CollectError("%s failed (exit status %d) after %d of %d sets: "
                           "%s" % (tool, status, written, len(sets),
                                   stderr.strip() or "no message"))
    if pending:
        raise CollectError("%s exited without timing sets %s" %
                           (tool, ", ".join(str(i) for i in sorted(pending))))
    return written


def _format_duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return "%ds" % seconds
    if seconds < 3600:
        return "%dm%02ds" % divmod(seconds, 60)
    return "%dh%02dm" % (seconds // 3600, seconds % 3600 // 60)


def collect(args, log: Optional[TextIO] = None) -> int:
    """Collects samples 0..args.samples-1 that the dataset lacks, reporting
    progress to `log` (default stderr). Returns how many were added."""
    log = log or sys.stderr
    pool = tp.load_pool(args.pool)
    args.fingerprint = tp.pool_fingerprint(pool)
    existing = load_samples(args.out, allow_missing=True)
    for sample in existing:
        asked = {"device": args.device, "batch_size": args.batch_size,
                 "warmup": args.warmup, "runs": args.iters,
                 "seed": args.seed, "pool": args.fingerprint}
        for field, value in asked.items():
            if sample[field] != value:
                raise CollectError(
                    "dataset '%s' holds sample %d with %s %r, but this run "
                    "asks for %r: resume with the same options and pool, or "
                    "write to another file" % (args.out, sample["id"], field,
                                               sample[field], value))
    args.hardware = existing[0]["hardware"] if existing else None
    done = set(s["id"] for s in existing)
    todo = [k for k in range(args.samples) if k not in done]
    print("collect: %d of %d samples already in %s, %d to measure" %
          (args.samples - len(todo), args.samples, args.out, len(todo)),
          file=log)
    if not todo:
        return 0
    tool = find_tool(args.tool)
    cap = int(args.memory_cap_gb * 2**30)
    sets_path = args.out + ".sets.jsonl"
    start = time.monotonic()
    added = 0
    with open(args.out, "a") as out:
        for begin in range(0, len(todo), args.sets_per_run):
            batch = todo[begin:begin + args.sets_per_run]
            sets = {k: sample_set(pool, args.seed, k, cap,
                                  row_pieces=args.row_pieces)
                    for k in batch}
            batch_start = time.monotonic()
            added += run_batch(tool, sets, args, sets_path, out)
            now = time.monotonic()
            rate = added / max(now - start, 1e-9)
            left = len(todo) - added
            print("collect: %d/%d samples (%.1f%%), this run %.2f samples/s, "
                  "overall %.2f samples/s, about %s left" %
                  (args.samples - left, args.samples,
                   100.0 * (args.samples - left) / args.samples,
                   len(batch) / max(now - batch_start, 1e-9), rate,
                   _format_duration(left / rate if rate > 0 else 0.0)),
                  file=log, flush=True)
    os.remove(sets_path)
    return added


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m neuroshard.collect",
        description="Measures compute-cost samples of the pool's train "
        "tables with the neuroshard-collect timing tool and appends them to "
        "a dataset (JSON Lines). Re-running with the same options resumes.")
    parser.add_argument("--pool", required=True, help="pool JSON file "
                        "(python3 -m neuroshard.table_pool)")
    parser.add_argument("--out", required=True, help="dataset JSONL file "
                        "(appended to)")
    parser.add_argument("--samples", type=int, required=True,
                        help="collect sample ids 0..SAMPLES-1")
    parser.add_argument("--tool", default=None,
                        help="timing tool (default: %s on PATH, else "
                        "build/bin/%s)" % (TOOL_NAME, TOOL_NAME))
    parser.add_argument("--device", default="cpu",
                        help="device to time on, passed to the tool "
                        "(default %(default)s)")
    parser.add_argument("--batch-size", type=int, default=4096)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iters", type=int, default=10,
                        help="timed runs per set; the median is the cost "
                        "(at least 10)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the sets and of the tool's inputs")
    parser.add_argument("--memory-cap-gb", type=float,
                        default=DEFAULT_MEMORY_CAP_GB,
                        help="most GB (2^30 bytes, f32) of tables in one set")
    parser.add_argument("--max-rows", type=int, default=None,
                        help="passed to the tool: most rows it allocates "
                        "per table")
    parser.add_argument("--sets-per-run", type=int, default=50,
                        help="sets timed by one run of the tool")
    parser.add_argument("--row-pieces", type=float, default=0.0,
                        help="probability that a set's table is replaced "
                        "by one of its row pieces (default %(default)s)")
    args = parser.parse_args(argv)
    if not 0.0 <= args.row_pieces <= 1.0:
        parser.error("--row-pieces must be a probability in [0, 1], got %g"
                     % args.row_pieces)
    if args.samples < 1 or args.batch_size < 1 or args.warmup < 0:
        parser.error("--samples and --batch-size must be positive and "
                     "--warmup not negative")
    if args.iters < 10:
        parser.error("--iters must be at least 10 (the cost is a median of "
                     ">= 10 timed runs), got %d" % args.iters)
    if args.memory_cap_gb <= 0 or args.sets_per_run < 1:
        parser.error("--memory-cap-gb and --sets-per-run must be positive")
    try:
        added = collect(args)
    except (CollectError, tp.PoolError) as e:
        print("collect: error: %s" % e, file=sys.stderr)
        return 1
    print("collect: added %d samples to %s" % (added, args.out),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
