#===- cost_model.py - Neural cost models and their TorchScript bundle -----===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""The neural cost models of docs/design.md §5 and the bundle the C++
planner loads.

A *bundle* is a directory holding
  compute.pt  ComputeCostModel: forward(features[M,20], shard_ids[M],
              num_shards) -> [num_shards], encode(features[M,20]) -> [M,H],
              head(summed[S,H]) -> [S], spread(summed[S,H]) -> [S] (the
              ensemble's standard deviation); costs in ms.
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
import math
import os
import sys
from typing import Dict, List, Optional, Sequence, Tuple

import torch
from torch import nn

from neuroshard import _core
from neuroshard import bundle_meta as bm

NUM_ACCESS_BINS = _core.NUM_ACCESS_BINS
# The table features in the order the models read them (docs/design.md §3).
FEATURE_ORDER = ["rows", "dim", "pooling_factor"] + [
    "bin_%d" % i for i in range(NUM_ACCESS_BINS)
]
NUM_FEATURES = len(FEATURE_ORDER)
# rows, dim and pooling span orders of magnitude; the bins are fractions.
LOG_SCALED_FEATURES = (0, 1, 2)
ENCODING_DIM = 32
BUNDLE_FORMAT = "neuroshard-cost-model-bundle"
BUNDLE_VERSION = 1


class BundleError(Exception):
    """A bundle that cannot be loaded; the message names the file."""


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


# The per-shard terms of the physics prior (PhysicsPrior.terms), each
# priced by one fitted non-negative coefficient in ms per unit:
#   gathered_bytes  lookups x the cache lines of one row (every lookup reads
#                   its row, from wherever it is cached);
#   distinct_bytes  distinct rows x the cache lines of one row (the first
#                   touch of each row);
#   l2_miss_bytes   distinct_bytes x the share of the table that does not
#                   fit in L2;
#   l3_miss_bytes   distinct_bytes x the share that does not fit in L3 (the
#                   first touches that go to DRAM);
#   l3_miss_rows    distinct rows x that share: a DRAM access costs latency
#                   (and, in a big table, a page walk) per row, which a
#                   narrow row does not amortise;
#   output_bytes    the pooled outputs written (bags x width x 4);
#   lookups         indices read and rows accumulated;
#   shards          one per shard (per-table work of the fused kernel);
#   hottest_row_hits  the hits of the table's hottest row (hottest_hits()):
#                   the backward's updates of one row form one chain, since
#                   a GPU serialises atomics to one address; at large
#                   batches a skewed table's chain outlasts its bandwidth
#                   cost (on an H200, 1.8 ns per hit).
PRIOR_TERMS = ("gathered_bytes", "distinct_bytes", "l2_miss_bytes",
               "l3_miss_bytes", "l3_miss_rows", "output_bytes", "lookups",
               "shards", "hottest_row_hits")
NUM_PRIOR_TERMS = len(PRIOR_TERMS)
CACHE_LINE_BYTES = 64
# What a bundle assumes when the measuring machine's caches are unknown.
DEFAULT_CACHE_BYTES = (1 << 20, 32 << 20)
# The correction the network may apply to the prior: a factor in
# [1 / bound, bound].
DEFAULT_CORRECTION_BOUND = 2.0
# Members of the ensemble that estimates a prediction's uncertainty.
DEFAULT_ENSEMBLE = 4


def representative_hits() -> List[float]:
    """The hit count that stands for each access-histogram bin when
    distinct rows are counted: 1 for bin 0, the middle of (2^(j-1), 2^j]
    for bins 1..15, and 1.5 x 2^15 for the open last bin."""
    hits = [1.0] + [0.75 * 2.0**j for j in range(1, NUM_ACCESS_BINS - 1)]
    return hits + [1.5 * 2.0**(NUM_ACCESS_BINS - 2)]


def nominal_coefficients() -> Tuple[List[float], float]:
    """Prior coefficients (ms per unit of each PRIOR_TERMS term, and ms per
    set) of a nominal CPU, not of a measured one: 20 GB/s for cached row
    reads and outputs, 10 GB/s for first touches past L2, 5 GB/s past L3,
    100 ns per row from DRAM, 2 ns per lookup, 5 us per shard and 1 ns per
    hit of the hottest row. The
    start of train.fit_prior and the prior of an untrained bundle."""
    ms_per_byte = lambda gb_per_s: 1e3 / (gb_per_s * 2.0**30)
    return ([ms_per_byte(20.0), ms_per_byte(20.0), ms_per_byte(10.0),
             ms_per_byte(5.0), 1e-4, ms_per_byte(20.0), 2e-6, 5e-3, 1e-6],
            2e-3)


class PhysicsPrior(nn.Module):
    """The analytical part of the compute model: a bandwidth (roofline)
    model of one fused lookup, linear in per-shard terms (PRIOR_TERMS) with
    coefficients fitted to the measured machine (train.fit_prior), plus a
    per-set constant. It holds wherever its terms do, so the network only
    corrects it.

    It also knows the ranges of rows, dim and pooling factor the network
    was trained on: a shard's distance outside them (in natural-log units,
    summed over the three) decides how much of its cost the network may
    correct (untrusted_share)."""

    def __init__(self, batch_size: int,
                 cache_bytes: Sequence[float] = DEFAULT_CACHE_BYTES,
                 line_bytes: int = CACHE_LINE_BYTES):
        super().__init__()
        self.register_buffer("batch_size", torch.tensor(float(batch_size)))
        self.register_buffer("bin_hits", torch.tensor(representative_hits()))
        self.line_bytes = float(line_bytes)
        self.register_buffer("cache_bytes",
                             torch.tensor([float(c) for c in cache_bytes]))
        coef, intercept = nominal_coefficients()
        self.register_buffer("coef", torch.tensor(coef))
        self.register_buffer("intercept", torch.tensor(intercept))
        # log of the trained [low, high] of rows, dim and pooling factor;
        # +-inf (no range known) trusts the network everywhere.
        self.register_buffer("log_low", torch.full((3,), -math.inf))
        self.register_buffer("log_high", torch.full((3,), math.inf))

    def terms(self, features: torch.Tensor) -> torch.Tensor:
        """[M, NUM_PRIOR_TERMS] unpriced terms of M shards."""
        rows = features[:, 0].clamp(min=1.0)
        dim = features[:, 1].clamp(min=1.0)
        pooling = features[:, 2].clamp(min=0.0)
        hist = features[:, 3:]
        lookups = self.batch_size * pooling
        line_bytes = torch.ceil(dim * 4.0 / self.line_bytes) * \
            self.line_bytes
        mean_hits = (hist * self.bin_hits).sum(dim=1).clamp(min=1.0)
        distinct = torch.minimum(torch.minimum(rows, lookups),
                                 lookups / mean_hits)
        distinct_bytes = distinct * line_bytes
        table_bytes = rows * dim * 4.0
        l2_share = (1.0 - self.cache_bytes[0] / table_bytes).clamp(min=0.0)
        l3_share = (1.0 - self.cache_bytes[1] / table_bytes).clamp(min=0.0)
        return torch.stack([
            lookups * line_bytes, distinct_bytes, distinct_bytes * l2_share,
            distinct_bytes * l3_share, distinct * l3_share,
            self.batch_size * dim * 4.0, lookups,
            torch.ones_like(rows),
            self.hottest_hits(hist, distinct, lookups)
        ], dim=1)

    def hottest_hits(self, hist: torch.Tensor, distinct: torch.Tensor,
                     lookups: torch.Tensor) -> torch.Tensor:
        """[M] the hits of each table's hottest row: the upper edge 2^j of
        the highest non-empty histogram bin j, or for the open last bin
        (more than 2^15 hits) the lookups the other bins leave, shared by
        that bin's rows (at least one row, at least 2^15 hits)."""
        bins = hist.shape[1]
        index = torch.arange(bins, dtype=hist.dtype)
        top = torch.where(hist > 0, index, torch.zeros_like(hist)).amax(dim=1)
        edge = torch.pow(2.0, top)
        rows_per_bin = hist * distinct.unsqueeze(1)
        below = (rows_per_bin[:, :bins - 1] *
                 self.bin_hits[:bins - 1]).sum(dim=1)
        last = rows_per_bin[:, bins - 1].clamp(min=1.0)
        open_bin = ((lookups - below) / last).clamp(
            min=float(2 ** (bins - 2)))
        return torch.where(top == bins - 1, open_bin, edge)

    def shard_ms(self, features: torch.Tensor) -> torch.Tensor:
        """[M, NUM_PRIOR_TERMS]: each term priced in ms."""
        return self.terms(features) * self.coef

    def untrusted_share(self, features: torch.Tensor) -> torch.Tensor:
        """[M] in [0, 1): 0 inside the trained ranges, 1 - exp(-d / ln 2)
        at a distance d outside (a factor of 2 past a range's end gives
        0.63, a factor of 10 gives 0.96)."""
        logs = torch.log(features[:, 0:3].clamp(min=1e-6))
        below = (self.log_low - logs).clamp(min=0.0)
        above = (logs - self.log_high).clamp(min=0.0)
        distance = (below + above).sum(dim=1)
        return 1.0 - torch.exp(-distance / 0.6931471805599453)

    def set_ranges(self, features: torch.Tensor) -> None:
        """Takes the trained ranges from the training tables' features."""
        logs = torch.log(features[:, 0:3].clamp(min=1e-6))
        self.log_low.copy_(logs.min(dim=0).values)
        self.log_high.copy_(logs.max(dim=0).values)


class ComputeCostModel(nn.Module):
    """Cost (ms) of one device's fused embedding kernel for a set of shards:
    the physics prior times a bounded correction, the mean over an ensemble
    of `members` corrections.

    A shard's encoding (encode) is [its prior terms in ms (NUM_PRIOR_TERMS),
    the part of its prior it is untrusted for, then `members` learned
    encodings of `encoding_dim` values]. Encodings of a set's shards are
    summed (DeepSets), which lets a consumer encode each shard once and
    re-run only the small heads when a set changes. For a summed encoding,
    member m predicts

        prior x exp(trust x b x tanh(g_m / b)),  b = ln(correction_bound),

    where prior is the priced terms plus the per-set constant, trust = 1 -
    untrusted / prior and g_m the member's head network on its summed
    encoding. Far outside the trained ranges trust goes to 0 and the
    prediction to the prior; inside, the network moves it by at most a
    factor of correction_bound. head() is the members' mean, spread() their
    standard deviation (0 for one member)."""

    def __init__(self, batch_size: int = 1024, hidden: int = 128,
                 encoding_dim: int = ENCODING_DIM, head_hidden: int = 64,
                 members: int = 1,
                 correction_bound: float = DEFAULT_CORRECTION_BOUND,
                 cache_bytes: Sequence[float] = DEFAULT_CACHE_BYTES,
                 line_bytes: int = CACHE_LINE_BYTES):
        super().__init__()
        if members < 1:
            raise ValueError("an ensemble needs at least one member, got %d"
                             % members)
        if not correction_bound > 1.0:
            raise ValueError("correction_bound must be above 1, got %g" %
                             correction_bound)
        self.prior = PhysicsPrior(batch_size, cache_bytes, line_bytes)
        self.normalize = Standardize(NUM_FEATURES, LOG_SCALED_FEATURES)
        self.table_mlps = nn.ModuleList([
            nn.Sequential(nn.Linear(NUM_FEATURES, hidden), nn.ReLU(),
                          nn.Linear(hidden, encoding_dim), nn.ReLU())
            for _ in range(members)])
        self.head_mlps = nn.ModuleList([
            nn.Sequential(nn.Linear(encoding_dim, head_hidden), nn.ReLU(),
                          nn.Linear(head_hidden, 1))
            for _ in range(members)])
        self.members = members
        self.member_dim = encoding_dim
        self.num_terms = NUM_PRIOR_TERMS
        self.register_buffer("log_bound",
                             torch.tensor(math.log(correction_bound)))

    def describe(self) -> Dict:
        """meta.json's "compute_model": the form of the model, the priced
        prior terms and what the network may do to them."""
        prior = self.prior
        return {
            "form": "physics prior x bounded correction",
            "correction_bound": round(math.exp(float(self.log_bound)), 6),
            "ensemble": self.members,
            "cache_bytes": [int(c) for c in prior.cache_bytes.tolist()],
            "line_bytes": int(prior.line_bytes),
            "prior_ms_per_unit": dict(zip(PRIOR_TERMS,
                                          prior.coef.tolist())),
            "prior_set_ms": float(prior.intercept),
        }

    def encoding_width(self) -> int:
        """Values per encoding (meta.json's "encoding_dim")."""
        return NUM_PRIOR_TERMS + 1 + self.members * self.member_dim

    @torch.jit.export
    def encode(self, features: torch.Tensor) -> torch.Tensor:
        priced = self.prior.shard_ms(features)
        untrusted = priced.sum(dim=1) * self.prior.untrusted_share(features)
        parts = [priced, untrusted.unsqueeze(1)]
        normalized = self.normalize(features)
        for mlp in self.table_mlps:
            parts.append(mlp(normalized))
        return torch.cat(parts, dim=1)

    @torch.jit.export
    def member_costs(self, summed: torch.Tensor) -> torch.Tensor:
        """[S, members] each member's cost of S summed encodings."""
        physics = self.num_terms + 1
        prior = (summed[:, :self.num_terms].sum(dim=1) +
                 self.prior.intercept).clamp(min=1e-9)
        trust = (1.0 - summed[:, self.num_terms] / prior).clamp(0.0, 1.0)
        corrections = []
        for m, mlp in enumerate(self.head_mlps):
            begin = physics + m * self.member_dim
            g = mlp(summed[:, begin:begin + self.member_dim]).squeeze(1)
            corrections.append(self.log_bound *
                               torch.tanh(g / self.log_bound))
        correction = torch.stack(corrections, dim=1)
        return prior.unsqueeze(1) * torch.exp(trust.unsqueeze(1) *
                                              correction)

    @torch.jit.export
    def head(self, summed: torch.Tensor) -> torch.Tensor:
        return self.member_costs(summed).mean(dim=1)

    @torch.jit.export
    def spread(self, summed: torch.Tensor) -> torch.Tensor:
        costs = self.member_costs(summed)
        mean = costs.mean(dim=1, keepdim=True)
        return ((costs - mean)**2).mean(dim=1).sqrt()

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
                seed: Optional[int] = None,
                compute: Optional["ComputeCostModel"] = None) -> dict:
    """meta.json of a bundle; `compute` is the bundle's compute model, whose
    encoding width and form ("compute_model") it records. dataset_size counts the samples per model
    ({"compute": ..., "comm": ...}) and held_out holds the validation
    errors (compute_mape, compute_kendall_tau, ...); both are None for an
    untrained bundle. devices is None when the bundle has no comm models;
    "comm" then says that the planner prices communication analytically.
    "nodes" is the node count the comm models were measured on (one
    machine); the planner refuses them for a cluster of another shape."""
    return {
        "format": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
        "trained": trained,
        "hardware": hardware,
        "batch_size": batch_size,
        "dtype": dtype,
        "feature_order": list(FEATURE_ORDER),
        "encoding_dim": (compute.encoding_width() if compute is not None
                         else ENCODING_DIM),
        "devices": devices,
        # The comm samples are measured over MPI on one machine.
        "nodes": 1 if devices is not None else None,
        "comm": "neural" if devices is not None else "analytical",
        "dataset_size": dataset_size,
        "held_out": held_out,
        "seed": seed,
        "compute_model": (compute.describe() if compute is not None
                          else None),
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
    bm.write(out_dir, meta)


def load_compute_model(bundle_dir: str) -> ComputeCostModel:
    """The bundle's compute.pt as a trainable ComputeCostModel: the module
    is rebuilt with the sizes its weights have (ensemble members, hidden
    widths), the batch size, caches and correction bound its buffers hold,
    and its state loaded; the rebuilt model is checked to predict what the
    TorchScript file predicts. A compute model of another form (a bundle
    written before the physics prior, or one whose prior prices other
    terms) is refused by name."""
    path = os.path.join(bundle_dir, "compute.pt")
    try:
        scripted = torch.jit.load(path)
    except (RuntimeError, ValueError) as e:
        raise BundleError("cannot load '%s': %s" %
                          (path, str(e).splitlines()[0] if str(e) else
                           type(e).__name__))
    state = scripted.state_dict()
    needed = ("prior.coef", "prior.cache_bytes", "prior.batch_size",
              "log_bound", "table_mlps.0.0.weight", "table_mlps.0.2.weight",
              "head_mlps.0.0.weight")
    missing = [k for k in needed if k not in state]
    if missing:
        raise BundleError(
            "'%s' is not a physics prior x bounded correction compute model "
            "(it has no %s): only a bundle trained by this version of "
            "neuroshard.train can be trained further" %
            (path, ", ".join(missing)))
    terms = state["prior.coef"].numel()
    if terms != NUM_PRIOR_TERMS:
        raise BundleError(
            "'%s' prices %d physics-prior terms, this version of the model "
            "%d (%s): train the bundle again" %
            (path, terms, NUM_PRIOR_TERMS, ", ".join(PRIOR_TERMS)))
    members = 0
    while "table_mlps.%d.0.weight" % members in state:
        members += 1
    try:
        line_bytes = int(scripted.prior.line_bytes)
    except (AttributeError, RuntimeError):
        line_bytes = CACHE_LINE_BYTES
    model = ComputeCostModel(
        batch_size=int(round(float(state["prior.batch_size"]))),
        hidden=state["table_mlps.0.0.weight"].shape[0],
        encoding_dim=state["table_mlps.0.2.weight"].shape[0],
        head_hidden=state["head_mlps.0.0.weight"].shape[0],
        members=members,
        correction_bound=math.exp(float(state["log_bound"])),
        cache_bytes=state["prior.cache_bytes"].tolist(),
        line_bytes=line_bytes)
    try:
        model.load_state_dict(state)
    except RuntimeError as e:
        raise BundleError("'%s' does not load into a ComputeCostModel: %s" %
                          (path, str(e).splitlines()[0]))
    model.eval()
    probe = _plausible_features(torch.Generator().manual_seed(0), 12)
    shard_ids = torch.arange(12) % 4
    with torch.no_grad():
        rebuilt = model(probe, shard_ids, 4)
        original = scripted(probe, shard_ids, 4)
    if not torch.allclose(rebuilt, original, rtol=1e-4, atol=1e-9):
        raise BundleError(
            "'%s' predicts %s for a probe, but the ComputeCostModel rebuilt "
            "from its weights %s: the file's code differs from this "
            "version's; train the bundle again" %
            (path, [round(v, 6) for v in original.tolist()],
             [round(v, 6) for v in rebuilt.tolist()]))
    return model


def _plausible_features(generator: torch.Generator, count: int) -> torch.Tensor:
    """Random features in the ranges of docs/design.md §6 (rows 1e2..1e7,
    dims 4..128, heavy-tailed pooling, random histograms), to give an
    untrained bundle's normalisation realistic statistics."""
    uniform = lambda: torch.rand(count, generator=generator)
    rows = torch.pow(10.0, 2.0 + 5.0 * uniform()).round()
    dims = torch.pow(2.0, torch.randint(2, 8, (count,), generator=generator))
    pooling = torch.exp(torch.randn(count, generator=generator) + 2.0)
    hist = -torch.log(torch.rand(count, NUM_ACCESS_BINS, generator=generator))
    hist = hist / hist.sum(dim=1, keepdim=True)
    return torch.cat([rows[:, None], dims[:, None].float(), pooling[:, None],
                      hist], dim=1)


def export_untrained(out_dir: str, seed: int, devices: Optional[int],
                     batch_size: int, members: int = 1) -> dict:
    """Writes a bundle with random weights (meta says trained = false); its
    compute model corrects the nominal CPU's prior with an ensemble of
    `members` random networks."""
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    compute = ComputeCostModel(batch_size=batch_size, members=members)
    compute.normalize.fit(_plausible_features(generator, 256))
    comm_fw = comm_bw = None
    if devices is not None:
        comm_fw = ForwardCommModel(devices)
        comm_bw = BackwardCommModel(devices)
    meta = bundle_meta(trained=False,
                       hardware="none (untrained: random weights)",
                       batch_size=batch_size, devices=devices, seed=seed,
                       compute=compute)
    export_bundle(out_dir, compute, meta, comm_fw, comm_bw)
    return meta


def predict_query(bundle_dir: str, query: dict) -> dict:
    """Evaluates the bundle's TorchScript files on a query, through the plain
    forward methods (not encode/head), as a reference for other consumers.

    query: {"tables": [{"rows", "dim", "pooling_factor", "access_hist"}],
            "sets": [[[table, width], ...], ...],
            "dimsums": [[N floats], ...], "stragglers": [[N floats], ...]}
    returns {"compute": [ms per set], "spread": [ms per set] or None (a
             compute model without an ensemble), "comm_bw": [[N ms], ...]
             or None, "comm_fw": [[N ms], ...] or None}."""
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
    result = {"spread": None, "comm_bw": None, "comm_fw": None}
    features = torch.tensor(features, dtype=torch.float32).reshape(
        -1, NUM_FEATURES)
    shard_ids = torch.tensor(shard_ids, dtype=torch.long)
    with torch.no_grad():
        result["compute"] = compute(features, shard_ids,
                                    len(query["sets"])).tolist()
        if hasattr(compute, "spread"):
            encodings = compute.encode(features)
            summed = torch.zeros(len(query["sets"]), encodings.shape[1])
            summed.index_add_(0, shard_ids, encodings)
            result["spread"] = compute.spread(summed).tolist()
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
    untrained.add_argument("--ensemble", type=int, default=1,
                           help="members of the compute model's ensemble")

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
        if args.ensemble < 1:
            parser.error("--ensemble must be at least 1")
        export_untrained(args.out, args.seed, args.devices, args.batch_size,
                         args.ensemble)
        return 0
    with open(args.query) as f:
        query = json.load(f)
    with open(args.out, "w") as f:
        json.dump(predict_query(args.bundle, query), f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
