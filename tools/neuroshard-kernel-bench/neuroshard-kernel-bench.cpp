//===- neuroshard-kernel-bench.cpp - CPU kernels against LibTorch ---------===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Times the generic fused CPU kernels against LibTorch on the same inputs,
// both on one thread: forward (one fused call against one `embedding_bag` per
// table) and forward + backward with the SGD update (the fused kernels
// against `embedding_bag(sparse=true)`, autograd's backward and an in-place
// sparse SGD step, the usual PyTorch recipe for embedding training). Prints
// a table of medians and the LibTorch / NeuroShard time ratios.
//
//===----------------------------------------------------------------------===//

#include "neuroshard/Execution/CPUKernelCalls.h"
#include "neuroshard/Runtime/KernelABI.h"
#include "neuroshard/Support/Statistics.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace neuroshard;
using namespace neuroshard::execution;
using namespace neuroshard::runtime;

namespace {

struct Table {
  int64_t rows, dim;
  double pooling;
  bool skewed;
};

struct Case {
  const char *name;
  int64_t batch;
  std::vector<Table> tables;
};

double medianMs(unsigned iters, llvm::function_ref<void()> body) {
  return timeRuns(/*warmup=*/3, iters, body).median;
}

} // namespace

int main(int argc, char **argv) {
  int iters = argc > 1 ? std::atoi(argv[1]) : 20;
  if (iters < 1) {
    std::fprintf(stderr, "usage: neuroshard-kernel-bench [ITERS >= 1]\n");
    return 1;
  }
  at::set_num_threads(1);
  auto compiled = CPUKernels::compile();
  if (!compiled) {
    std::fprintf(stderr, "error: %s\n",
                 llvm::toString(compiled.takeError()).c_str());
    return 1;
  }
  std::unique_ptr<CPUKernels> kernels = std::move(*compiled);

  std::vector<Case> cases = {
      {"1 table, 1M x 128, P=32", 4096, {{1000000, 128, 32, false}}},
      {"1 table, 1M x 128, P=32, skewed", 4096, {{1000000, 128, 32, true}}},
      {"8 tables, dims 16..128",
       4096,
       {{500000, 128, 16, true},
        {200000, 64, 24, true},
        {1000000, 32, 8, false},
        {50000, 16, 30, true},
        {300000, 128, 12, false},
        {100000, 64, 16, true},
        {20000, 32, 40, true},
        {800000, 16, 10, false}}},
      {"26 tables, dim 64, P=16", 2048,
       std::vector<Table>(26, Table{100000, 64, 16, true})},
      {"4 tables, dim 4 and 12",
       8192,
       {{100000, 4, 20, false},
        {100000, 12, 20, false},
        {50000, 4, 8, true},
        {50000, 12, 8, true}}},
  };

  const float lr = 0.01f;
  std::printf("One thread; medians of %d runs after 3 warm-up runs; ratio = "
              "LibTorch time / NeuroShard time (> 1: NeuroShard faster)\n\n",
              iters);
  std::printf("| %-34s | %9s | %9s | %5s | %12s | %12s | %5s |\n", "case",
              "fwd ours", "fwd torch", "ratio", "fwd+bwd ours", "fwd+bwd torch",
              "ratio");
  std::printf("|%s|%s|%s|%s|%s|%s|%s|\n", std::string(36, '-').c_str(),
              std::string(11, '-').c_str(), std::string(11, '-').c_str(),
              std::string(7, '-').c_str(), std::string(14, '-').c_str(),
              std::string(15, '-').c_str(), std::string(7, '-').c_str());
  for (const Case &c : cases) {
    std::vector<std::vector<float>> weights;
    std::vector<inputs::LookupInputs> streams;
    std::vector<KernelShard> shards;
    for (size_t t = 0; t < c.tables.size(); ++t) {
      const Table &table = c.tables[t];
      inputs::TableStats stats;
      stats.name = "bench" + std::to_string(t);
      stats.rows = table.rows;
      stats.dim = table.dim;
      stats.poolingFactor = table.pooling;
      stats.accessHist.fill(0.0);
      if (table.skewed) {
        double bins[] = {0.47, 0.15, 0.14, 0.11, 0.07, 0.03, 0.01, 0.02};
        std::copy(std::begin(bins), std::end(bins), stats.accessHist.begin());
      } else {
        stats.accessHist[0] = 1.0;
      }
      weights.emplace_back(static_cast<size_t>(table.rows * table.dim));
      inputs::fillWeights(t + 1, table.rows, 0, table.dim,
                          weights.back().data(), table.dim);
      streams.push_back(inputs::generateLookup(stats, c.batch, 1, t));
    }
    for (size_t t = 0; t < c.tables.size(); ++t)
      shards.push_back({weights[t].data(), c.tables[t].rows, c.tables[t].dim,
                        kernel_abi::kSum, &streams[t]});
    PreparedSet set = CPUKernels::prepare(shards, c.batch, 5);

    // LibTorch's view of the same data. Its tables live in arenas like
    // NeuroShard's (huge pages where available), so that the comparison is
    // one of kernels, not of page sizes.
    std::vector<WeightVector> torchArenas;
    torchArenas.reserve(c.tables.size());
    std::vector<torch::Tensor> tw, ti, to, tg;
    int64_t column = 0;
    torch::Tensor grad =
        torch::from_blob(set.gradient.data(), {c.batch, set.width});
    for (size_t t = 0; t < c.tables.size(); ++t) {
      torchArenas.emplace_back(weights[t].begin(), weights[t].end());
      tw.push_back(torch::from_blob(torchArenas.back().data(),
                                    {c.tables[t].rows, c.tables[t].dim})
                       .requires_grad_(true));
      ti.push_back(torch::tensor(streams[t].indices, torch::kInt64));
      to.push_back(torch::tensor(streams[t].offsets, torch::kInt64));
      tg.push_back(grad.narrow(1, column, c.tables[t].dim).contiguous());
      column += c.tables[t].dim;
    }

    double oursFwd = medianMs(iters, [&] { kernels->forward(set); });
    double torchFwd = medianMs(iters, [&] {
      torch::NoGradGuard noGrad;
      for (size_t t = 0; t < tw.size(); ++t)
        (void)torch::embedding_bag(tw[t], ti[t], to[t], false, 0, false, {},
                                   true);
    });
    double oursStep = medianMs(iters, [&] {
      kernels->forward(set);
      kernels->backward(set, lr);
    });
    double torchStep = medianMs(iters, [&] {
      for (size_t t = 0; t < tw.size(); ++t) {
        torch::Tensor out = std::get<0>(torch::embedding_bag(
            tw[t], ti[t], to[t], false, 0, /*sparse=*/true, {}, true));
        out.backward(tg[t]);
        torch::NoGradGuard noGrad;
        tw[t].add_(tw[t].grad(), -lr);
        tw[t].mutable_grad() = torch::Tensor();
      }
    });
    std::printf("| %-34s | %9.3f | %9.3f | %5.2f | %12.3f | %13.3f | %5.2f |\n",
                c.name, oursFwd, torchFwd, torchFwd / oursFwd, oursStep,
                torchStep, torchStep / oursStep);
  }
  return 0;
}
