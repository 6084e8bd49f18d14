// Launch counts, device times, stream and timing cross-checks, fusion ratio and peak memory of one
// forward, from synthetic CUPTI records (the seed page's case: 19 vs 32 "launches" shown, 5 vs 14
// device kernels true). Also the parsing of raw CUDA 13 CUPTI records and demangling; the
// collector itself runs on a GPU in tests/gpu/cupti_test.cpp.

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include <kjudge/config.hpp>
#include <kjudge/core/error.hpp>
#include <kjudge/cuda/probe.hpp>
#include <kjudge/profile/cupti_activity.hpp>
#include <kjudge/profile/forward_json.hpp>
#include <kjudge/profile/gpu_work_watch.hpp>
#include <kjudge/profile/launch_summary.hpp>

#if KJ_HAVE_CUPTI
#include <cupti.h>
#endif

#include "test_util.hpp"

namespace kj::profile {
namespace {

using test::codes;
using test::find_code;
using test::has_code;

constexpr std::uint32_t timed_stream = 7;

kernel_record kernel(std::string name, std::uint64_t start_ns, std::uint64_t end_ns,
                     std::uint32_t stream = timed_stream) {
  kernel_record k;
  k.name = std::move(name);
  k.demangled_name = demangle(k.name);
  k.start_ns = start_ns;
  k.end_ns = end_ns;
  k.stream_id = stream;
  return k;
}

memory_record memory(memory_op op, std::uint64_t bytes, std::uint64_t start_ns,
                     std::uint64_t end_ns, std::uint32_t stream = timed_stream) {
  memory_record m;
  m.op = op;
  m.direction = op == memory_op::memcpy ? copy_direction::host_to_device : copy_direction::none;
  m.bytes = bytes;
  m.start_ns = start_ns;
  m.end_ns = end_ns;
  m.stream_id = stream;
  return m;
}

/** `n` back-to-back kernels of `each_ns` on the timed stream, 1 us apart. */
activity_records serial_kernels(int n, std::uint64_t each_ns) {
  activity_records r;
  std::uint64_t t = 1'000'000;
  for (int i = 0; i < n; ++i) {
    r.kernels.push_back(kernel("k" + std::to_string(i), t, t + each_ns));
    t += each_ns + 1000;
  }
  return r;
}

timed_forward timed(double event_us, double wall_us = 0) {
  timed_forward t;
  t.event_time = microseconds(event_us);
  t.host_wall = microseconds(wall_us);
  t.timed_stream = timed_stream;
  return t;
}

// The seed's case -----------------------------------------------------------------------------

TEST(LaunchSummary, SeedCaseFourteenVersusFiveKernelsGivesFusionTwoPointEight) {
  // anchors.md: eager reference 14 kernels, 28.7 us GPU time, 124.6 us event; candidate 5 kernels,
  // 9.2 us GPU, 38.4 us event. The seed showed 32 vs 19 by counting host ops.
  const activity_records ref = serial_kernels(14, 2050);
  const activity_records cand = serial_kernels(5, 1840);
  const auto ref_summary = checked_launches(ref, timed(124.6, 156.6));
  const auto cand_summary = checked_launches(cand, timed(38.4, 52.4));
  ASSERT_TRUE(ref_summary.ok()) << ref_summary.failure().message;
  ASSERT_TRUE(cand_summary.ok());
  EXPECT_EQ(ref_summary.value().kernel_launches, 14u);
  EXPECT_EQ(cand_summary.value().kernel_launches, 5u);
  EXPECT_NEAR(microseconds(ref_summary.value().kernel_time_sum).count(), 28.7, 1e-9);
  EXPECT_NEAR(microseconds(cand_summary.value().kernel_time_sum).count(), 9.2, 1e-9);
  const auto ratio =
      fusion_ratio(ref_summary.value().kernel_launches, cand_summary.value().kernel_launches);
  ASSERT_TRUE(ratio.ok());
  EXPECT_DOUBLE_EQ(ratio.value(), 2.8);
}

TEST(LaunchSummary, MemcpyAndMemsetAreCountedApartFromLaunches) {
  activity_records r = serial_kernels(3, 5000);
  r.memory_ops.push_back(memory(memory_op::memcpy, 4096, 100, 1100));
  r.memory_ops.push_back(memory(memory_op::memcpy, 8192, 2000, 3000));
  r.memory_ops.push_back(memory(memory_op::memset, 1024, 4000, 4500));
  const launch_summary s = summarize_launches(r);
  EXPECT_EQ(s.kernel_launches, 3u);
  EXPECT_EQ(s.memcpy_count, 2u);
  EXPECT_EQ(s.memset_count, 1u);
  EXPECT_EQ(s.memcpy_bytes, 12288u);
  EXPECT_EQ(s.memset_bytes, 1024u);
  EXPECT_DOUBLE_EQ(s.memory_op_time_sum.count(), 2500.0);
  // Copies are not kernel time.
  EXPECT_DOUBLE_EQ(s.kernel_time_sum.count(), 15000.0);
  EXPECT_EQ(r.count(memory_op::memcpy), 2u);
  EXPECT_EQ(r.count(memory_op::memset), 1u);
}

TEST(LaunchSummary, FusionRatioNeedsKernelsOnBothSides) {
  EXPECT_TRUE(fusion_ratio(14, 0).is_missing());
  EXPECT_TRUE(fusion_ratio(0, 5).is_missing());
  EXPECT_DOUBLE_EQ(fusion_ratio(3, 6).value(), 0.5);
}

TEST(LaunchSummary, NoFusionRatioFromASideWhoseLaunchesFailedTheirCheck) {
  launch_summary three, six;
  three.kernel_launches = 3;
  six.kernel_launches = 6;
  const auto good = checked<launch_summary>::pass(three);
  const auto failed = checked<launch_summary>::fail(
      {"cupti_records_dropped", severity_error, "records were dropped"});
  EXPECT_DOUBLE_EQ(fusion_ratio(good, checked<launch_summary>::pass(six)).value(), 0.5);
  for (const auto& r : {fusion_ratio(failed, good), fusion_ratio(good, failed)}) {
    ASSERT_TRUE(r.is_missing());
    EXPECT_NE(r.failure().message.find("failed their check"), std::string::npos);
  }
}

TEST(ForwardJson, AnEventTimeNotTakenIsNullAndReadsBackAsNotTaken) {
  cupti_forward f;
  f.launches = checked<launch_summary>::missing("no records");
  f.memory = checked<peak_memory>::missing("not measured");
  f.event_time_ns = 0.0;  // the forward waited for the host: no event time
  auto j = to_json(f);
  EXPECT_TRUE(j.at("event_time_ns").is_null()) << j.dump();
  EXPECT_EQ(cupti_forward_from_json(j).event_time_ns, 0.0);
  f.event_time_ns = 8'900.0;
  j = to_json(f);
  EXPECT_EQ(j.at("event_time_ns"), 8'900.0);
  EXPECT_EQ(cupti_forward_from_json(j).event_time_ns, 8'900.0);
}

// Busy time and invariant 2 -------------------------------------------------------------------

TEST(LaunchSummary, OverlappingKernelsBusyTimeIsTheUnion) {
  activity_records r;
  r.kernels.push_back(kernel("a", 0, 10'000, 1));
  r.kernels.push_back(kernel("b", 5'000, 15'000, 2));   // overlaps a by 5 us
  r.kernels.push_back(kernel("c", 6'000, 8'000, 3));    // inside a and b
  r.kernels.push_back(kernel("d", 20'000, 22'000, 1));  // separate
  r.kernels.push_back(kernel("e", 22'000, 23'000, 1));  // touches d
  const launch_summary s = summarize_launches(r);
  EXPECT_DOUBLE_EQ(s.kernel_time_sum.count(), 10'000 + 10'000 + 2'000 + 2'000 + 1'000);
  EXPECT_DOUBLE_EQ(s.kernel_busy_time.count(), 15'000 + 3'000);
  EXPECT_DOUBLE_EQ(s.kernel_span.count(), 23'000);
  EXPECT_EQ(s.kernel_streams, (std::set<std::uint32_t>{1, 2, 3}));
}

TEST(LaunchSummary, EventTimeIsComparedWithTheUnionNotTheSum) {
  // Two 10 us kernels fully overlapped on two streams joined into the timed one: the sum (20 us)
  // is above the 12 us event time, the union (10 us) is not. No invariant-2 error.
  activity_records r;
  r.kernels.push_back(kernel("a", 1'000, 11'000, timed_stream));
  r.kernels.push_back(kernel("b", 1'000, 11'000, 9));
  const auto flags = check_launch_summary(r, summarize_launches(r), timed(12.0));
  EXPECT_FALSE(has_code(flags, "kernels_outside_timed_region"));
  EXPECT_TRUE(has_code(flags, "work_outside_timed_stream"));
  EXPECT_FALSE(has_error(flags));
}

TEST(LaunchSummary, EventTimeBelowTheKernelsIsAnError) {
  // 30 us of serial kernel work, 10 us event time: work escaped the events.
  const activity_records r = serial_kernels(3, 10'000);
  const auto c = checked_launches(r, timed(10.0));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.failure().code, "kernels_outside_timed_region");
}

TEST(LaunchSummary, AnEventTimeHoldingHostWaitsStillCatchesWorkTheEventsMissed) {
  // The forward waited for the host while queued: its event time holds those waits, so it says
  // nothing of the forward's speed (no faster_than_launches on 3 launches in 2 us), but work on a
  // stream it never waited for, 30 us against 2 us of events, still escaped them.
  const activity_records r = serial_kernels(3, 10'000);
  timed_forward t = timed(2.0);
  t.event_includes_host_waits = true;
  const auto flags = check_launch_summary(r, summarize_launches(r), t);
  const flag* f = find_code(flags, "kernels_outside_timed_region");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("its waits for the host included"), std::string::npos) << f->message;
  EXPECT_FALSE(has_code(flags, "faster_than_launches"));
  EXPECT_FALSE(has_code(flags, "very_fast_forward"));
  t.event_includes_host_waits = false;
  EXPECT_TRUE(has_code(check_launch_summary(r, summarize_launches(r), t), "faster_than_launches"));
  // Held long enough to cover its kernels, it raises nothing.
  t = timed(45.0, 60.0);
  t.event_includes_host_waits = true;
  EXPECT_FALSE(has_error(check_launch_summary(r, summarize_launches(r), t)));
}

TEST(LaunchSummary, EventTimeAboveHostWallIsAnError) {
  const activity_records r = serial_kernels(2, 10'000);
  const auto flags = check_launch_summary(r, summarize_launches(r), timed(50.0, 40.0));
  EXPECT_TRUE(has_code(flags, "event_exceeds_wall"));
}

// Rule 10: streams ---------------------------------------------------------------------------

TEST(LaunchSummary, KernelOnAnotherStreamIsFlagged) {
  activity_records r = serial_kernels(2, 5'000);
  r.kernels.push_back(kernel("side", 100'000, 105'000, 13));
  const auto flags = check_launch_summary(r, summarize_launches(r), timed(200.0));
  const flag* f = find_code(flags, "work_outside_timed_stream");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, severity_warning);
  EXPECT_NE(f->message.find("1 of 3 kernels"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("13"), std::string::npos) << f->message;
}

TEST(LaunchSummary, MemsetOnAnotherStreamIsFlaggedToo) {
  activity_records r = serial_kernels(2, 5'000);
  r.memory_ops.push_back(memory(memory_op::memset, 64, 0, 900, 21));
  const auto flags = check_launch_summary(r, summarize_launches(r), timed(200.0));
  EXPECT_TRUE(has_code(flags, "work_outside_timed_stream"));
}

TEST(LaunchSummary, AllWorkOnTheTimedStreamRaisesNothing) {
  activity_records r = serial_kernels(4, 5'000);
  r.memory_ops.push_back(memory(memory_op::memcpy, 64, 0, 900));
  const auto flags = check_launch_summary(r, summarize_launches(r), timed(40.0, 60.0));
  EXPECT_TRUE(flags.empty()) << codes(flags).front();
}

TEST(LaunchSummary, UnknownTimedStreamSkipsTheStreamCheck) {
  activity_records r = serial_kernels(1, 5'000);
  r.kernels.push_back(kernel("side", 100'000, 105'000, 13));
  timed_forward t = timed(200.0);
  t.timed_stream.reset();
  EXPECT_FALSE(
      has_code(check_launch_summary(r, summarize_launches(r), t), "work_outside_timed_stream"));
}

// Invariants 11 and 1 ------------------------------------------------------------------------

TEST(LaunchSummary, CudaCandidateWithZeroKernelsIsFlagged) {
  activity_records r;
  r.memory_ops.push_back(memory(memory_op::memcpy, 4096, 0, 2000));  // a copy is not a launch
  const auto c = checked_launches(r, timed(20.0));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.failure().code, "no_kernel_launched");
  EXPECT_NE(c.failure().message.find("1 memcpy"), std::string::npos);
  // A side that does not claim the GPU (a CPU reference) may launch none.
  timed_forward cpu = timed(20.0);
  cpu.cuda_candidate = false;
  EXPECT_TRUE(checked_launches(r, cpu).ok());
}

TEST(LaunchSummary, SeedKernelTimeOfFourHundredthsOfAMicrosecondIsFlagged) {
  activity_records r = serial_kernels(2, 5'000);
  r.kernels.push_back(kernel("_Z4tinyPf", 50'000, 50'040));  // 0.04 us: the seed's "runtime"
  const auto c = checked_launches(r, timed(30.0));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.failure().code, "impossible_kernel_time");
  EXPECT_NE(c.failure().message.find("tiny(float*)"), std::string::npos) << c.failure().message;
}

TEST(LaunchSummary, EagerForwardFasterThanItsLaunchesIsFlagged) {
  // 14 eager launches cannot be issued in 9 us.
  const activity_records r = serial_kernels(14, 600);
  const auto flags = check_launch_summary(r, summarize_launches(r), timed(9.0));
  EXPECT_TRUE(has_code(flags, "faster_than_launches"));
}

TEST(LaunchSummary, UntimedKernelsCountAsLaunchesButNotTime) {
  activity_records r = serial_kernels(2, 5'000);
  r.kernels.push_back(kernel("untimed", 0, 0));
  const launch_summary s = summarize_launches(r);
  EXPECT_EQ(s.kernel_launches, 3u);
  EXPECT_EQ(s.untimed_kernels, 1u);
  EXPECT_DOUBLE_EQ(s.kernel_time_sum.count(), 10'000.0);
  const auto flags = check_launch_summary(r, s, timed(30.0));
  EXPECT_TRUE(has_code(flags, "kernel_untimed"));
  EXPECT_FALSE(has_code(flags, "impossible_kernel_time"));
}

TEST(LaunchSummary, DroppedRecordsMakeTheCountsUnusable) {
  activity_records r = serial_kernels(2, 5'000);
  r.dropped = 3;
  const auto c = checked_launches(r, timed(30.0));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.failure().code, "cupti_records_dropped");
}

TEST(IntervalUnion, EmptyAndDegenerateIntervals) {
  EXPECT_DOUBLE_EQ(interval_union({}).count(), 0.0);
  EXPECT_DOUBLE_EQ(interval_union({{5, 5}, {9, 3}}).count(), 0.0);
  EXPECT_DOUBLE_EQ(interval_union({{10, 20}, {0, 5}, {15, 30}}).count(), 25.0);
}

// Demangling ---------------------------------------------------------------------------------

TEST(Demangle, ItaniumSymbolsBecomeCppNames) {
  EXPECT_EQ(demangle("_Z3addPfS_i"), "add(float*, float*, int)");
  EXPECT_EQ(demangle("_ZN2kj4test11spin_kernelEy"), "kj::test::spin_kernel(unsigned long long)");
  EXPECT_EQ(demangle("_Z6kernelIfLi256EEvPKT_PS0_"),
            "void kernel<float, 256>(float const*, float*)");
  EXPECT_EQ(demangle("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_"
                     "6detail5ArrayIPcLi1EEEEEviT0_T1_"),
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
            "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, "
            "at::detail::Array<char*, 1>)");
}

TEST(Demangle, PlainAndMalformedNamesComeBackUnchanged) {
  EXPECT_EQ(demangle("triton_poi_fused_add_0"), "triton_poi_fused_add_0");
  EXPECT_EQ(demangle("f"), "f");  // __cxa_demangle alone would say "float"
  EXPECT_EQ(demangle("i"), "i");
  EXPECT_EQ(demangle("_Z"), "_Z");
  EXPECT_EQ(demangle("_Zxyz!"), "_Zxyz!");
  EXPECT_EQ(demangle(""), "");
}

// Peak memory (rule 18, invariant 10) --------------------------------------------------------

constexpr std::uint64_t mib = 1u << 20;

TEST(PeakMemory, AllocatorPeakOverBaselinePlusRawAllocations) {
  memory_sample s;
  s.allocator_baseline_bytes = 100 * mib;  // inputs and weights, resident before the forward
  s.allocator_peak_bytes = 112 * mib;
  s.allocator_reserved_growth_bytes = 20 * mib;  // the allocator took a new 20 MiB segment...
  s.device_free_before_bytes = 1000 * mib;
  s.device_free_after_bytes = 972 * mib;  // ...and the candidate cudaMalloc'd 8 MiB itself
  s.output_bytes = 4 * mib;
  s.device_memory_bytes = 141ull * 1024 * mib;
  const auto p = measure_peak_memory(s);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.value().allocator_bytes, 12 * mib);
  EXPECT_EQ(p.value().raw_bytes, 8 * mib);
  EXPECT_EQ(p.value().bytes, 20 * mib);
}

TEST(PeakMemory, SeedTotalResidentMemoryIsNotThePeak) {
  // The seed printed 33.69 MB, the resident total. Over a baseline of 33 MB the forward's peak is
  // what it added.
  memory_sample s;
  s.allocator_baseline_bytes = 33'000'000;
  s.allocator_peak_bytes = 33'690'000;
  s.output_bytes = 262'144;  // 8x64x128 fp32
  const auto p = measure_peak_memory(s);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.value().bytes, 690'000u);
}

TEST(PeakMemory, BelowTheOutputsIsInvariant10) {
  memory_sample s;
  s.allocator_baseline_bytes = 0;
  s.allocator_peak_bytes = mib;
  s.output_bytes = 4 * mib;
  const auto p = measure_peak_memory(s);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.failure().code, "peak_memory_below_outputs");
}

TEST(PeakMemory, OutputsTheForwardDidNotAllocateAreNotItsLowerBound) {
  // A forward that writes into a buffer it keeps (or returns a view of an input) allocates
  // nothing for its outputs: its peak was held to their bytes, an error on a valid candidate.
  memory_sample s;
  s.allocator_baseline_bytes = mib;
  s.allocator_peak_bytes = mib;
  s.allocator_allocated_bytes = 0;
  s.output_bytes = 4096;
  const auto p = measure_peak_memory(s);
  ASSERT_TRUE(p.ok()) << p.failure().message;
  EXPECT_TRUE(has_code(p.flags(), "outputs_not_allocated_by_forward"));
  // A forward that did allocate as much as its outputs is held to them still.
  s.allocator_allocated_bytes = 8192;
  EXPECT_EQ(measure_peak_memory(s).failure().code, "peak_memory_below_outputs");
}

TEST(PeakMemory, AboveTheDeviceIsInvariant10) {
  memory_sample s;
  s.device_free_before_bytes = 200 * mib;
  s.device_free_after_bytes = 0;
  s.device_memory_bytes = 100 * mib;
  const auto p = measure_peak_memory(s);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.failure().code, "peak_memory_above_device");
}

TEST(PeakMemory, DeviceDeltaAloneIsNotedAndFreedMemoryIsNoAllocation) {
  memory_sample s;
  s.device_free_before_bytes = 500 * mib;
  s.device_free_after_bytes = 510 * mib;  // memory was released
  const auto p = measure_peak_memory(s);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.value().bytes, 0u);
  EXPECT_TRUE(has_code(p.flags(), "peak_memory_device_only"));
}

TEST(PeakMemory, InconsistentOrMissingFigures) {
  memory_sample s;
  EXPECT_TRUE(measure_peak_memory(s).is_missing());
  s.allocator_baseline_bytes = 10 * mib;
  s.allocator_peak_bytes = 5 * mib;
  const auto p = measure_peak_memory(s);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.failure().code, "allocator_peak_below_baseline");
}

// Raw CUPTI records (CUDA 13 layouts) and the collector without a GPU -------------------------

#if KJ_HAVE_CUPTI

TEST(CuptiRecords, KernelRecordIsParsedIntoPlainFields) {
  CUpti_ActivityKernel10 raw;
  std::memset(&raw, 0, sizeof raw);
  raw.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  raw.name = "_Z3addPfS_i";
  raw.start = 1'000;
  raw.end = 4'500;
  raw.deviceId = 0;
  raw.contextId = 1;
  raw.streamId = 13;
  raw.correlationId = 42;
  raw.gridX = 80;
  raw.gridY = 2;
  raw.gridZ = 1;
  raw.blockX = 256;
  raw.blockY = 1;
  raw.blockZ = 1;
  raw.registersPerThread = 32;
  raw.staticSharedMemory = 4096;
  raw.dynamicSharedMemory = 1024;
  activity_records r;
  ASSERT_TRUE(detail::append_record(&raw, r));
  ASSERT_EQ(r.kernels.size(), 1u);
  const kernel_record& k = r.kernels[0];
  EXPECT_EQ(k.name, "_Z3addPfS_i");
  EXPECT_EQ(k.demangled_name, "add(float*, float*, int)");
  EXPECT_DOUBLE_EQ(k.duration().count(), 3'500.0);
  EXPECT_EQ(k.stream_id, 13u);
  EXPECT_EQ(k.context_id, 1u);
  EXPECT_EQ(k.correlation_id, 42u);
  EXPECT_EQ(k.grid.count(), 160u);
  EXPECT_EQ(k.block.x, 256u);
  EXPECT_EQ(k.registers_per_thread, 32u);
  EXPECT_EQ(k.shared_bytes(), 5120u);
}

TEST(CuptiRecords, MemcpyAndMemsetRecordsAreParsed) {
  CUpti_ActivityMemcpy6 copy;
  std::memset(&copy, 0, sizeof copy);
  copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  copy.bytes = 4096;
  copy.start = 10;
  copy.end = 1010;
  copy.streamId = 7;
  CUpti_ActivityMemset4 fill;
  std::memset(&fill, 0, sizeof fill);
  fill.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  fill.bytes = 512;
  fill.start = 2000;
  fill.end = 2300;
  fill.streamId = 8;
  activity_records r;
  ASSERT_TRUE(detail::append_record(&copy, r));
  ASSERT_TRUE(detail::append_record(&fill, r));
  ASSERT_EQ(r.memory_ops.size(), 2u);
  EXPECT_EQ(r.memory_ops[0].op, memory_op::memcpy);
  EXPECT_EQ(r.memory_ops[0].direction, copy_direction::device_to_host);
  EXPECT_EQ(to_string(r.memory_ops[0].direction), "DtoH");
  EXPECT_EQ(r.memory_ops[0].bytes, 4096u);
  EXPECT_DOUBLE_EQ(r.memory_ops[0].duration().count(), 1000.0);
  EXPECT_EQ(r.memory_ops[1].op, memory_op::memset);
  EXPECT_EQ(r.memory_ops[1].stream_id, 8u);
  EXPECT_EQ(r.memory_ops[1].bytes, 512u);
  EXPECT_TRUE(r.kernels.empty());
}

TEST(CuptiRecords, HostApiRecordsAreNeverLaunches) {
  // A runtime / driver API call (cudaLaunchKernel on the host) is not a kernel execution.
  CUpti_ActivityAPI api;
  std::memset(&api, 0, sizeof api);
  activity_records r;
  for (CUpti_ActivityKind kind : {CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER}) {
    api.kind = kind;
    api.start = 1;
    api.end = 100;
    EXPECT_FALSE(detail::append_record(&api, r));
  }
  EXPECT_TRUE(r.kernels.empty());
  EXPECT_TRUE(r.memory_ops.empty());
  EXPECT_EQ(summarize_launches(r).kernel_launches, 0u);
}

#endif

TEST(ActivityCollector, OnlyOneAtATimeAndUnavailableWithoutAGpu) {
  activity_collector c;
  EXPECT_THROW({ activity_collector second; }, kj::error);
  if (!cupti_built_in()) {
    EXPECT_FALSE(c.available());
    EXPECT_EQ(c.unavailable_reason(), "CUPTI not available in this build");
  }
  if (kj::cuda::probe().available) GTEST_SKIP() << "a GPU is present: tests/gpu/cupti_test.cpp";
  // No device: start() says why instead of throwing, and nothing is collected.
  EXPECT_FALSE(c.start());
  EXPECT_FALSE(c.collecting());
  EXPECT_FALSE(c.unavailable_reason().empty());
  EXPECT_TRUE(c.records().kernels.empty());
  EXPECT_THROW((void)c.stop(), kj::error);  // stop without a successful start: a kjudge bug
}

TEST(ActivityCollector, ANewCollectorMayFollowADestroyedOne) {
  { activity_collector first; }
  EXPECT_NO_THROW({ activity_collector second; });
}

TEST(GpuWorkWatch, WatchesTheLaunchCopyFillAndPrefetchFamiliesOnly) {
  for (const char* name : {"cudaLaunchKernel_v7000",
                           "cudaLaunchKernelExC_v11060",
                           "cudaLaunchCooperativeKernel_v9000",
                           "cudaMemcpyAsync_v3020",
                           "cudaMemcpy2DAsync_ptsz_v7000",
                           "cudaMemsetAsync_v3020",
                           "cudaGraphLaunch_v10000",
                           "cudaMemPrefetchAsync_v8000",
                           "cuLaunchKernel",
                           "cuLaunchKernelEx",
                           "cuMemcpyHtoDAsync_v2",
                           "cuMemsetD32Async",
                           "cuGraphLaunch",
                           "cuMemPrefetchAsync",
                           "__cudaLaunchKernel_v13000",
                           "cudaGraphUpload_v11010",
                           "cuGraphUpload",
                           "cuStreamWriteValue32_v2",
                           "cuStreamBatchMemOp_v2",
                           "cuSignalExternalSemaphoresAsync",
                           "cudaMemDiscardAndPrefetchBatchAsync_v13000"})
    EXPECT_TRUE(queues_gpu_work(name)) << name;
  for (const char* name : {"cudaMalloc_v3020", "cudaFree_v3020", "cudaEventRecord_v3020",
                           "cudaStreamSynchronize_v3020", "cudaGetDevice_v3020", "cuMemAlloc_v2",
                           "cuCtxSynchronize", "cuStreamQuery", "cuGraphInstantiate", "", "cu"})
    EXPECT_FALSE(queues_gpu_work(name)) << name;
}

TEST(GpuWorkWatch, WithoutAGpuOrCuptiNothingFiresAndStopIsSafe) {
  if (kj::cuda::probe().available) GTEST_SKIP() << "a GPU is present: tests/gpu/cupti_test.cpp";
  int fired = 0;
  gpu_work_watch w([&](std::string_view) { ++fired; });
  if (!cupti_built_in()) {
    EXPECT_EQ(w.unavailable_reason(), "CUPTI not available in this build");
  }
  // Watching exactly when it could start (without a driver, CUPTI refuses the subscriber:
  // "cuptiSubscribe failed: CUPTI_ERROR_UNKNOWN (999)" on the CI machines).
  EXPECT_EQ(w.active(), w.unavailable_reason().empty()) << w.unavailable_reason();
  w.stop();
  EXPECT_TRUE(w.detach_error().empty() || w.unavailable_reason().empty()) << w.detach_error();
  w.stop();
  EXPECT_FALSE(w.active());
  EXPECT_EQ(fired, 0);
  EXPECT_TRUE(w.fired_by().empty());
}

}  // namespace
}  // namespace kj::profile
