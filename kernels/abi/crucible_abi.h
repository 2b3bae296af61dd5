/* The candidate ABI: the one contract every generator writes to (DESIGN.md §5).
 * A candidate is one .cpp (CPU target) or .cu (CUDA target) file exporting crucible_forward.
 * Inputs (activations and parameters alike) are read-only; outputs are preallocated and must be fully
 * written. Strides are in elements. device is -1 on the CPU target. On CUDA, stream is the cudaStream_t
 * all work must be ordered on and blas a cuBLAS handle bound to it. Return 0 on success. */
#ifndef CRUCIBLE_ABI_H
#define CRUCIBLE_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CRUCIBLE_ABI_VERSION 1

enum cru_dtype {
  CRU_FLOAT32 = 0,
  CRU_FLOAT16 = 1,
  CRU_BFLOAT16 = 2,
  CRU_FLOAT64 = 3,
  CRU_INT32 = 4,
  CRU_INT64 = 5,
  CRU_BOOL = 6
};

/* Spelled exactly as in DESIGN.md §5. */
/* clang-format off */
typedef struct { void* data; int32_t dtype; int32_t ndim; int64_t shape[8]; int64_t stride[8]; } cru_tensor;
typedef struct { int32_t abi_version; int32_t device; void* stream; void* workspace; size_t workspace_bytes; void* blas; } cru_context;
int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t n_inputs,
                     cru_tensor* outputs, int32_t n_outputs);   /* 0 = success */
/* clang-format on */

typedef int (*crucible_forward_fn)(const cru_context*, const cru_tensor*, int32_t, cru_tensor*, int32_t);

#ifdef __cplusplus
}
#endif

#endif /* CRUCIBLE_ABI_H */
