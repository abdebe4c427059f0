#===- test_table_pool.py - Tests of the synthetic table pool --------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#

import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from neuroshard import table_pool as tp

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# DESIGN §6: aggregate statistics of the public DLRM traces.
DLRM_HIST = [0.47, 0.15, 0.14, 0.11, 0.07, 0.03, 0.01]


def hist_of(counts):
    """The expected histogram of a stream where distinct row r is hit
    counts[r] times, written out from the DESIGN §3 rule."""
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


def stream_of(counts):
    return [row for row, count in enumerate(counts) for _ in range(count)]


@pytest.mark.parametrize("counts", [
    [1], [2], [3], [4], [5], [1, 1, 2, 3], [8, 9, 16, 17],
    [2**15, 2**15 + 1], [100000, 1, 1], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
])
def test_histogram_bins_follow_design(counts):
    assert tp.access_histogram(stream_of(counts)) == pytest.approx(
        hist_of(counts), abs=1e-12)


def test_histogram_by_hand():
    # Row 5 twice, 7 once, 9 three times, in any order.
    assert tp.access_histogram([9, 5, 7, 9, 5, 9]) == pytest.approx(
        [1 / 3, 1 / 3, 1 / 3] + [0.0] * 14)
    assert tp.access_histogram([]) == [0.0] * 17
    assert tp.access_histogram([4] * 4 + [6] * 5) == pytest.approx(
        [0, 0, 0.5, 0.5] + [0.0] * 13)


CPP_TWIN = r"""
#include "neuroshard/Runtime/InputGenerator.h"
#include <cstdio>
#include <iostream>
using namespace neuroshard::inputs;
int main() {
  // mixSeed and Random outputs, then the histogram of indices on stdin.
  std::printf("%llu\n", (unsigned long long)mixSeed(3, 11));
  Random random(12345);
  for (int i = 0; i < 3; ++i)
    std::printf("%llu\n", (unsigned long long)random.next());
  std::printf("%.17g\n", random.uniform());
  std::printf("%llu\n", (unsigned long long)random.below(1000003));
  std::vector<int64_t> indices;
  long long v;
  while (std::cin >> v)
    indices.push_back(v);
  for (double h : accessHistogram(indices))
    std::printf("%.17g\n", h);
}
"""


@pytest.fixture(scope="module")
def cpp_twin(tmp_path_factory):
    """The C++ generator compiled with a small driver (plain C++, no
    dependency); skipped without a C++ compiler."""
    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        pytest.skip("no C++ compiler to build the C++ twin")
    work = tmp_path_factory.mktemp("twin")
    (work / "main.cpp").write_text(CPP_TWIN)
    binary = work / "twin"
    subprocess.run([compiler, "-std=c++17", "-O1",
                    "-I", os.path.join(REPO, "include"),
                    str(work / "main.cpp"),
                    os.path.join(REPO, "lib", "Runtime", "InputGenerator.cpp"),
                    "-o", str(binary)], check=True)
    return str(binary)


def run_twin(binary, indices):
    text = " ".join(str(i) for i in indices)
    out = subprocess.run([binary], input=text, capture_output=True,
                         text=True, check=True).stdout.split()
    return out


def test_random_is_a_twin_of_the_cpp_generator(cpp_twin):
    out = run_twin(cpp_twin, [])
    assert int(out[0]) == tp.mix_seed(3, 11)
    random = tp.SplitMix64(12345)
    assert [int(v) for v in out[1:4]] == [random.next() for _ in range(3)]
    assert float(out[4]) == random.uniform()
    assert int(out[5]) == random.below(1000003)
    block = tp.SplitMix64(12345)
    assert block.next_block(3).tolist() == [int(v) for v in out[1:4]]
    assert block.uniform_block(1)[0] == float(out[4])


@pytest.mark.parametrize("counts", [
    [1, 1, 1], [2, 3, 4, 5, 9, 17, 33], [2**15, 2**15 + 1, 70000, 1],
    [7] * 10 + [1] * 25 + [300] * 3,
])
def test_histogram_is_a_twin_of_the_cpp_one(cpp_twin, counts):
    indices = stream_of(counts)
    np.random.default_rng(0).shuffle(indices)
    cpp = [float(v) for v in run_twin(cpp_twin, indices)[6:]]
    assert tp.access_histogram(indices) == cpp


def test_histogram_twin_on_a_generated_stream(cpp_twin):
    stream = tp.index_stream(5000, 1.3, 40000, seed=9)
    cpp = [float(v) for v in run_twin(cpp_twin, stream.tolist())[6:]]
    assert tp.access_histogram(stream) == cpp


def test_index_stream_is_deterministic_and_in_range():
    a = tp.index_stream(1000, 1.2, 5000, seed=4)
    assert np.array_equal(a, tp.index_stream(1000, 1.2, 5000, seed=4))
    assert not np.array_equal(a, tp.index_stream(1000, 1.2, 5000, seed=5))
    assert a.min() >= 0 and a.max() < 1000
    # More skew, fewer distinct rows.
    flat = tp.index_stream(100000, 0.0, 20000, seed=1)
    steep = tp.index_stream(100000, 2.0, 20000, seed=1)
    assert len(np.unique(steep)) < len(np.unique(flat)) / 4


@pytest.fixture(scope="module")
def pool():
    return tp.generate_pool(seed=0, base_tables=400)


def test_pool_is_deterministic():
    a = tp.generate_pool(seed=3, base_tables=12)
    assert json.dumps(a) == json.dumps(tp.generate_pool(seed=3,
                                                        base_tables=12))
    assert tp.pool_fingerprint(a) != tp.pool_fingerprint(
        tp.generate_pool(seed=4, base_tables=12))


def test_table_stats_do_not_depend_on_pool_size():
    small = tp.generate_pool(seed=2, base_tables=5)["tables"]
    large = tp.generate_pool(seed=2, base_tables=9)["tables"]
    for a, b in zip(small, large):
        assert (a["id"], a["name"], a["rows"], a["pooling_factor"],
                a["access_hist"]) == (b["id"], b["name"], b["rows"],
                                      b["pooling_factor"], b["access_hist"])


def test_pool_layout(pool):
    tables = pool["tables"]
    assert len(tables) == 400 * len(tp.POOL_DIMS)
    assert [t["id"] for t in tables] == list(range(len(tables)))
    for base in (0, 123, 399):
        group = [t for t in tables if t["base"] == base]
        assert [t["dim"] for t in group] == [128, 64, 32, 16, 8, 4]
        assert len({(t["rows"], t["pooling_factor"], t["split"],
                     tuple(t["access_hist"])) for t in group}) == 1
    for t in tables:
        assert 100 <= t["rows"] <= 10**7
        assert sum(t["access_hist"]) == pytest.approx(1.0)


def test_split_is_disjoint_by_base_table(pool):
    splits = {}
    for t in pool["tables"]:
        assert splits.setdefault(t["base"], t["split"]) == t["split"]
    test = [b for b, s in splits.items() if s == "test"]
    assert len(test) == 80
    assert len(splits) - len(test) == 320
    assert tp._test_bases(0, 2, 0.01) and len(tp._test_bases(0, 2, 0.99)) == 1


def test_pool_statistics_match_design(pool):
    summary = tp.pool_summary(pool)
    assert summary["rows_min"] < 300 and summary["rows_max"] > 3e6
    assert 13.0 < summary["pooling_mean"] < 19.0
    assert summary["pooling_max"] > 60  # heavy tail
    mean = summary["mean_access_hist"]
    assert abs(mean[0] - DLRM_HIST[0]) < 0.08
    assert sum(abs(a - b) for a, b in zip(mean, DLRM_HIST)) < 0.2
    # Monotone decreasing like the traces.
    assert all(mean[j] > mean[j + 1] for j in range(8))
    # ... while single tables vary widely.
    bin0 = np.array([t["access_hist"][0] for t in pool["tables"]])
    assert bin0.min() < 0.1 and bin0.max() > 0.8 and bin0.std() > 0.15


def test_histograms_come_from_the_streams():
    table = tp.generate_pool(seed=5, base_tables=1)["tables"][0]
    random = tp.SplitMix64(tp.mix_seed(5, 0))
    for _ in range(4):  # rows, two normals for pooling, skew
        random.uniform()
    stream = tp.index_stream(table["rows"], table["skew"],
                             round(tp.DEFAULT_SAMPLE_BAGS *
                                   table["pooling_factor"]), random.next())
    assert table["access_hist"] == tp.access_histogram(stream)


def test_cli_writes_pool(tmp_path, capsys):
    out = tmp_path / "pool.json"
    assert tp.main(["--seed", "1", "--base-tables", "10", "--out",
                    str(out)]) == 0
    pool = tp.load_pool(str(out))
    assert pool["seed"] == 1 and len(pool["tables"]) == 60
    assert pool == json.loads(json.dumps(tp.generate_pool(1, 10)))
    assert "60 tables (10 base tables: 8 train, 2 test)" in \
        capsys.readouterr().out


def test_generate_rejects_bad_options():
    with pytest.raises(ValueError, match="base_tables"):
        tp.generate_pool(0, 0)
    with pytest.raises(ValueError, match="multiples of 4"):
        tp.generate_pool(0, 3, dims=(128, 6))


@pytest.mark.parametrize("content, message", [
    (None, "cannot read pool"),
    ("{", "is not valid JSON"),
    ('{"tables": []}', "has no tables"),
    ('[1]', "expected an object"),
    ('{"tables": [{"id": 0}]}', "tables\\[0\\] has no \"base\""),
])
def test_load_pool_errors_name_the_file(tmp_path, content, message):
    path = tmp_path / "pool.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(tp.PoolError, match=message) as info:
        tp.load_pool(str(path))
    assert str(path) in str(info.value)


def test_load_pool_checks_tables(tmp_path):
    pool = tp.generate_pool(0, 2)
    pool["tables"][3]["access_hist"] = [1.0] * 16
    path = tmp_path / "pool.json"
    path.write_text(json.dumps(pool))
    with pytest.raises(tp.PoolError,
                       match="'access_hist' must have 17 bins, got 16"):
        tp.load_pool(str(path))
    pool = tp.generate_pool(0, 2)
    pool["tables"][1]["id"] = 0
    path.write_text(json.dumps(pool))
    with pytest.raises(tp.PoolError, match="duplicate table id 0"):
        tp.load_pool(str(path))
