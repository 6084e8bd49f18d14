#include <kjudge/cuda/check.hpp>

#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include <kjudge/core/error.hpp>

namespace kj::cuda {

bool is_sticky(cudaError_t status) noexcept {
  // Errors that corrupt the context: every later call on it fails the same way, so the process
  // (the worker) must be replaced. Everything else is reported once and cleared.
  switch (status) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorTensorMemoryLeak:
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
    case cudaErrorContextIsDestroyed:
    case cudaErrorExternalDevice:
    case cudaErrorUnknown:
      return true;
    default:
      return false;
  }
}

std::string describe(cudaError_t status) {
  return fmt::format("{}: {}", cudaGetErrorName(status), cudaGetErrorString(status));
}

void check(cudaError_t status, const char* expression, std::source_location where) {
  if (status == cudaSuccess) return;
  // A non-sticky error stays as the thread's "last error" until read; clear it so the next,
  // unrelated check does not report it again. Sticky errors cannot be cleared.
  if (!is_sticky(status)) static_cast<void>(cudaGetLastError());
  throw kj::error(error_kind::cuda,
                  fmt::format("{} failed: {}{}", expression, describe(status),
                              is_sticky(status) ? " (sticky: the CUDA context is unusable)" : ""),
                  where);
}

bool check_nothrow(cudaError_t status, const char* expression,
                   std::source_location where) noexcept {
  if (status == cudaSuccess) return true;
  if (!is_sticky(status)) static_cast<void>(cudaGetLastError());
  // fprintf, not fmt or iostreams: nothing here may throw (this runs in destructors).
  std::fprintf(stderr, "kjudge: %s:%u: %s failed: %s: %s\n", where.file_name(),
               static_cast<unsigned>(where.line()), expression, cudaGetErrorName(status),
               cudaGetErrorString(status));
  return false;
}

}  // namespace kj::cuda
