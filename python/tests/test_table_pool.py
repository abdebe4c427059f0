#===- test_table_pool.py - Tests of the synthetic table pool --------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#

import json
import os

import numpy as np
import pytest

from neuroshard import _core
from neuroshard import table_pool as tp

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# docs/design.md §6: aggregate statistics of the public DLRM traces.
DLRM_HIST = [0.47, 0.15, 0.14, 0.11, 0.07, 0.03, 0.01]


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
    random = _core.Random(_core.mix_seed(5, 0))
    for _ in range(4):  # rows, two normals for pooling, skew
        random.uniform()
    stream = _core.zipf_index_stream(
        table["rows"], table["skew"],
        round(tp.DEFAULT_SAMPLE_BAGS * table["pooling_factor"]),
        random.next())
    assert table["access_hist"] == _core.access_histogram(stream)


def test_the_shipped_models_pool_is_reproduced(pool):
    """The shipped bundles were trained on the pool of seed 0 with 400 base
    tables; its tables, and so its fingerprint, must not drift."""
    with open(os.path.join(REPO, "models", "cpu-zen5-b1024",
                           "meta.json")) as f:
        trained_on = json.load(f)["training"]["pool"]
    assert tp.pool_fingerprint(pool) == trained_on


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
    with pytest.raises(ValueError, match="pool dims: 'dim' must be a "
                       "positive multiple of 4, got 6"):
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
    # The task reader's rules, naming the table by its index in the pool.
    pool = tp.generate_pool(0, 2)
    pool["tables"][4]["dim"] = 6
    path.write_text(json.dumps(pool))
    with pytest.raises(tp.PoolError) as info:
        tp.load_pool(str(path))
    assert str(info.value) == (
        "pool '%s': tables[4] ('%s'): 'dim' must be a positive multiple of "
        "4, got 6" % (path, pool["tables"][4]["name"]))
    # ... and the histogram must be one a batch of sample_bags can make.
    pool = tp.generate_pool(0, 2)
    pool["tables"][2]["access_hist"] = [0.0] * 16 + [1.0]
    path.write_text(json.dumps(pool))
    with pytest.raises(tp.PoolError, match=r"tables\[2\] \('t0000_d32'\): "
                       "'access_hist' bin 16 \\(rows hit more than 32768 "
                       "times\\) is 1"):
        tp.load_pool(str(path))
    for bags in (None, 0, "1024"):
        pool = dict(tp.generate_pool(0, 2), sample_bags=bags)
        path.write_text(json.dumps(pool))
        with pytest.raises(tp.PoolError, match="\"sample_bags\" must be a "
                           "positive integer, got %r" % (bags,)):
            tp.load_pool(str(path))


def test_large_tier_follows_the_pool_and_leaves_it_as_it_was():
    plain = tp.generate_pool(seed=3, base_tables=12)
    pool = tp.generate_pool(seed=3, base_tables=12, large_tables=5)
    regular = [t for t in pool["tables"] if not tp.is_large(t)]
    large = [t for t in pool["tables"] if tp.is_large(t)]
    # The regular tables are the pool without a large tier, table for table.
    assert json.dumps(regular) == json.dumps(plain["tables"])
    assert "large_tables" not in plain and pool["large_tables"] == 5
    assert len(large) == 5 * len(tp.LARGE_DIMS)
    assert [t["id"] for t in pool["tables"]] == list(range(len(
        pool["tables"])))
    assert {t["base"] for t in large} == set(range(12, 17))
    assert {t["dim"] for t in large} == set(tp.LARGE_DIMS)
    for t in large:
        assert tp.LARGE_MIN_ROWS <= t["rows"] <= tp.LARGE_MAX_ROWS
        assert tp.LARGE_MIN_POOLING <= t["pooling_factor"] <= \
            tp.LARGE_MAX_POOLING
        assert sum(t["access_hist"]) == pytest.approx(1.0)
    # Its own test split, by base table.
    splits = {t["base"]: t["split"] for t in large}
    assert set(splits.values()) == {"train", "test"}
    assert tp.generate_pool(seed=3, base_tables=12, large_tables=5) == pool


def test_pool_with_a_large_tier_loads(tmp_path):
    pool = tp.generate_pool(seed=1, base_tables=3, large_tables=2,
                            sample_bags=64)
    path = tmp_path / "pool.json"
    path.write_text(json.dumps(pool))
    assert tp.load_pool(str(path)) == json.loads(json.dumps(pool))
    with pytest.raises(ValueError, match="large_tables must be at least 0"):
        tp.generate_pool(seed=1, base_tables=3, large_tables=-1)
