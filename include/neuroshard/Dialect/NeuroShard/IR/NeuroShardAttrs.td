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

    ```mlir
    #neuroshard.shard<cols = 0 to 64, device = 2>
    #neuroshard.shard<rows = 0 to 500000, cols = 0 to 128, device = 3>
    #neuroshard.shard<cols = 0 to 16, device = 1, replica>
    ```
  }];
  let parameters = (ins "int64_t":$colBegin, "int64_t":$colEnd,
                        "int64_t":$device,
                        DefaultValuedParameter<"int64_t", "0">:$rowBegin,
                        DefaultValuedParameter<"int64_t",
                            "std::numeric_limits<int64_t>::max()">:$rowEnd,
                        DefaultValuedParameter<"bool", "false">:$replica);
  let builders = [
    // Every row of columns [colBegin, colEnd).
    AttrBuilder<(ins "int64_t":$colBegin, "int64_t":$colEnd,
                     "int64_t":$device), [{
      return $_get($_ctxt, colBegin, colEnd, device, int64_t{0},
                   std::numeric_limits<int64_t>::max(), false);
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
    "h100"; it chooses the default cost model. A field equal to its default
    is not printed.

    ```mlir
    #neuroshard.topology<devices = 4, memory_gb = 16.0>
    #neuroshard.topology<devices = 3, memory_gb = [16.0, 16.0, 8.0]>
    #neuroshard.topology<devices = 16, memory_gb = 80.0, nodes = 2,
                         inter_node_gbps = 25.0, device_kind = "h100">
    ```
  }];
  let parameters = (ins "int64_t":$devices,
                        "DenseF64ArrayAttr":$memoryGb,
                        "int64_t":$nodes,
                        APFloatParameter<"HBM GB/s">:$hbmBandwidth,
                        APFloatParameter<"intra-node GB/s">:$intraNodeBandwidth,
                        APFloatParameter<"inter-node GB/s">:$interNodeBandwidth,
                        StringRefParameter<"device kind">:$deviceKind);
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
    /// The topology with bandwidths in GB/s.
    static TopologyAttr get(::mlir::MLIRContext *context, int64_t devices,
                            ::mlir::DenseF64ArrayAttr memoryGb, int64_t nodes,
                            double hbmGbps, double intraNodeGbps,
                            double interNodeGbps,
                            ::llvm::StringRef deviceKind);
  }];
}

#endif // NEUROSHARD_DIALECT_NEUROSHARD_IR_NEUROSHARDATTRS_TD
