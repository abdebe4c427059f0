#===- test_train_comm.py - Tests of training the comm cost models ---------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#

import json
import os

import numpy as np
import pytest
import torch

from neuroshard import collect
from neuroshard import metrics
from neuroshard import report
from neuroshard import train

BATCH_SIZE = 2048
EPOCHS = 300
# Held-out MAPE the trained comm models must reach. The data's noise is
# +-3%, so a model that learned the cost function gets to a few percent;
# one that did not (the untrained start, the best constant) does not.
COMM_MAPE_BOUND = 0.15


def comm_samples(devices, count, seed=0, noise=0.03):
    """Synthetic measured all-to-alls with the analytical model's shape
    (docs/cost-model.md): transfer(d) = a + b * max(sent(d), received(d))
    bytes; bw = transfer; fw = transfer + the wait for the latest device;
    times +-`noise` seeded uniform noise."""
    rng = np.random.default_rng([seed, devices])
    samples = []
    for k in range(count):
        # Log-uniform widths of 4 ... 2048 columns.
        dims = np.round(2.0 ** rng.uniform(2.0, 11.0, devices))
        # One sample in five has every device arrive at once.
        arrivals = rng.uniform(0.0, 2.0, devices) * (rng.uniform() < 0.8)
        stragglers = arrivals - arrivals.min()
        sent = BATCH_SIZE * 4 * dims * (devices - 1) / devices
        received = BATCH_SIZE * 4 * (dims.sum() - dims) / devices
        transfer = 0.05 + 1e-7 * np.maximum(sent, received)
        fw = transfer + stragglers.max() - stragglers
        fw *= 1.0 + noise * rng.uniform(-1.0, 1.0, devices)
        bw = transfer * (1.0 + noise * rng.uniform(-1.0, 1.0, devices))
        samples.append({
            "id": k, "devices": devices, "batch_size": BATCH_SIZE,
            "dimsums": [int(d) for d in dims],
            "stragglers_ms": stragglers.tolist(), "fw_ms": fw.tolist(),
            "bw_ms": bw.tolist(), "iters": 10, "warmup": 3, "seed": 0,
            "hardware": "Test CPU 9000", "transport": "mpi"})
    return samples


def samples_for(devices):
    """Comm samples per dataset: the forward model of N devices has 2N
    inputs, and learning when a device is the latest one (it then waits for
    nobody) takes more samples the more devices there are."""
    return 200 * devices


def write_lines(path, samples):
    path.write_text("".join(json.dumps(s) + "\n" for s in samples))
    return str(path)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, small_pool_path, shared_fake_tool):
    """A small compute dataset (the trainer needs one; its model is not what
    these tests look at), measured at BATCH_SIZE by the fake tool."""
    data = str(tmp_path_factory.mktemp("data") / "samples.jsonl")
    assert collect.main(["--pool", small_pool_path, "--out", data,
                         "--tool", shared_fake_tool, "--samples", "60",
                         "--batch-size", str(BATCH_SIZE), "--memory-cap-gb",
                         "2", "--sets-per-run", "60"]) == 0
    return data


@pytest.fixture(scope="module", params=[2, 4], ids=["2dev", "4dev"])
def comm_bundle(request, tmp_path_factory, small_pool_path, dataset):
    """(devices, comm dataset, bundle trained on it with train.main)."""
    devices = request.param
    directory = tmp_path_factory.mktemp("comm%d" % devices)
    comm_data = write_lines(directory / "comm.jsonl",
                            comm_samples(devices, samples_for(devices)))
    out = str(directory / "cpu-comm")
    assert train.main(["--pool", small_pool_path, "--data", dataset,
                       "--comm-data", comm_data, "--out", out, "--epochs",
                       str(EPOCHS), "--seed", "1", "--allow-other-host"]) == 0
    return devices, comm_data, out


def read_meta(bundle):
    with open(os.path.join(bundle, "meta.json")) as f:
        return json.load(f)


def test_comm_models_learn_the_cost_function(comm_bundle):
    devices, comm_data, bundle = comm_bundle
    meta = read_meta(bundle)
    held = meta["held_out"]
    assert held["comm_fw_mape"] < COMM_MAPE_BOUND
    assert held["comm_bw_mape"] < COMM_MAPE_BOUND
    # The bound means something: predicting the training median for every
    # device misses it by far, and so does the untrained model (epoch 0).
    samples = train.load_comm_samples(comm_data)
    training, valid = train.build_comm_sets(samples, comm_data, 1, 0.2)
    assert held["comm_samples"] == len(valid)
    for direction in ("fw", "bw"):
        measured = getattr(valid, direction).numpy()
        median = float(getattr(training, direction).median())
        constant = metrics.mape(np.full_like(measured, median), measured)
        assert constant > 2 * COMM_MAPE_BOUND, (direction, constant)
        assert held["comm_%s_mape" % direction] < 0.5 * constant
        _, run = train.train_comm_model(direction, training, valid,
                                        epochs=1, seed=1)
        assert run["history"][0] > COMM_MAPE_BOUND
    assert meta["training"]["comm_fw_best_epoch"] > EPOCHS // 4
    assert meta["training"]["comm_bw_best_epoch"] > EPOCHS // 4


def test_exported_comm_bundle(comm_bundle):
    devices, comm_data, bundle = comm_bundle
    meta = read_meta(bundle)
    assert sorted(os.listdir(bundle)) == ["comm_bw.pt", "comm_fw.pt",
                                          "compute.pt", "meta.json"]
    assert meta["devices"] == devices and meta["comm"] == "neural"
    assert meta["dataset_size"] == {"compute": 60,
                                    "comm": samples_for(devices)}
    assert meta["batch_size"] == BATCH_SIZE
    training = meta["training"]
    held = meta["held_out"]
    assert training["comm_train_samples"] + held["comm_samples"] == \
        samples_for(devices)
    assert (training["comm_hardware"], training["comm_transport"]) == (
        "Test CPU 9000", "mpi")
    assert 0 < training["comm_fw_train_mape"] < COMM_MAPE_BOUND
    assert 0 < training["comm_bw_train_mape"] < COMM_MAPE_BOUND
    fw = torch.jit.load(os.path.join(bundle, "comm_fw.pt"))
    bw = torch.jit.load(os.path.join(bundle, "comm_bw.pt"))
    dimsums = torch.tensor([[64.0] * devices, [512.0] * devices,
                            [16.0 * (d + 1) for d in range(devices)]])
    stragglers = torch.zeros(3, devices)
    with torch.no_grad():
        assert fw(dimsums, stragglers).shape == (3, devices)
        assert bw(dimsums).shape == (3, devices)
    # The TorchScript files reproduce the recorded held-out errors.
    samples = train.load_comm_samples(comm_data)
    _, valid = train.build_comm_sets(samples, comm_data, meta["seed"],
                                     training["validation_fraction"])
    assert train.comm_mape(fw, "fw", valid) == pytest.approx(
        held["comm_fw_mape"], rel=1e-5)
    assert train.comm_mape(bw, "bw", valid) == pytest.approx(
        held["comm_bw_mape"], rel=1e-5)


def test_comm_training_is_seeded(tmp_path, small_pool_path, dataset):
    comm_data = write_lines(tmp_path / "comm.jsonl", comm_samples(2, 100))
    outs = [str(tmp_path / name) for name in ("a", "b", "c")]
    for out, seed in zip(outs, (4, 4, 5)):
        train.train_bundle(small_pool_path, dataset, out, epochs=3,
                           seed=seed, comm_data_path=comm_data,
                           allow_other_host=True)
    dimsums = torch.tensor([[100.0, 700.0], [3.0, 40.0]])
    stragglers = torch.tensor([[0.0, 0.5], [1.0, 0.0]])

    def outputs(out):
        fw = torch.jit.load(os.path.join(out, "comm_fw.pt"))
        bw = torch.jit.load(os.path.join(out, "comm_bw.pt"))
        with torch.no_grad():
            return fw(dimsums, stragglers), bw(dimsums)

    a, b, c = (outputs(out) for out in outs)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not any(torch.equal(x, y) for x, y in zip(a, c))
    assert read_meta(outs[0])["held_out"] == read_meta(outs[1])["held_out"]


def test_report_prints_comm_mape(comm_bundle, small_pool_path, dataset,
                                 capsys):
    devices, comm_data, bundle = comm_bundle
    assert report.main(["--bundle", bundle, "--pool", small_pool_path,
                        "--data", dataset, "--comm-data", comm_data]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "; comm: neural)" in lines[0]
    assert lines[4].split() == ["comm", "samples", "fw", "MAPE", "bw",
                                "MAPE"]
    meta = read_meta(bundle)
    held = lines[6].split()
    assert held[0] == "held-out"
    assert int(held[1]) == meta["held_out"]["comm_samples"]
    assert float(held[2].rstrip("%")) == pytest.approx(
        100 * meta["held_out"]["comm_fw_mape"], abs=0.006)
    assert float(held[3].rstrip("%")) == pytest.approx(
        100 * meta["held_out"]["comm_bw_mape"], abs=0.006)
    fit = lines[5].split()
    assert fit[0] == "training"
    assert float(fit[2].rstrip("%")) == pytest.approx(
        100 * meta["training"]["comm_fw_train_mape"], abs=0.006)


def test_report_refuses_comm_data_without_comm_models(
        tmp_path, small_pool_path, dataset, capsys):
    out = str(tmp_path / "no-comm")
    train.train_bundle(small_pool_path, dataset, out, epochs=1, seed=0,
                       allow_other_host=True)
    comm_data = write_lines(tmp_path / "comm.jsonl", comm_samples(2, 20))
    assert report.main(["--bundle", out, "--pool", small_pool_path,
                        "--data", dataset, "--comm-data", comm_data]) == 1
    assert "has no comm models (comm: analytical)" in \
        capsys.readouterr().err


def test_comm_data_errors_name_the_problem(tmp_path, small_pool_path,
                                          dataset, capsys):
    good = comm_samples(4, 20)

    def fails(samples, message, name="bad.jsonl"):
        if isinstance(samples, str):
            data = samples
        else:
            data = write_lines(tmp_path / name, samples)
        assert train.main(["--pool", small_pool_path, "--data", dataset,
                           "--comm-data", data, "--out",
                           str(tmp_path / "out"), "--epochs", "1"]) == 1
        err = capsys.readouterr().err
        assert err.startswith("train: error: ") and "Traceback" not in err
        assert message in err and data in err, err

    def where(line, sample):
        return "comm dataset '%s' line %d (sample %d)" % (
            str(tmp_path / "bad.jsonl"), line, sample)

    fails(good[:3] + comm_samples(2, 20)[3:], "%s has devices 2, but line 1 (sample 0) has 4: a comm "
          "dataset must not mix devices" % where(4, 3))
    fails([dict(s, batch_size=1024) for s in good],
          "%s has batch_size 1024, but the compute samples were measured "
          "at batch size 2048" % where(1, 0))
    bad = dict(good[5], fw_ms=good[5]["fw_ms"][:3])
    fails(good[:5] + [bad] + good[6:],
          "%s: \"fw_ms\" has 3 values but devices is 4" % where(6, 5))
    bad = dict(good[2], bw_ms=[0.5, 0.0, 0.7, 0.6])
    fails(good[:2] + [bad] + good[3:],
          "%s: bw_ms[1] is 0.0; expected a finite positive number" %
          where(3, 2))
    bad = dict(good[2], stragglers_ms=[0.0, -0.25, 0.1, 0.2])
    fails(good[:2] + [bad] + good[3:],
          "%s: stragglers_ms[1] is -0.25; expected a finite non-negative "
          "number" % where(3, 2))
    # json.dumps writes infinity as Infinity, which is not JSON.
    bad = dict(good[1], fw_ms=[1.0, float("inf"), 1.0, 1.0])
    fails(good[:1] + [bad] + good[2:],
          "line 2 is not valid JSON: Infinity is not a JSON number")
    bad = {k: v for k, v in good[7].items() if k != "stragglers_ms"}
    fails(good[:7] + [bad] + good[8:],
          "comm dataset '%s' line 8 has no \"stragglers_ms\"" %
          str(tmp_path / "bad.jsonl"))
    bad = dict(good[7], dimsums="64,64,64,64")
    fails(good[:7] + [bad] + good[8:], "\"dimsums\" has the wrong type")
    fails([dict(s, devices=1, dimsums=[64], stragglers_ms=[0.0],
                fw_ms=[0.1], bw_ms=[0.1]) for s in good],
          "%s: devices is 1; an all-to-all needs at least 2" % where(1, 0))
    fails(good + [dict(good[3])], "%s: sample id 3 appears twice (first on "
          "line 4)" % where(21, 3))
    fails([dict(s, hardware="Other CPU") if s["id"] == 9 else s
           for s in good], "a comm dataset must not mix hardware")
    fails(good[:2], "measure more samples")
    fails([], "holds no samples", name="empty.jsonl")
    fails(str(tmp_path / "missing.jsonl"), "cannot read comm dataset")
    (tmp_path / "garbage.jsonl").write_text("{\"id\": 0,\n")
    fails(str(tmp_path / "garbage.jsonl"), "line 1 is not valid JSON")
    assert not os.path.exists(tmp_path / "out")


def test_neuroshard_plan_uses_the_comm_models(comm_bundle, plan_with_bundle):
    devices, _, bundle = comm_bundle
    result = plan_with_bundle(bundle, devices)
    assert result.returncode == 0, result.stderr
    assert "comm: neural, %d devices" % devices in result.stdout
