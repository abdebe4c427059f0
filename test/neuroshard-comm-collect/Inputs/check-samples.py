"""Checks neuroshard-comm-collect output: shapes, ranges and that a sample
measured again from --first-id has the same draws."""
import json
import sys

samples = [json.loads(line) for line in open(sys.argv[1])]
again = {s["id"]: s for s in map(json.loads, open(sys.argv[2]))}
devices = samples[0]["devices"]
for s in samples:
    assert s["devices"] == devices
    for field in ("dimsums", "stragglers_ms", "fw_ms", "bw_ms"):
        assert len(s[field]) == devices, (s["id"], field)
    assert all(4 <= d <= 256 and d % 4 == 0 for d in s["dimsums"]), s
    assert min(s["stragglers_ms"]) == 0.0, s
    assert all(t > 0 for t in s["fw_ms"] + s["bw_ms"]), s
for sample_id, s in again.items():
    first = samples[sample_id]
    assert s["dimsums"] == first["dimsums"], (s, first)
    assert s["stragglers_ms"] == first["stragglers_ms"], (s, first)
print("%d samples on %d devices: dim sums in [4, 256], multiples of 4; "
      "earliest straggler 0; costs positive; sample 1 redrawn identically"
      % (len(samples), devices))
