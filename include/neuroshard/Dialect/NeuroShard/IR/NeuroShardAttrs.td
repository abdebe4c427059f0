//===- NeuroShardAttrs.td - NeuroShard attributes ----------*- tablegen -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_DIALECT_NEUROSHARD_IR_NEUROSHARDATTRS_TD
#define NEUROSHARD_DIALECT_NEUROSHARD_IR_NEUROSHARDATTRS_TD

include "neuroshard/Dialect/NeuroShard/IR/NeuroShardBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Pooling mode
//===----------------------------------------------------------------------===//

def NeuroShard_PoolingMode : I32EnumAttr<"PoolingMode",
    "how the rows of one bag are reduced", [
      I32EnumAttrCase<"Sum", 0, "sum">,
      I32EnumAttrCase<"Mean", 1, "mean">
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::neuroshard";
}

def NeuroShard_PoolingModeAttr
    : EnumAttr<NeuroShard_Dialect, NeuroShard_PoolingMode, "pool"> {
  let summary = "pooling mode of an embedding bag (`sum` or `mean`)";
  let assemblyFormat = "`<` $value `>`";
}

class NeuroShard_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<NeuroShard_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

//===----------------------------------------------------------------------===//
// Shard
//===----------------------------------------------------------------------===//

def NeuroShard_ShardAttr : NeuroShard_Attr<"Shard", "shard"> {
  let summary = "a piece of a table placed on one device";
  let description = [{
    Columns `[begin, end)` of the table that carries this attribute live on
    device `device`; as in `scf.for`, `begin to end` excludes `end`. A
    shard holds every row of the table unless it names a row range
    `rows = r0 to r1`, the rows `[r0, r1)` (a row-wise piece). With
    `replica`, the shard is a whole copy of the table (a data-parallel
    replica), and the table has one on every device.

    A table's shards must tile its rows x columns exactly once, or be one
    replica per device. When a table is split by columns, every column
    boundary is a multiple of 4; row boundaries are free.

    With `cache_rows = C`, the shard lives in the host memory of its
    device's node and the device keeps a cache of `C` of its rows (the
    host-memory tier, docs/planner.md): `C` is at least 1 and at most the
    shard's rows, the cache (not the shard) counts against the device's
    memory and the shard against its node's host memory. A table lives in
    host memory whole: every shard of it has a cache or none has, and a
    replica has none.

    ```mlir
    #neuroshard.shard<cols = 0 to 64, device = 2>
    #neuroshard.shard<rows = 0 to 500000, cols = 0 to 128, device = 3>
    #neuroshard.shard<cols = 0 to 16, device = 1, replica>
    #neuroshard.shard<cols = 0 to 128, device = 0, cache_rows = 20000>
    ```
  }];
  let parameters = (ins "int64_t":$colBegin, "int64_t":$colEnd,
                        "int64_t":$device,
                        DefaultValuedParameter<"int64_t", "0">:$rowBegin,
                        DefaultValuedParameter<"int64_t",
                            "std::numeric_limits<int64_t>::max()">:$rowEnd,
                        DefaultValuedParameter<"bool", "false">:$replica,
                        DefaultValuedParameter<"int64_t", "0">:$cacheRows);
  let builders = [
    // Every row of columns [colBegin, colEnd).
    AttrBuilder<(ins "int64_t":$colBegin, "int64_t":$colEnd,
                     "int64_t":$device), [{
      return $_get($_ctxt, colBegin, colEnd, device, int64_t{0},
                   std::numeric_limits<int64_t>::max(), false, int64_t{0});
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getWidth() const { return getColEnd() - getColBegin(); }
    /// Whether the shard holds every row of its table.
    bool hasAllRows() const {
      return getRowBegin() == 0 &&
             getRowEnd() == std::numeric_limits<int64_t>::max();
    }
    /// The end of the shard's rows in a table of `rows` rows.
    int64_t getRowEndIn(int64_t rows) const {
      return std::min(getRowEnd(), rows);
    }
    /// Whether the shard lives in host memory behind a device cache.
    bool isCached() const { return getCacheRows() > 0; }
  }];
}

//===----------------------------------------------------------------------===//
// Topology
//===----------------------------------------------------------------------===//

def NeuroShard_TopologyAttr : NeuroShard_Attr<"Topology", "topology"> {
  let summary = "the devices a model is sharded over";
  let description = [{
    The number of devices and the memory capacity of each, in GB (2^30
    bytes). One capacity applies to every device; a list gives one capacity
    per device, so devices may differ.

    A cluster is `nodes` nodes of equal size, its devices numbered node by
    node (default: one node). The bandwidths, in GB/s, price the exchange:
    `intra_node_gbps` between the devices of a node (default 600,
    NVLink-class), `inter_node_gbps` from a device to other nodes (default
    50, one 400 Gb/s port per GPU) and `hbm_gbps` of each device's memory
    (default 897). `device_kind` says what the devices are: "gpu"
    (default), "cpu" for a plan meant for CPU execution, or a chip such as
    "h100"; it chooses the default cost model. `host_memory_gb` is each
    node's host memory for tables kept there behind a device cache (default
    2048, a DGX H100 node's 2 TB) and `host_gbps` a device's bandwidth to
    it (default 32, the figure TorchRec's planner prices a cache's misses
    at across PCIe). A field
    equal to its default is not printed.

    ```mlir
    #neuroshard.topology<devices = 4, memory_gb = 16.0>
    #neuroshard.topology<devices = 3, memory_gb = [16.0, 16.0, 8.0]>
    #neuroshard.topology<devices = 16, memory_gb = 80.0, nodes = 2,
                         inter_node_gbps = 25.0, device_kind = "h100">
    #neuroshard.topology<devices = 8, memory_gb = 80.0,
                         host_memory_gb = 1024.0, host_gbps = 50.0>
    ```
  }];
  let parameters = (ins "int64_t":$devices,
                        "DenseF64ArrayAttr":$memoryGb,
                        "int64_t":$nodes,
                        APFloatParameter<"HBM GB/s">:$hbmBandwidth,
                        APFloatParameter<"intra-node GB/s">:$intraNodeBandwidth,
                        APFloatParameter<"inter-node GB/s">:$interNodeBandwidth,
                        StringRefParameter<"device kind">:$deviceKind,
                        APFloatParameter<"host memory GB per node">:$hostMemory,
                        APFloatParameter<"device-host GB/s">:$hostBandwidth);
  let builders = [
    // One node, with the default bandwidths.
    AttrBuilder<(ins "int64_t":$devices, "DenseF64ArrayAttr":$memoryGb)>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Memory capacity of `device` in GB.
    double getDeviceMemoryGb(int64_t device) const;
    /// The bandwidths in GB/s.
    double getHbmGbps() const { return getHbmBandwidth().convertToDouble(); }
    double getIntraNodeGbps() const {
      return getIntraNodeBandwidth().convertToDouble();
    }
    double getInterNodeGbps() const {
      return getInterNodeBandwidth().convertToDouble();
    }
    double getHostGbps() const { return getHostBandwidth().convertToDouble(); }
    /// A node's host memory for tables, in GB.
    double getHostMemoryGb() const { return getHostMemory().convertToDouble(); }
    /// The topology with bandwidths in GB/s.
    static TopologyAttr get(::mlir::MLIRContext *context, int64_t devices,
                            ::mlir::DenseF64ArrayAttr memoryGb, int64_t nodes,
                            double hbmGbps, double intraNodeGbps,
                            double interNodeGbps,
                            ::llvm::StringRef deviceKind,
                            double hostMemoryGb, double hostGbps);
  }];
}


//===----------------------------------------------------------------------===//
// Measured selection's record
//===----------------------------------------------------------------------===//

// A double, printed so that it reads back bit for bit.
class NeuroShard_F64Parameter<string desc> : APFloatParameter<desc> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::APFloat> {
    double value;
    if ($_parser.parseFloat(value))
      return ::mlir::failure();
    return ::llvm::APFloat(value);
  }() }];
  let printer = [{ $_printer.printFloat($_self); }];
}

// The same, left out of the text when it is zero.
class NeuroShard_ZeroDefaultF64Parameter<string desc>
    : NeuroShard_F64Parameter<desc> {
  let defaultValue = "::llvm::APFloat(0.0)";
}

def NeuroShard_MeasuredCandidateAttr
    : NeuroShard_Attr<"MeasuredCandidate", "measured_candidate"> {
  let summary = "one candidate plan as measured selection timed it";
  let description = [{
    A candidate of measured selection (docs/planner.md, "Measured
    selection"): where it came from (`origin`), the cost the model predicted
    for it and the cost its timed device sets add up to, in milliseconds,
    the measured compute time of each device, and how it compared with the
    incumbent plan over the timing rounds: the median and the geometric mean
    of its per-round time ratio, the rounds it raced and in how many of them
    it was faster, and the gain it needed to replace the incumbent.

    ```mlir
    #neuroshard.measured_candidate<origin = "table-greedy-grid",
        predicted_ms = 1.250000e-01, measured_ms = 1.310000e-01,
        measured_compute_ms = [0.131, 0.12],
        paired_ratio = 1.000000e+00, mean_ratio = 1.000000e+00, rounds = 3,
        rounds_faster = 0, required_gain = 2.000000e-02>
    ```
  }];
  let parameters = (ins
      StringRefParameter<"where the candidate came from">:$origin,
      NeuroShard_F64Parameter<"predicted cost, ms">:$predicted_ms,
      NeuroShard_F64Parameter<"measured cost, ms">:$measured_ms,
      AttrParameter<"DenseF64ArrayAttr", "measured compute ms per device">
          :$measured_compute_ms,
      NeuroShard_F64Parameter<"median ratio to the incumbent">:$paired_ratio,
      NeuroShard_F64Parameter<"geometric mean ratio">:$mean_ratio,
      AttrParameter<"uint64_t", "rounds raced">:$rounds,
      AttrParameter<"uint64_t", "rounds it was faster in">:$rounds_faster,
      NeuroShard_F64Parameter<"gain needed to win">:$required_gain);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def NeuroShard_VerificationAttr
    : NeuroShard_Attr<"Verification", "verification"> {
  let summary = "what measured selection timed and chose";
  let description = [{
    The record measured selection leaves in a module's `neuroshard.plan`
    (docs/planner.md, "Measured selection"): the host and device kind the
    candidates' device sets were timed on, how many sets, rounds and input
    draws were timed and how long it took, the gain a candidate had to show
    and the spread of the rounds it was judged against, the host's noise of
    measured selection where the cost model records one, which candidate
    was the incumbent and which was chosen, the experience file the timings
    were appended to ("" for none) and the candidates themselves.

    Fields that only some records carry are left out of the text when they
    are zero: `rounds_needed` and `seconds_needed` (a budget that cut the
    rounds short), `round_spread`, `spread_freedom` and `racing`, and the
    three fields of the host's noise.

    ```mlir
    #neuroshard.verification<host = "AMD EPYC 9R14", device = "cpu",
        sets = 7, rounds = 3, draws = 3, rounds_needed = 3,
        seconds = 8.100000e-01, min_gain = 2.000000e-02,
        round_spread = 1.200000e-02, spread_freedom = 4, racing = 1,
        chosen = 0, incumbent = 0, experience = "",
        candidates = [#neuroshard.measured_candidate<...>, ...]>
    ```
  }];
  let parameters = (ins
      StringRefParameter<"the host the sets were timed on">:$host,
      StringRefParameter<"the device kind they were timed on">:$device,
      AttrParameter<"uint64_t", "distinct device sets timed">:$sets,
      AttrParameter<"uint64_t", "timing rounds">:$rounds,
      AttrParameter<"uint64_t", "input draws timed">:$draws,
      DefaultValuedParameter<"uint64_t", "0", "rounds a choice needs">
          :$rounds_needed,
      NeuroShard_F64Parameter<"seconds spent timing">:$seconds,
      NeuroShard_ZeroDefaultF64Parameter<"seconds a choice needed">
          :$seconds_needed,
      NeuroShard_F64Parameter<"least gain that replaces the incumbent">
          :$min_gain,
      NeuroShard_ZeroDefaultF64Parameter<"log spread of the rounds">
          :$round_spread,
      DefaultValuedParameter<"uint64_t", "0", "the spread's degrees of freedom">
          :$spread_freedom,
      DefaultValuedParameter<"uint64_t", "0", "candidates racing the incumbent">
          :$racing,
      NeuroShard_ZeroDefaultF64Parameter<"the host's log noise">
          :$selection_noise,
      DefaultValuedParameter<"uint64_t", "0", "comparisons the noise rests on">
          :$selection_noise_comparisons,
      NeuroShard_ZeroDefaultF64Parameter<"gain the noise asks">:$noise_gain,
      AttrParameter<"uint64_t", "the candidate chosen">:$chosen,
      AttrParameter<"uint64_t", "the candidate to beat">:$incumbent,
      StringRefParameter<"the experience file written">:$experience,
      AttrParameter<"ArrayAttr", "#neuroshard.measured_candidate list">
          :$candidates);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // NEUROSHARD_DIALECT_NEUROSHARD_IR_NEUROSHARDATTRS_TD
