// The timing engine on a GPU, against kernels of known duration. Skips where there is no GPU.

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <kjudge/core/error.hpp>
#include <kjudge/cuda/check.hpp>
#include <kjudge/cuda/device_buffer.hpp>
#include <kjudge/cuda/graph.hpp>
#include <kjudge/cuda/probe.hpp>
#include <kjudge/cuda/stream.hpp>
#include <kjudge/measure/timing.hpp>

#include "spin_kernels.hpp"

#include "require_gpu.hpp"

namespace {

using namespace std::chrono_literals;

/** One spin kernel of a known duration per forward. */
class spin_target : public kj::measure::target {
 public:
  spin_target(std::string name, kj::microseconds duration, cudaStream_t stream)
      : m_name(std::move(name)), m_duration(duration), m_stream(stream) {}
  void prepare(std::size_t) override {}
  void run() override {
    const auto ns = static_cast<std::uint64_t>(kj::nanoseconds(m_duration).count());
    KJ_CUDA_CHECK(kj::test::launch_spin(ns, m_stream));
  }
  [[nodiscard]] std::size_t input_sets() const override { return 1; }
  [[nodiscard]] std::string name() const override { return m_name; }

 protected:
  [[nodiscard]] cudaStream_t stream() const noexcept { return m_stream; }

 private:
  std::string m_name;
  kj::microseconds m_duration;
  cudaStream_t m_stream;
};

/** A forward that waits for the GPU in the middle, as .item() would. */
class syncing_target : public spin_target {
 public:
  explicit syncing_target(cudaStream_t stream)
      : spin_target("syncing", kj::microseconds(10.0), stream) {}
  void run() override {
    spin_target::run();
    KJ_CUDA_CHECK(cudaStreamSynchronize(stream()));
    spin_target::run();
  }
};

/** A spin target whose forward can be captured in a CUDA graph (one input set, one graph). */
class graph_spin_target : public spin_target {
 public:
  using spin_target::spin_target;
  void run() override {
    spin_target::run();
    ++runs;
  }
  [[nodiscard]] std::string capture_graphs() override {
    std::string why;
    m_graph = kj::cuda::graph_exec::capture(
        stream(), [this] { run(); }, why);
    return why;
  }
  void run_graph() override {
    m_graph.launch(stream());
    ++replays;
  }
  void drop_graphs() override {
    m_graph = kj::cuda::graph_exec();
    ++drops;
  }
  int replays = 0;
  int drops = 0;
  int runs = 0;  ///< eager forwards, the captured one included

 private:
  kj::cuda::graph_exec m_graph;
};

/** A forward that waits for the host in the middle, offering graph capture (which must fail). */
class syncing_graph_target : public graph_spin_target {
 public:
  explicit syncing_graph_target(cudaStream_t stream)
      : graph_spin_target("syncing-graph", kj::microseconds(10.0), stream) {}
  void run() override {
    graph_spin_target::run();
    KJ_CUDA_CHECK(cudaStreamSynchronize(stream()));
    graph_spin_target::run();
  }
};

/** Reads a buffer of `bytes` (a quarter of L2: it fits, so warm runs hit L2). */
class read_target : public kj::measure::target {
 public:
  read_target(std::size_t bytes, cudaStream_t stream)
      : m_data(bytes), m_partial(kj::test::read_threads * sizeof(float)), m_stream(stream) {
    m_data.fill(1, stream);
    KJ_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  void prepare(std::size_t) override {}
  void run() override {
    KJ_CUDA_CHECK(kj::test::launch_read(m_data.data(), m_data.size() / 16,
                                        static_cast<float*>(m_partial.data()), m_stream));
  }
  [[nodiscard]] std::size_t input_sets() const override { return 1; }
  [[nodiscard]] std::string name() const override { return "read"; }

 private:
  kj::cuda::device_buffer m_data;
  kj::cuda::device_buffer m_partial;
  cudaStream_t m_stream;
};

/** Throws from run() on call number `fail_at` (counting warm-up calls). */
class failing_target : public spin_target {
 public:
  failing_target(cudaStream_t stream, int fail_at)
      : spin_target("failing", kj::microseconds(10.0), stream), m_fail_at(fail_at) {}
  void run() override {
    // Busy only while the blocking kernel holds it: the device sample, not an untimed forward
    // or the stream and host-wall samples, which find it idle.
    const cudaError_t query = cudaStreamQuery(stream());
    if (query == cudaErrorNotReady) static_cast<void>(cudaGetLastError());  // not an error here
    const bool held = query == cudaErrorNotReady;
    spin_target::run();
    if (++m_calls == m_fail_at) {
      failed_while_held = held;
      throw std::runtime_error("boom");
    }
  }
  bool failed_while_held = false;  ///< the failing call came while the stream was held

 private:
  int m_fail_at;
  int m_calls = 0;
};

kj::measure::device_facts facts() {
  const kj::cuda::device_properties d = kj::cuda::query_device(0);
  return {0, d.l2_bytes};
}

kj::measure::timing_options quick_options() {
  kj::measure::timing_options o;
  o.budget_per_side = kj::seconds(1.0);
  o.min_samples = 20;
  return o;
}

TEST(timing_gpu, spin_kernel_device_time_matches_its_duration) {
  KJ_REQUIRE_GPU();
  kj::cuda::stream s;
  // 50 us: long enough that the ~1-2 us between events and kernel stays well inside 10%.
  spin_target t("spin50", kj::microseconds(50.0), s.get());
  const kj::measure::side_result r = kj::measure::time_single(t, s.get(), facts(), quick_options());

  ASSERT_TRUE(r.device.valid) << r.device.note;
  ASSERT_TRUE(r.stream.valid) << r.stream.note;
  ASSERT_TRUE(r.host_wall.valid) << r.host_wall.note;
  EXPECT_FALSE(r.host_sync_detected);
  EXPECT_EQ(r.device.method, "blocking-kernel+events");
  EXPECT_EQ(r.stream.method, "events-as-issued");
  EXPECT_EQ(r.host_wall.method, "host-steady-clock+sync");
  EXPECT_GE(r.device.summary.n, 20u);
  EXPECT_NEAR(r.device.summary.median, 50.0, 5.0);
  // Each figure adds a cost the one before excludes (host submission, then the host's wait).
  EXPECT_GE(r.stream.summary.median, 0.99 * r.device.summary.median);
  EXPECT_GE(r.host_wall.summary.median, 0.99 * r.stream.summary.median);
  EXPECT_GE(r.warmup_runs, 3u);
  EXPECT_GT(r.warmup_first_call_ms, 0.0);
  EXPECT_GT(r.spent_s, 0.0);
  std::printf("device %.2f us, stream %.2f us, host_wall %.2f us (n=%zu)\n",
              r.device.summary.median, r.stream.summary.median, r.host_wall.summary.median,
              r.device.summary.n);
}

TEST(timing_gpu, short_spin_device_time_is_spin_plus_one_launch) {
  KJ_REQUIRE_GPU();
  kj::cuda::stream s;
  spin_target t("spin20", kj::microseconds(20.0), s.get());
  const kj::measure::side_result r = kj::measure::time_single(t, s.get(), facts(), quick_options());
  ASSERT_TRUE(r.device.valid) << r.device.note;
  // The device figure of a one-kernel forward is the kernel plus one launch from the queue
  // (block scheduling, start and retirement: about 2.5 us on H100/H200; 2.6-2.8 us measured on
  // an H200 for 20 and 50 us spins). More than 3.5 us above the spin would be engine overhead.
  EXPECT_GE(r.device.summary.median, 20.0);
  EXPECT_LE(r.device.summary.median, 23.5);
  EXPECT_GE(r.device.summary.min, 19.0);  // the kernel spins at least 20 us of GPU time
}

TEST(timing_gpu, graph_replay_times_the_captured_forward) {
  KJ_REQUIRE_GPU();
  kj::cuda::stream s;
  graph_spin_target t("spin50g", kj::microseconds(50.0), s.get());
  kj::measure::timing_options o = quick_options();
  o.graph_replay = true;
  const kj::measure::side_result r = kj::measure::time_single(t, s.get(), facts(), o);
  ASSERT_TRUE(r.device.valid) << r.device.note;
  EXPECT_EQ(r.device.method, "cuda-graph+blocking-kernel+events");
  EXPECT_TRUE(r.device.note.empty()) << r.device.note;
  EXPECT_EQ(r.stream.method, "events-as-issued");  // the other figures stay eager
  EXPECT_NEAR(r.device.summary.median, 50.0, 5.0);
  EXPECT_GE(r.device.summary.min, 49.0);  // the replay runs the kernel: at least its 50 us
  // One replay per device sample plus one when the graphs were taken into use.
  EXPECT_EQ(static_cast<std::size_t>(t.replays), r.device.summary.n + 1);
  EXPECT_EQ(t.drops, 0);
  // Eager forwards: warm-up, the captured one, and per round one after the replay (untimed, so
  // that the stream and host-wall samples find the eager path warm), the stream's and the host
  // wall's. Alone, no turn opens with a forward of its own: the side's own ran last already.
  const auto rounds = [](const kj::measure::figure& f) {
    return f.summary.n + f.discarded_throttled;
  };
  EXPECT_EQ(static_cast<std::size_t>(t.runs),
            r.warmup_runs + 1 + rounds(r.device) + rounds(r.stream) + rounds(r.host_wall));
  std::printf("graph replay: device %.2f us (n=%zu)\n", r.device.summary.median,
              r.device.summary.n);

  o.graph_replay = false;  // the default
  graph_spin_target eager("spin50e", kj::microseconds(50.0), s.get());
  const kj::measure::side_result e = kj::measure::time_single(eager, s.get(), facts(), o);
  EXPECT_EQ(e.device.method, "blocking-kernel+events");
  EXPECT_EQ(eager.replays, 0);
  EXPECT_EQ(static_cast<std::size_t>(eager.runs),
            e.warmup_runs + rounds(e.device) + rounds(e.stream) + rounds(e.host_wall));
}

TEST(timing_gpu, no_graph_replay_unless_both_sides_capture) {
  KJ_REQUIRE_GPU();
  kj::cuda::stream s;
  graph_spin_target ref("spin40g", kj::microseconds(40.0), s.get());
  spin_target cand("spin20", kj::microseconds(20.0), s.get());
  kj::measure::timing_options o = quick_options();
  o.graph_replay = true;
  o.budget_per_side = kj::seconds(0.3);
  const kj::measure::comparison c = kj::measure::time_pair(ref, cand, s.get(), facts(), o);
  for (const auto* side : {&c.reference, &c.candidate}) {
    ASSERT_TRUE(side->device.valid) << side->device.note;
    EXPECT_EQ(side->device.method, "blocking-kernel+events");
    EXPECT_NE(side->device.note.find("no CUDA graph replay (spin20:"), std::string::npos)
        << side->device.note;
  }
  EXPECT_EQ(ref.replays, 0);
  EXPECT_EQ(ref.drops, 1);  // its graph was freed
}

TEST(timing_gpu, forward_that_waits_for_the_host_is_not_captured) {
  KJ_REQUIRE_GPU();
  kj::cuda::stream s;
  syncing_graph_target t(s.get());
  kj::measure::timing_options o = quick_options();
  o.graph_replay = true;
  o.blocking_timeout = kj::milliseconds(20.0);
  o.target_rse_pct = 5.0;
  const kj::measure::side_result r = kj::measure::time_single(t, s.get(), facts(), o);
  EXPECT_EQ(t.replays, 0);
  EXPECT_TRUE(r.host_sync_detected);  // then found by the blocking kernel, as without graphs
  EXPECT_FALSE(r.device.valid);
  ASSERT_TRUE(r.stream.valid) << r.stream.note;
  // The stream works normally after the refused capture.
  s.synchronize();
}

TEST(timing_gpu, host_sync_in_forward_is_detected) {
  KJ_REQUIRE_GPU();
  kj::cuda::stream s;
  syncing_target t(s.get());
  kj::measure::timing_options o = quick_options();
  o.blocking_timeout = kj::milliseconds(20.0);
  o.budget_per_side = kj::seconds(5.0);
  o.target_rse_pct = 5.0;  // reached within the 20 minimum samples
  const kj::measure::side_result r = kj::measure::time_single(t, s.get(), facts(), o);

  EXPECT_TRUE(r.host_sync_detected);
  EXPECT_FALSE(r.device.valid);
  EXPECT_NE(r.device.note.find("host sync"), std::string::npos) << r.device.note;
  EXPECT_EQ(r.device.summary.n, 0u);
  // The other figures are still measured.
  ASSERT_TRUE(r.stream.valid) << r.stream.note;
  ASSERT_TRUE(r.host_wall.valid) << r.host_wall.note;
  EXPECT_GE(r.stream.summary.median, 20.0);  // two 10 us kernels
  EXPECT_GE(r.stream.summary.n, 20u);
  // Detection stops device sampling at once: one 20 ms timed-out sample, not one per round (20
  // rounds would spend at least 0.4 s).
  EXPECT_LT(r.spent_s, 0.3);
}

/** A spin target that logs "<name>:prepare:<i>" and "<name>:run" into a log shared with another. */
class logging_spin_target : public spin_target {
 public:
  logging_spin_target(std::string name, cudaStream_t stream, std::vector<std::string>& log)
      : spin_target(name, kj::microseconds(5.0), stream), m_log(log), m_tag(std::move(name)) {}
  void prepare(std::size_t i) override { m_log.push_back(m_tag + ":prepare:" + std::to_string(i)); }
  void run() override {
    spin_target::run();
    m_log.push_back(m_tag + ":run");
  }

 private:
  std::vector<std::string>& m_log;
  std::string m_tag;
};

TEST(timing_gpu, every_turn_after_the_other_side_opens_with_its_own_forward) {
  KJ_REQUIRE_GPU();
  kj::cuda::stream s;
  std::vector<std::string> log;
  logging_spin_target a("A", s.get(), log), b("B", s.get(), log);
  kj::measure::timing_options o = quick_options();
  o.budget_per_side = kj::seconds(0.2);
  const kj::measure::comparison c = kj::measure::time_pair(a, b, s.get(), facts(), o);
  ASSERT_TRUE(c.candidate.device.valid) << c.candidate.device.note;
  // Past the warm-ups (a prepare and a run each), the sides take turns (A B, B A, ...). A turn
  // that follows the other side's (the first one follows B's warm-up) opens with the last
  // sample's number prepared again and a run (untimed); every other prepare is of the next
  // number, so a turn that follows its own (B A | A B) opens with no forward of its own.
  const std::size_t warmup_entries = 2 * (c.reference.warmup_runs + c.candidate.warmup_runs);
  ASSERT_GT(log.size(), warmup_entries + 8);
  std::map<std::string, std::size_t> last;  // each side's last prepared number
  last["A"] = c.reference.warmup_runs - 1;
  last["B"] = c.candidate.warmup_runs - 1;
  const auto prepared = [](const std::string& entry) -> std::optional<std::size_t> {
    const auto at = entry.find(":prepare:");
    if (at == std::string::npos) return std::nullopt;
    return static_cast<std::size_t>(std::stoul(entry.substr(at + 9)));
  };
  std::size_t switches = 0;
  for (std::size_t i = warmup_entries; i < log.size(); ++i) {
    const std::string side = log[i].substr(0, 1);
    const bool after_other = i == warmup_entries || log[i - 1].substr(0, 1) != side;
    const auto n = prepared(log[i]);
    if (after_other) {
      ++switches;
      ASSERT_TRUE(n.has_value()) << "entry " << i << ": " << log[i];
      EXPECT_EQ(*n, last[side]) << "entry " << i << ": the opening prepare repeats the number";
      ASSERT_LT(i + 1, log.size());
      EXPECT_EQ(log[i + 1], side + ":run") << "entry " << i + 1;
    } else if (n) {
      EXPECT_EQ(*n, last[side] + 1) << "entry " << i << ": " << log[i];
    }
    if (n) last[side] = *n;
  }
  EXPECT_GE(switches, 4u);
}

/** A spin target of `sets` input sets (what it runs does not depend on the set). */
class multi_set_spin_target : public spin_target {
 public:
  multi_set_spin_target(std::string name, cudaStream_t stream, std::size_t sets)
      : spin_target(std::move(name), kj::microseconds(5.0), stream), m_sets(sets) {}
  [[nodiscard]] std::size_t input_sets() const override { return m_sets; }

 private:
  std::size_t m_sets;
};

TEST(timing_gpu, every_figure_samples_every_input_set) {
  KJ_REQUIRE_GPU();
  kj::cuda::stream s;
  // Six sets and three figures a round: stepping by the round's three samples, each figure
  // would see two of the six sets; each round starts one set on instead.
  multi_set_spin_target a("A", s.get(), 6), b("B", s.get(), 6);
  kj::measure::timing_options o = quick_options();
  o.min_samples = 60;
  o.max_samples = 60;
  o.target_rse_pct = 0.0;
  const kj::measure::comparison c = kj::measure::time_pair(a, b, s.get(), facts(), o);
  ASSERT_EQ(c.stopped_by, "max-samples");
  for (const auto* side : {&c.reference, &c.candidate})
    for (const auto* f : {&side->device, &side->stream, &side->host_wall}) {
      const std::string what = side->name + " " + kj::measure::to_string(f->kind);
      ASSERT_TRUE(f->valid) << what << ": " << f->note;
      ASSERT_EQ(f->samples_us.size(), 60u) << what;
      ASSERT_EQ(f->samples_set.size(), f->samples_us.size()) << what;
      // One set on each round (a round discarded for a throttled clock skips one).
      std::size_t steps = 0;
      for (std::size_t i = 1; i < f->samples_set.size(); ++i)
        steps += f->samples_set[i] == (f->samples_set[i - 1] + 1) % 6;
      EXPECT_GE(steps + f->discarded_throttled, 59u) << what;
      std::vector<std::size_t> per_set(6, 0);
      for (const auto set : f->samples_set) {
        ASSERT_LT(set, 6u) << what;
        ++per_set[set];
      }
      // 60 kept samples, 10 a set (a round discarded for a throttled clock shifts a few).
      for (std::size_t k = 0; k < 6; ++k) EXPECT_GE(per_set[k], 8u) << what << ", set " << k;
      ASSERT_EQ(f->set_medians_us.size(), 6u) << what;
    }
  ASSERT_FALSE(c.speedups.empty());
  for (const auto& sp : c.speedups) EXPECT_TRUE(sp.ci.by_group) << kj::measure::to_string(sp.kind);
}

TEST(timing_gpu, speedup_of_twice_as_fast_spin_is_two) {
  KJ_REQUIRE_GPU();
  kj::cuda::stream s;
  spin_target ref("spin40", kj::microseconds(40.0), s.get());
  spin_target cand("spin20", kj::microseconds(20.0), s.get());
  const kj::measure::comparison c =
      kj::measure::time_pair(ref, cand, s.get(), facts(), quick_options());

  EXPECT_TRUE(c.interleaved);
  ASSERT_EQ(c.speedups.size(), 3u);
  for (const kj::measure::speedup& sp : c.speedups) {
    ASSERT_TRUE(sp.valid) << kj::measure::to_string(sp.kind);
    EXPECT_LE(sp.ci.lo, sp.ci.ratio);
    EXPECT_GE(sp.ci.hi, sp.ci.ratio);
  }
  const kj::measure::speedup& dev = c.speedups.front();
  EXPECT_EQ(dev.kind, kj::measure::figure_kind::device);
  // The fixed ~1-2 us between the events and the kernel pulls (40 + d) / (20 + d) a little
  // below 2; a tight interval then excludes exactly 2.0, so the check is on the interval's span.
  EXPECT_GT(dev.ci.lo, 1.8);
  EXPECT_LT(dev.ci.hi, 2.1);
  EXPECT_NEAR(dev.ci.ratio, 2.0, 0.2);
  std::printf("device speedup %.4f [%.4f, %.4f]\n", dev.ci.ratio, dev.ci.lo, dev.ci.hi);
}

TEST(timing_gpu, cold_flushes_twice_the_l2_and_warm_does_not) {
  KJ_REQUIRE_GPU();
  kj::cuda::stream s;
  spin_target a("a", kj::microseconds(5.0), s.get());
  spin_target b("b", kj::microseconds(5.0), s.get());
  kj::measure::timing_options o = quick_options();
  o.budget_per_side = kj::seconds(0.2);
  const kj::measure::device_facts f = facts();

  const kj::measure::comparison cold = kj::measure::time_pair(a, b, s.get(), f, o);
  EXPECT_GE(cold.l2_flush_bytes, 2 * f.l2_bytes);
  EXPECT_TRUE(cold.reference.device.cold);
  EXPECT_TRUE(cold.candidate.stream.cold);
  EXPECT_TRUE(cold.candidate.host_wall.cold);

  o.cold = false;
  const kj::measure::comparison warm = kj::measure::time_pair(a, b, s.get(), f, o);
  EXPECT_EQ(warm.l2_flush_bytes, 0u);
  EXPECT_FALSE(warm.reference.device.cold);
  EXPECT_FALSE(warm.candidate.host_wall.cold);
}

TEST(timing_gpu, cold_reads_are_slower_than_warm_reads) {
  KJ_REQUIRE_GPU();
  kj::cuda::stream s;
  const kj::measure::device_facts f = facts();
  read_target t(f.l2_bytes / 4, s.get());
  kj::measure::timing_options o = quick_options();
  o.budget_per_side = kj::seconds(0.5);
  const kj::measure::side_result cold = kj::measure::time_single(t, s.get(), f, o);
  o.cold = false;
  const kj::measure::side_result warm = kj::measure::time_single(t, s.get(), f, o);
  ASSERT_TRUE(cold.device.valid && warm.device.valid);
  std::printf("read of %zu bytes: cold %.2f us, warm %.2f us\n", f.l2_bytes / 4,
              cold.device.summary.median, warm.device.summary.median);
  // Cold, the buffer comes from DRAM; warm, from L2.
  EXPECT_GT(cold.device.summary.median, 1.05 * warm.device.summary.median);
}

TEST(timing_gpu, clocks_are_recorded_or_say_why) {
  KJ_REQUIRE_GPU();
  kj::cuda::stream s;
  spin_target a("a", kj::microseconds(20.0), s.get());
  spin_target b("b", kj::microseconds(20.0), s.get());
  kj::measure::timing_options o = quick_options();
  o.budget_per_side = kj::seconds(0.2);
  const kj::measure::comparison c = kj::measure::time_pair(a, b, s.get(), facts(), o);
  if (!c.clocks.available) {
    EXPECT_FALSE(c.clocks.source.empty());
    return;
  }
  EXPECT_EQ(c.clocks.source, "nvml");
  EXPECT_GT(c.clocks.default_sm_mhz, 0.0);
  EXPECT_GT(c.clocks.median_sm_mhz, 0.0);
  EXPECT_LE(c.clocks.min_sm_mhz, c.clocks.median_sm_mhz);
}

TEST(timing_gpu, failure_in_run_names_the_side_and_releases_the_stream) {
  KJ_REQUIRE_GPU();
  kj::cuda::stream s;
  spin_target ref("ref", kj::microseconds(5.0), s.get());
  // Fails on its first sampled call (after three warm-up calls and the untimed forward that opens
  // its turn, the reference having gone first): the device figure's, while the blocking kernel
  // holds the stream.
  failing_target cand(s.get(), 5);
  kj::measure::timing_options o = quick_options();
  o.warmup_runs = 3;
  o.warmup_min_time = kj::seconds(0.0);
  o.blocking_timeout = kj::milliseconds(5000.0);
  try {
    static_cast<void>(kj::measure::time_pair(ref, cand, s.get(), facts(), o));
    FAIL() << "expected kj::error";
  } catch (const kj::error& e) {
    EXPECT_EQ(e.kind(), kj::error_kind::candidate);
    EXPECT_NE(e.message().find("candidate 'failing'"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("boom"), std::string::npos) << e.message();
  }
  EXPECT_TRUE(cand.failed_while_held)
      << "call 5 was not the device sample under the blocking kernel";
  // Released on the way out: the stream drains long before the 5 s timeout.
  const auto t0 = std::chrono::steady_clock::now();
  s.synchronize();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
}

}  // namespace
