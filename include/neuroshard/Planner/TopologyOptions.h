//===- TopologyOptions.h - The devices a front end was told of --*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Every front end (the planning pass, neuroshard-plan, the Python module)
// learns the devices from two places: its options, and its input (a task's
// "topology", a module's `neuroshard.topology`). makeTopology resolves both
// into one Topology, with the same precedence, defaults and errors
// everywhere; the front end only says how it spells its options.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_PLANNER_TOPOLOGYOPTIONS_H
#define NEUROSHARD_PLANNER_TOPOLOGYOPTIONS_H

#include "neuroshard/Sharding/Problem.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace neuroshard {

/// What was said of the devices; every field is unset (or empty) when it was
/// not.
struct TopologyDescription {
  std::optional<unsigned> devices;
  /// One capacity in GB for every device, or one per device.
  std::vector<double> memoryGB;
  /// The cluster's shape: its node count, or the devices of one node (the
  /// devices are numbered node by node).
  std::optional<unsigned> nodes;
  std::optional<unsigned> devicesPerNode;
  std::optional<double> hbmGBps;
  std::optional<double> intraNodeGBps;
  std::optional<double> interNodeGBps;
  /// A node's host memory for tables (GB) and a device's bandwidth to it.
  std::optional<double> hostMemoryGB;
  std::optional<double> hostGBps;
  /// What the devices are (Topology::deviceKind).
  std::optional<std::string> deviceKind;

  /// The description of `topology` (every field set), for a module or a
  /// plan that records one.
  static TopologyDescription of(const Topology &topology);
};

/// The options of a front end that describe the devices and the training
/// step's memory, as it was given them.
struct TopologyOptions {
  std::optional<unsigned> devices;
  /// The capacity list as written: "16" or "16,16,8" (GB).
  std::optional<std::string> memoryGB;
  std::optional<unsigned> nodes;
  std::optional<unsigned> devicesPerNode;
  std::optional<double> hbmGBps;
  std::optional<double> intraNodeGBps;
  std::optional<double> interNodeGBps;
  std::optional<double> hostMemoryGB;
  std::optional<double> hostGBps;
  /// As written; case does not matter ("H100" is "h100").
  std::optional<std::string> deviceKind;
  /// By name (optimizerName).
  std::string optimizer = "sgd";
  double reservedFraction = 0.0;
};

/// The canonical names of the options above ("devices", "memory-gb",
/// "nodes", "devices-per-node", "hbm-gbps", "intra-node-gbps",
/// "inter-node-gbps", "host-memory-gb", "host-gbps", "device-kind",
/// "optimizer", "reserved-memory") as a
/// front end spells
/// them in messages: "--devices" for neuroshard-plan, "memory_gb" in
/// Python, unchanged for the pass.
using OptionSpelling = llvm::function_ref<std::string(llvm::StringRef)>;

/// The topology `options` describe over `input` (what the task or module
/// says; `inputName` names it in messages, "the task"). What the options
/// give overrides the input; the rest is resolved as follows:
///  - devices: the options' count, else their nodes x devices-per-node,
///    else one per value of their capacity list when it has several, else
///    the input's count, else `planDevices` (the device count of a plan to
///    price), else nodes x kDefaultDevicesPerNode when only nodes are given;
///  - nodes: the options' nodes or devices-per-node, else the input's node
///    size when it divides the count, else one node;
///  - memory: the options' capacities, else the input's (its one value, or
///    its list for the same device count), else kDefaultMemoryGB on one
///    node and kDefaultClusterMemoryGB on several;
///  - bandwidths and host memory: the options', else the input's, else
///    Topology's defaults;
///  - device kind: the options', else the input's, else kDefaultDeviceKind.
/// Every error names the option as `spell` writes it and the numbers:
/// "--nodes: 16 devices do not split into 3 nodes of equal size". The batch
/// size is left at its default for the front end to set.
llvm::Expected<Topology> makeTopology(const TopologyOptions &options,
                                      const TopologyDescription &input,
                                      llvm::StringRef inputName,
                                      std::optional<unsigned> planDevices,
                                      OptionSpelling spell);

/// The spelling of neuroshard-plan ("--devices") and of Python
/// ("memory_gb").
std::string commandLineSpelling(llvm::StringRef name);
std::string pythonSpelling(llvm::StringRef name);

} // namespace neuroshard

#endif // NEUROSHARD_PLANNER_TOPOLOGYOPTIONS_H
