#===- test_table_rules.py - One wording for every broken table rule -------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""The front end's rules (neuroshard.table_rules) against the C++ readers:
the dialect's verifier (neuroshard-opt) and the planner's JSON reader
(neuroshard-plan) must report each broken rule in the words the Python
twin gives."""

import json
import math
import subprocess

import pytest

from built_tools import tool
from neuroshard import table_rules as rules

GOOD_HIST = [0.5, 0.5] + [0.0] * 15


def table(**fields):
    base = {"name": "t", "rows": 100, "dim": 8, "pooling_factor": 2.0,
            "access_hist": GOOD_HIST}
    base.update(fields)
    return base


def mlir_float(value):
    if math.isnan(value):
        return "0x7FF8000000000000"
    # MLIR needs a '.' before an exponent: 1.0e+305, not 1e+305.
    mantissa, e, exponent = ("%r" % float(value)).partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + e + exponent


def as_mlir(t):
    attrs = ["pooling_factor = %s : f64" % mlir_float(t["pooling_factor"]),
             "access_hist = array<f64: %s>" %
             ", ".join(mlir_float(v) for v in t["access_hist"])]
    if "pinned_device" in t:
        attrs.append("pinned_device = %d : i64" % t["pinned_device"])
    return ("module attributes {neuroshard.topology = "
            "#neuroshard.topology<devices = 2, memory_gb = 16.0>} {\n"
            "  neuroshard.table @%s : rows %d, dim %d, f32 {%s}\n}\n" %
            (t["name"], t["rows"], t["dim"], ", ".join(attrs)))


CASES = [
    (table(rows=0), rules.check_rows(0)),
    (table(dim=6), rules.check_dim(6)),
    (table(dim=-8), rules.check_dim(-8)),
    (table(rows=1 << 40, dim=128), rules.check_table_bytes(1 << 40, 128, 4)),
    (table(pooling_factor=-1.5), rules.check_pooling_factor(-1.5)),
    (table(pooling_factor=1e305), rules.check_pooling_factor(1e305)),
    (table(access_hist=[0.5, 0.3] + [0.0] * 15),
     rules.check_access_histogram([0.5, 0.3] + [0.0] * 15)),
    (table(access_hist=[1.25, -0.25] + [0.0] * 15),
     rules.check_access_histogram([1.25, -0.25] + [0.0] * 15)),
    (table(access_hist=[0.5, 0.5, 0.0]),
     rules.check_access_histogram([0.5, 0.5, 0.0])),
    (table(pinned_device=2), rules.check_pinned_device(2, 2)),
]


@pytest.mark.parametrize("broken,message", CASES)
def test_the_json_reader_words_it_alike(tmp_path, broken, message):
    assert message is not None
    task = tmp_path / "task.json"
    task.write_text(json.dumps({"tables": [broken]}))
    result = subprocess.run(
        [tool("neuroshard-plan"), str(task), "--devices", "2",
         "--cost-model", "analytical"], capture_output=True, text=True)
    assert result.returncode != 0
    assert "tables[0] ('t'): " + message in result.stderr, result.stderr


@pytest.mark.parametrize("broken,message", CASES)
def test_the_verifier_words_it_alike(tmp_path, broken, message):
    module = tmp_path / "module.mlir"
    module.write_text(as_mlir(broken))
    result = subprocess.run([tool("neuroshard-opt"), str(module)],
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert "table 't': " + message in result.stderr, result.stderr


def test_the_json_reader_refuses_element_types_alike(tmp_path):
    task = tmp_path / "task.json"
    task.write_text(json.dumps({"tables": [table(dtype="f64")]}))
    result = subprocess.run(
        [tool("neuroshard-plan"), str(task), "--devices", "2",
         "--cost-model", "analytical"], capture_output=True, text=True)
    assert "tables[0] ('t'): " + rules.check_element_type("f64") in \
        result.stderr, result.stderr


@pytest.mark.parametrize("name", ["t\ud800", "a\x01b", "\x7f"])
def test_names_are_refused_alike(tmp_path, name):
    """A lone surrogate would come back as a different name (U+FFFD), and a
    control character would break every report that prints the name."""
    message = rules.check_table_name(name)
    assert message is not None
    task = tmp_path / "task.json"
    task.write_text(json.dumps({"tables": [table(name=name)]}))
    result = subprocess.run(
        [tool("neuroshard-plan"), str(task), "--devices", "2",
         "--cost-model", "analytical"], capture_output=True, text=True,
        errors="replace")
    assert result.returncode == 1
    assert message in result.stderr, result.stderr


def test_integer_fields_refuse_fractions(tmp_path):
    task = tmp_path / "task.json"
    task.write_text('{"tables": [{"name": "t", "rows": 100, "dim": 4.0, '
                    '"pooling_factor": 1.0, "access_hist": %s}]}' %
                    json.dumps(GOOD_HIST))
    result = subprocess.run(
        [tool("neuroshard-plan"), str(task), "--devices", "2",
         "--cost-model", "analytical"], capture_output=True, text=True)
    assert result.returncode == 1
    assert "tables[0] ('t'): 'dim' must be an integer, got 4" in \
        result.stderr, result.stderr


def test_topology_rules_are_worded_alike(tmp_path):
    task = tmp_path / "task.json"
    task.write_text(json.dumps({"tables": [table()]}))
    result = subprocess.run(
        [tool("neuroshard-plan"), str(task), "--devices", "2",
         "--memory-gb", "16,0", "--cost-model", "analytical"],
        capture_output=True, text=True)
    assert rules.check_capacity_gb(0.0) in result.stderr, result.stderr
    module = tmp_path / "module.mlir"
    module.write_text("module attributes {neuroshard.topology = "
                      "#neuroshard.topology<devices = 0, memory_gb = 1.0>} "
                      "{}\n")
    result = subprocess.run([tool("neuroshard-opt"), str(module)],
                            capture_output=True, text=True)
    assert rules.check_device_count(0) in result.stderr, result.stderr


def test_the_rules_accept_what_they_should():
    assert rules.check_rows(1) is None
    assert rules.check_table_name("user.items[3]") is None
    assert rules.check_table_name("t\ud800") == (
        "'name' must be valid UTF-8 without control characters, got U+FFFD "
        "(a lone UTF-16 surrogate or invalid text in the input) at offset 1")
    assert rules.check_dim(4) is None
    assert rules.check_table_bytes(1 << 20, 128, 4) is None
    assert rules.check_pooling_factor(0.0) is None
    assert rules.check_pooling_factor(1e6) is None
    assert rules.check_pooling_factor(1e305) == \
        "'pooling_factor' must be at most 1e+06, got 1e+305"
    assert rules.check_access_histogram([0.0] * 17) is None
    assert rules.check_access_histogram([0.505, 0.5] + [0.0] * 15) is None
    assert rules.check_pinned_device(1, 2) is None
    assert rules.check_device_count(65536) is None
    assert rules.check_capacity_gb(16.0) is None
    assert rules.check_pinned_device(1, 1) == \
        "'pinned_device' is 1 but there is only 1 device"


def hot_hist(bin_index):
    return [0.0] * bin_index + [1.0] + [0.0] * (16 - bin_index)


# (rows, pooling factor, batch size, histogram): statistics one batch of
# that size cannot produce.
IMPOSSIBLE_BATCHES = [
    # Rows hit more than 2^15 times, but 1024 x 28.5 = 29184 lookups.
    (6713, 28.5, 1024, [0.99] + [0.0] * 15 + [0.01]),
    # 100 rows each hit at most twice cannot take 16384 lookups.
    (100, 16.0, 1024, GOOD_HIST),
    # A histogram of a table never hit, for 64 x 2 lookups.
    (100, 2.0, 64, [0.0] * 17),
    (10, 1.0, 64, hot_hist(9)),
]


def as_mlir_lookup(rows, pooling, batch, hist):
    return ("module {\n"
            "  neuroshard.table @t : rows %d, dim 8, f32 {pooling_factor = "
            "%s : f64, access_hist = array<f64: %s>}\n"
            "  func.func @f(%%i: tensor<?xi32>, %%o: tensor<%dxi32>) -> "
            "tensor<%dx8xf32> {\n"
            "    %%0 = neuroshard.embedding_bag @t(%%i, %%o) sum : "
            "(tensor<?xi32>, tensor<%dxi32>) -> tensor<%dx8xf32>\n"
            "    return %%0 : tensor<%dx8xf32>\n  }\n}\n" %
            (rows, mlir_float(pooling), ", ".join(mlir_float(v) for v in hist),
             batch + 1, batch, batch + 1, batch, batch))


@pytest.mark.parametrize("rows,pooling,batch,hist", IMPOSSIBLE_BATCHES)
def test_impossible_statistics_are_refused_alike(tmp_path, rows, pooling,
                                                 batch, hist):
    message = rules.check_access_histogram_for_batch(hist, rows, pooling,
                                                     batch)
    assert message is not None
    task = tmp_path / "task.json"
    task.write_text(json.dumps({"batch_size": batch, "tables": [
        table(rows=rows, pooling_factor=pooling, access_hist=hist)]}))
    result = subprocess.run(
        [tool("neuroshard-plan"), str(task), "--devices", "2",
         "--cost-model", "analytical"], capture_output=True, text=True)
    assert result.returncode == 1
    assert "tables[0] ('t'): " + message in result.stderr, result.stderr
    module = tmp_path / "module.mlir"
    module.write_text(as_mlir_lookup(rows, pooling, batch, hist))
    result = subprocess.run([tool("neuroshard-opt"), str(module)],
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert "table 't': " + message in result.stderr, result.stderr


def test_possible_statistics_pass_the_batch_rule():
    # The table at a batch that does make 2^15 hits possible.
    assert rules.check_access_histogram_for_batch(
        [0.99] + [0.0] * 15 + [0.01], 6713, 28.5, 65536) is None
    # 1000 rows hit 64-128 times take 65536 lookups.
    assert rules.check_access_histogram_for_batch(hot_hist(7), 1000, 1.0,
                                                  65536) is None
    # A zero histogram for a table with pooling factor 0.
    assert rules.check_access_histogram_for_batch([0.0] * 17, 10, 0.0,
                                                  1024) is None
    assert rules.check_access_histogram_for_batch(hot_hist(0), 10, 1.0,
                                                  1024) == (
        "'access_hist' lets the table's 10 rows take at most 10 lookups (at "
        "most 1 hits per distinct row), but a batch of 1024 bags with pooling "
        "factor 1 makes 1024; a histogram describes one batch of the task's "
        "batch size")
    assert rules.check_access_histogram_for_batch(hot_hist(16), 10, 1.0,
                                                  1024) == (
        "'access_hist' bin 16 (rows hit more than 32768 times) is 1, but a "
        "batch of 1024 bags with pooling factor 1 makes only 1024 lookups")
