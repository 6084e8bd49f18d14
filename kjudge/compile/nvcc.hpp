#pragma once
/** @file Building native candidates: one .cu file -> a shared library for the GPU that is present,
 *  with nvcc, cached by a content hash of (source bytes, flags, nvcc version, ABI header). */

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace kj::compile {

struct nvcc_request {
  std::filesystem::path source;  ///< the candidate .cu
  /** Compute capability as "90", "90a", "100"...: builds -gencode arch=compute_X,code=sm_X. */
  std::string arch;
  std::vector<std::string> extra_flags;  ///< appended after kjudge's own (-O3, -std=c++17 ...)
  std::filesystem::path cache_dir;       ///< e.g. ~/.cache/kjudge/native
  std::filesystem::path include_dir;     ///< holds kjudge/candidate.h
  std::filesystem::path nvcc;            ///< empty: find_nvcc()
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

struct build_result {
  bool ok = false;
  bool cached = false;               ///< the library came from the cache; no compiler ran
  std::filesystem::path library;     ///< the .so to dlopen, when ok
  std::string key;                   ///< cache key (sha256 hex)
  std::vector<std::string> command;  ///< the nvcc command line that ran (or would have)
  std::string log;                   ///< the compiler's complete stdout+stderr (never truncated)
  std::chrono::duration<double> build_time{0};
  std::string nvcc_version;  ///< "13.0.88" (from nvcc --version)
  std::string error;  ///< one line when !ok: "nvcc exited with code 1", "nvcc not found", ...
};

/** nvcc from $KJUDGE_NVCC, then $CUDA_HOME/bin, then PATH, then the configure-time toolkit.
 *  Empty when none is found. */
[[nodiscard]] std::filesystem::path find_nvcc();

/** Release string of an nvcc binary ("13.0.88"); cached per path for the process. */
[[nodiscard]] std::string nvcc_version(const std::filesystem::path& nvcc);

/** Builds (or finds in the cache) the candidate library. Concurrent builds of the same key are
 *  safe: the library is written to a temporary name and renamed into place. A compile failure is
 *  a value (ok = false, log = full compiler output), not an exception. */
[[nodiscard]] build_result build_native(const nvcc_request& request);

/** The user's cache root: $KJUDGE_CACHE_DIR, else $XDG_CACHE_HOME/kjudge, else ~/.cache/kjudge. */
[[nodiscard]] std::filesystem::path default_cache_dir();

}  // namespace kj::compile
