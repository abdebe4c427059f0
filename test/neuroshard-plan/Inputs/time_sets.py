"""Writes DIR/samples.jsonl as neuroshard-cuda-runner --collect would for
the launches of DIR/sets.json, without a GPU: a launch costs 1 ms per
slice of its set plus 0.01 ms per column, so that splitting a table costs
more than the columns it moves.

    time_sets.py DIR
"""

import json
import os
import sys

work = sys.argv[1]
sets = json.load(open(os.path.join(work, "sets.json")))
with open(os.path.join(work, "samples.jsonl"), "w") as out:
    for s in sets["sets"]:
        ms = sum(1.0 + 0.01 * (c["columns"][1] - c["columns"][0])
                 for c in s["slices"])
        for launch in s["launches"]:
            out.write(json.dumps({
                "id": launch, "cost_ms": ms, "min_ms": ms, "max_ms": ms,
                "runs": 12, "device": "cuda", "hardware": "Test GPU",
                "batch_size": sets["batch_size"],
                "tables": len(s["slices"])}) + "\n")
