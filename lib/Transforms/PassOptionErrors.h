//===- PassOptionErrors.h - Pass options with clear errors ------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Pass::initializeOptions reports an unknown option by its name alone and a
// value its parser refuses with an empty diagnostic. The planning passes
// parse their options through initializeWithHelp instead, which names the
// pass, the option and the value, and for an unknown option the nearest
// known one and the full list.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_LIB_TRANSFORMS_PASSOPTIONERRORS_H
#define NEUROSHARD_LIB_TRANSFORMS_PASSOPTIONERRORS_H

#include "mlir/Pass/Pass.h"

namespace mlir::neuroshard {

/// Parses `options` ("key=value key2=value2 ...") into `pass`, one option at
/// a time through `parse` (the pass's base initializeOptions), reporting
/// errors through `errorHandler`.
LogicalResult initializeWithHelp(
    Pass &pass, StringRef options,
    function_ref<LogicalResult(const Twine &)> errorHandler,
    function_ref<LogicalResult(StringRef,
                               function_ref<LogicalResult(const Twine &)>)>
        parse);

} // namespace mlir::neuroshard

#endif // NEUROSHARD_LIB_TRANSFORMS_PASSOPTIONERRORS_H
