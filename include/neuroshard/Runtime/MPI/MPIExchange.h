//===- MPIExchange.h - The exchange over MPI --------------------*- C++ -*-===//
//
// Part of the NeuroShard project.
//
//===----------------------------------------------------------------------===//
//
// The exchange of ExchangeABI.h on MPI_COMM_WORLD, one rank per device: an
// MPI_Alltoallv of contiguous blocks, with the column blocks packed and
// unpacked on the receiving side; on ranks grouped into nodes, two
// MPI_Alltoallv, one between the nodes and one inside each. Both directions are
// also what the lowered code of a rank's program calls (the C interfaces of
// kExchangeF32 and kExchangeGradientF32).
//
// MPI must be initialised by the caller. Errors of the collective itself
// follow MPI's error handler (by default the job aborts).
//
//===----------------------------------------------------------------------===//

#ifndef NEUROSHARD_RUNTIME_MPI_MPIEXCHANGE_H
#define NEUROSHARD_RUNTIME_MPI_MPIEXCHANGE_H

#include "neuroshard/Runtime/ExchangeABI.h"

#include <string>
#include <utility>
#include <vector>

namespace neuroshard {
namespace mpi {

/// Forward: `buffer` is this rank's B x W_rank fused lookup result, `result`
/// receives its B_rank x sum(W) slice. Returns why it could not run (empty
/// on success): a layout that does not describe this job (wrong rank or
/// rank count), or blocks too large for MPI's int counts.
std::string exchangeForward(const exchange_abi::ExchangeLayout &layout,
                            const float *buffer, float *result);

/// Backward: `gradient` is the gradient of this rank's B_rank x sum(W)
/// result; `bufferGradient` receives the gradient of its B x W_rank buffer.
std::string exchangeBackward(const exchange_abi::ExchangeLayout &layout,
                             const float *gradient, float *bufferGradient);

/// Groups the job's ranks into nodes of `ranksPerNode` consecutive ranks,
/// so that the exchanges run in two phases (NodeExchange in
/// ExchangeABI.h): between nodes, then inside each. 0 (or the job's size)
/// puts every rank on one node, and the exchange in one phase. Collective:
/// every rank calls it with the same value. Returns why it cannot (empty
/// on success): a count that does not divide the job.
std::string groupRanksIntoNodes(int ranksPerNode);
/// The ranks of a node as grouped (the job's size on one node).
int ranksPerNode();
/// The ranks that share this machine's memory (MPI_COMM_TYPE_SHARED), when
/// every machine runs as many consecutive ranks; 0 when they do not.
/// Collective.
int sharedMemoryRanksPerNode();

/// Seconds spent in exchanges (both directions, waiting for other ranks
/// included), and the bytes this rank sent to the other ranks of its node
/// and to other nodes, since the last reset.
double exchangeSeconds();
struct ExchangeBytes {
  double intraNode = 0.0, interNode = 0.0;
};
ExchangeBytes exchangeBytes();
void resetExchangeStatistics();

/// The address of the C interface of kExchangeF32, for a JIT to resolve
/// `_mlir_ciface_neuroshard_exchange_f32` to. A failure prints the reason
/// and aborts the job (MPI_Abort), since the other ranks would wait for
/// this one forever.
void *exchangeEntryPoint();

/// The same for kExchangeGradientF32, the backward direction
/// (exchangeBackward).
void *exchangeGradientEntryPoint();

/// Every collective a rank's lowered program calls, as (symbol of its C
/// interface, address) for a JIT to resolve: both directions of the
/// exchange and of the reduce-scatter of row pieces (MPI_Reduce_scatter,
/// MPI_Allgatherv), and the update of replicas (MPI_Allreduce of their
/// gradients). Like the exchange, a failure aborts the job.
std::vector<std::pair<std::string, void *>> collectiveEntryPoints();

} // namespace mpi
} // namespace neuroshard

#endif // NEUROSHARD_RUNTIME_MPI_MPIEXCHANGE_H
