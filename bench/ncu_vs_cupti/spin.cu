// How kernel durations from CUPTI's activity records and from Nsight Compute's
// gpu__time_duration compare with a kernel whose length is known: spin<N> holds every block for
// N SM cycles (clock64), so its true time is about N / f_SM. Run plainly it prints, per N, the
// median CUPTI duration, the in-kernel %globaltimer span of block 0 and the SM clock that span
// implies; run under ncu (KJ_SPIN_NO_CUPTI=1) it only launches, and ncu measures the same
// launches. bench/ncu_vs_cupti/run.sh runs both and puts the figures side by side.
#include <cuda_runtime.h>
#include <cupti.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

#define CHECK(x)                                                                               \
  do {                                                                                         \
    if (auto e_ = (x); e_ != 0) {                                                              \
      std::fprintf(stderr, "%s failed (%d) at line %d\n", #x, static_cast<int>(e_), __LINE__); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

__device__ unsigned long long g_span[2];  // block 0: globaltimer at entry and exit

template <int N>
__global__ void spin() {
  unsigned long long t0 = 0;
  if (blockIdx.x == 0 && threadIdx.x == 0) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  const long long start = clock64();
  while (clock64() - start < N) {
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    unsigned long long t1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    g_span[0] = t0;
    g_span[1] = t1;
  }
}

std::map<std::string, std::vector<double>> g_cupti_us;  // kernel name -> durations

void CUPTIAPI requested(uint8_t** buf, size_t* size, size_t* max_records) {
  *size = 8 << 20;
  *buf = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buf, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS)
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(r);
      g_cupti_us[k->name].push_back(static_cast<double>(k->end - k->start) / 1e3);
    }
  free(buf);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct variant {
  int cycles;
  void (*fn)();
};

}  // namespace

int main() {
  const bool cupti = std::getenv("KJ_SPIN_NO_CUPTI") == nullptr;
  const int reps = cupti ? 30 : 3;
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK(cudaFree(nullptr));
  if (cupti) {
    CHECK(cuptiActivityRegisterCallbacks(requested, completed));
    CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  }
  const variant variants[] = {{0, spin<0>},         {2000, spin<2000>},   {10000, spin<10000>},
                              {20000, spin<20000>}, {40000, spin<40000>}, {80000, spin<80000>}};
  std::map<int, std::vector<double>> span_us;
  for (int grid : {1, sms}) {
    for (const auto& v : variants) {
      for (int r = 0; r < reps; ++r) {
        v.fn<<<grid, 32>>>();
        CHECK(cudaDeviceSynchronize());
        unsigned long long s[2];
        CHECK(cudaMemcpyFromSymbol(s, g_span, sizeof s));
        if (grid == 1) span_us[v.cycles].push_back(static_cast<double>(s[1] - s[0]) / 1e3);
      }
    }
  }
  if (!cupti) return 0;
  CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  std::printf("cycles  grid  cupti_median_us  in_kernel_span_us  implied_MHz  (%d reps)\n", reps);
  for (const auto& v : variants) {
    for (const auto& [name, d] : g_cupti_us) {
      if (name.find("spin<" + std::to_string(v.cycles) + ">") == std::string::npos &&
          name.find("spinILi" + std::to_string(v.cycles) + "E") == std::string::npos)
        continue;
      // grid 1 and grid = SMs launches share a name: the first half are grid 1
      std::vector<double> g1(d.begin(), d.begin() + static_cast<long>(d.size() / 2));
      std::vector<double> gs(d.begin() + static_cast<long>(d.size() / 2), d.end());
      const double span = median(span_us[v.cycles]);
      std::printf("%6d  %4d  %15.3f  %17.3f  %11.0f\n", v.cycles, 1, median(g1), span,
                  span > 0 ? v.cycles / span : 0.0);
      std::printf("%6d  %4d  %15.3f\n", v.cycles, sms, median(gs));
    }
  }
  return 0;
}
