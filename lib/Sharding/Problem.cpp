//===- Problem.cpp - Tables and devices of a sharding problem -------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Sharding/Problem.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace neuroshard {

StringRef optimizerName(Optimizer optimizer) {
  switch (optimizer) {
  case Optimizer::SGD:
    return "sgd";
  case Optimizer::Adagrad:
    return "adagrad";
  case Optimizer::RowwiseAdagrad:
    return "rowwise-adagrad";
  case Optimizer::Adam:
    return "adam";
  }
  return "sgd";
}

static constexpr Optimizer kOptimizers[] = {Optimizer::SGD, Optimizer::Adagrad,
                                            Optimizer::RowwiseAdagrad,
                                            Optimizer::Adam};

std::optional<Optimizer> parseOptimizer(StringRef name) {
  for (Optimizer optimizer : kOptimizers)
    if (name == optimizerName(optimizer))
      return optimizer;
  return std::nullopt;
}

std::string optimizerNameList() {
  std::string names;
  for (Optimizer optimizer : kOptimizers)
    names += (names.empty() ? "" : ", ") + optimizerName(optimizer).str();
  return names;
}

bool isCPUDeviceKind(StringRef kind) {
  return kind == "cpu" || kind.starts_with("cpu-");
}

uint64_t Topology::optimizerStateBytes(const TableSpec &table,
                                       int64_t width) const {
  constexpr uint64_t kStateBytes = 4; // fp32
  uint64_t rows = static_cast<uint64_t>(table.rows);
  uint64_t cols = static_cast<uint64_t>(width);
  switch (optimizer) {
  case Optimizer::SGD:
    return 0;
  case Optimizer::Adagrad:
    return rows * cols * kStateBytes;
  case Optimizer::RowwiseAdagrad:
    return width > 0 ? rows * kStateBytes : 0;
  case Optimizer::Adam:
    return 2 * rows * cols * kStateBytes;
  }
  return 0;
}

static Error tableError(size_t index, const TableSpec &table,
                        const Twine &message) {
  return createStringError(inconvertibleErrorCode(), "tables[" + Twine(index) +
                                                         "] ('" + table.name +
                                                         "'): " + message);
}

Error validateProblem(ArrayRef<TableSpec> tables, const Topology &topology) {
  unsigned n = topology.numDevices();
  if (RuleViolation v = checkDeviceCount(n))
    return createStringError(inconvertibleErrorCode(), *v);
  for (unsigned d = 0; d < n; ++d)
    if (RuleViolation v = checkCapacityGB(topology.memoryGB[d]))
      return createStringError(inconvertibleErrorCode(),
                               formatv("device {0}: {1}", d, *v));
  if (RuleViolation v = checkReservedFraction(topology.reservedFraction))
    return createStringError(inconvertibleErrorCode(), *v);
  if (topology.devicesPerNode)
    if (RuleViolation v = checkDevicesPerNode(topology.devicesPerNode, n))
      return createStringError(inconvertibleErrorCode(), *v);
  for (auto [name, gbps] :
       {std::make_pair("HBM", topology.hbmBandwidthGBps),
        std::make_pair("intra-node", topology.intraNodeBandwidthGBps),
        std::make_pair("inter-node", topology.interNodeBandwidthGBps)})
    if (RuleViolation v = checkBandwidthGBps(gbps))
      return createStringError(inconvertibleErrorCode(),
                               formatv("the {0} bandwidth {1}", name, *v));
  if (topology.batchSize <= 0)
    return createStringError(
        inconvertibleErrorCode(),
        formatv("batch size must be positive, got {0}", topology.batchSize));
  if (tables.empty())
    return createStringError(inconvertibleErrorCode(),
                             "there are no tables to place");

  StringMap<size_t> firstUse;
  for (auto [i, table] : enumerate(tables)) {
    if (table.name.empty())
      return tableError(i, table, "the name is empty");
    if (RuleViolation v = checkTableName(table.name))
      return tableError(i, table, *v);
    auto [it, inserted] = firstUse.try_emplace(table.name, i);
    if (!inserted)
      return tableError(
          i, table,
          formatv("the name is already used by tables[{0}]", it->second));
    if (RuleViolation v = checkTable(table, n))
      return tableError(i, table, *v);
    // checkTable has checked every feature's statistics on their own.
    for (unsigned f = 0; f < table.numFeatures(); ++f) {
      FeatureStats stats = table.feature(f);
      if (RuleViolation v = checkAccessHistogramForBatch(
              stats.accessHist, table.rows, stats.poolingFactor,
              topology.batchSize))
        return tableError(i, table,
                          table.numFeatures() == 1
                              ? *v
                              : formatv("feature {0}: {1}", f, *v).str());
    }
  }
  return Error::success();
}

} // namespace neuroshard
