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

With --comm-data, the trainer also fits the two communication models of N
devices (ForwardCommModel, BackwardCommModel) on a dataset of measured
all-to-alls (load_comm_samples() describes its lines), split, normalised and
trained the same way (fit_model() is the loop both share); the bundle then
carries comm_fw.pt and comm_bw.pt and meta.json says "comm": "neural" and
"devices": N. Without it the bundle carries no comm models and meta.json says
"comm": "analytical".

Every bundle also records the machine the samples were measured on ("host",
neuroshard._core.host_description(), taken at training time: training runs
on the machine that measured, and refuses a dataset measured on another CPU
unless allowed; of a dataset measured on a GPU, the GPU's name and L2 size,
which its samples carry) and the ranges of the tables it was trained on
("trained_ranges").
"""

import argparse
import copy
import math
import os
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from neuroshard import _core
from neuroshard import collect
from neuroshard import jsonio
from neuroshard import cost_model as cm
from neuroshard import metrics
from neuroshard import table_pool as tp

DEFAULT_VALIDATION_FRACTION = 0.2
# Fields of a comm dataset line and their types (load_comm_samples).
COMM_FIELDS = {"id": int, "devices": int, "batch_size": int,
               "dimsums": list, "stragglers_ms": list, "fw_ms": list,
               "bw_ms": list, "iters": int, "warmup": int, "seed": int,
               "hardware": str, "transport": str}
# The per-device lists of a comm sample, each `devices` numbers long, and
# the values each must hold.
COMM_LISTS = {"dimsums": "non-negative", "stragglers_ms": "non-negative",
              "fw_ms": "positive", "bw_ms": "positive"}
# What every sample of one comm dataset shares.
COMM_SETTINGS = ("devices", "batch_size", "hardware", "transport")
# Keys the split hash apart from the other uses of the seed.
_SPLIT_KEY = 0x5B117
# The least a GPU moves from DRAM for one row read: a 32-byte sector.
GPU_SECTOR_BYTES = 32


class TrainError(Exception):
    """Input that cannot be trained on; the message names the file."""


def held_out(sample_id: int, seed: int, fraction: float) -> bool:
    """Whether a sample is in the held-out validation split."""
    key = _core.mix_seed(_core.mix_seed(seed, _SPLIT_KEY), sample_id)
    return _core.Random(key).uniform() < fraction


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
            [index[collect.entry_key(t)] for s in samples
             for t in s["tables"]], dtype=np.int64)

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


def summed_encodings(model: cm.ComputeCostModel, samples: SampleSet,
                     which: np.ndarray) -> torch.Tensor:
    """[len(which), encoding width]: the encodings of the tables of samples
    `which` summed per sample. Each table they hold is encoded once, and
    only those: a set's tables repeat across samples, the encoder is the
    costly part of a training step, and it encodes every table on its own.
    (Encoding all the pool's tables every step made an epoch of 4,285
    samples over 10,261 tables take 20.5 s instead of 1.3 s.)"""
    rows, owner = samples.gather(which)
    used, at = torch.unique(rows, return_inverse=True)
    encodings = model.encode(samples.features[used])
    summed = torch.zeros(len(which), encodings.shape[1])
    return summed.index_add(0, owner, encodings[at])


def entry_features(pool: Dict, samples: Sequence[Dict],
                   key=lambda k: k) -> Tuple[List[List[float]], Dict]:
    """The feature rows of every pool table, then of every row piece the
    samples use (collect.entry_stats), and the row of each entry by
    key(collect.entry_key(entry))."""
    by_id = {t["id"]: t for t in pool["tables"]}
    rows, index = [], {}

    def add(entry) -> None:
        k = key(collect.entry_key(entry))
        if k not in index:
            index[k] = len(rows)
            t = collect.entry_stats(entry, by_id[collect.entry_table(entry)])
            rows.append(cm.table_features(t["rows"], t["dim"],
                                          t["pooling_factor"],
                                          t["access_hist"]))

    for t in pool["tables"]:
        add(t["id"])
    for s in samples:
        for entry in s["tables"]:
            add(entry)
    return rows, index


def has_row_pieces(samples: Sequence[Dict]) -> bool:
    """Whether any sample holds a row piece (meta.json's "row_pieces")."""
    return any(collect.is_row_piece(e) for s in samples for e in s["tables"])


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
        for entry in sample["tables"]:
            table_id = collect.entry_table(entry)
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
            why = collect.row_piece_problem(entry, table)
            if why:
                raise TrainError("dataset '%s': sample %d: %s" %
                                 (data_path, sample["id"], why))
    rows, index = entry_features(pool, samples)
    features = torch.tensor(rows, dtype=torch.float32)
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
    result["log_error_mean"], result["log_error_sd"] = metrics.log_error(
        predicted, measured)
    if len(samples) >= 2:
        result["kendall_tau"] = metrics.kendall_tau(predicted, measured)
    return result


def fit_model(model: torch.nn.Module, num_train: int, batch_loss,
              held_out_mape, *, epochs: int, seed: int, lr: float,
              batch: int, log=None, label: str = "",
              epoch_order=None, patience: Optional[int] = None,
              deadline: Optional[float] = None) -> Dict:
    """The training loop all models share: Adam at `lr`, cosine-annealed
    over `epochs`, on a seeded shuffle of the `num_train` training samples,
    `batch` per step; batch_loss(which) is the loss of training samples
    `which` (an index array) and held_out_mape() the held-out MAPE of the
    model in eval mode. The model is left at its best held-out epoch (epoch
    0 is the untrained start) in eval mode. Returns {"best_epoch",
    "history", "epoch_s"}, history[e] being the held-out MAPE after epoch e
    and epoch_s the mean wall time of an epoch run (its held-out
    evaluation included).

    epoch_order(generator), when given, returns the sample indices of one
    epoch in their order instead of the shuffle of all of them. Training
    stops early after `patience` epochs without a better held-out MAPE, and
    after the epoch that ends past `deadline` (a time.monotonic() value)."""
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer,
                                                           T_max=epochs)
    model.eval()
    best = {"epoch": 0, "mape": held_out_mape()}
    best_state = copy.deepcopy(model.state_dict())
    history = [best["mape"]]
    every = max(1, epochs // 20)
    start = time.monotonic()
    for epoch in range(1, epochs + 1):
        model.train()
        order = torch.randperm(num_train, generator=generator).numpy() \
            if epoch_order is None else epoch_order(generator)
        total_loss = 0.0
        for begin in range(0, len(order), batch):
            which = order[begin:begin + batch]
            loss = batch_loss(which)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total_loss += float(loss) * len(which)
        scheduler.step()
        model.eval()
        valid_mape = held_out_mape()
        history.append(valid_mape)
        improved = valid_mape < best["mape"]
        if improved:
            best = {"epoch": epoch, "mape": valid_mape}
            best_state = copy.deepcopy(model.state_dict())
        if log is not None and (epoch % every == 0 or epoch == epochs):
            print("train: %sepoch %d/%d  loss %.4g  held-out MAPE %.2f%%%s  "
                  "(%.0f s)" % (label + " " if label else "", epoch, epochs,
                                total_loss / max(1, len(order)),
                                100.0 * valid_mape,
                                "  best" if improved else "",
                                time.monotonic() - start), file=log)
        stalled = patience is not None and epoch - best["epoch"] >= patience
        late = deadline is not None and time.monotonic() >= deadline
        if epoch < epochs and (stalled or late):
            if log is not None:
                print("train: %sstopped after epoch %d/%d: %s" %
                      (label + " " if label else "", epoch, epochs,
                       "no better held-out MAPE in %d epochs" % patience
                       if stalled else "its time is spent"), file=log)
            break
    epoch_s = (time.monotonic() - start) / max(1, len(history) - 1)
    model.load_state_dict(best_state)
    model.eval()
    return {"best_epoch": best["epoch"], "history": history,
            "epoch_s": epoch_s}


def relative_error_loss(predicted: torch.Tensor,
                        target: torch.Tensor) -> torch.Tensor:
    """The training loss: mean squared relative error (costs span orders of
    magnitude, and the models are judged by MAPE)."""
    return (((predicted - target) / target)**2).mean()


def prior_terms(samples: SampleSet, prior: cm.PhysicsPrior) -> torch.Tensor:
    """[S, NUM_PRIOR_TERMS] the prior's unpriced terms summed over each
    sample's tables, in double precision."""
    terms = prior.terms(samples.features).double()
    rows, owner = samples.gather(np.arange(len(samples)))
    summed = torch.zeros(len(samples), terms.shape[1], dtype=torch.float64)
    return summed.index_add(0, owner, terms[rows])


def nonnegative_least_squares(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """argmin ||a x - b|| over x >= 0 (Lawson and Hanson's active-set
    method): exact, where gradient descent stalls on terms whose scales
    differ by orders of magnitude."""
    n = a.shape[1]
    # Unit columns, so that one tolerance fits every term.
    norms = np.linalg.norm(a, axis=0)
    norms[norms == 0] = 1.0
    a = a / norms
    x = np.zeros(n)
    active = np.zeros(n, dtype=bool)
    tolerance = 1e-12 * max(1.0, float(np.abs(a.T @ b).max()))
    for _ in range(4 * n):
        gradient = a.T @ (b - a @ x)
        free = np.where(active, -np.inf, gradient)
        if active.all() or free.max() <= tolerance:
            break
        active[int(np.argmax(free))] = True
        while True:
            z = np.zeros(n)
            z[active] = np.linalg.lstsq(a[:, active], b, rcond=None)[0]
            if (z[active] > 0).all():
                x = z
                break
            # Step towards z until a coefficient reaches 0; drop it. (x is
            # positive on the active set but for the one just added, which
            # is 0: a step of 0 drops it again.)
            shrinking = active & (z <= 0)
            gap = x[shrinking] - z[shrinking]
            step = float(np.min(np.where(
                gap > 0, x[shrinking] / np.where(gap > 0, gap, 1.0), 0.0)))
            x = x + step * (z - x)
            active &= x > 1e-15
            x[~active] = 0.0
    return x / norms


def fit_prior(prior: cm.PhysicsPrior, train: SampleSet) -> float:
    """Fits the prior's non-negative coefficients and per-set constant to
    the training samples by the loss the network is trained with (mean
    squared relative error: least squares on rows divided by their cost,
    solved exactly under x >= 0); returns the prior's training MAPE. A term
    that no training sample has (no table past the cache, say) cannot be
    fitted and keeps its nominal price."""
    terms = prior_terms(train, prior).numpy()
    target = train.costs.double().numpy()
    coef, intercept = cm.nominal_coefficients()
    fitted = np.array(coef + [intercept])
    inputs = np.concatenate([terms, np.ones((len(target), 1))], axis=1)
    seen = np.abs(inputs).sum(axis=0) > 0
    weighted = inputs[:, seen] / target[:, None]
    fitted[seen] = nonnegative_least_squares(weighted,
                                             np.ones(len(target)))
    prior.coef.copy_(torch.from_numpy(fitted[:-1]).float())
    prior.intercept.fill_(float(fitted[-1]))
    return metrics.mape(inputs @ fitted, target)


def prior_alone_mape(prior: cm.PhysicsPrior, samples: SampleSet) -> float:
    """The MAPE on `samples` of the fitted physics prior alone (the model
    without its network's correction)."""
    predicted = prior_terms(samples, prior) @ prior.coef.double() + \
        float(prior.intercept)
    return metrics.mape(predicted.numpy(), samples.costs.double().numpy())


def bootstrap_weights(count: int, members: int, seed: int) -> torch.Tensor:
    """[count, members] Poisson(1) weights: each member of the ensemble
    trains on its own bootstrap resample of the training samples, which is
    what makes the members' spread an estimate of the uncertainty."""
    generator = torch.Generator().manual_seed(seed ^ 0xB0075)
    return torch.poisson(torch.ones(count, members), generator=generator)


def train_compute_model(train: SampleSet, valid: SampleSet, *, epochs: int,
                        seed: int, lr: float = 3e-3, batch: int = 64,
                        members: int = cm.DEFAULT_ENSEMBLE,
                        correction_bound: float = cm.DEFAULT_CORRECTION_BOUND,
                        batch_size: int = 1024,
                        cache_bytes=cm.DEFAULT_CACHE_BYTES,
                        line_bytes: int = cm.CACHE_LINE_BYTES,
                        log=None) -> Tuple[cm.ComputeCostModel, Dict]:
    """Trains a ComputeCostModel: first its physics prior (fit_prior), then
    the ensemble's bounded corrections on bootstrap resamples; returns it at
    the epoch whose ensemble mean has the lowest held-out MAPE, and a
    summary of the run ("prior_train_mape" and "prior_held_out_mape" among
    it)."""
    torch.manual_seed(seed)
    model = cm.ComputeCostModel(batch_size=batch_size, members=members,
                                correction_bound=correction_bound,
                                cache_bytes=cache_bytes,
                                line_bytes=line_bytes)
    model.normalize.fit(train.training_features())
    model.prior.set_ranges(train.training_features())
    prior_mape = fit_prior(model.prior, train)
    if log is not None:
        print("train: physics prior fitted, training MAPE %.2f%%" %
              (100.0 * prior_mape), file=log)
    weights = bootstrap_weights(len(train), members, seed)

    def batch_loss(which: np.ndarray) -> torch.Tensor:
        summed = summed_encodings(model, train, which)
        index = torch.from_numpy(which)
        target = train.costs[index].unsqueeze(1)
        errors = ((model.member_costs(summed) - target) / target)**2
        w = weights[index]
        return (errors * w).sum() / w.sum().clamp(min=1.0)

    run = fit_model(model, len(train), batch_loss,
                    lambda: evaluate(model, valid)["mape"], epochs=epochs,
                    seed=seed, lr=lr, batch=batch, log=log)
    run["prior_train_mape"] = prior_mape
    run["prior_held_out_mape"] = prior_alone_mape(model.prior, valid)
    return model, run


def load_comm_samples(path: str,
                      batch_size: Optional[int] = None) -> List[Dict]:
    """The samples of a comm dataset, checked; errors name the file, the
    line and the sample. A line is one measured all-to-all of N devices:

      {"id": 17, "devices": 4, "batch_size": 1024,
       "dimsums": [128, 516, 64, 1024], "stragglers_ms": [0.0, 0.31, 1.2,
       0.05], "fw_ms": [1.9, 1.6, 0.7, 1.85], "bw_ms": [0.8, 0.6, 0.5, 0.9],
       "iters": 10, "warmup": 3, "seed": 0, "hardware": "AMD EPYC",
       "transport": "mpi"}

    dimsums[d] is the pooled columns on device d, stragglers_ms[d] how much
    later than the earliest device it reaches the forward all-to-all, fw_ms
    and bw_ms its forward (waiting included) and backward all-to-all times.
    Every sample must have the same N >= 2, hardware and transport, and,
    when batch_size is given, that batch size (the compute dataset's)."""
    samples, first_line = [], {}
    for number, where, sample in jsonio.json_lines(path, "comm dataset",
                                                   TrainError):
        check_comm_sample(sample, where)
        where += " (sample %d)" % sample["id"]
        if sample["id"] in first_line:
            raise TrainError("%s: sample id %d appears twice (first on "
                             "line %d)" % (where, sample["id"],
                                           first_line[sample["id"]]))
        first_line[sample["id"]] = number
        if samples:
            for field in COMM_SETTINGS:
                if sample[field] != samples[0][field]:
                    raise TrainError(
                        "%s has %s %r, but line %d (sample %d) has %r: "
                        "a comm dataset must not mix %s" %
                        (where, field, sample[field],
                         first_line[samples[0]["id"]], samples[0]["id"],
                         samples[0][field], field))
        elif batch_size is not None and sample["batch_size"] != \
                batch_size:
            raise TrainError(
                "%s has batch_size %d, but the compute samples were "
                "measured at batch size %d: both must be measured at "
                "the same global batch" % (where, sample["batch_size"],
                                           batch_size))
        samples.append(sample)
    if not samples:
        raise TrainError("comm dataset '%s' holds no samples" % path)
    return samples


def check_comm_sample(sample, where: str) -> None:
    collect.check_fields(sample, COMM_FIELDS, where, TrainError)
    where += " (sample %d)" % sample["id"]
    devices = sample["devices"]
    if devices < 2:
        raise TrainError("%s: devices is %d; an all-to-all needs at least 2"
                         % (where, devices))
    if sample["batch_size"] <= 0:
        raise TrainError("%s: batch_size must be positive, got %d" %
                         (where, sample["batch_size"]))
    for field, sign in COMM_LISTS.items():
        values = sample[field]
        if len(values) != devices:
            raise TrainError("%s: \"%s\" has %d values but devices is %d" %
                             (where, field, len(values), devices))
        for d, value in enumerate(values):
            if not isinstance(value, (int, float)) or isinstance(value, bool) \
                    or not math.isfinite(value) or value < 0 or \
                    (sign == "positive" and value == 0):
                raise TrainError("%s: %s[%d] is %r; expected a finite %s "
                                 "number" % (where, field, d, value, sign))


class CommSampleSet:
    """Comm samples as [S, N] float tensors: inputs dimsums and stragglers,
    targets fw and bw (ms)."""

    def __init__(self, samples: Sequence[Dict]):
        def matrix(field: str) -> torch.Tensor:
            return torch.tensor([s[field] for s in samples],
                                dtype=torch.float32)

        self.ids = [s["id"] for s in samples]
        self.dimsums = matrix("dimsums")
        self.stragglers = matrix("stragglers_ms")
        self.fw = matrix("fw_ms")
        self.bw = matrix("bw_ms")

    def __len__(self) -> int:
        return len(self.ids)

    def fw_inputs(self) -> torch.Tensor:
        """What ForwardCommModel's Standardize sees: [dimsums, stragglers]."""
        return torch.cat([self.dimsums, self.stragglers], dim=1)


def build_comm_sets(samples: Sequence[Dict], data_path: str, seed: int,
                    fraction: float) -> Tuple[CommSampleSet, CommSampleSet]:
    """(training, held-out) comm sample sets, split by held_out()."""
    train = [s for s in samples if not held_out(s["id"], seed, fraction)]
    valid = [s for s in samples if held_out(s["id"], seed, fraction)]
    if not train or not valid:
        raise TrainError(
            "comm dataset '%s': %d samples split into %d for training and "
            "%d held out (fraction %g); training needs at least one of "
            "each: measure more samples" %
            (data_path, len(samples), len(train), len(valid), fraction))
    return CommSampleSet(train), CommSampleSet(valid)


def predict_comm(model, direction: str, samples: CommSampleSet,
                 which=slice(None)) -> torch.Tensor:
    """[S, N] predicted ms of a ForwardCommModel (direction "fw") or a
    BackwardCommModel ("bw"), plain or TorchScript, on samples `which`."""
    if direction == "fw":
        return model(samples.dimsums[which], samples.stragglers[which])
    return model(samples.dimsums[which])


def comm_mape(model, direction: str, samples: CommSampleSet) -> float:
    """MAPE over all S x N per-device costs."""
    with torch.no_grad():
        predicted = predict_comm(model, direction, samples)
    measured = samples.fw if direction == "fw" else samples.bw
    return metrics.mape(predicted.numpy(), measured.numpy())


def train_comm_model(direction: str, train: CommSampleSet,
                     valid: CommSampleSet, *, epochs: int, seed: int,
                     lr: float = 3e-3, batch: int = 64,
                     log=None) -> Tuple[torch.nn.Module, Dict]:
    """Trains a ForwardCommModel (direction "fw") or BackwardCommModel
    ("bw") for the samples' N devices, as train_compute_model does the
    compute model; returns it at its best held-out epoch and a summary."""
    if direction not in ("fw", "bw"):
        raise ValueError("direction must be 'fw' or 'bw', got %r" %
                         (direction,))
    torch.manual_seed(seed)
    devices = train.dimsums.shape[1]
    if direction == "fw":
        model = cm.ForwardCommModel(devices)
        model.normalize.fit(train.fw_inputs())
        targets = train.fw
    else:
        model = cm.BackwardCommModel(devices)
        model.normalize.fit(train.dimsums)
        targets = train.bw
    model.output_scale.fill_(float(targets.mean()))

    def batch_loss(which: np.ndarray) -> torch.Tensor:
        which = torch.from_numpy(which)
        return relative_error_loss(predict_comm(model, direction, train,
                                                which), targets[which])

    run = fit_model(model, len(train), batch_loss,
                    lambda: comm_mape(model, direction, valid),
                    epochs=epochs, seed=seed, lr=lr, batch=batch, log=log,
                    label="comm_" + direction)
    return model, run


def trained_ranges(pool: Dict, samples: Sequence[Dict]) -> Dict:
    """[min, max] of the rows, dim and pooling factor of the tables the
    samples use, and of their table count per set (meta.json's
    "trained_ranges")."""
    by_id = {t["id"]: t for t in pool["tables"]}
    tables = [collect.entry_stats(e, by_id[collect.entry_table(e)])
              for s in samples for e in s["tables"]]
    counts = [len(s["tables"]) for s in samples]

    def span(values, kind):
        return [kind(min(values)), kind(max(values))]

    return {"rows": span([t["rows"] for t in tables], int),
            "dim": span([t["dim"] for t in tables], int),
            "pooling_factor": span([t["pooling_factor"] for t in tables],
                                   float),
            "tables_per_set": span(counts, int)}


def cache_bytes(host: Dict) -> Tuple[float, float]:
    """The two cache levels of the measuring machine for the physics prior:
    a CPU's (L2, L3) bytes, the prior's defaults for a cache the host does
    not list; a GPU's (half its L2, its L2), since each address lives in one
    of the two halves (partitions) of a large GPU's L2 and a warp reaching
    the far half pays more."""
    if host.get("gpu_model"):
        l2 = float(host["l2_kb"]) * 1024.0
        return (l2 / 2.0, l2)
    caches = host.get("caches_kb") or {}
    return tuple(float(caches[name]) * 1024.0 if caches.get(name) else
                 default for name, default in
                 zip(("L2", "L3"), cm.DEFAULT_CACHE_BYTES))


def line_bytes(host: Dict) -> int:
    """The bytes one row read moves at least: a CPU's cache line, a GPU's
    32-byte DRAM sector."""
    return GPU_SECTOR_BYTES if host.get("gpu_model") else cm.CACHE_LINE_BYTES


def gpu_host(samples: Sequence[Dict], data_path: str) -> Dict:
    """meta.json's "host" of a dataset measured on a GPU (device "cuda"):
    the GPU's name and L2 size, which every sample records."""
    sizes = sorted(set(s.get("l2_bytes") for s in samples))
    if len(sizes) != 1 or not isinstance(sizes[0], int) or sizes[0] <= 0:
        raise TrainError("dataset '%s' was measured on a GPU but its samples "
                         "do not all give one positive \"l2_bytes\" (%s)" %
                         (data_path, ", ".join(str(v) for v in sizes)))
    return {"gpu_model": samples[0]["hardware"],
            "l2_kb": sizes[0] // 1024}


def measuring_host(hardware: str, data_path: str,
                   allow_other_host: bool) -> Dict:
    """meta.json's "host": this machine's description when it is the one
    the dataset was measured on (its CPU model is the samples' "hardware").
    A dataset from another CPU is an error unless allow_other_host, and the
    host is then only {"cpu_model": hardware}."""
    here = _core.host_cpu_model()
    if hardware == here:
        return _core.host_description()
    if not allow_other_host:
        raise TrainError(
            "dataset '%s' was measured on '%s', but this machine is '%s': "
            "train on the machine that measured it (the bundle records that "
            "machine's caches), or pass --allow-other-host to record only "
            "the dataset's CPU model" % (data_path, hardware, here))
    return {"cpu_model": hardware}


def train_bundle(pool_path: str, data_path: str, out_dir: str, *, epochs: int,
                 seed: int, lr: float = 3e-3, batch: int = 64,
                 validation_fraction: float = DEFAULT_VALIDATION_FRACTION,
                 comm_data_path: Optional[str] = None, log=None,
                 allow_other_host: bool = False,
                 members: int = cm.DEFAULT_ENSEMBLE,
                 correction_bound: float = cm.DEFAULT_CORRECTION_BOUND
                 ) -> Dict:
    """Trains on a pool and a dataset and writes the bundle; returns its
    meta.json. With comm_data_path (a load_comm_samples() file measured at
    the compute dataset's batch size), the bundle also gets the two comm
    models of that dataset's device count. A dataset measured on another
    CPU than this machine's is refused unless allow_other_host
    (measuring_host())."""
    pool = tp.load_pool(pool_path)
    samples = collect.load_samples(data_path)
    if not samples:
        raise TrainError("dataset '%s' holds no samples" % data_path)
    settings = collect.check_one_setting(samples, data_path)
    train, valid = build_sample_sets(pool, pool_path, samples, data_path,
                                     seed, validation_fraction)
    comm_samples = []
    if comm_data_path is not None:
        # Checked before any training, so that bad comm data fails fast.
        comm_samples = load_comm_samples(comm_data_path,
                                         settings["batch_size"])
        comm_train, comm_valid = build_comm_sets(
            comm_samples, comm_data_path, seed, validation_fraction)
    # After every check of the input, so that bad data is named first.
    host = gpu_host(samples, data_path) \
        if settings["device"] in collect.GPU_DEVICES \
        else measuring_host(settings["hardware"], data_path, allow_other_host)
    if log is not None:
        print("train: %d samples (%d training, %d held out) measured on %s, "
              "batch %d" % (len(samples), len(train), len(valid),
                            settings["hardware"], settings["batch_size"]),
              file=log)
    model, run = train_compute_model(
        train, valid, epochs=epochs, seed=seed, lr=lr, batch=batch,
        members=members, correction_bound=correction_bound,
        batch_size=settings["batch_size"], cache_bytes=cache_bytes(host),
        line_bytes=line_bytes(host), log=log)
    held = evaluate(model, valid)
    fit = evaluate(model, train)
    held_figures = {"compute_mape": held["mape"],
                    "compute_kendall_tau": held["kendall_tau"],
                    "compute_log_error_mean": held["log_error_mean"],
                    "compute_log_error_sd": held["log_error_sd"],
                    "compute_samples": len(valid)}
    comm_models, comm_training, devices = {}, {}, None
    if comm_samples:
        first = comm_samples[0]
        devices = first["devices"]
        if log is not None:
            print("train: %d comm samples (%d training, %d held out) of %d "
                  "devices measured on %s over %s" %
                  (len(comm_samples), len(comm_train), len(comm_valid),
                   devices, first["hardware"], first["transport"]),
                  file=log)
        comm_training = {"comm_train_samples": len(comm_train),
                         "comm_hardware": first["hardware"],
                         "comm_transport": first["transport"]}
        for direction in ("fw", "bw"):
            comm_models[direction], comm_run = train_comm_model(
                direction, comm_train, comm_valid, epochs=epochs, seed=seed,
                lr=lr, batch=batch, log=log)
            key = "comm_" + direction
            held_figures[key + "_mape"] = comm_mape(
                comm_models[direction], direction, comm_valid)
            comm_training[key + "_train_mape"] = comm_mape(
                comm_models[direction], direction, comm_train)
            comm_training[key + "_best_epoch"] = comm_run["best_epoch"]
        held_figures["comm_samples"] = len(comm_valid)
    meta = cm.bundle_meta(
        trained=True, hardware=settings["hardware"],
        batch_size=settings["batch_size"], dtype="f32", devices=devices,
        dataset_size={"compute": len(samples), "comm": len(comm_samples)},
        held_out=held_figures, seed=seed, compute=model)
    meta["measured_device"] = settings["device"]
    meta["training"] = {
        "pool": settings["pool"],
        "train_samples": len(train),
        "train_mape": fit["mape"],
        "train_kendall_tau": fit.get("kendall_tau"),
        "epochs": epochs,
        "best_epoch": run["best_epoch"],
        "prior_train_mape": run["prior_train_mape"],
        "prior_held_out_mape": run["prior_held_out_mape"],
        "learning_rate": lr,
        "batch": batch,
        "loss": "mean squared relative error",
        "validation_fraction": validation_fraction,
        "validation_split": "held_out(id, seed, fraction) in "
                            "python/neuroshard/train.py",
    }
    meta["training"].update(comm_training)
    meta["host"] = host
    fitted = [s for s in samples
              if not held_out(s["id"], seed, validation_fraction)]
    meta["trained_ranges"] = trained_ranges(pool, fitted)
    meta["row_pieces"] = has_row_pieces(fitted)
    cm.export_bundle(out_dir, model, meta, comm_models.get("fw"),
                     comm_models.get("bw"))
    return meta


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m neuroshard.train",
        description="Trains the compute cost model on a measured dataset "
        "and exports a cost-model bundle (compute.pt + meta.json); with "
        "--comm-data also the comm models (comm_fw.pt, comm_bw.pt), else "
        "comm stays analytical.")
    parser.add_argument("--pool", required=True, help="pool JSON file")
    parser.add_argument("--data", required=True, help="dataset JSONL file "
                        "(python3 -m neuroshard.collect)")
    parser.add_argument("--comm-data", default=None,
                        help="comm dataset JSONL file (measured all-to-alls "
                        "of N devices at the same batch size): also train "
                        "the comm models")
    parser.add_argument("--out", required=True, help="bundle directory")
    parser.add_argument("--epochs", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lr", type=float, default=3e-3,
                        help="Adam learning rate (cosine-annealed)")
    parser.add_argument("--batch", type=int, default=64,
                        help="samples per optimiser step")
    parser.add_argument("--validation-fraction", type=float,
                        default=DEFAULT_VALIDATION_FRACTION)
    parser.add_argument("--ensemble", type=int, default=cm.DEFAULT_ENSEMBLE,
                        help="members of the ensemble whose spread "
                        "estimates a prediction's uncertainty (default "
                        "%(default)s)")
    parser.add_argument("--correction-bound", type=float,
                        default=cm.DEFAULT_CORRECTION_BOUND,
                        help="the most the network may scale the physics "
                        "prior, up or down (default %(default)s)")
    parser.add_argument("--allow-other-host", action="store_true",
                        help="train on a dataset measured on another CPU "
                        "than this machine's; the bundle then records only "
                        "that CPU's model as its host")
    args = parser.parse_args(argv)
    if args.epochs < 1 or args.batch < 1 or not 0 < args.lr < math.inf:
        parser.error("--epochs, --batch and --lr must be positive (and --lr "
                     "finite), got %d, %d, %r" % (args.epochs, args.batch,
                                                   args.lr))
    if not 0.0 < args.validation_fraction < 1.0:
        parser.error("--validation-fraction must be in (0, 1)")
    if args.ensemble < 1:
        parser.error("--ensemble must be at least 1, got %d" % args.ensemble)
    if not 1.0 < args.correction_bound < math.inf:
        parser.error("--correction-bound must be a finite number above 1, "
                     "got %r" % args.correction_bound)
    try:
        meta = train_bundle(args.pool, args.data, args.out,
                            epochs=args.epochs, seed=args.seed, lr=args.lr,
                            batch=args.batch,
                            validation_fraction=args.validation_fraction,
                            comm_data_path=args.comm_data, log=sys.stderr,
                            allow_other_host=args.allow_other_host,
                            members=args.ensemble,
                            correction_bound=args.correction_bound)
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
    if meta["devices"] is not None:
        training = meta["training"]
        print("comm models for %d devices: held-out MAPE forward %.2f%%, "
              "backward %.2f%% on %d samples (best epochs %d, %d)" %
              (meta["devices"], 100.0 * held["comm_fw_mape"],
               100.0 * held["comm_bw_mape"], held["comm_samples"],
               training["comm_fw_best_epoch"],
               training["comm_bw_best_epoch"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
