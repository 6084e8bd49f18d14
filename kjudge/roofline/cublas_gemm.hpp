#pragma once
/** @file cuBLAS, loaded at run time with dlopen, for the tensor-core throughput figures. It is
 *  not linked: the kjudge executable also hosts the worker that imports torch, and a cuBLAS
 *  loaded at start-up would be the one torch gets (same soname), whatever version torch needs.
 *  Only `kjudge roofline` loads it, in its own process. */

#include <cstddef>
#include <memory>
#include <string>

#include <cuda_runtime_api.h>

namespace kj::roofline::detail {

/** One cuBLAS handle on the current device. Move-only through unique_ptr. */
class cublas_gemm {
 public:
  /** Loads libcublas and creates a handle; nullptr when either fails, with `why` set. Never
   *  throws. The library stays loaded for the life of the process. */
  [[nodiscard]] static std::unique_ptr<cublas_gemm> load(std::string& why);
  ~cublas_gemm();
  cublas_gemm(const cublas_gemm&) = delete;
  cublas_gemm& operator=(const cublas_gemm&) = delete;

  /** Work runs on `stream` from now on. Throws kj::error(cuda). */
  void set_stream(cudaStream_t stream);
  /** Enqueues C = A x B for n x n column-major matrices of bf16 (fp16 when `half`) with fp32
   *  accumulation (CUBLAS_COMPUTE_32F), C in the input type: 2n^3 FLOP. Throws kj::error(cuda)
   *  with cuBLAS's status on failure. */
  void gemm_16bit(bool half, int n, const void* a, const void* b, void* c);

  struct api;  ///< the resolved entry points (cublas_gemm.cpp)

 private:
  cublas_gemm(const api* entry_points, void* handle) noexcept
      : m_api(entry_points), m_handle(handle) {}

  const api* m_api;
  void* m_handle;  ///< cublasHandle_t
};

}  // namespace kj::roofline::detail
