//===- NeuroShardAttrs.cpp - NeuroShard attributes ------------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"
#include "neuroshard/Sharding/Problem.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"

#include <cmath>
#include <cstdlib>

using namespace mlir;
using namespace mlir::neuroshard;

#include "neuroshard/Dialect/NeuroShard/IR/NeuroShardEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShardAttrs.cpp.inc"

void NeuroShardDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShardAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// ShardAttr
//===----------------------------------------------------------------------===//

LogicalResult ShardAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                int64_t colBegin, int64_t colEnd,
                                int64_t device, int64_t rowBegin,
                                int64_t rowEnd, bool replica,
                                int64_t cacheRows) {
  if (colBegin < 0 || colEnd <= colBegin)
    return emitError() << "shard column range [" << colBegin << ", " << colEnd
                       << ") is empty or negative";
  if (rowBegin < 0 || rowEnd <= rowBegin)
    return emitError() << "shard row range [" << rowBegin << ", " << rowEnd
                       << ") is empty or negative";
  if (device < 0)
    return emitError() << "shard device " << device << " is negative";
  if (replica && (rowBegin != 0 || rowEnd != ::neuroshard::kAllRows))
    return emitError() << "the replica on device " << device << " names rows ["
                       << rowBegin << ", " << rowEnd
                       << "); a replica holds every row";
  if (cacheRows < 0)
    return emitError() << "the shard on device " << device << " caches "
                       << cacheRows << " rows; a cache holds at least 1";
  if (cacheRows > 0 && replica)
    return emitError() << "the replica on device " << device << " caches "
                       << cacheRows
                       << " rows; a replica lives in device memory";
  if (cacheRows > 0 && rowEnd != ::neuroshard::kAllRows &&
      cacheRows > rowEnd - rowBegin)
    return emitError() << "the shard on device " << device << " caches "
                       << cacheRows << " rows but holds only "
                       << rowEnd - rowBegin << " (rows [" << rowBegin << ", "
                       << rowEnd << "))";
  return success();
}

/// `= begin to end`, after a range's keyword.
static ParseResult parseRange(AsmParser &parser, int64_t &begin, int64_t &end) {
  return failure(parser.parseEqual() || parser.parseInteger(begin) ||
                 parser.parseKeyword("to") || parser.parseInteger(end));
}

/// `rows = a to b, cols = c to d, device = n` with the rows optional, then
/// optionally `cache_rows = c` or `replica`.
Attribute ShardAttr::parse(AsmParser &parser, Type) {
  int64_t rowBegin = 0, rowEnd = ::neuroshard::kAllRows;
  int64_t colBegin = 0, colEnd = 0, device = 0, cacheRows = 0;
  bool replica = false;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess())
    return {};
  if (succeeded(parser.parseOptionalKeyword("rows")) &&
      (parseRange(parser, rowBegin, rowEnd) || parser.parseComma()))
    return {};
  if (parser.parseKeyword("cols") || parseRange(parser, colBegin, colEnd) ||
      parser.parseComma() || parser.parseKeyword("device") ||
      parser.parseEqual() || parser.parseInteger(device))
    return {};
  if (succeeded(parser.parseOptionalComma())) {
    if (succeeded(parser.parseOptionalKeyword("cache_rows"))) {
      if (parser.parseEqual() || parser.parseInteger(cacheRows))
        return {};
    } else if (parser.parseKeyword("replica", " or 'cache_rows'")) {
      return {};
    } else {
      replica = true;
    }
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<ShardAttr>(loc, parser.getContext(), colBegin,
                                      colEnd, device, rowBegin, rowEnd, replica,
                                      cacheRows);
}

void ShardAttr::print(AsmPrinter &printer) const {
  printer << "<";
  if (!hasAllRows())
    printer << "rows = " << getRowBegin() << " to " << getRowEnd() << ", ";
  printer << "cols = " << getColBegin() << " to " << getColEnd()
          << ", device = " << getDevice();
  if (getReplica())
    printer << ", replica";
  if (isCached())
    printer << ", cache_rows = " << getCacheRows();
  printer << ">";
}

::neuroshard::Shard
mlir::neuroshard::toPlanShard(ShardAttr shard, unsigned table, int64_t rows) {
  ::neuroshard::Shard piece;
  piece.table = table;
  piece.colBegin = shard.getColBegin();
  piece.colEnd = shard.getColEnd();
  piece.device = static_cast<unsigned>(shard.getDevice());
  piece.setRows(shard.getRowBegin(), shard.getRowEnd(), rows);
  piece.replica = shard.getReplica();
  return piece;
}

ShardAttr mlir::neuroshard::toShardAttr(MLIRContext *context,
                                        const ::neuroshard::Shard &shard,
                                        int64_t rows, int64_t cacheRows) {
  ::neuroshard::Shard piece = shard;
  piece.setRows(shard.rowBegin, shard.rowEnd, rows);
  return ShardAttr::get(context, piece.colBegin, piece.colEnd, piece.device,
                        piece.rowBegin, piece.rowEnd, piece.replica, cacheRows);
}

//===----------------------------------------------------------------------===//
// TopologyAttr
//===----------------------------------------------------------------------===//

/// The bandwidths of a topology that names none (Topology's defaults).
static const ::neuroshard::Topology kDefaultTopology;

TopologyAttr TopologyAttr::get(MLIRContext *context, int64_t devices,
                               DenseF64ArrayAttr memoryGb, int64_t nodes,
                               double hbmGbps, double intraNodeGbps,
                               double interNodeGbps, StringRef deviceKind,
                               double hostMemoryGb, double hostGbps) {
  return Base::get(context, devices, memoryGb, nodes, APFloat(hbmGbps),
                   APFloat(intraNodeGbps), APFloat(interNodeGbps), deviceKind,
                   APFloat(hostMemoryGb), APFloat(hostGbps));
}

TopologyAttr TopologyAttr::get(MLIRContext *context, int64_t devices,
                               DenseF64ArrayAttr memoryGb) {
  return get(
      context, devices, memoryGb, int64_t{1}, kDefaultTopology.hbmBandwidthGBps,
      kDefaultTopology.intraNodeBandwidthGBps,
      kDefaultTopology.interNodeBandwidthGBps, kDefaultTopology.deviceKind,
      kDefaultTopology.hostMemoryGB, kDefaultTopology.hostBandwidthGBps);
}

TopologyAttr
TopologyAttr::getChecked(function_ref<InFlightDiagnostic()> emitError,
                         MLIRContext *context, int64_t devices,
                         DenseF64ArrayAttr memoryGb) {
  return Base::getChecked(emitError, context, devices, memoryGb, int64_t{1},
                          APFloat(kDefaultTopology.hbmBandwidthGBps),
                          APFloat(kDefaultTopology.intraNodeBandwidthGBps),
                          APFloat(kDefaultTopology.interNodeBandwidthGBps),
                          kDefaultTopology.deviceKind,
                          APFloat(kDefaultTopology.hostMemoryGB),
                          APFloat(kDefaultTopology.hostBandwidthGBps));
}

LogicalResult TopologyAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, int64_t devices,
    DenseF64ArrayAttr memoryGbAttr, int64_t nodes, APFloat hbmBandwidth,
    APFloat intraNodeBandwidth, APFloat interNodeBandwidth,
    StringRef deviceKind, APFloat hostMemory, APFloat hostBandwidth) {
  double hbmGbps = hbmBandwidth.convertToDouble();
  double intraNodeGbps = intraNodeBandwidth.convertToDouble();
  double interNodeGbps = interNodeBandwidth.convertToDouble();
  if (!memoryGbAttr)
    return emitError() << "topology needs memory capacities";
  ArrayRef<double> memoryGb = memoryGbAttr.asArrayRef();
  if (::neuroshard::RuleViolation v = ::neuroshard::checkDeviceCount(devices))
    return emitError() << "topology: " << *v;
  if (static_cast<int64_t>(memoryGb.size()) != devices)
    return emitError() << "topology has " << devices << " devices but "
                       << memoryGb.size() << " memory capacities";
  for (auto [device, gb] : llvm::enumerate(memoryGb))
    if (::neuroshard::RuleViolation v = ::neuroshard::checkCapacityGB(gb))
      return emitError() << "topology: device " << device << ": " << *v;
  if (::neuroshard::RuleViolation v =
          ::neuroshard::checkNodeCount(nodes, devices))
    return emitError() << "topology: " << *v;
  for (auto [name, gbps] :
       {std::make_pair("hbm_gbps", hbmGbps),
        std::make_pair("intra_node_gbps", intraNodeGbps),
        std::make_pair("inter_node_gbps", interNodeGbps),
        std::make_pair("host_gbps", hostBandwidth.convertToDouble())})
    if (::neuroshard::RuleViolation v = ::neuroshard::checkBandwidthGBps(gbps))
      return emitError() << "topology: " << name << " " << *v;
  if (::neuroshard::RuleViolation v =
          ::neuroshard::checkHostMemoryGB(hostMemory.convertToDouble()))
    return emitError() << "topology: host_memory_gb " << *v;
  if (::neuroshard::RuleViolation v = ::neuroshard::checkDeviceKind(deviceKind))
    return emitError() << "topology: device_kind " << *v;
  return success();
}

double TopologyAttr::getDeviceMemoryGb(int64_t device) const {
  return getMemoryGb()[device];
}

/// Prints `value` in the shortest form that parses back to the same double,
/// always with a decimal point so that it reads as a float.
static void printRoundTripDouble(AsmPrinter &printer, double value) {
  char buffer[64];
  // Whole numbers of a sensible size print as such (80.0, not 8e+01).
  if (value == std::trunc(value) && std::abs(value) < 1e15) {
    printer << llvm::format("%.1f", value);
    return;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  StringRef text(buffer);
  printer << text;
  if (!text.contains_insensitive('e') && !text.contains('.'))
    printer << ".0";
}

Attribute TopologyAttr::parse(AsmParser &parser, Type) {
  int64_t devices = 0;
  SmallVector<double> memory;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeyword("devices") ||
      parser.parseEqual() || parser.parseInteger(devices) ||
      parser.parseComma() || parser.parseKeyword("memory_gb") ||
      parser.parseEqual())
    return {};
  auto parseOne = [&]() -> ParseResult {
    double gb = 0.0;
    if (parser.parseFloat(gb))
      return failure();
    memory.push_back(gb);
    return success();
  };
  if (succeeded(parser.parseOptionalLSquare())) {
    if (parser.parseCommaSeparatedList(parseOne) || parser.parseRSquare())
      return {};
  } else {
    if (parseOne())
      return {};
    // One capacity for every device.
    if (devices >= 1 && devices <= ::neuroshard::kMaxDevices)
      memory.assign(devices, memory.front());
  }
  int64_t nodes = 1;
  double hbm = kDefaultTopology.hbmBandwidthGBps;
  double intraNode = kDefaultTopology.intraNodeBandwidthGBps;
  double interNode = kDefaultTopology.interNodeBandwidthGBps;
  double hostMemory = kDefaultTopology.hostMemoryGB;
  double host = kDefaultTopology.hostBandwidthGBps;
  std::string kind = kDefaultTopology.deviceKind;
  while (succeeded(parser.parseOptionalComma())) {
    StringRef key;
    SMLoc keyLoc = parser.getCurrentLocation();
    if (parser.parseKeyword(&key) || parser.parseEqual())
      return {};
    ParseResult parsed =
        key == "nodes"             ? parser.parseInteger(nodes)
        : key == "hbm_gbps"        ? parser.parseFloat(hbm)
        : key == "intra_node_gbps" ? parser.parseFloat(intraNode)
        : key == "inter_node_gbps" ? parser.parseFloat(interNode)
        : key == "host_memory_gb"  ? parser.parseFloat(hostMemory)
        : key == "host_gbps"       ? parser.parseFloat(host)
        : key == "device_kind"
            ? parser.parseString(&kind)
            : (parser.emitError(keyLoc)
                   << "unknown topology field '" << key
                   << "' (expected nodes, hbm_gbps, intra_node_gbps, "
                      "inter_node_gbps, host_memory_gb, host_gbps or "
                      "device_kind)",
               failure());
    if (failed(parsed))
      return {};
  }
  if (parser.parseGreater())
    return {};
  return TopologyAttr::getChecked(
      [&] { return parser.emitError(loc); }, parser.getContext(), devices,
      DenseF64ArrayAttr::get(parser.getContext(), memory), nodes, APFloat(hbm),
      APFloat(intraNode), APFloat(interNode), kind, APFloat(hostMemory),
      APFloat(host));
}

void TopologyAttr::print(AsmPrinter &printer) const {
  ArrayRef<double> memory = getMemoryGb().asArrayRef();
  printer << "<devices = " << getDevices() << ", memory_gb = ";
  bool uniform = llvm::all_equal(memory);
  if (!uniform)
    printer << "[";
  llvm::interleaveComma(uniform ? memory.take_front() : memory, printer,
                        [&](double gb) { printRoundTripDouble(printer, gb); });
  if (!uniform)
    printer << "]";
  if (getNodes() != 1)
    printer << ", nodes = " << getNodes();
  for (auto [name, gbps, byDefault] :
       {std::make_tuple("hbm_gbps", getHbmGbps(),
                        kDefaultTopology.hbmBandwidthGBps),
        std::make_tuple("intra_node_gbps", getIntraNodeGbps(),
                        kDefaultTopology.intraNodeBandwidthGBps),
        std::make_tuple("inter_node_gbps", getInterNodeGbps(),
                        kDefaultTopology.interNodeBandwidthGBps),
        std::make_tuple("host_memory_gb", getHostMemoryGb(),
                        kDefaultTopology.hostMemoryGB),
        std::make_tuple("host_gbps", getHostGbps(),
                        kDefaultTopology.hostBandwidthGBps)}) {
    if (gbps == byDefault)
      continue;
    printer << ", " << name << " = ";
    printRoundTripDouble(printer, gbps);
  }
  if (getDeviceKind() != kDefaultTopology.deviceKind)
    printer << ", device_kind = \"" << getDeviceKind() << "\"";
  printer << ">";
}

//===----------------------------------------------------------------------===//
// Measured selection's record
//===----------------------------------------------------------------------===//

/// Fails, naming the field, unless `value` is finite and not negative.
static LogicalResult
checkNonNegative(function_ref<InFlightDiagnostic()> emitError, StringRef field,
                 const APFloat &value) {
  if (value.isFinite() && !value.isNegative())
    return success();
  return emitError() << "'" << field << "' must be a finite number >= 0, got "
                     << value.convertToDouble();
}

LogicalResult MeasuredCandidateAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, StringRef origin,
    APFloat predictedMs, APFloat measuredMs,
    DenseF64ArrayAttr measuredComputeMs, APFloat pairedRatio, APFloat meanRatio,
    uint64_t rounds, uint64_t roundsFaster, APFloat requiredGain) {
  if (origin.empty())
    return emitError() << "'origin' must name where the candidate came from";
  for (auto [field, value] : {std::make_pair("predicted_ms", predictedMs),
                              std::make_pair("measured_ms", measuredMs),
                              std::make_pair("paired_ratio", pairedRatio),
                              std::make_pair("mean_ratio", meanRatio),
                              std::make_pair("required_gain", requiredGain)})
    if (failed(checkNonNegative(emitError, field, value)))
      return failure();
  if (!measuredComputeMs || measuredComputeMs.empty())
    return emitError() << "'measured_compute_ms' must give one time per device";
  for (auto [device, ms] : llvm::enumerate(measuredComputeMs.asArrayRef()))
    if (failed(checkNonNegative(
            emitError, "measured_compute_ms[" + std::to_string(device) + "]",
            APFloat(ms))))
      return failure();
  if (roundsFaster > rounds)
    return emitError() << "'rounds_faster' (" << roundsFaster
                       << ") exceeds the candidate's 'rounds' (" << rounds
                       << ")";
  if (requiredGain.convertToDouble() >= 1.0)
    return emitError() << "'required_gain' must be below 1, got "
                       << requiredGain.convertToDouble();
  return success();
}

LogicalResult VerificationAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, StringRef host,
    StringRef device, uint64_t /*sets*/, uint64_t rounds, uint64_t draws,
    uint64_t /*roundsNeeded*/, APFloat seconds, APFloat secondsNeeded,
    APFloat minGain, APFloat roundSpread, uint64_t /*spreadFreedom*/,
    uint64_t racing, APFloat selectionNoise, uint64_t selectionNoiseComparisons,
    APFloat noiseGain, uint64_t chosen, uint64_t incumbent,
    StringRef /*experience*/, ArrayAttr candidates) {
  if (host.empty() || device.empty())
    return emitError() << "'host' and 'device' must name what the candidates "
                          "were timed on";
  for (auto [field, value] : {std::make_pair("seconds", seconds),
                              std::make_pair("seconds_needed", secondsNeeded),
                              std::make_pair("min_gain", minGain),
                              std::make_pair("round_spread", roundSpread),
                              std::make_pair("selection_noise", selectionNoise),
                              std::make_pair("noise_gain", noiseGain)})
    if (failed(checkNonNegative(emitError, field, value)))
      return failure();
  if (minGain.convertToDouble() >= 1.0)
    return emitError() << "'min_gain' must be below 1, got "
                       << minGain.convertToDouble();
  if (draws > rounds)
    return emitError() << "'draws' (" << draws << ") exceeds 'rounds' ("
                       << rounds << "): each round times one draw";
  if (!selectionNoiseComparisons &&
      (!selectionNoise.isZero() || !noiseGain.isZero()))
    return emitError() << "'selection_noise' and 'noise_gain' need the "
                          "'selection_noise_comparisons' they rest on";
  if (!candidates || candidates.empty())
    return emitError() << "'candidates' must list the candidates timed";
  for (auto [i, candidate] : llvm::enumerate(candidates))
    if (!isa<MeasuredCandidateAttr>(candidate))
      return emitError() << "candidate " << i
                         << " must be a #neuroshard.measured_candidate, got "
                         << candidate;
  for (auto [field, index] : {std::make_pair("chosen", chosen),
                              std::make_pair("incumbent", incumbent)})
    if (index >= candidates.size())
      return emitError() << "'" << field << "' names candidate " << index
                         << " of " << candidates.size();
  if (racing >= candidates.size())
    return emitError() << "'racing' counts " << racing
                       << " candidates besides the incumbent, of "
                       << candidates.size();
  return success();
}
