#include <kjudge/roofline/cublas_gemm.hpp>

#include <dlfcn.h>

#include <cublas_v2.h>
#include <fmt/format.h>

#include <kjudge/core/error.hpp>

namespace kj::roofline::detail {

// The prototypes come from cublas_v2.h (types only: nothing is linked); the symbols are
// resolved by name in the library that dlopen found.
// cublasGemmEx has a C++ overload in the header; this is the exported C function.
using gemm_ex_fn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                      int, int, const void*, const void*, cudaDataType, int,
                                      const void*, cudaDataType, int, const void*, void*,
                                      cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);

struct cublas_gemm::api {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  gemm_ex_fn gemm_ex = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
};

namespace {

const cublas_gemm::api* resolve(std::string& why) {
  static const cublas_gemm::api* cached = nullptr;
  static std::string cached_why;
  static bool tried = false;
  if (tried) {
    why = cached_why;
    return cached;
  }
  tried = true;
  void* lib = nullptr;
  std::string errors;
  for (const char* name : {KJ_CUBLAS_SONAME, KJ_CUBLAS_PATH, "libcublas.so"}) {
    lib = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) break;
    const char* e = ::dlerror();
    errors += fmt::format("{}{}", errors.empty() ? "" : "; ", e != nullptr ? e : name);
  }
  if (lib == nullptr) {
    cached_why = "cuBLAS not found: " + errors;
    why = cached_why;
    return nullptr;
  }
  static cublas_gemm::api a;
  auto sym = [lib](const char* name) { return ::dlsym(lib, name); };
  a.create = reinterpret_cast<decltype(a.create)>(sym("cublasCreate_v2"));
  a.destroy = reinterpret_cast<decltype(a.destroy)>(sym("cublasDestroy_v2"));
  a.set_stream = reinterpret_cast<decltype(a.set_stream)>(sym("cublasSetStream_v2"));
  a.gemm_ex = reinterpret_cast<decltype(a.gemm_ex)>(sym("cublasGemmEx"));
  a.status_string = reinterpret_cast<decltype(a.status_string)>(sym("cublasGetStatusString"));
  if (a.create == nullptr || a.destroy == nullptr || a.set_stream == nullptr ||
      a.gemm_ex == nullptr) {
    cached_why = "cuBLAS lacks cublasCreate_v2 / cublasGemmEx";
    why = cached_why;
    return nullptr;
  }
  cached = &a;
  return cached;
}

std::string describe(const cublas_gemm::api& a, cublasStatus_t s) {
  const char* text = a.status_string != nullptr ? a.status_string(s) : nullptr;
  return text != nullptr ? std::string(text) : fmt::format("cuBLAS status {}", static_cast<int>(s));
}

}  // namespace

std::unique_ptr<cublas_gemm> cublas_gemm::load(std::string& why) {
  try {
    const api* a = resolve(why);
    if (a == nullptr) return nullptr;
    cublasHandle_t handle = nullptr;
    const cublasStatus_t s = a->create(&handle);
    if (s != CUBLAS_STATUS_SUCCESS) {
      why = "cublasCreate failed: " + describe(*a, s);
      return nullptr;
    }
    return std::unique_ptr<cublas_gemm>(new cublas_gemm(a, handle));
  } catch (const std::exception& e) {
    why = e.what();
    return nullptr;
  }
}

cublas_gemm::~cublas_gemm() {
  if (m_handle != nullptr) static_cast<void>(m_api->destroy(static_cast<cublasHandle_t>(m_handle)));
}

void cublas_gemm::set_stream(cudaStream_t stream) {
  const cublasStatus_t s = m_api->set_stream(static_cast<cublasHandle_t>(m_handle), stream);
  if (s != CUBLAS_STATUS_SUCCESS)
    KJ_THROW(error_kind::cuda, "cublasSetStream failed: {}", describe(*m_api, s));
}

void cublas_gemm::gemm_16bit(bool half, int n, const void* a, const void* b, void* c) {
  const float alpha = 1.0f, beta = 0.0f;
  const cudaDataType type = half ? CUDA_R_16F : CUDA_R_16BF;
  const cublasStatus_t s = m_api->gemm_ex(
      static_cast<cublasHandle_t>(m_handle), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, type, n,
      b, type, n, &beta, c, type, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (s != CUBLAS_STATUS_SUCCESS)
    KJ_THROW(error_kind::cuda, "cublasGemmEx ({} {}^3) failed: {}", half ? "fp16" : "bf16", n,
             describe(*m_api, s));
}

}  // namespace kj::roofline::detail
