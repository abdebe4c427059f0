#===- test_cost_model.py - Tests of the neural cost models and bundles ----===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#

import json
import os
import re
import shutil

import pytest
import torch

from neuroshard import cost_model as cm

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def random_features(count, seed=0):
    return cm._plausible_features(torch.Generator().manual_seed(seed), count)


@pytest.fixture
def compute():
    torch.manual_seed(0)
    model = cm.ComputeCostModel()
    model.normalize.fit(random_features(64))
    return model.eval()


def test_feature_order_is_design_order():
    assert cm.FEATURE_ORDER[:3] == ["rows", "dim", "pooling_factor"]
    assert cm.FEATURE_ORDER[3:] == ["bin_%d" % i for i in range(17)]


def test_feature_order_is_the_planners(tmp_path):
    """The planner computes the features in C++ and checks meta.json's
    "feature_order" name by name against its own order: a bundle that lists
    FEATURE_ORDER plans, and each name replaced in turn is refused with the
    name the planner expects there, which must be FEATURE_ORDER's."""
    from neuroshard import _core
    if not _core.neural_cost_models_built():
        pytest.skip("the planner is built without the neural cost models")
    bundle = tmp_path / "bundle"
    shutil.copytree(os.path.join(REPO, "models", "cpu-zen4-b1024"), bundle)
    meta = json.loads((bundle / "meta.json").read_text())
    assert meta["feature_order"] == cm.FEATURE_ORDER
    task = {"batch_size": 1024, "tables": [
        {"name": "t%d" % i, "rows": 1000 * (i + 1), "dim": 16,
         "pooling_factor": 4.0} for i in range(4)]}
    assert _core.plan(task, devices=2, memory_gb=1.0, cost_model=str(bundle),
                      device_kind="cpu")["cost_ms"] > 0
    expected = []
    for i in range(cm.NUM_FEATURES):
        (bundle / "meta.json").write_text(json.dumps(dict(
            meta, feature_order=cm.FEATURE_ORDER[:i] + ["x"] +
            cm.FEATURE_ORDER[i + 1:])))
        with pytest.raises(_core.NeuroShardError) as info:
            _core.plan(task, devices=2, memory_gb=1.0,
                       cost_model=str(bundle), device_kind="cpu")
        found = re.search(r"feature %d of feature_order is \"x\", expected "
                          r"'(\w+)'" % i, str(info.value))
        assert found, str(info.value)
        expected.append(found.group(1))
    assert expected == cm.FEATURE_ORDER
    assert cm.NUM_FEATURES == 20


def test_table_features_rejects_wrong_bin_count():
    assert len(cm.table_features(1000, 64, 12.5, [0.0] * 17)) == 20
    with pytest.raises(ValueError, match="16 bins, expected 17"):
        cm.table_features(1000, 64, 12.5, [0.0] * 16)


def test_compute_shapes(compute):
    features = random_features(7)
    width = compute.encoding_width()
    assert width == cm.NUM_PRIOR_TERMS + 1 + cm.ENCODING_DIM
    assert compute.encode(features).shape == (7, width)
    assert compute.head(torch.zeros(3, width)).shape == (3,)
    assert compute.spread(torch.zeros(3, width)).shape == (3,)
    shard_ids = torch.tensor([0, 0, 1, 2, 2, 2, 1])
    assert compute(features, shard_ids, 3).shape == (3,)


def test_forward_is_head_of_summed_encodings(compute):
    features = random_features(9, seed=1)
    shard_ids = torch.tensor([2, 0, 1, 1, 0, 2, 2, 3, 0])
    with torch.no_grad():
        predicted = compute(features, shard_ids, 4)
        encodings = compute.encode(features)
        for shard in range(4):
            summed = encodings[shard_ids == shard].sum(dim=0, keepdim=True)
            assert torch.allclose(predicted[shard], compute.head(summed)[0],
                                  rtol=1e-6, atol=1e-6)


def test_forward_ignores_order_within_a_set(compute):
    features = random_features(5, seed=2)
    ids = torch.zeros(5, dtype=torch.long)
    with torch.no_grad():
        assert torch.allclose(compute(features, ids, 1),
                              compute(features.flip(0), ids, 1), rtol=1e-6)


def test_normalisation_is_inside_the_module(compute):
    # Raw rows of 1e7 must not blow up the encodings: log-scaling and the
    # fitted statistics are applied by the module itself.
    features = random_features(4)
    features[:, 0] = 1e7
    normalized = compute.normalize(features)
    assert normalized[:, 0].abs().max() < 10
    assert compute.normalize.log_mask.tolist()[:4] == [True, True, True,
                                                         False]


def test_comm_shapes():
    fw, bw = cm.ForwardCommModel(4), cm.BackwardCommModel(4)
    dimsums, stragglers = torch.rand(6, 4) * 512, torch.rand(6, 4)
    assert fw(dimsums, stragglers).shape == (6, 4)
    assert bw(dimsums).shape == (6, 4)


def test_torchscript_round_trip(tmp_path, compute):
    fw, bw = cm.ForwardCommModel(2).eval(), cm.BackwardCommModel(2).eval()
    meta = cm.bundle_meta(trained=False, hardware="test", batch_size=1024,
                          devices=2)
    cm.export_bundle(str(tmp_path), compute, meta, fw, bw)
    features = random_features(6, seed=3)
    ids = torch.tensor([0, 1, 1, 2, 0, 2])
    dimsums, stragglers = torch.rand(3, 2) * 256, torch.rand(3, 2)
    loaded = torch.jit.load(str(tmp_path / "compute.pt"))
    loaded_fw = torch.jit.load(str(tmp_path / "comm_fw.pt"))
    loaded_bw = torch.jit.load(str(tmp_path / "comm_bw.pt"))
    with torch.no_grad():
        assert torch.equal(loaded(features, ids, 3), compute(features, ids, 3))
        assert torch.equal(loaded.encode(features), compute.encode(features))
        summed = compute.encode(features)[:2]
        assert torch.equal(loaded.head(summed), compute.head(summed))
        assert torch.equal(loaded_fw(dimsums, stragglers),
                           fw(dimsums, stragglers))
        assert torch.equal(loaded_bw(dimsums), bw(dimsums))


def test_export_rejects_unpaired_comm_models(tmp_path, compute):
    meta = cm.bundle_meta(trained=False, hardware="test", batch_size=1,
                          devices=2)
    with pytest.raises(ValueError, match="pairs"):
        cm.export_bundle(str(tmp_path), compute, meta,
                         comm_fw=cm.ForwardCommModel(2))
    with pytest.raises(ValueError, match="devices"):
        cm.export_bundle(str(tmp_path), compute, meta)


def test_export_untrained_cli(tmp_path):
    out = tmp_path / "bundle"
    assert cm.main(["export-untrained", "--out", str(out), "--seed", "5",
                    "--devices", "4", "--batch-size", "4096"]) == 0
    assert sorted(os.listdir(out)) == ["comm_bw.pt", "comm_fw.pt",
                                       "compute.pt", "meta.json"]
    meta = json.loads((out / "meta.json").read_text())
    assert meta["trained"] is False
    assert meta["devices"] == 4
    assert meta["comm"] == "neural"
    assert meta["batch_size"] == 4096
    assert meta["dtype"] == "f32"
    assert meta["feature_order"] == cm.FEATURE_ORDER
    assert meta["encoding_dim"] == cm.NUM_PRIOR_TERMS + 1 + cm.ENCODING_DIM
    assert meta["compute_model"]["ensemble"] == 1
    assert meta["compute_model"]["correction_bound"] == \
        cm.DEFAULT_CORRECTION_BOUND
    assert meta["dataset_size"] is None and meta["held_out"] is None
    assert meta["format"] == cm.BUNDLE_FORMAT


def test_export_untrained_is_seeded_and_comm_optional(tmp_path):
    for name in ("a", "b"):
        cm.main(["export-untrained", "--out", str(tmp_path / name),
                 "--seed", "11"])
    assert sorted(os.listdir(tmp_path / "a")) == ["compute.pt", "meta.json"]
    meta = json.loads((tmp_path / "a" / "meta.json").read_text())
    assert meta["devices"] is None and meta["comm"] == "analytical"
    a = torch.jit.load(str(tmp_path / "a" / "compute.pt"))
    b = torch.jit.load(str(tmp_path / "b" / "compute.pt"))
    features = random_features(3)
    assert torch.equal(a.encode(features), b.encode(features))


def test_predict_query_matches_modules(tmp_path):
    cm.main(["export-untrained", "--out", str(tmp_path), "--seed", "2",
             "--devices", "2"])
    hist = [0.5, 0.5] + [0.0] * 15
    query = {
        "tables": [{"rows": 1000, "dim": 64, "pooling_factor": 4.0,
                    "access_hist": hist},
                   {"rows": 5e6, "dim": 128, "pooling_factor": 30.0,
                    "access_hist": hist[::-1]}],
        "sets": [[[0, 64]], [[0, 32], [1, 128]]],
        "dimsums": [[64.0, 160.0]],
        "stragglers": [[0.0, 1.5]],
    }
    result = cm.predict_query(str(tmp_path), query)
    compute = torch.jit.load(str(tmp_path / "compute.pt"))
    with torch.no_grad():
        second = compute.head(compute.encode(torch.tensor([
            cm.table_features(1000, 32, 4.0, hist),
            cm.table_features(5e6, 128, 30.0, hist[::-1])])).sum(
                0, keepdim=True))
    assert len(result["compute"]) == 2
    assert result["compute"][1] == pytest.approx(second.item(), rel=1e-5)
    assert len(result["comm_bw"]) == 1 and len(result["comm_bw"][0]) == 2
    assert len(result["comm_fw"][0]) == 2


def table(rows, dim, pooling, hist=None):
    hist = hist or [0.5, 0.5] + [0.0] * 15
    return torch.tensor([cm.table_features(rows, dim, pooling, hist)])


def test_prior_terms_follow_the_physics():
    prior = cm.PhysicsPrior(batch_size=1024, cache_bytes=(1 << 20, 32 << 20))
    terms = dict(zip(cm.PRIOR_TERMS, prior.terms(table(10**6, 16, 10.0))[0]
                     .tolist()))
    lookups = 1024 * 10.0
    # A 16-wide f32 row is one 64-byte line; half the distinct rows are hit
    # once and half 1.5 times on average, so 1.25 hits per distinct row.
    assert terms["lookups"] == pytest.approx(lookups)
    assert terms["gathered_bytes"] == pytest.approx(lookups * 64)
    assert terms["distinct_bytes"] == pytest.approx(lookups / 1.25 * 64)
    table_bytes = 10**6 * 16 * 4
    assert terms["l3_miss_bytes"] == pytest.approx(
        lookups / 1.25 * 64 * (1 - (32 << 20) / table_bytes), rel=1e-5)
    assert terms["l3_miss_rows"] == pytest.approx(
        lookups / 1.25 * (1 - (32 << 20) / table_bytes), rel=1e-5)
    assert terms["output_bytes"] == pytest.approx(1024 * 16 * 4)
    assert terms["shards"] == 1.0
    # A table that fits in L2 misses nothing; distinct rows never exceed
    # the table's rows.
    small = dict(zip(cm.PRIOR_TERMS, prior.terms(table(100, 16, 10.0))[0]
                     .tolist()))
    assert small["l2_miss_bytes"] == 0.0 and small["l3_miss_rows"] == 0.0
    assert small["distinct_bytes"] == pytest.approx(100 * 64)
    # The hottest row: the upper edge of the highest non-empty bin (bin 1:
    # two hits) ...
    assert terms["hottest_row_hits"] == 2.0
    # ... and in the open last bin, the lookups the other bins leave over
    # that bin's rows. With 5/6 of the distinct rows hit once and 1/6 in
    # the last bin (1.5 x 2^15 hits each when rows are counted), 40960
    # lookups touch 40960 / (5/6 + 49152/6) = 5 rows: 4.17 hit once, and
    # the rest of the lookups on the last bin's 0.83 rows, at least one.
    hot = [5 / 6] + [0.0] * 15 + [1 / 6]
    hot_terms = dict(zip(cm.PRIOR_TERMS, prior.terms(
        table(10**4, 16, 40.0, hot))[0].tolist()))
    distinct = 40960 / (5 / 6 + 49152 / 6)
    assert hot_terms["hottest_row_hits"] == pytest.approx(
        40960 - distinct * 5 / 6, rel=1e-5)
    # A row in the last bin never counts fewer hits than its lower edge,
    # even where the lookups cannot fill it (10240 lookups of one row).
    short = dict(zip(cm.PRIOR_TERMS, prior.terms(
        table(1, 16, 10.0, [0.0] * 16 + [1.0]))[0].tolist()))
    assert short["hottest_row_hits"] == 2 ** 15


def test_correction_is_bounded_and_vanishes_outside_the_ranges(compute):
    compute.prior.set_ranges(torch.cat([table(1000, 16, 5.0),
                                        table(10**6, 128, 50.0)]))
    # Drive every member's correction to its bound.
    for mlp in compute.head_mlps:
        torch.nn.init.constant_(mlp[-1].bias, 1e6)
    bound = cm.DEFAULT_CORRECTION_BOUND

    def costs(features):
        with torch.no_grad():
            encodings = compute.encode(features)
            prior = encodings[:, :cm.NUM_PRIOR_TERMS].sum(dim=1) + \
                compute.prior.intercept
            return float(compute.head(encodings)), float(prior)

    inside, prior = costs(table(10**5, 64, 20.0))
    assert inside == pytest.approx(bound * prior, rel=1e-4)
    # 1e8 rows is 100 times past the trained 1e6: the prediction is the
    # prior to within 1%; at 2x past, the correction is partly applied.
    far, far_prior = costs(table(10**8, 64, 20.0))
    assert far == pytest.approx(far_prior, rel=0.01)
    near, near_prior = costs(table(2 * 10**6, 64, 20.0))
    assert near_prior < near < bound * near_prior


def test_ensemble_spread_is_the_members_deviation():
    torch.manual_seed(3)
    model = cm.ComputeCostModel(members=3).eval()
    model.normalize.fit(random_features(64))
    features = random_features(5, seed=2)
    with torch.no_grad():
        summed = model.encode(features).sum(dim=0, keepdim=True)
        members = model.member_costs(summed)[0]
        assert float(model.head(summed)) == pytest.approx(
            float(members.mean()), rel=1e-6)
        assert float(model.spread(summed)) == pytest.approx(
            float(members.std(unbiased=False)), rel=1e-5)
        assert float(model.spread(summed)) > 0.0
    single = cm.ComputeCostModel(members=1).eval()
    with torch.no_grad():
        assert float(single.spread(single.encode(features))[0]) == 0.0


def test_compute_model_arguments_are_checked():
    with pytest.raises(ValueError, match="at least one member"):
        cm.ComputeCostModel(members=0)
    with pytest.raises(ValueError, match="above 1"):
        cm.ComputeCostModel(correction_bound=1.0)
