#===- report.py - How well a bundle predicts measured costs ---------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""Evaluates a trained bundle's exported compute.pt on its dataset: MAPE and
Kendall's tau on the training and the held-out samples (the split rebuilt
from meta.json with train.held_out), printed as a table, and a
predicted-vs-measured scatter plot (PNG) of both. Given the comm dataset of a
bundle with comm models, it also prints the MAPE of comm_fw.pt and
comm_bw.pt on both splits of that dataset."""

import argparse
import os
import sys
import tempfile
from typing import Dict, List, Optional

import numpy as np
import torch

from neuroshard import bundle_meta as bm
from neuroshard import collect
from neuroshard import metrics
from neuroshard import table_pool as tp
from neuroshard import train as tr


class ReportError(Exception):
    """A bundle or dataset that cannot be reported on."""


def load_meta(bundle_dir: str) -> Dict:
    path = bm.path(bundle_dir)
    meta = bm.read(bundle_dir, ReportError)
    training = meta.get("training") if isinstance(meta, dict) else None
    if not isinstance(training, dict) or "validation_fraction" not in \
            training or not isinstance(meta.get("seed"), int):
        raise ReportError("'%s' has no training record (\"training\" with "
                          "\"validation_fraction\", and \"seed\"): is it a "
                          "bundle written by neuroshard.train?" % path)
    return meta


def load_script(bundle_dir: str, file_name: str):
    path = os.path.join(bundle_dir, file_name)
    try:
        return torch.jit.load(path)
    except (RuntimeError, ValueError) as e:
        raise ReportError("cannot load '%s': %s" %
                          (path, str(e).splitlines()[0]))


def evaluate_comm(bundle_dir: str, meta: Dict, comm_data_path: str) -> Dict:
    """MAPE of the bundle's comm models on both splits of a comm dataset."""
    if meta.get("devices") is None:
        raise ReportError("bundle '%s' has no comm models (comm: %s), so "
                          "there is nothing to evaluate on '%s'" %
                          (bundle_dir, meta.get("comm", "?"), comm_data_path))
    samples = tr.load_comm_samples(comm_data_path, meta["batch_size"])
    if samples[0]["devices"] != meta["devices"]:
        raise ReportError("comm dataset '%s' has %d devices, but the comm "
                          "models of '%s' are for %d" %
                          (comm_data_path, samples[0]["devices"], bundle_dir,
                           meta["devices"]))
    models = {d: load_script(bundle_dir, "comm_%s.pt" % d)
              for d in ("fw", "bw")}
    splits = tr.build_comm_sets(samples, comm_data_path, meta["seed"],
                                meta["training"]["validation_fraction"])
    result = {}
    for name, split in zip(("training", "held-out"), splits):
        result[name] = {"samples": len(split)}
        for direction, model in models.items():
            result[name][direction + "_mape"] = tr.comm_mape(
                model, direction, split)
    return result


# The kinds of set the report tells apart when a dataset has row pieces.
KIND_PIECES = "sets with a row piece"
KIND_WHOLE = "sets of whole tables"
# The sets that hold a table of the pool's large tier (table_pool.LARGE_TIER)
# and those that do not, whose tables lie in the regular pool's ranges.
KIND_LARGE = "sets with a large-tier table"
KIND_REGULAR = "sets of regular-pool tables"


def _errors(predicted: np.ndarray, measured: np.ndarray) -> Dict:
    """Samples, MAPE, mean signed error ((predicted - measured) / measured;
    negative: the model is too low) and Kendall's tau of some samples."""
    count = len(measured)
    return {
        "samples": count,
        "mape": metrics.mape(predicted, measured) if count else float("nan"),
        "signed": float(np.mean((predicted - measured) / measured))
                  if count else float("nan"),
        "kendall_tau": metrics.kendall_tau(predicted, measured)
                       if count >= 2 else float("nan"),
    }


def evaluate_bundle(bundle_dir: str, pool_path: str, data_path: str,
                    comm_data_path: Optional[str] = None) -> Dict:
    """Predictions and metrics of the bundle's compute.pt on both splits,
    and with comm_data_path those of its comm models (under "comm")."""
    meta = load_meta(bundle_dir)
    model = load_script(bundle_dir, "compute.pt")
    pool = tp.load_pool(pool_path)
    samples = collect.load_samples(data_path)
    if not samples:
        raise ReportError("dataset '%s' holds no samples" % data_path)
    train, valid = tr.build_sample_sets(
        pool, pool_path, samples, data_path, meta["seed"],
        meta["training"]["validation_fraction"])
    result = {"meta": meta,
              "bundle": os.path.basename(os.path.normpath(bundle_dir))}
    with_pieces = {s["id"]: any(collect.is_row_piece(e) for e in s["tables"])
                   for s in samples}
    by_id = {t["id"]: t for t in pool["tables"]}
    with_large = {s["id"]: any(tp.is_large(by_id[collect.entry_table(e)])
                               for e in s["tables"]) for s in samples}
    for name, split in (("training", train), ("held-out", valid)):
        predicted = tr.predict(model, split).numpy()
        measured = split.costs.numpy()
        result[name] = {
            "samples": len(split),
            "predicted": predicted,
            "measured": measured,
            "mape": metrics.mape(predicted, measured),
            "kendall_tau": metrics.kendall_tau(predicted, measured)
                           if len(split) >= 2 else float("nan"),
        }
        pieces = np.array([with_pieces[i] for i in split.ids], dtype=bool)
        if pieces.any():
            result[name]["by_kind"] = {
                kind: _errors(predicted[mask], measured[mask])
                for kind, mask in ((KIND_PIECES, pieces),
                                   (KIND_WHOLE, ~pieces))}
        large = np.array([with_large[i] for i in split.ids], dtype=bool)
        if large.any():
            result[name]["by_tier"] = {
                kind: _errors(predicted[mask], measured[mask])
                for kind, mask in ((KIND_REGULAR, ~large),
                                   (KIND_LARGE, large)) if mask.any()}
    if comm_data_path is not None:
        result["comm"] = evaluate_comm(bundle_dir, meta, comm_data_path)
    return result


def remeasure(result: Dict, pool_path: str, data_path: str, count: int,
              tool: Optional[str]) -> Dict:
    """Times the first `count` held-out sets again, with the dataset's own
    settings, and compares: the MAPE of the new measurement against the
    dataset's (the noise floor no model can beat) and the model's MAPE
    against each. Adds it to `result` under "remeasured"."""
    samples = collect.load_samples(data_path)
    meta = result["meta"]
    held = [s for s in samples if tr.held_out(
        s["id"], meta["seed"], meta["training"]["validation_fraction"])]
    held = held[:count]
    if not held:
        raise ReportError("dataset '%s' has no held-out samples to time "
                          "again" % data_path)
    first = held[0]
    options = argparse.Namespace(
        pool=pool_path, device=first["device"],
        batch_size=first["batch_size"], warmup=first["warmup"],
        iters=first["runs"], seed=first["seed"], max_rows=None,
        hardware=None, fingerprint=first["pool"])
    with tempfile.TemporaryDirectory(prefix="neuroshard-report-") as scratch:
        results = os.path.join(scratch, "again.jsonl")
        with open(results, "w") as out:
            collect.run_batch(collect.find_tool(tool),
                              {s["id"]: s["tables"] for s in held}, options,
                              os.path.join(scratch, "sets.jsonl"), out)
        again = {s["id"]: s["cost_ms"] for s in collect.load_samples(results)}
    before = np.array([s["cost_ms"] for s in held])
    after = np.array([again[s["id"]] for s in held])
    # The held-out split keeps the dataset's order (build_sample_sets), so
    # its first predictions are those of `held`.
    predicted = result["held-out"]["predicted"][:len(held)]
    result["remeasured"] = {
        "sets": len(held),
        "repeat_mape": metrics.mape(after, before),
        "model_mape_first": metrics.mape(predicted, before),
        "model_mape_again": metrics.mape(predicted, after),
        "model_mape_mean": metrics.mape(predicted, (before + after) / 2.0),
    }
    return result


def format_table(result: Dict) -> str:
    meta = result["meta"]
    lines = [
        "cost model '%s' (measured on %s, batch %d, %s; comm: %s)" %
        (result["bundle"], meta["hardware"], meta["batch_size"],
         meta["dtype"], meta.get("comm", "?")),
        "%-10s %8s %9s %13s" % ("split", "samples", "MAPE", "Kendall tau"),
    ]
    for name in ("training", "held-out"):
        split = result[name]
        lines.append("%-10s %8d %8.2f%% %13.4f" %
                     (name, split["samples"], 100.0 * split["mape"],
                      split["kendall_tau"]))
    for name in ("training", "held-out"):
        kinds = list(result[name].get("by_kind", {}).items()) + \
            list(result[name].get("by_tier", {}).items())
        for kind, errors in kinds:
            lines.append("  %s, %s: %d samples, MAPE %.2f%%, signed %+.2f%%, "
                         "Kendall tau %.4f" %
                         (name, kind, errors["samples"],
                          100.0 * errors["mape"], 100.0 * errors["signed"],
                          errors["kendall_tau"]))
    if "comm" in result:
        lines.append("%-10s %8s %9s %9s" % ("comm", "samples", "fw MAPE",
                                            "bw MAPE"))
        for name in ("training", "held-out"):
            split = result["comm"][name]
            lines.append("%-10s %8d %8.2f%% %8.2f%%" %
                         (name, split["samples"], 100.0 * split["fw_mape"],
                          100.0 * split["bw_mape"]))
    if "remeasured" in result:
        again = result["remeasured"]
        lines.append(
            "timed again: %d held-out sets; the second timing is %.2f%% "
            "off the first (MAPE); the model is %.2f%% off the first, "
            "%.2f%% off the second, %.2f%% off their mean" %
            (again["sets"], 100.0 * again["repeat_mape"],
             100.0 * again["model_mape_first"],
             100.0 * again["model_mape_again"],
             100.0 * again["model_mape_mean"]))
    return "\n".join(lines)


def scatter_plot(result: Dict, png_path: str, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    figure, axes = plt.subplots(figsize=(5.5, 5.0), dpi=120)
    low, high = float("inf"), 0.0
    for name, style in (("training", dict(s=4, c="0.7")),
                        ("held-out", dict(s=8, c="tab:blue"))):
        split = result[name]
        axes.scatter(split["measured"], split["predicted"], label="%s (%d): "
                     "MAPE %.1f%%, tau %.3f" %
                     (name, split["samples"], 100.0 * split["mape"],
                      split["kendall_tau"]), linewidths=0, **style)
        low = min(low, split["measured"].min(), split["predicted"].min())
        high = max(high, split["measured"].max(), split["predicted"].max())
    low = max(low, 1e-6)
    axes.plot([low, high], [low, high], color="black", linewidth=0.8)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("measured cost (ms)")
    axes.set_ylabel("predicted cost (ms)")
    axes.set_title(title, fontsize=9)
    axes.legend(loc="upper left", fontsize=7)
    figure.tight_layout()
    figure.savefig(png_path)
    plt.close(figure)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m neuroshard.report",
        description="Held-out MAPE and Kendall's tau of a trained bundle on "
        "its dataset (and of its comm models on --comm-data), and a "
        "predicted-vs-measured scatter plot.")
    parser.add_argument("--bundle", required=True)
    parser.add_argument("--pool", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--comm-data", default=None,
                        help="the comm dataset the bundle's comm models were "
                        "trained on: also report their MAPE")
    parser.add_argument("--plot", default=None,
                        help="write the scatter plot to this PNG file")
    parser.add_argument("--remeasure", type=int, default=0, metavar="N",
                        help="time the first N held-out sets again with "
                        "neuroshard-collect and report how far two timings "
                        "of one set differ (the noise floor of the MAPE)")
    parser.add_argument("--tool", default=None,
                        help="neuroshard-collect for --remeasure (default: "
                        "PATH, then build/bin/)")
    args = parser.parse_args(argv)
    if args.remeasure < 0:
        parser.error("--remeasure must not be negative")
    try:
        result = evaluate_bundle(args.bundle, args.pool, args.data,
                                 args.comm_data)
        if args.remeasure:
            remeasure(result, args.pool, args.data, args.remeasure,
                      args.tool)
    except (ReportError, tr.TrainError, collect.CollectError,
            tp.PoolError) as e:
        print("report: error: %s" % e, file=sys.stderr)
        return 1
    print(format_table(result))
    if args.plot:
        meta = result["meta"]
        scatter_plot(result, args.plot,
                     "%s: compute cost on %s, batch %d" %
                     (os.path.basename(os.path.normpath(args.bundle)),
                      meta["hardware"], meta["batch_size"]))
        print("wrote %s" % args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
