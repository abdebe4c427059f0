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
  let summary = "a column range of a table placed on one device";
  let description = [{
    Columns `[begin, end)` of the table that carries this attribute live on
    device `device`; as in `scf.for`, `begin to end` excludes `end`. A table's shards must cover each of its columns exactly
    once; when a table is split, every boundary is a multiple of 4.

    ```mlir
    #neuroshard.shard<cols = 0 to 64, device = 2>
    ```
  }];
  let parameters = (ins "int64_t":$colBegin, "int64_t":$colEnd,
                        "int64_t":$device);
  let assemblyFormat = [{
    `<` `cols` `=` $colBegin `to` $colEnd `,` `device` `=` $device `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getWidth() const { return getColEnd() - getColBegin(); }
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
