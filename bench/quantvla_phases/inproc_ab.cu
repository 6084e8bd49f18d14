// In-process A/B of QuantVLA kernel sources: up to four builds of examples/quantvla/fused.cu (or
// drafts of it) linked into one program, their entry points renamed kj_forward_v0 ..
// kj_forward_v3 (-Dkj_forward=..., see inproc_ab.sh), timed alternately on the same input sets.
// Where a process's buffers lie moves the cold forward by 0.2-0.45 us (docs/benchmarks.md), more
// than a draft usually does, so runs of separate programs compare processes as much as kernels;
// here every variant runs on the same buffers in the same process, and the comparison is paired.
// A round takes every input set in turn and, for each, every variant (in an order that rotates
// from round to round), each sample cold (L2 flushed) and queued behind a spin kernel, as kjudge's
// device figure takes it, eagerly and by replay of a graph of the forward (one per variant and
// set). Reported per variant and kind: the median (quartiles) over all samples and the medians
// per set; per draft against variant 0, the median of the paired differences (same round, set
// and kind) with a bootstrap 95% interval. NVML's SM clock is read after every sample; samples
// taken under 75% of the reference clock (kjudge's: the default applications clock, else the
// maximum) are dropped, with the pairs they belong to.
// Built with -DKJ_AB_LIBRARIES (inproc_ab.sh with KJ_AB_LOAD=library), the variants are not
// linked in: each is a shared library with its own static CUDA runtime, named by KJ_AB_LIB0 ..
// KJ_AB_LIB3 and loaded by dlopen (RTLD_NOW | RTLD_LOCAL), as kjudge loads a native candidate.
// On an H200 the same source loaded so replayed 0.03-0.19 us slower from a graph than linked in,
// and launched no slower (docs/benchmarks.md, forty-first session).
// Usage: inproc_ab <rounds> <sets> <label0> [<label1> ...] (the labels name the variants).
#include "qv_instance.cuh"

#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>

#ifndef KJ_AB_N
#error "build with -DKJ_AB_N=<number of variants> (inproc_ab.sh)"
#endif
static_assert(KJ_AB_N >= 1 && KJ_AB_N <= 4, "one to four variants");

#ifndef KJ_AB_LIBRARIES
extern "C" {
int kj_forward_v0(const kj_call*);
uint64_t kj_workspace_bytes_v0(const kj_call*);
#if KJ_AB_N > 1
int kj_forward_v1(const kj_call*);
uint64_t kj_workspace_bytes_v1(const kj_call*);
#endif
#if KJ_AB_N > 2
int kj_forward_v2(const kj_call*);
uint64_t kj_workspace_bytes_v2(const kj_call*);
#endif
#if KJ_AB_N > 3
int kj_forward_v3(const kj_call*);
uint64_t kj_workspace_bytes_v3(const kj_call*);
#endif
}
#endif

namespace {

using forward_fn = int (*)(const kj_call*);
using workspace_fn = uint64_t (*)(const kj_call*);
#ifndef KJ_AB_LIBRARIES
const forward_fn kForwards[] = {kj_forward_v0,
#if KJ_AB_N > 1
                                kj_forward_v1,
#endif
#if KJ_AB_N > 2
                                kj_forward_v2,
#endif
#if KJ_AB_N > 3
                                kj_forward_v3
#endif
};
const workspace_fn kWorkspaces[] = {kj_workspace_bytes_v0,
#if KJ_AB_N > 1
                                    kj_workspace_bytes_v1,
#endif
#if KJ_AB_N > 2
                                    kj_workspace_bytes_v2,
#endif
#if KJ_AB_N > 3
                                    kj_workspace_bytes_v3
#endif
};
void load_variants() {}
#else
forward_fn kForwards[KJ_AB_N];
workspace_fn kWorkspaces[KJ_AB_N];

/** Each variant's entry points from the library KJ_AB_LIB<v> names; exits on a missing one. */
void load_variants() {
  for (int v = 0; v < KJ_AB_N; ++v) {
    const std::string env = "KJ_AB_LIB" + std::to_string(v);
    const char* path = std::getenv(env.c_str());
    void* lib = path != nullptr ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (lib == nullptr) {
      std::fprintf(stderr, "%s: %s\n", env.c_str(), path != nullptr ? dlerror() : "not set");
      std::exit(2);
    }
    kForwards[v] = reinterpret_cast<forward_fn>(dlsym(lib, "kj_forward"));
    kWorkspaces[v] = reinterpret_cast<workspace_fn>(dlsym(lib, "kj_workspace_bytes"));
    if (kForwards[v] == nullptr || kWorkspaces[v] == nullptr) {
      std::fprintf(stderr, "%s: no kj_forward or kj_workspace_bytes in %s\n", env.c_str(), path);
      std::exit(2);
    }
  }
}
#endif
int g_variant = 0;

}  // namespace

// What qv_instance.cuh calls: the variant selected now (the workspace sized for all of them).
extern "C" int kj_forward(const kj_call* call) {
  return kForwards[g_variant](call);
}
extern "C" uint64_t kj_workspace_bytes(const kj_call* call) {
  uint64_t most = 0;
  for (const workspace_fn f : kWorkspaces) most = std::max(most, f(call));
  return most;
}

using namespace qv_bench;

int main(int argc, char** argv) {
  if (argc < 3 + KJ_AB_N) {
    std::fprintf(stderr, "usage: %s <rounds> <sets> <label0> ... (%d labels)\n", argv[0], KJ_AB_N);
    return 2;
  }
  load_variants();
  const int rounds = std::max(10, std::atoi(argv[1]));
  const int sets = std::max(1, std::atoi(argv[2]));
  std::vector<std::string> labels(argv + 3, argv + 3 + KJ_AB_N);
  constexpr int kWarmupRounds = 5;
  constexpr int kKinds = 2;  // eager launch, graph replay
  const char* const kind_names[kKinds] = {"eager", "graph"};

  // The nominal shape, a set a seed; each set its own allocations (as kjudge's input sets).
  std::vector<std::unique_ptr<instance>> inst;
  for (int g = 0; g < sets; ++g) inst.push_back(std::make_unique<instance>(8, 64, 128, 1000u + g));
  bool correct = true;
  for (int v = 0; v < KJ_AB_N; ++v) {
    g_variant = v;
    const double w = inst[0]->worst_error();
    correct = correct && w <= 1.0;
    std::printf("%s: correctness at the nominal shape: %s (worst error %.3g x tolerance)\n",
                labels[v].c_str(), w <= 1.0 ? "ok" : "FAILED", w);
  }

  cudaStream_t stream;
  check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  for (const auto& p : inst) p->call.stream = stream;
  const size_t flush_bytes = flush_size();
  void* flush = nullptr;
  check_cuda(cudaMalloc(&flush, flush_bytes), "cudaMalloc flush");
  std::vector<cudaGraphExec_t> graphs(static_cast<size_t>(KJ_AB_N) * sets);
  for (int v = 0; v < KJ_AB_N; ++v)
    for (int g = 0; g < sets; ++g) {
      g_variant = v;
      graphs[v * sets + g] = capture_graph(stream, [&] { inst[g]->forward(); });
    }
  cudaEvent_t start, stop;
  check_cuda(cudaEventCreate(&start), "event");
  check_cuda(cudaEventCreate(&stop), "event");

  clock_watch clocks;
  std::printf(
      "method: events around the forward queued behind a spin kernel; cold (%zu MiB written "
      "before every sample); %d rounds x %d sets x %d sources x 2 kinds after %d warm-up rounds; "
      "the SM clock read by NVML after each sample, samples under 75%% of %u MHz dropped%s\n",
      flush_bytes >> 20, rounds, sets, KJ_AB_N, kWarmupRounds, clocks.reference_mhz(),
      clocks.ok() ? "" : " (NVML cannot be read here: none judged)");
  // us[kind][variant][round * sets + set]; NaN: a sample taken under 75% of the reference clock.
  std::vector<double> us[kKinds][KJ_AB_N];
  unsigned int fill = 0;
  for (int r = 0; r < kWarmupRounds + rounds; ++r)
    for (int g = 0; g < sets; ++g)
      for (int kind = 0; kind < kKinds; ++kind)
        for (int i = 0; i < KJ_AB_N; ++i) {
          const int v = (i + r) % KJ_AB_N;  // the order rotates from round to round
          g_variant = v;
          check_cuda(cudaMemsetAsync(flush, static_cast<int>(fill++ & 0xff), flush_bytes, stream),
                     "flush");
          spin_kernel<<<1, 1, 0, stream>>>(40000);  // ~20 us: the launches below queue behind it
          check_cuda(cudaEventRecord(start, stream), "record");
          if (kind == 0)
            inst[g]->forward();
          else
            check_cuda(cudaGraphLaunch(graphs[v * sets + g], stream), "graph launch");
          check_cuda(cudaEventRecord(stop, stream), "record");
          check_cuda(cudaStreamSynchronize(stream), "sample");
          const unsigned mhz = clocks.read();
          float ms = 0;
          check_cuda(cudaEventElapsedTime(&ms, start, stop), "elapsed");
          if (r < kWarmupRounds) continue;
          us[kind][v].push_back(clocks.drop(mhz) ? std::nan("") : 1e3 * ms);
        }
  std::printf("%s\n", clocks.summary().c_str());
  // The samples kept (none dropped for the clock).
  const auto kept = [](const std::vector<double>& all) {
    std::vector<double> out;
    for (const double x : all)
      if (!std::isnan(x)) out.push_back(x);
    return out;
  };

  for (int kind = 0; kind < kKinds; ++kind)
    for (int v = 0; v < KJ_AB_N; ++v) {
      const std::vector<double> s = kept(us[kind][v]);
      if (s.empty()) {
        std::printf("%s, %s: every sample dropped\n", labels[v].c_str(), kind_names[kind]);
        continue;
      }
      std::printf("%s, %s: median %.3f us (q1 %.3f, q3 %.3f, n %zu); per set:", labels[v].c_str(),
                  kind_names[kind], quantile(s, 0.5), quantile(s, 0.25), quantile(s, 0.75),
                  s.size());
      for (int g = 0; g < sets; ++g) {
        std::vector<double> one;
        for (int r = 0; r < rounds; ++r) one.push_back(us[kind][v][r * sets + g]);
        one = kept(one);
        if (one.empty())
          std::printf(" -");
        else
          std::printf(" %.2f", quantile(one, 0.5));
      }
      std::printf("\n");
    }
  std::mt19937 gen(12345u);
  for (int kind = 0; kind < kKinds; ++kind)
    for (int v = 1; v < KJ_AB_N; ++v) {
      // Pairs with a dropped side are left out (NaN).
      std::vector<double> d;
      for (size_t k = 0; k < us[kind][v].size(); ++k) d.push_back(us[kind][v][k] - us[kind][0][k]);
      d = kept(d);
      if (d.empty()) {
        std::printf("%s - %s, %s: no pair kept\n", labels[v].c_str(), labels[0].c_str(),
                    kind_names[kind]);
        continue;
      }
      std::vector<double> boot;
      std::uniform_int_distribution<size_t> pick(0, d.size() - 1);
      for (int b = 0; b < 2000; ++b) {
        std::vector<double> resample(d.size());
        for (double& e : resample) e = d[pick(gen)];
        boot.push_back(quantile(resample, 0.5));
      }
      std::printf("%s - %s, %s: paired median difference %+.3f us [95%%: %+.3f, %+.3f]\n",
                  labels[v].c_str(), labels[0].c_str(), kind_names[kind], quantile(d, 0.5),
                  quantile(boot, 0.025), quantile(boot, 0.975));
    }
  return correct ? 0 : 1;
}
