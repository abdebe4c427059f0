#===- cost_model.py - Neural cost models and their TorchScript bundle -----===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""The neural cost models of DESIGN §5 and the bundle the C++ planner loads.

A *bundle* is a directory holding
  compute.pt  ComputeCostModel: forward(features[M,20], shard_ids[M],
              num_shards) -> [num_shards], encode(features[M,20]) -> [M,H],
              head(summed[S,H]) -> [S]; costs in ms.
  comm_fw.pt  optional ForwardCommModel: forward(dimsums[S,N],
              stragglers[S,N]) -> [S,N] ms.
  comm_bw.pt  optional BackwardCommModel: forward(dimsums[S,N]) -> [S,N] ms.
  meta.json   what the models were measured on (see bundle_meta).
docs/neural-cost-model.md is the contract; the C++ loader is
lib/CostModel/Neural/NeuralCostModel.cpp.

Every model normalises its own inputs with buffers saved in the TorchScript
file, so a consumer feeds raw features (rows, not log rows) and gets ms back.
"""

import argparse
import json
import os
import sys
from typing import Dict, List, Optional, Sequence

import torch
from torch import nn

from neuroshard.table_rules import NUM_ACCESS_BINS
# The table features in the order the models read them (DESIGN §3).
FEATURE_ORDER = ["rows", "dim", "pooling_factor"] + [
    "bin_%d" % i for i in range(NUM_ACCESS_BINS)
]
NUM_FEATURES = len(FEATURE_ORDER)
# rows, dim and pooling span orders of magnitude; the bins are fractions.
LOG_SCALED_FEATURES = (0, 1, 2)
ENCODING_DIM = 32
BUNDLE_FORMAT = "neuroshard-cost-model-bundle"
BUNDLE_VERSION = 1


class Standardize(nn.Module):
    """(x' - mean) / std per column, where x' = log1p(x) for log columns.

    mean and std are buffers so that they travel inside the TorchScript file;
    fit() sets them from training inputs."""

    def __init__(self, num_columns: int, log_columns: Sequence[int] = ()):
        super().__init__()
        log_mask = torch.zeros(num_columns, dtype=torch.bool)
        log_mask[list(log_columns)] = True
        self.register_buffer("log_mask", log_mask)
        self.register_buffer("mean", torch.zeros(num_columns))
        self.register_buffer("std", torch.ones(num_columns))

    def scale(self, x: torch.Tensor) -> torch.Tensor:
        return torch.where(self.log_mask, torch.log1p(x.clamp(min=0.0)), x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (self.scale(x) - self.mean) / self.std

    def fit(self, x: torch.Tensor) -> None:
        scaled = self.scale(x)
        self.mean.copy_(scaled.mean(dim=0))
        # Constant columns (e.g. an always-empty bin) must not divide by 0.
        self.std.copy_(scaled.std(dim=0).clamp(min=1e-3))


class ComputeCostModel(nn.Module):
    """Cost (ms) of one device's fused embedding kernel for a set of shards.

    DeepSets: each shard's features go through a per-table MLP, encodings of
    the shards of a set are summed, a head MLP maps the sum to ms. The sum
    lets a consumer encode each shard once and re-run only the small head
    when a set changes, hence the exported encode/head methods."""

    def __init__(self, hidden: int = 128, encoding_dim: int = ENCODING_DIM,
                 head_hidden: int = 64):
        super().__init__()
        self.normalize = Standardize(NUM_FEATURES, LOG_SCALED_FEATURES)
        self.table_mlp = nn.Sequential(
            nn.Linear(NUM_FEATURES, hidden), nn.ReLU(),
            nn.Linear(hidden, encoding_dim), nn.ReLU())
        self.head_mlp = nn.Sequential(
            nn.Linear(encoding_dim, head_hidden), nn.ReLU(),
            nn.Linear(head_hidden, 1))
        # Lets a trainer fit targets of order 1 while the module returns ms.
        self.register_buffer("output_scale", torch.tensor(1.0))

    @torch.jit.export
    def encode(self, features: torch.Tensor) -> torch.Tensor:
        return self.table_mlp(self.normalize(features))

    @torch.jit.export
    def head(self, summed: torch.Tensor) -> torch.Tensor:
        return self.head_mlp(summed).squeeze(1) * self.output_scale

    def forward(self, features: torch.Tensor, shard_ids: torch.Tensor,
                num_shards: int) -> torch.Tensor:
        encodings = self.encode(features)
        summed = torch.zeros(num_shards, encodings.shape[1],
                             dtype=encodings.dtype, device=encodings.device)
        summed.index_add_(0, shard_ids, encodings)
        return self.head(summed)


def _comm_mlp(inputs: int, outputs: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(),
                         nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, outputs))


class ForwardCommModel(nn.Module):
    """Forward all-to-all cost (ms) of each of N devices from the devices'
    dim sums and straggler times (waiting included)."""

    def __init__(self, num_devices: int, hidden: int = 64):
        super().__init__()
        self.normalize = Standardize(2 * num_devices)
        self.mlp = _comm_mlp(2 * num_devices, num_devices, hidden)
        self.register_buffer("output_scale", torch.tensor(1.0))

    def forward(self, dimsums: torch.Tensor,
                stragglers: torch.Tensor) -> torch.Tensor:
        inputs = torch.cat([dimsums, stragglers], dim=1)
        return self.mlp(self.normalize(inputs)) * self.output_scale


class BackwardCommModel(nn.Module):
    """Backward all-to-all cost (ms) of each of N devices from their dim
    sums."""

    def __init__(self, num_devices: int, hidden: int = 64):
        super().__init__()
        self.normalize = Standardize(num_devices)
        self.mlp = _comm_mlp(num_devices, num_devices, hidden)
        self.register_buffer("output_scale", torch.tensor(1.0))

    def forward(self, dimsums: torch.Tensor) -> torch.Tensor:
        return self.mlp(self.normalize(dimsums)) * self.output_scale


def table_features(rows: float, dim: float, pooling_factor: float,
                   access_hist: Sequence[float]) -> List[float]:
    """The 20 features of one shard, in FEATURE_ORDER. `dim` is the shard's
    width (a column slice is priced as a table of that width)."""
    if len(access_hist) != NUM_ACCESS_BINS:
        raise ValueError("access histogram has %d bins, expected %d" %
                         (len(access_hist), NUM_ACCESS_BINS))
    return [float(rows), float(dim), float(pooling_factor)] + [
        float(b) for b in access_hist
    ]


def bundle_meta(*, trained: bool, hardware: str, batch_size: int,
                dtype: str = "f32", devices: Optional[int] = None,
                dataset_size: Optional[Dict[str, int]] = None,
                held_out: Optional[Dict[str, float]] = None,
                seed: Optional[int] = None) -> dict:
    """meta.json of a bundle. dataset_size counts the samples per model
    ({"compute": ..., "comm": ...}) and held_out holds the validation
    errors (compute_mape, compute_kendall_tau, ...); both are None for an
    untrained bundle. devices is None when the bundle has no comm models;
    "comm" then says that the planner prices communication analytically."""
    return {
        "format": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
        "trained": trained,
        "hardware": hardware,
        "batch_size": batch_size,
        "dtype": dtype,
        "feature_order": list(FEATURE_ORDER),
        "encoding_dim": ENCODING_DIM,
        "devices": devices,
        "comm": "neural" if devices is not None else "analytical",
        "dataset_size": dataset_size,
        "held_out": held_out,
        "seed": seed,
    }


def export_bundle(out_dir: str, compute: ComputeCostModel, meta: dict,
                  comm_fw: Optional[ForwardCommModel] = None,
                  comm_bw: Optional[BackwardCommModel] = None) -> None:
    """Scripts the models and writes them with meta.json into out_dir."""
    if (comm_fw is None) != (comm_bw is None):
        raise ValueError("comm models come in pairs: give both comm_fw and "
                         "comm_bw, or neither")
    if (comm_fw is not None) != (meta.get("devices") is not None):
        raise ValueError("meta['devices'] must be set exactly when the bundle "
                         "has comm models")
    os.makedirs(out_dir, exist_ok=True)
    models = {"compute.pt": compute, "comm_fw.pt": comm_fw,
              "comm_bw.pt": comm_bw}
    for file_name, model in models.items():
        if model is not None:
            torch.jit.script(model.eval()).save(
                os.path.join(out_dir, file_name))
    with open(os.path.join(out_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")


def _plausible_features(generator: torch.Generator, count: int) -> torch.Tensor:
    """Random features in the ranges of DESIGN §6 (rows 1e2..1e7, dims 4..128,
    heavy-tailed pooling, random histograms), to give an untrained bundle's
    normalisation realistic statistics."""
    uniform = lambda: torch.rand(count, generator=generator)
    rows = torch.pow(10.0, 2.0 + 5.0 * uniform()).round()
    dims = torch.pow(2.0, torch.randint(2, 8, (count,), generator=generator))
    pooling = torch.exp(torch.randn(count, generator=generator) + 2.0)
    hist = -torch.log(torch.rand(count, NUM_ACCESS_BINS, generator=generator))
    hist = hist / hist.sum(dim=1, keepdim=True)
    return torch.cat([rows[:, None], dims[:, None].float(), pooling[:, None],
                      hist], dim=1)


def export_untrained(out_dir: str, seed: int, devices: Optional[int],
                     batch_size: int) -> dict:
    """Writes a bundle with random weights (meta says trained = false)."""
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    compute = ComputeCostModel()
    compute.normalize.fit(_plausible_features(generator, 256))
    comm_fw = comm_bw = None
    if devices is not None:
        comm_fw = ForwardCommModel(devices)
        comm_bw = BackwardCommModel(devices)
    meta = bundle_meta(trained=False,
                       hardware="none (untrained: random weights)",
                       batch_size=batch_size, devices=devices, seed=seed)
    export_bundle(out_dir, compute, meta, comm_fw, comm_bw)
    return meta


def predict_query(bundle_dir: str, query: dict) -> dict:
    """Evaluates the bundle's TorchScript files on a query, through the plain
    forward methods (not encode/head), as a reference for other consumers.

    query: {"tables": [{"rows", "dim", "pooling_factor", "access_hist"}],
            "sets": [[[table, width], ...], ...],
            "dimsums": [[N floats], ...], "stragglers": [[N floats], ...]}
    returns {"compute": [ms per set], "comm_bw": [[N ms], ...] or None,
             "comm_fw": [[N ms], ...] or None}."""
    compute = torch.jit.load(os.path.join(bundle_dir, "compute.pt"))
    tables = query["tables"]
    features, shard_ids = [], []
    for set_id, shard_set in enumerate(query["sets"]):
        for table, width in shard_set:
            t = tables[table]
            features.append(table_features(t["rows"], width,
                                           t["pooling_factor"],
                                           t["access_hist"]))
            shard_ids.append(set_id)
    result = {"comm_bw": None, "comm_fw": None}
    with torch.no_grad():
        result["compute"] = compute(
            torch.tensor(features, dtype=torch.float32).reshape(
                -1, NUM_FEATURES),
            torch.tensor(shard_ids, dtype=torch.long),
            len(query["sets"])).tolist()
        fw_path = os.path.join(bundle_dir, "comm_fw.pt")
        if os.path.exists(fw_path) and query.get("dimsums"):
            dimsums = torch.tensor(query["dimsums"], dtype=torch.float32)
            stragglers = torch.tensor(query["stragglers"],
                                      dtype=torch.float32)
            comm_bw = torch.jit.load(os.path.join(bundle_dir, "comm_bw.pt"))
            comm_fw = torch.jit.load(fw_path)
            result["comm_bw"] = comm_bw(dimsums).tolist()
            result["comm_fw"] = comm_fw(dimsums, stragglers).tolist()
    return result


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m neuroshard.cost_model",
        description="NeuroShard neural cost-model bundles "
        "(docs/neural-cost-model.md).")
    commands = parser.add_subparsers(dest="command", required=True)

    untrained = commands.add_parser(
        "export-untrained",
        help="write a bundle with RANDOM weights (meta.json: trained=false)",
        description="Writes a cost-model bundle whose models have random "
        "weights: a test fixture for the C++ loader and a template of what "
        "the trainer (a later issue) exports. Its predictions mean nothing; "
        "never plan with it.")
    untrained.add_argument("--out", required=True, help="bundle directory")
    untrained.add_argument("--seed", type=int, default=0)
    untrained.add_argument(
        "--devices", type=int, default=None,
        help="also write comm models for this many devices "
        "(default: none; the planner then uses analytical comm)")
    untrained.add_argument("--batch-size", type=int, default=65536)

    predict = commands.add_parser(
        "predict",
        help="evaluate a bundle on a JSON query (a reference for the C++ "
        "loader's tests)")
    predict.add_argument("--bundle", required=True)
    predict.add_argument("--query", required=True, help="query JSON file")
    predict.add_argument("--out", required=True, help="result JSON file")

    args = parser.parse_args(argv)
    if args.command == "export-untrained":
        if args.devices is not None and args.devices < 1:
            parser.error("--devices must be at least 1")
        export_untrained(args.out, args.seed, args.devices, args.batch_size)
        return 0
    with open(args.query) as f:
        query = json.load(f)
    with open(args.out, "w") as f:
        json.dump(predict_query(args.bundle, query), f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
