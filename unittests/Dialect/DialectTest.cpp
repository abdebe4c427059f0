//===- DialectTest.cpp - NeuroShard ops built from C++ --------------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Builds NeuroShard IR with the C++ builder API, the way the sharding pass
// does, and checks that the verifiers accept what is right and name what is
// wrong.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Dialect/NeuroShard/IR/NeuroShard.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include "gtest/gtest.h"

#include <string>

using namespace mlir;
using namespace mlir::neuroshard;

namespace {

class NeuroShardDialectTest : public ::testing::Test {
protected:
  NeuroShardDialectTest() : builder(&context) {
    context.loadDialect<NeuroShardDialect, func::FuncDialect>();
    loc = builder.getUnknownLoc();
    module = ModuleOp::create(builder, loc);
    builder.setInsertionPointToEnd(module->getBody());
  }

  /// Verifies the module and returns the diagnostics it produced, joined.
  std::string verifyAndCollect() {
    std::string messages;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      messages += diag.str();
      messages += "\n";
      return success();
    });
    if (succeeded(verify(*module)))
      return "";
    return messages;
  }

  TableOp createTable(StringRef name, int64_t rows, int64_t dim) {
    return TableOp::create(builder, loc, name, rows, dim, builder.getF32Type(),
                           /*pooling_factor=*/builder.getF64FloatAttr(8.0),
                           /*access_hist=*/histogram(),
                           /*pinned_device=*/IntegerAttr(),
                           /*no_split=*/false, /*sharding_types=*/ArrayAttr(),
                           /*shards=*/ArrayAttr(),
                           /*module_path=*/StringAttr());
  }

  DenseF64ArrayAttr histogram(double first = 0.5, double second = 0.5) {
    SmallVector<double> bins(::neuroshard::kNumAccessBins, 0.0);
    bins[0] = first;
    bins[1] = second;
    return builder.getDenseF64ArrayAttr(bins);
  }

  ArrayAttr shards(ArrayRef<std::array<int64_t, 3>> ranges) {
    SmallVector<Attribute> attrs;
    for (auto [begin, end, device] : ranges)
      attrs.push_back(ShardAttr::get(&context, begin, end, device));
    return builder.getArrayAttr(attrs);
  }

  void setTopology(int64_t devices, ArrayRef<double> memoryGb) {
    (*module)->setAttr(
        NeuroShardDialect::getTopologyAttrName(),
        TopologyAttr::get(&context, devices,
                          builder.getDenseF64ArrayAttr(memoryGb)));
  }

  MLIRContext context;
  OpBuilder builder;
  Location loc = UnknownLoc::get(&context);
  OwningOpRef<ModuleOp> module;
};

TEST_F(NeuroShardDialectTest, ValidTableAndLookupVerify) {
  setTopology(2, {16.0, 8.0});
  TableOp table = createTable("user", 1000, 64);
  EXPECT_EQ(table.getSizeInBytes(), 1000 * 64 * 4);
  EXPECT_TRUE(table.hasCostStatistics());

  auto indexType =
      RankedTensorType::get({ShapedType::kDynamic}, builder.getI32Type());
  auto offsetsType = RankedTensorType::get({9}, builder.getI32Type());
  auto resultType = RankedTensorType::get({8, 64}, builder.getF32Type());
  auto func = func::FuncOp::create(
      builder, loc, "embed",
      builder.getFunctionType({indexType, offsetsType}, {resultType}));
  Block *body = func.addEntryBlock();
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(body);
  auto lookup = EmbeddingBagOp::create(
      builder, loc, resultType, FlatSymbolRefAttr::get(table),
      body->getArgument(0), body->getArgument(1),
      PoolingModeAttr::get(&context, PoolingMode::Mean),
      /*pooling_factor=*/FloatAttr(), /*access_hist=*/DenseF64ArrayAttr());
  func::ReturnOp::create(builder, loc, lookup.getResult());

  EXPECT_EQ(verifyAndCollect(), "");
  EXPECT_EQ(getEnclosingTopology(lookup).getDevices(), 2);
  EXPECT_EQ(getEnclosingTopology(lookup).getDeviceMemoryGb(1), 8.0);
}

TEST_F(NeuroShardDialectTest, ShardsMustCoverEveryColumnOnce) {
  TableOp table = createTable("item", 10, 16);
  table.setShardsAttr(shards({{0, 8, 0}, {8, 16, 1}}));
  EXPECT_EQ(verifyAndCollect(), "");

  table.setShardsAttr(shards({{0, 8, 0}, {12, 16, 1}}));
  EXPECT_NE(
      verifyAndCollect().find("table 'item': columns [8, 12) are on no device"),
      std::string::npos);

  table.setShardsAttr(shards({{0, 12, 0}, {8, 16, 1}}));
  EXPECT_NE(verifyAndCollect().find(
                "table 'item': columns [8, 12) are on more than one "
                "device"),
            std::string::npos);

  table.setShardsAttr(shards({{0, 6, 0}, {6, 16, 1}}));
  EXPECT_NE(verifyAndCollect().find("split at column 6, which is not a "
                                    "multiple of 4"),
            std::string::npos);
}

TEST_F(NeuroShardDialectTest, DevicesAreCheckedAgainstTheTopology) {
  setTopology(2, {16.0, 16.0});
  TableOp table = createTable("ads", 10, 8);
  table.setShardsAttr(shards({{0, 8, 2}}));
  EXPECT_NE(verifyAndCollect().find("table 'ads' has a shard on device 2 but "
                                    "the topology has 2 devices"),
            std::string::npos);

  table.setShardsAttr(shards({{0, 8, 1}}));
  table.setPinnedDeviceAttr(builder.getI64IntegerAttr(0));
  EXPECT_NE(verifyAndCollect().find("table 'ads' is pinned to device 0 but "
                                    "has a shard on device 1"),
            std::string::npos);
}

TEST_F(NeuroShardDialectTest, HistogramMustBeAFrequencyDistribution) {
  TableOp table = createTable("clicks", 10, 8);
  table.setAccessHistAttr(histogram(0.5, 0.2));
  EXPECT_NE(verifyAndCollect().find("table 'clicks': 'access_hist' must sum to "
                                    "1 (or be all zero for a table never "
                                    "hit), got 0.7"),
            std::string::npos);

  table.setAccessHistAttr(histogram(0.0, 0.0));
  EXPECT_EQ(verifyAndCollect(), "") << "an all-zero histogram means never hit";

  table.setAccessHistAttr(builder.getDenseF64ArrayAttr({1.0}));
  EXPECT_NE(verifyAndCollect().find(
                "table 'clicks': 'access_hist' must have 17 bins, got 1"),
            std::string::npos);
}

TEST_F(NeuroShardDialectTest, AttributeVerifiersRejectBadParameters) {
  std::string messages;
  auto emitError = [&]() { return mlir::emitError(loc); };
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    messages += diag.str();
    return success();
  });
  EXPECT_FALSE(ShardAttr::getChecked(emitError, &context, int64_t{8},
                                     int64_t{4}, int64_t{0}));
  EXPECT_NE(messages.find("[8, 4) is empty or negative"), std::string::npos);
  EXPECT_FALSE(TopologyAttr::getChecked(emitError, &context, int64_t{2},
                                        builder.getDenseF64ArrayAttr({1.0})));
  EXPECT_NE(messages.find("topology has 2 devices but 1 memory capacities"),
            std::string::npos);
  EXPECT_TRUE(
      TopologyAttr::getChecked(emitError, &context, int64_t{2},
                               builder.getDenseF64ArrayAttr({1.0, 2.0})));
}

TEST_F(NeuroShardDialectTest, FusedLookupAndExchangeVerify) {
  setTopology(2, {16.0, 16.0});
  TableOp table = createTable("user", 100, 16);
  table.setShardsAttr(shards({{0, 8, 0}, {8, 16, 1}}));

  auto indexType =
      RankedTensorType::get({ShapedType::kDynamic}, builder.getI64Type());
  auto offsetsType = RankedTensorType::get({5}, builder.getI64Type());
  auto pooled = RankedTensorType::get({4, 8}, builder.getF32Type());
  auto half = RankedTensorType::get({2, 16}, builder.getF32Type());
  auto func = func::FuncOp::create(
      builder, loc, "sharded",
      builder.getFunctionType({indexType, offsetsType}, {half, half}));
  Block *body = func.addEntryBlock();
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(body);
  SmallVector<Value> fused;
  for (int64_t device = 0; device < 2; ++device) {
    auto op = FusedEmbeddingBagOp::create(
        builder, loc, pooled, builder.getI64IntegerAttr(device),
        builder.getArrayAttr({FlatSymbolRefAttr::get(table)}),
        builder.getDenseI64ArrayAttr({device * 8}),
        builder.getDenseI64ArrayAttr({device * 8 + 8}),
        builder.getArrayAttr(
            {PoolingModeAttr::get(&context, PoolingMode::Sum)}),
        ValueRange{body->getArgument(0)}, ValueRange{body->getArgument(1)},
        /*pooling_factors=*/DenseF64ArrayAttr(),
        /*access_hists=*/DenseF64ArrayAttr(),
        /*row_begins=*/DenseI64ArrayAttr(), /*row_ends=*/DenseI64ArrayAttr());
    EXPECT_EQ(op.getNumEntries(), 1u);
    EXPECT_EQ(op.getEntryTable(0), "user");
    EXPECT_EQ(op.getEntryWidth(0), 8);
    fused.push_back(op.getResult());
  }
  auto exchange =
      AllToAllOp::create(builder, loc, TypeRange{half, half}, fused);
  func::ReturnOp::create(builder, loc, exchange.getResults());
  EXPECT_EQ(verifyAndCollect(), "");

  // Reading a shard from the device that does not hold it is caught.
  cast<FusedEmbeddingBagOp>(fused[0].getDefiningOp())
      .setDeviceAttr(builder.getI64IntegerAttr(1));
  EXPECT_NE(verifyAndCollect().find("entry 0 reads columns [0, 8) of table "
                                    "'user' on device 1, but the table places "
                                    "no such shard there"),
            std::string::npos);
}

} // namespace
