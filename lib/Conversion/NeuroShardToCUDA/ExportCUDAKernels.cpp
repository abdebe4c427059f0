//===- ExportCUDAKernels.cpp - The --neuroshard-export-cuda pass ----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Writes what neuroshard-cuda-runner needs to run a model's kernels on a
// machine without LLVM: the kernels object and a text launch manifest whose
// records KernelABI.h defines (docs/lowering.md shows one). A lookup is
// identified by its indices value, so the column shards of one split table
// share their inputs and gradient, as they do in the sharded IR.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Conversion/NeuroShardToCUDA/Passes.h"

#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Runtime/KernelABI.h"
#include "neuroshard/Sharding/HostTier.h"

#include "mlir/IR/SymbolTable.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

namespace mlir::neuroshard {
#define GEN_PASS_DEF_EXPORTCUDAKERNELS
#include "neuroshard/Conversion/NeuroShardToCUDA/Passes.h.inc"
} // namespace mlir::neuroshard

using namespace mlir;
using namespace mlir::neuroshard;

namespace abi = ::neuroshard::kernel_abi;

namespace {

/// One shard of a launch, as the manifest lists it.
struct ManifestShard {
  unsigned lookup;
  int64_t colBegin, colEnd;
  int64_t rowBegin, rowEnd;
  PoolingMode mode;
  /// The rows of its device cache; 0 in device memory.
  int64_t cacheRows = 0;
};

struct ManifestLaunch {
  int64_t device;
  unsigned indexBits;
  SmallVector<ManifestShard> shards;
  /// The bags [bagBegin, bagEnd) of the batch it looks up; bagEnd -1: all.
  int64_t bagBegin = 0, bagEnd = -1;
};

struct ManifestLookup {
  unsigned table;
  unsigned stream;
};

struct ExportCUDAKernelsPass
    : public mlir::neuroshard::impl::ExportCUDAKernelsBase<
          ExportCUDAKernelsPass> {
  using ExportCUDAKernelsBase::ExportCUDAKernelsBase;

  void runOnOperation() override;

private:
  LogicalResult collect(ModuleOp module);
  unsigned lookupOf(Value indices, unsigned table);
  LogicalResult recordBatch(Operation *op, Value result);
  LogicalResult recordBatch(Operation *op, int64_t batch);
  LogicalResult replicaBags(FusedEmbeddingBagOp fused, ManifestLaunch &launch);
  void writeManifest(llvm::raw_ostream &os, StringRef moduleFile,
                     StringRef moduleFormat, StringRef chip);

  SmallVector<TableOp> tables;
  llvm::StringMap<unsigned> tableIndex;
  llvm::MapVector<Value, unsigned> lookupIds;
  SmallVector<ManifestLookup> lookups;
  SmallVector<unsigned> streamsPerTable;
  SmallVector<ManifestLaunch> launches;
  Operation *batchOp = nullptr;
  int64_t batchSize = 0;
};

} // namespace

unsigned ExportCUDAKernelsPass::lookupOf(Value indices, unsigned table) {
  auto [it, inserted] = lookupIds.try_emplace(indices, lookups.size());
  if (inserted)
    lookups.push_back({table, streamsPerTable[table]++});
  return it->second;
}

LogicalResult ExportCUDAKernelsPass::recordBatch(Operation *op, Value result) {
  return recordBatch(op, cast<ShapedType>(result.getType()).getDimSize(0));
}

LogicalResult ExportCUDAKernelsPass::recordBatch(Operation *op, int64_t batch) {
  if (ShapedType::isDynamic(batch))
    return op->emitOpError()
           << "has a dynamic batch size; the manifest needs a static batch";
  if (!batchOp) {
    batchOp = op;
    batchSize = batch;
    return success();
  }
  if (batch != batchSize) {
    InFlightDiagnostic diag = op->emitOpError()
                              << "has a batch of " << batch
                              << " but other lookups use " << batchSize
                              << "; the manifest holds one batch size";
    diag.attachNote(batchOp->getLoc()) << "batch of " << batchSize << " here";
    return failure();
  }
  return success();
}

/// The indices of the whole lookup that entry `entry` of `fused` reads: its
/// own, or for a row piece those its block of a `neuroshard.bucketize` was
/// cut from, since the manifest gives each piece its block of the lookup's
/// one input stream.
static FailureOr<Value> wholeLookupIndices(FusedEmbeddingBagOp fused,
                                           unsigned entry, Value indices,
                                           TableOp table,
                                           const ManifestShard &shard) {
  if (shard.rowBegin == 0 && shard.rowEnd == table.getNumRows())
    return indices;
  auto describe = [&](InFlightDiagnostic &&diag) {
    diag << "entry " << entry << " reads rows [" << shard.rowBegin << ", "
         << shard.rowEnd << ") of the " << table.getNumRows()
         << " rows of table '" << table.getSymName() << "' on device "
         << fused.getDevice();
    return std::move(diag);
  };
  std::optional<std::pair<BucketizeOp, unsigned>> bucket =
      getBucketizeBlock(indices);
  if (!bucket)
    return describe(fused.emitOpError())
           << " but its indices are not a block of a neuroshard.bucketize; "
              "the manifest draws a row piece's indices from its whole "
              "lookup";
  auto [bucketize, block] = *bucket;
  ArrayRef<int64_t> rows = bucketize.getRows();
  if (rows[block] != shard.rowBegin || rows[block + 1] != shard.rowEnd)
    return describe(fused.emitOpError())
           << " but its indices are the block of rows [" << rows[block] << ", "
           << rows[block + 1] << ") of a neuroshard.bucketize";
  return bucketize.getIndices();
}

/// The bags of the whole batch that a replicated fused lookup looks up:
/// every entry's offsets must be one static slice of its lookup's offsets
/// (what --neuroshard-materialize cuts for a device's replica), the same
/// slice for every entry. Records the whole batch.
LogicalResult ExportCUDAKernelsPass::replicaBags(FusedEmbeddingBagOp fused,
                                                 ManifestLaunch &launch) {
  int64_t bags = cast<ShapedType>(fused.getResult().getType()).getDimSize(0);
  for (unsigned i = 0, e = fused.getNumEntries(); i < e; ++i) {
    TableOp table = tables[tableIndex.lookup(fused.getEntryTable(i))];
    auto describe = [&]() {
      InFlightDiagnostic diag = fused.emitOpError();
      diag << "entry " << i << " reads the replica of table '"
           << table.getSymName() << "' on device " << fused.getDevice();
      return diag;
    };
    if (!table.isReplicated())
      return describe() << " beside entries of other tables' replicas; "
                           "a launch looks up one range of bags";
    auto slice = fused.getOffsets()[i].getDefiningOp<tensor::ExtractSliceOp>();
    auto whole = slice ? dyn_cast<RankedTensorType>(slice.getSourceType())
                       : RankedTensorType();
    // One offset per bag and one past the last, contiguous: the bags
    // [begin, begin + bags) of the lookup.
    if (!slice || !whole || whole.getRank() != 1 || whole.isDynamicDim(0) ||
        slice.getStaticOffsets().size() != 1 ||
        ShapedType::isDynamic(slice.getStaticOffsets()[0]) ||
        ShapedType::isDynamic(bags) || slice.getStaticSizes()[0] != bags + 1 ||
        slice.getStaticStrides()[0] != 1)
      return describe() << " but its offsets are not a static slice of its "
                           "lookup's offsets; the manifest gives a replica "
                           "its range of the lookup's bags";
    int64_t begin = slice.getStaticOffsets()[0];
    if (i > 0 && begin != launch.bagBegin)
      return describe() << " at bags " << begin << " to " << begin + bags
                        << ", but entry 0 at bags " << launch.bagBegin << " to "
                        << launch.bagEnd
                        << "; a launch looks up one range of bags";
    launch.bagBegin = begin;
    launch.bagEnd = begin + bags;
    if (failed(recordBatch(fused, whole.getDimSize(0) - 1)))
      return failure();
  }
  return success();
}

/// The rows of the device cache of `table`'s shard on `device` that
/// `shard` reads (0 if it is in device memory).
static int64_t cacheRowsOf(TableOp table, int64_t device,
                           const ManifestShard &shard) {
  ArrayAttr shards = table.getShardsAttr();
  if (!shards)
    return 0;
  for (ShardAttr attr : shards.getAsRange<ShardAttr>())
    if (attr.isCached() && int64_t(attr.getDevice()) == device &&
        attr.getColBegin() == shard.colBegin &&
        attr.getColEnd() == shard.colEnd &&
        attr.getRowBegin() == shard.rowBegin &&
        attr.getRowEndIn(table.getNumRows()) == shard.rowEnd)
      return attr.getCacheRows();
  return 0;
}

/// Whether `text` can be one field of a manifest record.
static bool isManifestWord(StringRef text) {
  return !text.empty() && text.find_first_of(" \t\r\n") == StringRef::npos;
}

LogicalResult ExportCUDAKernelsPass::collect(ModuleOp module) {
  for (TableOp table : module.getOps<TableOp>()) {
    if (!table.hasCostStatistics())
      return table.emitOpError()
             << "table '" << table.getSymName()
             << "' has no pooling_factor and access_hist; the runner "
                "generates its inputs from them";
    if (!table.getElementType().isF32())
      return table.emitOpError()
             << "table '" << table.getSymName() << "' has element type "
             << table.getElementType()
             << "; the CUDA kernels handle f32 tables only";
    if (!isManifestWord(table.getSymName()))
      return table.emitOpError()
             << "table '" << table.getSymName()
             << "' has blanks in its name, which the manifest cannot hold";
    tableIndex[table.getSymName()] = tables.size();
    tables.push_back(table);
  }
  streamsPerTable.assign(tables.size(), 0);

  auto indexBits = [](Value indices) {
    return cast<ShapedType>(indices.getType()).getElementTypeBitWidth();
  };
  WalkResult walk = module.walk([&](Operation *op) {
    if (auto lookup = dyn_cast<EmbeddingBagOp>(op)) {
      if (failed(recordBatch(op, lookup.getResult())))
        return WalkResult::interrupt();
      unsigned table = tableIndex.lookup(lookup.getTable());
      ManifestLaunch launch{0, indexBits(lookup.getIndices()), {}};
      launch.shards.push_back({lookupOf(lookup.getIndices(), table), 0,
                               tables[table].getNumCols(), 0,
                               tables[table].getNumRows(), lookup.getMode()});
      launches.push_back(std::move(launch));
    } else if (auto fused = dyn_cast<FusedEmbeddingBagOp>(op)) {
      ManifestLaunch launch{static_cast<int64_t>(fused.getDevice()), 32, {}};
      // A replica looks up its device's slice of the batch: the launch gets
      // that range of bags of its lookups.
      bool replicas = false;
      for (unsigned i = 0, e = fused.getNumEntries(); i < e; ++i)
        replicas |=
            tables[tableIndex.lookup(fused.getEntryTable(i))].isReplicated();
      if (failed(replicas ? replicaBags(fused, launch)
                          : recordBatch(op, fused.getResult())))
        return WalkResult::interrupt();
      for (unsigned i = 0, e = fused.getNumEntries(); i < e; ++i) {
        Value indices = fused.getIndices()[i];
        launch.indexBits = std::max(launch.indexBits, indexBits(indices));
        unsigned table = tableIndex.lookup(fused.getEntryTable(i));
        auto mode = cast<PoolingModeAttr>(fused.getModes()[i]);
        int64_t rowEnd = isRowPieceEntry(fused, i) ? (*fused.getRowEnds())[i]
                                                   : tables[table].getNumRows();
        ManifestShard shard{/*lookup=*/0,
                            fused.getColBegins()[i],
                            fused.getColEnds()[i],
                            getEntryRowBegin(fused, i),
                            rowEnd,
                            mode.getValue()};
        FailureOr<Value> lookupIndices =
            wholeLookupIndices(fused, i, indices, tables[table], shard);
        if (failed(lookupIndices))
          return WalkResult::interrupt();
        shard.cacheRows = cacheRowsOf(tables[table], launch.device, shard);
        // A fetch's locations reach host memory, beyond what i32 holds.
        if (shard.cacheRows > 0)
          launch.indexBits = 64;
        shard.lookup = lookupOf(*lookupIndices, table);
        launch.shards.push_back(shard);
      }
      launches.push_back(std::move(launch));
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  if (launches.empty())
    return emitError(module.getLoc())
           << "the module has no neuroshard.embedding_bag or "
              "neuroshard.fused_embedding_bag lookups to export";
  return success();
}

/// Starts a line of `record`; its fields follow, each after a blank.
static llvm::raw_ostream &startRecord(llvm::raw_ostream &os,
                                      const abi::ManifestRecord &record) {
  return os << record.keyword;
}

/// Doubles with all the digits that tell them apart, so that the runner
/// reads back the compiler's values exactly.
static llvm::format_object<double> exact(double value) {
  return llvm::format("%.17g", value);
}

void ExportCUDAKernelsPass::writeManifest(llvm::raw_ostream &os,
                                          StringRef moduleFile,
                                          StringRef moduleFormat,
                                          StringRef chip) {
  os << abi::kManifestMagic << ' ' << abi::kManifestVersion << '\n';
  startRecord(os, abi::kModuleRecord)
      << ' ' << moduleFile << ' ' << moduleFormat << ' ' << chip << '\n';
  startRecord(os, abi::kKernelsRecord)
      << ' ' << abi::kForwardI32 << ' ' << abi::kForwardI64 << ' '
      << abi::kBackwardI32 << ' ' << abi::kBackwardI64 << '\n';
  startRecord(os, abi::kRunRecord)
      << ' ' << abi::kThreadsPerBlock << ' ' << batchSize << ' ' << seed << ' '
      << exact(lr) << '\n';
  for (TableOp table : tables) {
    startRecord(os, abi::kTableRecord)
        << ' ' << table.getSymName() << ' ' << table.getNumRows() << ' '
        << table.getNumCols() << ' ' << exact(*table.getPoolingFactorValue());
    ArrayRef<double> bins = *table.getAccessHist();
    for (double bin : bins)
      os << ' ' << exact(bin);
    os << '\n';
  }
  for (const ManifestLookup &lookup : lookups)
    startRecord(os, abi::kLookupRecord)
        << ' ' << lookup.table << ' ' << lookup.stream << '\n';
  // A cached shard's lookups follow the power law of its table's
  // histogram, which the planner priced its cache with: fitted once a table.
  std::vector<std::optional<double>> skewOf(tables.size());
  auto skew = [&](unsigned t) {
    if (!skewOf[t]) {
      TableOp table = tables[t];
      skewOf[t] = ::neuroshard::popularityLaw(
          *table.getAccessHist(), table.getNumRows(),
          double(batchSize) * *table.getPoolingFactorValue());
    }
    return *skewOf[t];
  };
  for (const ManifestLaunch &launch : launches) {
    startRecord(os, abi::kDeviceRecord)
        << ' ' << launch.device << ' '
        << (launch.indexBits == 32 ? "i32" : "i64") << ' ' << launch.bagBegin
        << ' ' << (launch.bagEnd < 0 ? batchSize : launch.bagEnd) << '\n';
    for (const ManifestShard &shard : launch.shards)
      startRecord(os, abi::kShardRecord)
          << ' ' << shard.lookup << ' ' << shard.colBegin << ' ' << shard.colEnd
          << ' ' << shard.rowBegin << ' ' << shard.rowEnd << ' '
          << shard.cacheRows << ' '
          << exact(shard.cacheRows > 0 ? skew(lookups[shard.lookup].table)
                                       : 0.0)
          << ' ' << stringifyPoolingMode(shard.mode) << '\n';
  }
}

/// Writes `contents` to `path`, reporting failures at `loc`.
static LogicalResult writeFile(Location loc, StringRef path, StringRef what,
                               StringRef contents) {
  std::string message;
  std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(path, &message);
  if (!file)
    return emitError(loc) << "cannot write the " << what << " '" << path
                          << "': " << message;
  file->os() << contents;
  file->keep();
  return success();
}

void ExportCUDAKernelsPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (manifest.empty() || binary.empty()) {
    emitError(module.getLoc())
        << "--neuroshard-export-cuda needs manifest=FILE and "
           "binary=FILE";
    return signalPassFailure();
  }
  auto kernels = dyn_cast_or_null<gpu::BinaryOp>(
      SymbolTable::lookupSymbolIn(module, abi::kKernelModuleName));
  if (!kernels) {
    emitError(module.getLoc())
        << "the module has no gpu.binary @" << abi::kKernelModuleName
        << "; run --neuroshard-cuda-pipeline (or "
           "--neuroshard-to-cuda and gpu-module-to-binary) "
           "first";
    return signalPassFailure();
  }
  auto object = cast<gpu::ObjectAttr>(kernels.getObjects()[0]);
  StringRef moduleFormat;
  switch (object.getFormat()) {
  case gpu::CompilationTarget::Binary:
    moduleFormat = "cubin";
    break;
  case gpu::CompilationTarget::Assembly:
    moduleFormat = "ptx";
    break;
  case gpu::CompilationTarget::Fatbin:
    moduleFormat = "fatbin";
    break;
  default:
    kernels.emitOpError() << "holds an offloading (LLVM IR) object; the "
                             "runner loads cubin, PTX or fatbin: use "
                             "format=bin, isa or fatbin";
    return signalPassFailure();
  }
  if (failed(collect(module)))
    return signalPassFailure();
  // The manifest names the kernels object relative to its own directory
  // when both lie in one, so that the pair can be copied together.
  StringRef manifestDir = llvm::sys::path::parent_path(manifest);
  std::string moduleFile = binary;
  if (llvm::sys::path::parent_path(binary) == manifestDir)
    moduleFile = llvm::sys::path::filename(binary).str();
  auto target = dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget());
  StringRef chip = target ? target.getChip() : StringRef();
  if (!isManifestWord(moduleFile) || !isManifestWord(chip)) {
    emitError(module.getLoc())
        << "the kernels object '" << moduleFile << "' and its chip '" << chip
        << "' must be non-empty and without blanks to fit in the manifest";
    return signalPassFailure();
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  writeManifest(os, moduleFile, moduleFormat, chip);
  if (failed(writeFile(module.getLoc(), binary, "kernels object",
                       object.getObject().getValue())) ||
      failed(writeFile(module.getLoc(), manifest, "manifest", text)))
    return signalPassFailure();
}
