//===- neuroshard-comm-collect.cpp - Time the all-to-all exchanges -------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Measures the communication samples the neural comm models are trained on,
// with real collectives: every MPI rank is one device. For each sample the
// ranks draw the same per-device dim sums and straggler delays from
// (seed, sample id), then time
//
// * the forward all-to-all of the pooled embeddings: device d holds a
//   B x D_d block and sends each device i its B/N rows; device d starts
//   `straggler(d)` ms after the earliest one (a busy wait after a barrier),
//   and its cost is the time from its start to the end of its exchange, so
//   waiting for late devices is included;
// * the backward all-to-all of the gradients: device i sends device d the
//   B/N x D_d gradient of d's columns for its rows; no stragglers.
//
// Each cost is the median of --iters timed runs after --warmup runs. Rank 0
// prints one JSON line per sample:
//
//   {"id": 3, "devices": 4, "batch_size": 1024, "dimsums": [..N],
//    "stragglers_ms": [..N], "fw_ms": [..N], "bw_ms": [..N], "iters": 10,
//    "warmup": 3, "seed": 0, "hardware": "..", "transport": "mpi"}
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Runtime/InputGenerator.h"
#include "neuroshard/Support/HostInfo.h"
#include "neuroshard/Support/Statistics.h"
#include "neuroshard/Support/Version.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

using namespace llvm;

static cl::OptionCategory category("neuroshard-comm-collect options");
static cl::opt<int64_t> samples("samples", cl::desc("Samples to measure"),
                                cl::init(100), cl::cat(category));
static cl::opt<int64_t> firstId("first-id",
                                cl::desc("Id of the first sample (to resume "
                                         "or extend a dataset)"),
                                cl::init(0), cl::cat(category));
static cl::opt<int64_t> batchSize("batch-size",
                                  cl::desc("Bags per batch (a multiple of the "
                                           "number of ranks)"),
                                  cl::init(1024), cl::cat(category));
static cl::opt<int64_t>
    maxDimSum("max-dim-sum",
              cl::desc("Largest dim sum of a device (columns; the dim sums "
                       "are multiples of 4 drawn log-uniformly from 4 up)"),
              cl::init(2048), cl::cat(category));
static cl::opt<double>
    maxStraggler("max-straggler-ms",
                 cl::desc("Largest straggler delay (ms; 0: none)"),
                 cl::init(1.0), cl::cat(category));
static cl::opt<unsigned> warmup("warmup", cl::desc("Untimed runs per sample"),
                                cl::init(3), cl::cat(category));
static cl::opt<unsigned> iters("iters",
                               cl::desc("Timed runs per sample (>= 10)"),
                               cl::init(10), cl::cat(category));
static cl::opt<uint64_t> seed("seed", cl::desc("Seed of the samples"),
                              cl::init(0), cl::cat(category));

namespace {

/// What every rank draws for one sample: the same numbers on every rank.
struct Sample {
  std::vector<int64_t> dimSums;
  std::vector<double> stragglersMs;
};

Sample drawSample(int64_t id, int ranks) {
  neuroshard::inputs::Random random(
      neuroshard::inputs::mixSeed(seed, static_cast<uint64_t>(id)));
  Sample s;
  // Log-uniform dim sums, so that narrow and wide devices are both common.
  double logMax = std::log(static_cast<double>(maxDimSum) / 4.0);
  for (int d = 0; d < ranks; ++d) {
    double columns = 4.0 * std::exp(random.uniform() * logMax);
    s.dimSums.push_back(
        std::max<int64_t>(4, static_cast<int64_t>(columns / 4.0) * 4));
  }
  // About half the samples have stragglers; the earliest device is at 0.
  bool late = maxStraggler > 0 && random.uniform() < 0.5;
  for (int d = 0; d < ranks; ++d)
    s.stragglersMs.push_back(late ? random.uniform() * maxStraggler : 0.0);
  double earliest =
      *std::min_element(s.stragglersMs.begin(), s.stragglersMs.end());
  for (double &t : s.stragglersMs)
    t -= earliest;
  return s;
}

/// The buffers and counts of one all-to-all (in floats).
struct Exchange {
  std::vector<int> sendCounts, sendOffsets, recvCounts, recvOffsets;
  std::vector<float> send, recv;

  Exchange(const std::vector<int64_t> &sendPerRank,
           const std::vector<int64_t> &recvPerRank) {
    int n = static_cast<int>(sendPerRank.size());
    int64_t sendTotal = 0, recvTotal = 0;
    for (int i = 0; i < n; ++i) {
      sendCounts.push_back(static_cast<int>(sendPerRank[i]));
      sendOffsets.push_back(static_cast<int>(sendTotal));
      sendTotal += sendPerRank[i];
      recvCounts.push_back(static_cast<int>(recvPerRank[i]));
      recvOffsets.push_back(static_cast<int>(recvTotal));
      recvTotal += recvPerRank[i];
    }
    send.assign(sendTotal, 1.0f);
    recv.assign(recvTotal, 0.0f);
  }

  void run() {
    MPI_Alltoallv(send.data(), sendCounts.data(), sendOffsets.data(), MPI_FLOAT,
                  recv.data(), recvCounts.data(), recvOffsets.data(), MPI_FLOAT,
                  MPI_COMM_WORLD);
  }
};

/// Times `exchange` on this rank after a barrier and a busy wait of
/// `delayMs`: from the end of the wait to the end of the exchange.
double timeOnce(Exchange &exchange, double delayMs) {
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime() + delayMs * 1e-3;
  while (MPI_Wtime() < start) {
  }
  exchange.run();
  return (MPI_Wtime() - start) * 1e3;
}

/// Median cost of `exchange` on this rank, gathered on rank 0.
std::vector<double> measure(Exchange &exchange, double delayMs, int rank,
                            int ranks) {
  for (unsigned i = 0; i < warmup; ++i)
    timeOnce(exchange, delayMs);
  std::vector<double> runs;
  for (unsigned i = 0; i < iters; ++i)
    runs.push_back(timeOnce(exchange, delayMs));
  std::sort(runs.begin(), runs.end());
  double mine = neuroshard::sortedMedian(runs);
  std::vector<double> all(rank == 0 ? ranks : 0);
  MPI_Gather(&mine, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, 0,
             MPI_COMM_WORLD);
  return all;
}

/// Checks the options; returns an error message, or "" when they are valid.
std::string checkOptions(int ranks) {
  if (ranks < 2)
    return "needs at least 2 MPI ranks (one per device), got " +
           std::to_string(ranks) +
           "; run it as `mpirun -np N neuroshard-comm-collect ...`";
  if (samples < 1)
    return "--samples must be at least 1, got " + std::to_string(samples);
  if (firstId < 0)
    return "--first-id must not be negative, got " + std::to_string(firstId);
  if (batchSize < ranks || batchSize % ranks != 0)
    return "--batch-size " + std::to_string(batchSize) +
           " is not a positive multiple of the " + std::to_string(ranks) +
           " ranks";
  if (maxDimSum < 4)
    return "--max-dim-sum must be at least 4, got " + std::to_string(maxDimSum);
  // MPI counts are ints: the largest block one rank sends must fit.
  if (batchSize / ranks * maxDimSum * ranks > INT32_MAX)
    return "--batch-size " + std::to_string(batchSize) + " x --max-dim-sum " +
           std::to_string(maxDimSum) + " exceeds MPI's element counts";
  if (!(maxStraggler >= 0) || maxStraggler > 1000)
    return "--max-straggler-ms must be in [0, 1000], got " +
           std::to_string(maxStraggler);
  if (iters < 10)
    return "--iters must be at least 10 (the median of at least ten timed "
           "runs), got " +
           std::to_string(iters);
  return "";
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  cl::HideUnrelatedOptions(category);
  ::neuroshard::addVersionPrinter();
  ::neuroshard::addDocumentationHelp("cost-model.md");
  cl::ParseCommandLineOptions(
      argc, argv,
      "Time the forward and backward all-to-all exchanges of sharded "
      "embeddings\nwith MPI (one rank per device), for the neural comm "
      "models\n");
  std::string error = checkOptions(ranks);
  if (!error.empty()) {
    if (rank == 0)
      WithColor::error(errs(), "neuroshard-comm-collect") << error << "\n";
    MPI_Finalize();
    return 1;
  }

  std::string hardware = rank == 0 ? neuroshard::hostCPUModel() : "";
  int64_t rowsPerRank = batchSize / ranks;
  for (int64_t id = firstId; id < firstId + samples; ++id) {
    Sample s = drawSample(id, ranks);
    int64_t mine = s.dimSums[rank];
    // Forward: send my B/N x D_mine block to every rank, receive theirs.
    std::vector<int64_t> fwSend(ranks, rowsPerRank * mine), fwRecv;
    for (int i = 0; i < ranks; ++i)
      fwRecv.push_back(rowsPerRank * s.dimSums[i]);
    Exchange forward(fwSend, fwRecv);
    // Backward: the reverse exchange.
    Exchange backward(fwRecv, fwSend);
    std::vector<double> fw =
        measure(forward, s.stragglersMs[rank], rank, ranks);
    std::vector<double> bw = measure(backward, 0.0, rank, ranks);
    if (rank != 0)
      continue;
    json::Object line{{"id", id},
                      {"devices", ranks},
                      {"batch_size", batchSize.getValue()},
                      {"dimsums", json::Array(s.dimSums)},
                      {"stragglers_ms", json::Array(s.stragglersMs)},
                      {"fw_ms", json::Array(fw)},
                      {"bw_ms", json::Array(bw)},
                      {"iters", static_cast<int64_t>(iters)},
                      {"warmup", static_cast<int64_t>(warmup)},
                      {"seed", static_cast<int64_t>(seed)},
                      {"hardware", hardware},
                      {"transport", "mpi"}};
    outs() << json::Value(std::move(line)) << "\n";
    outs().flush();
  }
  MPI_Finalize();
  return 0;
}
