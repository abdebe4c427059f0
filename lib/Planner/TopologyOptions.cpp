//===- TopologyOptions.cpp - The devices a front end was told of ----------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Planner/TopologyOptions.h"
#include "neuroshard/Planner/TaskIO.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace neuroshard {

TopologyDescription TopologyDescription::of(const Topology &topology) {
  TopologyDescription description;
  description.devices = topology.numDevices();
  description.memoryGB = topology.memoryGB;
  description.devicesPerNode = topology.nodeSize();
  description.hbmGBps = topology.hbmBandwidthGBps;
  description.intraNodeGBps = topology.intraNodeBandwidthGBps;
  description.interNodeGBps = topology.interNodeBandwidthGBps;
  description.hostMemoryGB = topology.hostMemoryGB;
  description.hostGBps = topology.hostBandwidthGBps;
  description.deviceKind = topology.deviceKind;
  return description;
}

std::string commandLineSpelling(StringRef name) { return "--" + name.str(); }

std::string pythonSpelling(StringRef name) {
  std::string spelled = name.str();
  llvm::replace(spelled, '-', '_');
  return spelled;
}

namespace {
/// Builds the errors of makeTopology.
struct Failure {
  OptionSpelling spell;

  Error operator()(const Twine &message) const {
    return createStringError(inconvertibleErrorCode(), message);
  }
  /// "--nodes: MESSAGE".
  Error at(StringRef option, const Twine &message) const {
    return (*this)(spell(option) + ": " + message);
  }
};
} // namespace

/// The device count, before the nodes are known.
static Expected<unsigned>
resolveDeviceCount(const TopologyOptions &options, ArrayRef<double> capacities,
                   const TopologyDescription &input,
                   std::optional<unsigned> planDevices, const Failure &fail) {
  auto checked = [&](StringRef option, int64_t count) -> Expected<unsigned> {
    if (RuleViolation v = checkDeviceCount(count))
      return fail.at(option, *v);
    return static_cast<unsigned>(count);
  };
  if (options.devices)
    return checked("devices", *options.devices);
  if (options.nodes && options.devicesPerNode)
    return checked("nodes",
                   int64_t(*options.nodes) * int64_t(*options.devicesPerNode));
  if (capacities.size() > 1)
    return static_cast<unsigned>(capacities.size());
  if (input.devices)
    return *input.devices;
  if (planDevices)
    return *planDevices;
  if (std::optional<unsigned> nodes =
          options.nodes ? options.nodes : input.nodes) {
    unsigned size = options.devicesPerNode ? *options.devicesPerNode
                    : input.devicesPerNode ? *input.devicesPerNode
                                           : kDefaultDevicesPerNode;
    return checked("nodes", int64_t(*nodes) * size);
  }
  return fail(formatv("{0} is required unless {1} lists one value per device "
                      "or {2} gives the cluster's nodes",
                      fail.spell("devices"), fail.spell("memory-gb"),
                      fail.spell("nodes")));
}

/// The devices per node (0: one node holds them all).
static Expected<unsigned> resolveNodeSize(const TopologyOptions &options,
                                          const TopologyDescription &input,
                                          StringRef inputName, unsigned n,
                                          const Failure &fail) {
  if (options.nodes) {
    if (RuleViolation v = checkNodeCount(*options.nodes, n))
      return fail.at("nodes", *v);
    unsigned size = n / *options.nodes;
    if (options.devicesPerNode && *options.devicesPerNode != size)
      return fail(formatv("{0} x {1} must equal the device count: {2} x {3} "
                          "is not {4}",
                          fail.spell("nodes"), fail.spell("devices-per-node"),
                          *options.nodes, *options.devicesPerNode, n));
    return *options.nodes == 1 ? 0u : size;
  }
  if (options.devicesPerNode) {
    if (RuleViolation v = checkDevicesPerNode(*options.devicesPerNode, n))
      return fail.at("devices-per-node", *v);
    return *options.devicesPerNode == n ? 0u : *options.devicesPerNode;
  }
  std::optional<unsigned> inputSize = input.devicesPerNode;
  unsigned inputDevices = input.devices ? *input.devices : n;
  if (!inputSize && input.nodes) {
    if (checkNodeCount(*input.nodes, inputDevices))
      return fail(formatv("{0} devices do not split into the {1} nodes {2} "
                          "gives; give {3} or {4}",
                          inputDevices, *input.nodes, inputName,
                          fail.spell("nodes"), fail.spell("devices-per-node")));
    inputSize = inputDevices / *input.nodes;
  }
  // A single node (the input's devices all on one) stays one node, of
  // whatever count the options give.
  if (!inputSize || *inputSize >= inputDevices)
    return 0u;
  if (checkDevicesPerNode(*inputSize, n))
    return fail(formatv("{0} devices do not fill whole nodes of {1} devices, "
                        "the node size {2} gives; give {3} or {4}",
                        n, *inputSize, inputName, fail.spell("nodes"),
                        fail.spell("devices-per-node")));
  return *inputSize == n ? 0u : *inputSize;
}

Expected<Topology> makeTopology(const TopologyOptions &options,
                                const TopologyDescription &input,
                                StringRef inputName,
                                std::optional<unsigned> planDevices,
                                OptionSpelling spell) {
  Failure fail{spell};
  std::vector<double> capacities;
  if (options.memoryGB) {
    if (StringRef(*options.memoryGB).trim().empty())
      return fail.at("memory-gb", "expected a number or a comma list");
    Expected<std::vector<double>> parsed = parseMemoryGBList(*options.memoryGB);
    if (!parsed)
      return fail.at("memory-gb", toString(parsed.takeError()));
    capacities = std::move(*parsed);
  }
  Expected<unsigned> n =
      resolveDeviceCount(options, capacities, input, planDevices, fail);
  if (!n)
    return n.takeError();
  Expected<unsigned> nodeSize =
      resolveNodeSize(options, input, inputName, *n, fail);
  if (!nodeSize)
    return nodeSize.takeError();

  Topology topology;
  topology.devicesPerNode = *nodeSize;
  if (capacities.empty() && !input.memoryGB.empty()) {
    if (input.memoryGB.size() == *n)
      capacities = input.memoryGB;
    else if (llvm::all_equal(input.memoryGB))
      capacities.push_back(input.memoryGB.front());
    else
      return fail(formatv("no memory capacity for {0} devices: {1} has {2} "
                          "capacities; give {3} (one value or one per device)",
                          *n, inputName, input.memoryGB.size(),
                          fail.spell("memory-gb")));
  }
  if (capacities.empty())
    capacities.push_back(*nodeSize ? kDefaultClusterMemoryGB
                                   : kDefaultMemoryGB);
  if (capacities.size() == 1)
    capacities.assign(*n, capacities.front());
  if (capacities.size() != *n)
    return fail(formatv("{0} lists {1} values but there are {2} devices",
                        fail.spell("memory-gb"), capacities.size(), *n));
  topology.memoryGB = std::move(capacities);

  for (auto [option, given, described, field] :
       {std::make_tuple("hbm-gbps", options.hbmGBps, input.hbmGBps,
                        &topology.hbmBandwidthGBps),
        std::make_tuple("intra-node-gbps", options.intraNodeGBps,
                        input.intraNodeGBps, &topology.intraNodeBandwidthGBps),
        std::make_tuple("inter-node-gbps", options.interNodeGBps,
                        input.interNodeGBps, &topology.interNodeBandwidthGBps),
        std::make_tuple("host-gbps", options.hostGBps, input.hostGBps,
                        &topology.hostBandwidthGBps)}) {
    std::optional<double> gbps = given ? given : described;
    if (!gbps)
      continue;
    if (RuleViolation v = checkBandwidthGBps(*gbps))
      return fail.at(option, *v);
    *field = *gbps;
  }

  if (std::optional<double> gb =
          options.hostMemoryGB ? options.hostMemoryGB : input.hostMemoryGB) {
    if (RuleViolation v = checkHostMemoryGB(*gb))
      return fail.at("host-memory-gb", *v);
    topology.hostMemoryGB = *gb;
  }

  if (options.deviceKind) {
    std::string kind = StringRef(*options.deviceKind).trim().lower();
    if (RuleViolation v = checkDeviceKind(kind))
      return fail.at("device-kind", *v);
    topology.deviceKind = std::move(kind);
  } else if (input.deviceKind) {
    if (RuleViolation v = checkDeviceKind(*input.deviceKind))
      return fail(Twine(inputName) + ": " + *v);
    topology.deviceKind = *input.deviceKind;
  }

  std::optional<Optimizer> optimizer = parseOptimizer(options.optimizer);
  if (!optimizer)
    return fail.at("optimizer",
                   formatv("unknown optimizer '{0}'; expected one of {1}",
                           options.optimizer, optimizerNameList()));
  topology.optimizer = *optimizer;
  if (RuleViolation v = checkReservedFraction(options.reservedFraction))
    return fail.at("reserved-memory", *v);
  topology.reservedFraction = options.reservedFraction;
  return std::move(topology);
}

} // namespace neuroshard
