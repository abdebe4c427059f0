//===- Materialize.h - Rewriting annotated lookups --------------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The patterns of `--neuroshard-materialize`, for pipelines that apply them
// with their own: lookups of tables that carry `shards` become one fused
// lookup per device and block, the exchange between devices, and the slices
// that give every lookup its result back.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_TRANSFORMS_MATERIALIZE_H
#define NEUROSHARD_TRANSFORMS_MATERIALIZE_H

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::neuroshard {

/// Adds the pattern that rewrites, at its first lookup of a sharded table,
/// every lookup of a sharded table in a block. It expects what
/// `--neuroshard-materialize` checks first: the module's topology, static
/// batch sizes, one element type per block and no use of a lookup before
/// the block's last lookup.
void populateMaterializePatterns(RewritePatternSet &patterns);

/// Makes lookups of tables with `shards` illegal, and the ops the patterns
/// produce legal.
void configureMaterializeTarget(ConversionTarget &target);

} // namespace mlir::neuroshard

#endif // NEUROSHARD_TRANSFORMS_MATERIALIZE_H
