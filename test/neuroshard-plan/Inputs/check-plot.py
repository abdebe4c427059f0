"""Checks a plan picture (neuroshard-plan --plot, --neuroshard-export-plan
format=svg) against the plan JSON of the same plan: an SVG document with one
time bar and one memory bar per device, whose segments are as long as the
JSON's numbers say on the scale the axis labels give, memory within every
device's usable capacity, every table in the legend (or counted in its
"other" entry) and a title naming the algorithm, cost model and devices.

Usage: check-plot.py PLOT.svg PLAN.json"""
import json
import re
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
# Coordinates are written with 2 decimals; the JSON with 6 significant
# digits.
PX = 0.006
REL = 2e-5

svg = ET.parse(sys.argv[1]).getroot()
plan = json.load(open(sys.argv[2]))
assert svg.tag == SVG + "svg", svg.tag
devices = plan["devices"]
per_device = plan["per_device"]
cost = plan["cost_ms"]


def by_class(element, tag, name):
    return [e for e in element.iter(SVG + tag)
            if name in e.get("class", "").split()]


def close(a, b, rects=1):
    return abs(a - b) <= PX * rects + REL * max(abs(a), abs(b))


def axis_scale(name):
    """The axis's left end and px per unit, from its tick labels: each
    label shows its value and sits where that value is."""
    axis = [g for g in by_class(svg, "g", "axis") if g.get("data-axis") == name]
    assert len(axis) == 1, name
    ticks = [(float(t.get("data-value")), float(t.get("x")), t.text)
             for t in by_class(axis[0], "text", "tick-label")]
    assert len(ticks) >= 2 and ticks[0][0] == 0, (name, ticks)
    left = ticks[0][1]
    scale = (ticks[-1][1] - left) / ticks[-1][0]
    for value, x, text in ticks:
        assert close(x, left + value * scale), (name, value, x)
        assert close(float(text), value), (name, value, text)
    return left, scale


def bars(name):
    groups = by_class(svg, "g", name)
    found = sorted(int(g.get("data-device")) for g in groups)
    assert found == list(range(devices)), (name, found)
    return {int(g.get("data-device")): g for g in groups}


def extent(rects):
    """Total width and the rightmost edge of `rects`."""
    width = sum(float(r.get("width")) for r in rects)
    right = max((float(r.get("x")) + float(r.get("width")) for r in rects),
                default=None)
    return width, right


# Time: compute, bw comm, the wait at the forward exchange for the latest
# device (wait_ms, a part of fw_comm_ms), the rest of fw comm, and the wait
# after it for the plan's cost to pass.
left, ms = axis_scale("time")
for d, bar in bars("time-bar").items():
    entry = per_device[d]
    assert entry["device"] == d
    barrier = entry["wait_ms"]
    waits = {w.get("data-at"): [w] for w in by_class(bar, "rect", "wait")}
    expected = [
        (by_class(bar, "rect", "compute"), entry["compute_ms"]),
        (by_class(bar, "rect", "bw-comm"), entry["bw_comm_ms"]),
        (waits.pop("exchange", []), barrier),
        (by_class(bar, "rect", "fw-comm"), entry["fw_comm_ms"] - barrier),
        (waits.pop("end", []), max(0.0, cost - entry["total_ms"])),
    ]
    assert not waits, (d, waits)
    at = left
    for rects, value in expected:
        width, right = extent(rects)
        assert close(width, value * ms, len(rects) + 1), (d, rects, width,
                                                           value * ms)
        # data-ms as the JSON writes numbers: 6 significant digits.
        assert abs(sum(float(r.get("data-ms")) for r in rects) - value) \
            <= 1e-5 * cost * (len(rects) + 1), (d, rects)
        for r in rects:  # segments follow each other in this order
            assert close(float(r.get("x")), at, 2), (d, r.get("x"), at)
            at = float(r.get("x")) + float(r.get("width"))
    assert close(at, left + cost * ms, 8), (d, at, left + cost * ms)

# Memory: the tables' shards against the usable capacity.
left, gb = axis_scale("memory")
for d, bar in bars("memory-bar").items():
    entry = per_device[d]
    rects = by_class(bar, "rect", "memory")
    width, right = extent(rects)
    assert close(width, entry["memory_used_gb"] * gb, len(rects) + 1), d
    assert close(float(bar.get("data-used-gb")), entry["memory_used_gb"]), d
    assert close(float(bar.get("data-usable-gb")), entry["usable_gb"]), d
    (line,) = by_class(bar, "line", "capacity")
    capacity_x = float(line.get("x1"))
    assert close(capacity_x, left + entry["usable_gb"] * gb, 1), d
    assert right is None or right <= capacity_x + PX, (d, right, capacity_x)
    (whole,) = by_class(bar, "rect", "device-memory")
    assert close(float(whole.get("width")), entry["capacity_gb"] * gb, 1), d

# Legend: every table by name, or counted in "other (K tables)".
tables = []
for shard in plan["shards"]:
    if shard["table"] not in tables:
        tables.append(shard["table"])
labels = [e.find(SVG + "text").text for e in by_class(svg, "g", "legend-entry")]
missing = [t for t in tables if t not in labels]
others = [l for l in labels if re.fullmatch(r"other \(\d+ tables\)", l)]
if missing:
    assert others == ["other (%d tables)" % len(missing)], (missing, others)
    assert len(tables) - len(missing) == 19, (len(tables), len(missing))
else:
    assert not others, others

(title,) = by_class(svg, "text", "title")
for word in (plan["algorithm"], plan["cost_model"],
             "%d devices" % devices):
    assert word in title.text, (word, title.text)

print("svg: %d devices; time and memory bars as the plan JSON says; "
      "%d of %d tables named in the legend; memory within capacity"
      % (devices, len(tables) - len(missing), len(tables)))
