//===- neuroshard-nccl-check.cpp - Check the exchange on GPUs -------------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Runs the exchange of ExchangeABI.h on NCCL between the ranks of an MPI job
// (`mpirun -np N neuroshard-nccl-check`, one rank per GPU) and compares it
// with exchange_abi's pack and unpack on the CPU, for the same data:
//
// * forward on device buffers: every rank's B x W_r buffer holds known
//   values; its B_r x sum(W) result must be its rows of every rank's
//   columns;
// * backward on device buffers: every rank's result gradient holds known
//   values; its buffer gradient must be what the other ranks pack for it;
// * both directions again through the C interface the lowered code calls,
//   on host buffers;
// * the collectives of row pieces and replicas through their C interfaces:
//   the reduce-scatter of partial sums (sum and mean), its all-gather, and
//   the SGD update of a replica whose gradients are summed over the ranks.
//
// Every copy is exact, and every sum is of small integers (times a power of
// two), exact in any order, so a match means a difference of 0. Rank 0 prints
// one line per check and the tool exits 1 on a mismatch. It depends on
// neither LLVM nor MLIR, so that it runs on a GPU machine that has only
// MPI and NCCL.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/ExchangeABI.h"
#include "neuroshard/Runtime/KernelABI.h"
#include "neuroshard/Runtime/NCCL/NCCLExchange.h"

#include <mpi.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace neuroshard;
using exchange_abi::ExchangeLayout;

namespace {

const char *const kTool = "neuroshard-nccl-check";

const char *const kUsage =
    "usage: neuroshard-nccl-check [--widths W0,W1,...] [--batches "
    "B0,B1,...]\n"
    "\n"
    "Checks the exchange between the ranks of an MPI job on NCCL (one rank\n"
    "per GPU) against the CPU's pack and unpack:\n"
    "\n"
    "  --widths   columns of each rank's fused lookup, one per rank\n"
    "             (default 96,64,96,...)\n"
    "  --batches  rows of the batch each rank owns, one per rank\n"
    "             (default 512,384,512,...)\n";

struct Options {
  std::vector<int64_t> widths, batches;
  bool help = false;
};

/// Parses "96,64" into `values`; false unless every item is an integer.
bool parseList(const std::string &text, std::vector<int64_t> &values) {
  values.clear();
  size_t begin = 0;
  for (;;) {
    size_t end = text.find(',', begin);
    std::string item = text.substr(begin, end - begin);
    if (item.empty())
      return false;
    char *stop = nullptr;
    errno = 0;
    long long value = std::strtoll(item.c_str(), &stop, 10);
    if (errno != 0 || *stop != '\0')
      return false;
    values.push_back(value);
    if (end == std::string::npos)
      return true;
    begin = end + 1;
  }
}

/// Reads the command line; returns an error message or "".
std::string parseOptions(int argc, char **argv, int ranks, Options &options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      options.help = true;
      return "";
    }
    std::string name = arg, value;
    bool hasValue = false;
    if (size_t equals = arg.find('='); equals != std::string::npos) {
      name = arg.substr(0, equals);
      value = arg.substr(equals + 1);
      hasValue = true;
    }
    if (name != "--widths" && name != "--batches")
      return "unknown argument '" + arg + "'; see --help";
    if (!hasValue) {
      if (i + 1 == argc)
        return name + " needs a value";
      value = argv[++i];
    }
    std::vector<int64_t> &list =
        name == "--widths" ? options.widths : options.batches;
    if (!parseList(value, list))
      return name + " '" + value + "' is not a list of integers (e.g. 96,64)";
  }
  if (options.widths.empty())
    for (int d = 0; d < ranks; ++d)
      options.widths.push_back(d % 2 ? 64 : 96);
  if (options.batches.empty())
    for (int d = 0; d < ranks; ++d)
      options.batches.push_back(d % 2 ? 384 : 512);
  if (options.widths.size() != size_t(ranks))
    return "--widths lists " + std::to_string(options.widths.size()) +
           " widths but the job has " + std::to_string(ranks) +
           " ranks (one per GPU)";
  if (options.batches.size() != size_t(ranks))
    return "--batches lists " + std::to_string(options.batches.size()) +
           " batches but the job has " + std::to_string(ranks) +
           " ranks (one per GPU)";
  ExchangeLayout layout;
  layout.widths = options.widths;
  layout.batches = options.batches;
  return exchange_abi::checkExchangeLayout(layout);
}

std::string joined(const std::vector<int64_t> &values) {
  std::string text;
  for (int64_t v : values)
    text += (text.empty() ? "" : ",") + std::to_string(v);
  return text;
}

/// Column c of rank d's fused lookup in bag b: exact in float.
float lookupValue(int64_t d, int64_t b, int64_t c) {
  return float((d * 7919 + b * 31 + c * 17) % 4093) - 2046.0f;
}

/// Column c of the gradient of rank d's result, in its row i.
float gradientValue(int64_t d, int64_t i, int64_t c) {
  return float((d * 104729 + i * 13 + c * 29) % 2039) * 0.5f;
}

ExchangeLayout layoutOf(const Options &options, int64_t rank) {
  ExchangeLayout layout;
  layout.widths = options.widths;
  layout.batches = options.batches;
  layout.rank = rank;
  return layout;
}

/// The rows x width row-major matrix of value(row, column).
template <typename Value>
std::vector<float> matrixOf(int64_t rows, int64_t width, Value value) {
  std::vector<float> matrix(size_t(rows * width));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < width; ++c)
      matrix[size_t(i * width + c)] = value(i, c);
  return matrix;
}

/// Rank `layout.rank`'s B x W_rank buffer.
std::vector<float> lookupBuffer(const ExchangeLayout &layout) {
  return matrixOf(
      layout.batch(), layout.widths[layout.rank],
      [&](int64_t b, int64_t c) { return lookupValue(layout.rank, b, c); });
}

/// The gradient of rank `layout.rank`'s B_rank x sum(W) result.
std::vector<float> resultGradient(const ExchangeLayout &layout) {
  return matrixOf(
      layout.batches[layout.rank], layout.totalWidth(),
      [&](int64_t i, int64_t c) { return gradientValue(layout.rank, i, c); });
}

/// The forward result on the CPU: the blocks every rank sends this one,
/// unpacked by exchange_abi.
std::vector<float> forwardReference(const Options &options, int64_t rank) {
  ExchangeLayout me = layoutOf(options, rank);
  std::vector<float> packed(size_t(me.packedSize()));
  for (int64_t d = 0; d < me.ranks(); ++d) {
    ExchangeLayout sender = layoutOf(options, d);
    std::vector<float> buffer = lookupBuffer(sender);
    std::copy_n(buffer.begin() + sender.sendOffset(rank),
                sender.sendCount(rank), packed.begin() + me.packedOffset(d));
  }
  std::vector<float> result(size_t(me.batches[rank] * me.totalWidth()));
  exchange_abi::unpackColumns(me, packed.data(), result.data());
  return result;
}

/// The backward result on the CPU: what every rank packs for this one.
std::vector<float> backwardReference(const Options &options, int64_t rank) {
  ExchangeLayout me = layoutOf(options, rank);
  std::vector<float> bufferGradient(size_t(me.batch() * me.widths[rank]));
  for (int64_t d = 0; d < me.ranks(); ++d) {
    ExchangeLayout sender = layoutOf(options, d);
    std::vector<float> gradient = resultGradient(sender);
    std::vector<float> packed(size_t(sender.packedSize()));
    exchange_abi::packColumns(sender, gradient.data(), packed.data());
    std::copy_n(packed.begin() + sender.packedOffset(rank),
                sender.packedCount(rank),
                bufferGradient.begin() + me.sendOffset(d));
  }
  return bufferGradient;
}

/// Ends the job after a failure of this rank alone: the others may wait
/// for it inside NCCL.
[[noreturn]] void fail(int rank, const std::string &why) {
  std::fprintf(stderr, "%s: error: rank %d: %s\n", kTool, rank, why.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

void check(int rank, const std::string &why) {
  if (!why.empty())
    fail(rank, why);
}

/// The largest difference between `actual` and `expected` over all ranks;
/// rank 0 prints it. True on a match.
bool report(const char *what, const std::vector<float> &actual,
            const std::vector<float> &expected, int rank) {
  double mine = 0.0;
  for (size_t i = 0; i < actual.size(); ++i)
    mine = std::max(mine, std::fabs(double(actual[i]) - double(expected[i])));
  double largest = 0.0;
  MPI_Allreduce(&mine, &largest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  bool match = largest == 0.0;
  if (rank == 0)
    std::printf("%s: max abs difference %g: %s\n", what, largest,
                match ? "match" : "mismatch");
  return match;
}

exchange_abi::MemRefDescriptor<float, 2>
matrixRef(std::vector<float> &data, int64_t rows, int64_t columns) {
  return {data.data(), data.data(), 0, {rows, columns}, {columns, 1}};
}

template <typename T>
exchange_abi::MemRefDescriptor<T, 1> vectorRef(std::vector<T> &data) {
  return {data.data(), data.data(), 0, {int64_t(data.size())}, {1}};
}

/// Bag b's length in the reduce-scatter's mean: 0 to 3, some bags empty.
int64_t bagLength(int64_t b) { return b % 4; }

/// The reduce-scatter and its all-gather through their C interfaces, each
/// rank's partial sums B x W (W the first rank's width), with a sum and with
/// a mean. True when both match the CPU on every rank.
bool checkReduceScatter(const Options &options, int rank, bool mean) {
  ExchangeLayout layout = layoutOf(options, rank);
  int64_t batch = layout.batch(), width = options.widths[0];
  int64_t rows = layout.batches[rank], first = layout.rowBegin(rank);
  auto partial = [&](int64_t d) {
    return matrixOf(batch, width,
                    [&](int64_t b, int64_t c) { return lookupValue(d, b, c); });
  };
  std::vector<int64_t> offsets;
  if (mean) {
    offsets.push_back(0);
    for (int64_t b = 0; b < batch; ++b)
      offsets.push_back(offsets.back() + bagLength(b));
  }
  auto divisor = [&](int64_t b) {
    return mean ? float(std::max<int64_t>(bagLength(b), 1)) : 1.0f;
  };

  std::vector<float> expected(size_t(rows * width), 0.0f);
  for (int64_t d = 0; d < layout.ranks(); ++d) {
    std::vector<float> values = partial(d);
    for (int64_t i = 0; i < rows * width; ++i)
      expected[size_t(i)] += values[size_t(first * width + i)];
  }
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < width; ++c)
      expected[size_t(i * width + c)] /= divisor(first + i);
  std::vector<float> mine = partial(rank), own(size_t(rows * width), -1.0f);
  std::vector<int64_t> batches = options.batches;
  auto wholeRef = matrixRef(mine, batch, width);
  auto ownRef = matrixRef(own, rows, width);
  auto batchesRef = vectorRef(batches), offsetsRef = vectorRef(offsets);
  _mlir_ciface_neuroshard_reduce_scatter_f32(&wholeRef, &ownRef, &batchesRef,
                                             &offsetsRef, rank);
  bool match = report(mean ? "reduce-scatter with a mean (host buffers)"
                           : "reduce-scatter (host buffers)",
                      own, expected, rank);

  // Backward: every rank's gradient of its rows (the mean's adjoint
  // divides it), gathered into B x W on every rank.
  std::vector<float> expectedWhole(size_t(batch * width));
  for (int64_t d = 0; d < layout.ranks(); ++d)
    for (int64_t i = 0; i < layout.batches[d]; ++i)
      for (int64_t c = 0; c < width; ++c) {
        int64_t b = layout.rowBegin(d) + i;
        expectedWhole[size_t(b * width + c)] =
            gradientValue(d, i, c) / divisor(b);
      }
  std::vector<float> gradient =
      matrixOf(rows, width,
               [&](int64_t i, int64_t c) { return gradientValue(rank, i, c); });
  std::vector<float> whole(size_t(batch * width), -1.0f);
  auto gradientRef = matrixRef(gradient, rows, width);
  auto gatheredRef = matrixRef(whole, batch, width);
  _mlir_ciface_neuroshard_reduce_scatter_gradient_f32(
      &gradientRef, &gatheredRef, &batchesRef, &offsetsRef, rank);
  match &= report(mean ? "all-gather with a mean (host buffers)"
                       : "all-gather (host buffers)",
                  whole, expectedWhole, rank);
  return match;
}

/// The replicas' update through its C interface: one replica of an 8 x 4
/// table on every rank, each rank's slice of 6 bags looking up rows that
/// depend on the rank; every rank must end with the initial table minus lr
/// times the gradient summed over all ranks' bags.
bool checkReplicaUpdate(int rank, int ranks) {
  namespace abi = kernel_abi;
  constexpr int64_t kRows = 8, kWidth = 4, kBags = 6;
  constexpr float kLearningRate = 0.5f;
  auto inputs = [&](int64_t d, std::vector<int64_t> &indices,
                    std::vector<int64_t> &offsets) {
    indices.clear();
    offsets.assign(1, 0);
    for (int64_t b = 0; b < kBags; ++b) {
      for (int64_t k = 0; k < bagLength(b + d); ++k)
        indices.push_back((d * 3 + b * 5 + k) % kRows);
      offsets.push_back(int64_t(indices.size()));
    }
  };
  auto outputGradient = [&](int64_t d) {
    return matrixOf(kBags, kWidth, [&](int64_t b, int64_t c) {
      return gradientValue(d, b, c);
    });
  };
  std::vector<float> table = matrixOf(
      kRows, kWidth, [](int64_t r, int64_t c) { return lookupValue(0, r, c); });

  std::vector<float> expected = table;
  std::vector<int64_t> indices, offsets;
  for (int64_t d = 0; d < ranks; ++d) {
    inputs(d, indices, offsets);
    std::vector<float> grad = outputGradient(d);
    for (int64_t b = 0; b < kBags; ++b)
      for (int64_t i = offsets[size_t(b)]; i < offsets[size_t(b + 1)]; ++i)
        for (int64_t c = 0; c < kWidth; ++c)
          expected[size_t(indices[size_t(i)] * kWidth + c)] -=
              kLearningRate * grad[size_t(b * kWidth + c)];
  }

  abi::ShardDescriptor shard;
  shard.rowStride = kWidth;
  shard.width = kWidth;
  std::vector<int64_t> meta;
  abi::appendShard(meta, shard, /*outColumn=*/0, abi::InputBase());
  std::vector<int64_t> layout = {0};
  inputs(rank, indices, offsets);
  std::vector<float> grad = outputGradient(rank);
  auto metaRef = vectorRef(meta), layoutRef = vectorRef(layout);
  auto weightsRef = vectorRef(table);
  auto indicesRef = vectorRef(indices), offsetsRef = vectorRef(offsets);
  auto gradRef = matrixRef(grad, kBags, kWidth);
  _mlir_ciface_neuroshard_replica_sgd_i64(&metaRef, &layoutRef, &weightsRef,
                                          &indicesRef, &offsetsRef, &gradRef,
                                          kLearningRate);
  return report("replica update (gradients summed over the ranks)", table,
                expected, rank);
}

/// Exchanges device buffers forward and backward, then host buffers through
/// the C interface, and compares each with the CPU. True when all match.
bool runChecks(const Options &options, nccl::Communicator &communicator) {
  int rank = communicator.rank();
  ExchangeLayout layout = layoutOf(options, rank);
  nccl::Stream stream = communicator.stream();
  size_t bufferCount = size_t(layout.batch() * layout.widths[rank]);
  size_t resultCount = size_t(layout.batches[rank] * layout.totalWidth());

  std::vector<float> buffer = lookupBuffer(layout);
  std::vector<float> gradient = resultGradient(layout);
  nccl::DeviceArray deviceBuffer, deviceResult, deviceGradient,
      deviceBufferGradient;
  check(rank, deviceBuffer.reserve(bufferCount));
  check(rank, deviceResult.reserve(resultCount));
  check(rank, deviceGradient.reserve(resultCount));
  check(rank, deviceBufferGradient.reserve(bufferCount));
  check(rank, deviceBuffer.upload(buffer.data(), bufferCount, stream));
  check(rank, deviceGradient.upload(gradient.data(), resultCount, stream));

  std::vector<float> result(resultCount, -1.0f);
  std::vector<float> bufferGradient(bufferCount, -1.0f);
  check(rank, communicator.exchangeForward(layout, deviceBuffer.data(),
                                           deviceResult.data(), stream));
  check(rank,
        communicator.exchangeBackward(layout, deviceGradient.data(),
                                      deviceBufferGradient.data(), stream));
  check(rank, deviceResult.download(result.data(), resultCount, stream));
  check(rank, deviceBufferGradient.download(bufferGradient.data(), bufferCount,
                                            stream));
  check(rank, communicator.synchronize(stream));

  std::vector<float> expected = forwardReference(options, rank);
  bool match = report("forward", result, expected, rank);
  std::vector<float> expectedGradient = backwardReference(options, rank);
  match &= report("backward", bufferGradient, expectedGradient, rank);

  // The lowered code's calls: host memrefs, staged through the device.
  std::vector<float> hostResult(resultCount, -1.0f);
  std::vector<float> hostBufferGradient(bufferCount, -1.0f);
  std::vector<int64_t> widths = options.widths, batches = options.batches;
  auto bufferRef = matrixRef(buffer, layout.batch(), layout.widths[rank]);
  auto resultRef =
      matrixRef(hostResult, layout.batches[rank], layout.totalWidth());
  auto gradientRef =
      matrixRef(gradient, layout.batches[rank], layout.totalWidth());
  auto bufferGradientRef =
      matrixRef(hostBufferGradient, layout.batch(), layout.widths[rank]);
  auto widthsRef = vectorRef(widths), batchesRef = vectorRef(batches);
  _mlir_ciface_neuroshard_exchange_f32(&bufferRef, &resultRef, &widthsRef,
                                       &batchesRef, rank);
  _mlir_ciface_neuroshard_exchange_gradient_f32(
      &gradientRef, &bufferGradientRef, &widthsRef, &batchesRef, rank);
  match &= report("forward through the C interface (host buffers)", hostResult,
                  expected, rank);
  match &= report("backward through the C interface (host buffers)",
                  hostBufferGradient, expectedGradient, rank);
  match &= checkReduceScatter(options, rank, /*mean=*/false);
  match &= checkReduceScatter(options, rank, /*mean=*/true);
  match &= checkReplicaUpdate(rank, communicator.ranks());
  return match;
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);

  // Every rank reads the same command line, so every rank agrees on it
  // without talking; rank 0 speaks for all.
  Options options;
  std::string why = parseOptions(argc, argv, ranks, options);
  if (options.help || !why.empty()) {
    if (rank == 0) {
      if (options.help)
        std::fputs(kUsage, stdout);
      else
        std::fprintf(stderr, "%s: error: %s\n", kTool, why.c_str());
    }
    MPI_Finalize();
    return options.help ? 0 : 1;
  }

  // The C entry point's communicator, so that all three checks share one.
  nccl::Communicator *communicator = nullptr;
  why = nccl::processCommunicator(communicator);
  if (!why.empty()) {
    if (rank == 0)
      std::fprintf(stderr, "%s: error: %s\n", kTool, why.c_str());
    MPI_Finalize();
    return 1;
  }
  if (rank == 0) {
    std::printf("exchange between %d rank(s) on NCCL: widths %s, batches "
                "%s; rank 0 on GPU %d (%s)\n",
                ranks, joined(options.widths).c_str(),
                joined(options.batches).c_str(), communicator->device(),
                communicator->deviceName().c_str());
    std::fflush(stdout);
  }
  bool match = runChecks(options, *communicator);
  nccl::closeProcessCommunicator();
  MPI_Finalize();
  return match ? 0 : 1;
}
