#===- test_differential.py - Sharded modules compute what the original does ===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""Differential check of the sharding pass on random valid modules.

Each case is a module drawn from its seed alone: 1..6 tables (rows 1..3000,
dims that are multiples of 4, some pinned to a device or kept whole), one
lookup per table plus a few second lookups of the same table, sum and mean
pooling, i32 and i64 indices, 1..4 devices with capacities that sometimes
force column splits, and batches of 1..9 bags (often fewer than the
devices). The module is sharded with `neuroshard-opt --neuroshard-shard`
and `neuroshard-run ORIGINAL --compare SHARDED --backward` must report a
match, forward and after the SGD update.

NEUROSHARD_DIFFERENTIAL_MODULES sets how many modules are drawn (default
20) and NEUROSHARD_DIFFERENTIAL_SEED the first seed (default 0). Run alone:

    NEUROSHARD_DIFFERENTIAL_MODULES=500 /usr/bin/python3 -m pytest -q \\
        python/tests/test_differential.py

A failure names the seed and prints the module.
"""

import os
import random
import subprocess

import pytest

from built_tools import tool
from neuroshard import _core

NUM_MODULES = int(os.environ.get("NEUROSHARD_DIFFERENTIAL_MODULES", "20"))
FIRST_SEED = int(os.environ.get("NEUROSHARD_DIFFERENTIAL_SEED", "0"))
# Bounds every run: a case that takes longer has hung.
TIMEOUT_S = 120
NUM_BINS = 17


def histogram(rng, rows, pooling, batch):
    """The 17-bin access histogram of one batch: batch x pooling indices
    drawn over the rows with a random skew, so that the batch can produce
    it."""
    count = max(1, round(batch * pooling))
    skew = rng.choice([0.0, 1.0, 2.0])
    weights = [1.0 / (row + 1) ** skew for row in range(rows)]
    bins = _core.access_histogram(rng.choices(range(rows), weights, k=count))
    # Six decimals and a correction on the largest bin keep the sum exact
    # enough for the verifier's tolerance.
    bins = [round(v, 6) for v in bins]
    top = max(range(NUM_BINS), key=lambda b: bins[b])
    bins[top] = round(bins[top] + 1.0 - sum(bins), 6)
    return bins


def float_literal(value):
    """An MLIR float literal (always with a dot before any exponent)."""
    mantissa, e, exponent = ("%.6g" % value).partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + e + exponent


def capacity_gb(tables, devices, algorithm):
    """A per-device capacity with which every algorithm finds a plan: an even
    share of the bytes plus the largest piece a placement may have to fit
    (so no greedy can run out of room) plus the most pinned to one device.
    The NeuroShard search may halve a splittable table, so a table larger
    than this is split by columns to fit."""
    def piece(table):
        nbytes = table["rows"] * table["dim"] * 4
        splittable = (algorithm == "neuroshard" and not table["extra"]
                      and table["dim"] % 8 == 0)
        return nbytes // 2 if splittable else nbytes

    total = sum(t["rows"] * t["dim"] * 4 for t in tables)
    pinned = [0] * devices
    for t in tables:
        if "pinned_device" in t["extra"]:
            pinned[int(t["extra"].split("=")[1].split(":")[0])] += (
                t["rows"] * t["dim"] * 4)
    nbytes = total / devices + max(piece(t) for t in tables) + max(pinned)
    # Printed with 9 digits: a margin keeps the rounding from taking bytes.
    return max(nbytes * 1.001, 64.0) / 2.0 ** 30


def random_module(seed):
    """The module text of case `seed` and the pass options to shard it."""
    rng = random.Random(seed)
    devices = rng.randint(1, 4)
    batch = rng.choice([1, 2, 3, rng.randint(1, 9)])
    tables = []
    for t in range(rng.randint(1, 6)):
        table = {"name": "t%d" % t, "rows": rng.choice(
                     [1, rng.randint(2, 50), rng.randint(51, 3000)]),
                 "dim": 4 * rng.choice([1, 2, 3, 4, 6, 8, 16]),
                 "pooling": rng.choice([0.5, 1.0, 2.0, 3.5, 8.0]),
                 "extra": ""}
        # Sometimes a table never hit: pooling factor 0, histogram all zero.
        if t > 0 and rng.random() < 0.1:
            table["pooling"], table["hist"] = 0.0, [0.0] * NUM_BINS
        else:
            table["hist"] = histogram(rng, table["rows"], table["pooling"],
                                      batch)
        roll = rng.random()
        if roll < 0.15:
            table["extra"] = ", pinned_device = %d : i64" % rng.randrange(
                devices)
        elif roll < 0.25:
            table["extra"] = ", no_split"
        tables.append(table)
    algorithm = rng.choice(["neuroshard"] * 4 + ["table-greedy-grid",
                                                  "random"])
    memory_gb = capacity_gb(tables, devices, algorithm)

    lookups = [(t, rng.choice(["sum", "mean"]), rng.choice(["i32", "i64"]))
               for t in tables]
    for t in rng.sample(tables, rng.randint(0, min(2, len(tables)))):
        lookups.append((t, rng.choice(["sum", "mean"]),
                        rng.choice(["i32", "i64"])))
    rng.shuffle(lookups)

    lines = ["// Differential case, seed %d." % seed, "module {"]
    for t in tables:
        bins = ", ".join(float_literal(v) for v in t["hist"])
        lines.append("  neuroshard.table @%s : rows %d, dim %d, f32 "
                     "{pooling_factor = %s : f64, access_hist = array<f64: "
                     "%s>%s}" % (t["name"], t["rows"], t["dim"],
                                 float_literal(t["pooling"]), bins,
                                 t["extra"]))
    args, results, body = [], [], []
    for i, (t, mode, itype) in enumerate(lookups):
        args.append("%%i%d: tensor<?x%s>, %%o%d: tensor<%dx%s>" %
                    (i, itype, i, batch + 1, itype))
        result = "tensor<%dx%dxf32>" % (batch, t["dim"])
        results.append(result)
        body.append("    %%r%d = neuroshard.embedding_bag @%s(%%i%d, %%o%d) "
                    "%s : (tensor<?x%s>, tensor<%dx%s>) -> %s" %
                    (i, t["name"], i, i, mode, itype, batch + 1, itype,
                     result))
    lines.append("  func.func @f(%s) -> (%s) {" %
                 (", ".join(args), ", ".join(results)))
    lines.extend(body)
    lines.append("    return %s : %s" % (
        ", ".join("%%r%d" % i for i in range(len(lookups))),
        ", ".join(results)))
    lines.append("  }")
    lines.append("}")
    options = ("cost-model=analytical devices=%d memory-gb=%.9g "
               "algorithm=%s" % (devices, memory_gb, algorithm))
    return "\n".join(lines) + "\n", options


def run(command, seed, module, tolerate=None):
    done = subprocess.run(command, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    if done.returncode != 0 and not (tolerate and tolerate in done.stderr):
        pytest.fail("seed %d: %s exited with %d\n%s%s\nmodule:\n%s" % (
            seed, " ".join(command), done.returncode, done.stdout,
            done.stderr, module))
    return done


@pytest.mark.parametrize("seed", range(FIRST_SEED, FIRST_SEED + NUM_MODULES))
def test_sharded_module_matches_original(seed, tmp_path):
    opt, runner = tool("neuroshard-opt"), tool("neuroshard-run")
    module, options = random_module(seed)
    original = tmp_path / "original.mlir"
    sharded = tmp_path / "sharded.mlir"
    original.write_text(module)
    run([opt, str(original), "--neuroshard-shard=" + options,
         "-o", str(sharded)], seed, module)
    # With a few short bags the drawn inputs can hold no index at all, and
    # --compare refuses to compare nothing; draw them again.
    empty = "is empty, so the run reads no weights"
    for attempt in range(4):
        done = run([runner, str(original), "--compare", str(sharded),
                    "--backward", "--max-rows", "500", "--seed",
                    str(seed + 1000003 * attempt)], seed, module,
                   tolerate=empty if attempt < 3 else None)
        if done.returncode == 0:
            break
    assert done.stdout.rstrip().endswith(": match"), (
        "seed %d: the sharded module differs (%s)\n%s\nmodule:\n%s" %
        (seed, options, done.stdout, module))
