#===- table_pool.py - The synthetic DLRM-like table pool ------------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""The pool of synthetic DLRM-like tables that cost data is measured on
(docs/design.md §6).

Each *base table* gets, from (seed, base id) alone:
  rows            log-uniform over [1e2, 1e7];
  pooling_factor  log-normal (heavy tail) with mean POOLING_MEAN;
  skew            a Zipf exponent; the table's index stream draws ranks from a
                  bounded power law with that exponent and maps them to rows
                  through a random affine permutation (hot rows scattered);
  access_hist     the 17-bin histogram (docs/design.md §3) of that index
                  stream, `sample_bags * pooling_factor` indices long.
The pool re-uses every base table at each width of POOL_DIMS (the access
pattern does not depend on the width), and splits the base tables into a
train and a disjoint test part.

The random numbers, the index streams and their histograms are the C++
input generator's (neuroshard._core: Random, mix_seed, zipf_index_stream,
access_histogram; lib/Runtime/InputGenerator.cpp), so a stream is the same
on every machine and numpy version, and the same as the tools'.
"""

import argparse
import hashlib
import json
import math
import sys
from typing import Dict, List, Optional, Sequence

import numpy as np

from neuroshard import _core
from neuroshard import jsonio

POOL_DIMS = (128, 64, 32, 16, 8, 4)
MIN_ROWS, MAX_ROWS = 1e2, 1e7
POOLING_MEAN = 16.0
# Log-normal shape of the pooling factors: sigma 1 puts about 10% of the
# tables above 2.5x the mean, like the long tail of the public traces.
POOLING_SIGMA = 1.0
MAX_POOLING = 400.0
# Zipf exponents of the index streams, uniform in this range. With
# DEFAULT_SAMPLE_BAGS this puts the mean histogram over the base tables near
# the public DLRM traces' (0.47, 0.15, 0.14, 0.11, 0.07, 0.03, 0.01, ...):
# large tables have most sampled rows hit once, small or skewed ones a few
# very hot rows (tests/test_table_pool.py checks the aggregate).
MIN_SKEW, MAX_SKEW = 1.0, 2.2
DEFAULT_SAMPLE_BAGS = 1024
DEFAULT_TEST_FRACTION = 0.2
# The large tier: tables the size of real GPU workloads' (MLPerf DCNv2's
# 40M-row tables, the HugeCTR benchmark configurations' 50M-500M), at the
# widths of their wide tables, with pooling factors up to their 200. Rows
# and pooling factors are log-uniform over these ranges. Too large for a set
# whole, they enter sets as row pieces (collect.sample_large_set). A pool
# without large tables is what it was before the tier existed.
LARGE_TIER = "large"
LARGE_MIN_ROWS, LARGE_MAX_ROWS = 1e7, 2e8
LARGE_DIMS = (512, 256)
LARGE_MIN_POOLING, LARGE_MAX_POOLING = 1.0, 200.0
# Keys the large tier's draws apart from the other base tables'.
_LARGE_KEY = 0x1A26E

class PoolError(Exception):
    """A pool file that cannot be used; the message names the file."""


def _log_uniform(random, low: float, high: float) -> float:
    return 10.0**(math.log10(low) + random.uniform() *
                  (math.log10(high) - math.log10(low)))


def _base_table(seed: int, base: int, sample_bags: int,
                large: bool = False) -> Dict:
    """The statistics of base table `base` (of the large tier with `large`),
    a pure function of (seed, base, large)."""
    random = _core.Random(_core.mix_seed(
        _core.mix_seed(seed, _LARGE_KEY) if large else seed, base))
    if large:
        rows = int(round(_log_uniform(random, LARGE_MIN_ROWS,
                                      LARGE_MAX_ROWS)))
        pooling = round(_log_uniform(random, LARGE_MIN_POOLING,
                                     LARGE_MAX_POOLING), 2)
    else:
        rows = int(round(_log_uniform(random, MIN_ROWS, MAX_ROWS)))
        # Box-Muller normal for the log-normal pooling factor.
        u1, u2 = max(random.uniform(), 1e-300), random.uniform()
        normal = math.sqrt(-2.0 * math.log(u1)) * \
            math.cos(2.0 * math.pi * u2)
        mu = math.log(POOLING_MEAN) - 0.5 * POOLING_SIGMA**2
        pooling = min(MAX_POOLING,
                      max(1.0, math.exp(mu + POOLING_SIGMA * normal)))
        pooling = round(pooling, 2)
    skew = round(MIN_SKEW + random.uniform() * (MAX_SKEW - MIN_SKEW), 4)
    length = max(1, int(round(sample_bags * pooling)))
    stream = _core.zipf_index_stream(rows, skew, length, random.next())
    return {"rows": rows, "pooling_factor": pooling, "skew": skew,
            "access_hist": _core.access_histogram(stream)}


def _test_bases(seed: int, base_tables: int, test_fraction: float) -> set:
    """The base tables of the test split: a seeded choice of
    round(test_fraction * base_tables), at least one of each split when
    there are two or more tables."""
    count = int(round(test_fraction * base_tables))
    if base_tables >= 2 and 0.0 < test_fraction < 1.0:
        count = min(max(count, 1), base_tables - 1)
    keys = _core.Random(_core.mix_seed(seed, 0x7E57)).uniform_block(
        base_tables)
    return set(int(b) for b in np.argsort(keys, kind="stable")[:count])


def generate_pool(seed: int, base_tables: int,
                  sample_bags: int = DEFAULT_SAMPLE_BAGS,
                  test_fraction: float = DEFAULT_TEST_FRACTION,
                  dims: Sequence[int] = POOL_DIMS,
                  large_tables: int = 0,
                  large_dims: Sequence[int] = LARGE_DIMS) -> Dict:
    """The pool as written to pool.json. Table ids are base * len(dims) +
    (index of the dim), so a table's id, statistics and split depend only
    on (seed, base, dim) and not on how many base tables there are. The
    `large_tables` base tables of the large tier follow, each at every
    width of `large_dims`, their tables marked "tier": "large", with base
    numbers and ids after the others' and a test split of their own."""
    if base_tables < 1:
        raise ValueError("base_tables must be at least 1, got %d" %
                         base_tables)
    if sample_bags < 1:
        raise ValueError("sample_bags must be at least 1, got %d" %
                         sample_bags)
    if not 0.0 <= test_fraction < 1.0:
        raise ValueError("test_fraction must be in [0, 1), got %g" %
                         test_fraction)
    if large_tables < 0:
        raise ValueError("large_tables must be at least 0, got %d" %
                         large_tables)
    for dim in list(dims) + (list(large_dims) if large_tables else []):
        violation = _core.check_dim(dim)
        if violation is not None:
            raise ValueError("pool dims: %s" % violation)
    test = _test_bases(seed, base_tables, test_fraction)
    tables = []
    for base in range(base_tables):
        stats = _base_table(seed, base, sample_bags)
        for k, dim in enumerate(dims):
            tables.append({
                "id": base * len(dims) + k,
                "base": base,
                "split": "test" if base in test else "train",
                "name": "t%04d_d%d" % (base, dim),
                "rows": stats["rows"],
                "dim": int(dim),
                "pooling_factor": stats["pooling_factor"],
                "skew": stats["skew"],
                "access_hist": stats["access_hist"],
            })
    pool = {"seed": seed, "base_tables": base_tables,
            "sample_bags": sample_bags, "test_fraction": test_fraction,
            "dims": [int(d) for d in dims], "tables": tables}
    if large_tables:
        large_test = _test_bases(_core.mix_seed(seed, _LARGE_KEY),
                                 large_tables, test_fraction)
        first_id = base_tables * len(dims)
        for j in range(large_tables):
            stats = _base_table(seed, j, sample_bags, large=True)
            for k, dim in enumerate(large_dims):
                tables.append({
                    "id": first_id + j * len(large_dims) + k,
                    "base": base_tables + j,
                    "split": "test" if j in large_test else "train",
                    "name": "L%04d_d%d" % (j, dim),
                    "tier": LARGE_TIER,
                    "rows": stats["rows"],
                    "dim": int(dim),
                    "pooling_factor": stats["pooling_factor"],
                    "skew": stats["skew"],
                    "access_hist": stats["access_hist"],
                })
        pool["large_tables"] = large_tables
        pool["large_dims"] = [int(d) for d in large_dims]
    return pool


def is_large(table: Dict) -> bool:
    """Whether a pool table is of the large tier."""
    return table.get("tier") == LARGE_TIER


def table_bytes(table: Dict, element_bytes: int = 4) -> int:
    """Memory of a whole pool table (f32 by default)."""
    return int(table["rows"]) * int(table["dim"]) * element_bytes


def pool_fingerprint(pool: Dict) -> str:
    """A short hash of the tables (ids and statistics), stored with every
    sample so that samples are never paired with another pool."""
    canonical = json.dumps(pool["tables"], sort_keys=True,
                           separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def pool_summary(pool: Dict) -> Dict:
    """Aggregate statistics over the base tables, to compare with
    docs/design.md §6."""
    bases = {}
    for table in pool["tables"]:
        bases.setdefault(table["base"], table)
    hists = np.array([t["access_hist"] for t in bases.values()])
    rows = np.array([t["rows"] for t in bases.values()], dtype=np.float64)
    pooling = np.array([t["pooling_factor"] for t in bases.values()])
    splits = [t["split"] for t in bases.values()]
    return {
        "base_tables": len(bases),
        "tables": len(pool["tables"]),
        "train_base_tables": splits.count("train"),
        "test_base_tables": splits.count("test"),
        "rows_min": int(rows.min()),
        "rows_max": int(rows.max()),
        "pooling_mean": float(pooling.mean()),
        "pooling_max": float(pooling.max()),
        "mean_access_hist": hists.mean(axis=0).tolist(),
    }


_TABLE_FIELDS = {"id": int, "base": int, "split": str, "name": str,
                 "rows": int, "dim": int, "pooling_factor": (int, float),
                 "access_hist": list}
# The fields a pool table shares with the planner's task tables.
_TASK_FIELDS = ("name", "rows", "dim", "pooling_factor", "access_hist")


def load_pool(path: str) -> Dict:
    """Reads and checks pool.json; errors name the file and the problem."""
    pool = jsonio.read_json(path, "pool", PoolError)
    if not isinstance(pool, dict) or not isinstance(pool.get("tables"), list):
        raise PoolError("pool '%s': expected an object with a \"tables\" "
                        "list" % path)
    if not pool["tables"]:
        raise PoolError("pool '%s' has no tables" % path)
    seen = set()
    for i, table in enumerate(pool["tables"]):
        where = "pool '%s': tables[%d]" % (path, i)
        if not isinstance(table, dict):
            raise PoolError("%s is not an object" % where)
        for field, kind in _TABLE_FIELDS.items():
            if field not in table:
                raise PoolError("%s has no \"%s\"" % (where, field))
            value = table[field]
            if not isinstance(value, kind) or isinstance(value, bool):
                raise PoolError("%s: \"%s\" has the wrong type (%r)" %
                                (where, field, value))
        if table["split"] not in ("train", "test"):
            raise PoolError("%s: split must be \"train\" or \"test\", got %r" %
                            (where, table["split"]))
        if table["id"] in seen:
            raise PoolError("%s: duplicate table id %d" % (where, table["id"]))
        seen.add(table["id"])
    bags = pool.get("sample_bags")
    if not isinstance(bags, int) or isinstance(bags, bool) or bags < 1:
        raise PoolError("pool '%s': \"sample_bags\" must be a positive "
                        "integer, got %r" % (path, bags))
    # The rules every reader of tables applies: the planner's task reader
    # checks the tables (naming them by index, as here), then each histogram
    # must be one a batch of sample_bags bags can make.
    try:
        _core.parse_task(json.dumps({"tables": [
            {field: table[field] for field in _TASK_FIELDS}
            for table in pool["tables"]]}))
    except _core.NeuroShardError as e:
        raise PoolError("pool '%s': %s" % (path, e)) from None
    for i, table in enumerate(pool["tables"]):
        violation = _core.check_access_histogram_for_batch(
            table["access_hist"], table["rows"], table["pooling_factor"],
            bags)
        if violation is not None:
            raise PoolError("pool '%s': tables[%d] ('%s'): %s" %
                            (path, i, table["name"], violation))
    return pool


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m neuroshard.table_pool",
        description="Generates the synthetic DLRM-like table pool that cost "
        "data is collected on (docs/design.md §6). Deterministic in its "
        "options.")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--base-tables", type=int, required=True,
                        help="base tables; the pool has one table per base "
                        "table and dim (%s)" %
                        ", ".join(str(d) for d in POOL_DIMS))
    parser.add_argument("--out", required=True, help="pool JSON file")
    parser.add_argument("--sample-bags", type=int,
                        default=DEFAULT_SAMPLE_BAGS,
                        help="bags in the index sample each histogram is "
                        "computed from (default %(default)s)")
    parser.add_argument("--test-fraction", type=float,
                        default=DEFAULT_TEST_FRACTION,
                        help="fraction of base tables held out as the test "
                        "split (default %(default)s)")
    args = parser.parse_args(argv)
    try:
        pool = generate_pool(args.seed, args.base_tables, args.sample_bags,
                             args.test_fraction)
    except ValueError as e:
        parser.error(str(e))
    try:
        with open(args.out, "w") as f:
            json.dump(pool, f)
            f.write("\n")
    except OSError as e:
        print("table_pool: error: cannot write '%s': %s" %
              (args.out, e.strerror), file=sys.stderr)
        return 1
    summary = pool_summary(pool)
    print("wrote %s: %d tables (%d base tables: %d train, %d test), rows "
          "%d..%d, mean pooling %.1f (max %.1f)" %
          (args.out, summary["tables"], summary["base_tables"],
           summary["train_base_tables"], summary["test_base_tables"],
           summary["rows_min"], summary["rows_max"], summary["pooling_mean"],
           summary["pooling_max"]))
    print("mean access histogram: " +
          " ".join("%.3f" % v for v in summary["mean_access_hist"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
