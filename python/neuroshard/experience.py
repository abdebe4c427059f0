#===- experience.py - Learning from measured plans -----------------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""Learning from measured plans (docs/cost-model.md, "Learning from measured
plans").

Measured selection (docs/planner.md, "Measured selection") times the device
sets of the planner's best candidate plans on this CPU and appends every
timed set to an *experience file*, a JSON Lines file with one self-contained
line per set (LINE_FIELDS, ENTRY_FIELDS):

  {"format": "neuroshard-experience", "version": 1, "hardware": "AMD EPYC",
   "device": "cpu", "batch_size": 1024, "bundle": "cpu-here",
   "cost_ms": 1.93, "min_ms": 1.90, "max_ms": 2.11, "runs": 12,
   "predicted_ms": 1.61,
   "tables": [{"name": "t3", "rows": 100000, "dim": 64,
               "pooling_factor": 12.5, "access_hist": [17 numbers]}, ...]}

"tables" holds one entry per lookup of the set (a column slice with dim =
its width, a table that several features look up once per feature): the
per-shard features of cost_model.table_features(), whose encodings the
compute model sums. cost_ms is the median of the set's fused forward +
backward + SGD step, timed as neuroshard-collect times its samples;
predicted_ms is what the planning bundle predicted (with its risk margin).

load_experience() reads and checks such a file. refine_bundle() fine-tunes
a bundle's compute model on the sets of one or more files: the sets are
split into training and held-out sets by a seeded hash of their content
(set_key(), so that a set timed twice lands in one split), the network's
corrections are trained at a small learning rate with early stopping on the
held-out sets' MAPE, optionally replaying the bundle's own calibration
samples so that the model does not forget random sets, and the refined
bundle is written with a "refined" record in its meta.json. Its command
line is `python3 -m neuroshard.calibrate --refine BUNDLE`.

error_by_footprint() and `python3 -m neuroshard.experience FILE...` show
where the planning model errs on the timed sets: its mean signed and
absolute error per bin of the set's weight bytes over the last-level cache.
"""

import hashlib
import json
import math
import os
import shutil
import tempfile
import time
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from neuroshard import _core
from neuroshard import bundle_meta as bm
from neuroshard import collect
from neuroshard import cost_model as cm
from neuroshard import jsonio
from neuroshard import metrics
from neuroshard import table_pool as tp
from neuroshard import train as tr

EXPERIENCE_FORMAT = "neuroshard-experience"
EXPERIENCE_VERSION = 1
# The file measured selection appends to by default, in the bundle's
# directory.
EXPERIENCE_FILE = "experience.jsonl"
# Fields of an experience line and their types.
LINE_FIELDS = {"format": str, "version": int, "hardware": str, "device": str,
               "batch_size": int, "bundle": str, "cost_ms": (int, float),
               "min_ms": (int, float), "max_ms": (int, float), "runs": int,
               "predicted_ms": (int, float), "tables": list}
# Fields of one entry of its "tables".
ENTRY_FIELDS = {"name": str, "rows": int, "dim": int,
                "pooling_factor": (int, float), "access_hist": list}
# What every line of one file shares (and what must match the bundle).
SHARED_FIELDS = ("hardware", "device", "batch_size")
# The fewest experience samples refine_bundle() trains on.
MIN_SAMPLES = 10
# Held-out share of the experience, and the training settings of
# refine_bundle(): a smaller learning rate and batch than training from
# scratch (the model is already close, and the sets are few), early
# stopping after DEFAULT_PATIENCE epochs without a better held-out MAPE.
DEFAULT_VALIDATION_FRACTION = 0.25
DEFAULT_EPOCHS = 40
DEFAULT_LR = 1e-3
DEFAULT_BATCH = 16
DEFAULT_PATIENCE = 10
# Calibration samples replayed per experience sample in every epoch, when
# the calibration dataset is given.
REPLAY_RATIO = 2
# Where refining a bundle in place keeps the files it replaced.
BACKUP_DIR = "before-refine"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


class ExperienceError(Exception):
    """An experience file, or a refinement, that cannot be used; the message
    names the file."""


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_line(line, where: str) -> None:
    """Checks one parsed experience line; `where` names the file and the
    line in the errors."""
    collect.check_fields(line, LINE_FIELDS, where, ExperienceError)
    if line["format"] != EXPERIENCE_FORMAT:
        raise ExperienceError("%s: \"format\" must be \"%s\", got %r" %
                              (where, EXPERIENCE_FORMAT, line["format"]))
    if line["version"] != EXPERIENCE_VERSION:
        raise ExperienceError("%s: \"version\" %d is not one this reader "
                              "knows (%d)" % (where, line["version"],
                                              EXPERIENCE_VERSION))
    if line["batch_size"] < 1:
        raise ExperienceError("%s: \"batch_size\" must be positive, got %d"
                              % (where, line["batch_size"]))
    if line["runs"] < 1:
        raise ExperienceError("%s: \"runs\" must be positive, got %d" %
                              (where, line["runs"]))
    for field in ("cost_ms", "min_ms", "max_ms"):
        if not (math.isfinite(line[field]) and line[field] > 0):
            raise ExperienceError("%s: \"%s\" must be a finite number > 0, "
                                  "got %r" % (where, field, line[field]))
    if not line["min_ms"] <= line["cost_ms"] <= line["max_ms"]:
        raise ExperienceError(
            "%s: the median \"cost_ms\" %r is not between \"min_ms\" %r and "
            "\"max_ms\" %r" % (where, line["cost_ms"], line["min_ms"],
                               line["max_ms"]))
    if not (math.isfinite(line["predicted_ms"]) and
            line["predicted_ms"] >= 0):
        raise ExperienceError("%s: \"predicted_ms\" must be a finite number "
                              ">= 0, got %r" % (where, line["predicted_ms"]))
    if not line["tables"]:
        raise ExperienceError("%s: \"tables\" is empty; a timed set looks up "
                              "at least one table" % where)
    for i, entry in enumerate(line["tables"]):
        at = "%s: tables[%d]" % (where, i)
        collect.check_fields(entry, ENTRY_FIELDS, at, ExperienceError)
        at += " ('%s')" % entry["name"]
        hist = entry["access_hist"]
        for b, value in enumerate(hist):
            if not _number(value):
                raise ExperienceError("%s: access_hist[%d] is %r; expected a "
                                      "number" % (at, b, value))
        violation = _core.check_rows(entry["rows"]) or \
            _core.check_dim(entry["dim"]) or \
            _core.check_statistics(float(entry["pooling_factor"]),
                                   [float(v) for v in hist])
        if violation is not None:
            raise ExperienceError("%s: %s" % (at, violation))


def load_experience(path: str) -> List[Dict]:
    """The lines of an experience file, checked one by one (check_line);
    blank lines are skipped, and every other line must hold one timed set.
    All lines must share their hardware, device and batch size: the error
    names the first line that differs. An empty file holds no sets."""
    lines, first = [], None
    for number, where, line in jsonio.json_lines(path, "experience",
                                                 ExperienceError):
        check_line(line, where)
        if first is None:
            first = (number, line)
        else:
            for field in SHARED_FIELDS:
                if line[field] != first[1][field]:
                    raise ExperienceError(
                        "%s has %s %r, but line %d has %r: an experience "
                        "file must not mix sets timed with different %s" %
                        (where, field, line[field], first[0],
                         first[1][field], field))
        lines.append(line)
    return lines


def set_key(line: Dict) -> int:
    """A 60-bit key of the set's content (its entries' features, in any
    order): the held-out split hashes it, so that one set timed in two plans
    lands in one split."""
    entries = sorted(json.dumps([e["rows"], e["dim"],
                                 float(e["pooling_factor"]),
                                 [float(b) for b in e["access_hist"]]])
                     for e in line["tables"])
    digest = hashlib.sha256("\n".join(entries).encode("utf-8")).hexdigest()
    return int(digest[:15], 16)


def split_experience(lines: Sequence[Dict], seed: int,
                     fraction: float) -> Tuple[List[Dict], List[Dict]]:
    """(training, held-out) lines: a line is held out when
    train.held_out(set_key(line), seed, fraction) says so."""
    held = [tr.held_out(set_key(line), seed, fraction) for line in lines]
    return ([line for line, h in zip(lines, held) if not h],
            [line for line, h in zip(lines, held) if h])


def experience_set(lines: Sequence[Dict]) -> tr.SampleSet:
    """The lines as a train.SampleSet: one feature row per entry."""
    features, samples, index = [], [], {}
    for k, line in enumerate(lines):
        rows = []
        for entry in line["tables"]:
            index[len(features)] = len(features)
            rows.append(len(features))
            features.append(cm.table_features(
                entry["rows"], entry["dim"], entry["pooling_factor"],
                entry["access_hist"]))
        samples.append({"id": k, "tables": rows,
                        "cost_ms": line["cost_ms"]})
    return tr.SampleSet(torch.tensor(features, dtype=torch.float32)
                        .reshape(-1, cm.NUM_FEATURES), samples, index)


def error_figures(model, samples: tr.SampleSet) -> Dict[str, float]:
    """{"mape", "signed_error"} of the model's predictions: the mean of
    |predicted - measured| / measured and of (predicted - measured) /
    measured (negative: the model predicts the sets too fast)."""
    predicted = tr.predict(model, samples).double().numpy()
    measured = samples.costs.double().numpy()
    return {"mape": metrics.mape(predicted, measured),
            "signed_error": float(np.mean((predicted - measured) /
                                          measured))}


def _inside(path: str, directory: str) -> bool:
    path, directory = os.path.realpath(path), os.path.realpath(directory)
    return path == directory or path.startswith(directory + os.sep)


def check_refine_out(bundle_dir: str, out_dir: str, force: bool) -> bool:
    """Refuses an out_dir that would overwrite something without force:
    the bundle itself (refined in place), a directory that is not empty,
    anything under the source tree's models/. Returns whether out_dir is
    the bundle."""
    in_place = os.path.realpath(out_dir) == os.path.realpath(bundle_dir)
    if force:
        return in_place
    models = os.path.join(REPO, "models")
    if _inside(out_dir, models):
        raise ExperienceError(
            "'%s' is under the source tree's models/ (%s), which holds the "
            "shipped bundles: write the refined bundle elsewhere (--out), or "
            "pass --force" % (out_dir, models))
    if in_place:
        raise ExperienceError(
            "refining '%s' in place replaces its compute.pt and meta.json "
            "(the old ones are kept in %s/): pass --force to do so, or "
            "--out DIR to write the refined bundle elsewhere" %
            (bundle_dir, os.path.join(bundle_dir, BACKUP_DIR)))
    if os.path.exists(out_dir) and (not os.path.isdir(out_dir) or
                                    os.listdir(out_dir)):
        raise ExperienceError("'%s' exists and is not an empty directory: "
                              "choose another --out, or pass --force to "
                              "replace its bundle" % out_dir)
    return in_place


def load_bundle_meta(bundle_dir: str) -> Dict:
    """The bundle's meta.json, checked for what refining needs."""
    meta = bm.read_checked(bundle_dir, ExperienceError)
    if meta.get("trained") is not True:
        raise ExperienceError("'%s' says \"trained\": %r; refine a trained "
                              "bundle (neuroshard.train or "
                              "neuroshard.calibrate)" %
                              (bm.path(bundle_dir),
                               meta.get("trained")))
    return meta


def check_against_bundle(lines: Sequence[Dict], path: str, bundle_dir: str,
                         meta: Dict) -> None:
    """Refuses sets timed on another machine, device or batch size than the
    bundle models."""
    if not lines:
        return
    first = lines[0]
    device = meta.get("measured_device", "cpu")
    if first["device"] != device:
        raise ExperienceError(
            "experience '%s' was timed on device '%s', but bundle '%s' "
            "models device '%s' (meta.json \"measured_device\")" %
            (path, first["device"], bundle_dir, device))
    if first["hardware"] != meta["hardware"]:
        raise ExperienceError(
            "experience '%s' was measured on '%s', but bundle '%s' models "
            "'%s' (meta.json \"hardware\"): refine a bundle with the "
            "experience of its own machine" %
            (path, first["hardware"], bundle_dir, meta["hardware"]))
    if first["batch_size"] != meta["batch_size"]:
        raise ExperienceError(
            "experience '%s' was timed at batch size %d, but bundle '%s' "
            "models batch size %d (meta.json \"batch_size\"): plan at the "
            "bundle's batch size to collect experience for it" %
            (path, first["batch_size"], bundle_dir, meta["batch_size"]))


def _calibration(meta: Dict, bundle_dir: str, pool_path: str,
                 data_path: str) -> Tuple[Dict, List[Dict], tr.SampleSet]:
    """(pool, the calibration samples the bundle trained on, its held-out
    samples) of the bundle's own calibration dataset, split as training
    split it (meta.json's seed and validation fraction)."""
    training = meta.get("training")
    if not isinstance(training, dict) or \
            not _number(training.get("validation_fraction")) or \
            not isinstance(meta.get("seed"), int):
        raise ExperienceError(
            "'%s' has no training record (\"training\" with "
            "\"validation_fraction\", and \"seed\"), so its calibration "
            "split cannot be rebuilt: refine without --data" %
            bm.path(bundle_dir))
    pool = tp.load_pool(pool_path)
    samples = collect.load_samples(data_path)
    if not samples:
        raise ExperienceError("dataset '%s' holds no samples" % data_path)
    settings = collect.check_one_setting(samples, data_path)
    for field in ("hardware", "batch_size"):
        if settings[field] != meta[field]:
            raise ExperienceError(
                "dataset '%s' was measured with %s %r, but bundle '%s' has "
                "%r: give the dataset the bundle was trained on" %
                (data_path, field, settings[field], bundle_dir, meta[field]))
    seed, fraction = meta["seed"], training["validation_fraction"]
    _, valid = tr.build_sample_sets(pool, pool_path, samples, data_path,
                                    seed, fraction)
    fitted = [s for s in samples if not tr.held_out(s["id"], seed, fraction)]
    return pool, fitted, valid


def _combined_set(lines: Sequence[Dict], pool: Optional[Dict],
                  samples: Sequence[Dict]) -> tr.SampleSet:
    """The experience lines, then the calibration samples, as one
    train.SampleSet over the entries' and the pool's features."""
    features, index, combined = [], {}, []
    for k, line in enumerate(lines):
        keys = []
        for j, entry in enumerate(line["tables"]):
            index[("set", k, j)] = len(features)
            keys.append(("set", k, j))
            features.append(cm.table_features(
                entry["rows"], entry["dim"], entry["pooling_factor"],
                entry["access_hist"]))
        combined.append({"id": k, "tables": keys,
                         "cost_ms": line["cost_ms"]})
    if samples:
        rows, pool_index = tr.entry_features(pool, samples,
                                             key=lambda k: ("pool", k))
        index.update({k: len(features) + row
                      for k, row in pool_index.items()})
        features += rows
        for s in samples:
            combined.append({"id": len(combined),
                             "tables": [("pool", collect.entry_key(t))
                                        for t in s["tables"]],
                             "cost_ms": s["cost_ms"]})
    return tr.SampleSet(torch.tensor(features, dtype=torch.float32)
                        .reshape(-1, cm.NUM_FEATURES), combined, index)


def extend_ranges(model: cm.ComputeCostModel, meta: Dict,
                  lines: Sequence[Dict]) -> None:
    """Widens the prior's trusted ranges (and meta.json's "trained_ranges",
    where it has them) to the tables of the training sets: the network is
    trained on them now."""
    features = experience_set(lines).features
    logs = torch.log(features[:, 0:3].clamp(min=1e-6))
    prior = model.prior
    prior.log_low.copy_(torch.minimum(prior.log_low,
                                      logs.min(dim=0).values))
    prior.log_high.copy_(torch.maximum(prior.log_high,
                                       logs.max(dim=0).values))
    ranges = meta.get("trained_ranges")
    if not isinstance(ranges, dict):
        return
    values = {"rows": [e["rows"] for l in lines for e in l["tables"]],
              "dim": [e["dim"] for l in lines for e in l["tables"]],
              "pooling_factor": [float(e["pooling_factor"]) for l in lines
                                 for e in l["tables"]],
              "tables_per_set": [len(l["tables"]) for l in lines]}
    for key, seen in values.items():
        span = ranges.get(key)
        if isinstance(span, list) and len(span) == 2:
            kind = float if key == "pooling_factor" else int
            ranges[key] = [kind(min(span[0], min(seen))),
                           kind(max(span[1], max(seen)))]


def _write_refined(bundle_dir: str, out_dir: str, in_place: bool,
                   model: cm.ComputeCostModel, meta: Dict) -> None:
    """Writes compute.pt and meta.json through a staging directory beside
    out_dir: in place, the replaced files move to BACKUP_DIR; elsewhere,
    the bundle's comm models are copied unchanged."""
    parent = os.path.dirname(os.path.abspath(out_dir))
    try:
        os.makedirs(parent, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=".refine-", dir=parent)
    except OSError as e:
        raise ExperienceError("cannot write beside '%s': %s" %
                              (out_dir, e.strerror))
    try:
        torch.jit.script(model.eval()).save(os.path.join(staging,
                                                         "compute.pt"))
        bm.write(staging, meta)
        if in_place:
            backup = os.path.join(out_dir, BACKUP_DIR)
            shutil.rmtree(backup, ignore_errors=True)
            os.makedirs(backup)
            for name in ("compute.pt", bm.FILE_NAME):
                os.replace(os.path.join(out_dir, name),
                           os.path.join(backup, name))
        else:
            os.makedirs(out_dir, exist_ok=True)
            # The files --force replaces in another directory.
            for name in bm.BUNDLE_FILES:
                target = os.path.join(out_dir, name)
                if os.path.exists(target):
                    os.remove(target)
            for name in ("comm_fw.pt", "comm_bw.pt"):
                source = os.path.join(bundle_dir, name)
                if os.path.exists(source):
                    shutil.copy2(source, os.path.join(out_dir, name))
        for name in ("compute.pt", bm.FILE_NAME):
            os.replace(os.path.join(staging, name),
                       os.path.join(out_dir, name))
    except OSError as e:
        raise ExperienceError("cannot write the refined bundle to '%s': %s"
                              % (out_dir, e.strerror or e))
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _percent(value: float) -> str:
    return "%.2f%%" % (100.0 * value)


def _signed_percent(value: float) -> str:
    return "%+.2f%%" % (100.0 * value)


def refine_bundle(bundle_dir: str, experience_paths: Sequence[str],
                  out_dir: str, *, epochs: int = DEFAULT_EPOCHS,
                  seed: Optional[int] = None, lr: float = DEFAULT_LR,
                  batch: int = DEFAULT_BATCH,
                  patience: Optional[int] = DEFAULT_PATIENCE,
                  validation_fraction: float = DEFAULT_VALIDATION_FRACTION,
                  data_path: Optional[str] = None,
                  pool_path: Optional[str] = None, force: bool = False,
                  keep_worse: bool = False, min_samples: int = MIN_SAMPLES,
                  deadline: Optional[float] = None, log=None) -> Dict:
    """Fine-tunes the compute model of the bundle in bundle_dir on the sets
    of the experience files and writes the refined bundle (compute.pt and
    meta.json, the comm models copied unchanged) to out_dir, which may be
    bundle_dir itself with force (the replaced files are kept in
    BACKUP_DIR there).

    The sets are split by split_experience(seed, validation_fraction) (seed
    defaults to the bundle's); training minimises the ensemble's squared
    relative error (each member on its bootstrap weights) at `lr`, `batch`
    sets per step, and keeps the epoch with the lowest held-out MAPE,
    stopping after `patience` epochs without one or past `deadline`. With
    data_path and pool_path (the bundle's calibration dataset and pool),
    every epoch also replays REPLAY_RATIO calibration training samples per
    experience set, and the calibration held-out MAPE is reported before
    and after. A refined model whose held-out MAPE is not lower than the
    bundle's is not written unless keep_worse.

    Returns {"written": bool, "refined": the record meta.json gains,
    "meta": the refined bundle's meta.json}. Refuses, before any training:
    experience of another machine, device or batch size than the bundle's,
    fewer than min_samples sets, a split without training or with fewer
    than two held-out sets, and an out_dir that check_refine_out() refuses.
    """
    if (data_path is None) != (pool_path is None):
        raise ExperienceError("the calibration dataset and its pool go "
                              "together: give both --data and --pool, or "
                              "neither")
    if epochs < 1 or batch < 1 or not 0 < lr < math.inf:
        raise ExperienceError("epochs, batch and the learning rate must be "
                              "positive, got %d, %d, %r" % (epochs, batch,
                                                            lr))
    if not 0.0 < validation_fraction < 1.0:
        raise ExperienceError("the held-out fraction must be in (0, 1), got "
                              "%r" % validation_fraction)
    meta = load_bundle_meta(bundle_dir)
    in_place = check_refine_out(bundle_dir, out_dir, force)
    if not experience_paths:
        raise ExperienceError("no experience file given")
    lines = []
    for path in experience_paths:
        if not os.path.exists(path):
            raise ExperienceError(
                "experience '%s' does not exist: plan with this bundle and "
                "verify_top (neuroshard-plan --verify-top K --device-kind "
                "cpu) to time sets into it, or name another file" % path)
        read = load_experience(path)
        check_against_bundle(read, path, bundle_dir, meta)
        lines.extend(read)
    if len(lines) < min_samples:
        raise ExperienceError(
            "%s hold%s %d timed set%s; refining needs at least %d" %
            (", ".join("'%s'" % p for p in experience_paths),
             "" if len(experience_paths) > 1 else "s", len(lines),
             "" if len(lines) == 1 else "s", min_samples))
    if seed is None:
        seed = meta.get("seed") if isinstance(meta.get("seed"), int) else 0
    fitted, held = split_experience(lines, seed, validation_fraction)
    if not fitted or len(held) < 2:
        raise ExperienceError(
            "%d timed sets (%d distinct) split into %d for training and %d "
            "held out (seed %d, fraction %g); refining needs at least one "
            "and two: time more sets" %
            (len(lines), len(set(set_key(l) for l in lines)), len(fitted),
             len(held), seed, validation_fraction))
    pool, calibration, calibration_valid = None, [], None
    if data_path is not None:
        pool, calibration, calibration_valid = _calibration(
            meta, bundle_dir, pool_path, data_path)
    try:
        model = cm.load_compute_model(bundle_dir)
    except cm.BundleError as e:
        raise ExperienceError(str(e))
    start = time.monotonic()

    valid = experience_set(held)
    before = error_figures(model, valid)
    planned = float(np.mean([(l["predicted_ms"] - l["cost_ms"]) / l["cost_ms"]
                             for l in held]))
    calibration_before = tr.evaluate(model, calibration_valid)["mape"] \
        if calibration_valid is not None else None
    if log is not None:
        print("refine: %d timed sets from %s (%d training, %d held out)%s; "
              "held-out MAPE %s, signed error %s before" %
              (len(lines), ", ".join(experience_paths), len(fitted),
               len(held), ", replaying %d of %d calibration samples per "
               "epoch" % (min(len(calibration), REPLAY_RATIO * len(fitted)),
                          len(calibration)) if calibration else "",
               _percent(before["mape"]),
               _signed_percent(before["signed_error"])), file=log)

    refined_meta = json.loads(json.dumps(meta))
    extend_ranges(model, refined_meta, fitted)
    combined = _combined_set(fitted, pool, calibration)
    own = len(fitted)
    replay = min(len(calibration), REPLAY_RATIO * own)
    weights = tr.bootstrap_weights(len(combined), model.members, seed)

    def epoch_order(generator: torch.Generator) -> np.ndarray:
        replayed = torch.randperm(len(calibration), generator=generator)
        order = np.concatenate([np.arange(own),
                                own + replayed[:replay].numpy()])
        return order[torch.randperm(len(order), generator=generator).numpy()]

    def batch_loss(which: np.ndarray) -> torch.Tensor:
        summed = tr.summed_encodings(model, combined, which)
        index = torch.from_numpy(which)
        target = combined.costs[index].unsqueeze(1)
        errors = ((model.member_costs(summed) - target) / target)**2
        w = weights[index]
        return (errors * w).sum() / w.sum().clamp(min=1.0)

    torch.manual_seed(seed)
    run = tr.fit_model(model, own, batch_loss,
                       lambda: error_figures(model, valid)["mape"],
                       epochs=epochs, seed=seed, lr=lr, batch=batch, log=log,
                       label="refine", epoch_order=epoch_order,
                       patience=patience, deadline=deadline)
    after = error_figures(model, valid)
    improved = after["mape"] < before["mape"]
    record = {
        "experience": [os.path.abspath(p) for p in experience_paths],
        "experience_samples": len(lines),
        "train_samples": len(fitted),
        "held_out_samples": len(held),
        "held_out_before": before,
        "held_out_after": after,
        "held_out_as_planned_signed_error": planned,
        "calibration_data": os.path.abspath(data_path) if data_path else None,
        "calibration_replayed_per_epoch": replay,
        "epochs": epochs,
        "epochs_run": len(run["history"]) - 1,
        "best_epoch": run["best_epoch"],
        "learning_rate": lr,
        "batch": batch,
        "patience": patience,
        "seed": seed,
        "validation_fraction": validation_fraction,
        "validation_split": "held_out(set_key(line), seed, fraction) in "
                            "python/neuroshard/experience.py",
        "seconds": round(time.monotonic() - start, 3),
    }
    if calibration_valid is not None:
        held_figures = tr.evaluate(model, calibration_valid)
        record["calibration_held_out_mape_before"] = calibration_before
        record["calibration_held_out_mape_after"] = held_figures["mape"]
        refined_meta.setdefault("held_out", {})
        if isinstance(refined_meta["held_out"], dict):
            refined_meta["held_out"]["compute_mape"] = held_figures["mape"]
            for key in ("log_error_mean", "log_error_sd"):
                refined_meta["held_out"]["compute_" + key] = held_figures[key]
            if "kendall_tau" in held_figures:
                refined_meta["held_out"]["compute_kendall_tau"] = \
                    held_figures["kendall_tau"]
    if isinstance(meta.get("refined"), dict):
        record["previous"] = meta["refined"]
    refined_meta["compute_model"] = model.describe()
    refined_meta["refined"] = record
    if log is not None:
        print("refine: held-out MAPE %s -> %s, signed error %s -> %s (best "
              "epoch %d of %d)%s" %
              (_percent(before["mape"]), _percent(after["mape"]),
               _signed_percent(before["signed_error"]),
               _signed_percent(after["signed_error"]), run["best_epoch"],
               record["epochs_run"],
               "" if calibration_valid is None else
               "; calibration held-out MAPE %s -> %s" %
               (_percent(calibration_before),
                _percent(record["calibration_held_out_mape_after"]))),
              file=log)
    written = improved or keep_worse
    if written:
        _write_refined(bundle_dir, out_dir, in_place, model, refined_meta)
    return {"written": written, "improved": improved, "refined": record,
            "meta": refined_meta}


# Bins of a set's weight bytes over the last-level cache, for
# error_by_footprint(): below it, up to 4x, 16x, 64x it, and beyond.
FOOTPRINT_EDGES = (0.0, 1.0, 4.0, 16.0, 64.0, math.inf)


def set_weight_bytes(line: Dict, element_bytes: int = 4) -> int:
    """The bytes of a timed set's weights: rows x width of every lookup."""
    return sum(int(t["rows"]) * int(t["dim"]) * element_bytes
               for t in line["tables"])


def error_by_footprint(lines: Sequence[Dict], llc_bytes: float
                       ) -> List[Dict]:
    """The planning model's error on timed sets, per bin of FOOTPRINT_EDGES
    of the set's weight bytes over `llc_bytes`: {"low", "high", "sets",
    "signed", "absolute"} with the mean signed and absolute relative error
    (predicted_ms - cost_ms) / cost_ms; empty bins are left out, and a last
    row ("low" None) covers every set."""
    if not llc_bytes > 0:
        raise ExperienceError("the last-level cache must be a positive "
                              "number of bytes, got %r" % (llc_bytes,))
    errors = np.array([(l["predicted_ms"] - l["cost_ms"]) / l["cost_ms"]
                       for l in lines], dtype=np.float64)
    ratio = np.array([set_weight_bytes(l) / llc_bytes for l in lines],
                     dtype=np.float64)
    rows = []
    bins = list(zip(FOOTPRINT_EDGES, FOOTPRINT_EDGES[1:])) + [(None, None)]
    for low, high in bins:
        inside = np.ones(len(lines), dtype=bool) if low is None else \
            (ratio >= low) & (ratio < high)
        if inside.any():
            rows.append({"low": low, "high": high,
                         "sets": int(inside.sum()),
                         "signed": float(errors[inside].mean()),
                         "absolute": float(np.abs(errors[inside]).mean())})
    return rows


def host_llc_bytes() -> Optional[float]:
    """This machine's last-level cache in bytes (its largest cache level),
    or None where it is not reported."""
    caches = _core.host_description().get("caches_kb") or {}
    return float(max(caches.values())) * 1024 if caches else None


def footprint_report(paths: Sequence[str], llc_bytes: Optional[float] = None
                     ) -> str:
    """A markdown table of error_by_footprint() over the sets of `paths`
    (every file read with load_experience), for the last-level cache
    `llc_bytes` (default: this machine's)."""
    lines = [line for path in paths for line in load_experience(path)]
    if not lines:
        raise ExperienceError("%s hold no timed sets" % ", ".join(
            "'%s'" % p for p in paths))
    if llc_bytes is None:
        llc_bytes = host_llc_bytes()
        if llc_bytes is None:
            raise ExperienceError("this machine reports no cache sizes: "
                                  "give --llc-mib")
    out = ["| set weights / last-level cache (%g MiB) | sets | mean signed "
           "error | mean absolute error |" % (llc_bytes / 2**20),
           "|---|---|---|---|"]
    for row in error_by_footprint(lines, llc_bytes):
        if row["low"] is None:
            span = "all"
        elif math.isinf(row["high"]):
            span = "%gx and more" % row["low"]
        else:
            span = "%gx to %gx" % (row["low"], row["high"])
        out.append("| %s | %d | %s | %s |" % (
            span, row["sets"], _signed_percent(row["signed"]),
            _percent(row["absolute"])))
    return "\n".join(out) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    import argparse
    import sys
    parser = argparse.ArgumentParser(
        prog="python3 -m neuroshard.experience",
        description="The planning model's error on the device sets measured "
        "selection timed (experience files), per bin of the set's weight "
        "bytes over the last-level cache; predictions include the risk "
        "margin the search priced with.")
    parser.add_argument("experience", nargs="+", help="experience files")
    parser.add_argument("--llc-mib", type=float, default=None,
                        help="last-level cache in MiB (default: this "
                        "machine's largest cache)")
    args = parser.parse_args(argv)
    if args.llc_mib is not None and not args.llc_mib > 0:
        parser.error("--llc-mib must be positive, got %g" % args.llc_mib)
    try:
        sys.stdout.write(footprint_report(
            args.experience,
            None if args.llc_mib is None else args.llc_mib * 2**20))
    except ExperienceError as e:
        print("neuroshard.experience: error: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
