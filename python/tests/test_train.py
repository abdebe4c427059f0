#===- test_train.py - Tests of training, export, metrics and the report ---===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#

import itertools
import json
import os
import time

import numpy as np
import pytest
import torch

from neuroshard import _core
from neuroshard import collect
from neuroshard import cost_model as cm
from neuroshard import metrics
from neuroshard import report
from neuroshard import table_pool as tp
from neuroshard import train



def brute_force_tau_b(x, y):
    """Kendall's tau-b straight from its definition, pair by pair."""
    concordant = discordant = tied_x = tied_y = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        dx, dy = x[i] - x[j], y[i] - y[j]
        tied_x += dx == 0
        tied_y += dy == 0
        if dx * dy > 0:
            concordant += 1
        elif dx * dy < 0:
            discordant += 1
    pairs = len(x) * (len(x) - 1) // 2
    return (concordant - discordant) / np.sqrt(
        (pairs - tied_x) * (pairs - tied_y))


def test_kendall_tau_on_known_rankings():
    assert metrics.kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert metrics.kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    # Pairs (0,1) and (0,2) concordant, (1,2) discordant: (2 - 1) / 3.
    assert metrics.kendall_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    # One pair tied in x: 2 / sqrt((3 - 1) * 3).
    assert metrics.kendall_tau([1, 1, 2], [1, 2, 3]) == pytest.approx(
        2 / np.sqrt(6))
    assert np.isnan(metrics.kendall_tau([1, 1, 1], [1, 2, 3]))
    with pytest.raises(ValueError):
        metrics.kendall_tau([1], [1])


def test_kendall_tau_matches_the_definition_with_ties():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 8, 300).astype(float)
    y = x + rng.integers(0, 5, 300)
    expected = brute_force_tau_b(x.tolist(), y.tolist())
    assert metrics.kendall_tau(x, y) == pytest.approx(expected, rel=1e-12)


def test_kendall_tau_matches_scipy_when_present():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(4)
    x = rng.normal(size=2500)
    y = x + rng.normal(size=2500)
    assert metrics.kendall_tau(x, y) == pytest.approx(
        stats.kendalltau(x, y)[0], rel=1e-9)


def test_mape():
    assert metrics.mape([1.1, 1.8], [1.0, 2.0]) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="positive"):
        metrics.mape([1.0], [0.0])


def test_held_out_split_is_seeded_by_id():
    chosen = [k for k in range(4000) if train.held_out(k, 5, 0.2)]
    assert 0.17 < len(chosen) / 4000 < 0.23
    assert chosen == [k for k in range(4000) if train.held_out(k, 5, 0.2)]
    assert chosen != [k for k in range(4000) if train.held_out(k, 6, 0.2)]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, small_pool_path, shared_fake_tool):
    """500 samples "measured" by the fake tool: its cost function is known,
    so a model can learn it."""
    data = str(tmp_path_factory.mktemp("data") / "samples.jsonl")
    assert collect.main(["--pool", small_pool_path, "--out", data,
                         "--tool", shared_fake_tool, "--samples", "500",
                         "--batch-size", "2048", "--memory-cap-gb", "2",
                         "--sets-per-run", "250"]) == 0
    return data


@pytest.fixture(scope="module")
def bundle(tmp_path_factory, small_pool_path, dataset):
    out = str(tmp_path_factory.mktemp("bundle") / "cpu-test")
    # The fake tool's samples say "Test CPU 9000", not this machine.
    assert train.main(["--pool", small_pool_path, "--data", dataset,
                       "--out", out, "--epochs", "80", "--seed", "1",
                       "--allow-other-host"]) == 0
    return out


def test_log_error_on_known_values():
    # ln(2) and ln(0.5): mean 0, deviation ln(2) * sqrt(2) (ddof 1).
    mean, sd = metrics.log_error([1.0, 2.0], [2.0, 1.0])
    assert mean == pytest.approx(0.0, abs=1e-12)
    assert sd == pytest.approx(np.log(2.0) * np.sqrt(2.0))
    # A model that predicts everything 10% fast: no spread.
    mean, sd = metrics.log_error([1.0, 3.0, 5.0], [1.1, 3.3, 5.5])
    assert mean == pytest.approx(np.log(1.1)) and sd == pytest.approx(0.0)
    assert metrics.log_error([2.0], [4.0]) == (pytest.approx(np.log(2.0)),
                                               0.0)
    with pytest.raises(ValueError, match="positive"):
        metrics.log_error([1.0, 0.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="one length"):
        metrics.log_error([1.0], [1.0, 2.0])


def test_training_learns_the_cost_function(bundle):
    meta = json.load(open(os.path.join(bundle, "meta.json")))
    # The untrained starting point (epoch 0) is far off; the kept epoch is
    # both the best one and close to the known function.
    held = meta["held_out"]
    assert meta["training"]["best_epoch"] > 20
    assert held["compute_mape"] < 0.10
    assert held["compute_kendall_tau"] > 0.9
    # The log error the planner spreads plans' devices by: small, and a
    # spread of the size the MAPE implies.
    assert abs(held["compute_log_error_mean"]) < 0.1
    assert 0.0 < held["compute_log_error_sd"] < 3 * held["compute_mape"]


def test_training_reduces_held_out_error(small_pool_path, dataset):
    pool = tp.load_pool(small_pool_path)
    samples = collect.load_samples(dataset)
    training, valid = train.build_sample_sets(pool, small_pool_path,
                                              samples, dataset, 2, 0.2)
    start = time.monotonic()
    model, run = train.train_compute_model(training, valid, epochs=8, seed=2)
    took = time.monotonic() - start
    assert run["history"][run["best_epoch"]] == min(run["history"])
    # An epoch's time is the loop's: what fitting the prior and evaluating
    # the untrained start add once is not in it.
    assert 0.0 < 8 * run["epoch_s"] <= took
    # Epoch 0 is the fitted physics prior alone; the corrections improve
    # on it.
    assert min(run["history"]) < 0.85 * run["history"][0]
    assert train.evaluate(model, valid)["mape"] == pytest.approx(
        min(run["history"]), rel=1e-6)


def test_a_step_encodes_only_the_tables_its_samples_hold(small_pool_path,
                                                         dataset):
    pool = tp.load_pool(small_pool_path)
    samples = collect.load_samples(dataset)
    training, _ = train.build_sample_sets(pool, small_pool_path, samples,
                                          dataset, 2, 0.2)
    model = cm.ComputeCostModel()
    model.normalize.fit(training.training_features())
    model.prior.set_ranges(training.training_features())
    which = np.array([3, 0, 7, 3, 11])
    rows, owner = training.gather(which)
    assert len(torch.unique(rows)) < len(training.features)
    # As if every table were encoded and each sample summed its own.
    every = model.encode(training.features)
    expected = torch.zeros(len(which), every.shape[1]).index_add(
        0, owner, every[rows])
    summed = train.summed_encodings(model, training, which)
    assert summed.shape == expected.shape
    assert torch.allclose(summed, expected, rtol=1e-5, atol=1e-6)


def test_training_is_seeded(tmp_path, small_pool_path, dataset):
    outs = [str(tmp_path / name) for name in ("a", "b")]
    for out in outs:
        train.train_bundle(small_pool_path, dataset, out, epochs=2, seed=4,
                           allow_other_host=True)
    a, b = (torch.jit.load(os.path.join(o, "compute.pt")) for o in outs)
    features = cm._plausible_features(torch.Generator().manual_seed(0), 5)
    assert torch.equal(a.encode(features), b.encode(features))


def test_exported_bundle_loads_back(bundle, small_pool_path, dataset):
    meta = json.load(open(os.path.join(bundle, "meta.json")))
    assert sorted(os.listdir(bundle)) == ["compute.pt", "meta.json"]
    assert meta["trained"] is True
    assert meta["format"] == cm.BUNDLE_FORMAT
    assert (meta["hardware"], meta["batch_size"], meta["dtype"]) == (
        "Test CPU 9000", 2048, "f32")
    assert meta["feature_order"] == cm.FEATURE_ORDER
    assert meta["devices"] is None and meta["comm"] == "analytical"
    assert meta["dataset_size"] == {"compute": 500, "comm": 0}
    assert meta["measured_device"] == "cpu"
    # The TorchScript file reproduces the recorded held-out error, and its
    # encode/head path equals its forward.
    result = report.evaluate_bundle(bundle, small_pool_path, dataset)
    held = result["held-out"]
    assert held["samples"] == meta["held_out"]["compute_samples"]
    assert held["mape"] == pytest.approx(meta["held_out"]["compute_mape"],
                                         rel=1e-5)
    assert held["kendall_tau"] == pytest.approx(
        meta["held_out"]["compute_kendall_tau"], rel=1e-6)
    assert "by_kind" not in held and "row piece" not in \
        report.format_table(result)
    model = torch.jit.load(os.path.join(bundle, "compute.pt"))
    features = cm._plausible_features(torch.Generator().manual_seed(1), 6)
    ids = torch.tensor([0, 0, 1, 1, 1, 2])
    with torch.no_grad():
        encodings = model.encode(features)
        summed = torch.zeros(3, encodings.shape[1]).index_add(0, ids,
                                                              encodings)
        assert torch.allclose(model(features, ids, 3), model.head(summed),
                              rtol=1e-5)


def test_bundle_records_host_and_trained_ranges(bundle, small_pool_path,
                                               dataset):
    meta = json.load(open(os.path.join(bundle, "meta.json")))
    # Measured elsewhere (allowed): only the dataset's CPU model is known.
    assert meta["host"] == {"cpu_model": "Test CPU 9000"}
    pool = tp.load_pool(small_pool_path)
    by_id = {t["id"]: t for t in pool["tables"]}
    fitted = [s for s in collect.load_samples(dataset)
              if not train.held_out(s["id"], 1, 0.2)]
    tables = [by_id[t] for s in fitted for t in s["tables"]]
    ranges = meta["trained_ranges"]
    assert list(ranges) == ["rows", "dim", "pooling_factor",
                            "tables_per_set"]
    assert ranges["rows"] == [min(t["rows"] for t in tables),
                              max(t["rows"] for t in tables)]
    assert ranges["dim"] == [4, 128]
    assert ranges["pooling_factor"] == [
        min(t["pooling_factor"] for t in tables),
        max(t["pooling_factor"] for t in tables)]
    assert all(isinstance(v, float) for v in ranges["pooling_factor"])
    assert ranges["tables_per_set"] == [
        min(len(s["tables"]) for s in fitted),
        max(len(s["tables"]) for s in fitted)]


def test_bundle_without_row_pieces_says_so(bundle):
    meta = json.load(open(os.path.join(bundle, "meta.json")))
    assert meta["row_pieces"] is False


def test_training_on_row_pieces(tmp_path, small_pool_path,
                                shared_fake_tool):
    """Samples with row pieces train a bundle that prices them as the tables
    they are (collect.entry_stats) and records that it has seen them."""
    data = str(tmp_path / "samples.jsonl")
    assert collect.main(["--pool", small_pool_path, "--out", data,
                         "--tool", shared_fake_tool, "--samples", "400",
                         "--batch-size", "2048", "--memory-cap-gb", "2",
                         "--sets-per-run", "400", "--row-pieces",
                         "0.4"]) == 0
    out = str(tmp_path / "cpu-pieces")
    assert train.main(["--pool", small_pool_path, "--data", data, "--out",
                       out, "--epochs", "40", "--seed", "1",
                       "--allow-other-host"]) == 0
    meta = json.load(open(os.path.join(out, "meta.json")))
    assert meta["row_pieces"] is True
    # Pieces are smaller than their tables: the trained rows reach below
    # the pool's smallest table.
    pool = tp.load_pool(small_pool_path)
    samples = collect.load_samples(data)
    fitted = [s for s in samples if not train.held_out(s["id"], 1, 0.2)]
    by_id = {t["id"]: t for t in pool["tables"]}
    rows = [collect.entry_stats(e, by_id[collect.entry_table(e)])["rows"]
            for s in fitted for e in s["tables"]]
    assert meta["trained_ranges"]["rows"] == [min(rows), max(rows)]
    # The held-out sets with a piece are predicted as well as the others.
    training, valid = train.build_sample_sets(pool, small_pool_path,
                                              samples, data, 1, 0.2)
    model = torch.jit.load(os.path.join(out, "compute.pt"))
    predicted = train.predict(model, valid).numpy()
    measured = valid.costs.numpy()
    cut = np.array([any(collect.is_row_piece(e) for e in s["tables"])
                    for s in samples if train.held_out(s["id"], 1, 0.2)])
    assert cut.sum() >= 10
    error = np.abs(predicted - measured) / measured
    assert error[cut].mean() < 0.15
    assert error[cut].mean() < 2.0 * error[~cut].mean() + 0.02
    # The report tells the two kinds of set apart, with these errors.
    result = report.evaluate_bundle(out, small_pool_path, data)
    kinds = result["held-out"]["by_kind"]
    assert kinds[report.KIND_PIECES]["samples"] == cut.sum()
    assert kinds[report.KIND_WHOLE]["samples"] == (~cut).sum()
    assert kinds[report.KIND_PIECES]["mape"] == pytest.approx(
        error[cut].mean(), rel=1e-5)
    assert kinds[report.KIND_WHOLE]["signed"] == pytest.approx(
        np.mean((predicted[~cut] - measured[~cut]) / measured[~cut]),
        rel=1e-5, abs=1e-7)
    assert "held-out, sets with a row piece: %d samples" % cut.sum() in \
        report.format_table(result)

    # A piece outside its table is named.
    table_id = collect.entry_table(samples[0]["tables"][0])
    bad = dict(samples[0], tables=[{"table": table_id,
                                    "rows": [0, 10 ** 12]}])
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(bad) + "\n")
    with pytest.raises(train.TrainError, match=r"sample 0: row piece of "
                       r"table \d+: rows \[0, 1000000000000\) are not a "
                       r"range of its \d+ rows"):
        train.build_sample_sets(pool, small_pool_path, [bad], str(path), 1,
                                0.2)


def test_training_refuses_samples_of_another_machine(tmp_path,
                                                    small_pool_path, dataset,
                                                    monkeypatch, capsys):
    out = str(tmp_path / "out")
    assert train.main(["--pool", small_pool_path, "--data", dataset,
                       "--out", out, "--epochs", "1"]) == 1
    err = capsys.readouterr().err
    assert err == ("train: error: dataset '%s' was measured on 'Test CPU "
                   "9000', but this machine is '%s': train on the machine "
                   "that measured it (the bundle records that machine's "
                   "caches), or pass --allow-other-host to record only the "
                   "dataset's CPU model\n" % (dataset, _core.host_cpu_model()))
    assert not os.path.exists(out)
    # On the machine that measured, the bundle records its description.
    here = dict(_core.host_description(), cpu_model="Test CPU 9000")
    monkeypatch.setattr(_core, "host_cpu_model", lambda: "Test CPU 9000")
    monkeypatch.setattr(_core, "host_description", lambda: here)
    meta = train.train_bundle(small_pool_path, dataset, out, epochs=1,
                              seed=0)
    assert meta["host"]["cpu_model"] == "Test CPU 9000"
    assert set(meta["host"]) >= {"cpu_model", "isa", "caches_kb",
                                 "logical_cpus"}
    assert meta["host"]["logical_cpus"] == os.cpu_count()
    assert json.load(open(os.path.join(out, "meta.json")))["host"] == \
        meta["host"]


def test_neuroshard_plan_uses_the_bundle(bundle, plan_with_bundle):
    result = plan_with_bundle(bundle, 2)
    assert result.returncode == 0, result.stderr
    assert "neural cost model 'cpu-test' (measured on Test CPU 9000; batch " \
        "2048, f32, held-out compute MAPE" in result.stdout
    assert "comm: analytical" in result.stdout


def test_report_prints_table_and_writes_png(bundle, small_pool_path, dataset,
                                            tmp_path, capsys):
    png = tmp_path / "scatter.png"
    assert report.main(["--bundle", bundle, "--pool", small_pool_path,
                        "--data", dataset, "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "cost model 'cpu-test' (measured on Test CPU 9000, batch 2048, " \
        "f32; comm: analytical)" in out
    lines = out.splitlines()
    assert lines[1].split() == ["split", "samples", "MAPE", "Kendall", "tau"]
    held = lines[3].split()
    meta = json.load(open(os.path.join(bundle, "meta.json")))
    assert held[0] == "held-out"
    assert int(held[1]) == meta["held_out"]["compute_samples"]
    assert float(held[2].rstrip("%")) == pytest.approx(
        100 * meta["held_out"]["compute_mape"], abs=0.006)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_refuses_untrained_bundle(tmp_path, small_pool_path, dataset,
                                         capsys):
    cm.export_untrained(str(tmp_path / "u"), seed=0, devices=None,
                        batch_size=2048)
    assert report.main(["--bundle", str(tmp_path / "u"), "--pool",
                        small_pool_path, "--data", dataset]) == 1
    assert "has no training record" in capsys.readouterr().err


def write_samples(path, samples):
    path.write_text("".join(json.dumps(s) + "\n" for s in samples))
    return str(path)


def test_train_errors_name_the_problem(tmp_path, small_pool_path, dataset,
                                       capsys):
    samples = collect.load_samples(dataset)

    def fails(data, message):
        assert train.main(["--pool", small_pool_path, "--data", data,
                           "--out", str(tmp_path / "out"), "--epochs",
                           "1"]) == 1
        err = capsys.readouterr().err
        assert message in err and data in err, err

    fails(write_samples(tmp_path / "empty.jsonl", []), "holds no samples")
    fails(str(tmp_path / "missing.jsonl"), "cannot read dataset")
    bad = dict(samples[0], tables=[99999])
    fails(write_samples(tmp_path / "unknown.jsonl", [bad] + samples[1:]),
          "sample 0 uses table 99999, which pool")
    pool = tp.load_pool(small_pool_path)
    test_table = next(t for t in pool["tables"] if t["split"] == "test")
    bad = dict(samples[0], tables=[test_table["id"]])
    fails(write_samples(tmp_path / "leak.jsonl", [bad] + samples[1:]),
          "of the pool's test split")
    other = [dict(s, pool="0123456789abcdef") for s in samples]
    fails(write_samples(tmp_path / "other.jsonl", other),
          "sample 0 was measured on pool 0123456789abcdef, but '%s' is "
          "pool" % small_pool_path)
    bad = dict(samples[0], hardware="Other CPU")
    fails(write_samples(tmp_path / "mixed.jsonl", [bad] + samples[1:]),
          "mixes samples with different hardware: Other CPU, Test CPU 9000")
    fails(write_samples(tmp_path / "tiny.jsonl", samples[:2]),
          "collect more samples")
    assert not os.path.exists(tmp_path / "out")


def test_train_refuses_impossible_and_malformed_data(tmp_path,
                                                     small_pool_path, dataset,
                                                     capsys):
    """Values no table or measurement can have, and files that are not
    JSON text, end in one error line, never a traceback or a model."""
    samples = collect.load_samples(dataset)
    out = str(tmp_path / "out")

    def fails(pool, data, message, extra=()):
        assert train.main(["--pool", pool, "--data", data, "--out", out,
                           "--epochs", "1"] + list(extra)) == 1
        err = capsys.readouterr().err
        assert err.startswith("train: error: ") and message in err, err
        assert "Traceback" not in err

    def pool_with(name, **fields):
        pool = tp.load_pool(small_pool_path)
        pool["tables"][0].update(fields)
        path = tmp_path / name
        path.write_text(json.dumps(pool))
        return str(path)

    fails(pool_with("pooling.json", pooling_factor=-5), dataset,
          "'pooling_factor' must be a finite number >= 0, got -5")
    fails(pool_with("rows.json", rows=2 ** 40), dataset,
          "more than the 65536 GB a table may have")
    fails(pool_with("huge.json", rows=2 ** 70), dataset,
          "tables[0] ('t0000_d128'): 'rows' must be an integer, got "
          "1.1805916207174113e+21")
    fails(pool_with("hist.json", access_hist=["a"] * 17), dataset,
          "'access_hist' bin 0 must be a number, got \"a\"")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000 + "]" * 100000)
    fails(str(deep), dataset, "the document nests too deeply")
    def with_cost(name, text):
        path = tmp_path / name
        path.write_text(json.dumps(samples[0]).replace(
            '"cost_ms": %s' % json.dumps(samples[0]["cost_ms"]),
            '"cost_ms": ' + text) + "\n")
        return str(path)

    # 1e999 is valid JSON that Python reads as infinity.
    fails(small_pool_path, with_cost("inf.jsonl", "1e999"),
          "cost_ms must be a finite number > 0, got inf")
    fails(small_pool_path, with_cost("nan.jsonl", "NaN"),
          "NaN is not a JSON number")
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe{}\n")
    fails(small_pool_path, str(binary), "line 1 is not UTF-8 text (byte 0)")
    assert not os.path.exists(out)

    with pytest.raises(SystemExit):
        train.main(["--pool", small_pool_path, "--data", dataset, "--out",
                    out, "--epochs", "1", "--lr", "nan"])
    assert "--lr must be positive (and --lr finite)" in capsys.readouterr().err


def test_nonnegative_least_squares():
    rng = np.random.default_rng(4)
    a = rng.uniform(0.0, 1.0, (60, 4))
    truth = np.array([2.0, 0.0, 0.5, 3.0])
    # Exact where the truth is non-negative, on columns of any scale.
    scaled = a * np.array([1e-9, 1.0, 1e6, 1.0])
    x = train.nonnegative_least_squares(scaled, a @ truth)
    assert x * np.array([1e-9, 1.0, 1e6, 1.0]) == pytest.approx(truth,
                                                                 abs=1e-9)
    # Where the unconstrained fit wants a negative coefficient, it is 0 and
    # the rest refit; a zero column and a repeated one do not stall it.
    target = a @ np.array([1.0, -2.0, 1.0, 0.0])
    x = train.nonnegative_least_squares(a, target)
    assert (x >= 0).all() and x[1] == 0.0
    free = np.linalg.lstsq(a[:, [0, 2, 3]], target, rcond=None)[0]
    if (free >= 0).all():
        assert x[[0, 2, 3]] == pytest.approx(free)
    odd = np.concatenate([a, np.zeros((60, 1)), a[:, :1]], axis=1)
    x = train.nonnegative_least_squares(odd, a @ truth)
    assert (x >= 0).all() and x[4] == 0.0
    assert odd @ x == pytest.approx(a @ truth, rel=1e-6)


def test_fit_prior_recovers_a_physical_cost(small_pool_path, dataset):
    pool = tp.load_pool(small_pool_path)
    samples = collect.load_samples(dataset)
    training, _ = train.build_sample_sets(pool, small_pool_path, samples,
                                          dataset, 2, 0.2)
    prior = cm.PhysicsPrior(batch_size=2048)
    truth = torch.tensor([2e-8, 0.0, 5e-8, 1e-7, 3e-5, 1e-8, 1e-6, 4e-3,
                          2e-6], dtype=torch.float64)
    assert len(truth) == cm.NUM_PRIOR_TERMS
    training.costs = (train.prior_terms(training, prior) @ truth +
                      0.01).float()
    assert train.fit_prior(prior, training) < 0.02
    # The fitted prior prices the samples as the truth does.
    fitted = train.prior_terms(training, prior) @ prior.coef.double() + \
        float(prior.intercept)
    relative = (fitted - training.costs.double()).abs() / \
        training.costs.double()
    assert float(relative.mean()) < 0.02
    assert bool((prior.coef >= 0).all())


def test_bundle_records_its_compute_model(bundle):
    meta = json.load(open(os.path.join(bundle, "meta.json")))
    model = meta["compute_model"]
    assert model["ensemble"] == cm.DEFAULT_ENSEMBLE
    assert model["correction_bound"] == cm.DEFAULT_CORRECTION_BOUND
    assert sorted(model["prior_ms_per_unit"]) == sorted(cm.PRIOR_TERMS)
    assert meta["encoding_dim"] == cm.NUM_PRIOR_TERMS + 1 + \
        cm.DEFAULT_ENSEMBLE * cm.ENCODING_DIM
    assert 0.0 < meta["training"]["prior_train_mape"] < 1.0
    assert 0.0 < meta["training"]["prior_held_out_mape"] < 1.0
    compute = torch.jit.load(os.path.join(bundle, "compute.pt"))
    features = cm._plausible_features(torch.Generator().manual_seed(2), 4)
    with torch.no_grad():
        summed = compute.encode(features).sum(dim=0, keepdim=True)
        assert float(compute.spread(summed)) > 0.0


def test_bootstrap_weights_are_seeded_and_differ_per_member():
    a = train.bootstrap_weights(500, 4, 3)
    assert torch.equal(a, train.bootstrap_weights(500, 4, 3))
    assert not torch.equal(a, train.bootstrap_weights(500, 4, 4))
    assert not torch.equal(a[:, 0], a[:, 1])
    assert float(a.mean()) == pytest.approx(1.0, abs=0.1)


def test_report_times_held_out_sets_again(bundle, small_pool_path, dataset,
                                          fake_tool, capsys):
    assert report.main(["--bundle", bundle, "--pool", small_pool_path,
                        "--data", dataset, "--remeasure", "20", "--tool",
                        fake_tool]) == 0
    # The fake tool times a set the same way twice: no noise.
    assert "timed again: 20 held-out sets; the second timing is 0.00% off " \
        "the first (MAPE)" in capsys.readouterr().out
    assert report.main(["--bundle", bundle, "--pool", small_pool_path,
                        "--data", dataset, "--remeasure", "5", "--tool",
                        "/nonexistent/tool"]) == 1
    assert "timing tool '/nonexistent/tool' is not an executable file" in \
        capsys.readouterr().err
