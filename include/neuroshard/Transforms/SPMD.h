//===- SPMD.h - The program one rank of an SPMD job runs --------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// What `--neuroshard-spmd`, `--neuroshard-spmd-backward` and the tools that
// run their programs need to know about a rank's program: which columns of
// the exchanged result each value after the exchange is made of.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_TRANSFORMS_SPMD_H
#define NEUROSHARD_TRANSFORMS_SPMD_H

#include "mlir/IR/Value.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir::neuroshard {

/// `width` columns of a value, starting at its column `column`, that are
/// columns `source ..` of the exchanged result (all rows).
struct ExchangedColumns {
  int64_t column = 0;
  int64_t source = 0;
  int64_t width = 0;
};

/// How `value` is made of the columns of `exchanged` (the result of a
/// `neuroshard.exchange`) through `tensor.extract_slice` of whole rows and
/// `tensor.concat` of columns, as pieces covering its columns left to right.
/// Fails with the reason in `why` if `value` is made any other way.
FailureOr<SmallVector<ExchangedColumns>>
traceExchangedColumns(Value value, Value exchanged, std::string &why);

} // namespace mlir::neuroshard

#endif // NEUROSHARD_TRANSFORMS_SPMD_H
