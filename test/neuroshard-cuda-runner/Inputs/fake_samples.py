"""Writes the samples the runner's collection would write for every manifest
that DIR/runs.txt lists (scripts/gpu/plans.py's and calibrate.sh's layout),
each launch costing 1 ms, so that the reports can be tested without a GPU.

    fake_samples.py DIR
"""

import json
import os
import sys

work = sys.argv[1]
for line in open(os.path.join(work, "runs.txt")):
    name = line.split()[0]
    records = [r.split() for r in
               open(os.path.join(work, "manifests", name + ".txt"))]
    batch = int(next(r for r in records if r and r[0] == "run")[2])
    launches = sum(1 for r in records if r and r[0] == "device")
    with open(os.path.join(work, "samples", name + ".jsonl"), "w") as out:
        for k in range(launches):
            out.write(json.dumps({
                "id": k, "cost_ms": 1.0, "min_ms": 1.0, "max_ms": 1.0,
                "runs": 12, "device": "cuda", "hardware": "Test GPU",
                "batch_size": batch}) + "\n")
