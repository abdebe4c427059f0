/* printMemrefF32 for an ahead-of-time compiled host program: prints a
 * contiguous f32 memref of any rank as one flat list, "[a, b, ...]", the
 * way mlir-runner's libmlir_runner_utils prints a 1-D one, so that the
 * program runs on a GPU machine without MLIR's libraries. */
#include <stdint.h>
#include <stdio.h>

struct Descriptor {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[]; /* then the strides */
};

void printMemrefF32(int64_t rank, struct Descriptor *d) {
  int64_t n = 1;
  for (int64_t i = 0; i < rank; ++i)
    n *= d->sizes[i];
  printf("[");
  for (int64_t i = 0; i < n; ++i)
    printf(i ? ", %g" : "%g", (double)d->aligned[d->offset + i]);
  printf("]\n");
}
