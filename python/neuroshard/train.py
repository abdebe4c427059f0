#===- train.py - Trains the compute cost model on measured samples -------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""Trains cost_model.ComputeCostModel on a dataset measured by
neuroshard.collect and exports a bundle (docs/neural-cost-model.md).

A sample's input is the table_features() of every pool table in its set; its
target is the measured cost_ms. Samples are split into training and held-out
validation by a seeded hash of their id (held_out()), so the split does not
depend on file order and neuroshard.report can rebuild it from meta.json.
Normalisation is fitted on the training samples' features; Adam minimises
the mean squared *relative* error (the costs span orders of magnitude and the
model is judged by MAPE); the epoch with the lowest held-out MAPE is kept.

Communication samples need several devices; this trainer has none, so its
bundles carry no comm models and meta.json says "comm": "analytical".
"""

import argparse
import copy
import os
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from neuroshard import collect
from neuroshard import cost_model as cm
from neuroshard import metrics
from neuroshard import table_pool as tp

DEFAULT_VALIDATION_FRACTION = 0.2
# Keys the split hash apart from the other uses of the seed.
_SPLIT_KEY = 0x5B117


class TrainError(Exception):
    """Input that cannot be trained on; the message names the file."""


def held_out(sample_id: int, seed: int, fraction: float) -> bool:
    """Whether a sample is in the held-out validation split."""
    key = tp.mix_seed(tp.mix_seed(seed, _SPLIT_KEY), sample_id)
    return tp.SplitMix64(key).uniform() < fraction


class SampleSet:
    """Samples as flat index arrays over the pool's feature matrix: sample i
    uses rows table_rows[starts[i] : starts[i] + counts[i]] of `features`."""

    def __init__(self, features: torch.Tensor, samples: Sequence[Dict],
                 index: Dict[int, int]):
        self.features = features
        self.ids = [s["id"] for s in samples]
        self.costs = torch.tensor([float(s["cost_ms"]) for s in samples],
                                  dtype=torch.float32)
        self.counts = np.array([len(s["tables"]) for s in samples],
                               dtype=np.int64)
        self.starts = np.cumsum(self.counts) - self.counts
        self.table_rows = np.array(
            [index[t] for s in samples for t in s["tables"]], dtype=np.int64)

    def __len__(self) -> int:
        return len(self.ids)

    def gather(self, which: np.ndarray) -> Tuple[torch.Tensor, torch.Tensor]:
        """(pool rows, owner in 0..len(which)-1) of the tables of samples
        `which`, for an index_add over their encodings."""
        counts = self.counts[which]
        owner = np.repeat(np.arange(len(which)), counts)
        within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) -
                                                     counts, counts)
        rows = self.table_rows[np.repeat(self.starts[which], counts) + within]
        return torch.from_numpy(rows), torch.from_numpy(owner)

    def training_features(self) -> torch.Tensor:
        return self.features[torch.from_numpy(self.table_rows)]


def build_sample_sets(pool: Dict, pool_path: str, samples: Sequence[Dict],
                      data_path: str, seed: int,
                      fraction: float) -> Tuple[SampleSet, SampleSet]:
    """(training, held-out) sample sets, after checking that the samples
    belong to this pool and use only its train split."""
    fingerprint = tp.pool_fingerprint(pool)
    by_id = {t["id"]: t for t in pool["tables"]}
    for sample in samples:
        if sample["pool"] != fingerprint:
            raise TrainError(
                "dataset '%s': sample %d was measured on pool %s, but '%s' "
                "is pool %s" % (data_path, sample["id"], sample["pool"],
                                pool_path, fingerprint))
        for table_id in sample["tables"]:
            table = by_id.get(table_id)
            if table is None:
                raise TrainError("dataset '%s': sample %d uses table %d, "
                                 "which pool '%s' does not have" %
                                 (data_path, sample["id"], table_id,
                                  pool_path))
            if table["split"] != "train":
                raise TrainError("dataset '%s': sample %d uses table %d "
                                 "('%s') of the pool's test split" %
                                 (data_path, sample["id"], table_id,
                                  table["name"]))
    tables = pool["tables"]
    features = torch.tensor(
        [cm.table_features(t["rows"], t["dim"], t["pooling_factor"],
                           t["access_hist"]) for t in tables],
        dtype=torch.float32)
    index = {t["id"]: row for row, t in enumerate(tables)}
    train = [s for s in samples if not held_out(s["id"], seed, fraction)]
    valid = [s for s in samples if held_out(s["id"], seed, fraction)]
    if not train or len(valid) < 2:
        raise TrainError(
            "dataset '%s': %d samples split into %d for training and %d "
            "held out (fraction %g); training needs at least one and the "
            "held-out split two (for Kendall's tau): collect more samples" %
            (data_path, len(samples), len(train), len(valid), fraction))
    return SampleSet(features, train, index), SampleSet(features, valid,
                                                        index)


def predict(model, samples: SampleSet, chunk: int = 4096) -> torch.Tensor:
    """Predicted ms of every sample through the model's plain forward (the
    exported path), `chunk` samples per call."""
    results = []
    with torch.no_grad():
        for begin in range(0, len(samples), chunk):
            which = np.arange(begin, min(len(samples), begin + chunk))
            rows, owner = samples.gather(which)
            results.append(model(samples.features[rows], owner, len(which)))
    return torch.cat(results)


def evaluate(model, samples: SampleSet) -> Dict[str, float]:
    predicted = predict(model, samples).numpy()
    measured = samples.costs.numpy()
    result = {"mape": metrics.mape(predicted, measured)}
    if len(samples) >= 2:
        result["kendall_tau"] = metrics.kendall_tau(predicted, measured)
    return result


def train_compute_model(train: SampleSet, valid: SampleSet, *, epochs: int,
                        seed: int, lr: float = 3e-3, batch: int = 64,
                        log=None) -> Tuple[cm.ComputeCostModel, Dict]:
    """Trains a ComputeCostModel; returns it at its best held-out epoch and
    a summary of the run."""
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    model = cm.ComputeCostModel()
    model.normalize.fit(train.training_features())
    model.output_scale.fill_(float(train.costs.median()))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer,
                                                           T_max=epochs)
    best = {"epoch": 0, "mape": evaluate(model.eval(), valid)["mape"]}
    best_state = copy.deepcopy(model.state_dict())
    history = [best["mape"]]
    every = max(1, epochs // 20)
    start = time.monotonic()
    for epoch in range(1, epochs + 1):
        model.train()
        order = torch.randperm(len(train), generator=generator).numpy()
        total_loss = 0.0
        for begin in range(0, len(order), batch):
            which = order[begin:begin + batch]
            rows, owner = train.gather(which)
            # Encode the pool's tables once per step: a set's tables repeat
            # across samples, and the encoder is the costly part.
            encodings = model.encode(train.features)
            summed = torch.zeros(len(which), encodings.shape[1])
            summed = summed.index_add(0, owner, encodings[rows])
            target = train.costs[torch.from_numpy(which)]
            loss = (((model.head(summed) - target) / target)**2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total_loss += float(loss) * len(which)
        scheduler.step()
        valid_mape = evaluate(model.eval(), valid)["mape"]
        history.append(valid_mape)
        improved = valid_mape < best["mape"]
        if improved:
            best = {"epoch": epoch, "mape": valid_mape}
            best_state = copy.deepcopy(model.state_dict())
        if log is not None and (epoch % every == 0 or epoch == epochs):
            print("train: epoch %d/%d  loss %.4g  held-out MAPE %.2f%%%s  "
                  "(%.0f s)" % (epoch, epochs, total_loss / len(train),
                                100.0 * valid_mape,
                                "  best" if improved else "",
                                time.monotonic() - start), file=log)
    model.load_state_dict(best_state)
    model.eval()
    return model, {"best_epoch": best["epoch"], "history": history}


def train_bundle(pool_path: str, data_path: str, out_dir: str, *, epochs: int,
                 seed: int, lr: float = 3e-3, batch: int = 64,
                 validation_fraction: float = DEFAULT_VALIDATION_FRACTION,
                 log=None) -> Dict:
    """Trains on a pool and a dataset and writes the bundle; returns its
    meta.json."""
    pool = tp.load_pool(pool_path)
    samples = collect.load_samples(data_path)
    if not samples:
        raise TrainError("dataset '%s' holds no samples" % data_path)
    settings = collect.check_one_setting(samples, data_path)
    train, valid = build_sample_sets(pool, pool_path, samples, data_path,
                                     seed, validation_fraction)
    if log is not None:
        print("train: %d samples (%d training, %d held out) measured on %s, "
              "batch %d" % (len(samples), len(train), len(valid),
                            settings["hardware"], settings["batch_size"]),
              file=log)
    model, run = train_compute_model(train, valid, epochs=epochs, seed=seed,
                                     lr=lr, batch=batch, log=log)
    held = evaluate(model, valid)
    fit = evaluate(model, train)
    meta = cm.bundle_meta(
        trained=True, hardware=settings["hardware"],
        batch_size=settings["batch_size"], dtype="f32", devices=None,
        dataset_size={"compute": len(samples), "comm": 0},
        held_out={"compute_mape": held["mape"],
                  "compute_kendall_tau": held["kendall_tau"],
                  "compute_samples": len(valid)},
        seed=seed)
    meta["measured_device"] = settings["device"]
    meta["training"] = {
        "pool": settings["pool"],
        "train_samples": len(train),
        "train_mape": fit["mape"],
        "train_kendall_tau": fit.get("kendall_tau"),
        "epochs": epochs,
        "best_epoch": run["best_epoch"],
        "learning_rate": lr,
        "batch": batch,
        "loss": "mean squared relative error",
        "validation_fraction": validation_fraction,
        "validation_split": "held_out(id, seed, fraction) in "
                            "python/neuroshard/train.py",
    }
    cm.export_bundle(out_dir, model, meta)
    return meta


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m neuroshard.train",
        description="Trains the compute cost model on a measured dataset "
        "and exports a cost-model bundle (compute.pt + meta.json; comm "
        "stays analytical).")
    parser.add_argument("--pool", required=True, help="pool JSON file")
    parser.add_argument("--data", required=True, help="dataset JSONL file "
                        "(python3 -m neuroshard.collect)")
    parser.add_argument("--out", required=True, help="bundle directory")
    parser.add_argument("--epochs", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lr", type=float, default=3e-3,
                        help="Adam learning rate (cosine-annealed)")
    parser.add_argument("--batch", type=int, default=64,
                        help="samples per optimiser step")
    parser.add_argument("--validation-fraction", type=float,
                        default=DEFAULT_VALIDATION_FRACTION)
    args = parser.parse_args(argv)
    if args.epochs < 1 or args.batch < 1 or args.lr <= 0:
        parser.error("--epochs, --batch and --lr must be positive")
    if not 0.0 < args.validation_fraction < 1.0:
        parser.error("--validation-fraction must be in (0, 1)")
    try:
        meta = train_bundle(args.pool, args.data, args.out,
                            epochs=args.epochs, seed=args.seed, lr=args.lr,
                            batch=args.batch,
                            validation_fraction=args.validation_fraction,
                            log=sys.stderr)
    except (TrainError, collect.CollectError, tp.PoolError) as e:
        print("train: error: %s" % e, file=sys.stderr)
        return 1
    held = meta["held_out"]
    print("wrote %s: best epoch %d, held-out MAPE %.2f%%, Kendall's tau "
          "%.3f on %d samples" % (os.path.join(args.out, ""),
                                  meta["training"]["best_epoch"],
                                  100.0 * held["compute_mape"],
                                  held["compute_kendall_tau"],
                                  held["compute_samples"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
