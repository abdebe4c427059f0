//===- Threads.h - Spreading host-side preparation over threads -*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// Preparing what the kernels are timed on (mapping a weight arena, packing
// device sets) is split over the host's cores; the timing itself runs on
// one thread.
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_RUNTIME_THREADS_H
#define NEUROSHARD_RUNTIME_THREADS_H

#include <thread>
#include <vector>

namespace neuroshard {
namespace runtime {

/// Calls work(w) for every worker w from 0 to threads - 1 (at least one):
/// worker 0 on the calling thread, each other on a thread of its own.
/// Returns when every worker is done.
template <typename Work> void runOnThreads(unsigned threads, Work &&work) {
  std::vector<std::thread> workers;
  for (unsigned w = 1; w < threads; ++w)
    workers.emplace_back([&work, w] { work(w); });
  work(0u);
  for (std::thread &worker : workers)
    worker.join();
}

} // namespace runtime
} // namespace neuroshard

#endif // NEUROSHARD_RUNTIME_THREADS_H
