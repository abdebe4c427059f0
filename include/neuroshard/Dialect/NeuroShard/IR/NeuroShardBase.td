//===- NeuroShardBase.td - NeuroShard dialect definition ---*- tablegen -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_DIALECT_NEUROSHARD_IR_NEUROSHARDBASE_TD
#define NEUROSHARD_DIALECT_NEUROSHARD_IR_NEUROSHARDBASE_TD

include "mlir/IR/OpBase.td"

def NeuroShard_Dialect : Dialect {
  let name = "neuroshard";
  let cppNamespace = "::mlir::neuroshard";
  let summary = "Embedding tables, pooled lookups and their placement on devices";
  let description = [{
    The `neuroshard` dialect models the embedding part of a recommendation
    model (DLRM) so that it can be sharded across devices:

    * `neuroshard.table` declares an embedding table (a symbol) with the
      statistics the cost model needs and, once sharded, its placement;
    * `neuroshard.embedding_bag` is one pooled lookup into one table, as the
      model author wrote it;
    * `neuroshard.fused_embedding_bag` is the single fused lookup a device
      runs over every table shard placed on it, writing `B x sum(dim)` into
      one buffer;
    * `neuroshard.all_to_all` is the exchange that moves every device's
      pooled columns to the device that owns each slice of the batch.

    The module-level `neuroshard.topology` attribute describes the devices.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Registers the dialect's attributes (defined next to their storage).
    void registerAttributes();

    /// Name of the module attribute that holds the device topology.
    static constexpr ::llvm::StringLiteral getTopologyAttrName() {
      return ::llvm::StringLiteral("neuroshard.topology");
    }
    /// Name of the module attribute that holds the sharding plan summary.
    static constexpr ::llvm::StringLiteral getPlanAttrName() {
      return ::llvm::StringLiteral("neuroshard.plan");
    }
    /// Module attribute left by the lowering: the names of the tables whose
    /// weights the arena holds, in table-ordinal order.
    static constexpr ::llvm::StringLiteral getWeightTablesAttrName() {
      return ::llvm::StringLiteral("neuroshard.weight_tables");
    }
    /// Module attribute of the program one rank runs (`--neuroshard-spmd`):
    /// the rank, which is also the device whose shards it holds.
    static constexpr ::llvm::StringLiteral getRankAttrName() {
      return ::llvm::StringLiteral("neuroshard.rank");
    }
    /// Function attribute of a backward function built by
    /// `--neuroshard-spmd=backward=true`: the function it is the backward of.
    static constexpr ::llvm::StringLiteral getBackwardOfAttrName() {
      return ::llvm::StringLiteral("neuroshard.backward_of");
    }
  }];
}

class NeuroShard_Op<string mnemonic, list<Trait> traits = []>
    : Op<NeuroShard_Dialect, mnemonic, traits>;

#endif // NEUROSHARD_DIALECT_NEUROSHARD_IR_NEUROSHARDBASE_TD
