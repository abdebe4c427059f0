#===- test_core.py - Tests of the C++ core's Python module ----------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""neuroshard._core: the table rules, the input generator, host identity,
tasks and the planner, called from Python. The rules' own behaviour is
tested in C++ (unittests/); these tests hold what the module adds: the
conversions, the errors it raises and that plan() is neuroshard-plan."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import neuroshard
from built_tools import REPO, tool
from neuroshard import _core

GOOD_HIST = [0.5, 0.5] + [0.0] * 15
TASK = os.path.join(REPO, "test", "neuroshard-plan", "Inputs",
                    "torchrec.json")


def hot_hist(bin_index):
    return [0.0] * bin_index + [1.0] + [0.0] * (16 - bin_index)


def table(**fields):
    base = {"name": "t", "rows": 1000, "dim": 8, "pooling_factor": 0.5,
            "access_hist": GOOD_HIST}
    base.update(fields)
    return base


#===----------------------------------------------------------------------===#
# Table rules
#===----------------------------------------------------------------------===#

def test_rules_return_none_or_the_cpp_message():
    assert _core.NUM_ACCESS_BINS == 17 and _core.COLUMN_ALIGNMENT == 4
    assert _core.check_dim(4) is None
    assert _core.check_dim(6) == "'dim' must be a positive multiple of 4, " \
        "got 6"
    assert _core.check_rows(0) == "'rows' must be positive, got 0"
    assert _core.check_table_bytes(1 << 20, 128) is None
    assert _core.check_table_bytes(1 << 40, 128, 4) == \
        "needs 524288.0 GB, more than the 65536 GB a table may have"
    assert _core.check_pooling_factor(1e305) == \
        "'pooling_factor' must be at most 1e+06, got 1e+305"
    assert _core.check_access_histogram([0.505, 0.5] + [0.0] * 15) is None
    assert _core.check_access_histogram([0.5, 0.5, 0.0]) == \
        "'access_hist' must have 17 bins, got 3"
    assert _core.check_table_name("a\x01b") == (
        "'name' must be valid UTF-8 without control characters, got byte "
        "0x01 at offset 1")
    assert _core.check_element_type("f64") == \
        "'dtype' must be one of f32, f16, bf16, got 'f64'"
    assert _core.element_type_bytes("bf16") == 2
    assert _core.element_type_bytes("f64") is None
    assert _core.check_pinned_device(1, 1) == \
        "'pinned_device' is 1 but there is only 1 device"
    assert _core.check_device_count(65536) is None
    assert _core.check_capacity_gb(float("inf")) == (
        "memory capacity must be a positive number of GB up to 1048576, "
        "got inf")
    assert _core.check_reserved_fraction(1.0) is not None
    assert _core.check_statistics(-1.0, GOOD_HIST) == \
        "'pooling_factor' must be a finite number >= 0, got -1"


@pytest.mark.parametrize("rows,pooling,batch,hist,message", [
    (6713, 28.5, 1024, [0.99] + [0.0] * 15 + [0.01],
     "'access_hist' bin 16 (rows hit more than 32768 times) is 0.01, but a "
     "batch of 1024 bags with pooling factor 28.5 makes only 29184 lookups"),
    (10, 1.0, 1024, hot_hist(0),
     "'access_hist' lets the table's 10 rows take at most 10 lookups (at "
     "most 1 hits per distinct row), but a batch of 1024 bags with pooling "
     "factor 1 makes 1024; a histogram describes one batch of the task's "
     "batch size"),
    (100, 2.0, 64, [0.0] * 17,
     "'access_hist' is all zero (a table never hit), but a batch of 64 bags "
     "with pooling factor 2 makes 128 lookups"),
    # The statistics' own rules come first.
    (100, 2.0, 64, [0.5, 0.5], "'access_hist' must have 17 bins, got 2"),
])
def test_the_batch_rule(rows, pooling, batch, hist, message):
    assert _core.check_access_histogram_for_batch(hist, rows, pooling,
                                                  batch) == message


def test_the_batch_rule_accepts_what_a_batch_can_make():
    assert _core.check_access_histogram_for_batch(
        [0.99] + [0.0] * 15 + [0.01], 6713, 28.5, 65536) is None
    assert _core.check_access_histogram_for_batch(hot_hist(7), 1000, 1.0,
                                                  65536) is None
    assert _core.check_access_histogram_for_batch([0.0] * 17, 10, 0.0,
                                                  1024) is None


#===----------------------------------------------------------------------===#
# Input generator
#===----------------------------------------------------------------------===#

def test_random_numbers_are_fixed_forever():
    """Pools, sample sets and splits are keyed by these numbers: a change
    would silently give every seed other data."""
    assert _core.mix_seed(3, 11) == 1671629228787709977
    random = _core.Random(12345)
    assert [random.next() for _ in range(3)] == [
        2454886589211414944, 3778200017661327597, 2205171434679333405]
    assert random.uniform() == 0.17611780724496118
    assert random.below(1000003) == 102239
    block = _core.Random(12345)
    block.next()
    block.next()
    assert block.uniform_block(2).tolist() == [
        _core.Random(12345).uniform_block(4)[2], 0.17611780724496118]
    assert _core.hash_string("user") == 9036332894136256754


def test_random_refuses_what_it_cannot_draw():
    with pytest.raises(_core.NeuroShardError,
                       match="the bound must be positive, got 0"):
        _core.Random(1).below(0)
    with pytest.raises(_core.NeuroShardError,
                       match="count must be non-negative, got -1"):
        _core.Random(1).uniform_block(-1)
    with pytest.raises(TypeError):
        _core.Random(-1)


def design_hist(counts):
    """The histogram of a stream where distinct row r is hit counts[r]
    times, written out from the docs/design.md §3 rule."""
    expected = [0.0] * 17
    for count in counts:
        if count == 1:
            b = 0
        elif count > 2**15:
            b = 16
        else:
            b = next(j for j in range(1, 16) if 2**(j - 1) < count <= 2**j)
        expected[b] += 1.0 / len(counts)
    return expected


@pytest.mark.parametrize("counts", [
    [1], [2], [3], [4], [5], [1, 1, 2, 3], [8, 9, 16, 17],
    [2**15, 2**15 + 1], [100000, 1, 1], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
])
def test_histogram_bins_follow_design(counts):
    stream = [row for row, count in enumerate(counts) for _ in range(count)]
    assert _core.access_histogram(stream) == pytest.approx(
        design_hist(counts), abs=1e-12)
    assert _core.access_histogram(np.array(stream[::-1])) == \
        _core.access_histogram(stream)


def test_histogram_by_hand():
    assert _core.access_histogram([9, 5, 7, 9, 5, 9]) == pytest.approx(
        [1 / 3, 1 / 3, 1 / 3] + [0.0] * 14)
    assert _core.access_histogram([]) == [0.0] * 17
    assert _core.access_histogram(np.array([4] * 4 + [6] * 5)) == \
        pytest.approx([0, 0, 0.5, 0.5] + [0.0] * 13)


def test_zipf_streams_are_deterministic_and_in_range():
    a = _core.zipf_index_stream(1000, 1.2, 5000, 4)
    assert a.dtype == np.int64 and a.shape == (5000,)
    assert np.array_equal(a, _core.zipf_index_stream(1000, 1.2, 5000, 4))
    assert not np.array_equal(a, _core.zipf_index_stream(1000, 1.2, 5000, 5))
    assert a.min() >= 0 and a.max() < 1000
    # More skew, fewer distinct rows; skew 1 is the logarithmic case.
    flat = _core.zipf_index_stream(100000, 0.0, 20000, 1)
    steep = _core.zipf_index_stream(100000, 2.0, 20000, 1)
    assert len(np.unique(steep)) < len(np.unique(flat)) / 4
    assert len(_core.zipf_index_stream(7, 1.0, 100, 2)) == 100
    assert len(_core.zipf_index_stream(7, 1.0, 0, 2)) == 0
    with pytest.raises(_core.NeuroShardError,
                       match="'rows' must be positive, got 0"):
        _core.zipf_index_stream(0, 1.0, 10, 1)
    with pytest.raises(_core.NeuroShardError,
                       match="length must be non-negative, got -3"):
        _core.zipf_index_stream(10, 1.0, -3, 1)


def test_generated_lookups_follow_the_statistics():
    hist = [0.0, 0.0, 0.0, 1.0] + [0.0] * 13  # every row hit 5 to 8 times
    indices, offsets = _core.generate_lookup("user", 100000, 8.0, hist,
                                             batch_size=512, seed=7)
    assert offsets.shape == (513,) and offsets[0] == 0
    assert offsets[-1] == len(indices)
    assert np.all(np.diff(offsets) >= 0)
    assert indices.min() >= 0 and indices.max() < 100000
    assert abs(len(indices) / 512 - 8.0) < 1.0
    assert _core.access_histogram(indices)[3] > 0.8
    again, _ = _core.generate_lookup("user", 100000, 8.0, hist, 512, 7)
    assert np.array_equal(indices, again)
    other, _ = _core.generate_lookup("user", 100000, 8.0, hist, 512, 7,
                                     stream=1)
    assert not np.array_equal(indices, other)
    limited, _ = _core.generate_lookup("user", 100000, 8.0, hist, 512, 7,
                                       row_limit=50)
    assert limited.max() < 50


def test_generated_lookups_refuse_bad_statistics():
    with pytest.raises(_core.NeuroShardError,
                       match="'access_hist' must have 17 bins, got 2"):
        _core.generate_lookup("t", 10, 1.0, [0.5, 0.5], 4, 0)
    with pytest.raises(_core.NeuroShardError,
                       match="'rows' must be positive, got -1"):
        _core.generate_lookup("t", -1, 1.0, GOOD_HIST, 4, 0)
    with pytest.raises(_core.NeuroShardError,
                       match="batch_size must be non-negative, got -4"):
        _core.generate_lookup("t", 10, 1.0, GOOD_HIST, -4, 0)


#===----------------------------------------------------------------------===#
# Host identity
#===----------------------------------------------------------------------===#

CPUINFO = ("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\n"
           "model\t\t: 17\n"
           "model name\t:   AMD EPYC 9654 96-Core Processor  \n"
           "flags\t\t: fpu sse4_2 avx avx2 fma avx512f avx512_bf16\n\n"
           "processor\t: 1\nmodel name\t: Other CPU\ncpu family\t: 6\n")


def fake_caches(directory, caches):
    """CPU 0's sysfs cache entries, each (level, type, size) in index
    order."""
    directory.mkdir()
    for index, (level, kind, size) in enumerate(caches):
        entry = directory / ("index%d" % index)
        entry.mkdir()
        (entry / "level").write_text("%s\n" % level)
        (entry / "type").write_text("%s\n" % kind)
        (entry / "size").write_text("%s\n" % size)
    return str(directory)


def test_host_description_of_a_fake_machine(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(CPUINFO)
    caches = fake_caches(tmp_path / "cache", [
        (1, "Data", "48K"), (1, "Instruction", "32K"),
        (2, "Unified", "1024K"), (3, "Unified", "32M")])
    host = _core.host_description(str(cpuinfo), caches)
    assert list(host) == ["cpu_model", "cpu_family", "cpu_model_number",
                          "isa", "caches_kb", "logical_cpus"]
    assert host["cpu_model"] == "AMD EPYC 9654 96-Core Processor"
    # The first CPU's numbers; "model name" is not the "model" line.
    assert (host["cpu_family"], host["cpu_model_number"]) == (25, 17)
    # Only ISA_FLAGS, sorted.
    assert host["isa"] == ["avx", "avx2", "avx512f", "fma", "sse4_2"]
    assert set(host["isa"]) <= set(_core.ISA_FLAGS)
    assert host["caches_kb"] == {"L1d": 48, "L2": 1024, "L3": 32768}
    assert list(host["caches_kb"]) == ["L1d", "L2", "L3"]
    assert host["logical_cpus"] == os.cpu_count()
    assert _core.host_cpu_identity(str(cpuinfo)) == {
        "cpu_family": 25, "cpu_model_number": 17, "isa": host["isa"]}


def test_what_a_machine_does_not_report_is_left_out(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t:\n")
    caches = fake_caches(tmp_path / "cache", [
        (1, "Data", "32K"), (2, "Unified", "garbage"),
        (2, "Unified", "256K"), (1, "Data", "64K")])
    # No L3 key; a malformed entry is skipped; the first L1d wins.
    assert _core.host_caches_kb(caches) == {"L1d": 32, "L2": 256}
    assert _core.host_cpu_model(str(cpuinfo)) == "unknown CPU"
    assert _core.host_cpu_identity(str(cpuinfo)) == {"isa": []}
    missing = str(tmp_path / "missing")
    assert _core.host_caches_kb(missing) == {}
    assert _core.host_cpu_model(missing) == "unknown CPU"


def test_the_host_is_what_the_tools_record():
    assert _core.host_cpu_model() == _core.host_description()["cpu_model"]
    assert _core.host_cpu_model() != ""


def test_other_chip_names_what_differs(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(CPUINFO)
    same = {"cpu_model": "x", "cpu_family": 25, "cpu_model_number": 17,
            "isa": ["sse4_2", "fma", "avx512f", "avx2", "avx"]}
    assert _core.other_chip(same, str(cpuinfo)) is None
    # Fields a bundle does not record are not compared.
    assert _core.other_chip({"cpu_model": "x"}, str(cpuinfo)) is None
    assert _core.other_chip(None, str(cpuinfo)) is None
    zen5 = {"cpu_model": "x", "cpu_family": 26, "isa": ["avx512vl", "avx"]}
    assert _core.other_chip(zen5, str(cpuinfo)) == (
        "family 26, avx avx512vl there; family 25, model 17, avx avx2 "
        "avx512f fma sse4_2 here")


#===----------------------------------------------------------------------===#
# Tasks and the planner
#===----------------------------------------------------------------------===#

def test_tasks_are_read_by_the_task_reader(tmp_path):
    task = _core.read_task(TASK)
    assert len(task) == 2 and task.batch_size == 1024
    user, item = task.tables
    assert (user.name, user.rows, user.dim, user.element_bytes) == \
        ("sparse.user_id", 1000000, 128, 4)
    assert user.pooling_factor == 20.0 and len(user.access_hist) == 17
    assert item.no_split and item.pinned_device is None
    assert user.features == [(20.0, user.access_hist)]
    assert user.bytes == 1000000 * 128 * 4
    assert repr(task) == "Task(2 tables, batch_size=1024)"
    parsed = _core.parse_task(json.dumps({"tables": [table(
        pinned_device=1, dtype="f16")]}))
    assert parsed.batch_size is None
    assert parsed.tables[0].pinned_device == 1
    assert parsed.tables[0].element_bytes == 2


@pytest.mark.parametrize("text,message", [
    ("{", "task: invalid JSON: "),
    ("[]", "task: expected a JSON object at the top level"),
    (json.dumps({"tables": [table(colour="red")]}),
     "tables[0] ('t'): unknown field 'colour'"),
    (json.dumps({"tables": [table(dim=6)]}),
     "tables[0] ('t'): 'dim' must be a positive multiple of 4, got 6"),
])
def test_bad_tasks_are_refused_in_the_readers_words(text, message):
    with pytest.raises(_core.NeuroShardError) as info:
        _core.parse_task(text)
    assert str(info.value).startswith(message), str(info.value)
    assert isinstance(info.value, ValueError)


def test_a_missing_task_file_is_named(tmp_path):
    missing = tmp_path / "missing.json"
    with pytest.raises(_core.NeuroShardError,
                       match="cannot read task '%s'" % missing):
        _core.read_task(missing)


def plan_tool(*args):
    result = subprocess.run([tool("neuroshard-plan")] + list(args),
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


def without_time(plan):
    plan = dict(plan, search=dict(plan["search"]))
    del plan["search"]["time_ms"]
    return plan


@pytest.mark.parametrize("options,flags", [
    ({"cost_model": "analytical"}, ["--cost-model", "analytical"]),
    ({"cost_model": "analytical", "algorithm": "size-greedy",
      "memory_gb": [0.3, 0.5]},
     ["--cost-model", "analytical", "--algorithm", "size-greedy",
      "--memory-gb", "0.3,0.5"]),
    ({"cost_model": "analytical", "optimizer": "adam", "batch_size": 512,
      "reserved_memory": 0.1, "beam_width": 2, "max_steps": 3,
      "grid_steps": 4, "threshold_max": 1.2, "memory_gb": "1"},
     ["--cost-model", "analytical", "--optimizer", "adam", "--batch-size",
      "512", "--reserved-memory", "0.1", "--beam-width", "2", "--max-steps",
      "3", "--grid-steps", "4", "--threshold-max", "1.2", "--memory-gb",
      "1"]),
    ({}, []),
    # Devices too small for the tables: some go to host memory, and the
    # link to it prices their misses.
    ({"cost_model": "analytical", "memory_gb": "0.1", "host_memory_gb": 64,
      "host_gbps": 16},
     ["--cost-model", "analytical", "--memory-gb", "0.1", "--host-memory-gb",
      "64", "--host-gbps", "16"]),
])
def test_plans_equal_neuroshard_plans(options, flags):
    devices = [] if isinstance(options.get("memory_gb"), list) else \
        ["--devices", "2"]
    expected = json.loads(plan_tool(TASK, *(devices + flags)))
    kwargs = dict(options)
    if devices:
        kwargs["devices"] = 2
    plan = neuroshard.plan(TASK, **kwargs)
    assert without_time(plan) == without_time(expected)
    assert neuroshard.plan(TASK, format="torchrec", **kwargs) == \
        json.loads(plan_tool(TASK, "--format", "torchrec", *(devices +
                                                              flags)))


def test_tables_too_large_for_the_devices_go_to_host_memory():
    plan = neuroshard.plan(TASK, devices=2, memory_gb=0.1,
                           cost_model="analytical")
    host = [t for t in plan["per_table"] if t["storage"] == "host"]
    assert host and all(0.0 < t["expected_hit_rate"] <= 1.0 for t in host)
    assert sum(plan["host_memory"]["used_gb_per_node"]) > 0
    # Without host memory the devices are too small, as before.
    with pytest.raises(neuroshard.NeuroShardError, match="the tables need"):
        neuroshard.plan(TASK, devices=2, memory_gb=0.1, host_memory_gb=0,
                        cost_model="analytical")
    with pytest.raises(neuroshard.NeuroShardError,
                       match="host_gbps: must be between"):
        neuroshard.plan(TASK, devices=2, host_gbps=0,
                        cost_model="analytical")


def test_the_default_model_is_the_shipped_bundle():
    if not _core.neural_cost_models_built():
        pytest.skip("this build has no neural cost model")
    # The default plans for GPUs, with the GPU bundle; a plan for CPU
    # execution gets the CPU bundle.
    found = _core.find_default_model()
    assert os.path.basename(found) == "h200-b65536"
    assert os.path.dirname(found) in _core.default_model_search_path()
    assert os.path.basename(_core.find_default_model("cpu")) == \
        "cpu-zen5-b1024"
    plan = neuroshard.plan(TASK, devices=2)
    assert "h200-b65536" in plan["cost_model"]
    assert plan["device_kind"] == "gpu"
    plan = neuroshard.plan(TASK, devices=2, device_kind="cpu")
    assert "cpu-zen5-b1024" in plan["cost_model"]
    assert plan["device_kind"] == "cpu"
    with pytest.raises(ValueError, match="device_kind: 'h 100' is not a "
                       "device kind"):
        _core.find_default_model("h 100")
    with pytest.raises(_core.NeuroShardError, match="device_kind: 'h 100' is "
                       "not a device kind"):
        neuroshard.plan(TASK, devices=2, device_kind="h 100")


def test_models_dir_variable_is_the_only_place_searched(tmp_path,
                                                        monkeypatch):
    monkeypatch.setenv(_core.MODELS_DIR_VARIABLE, str(tmp_path))
    assert _core.default_model_search_path() == [str(tmp_path)]
    assert _core.find_default_model() == ""
    if _core.neural_cost_models_built():
        with pytest.raises(_core.NeuroShardError,
                           match="cost model 'default': the shipped bundle "
                           "'h200-b65536' is in none of: %s;" % tmp_path):
            neuroshard.plan(TASK, devices=2)


def test_tasks_in_every_form_plan_alike():
    tables = json.load(open(TASK))["tables"]
    expected = neuroshard.plan(TASK, devices=2, cost_model="analytical")
    for task in (_core.read_task(TASK),
                 {"batch_size": 1024, "tables": tables}):
        assert without_time(neuroshard.plan(
            task, devices=2, cost_model="analytical")) == \
            without_time(expected)
    # A list is the tables alone, planned at the default batch size.
    assert neuroshard.plan(tables, devices=2, cost_model="analytical",
                           batch_size=1024)["shards"] == expected["shards"]
    # NumPy values are the numbers they hold.
    numpy_tables = [dict(t, rows=np.int64(t["rows"]),
                         access_hist=np.array(t["access_hist"]))
                    for t in tables]
    assert neuroshard.plan(numpy_tables, devices=2, cost_model="analytical",
                           batch_size=1024)["shards"] == expected["shards"]


def test_the_table_format_is_the_readable_plan():
    text = neuroshard.plan(TASK, devices=2, cost_model="analytical",
                           format="table", verbose=True)
    assert "NeuroShard plan:" in text and "sparse.user_id" in text
    with pytest.raises(neuroshard.NeuroShardError,
                       match="verbose adds a row per table to "
                       "format='table'"):
        neuroshard.plan(TASK, devices=2, cost_model="analytical",
                        verbose=True)


@pytest.mark.parametrize("options,message", [
    ({}, "devices is required unless memory_gb lists one value per device"),
    ({"devices": 0}, "devices: the device count must be between 1 and "
     "65536, got 0"),
    ({"devices": 3, "memory_gb": [1, 2]},
     "memory_gb lists 2 values but there are 3 devices"),
    ({"devices": 2, "memory_gb": "16,x"},
     "memory_gb: 'x' is not a number of GB"),
    ({"devices": 2, "memory_gb": " "},
     "memory_gb: expected a number or a comma list"),
    ({"devices": 2, "memory_gb": -1},
     "memory_gb: '-1.0': memory capacity must be a positive number of GB"),
    ({"devices": 16, "nodes": 3},
     "nodes: 16 devices do not split into 3 nodes of equal size"),
    ({"devices": 16, "devices_per_node": 5},
     "devices_per_node: 16 devices do not fill whole nodes of 5 devices"),
    ({"devices": 2, "inter_node_gbps": 0},
     "inter_node_gbps: must be between 0.001 and 1e+09 GB/s, got 0"),
    ({"devices": 2, "intra_node_gbps": 1, "interconnect_gbps": 2},
     "intra_node_gbps and interconnect_gbps (its former name) were both "
     "given"),
    ({"devices": 2, "optimizer": "lion"},
     "optimizer: unknown optimizer 'lion'; expected one of sgd, adagrad"),
    ({"devices": 2, "reserved_memory": 1.0}, "reserved_memory: "),
    ({"devices": 2, "algorithm": "magic"},
     "algorithm: unknown algorithm 'magic' (expected one of: neuroshard, "),
    ({"devices": 2, "beam_width": 0},
     "beam-width must be between 1 and 256, got 0"),
    ({"devices": 2, "beam_width": -1},
     "beam_width: expected a non-negative integer below 2^32, got -1"),
    ({"devices": 2, "cost_risk": 11.0}, "cost_risk: the risk margin must be "
     "between 0 and 10 standard deviations, got 11"),
    ({"devices": 2, "cost_model": "/no/such/bundle"},
     "cost model '/no/such/bundle' does not exist"),
    ({"devices": 2, "format": "yaml"},
     "format: expected 'json', 'table' or 'torchrec', got 'yaml'"),
    ({"devices": 2, "memory_gb": 0.001, "host_memory_gb": 0,
      "cost_model": "analytical"}, "table 'sparse.user_id' "),
    ({"devices": 2, "verify_top": "all"}, "verify_top: expected 'auto' or a "
     "count of candidates from 0 to 64, got 'all'"),
    ({"devices": 2, "verify_top": 65}, "verify_top: expected 'auto' or a "
     "count of candidates from 0 to 64, got '65'"),
    ({"devices": 2, "cost_model": "analytical", "verify_top": 2},
     "verify_top: the candidates are timed with this machine's CPU kernels, "
     "but the plan is for device kind 'gpu'"),
    ({"devices": 2, "cost_model": "analytical", "device_kind": "cpu",
      "verify_top": 2, "verify_seconds": -1},
     "verify_seconds: must be between 0 and 3600 seconds, got -1"),
    ({"devices": 2, "cost_model": "analytical", "device_kind": "cpu",
      "verify_top": 2, "verify_min_gain": 0.6},
     "verify_min_gain: must be a fraction from 0 to 0.5 (0.05: 5% faster), "
     "got 0.6"),
    ({"devices": 2, "cost_model": "analytical", "device_kind": "cpu",
      "verify_top": 2, "verify_spread_factor": -1},
     "verify_spread_factor: must be between 0 and 10 standard errors (0: "
     "the rounds' spread asks for nothing), got -1"),
    ({"devices": 2, "cost_model": "analytical", "sharding_types": "rows"},
     "sharding_types: unknown sharding type 'rows' (expected one of: "
     "table_wise, column_wise, row_wise, table_row_wise, data_parallel), "
     "'all' or 'default'"),
])
def test_plan_errors_say_what_is_wrong(options, message):
    with pytest.raises(neuroshard.NeuroShardError) as info:
        neuroshard.plan(TASK, **options)
    assert message in str(info.value), str(info.value)


def test_plans_are_verified_by_measurement_when_asked(tmp_path):
    experience = tmp_path / "experience.jsonl"
    plan = neuroshard.plan(TASK, devices=2, memory_gb=0.3,
                           cost_model="analytical", device_kind="cpu",
                           verify_top=3, verify_seconds=0,
                           experience=experience)
    verification = plan["verification"]
    # A round per draw of the inputs while a candidate races the table-wise
    # plan; another plan than that one needed the default gain.
    assert 1 <= verification["rounds"] == verification["draws"] <= 3
    assert verification["min_gain"] == _core.DEFAULT_VERIFY_MIN_GAIN == 0.02
    assert 1 <= len(verification["candidates"]) <= 3
    assert verification["experience"] == str(experience)
    lines = [json.loads(line) for line in
             experience.read_text().splitlines()]
    assert len(lines) == verification["sets"]
    assert {line["bundle"] for line in lines} == {"analytical"}
    # The analytical model describes no machine: the plan says so.
    assert any("does not describe" in w for w in plan["warnings"])
    demanding = neuroshard.plan(TASK, devices=2, memory_gb=0.3,
                                cost_model="analytical", device_kind="cpu",
                                verify_top=3, verify_seconds=0,
                                verify_min_gain=0.25, experience="none")
    assert demanding["verification"]["min_gain"] == 0.25
    # Without the spread's demand every candidate needs min_gain alone.
    plain = neuroshard.plan(TASK, devices=2, memory_gb=0.3,
                            cost_model="analytical", device_kind="cpu",
                            verify_top=3, verify_seconds=0,
                            verify_min_gain=0.25, verify_spread_factor=0,
                            experience="none")
    assert {c["required_gain"] for c in
            plain["verification"]["candidates"]} == {0.25}
    assert plain["verification"]["timings"] >= \
        plain["verification"]["sets"]
    assert 0 < plain["verification"]["timed_seconds"] <= \
        plain["verification"]["seconds"]
    # 'auto' (the default) verifies only with a model of this machine.
    assert "verification" not in neuroshard.plan(
        TASK, devices=2, memory_gb=0.3, cost_model="analytical",
        device_kind="cpu")
    with pytest.raises(TypeError):
        neuroshard.plan(TASK, devices=2, verify_top=True)
    # The reader plan() uses, for front ends that read the option first.
    assert _core.parse_verify_top("auto") == "auto"
    assert _core.parse_verify_top("4") == _core.parse_verify_top(4) == 4
    assert (_core.DEFAULT_VERIFY_TOP, _core.MAX_VERIFY_TOP) == (4, 64)
    assert _core.DEFAULT_VERIFY_SECONDS == 2.0
    assert (_core.MAX_VERIFY_SECONDS, _core.MAX_VERIFY_MIN_GAIN) == \
        (3600.0, 0.5)
    assert (_core.DEFAULT_VERIFY_SPREAD_FACTOR,
            _core.MAX_VERIFY_SPREAD_FACTOR) == (2.0, 10.0)
    with pytest.raises(neuroshard.NeuroShardError, match="verify_top: "
                       "expected 'auto' or a count of candidates from 0 to "
                       "64, got '65'"):
        _core.parse_verify_top(65)


def test_a_gpu_plan_is_verified_by_times_recorded_elsewhere(tmp_path):
    """verify_export writes the candidates' sets for the GPU; the runner's
    samples of them (written by the lit test's time_sets.py: 1 ms per slice
    and 0.01 per column) choose among the same candidates with
    verify_timings."""
    options = dict(devices=2, memory_gb=0.3, cost_model="analytical",
                   device_kind="h200")
    exported = neuroshard.plan(TASK, verify_export=tmp_path, **options)
    assert "verification" not in exported
    assert exported["exported_sets"]["dir"] == str(tmp_path)
    sets = json.loads((tmp_path / "sets.json").read_text())
    assert len(sets["sets"]) == exported["exported_sets"]["sets"]
    assert sets["draws"] == 3
    subprocess.run([sys.executable, os.path.join(
        REPO, "test", "neuroshard-plan", "Inputs", "time_sets.py"),
        str(tmp_path)], check=True)
    plan = neuroshard.plan(TASK, verify_timings=tmp_path, experience="none",
                           **options)
    verification = plan["verification"]
    assert (verification["host"], verification["device"],
            verification["rounds"], verification["draws"]) == \
        ("Test GPU", "cuda", 1, 1)
    assert len(verification["candidates"]) == \
        exported["exported_sets"]["candidates"]
    candidates = verification["candidates"]
    assert candidates[verification["chosen"]]["measured_ms"] <= \
        candidates[verification["incumbent"]]["measured_ms"]
    with pytest.raises(neuroshard.NeuroShardError,
                       match="verify_export and verify_timings are two "
                       "steps"):
        neuroshard.plan(TASK, verify_export=tmp_path,
                        verify_timings=tmp_path, **options)
    with pytest.raises(neuroshard.NeuroShardError,
                       match="verify_timings: a plan given with price is "
                       "priced"):
        neuroshard.plan(TASK, price=plan, verify_timings=tmp_path,
                        memory_gb=0.3, cost_model="analytical")


def without_search(plan):
    return {k: v for k, v in plan.items() if k != "search"}


@pytest.mark.parametrize("model", ["analytical", "default"])
def test_a_priced_plan_is_the_plan_again(tmp_path, model):
    if model == "default" and not _core.neural_cost_models_built():
        pytest.skip("this build has no neural cost model")
    plan = neuroshard.plan(TASK, devices=2, memory_gb=0.3, cost_model=model)
    # The device count comes from the plan; a dict or a file, alike.
    priced = neuroshard.plan(TASK, price=plan, memory_gb=0.3,
                             cost_model=model)
    assert without_search(priced) == without_search(plan)
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    assert without_search(neuroshard.plan(
        TASK, price=path, memory_gb=0.3, cost_model=model)) == \
        without_search(plan)
    expected = json.loads(plan_tool(TASK, "--price", str(path), "--memory-gb",
                                    "0.3", "--cost-model", model))
    assert without_time(priced) == without_time(expected)
    # A TorchRec plan names no algorithm.
    torchrec = neuroshard.plan(TASK, devices=2, memory_gb=0.3,
                               cost_model=model, format="torchrec")
    given = neuroshard.plan(TASK, price=torchrec, memory_gb=0.3,
                            cost_model=model)
    assert given["algorithm"] == "given"
    assert given["cost_ms"] == plan["cost_ms"]


def test_a_plan_the_validator_refuses_is_not_priced():
    plan = neuroshard.plan(TASK, devices=2, memory_gb=0.3,
                           cost_model="analytical")
    plan["shards"] = [s for s in plan["shards"]
                      if s["table"] != "sparse.item_id"]
    with pytest.raises(neuroshard.NeuroShardError,
                       match="table 'sparse.item_id': columns \\[0, 16\\) "
                       "are on no device"):
        neuroshard.plan(TASK, price=plan, memory_gb=0.3,
                        cost_model="analytical")
    with pytest.raises(neuroshard.NeuroShardError, match="no-such-plan.json"):
        neuroshard.plan(TASK, price="no-such-plan.json", devices=2)
    with pytest.raises(TypeError, match="a plan to price is the path of a "
                       "plan file or a plan dict, not int"):
        neuroshard.plan(TASK, price=3, devices=2)


def test_plan_refuses_what_is_no_task():
    with pytest.raises(TypeError, match="a task is a Task, the path of a "
                       "task file, a dict"):
        neuroshard.plan(42, devices=2)
    with pytest.raises(TypeError, match="memory_gb: expected numbers of GB, "
                       "got True"):
        neuroshard.plan(TASK, devices=2, memory_gb=True)
    with pytest.raises(TypeError, match="a task holds numbers, strings"):
        neuroshard.plan({"tables": [table(name=object())]}, devices=2)


#===----------------------------------------------------------------------===#
# One process with PyTorch
#===----------------------------------------------------------------------===#

NEURAL_PLAN = """
import sys
first, second = sys.argv[1:]
import importlib
importlib.import_module(first)
importlib.import_module(second)
import torch
from neuroshard import _core
torch.set_num_threads(2)
plan = _core.plan(%r, devices=2)
assert "h200-b65536" in plan["cost_model"], plan["cost_model"]
# The model's own thread setting does not outlive it.
assert torch.get_num_threads() == 2, torch.get_num_threads()
x = torch.nn.EmbeddingBag(10, 4)(torch.tensor([1, 2]), torch.tensor([0]))
print("ok", plan["cost_ms"] > 0, tuple(x.shape))
""" % TASK


@pytest.mark.parametrize("order", [("torch", "neuroshard._core"),
                                   ("neuroshard._core", "torch")])
def test_torch_and_the_module_share_a_process(order):
    if not _core.neural_cost_models_built():
        pytest.skip("this build has no neural cost model")
    result = subprocess.run([sys.executable, "-c", NEURAL_PLAN] + list(order),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok True (1, 4)"
