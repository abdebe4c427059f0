"""Checks the rule that keeps a table split: a split the model prices no
better than the whole is never kept. For every table of PLAN (a plan JSON
of neuroshard-plan) held in pieces on several devices, the plan with that
table whole on each of those devices is priced with `neuroshard-plan
--price`; each must cost more than PLAN. Prints one line per split table
and exits with 1 if some variant costs as little.

    check_unsplit.py WORK PLAN -- NEUROSHARD-PLAN-ARGS...
"""

import json
import os
import subprocess
import sys

work, plan_path = sys.argv[1], sys.argv[2]
args = sys.argv[sys.argv.index("--") + 1:]
plan = json.load(open(plan_path))
cost = plan["cost_ms"]
failed = False
split = {}
for shard in plan["shards"]:
    if not shard.get("replica"):
        split.setdefault(shard["table"], set()).add(shard["device"])
for table, devices in sorted(split.items()):
    if len(devices) < 2:
        continue
    costs = []
    for device in sorted(devices):
        shards = [s for s in plan["shards"] if s["table"] != table]
        dim = max(s["col_end"] for s in plan["shards"] if s["table"] == table)
        shards.append({"table": table, "col_begin": 0, "col_end": dim,
                       "device": device})
        given = os.path.join(work, "%s-whole-on-%d.json" % (table, device))
        priced = given + ".priced"
        with open(given, "w") as out:
            json.dump({"devices": plan["devices"], "shards": shards}, out)
        subprocess.run(args + ["--price", given, "-o", priced], check=True)
        costs.append(json.load(open(priced))["cost_ms"])
    cheapest = min(costs)
    print("%s: split over %d devices, %.4f ms; whole at best %.4f ms"
          % (table, len(devices), cost, cheapest))
    failed |= cheapest <= cost
sys.exit(1 if failed else 0)
