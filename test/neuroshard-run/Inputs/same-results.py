"""Compares the per-result checksums of two `neuroshard-run --json` reports
(the same module and seed on two devices) within a relative tolerance."""
import json
import sys

a, b = (json.load(open(path))["results"] for path in sys.argv[1:3])
tolerance = float(sys.argv[3])
assert len(a) == len(b), (len(a), len(b))
for i, (x, y) in enumerate(zip(a, b)):
    assert x["shape"] == y["shape"], (i, x, y)
    scale = max(y["max_abs"], 1e-30)
    for key in ("sum", "max_abs"):
        assert abs(x[key] - y[key]) <= tolerance * scale * (
            x["shape"][0] * x["shape"][1] if key == "sum" else 1), (i, key,
                                                                   x, y)
print("%d results agree within %g" % (len(a), tolerance))
