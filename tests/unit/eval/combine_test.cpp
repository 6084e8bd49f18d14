// eval::combine_runs (`kjudge eval --processes N`): the verdict of the first run that is not
// correct, and the timing of correct runs pooled, with the processes' spread in each figure's
// error and in each speedup's interval.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <kjudge/core/result.hpp>
#include <kjudge/core/stats.hpp>
#include <kjudge/eval/combine.hpp>

namespace kj {
namespace {

/** A figure of `n` samples around `centre` on `sets` input sets (noise 0.2%), finished as the
 *  engine finishes one (summary, errors). */
measure::figure make_figure(double centre, std::size_t n, std::size_t sets, std::uint64_t seed) {
  measure::figure f;
  f.kind = measure::figure_kind::host_wall;
  f.method = "host-steady-clock";
  f.valid = true;
  f.cold = false;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, 0.002 * centre);
  for (std::size_t i = 0; i < n; ++i) {
    f.samples_us.push_back(centre + noise(rng));
    f.samples_set.push_back(static_cast<std::uint32_t>(i % sets));
  }
  f.summary = stats::summarize(f.samples_us);
  return f;
}

eval_result make_run(double ref_us, double cand_us, std::uint64_t seed) {
  eval_result r;
  r.status = eval_status::correct;
  r.wall_s = 2.0;
  measure::comparison t;
  t.reference.name = "reference";
  t.candidate.name = "candidate";
  t.reference.input_sets = t.candidate.input_sets = 4;
  t.reference.host_wall = make_figure(ref_us, 200, 4, seed);
  t.candidate.host_wall = make_figure(cand_us, 200, 4, seed + 1);
  t.reference.device.note = t.candidate.device.note = "not taken: GPU timing is off";
  t.stopped_by = "budget";
  measure::speedup s;
  s.kind = measure::figure_kind::host_wall;
  s.valid = true;
  s.ci.ratio = ref_us / cand_us;
  t.speedups.push_back(s);
  r.timing = t;
  r.flags.push_back({"noisy_timing", "warning", "one process's figure"});
  r.flags.push_back({"candidate_changed_torch_state", "warning", "the same in every process"});
  return r;
}

measure::timing_options options() {
  measure::timing_options o;
  o.target_rse_pct = 0.5;
  o.min_samples = 20;
  return o;
}

TEST(CombineRuns, OneRunIsReturnedAsItIs) {
  const auto r = eval::combine_runs({make_run(100, 50, 1)}, 1, options());
  EXPECT_EQ(r.timing->processes, 1u);
  EXPECT_TRUE(r.runs.empty());
  EXPECT_TRUE(r.timing->reference.host_wall.samples_process.empty());
  EXPECT_EQ(r.flags.size(), 2u);
}

TEST(CombineRuns, ThePoolHoldsEveryProcesssSamplesAndTheirSpread) {
  // Three processes whose candidate reads 50, 51.5 and 49 us: within each, 0.2% noise.
  const auto r = eval::combine_runs(
      {make_run(100, 50, 1), make_run(100, 51.5, 3), make_run(100, 49, 5)}, 3, options());
  ASSERT_TRUE(r.timing);
  const auto& t = *r.timing;
  EXPECT_EQ(t.processes, 3u);
  ASSERT_EQ(r.runs.size(), 3u);
  EXPECT_DOUBLE_EQ(r.wall_s, 6.0);
  const auto& c = t.candidate.host_wall;
  EXPECT_EQ(c.summary.n, 600u);
  EXPECT_EQ(std::set<std::uint32_t>(c.samples_process.begin(), c.samples_process.end()),
            (std::set<std::uint32_t>{0, 1, 2}));
  // Process p's set s is group p * 4 + s.
  EXPECT_EQ(*std::max_element(c.samples_set.begin(), c.samples_set.end()), 11u);
  EXPECT_EQ(c.set_medians_us.size(), 12u);
  ASSERT_EQ(c.process_medians_us.size(), 3u);
  EXPECT_NEAR(c.process_medians_us[1], 51.5, 0.1);
  // The processes' medians: sd about 1.25 us, over sqrt(3) and the median (50): about 1.45%.
  EXPECT_NEAR(c.rse_processes_pct, 1.45, 0.1);
  EXPECT_DOUBLE_EQ(c.summary.rse_pct, c.rse_processes_pct);  // the largest part
  EXPECT_TRUE(c.noisy);
  EXPECT_NE(c.note.find("across 3 processes"), std::string::npos) << c.note;
  // The reference's processes agree: under the target, not noisy.
  EXPECT_LT(t.reference.host_wall.summary.rse_pct, 0.5);
  EXPECT_FALSE(t.reference.host_wall.noisy);
  // The speedup's interval covers the processes' own ratios (2.0, 1.94, 2.04) and more: the
  // bootstrap over sets alone could not, with each process's 0.2% noise.
  ASSERT_EQ(t.speedups.size(), 1u);
  const auto& s = t.speedups[0];
  EXPECT_TRUE(s.valid);
  EXPECT_TRUE(s.ci.by_process);
  EXPECT_LT(s.ci.lo, 100.0 / 51.5);
  EXPECT_GT(s.ci.hi, 100.0 / 49.0);
  // Flags: each process's noisy_timing replaced by the pooled figures'; one copy of a flag every
  // process raised alike.
  std::size_t noisy = 0, changed = 0;
  for (const auto& f : r.flags) {
    noisy += f.code == "noisy_timing";
    changed += f.code == "candidate_changed_torch_state";
    EXPECT_NE(f.message, "one process's figure");
  }
  EXPECT_EQ(noisy, 1u);  // the candidate's
  EXPECT_EQ(changed, 1u);
  // The figures GPU timing did not take stay as they were, unnamed.
  EXPECT_FALSE(t.candidate.device.valid);
  EXPECT_EQ(t.candidate.device.note, "not taken: GPU timing is off");
}

TEST(CombineRuns, TheFirstRunThatIsNotCorrectIsTheVerdict) {
  // The runs end there: of three processes asked for, the second failed (the message said
  // "process 2 of 2", the count of runs made, and a first process that failed was not named).
  auto bad = make_run(100, 50, 3);
  bad.status = eval_status::incorrect;
  bad.message = "1 of 5 trials failed";
  const auto r = eval::combine_runs({make_run(100, 50, 1), bad}, 3, options());
  EXPECT_EQ(r.status, eval_status::incorrect);
  EXPECT_EQ(r.message, "process 2 of 3: 1 of 5 trials failed");
  ASSERT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(r.runs[0]["status"], "correct");
  EXPECT_EQ(r.runs[1]["status"], "incorrect");
  const auto first = eval::combine_runs({bad}, 3, options());
  EXPECT_EQ(first.message, "process 1 of 3: 1 of 5 trials failed");
  ASSERT_EQ(first.runs.size(), 1u);
}

TEST(CombineRuns, AProcessWithMostOfTheSamplesCarriesTheSpreadAlmostWhole) {
  // The pooled median follows the process with most samples: the processes' part of its error
  // weighs them by their shares (with equal shares, sd / sqrt(3)).
  auto big = make_run(100, 49, 5);
  big.timing->candidate.host_wall = make_figure(49, 4000, 4, 6);
  const auto equal = eval::combine_runs(
      {make_run(100, 50, 1), make_run(100, 51.5, 3), make_run(100, 49, 5)}, 3, options());
  const auto skewed =
      eval::combine_runs({make_run(100, 50, 1), make_run(100, 51.5, 3), big}, 3, options());
  const double sd_pct = 100.0 * 1.258 / 49.0;  // sd of 50, 51.5, 49 over the pooled median
  EXPECT_NEAR(
      skewed.timing->candidate.host_wall.rse_processes_pct,
      sd_pct * std::sqrt(2.0 * (200.0 / 4400) * (200.0 / 4400) + (4000.0 / 4400) * (4000.0 / 4400)),
      0.05);
  EXPECT_GT(skewed.timing->candidate.host_wall.rse_processes_pct,
            1.5 * equal.timing->candidate.host_wall.rse_processes_pct);
  // So does the speedup's interval, around the pooled ratio (it kept sd / sqrt(3) around the
  // processes' mean ratio: [1.874, 2.122] against [1.874, 2.120] for equal shares).
  const auto& e = equal.timing->speedups[0].ci;
  const auto& k = skewed.timing->speedups[0].ci;
  EXPECT_TRUE(k.by_process);
  EXPECT_GT(k.hi - k.lo, 1.4 * (e.hi - e.lo))
      << k.lo << " " << k.hi << " / " << e.lo << " " << e.hi;
  EXPECT_LT(k.lo, k.ratio);
  EXPECT_GT(k.hi, k.ratio);
}

TEST(CombineRuns, ProcessesFarApartAreSaidToDisagree) {
  // The candidate 4x slower from its second process on, with fewer samples there (a time
  // budget): the pooled median leans to the first process, and a warning names each median.
  auto first = make_run(100, 50, 1);
  first.timing->candidate.host_wall = make_figure(50, 400, 4, 2);
  auto second = make_run(100, 200, 3), third = make_run(100, 200, 5);
  second.timing->candidate.host_wall = make_figure(200, 100, 4, 4);
  third.timing->candidate.host_wall = make_figure(200, 100, 4, 6);
  const auto apart = eval::combine_runs({first, second, third}, 3, options());
  EXPECT_LT(apart.timing->candidate.host_wall.summary.median, 60.0);  // what the warning is for
  std::string message;
  for (const auto& f : apart.flags)
    if (f.code == "processes_disagree") message = f.message;
  EXPECT_NE(message.find("candidate host_wall figure"), std::string::npos) << message;
  EXPECT_NE(message.find("(400 samples)"), std::string::npos) << message;
  EXPECT_NE(message.find("(100 samples)"), std::string::npos) << message;
  // Processes 3% apart (and the reference's identical ones) are not.
  const auto near = eval::combine_runs(
      {make_run(100, 50, 1), make_run(100, 51.5, 3), make_run(100, 49, 5)}, 3, options());
  EXPECT_FALSE(near.has_flag("processes_disagree"));
}

TEST(CombineRuns, AFigureTakenByAnotherMethodInOneProcessIsNotPooled) {
  // A graph capture that failed in one process: its eager launches are not mixed into the
  // others' replays.
  auto eager = make_run(100, 50, 3);
  eager.timing->candidate.host_wall.method = "blocking-kernel+events";
  const auto r = eval::combine_runs({make_run(100, 50, 1), eager}, 2, options());
  const auto& c = r.timing->candidate.host_wall;
  EXPECT_FALSE(c.valid);
  EXPECT_NE(c.note.find("not pooled: process 2 of 2 took it by blocking-kernel+events"),
            std::string::npos)
      << c.note;
  EXPECT_TRUE(r.has_flag("method_mismatch"));
  EXPECT_FALSE(r.timing->speedups[0].valid);
}

TEST(CombineRuns, AFlagNotEveryProcessRaisedNamesTheProcesses) {
  auto a = make_run(100, 50, 1), b = make_run(100, 50, 3), c = make_run(100, 50, 5);
  b.flags.push_back({"gpu_shared", "warning", "another evaluation"});
  c.flags.push_back({"gpu_shared", "warning", "another evaluation"});
  const auto r = eval::combine_runs({a, b, c}, 3, options());
  std::size_t changed = 0;
  for (const auto& f : r.flags) {
    if (f.code == "gpu_shared") {
      EXPECT_EQ(f.message, "processes 2, 3 of 3: another evaluation");
    }
    if (f.code == "candidate_changed_torch_state") {
      ++changed;
      EXPECT_EQ(f.message, "the same in every process");
    }
  }
  EXPECT_EQ(changed, 1u);
  EXPECT_TRUE(r.has_flag("gpu_shared"));
}

TEST(CombineRuns, TheTimingChecksRunOnThePooledFigures) {
  // Flags made from a figure's numbers come from the pooled figure: one throttled_samples flag
  // with every process's discarded samples, not one a process.
  auto a = make_run(100, 50, 1), b = make_run(100, 50, 3);
  a.timing->candidate.host_wall.discarded_throttled = 2;
  b.timing->candidate.host_wall.discarded_throttled = 3;
  a.flags.push_back({"throttled_samples", "info", "candidate host_wall: 2 samples discarded"});
  b.flags.push_back({"throttled_samples", "info", "candidate host_wall: 3 samples discarded"});
  const auto r = eval::combine_runs({a, b}, 2, options());
  std::vector<std::string> throttled;
  for (const auto& f : r.flags)
    if (f.code == "throttled_samples") throttled.push_back(f.message);
  ASSERT_EQ(throttled.size(), 1u);
  EXPECT_EQ(throttled[0].rfind("candidate host_wall: 5 samples discarded", 0), 0u) << throttled[0];
}

TEST(CombineRuns, AFigureOneProcessCouldNotTakeIsNotPooled) {
  auto second = make_run(100, 50, 3);
  second.timing->candidate.host_wall.valid = false;
  second.timing->candidate.host_wall.note = "no samples taken";
  const auto r = eval::combine_runs({make_run(100, 50, 1), second}, 2, options());
  const auto& c = r.timing->candidate.host_wall;
  EXPECT_FALSE(c.valid);
  EXPECT_EQ(c.note, "process 2 of 2: no samples taken");
  ASSERT_EQ(r.timing->speedups.size(), 1u);
  EXPECT_FALSE(r.timing->speedups[0].valid);
}

TEST(CombineRuns, AFigureNotPooledStillCountsEveryProcesssDiscardedSamples) {
  // Copied from one process (invalid there, or taken by another method), the figure's count of
  // samples discarded under a low clock is every process's, as is its throttled_samples flag.
  for (const bool by_method : {false, true}) {
    auto a = make_run(100, 50, 1), b = make_run(100, 50, 3), c = make_run(100, 50, 5);
    for (auto* r : {&a, &b, &c}) r->timing->candidate.host_wall.discarded_throttled = 5;
    if (by_method)
      b.timing->candidate.host_wall.method = "blocking-kernel+events";
    else
      b.timing->candidate.host_wall.valid = false;
    const auto r = eval::combine_runs({a, b, c}, 3, options());
    EXPECT_FALSE(r.timing->candidate.host_wall.valid);
    EXPECT_EQ(r.timing->candidate.host_wall.discarded_throttled, 15u) << by_method;
    std::vector<std::string> throttled;
    for (const auto& f : r.flags)
      if (f.code == "throttled_samples") throttled.push_back(f.message);
    ASSERT_EQ(throttled.size(), 1u) << by_method;
    EXPECT_EQ(throttled[0].rfind("candidate host_wall: 15 samples discarded", 0), 0u)
        << throttled[0];
  }
}

TEST(CombineRuns, AFigureMissingInOneProcessForAnotherReasonIsNotBlamedOnTheClock) {
  // Process 1 kept its samples and discarded some under a low clock; process 2 took none for
  // another reason. The pooled figure (process 2's) has no samples, and the warning said that
  // every sample taken had been discarded.
  for (const bool throttled_out : {false, true}) {
    auto a = make_run(100, 50, 1), b = make_run(100, 50, 3);
    a.timing->candidate.host_wall.discarded_throttled = 7;
    auto& f = b.timing->candidate.host_wall;
    f.valid = false;
    f.samples_us.clear();
    f.samples_set.clear();
    f.summary = kj::stats::summarize(f.samples_us);
    f.discarded_throttled = throttled_out ? 9 : 0;
    f.note = throttled_out ? std::string(kj::measure::k_all_throttled_note) : "no samples taken";
    const auto r = eval::combine_runs({a, b}, 2, options());
    std::vector<kj::flag> throttled;
    for (const auto& g : r.flags)
      if (g.code == "throttled_samples") throttled.push_back(g);
    ASSERT_EQ(throttled.size(), 1u) << throttled_out;
    EXPECT_EQ(throttled[0].severity, throttled_out ? "warning" : "info") << throttled[0].message;
    EXPECT_EQ(throttled[0].message.find("every one taken") != std::string::npos, throttled_out)
        << throttled[0].message;
  }
}

TEST(CombineRuns, AHostSyncSomeProcessesSawIsFlaggedOnce) {
  // The pooled side's host_sync_detected is any process's; the pooled checks must not raise the
  // flag a second time without the processes' names.
  auto a = make_run(100, 50, 1), b = make_run(100, 50, 3);
  b.timing->candidate.host_sync_detected = true;
  b.flags.push_back({"host_sync_in_forward", "warning",
                     "the candidate forward could not be queued while its stream was held: it "
                     "waits for the host (.item(), a synchronize or a device-to-host copy), or "
                     "issues more launches than the launch queue holds, or took longer than the "
                     "hold's limit to issue: no device figure; stream and host-wall figures "
                     "include the wait"});
  const auto r = eval::combine_runs({a, b}, 2, options());
  EXPECT_TRUE(r.timing->candidate.host_sync_detected);
  std::vector<std::string> sync;
  for (const auto& f : r.flags)
    if (f.code == "host_sync_in_forward") sync.push_back(f.message);
  ASSERT_EQ(sync.size(), 1u);
  EXPECT_EQ(sync[0].rfind("process 2 of 2: the candidate forward", 0), 0u) << sync[0];
}

TEST(CombineRuns, TheClocksAreEveryReadingProcesss) {
  // The first process could not read the clock; the others did: the pooled record is theirs.
  auto a = make_run(100, 50, 1), b = make_run(100, 50, 3), c = make_run(100, 50, 5);
  a.timing->clocks.source = "NVML not available";
  for (auto* r : {&b, &c}) {
    r->timing->clocks.available = true;
    r->timing->clocks.source = "nvml";
    r->timing->clocks.default_sm_mhz = 1980;
  }
  b.timing->clocks.median_sm_mhz = 1980;
  b.timing->clocks.min_sm_mhz = 1900;
  c.timing->clocks.median_sm_mhz = 1800;
  c.timing->clocks.min_sm_mhz = 1700;
  c.timing->clocks.throttle_reasons = {"sw_thermal"};
  const auto clocks = eval::combine_runs({a, b, c}, 3, options()).timing->clocks;
  EXPECT_TRUE(clocks.available);
  EXPECT_EQ(clocks.source, "nvml");
  EXPECT_DOUBLE_EQ(clocks.median_sm_mhz, 1890);
  EXPECT_DOUBLE_EQ(clocks.min_sm_mhz, 1700);
  EXPECT_EQ(clocks.throttle_reasons, std::vector<std::string>{"sw_thermal"});
}

TEST(CombineRuns, TheResultRoundTripsThroughJson) {
  const auto r = eval::combine_runs({make_run(100, 50, 1), make_run(100, 52, 3)}, 2, options());
  const nlohmann::json j = r;
  EXPECT_EQ(j["timing"]["processes"], 2);
  EXPECT_EQ(j["timing"]["speedups"][0]["resampled"], "input_sets");
  EXPECT_EQ(j["timing"]["speedups"][0]["over_processes"], true);
  EXPECT_EQ(j["timing"]["candidate"]["host_wall"]["process_medians_us"].size(), 2u);
  EXPECT_TRUE(j["timing"]["candidate"]["host_wall"]["rse_processes_pct"].is_number());
  EXPECT_TRUE(j["timing"]["candidate"]["device"]["rse_processes_pct"].is_null());
  EXPECT_EQ(j["runs"].size(), 2u);
  const auto back = j.get<eval_result>();
  EXPECT_EQ(back.timing->processes, 2u);
  EXPECT_TRUE(back.timing->speedups[0].ci.by_process);
  EXPECT_TRUE(back.timing->speedups[0].ci.by_group);
  EXPECT_EQ(back.timing->candidate.host_wall.samples_process,
            r.timing->candidate.host_wall.samples_process);
  EXPECT_EQ(back.runs.size(), 2u);
}

}  // namespace
}  // namespace kj
