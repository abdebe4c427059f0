#===- torchrec_plan.py - TorchRec plans with empty and grid shards ---------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""Writes, on stdout, a TorchRec plan (neuroshard-plan --format torchrec's
JSON) of neuroshard-import-torchrec-shards.mlir's tables, as TorchRec's
planner lays them out on 8 ranks: `tiny` (10 rows x 16) row-wise in blocks
of ceil(10 / 8) = 2 rows, so that ranks 5 to 7 get empty shards, and `wide`
(400 x 64) in two column pieces on ranks 6 and 7 as table_column_wise.

    rows       that plan
    all-empty  every shard of `tiny` empty
    grid       `wide` as grid_shard blocks of rows and columns
"""

import json
import sys

RANKS = 8


def shard(row, col, rows, cols, rank):
    return {"shard_offsets": [row, col], "shard_sizes": [rows, cols],
            "placement": "rank:%d/cuda:%d" % (rank, rank)}


def table(kind, shards):
    return {"sharding_type": kind, "compute_kernel": "fused",
            "ranks": [int(s["placement"][5:].split("/")[0]) for s in shards],
            "shards": shards}


def main(mode):
    block = -(-10 // RANKS)
    tiny = [shard(min(r * block, 10), 0, max(0, min(block, 10 - r * block)),
                  16, r) for r in range(RANKS)]
    if mode == "all-empty":
        tiny = [shard(10, 0, 0, 16, r) for r in range(RANKS)]
    wide = table("table_column_wise",
                 [shard(0, 0, 400, 32, 6), shard(0, 32, 400, 32, 7)])
    if mode == "grid":
        wide = table("grid_shard",
                     [shard(r, c, 200, 32, 4 + 2 * (r // 200) + c // 32)
                      for r in (0, 200) for c in (0, 32)])
    plan = {"format": "neuroshard-torchrec-1", "world_size": RANKS,
            "compute_device": "cuda",
            "tables": {"tiny": table("row_wise", tiny), "wide": wide}}
    json.dump(plan, sys.stdout, indent=2)


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("rows", "all-empty", "grid"):
        sys.exit("usage: torchrec_plan.py rows|all-empty|grid")
    main(sys.argv[1])
