#pragma once
/** @file Is there a usable GPU, and what is it. "No device" and "insufficient driver" (what a
 *  machine without a GPU returns) both mean no GPU; neither throws. */

#include <cstddef>
#include <string>

namespace kj::cuda {

struct probe_result {
  bool available = false;
  int device_count = 0;
  std::string
      reason;  ///< when !available: "no CUDA device", "no NVIDIA driver", the CUDA error text
};

/** Asks the runtime for devices; never throws. Result cached for the process. */
[[nodiscard]] probe_result probe() noexcept;

/** Device facts used across kjudge (specs, timing, build arch). */
struct device_properties {
  int ordinal = 0;
  std::string name;
  std::string uuid;  ///< "GPU-xxxxxxxx-..."
  std::string pci_bus_id;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::size_t total_memory_bytes = 0;
  std::size_t l2_bytes = 0;
  std::size_t smem_per_block_optin_bytes = 0;
  std::size_t smem_per_sm_bytes = 0;
  int regs_per_sm = 0;
  int max_threads_per_sm = 0;
  int sm_clock_khz = 0;      ///< cudaDevAttrClockRate (max boost)
  int memory_clock_khz = 0;  ///< cudaDevAttrMemoryClockRate
  int memory_bus_width_bits = 0;
  int driver_version = 0;   ///< cudaDriverGetVersion, e.g. 13000
  int runtime_version = 0;  ///< cudaRuntimeGetVersion of kjudge's own runtime
  /** "90" for 9.0, the arch string nvcc gets. */
  [[nodiscard]] std::string arch() const { return std::to_string(cc_major * 10 + cc_minor); }
};

/** Throws kj::error(cuda) when the device cannot be queried. */
[[nodiscard]] device_properties query_device(int ordinal);

/** Creates the device's primary context now (the driver's one-time cost, hundreds of ms on large
 *  GPUs), so that a later user in the same process (torch, a candidate) only retains it. Safe to
 *  call from any thread. Throws kj::error(cuda). */
void create_primary_context(int ordinal);

}  // namespace kj::cuda
