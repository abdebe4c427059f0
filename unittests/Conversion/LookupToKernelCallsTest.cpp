//===- LookupToKernelCallsTest.cpp - The lookup patterns, composed --------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The lookup lowering's patterns used the way another pipeline would use
// them: alone or together, under the lowering's conversion target or a
// narrower one of the caller's.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Conversion/LookupToKernelCalls.h"
#include "neuroshard/Conversion/Passes.h"
#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::neuroshard;

namespace {

// Two devices: a fused lookup per device and the exchange between them.
constexpr const char *kShardedModule = R"mlir(
module attributes {neuroshard.topology = #neuroshard.topology<devices = 2, memory_gb = 1.0>} {
  neuroshard.table @a : rows 10, dim 8, f32 shards [#neuroshard.shard<cols = 0 to 8, device = 0>]
  neuroshard.table @b : rows 10, dim 4, f32 shards [#neuroshard.shard<cols = 0 to 4, device = 1>]
  func.func @f(%i: tensor<?xi32>, %o: tensor<5xi32>, %j: tensor<?xi32>, %p: tensor<5xi32>)
      -> (tensor<2x12xf32>, tensor<2x12xf32>) {
    %0 = neuroshard.fused_embedding_bag device 0 [
      @a cols 0 to 8 sum(%i, %o : tensor<?xi32>, tensor<5xi32>)
    ] : tensor<4x8xf32>
    %1 = neuroshard.fused_embedding_bag device 1 [
      @b cols 0 to 4 sum(%j, %p : tensor<?xi32>, tensor<5xi32>)
    ] : tensor<4x4xf32>
    %2:2 = neuroshard.all_to_all %0, %1
        : tensor<4x8xf32>, tensor<4x4xf32> -> tensor<2x12xf32>, tensor<2x12xf32>
    return %2#0, %2#1 : tensor<2x12xf32>, tensor<2x12xf32>
  }
}
)mlir";

class LookupToKernelCallsTest : public ::testing::Test {
protected:
  LookupToKernelCallsTest() {
    DialectRegistry registry;
    registry.insert<NeuroShardDialect, arith::ArithDialect,
                    bufferization::BufferizationDialect, func::FuncDialect,
                    memref::MemRefDialect, scf::SCFDialect,
                    tensor::TensorDialect>();
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    module = parseSourceString<ModuleOp>(kShardedModule, &context);
  }

  /// Runs a partial conversion under the lowering's target and returns its
  /// diagnostics, or "" if it succeeded.
  std::string convertCollectingErrors(RewritePatternSet &&patterns) {
    ConversionTarget target(context);
    configureLookupConversionTarget(target);
    std::string messages;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      messages += diag.str() + "\n";
      return success();
    });
    if (succeeded(applyPartialConversion(*module, target, std::move(patterns))))
      return "";
    return messages.empty() ? "failed without a diagnostic" : messages;
  }

  int count(StringRef opName) {
    int n = 0;
    module->walk(
        [&](Operation *op) { n += op->getName().getStringRef() == opName; });
    return n;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(LookupToKernelCallsTest, ParsesTheSample) {
  ASSERT_TRUE(module);
  EXPECT_EQ(count("neuroshard.fused_embedding_bag"), 2);
}

// The exchange patterns alone, under a target that only forbids the
// exchange: the lookups stay, the exchange becomes slices.
TEST_F(LookupToKernelCallsTest, ExchangePatternsComposeAlone) {
  ASSERT_TRUE(module);
  RewritePatternSet patterns(&context);
  populateAllToAllToSlicesPatterns(patterns);
  ConversionTarget target(context);
  target.addIllegalOp<AllToAllOp>();
  target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
  ASSERT_TRUE(
      succeeded(applyPartialConversion(*module, target, std::move(patterns))));
  EXPECT_EQ(count("neuroshard.all_to_all"), 0);
  EXPECT_EQ(count("tensor.extract_slice"), 4);
  EXPECT_EQ(count("tensor.concat"), 2);
  EXPECT_EQ(count("neuroshard.fused_embedding_bag"), 2);
}

// Under the lowering's own target, a pattern set that leaves lookups behind
// is a failed conversion, not a module with stray NeuroShard ops.
TEST_F(LookupToKernelCallsTest, TheTargetRejectsLeftoverLookups) {
  ASSERT_TRUE(module);
  RewritePatternSet patterns(&context);
  populateAllToAllToSlicesPatterns(patterns);
  EXPECT_NE(convertCollectingErrors(std::move(patterns))
                .find("failed to legalize operation 'neuroshard.table'"),
            std::string::npos);
}

// Both pattern sets with the prepared layout: no NeuroShard op is left and
// each device's lookup is one kernel call.
TEST_F(LookupToKernelCallsTest, TheFullSetLowersEverything) {
  ASSERT_TRUE(module);
  FailureOr<KernelTableLayout> layout = prepareLookupConversion(*module);
  ASSERT_TRUE(succeeded(layout));
  EXPECT_EQ(layout->tables.size(), 2u);
  int calls = 0;
  RewritePatternSet patterns(&context);
  populateLookupToKernelCallPatterns(
      patterns, *layout,
      [&](OpBuilder &, Location, const KernelInvocation &invocation) {
        EXPECT_EQ(invocation.kernel, "neuroshard_bag_forward_i32");
        ++calls;
      });
  populateAllToAllToSlicesPatterns(patterns);
  ASSERT_EQ(convertCollectingErrors(std::move(patterns)), "");
  EXPECT_EQ(calls, 2);
  int left = 0;
  module->walk(
      [&](Operation *op) { left += isa<NeuroShardDialect>(op->getDialect()); });
  EXPECT_EQ(left, 0);
}

// Without the prepared weight arguments the lookup patterns do not apply,
// and the conversion says which op it could not lower.
TEST_F(LookupToKernelCallsTest, LookupsNeedThePreparedArguments) {
  ASSERT_TRUE(module);
  KernelTableLayout layout;
  RewritePatternSet patterns(&context);
  populateLookupToKernelCallPatterns(
      patterns, layout, [](OpBuilder &, Location, const KernelInvocation &) {});
  populateAllToAllToSlicesPatterns(patterns);
  EXPECT_NE(convertCollectingErrors(std::move(patterns))
                .find("failed to legalize operation "
                      "'neuroshard.fused_embedding_bag'"),
            std::string::npos);
}

} // namespace
