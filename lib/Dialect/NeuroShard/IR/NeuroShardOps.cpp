//===- NeuroShardOps.cpp - NeuroShard operations --------------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Sharding/Plan.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <cmath>
#include <string>

using namespace mlir;
using namespace mlir::neuroshard;

//===----------------------------------------------------------------------===//
// Custom directives
//===----------------------------------------------------------------------===//

static ParseResult parsePoolingMode(OpAsmParser &parser,
                                    PoolingModeAttr &mode) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<PoolingMode> value = symbolizePoolingMode(keyword);
  if (!value)
    return parser.emitError(loc)
           << "unknown pooling mode '" << keyword << "'; expected 'sum' or "
           << "'mean'";
  mode = PoolingModeAttr::get(parser.getContext(), *value);
  return success();
}

static void printPoolingMode(OpAsmPrinter &printer, Operation *,
                             PoolingModeAttr mode) {
  printer << stringifyPoolingMode(mode.getValue());
}

/// Parses `[ @table (rows r0 to r1)? cols begin to end mode(%indices,
/// %offsets : type, type), ... ]`.
static ParseResult parseFusedEntries(
    OpAsmParser &parser, ArrayAttr &tables, DenseI64ArrayAttr &rowBegins,
    DenseI64ArrayAttr &rowEnds, DenseI64ArrayAttr &colBegins,
    DenseI64ArrayAttr &colEnds, ArrayAttr &modes,
    SmallVectorImpl<OpAsmParser::UnresolvedOperand> &indices,
    SmallVectorImpl<OpAsmParser::UnresolvedOperand> &offsets,
    SmallVectorImpl<Type> &indicesTypes, SmallVectorImpl<Type> &offsetsTypes) {
  SmallVector<Attribute> tableRefs, modeAttrs;
  SmallVector<int64_t> begins, ends, firstRows, endRows;
  bool anyRows = false;
  auto parseEntry = [&]() -> ParseResult {
    FlatSymbolRefAttr table;
    int64_t begin = 0, end = 0, firstRow = 0, endRow = ::neuroshard::kAllRows;
    PoolingModeAttr mode;
    OpAsmParser::UnresolvedOperand index, offset;
    Type indexType, offsetType;
    if (parser.parseAttribute(table))
      return failure();
    if (succeeded(parser.parseOptionalKeyword("rows"))) {
      if (parser.parseInteger(firstRow) || parser.parseKeyword("to") ||
          parser.parseInteger(endRow))
        return failure();
      anyRows = true;
    }
    if (parser.parseKeyword("cols") || parser.parseInteger(begin) ||
        parser.parseKeyword("to") || parser.parseInteger(end) ||
        parsePoolingMode(parser, mode) || parser.parseLParen() ||
        parser.parseOperand(index) || parser.parseComma() ||
        parser.parseOperand(offset) || parser.parseColon() ||
        parser.parseType(indexType) || parser.parseComma() ||
        parser.parseType(offsetType) || parser.parseRParen())
      return failure();
    tableRefs.push_back(table);
    firstRows.push_back(firstRow);
    endRows.push_back(endRow);
    begins.push_back(begin);
    ends.push_back(end);
    modeAttrs.push_back(mode);
    indices.push_back(index);
    offsets.push_back(offset);
    indicesTypes.push_back(indexType);
    offsetsTypes.push_back(offsetType);
    return success();
  };
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Square,
                                     parseEntry))
    return failure();
  MLIRContext *ctx = parser.getContext();
  tables = ArrayAttr::get(ctx, tableRefs);
  colBegins = DenseI64ArrayAttr::get(ctx, begins);
  colEnds = DenseI64ArrayAttr::get(ctx, ends);
  modes = ArrayAttr::get(ctx, modeAttrs);
  if (anyRows) {
    rowBegins = DenseI64ArrayAttr::get(ctx, firstRows);
    rowEnds = DenseI64ArrayAttr::get(ctx, endRows);
  }
  return success();
}

static void printFusedEntries(OpAsmPrinter &printer, Operation *,
                              ArrayAttr tables, DenseI64ArrayAttr rowBegins,
                              DenseI64ArrayAttr rowEnds,
                              DenseI64ArrayAttr colBegins,
                              DenseI64ArrayAttr colEnds, ArrayAttr modes,
                              OperandRange indices, OperandRange offsets,
                              TypeRange indicesTypes, TypeRange offsetsTypes) {
  printer << "[";
  printer.increaseIndent();
  for (unsigned i = 0, e = tables.size(); i < e; ++i) {
    if (i)
      printer << ",";
    printer.printNewline();
    printer << tables[i];
    if (rowBegins && rowEnds && i < rowBegins.size() && i < rowEnds.size() &&
        rowEnds[i] != ::neuroshard::kAllRows)
      printer << " rows " << rowBegins[i] << " to " << rowEnds[i];
    printer << " cols " << colBegins[i] << " to " << colEnds[i] << " "
            << stringifyPoolingMode(cast<PoolingModeAttr>(modes[i]).getValue())
            << "(" << indices[i] << ", " << offsets[i] << " : "
            << indicesTypes[i] << ", " << offsetsTypes[i] << ")";
  }
  printer.decreaseIndent();
  printer.printNewline();
  printer << "]";
}

#define GET_OP_CLASSES
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShardOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Shared checks
//===----------------------------------------------------------------------===//

/// Checks a device index against the enclosing module's topology, if any.
static LogicalResult verifyDeviceInTopology(Operation *op, int64_t device,
                                            StringRef what) {
  TopologyAttr topology = getEnclosingTopology(op);
  if (topology && device >= topology.getDevices())
    return op->emitOpError()
           << what << " device " << device << " but the topology has "
           << topology.getDevices() << " devices";
  return success();
}

/// Resolves `symbol` to a table, or reports why it does not name one.
static FailureOr<TableOp> lookupTable(Operation *op,
                                      SymbolTableCollection &symbolTable,
                                      FlatSymbolRefAttr symbol) {
  Operation *target = symbolTable.lookupNearestSymbolFrom(op, symbol);
  if (!target)
    return op->emitOpError() << "refers to unknown table " << symbol;
  auto table = dyn_cast<TableOp>(target);
  if (!table)
    return op->emitOpError()
           << "refers to " << symbol << ", which is a '" << target->getName()
           << "', not a 'neuroshard.table'";
  return table;
}

/// Checks the offsets of one lookup against the batch size of its result.
static LogicalResult verifyBatch(Operation *op, Value offsets, int64_t batch,
                                 StringRef what) {
  auto offsetsType = cast<RankedTensorType>(offsets.getType());
  if (offsetsType.isDynamicDim(0) || ShapedType::isDynamic(batch))
    return success();
  if (offsetsType.getDimSize(0) != batch + 1)
    return op->emitOpError()
           << what << " has " << offsetsType.getDimSize(0)
           << " offsets but the result has " << batch << " bags; expected "
           << batch + 1 << " offsets (one per bag plus the end)";
  return success();
}

//===----------------------------------------------------------------------===//
// TableOp
//===----------------------------------------------------------------------===//

int64_t TableOp::getSizeInBytes() {
  return getNumRows() * getNumCols() *
         (getElementType().getIntOrFloatBitWidth() / 8);
}

LogicalResult TableOp::verify() {
  StringRef name = getSymName();
  auto broken = [&](const std::string &violation) {
    return emitOpError() << "table '" << name << "': " << violation;
  };
  using ::neuroshard::RuleViolation;
  if (RuleViolation v = ::neuroshard::checkRows(getNumRows()))
    return broken(*v);
  if (RuleViolation v = ::neuroshard::checkDim(getNumCols()))
    return broken(*v);
  if (RuleViolation v = ::neuroshard::checkTableBytes(
          getNumRows(), getNumCols(),
          getElementType().getIntOrFloatBitWidth() / 8))
    return broken(*v);
  if (std::optional<double> pooling = getPoolingFactorValue())
    if (RuleViolation v = ::neuroshard::checkPoolingFactor(*pooling))
      return broken(*v);
  if (std::optional<ArrayRef<double>> hist = getAccessHist())
    if (RuleViolation v = ::neuroshard::checkAccessHistogram(*hist))
      return broken(*v);
  if (std::optional<StringRef> path = getModulePath()) {
    if (path->empty())
      return broken("'module_path' is empty; leave it out to name the table "
                    "by its symbol");
    // Reports and plans carry it as a table name.
    if (RuleViolation v = ::neuroshard::checkTableName(*path))
      return broken("'module_path': " + *v);
  }

  if (std::optional<ArrayAttr> kinds = getShardingTypes()) {
    if (kinds->empty())
      return broken("'sharding_types' is empty; leave it out to allow every "
                    "kind");
    for (StringRef kind : kinds->getAsValueRange<StringAttr>())
      if (!::neuroshard::parseShardingKind(kind))
        return broken("'sharding_types' has '" + kind.str() +
                      "', not one of: " + ::neuroshard::shardingKindList());
  }

  std::optional<int64_t> pinned = getPinnedDevice();
  TopologyAttr topology = getEnclosingTopology(*this);
  if (pinned && topology)
    if (RuleViolation v =
            ::neuroshard::checkPinnedDevice(*pinned, topology.getDevices()))
      return broken(*v);

  std::optional<ArrayAttr> shardsAttr = getShards();
  if (!shardsAttr)
    return success();
  SmallVector<ShardAttr> shards =
      llvm::to_vector(shardsAttr->getAsRange<ShardAttr>());
  if (shards.empty())
    return emitOpError() << "table '" << name << "' has an empty shard list";
  int64_t dim = getNumCols();
  bool split = shards.size() > 1;
  if (split && getNoSplit())
    return emitOpError() << "table '" << name << "' is marked no_split but "
                         << "has " << shards.size() << " shards";
  std::vector<::neuroshard::Shard> pieces;
  for (ShardAttr shard : shards) {
    if (shard.getColEnd() > dim)
      return emitOpError() << "table '" << name << "' has a shard with "
                           << "columns [" << shard.getColBegin() << ", "
                           << shard.getColEnd() << ") outside its " << dim
                           << " columns";
    if (!shard.hasAllRows() && shard.getRowEnd() > getNumRows())
      return emitOpError() << "table '" << name << "' has a shard with "
                           << "rows [" << shard.getRowBegin() << ", "
                           << shard.getRowEnd() << ") outside its "
                           << getNumRows() << " rows";
    if (split)
      for (int64_t boundary : {shard.getColBegin(), shard.getColEnd()})
        if (boundary % ::neuroshard::kColumnAlignment != 0)
          return emitOpError() << "table '" << name << "' is split at column "
                               << boundary << ", which is not a multiple of 4";
    if (failed(verifyDeviceInTopology(*this, shard.getDevice(),
                                      "table '" + name.str() +
                                          "' has a shard on")))
      return failure();
    if (std::optional<int64_t> pinnedTo = getPinnedDevice();
        pinnedTo && shard.getDevice() != *pinnedTo)
      return emitOpError() << "table '" << name << "' is pinned to device "
                           << *pinnedTo << " but has a shard on device "
                           << shard.getDevice();
    int64_t shardRows = shard.getRowEndIn(getNumRows()) - shard.getRowBegin();
    if (shard.getCacheRows() > shardRows)
      return emitOpError() << "table '" << name << "' has a shard on device "
                           << shard.getDevice() << " that caches "
                           << shard.getCacheRows() << " rows but holds only "
                           << shardRows;
    if (shard.isCached() != shards.front().isCached()) {
      ShardAttr cached = shard.isCached() ? shard : shards.front();
      ShardAttr uncached = shard.isCached() ? shards.front() : shard;
      return emitOpError() << "table '" << name << "' caches its shard on "
                           << "device " << cached.getDevice()
                           << " but not the one on device "
                           << uncached.getDevice()
                           << "; a table lives in host memory whole, every "
                              "shard behind a cache, or not at all";
    }
    pieces.push_back(toPlanShard(shard, /*table=*/0, getNumRows()));
  }

  // The planner's tiling rules, with its words.
  ::neuroshard::TableSpec spec;
  spec.name = name.str();
  spec.rows = getNumRows();
  spec.dim = dim;
  std::optional<unsigned> numDevices;
  if (topology)
    numDevices = static_cast<unsigned>(topology.getDevices());
  std::vector<const ::neuroshard::Shard *> pointers;
  for (const ::neuroshard::Shard &piece : pieces)
    pointers.push_back(&piece);
  if (llvm::Error err =
          ::neuroshard::checkTableTiling(spec, numDevices, pointers))
    return emitOpError() << llvm::toString(std::move(err));
  return success();
}

//===----------------------------------------------------------------------===//
// EmbeddingBagOp
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingBagOp::verify() {
  if (getPoolingFactor().has_value() != getAccessHist().has_value())
    return emitOpError() << "has '"
                         << (getPoolingFactor() ? "pooling_factor"
                                                : "access_hist")
                         << "' but not '"
                         << (getPoolingFactor() ? "access_hist"
                                                : "pooling_factor")
                         << "'; a lookup's statistics come in pairs";
  if (std::optional<APFloat> pooling = getPoolingFactor())
    if (::neuroshard::RuleViolation v = ::neuroshard::checkStatistics(
            pooling->convertToDouble(), *getAccessHist()))
      return emitOpError() << "lookup statistics: " << *v;
  return verifyBatch(*this, getOffsets(), getResult().getType().getDimSize(0),
                     "lookup");
}

LogicalResult
EmbeddingBagOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<TableOp> table = lookupTable(*this, symbolTable, getTableAttr());
  if (failed(table))
    return failure();
  RankedTensorType resultType = getResult().getType();
  if (!resultType.isDynamicDim(1) &&
      resultType.getDimSize(1) != table->getNumCols())
    return emitOpError() << "result has " << resultType.getDimSize(1)
                         << " columns but table '" << table->getSymName()
                         << "' has dim " << table->getNumCols();
  if (resultType.getElementType() != table->getElementType())
    return emitOpError() << "result element type "
                         << resultType.getElementType()
                         << " differs from table '" << table->getSymName()
                         << "' element type " << table->getElementType();
  // A table's statistics describe one batch of its lookups' batch size, and
  // a lookup's own statistics one batch of its bags.
  bool own = getPoolingFactor().has_value();
  std::optional<double> pooling =
      own ? std::optional<double>(getPoolingFactor()->convertToDouble())
          : table->getPoolingFactorValue();
  std::optional<ArrayRef<double>> hist =
      own ? getAccessHist() : table->getAccessHist();
  if (pooling && hist && !resultType.isDynamicDim(0))
    if (::neuroshard::RuleViolation v =
            ::neuroshard::checkAccessHistogramForBatch(
                *hist, table->getNumRows(), *pooling, resultType.getDimSize(0)))
      return emitOpError() << (own ? "lookup statistics of table '" : "table '")
                           << table->getSymName() << "': " << *v;
  return success();
}

//===----------------------------------------------------------------------===//
// FusedEmbeddingBagOp
//===----------------------------------------------------------------------===//

StringRef FusedEmbeddingBagOp::getEntryTable(unsigned i) {
  return cast<FlatSymbolRefAttr>(getTables()[i]).getValue();
}

/// Checks the entries of a fused lookup or its SGD update against each other
/// and against `pooled`, the `B x sum(width)` tensor they fill or read (the
/// op's `what`).
template <typename FusedOp>
static LogicalResult verifyFusedEntries(FusedOp op, RankedTensorType pooled,
                                        StringRef what) {
  size_t entries = op.getTables().size();
  if (entries == 0)
    return op.emitOpError() << "has no entries";
  if (op.getColBegins().size() != entries ||
      op.getColEnds().size() != entries || op.getModes().size() != entries ||
      op.getIndices().size() != entries)
    return op.emitOpError()
           << "has " << entries << " tables but " << op.getColBegins().size()
           << " column begins, " << op.getColEnds().size() << " column ends, "
           << op.getModes().size() << " modes and " << op.getIndices().size()
           << " index operands";
  if (failed(verifyDeviceInTopology(op, op.getDevice(), "runs on")))
    return failure();
  if (bool(op.getRowBegins()) != bool(op.getRowEnds()))
    return op.emitOpError() << "has one of 'row_begins' and 'row_ends'; row "
                               "ranges need both";
  if (op.getRowBegins() && (op.getRowBegins()->size() != entries ||
                            op.getRowEnds()->size() != entries))
    return op.emitOpError()
           << "has " << entries << " entries but " << op.getRowBegins()->size()
           << " row begins and " << op.getRowEnds()->size() << " row ends";
  for (size_t i = 0; i < entries && op.getRowBegins(); ++i) {
    int64_t first = (*op.getRowBegins())[i], end = (*op.getRowEnds())[i];
    if (first < 0 || end <= first)
      return op.emitOpError() << "entry " << i << " has an empty or negative "
                              << "row range [" << first << ", " << end << ")";
  }

  int64_t width = 0;
  for (size_t i = 0; i < entries; ++i) {
    int64_t begin = op.getColBegins()[i], end = op.getColEnds()[i];
    if (begin < 0 || end <= begin)
      return op.emitOpError()
             << "entry " << i << " has an empty or negative "
             << "column range [" << begin << ", " << end << ")";
    width += end - begin;
    if (getElementTypeOrSelf(op.getIndices()[i].getType()) !=
        getElementTypeOrSelf(op.getOffsets()[i].getType()))
      return op.emitOpError()
             << "entry " << i << " has indices of type "
             << op.getIndices()[i].getType() << " but offsets of type "
             << op.getOffsets()[i].getType()
             << "; their element types must match";
    if (failed(verifyBatch(op, op.getOffsets()[i], pooled.getDimSize(0),
                           "entry " + std::to_string(i))))
      return failure();
  }
  if (!pooled.isDynamicDim(1) && pooled.getDimSize(1) != width)
    return op.emitOpError() << what << " has " << pooled.getDimSize(1)
                            << " columns but the entries' column ranges add "
                            << "up to " << width;
  return success();
}

/// Checks that every entry of a fused lookup or its SGD update names a table
/// shard placed on the op's device, of the element type of `pooled`, which
/// `relation` names ("into a result").
template <typename FusedOp>
static LogicalResult
verifyFusedTables(FusedOp op, SymbolTableCollection &symbolTable,
                  RankedTensorType pooled, StringRef relation) {
  Type elementType = pooled.getElementType();
  for (unsigned i = 0, e = op.getNumEntries(); i < e; ++i) {
    FailureOr<TableOp> table = lookupTable(
        op, symbolTable, cast<FlatSymbolRefAttr>(op.getTables()[i]));
    if (failed(table))
      return failure();
    StringRef name = table->getSymName();
    int64_t begin = op.getColBegins()[i], end = op.getColEnds()[i];
    if (end > table->getNumCols())
      return op.emitOpError()
             << "entry " << i << " reads columns [" << begin << ", " << end
             << ") of table '" << name << "', which has " << table->getNumCols()
             << " columns";
    if (table->getElementType() != elementType)
      return op.emitOpError()
             << "entry " << i << " reads table '" << name
             << "' of element type " << table->getElementType() << " "
             << relation << " of element type " << elementType;
    bool rowPiece = isRowPieceEntry(op, i);
    int64_t firstRow = getEntryRowBegin(op, i);
    int64_t endRow = rowPiece ? (*op.getRowEnds())[i] : table->getNumRows();
    if (endRow > table->getNumRows())
      return op.emitOpError()
             << "entry " << i << " reads rows [" << firstRow << ", " << endRow
             << ") of table '" << name << "', which has " << table->getNumRows()
             << " rows";
    std::optional<ArrayAttr> shards = table->getShards();
    if (!shards)
      continue;
    // The entry's piece as the plan writes it (every row as kAllRows).
    ::neuroshard::Shard wanted;
    wanted.colBegin = begin;
    wanted.colEnd = end;
    wanted.device = static_cast<unsigned>(op.getDevice());
    wanted.setRows(firstRow, endRow, table->getNumRows());
    bool placedHere =
        llvm::any_of(shards->getAsRange<ShardAttr>(), [&](ShardAttr shard) {
          ::neuroshard::Shard piece =
              toPlanShard(shard, 0, table->getNumRows());
          return piece.device == wanted.device &&
                 piece.colBegin == wanted.colBegin &&
                 piece.colEnd == wanted.colEnd &&
                 piece.rowBegin == wanted.rowBegin &&
                 piece.rowEnd == wanted.rowEnd;
        });
    if (!placedHere) {
      InFlightDiagnostic diag = op.emitOpError() << "entry " << i << " reads ";
      if (rowPiece)
        diag << "rows [" << firstRow << ", " << endRow << ") of ";
      return diag << "columns [" << begin << ", " << end << ") of table '"
                  << name << "' on device " << op.getDevice()
                  << ", but the table places no such shard there";
    }
  }
  return success();
}

LogicalResult FusedEmbeddingBagOp::verify() {
  if (failed(verifyFusedEntries(*this, getResult().getType(), "result")))
    return failure();
  std::optional<ArrayRef<double>> pooling = getPoolingFactors();
  std::optional<ArrayRef<double>> hists = getAccessHists();
  if (pooling.has_value() != hists.has_value())
    return emitOpError() << "has '"
                         << (pooling ? "pooling_factors" : "access_hists")
                         << "' but not '"
                         << (pooling ? "access_hists" : "pooling_factors")
                         << "'; the entries' statistics come in pairs";
  if (!pooling)
    return success();
  size_t entries = getNumEntries();
  if (pooling->size() != entries ||
      hists->size() != entries * ::neuroshard::kNumAccessBins)
    return emitOpError() << "has " << entries << " entries but "
                         << pooling->size() << " pooling factors and "
                         << hists->size() << " histogram bins; expected "
                         << entries << " and "
                         << entries * ::neuroshard::kNumAccessBins;
  for (size_t i = 0; i < entries; ++i) {
    if (::neuroshard::RuleViolation v = ::neuroshard::checkStatistics(
            (*pooling)[i], hists->slice(i * ::neuroshard::kNumAccessBins,
                                        ::neuroshard::kNumAccessBins)))
      return emitOpError() << "entry " << i << " statistics: " << *v;
  }
  return success();
}

LogicalResult
FusedEmbeddingBagOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyFusedTables(*this, symbolTable, getResult().getType(),
                           "into a result");
}

//===----------------------------------------------------------------------===//
// FusedEmbeddingBagSGDOp
//===----------------------------------------------------------------------===//

StringRef FusedEmbeddingBagSGDOp::getEntryTable(unsigned i) {
  return cast<FlatSymbolRefAttr>(getTables()[i]).getValue();
}

LogicalResult FusedEmbeddingBagSGDOp::verify() {
  if (getAllReduce()) {
    auto module = (*this)->getParentOfType<ModuleOp>();
    if (!module || !getProgramRank(module))
      return emitOpError() << "sums the replicas' gradients across ranks "
                              "('all_reduce'), which only the program of one "
                              "rank can do";
    for (unsigned i = 0, e = getNumEntries(); i < e; ++i)
      if (isRowPieceEntry(*this, i))
        return emitOpError() << "entry " << i << " is a row piece of table '"
                             << getEntryTable(i)
                             << "'; 'all_reduce' updates whole replicas only";
  }
  return verifyFusedEntries(*this, getGradient().getType(), "gradient");
}

LogicalResult
FusedEmbeddingBagSGDOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyFusedTables(*this, symbolTable, getGradient().getType(),
                           "with a gradient");
}

//===----------------------------------------------------------------------===//
// AllToAllOp
//===----------------------------------------------------------------------===//

LogicalResult AllToAllOp::verify() {
  size_t devices = getInputs().size();
  if (devices == 0)
    return emitOpError() << "needs at least one device";
  if (getResults().size() != devices)
    return emitOpError() << "has " << devices << " inputs but "
                         << getResults().size()
                         << " results; expected one of each per device";
  TopologyAttr topology = getEnclosingTopology(*this);
  if (topology && static_cast<int64_t>(devices) != topology.getDevices())
    return emitOpError() << "exchanges between " << devices
                         << " devices but the topology has "
                         << topology.getDevices();

  auto inputType = [&](unsigned i) {
    return cast<RankedTensorType>(getInputs()[i].getType());
  };
  auto resultType = [&](unsigned i) {
    return cast<RankedTensorType>(getResults()[i].getType());
  };
  Type elementType = inputType(0).getElementType();
  int64_t batch = inputType(0).getDimSize(0);
  int64_t width = 0;
  bool staticShapes = true;
  for (unsigned d = 0; d < devices; ++d) {
    RankedTensorType type = inputType(d);
    if (type.getElementType() != elementType ||
        resultType(d).getElementType() != elementType)
      return emitOpError() << "mixes element types " << elementType << " and "
                           << (type.getElementType() != elementType
                                   ? type.getElementType()
                                   : resultType(d).getElementType());
    if (type.getDimSize(0) != batch)
      return emitOpError() << "input " << d << " has " << type.getDimSize(0)
                           << " rows but input 0 has " << batch
                           << "; every device computes the whole batch";
    staticShapes &= type.hasStaticShape() && resultType(d).hasStaticShape();
    width += type.getDimSize(1);
  }
  if (!staticShapes)
    return success();
  int64_t rows = 0;
  for (unsigned d = 0; d < devices; ++d) {
    if (resultType(d).getDimSize(1) != width)
      return emitOpError() << "result " << d << " has "
                           << resultType(d).getDimSize(1)
                           << " columns; expected " << width
                           << ", the sum of the input widths";
    rows += resultType(d).getDimSize(0);
  }
  if (rows != batch)
    return emitOpError() << "results hold " << rows << " rows in all but the "
                         << "batch has " << batch;
  return success();
}

//===----------------------------------------------------------------------===//
// ExchangeOp
//===----------------------------------------------------------------------===//

/// Checks what every rank's side of a collective (which `verb`s data
/// between `ranks` ranks) needs: ranks, as many as the topology's devices,
/// `rank` one of them, and static tensors `whole` and `own` of one element
/// type.
static LogicalResult verifyCollectiveSide(Operation *op, int64_t rank,
                                          size_t ranks, StringRef verb,
                                          RankedTensorType whole,
                                          RankedTensorType own) {
  if (ranks == 0)
    return op->emitOpError() << "needs at least one rank";
  TopologyAttr topology = getEnclosingTopology(op);
  if (topology && static_cast<int64_t>(ranks) != topology.getDevices())
    return op->emitOpError()
           << verb << " between " << ranks << " ranks but the topology has "
           << topology.getDevices() << " devices";
  if (rank >= static_cast<int64_t>(ranks))
    return op->emitOpError() << "runs on rank " << rank << " but " << verb
                             << " between " << ranks << " ranks";
  if (whole.getElementType() != own.getElementType())
    return op->emitOpError() << "mixes element types " << whole.getElementType()
                             << " and " << own.getElementType();
  if (!whole.hasStaticShape() || !own.hasStaticShape())
    return op->emitOpError() << "needs static shapes";
  return success();
}

/// Checks one rank's side of the exchange: `whole` is the rank's `B x
/// widths[rank]` tensor (its lookup, or that lookup's gradient) and `own` its
/// `batches[rank] x sum(widths)` slice (or that slice's gradient); `wholeName`
/// and `ownName` say which operand or result each one is.
static LogicalResult
verifyExchangeSide(Operation *op, int64_t rank, ArrayRef<int64_t> widths,
                   ArrayRef<int64_t> batches, RankedTensorType whole,
                   StringRef wholeName, RankedTensorType own,
                   StringRef ownName) {
  size_t ranks = widths.size();
  if (ranks != 0 && batches.size() != ranks)
    return op->emitOpError()
           << "lists " << ranks << " widths but " << batches.size()
           << " batches; expected one of each per rank";
  if (failed(verifyCollectiveSide(op, rank, ranks, "exchanges", whole, own)))
    return failure();
  int64_t width = 0, batch = 0;
  for (size_t d = 0; d < ranks; ++d) {
    if (widths[d] < 0 || batches[d] < 0)
      return op->emitOpError() << "rank " << d << " has a negative "
                               << (widths[d] < 0 ? "width " : "batch ")
                               << (widths[d] < 0 ? widths[d] : batches[d]);
    width += widths[d];
    batch += batches[d];
  }
  if (whole.getDimSize(0) != batch || whole.getDimSize(1) != widths[rank])
    return op->emitOpError()
           << wholeName << " is " << whole.getDimSize(0) << " x "
           << whole.getDimSize(1) << " but rank " << rank << " computes "
           << batch << " x " << widths[rank]
           << " (the whole batch, its own columns)";
  if (own.getDimSize(0) != batches[rank] || own.getDimSize(1) != width)
    return op->emitOpError() << ownName << " is " << own.getDimSize(0) << " x "
                             << own.getDimSize(1) << " but rank " << rank
                             << " receives " << batches[rank] << " x " << width
                             << " (its rows, every rank's columns)";
  return success();
}

LogicalResult ExchangeOp::verify() {
  return verifyExchangeSide(*this, static_cast<int64_t>(getRank()), getWidths(),
                            getBatches(), getInput().getType(), "input",
                            getResult().getType(), "result");
}

//===----------------------------------------------------------------------===//
// ExchangeGradientOp
//===----------------------------------------------------------------------===//

LogicalResult ExchangeGradientOp::verify() {
  return verifyExchangeSide(*this, static_cast<int64_t>(getRank()), getWidths(),
                            getBatches(), getResult().getType(), "result",
                            getGradient().getType(), "gradient");
}

//===----------------------------------------------------------------------===//
// RankReduceScatterOp and RankReduceScatterGradientOp
//===----------------------------------------------------------------------===//

/// Both directions of a rank's side of a reduce-scatter: `whole` is the
/// B x W tensor of the whole batch (the partial sums, or their gradient),
/// `own` the rank's B_rank x W slice.
static LogicalResult verifyReduceScatterSide(Operation *op, int64_t rank,
                                             ArrayRef<int64_t> batches,
                                             RankedTensorType whole,
                                             StringRef wholeName,
                                             RankedTensorType own,
                                             StringRef ownName, Value offsets) {
  size_t ranks = batches.size();
  if (failed(verifyCollectiveSide(op, rank, ranks, "scatters", whole, own)))
    return failure();
  int64_t batch = 0;
  for (size_t d = 0; d < ranks; ++d) {
    if (batches[d] < 0)
      return op->emitOpError()
             << "rank " << d << " has a negative batch " << batches[d];
    batch += batches[d];
  }
  if (whole.getDimSize(0) != batch)
    return op->emitOpError() << wholeName << " has " << whole.getDimSize(0)
                             << " rows but the batches sum to " << batch;
  if (own.getDimSize(0) != batches[rank] ||
      own.getDimSize(1) != whole.getDimSize(1))
    return op->emitOpError()
           << ownName << " is " << own.getDimSize(0) << " x "
           << own.getDimSize(1) << " but rank " << rank << " owns "
           << batches[rank] << " x " << whole.getDimSize(1)
           << " (its rows, the same columns)";
  if (offsets && failed(verifyBatch(op, offsets, batch, "the mean's offsets")))
    return failure();
  return success();
}

LogicalResult RankReduceScatterOp::verify() {
  return verifyReduceScatterSide(*this, static_cast<int64_t>(getRank()),
                                 getBatches(), getInput().getType(), "input",
                                 getResult().getType(), "result",
                                 getMeanOffsets());
}

LogicalResult RankReduceScatterGradientOp::verify() {
  return verifyReduceScatterSide(*this, static_cast<int64_t>(getRank()),
                                 getBatches(), getResult().getType(), "result",
                                 getGradient().getType(), "gradient",
                                 getMeanOffsets());
}

//===----------------------------------------------------------------------===//
// BucketizeOp
//===----------------------------------------------------------------------===//

LogicalResult BucketizeOp::verify() {
  ArrayRef<int64_t> rows = getRows();
  if (rows.size() < 2)
    return emitOpError() << "has " << rows.size()
                         << " row boundaries; a block needs two";
  if (rows.front() < 0)
    return emitOpError() << "starts its first block at row " << rows.front()
                         << ", which is negative";
  for (size_t j = 1; j < rows.size(); ++j)
    if (rows[j] <= rows[j - 1])
      return emitOpError() << "has block " << j - 1 << " of rows ["
                           << rows[j - 1] << ", " << rows[j]
                           << "), which is empty; boundaries must increase";
  size_t blocks = rows.size() - 1;
  if (getBlockIndices().size() != blocks)
    return emitOpError() << "has " << blocks << " row blocks but "
                         << getBlockIndices().size()
                         << " pairs of results; expected one per block";
  Type indexType = getElementTypeOrSelf(getIndices().getType());
  if (getElementTypeOrSelf(getOffsets().getType()) != indexType)
    return emitOpError() << "has indices of type " << getIndices().getType()
                         << " but offsets of type " << getOffsets().getType()
                         << "; their element types must match";
  for (size_t j = 0; j < blocks; ++j) {
    if (getElementTypeOrSelf(getBlockIndices()[j].getType()) != indexType ||
        getElementTypeOrSelf(getBlockOffsets()[j].getType()) != indexType)
      return emitOpError() << "block " << j
                           << " changes the index element type " << indexType;
    if (getBlockOffsets()[j].getType() != getOffsets().getType())
      return emitOpError() << "block " << j << " has offsets of type "
                           << getBlockOffsets()[j].getType()
                           << " but the lookup's are " << getOffsets().getType()
                           << "; every block keeps every bag";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ReduceScatterOp
//===----------------------------------------------------------------------===//

LogicalResult ReduceScatterOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "has no partial sums to reduce";
  if (getResults().empty())
    return emitOpError() << "has no results; expected one per device";
  TopologyAttr topology = getEnclosingTopology(*this);
  if (topology &&
      static_cast<int64_t>(getResults().size()) != topology.getDevices())
    return emitOpError() << "scatters to " << getResults().size()
                         << " devices but the topology has "
                         << topology.getDevices();
  auto first = cast<RankedTensorType>(getInputs()[0].getType());
  for (auto [i, input] : llvm::enumerate(getInputs()))
    if (input.getType() != first)
      return emitOpError() << "input " << i << " is " << input.getType()
                           << " but input 0 is " << first
                           << "; the partial sums of one lookup's columns "
                              "have one type";
  int64_t rows = 0;
  bool staticShapes = first.hasStaticShape();
  for (auto [d, result] : llvm::enumerate(getResults())) {
    auto type = cast<RankedTensorType>(result.getType());
    if (type.getElementType() != first.getElementType())
      return emitOpError() << "result " << d << " has element type "
                           << type.getElementType() << " but the inputs "
                           << first.getElementType();
    staticShapes &= type.hasStaticShape();
    if (!staticShapes)
      continue;
    if (type.getDimSize(1) != first.getDimSize(1))
      return emitOpError() << "result " << d << " has " << type.getDimSize(1)
                           << " columns but the inputs have "
                           << first.getDimSize(1);
    rows += type.getDimSize(0);
  }
  if (staticShapes && rows != first.getDimSize(0))
    return emitOpError() << "results hold " << rows << " rows in all but the "
                         << "batch has " << first.getDimSize(0);
  if (Value offsets = getMeanOffsets())
    if (failed(verifyBatch(*this, offsets, first.getDimSize(0),
                           "the mean's offsets")))
      return failure();
  return success();
}
