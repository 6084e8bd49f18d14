// Units of the evaluation layer that need no Python or GPU: the job round trip, seeds, the event
// fold, the result schema, jitter, the CLI's documentation, and ncu's command line (against a
// stand-in ncu).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <kjudge/core/error.hpp>
#include <kjudge/core/jitter.hpp>
#include <kjudge/core/result.hpp>
#include <kjudge/eval/forward_record.hpp>
#include <kjudge/eval/job.hpp>
#include <kjudge/eval/ncu_run.hpp>
#include <kjudge/eval/protocol.hpp>
#include <kjudge/eval/stress_size.hpp>
#include <kjudge/eval/timing_checks.hpp>

#include "commands.hpp"
#include "help.hpp"

namespace kj {
namespace {

TEST(Jitter, MemoisedPerSizeAndWithinFifteenPercent) {
  jitter_table t(1234);
  const auto a = t.jitter_int(64);
  EXPECT_EQ(t.jitter_int(64), a) << "the same nominal size must give the same value in a trial";
  for (std::int64_t n : {8, 64, 128, 1000, 4096}) (void)t.jitter_int(n);
  EXPECT_EQ(t.draws().size(), 5u);
  // Every draw within 15% of n (d = floor(0.15 n)), and over seeds every value of that range.
  for (std::int64_t n = 1; n <= 300; ++n) {
    const std::int64_t d = 15 * n / 100;
    std::set<std::int64_t> seen;
    for (std::uint64_t s = 0; s < 400; ++s) {
      const auto v = jitter_table(s).jitter_int(n);
      ASSERT_GE(v, n - d) << "n = " << n << ", seed " << s;
      ASSERT_LE(v, n + d) << "n = " << n << ", seed " << s;
      ASSERT_LE(std::abs(static_cast<double>(v - n)), 0.15 * static_cast<double>(n));
      seen.insert(v);
    }
    if (n <= 100) {
      EXPECT_EQ(seen.size(), static_cast<std::size_t>(2 * d + 1)) << "n = " << n;
    }
  }
  EXPECT_EQ(jitter_table(5).jitter_int(4), 4) << "no integer but 4 lies within 15% of 4";
  const std::int64_t huge = std::numeric_limits<std::int64_t>::max() / 4;
  const auto v = jitter_table(5).jitter_int(huge);
  EXPECT_GE(v, huge - 15 * (huge / 100) - 1);
  EXPECT_LE(v, huge + 15 * (huge / 100) + 1);
}

TEST(Jitter, SeedsDrawDifferentValuesAndStressScales) {
  std::set<std::int64_t> seen;
  for (std::uint64_t s = 0; s < 20; ++s) seen.insert(jitter_table(s).jitter_int(1000));
  EXPECT_GE(seen.size(), 10u);
  jitter_table plain(7), stress(7, 4);
  EXPECT_EQ(stress.jitter_int(100), 4 * plain.jitter_int(100));
  EXPECT_EQ(jitter_table(7).jitter_int(100), plain.jitter_int(100)) << "deterministic per seed";
  EXPECT_GE(jitter_table(3).jitter_int(1), 1);
  // Timing inputs: nominal sizes, still scaled.
  EXPECT_EQ(jitter_table(7, 1, false).jitter_int(100), 100);
  EXPECT_EQ(jitter_table(7, 4, false).jitter_int(100), 400);
  // Sizes below 7 never jitter, and are not scaled either (3 input channels stay 3); 7 is.
  for (std::int64_t n = 1; n < 7; ++n) EXPECT_EQ(jitter_table(7, 4).jitter_int(n), n);
  EXPECT_EQ(jitter_table(7, 4, false).jitter_int(7), 28);
  // A size whose product with the scale would not fit in 64 bits keeps its drawn value (the
  // product overflowed, undefined behaviour, before); one that fits is scaled.
  const std::int64_t most = std::numeric_limits<std::int64_t>::max();
  const std::int64_t big = most / 4 + 1;
  EXPECT_EQ(jitter_table(7, 4, false).jitter_int(big), big);
  EXPECT_EQ(jitter_table(7, 4, false).jitter_int(most / 4), most / 4 * 4);
  for (std::uint64_t s = 0; s < 50; ++s) {
    const auto v = jitter_table(s, 4).jitter_int(most / 4);
    EXPECT_GT(v, 0) << s;
    EXPECT_TRUE(v == 4 * (v / 4) || v > most / 4) << v;  // scaled, or left as drawn
  }
}

TEST(StressSize, ScalesTheDimensionsThatJitteredByTheScale) {
  // x: (B=70 drawn from 64, 3 fixed, 130 drawn from 128) fp32; idx: (70) int64; a number.
  const std::map<std::string, std::int64_t> jitter = {{"64", 70}, {"128", 130}, {"3", 3}};
  const double bytes = eval::stress_input_bytes({{70, 3, 130}, {70}, {}},
                                                {"float32", "int64", "float"}, jitter, {}, 4);
  EXPECT_DOUBLE_EQ(bytes, 4.0 * (70 * 4) * 3 * (130 * 4) + 8.0 * (70 * 4) + 4.0);
  // A size below 7 never scales, even where it was "drawn"; scale 1 is the nominal trial's.
  EXPECT_DOUBLE_EQ(eval::stress_input_bytes({{3, 3}}, {"bfloat16"}, jitter, {}, 4), 2.0 * 9);
  EXPECT_DOUBLE_EQ(eval::stress_input_bytes({{70, 130}}, {"float32"}, jitter, {}, 1),
                   4.0 * 70 * 130);
  // A size pinned while the models were built (2048 -> 2048) keeps its value in stress trials.
  const std::map<std::string, std::int64_t> pins = {{"8", 9}, {"2048", 2048}};
  EXPECT_DOUBLE_EQ(eval::stress_input_bytes({{9, 2048, 2048}}, {"float32"}, pins, {2048}, 4),
                   4.0 * (9 * 4) * 2048 * 2048);
  // An unknown dtype counts 8 bytes an element.
  EXPECT_DOUBLE_EQ(eval::stress_input_bytes({{10}}, {"complex128"}, {}, {}, 4), 80.0);
  EXPECT_GT(eval::host_available_bytes().value_or(1), 0);
}

TEST(Jitter, PinnedSizesKeepTheirValueUnscaled) {
  // A size drawn while the models were built keeps its (nominal) value in every trial.
  jitter_table t(99, 4);
  t.pin(64, 64);
  EXPECT_EQ(t.jitter_int(64), 64);
  EXPECT_NE(t.jitter_int(8), 8) << "an unpinned size is still jittered and scaled";
  EXPECT_EQ(t.draws().at(64), 64);
}

TEST(Job, RoundTripsThroughJson) {
  eval::job j;
  j.problem = "/p.py";
  j.candidate = "/c.cu";
  j.kind = eval::candidate_kind::native;
  j.held_out_seed = 99;
  j.timing_key = 0xfedcba9876543210ULL;  // 64 bits, unlike the seeds
  j.atol = 1e-3;
  j.timing_options = eval::timing_preset("precise");
  j.gpu_lock_wait_s = 12.5;
  j.timeout_s = 40;
  const auto back = eval::job_from_json(eval::to_json(j));
  EXPECT_DOUBLE_EQ(back.gpu_lock_wait_s, 12.5);
  EXPECT_DOUBLE_EQ(back.timeout_s, 40);
  EXPECT_EQ(back.candidate, j.candidate);
  EXPECT_EQ(back.kind, eval::candidate_kind::native);
  EXPECT_EQ(back.held_out_seed, 99u);
  EXPECT_EQ(back.timing_key, 0xfedcba9876543210ULL);
  ASSERT_TRUE(back.atol);
  EXPECT_DOUBLE_EQ(*back.atol, 1e-3);
  EXPECT_FALSE(back.rtol);
  EXPECT_DOUBLE_EQ(back.timing_options.budget_per_side.count(), 10.0);
  EXPECT_EQ(back.timing_options.max_input_sets, 32u);  // the median's error over sets shrinks
  EXPECT_EQ(eval::timing_preset("agent").max_input_sets, 8u);
  EXPECT_THROW((void)eval::job_from_json(nlohmann::json{{"schema", "other"}}), kj::error);
}

TEST(Job, SeedsAreDistinctAndTheHeldOutSeedDependsOnTheSecret) {
  std::set<std::uint64_t> seeds;
  for (int i = 0; i < 5; ++i) seeds.insert(eval::trial_seed(42, i));
  EXPECT_EQ(seeds.size(), 5u);
  EXPECT_NE(eval::held_out_seed(1, 42), eval::held_out_seed(2, 42));
  EXPECT_EQ(eval::candidate_kind_for("k.cu"), eval::candidate_kind::native);
  EXPECT_EQ(eval::candidate_kind_for("k.py"), eval::candidate_kind::python);
  EXPECT_THROW((void)eval::candidate_kind_for("k.txt"), kj::error);
}

TEST(Protocol, ALineOfMillionsOfValuesIsMalformedAndNotHeldWhole) {
  // A flat array of 50 million numbers, parsed whole, took 19 times its bytes in kjudge eval.
  eval_result r;
  eval::fold_state st;
  std::string flood = "[";
  for (std::size_t i = 0; i < eval::k_max_event_values + 10; ++i) flood += "0,";
  flood.back() = ']';
  eval::apply_event_line(r, flood, st);
  EXPECT_EQ(st.malformed_lines, 1u);
  // As large as the worker's largest event (a --precise timing event): taken.
  std::string big = R"({"phase":"timing","samples":[)";
  for (std::size_t i = 0; i < 1'200'000; ++i) big += "1.5,";
  big.back() = ']';
  big += "}";
  eval::apply_event_line(r, big, st);
  EXPECT_EQ(st.malformed_lines, 1u);
  EXPECT_EQ(st.last_phase, "timing");
}

TEST(Protocol, FoldsEventsAndSurvivesGarbage) {
  eval_result r;
  eval::fold_state st;
  eval::apply_event_line(r, R"({"phase":"trial nominal 0 candidate"})", st);
  eval::apply_event_line(r, "not json at all", st);
  eval::apply_event_line(r, R"({"trial":{"kind":"nominal","index":0,"passed":true,"outputs":[
      {"index":0,"passed":true,"expected_shape":[2],"actual_shape":[2],"expected_dtype":"float32",
       "actual_dtype":"float32","numel":2,"max_abs_err":0.5,"mean_abs_err":0.25}]}})",
                         st);
  eval::apply_event_line(r, R"({"trial":{"kind":"held_out","passed":false}})", st);
  eval::apply_event_line(r, R"({"flag":{"code":"x","severity":"warning","message":"m"}})", st);
  EXPECT_EQ(st.last_phase, "trial nominal 0 candidate");
  EXPECT_EQ(st.malformed_lines, 1u);
  EXPECT_FALSE(st.final_seen);
  eval::apply_event_line(r, R"({"final":{"status":"incorrect","message":"held-out failed"}})", st);
  EXPECT_TRUE(st.final_seen);
  EXPECT_EQ(r.status, eval_status::incorrect);
  eval::summarize_correctness(r);
  EXPECT_EQ(r.correctness.trials, 1);
  EXPECT_EQ(r.correctness.trials_passed, 1);
  EXPECT_TRUE(r.correctness.held_out_ran);
  EXPECT_FALSE(r.correctness.held_out_passed);
  EXPECT_DOUBLE_EQ(r.correctness.precision.max_abs_err, 0.5);
  EXPECT_TRUE(r.has_flag("x"));
  // After the final event nothing is applied, but every line is counted.
  eval::apply_event_line(r, R"({"trial":{"kind":"nominal","index":1,"passed":true}})", st);
  eval::apply_event_line(r, R"({"final":{"status":"correct","message":""}})", st);
  EXPECT_EQ(st.lines_after_final, 2u);
  EXPECT_EQ(r.status, eval_status::incorrect);
  EXPECT_EQ(r.trials.size(), 2u);
}

TEST(Protocol, AnEventTheWorkerSendsOnceIsNotedWhenItComesAgain) {
  // The fold takes a later event's values over an earlier one's: a candidate that wrote a
  // timing event into the channel after the worker's had its own figures in the result.
  eval_result r;
  eval::fold_state st;
  eval::apply_event_line(r, R"({"weight_copy":"by_name"})", st);
  eval::apply_event_line(r, R"({"launches":{"reference":1}})", st);
  eval::apply_event_line(r, R"({"phase":"timing"})", st);
  eval::apply_event_line(r, R"({"phase":"timing"})", st);  // phases repeat
  EXPECT_TRUE(st.repeated_events.empty());
  eval::apply_event_line(r, R"({"launches":{"reference":2}})", st);
  eval::apply_event_line(r, R"({"launches":{"reference":3}})", st);
  EXPECT_EQ(st.repeated_events, std::vector<std::string>{"launches"});
  // A repeat that does not parse is still a repeat.
  eval::apply_event_line(r, R"({"weight_copy":7})", st);
  EXPECT_EQ(st.repeated_events, (std::vector<std::string>{"launches", "weight_copy"}));
  EXPECT_EQ(st.malformed_lines, 1u);
}

TEST(Protocol, DeepNestingIsMalformedAndFlagsAreCapped) {
  eval_result r;
  eval::fold_state st;
  // 100 000 levels: copying such a value into the result recursed that deep and crashed kjudge.
  std::string deep =
      R"({"launches":)" + std::string(100'000, '[') + std::string(100'000, ']') + "}";
  eval::apply_event_line(r, deep, st);
  EXPECT_EQ(st.malformed_lines, 1u);
  EXPECT_TRUE(r.launches.is_null());
  std::string ok = R"({"launches":)" + std::string(20, '[') + std::string(20, ']') + "}";
  eval::apply_event_line(r, ok, st);
  EXPECT_EQ(st.malformed_lines, 1u);
  EXPECT_FALSE(r.launches.is_null());
  // Distinct flags beyond the cap are counted, not kept; a flag already raised is not new.
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 50'000; ++i)
    eval::apply_event_line(
        r, fmt::format(R"({{"flag":{{"code":"c{}","severity":"warning","message":"m"}}}})", i), st);
  eval::apply_event_line(r, R"({"flag":{"code":"c3","severity":"warning","message":"m"}})", st);
  EXPECT_EQ(r.flags.size(), eval::k_max_event_flags);
  EXPECT_EQ(st.flags_dropped, 50'000u - eval::k_max_event_flags);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST(Protocol, ThePrecisionMeansWeighEachOutputByTheElementsItsMeansAreOver) {
  // An output of NaN has no finite pair and a mean error of 0: weighed by its 1000 elements it
  // took the summary's mean from 0.2 to 0.002.
  eval_result r;
  eval::fold_state st;
  eval::apply_event_line(r, R"({"trial":{"kind":"nominal","index":0,"passed":false,"outputs":[
      {"index":0,"passed":false,"expected_shape":[10],"actual_shape":[10],
       "expected_dtype":"float32","actual_dtype":"float32","numel":10,"max_abs_err":0.4,
       "mean_abs_err":0.2,"mean_rel_err":0.1,"abs_err_count":10,"rel_err_count":5},
      {"index":1,"passed":false,"expected_shape":[1000],"actual_shape":[1000],
       "expected_dtype":"float32","actual_dtype":"float32","numel":1000,"nan_count":1000,
       "abs_err_count":0,"rel_err_count":0}]}})",
                         st);
  eval::summarize_correctness(r);
  EXPECT_DOUBLE_EQ(r.correctness.precision.mean_abs_err, 0.2);
  EXPECT_DOUBLE_EQ(r.correctness.precision.mean_rel_err, 0.1);
  EXPECT_DOUBLE_EQ(r.correctness.precision.max_abs_err, 0.4);
}

TEST(Protocol, AFloodOfPhasesAndTrialsIsCountedNotKept) {
  // Well-formed phase lines had no cap: 100 MiB of {"phase":"p"} grew kjudge to 3.3 GB and the
  // result to 7.5 million phases.
  eval_result r;
  eval::fold_state st;
  for (int i = 0; i < 20'000; ++i) eval::apply_event_line(r, R"({"phase":"p","t_s":1})", st);
  for (int i = 0; i < 2'000; ++i)
    eval::apply_event_line(r, R"({"trial":{"kind":"nominal","index":0,"passed":true}})", st);
  EXPECT_EQ(r.worker.phases.size(), eval::k_max_event_phases);
  EXPECT_EQ(r.trials.size(), eval::k_max_event_trials);
  EXPECT_EQ(st.events_dropped,
            20'000u - eval::k_max_event_phases + 2'000u - eval::k_max_event_trials);
  EXPECT_EQ(st.last_phase, "p");
}

TEST(Protocol, OnlyATrialsCandidatePhaseCountsAsACandidateForward) {
  eval_result r;
  eval::fold_state st;
  eval::apply_event_line(r, R"({"phase":"build_models candidate"})", st);
  eval::apply_event_line(r, R"({"phase":"trial nominal 0 reference"})", st);
  EXPECT_FALSE(st.candidate_forward_seen);
  eval::apply_event_line(r, R"({"phase":"trial nominal 0 candidate"})", st);
  EXPECT_TRUE(st.candidate_forward_seen);
}

TEST(Protocol, GpuLockWaitIsTheReportedOne) {
  eval_result r;
  eval::fold_state st;
  eval::apply_event_line(r, R"({"phase":"wait_gpu_lock","t_s":3.0})", st);
  EXPECT_FALSE(st.gpu_lock_seen);
  eval::apply_event_line(r, R"({"gpu_lock":{"waited_s":2.5}})", st);
  EXPECT_TRUE(st.gpu_lock_seen);
  EXPECT_DOUBLE_EQ(r.worker.gpu_lock_wait_s, 2.5);
  EXPECT_EQ(st.malformed_lines, 0u);
  eval::apply_event_line(r, R"({"gpu_lock":{}})", st);  // no wait in it: malformed
  EXPECT_EQ(st.malformed_lines, 1u);
}

TEST(Result, RoundTripsWithUnitsInNamesAndRejectsOtherSchemas) {
  eval_result r;
  r.status = eval_status::correct;
  measure::comparison c;
  c.reference.device.valid = true;
  c.reference.device.summary.median = 28.7;
  c.reference.device.samples_us = {28.0, 28.7, 29.0};
  c.reference.device.samples_set = {0, 1, 0};
  c.reference.device.set_medians_us = {28.5, 28.7, std::numeric_limits<double>::quiet_NaN()};
  c.speedups.push_back({measure::figure_kind::device, true, {6.9, 6.8, 7.0, 0.95, 2000, true}});
  r.timing = c;
  const nlohmann::json j = r;
  EXPECT_EQ(j["schema"], "kjudge.eval/1");
  EXPECT_EQ(j["exit_code"], 0);
  EXPECT_DOUBLE_EQ(j["timing"]["reference"]["device"]["median_us"].get<double>(), 28.7);
  EXPECT_EQ(j["timing"]["speedups"][0]["kind"], "device");
  const auto back = j.get<eval_result>();
  ASSERT_TRUE(back.timing);
  EXPECT_DOUBLE_EQ(back.timing->speedups[0].ci.ratio, 6.9);
  EXPECT_EQ(back.timing->reference.device.samples_us.size(), 3u);
  // Sets: the set of each sample, each set's median (null in the written document where a set
  // kept no sample), and how the speedup's interval was resampled.
  const auto written = nlohmann::json::parse(j.dump());
  const auto& dev = written["timing"]["reference"]["device"];
  EXPECT_EQ(dev["samples_set"], nlohmann::json({0, 1, 0}));
  EXPECT_TRUE(dev["set_medians_us"][2].is_null());
  EXPECT_EQ(written["timing"]["speedups"][0]["resampled"], "input_sets");
  const auto read = written.get<eval_result>();
  ASSERT_TRUE(read.timing);
  EXPECT_EQ(read.timing->reference.device.samples_set, (std::vector<std::uint32_t>{0, 1, 0}));
  ASSERT_EQ(read.timing->reference.device.set_medians_us.size(), 3u);
  EXPECT_DOUBLE_EQ(read.timing->reference.device.set_medians_us[1], 28.7);
  EXPECT_TRUE(std::isnan(read.timing->reference.device.set_medians_us[2]));
  EXPECT_TRUE(read.timing->speedups[0].ci.by_group);
  // A document from before sets were recorded (or with nulls) reads as no sets, by sample.
  nlohmann::json old = written;
  old["timing"]["reference"]["device"].erase("samples_set");
  old["timing"]["reference"]["device"].erase("set_medians_us");
  old["timing"]["speedups"][0]["resampled"] = nullptr;
  const auto older = old.get<eval_result>();
  EXPECT_TRUE(older.timing->reference.device.samples_set.empty());
  EXPECT_TRUE(older.timing->reference.device.set_medians_us.empty());
  EXPECT_FALSE(older.timing->speedups[0].ci.by_group);
  nlohmann::json bad = j;
  bad["schema"] = "kjudge.eval/0";
  EXPECT_THROW((void)bad.get<eval_result>(), kj::error);
}

TEST(Result, TheDriversReleaseIsNullWhereNvmlDidNotSayIt) {
  // The CUDA driver API version ("13.0") is the same on every recent driver; the release
  // ("580.159.04") tells two machines apart, and is null, not "", where NVML was not available.
  eval_result r;
  r.prov.gpu = gpu_info{};
  r.prov.gpu->driver_version = "13.0";
  r.prov.gpu->driver_release = "580.159.04";
  const auto written = nlohmann::json::parse(nlohmann::json(r).dump());
  EXPECT_EQ(written["provenance"]["gpu"]["driver_release"], "580.159.04");
  EXPECT_EQ(written.get<eval_result>().prov.gpu->driver_release, "580.159.04");
  r.prov.gpu->driver_release.reset();
  const auto without = nlohmann::json::parse(nlohmann::json(r).dump());
  EXPECT_TRUE(without["provenance"]["gpu"]["driver_release"].is_null());
  EXPECT_FALSE(without.get<eval_result>().prov.gpu->driver_release.has_value());
}

TEST(Cli, EveryOptionOfEveryCommandIsDocumented) {
  CLI::App app;
  app::eval_args eval_args, profile_args;
  app::specs_args specs_args;
  app::roofline_args roofline_args;
  app::cache_args cache_args;
  struct command {
    CLI::App* parser;
    std::string doc;  // the sections of docs/cli.md where its options are described
    int at_least;     // options expected, so that a parser that registers none fails
  };
  const command commands[] = {
      {app::add_eval_command(app, eval_args), app::help_section("eval"), 15},
      // profile takes eval's options, described once under eval, plus its own.
      {app::add_profile_command(app, profile_args),
       app::help_section("profile") + app::help_section("eval"), 20},
      {app::add_specs_command(app, specs_args), app::help_section("specs"), 2},
      {app::add_roofline_command(app, roofline_args), app::help_section("roofline"), 5},
      {app::add_cache_command(app, cache_args), app::help_section("cache"), 7}};
  // `--name` as written in the docs: followed by the closing backtick, a value or a comma, so
  // that --ncu does not pass on `--ncu-cache-control` alone.
  const auto documented = [](const std::string& doc, const std::string& flag) {
    for (auto at = doc.find("`" + flag); at != std::string::npos; at = doc.find("`" + flag, at + 1))
      if (const auto next = at + 1 + flag.size();
          next < doc.size() && std::string_view("` =,[").find(doc[next]) != std::string_view::npos)
        return true;
    return false;
  };
  for (const auto& c : commands) {
    ASSERT_FALSE(c.doc.empty()) << c.parser->get_name();
    int checked = 0;
    for (const auto* opt : c.parser->get_options()) {
      std::vector<std::string> flags;
      for (const auto& name : opt->get_lnames()) flags.push_back("--" + name);
      for (const auto& name : opt->get_snames()) flags.push_back("-" + name);
      for (const auto& flag : flags) {
        EXPECT_TRUE(documented(c.doc, flag))
            << c.parser->get_name() << " " << flag << " is not in docs/cli.md";
        ++checked;
      }
    }
    EXPECT_GE(checked, c.at_least) << c.parser->get_name();
  }
  EXPECT_FALSE(app::help_section("").empty());
  EXPECT_TRUE(app::help_section("no-such-command").empty());
}

}  // namespace
}  // namespace kj

namespace kj {
namespace {

measure::figure make_figure(measure::figure_kind kind, std::string method, double median_us) {
  measure::figure f;
  f.kind = kind;
  f.method = std::move(method);
  f.cold = true;
  f.valid = true;
  f.samples_us = {median_us, median_us, median_us};
  f.summary = stats::summarize(f.samples_us);
  return f;
}

measure::comparison healthy_comparison() {
  measure::comparison c;
  for (auto* s : {&c.reference, &c.candidate}) {
    s->device = make_figure(measure::figure_kind::device, "blocking-kernel+events", 40);
    s->stream = make_figure(measure::figure_kind::stream, "events-as-issued", 60);
    s->host_wall = make_figure(measure::figure_kind::host_wall, "host-steady-clock+sync", 80);
  }
  c.reference.name = "reference";
  c.candidate.name = "candidate";
  for (auto k : {measure::figure_kind::device, measure::figure_kind::stream,
                 measure::figure_kind::host_wall})
    c.speedups.push_back({k, true, {1.0, 0.9, 1.1, 0.95, 2000}});
  return c;
}

cuda::device_properties h200() {
  cuda::device_properties d;
  d.name = "NVIDIA H200";
  d.memory_clock_khz = 3201000;
  d.memory_bus_width_bits = 5120;
  return d;
}

bool has(const std::vector<flag>& flags, const std::string& code) {
  for (const auto& f : flags)
    if (f.code == code) return true;
  return false;
}

TEST(TimingChecks, HealthyFiguresPassUntouched) {
  auto c = healthy_comparison();
  const auto d = h200();
  const auto flags = eval::check_timing(c, &d, 1 << 20);
  EXPECT_TRUE(flags.empty()) << flags.front().code;
  EXPECT_TRUE(c.candidate.device.valid);
  for (const auto& s : c.speedups) EXPECT_TRUE(s.valid);
}

TEST(TimingChecks, ImpossiblyFastFigureIsWithheldNotPrinted) {
  auto c = healthy_comparison();
  c.candidate.device = make_figure(measure::figure_kind::device, "blocking-kernel+events", 0.04);
  const auto flags = eval::check_timing(c, nullptr, 0);
  EXPECT_TRUE(has(flags, "impossible_time"));
  EXPECT_FALSE(c.candidate.device.valid);
  EXPECT_NE(c.candidate.device.note.find("impossible_time"), std::string::npos);
  EXPECT_FALSE(c.speedups[0].valid) << "a speedup needs both of its figures";
  EXPECT_TRUE(c.speedups[1].valid);
}

TEST(TimingChecks, FasterThanItsBytesAllowIsFlagged) {
  auto c = healthy_comparison();
  c.reference.device = make_figure(measure::figure_kind::device, "blocking-kernel+events", 100);
  c.reference.stream = make_figure(measure::figure_kind::stream, "events-as-issued", 110);
  c.reference.host_wall =
      make_figure(measure::figure_kind::host_wall, "host-steady-clock+sync", 130);
  const auto d = h200();
  // 384 MiB at the H200's 4.8 TB/s datasheet peak needs about 84 us; 40 us is impossible.
  const auto flags = eval::check_timing(c, &d, 384ull << 20);
  EXPECT_TRUE(has(flags, "faster_than_memory"));
  EXPECT_FALSE(has(flags, "memory_floor_not_applied"));
  EXPECT_FALSE(c.candidate.device.valid);
  EXPECT_NE(c.candidate.device.note.find("candidate device median 40.00 us"), std::string::npos)
      << c.candidate.device.note;
  EXPECT_NEAR(eval::dram_peak_bytes_per_s(d), 4.8e12, 1e9) << "datasheet beats the derived 4.1";
  // The stream figure (60 us) holds the GPU time too and is as impossible; the host wall's 80
  // us is not under 0.9 x 84.
  EXPECT_FALSE(c.candidate.stream.valid);
  EXPECT_NE(c.candidate.stream.note.find("candidate stream median 60.00 us"), std::string::npos)
      << c.candidate.stream.note;
  EXPECT_TRUE(c.candidate.host_wall.valid);
  EXPECT_FALSE(c.speedups[0].valid);
  EXPECT_FALSE(c.speedups[1].valid);
  EXPECT_TRUE(c.speedups[2].valid);

  // Without a device figure (its forward waits for the host) the stream figure is still checked.
  auto synced = healthy_comparison();
  synced.reference = c.reference;
  synced.candidate.device.valid = false;
  const auto synced_flags = eval::check_timing(synced, &d, 384ull << 20);
  EXPECT_TRUE(has(synced_flags, "faster_than_memory"));
  EXPECT_FALSE(synced.candidate.stream.valid);
  // Warm figures are not held to a DRAM floor.
  auto warm = healthy_comparison();
  warm.reference = c.reference;
  for (auto* f : {&warm.candidate.device, &warm.candidate.stream, &warm.candidate.host_wall})
    f->cold = false;
  for (auto* f : {&warm.reference.device, &warm.reference.stream, &warm.reference.host_wall})
    f->cold = false;
  EXPECT_FALSE(has(eval::check_timing(warm, &d, 384ull << 20), "faster_than_memory"));
}

TEST(TimingChecks, AReferenceUnderTheMemoryFloorShowsTheProblemReadsLessAndLiftsIt) {
  // The floor counts every input byte; a problem that reads a slice of its input runs under it
  // in its own reference (40 us against 84), and an honest candidate as fast is not withheld.
  auto c = healthy_comparison();
  const auto d = h200();
  const auto flags = eval::check_timing(c, &d, 384ull << 20);
  EXPECT_FALSE(has(flags, "faster_than_memory"));
  ASSERT_TRUE(has(flags, "memory_floor_not_applied"));
  EXPECT_EQ(std::count_if(flags.begin(), flags.end(),
                          [](const flag& f) { return f.code == "memory_floor_not_applied"; }),
            1);
  EXPECT_TRUE(c.candidate.device.valid);
  EXPECT_TRUE(c.candidate.stream.valid);
  EXPECT_TRUE(c.speedups[0].valid);
  // Without a reference device figure (its forward waits for the host) its stream figure shows
  // it: 60 us is under the floor as well.
  auto alone = healthy_comparison();
  alone.reference.device.valid = false;
  const auto alone_flags = eval::check_timing(alone, &d, 384ull << 20);
  EXPECT_FALSE(has(alone_flags, "faster_than_memory"));
  EXPECT_TRUE(has(alone_flags, "memory_floor_not_applied"));
  // With no reference figure under the floor, it holds.
  alone.reference.stream = make_figure(measure::figure_kind::stream, "events-as-issued", 110);
  alone.reference.host_wall =
      make_figure(measure::figure_kind::host_wall, "host-steady-clock+sync", 130);
  EXPECT_TRUE(has(eval::check_timing(alone, &d, 384ull << 20), "faster_than_memory"));
}

TEST(TimingChecks, AFigureWithEverySampleThrottledIsAWarning) {
  auto c = healthy_comparison();
  c.candidate.stream.discarded_throttled = 3;  // some kept: information
  c.candidate.device.samples_us.clear();
  c.candidate.device.summary = stats::summarize(c.candidate.device.samples_us);
  c.candidate.device.valid = false;
  c.candidate.device.note = std::string(measure::k_all_throttled_note);
  c.candidate.device.discarded_throttled = 40;  // none kept: no figure
  const auto flags = eval::check_timing(c, nullptr, 0);
  int info = 0, warning = 0;
  for (const auto& f : flags) {
    if (f.code != "throttled_samples") continue;
    (f.severity == "warning" ? warning : info) += 1;
    if (f.severity == "warning") {
      EXPECT_NE(f.message.find("every one taken: no figure"), std::string::npos) << f.message;
    }
  }
  EXPECT_EQ(info, 1);
  EXPECT_EQ(warning, 1);
  EXPECT_FALSE(c.speedups[0].valid);
}

TEST(TimingChecks, SamplesThatWaitedForACpuAreSaidOnceAFigureAndWarnedOfWhereMostWent) {
  auto c = healthy_comparison();
  // A few of many: information, with the longest discarded wait and the kept samples' longest.
  c.candidate.host_wall.discarded_cpu_wait = 2;
  c.candidate.host_wall.discarded_cpu_wait_max_us = 1723.8;
  c.candidate.host_wall.cpu_wait_max_us = 12.0;
  c.candidate.host_wall.cpu_wait_share_pct = 0.3;
  // Most of them (the figure stands on the rest): a warning.
  c.reference.host_wall.discarded_cpu_wait = 300;
  c.reference.host_wall.discarded_cpu_wait_max_us = 8000;
  c.reference.host_wall.cpu_wait_max_us = 40.0;
  auto flags = eval::check_timing(c, nullptr, 0);
  std::vector<flag> waits;
  for (const auto& f : flags)
    if (f.code == "cpu_wait_samples") waits.push_back(f);
  ASSERT_EQ(waits.size(), 2u);
  EXPECT_EQ(waits[0].severity, "warning") << waits[0].message;  // the reference's, first
  EXPECT_NE(waits[0].message.find("reference host_wall: 300 of "), std::string::npos)
      << waits[0].message;
  EXPECT_NE(waits[0].message.find("up to 8.0 ms"), std::string::npos) << waits[0].message;
  EXPECT_EQ(waits[1].severity, "info") << waits[1].message;
  EXPECT_NE(waits[1].message.find("up to 1.7 ms"), std::string::npos) << waits[1].message;
  EXPECT_NE(waits[1].message.find("waited for a CPU for 0.3% of their time (up to 12 us in one)"),
            std::string::npos)
      << waits[1].message;
  // None discarded, but the kept samples waited a tenth of their time: a warning that the figure
  // reads the machine's load; a twentieth: information.
  auto loaded = healthy_comparison();
  loaded.reference.host_wall.cpu_wait_max_us = 900;
  loaded.reference.host_wall.cpu_wait_share_pct = 12.5;
  loaded.candidate.host_wall.cpu_wait_max_us = 300;
  loaded.candidate.host_wall.cpu_wait_share_pct = 6.0;
  const auto loaded_flags = eval::check_timing(loaded, nullptr, 0);
  std::vector<flag> shares;
  for (const auto& f : loaded_flags)
    if (f.code == "cpu_wait_samples") shares.push_back(f);
  ASSERT_EQ(shares.size(), 2u);
  EXPECT_EQ(shares[0].severity, "warning") << shares[0].message;
  EXPECT_NE(shares[0].message.find("12.5% of their time"), std::string::npos) << shares[0].message;
  EXPECT_NE(shares[0].message.find("reads the machine's load"), std::string::npos)
      << shares[0].message;
  EXPECT_EQ(shares[1].severity, "info") << shares[1].message;
  EXPECT_EQ(shares[1].message.find("discarded"), std::string::npos) << shares[1].message;
  // Under 1% of a figure's samples: no flag (the result's counts keep them).
  auto few = healthy_comparison();
  few.candidate.host_wall.samples_us.assign(300, 80.0);
  few.candidate.host_wall.summary = stats::summarize(few.candidate.host_wall.samples_us);
  few.candidate.host_wall.discarded_cpu_wait = 2;
  few.candidate.host_wall.discarded_cpu_wait_max_us = 900;
  flags = eval::check_timing(few, nullptr, 0);
  EXPECT_TRUE(std::none_of(flags.begin(), flags.end(),
                           [](const flag& f) { return f.code == "cpu_wait_samples"; }));
  few.candidate.host_wall.discarded_cpu_wait = 4;  // 4 of 304: said
  flags = eval::check_timing(few, nullptr, 0);
  EXPECT_TRUE(std::any_of(flags.begin(), flags.end(),
                          [](const flag& f) { return f.code == "cpu_wait_samples"; }));
  // Every sample gone: no figure, a warning that says so.
  auto none = healthy_comparison();
  none.reference.host_wall.samples_us.clear();
  none.reference.host_wall.summary = stats::summarize(none.reference.host_wall.samples_us);
  none.reference.host_wall.valid = false;
  none.reference.host_wall.note = std::string(measure::k_all_cpu_wait_note);
  none.reference.host_wall.discarded_cpu_wait = 44;
  none.reference.host_wall.discarded_cpu_wait_max_us = 9275;
  flags = eval::check_timing(none, nullptr, 0);
  const auto it = std::find_if(flags.begin(), flags.end(),
                               [](const flag& f) { return f.code == "cpu_wait_samples"; });
  ASSERT_NE(it, flags.end());
  EXPECT_EQ(it->severity, "warning");
  EXPECT_NE(it->message.find("44 of 44 samples discarded (none kept: no figure)"),
            std::string::npos)
      << it->message;
  EXPECT_FALSE(none.speedups.back().valid);
}

TEST(TimingChecks, EventAboveWallAndMethodMismatch) {
  auto c = healthy_comparison();
  c.reference.stream = make_figure(measure::figure_kind::stream, "events-as-issued", 200);
  c.candidate.host_wall.method = "something-else";
  const auto flags = eval::check_timing(c, nullptr, 0);
  EXPECT_TRUE(has(flags, "event_exceeds_wall"));
  EXPECT_FALSE(c.reference.stream.valid);
  EXPECT_TRUE(has(flags, "method_mismatch"));
  EXPECT_FALSE(c.reference.host_wall.valid);
  EXPECT_FALSE(c.candidate.host_wall.valid);
}

}  // namespace
}  // namespace kj

namespace kj::eval {
namespace {

TEST(ForwardRecord, KernelsInStartOrderUntimedLastWithLaunchShape) {
  profile::activity_records r;
  profile::kernel_record late;
  late.name = "_Z4latev";
  late.demangled_name = "late()";
  late.start_ns = 9'000;
  late.end_ns = 12'000;
  late.grid = {4, 2, 1};
  late.block = {128, 1, 1};
  profile::kernel_record untimed;
  untimed.name = "untimed";
  profile::kernel_record early;
  early.name = "early";
  early.start_ns = 1'000;
  early.end_ns = 3'000;
  r.kernels = {late, untimed, early};
  const auto k = timed_kernels(r);
  ASSERT_EQ(k.size(), 3u);
  EXPECT_EQ(k[0].name, "early");
  EXPECT_EQ(k[1].name, "late()");
  EXPECT_DOUBLE_EQ(k[1].duration_ns, 3'000.0);
  EXPECT_EQ(k[1].grid.count(), 8u);
  EXPECT_EQ(k[1].block.x, 128u);
  EXPECT_EQ(k[2].name, "untimed");
  EXPECT_DOUBLE_EQ(k[2].duration_ns, 0.0);
}

TEST(ForwardRecord, TheBlockingKernelIsNotCountedAsALaunch) {
  profile::activity_records r;
  profile::kernel_record blocking;
  blocking.name = "_ZN2kj7measure6detail12_GLOBAL__N_115blocking_kernelEPVKiPViy";
  blocking.demangled_name =
      "kj::measure::detail::(anonymous namespace)::blocking_kernel(int const volatile*, int "
      "volatile*, unsigned long long)";
  blocking.correlation_id = 7;
  blocking.start_ns = 1'000;
  profile::kernel_record user;
  user.name = user.demangled_name = "void my_blocking_kernel(float*)";  // a candidate's own
  user.correlation_id = 9;
  user.start_ns = 30'000;
  r.kernels = {user, blocking};
  drop_blocking_kernel(r);
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].name, "void my_blocking_kernel(float*)");
}

TEST(ForwardRecord, ACandidateKernelNamedLikeTheBlockingKernelStillCounts) {
  // Only kjudge's own launch, the recording's first, is dropped: a candidate cannot hide a kernel
  // by giving it the blocking kernel's name.
  profile::kernel_record ours;
  ours.name = "_ZN2kj7measure6detail12_GLOBAL__N_115blocking_kernelEPVKiPViy";
  ours.demangled_name =
      "kj::measure::detail::(anonymous namespace)::blocking_kernel(int const volatile*, int "
      "volatile*, unsigned long long)";
  profile::kernel_record impostor = ours;
  ours.correlation_id = 11;
  ours.start_ns = 5'000;
  impostor.correlation_id = 14;
  impostor.start_ns = 40'000;
  profile::activity_records r;
  r.kernels = {impostor, ours};
  drop_blocking_kernel(r);
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].correlation_id, 14u);

  // Without correlation ids, the earlier start decides.
  ours.correlation_id = impostor.correlation_id = 0;
  r.kernels = {impostor, ours};
  drop_blocking_kernel(r);
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].start_ns, 40'000u);
}

}  // namespace
}  // namespace kj::eval

namespace kj::eval {
namespace {

TEST(NcuRun, FailureReasonsFromNcuLogs) {
  // Lines as ncu prints them when counters are restricted or the profiler cannot start.
  EXPECT_NE(ncu_failure_reason("==PROF== Connected to process 12\n==ERROR== ERR_NVGPUCTRPERM - The "
                               "user does not have permission to access NVIDIA GPU Performance "
                               "Counters on the target device 0.\n")
                .find("performance counters"),
            std::string::npos);
  EXPECT_NE(ncu_failure_reason("==ERROR== Failed to initialize the profiler: LibraryNotLoaded\n")
                .find("could not initialise"),
            std::string::npos);
  EXPECT_NE(ncu_failure_reason("==ERROR== Failed to find metric sm__foo.sum\n").find("metric"),
            std::string::npos);
  EXPECT_EQ(ncu_failure_reason("==PROF== Disconnected from process 12\n\"ID\",\"Process ID\"\n"),
            "");
  // The retry on another architecture keys on this, not on the sentence above.
  EXPECT_TRUE(ncu_unknown_metric("==ERROR== Failed to find metric sm__foo.sum\n"));
  EXPECT_TRUE(ncu_unknown_metric("==ERROR== Failed to find metrics: a__x.sum, b__y.sum\n"));
  EXPECT_FALSE(ncu_unknown_metric("==ERROR== ERR_NVGPUCTRPERM - no permission\n"));
}

TEST(NcuRun, MissingNcuIsReportedNotThrown) {
  job j;
  j.problem = "p.py";
  j.candidate = "c.py";
  counter_options o;
  o.ncu = "";
  ::setenv("KJUDGE_NCU", "/nonexistent/ncu", 1);
  const auto r = collect_counters(j, o);
  ::unsetenv("KJUDGE_NCU");
  EXPECT_FALSE(r.source.collected);
  EXPECT_NE(r.source.unavailable_reason.find("not found"), std::string::npos)
      << r.source.unavailable_reason;
}

TEST(NcuRun, ExtraArgsAreSplitOnWhitespace) {
  ::unsetenv("KJUDGE_NCU_ARGS");
  EXPECT_TRUE(ncu_extra_args().empty());
  ::setenv("KJUDGE_NCU_ARGS", " \t ", 1);
  EXPECT_TRUE(ncu_extra_args().empty());
  ::setenv("KJUDGE_NCU_ARGS", "  --replay-mode\tapplication \n--print-summary  none ", 1);
  EXPECT_EQ(ncu_extra_args(),
            (std::vector<std::string>{"--replay-mode", "application", "--print-summary", "none"}));
  ::unsetenv("KJUDGE_NCU_ARGS");
}

TEST(NcuRun, ExtraArgsFollowKjudgesOptions) {
  const std::vector<std::string> metrics = {"gpu__time_duration.sum", "dram__bytes.sum"};
  const auto plain = ncu_wrapper("/x/ncu", metrics, "/tmp/log.csv", "none", {});
  ASSERT_GE(plain.size(), 4u);
  EXPECT_EQ(plain.front(), "/x/ncu");
  EXPECT_EQ(plain[plain.size() - 2], "--log-file");
  EXPECT_EQ(plain.back(), "/tmp/log.csv");
  const auto at = std::find(plain.begin(), plain.end(), "--cache-control");
  ASSERT_NE(at, plain.end());
  EXPECT_EQ(*(at + 1), "none");
  EXPECT_NE(std::find(plain.begin(), plain.end(), "gpu__time_duration.sum,dram__bytes.sum"),
            plain.end());

  const std::vector<std::string> extra = {"--replay-mode", "application"};
  const auto with = ncu_wrapper("/x/ncu", metrics, "/tmp/log.csv", "none", extra);
  ASSERT_EQ(with.size(), plain.size() + extra.size());
  EXPECT_TRUE(std::equal(plain.begin(), plain.end(), with.begin()));
  EXPECT_TRUE(std::equal(extra.begin(), extra.end(), with.end() - 2));
}

/** A stand-in for ncu: answers --version, otherwise records its argv (one per line) next to
 *  itself and fails the way ncu does, without running the worker. */
class FakeNcu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kj-fake-ncu-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    m_dir = tmpl;
    m_ncu = m_dir / "ncu";
    std::ofstream(m_ncu) << "#!/bin/sh\n"
                            "if [ \"$1\" = --version ]; then echo 'Version 9.9.9.9 (build 1)'; "
                            "exit 0; fi\n"
                            "printf '%s\\n' \"$@\" > \"$(dirname \"$0\")/argv.txt\"\n"
                            "echo '==ERROR== fake ncu refused'\n"
                            "exit 1\n";
    std::filesystem::permissions(m_ncu, std::filesystem::perms::owner_all);
  }
  void TearDown() override {
    ::unsetenv("KJUDGE_NCU_ARGS");
    std::error_code ec;
    std::filesystem::remove_all(m_dir, ec);
  }
  /** collect_counters against the fake; returns what it received as its argv. */
  std::vector<std::string> run(counter_run& r) {
    job j;
    j.problem = "p.py";
    j.candidate = "c.py";
    counter_options o;
    o.ncu = m_ncu;
    o.work_dir = m_dir;
    r = collect_counters(j, o);
    std::ifstream in(m_dir / "argv.txt");
    std::vector<std::string> argv;
    for (std::string line; std::getline(in, line);) argv.push_back(line);
    return argv;
  }
  std::filesystem::path m_dir, m_ncu;
};

TEST_F(FakeNcu, ExtraArgsReachNcuBeforeTheWorkerAndAreRecorded) {
  ::setenv("KJUDGE_NCU_ARGS", "--replay-mode application", 1);
  counter_run r;
  const auto argv = run(r);
  EXPECT_EQ(r.source.tool, "ncu 9.9.9.9 with KJUDGE_NCU_ARGS: --replay-mode application");
  EXPECT_FALSE(r.source.collected);
  EXPECT_NE(r.source.unavailable_reason.find("fake ncu refused"), std::string::npos)
      << r.source.unavailable_reason;
  // ncu's options, then the extra ones, then the worker's command line (`<exe> worker`).
  ASSERT_GE(argv.size(), 4u);
  EXPECT_EQ(argv.back(), "worker");
  EXPECT_EQ(argv[argv.size() - 4], "--replay-mode");
  EXPECT_EQ(argv[argv.size() - 3], "application");
}

TEST_F(FakeNcu, WithoutExtraArgsTheToolIsJustNcu) {
  ::unsetenv("KJUDGE_NCU_ARGS");
  counter_run r;
  const auto argv = run(r);
  EXPECT_EQ(r.source.tool, "ncu 9.9.9.9");
  ASSERT_GE(argv.size(), 4u);
  EXPECT_EQ(argv[argv.size() - 4], "--log-file");
  EXPECT_EQ(argv.back(), "worker");
}

}  // namespace
}  // namespace kj::eval
