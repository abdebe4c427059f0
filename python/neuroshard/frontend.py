#===- frontend.py - PyTorch models to NeuroShard IR ------------------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""The PyTorch front end: turns the `nn.EmbeddingBag` modules of a model,
together with sample batches of their inputs, into a NeuroShard MLIR module
that `neuroshard-opt --neuroshard-shard` can shard (docs/design.md §1).

Every `nn.EmbeddingBag` of the model, wherever it is nested (plain
attributes, `nn.ModuleList`, `nn.ModuleDict`, ...), becomes one
`neuroshard.table` named after its module path (a symbol-safe form of it,
`sparse_user_id`, with the path itself in `module_path`, which plans and
reports show), and one
`neuroshard.embedding_bag` in `func.func @embeddings`. The cost model's
statistics are measured from the samples the caller passes:

  rows, dim        the module's weight shape;
  pooling_factor   the mean bag length over all sample bags;
  access_hist      the 17-bin histogram (docs/design.md §3) of one batch of
                   B bags: the C++ core's access_histogram of each sample
                   batch's indices, averaged over the batches. Pooling several
                   batches' indices into one histogram would count rows as
                   hotter the more data was sampled, so it is never done.

`samples` maps a module path (as `model.named_modules()` spells it) to the
module's sample inputs, in the forms `nn.EmbeddingBag.forward` accepts:

  (indices, offsets)   a 1-D index tensor and its bag offsets (B entries,
                       or B + 1 with include_last_offset=True);
  indices              a 2-D tensor, one bag of fixed length per row;
  [batch, batch, ...]  a list of several such batches;
  {feature: batches}   a module several features look up (one table shared
                       by them): each feature's batches in the forms above.

Every batch of every module must have the same number of bags B, which
becomes the function's batch size. A module registered under several paths
is one table, named after its first path; samples given under two of its
paths are two features of that table.

A table with one feature carries its statistics itself. A table with
several gets one `neuroshard.embedding_bag` per feature, each with that
feature's own `pooling_factor` and `access_hist`, so that the sharding pass
prices every feature's lookups instead of an average of them.

    from neuroshard import frontend
    text = frontend.model_to_mlir(model, samples, devices=4, memory_gb=16)

From the command line, for a Python file that defines `neuroshard_model()`
returning `(model, samples)`:

    python -m neuroshard.frontend MODEL.py --devices 4 --memory-gb 16 \
        -o model.mlir
    python -m neuroshard.frontend MODEL.py --list
"""

import argparse
import os
import re
import runpy
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from torch import nn

from neuroshard import _core

INDEX_TYPES = ("i64", "i32")
FUNCTION_NAME = "embeddings"


class FrontendError(Exception):
    """A model or sample batch the front end cannot translate; the message
    names the module and the numbers."""


@dataclass
class FeatureInfo:
    """What the front end measured for one feature looking a table up."""
    name: str          # the module path, or the feature's key in the samples
    pooling_factor: float
    access_hist: List[float]
    num_indices: int


@dataclass
class TableInfo:
    """What the front end measured for one nn.EmbeddingBag. The statistics
    are its first feature's; `features` lists every feature's."""
    path: str          # module path in the model, e.g. "sparse.bags.3"
    symbol: str        # the neuroshard.table symbol
    rows: int
    dim: int
    mode: str          # "sum" or "mean"
    batch_size: int
    pooling_factor: float
    access_hist: List[float]
    num_indices: int
    aliases: List[str] = field(default_factory=list)  # its other paths
    features: List[FeatureInfo] = field(default_factory=list)


def find_embedding_bags(model: nn.Module) -> List[Tuple[str, nn.EmbeddingBag]]:
    """The model's nn.EmbeddingBag modules with their module paths, in
    registration order. A module registered under several paths is listed
    once, under its first path (PyTorch's named_modules rule)."""
    if not isinstance(model, nn.Module):
        raise FrontendError("expected a torch.nn.Module, got %s" %
                            type(model).__name__)
    bags = [(path, module) for path, module in model.named_modules()
            if isinstance(module, nn.EmbeddingBag)]
    if not bags:
        raise FrontendError("model %s has no nn.EmbeddingBag modules" %
                            type(model).__name__)
    return bags


def module_aliases(model: nn.Module) -> Dict[str, str]:
    """Every path of every nn.EmbeddingBag of `model`, mapped to the path
    find_embedding_bags lists it under (its first)."""
    first: Dict[int, str] = {}
    aliases: Dict[str, str] = {}
    for path, module in model.named_modules(remove_duplicate=False):
        if isinstance(module, nn.EmbeddingBag):
            aliases[path] = first.setdefault(id(module), path)
    return aliases


def symbol_name(path: str) -> str:
    """An MLIR bare identifier for a module path: characters other than
    letters, digits and '_' become '_', and a leading digit gets a 't'."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", path) or "table"
    if name[0].isdigit():
        name = "t" + name
    return name


def _unique_symbols(paths: Sequence[str]) -> List[str]:
    """Sanitised symbols, made distinct with a numeric suffix where two
    paths sanitise to the same name ('a.b' and 'a_b')."""
    used, symbols = set(), []
    for path in paths:
        base = symbol_name(path)
        name, k = base, 1
        while name in used:
            name = "%s_%d" % (base, k)
            k += 1
        used.add(name)
        symbols.append(name)
    return symbols


def _as_index_array(value, path: str, what: str) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        if value.is_floating_point() or value.is_complex() or \
                value.dtype == torch.bool:
            raise FrontendError("'%s': %s must be an integer tensor, got %s" %
                                (path, what, value.dtype))
        return value.detach().cpu().numpy().astype(np.int64)
    array = np.asarray(value)
    if array.dtype.kind not in "iu":
        raise FrontendError("'%s': %s must hold integers, got %s" %
                            (path, what, array.dtype))
    return array.astype(np.int64)


def _split_batches(path: str, sample) -> list:
    """The batches of one module's samples (see the module docstring)."""
    if isinstance(sample, list):
        if not sample:
            raise FrontendError("'%s': the sample list is empty" % path)
        return sample
    return [sample]


def _bag_lengths(path: str, module: nn.EmbeddingBag, batch,
                 number: int) -> Tuple[np.ndarray, np.ndarray]:
    """(indices, per-bag lengths) of one sample batch, checked against the
    module's conventions."""
    where = "'%s' batch %d" % (path, number)
    if isinstance(batch, tuple):
        if len(batch) == 3 and batch[2] is not None:
            raise FrontendError(
                "%s has per_sample_weights; weighted bags are not supported "
                "(NeuroShard lookups are plain sum or mean)" % where)
        if len(batch) not in (2, 3):
            raise FrontendError("%s: expected (indices, offsets), got a "
                                "tuple of %d items" % (where, len(batch)))
        indices = _as_index_array(batch[0], path, "indices")
        if batch[1] is None:
            batch = batch[0]
        else:
            offsets = _as_index_array(batch[1], path, "offsets")
            if indices.ndim != 1 or offsets.ndim != 1:
                raise FrontendError(
                    "%s: with offsets, indices and offsets must be 1-D, got "
                    "%d-D and %d-D" % (where, indices.ndim, offsets.ndim))
            if offsets.size == 0 or offsets[0] != 0:
                raise FrontendError("%s: offsets must start at 0" % where)
            if module.include_last_offset:
                if offsets.size < 2:
                    raise FrontendError(
                        "%s: include_last_offset needs at least 2 offsets, "
                        "got %d" % (where, offsets.size))
                if offsets[-1] != indices.size:
                    raise FrontendError(
                        "%s: the last offset is %d but there are %d indices"
                        % (where, offsets[-1], indices.size))
                bounds = offsets
            else:
                bounds = np.append(offsets, indices.size)
            lengths = np.diff(bounds)
            if (lengths < 0).any() or bounds[-1] > indices.size:
                raise FrontendError(
                    "%s: offsets must be non-decreasing and at most the "
                    "number of indices (%d)" % (where, indices.size))
            return indices, lengths
    indices = _as_index_array(batch, path, "indices")
    if indices.ndim != 2:
        raise FrontendError("%s: indices without offsets must be 2-D "
                            "(bags x bag length), got %d-D" %
                            (where, indices.ndim))
    return indices.reshape(-1), np.full(indices.shape[0], indices.shape[1],
                                        dtype=np.int64)


def _check_module(path: str, module: nn.EmbeddingBag) -> None:
    if module.mode not in ("sum", "mean"):
        raise FrontendError(
            "'%s' uses mode='%s'; NeuroShard supports the 'sum' and 'mean' "
            "pooling modes" % (path, module.mode))
    if module.padding_idx is not None:
        raise FrontendError(
            "'%s' has padding_idx=%d; lookups that skip a padding row are "
            "not supported" % (path, module.padding_idx))
    if module.max_norm is not None:
        raise FrontendError(
            "'%s' has max_norm=%g, which renormalises rows during the lookup;"
            " this is not supported" % (path, module.max_norm))
    if module.weight.dtype != torch.float32:
        raise FrontendError("'%s' has %s weights; only float32 is supported"
                            % (path, module.weight.dtype))
    rows, dim = (int(x) for x in module.weight.shape)
    _check_rules(path, _core.check_dim(dim),
                 _core.check_table_bytes(rows, dim))


def _check_rules(what: str, *violations: Optional[str]) -> None:
    """Raises on the first broken table rule, in the C++ rules' words."""
    for violation in violations:
        if violation is not None:
            raise FrontendError("'%s': %s" % (what, violation))


def measure_tables(model: nn.Module, samples: Mapping[str, object]
                   ) -> List[TableInfo]:
    """One TableInfo per nn.EmbeddingBag of `model`, measured from
    `samples` (see the module docstring)."""
    bags = find_embedding_bags(model)
    if not isinstance(samples, Mapping):
        raise FrontendError("samples must map module paths to sample "
                            "batches, got %s" % type(samples).__name__)
    paths = [path for path, _ in bags]
    aliases = module_aliases(model)
    unknown = sorted(set(samples) - set(aliases))
    if unknown:
        raise FrontendError(
            "samples name %s, which %s not an nn.EmbeddingBag of the model "
            "(its bags are: %s)" % (", ".join("'%s'" % u for u in unknown),
                                    "is" if len(unknown) == 1 else "are",
                                    ", ".join(paths)))
    # Samples under another path of a module count as the module's; under
    # several paths, or keyed by feature, they are several features.
    per_table: Dict[str, List[Tuple[str, object]]] = {}
    for name, value in samples.items():
        features = per_table.setdefault(aliases[name], [])
        if isinstance(value, Mapping):
            if not value:
                raise FrontendError("'%s': the feature map is empty" % name)
            for key, batches in value.items():
                if not isinstance(key, str) or not key:
                    raise FrontendError("'%s': feature names must be "
                                        "non-empty strings, got %r" %
                                        (name, key))
                features.append((key, batches))
        else:
            features.append((name, value))
    for path, features in per_table.items():
        names = [f for f, _ in features]
        repeated = sorted({f for f in names if names.count(f) > 1})
        if repeated:
            raise FrontendError("'%s' has two features named %s" %
                                (path, ", ".join("'%s'" % r
                                                 for r in repeated)))
    missing = [p for p in paths if p not in per_table]
    if missing:
        raise FrontendError("no sample batches for %s" %
                            ", ".join("'%s'" % m for m in missing))

    batch = {"size": None, "where": None}
    tables = []
    for (path, module), symbol in zip(bags, _unique_symbols(paths)):
        _check_module(path, module)
        rows, dim = (int(x) for x in module.weight.shape)
        features = [_measure_feature(path, module, rows, name, batches, batch)
                    for name, batches in per_table[path]]
        first = features[0]
        tables.append(TableInfo(
            path=path, symbol=symbol, rows=rows, dim=dim, mode=module.mode,
            batch_size=batch["size"], pooling_factor=first.pooling_factor,
            access_hist=first.access_hist, num_indices=first.num_indices,
            aliases=[a for a, c in aliases.items() if c == path and a != path],
            features=features))
    return tables


def _measure_feature(path: str, module: nn.EmbeddingBag, rows: int,
                     name: str, batches, batch: Dict) -> FeatureInfo:
    """One feature's statistics from its sample batches. `batch` holds the
    batch size seen so far and where, which every batch must share."""
    label = path if name == path else "%s' feature '%s" % (path, name)
    hists, num_indices, total_bags = [], 0, 0
    for number, sample in enumerate(_split_batches(label, batches)):
        indices, lengths = _bag_lengths(label, module, sample, number)
        where = "'%s' batch %d" % (label, number)
        if lengths.size == 0:
            raise FrontendError("%s has no bags" % where)
        if batch["size"] is None:
            batch["size"], batch["where"] = int(lengths.size), where
        elif lengths.size != batch["size"]:
            raise FrontendError(
                "mismatched batches: %s has %d bags but %s has %d; every "
                "lookup of the function takes the same batch" %
                (where, lengths.size, batch["where"], batch["size"]))
        if indices.size and (indices.min() < 0 or indices.max() >= rows):
            bad = indices.min() if indices.min() < 0 else indices.max()
            raise FrontendError("%s has index %d outside the table's %d "
                                "rows" % (where, bad, rows))
        hists.append(_core.access_histogram(indices))
        num_indices += int(indices.size)
        total_bags += int(lengths.size)
    feature = FeatureInfo(name=name, pooling_factor=num_indices / total_bags,
                          access_hist=np.mean(np.asarray(hists),
                                              axis=0).tolist(),
                          num_indices=num_indices)
    _check_rules(label, _core.check_access_histogram_for_batch(
        feature.access_hist, rows, feature.pooling_factor, batch["size"]))
    return feature


def _float_literal(value: float) -> str:
    """An MLIR float literal with up to 9 significant digits. MLIR's float
    literals need a '.' before any exponent ('1e-05' does not parse), so one
    is added where printf leaves it out ('1.0e-05')."""
    mantissa, e, exponent = ("%.9g" % value).partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + e + exponent


def _topology(devices: int, memory_gb: Union[float, Sequence[float]]) -> str:
    if isinstance(devices, bool) or not isinstance(devices, int):
        raise FrontendError("devices must be an integer, got %r" %
                            (devices,))
    _check_rules("devices", _core.check_device_count(devices))
    if isinstance(memory_gb, (int, float)):
        capacities = [float(memory_gb)]
        text = _float_literal(float(memory_gb))
    else:
        capacities = [float(m) for m in memory_gb]
        if len(capacities) != devices:
            raise FrontendError("memory_gb lists %d capacities for %d "
                                "devices" % (len(capacities), devices))
        text = "[%s]" % ", ".join(_float_literal(m) for m in capacities)
    for m in capacities:
        _check_rules("memory_gb", _core.check_capacity_gb(m))
    return "#neuroshard.topology<devices = %d, memory_gb = %s>" % (devices,
                                                                   text)


def _stats_attributes(feature: FeatureInfo, rows: int, sampled: int,
                      batch: int) -> List[str]:
    """The pooling_factor and access_hist attributes of `feature` of a table
    of `rows` rows, measured on batches of `sampled` bags, for a function of
    `batch` bags: the histogram is carried to that batch."""
    hist = feature.access_hist
    if batch != sampled:
        hist = _core.rescale_access_histogram(
            hist, rows, feature.pooling_factor, sampled, batch)
    bins = ", ".join(_float_literal(v) for v in hist)
    return ["pooling_factor = %s : f64" % _float_literal(feature.pooling_factor),
            "access_hist = array<f64: %s>" % bins]


def _mlir_string(text: str) -> str:
    """`text` as an MLIR string literal: quotes, backslashes and bytes
    outside printable ASCII escaped as \\XX (UTF-8)."""
    out = []
    for byte in text.encode("utf-8"):
        c = chr(byte)
        if c in "\"\\" or byte < 0x20 or byte >= 0x7f:
            out.append("\\%02X" % byte)
        else:
            out.append(c)
    return '"%s"' % "".join(out)


def emit_module(tables: Sequence[TableInfo], devices: int = 4,
                memory_gb: Union[float, Sequence[float]] = 16.0,
                index_type: str = "i64", batch_size: Optional[int] = None,
                source: str = "") -> str:
    """The NeuroShard MLIR module text for measured tables: one
    neuroshard.table per table and one lookup per table in
    func.func @embeddings (arguments %idxN, %offN; results BxDxf32).
    `batch_size` overrides the sampled batch size; the histograms are then
    carried to it (rescale_access_histogram)."""
    if not tables:
        raise FrontendError("no tables to emit")
    if index_type not in INDEX_TYPES:
        raise FrontendError("index type must be one of %s, got '%s'" %
                            (", ".join(INDEX_TYPES), index_type))
    b = tables[0].batch_size if batch_size is None else batch_size
    if isinstance(b, bool) or not isinstance(b, int) or b < 1:
        raise FrontendError("batch size must be a positive integer, got %r" %
                            (b,))
    if index_type == "i32":
        for t in tables:
            if t.rows > 2**31 - 1:
                raise FrontendError(
                    "'%s' has %d rows, more than i32 indices can address" %
                    (t.path, t.rows))
    out = []
    if source:
        out.append("// %s" % source)
    out.append("// Generated by neuroshard.frontend: %d nn.EmbeddingBag "
               "tables, batch %d." % (len(tables), b))
    out.append("module attributes {neuroshard.topology = %s} {" %
               _topology(devices, memory_gb))
    for t in tables:
        also = "".join(", also '%s'" % a for a in t.aliases)
        features = t.features or [FeatureInfo(t.path, t.pooling_factor,
                                              t.access_hist, t.num_indices)]
        shared = len(features) > 1
        if shared:
            out.append("  // %s%s: nn.EmbeddingBag(%d, %d, mode='%s'), looked "
                       "up by %d features (%s)" %
                       (t.path, also, t.rows, t.dim, t.mode, len(features),
                        ", ".join(f.name for f in features)))
        else:
            out.append("  // %s%s: nn.EmbeddingBag(%d, %d, mode='%s'), %d "
                       "sample indices" % (t.path, also, t.rows, t.dim,
                                           t.mode, t.num_indices))
        attrs = [] if shared else _stats_attributes(features[0], t.rows,
                                                     t.batch_size, b)
        if t.symbol != t.path:
            # The symbol spells the path in a symbol-safe form; the path
            # itself names the table in plans and reports.
            attrs.append("module_path = %s" % _mlir_string(t.path))
        line = "  neuroshard.table @%s : rows %d, dim %d, f32" % (
            t.symbol, t.rows, t.dim)
        out.append(line + (" {" + ",\n    ".join(attrs) + "}" if attrs
                           else ""))
    idx = "tensor<?x%s>" % index_type
    off = "tensor<%dx%s>" % (b + 1, index_type)
    args, results, body = [], [], []
    for t in tables:
        features = t.features or [None]
        for f in features:
            i = len(results)
            result = "tensor<%dx%dxf32>" % (b, t.dim)
            args.append("%%idx%d: %s, %%off%d: %s" % (i, idx, i, off))
            results.append(result)
            own = ""
            if len(features) > 1:
                body.append("    // feature '%s', %d sample indices" %
                            (f.name, f.num_indices))
                own = " {" + ",\n        ".join(
                    _stats_attributes(f, t.rows, t.batch_size, b)) + "}"
            body.append("    %%e%d = neuroshard.embedding_bag @%s(%%idx%d, "
                        "%%off%d) %s%s" % (i, t.symbol, i, i, t.mode, own))
            body.append("        : (%s, %s) -> %s" % (idx, off, result))
    out.append("")
    out.append("  func.func @%s(" % FUNCTION_NAME)
    out.append(",\n".join("      " + a for a in args) + ")")
    out.append("      -> (" + ",\n          ".join(results) + ") {")
    out.extend(body)
    out.append("    return " + ", ".join("%%e%d" % i
                                         for i in range(len(results))))
    out.append("        : " + ",\n          ".join(results))
    out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"


def model_to_mlir(model: nn.Module, samples: Mapping[str, object],
                  devices: int = 4,
                  memory_gb: Union[float, Sequence[float]] = 16.0,
                  index_type: str = "i64",
                  batch_size: Optional[int] = None) -> str:
    """The NeuroShard module of `model`'s embedding bags, measured from
    `samples`; see the module docstring."""
    tables = measure_tables(model, samples)
    return emit_module(tables, devices=devices, memory_gb=memory_gb,
                       index_type=index_type, batch_size=batch_size,
                       source="model: %s" % type(model).__name__)


def _load_model_script(path: str):
    """(model, samples) from the neuroshard_model() of the Python file
    `path`."""
    if not os.path.isfile(path):
        raise FrontendError("'%s' is not a file" % path)
    try:
        namespace = runpy.run_path(path, run_name="neuroshard_model_script")
    except Exception as e:  # the script's own failure, reported in one line
        raise FrontendError("running '%s' failed: %s: %s" %
                            (path, type(e).__name__, e)) from e
    factory = namespace.get("neuroshard_model")
    if not callable(factory):
        raise FrontendError(
            "'%s' defines no function neuroshard_model(); it must return "
            "(model, samples)" % path)
    try:
        result = factory()
    except Exception as e:
        raise FrontendError("neuroshard_model() of '%s' failed: %s: %s" %
                            (path, type(e).__name__, e)) from e
    if not isinstance(result, tuple) or len(result) != 2:
        raise FrontendError("neuroshard_model() of '%s' must return (model, "
                            "samples), got %s" % (path, type(result).__name__))
    return result


def _memory_list(text: str) -> Union[float, List[float]]:
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise FrontendError("--memory-gb: '%s' is not a number or a comma "
                            "list of numbers" % text) from None
    return values[0] if len(values) == 1 else values


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m neuroshard.frontend",
        description="Turns the nn.EmbeddingBag modules of a PyTorch model "
        "into a NeuroShard MLIR module. SCRIPT is a Python file that defines "
        "neuroshard_model(), returning (model, samples) as "
        "neuroshard.frontend.model_to_mlir takes them.")
    parser.add_argument("script", metavar="SCRIPT")
    parser.add_argument("--list", action="store_true",
                        help="list the model's embedding bags (path, rows, "
                        "dim, mode, other paths) instead")
    parser.add_argument("--devices", type=int, default=4)
    parser.add_argument("--memory-gb", default="16",
                        help="one capacity, or one per device (comma list)")
    parser.add_argument("--index-type", choices=INDEX_TYPES, default="i64")
    parser.add_argument("--batch-size", type=int,
                        help="the function's batch (default: the samples')")
    parser.add_argument("-o", "--output", default="-",
                        help="output file (default: stdout)")
    args = parser.parse_args(argv)
    try:
        model, samples = _load_model_script(args.script)
        if args.list:
            aliases = module_aliases(model)
            for path, module in find_embedding_bags(model):
                also = [a for a, c in aliases.items() if c == path and
                        a != path]
                rows, dim = (int(x) for x in module.weight.shape)
                print("%s\t%d x %d\t%s%s" % (
                    path, rows, dim, module.mode,
                    "\talso " + ", ".join(also) if also else ""))
            return 0
        text = model_to_mlir(model, samples, devices=args.devices,
                             memory_gb=_memory_list(args.memory_gb),
                             index_type=args.index_type,
                             batch_size=args.batch_size)
    except FrontendError as e:
        print("neuroshard.frontend: error: %s" % e, file=sys.stderr)
        return 1
    if args.output == "-":
        sys.stdout.write(text)
    else:
        try:
            with open(args.output, "w") as f:
                f.write(text)
        except OSError as e:
            print("neuroshard.frontend: error: cannot write '%s': %s" %
                  (args.output, e.strerror), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
