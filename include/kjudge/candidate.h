/* kjudge native candidate ABI, version 1.
 *
 * A native candidate is one .cu file that kjudge compiles with nvcc into a shared library for the
 * GPU that is present, loads with dlopen, and calls through the functions declared here. kjudge
 * owns every allocation: inputs, the reference model's parameters and buffers, the outputs (filled
 * before each correctness call with NaN, or for integer types 0x5A and 0xA5 bytes and for bool
 * true and false, alternating from call to call) and a
 * scratch workspace whose contents are unspecified at every call (kjudge overwrites it with 0xFF
 * bytes between correctness trials: initialise what you read). All pointers are device pointers of
 * the current CUDA device.
 *
 * The candidate must enqueue all its work on `call->stream` and must not synchronise with the host
 * (no cudaDeviceSynchronize, cudaStreamSynchronize or blocking copies): kjudge times it by queueing
 * it behind a blocking kernel, and a forward that waits for the host is reported as such.
 *
 * Documented in docs/candidate-abi.md. Plain C so that any toolchain can implement it.
 */
#ifndef KJUDGE_CANDIDATE_H
#define KJUDGE_CANDIDATE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KJ_ABI_VERSION 1u
#define KJ_MAX_DIMS 8

#if defined(_WIN32)
#define KJ_EXPORT __declspec(dllexport)
#else
#define KJ_EXPORT __attribute__((visibility("default")))
#endif

/** Element types; numeric values are part of the ABI. */
typedef enum kj_dtype {
  KJ_DTYPE_F32 = 0,
  KJ_DTYPE_F16 = 1,
  KJ_DTYPE_BF16 = 2,
  KJ_DTYPE_F64 = 3,
  KJ_DTYPE_I8 = 4,
  KJ_DTYPE_U8 = 5,
  KJ_DTYPE_I16 = 6,
  KJ_DTYPE_I32 = 7,
  KJ_DTYPE_I64 = 8,
  KJ_DTYPE_BOOL = 9
} kj_dtype;

/** A strided view of device memory. Strides are in elements, not bytes. Inputs and parameters are
 *  contiguous (kjudge makes them so); a 0-dim tensor has ndim 0 and one element. */
typedef struct kj_tensor {
  void* data;
  int32_t dtype; /* a kj_dtype */
  int32_t ndim;
  int64_t shape[KJ_MAX_DIMS];
  int64_t strides[KJ_MAX_DIMS];
  const char* name; /* "input0", or the state_dict key for parameters ("out_proj.weight") */
} kj_tensor;

/** One forward call. Order of `params`: the reference model's state_dict order (parameters and
 *  buffers as PyTorch lists them), then its non-persistent buffers (which state_dict leaves out)
 *  of a dtype this ABI passes, in named_buffers() order. Non-tensor inputs of get_inputs() arrive
 * as 0-dim tensors (float64 for Python floats, int64 for ints, bool for bools). */
typedef struct kj_call {
  uint32_t abi_version; /* KJ_ABI_VERSION */
  uint32_t flags;       /* reserved, 0 */
  const kj_tensor* inputs;
  int32_t num_inputs;
  int32_t num_params;
  const kj_tensor* params;
  const kj_tensor* outputs; /* shapes and dtypes of the reference's outputs; write through data */
  int32_t num_outputs;
  int32_t reserved;
  void* workspace; /* kjudge-owned scratch, at least workspace_bytes, 256-byte aligned */
  uint64_t workspace_bytes;
  void* stream; /* a cudaStream_t: enqueue everything here */
  char* error;  /* on failure, write a NUL-terminated message here (capacity below) */
  uint64_t error_capacity;
} kj_call;

/** Required. Enqueue the forward on call->stream. Return 0 on success, non-zero on failure (after
 *  writing call->error). Called many times with the same or other shapes. */
KJ_EXPORT int kj_forward(const kj_call* call);

/** Optional. Scratch bytes needed for the shapes in `call` (its workspace pointer is NULL
 *  here). Without it kjudge provides 16 MiB. */
KJ_EXPORT uint64_t kj_workspace_bytes(const kj_call* call);

#ifdef __cplusplus
}
#endif

#endif /* KJUDGE_CANDIDATE_H */
