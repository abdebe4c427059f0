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
//   on host buffers.
//
// Every copy is exact, so a match means a difference of 0. Rank 0 prints
// one line per check and the tool exits 1 on a mismatch. It depends on
// neither LLVM nor MLIR, so that it runs on a GPU machine that has only
// MPI and NCCL.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/ExchangeABI.h"
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

/// Rank `layout.rank`'s B x W_rank buffer.
std::vector<float> lookupBuffer(const ExchangeLayout &layout) {
  int64_t width = layout.widths[layout.rank];
  std::vector<float> buffer(size_t(layout.batch() * width));
  for (int64_t b = 0; b < layout.batch(); ++b)
    for (int64_t c = 0; c < width; ++c)
      buffer[size_t(b * width + c)] = lookupValue(layout.rank, b, c);
  return buffer;
}

/// The gradient of rank `layout.rank`'s B_rank x sum(W) result.
std::vector<float> resultGradient(const ExchangeLayout &layout) {
  int64_t rows = layout.batches[layout.rank], width = layout.totalWidth();
  std::vector<float> gradient(size_t(rows * width));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < width; ++c)
      gradient[size_t(i * width + c)] = gradientValue(layout.rank, i, c);
  return gradient;
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
  auto matrix = [](std::vector<float> &data, int64_t rows, int64_t columns) {
    return exchange_abi::MemRefDescriptor<float, 2>{
        data.data(), data.data(), 0, {rows, columns}, {columns, 1}};
  };
  auto vector = [](std::vector<int64_t> &data) {
    int64_t size = int64_t(data.size());
    return exchange_abi::MemRefDescriptor<int64_t, 1>{
        data.data(), data.data(), 0, {size}, {1}};
  };
  auto bufferRef = matrix(buffer, layout.batch(), layout.widths[rank]);
  auto resultRef =
      matrix(hostResult, layout.batches[rank], layout.totalWidth());
  auto gradientRef =
      matrix(gradient, layout.batches[rank], layout.totalWidth());
  auto bufferGradientRef =
      matrix(hostBufferGradient, layout.batch(), layout.widths[rank]);
  auto widthsRef = vector(widths), batchesRef = vector(batches);
  _mlir_ciface_neuroshard_exchange_f32(&bufferRef, &resultRef, &widthsRef,
                                       &batchesRef, rank);
  _mlir_ciface_neuroshard_exchange_gradient_f32(
      &gradientRef, &bufferGradientRef, &widthsRef, &batchesRef, rank);
  match &= report("forward through the C interface (host buffers)", hostResult,
                  expected, rank);
  match &= report("backward through the C interface (host buffers)",
                  hostBufferGradient, expectedGradient, rank);
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
