// Units of the evaluation layer that need no Python or GPU: the job round trip, seeds, the event
// fold, the result schema, jitter, and the CLI's documentation.

#include <gtest/gtest.h>

#include <set>

#include <kjudge/core/error.hpp>
#include <kjudge/core/jitter.hpp>
#include <kjudge/core/result.hpp>
#include <kjudge/eval/job.hpp>
#include <kjudge/eval/protocol.hpp>

#include "commands.hpp"
#include "help.hpp"

namespace kj {
namespace {

TEST(Jitter, MemoisedPerSizeAndWithinFifteenPercent) {
  jitter_table t(1234);
  const auto a = t.jitter_int(64);
  EXPECT_EQ(t.jitter_int(64), a) << "the same nominal size must give the same value in a trial";
  for (std::int64_t n : {8, 64, 128, 1000, 4096}) {
    const auto v = t.jitter_int(n);
    EXPECT_GE(static_cast<double>(v), 0.85 * static_cast<double>(n) - 1.0);
    EXPECT_LE(static_cast<double>(v), 1.15 * static_cast<double>(n) + 1.0);
  }
  EXPECT_EQ(t.draws().size(), 5u);
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
}

TEST(Job, RoundTripsThroughJson) {
  eval::job j;
  j.problem = "/p.py";
  j.candidate = "/c.cu";
  j.kind = eval::candidate_kind::native;
  j.held_out_seed = 99;
  j.atol = 1e-3;
  j.timing_options = eval::timing_preset("precise");
  const auto back = eval::job_from_json(eval::to_json(j));
  EXPECT_EQ(back.candidate, j.candidate);
  EXPECT_EQ(back.kind, eval::candidate_kind::native);
  EXPECT_EQ(back.held_out_seed, 99u);
  ASSERT_TRUE(back.atol);
  EXPECT_DOUBLE_EQ(*back.atol, 1e-3);
  EXPECT_FALSE(back.rtol);
  EXPECT_DOUBLE_EQ(back.timing_options.budget_per_side.count(), 10.0);
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
}

TEST(Result, RoundTripsWithUnitsInNamesAndRejectsOtherSchemas) {
  eval_result r;
  r.status = eval_status::correct;
  measure::comparison c;
  c.reference.device.valid = true;
  c.reference.device.summary.median = 28.7;
  c.reference.device.samples_us = {28.0, 28.7, 29.0};
  c.speedups.push_back({measure::figure_kind::device, true, {6.9, 6.8, 7.0, 0.95, 2000}});
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
  nlohmann::json bad = j;
  bad["schema"] = "kjudge.eval/0";
  EXPECT_THROW((void)bad.get<eval_result>(), kj::error);
}

TEST(Cli, EveryEvalOptionIsDocumented) {
  CLI::App app;
  app::eval_args args;
  auto* cmd = app::add_eval_command(app, args);
  const auto doc = app::help_section("eval");
  ASSERT_FALSE(doc.empty());
  int checked = 0;
  for (const auto* opt : cmd->get_options()) {
    for (const auto& name : opt->get_lnames()) {
      EXPECT_NE(doc.find("`--" + name), std::string::npos)
          << "--" << name << " is not in docs/cli.md";
      ++checked;
    }
  }
  EXPECT_GE(checked, 15);
  EXPECT_FALSE(app::help_section("").empty());
  EXPECT_TRUE(app::help_section("no-such-command").empty());
}

}  // namespace
}  // namespace kj
