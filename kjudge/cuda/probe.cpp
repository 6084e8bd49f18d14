#include <kjudge/cuda/probe.hpp>

#include <array>
#include <cstdint>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <kjudge/cuda/check.hpp>

namespace kj::cuda {

namespace {

probe_result probe_uncached() noexcept {
  probe_result r;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    static_cast<void>(cudaGetLastError());  // not sticky; leave no trace for later checks
    try {
      if (status == cudaErrorNoDevice) {
        r.reason = "no CUDA device";
      } else if (status == cudaErrorInsufficientDriver) {
        r.reason = "no NVIDIA driver (or one older than the CUDA runtime kjudge was built with)";
      } else {
        r.reason = describe(status);
      }
    } catch (...) {
      // Only allocation can fail here; an empty reason is better than terminating.
    }
    return r;
  }
  r.device_count = count;
  r.available = count > 0;
  if (!r.available) r.reason = "no CUDA device";
  return r;
}

/** "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", the form nvidia-smi and NVML use. */
std::string format_uuid(const cudaUUID_t& uuid) {
  std::string out = "GPU";
  for (int i = 0; i < 16; ++i) {
    if (i == 0 || i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += fmt::format("{:02x}", static_cast<unsigned>(static_cast<std::uint8_t>(uuid.bytes[i])));
  }
  return out;
}

int attribute(cudaDeviceAttr attr, int ordinal) {
  int value = 0;
  KJ_CUDA_CHECK(cudaDeviceGetAttribute(&value, attr, ordinal));
  return value;
}

}  // namespace

probe_result probe() noexcept {
  // Function-local static: initialised once, thread-safe. probe_uncached() cannot throw.
  static const probe_result cached = probe_uncached();
  return cached;
}

device_properties query_device(int ordinal) {
  cudaDeviceProp p{};
  KJ_CUDA_CHECK(cudaGetDeviceProperties(&p, ordinal));
  device_properties d;
  d.ordinal = ordinal;
  d.name = p.name;
  d.uuid = format_uuid(p.uuid);
  std::array<char, 64> bus{};
  KJ_CUDA_CHECK(cudaDeviceGetPCIBusId(bus.data(), static_cast<int>(bus.size()), ordinal));
  d.pci_bus_id = bus.data();
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.sm_count = p.multiProcessorCount;
  d.total_memory_bytes = p.totalGlobalMem;
  d.l2_bytes = static_cast<std::size_t>(p.l2CacheSize);
  d.smem_per_block_optin_bytes = p.sharedMemPerBlockOptin;
  d.smem_per_sm_bytes = p.sharedMemPerMultiprocessor;
  d.regs_per_sm = p.regsPerMultiprocessor;
  d.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  // CUDA 13 removed clockRate and memoryClockRate from cudaDeviceProp; both are attributes (kHz).
  d.sm_clock_khz = attribute(cudaDevAttrClockRate, ordinal);
  d.memory_clock_khz = attribute(cudaDevAttrMemoryClockRate, ordinal);
  d.memory_bus_width_bits = attribute(cudaDevAttrGlobalMemoryBusWidth, ordinal);
  KJ_CUDA_CHECK(cudaDriverGetVersion(&d.driver_version));
  KJ_CUDA_CHECK(cudaRuntimeGetVersion(&d.runtime_version));
  return d;
}

void create_primary_context(int ordinal) {
  KJ_CUDA_CHECK(cudaSetDevice(ordinal));
  KJ_CUDA_CHECK(cudaFree(nullptr));  // the documented way to force context creation
}

}  // namespace kj::cuda
