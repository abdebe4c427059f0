#===- table_pool.py - The synthetic DLRM-like table pool ------------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""The pool of synthetic DLRM-like tables that cost data is measured on
(DESIGN §6).

Each *base table* gets, from (seed, base id) alone:
  rows            log-uniform over [1e2, 1e7];
  pooling_factor  log-normal (heavy tail) with mean POOLING_MEAN;
  skew            a Zipf exponent; the table's index stream draws ranks from a
                  bounded power law with that exponent and maps them to rows
                  through a random affine permutation (hot rows scattered);
  access_hist     the 17-bin histogram (DESIGN §3) of that index stream,
                  `sample_bags * pooling_factor` indices long.
The pool re-uses every base table at each width of POOL_DIMS (the access
pattern does not depend on the width), and splits the base tables into a
train and a disjoint test part.

Randomness comes from a twin of the C++ generator in
lib/Runtime/InputGenerator.cpp (SplitMix64, mixSeed), so a stream is the same
on every machine and numpy version, and access_histogram() is a twin of the
C++ accessHistogram(): the two agree bin for bin.
"""

import argparse
import hashlib
import json
import math
import sys
from typing import Dict, List, Optional, Sequence

import numpy as np

from neuroshard import jsonio
from neuroshard import table_rules
from neuroshard.table_rules import NUM_ACCESS_BINS

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

_MASK64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15


class PoolError(Exception):
    """A pool file that cannot be used; the message names the file."""


def _mix64(z):
    """SplitMix64's output function, on Python ints or uint64 arrays."""
    if isinstance(z, np.ndarray):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


class SplitMix64:
    """Twin of neuroshard::inputs::Random: the k-th output is
    mix(seed + k * golden), so a block of outputs is one vector expression."""

    def __init__(self, seed: int):
        self.state = seed & _MASK64

    def next(self) -> int:
        self.state = (self.state + _GOLDEN) & _MASK64
        return _mix64(self.state)

    def uniform(self) -> float:
        """Uniform in [0, 1), like Random::uniform()."""
        return (self.next() >> 11) * (1.0 / 9007199254740992.0)

    def below(self, bound: int) -> int:
        """Uniform in [0, bound), like Random::below()."""
        return self.next() % bound

    def next_block(self, count: int) -> np.ndarray:
        """The next `count` outputs as uint64 (what `count` next() calls
        return)."""
        steps = np.arange(1, count + 1, dtype=np.uint64)
        with np.errstate(over="ignore"):
            states = np.uint64(self.state) + steps * np.uint64(_GOLDEN)
            values = _mix64(states)
        self.state = (self.state + count * _GOLDEN) & _MASK64
        return values

    def uniform_block(self, count: int) -> np.ndarray:
        return (self.next_block(count) >> np.uint64(11)).astype(
            np.float64) * (1.0 / 9007199254740992.0)


def mix_seed(a: int, b: int) -> int:
    """Twin of neuroshard::inputs::mixSeed."""
    return SplitMix64(a ^ ((b * _GOLDEN + 0x632BE59BD9B4E019) & _MASK64)).next()


def access_histogram(indices: Sequence[int]) -> List[float]:
    """The 17-bin access histogram of an index stream (DESIGN §3), a twin of
    the C++ accessHistogram(): bin 0 holds the distinct rows hit exactly
    once, bin j (1..15) those hit in (2^(j-1), 2^j] times, bin 16 those hit
    more than 2^15 times; fractions of the distinct rows, all zero for an
    empty stream."""
    indices = np.asarray(indices, dtype=np.int64)
    if indices.size == 0:
        return [0.0] * NUM_ACCESS_BINS
    _, counts = np.unique(indices, return_counts=True)
    # Upper bounds 2^1..2^15 of bins 1..15; a count above 2^15 lands in 16.
    bounds = np.left_shift(1, np.arange(1, NUM_ACCESS_BINS - 1))
    bins = np.where(counts == 1, 0,
                    np.searchsorted(bounds, counts, side="left") + 1)
    hist = np.bincount(bins, minlength=NUM_ACCESS_BINS).astype(np.float64)
    return (hist / counts.size).tolist()


def _row_permutation(rows: int, random: SplitMix64):
    """An affine permutation k -> (k * m + o) mod rows with m coprime to
    rows, drawn like RowPermutation in InputGenerator.cpp."""
    offset = random.below(rows)
    multiplier = 1
    if rows > 1:
        for _ in range(64):
            candidate = random.below(rows - 1) + 1
            if math.gcd(candidate, rows) == 1:
                multiplier = candidate
                break
    return multiplier, offset


def index_stream(rows: int, skew: float, length: int,
                 seed: int) -> np.ndarray:
    """`length` row indices in [0, rows) whose popularity follows a bounded
    power law (Zipf exponent `skew`, rank r drawn from a density ~ x^-skew on
    [1, rows + 1)), ranks scattered over the rows by a random permutation.
    A pure function of its arguments."""
    random = SplitMix64(seed)
    multiplier, offset = _row_permutation(rows, random)
    u = random.uniform_block(length)
    top = float(rows) + 1.0
    if abs(skew - 1.0) < 1e-9:
        x = np.power(top, u)
    else:
        e = 1.0 - skew
        x = np.power((top**e - 1.0) * u + 1.0, 1.0 / e)
    ranks = np.minimum(np.floor(x).astype(np.int64) - 1, rows - 1)
    ranks = np.maximum(ranks, 0)
    return (ranks * multiplier + offset) % rows


def _base_table(seed: int, base: int, sample_bags: int) -> Dict:
    """The statistics of base table `base`, a pure function of (seed, base)."""
    random = SplitMix64(mix_seed(seed, base))
    rows = int(round(10.0**(math.log10(MIN_ROWS) + random.uniform() *
                           (math.log10(MAX_ROWS) - math.log10(MIN_ROWS)))))
    # Box-Muller normal for the log-normal pooling factor.
    u1, u2 = max(random.uniform(), 1e-300), random.uniform()
    normal = math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)
    mu = math.log(POOLING_MEAN) - 0.5 * POOLING_SIGMA**2
    pooling = min(MAX_POOLING, max(1.0, math.exp(mu + POOLING_SIGMA * normal)))
    pooling = round(pooling, 2)
    skew = round(MIN_SKEW + random.uniform() * (MAX_SKEW - MIN_SKEW), 4)
    length = max(1, int(round(sample_bags * pooling)))
    stream = index_stream(rows, skew, length, random.next())
    return {"rows": rows, "pooling_factor": pooling, "skew": skew,
            "access_hist": access_histogram(stream)}


def _test_bases(seed: int, base_tables: int, test_fraction: float) -> set:
    """The base tables of the test split: a seeded choice of
    round(test_fraction * base_tables), at least one of each split when
    there are two or more tables."""
    count = int(round(test_fraction * base_tables))
    if base_tables >= 2 and 0.0 < test_fraction < 1.0:
        count = min(max(count, 1), base_tables - 1)
    keys = SplitMix64(mix_seed(seed, 0x7E57)).uniform_block(base_tables)
    return set(int(b) for b in np.argsort(keys, kind="stable")[:count])


def generate_pool(seed: int, base_tables: int,
                  sample_bags: int = DEFAULT_SAMPLE_BAGS,
                  test_fraction: float = DEFAULT_TEST_FRACTION,
                  dims: Sequence[int] = POOL_DIMS) -> Dict:
    """The pool as written to pool.json. Table ids are base * len(dims) +
    (index of the dim), so a table's id, statistics and split depend only
    on (seed, base, dim) and not on how many base tables there are."""
    if base_tables < 1:
        raise ValueError("base_tables must be at least 1, got %d" %
                         base_tables)
    if sample_bags < 1:
        raise ValueError("sample_bags must be at least 1, got %d" %
                         sample_bags)
    if not 0.0 <= test_fraction < 1.0:
        raise ValueError("test_fraction must be in [0, 1), got %g" %
                         test_fraction)
    for dim in dims:
        if dim <= 0 or dim % 4:
            raise ValueError("pool dims must be positive multiples of 4, "
                             "got %d" % dim)
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
    return {"seed": seed, "base_tables": base_tables,
            "sample_bags": sample_bags, "test_fraction": test_fraction,
            "dims": [int(d) for d in dims], "tables": tables}


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
    """Aggregate statistics over the base tables, to compare with DESIGN §6."""
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
        # The rules every reader of tables applies, in their words.
        hist = table["access_hist"]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                   for v in hist):
            raise PoolError("%s ('%s'): 'access_hist' must hold numbers, got "
                            "%r" % (where, table["name"], hist))
        for violation in (
                table_rules.check_rows(table["rows"]),
                table_rules.check_dim(table["dim"]),
                table_rules.check_table_bytes(table["rows"], table["dim"], 4),
                table_rules.check_pooling_factor(table["pooling_factor"]),
                table_rules.check_access_histogram(hist),
                table_rules.check_access_histogram_for_batch(
                    hist, table["rows"], table["pooling_factor"],
                    pool["sample_bags"])):
            if violation is not None:
                raise PoolError("%s ('%s'): %s" % (where, table["name"],
                                                   violation))
        if table["id"] in seen:
            raise PoolError("%s: duplicate table id %d" % (where, table["id"]))
        seen.add(table["id"])
    return pool


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m neuroshard.table_pool",
        description="Generates the synthetic DLRM-like table pool that cost "
        "data is collected on (DESIGN §6). Deterministic in its options.")
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
