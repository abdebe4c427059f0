#!/usr/bin/env python3
"""From a PyTorch DLRM-like model to a sharded, checked NeuroShard module.

Builds a DLRM-style model whose sparse features are dozens of
nn.EmbeddingBag modules (held in an nn.ModuleList and an nn.ModuleDict) of
varied rows, dims, pooling modes, bag lengths and index skews, draws sample
batches, runs the model on them, and then the whole NeuroShard flow:

  neuroshard.frontend   model + samples -> NeuroShard MLIR (OUT/model.mlir)
  neuroshard-opt        --neuroshard-shard, printing the plan table
                        (OUT/model.sharded.mlir)
  neuroshard-run        runs both modules forward + backward (SGD) on the
                        same inputs and checks they agree

Exits non-zero if any step fails.

    PYTHONPATH=python:build/lib/python3/dist-packages /usr/bin/python3 \
        examples/pytorch_dlrm.py --tools-dir build/bin --out /tmp/pytorch-dlrm
"""

import argparse
import math
import os
import shlex
import subprocess
import sys

import numpy as np
import torch
from torch import nn

from neuroshard import _core
from neuroshard import frontend

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class DLRM(nn.Module):
    """Bottom MLP over dense features, embedding bags over sparse features,
    pairwise dot-product interaction, top MLP (Naumov et al., 2019). User
    features sit in a ModuleList, item features in a ModuleDict."""

    def __init__(self, user_tables, item_tables, dense_features=13,
                 width=16):
        super().__init__()
        self.width = width
        self.bottom = nn.Sequential(nn.Linear(dense_features, 64), nn.ReLU(),
                                    nn.Linear(64, width), nn.ReLU())
        self.user = nn.ModuleList(
            nn.EmbeddingBag(rows, dim, mode=mode)
            for rows, dim, mode in user_tables)
        self.item = nn.ModuleDict({
            name: nn.EmbeddingBag(rows, dim, mode=mode)
            for name, (rows, dim, mode) in item_tables.items()})
        bags = list(self.user) + list(self.item.values())
        # Every embedding is projected to the interaction width.
        self.project = nn.ModuleList(
            nn.Linear(bag.embedding_dim, width, bias=False) for bag in bags)
        features = 1 + len(bags)
        self.top = nn.Sequential(
            nn.Linear(width + features * (features - 1) // 2, 64), nn.ReLU(),
            nn.Linear(64, 1))

    def forward(self, dense, sparse):
        """`sparse` maps each bag's module path to (indices, offsets)."""
        bags = [("user.%d" % i, bag) for i, bag in enumerate(self.user)] + \
            [("item." + name, bag) for name, bag in self.item.items()]
        vectors = [self.bottom(dense)]
        for (path, bag), project in zip(bags, self.project):
            vectors.append(project(bag(*sparse[path])))
        stacked = torch.stack(vectors, dim=1)
        dots = torch.bmm(stacked, stacked.transpose(1, 2))
        upper = torch.triu_indices(len(vectors), len(vectors), offset=1)
        pairs = dots[:, upper[0], upper[1]]
        return self.top(torch.cat([vectors[0], pairs], dim=1))


def table_shapes(rng, count):
    """(rows, dim, mode, pooling, skew) per table, DLRM-like but small
    enough to run in seconds: rows log-uniform over 1e2..2e5."""
    dims = [4, 8, 16, 32, 64, 128]
    weights = [1, 2, 4, 6, 5, 2]
    shapes = []
    for _ in range(count):
        rows = int(10 ** rng.uniform(2.0, math.log10(2e5)))
        dim = int(rng.choice(dims, p=np.array(weights) / sum(weights)))
        mode = "mean" if rng.uniform() < 0.25 else "sum"
        pooling = 1.0 if rng.uniform() < 0.15 else \
            float(min(rng.lognormal(math.log(10.0), 0.9), 120.0))
        skew = float(rng.uniform(0.9, 2.0))
        shapes.append((rows, dim, mode, pooling, skew))
    return shapes


def sample_batch(rows, pooling, skew, batch, seed):
    """(indices, offsets) of one batch: Poisson bag lengths with mean
    `pooling` and Zipf-like indices (the table pool's zipf_index_stream)."""
    rng = np.random.default_rng(seed)
    lengths = rng.poisson(pooling, size=batch)
    indices = _core.zipf_index_stream(rows, skew, int(lengths.sum()), seed)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    return (torch.from_numpy(indices.astype(np.int64)),
            torch.from_numpy(offsets.astype(np.int64)))


def run(command, what):
    print("$ " + shlex.join(command), flush=True)
    result = subprocess.run(command, capture_output=True, text=True)
    sys.stdout.write(result.stdout)
    if result.returncode != 0:
        sys.stderr.write(result.stderr)
        raise SystemExit("pytorch_dlrm: %s failed (exit %d)" %
                         (what, result.returncode))
    return result.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools-dir", default=os.environ.get(
        "NEUROSHARD_TOOLS_DIR", os.path.join(REPO, "build", "bin")),
        help="directory of neuroshard-opt and neuroshard-run")
    parser.add_argument("--out", required=True,
                        help="directory for model.mlir and "
                        "model.sharded.mlir")
    parser.add_argument("--tables", type=int, default=40)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--sample-batches", type=int, default=2)
    parser.add_argument("--devices", type=int, default=4)
    parser.add_argument("--memory-gb", type=float, default=0.25)
    parser.add_argument("--cost-model", default="default",
                        help="neuroshard-opt's cost-model option")
    parser.add_argument("--max-rows", type=int, default=20000,
                        help="rows per table neuroshard-run allocates")
    parser.add_argument("--seed", type=int, default=2023)
    args = parser.parse_args()
    if args.tables < 2:
        parser.error("--tables must be at least 2, got %d" % args.tables)

    tools = {}
    for tool in ("neuroshard-opt", "neuroshard-run"):
        tools[tool] = os.path.join(args.tools_dir, tool)
        if not os.access(tools[tool], os.X_OK):
            parser.error("%s not found in --tools-dir %s" %
                         (tool, args.tools_dir))
    os.makedirs(args.out, exist_ok=True)

    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    shapes = table_shapes(rng, args.tables)
    users = shapes[:args.tables // 2]
    items = {"i%d_%s" % (k, ("ad", "page", "shop", "geo")[k % 4]): s
             for k, s in enumerate(shapes[args.tables // 2:])}
    model = DLRM([s[:3] for s in users],
                 {name: s[:3] for name, s in items.items()})
    paths = ["user.%d" % i for i in range(len(users))] + \
        ["item." + name for name in items]
    stats = users + list(items.values())

    samples = {path: [] for path in paths}
    for b in range(args.sample_batches):
        sparse = {}
        for k, (path, (rows, _, _, pooling, skew)) in enumerate(
                zip(paths, stats)):
            sparse[path] = sample_batch(rows, pooling, skew, args.batch,
                                        args.seed * 1000003 + b * 1009 + k)
            samples[path].append(sparse[path])
        with torch.no_grad():
            scores = model(torch.randn(args.batch, 13), sparse)
        print("model forward on sample batch %d: %s scores" %
              (b, "x".join(str(d) for d in scores.shape)))

    text = frontend.model_to_mlir(model, samples, devices=args.devices,
                                  memory_gb=args.memory_gb)
    original = os.path.join(args.out, "model.mlir")
    sharded = os.path.join(args.out, "model.sharded.mlir")
    with open(original, "w") as f:
        f.write(text)
    print("wrote %s: %d tables, batch %d" % (original, len(paths),
                                              args.batch))

    run([tools["neuroshard-opt"], original,
         "--neuroshard-shard=plan-table=- cost-model=%s" % args.cost_model,
         "-o", sharded], "sharding")
    report = run([tools["neuroshard-run"], original, "--compare", sharded,
                  "--backward", "--lr", "0.05", "--max-rows",
                  str(args.max_rows), "--seed", "3"], "the comparison run")
    if ": match" not in report:
        raise SystemExit("pytorch_dlrm: the sharded module does not match "
                         "the original")
    print("pytorch_dlrm: the sharded module matches the original")
    return 0


if __name__ == "__main__":
    sys.exit(main())
