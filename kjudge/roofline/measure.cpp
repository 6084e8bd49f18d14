#include <kjudge/roofline/measure.hpp>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <ctime>

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <kjudge/core/error.hpp>
#include <kjudge/core/stats.hpp>
#include <kjudge/core/timestamp.hpp>
#include <kjudge/core/units.hpp>
#include <kjudge/cuda/check.hpp>
#include <kjudge/cuda/device_buffer.hpp>
#include <kjudge/cuda/event.hpp>
#include <kjudge/cuda/probe.hpp>
#include <kjudge/cuda/stream.hpp>
#include <kjudge/measure/stream_blocker.hpp>
#include <kjudge/roofline/cublas_gemm.hpp>
#include <kjudge/roofline/kernels.hpp>

namespace kj::roofline {

namespace {

using detail::kernel_kind;
using enqueue_fn = std::function<void(long long)>;

constexpr double tera = 1e12;
constexpr std::size_t mib = std::size_t{1} << 20;
/** Empty kernels per repetition of the launch-latency figures, and round trips per repetition. */
constexpr long long stream_launches = 2000;
constexpr long long graph_launches = 2000;
constexpr long long round_trips = 200;
/** The queued figure: empty kernels issued while the blocking kernel holds the stream, and held
 *  batches per repetition. A batch stays far below what the launch queue holds, so the host never
 *  waits for the GPU while the stream is held; 16 batches make a repetition as long as those of
 *  the other latency figures (about a millisecond or more). */
constexpr long long queued_launches = 256;
constexpr int queued_batches = 16;
/** How long the blocking kernel waits for the host to issue one batch: far more than 256
 *  launches of a few microseconds each take. */
constexpr milliseconds queued_hold_timeout{200.0};

/** The stream, events and policy every benchmark shares. */
class bench_context {
 public:
  bench_context(const measure_options& o, measure::detail::clock_monitor& clocks)
      : m_clocks(clocks), m_repetitions(o.repetitions), m_target_ms(o.target_launch_ms) {}

  [[nodiscard]] cudaStream_t stream() const noexcept { return m_stream.get(); }

  /** GPU time of what `enqueue` puts on the stream, between two events. With `sample_clock`,
   *  NVML is read while the work runs (only for timed repetitions of busy kernels: an idle or
   *  warming GPU would report idle clocks). */
  template <class F>
  double time_ms(F&& enqueue, bool sample_clock = false) {
    m_start.record(m_stream.get());
    enqueue();
    m_end.record(m_stream.get());
    if (sample_clock) m_clocks.read();  // the work is running now
    m_end.synchronize();
    return cuda::elapsed(m_start, m_end).count();
  }

  /** GPU time of what `enqueue` puts on the stream, issued while `blocker` holds the stream: once
   *  released, the start event, the work and the end event run back to back, without the host's
   *  submission cost between them. Throws kj::error(cuda) when the blocker gave up waiting first
   *  (the work then ran as the host issued it). */
  template <class F>
  double held_time_ms(measure::detail::stream_blocker& blocker, F&& enqueue) {
    blocker.hold(m_stream.get(), queued_hold_timeout);
    {
      measure::detail::release_on_exit release(blocker);
      m_start.record(m_stream.get());
      enqueue();
      m_end.record(m_stream.get());
    }
    m_stream.synchronize();
    if (blocker.timed_out())
      KJ_THROW(error_kind::cuda,
               "the blocking kernel gave up after {:.0f} ms, before the host had issued the work "
               "(a full launch queue, or the host held up): it ran as issued, not queued",
               queued_hold_timeout.count());
    return cuda::elapsed(m_start, m_end).count();
  }

  /** After one untimed warm-up call (module load, cuBLAS heuristics), the smallest count from
   *  `count` up whose launch lasts the target length, or `max_count`. */
  long long calibrate(const enqueue_fn& enqueue, long long count, long long max_count) {
    enqueue(count);
    m_stream.synchronize();
    for (int attempt = 0; attempt < 16; ++attempt) {
      const double ms = time_ms([&] { enqueue(count); });
      if (ms >= m_target_ms || count >= max_count) return count;
      const double scale = ms > 0.001 ? std::min(64.0, 1.1 * m_target_ms / ms) : 64.0;
      const auto next = static_cast<long long>(std::ceil(static_cast<double>(count) * scale));
      count = std::min(max_count, std::max(count + 1, next));
    }
    return count;
  }

  /** `repetitions` timed calls of enqueue(count), milliseconds each. */
  std::vector<double> repeat_ms(const enqueue_fn& enqueue, long long count) {
    std::vector<double> out;
    for (int i = 0; i < m_repetitions; ++i) out.push_back(time_ms([&] { enqueue(count); }, true));
    return out;
  }

  [[nodiscard]] int repetitions() const noexcept { return m_repetitions; }

 private:
  measure::detail::clock_monitor& m_clocks;
  int m_repetitions;
  double m_target_ms;
  cuda::stream m_stream;
  cuda::event m_start, m_end;
};

/** A bandwidth figure: `bytes_per_count` bytes counted per unit of the calibrated count. */
bandwidth_figure run_bandwidth(bench_context& ctx, std::string method,
                               std::uint64_t working_set_bytes, double bytes_per_count,
                               const enqueue_fn& enqueue, long long max_count) {
  bandwidth_figure f;
  f.method = std::move(method);
  f.working_set_bytes = working_set_bytes;
  const long long count = ctx.calibrate(enqueue, 1, max_count);
  f.bytes_per_launch = bytes_per_count * static_cast<double>(count);
  const auto ms = ctx.repeat_ms(enqueue, count);
  for (double t : ms) f.repetitions_tbps.push_back(f.bytes_per_launch / (t * 1e-3) / tera);
  f.launch_ms = stats::median(ms);
  summarise(f);
  return f;
}

compute_figure run_compute(bench_context& ctx, std::string method, double flop_per_count,
                           const enqueue_fn& enqueue, long long max_count) {
  compute_figure f;
  f.method = std::move(method);
  const long long count = ctx.calibrate(enqueue, 1, max_count);
  f.flop_per_launch = flop_per_count * static_cast<double>(count);
  const auto ms = ctx.repeat_ms(enqueue, count);
  for (double t : ms) f.repetitions_tflops.push_back(f.flop_per_launch / (t * 1e-3) / tera);
  f.launch_ms = stats::median(ms);
  summarise(f);
  return f;
}

latency_figure latency_from(std::string method, long long per_repetition,
                            const std::vector<double>& repetition_ms) {
  latency_figure f;
  f.method = std::move(method);
  f.launches_per_repetition = static_cast<std::uint64_t>(per_repetition);
  for (double ms : repetition_ms)
    f.repetitions_us.push_back(ms * 1000.0 / static_cast<double>(per_repetition));
  f.repetition_ms = stats::median(repetition_ms);
  summarise(f);
  return f;
}

int as_int(long long v) {
  return static_cast<int>(std::min<long long>(v, INT_MAX));
}

/** Owns a captured graph and its executable form. */
struct graph_guard {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  graph_guard() = default;
  graph_guard(const graph_guard&) = delete;
  graph_guard& operator=(const graph_guard&) = delete;
  ~graph_guard() {
    if (exec != nullptr) KJ_CUDA_CHECK_NOTHROW(cudaGraphExecDestroy(exec));
    if (graph != nullptr) KJ_CUDA_CHECK_NOTHROW(cudaGraphDestroy(graph));
  }
};

/** Runs one benchmark; a kj::error leaves the figure unmeasured with the reason and a flag. */
template <class Figure, class Run>
void attempt(roofline_result& r, const measure_options& o, std::string_view label, Figure& out,
             Run&& run) {
  if (o.progress) o.progress(label);
  try {
    out = run();
  } catch (const error& e) {
    out = Figure{};
    out.unavailable_reason = e.message();
    r.flags.push_back({"benchmark_unavailable", "warning",
                       fmt::format("{} was not measured: {}", label, e.message())});
  }
}

void measure_memory(roofline_result& r, const measure_options& o, bench_context& ctx,
                    const cuda::device_properties& d) {
  // DRAM working set: at least 8 x L2 (so L2 serves almost nothing), at least 256 MiB.
  const std::size_t l2 = d.l2_bytes > 0 ? d.l2_bytes : 64 * mib;
  const std::size_t dram_bytes = (std::max(8 * l2, 256 * mib) + mib - 1) / mib * mib;
  cuda::device_buffer a, b;
  try {
    a = cuda::device_buffer(dram_bytes);
    b = cuda::device_buffer(dram_bytes);
  } catch (const error& e) {
    for (auto* f : {&r.dram_read, &r.dram_write, &r.dram_copy, &r.l2_read})
      f->unavailable_reason =
          fmt::format("cannot allocate 2 x {} MiB: {}", dram_bytes / mib, e.message());
    r.flags.push_back({"benchmark_unavailable", "warning",
                       "memory benchmarks not measured: " + r.dram_read.unavailable_reason});
    return;
  }
  cuda::device_buffer sink(64);
  auto* sink_u32 = static_cast<std::uint32_t*>(sink.data());
  detail::fill_random(a.data(), dram_bytes, 1, ctx.stream());
  detail::fill_random(b.data(), dram_bytes, 2, ctx.stream());
  KJ_CUDA_CHECK(cudaStreamSynchronize(ctx.stream()));

  const int read_grid = detail::resident_blocks_per_sm(kernel_kind::dram_read) * d.sm_count;
  const int write_grid = detail::resident_blocks_per_sm(kernel_kind::dram_write) * d.sm_count;
  const int copy_grid = detail::resident_blocks_per_sm(kernel_kind::dram_copy) * d.sm_count;
  const int l2_grid = detail::resident_blocks_per_sm(kernel_kind::l2_read) * d.sm_count;
  const auto mib_of = [](std::size_t bytes) { return static_cast<double>(bytes) / mib; };
  const double w = static_cast<double>(dram_bytes);

  attempt(r, o, "DRAM read", r.dram_read, [&] {
    return run_bandwidth(
        ctx,
        fmt::format("grid-stride 128-bit loads over {:.0f} MiB (>= 8 x L2), passes in one launch; "
                    "bytes read",
                    mib_of(dram_bytes)),
        dram_bytes, w,
        [&](long long passes) {
          detail::launch_read(a.data(), dram_bytes, as_int(passes), false, read_grid, sink_u32,
                              ctx.stream());
        },
        100000);
  });
  attempt(r, o, "DRAM write", r.dram_write, [&] {
    return run_bandwidth(
        ctx,
        fmt::format("grid-stride 128-bit stores over {:.0f} MiB (>= 8 x L2); bytes written",
                    mib_of(dram_bytes)),
        dram_bytes, w,
        [&](long long passes) {
          detail::launch_write(a.data(), dram_bytes, as_int(passes), write_grid, ctx.stream());
        },
        100000);
  });
  attempt(r, o, "DRAM copy", r.dram_copy, [&] {
    return run_bandwidth(
        ctx,
        fmt::format("grid-stride 128-bit copy of {:.0f} MiB to another buffer; bytes read plus "
                    "bytes written",
                    mib_of(dram_bytes)),
        2 * static_cast<std::uint64_t>(dram_bytes), 2 * w,
        [&](long long passes) {
          detail::launch_copy(a.data(), b.data(), dram_bytes, as_int(passes), copy_grid,
                              ctx.stream());
        },
        100000);
  });
  // L2: half the L2, read again and again with loads cached in L2 only (not L1).
  const std::size_t l2_bytes = std::max<std::size_t>(l2 / 2 / 4096 * 4096, 4096);
  attempt(r, o, "L2 read", r.l2_read, [&] {
    return run_bandwidth(
        ctx,
        fmt::format("{:.1f} MiB (half of L2) read with 128-bit ld.global.cg (L2 only), many "
                    "passes in one launch; bytes read",
                    mib_of(l2_bytes)),
        l2_bytes, static_cast<double>(l2_bytes),
        [&](long long passes) {
          detail::launch_read(a.data(), l2_bytes, as_int(passes), true, l2_grid, sink_u32,
                              ctx.stream());
        },
        10000000);
  });
}

void measure_sm(roofline_result& r, const measure_options& o, bench_context& ctx,
                const cuda::device_properties& d) {
  const int shared_blocks = detail::resident_blocks_per_sm(kernel_kind::shared_read);
  const int shared_grid = shared_blocks * d.sm_count;
  const int fp32_grid = detail::resident_blocks_per_sm(kernel_kind::fp32_fma) * d.sm_count;
  const int fp64_grid = detail::resident_blocks_per_sm(kernel_kind::fp64_fma) * d.sm_count;
  const int sink_blocks = std::max({shared_grid, fp32_grid, fp64_grid});
  cuda::device_buffer sink(static_cast<std::size_t>(sink_blocks) * sizeof(double));
  const double threads = detail::block_threads;

  attempt(r, o, "L1/shared read", r.shared_read, [&] {
    return run_bandwidth(
        ctx,
        fmt::format("{} blocks per SM each read their own {} KiB of shared memory with "
                    "conflict-free ld.shared.v4 (128-bit) in a loop; aggregate over all SMs",
                    shared_blocks, detail::shared_bytes_per_block / 1024),
        static_cast<std::uint64_t>(shared_grid) * detail::shared_bytes_per_block,
        shared_grid * threads * static_cast<double>(detail::shared_bytes_per_iteration),
        [&](long long iterations) {
          detail::launch_shared_read(iterations, shared_grid, static_cast<float*>(sink.data()),
                                     ctx.stream());
        },
        LLONG_MAX / 2);
  });
  const double fma_flop = 2.0 * static_cast<double>(detail::fma_per_iteration);
  attempt(r, o, "FP32 FMA", r.fp32_fma, [&] {
    return run_compute(
        ctx, "FFMA: 8 independent chains per thread, all SMs at full occupancy; 2 FLOP per FMA",
        fp32_grid * threads * fma_flop,
        [&](long long iterations) {
          detail::launch_fp32_fma(iterations, fp32_grid, static_cast<float*>(sink.data()),
                                  ctx.stream());
        },
        LLONG_MAX / 2);
  });
  attempt(r, o, "FP64 FMA", r.fp64_fma, [&] {
    return run_compute(
        ctx, "DFMA: 8 independent chains per thread, all SMs at full occupancy; 2 FLOP per FMA",
        fp64_grid * threads * fma_flop,
        [&](long long iterations) {
          detail::launch_fp64_fma(iterations, fp64_grid, static_cast<double*>(sink.data()),
                                  ctx.stream());
        },
        LLONG_MAX / 2);
  });
}

void measure_tensor(roofline_result& r, const measure_options& o, bench_context& ctx) {
  std::string why;
  auto blas = detail::cublas_gemm::load(why);
  if (!blas) {
    for (auto* f : {&r.bf16_tensor, &r.fp16_tensor}) f->unavailable_reason = why;
    r.flags.push_back({"benchmark_unavailable", "warning", "tensor figures not measured: " + why});
    return;
  }
  const int n = o.gemm_n;
  const auto count = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  cuda::device_buffer a, b, c;
  try {
    a = cuda::device_buffer(count * 2);
    b = cuda::device_buffer(count * 2);
    c = cuda::device_buffer(count * 2);
  } catch (const error& e) {
    for (auto* f : {&r.bf16_tensor, &r.fp16_tensor})
      f->unavailable_reason = "cannot allocate the GEMM operands: " + e.message();
    r.flags.push_back({"benchmark_unavailable", "warning",
                       "tensor figures not measured: " + r.bf16_tensor.unavailable_reason});
    return;
  }
  const double flop = 2.0 * static_cast<double>(n) * n * n;
  for (bool half : {false, true}) {
    auto& figure = half ? r.fp16_tensor : r.bf16_tensor;
    const char* type = half ? "fp16" : "bf16";
    attempt(r, o, half ? "FP16 tensor (cuBLAS)" : "BF16 tensor (cuBLAS)", figure, [&] {
      blas->set_stream(ctx.stream());  // inside the attempt: a failure loses this figure only
      detail::fill_random_16bit(a.data(), count, half, 3, ctx.stream());
      detail::fill_random_16bit(b.data(), count, half, 4, ctx.stream());
      return run_compute(
          ctx,
          fmt::format("cublasGemmEx {0}^3, {1} inputs and output, fp32 accumulation "
                      "(CUBLAS_COMPUTE_32F), random data in [-1, 1); 2 n^3 FLOP per GEMM",
                      n, type),
          flop,
          [&](long long gemms) {
            for (long long i = 0; i < gemms; ++i)
              blas->gemm_16bit(half, n, a.data(), b.data(), c.data());
          },
          64);
    });
  }
}

void measure_latency(roofline_result& r, const measure_options& o, bench_context& ctx) {
  const cudaStream_t s = ctx.stream();
  attempt(r, o, "launch latency (stream, host-issued)", r.launch_stream, [&] {
    for (int i = 0; i < 100; ++i) detail::launch_empty(s);  // warm-up: module load, queues
    KJ_CUDA_CHECK(cudaStreamSynchronize(s));
    std::vector<double> ms;
    for (int rep = 0; rep < ctx.repetitions(); ++rep)
      ms.push_back(ctx.time_ms([&] {
        for (long long i = 0; i < stream_launches; ++i) detail::launch_empty(s);
      }));
    return latency_from(
        fmt::format("{} empty kernels launched back to back on one stream by the host; events "
                    "around them, time per kernel (bounded by the host's launch rate)",
                    stream_launches),
        stream_launches, ms);
  });
  attempt(r, o, "launch latency (stream, queued)", r.launch_stream_queued, [&] {
    measure::detail::stream_blocker blocker;
    const auto batch = [&] {
      for (long long i = 0; i < queued_launches; ++i) detail::launch_empty(s);
    };
    static_cast<void>(ctx.held_time_ms(blocker, batch));  // warm-up: the blocking kernel's module
    std::vector<double> ms;
    for (int rep = 0; rep < ctx.repetitions(); ++rep) {
      double total_ms = 0;
      for (int i = 0; i < queued_batches; ++i) total_ms += ctx.held_time_ms(blocker, batch);
      ms.push_back(total_ms);
    }
    return latency_from(
        fmt::format("{} x (blocking kernel holds the stream; the host issues {} empty kernels "
                    "between two events; release): the kernels run back to back without the "
                    "host's submission cost, time per kernel over the {}",
                    queued_batches, queued_launches, queued_batches * queued_launches),
        queued_batches * queued_launches, ms);
  });
  attempt(r, o, "launch latency (graph)", r.launch_graph, [&] {
    graph_guard g;
    KJ_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    try {
      for (long long i = 0; i < graph_launches; ++i) detail::launch_empty(s);
    } catch (...) {
      cudaGraph_t broken = nullptr;
      static_cast<void>(cudaStreamEndCapture(s, &broken));
      if (broken != nullptr) static_cast<void>(cudaGraphDestroy(broken));
      throw;
    }
    KJ_CUDA_CHECK(cudaStreamEndCapture(s, &g.graph));
    KJ_CUDA_CHECK(cudaGraphInstantiate(&g.exec, g.graph, 0));
    KJ_CUDA_CHECK(cudaGraphUpload(g.exec, s));
    KJ_CUDA_CHECK(cudaGraphLaunch(g.exec, s));  // warm-up
    KJ_CUDA_CHECK(cudaStreamSynchronize(s));
    std::vector<double> ms;
    for (int rep = 0; rep < ctx.repetitions(); ++rep)
      ms.push_back(ctx.time_ms([&] { KJ_CUDA_CHECK(cudaGraphLaunch(g.exec, s)); }));
    return latency_from(
        fmt::format("a CUDA graph of {} captured empty kernels replayed; events around it, time "
                    "per kernel",
                    graph_launches),
        graph_launches, ms);
  });
  attempt(r, o, "host-device round trip", r.round_trip, [&] {
    using clock = std::chrono::steady_clock;
    for (int i = 0; i < 10; ++i) {
      detail::launch_empty(s);
      KJ_CUDA_CHECK(cudaStreamSynchronize(s));
    }
    std::vector<double> ms;
    for (int rep = 0; rep < ctx.repetitions(); ++rep) {
      const auto start = clock::now();
      for (long long i = 0; i < round_trips; ++i) {
        detail::launch_empty(s);
        KJ_CUDA_CHECK(cudaStreamSynchronize(s));
      }
      ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - start).count());
    }
    return latency_from(
        fmt::format("{} x (launch an empty kernel, cudaStreamSynchronize), host wall clock, time "
                    "per round trip",
                    round_trips),
        round_trips, ms);
  });
}

}  // namespace

clock_summary summarise_clocks(const measure::detail::clock_observations& seen) {
  clock_summary s;
  s.source = seen.source;
  if (seen.spread) {
    s.readings = seen.spread->readings;
    s.sm_min_mhz = seen.spread->min_mhz;
    s.sm_median_mhz = seen.spread->median_mhz;
    s.sm_max_mhz = seen.spread->max_mhz;
  }
  s.sm_default_mhz = seen.default_sm_mhz;
  s.sm_boost_mhz = seen.max_sm_mhz;
  s.clock_event_reasons = seen.reasons;
  return s;
}

roofline_result measure_roofline(const measure_options& o) {
  if (o.repetitions < 5 || o.repetitions > 100)
    KJ_THROW(error_kind::usage, "repetitions must be within [5, 100], not {}", o.repetitions);
  if (!(o.target_launch_ms >= 1.2) || o.target_launch_ms > 100)
    KJ_THROW(error_kind::usage, "target launch length must be within [1.2, 100] ms, not {}",
             o.target_launch_ms);
  if (o.gemm_n < 256 || o.gemm_n > 32768 || o.gemm_n % 64 != 0)
    KJ_THROW(error_kind::usage, "GEMM size must be a multiple of 64 in [256, 32768], not {}",
             o.gemm_n);
  const auto wall_start = std::chrono::steady_clock::now();
  KJ_CUDA_CHECK(cudaSetDevice(o.device));
  const auto d = cuda::query_device(o.device);

  roofline_result r;
  r.gpu.name = d.name;
  r.gpu.uuid = d.uuid;
  r.gpu.pci_bus_id = d.pci_bus_id;
  r.gpu.cc_major = d.cc_major;
  r.gpu.cc_minor = d.cc_minor;
  r.gpu.sm_count = d.sm_count;
  r.gpu.memory_bytes = d.total_memory_bytes;
  r.gpu.l2_bytes = d.l2_bytes;
  r.gpu.smem_per_sm_bytes = d.smem_per_sm_bytes;
  r.gpu.driver_version = d.driver_version;
  r.gpu.runtime_version = d.runtime_version;
  r.measured_at_utc = utc_now();

  measure::detail::clock_monitor clocks(o.device);
  bench_context ctx(o, clocks);
  measure_memory(r, o, ctx, d);
  measure_sm(r, o, ctx, d);
  measure_tensor(r, o, ctx);
  measure_latency(r, o, ctx);
  KJ_CUDA_CHECK(cudaDeviceSynchronize());

  r.clocks = summarise_clocks(clocks.observations());
  if (r.clocks.sm_min_mhz && r.clocks.sm_default_mhz &&
      *r.clocks.sm_min_mhz < 0.75 * *r.clocks.sm_default_mhz)
    r.flags.push_back(
        {"clock_below_default", "warning",
         fmt::format("the SM clock fell to {:.0f} MHz during the run, under 75% of the default "
                     "{} MHz: figures may be low (clock-event reasons: {})",
                     *r.clocks.sm_min_mhz, *r.clocks.sm_default_mhz,
                     fmt::join(r.clocks.clock_event_reasons, ", "))});
  r.measure_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return r;
}

}  // namespace kj::roofline
