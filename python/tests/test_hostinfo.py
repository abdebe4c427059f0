#===- test_hostinfo.py - Tests of the host description -------------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#

import json
import os
import subprocess

import pytest

from neuroshard import hostinfo
from neuroshard import table_pool as tp

import built_tools


def fake_root(tmp_path, cpuinfo=None, caches=()):
    """A file-system root with /proc/cpuinfo (if given) and CPU 0's cache
    entries, each (level, type, size) in index order."""
    if cpuinfo is not None:
        (tmp_path / "proc").mkdir()
        (tmp_path / "proc" / "cpuinfo").write_text(cpuinfo)
    cache = tmp_path / "sys/devices/system/cpu/cpu0/cache"
    cache.mkdir(parents=True)
    for index, (level, kind, size) in enumerate(caches):
        entry = cache / ("index%d" % index)
        entry.mkdir()
        (entry / "level").write_text("%s\n" % level)
        (entry / "type").write_text("%s\n" % kind)
        (entry / "size").write_text("%s\n" % size)
    return str(tmp_path)


CPUINFO = ("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\n"
           "model\t\t: 17\n"
           "model name\t:   AMD EPYC 9654 96-Core Processor  \n"
           "flags\t\t: fpu sse4_2 avx avx2 fma avx512f avx512_bf16\n\n"
           "processor\t: 1\nmodel name\t: Other CPU\ncpu family\t: 6\n")


def test_cache_sizes_parse_to_kib():
    assert hostinfo.parse_cache_size("32K") == 32
    assert hostinfo.parse_cache_size("1024K\n") == 1024
    assert hostinfo.parse_cache_size("32M") == 32768
    assert hostinfo.parse_cache_size("1G") == 1048576
    # What the C++ reader (hostCachesKB) skips is no size here either.
    for bad in ("", "K", "32 T", "-1K", "1.5M", "65536", "512KiB", "32k"):
        with pytest.raises(ValueError):
            hostinfo.parse_cache_size(bad)


def test_host_description_of_a_fake_tree(tmp_path):
    root = fake_root(tmp_path, CPUINFO, [
        (1, "Data", "48K"), (1, "Instruction", "32K"),
        (2, "Unified", "1024K"), (3, "Unified", "32M")])
    host = hostinfo.host_description(root)
    assert list(host) == ["cpu_model", "cpu_family", "cpu_model_number",
                          "isa", "caches_kb", "logical_cpus"]
    assert host["cpu_model"] == "AMD EPYC 9654 96-Core Processor"
    # The first CPU's numbers; "model name" is not the "model" line.
    assert (host["cpu_family"], host["cpu_model_number"]) == (25, 17)
    # Only the listed instruction sets, sorted.
    assert host["isa"] == ["avx", "avx2", "avx512f", "fma", "sse4_2"]
    assert host["caches_kb"] == {"L1d": 48, "L2": 1024, "L3": 32768}
    assert list(host["caches_kb"]) == ["L1d", "L2", "L3"]
    assert host["logical_cpus"] == os.cpu_count()


def test_missing_caches_and_cpu_model(tmp_path):
    root = fake_root(tmp_path, "processor\t: 0\nmodel name\t:\n", [
        (1, "Data", "32K"), (2, "Unified", "garbage"),
        (2, "Unified", "256K"), (1, "Data", "64K")])
    # No L3 key; a malformed entry is skipped; the first L1d wins.
    assert hostinfo.cache_sizes_kb(root) == {"L1d": 32, "L2": 256}
    assert hostinfo.cpu_model(root) == hostinfo.UNKNOWN_CPU
    empty = tmp_path / "empty"
    empty.mkdir()
    assert hostinfo.host_description(str(empty))["caches_kb"] == {}
    assert hostinfo.cpu_model(str(empty)) == "unknown CPU"


def test_cpu_model_is_what_the_timing_tool_reports(tmp_path):
    """The Python and C++ readers of /proc/cpuinfo agree: the bundle's
    "hardware" and "host" name the same machine."""
    tool = built_tools.tool("neuroshard-collect")
    pool = tmp_path / "pool.json"
    pool.write_text(json.dumps(tp.generate_pool(seed=1, base_tables=2)))
    sets = tmp_path / "sets.jsonl"
    sets.write_text('{"id": 0, "tables": [0]}\n')
    result = subprocess.run(
        [tool, "--pool", str(pool), "--sets", str(sets), "--device", "cpu",
         "--batch-size", "64", "--warmup", "0", "--iters", "1",
         "--max-rows", "100", "--flush-mb", "0"],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["hardware"] == hostinfo.cpu_model()


def test_other_chip_names_what_differs(tmp_path):
    root = fake_root(tmp_path, CPUINFO)
    same = {"cpu_model": "x", "cpu_family": 25, "cpu_model_number": 17,
            "isa": ["sse4_2", "fma", "avx512f", "avx2", "avx"]}
    assert hostinfo.other_chip(same, root) is None
    # Fields a bundle does not record are not compared.
    assert hostinfo.other_chip({"cpu_model": "x"}, root) is None
    assert hostinfo.other_chip(None, root) is None
    zen5 = {"cpu_model": "x", "cpu_family": 26, "isa": ["avx", "avx512vl"]}
    assert hostinfo.other_chip(zen5, root) == (
        "cpu_family 26 there, 25 here; isa avx avx512vl there, avx avx2 "
        "avx512f fma sse4_2 here")
