// End-to-end tests of `kjudge eval` on the CPU: the Python bridge, jitter, correctness, host
// timing, worker isolation (crash, hang, exit, bad problem files) and JSON output, through the
// real executable and a real PyTorch.

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>

#include "kjudge_runner.hpp"

#include <kjudge/runner/file_lock.hpp>
#include <kjudge/runner/native_settings.hpp>
#include <kjudge/runner/process_detail.hpp>

namespace kj::test {
namespace {

/** A scratch folder for one test, removed at its end. */
struct scratch_dir {
  std::filesystem::path path;
  scratch_dir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path = std::filesystem::temp_directory_path() /
           (std::string("kjudge_e2e_") + info->name() + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~scratch_dir() { std::filesystem::remove_all(path); }
};

const std::vector<std::string> cpu_fast = {"--device", "cpu", "--budget", "0.2", "--trials", "3"};

std::vector<std::string> with(std::vector<std::string> extra) {
  auto v = cpu_fast;
  v.insert(v.end(), extra.begin(), extra.end());
  return v;
}

TEST(EvalCpu, CorrectCandidateIsCorrectAndTimedOnTheHost) {
  const auto r = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py",
                          {"--device", "cpu", "--budget", "1", "--trials", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto& j = r.result;
  EXPECT_EQ(j["schema"], "kjudge.eval/1");
  EXPECT_EQ(j["status"], "correct");
  EXPECT_EQ(j["correctness"]["trials"], 3);
  EXPECT_EQ(j["correctness"]["trials_passed"], 3);
  EXPECT_TRUE(j["correctness"]["held_out_ran"].get<bool>());
  EXPECT_TRUE(j["correctness"]["held_out_passed"].get<bool>());
  // The secrets stay out of the job as shown: the held-out seed is revealed in the provenance,
  // the timing key nowhere.
  EXPECT_FALSE(j["options"].contains("held_out_seed")) << j["options"].dump();
  EXPECT_FALSE(j["options"].contains("timing_key")) << j["options"].dump();
  EXPECT_EQ(j.dump().find("timing_key"), std::string::npos);
  EXPECT_EQ(j["provenance"]["device"], "cpu");
  EXPECT_FALSE(j["provenance"]["torch_version"].get<std::string>().empty());
  // On the CPU only the host figure exists, and the result says so.
  const auto& t = j["timing"];
  ASSERT_TRUE(t.is_object());
  EXPECT_TRUE(t["reference"]["host_wall"]["valid"].get<bool>());
  EXPECT_TRUE(t["candidate"]["host_wall"]["valid"].get<bool>());
  EXPECT_FALSE(t["reference"]["device"]["valid"].get<bool>());
  // Either the noise target was met (>= 20 samples) or the budget ran out; a 1 s budget fits
  // several calls of a few-ms forward even on a loaded 2-core machine (0.6 s once gave 4, with
  // the other tests running beside it; 55-75 alone).
  EXPECT_GE(t["candidate"]["host_wall"]["n"].get<int>(), 5);
  EXPECT_EQ(t["reference"]["host_wall"]["method"], "host-steady-clock");
  EXPECT_GT(t["candidate"]["host_wall"]["median_us"].get<double>(), 0.0);
  bool host_speedup = false;
  for (const auto& s : t["speedups"])
    if (s["kind"] == "host_wall") host_speedup = s["ratio"].get<double>() > 0.0;
  EXPECT_TRUE(host_speedup);
  // The terminal report names the status and the figures.
  EXPECT_NE(r.output.find("CORRECT"), std::string::npos);
  EXPECT_NE(r.output.find("host wall"), std::string::npos);
}

TEST(EvalCpu, TimedEvaluationsOnTheCpuTakeTurns) {
  // The CPU's lock held here (as another evaluation's timing holds it): the evaluation's trials
  // run, then its timing waits for the lock and goes on once it is free; held all along, the
  // timing goes ahead after the wait's limit (a third of --timeout) and says so.
  const private_lock_dir dir;
  {
    auto lock = runner::file_lock::acquire(runner::cpu_lock_path(), std::chrono::seconds(1));
    ASSERT_TRUE(lock.held()) << lock.error();
    std::thread holder([&lock] {
      // Past the worker's start, torch's import and the trials (5-7 s on the CPU machine).
      std::this_thread::sleep_for(std::chrono::seconds(20));
      lock.release();
    });
    const auto r =
        run_eval("problems/level1/softmax.py", "examples/softmax/naive.py",
                 {"--device", "cpu", "--trials", "1", "--budget", "0.2", "--timeout", "90"});
    holder.join();
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto& w = r.result["worker"];
    EXPECT_GE(w["cpu_lock_wait_s"].get<double>(), 1.0) << w.dump();
    EXPECT_FALSE(has_flag(r.result, "cpu_lock_not_held")) << r.result["flags"];
    bool waited_phase = false;
    for (const auto& ph : w["phases"]) waited_phase = waited_phase || ph["name"] == "wait_cpu_lock";
    EXPECT_TRUE(waited_phase) << w["phases"];
    EXPECT_TRUE(r.result["timing"]["reference"]["host_wall"]["valid"].get<bool>());
    EXPECT_NE(r.output.find("waiting for another evaluation's timing on the CPU"),
              std::string::npos)
        << r.output;
  }
  auto held = runner::file_lock::acquire(runner::cpu_lock_path(), std::chrono::seconds(1));
  ASSERT_TRUE(held.held()) << held.error();
  const auto r =
      run_eval("problems/level1/softmax.py", "examples/softmax/naive.py",
               {"--device", "cpu", "--trials", "1", "--budget", "0.2", "--timeout", "24"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct");
  EXPECT_TRUE(has_flag(r.result, "cpu_lock_not_held")) << r.result["flags"];
  EXPECT_GE(r.result["worker"]["cpu_lock_wait_s"].get<double>(), 1.0);
  EXPECT_TRUE(r.result["timing"]["candidate"]["host_wall"]["valid"].get<bool>());
}

TEST(EvalCpu, TrialsDrawJitteredShapesPerSeed) {
  const auto r = run_eval("problems/level2/quantvla_selective_layout_fusion.py",
                          "examples/quantvla/naive.py", with({"--no-timing"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::set<std::string> shapes;
  for (const auto& t : r.result["trials"]) {
    // x (B, T, D) and logits (B, T) agree on B and T: jitter is memoised per nominal size.
    const auto& s = t["input_shapes"];
    ASSERT_EQ(s[0].size(), 3u);
    EXPECT_EQ(s[0][0], s[1][0]);
    EXPECT_EQ(s[0][1], s[1][1]);
    EXPECT_EQ(s[0][2], 128);
    const auto b = s[0][0].get<int>(), tt = s[0][1].get<int>();
    EXPECT_GE(b, 6);  // 8 +- 15%
    EXPECT_LE(b, 9);
    EXPECT_GE(tt, 54);  // 64 +- 15%
    EXPECT_LE(tt, 74);
    shapes.insert(s[0].dump());
  }
  EXPECT_GE(shapes.size(), 2u) << "five seeds drew the same shapes";
}

TEST(EvalCpu, TimingUsesTheNominalShapes) {
  const auto r = run_eval("problems/level2/quantvla_selective_layout_fusion.py",
                          "examples/quantvla/naive.py", cpu_fast);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto& ti = r.result["options"]["timing_inputs"];
  EXPECT_EQ(ti["shapes"][0], nlohmann::json({8, 64, 128}));
  EXPECT_EQ(ti["shapes"][1], nlohmann::json({8, 64}));
  EXPECT_GE(ti["sets"].get<int>(), 2);
  // The agent preset prepares up to eight sets; QuantVLA's are small, so all eight fit, and the
  // median's error is judged over them (with samples on four or more) as well as over the
  // samples. (A loaded machine may spend the short budget in a few samples.)
  EXPECT_EQ(r.result["options"]["timing_options"]["max_input_sets"], 8);
  EXPECT_EQ(ti["sets"], 8);
  for (const char* side : {"reference", "candidate"}) {
    const auto& f = r.result["timing"][side]["host_wall"];
    const auto sets_used = f["samples_set"].get<std::set<int>>().size();
    if (f["n"].get<int>() < 2) {  // a side of one sample has no error (null) of either kind
      EXPECT_TRUE(f["rse_pct"].is_null() && f["rse_samples_pct"].is_null())
          << f.dump().substr(0, 400);
      continue;
    }
    const double total = f["rse_pct"], by_samples = f["rse_samples_pct"];
    if (sets_used >= 4) {
      ASSERT_TRUE(f["rse_sets_pct"].is_number()) << f.dump().substr(0, 400);
      EXPECT_DOUBLE_EQ(total, std::max(by_samples, f["rse_sets_pct"].get<double>()));
    } else {
      EXPECT_TRUE(f["rse_sets_pct"].is_null()) << f.dump().substr(0, 400);
      EXPECT_DOUBLE_EQ(total, by_samples);
    }
  }
  // --sets overrides the preset's number; every sample is on one of them.
  const auto three = run_eval("problems/level2/quantvla_selective_layout_fusion.py",
                              "examples/quantvla/naive.py", with({"--sets", "3"}));
  ASSERT_EQ(three.exit_code, 0) << three.output;
  EXPECT_EQ(three.result["options"]["timing_options"]["max_input_sets"], 3);
  EXPECT_EQ(three.result["options"]["timing_inputs"]["sets"], 3);
  for (const int set : three.result["timing"]["candidate"]["host_wall"]["samples_set"])
    EXPECT_LT(set, 3);
}

TEST(EvalCpu, APreciseRunWithAShortBudgetCanMeetItsNoiseTarget) {
  // --precise samples for at least 1 s a side; with --budget 0.2 that floor was never reached,
  // so every such run spent its budget and said it stopped by it. The floor keeps its share of
  // the budget (a tenth).
  // (Two input sets: the error over sets, which a loaded machine can keep above even a loose
  // target with few samples a set, is not judged below four.)
  const auto r =
      run_eval("problems/level2/quantvla_selective_layout_fusion.py", "examples/quantvla/naive.py",
               {"--device", "cpu", "--trials", "1", "--precise", "--budget", "0.5", "--sets", "2",
                "--target-rse", "50", "--min-samples", "10"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto& o = r.result["options"]["timing_options"];
  EXPECT_NEAR(o["min_time_s"].get<double>(), 0.05, 1e-9) << o.dump();
  // A loaded machine can spend the budget before the least samples (each call 100 ms): then
  // the budget stopped it rightly. With them, the loose target is met at once.
  // Samples that waited for a CPU others had (cpu_wait_samples as a warning: most discarded,
  // or the kept ones waited a tenth of their time; a build beside the tests) can keep even that
  // target out of reach: said, not judged.
  const auto& t = r.result["timing"];
  bool loaded = false;
  for (const auto& f : r.result["flags"])
    loaded = loaded || (f["code"] == "cpu_wait_samples" && f["severity"] == "warning");
  if (loaded) {
    std::printf("the machine was loaded (%s): the stopping rule is not judged\n",
                flag_message(r.result, "cpu_wait_samples").c_str());
  } else if (t["reference"]["host_wall"]["n"].get<int>() >= 10 &&
             t["candidate"]["host_wall"]["n"].get<int>() >= 10) {
    EXPECT_EQ(t["stopped_by"], "noise-target")
        << t["reference"]["host_wall"]["note"] << "; " << t["candidate"]["host_wall"]["note"];
  }
}

TEST(EvalCpu, ProcessesPoolTheirTimingAndSayEachOnesMedian) {
  // --processes 2: the evaluation twice, in two workers; every figure's samples pooled, each
  // process's median kept, and the speedup's interval over the processes.
  const auto r = run_eval("problems/level2/quantvla_selective_layout_fusion.py",
                          "examples/quantvla/naive.py", with({"--processes", "2"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct");
  ASSERT_EQ(r.result["runs"].size(), 2u) << r.result["runs"].dump();
  for (const auto& run : r.result["runs"]) EXPECT_EQ(run["status"], "correct");
  const auto& t = r.result["timing"];
  EXPECT_EQ(t["processes"], 2);
  EXPECT_NE(r.output.find("in each of 2 processes"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(2 processes: "), std::string::npos) << r.output;
  // A process whose samples all waited for a CPU keeps none (a loaded machine: CI's, or tests
  // run beside it), and has no median to say: flagged, and not what this test looks at.
  for (const char* side : {"reference", "candidate"}) {
    const auto& f = t[side]["host_wall"];
    if (f.value("discarded_cpu_wait", 0) > 0 && f["process_medians_us"].size() != 2)
      GTEST_SKIP() << side << ": a process kept no samples, all waited for a CPU (a loaded "
                   << "machine)\n"
                   << r.output;
  }
  for (const char* side : {"reference", "candidate"}) {
    const auto& f = t[side]["host_wall"];
    EXPECT_EQ(f["process_medians_us"].size(), 2u) << f.dump().substr(0, 300);
    const auto processes = f["samples_process"].get<std::set<int>>();
    EXPECT_EQ(processes, (std::set<int>{0, 1}));
    EXPECT_EQ(f["samples_process"].size(), f["samples_us"].size());
    EXPECT_TRUE(f["rse_processes_pct"].is_number()) << f.dump().substr(0, 300);
  }
  ASSERT_FALSE(t["speedups"].empty());
  EXPECT_EQ(t["speedups"][0]["over_processes"], true);
  EXPECT_NE(r.output.find("host_wall median by process: reference "), std::string::npos)
      << r.output;
}

TEST(EvalCpu, EachProcessTimesInputValuesOfItsOwn) {
  // A candidate that keeps its answers in a folder named after the evaluation, and answers a
  // later process's calls from it where it can (examples/faulty/replays_across_processes.py,
  // which writes how many calls each process answered so). With one timing key for every
  // process, every later process timed the same values as the first, in the same order: 31 of
  // its 43 calls answered, and a reviewer's version read correct at 8.6x. Only the trials
  // (their inputs follow from --seed) may repeat now.
  const scratch_dir dir;
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string before = tmpdir != nullptr ? tmpdir : "";
  ::setenv("TMPDIR", dir.path.c_str(), 1);  // where the candidate keeps its answers
  const auto r =
      run_eval("problems/level1/mse_loss.py", "examples/faulty/replays_across_processes.py",
               {"--device", "cpu", "--trials", "2", "--budget", "0.6", "--processes", "2"});
  if (tmpdir != nullptr)
    ::setenv("TMPDIR", before.c_str(), 1);
  else
    ::unsetenv("TMPDIR");
  ASSERT_EQ(r.result["status"], "correct") << r.output;
  std::vector<std::pair<int, int>> stats;  // each process's calls, and those answered
  for (const auto& folder : std::filesystem::directory_iterator(dir.path)) {
    // The candidate's folder (kjudge may leave files of its own under TMPDIR as well).
    if (!folder.is_directory() || !folder.path().filename().string().starts_with("kjudge_replays_"))
      continue;
    for (const auto& f : std::filesystem::directory_iterator(folder.path()))
      if (f.path().filename().string().starts_with("stats-")) {
        std::ifstream in(f.path());
        int calls = -1, answered = -1;
        in >> calls >> answered;
        stats.emplace_back(calls, answered);
      }
  }
  ASSERT_EQ(stats.size(), 2u) << "one stats file a process";
  std::sort(stats.begin(), stats.end(), [](auto a, auto b) { return a.second < b.second; });
  EXPECT_EQ(stats[0].second, 0) << "the first process has no earlier answers";
  const auto [calls, answered] = stats[1];
  EXPECT_GE(calls, 15) << "the later process's calls";
  EXPECT_GE(answered, 1) << "the trials' inputs repeat across processes: the test's means work";
  EXPECT_LE(answered, 5) << answered << " of " << calls
                         << " calls of the later process were answered from the first's";
}

TEST(EvalCpu, WrongValuesAreIncorrectWithMismatches) {
  const auto r =
      run_eval("problems/level1/softmax.py", "examples/faulty/wrong_values.py", cpu_fast);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.result["status"], "incorrect");
  const auto& out = r.result["trials"][0]["outputs"][0];
  EXPECT_FALSE(out["passed"].get<bool>());
  EXPECT_GT(out["mismatch_count"].get<int>(), 0);
  EXPECT_FALSE(out["mismatches"].empty());
  EXPECT_EQ(out["worst_index"].size(), 2u);
  EXPECT_FALSE(r.result["timing"].is_object()) << "an incorrect candidate is not timed";
}

TEST(EvalCpu, WrongShapeIsIncorrect) {
  const auto r = run_eval("problems/level1/softmax.py", "examples/faulty/wrong_shape.py", cpu_fast);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.result["trials"][0]["outputs"][0]["message"].get<std::string>().find("shape"),
            std::string::npos);
}

TEST(EvalCpu, NanOutputIsIncorrect) {
  const auto r = run_eval("problems/level1/softmax.py", "examples/faulty/returns_nan.py", cpu_fast);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_GT(r.result["trials"][0]["outputs"][0]["nan_count"].get<int>(), 0);
  // Element 0 is NaN: its mismatch says so (null in JSON, nan on the terminal), not 0.
  const auto& mismatches = r.result["trials"][0]["outputs"][0]["mismatches"];
  ASSERT_FALSE(mismatches.empty()) << r.result["trials"][0];
  EXPECT_TRUE(mismatches[0]["actual"].is_null()) << mismatches.dump();
  EXPECT_TRUE(mismatches[0]["abs_err"].is_null()) << mismatches.dump();
  EXPECT_NE(r.output.find("got nan (abs err nan)"), std::string::npos) << r.output;
}

TEST(EvalCpu, ConstantOutputIsFlagged) {
  const auto r =
      run_eval("problems/level1/softmax.py", "examples/faulty/constant_output.py", cpu_fast);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has_flag(r.result, "constant_output")) << r.result.dump(1);
}

TEST(EvalCpu, CachedOutputFailsOnFreshInputs) {
  const auto r =
      run_eval("problems/level1/softmax.py", "examples/faulty/caches_output.py", cpu_fast);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.result["status"], "incorrect");
}

TEST(EvalCpu, InputMutationIsReported) {
  const auto r = run_eval("problems/level1/softmax.py", "examples/faulty/mutates_input.py",
                          with({"--no-timing"}));
  EXPECT_TRUE(has_flag(r.result, "input_modified")) << r.output;
  EXPECT_FALSE(r.result["trials"][0]["inputs_modified"].empty());
  EXPECT_TRUE(r.result["trials"][0]["reference_inputs_modified"].empty());
  for (const auto& f : r.result["flags"]) {
    if (f["code"] == "input_modified") {
      EXPECT_EQ(f["severity"], "warning") << f.dump();
    }
  }
}

// The isolation tests below (a crash, exit() and running out of memory in the candidate, and
// its signals to the processes that judge it) run in both kinds of worker: exec'd (--no-pool)
// and forked from the tests' pool (--pool, the default's). A hang is timed out in an exec'd
// worker here and in a pooled one in PoolCpu.FirstStartsThePoolThenEvaluationsAreForkedFromIt.
const char* const k_workers[] = {"--no-pool", "--pool"};

/** run_eval() with cpu_fast and `extra` in `worker` (an entry of k_workers), checked to have
 *  run there: a pooled run that found no pool running ran its own worker and started one, so it
 *  is run again, forked from that pool (an evaluation waits for a pool that is still starting). */
kjudge_run run_in_worker(const char* worker, const std::string& problem,
                         const std::string& candidate, std::vector<std::string> extra = {}) {
  const bool pooled = std::string_view(worker) == "--pool";
  extra.emplace_back(worker);
  auto r = run_eval(problem, candidate, with(extra));
  if (pooled && r.result["worker"].value("started_by", "") == "exec+pool_started")
    r = run_eval(problem, candidate, with(extra));
  EXPECT_EQ(r.result["worker"].value("started_by", ""), pooled ? "pool" : "exec")
      << worker << ": " << r.result["worker"].dump();
  return r;
}

TEST(EvalCpu, SegfaultBecomesACrashResult) {
  for (const char* worker : k_workers) {
    const auto r =
        run_in_worker(worker, "problems/level1/softmax.py", "examples/faulty/segfault.py");
    EXPECT_EQ(r.exit_code, 4) << worker << "\n" << r.output;
    EXPECT_EQ(r.result["status"], "crashed") << worker;
    EXPECT_EQ(r.result["worker"]["signal"], 11) << worker;
    EXPECT_NE(r.result["message"].get<std::string>().find("SIGSEGV"), std::string::npos);
    EXPECT_NE(r.result["worker"]["last_phase"].get<std::string>().find("candidate"),
              std::string::npos)
        << worker;
    // The report says where it stopped, not "(0/0 trials)".
    EXPECT_EQ(r.output.find("0/0 trials"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("CRASHED  (no trial completed, stopped in trial 1 of 3)"),
              std::string::npos)
        << r.output;
  }
}

TEST(EvalCpu, ForgedVerdictIsNotBelieved) {
  const auto r =
      run_eval("problems/level1/softmax.py", "examples/faulty/forges_verdict.py", cpu_fast);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.result["status"], "correct");
  EXPECT_TRUE(has_flag(r.result, "unverified_verdict")) << r.result.dump(1);
}

TEST(EvalCpu, AProblemErrorAfterTheCandidatesCodeRanIsCheckedAlone) {
  // A forged verdict of the problem's error, believed before: the reference alone runs through.
  const auto forged =
      run_eval("problems/level1/softmax.py", "examples/faulty/forges_problem_error.py", cpu_fast);
  EXPECT_EQ(forged.exit_code, 4) << forged.output;
  EXPECT_EQ(forged.result["status"], "runtime_error");
  EXPECT_TRUE(has_flag(forged.result, "problem_error_not_reproduced")) << forged.result.dump(1);
  // The problem's own errors, after an honest candidate's import, stand: its reference raises
  // (in a trial), its inputs differ for one seed (found by drawing them twice), its forward
  // fails at the nominal sizes only (the timing's input sets; a trial jitters both sizes, and
  // lands on both nominal ones once in about 8,000 trials).
  const scratch_dir dir;
  const auto nominal_only = dir.path / "fails_at_nominal.py";
  std::ofstream(nominal_only) << "import torch\nimport torch.nn as nn\n"
                                 "class Model(nn.Module):\n    def forward(self, x):\n"
                                 "        assert tuple(x.shape) != (300, 301), 'nominal'\n"
                                 "        return torch.relu(x)\n"
                                 "def get_inputs():\n    p = popcorn_pri\n"
                                 "    return [torch.randn(p.jitter_int(300), p.jitter_int(301))]\n"
                                 "def get_init_inputs():\n    return []\n";
  // And one whose forward needs the values get_inputs() drew (timing rescales them).
  const auto drawn_values = dir.path / "needs_drawn_values.py";
  std::ofstream(drawn_values) << "import torch\nimport torch.nn as nn\n"
                                 "class Model(nn.Module):\n    def forward(self, x):\n"
                                 "        assert bool((x == x.round()).all()), 'not whole'\n"
                                 "        return torch.relu(x)\n"
                                 "def get_inputs():\n"
                                 "    return [torch.randint(1, 9, (4, 64)).float()]\n"
                                 "def get_init_inputs():\n    return []\n";
  const auto relu = dir.path / "relu_new.py";
  std::ofstream(relu) << "import torch\nimport torch.nn as nn\nclass ModelNew(nn.Module):\n"
                         "    def forward(self, *args):\n        return torch.relu(args[0])\n";
  for (const auto& [problem, says] :
       {std::pair{std::string("problems/broken/raises_in_forward.py"), "failed on trial inputs"},
        std::pair{std::string("problems/broken/unseeded_inputs.py"), "different values"},
        std::pair{nominal_only.string(), "timing inputs"},
        std::pair{drawn_values.string(), "while timing it"},
        std::pair{std::string("problems/broken/bad_tolerance.py"), "a tolerance must be"}}) {
    const auto r = run_eval(problem, relu.string(), cpu_fast);
    EXPECT_EQ(r.exit_code, 6) << problem << "\n" << r.output;
    EXPECT_EQ(r.result["status"], "problem_error") << problem;
    const std::string message = r.result.value("message", "");
    EXPECT_NE(message.find(says), std::string::npos) << problem << ": " << message;
    EXPECT_NE(message.find("the reference alone"), std::string::npos) << problem << ": " << message;
    EXPECT_FALSE(has_flag(r.result, "problem_error_not_reproduced")) << r.result.dump(1);
  }
}

TEST(EvalCpu, ACandidateFindsNoReferenceOutputToReturn) {
  // It shares the worker's interpreter with the reference; run before it, it finds nothing.
  const auto r =
      run_eval("problems/level1/softmax.py", "examples/faulty/reads_reference.py", cpu_fast);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.result["status"], "incorrect");
  EXPECT_EQ(r.result["correctness"]["trials_passed"], 0) << r.result["correctness"].dump();
}

TEST(EvalCpu, ACandidatesChangesToTorchStayWithIt) {
  // torch.softmax replaced at import by a doubled one: before kjudge kept such changes to the
  // candidate's calls, the reference computed with it too and this candidate was correct.
  const auto r =
      run_eval("problems/level1/softmax.py", "examples/faulty/patches_torch.py", cpu_fast);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.result["status"], "incorrect");
  EXPECT_NE(flag_message(r.result, "candidate_changed_torch_state").find("torch.softmax replaced"),
            std::string::npos)
      << r.result["flags"].dump(1);
  // The torch module's class replaced by one with a doubling `softmax` property (looked up before
  // torch's dict, which is unchanged): the reference's torch.softmax doubled too, and this
  // candidate was correct.
  const auto cls = run_eval("problems/level1/softmax.py", "examples/faulty/patches_torch_class.py",
                            with({"--no-timing"}));
  EXPECT_EQ(cls.exit_code, 1) << cls.output;
  EXPECT_EQ(cls.result["status"], "incorrect");
  EXPECT_NE(
      flag_message(cls.result, "candidate_changed_torch_state").find("torch.__class__ replaced"),
      std::string::npos)
      << cls.result["flags"].dump(1);
  // A private global of one of torch's modules replaced (torch.nn.modules.linear's F): the
  // reference's nn.Linear computed zeros as the candidate does, and it was correct.
  const auto lin = run_eval("problems/level2/quantvla_selective_layout_fusion.py",
                            "examples/faulty/patches_torch_module.py", with({"--no-timing"}));
  EXPECT_EQ(lin.exit_code, 1) << lin.output;
  EXPECT_EQ(lin.result["status"], "incorrect");
  EXPECT_NE(flag_message(lin.result, "candidate_changed_torch_state")
                .find("torch.nn.modules.linear.F replaced"),
            std::string::npos)
      << lin.result["flags"].dump(1);
  // A private method of one of torch's classes wrapped (nn.Module._call_impl, through which
  // every layer's forward runs): the reference's Model returned zeros as the candidate does, and
  // it was correct.
  const auto call = run_eval("problems/level1/softmax.py", "examples/faulty/patches_module_call.py",
                             with({"--no-timing"}));
  EXPECT_EQ(call.exit_code, 1) << call.output;
  EXPECT_EQ(call.result["status"], "incorrect");
  EXPECT_NE(flag_message(call.result, "candidate_changed_torch_state")
                .find("torch.nn.Module._call_impl replaced"),
            std::string::npos)
      << call.result["flags"].dump(1);
  // Settings changed at import: in force for the candidate's calls (its forward raises if not),
  // not for the reference's side, whose get_inputs() still draws float32 (it drew float64 before).
  const auto s =
      run_eval("problems/level1/softmax.py", "examples/faulty/changes_settings.py", cpu_fast);
  ASSERT_EQ(s.exit_code, 0) << s.output;
  EXPECT_EQ(s.result["status"], "correct");
  const auto said = flag_message(s.result, "candidate_changed_torch_state");
  for (const char* change : {"torch.get_default_dtype(): torch.float32 -> torch.float64",
                             "torch.backends.cuda.matmul.allow_tf32: False -> True",
                             "torch.backends.cudnn.benchmark: False -> True"})
    EXPECT_NE(said.find(change), std::string::npos) << change << " in: " << said;
  for (const auto& t : s.result["trials"]) {
    EXPECT_EQ(t["input_dtypes"], nlohmann::json::array({"float32"})) << t.dump();
    EXPECT_EQ(t["outputs"][0]["expected_dtype"], "float32") << t.dump();
  }
  // torch.mul rebound at import to refuse out=, the call kjudge's rewrite of the timing inputs
  // makes between samples: that rewrite is kjudge's work and calls torch as the harness found it,
  // so the rebinding reaches none of it (it did before: the candidate's second prepare in a row
  // ran it).
  const auto m =
      run_eval("problems/level1/softmax.py", "examples/faulty/rebinds_torch_mul.py", cpu_fast);
  ASSERT_EQ(m.exit_code, 0) << m.output;
  EXPECT_EQ(m.result["status"], "correct");
  EXPECT_NE(flag_message(m.result, "candidate_changed_torch_state").find("torch.mul replaced"),
            std::string::npos)
      << m.result["flags"].dump(1);
  EXPECT_GT(m.result["timing"]["candidate"]["host_wall"]["n"].get<int>(), 0) << m.output;
  // torch's newer TF32 switch set at import: the older flag it aliases can no longer be read,
  // which is not a change made while the candidate was timed (it ended as runtime_error).
  const auto p =
      run_eval("problems/level1/softmax.py", "examples/faulty/sets_fp32_precision.py", cpu_fast);
  ASSERT_EQ(p.exit_code, 0) << p.output;
  EXPECT_EQ(p.result["status"], "correct");
  // A torch function mode patched and pushed at import (set_default_device's) is in force during
  // the candidate's turns: the rewrite of the timing inputs runs with modes disabled.
  const auto d =
      run_eval("problems/level1/softmax.py", "examples/faulty/patches_device_mode.py", cpu_fast);
  ASSERT_EQ(d.exit_code, 0) << d.output;
  EXPECT_EQ(d.result["status"], "correct");
  EXPECT_GT(d.result["timing"]["candidate"]["host_wall"]["n"].get<int>(), 0) << d.output;
}

TEST(EvalCpu, ASettingSetToWhatItAlreadyMeansIsNoChange) {
  // `allow_tf32 = False` (already so) moves torch.backends.cuda.matmul.fp32_precision from
  // "none" to "ieee", and set_float32_matmul_precision("highest") (the default) does the same
  // for cuBLAS and oneDNN: the same numerics, which were warned as changes of the candidate's.
  // cuDNN's TF32 turned off (on by default) still is one.
  const scratch_dir dir;
  struct example {
    std::string line;
    bool flagged;
  };
  for (const auto& [line, flagged] :
       {example{"torch.backends.cuda.matmul.allow_tf32 = False", false},
        example{"torch.set_float32_matmul_precision('highest')", false},
        example{"torch.set_default_device('cpu')", false},
        example{"torch.backends.cudnn.allow_tf32 = False", true},
        // Settings rows of this session's (each toggled: a change whatever the build's default).
        example{"torch._C._set_nnpack_enabled(not torch._C._get_nnpack_enabled())", true},
        example{"torch.backends.opt_einsum.enabled = not torch.backends.opt_einsum.enabled",
                true}}) {
    const auto candidate = dir.path / "softmax_new.py";
    std::ofstream(candidate) << "import torch\nimport torch.nn as nn\n"
                             << line
                             << "\nclass ModelNew(nn.Module):\n"
                                "    def forward(self, x):\n        return torch.softmax(x, -1)\n";
    const auto r = run_eval("problems/level1/softmax.py", candidate.string(),
                            {"--device", "cpu", "--trials", "1", "--no-timing"});
    ASSERT_EQ(r.result["status"], "correct") << line << "\n" << r.output;
    EXPECT_EQ(has_flag(r.result, "candidate_changed_torch_state"), flagged)
        << line << "\n"
        << r.result["flags"].dump(1);
  }
}

TEST(EvalCpu, ASettingTheReferencesForwardMakesTooIsNotTheCandidates) {
  // An exact copy of a forward that sets cudnn.benchmark runs before the reference in the first
  // trial, and was warned of the change the reference makes itself.
  const scratch_dir dir;
  const auto problem = dir.path / "flips.py";
  const std::string forward =
      "    def forward(self, x):\n"
      "        torch.backends.cudnn.benchmark = True\n"
      "        return torch.softmax(x, -1)\n";
  std::ofstream(problem) << "import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
                         << forward
                         << "def get_inputs():\n    return [torch.randn(4, 8)]\n"
                            "def get_init_inputs():\n    return []\n";
  for (const bool also_deterministic : {false, true}) {
    const auto candidate = dir.path / "flips_new.py";
    std::ofstream(candidate) << "import torch\nimport torch.nn as nn\n"
                             << (also_deterministic ? "torch.backends.cudnn.deterministic = True\n"
                                                    : "")
                             << "class ModelNew(nn.Module):\n"
                             << forward;
    const auto r = run_eval(problem.string(), candidate.string(),
                            {"--device", "cpu", "--trials", "2", "--no-timing"});
    ASSERT_EQ(r.result["status"], "correct") << r.output;
    const std::string listed = flag_message(r.result, "candidate_changed_torch_state");
    EXPECT_EQ(listed.find("benchmark"), std::string::npos) << listed;
    EXPECT_EQ(listed.find("deterministic") != std::string::npos, also_deterministic) << listed;
  }
  // A reference that sets it in its first calls (the trials') and clears it in the later ones
  // (timing's): the candidate's setting is the reference's in the trials, and its own change
  // after timing, listed then.
  const auto later = dir.path / "flips_first.py";
  std::ofstream(later) << "import torch\nimport torch.nn as nn\nCALLS = [0]\n"
                          "class Model(nn.Module):\n    def forward(self, x):\n"
                          "        CALLS[0] += 1\n"
                          "        torch.backends.cudnn.benchmark = CALLS[0] <= 3\n"
                          "        return torch.softmax(x, -1)\n"
                          "def get_inputs():\n    return [torch.randn(4, 8)]\n"
                          "def get_init_inputs():\n    return []\n";
  const auto candidate = dir.path / "flips_always.py";
  std::ofstream(candidate) << "import torch\nimport torch.nn as nn\nclass ModelNew(nn.Module):\n"
                           << forward;
  const auto r = run_eval(later.string(), candidate.string(),
                          {"--device", "cpu", "--trials", "1", "--budget", "0.2"});
  ASSERT_EQ(r.result["status"], "correct") << r.output;
  EXPECT_NE(flag_message(r.result, "candidate_changed_torch_state").find("benchmark"),
            std::string::npos)
      << r.result["flags"].dump(1);
}

TEST(EvalCpu, ACandidateThatReachesTheReferencesSideIsCaught) {
  // Each of these was judged correct before kjudge checked for it.
  struct faulty_case {
    const char *problem, *candidate, *says;
  };
  const char* softmax = "problems/level1/softmax.py";
  const faulty_case faulty[] = {
      {softmax, "examples/faulty/swaps_reference.py", "kjudge_harness._ref"},
      // The class of the reference's LayerNorm weight set (same object, same values) to a
      // Parameter subclass whose __torch_function__ doubles layer_norm.
      {"problems/level1/layernorm.py", "examples/faulty/swaps_parameter_class.py",
       "the reference model"},
      // Every torch entry of sys.modules set to None: kjudge's seeding for the next trial failed
      // (torch.manual_seed imports torch.cuda), and read as the problem's error.
      {softmax, "examples/faulty/blocks_torch_imports.py", "sys.modules ('torch' now None"},
      {softmax, "examples/faulty/changes_reference_inputs.py",
       "pristine copy of the trial's inputs"},
      {softmax, "examples/faulty/changes_settings_late.py", "while it was timed"},
      // These read correct with false host-wall speedups before (1.28-1.46x and 1.68-3.21x for
      // the same softmax, 114.81x for the same matmul).
      {softmax, "examples/faulty/slows_reference_by_hook.py", "profile or trace hook"},
      {softmax, "examples/faulty/restrides_reference_inputs.py",
       "no longer the tensor kjudge made"},
      {"problems/level1/matmul.py", "examples/faulty/halves_reference_inputs.py",
       "changed its dtype or device"},
      // Zeroed the pristine inputs' values, layout kept: both sides were timed on zeros (4.17x).
      {"problems/level1/matmul.py", "examples/faulty/zeroes_timing_inputs.py",
       "pristine copy of timing input 0 of set 0 changed during timing"},
      // A Python kernel of aten::mm (py_impl), consulted while a guard of torch's Python
      // dispatcher the candidate kept alive between its calls was on: its wrong values were the
      // reference's too, and read correct.
      {"problems/level1/matmul.py", "examples/faulty/leaves_python_dispatcher_on.py",
       "PythonDispatcher included"},
      {softmax, "examples/faulty/leaves_profiler_on.py", "torch's profiler"},
      // A frame-evaluation callback of torch._dynamo's that doubled max_pool2d's input in place:
      // the reference's output doubled, as the candidate's: correct.
      {"problems/level2/conv2d_relu_maxpool.py", "examples/faulty/leaves_frame_callback.py",
       "frame-evaluation callback"},
      // The reference's Linear weight given the same values in other strides (the same
      // Parameter object): torch copied it before each of the reference's GEMMs (1.6x).
      {"problems/level2/gemm_bias_relu_scale.py", "examples/faulty/restrides_reference_weight.py",
       "the reference model"}};
  for (const auto& [problem, c, says] : faulty) {
    const auto r = run_eval(problem, c, cpu_fast);
    EXPECT_EQ(r.exit_code, 4) << c << "\n" << r.output;
    EXPECT_EQ(r.result["status"], "runtime_error") << c;
    EXPECT_NE(r.result["message"].get<std::string>().find(says), std::string::npos)
        << c << ": " << r.result["message"];
  }
  // A finalizer on the pristine inputs rebound torch.matmul to zeros as kjudge freed them, and
  // the reference took it for its own: zeros read correct. The rebinding is the candidate's now.
  const auto zeros = run_eval("problems/level1/matmul.py",
                              "examples/faulty/rebinds_matmul_from_a_finalizer.py", cpu_fast);
  EXPECT_EQ(zeros.exit_code, 1) << zeros.output;
  EXPECT_EQ(zeros.result["status"], "incorrect");
  EXPECT_NE(flag_message(zeros.result, "candidate_changed_torch_state").find("torch.matmul"),
            std::string::npos)
      << zeros.result["flags"].dump(1);
  // Two that wrote zeros or doubled values where kjudge called torch's Python code between the
  // candidate's calls: torch.manual_seed's lookup of torch.random.default_generator (a wrapper
  // that zeroed the generator after seeding: every trial's inputs were zeros, and zeros read
  // correct at 515x), and torch.no_grad's __exit__ (which doubled the reference's outputs in
  // its caller's frame). kjudge uses neither now, and each replacement is the candidate's own.
  for (const auto& [problem, c, replaced] :
       {std::tuple{"problems/level1/matmul.py", "zeroes_the_generator_after_seeding.py",
                   "torch.random.default_generator"},
        std::tuple{softmax, "doubles_reference_in_no_grad_exit.py", "no_grad.__exit__"},
        // And torch's functions that torch.nn's code looks up as it runs: torch.jit.annotate
        // (F.max_pool2d's default stride: one pooling window read correct at 19x) and
        // torch._C's tracing state (nn.Module's call: a doubled softmax read correct).
        std::tuple{"problems/level2/conv2d_relu_maxpool.py", "rebinds_jit_annotate.py",
                   "torch.jit.annotate"},
        std::tuple{softmax, "fakes_a_tracer.py", "torch._C._get_tracing_state"},
        // And the modules other than torch's that torch.nn's code binds: math.sqrt rebound at
        // import built the reference's Linear layers with zero weights (kaiming_uniform_), and
        // a forward that returned the last bias read correct at 946x.
        std::tuple{"problems/level3/mlp.py", "rebinds_math_sqrt.py", "math.sqrt"}}) {
    const auto w = run_eval(problem, std::string("examples/faulty/") + c, cpu_fast);
    EXPECT_EQ(w.exit_code, 1) << c << "\n" << w.output;
    EXPECT_EQ(w.result["status"], "incorrect") << c;
    EXPECT_NE(flag_message(w.result, "candidate_changed_torch_state").find(replaced),
              std::string::npos)
        << c << ": " << w.result["flags"].dump(1);
  }
  // The same doubling from a profile function set from C (sys.getprofile() reads None): cleared
  // at every switch to the reference, so the doubled output is the candidate's alone.
  const auto profile = run_eval("problems/level2/conv2d_relu_maxpool.py",
                                "examples/faulty/sets_c_profile_function.py", cpu_fast);
  EXPECT_EQ(profile.exit_code, 1) << profile.output;
  EXPECT_EQ(profile.result["status"], "incorrect");
  // The problem module's class replaced at the candidate's import by one whose `Model` property
  // doubles: kjudge's Model(*get_init_inputs()), after the import, would build it. Found right
  // after the import, hence a compile error (the reference is not built yet).
  const auto pc = run_eval(softmax, "examples/faulty/swaps_problem_class.py", cpu_fast);
  EXPECT_EQ(pc.exit_code, 3) << pc.output;
  EXPECT_EQ(pc.result["status"], "compile_error");
  EXPECT_NE(pc.result["message"].get<std::string>().find("the problem's __class__"),
            std::string::npos)
      << pc.result["message"];
  // The problem's `hidden_sizes` list emptied in place at the candidate's import (the binding the
  // same list): the reference would have been built as one Linear layer, which the candidate is.
  const auto sizes =
      run_eval("problems/level3/mlp.py", "examples/faulty/shrinks_problem_list.py", cpu_fast);
  EXPECT_EQ(sizes.exit_code, 3) << sizes.output;
  EXPECT_EQ(sizes.result["status"], "compile_error");
  EXPECT_NE(
      sizes.result["message"].get<std::string>().find("the contents of the problem's hidden_sizes"),
      std::string::npos)
      << sizes.result["message"];
  // The same zeroing wrapper put in place of an item of kjudge's own list of generators.
  const auto gen = run_eval("problems/level1/matmul.py",
                            "examples/faulty/replaces_harness_generator.py", cpu_fast);
  EXPECT_EQ(gen.exit_code, 3) << gen.output;
  EXPECT_NE(gen.result["message"].get<std::string>().find("kjudge_harness._generators"),
            std::string::npos)
      << gen.result["message"];
  // sys.monitoring (Python 3.12+): a callback left in force under a freed tool id, and one that
  // moves itself to a tool already read while the check runs. With an older interpreter each
  // candidate is a plain softmax; this part then checks only that.
  for (const char* c : {"examples/faulty/slows_reference_by_monitoring.py",
                        "examples/faulty/moves_monitoring_callback.py"}) {
    const auto m = run_eval(softmax, c, cpu_fast);
    const std::string py = m.result["provenance"].value("python_version", "");
    int major = 0, minor = 0;
    ASSERT_EQ(std::sscanf(py.c_str(), "%d.%d", &major, &minor), 2) << py;
    if (major > 3 || (major == 3 && minor >= 12)) {
      EXPECT_EQ(m.exit_code, 4) << c << "\n" << m.output;
      EXPECT_EQ(m.result["status"], "runtime_error") << c;
      EXPECT_NE(m.result["message"].get<std::string>().find("sys.monitoring"), std::string::npos)
          << c << ": " << m.result["message"];
    } else {
      EXPECT_EQ(m.exit_code, 0) << c << "\n" << m.output;
      EXPECT_EQ(m.result["status"], "correct") << c;
      std::printf("Python %s has no sys.monitoring: %s is not exercised here\n", py.c_str(), c);
    }
  }
  // An audit hook is refused (silently, by Python): the candidate doubles its output if its hook
  // ever runs.
  const auto audit = run_eval(softmax, "examples/faulty/adds_audit_hook.py", cpu_fast);
  EXPECT_EQ(audit.exit_code, 0) << audit.output;
  EXPECT_EQ(audit.result["status"], "correct");
  // The reference's working copies restrided in place (the same tensors): put back before every
  // rewrite, so the reference is timed on the layout kjudge made (2.89-2.96x before). The
  // candidate fails the check after timing unless it saw a copy put back during timing.
  const auto ip = run_eval("problems/level1/softmax.py",
                           "examples/faulty/restrides_reference_inputs_in_place.py", cpu_fast);
  ASSERT_EQ(ip.exit_code, 0) << ip.output;
  EXPECT_EQ(ip.result["status"], "correct");
  EXPECT_GT(ip.result["timing"]["candidate"]["host_wall"]["n"].get<int>(), 0) << ip.output;
  // Nothing of a Python candidate's is copied per set.
  EXPECT_TRUE(ip.result["options"]["timing_inputs"]["native_buffers_per_set"].is_null())
      << ip.result["options"].dump();
  // Its outputs are a tensor subclass, which kjudge does not judge (its Python would run when
  // read): the candidate's error in its first trial. (Before, they were copied to the host
  // before the reference ran, nothing for the subclass to hand over then, and its zeros were
  // compared: incorrect.)
  const auto r =
      run_eval("problems/level1/softmax.py", "examples/faulty/subclass_output.py", cpu_fast);
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_EQ(r.result["status"], "runtime_error");
  EXPECT_NE(r.result["message"].get<std::string>().find("a subclass of torch.Tensor"),
            std::string::npos)
      << r.result["message"];
  EXPECT_EQ(r.result["correctness"]["trials_passed"], 0);
}

TEST(EvalCpu, ResultsReplayedDuringTimingAreCaught) {
  const auto r =
      run_eval("problems/level1/softmax.py", "examples/faulty/replays_cache.py", cpu_fast);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.result["status"], "incorrect");
  EXPECT_EQ(r.result["correctness"]["trials_passed"], 3) << "fresh trial inputs miss its cache";
  EXPECT_TRUE(has_flag(r.result, "timing_outputs_differ")) << r.result.dump(1);
  // The reference repeats itself on the check's inputs: the mismatch is the candidate's alone.
  EXPECT_FALSE(has_flag(r.result, "reference_nondeterministic")) << r.result.dump(1);
  EXPECT_FALSE(r.result["timing"]["candidate"]["host_wall"]["valid"].get<bool>());
}

TEST(EvalCpu, AForwardThatSkipsItsWorkOnlyWhileTimedIsCaught) {
  // It tells its timed calls by the harness's frames above it; the check after timing called it
  // through other frames, so it computed there, and came out correct with a large speedup.
  const auto r =
      run_eval("problems/level1/matmul.py", "examples/faulty/skips_work_when_timed.py", cpu_fast);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.result["status"], "incorrect");
  EXPECT_EQ(r.result["correctness"]["trials_passed"], 3) << r.result["correctness"].dump();
  EXPECT_TRUE(has_flag(r.result, "timing_outputs_differ")) << r.result["flags"].dump(1);
  EXPECT_FALSE(r.result["timing"]["candidate"]["host_wall"]["valid"].get<bool>());
}

TEST(EvalCpu, AForwardThatLooksForTimedCallsByItsSeedFindsNone) {
  // It looks for timed calls by their generator seeds' steps, and skips its work in them. When
  // the check's samples had numbers far beyond the timed ones, it was correct with a 157x
  // host-wall speedup; when they continued the timed ones, the check caught it. The seeds are
  // keyed now: it finds no step, computes in every call, and is timed as what it is.
  const auto r =
      run_eval("problems/level1/matmul.py", "examples/faulty/tells_check_by_seed.py", cpu_fast);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct");
  EXPECT_FALSE(has_flag(r.result, "timing_outputs_differ")) << r.result["flags"].dump(1);
  bool host_speedup = false;
  for (const auto& s : r.result["timing"]["speedups"])
    if (s["kind"] == "host_wall") {
      host_speedup = true;
      EXPECT_LT(s["ratio"].get<double>(), 3.0) << s.dump();
    }
  // No speedup only where the reference kept no sample: each waited for a CPU others had (a
  // build beside the tests), which the flag says.
  if (!host_speedup) {
    EXPECT_NE(flag_message(r.result, "cpu_wait_samples").find("none kept"), std::string::npos)
        << r.result["flags"].dump(1) << r.result["timing"]["speedups"].dump(1);
    std::printf("the machine was loaded: no host-wall speedup (%s)\n",
                flag_message(r.result, "cpu_wait_samples").c_str());
  }
}

TEST(EvalCpu, AForwardThatWorksOnlyWhereItGuessesItIsNotTimedIsCaught) {
  // After a repeated seed (a timed turn's opening call) it returns garbage until a call comes
  // after a pause without one, which it takes for the post-timing check. That check alone
  // judged it correct at 189x host wall; the audits of calls in the timing loop catch it. On a
  // loaded machine a turn can hold a single timed call (or pauses can come inside a turn): it
  // then skips nothing, and is judged correct at the speed it computes at. Never correct fast.
  const auto r =
      run_eval("problems/level1/matmul.py", "examples/faulty/skips_work_after_a_repeat.py",
               {"--device", "cpu", "--budget", "1", "--trials", "3"});
  ASSERT_TRUE(r.result.is_object()) << r.output;
  EXPECT_EQ(r.result["correctness"]["trials_passed"], 3) << r.result["correctness"].dump();
  if (r.result["status"] == "incorrect") {
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(flag_message(r.result, "timing_outputs_differ").find("in the timing loop"),
              std::string::npos)
        << r.result["flags"].dump(1);
    EXPECT_FALSE(r.result["timing"]["candidate"]["host_wall"]["valid"].get<bool>());
    return;
  }
  EXPECT_EQ(r.result["status"], "correct") << r.output;
  for (const auto& s : r.result["timing"]["speedups"]) {
    if (s["kind"] == "host_wall" && s["ratio"].is_number()) {
      EXPECT_LT(s["ratio"].get<double>(), 3.0)
          << "judged correct while skipping its work: " << s.dump();
    }
  }
}

TEST(EvalCpu, AnOutputThatComputesWhenReadIsCaughtInTheTimingLoop) {
  // A list subclass that runs the matmul when kjudge asks its length: correct at 397x, every
  // audit passed (reading it did the work). The audits read a list subclass through list's own
  // C methods: the kept calls hold the output as the call returned it, empty.
  const auto r =
      run_eval("problems/level1/matmul.py", "examples/faulty/computes_when_read.py", cpu_fast);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.result["status"], "incorrect");
  EXPECT_NE(flag_message(r.result, "timing_outputs_differ").find("in the timing loop"),
            std::string::npos)
      << r.result["flags"].dump(1);
}

TEST(EvalCpu, TheReferencesOutputIsNeverTheAnswerToTheCandidatesTimedCall) {
  // The rounds alternate the sides' order on the same sample numbers; where the reference went
  // first, the output the harness kept of it was the candidate's answer (3 of 17 calls taken,
  // correct at 1.90x). This candidate returns zeros once it has taken one, so a pass means it
  // never found one: each side's timed inputs are now scaled by factors of its own.
  const auto r =
      run_eval("problems/level1/matmul.py", "examples/faulty/takes_reference_output.py", cpu_fast);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct") << r.result["flags"].dump(1);
  EXPECT_GE(r.result["timing"]["candidate"]["host_wall"]["n"].get<int>(), 1);
}

TEST(EvalCpu, AChildProcessThatLoadsTheCpuBetweenTheCandidatesCallsIsFlagged) {
  // The same busy loop in a forked child: correct at 1.75-2.02x host wall, unflagged, while
  // only the worker's Python threads were booked (and the worker's own id was read from
  // threading's record, which a worker forked from the pool inherits stale).
  // The grandchild, whose parent exits at once, went to the guard or the pool, out of the
  // worker's children lists (1.9x, unflagged): the worker is a child subreaper now.
  for (const char* c : {"examples/faulty/loads_cpu_in_a_child_process.py",
                        "examples/faulty/loads_cpu_in_a_grandchild.py"}) {
    const auto r = run_eval("problems/level1/matmul.py", c, cpu_fast);
    EXPECT_EQ(r.exit_code, 0) << c << "\n" << r.output;
    EXPECT_EQ(r.result["status"], "correct") << c;
    EXPECT_NE(flag_message(r.result, "python_threads_busy").find("(process "), std::string::npos)
        << c << ": " << r.result["flags"].dump(1);
    EXPECT_FALSE(r.result["timing"]["reference"]["host_wall"]["valid"].get<bool>()) << c;
    // Busy whenever its forward is not running, it did not go quiet before the timing either.
    EXPECT_NE(flag_message(r.result, "waited_for_background_cpu").find("still using the CPU"),
              std::string::npos)
        << c << ": " << r.result["flags"].dump(1);
  }
}

TEST(EvalCpu, ACandidateCannotStopOrSignalTheProcessesThatJudgeIt) {
  // SIGSTOP to each of the worker's ancestors (kjudge eval among them: stopped, it enforced no
  // timeout and wrote no result), to every process of the user (kill(-1)), and to the worker
  // from a forked child (which stretched the reference's timed calls: 2.5-2.8x for an exact
  // copy): each is refused by the worker's fence, and the candidate, a softmax that returns
  // zeros where any signal got through, reads correct. Without the fence it read incorrect.
  // In both workers: an exec'd one is kjudge eval's grandchild; a pooled one's ancestors are the
  // pool's processes, and kjudge eval is reached only by kill(-1).
  for (const char* worker : k_workers) {
    const auto r = run_in_worker(worker, "problems/level1/softmax.py",
                                 "examples/faulty/signals_kjudge.py", {"--no-timing"});
    EXPECT_EQ(r.exit_code, 0) << worker << "\n" << r.output;
    EXPECT_EQ(r.result["status"], "correct") << worker << "\n" << r.output;
  }
}

TEST(EvalCpu, AThreadCannotRewriteATrialsOutputsBeforeTheirComparison) {
  // Zeros at every shape but the timed one, and a thread that copies the reference's trial
  // outputs over the candidate's host copy once both are in the harness's trial state: read
  // correct (held-out and stress trials too) while the harness kept them until the comparison.
  // Each side's outputs are copied into C++ as its forward returns now.
  const auto r =
      run_eval("problems/level1/softmax.py", "examples/faulty/thread_copies_reference_outputs.py",
               with({"--no-timing", "--shapes", "stress"}));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.result["status"], "incorrect") << r.output;
  ASSERT_EQ(r.result["trials"].size(), 6U) << r.output;  // 3 nominal, held-out, 2 stress
  for (const auto& t : r.result["trials"])
    EXPECT_FALSE(t["outputs"][0]["passed"].get<bool>()) << t.dump().substr(0, 300);
}

TEST(EvalCpu, AnOutputComputedWhenFirstReadEndsTheWorker) {
  // Unreadable memory returned as the output, and a SIGSEGV handler of the candidate's that
  // computes the softmax into it when it is first read: every copy kjudge made of the outputs
  // ran the handler, outside every timed region, and it read correct (34-78x with the handler
  // in C). kjudge reads a forward's CPU outputs first with every signal blocked, so the fault
  // ends the worker: the candidate's crash, in its first trial.
  const auto r =
      run_eval("problems/level1/softmax.py", "examples/faulty/computes_on_page_fault.py", cpu_fast);
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_EQ(r.result["status"], "crashed") << r.output;
  EXPECT_NE(r.result.value("message", "").find("SIGSEGV"), std::string::npos)
      << r.result.value("message", "");
  EXPECT_TRUE(r.result["trials"].empty()) << r.result["trials"].dump().substr(0, 300);
}

TEST(EvalCpu, NoSignalHandlerRunsOnTheTimingThreadBetweenACallAndItsCopy) {
  // An empty output returned at once, and a timer aimed at kjudge's thread whose handler (set
  // from C) computes the softmax into it 30 us later, after the clock stopped: correct at 36x
  // (22-57x with the handler in C), the timed calls doing nothing. The timing thread keeps its
  // signals blocked while it times, and a drawn call is copied as its clock stops: the audited
  // calls hold empty outputs. The trials, where the handler runs, pass.
  const auto r =
      run_eval("problems/level1/softmax.py", "examples/faulty/computes_after_return.py", cpu_fast);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.result["status"], "incorrect") << r.output;
  ASSERT_FALSE(r.result["trials"].empty()) << r.output;
  for (const auto& t : r.result["trials"])
    EXPECT_TRUE(t["outputs"][0]["passed"].get<bool>()) << t.dump().substr(0, 300);
  bool differ = false;
  for (const auto& f : r.result["flags"]) differ = differ || f["code"] == "timing_outputs_differ";
  EXPECT_TRUE(differ) << r.result["flags"].dump();
}

TEST(EvalCpu, TheTimingWaitsForAHelperProcessBusyOnlyAtItsStart) {
  // The helper spins for its first 2.5 s (from the fourth call), then idles, as torch.compile's
  // compile workers do after they import torch: the timing waits for it, and both sides' host
  // figures stand. (Timed at once, its start ran beside the samples and withheld them; an H100
  // sweep's torch.compile candidate raised python_threads_busy so.)
  const auto r =
      run_eval("problems/level1/matmul.py", "examples/matmul/busy_helper_at_start.py", cpu_fast);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct") << r.result["flags"].dump(1);
  EXPECT_FALSE(has_flag(r.result, "python_threads_busy")) << r.result["flags"].dump(1);
  EXPECT_NE(flag_message(r.result, "waited_for_background_cpu").find("to go quiet before"),
            std::string::npos)
      << r.result["flags"].dump(1);
  EXPECT_TRUE(r.result["timing"]["reference"]["host_wall"]["valid"].get<bool>());
  EXPECT_TRUE(r.result["timing"]["candidate"]["host_wall"]["valid"].get<bool>());
}

TEST(EvalCpu, AThreadThatLoadsTheCpuBetweenTheCandidatesCallsIsFlagged) {
  // Its thread hashes while the reference is timed and pauses for its own forwards: 1.84x host
  // wall for the same matmul, unflagged. The host-side figures are withheld now.
  const auto r =
      run_eval("problems/level1/matmul.py", "examples/faulty/loads_cpu_between_calls.py", cpu_fast);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct");
  EXPECT_NE(flag_message(r.result, "python_threads_busy").find("host-side figures"),
            std::string::npos)
      << r.result["flags"].dump(1);
  EXPECT_FALSE(r.result["timing"]["candidate"]["host_wall"]["valid"].get<bool>());
  EXPECT_FALSE(r.result["timing"]["reference"]["host_wall"]["valid"].get<bool>());
  // Two such threads started with _thread, outside threading's registry (4.0x for the same
  // softmax before, with cpu_wait_samples warnings alone).
  const auto raw = run_eval("problems/level1/softmax.py",
                            "examples/faulty/loads_cpu_in_a_raw_thread.py", cpu_fast);
  EXPECT_EQ(raw.exit_code, 0) << raw.output;
  EXPECT_NE(flag_message(raw.result, "python_threads_busy").find("outside Python's registry"),
            std::string::npos)
      << raw.result["flags"].dump(1);
  EXPECT_FALSE(raw.result["timing"]["reference"]["host_wall"]["valid"].get<bool>());
  // An honest candidate's run has no such thread.
  const auto same = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", cpu_fast);
  EXPECT_FALSE(has_flag(same.result, "python_threads_busy")) << same.result["flags"].dump(1);
  // Nor is one whose threads work for its own forwards only: their CPU is booked to its turns
  // (over the whole loop, they used well over 2% of it and the flag was raised).
  const auto pooled =
      run_eval("problems/level1/matmul.py", "examples/matmul/row_blocks_in_threads.py", cpu_fast);
  EXPECT_EQ(pooled.result["status"], "correct") << pooled.output;
  EXPECT_FALSE(has_flag(pooled.result, "python_threads_busy")) << pooled.result["flags"].dump(1);
  EXPECT_TRUE(pooled.result["timing"]["candidate"]["host_wall"]["valid"].get<bool>());
}

/** A field of the host-wall speedup ("ratio", or "ci_lo": its interval's low end); -1 where
 *  none stood. */
double host_speedup(const nlohmann::json& result, const char* field = "ratio") {
  for (const auto& s : result["timing"]["speedups"])
    if (s["kind"] == "host_wall" && s["valid"].get<bool>() && s[field].is_number())
      return s[field].get<double>();
  return -1;
}

TEST(EvalCpu, NativeStateTheCandidateChangesStaysOutOfTheReferencesCalls) {
  // Each of these read correct at 1.9-4.8x for the reference's own function, and none was
  // flagged: a finalizer on the reference's kept output (run where kjudge freed it, inside the
  // reference's next timed call), glibc's malloc tunables, MKL's thread-local thread count (also
  // set from finalizers on either side's output, where kjudge frees them), and every thread
  // pinned to one CPU. An exact copy reads about 1x (0.91-1.01x in the QA pass).
  struct attack {
    const char* problem;
    const char* candidate;
    const char* flagged;  // what candidate_changed_torch_state names, or nullptr
    double below;         // the host speedup must read below this where it stands
  };
  const bool several_cpus = kj::runner::thread_cpus().size() >= 2;
#if defined(__x86_64__)
  const char* mkl = "MKL's thread count";  // PyPI's torch for x86 links MKL in
#else
  const char* mkl = nullptr;
#endif
  const attack attacks[] = {
      {"problems/level1/softmax.py", "examples/faulty/slows_reference_by_finalizer.py", nullptr,
       2.5},
      {"problems/level1/softmax.py", "examples/faulty/sets_malloc_tunables.py", nullptr, 2.5},
      {"problems/level1/matmul.py", "examples/faulty/sets_mkl_threads.py", mkl, 1.5},
      // The same change made from finalizers, where kjudge frees the two sides' outputs.
      {"problems/level1/matmul.py", "examples/faulty/sets_mkl_threads_from_finalizers.py", mkl,
       1.5},
      {"problems/level1/softmax.py", "examples/faulty/turns_off_huge_pages.py",
       "transparent huge pages off", 2.5},
      {"problems/level1/softmax.py", "examples/faulty/pins_reference_threads.py",
       several_cpus ? "the CPU affinity of the worker's threads" : nullptr, 2.0},
      // Finalizers that ran while the reference's state was in force (the trial's input freed
      // as the next trial began, a cycle collected in the reference's turn): 1.79x and 1.93x.
      {"problems/level1/matmul.py", "examples/faulty/sets_threads_from_input_finalizer.py",
       "torch.get_num_threads()", 1.5},
      {"problems/level1/matmul.py", "examples/faulty/sets_threads_from_a_cycle.py",
       "torch.get_num_threads()", 1.5},
      // MKL_CBWR=COMPATIBLE set at import, read by MKL at the reference's first matmul; the
      // candidate's own product through oneDNN (2.3-6.9x). Kept to the candidate without a note.
      {"problems/level1/matmul.py", "examples/faulty/sets_mkl_code_path.py", nullptr, 1.5},
      // OpenMP's nesting limit 0 between its calls: every parallel region of the reference's
      // on one thread (1.9x).
      {"problems/level1/matmul.py", "examples/faulty/sets_openmp_nesting.py",
       mkl != nullptr ? "OpenMP's nesting limit" : nullptr, 1.5},
      // A finalizer on the candidate's own output that computed the next sample's product
      // where kjudge freed it, after the inputs' rewrite (233x), and a sleeping property on
      // torch.backends.cudnn's class, which F.layer_norm reads (5-6x).
      {"problems/level1/matmul.py", "examples/faulty/precomputes_when_freed.py", nullptr, 1.5},
      {"problems/level1/layernorm.py", "examples/faulty/slows_reference_by_backend_property.py",
       "torch.backends.cudnn.CudnnModule.enabled", 2.0},
      // MKL's verbose mode on for the reference's calls, stdout a file opened O_DSYNC: each of
      // its GEMMs slept until the disk had its line (1.57-1.62x).
      {"problems/level2/quantvla_selective_layout_fusion.py",
       "examples/faulty/slows_reference_by_mkl_verbose.py", nullptr, 1.3},
  };
  for (const auto& a : attacks) {
    const auto r = run_eval(a.problem, a.candidate, cpu_fast);
    // A cycle is collected wherever an allocation crosses the collector's threshold: in a timed
    // turn of the candidate's, its finaliser's change is a change made while timed, the
    // candidate's runtime error, which names it.
    if (std::string(a.candidate).find("from_a_cycle") != std::string::npos &&
        r.result.value("status", "") == "runtime_error") {
      EXPECT_EQ(r.exit_code, 4) << r.output;
      EXPECT_NE(r.result["message"].get<std::string>().find("while it was timed (" +
                                                            std::string(a.flagged)),
                std::string::npos)
          << r.result["message"];
      continue;
    }
    EXPECT_EQ(r.exit_code, 0) << a.candidate << "\n" << r.output;
    EXPECT_EQ(r.result["status"], "correct") << a.candidate;
    if (a.flagged != nullptr) {
      EXPECT_NE(flag_message(r.result, "candidate_changed_torch_state").find(a.flagged),
                std::string::npos)
          << a.candidate << ": " << r.result["flags"].dump(1);
    }
    const double speedup = host_speedup(r.result);
    if (speedup < 0) {
      std::printf("%s: no host-wall speedup stood (a loaded machine): not compared\n", a.candidate);
    } else if (host_speedup(r.result, "ci_lo") < 1.0) {
      // A noisy run (a CI machine's neighbour): 8.5x over [0.70, 18.3] once, which claims no
      // speedup at all; the attacks read 1.9-4.8x with their intervals well above 1.
      std::printf("%s: %.2fx, its interval reaching below 1 (a noisy run): not compared\n",
                  a.candidate, speedup);
    } else {
      EXPECT_LT(speedup, a.below) << a.candidate << ": " << r.result["timing"]["speedups"].dump();
    }
  }
  // A perf event sampling each of the worker's threads, enabled between the candidate's calls
  // (2.1x): where the system allows perf events, new ones are the candidate's error; where it
  // refuses them, the example is a plain matmul.
  const auto perf =
      run_eval("problems/level1/matmul.py", "examples/faulty/opens_perf_events.py", cpu_fast);
  if (perf.result.value("status", "") == "correct") {
    const double speedup = host_speedup(perf.result);
    if (speedup >= 0 && host_speedup(perf.result, "ci_lo") >= 1.0) {  // as above
      EXPECT_LT(speedup, 1.5) << perf.result["timing"]["speedups"].dump();
    }
  } else {
    EXPECT_EQ(perf.exit_code, 3) << perf.output;
    EXPECT_NE(perf.result.value("message", "").find("perf events"), std::string::npos)
        << perf.output;
  }
  // A variable the candidate sets at import that the reference's own forward reads: the
  // reference runs under the environment the problem left (it doubled its output here, and the
  // candidate's doubled output read correct).
  const scratch_dir dir;
  const auto reads_env = dir.path / "reads_env.py";
  std::ofstream(reads_env) << "import os\nimport torch\nimport torch.nn as nn\n"
                              "class Model(nn.Module):\n    def forward(self, x):\n"
                              "        return x * 2 if os.environ.get('KJ_DOUBLE') else x\n"
                              "def get_inputs():\n    return [torch.randn(64)]\n"
                              "def get_init_inputs():\n    return []\n";
  const auto sets_env = dir.path / "sets_env.py";
  std::ofstream(sets_env) << "import os\nimport torch\nos.environ['KJ_DOUBLE'] = '1'\n"
                             "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
                             "        return x * 2\n";
  const auto env = run_eval(reads_env.string(), sets_env.string(),
                            {"--device", "cpu", "--trials", "2", "--no-timing"});
  EXPECT_EQ(env.exit_code, 1) << env.output;
  EXPECT_EQ(env.result["status"], "incorrect");
  // A C handler of SIGRTMAX that sleeps (sigaction through ctypes), and a POSIX timer that sends
  // it, armed between the candidate's calls (2.0-2.3x before): in the reference's turn the
  // signal's disposition is the default again, and the timer's next signal ends the worker
  // there, as the candidate's crash.
  const auto timer = run_eval("problems/level1/matmul.py",
                              "examples/faulty/sleeps_in_a_c_signal_handler.py", cpu_fast);
  EXPECT_EQ(timer.exit_code, 4) << timer.output;
  EXPECT_EQ(timer.result["status"], "crashed") << timer.result.value("message", "");
}

TEST(EvalCpu, ABudgetLongerThanTheTimeoutEndsInFiguresNotATimeout) {
  // --budget 100 --timeout 10 on a softmax ended timed out during 'timing'. The loop now ends by
  // half of what --timeout leaves (the target error is out of reach, so that only it ends).
  const auto r = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py",
                          {"--device", "cpu", "--trials", "1", "--budget", "100", "--target-rse",
                           "0.0001", "--timeout", "20"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(r.result.is_object()) << r.output;
  EXPECT_EQ(r.result["status"], "correct") << r.result.value("message", "");
  EXPECT_EQ(r.result["timing"]["stopped_by"], "time-limit");
  EXPECT_LT(r.result["wall_s"].get<double>(), 20.0);
  const auto& wall = r.result["timing"]["candidate"]["host_wall"];
  EXPECT_GE(wall["n"].get<int>(), 20) << wall.dump();
  EXPECT_NE(wall.value("note", "").find("stopped by the evaluation's time limit"),
            std::string::npos)
      << wall.value("note", "");
}

TEST(EvalCpu, HangBecomesATimeout) {
  const auto r = run_eval("problems/level1/softmax.py", "examples/faulty/hang.py",
                          with({"--timeout", "25", "--no-pool"}));
  EXPECT_EQ(r.exit_code, 5) << r.output;
  EXPECT_EQ(r.result["status"], "timed_out");
  // The message names the phase the timeout struck in (the candidate hangs in its first trial).
  EXPECT_EQ(r.result["message"].get<std::string>().rfind("evaluation timed out after 2", 0), 0U)
      << r.result["message"];
  EXPECT_NE(r.result["message"].get<std::string>().find(" during '"), std::string::npos)
      << r.result["message"];
  EXPECT_LT(r.result["wall_s"].get<double>(), 40.0);
}

TEST(EvalCpu, ATimeoutShorterThanATenthOfASecondReadsInMilliseconds) {
  // It read "evaluation timed out after 0.0 s", as if no time had been given.
  const auto r = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py",
                          with({"--timeout", "0.03"}));
  EXPECT_EQ(r.exit_code, 5) << r.output;
  const auto message = r.result.value("message", "");
  EXPECT_EQ(message.find("after 0.0 s"), std::string::npos) << message;
  // Milliseconds, or (on a loaded machine: the wall clock includes ending the worker) a tenth of
  // a second and more with two decimals.
  EXPECT_TRUE(std::regex_search(message, std::regex("timed out after ([0-9.]+ ms|0\\.[0-9]{2} s|"
                                                    "[0-9]+\\.[0-9] s)")))
      << message;
}

std::string text_of(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(EvalCpu, TheSameFunctionOnBothSidesReadsAboutOne) {
  // kjudge's own work between one side's samples leaves that side's caches colder: with a
  // switch's whole check before each of the reference's calls (the reference's outputs freed
  // within its turn), a 4 us ReLU against itself read 1.25x (4.7 against 3.8 us), on a third of
  // the samples. 1.01-1.02x without it, on the CPU machine. A reference returning a named tuple
  // (torch.max over a dimension) had that check before every call until its outputs were read
  // through their items: 1.23-1.27x against itself, 1.01-1.04x since.
  const scratch_dir dir;
  for (const std::string forward : {"torch.relu(x)", "torch.max(x.view(4, 16), dim=-1)"}) {
    const auto problem = dir.path / "relu.py";
    const auto candidate = dir.path / "relu_new.py";
    std::ofstream(problem) << "import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
                              "    def forward(self, x):\n        return "
                           << forward
                           << "\ndef get_inputs():\n    return [torch.randn(64)]\n"
                              "def get_init_inputs():\n    return []\n";
    std::ofstream(candidate) << "import torch\nimport torch.nn as nn\nclass ModelNew(nn.Module):\n"
                                "    def forward(self, x):\n        return "
                             << forward << "\n";
    const auto r = run_eval(problem.string(), candidate.string(),
                            {"--device", "cpu", "--trials", "1", "--budget", "1"});
    EXPECT_EQ(r.exit_code, 0) << forward << "\n" << r.output;
    ASSERT_EQ(r.result["status"], "correct") << forward << "\n" << r.output;
    const double speedup = host_speedup(r.result);
    if (speedup < 0) GTEST_SKIP() << forward << ": no host-wall speedup stood (a loaded machine)";
    EXPECT_GT(speedup, 0.87) << forward << ": " << r.result["timing"]["speedups"].dump();
    EXPECT_LT(speedup, 1.15) << forward << ": " << r.result["timing"]["speedups"].dump();
  }
}

TEST(EvalCpu, AnInPlaceChangeTheReferenceMakesTooIsInfo) {
  // An exact copy of a reference whose inplace ReLU writes its input was warned that it changed
  // its input in place.
  const scratch_dir dir;
  const auto problem = dir.path / "relu_inplace.py";
  std::ofstream(problem) << "import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
                            "    def forward(self, x, y):\n"
                            "        return torch.relu_(x) + y\n"
                            "def get_inputs():\n    return [torch.randn(8, 8), torch.randn(8, 8)]\n"
                            "def get_init_inputs():\n    return []\n";
  struct example {
    std::string forward;
    nlohmann::json modified;
    std::vector<std::string> severities;
  };
  // The second also writes y, which the reference leaves alone: that one is warned.
  for (const auto& [forward, modified, severities] :
       {example{"torch.relu_(x) + y", {0}, {"info"}},
        example{"torch.relu_(x) + (y.add_(1.0) - 1.0)", {0, 1}, {"warning", "info"}},
        // x changed, but to other values than the reference leaves there.
        example{"(torch.relu(x) + y, x.fill_(1e30))[0]", {0}, {"warning"}}}) {
    const auto candidate = dir.path / "relu_inplace_new.py";
    std::ofstream(candidate) << "import torch\nimport torch.nn as nn\nclass ModelNew(nn.Module):\n"
                                "    def forward(self, x, y):\n        return "
                             << forward << "\n";
    const auto r = run_eval(problem.string(), candidate.string(),
                            {"--device", "cpu", "--trials", "1", "--no-timing"});
    ASSERT_EQ(r.result["status"], "correct") << forward << "\n" << r.output;
    const auto& trial = r.result["trials"][0];
    EXPECT_EQ(trial["reference_inputs_modified"], nlohmann::json::array({0})) << trial.dump();
    EXPECT_EQ(trial["inputs_modified"], modified) << trial.dump();
    std::vector<std::string> seen;
    for (const auto& f : r.result["flags"])
      if (f["code"] == "input_modified") seen.push_back(f["severity"]);
    EXPECT_EQ(seen, severities) << forward << "\n" << r.output;
  }
}

TEST(EvalCpu, ACandidateThatFoldsAConstantIntoItsWeightsKeepsThemWhereTheCopyFails) {
  // relu(x W^T + b) * 1.5 as relu(x (1.5 W)^T + 1.5 b): correct with the weights both models
  // build under one seed (KernelBench's rule), and every trial failed once the reference's were
  // copied in (by the ends of their names; the outputs off by 1/1.5 exactly). A wrong factor
  // still fails, with the copied weights.
  const scratch_dir dir;
  const auto problem = dir.path / "gemm_relu_scale.py";
  std::ofstream(problem) << "import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
                            "    def __init__(self, n_in, n_out, scale):\n"
                            "        super().__init__()\n"
                            "        self.linear = nn.Linear(n_in, n_out)\n"
                            "        self.scale = scale\n"
                            "    def forward(self, x):\n"
                            "        return torch.relu(self.linear(x)) * self.scale\n"
                            "def get_inputs():\n    return [torch.randn(16, 32)]\n"
                            "def get_init_inputs():\n    return [32, 24, 1.5]\n";
  struct example {
    std::string factor, status, weight_copy;
  };
  for (const auto& [factor, status, weight_copy] :
       {example{"scale", "correct", "seed_kept"}, example{"2.0", "incorrect", "by_name_end"}}) {
    const auto candidate = dir.path / "folded.py";
    std::ofstream(candidate) << "import torch\nimport torch.nn as nn\n"
                                "import torch.nn.functional as F\nclass ModelNew(nn.Module):\n"
                                "    def __init__(self, n_in, n_out, scale):\n"
                                "        super().__init__()\n"
                                "        lin = nn.Linear(n_in, n_out)\n"
                                "        with torch.no_grad():\n"
                                "            self.weight = nn.Parameter(lin.weight * "
                             << factor << ")\n            self.bias = nn.Parameter(lin.bias * "
                             << factor
                             << ")\n    def forward(self, x):\n"
                                "        return F.relu(F.linear(x, self.weight, self.bias))\n";
    const auto r = run_eval(problem.string(), candidate.string(),
                            {"--device", "cpu", "--trials", "2", "--no-timing"});
    EXPECT_EQ(r.result["status"], status) << factor << "\n" << r.output;
    EXPECT_EQ(r.result["correctness"]["weight_copy"], weight_copy) << r.output;
    EXPECT_EQ(has_flag(r.result, "weights_copy_undone"), status == "correct") << r.output;
    if (status == "correct") {
      EXPECT_NE(flag_message(r.result, "weights_copy_undone").find("(by_name_end)"),
                std::string::npos)
          << r.output;
      EXPECT_EQ(r.result["trials"].size(), 3U) << r.result["trials"].dump();  // 2 and held-out
    }
  }
  // The same folded weights kept transposed, made at the first call: its own weights written
  // back into it left that copy as the reference's weights had made it, and it failed (a
  // torch.compile with freezing, the same). A ModelNew built afresh under the seed passes.
  const auto cached = dir.path / "folded_cached.py";
  std::ofstream(cached) << "import torch\nimport torch.nn as nn\nclass ModelNew(nn.Module):\n"
                           "    def __init__(self, n_in, n_out, scale):\n"
                           "        super().__init__()\n"
                           "        self.linear = nn.Linear(n_in, n_out)\n"
                           "        with torch.no_grad():\n"
                           "            self.linear.weight.mul_(scale)\n"
                           "            self.linear.bias.mul_(scale)\n"
                           "        self.wt = None\n"
                           "    def forward(self, x):\n"
                           "        if self.wt is None:\n"
                           "            self.wt = self.linear.weight.t().contiguous()\n"
                           "        return torch.relu(torch.addmm(self.linear.bias, x, self.wt))\n";
  const auto r = run_eval(problem.string(), cached.string(),
                          {"--device", "cpu", "--trials", "2", "--no-timing"});
  EXPECT_EQ(r.result["status"], "correct") << r.output;
  EXPECT_EQ(r.result["correctness"]["weight_copy"], "seed_kept") << r.output;
}

TEST(EvalCpu, WeightsInAnotherLayoutLazyOnesAndNumPyNumbersAreJudged) {
  // An honest candidate that kept its Linear in oneDNN's layout (torch.utils.mkldnn) was the
  // candidate's runtime error ("copy_mkldnn_: between mkldnn layout and dense Tensors is not
  // implemented"), one of LazyLinear layers named as the reference's kept values of its own
  // (weights_not_copied, incorrect), and numpy.int64, numpy.bool_ and numpy.float32 outputs were
  // runtime errors ("returned an int64, not a tensor ... or a number").
  const scratch_dir dir;
  const auto linear = dir.path / "linear.py";
  std::ofstream(linear) << "import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
                           "    def __init__(self):\n        super().__init__()\n"
                           "        self.linear = nn.Linear(32, 24)\n"
                           "    def forward(self, x):\n        return torch.relu(self.linear(x))\n"
                           "def get_inputs():\n    return [torch.randn(16, 32)]\n"
                           "def get_init_inputs():\n    return []\n";
  const std::string head =
      "import torch\nimport torch.nn as nn\nclass ModelNew(nn.Module):\n"
      "    def __init__(self):\n        super().__init__()\n";
  const auto layout = dir.path / "layout.py";
  std::ofstream(layout) << "import torch.utils.mkldnn\n"
                        << head
                        << "        self.linear = nn.Linear(32, 24)\n"
                           "        if torch.backends.mkldnn.is_available():\n"
                           "            self.linear = torch.utils.mkldnn.to_mkldnn(self.linear)\n"
                           "    def forward(self, x):\n        return torch.relu(self.linear(x))\n";
  const auto lazy = dir.path / "lazy.py";
  std::ofstream(lazy) << head
                      << "        self.linear = nn.LazyLinear(24)\n"
                         "    def forward(self, x):\n        return torch.relu(self.linear(x))\n";
  for (const auto& [candidate, copy] : {std::pair{layout, "by_name"}, std::pair{lazy, "by_name"}}) {
    const auto r = run_eval(linear.string(), candidate.string(),
                            {"--device", "cpu", "--trials", "2", "--no-timing"});
    EXPECT_EQ(r.exit_code, 0) << candidate << "\n" << r.output;
    EXPECT_EQ(r.result["status"], "correct") << r.output;
    EXPECT_EQ(r.result["correctness"]["weight_copy"], copy) << r.output;
    EXPECT_FALSE(has_flag(r.result, "weights_not_copied")) << r.output;
  }
  // Two tensors of one shape whose values and names say nothing (`gamma` and `beta` now do:
  // _LAST_NAME_SYNONYMS), declared in the other order than the reference's: paired by order,
  // swapped, every trial failed, and nothing said why.
  const auto affine = dir.path / "affine.py";
  std::ofstream(affine) << "import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
                           "    def __init__(self):\n        super().__init__()\n"
                           "        self.weight = nn.Parameter(torch.randn(16))\n"
                           "        self.bias = nn.Parameter(torch.randn(16))\n"
                           "    def forward(self, x):\n        return x * self.weight + self.bias\n"
                           "def get_inputs():\n    return [torch.randn(8, 16)]\n"
                           "def get_init_inputs():\n    return []\n";
  const auto swapped = dir.path / "swapped.py";
  std::ofstream(swapped)
      << head
      << "        self.shift = nn.Parameter(torch.zeros(16))\n"
         "        self.scale = nn.Parameter(torch.ones(16))\n"
         "    def forward(self, x):\n        return x * self.scale + self.shift\n";
  const auto order = run_eval(affine.string(), swapped.string(),
                              {"--device", "cpu", "--trials", "2", "--no-timing"});
  EXPECT_EQ(order.result["status"], "incorrect") << order.output;
  EXPECT_EQ(order.result["correctness"]["weight_copy"], "by_order") << order.output;
  EXPECT_NE(flag_message(order.result, "weights_paired_by_order").find("declaration order"),
            std::string::npos)
      << order.result["flags"].dump(1);
  const auto count = dir.path / "count.py";
  std::ofstream(count) << "import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
                          "    def forward(self, x):\n"
                          "        return int((x > 0).sum()), bool((x > 2).any()), "
                          "float(x.sum())\n"
                          "def get_inputs():\n    return [torch.randn(64, 64)]\n"
                          "def get_init_inputs():\n    return []\n";
  const auto numpy = dir.path / "numpy_numbers.py";
  std::ofstream(numpy) << "import numpy as np\nimport torch\nclass ModelNew(torch.nn.Module):\n"
                          "    def forward(self, x):\n        a = x.numpy()\n"
                          "        return (a > 0).sum(), (a > 2).any(), a.sum(dtype=np.float32)\n";
  const auto r = run_eval(count.string(), numpy.string(),
                          {"--device", "cpu", "--trials", "2", "--atol", "1e-3", "--rtol", "1e-4"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct") << r.output;
}

TEST(EvalCpu, ANamesakeOfOnesAndANameEndArePairedByName) {
  // Each case: the reference's __init__ and forward, the candidate's, and the copy's method (every
  // one correct). A weight kept as (1, 1, 16) to broadcast, for the reference's (16,) of the same
  // name, was left unpaired (its ones read incorrect, weights_not_copied), and a LayerNorm's
  // `weight` and `bias` declared bias first, for `ln.weight` and `ln.bias`, were paired by order,
  // swapped. Where a name's end fits two of the reference's tensors equally (`weight` for
  // `a.weight` and `b.weight`; `fc.bias` for `bias` and `gemm.bias`, which went to `bias` while
  // a name had only to end in the other, and failed), declaration order decides.
  struct naming {
    const char *reference, *candidate, *copy;
  };
  const naming cases[] = {
      {"        self.ln = nn.LayerNorm(16)\n"
       "        self.scale = nn.Parameter(torch.randn(16))\n"
       "        with torch.no_grad():\n"
       "            self.ln.weight.copy_(torch.randn(16))\n"
       "            self.ln.bias.copy_(torch.randn(16))\n"
       "    def forward(self, x):\n        return self.ln(x) * self.scale\n",
       "        self.bias = nn.Parameter(torch.zeros(16))\n"
       "        self.weight = nn.Parameter(torch.ones(16))\n"
       "        self.scale = nn.Parameter(torch.ones(1, 1, 16))\n"
       "    def forward(self, x):\n"
       "        return F.layer_norm(x, (16,), self.weight, self.bias) * self.scale\n",
       "by_name_end"},
      {"        self.a = nn.Linear(16, 16, bias=False)\n"
       "        self.b = nn.Linear(16, 16, bias=False)\n"
       "    def forward(self, x):\n        return self.b(self.a(x))\n",
       "        self.weight = nn.Parameter(torch.zeros(16, 16))\n"
       "        self.other = nn.Parameter(torch.zeros(16, 16))\n"
       "    def forward(self, x):\n        return x @ self.weight.t() @ self.other.t()\n",
       "by_order"},
      {"        self.gemm = nn.Linear(16, 16)\n"
       "        self.bias = nn.Parameter(torch.randn(16))\n"
       "    def forward(self, x):\n        return torch.relu(self.gemm(x)) + self.bias\n",
       "        self.fc = nn.Linear(16, 16)\n"
       "        self.shift = nn.Parameter(torch.zeros(16))\n"
       "    def forward(self, x):\n        return torch.relu(self.fc(x)) + self.shift\n",
       "by_order"},
      // Names split at underscores as at dots: `post_bias` ends as `bias` does.
      {"        self.gemm = nn.Linear(16, 16)\n"
       "        self.bias = nn.Parameter(torch.randn(16))\n"
       "    def forward(self, x):\n        return torch.relu(self.gemm(x)) + self.bias\n",
       "        self.fc = nn.Linear(16, 16)\n"
       "        self.post_bias = nn.Parameter(torch.zeros(16))\n"
       "    def forward(self, x):\n        return torch.relu(self.fc(x)) + self.post_bias\n",
       "by_name_end"},
      // Flat names, bias declared first (swapped by order before, and incorrect).
      {"        self.ln = nn.LayerNorm(16)\n"
       "        nn.init.normal_(self.ln.weight)\n        nn.init.normal_(self.ln.bias)\n"
       "    def forward(self, x):\n        return self.ln(x)\n",
       "        self.ln_bias = nn.Parameter(torch.zeros(16))\n"
       "        self.ln_weight = nn.Parameter(torch.zeros(16))\n"
       "    def forward(self, x):\n"
       "        return F.layer_norm(x, (16,), self.ln_weight, self.ln_bias)\n",
       "by_name_end"},
      // The seed's values in a shape with a dimension of size 1 more (left to the seed before,
      // weights_not_copied).
      {"        self.bias = nn.Parameter(torch.randn(16))\n"
       "    def forward(self, x):\n        return x + self.bias\n",
       "        self.shift = nn.Parameter(torch.randn(1, 1, 16))\n"
       "    def forward(self, x):\n        return x + self.shift\n",
       "by_value"},
      // Each shape's tensors in the reference's order, the shapes interleaved otherwise (a bias
      // before its weight): nothing was copied before.
      {"        self.weight = nn.Parameter(torch.randn(16, 16))\n"
       "        self.bias = nn.Parameter(torch.randn(16))\n"
       "        self.scale = nn.Parameter(torch.randn(16))\n"
       "    def forward(self, x):\n"
       "        return (x @ self.weight.t() + self.bias) * self.scale\n",
       "        self.b = nn.Parameter(torch.zeros(16))\n"
       "        self.w = nn.Parameter(torch.zeros(16, 16))\n"
       "        self.s = nn.Parameter(torch.zeros(16))\n"
       "    def forward(self, x):\n        return (x @ self.w.t() + self.b) * self.s\n",
       "by_order"},
      // An index is no name: a Sequential's `net.2` (ReLUs between) is a ModuleList's
      // `layers.1`; counted, `net.2.weight` went to `layers.2.weight`, and this failed.
      {"        self.net = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 16),\n"
       "                                 nn.ReLU(), nn.Linear(16, 16))\n"
       "    def forward(self, x):\n        return self.net(x)\n",
       "        self.layers = nn.ModuleList(nn.Linear(16, 16) for _ in range(3))\n"
       "        with torch.no_grad():\n"
       "            for p in self.parameters():\n                p.zero_()\n"
       "    def forward(self, x):\n"
       "        for i, layer in enumerate(self.layers):\n"
       "            x = layer(x) if i == 2 else torch.relu(layer(x))\n"
       "        return x\n",
       "by_order"},
      // Renamed LayerNorms, each declaring its bias first: paired module by module, tensor by
      // last name (by order alone, each weight took a bias, and this failed).
      {"        self.ln1 = nn.LayerNorm(16)\n        self.fc = nn.Linear(16, 16)\n"
       "        self.ln2 = nn.LayerNorm(16)\n"
       "        for p in self.parameters():\n            nn.init.normal_(p)\n"
       "    def forward(self, x):\n        return self.ln2(self.fc(self.ln1(x)))\n",
       "        self.norm1 = Norm()\n        self.proj = nn.Linear(16, 16)\n"
       "        self.norm2 = Norm()\n"
       "    def forward(self, x):\n        return self.norm2(self.proj(self.norm1(x)))\n"
       "class Norm(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
       "        self.bias = nn.Parameter(torch.zeros(16))\n"
       "        self.weight = nn.Parameter(torch.ones(16))\n"
       "    def forward(self, x):\n"
       "        return F.layer_norm(x, (16,), self.weight, self.bias)\n",
       "by_order"},
      // Modules declared in another order: each bias goes where its weight went by the end of
      // its name; by order, `proj.bias` took `mix.bias`, and this failed.
      {"        self.proj = nn.Linear(16, 24)\n        self.fc = nn.Linear(24, 24)\n"
       "    def forward(self, x):\n        return self.fc(torch.relu(self.proj(x)))\n",
       "        self.mix = nn.Linear(24, 24)\n        self.inp = nn.Linear(16, 24)\n"
       "        with torch.no_grad():\n"
       "            for p in self.parameters():\n                p.zero_()\n"
       "    def forward(self, x):\n        return self.mix(torch.relu(self.inp(x)))\n",
       "by_name_end"},
      // Weights kept as non-persistent buffers under other names (left to the seed before).
      {"        self.ln = nn.LayerNorm(16)\n"
       "        nn.init.normal_(self.ln.weight)\n        nn.init.normal_(self.ln.bias)\n"
       "    def forward(self, x):\n        return self.ln(x)\n",
       "        self.register_buffer('gain', torch.ones(16), persistent=False)\n"
       "        self.register_buffer('offset', torch.zeros(16), persistent=False)\n"
       "    def forward(self, x):\n        return F.layer_norm(x, (16,), self.gain, self.offset)\n",
       "by_order"},
      // A weight kept as W^T, (in, out), with the candidate's own values: it takes the
      // reference's transposed (it kept its own before, weights_not_copied).
      {"        self.fc = nn.Linear(16, 32)\n"
       "    def forward(self, x):\n        return self.fc(x)\n",
       "        self.w_t = nn.Parameter(torch.zeros(16, 32))\n"
       "        self.bias = nn.Parameter(torch.zeros(32))\n"
       "    def forward(self, x):\n        return x @ self.w_t + self.bias\n",
       "by_order"},
      // A ModuleList of layers that keep W^T, with their own values, for a Sequential (ReLUs
      // between): the first weight takes its namesake transposed, the second follows its bias's
      // module. By the end of its name, the first weight went to the second layer's W^T, of
      // its shape, and this failed.
      {"        self.layers = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16))\n"
       "    def forward(self, x):\n        return self.layers(x)\n",
       "        self.layers = nn.ModuleList([TLinear(16, 32), TLinear(32, 16)])\n"
       "    def forward(self, x):\n"
       "        return self.layers[1](torch.relu(self.layers[0](x)))\n"
       "class TLinear(nn.Module):\n    def __init__(self, i, o):\n        super().__init__()\n"
       "        self.weight = nn.Parameter(torch.zeros(i, o))\n"
       "        self.bias = nn.Parameter(torch.zeros(o))\n"
       "    def forward(self, x):\n        return torch.addmm(self.bias, x.reshape(-1, "
       "x.shape[-1]),\n"
       "                           self.weight).reshape(*x.shape[:-1], -1)\n",
       "by_name_end"},
      // A renamed buffer of the reference's with no module counterpart, beside renamed
      // LayerNorms: module by module without the reference's buffers had come before the order
      // with them, and `shift` was left uncopied.
      {"        self.register_buffer('shift', torch.randn(16))\n"
       "        self.ln1 = nn.LayerNorm(16)\n        self.ln2 = nn.LayerNorm(16)\n"
       "        for p in self.parameters():\n            nn.init.normal_(p)\n"
       "    def forward(self, x):\n        return self.ln2(self.ln1(x) + self.shift)\n",
       "        self.register_buffer('offset', torch.zeros(16))\n"
       "        self.norm1 = nn.LayerNorm(16)\n        self.norm2 = nn.LayerNorm(16)\n"
       "    def forward(self, x):\n        return self.norm2(self.norm1(x) + self.offset)\n",
       "by_order"},
      // Flat tensors at the root are no counterpart of the reference's `fc` (a weight paired
      // by value had tied `fc` to the root, and `fc.bias` took the LayerNorm's `bias`).
      {"        self.fc = nn.Linear(16, 32)\n        self.ln = nn.LayerNorm(32)\n"
       "        nn.init.normal_(self.ln.weight)\n        nn.init.normal_(self.ln.bias)\n"
       "    def forward(self, x):\n        return self.ln(self.fc(x))\n",
       "        self.w = nn.Parameter(nn.Linear(16, 32).weight.detach().clone())\n"
       "        self.fc_b = nn.Parameter(torch.zeros(32))\n"
       "        self.ln_w = nn.Parameter(torch.ones(32))\n"
       "        self.bias = nn.Parameter(torch.zeros(32))\n"
       "    def forward(self, x):\n"
       "        return F.layer_norm(x @ self.w.t() + self.fc_b, (32,), self.ln_w, self.bias)\n",
       "by_order"},
      // W^T with values of its own, and a (32,) bias and a (1, 32) scale in another order:
      // with W's two dimensions in either order, exact shapes still keep the two apart.
      {"        self.scale = nn.Parameter(torch.randn(1, 32))\n"
       "        self.fc = nn.Linear(16, 32)\n"
       "    def forward(self, x):\n        return self.fc(x) * self.scale\n",
       "        self.w_t = nn.Parameter(torch.zeros(16, 32))\n"
       "        self.b = nn.Parameter(torch.zeros(32))\n"
       "        self.s = nn.Parameter(torch.zeros(1, 32))\n"
       "    def forward(self, x):\n        return (x @ self.w_t + self.b) * self.s\n",
       "by_order"},
      // Layers that keep W^T under other names than the reference's: where in and out alternate,
      // a layer's W^T has the next layer's W's shape, and the first weight went to the second
      // layer's W^T by the end of its name; now it follows its bias's module.
      {"        self.layers = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16))\n"
       "    def forward(self, x):\n        return self.layers(x)\n",
       "        self.blocks = nn.ModuleList([TLinear(16, 32), TLinear(32, 16)])\n"
       "    def forward(self, x):\n"
       "        return self.blocks[1](torch.relu(self.blocks[0](x)))\n"
       "class TLinear(nn.Module):\n    def __init__(self, i, o):\n        super().__init__()\n"
       "        self.weight = nn.Parameter(torch.zeros(i, o))\n"
       "        self.bias = nn.Parameter(torch.zeros(o))\n"
       "    def forward(self, x):\n        return x @ self.weight + self.bias\n",
       "by_name_end"},
      // Renamed LayerNorms beside a Linear kept flat, its bias declared first: the LayerNorms
      // pair module by module though the Linear has no module counterpart (all or nothing, the
      // order had each norm's weight take a bias).
      {"        self.ln1 = nn.LayerNorm(16)\n        self.fc = nn.Linear(16, 16)\n"
       "        self.ln2 = nn.LayerNorm(16)\n"
       "        for p in self.parameters():\n            nn.init.normal_(p)\n"
       "    def forward(self, x):\n        return self.ln2(self.fc(self.ln1(x)))\n",
       "        self.b_fc = nn.Parameter(torch.zeros(16))\n"
       "        self.w_fc = nn.Parameter(torch.zeros(16, 16))\n"
       "        self.norm_a = nn.LayerNorm(16)\n        self.norm_b = nn.LayerNorm(16)\n"
       "    def forward(self, x):\n"
       "        return self.norm_b(F.linear(self.norm_a(x), self.w_fc, self.b_fc))\n",
       "by_shape"},
      // `gamma` and `beta` mean `weight` and `bias`, declared beta first: alone (by the end of
      // its name) and in two renamed modules (module by module); by order, swapped before.
      {"        self.ln = nn.LayerNorm(16)\n"
       "        nn.init.normal_(self.ln.weight)\n        nn.init.normal_(self.ln.bias)\n"
       "    def forward(self, x):\n        return self.ln(x)\n",
       "        self.norm = Norm()\n    def forward(self, x):\n        return self.norm(x)\n"
       "class Norm(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
       "        self.beta = nn.Parameter(torch.zeros(16))\n"
       "        self.gamma = nn.Parameter(torch.ones(16))\n"
       "    def forward(self, x):\n        return F.layer_norm(x, (16,), self.gamma, self.beta)\n",
       "by_name_end"},
      {"        self.ln1 = nn.LayerNorm(16)\n        self.ln2 = nn.LayerNorm(16)\n"
       "        for p in self.parameters():\n            nn.init.normal_(p)\n"
       "    def forward(self, x):\n        return self.ln2(torch.relu(self.ln1(x)))\n",
       "        self.pre = Norm()\n        self.post = Norm()\n"
       "    def forward(self, x):\n        return self.post(torch.relu(self.pre(x)))\n"
       "class Norm(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
       "        self.beta = nn.Parameter(torch.zeros(16))\n"
       "        self.gamma = nn.Parameter(torch.ones(16))\n"
       "    def forward(self, x):\n        return F.layer_norm(x, (16,), self.gamma, self.beta)\n",
       "by_order"},
      // A convolution's weight kept as the GEMM matrix of an im2col, (C_out, C_in k), with
      // values of its own: it takes the reference's weight as that matrix (it kept its own).
      {"        self.conv = nn.Conv1d(8, 12, 3, padding=1)\n"
       "    def forward(self, x):\n        return self.conv(x)\n",
       "        self.w_mat = nn.Parameter(torch.zeros(12, 24))\n"
       "        self.bias = nn.Parameter(torch.zeros(12))\n"
       "    def forward(self, x):\n"
       "        return F.conv1d(x, self.w_mat.view(12, 8, 3), self.bias, padding=1)\n",
       "by_order"},
      // A LazyLinear under another name takes the shapes of the one reference Linear whose
      // out_features agree, then its values (it kept values of its own).
      {"        self.linear = nn.Linear(16, 24)\n        self.head = nn.Linear(24, 8)\n"
       "    def forward(self, x):\n        return self.head(torch.relu(self.linear(x)))\n",
       "        self.fc = nn.LazyLinear(24)\n        self.out = nn.LazyLinear(8)\n"
       "    def forward(self, x):\n        return self.out(torch.relu(self.fc(x)))\n",
       "by_name_end"},
      // A gated MLP moved under another module, `up` declared first, values of its own: each
      // weight pairs by the end of its name, which a transposed-shape tensor (`down.weight`)
      // ends as well only by fewer parts (left to the order, `gate` and `up` were swapped).
      {"        self.mlp = Gated()\n    def forward(self, x):\n        return self.mlp(x)\n"
       "class Gated(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
       "        self.gate = nn.Linear(16, 40, bias=False)\n"
       "        self.up = nn.Linear(16, 40, bias=False)\n"
       "        self.down = nn.Linear(40, 16, bias=False)\n"
       "    def forward(self, x):\n"
       "        return self.down(F.silu(self.gate(x)) * self.up(x))\n",
       "        self.ffn = Gated()\n    def forward(self, x):\n        return self.ffn(x)\n"
       "class Gated(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
       "        self.up = nn.Linear(16, 40, bias=False)\n"
       "        self.gate = nn.Linear(16, 40, bias=False)\n"
       "        self.down = nn.Linear(40, 16, bias=False)\n"
       "        for p in self.parameters():\n            nn.init.zeros_(p)\n"
       "    def forward(self, x):\n"
       "        return self.down(F.silu(self.gate(x)) * self.up(x))\n",
       "by_name_end"},
      // `gamma` beside `weight` in one module: both read as written (as synonyms, they tied,
      // and the order swapped them).
      {"        self.gamma = nn.Parameter(torch.randn(16))\n"
       "        self.weight = nn.Parameter(torch.randn(16))\n"
       "    def forward(self, x):\n        return F.layer_norm(x, (16,), self.gamma) + "
       "self.weight\n",
       "        self.shift_weight = nn.Parameter(torch.zeros(16))\n"
       "        self.ln_gamma = nn.Parameter(torch.ones(16))\n"
       "    def forward(self, x):\n"
       "        return F.layer_norm(x, (16,), self.ln_gamma) + self.shift_weight\n",
       "by_name_end"},
      // The other way round from the im2col case: the reference keeps the matrix, the candidate
      // a Conv1d (reshaped as a matrix, not transposed).
      {"        self.w_mat = nn.Parameter(torch.randn(12, 24))\n"
       "    def forward(self, x):\n        return F.conv1d(x, self.w_mat.view(12, 8, 3), "
       "padding=1)\n",
       "        self.conv = nn.Conv1d(8, 12, 3, padding=1, bias=False)\n"
       "        nn.init.zeros_(self.conv.weight)\n"
       "    def forward(self, x):\n        return self.conv(x)\n",
       "by_order"}};
  const auto head = [](const std::string& name) {
    return "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nclass " + name +
           "(nn.Module):\n    def __init__(self):\n        super().__init__()\n";
  };
  const scratch_dir dir;
  for (const auto& [reference, candidate, copy] : cases) {
    const auto problem = dir.path / "p.py";
    const auto mine = dir.path / "c.py";
    std::ofstream(problem) << head("Model") << reference
                           << "def get_inputs():\n    return [torch.randn(4, 8, 16)]\n"
                              "def get_init_inputs():\n    return []\n";
    std::ofstream(mine) << head("ModelNew") << candidate;
    const auto r = run_eval(problem.string(), mine.string(),
                            {"--device", "cpu", "--trials", "2", "--no-timing"});
    EXPECT_EQ(r.exit_code, 0) << candidate << "\n" << r.output;
    EXPECT_EQ(r.result["status"], "correct") << candidate << "\n" << r.output;
    EXPECT_EQ(r.result["correctness"]["weight_copy"], copy) << candidate << "\n" << r.output;
    EXPECT_FALSE(has_flag(r.result, "weights_not_copied")) << r.output;
  }
}

TEST(EvalCpu, ACandidatesOwnBuffersKeepTheirValuesWhereItsParametersCannotBePaired) {
  // The candidate's non-persistent buffers are a last pool for the reference's parameters only
  // where its state_dict keeps no floating-point tensor left unpaired, and never those that took
  // a reference's buffer by name: here `m` took the reference's `m`, then `proj.weight` (its
  // shape) over it, and an honest candidate that keeps that weight flat read incorrect.
  const scratch_dir dir;
  const auto problem = dir.path / "p.py";
  const auto candidate = dir.path / "c.py";
  std::ofstream(problem)
      << "import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
         "    def __init__(self):\n        super().__init__()\n"
         "        self.fc = nn.Linear(16, 16)\n"
         "        self.proj = nn.Linear(16, 16, bias=False)\n"
         "        self.register_buffer('m', torch.randn(16, 16), persistent=False)\n"
         "    def forward(self, x):\n        return self.proj(self.fc(x)) @ self.m\n"
         "def get_inputs():\n    return [torch.randn(8, 16)]\n"
         "def get_init_inputs():\n    return []\n";
  std::ofstream(candidate)
      << "import torch\nimport torch.nn as nn\nclass ModelNew(nn.Module):\n"
         "    def __init__(self):\n        super().__init__()\n"
         "        self.fc = nn.Linear(16, 16)\n"
         "        p = nn.Linear(16, 16, bias=False)\n"
         "        self.pw = nn.Parameter(p.weight.detach().reshape(-1).clone())\n"
         "        self.register_buffer('m', torch.zeros(16, 16), persistent=False)\n"
         "    def forward(self, x):\n"
         "        return (self.fc(x) @ self.pw.view(16, 16).t()) @ self.m\n";
  const auto r = run_eval(problem.string(), candidate.string(),
                          {"--device", "cpu", "--trials", "2", "--no-timing"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct") << r.output;
  EXPECT_EQ(r.result["correctness"]["weight_copy"], "partial") << r.output;
  EXPECT_TRUE(has_flag(r.result, "weights_not_copied")) << r.output;
}

TEST(EvalCpu, FailedTrialsSayWhereTheCandidateKeptWeightsOfItsOwn) {
  // q, k and v fused into one parameter built in another order than the reference's: nothing
  // can be paired, the candidate keeps the seed's values in its order, and every trial fails.
  // The verdict's message points at the weights, not only the flag below the trials (a real
  // KernelBench Inception module fused so read only "5 of 5 nominal trials failed").
  const scratch_dir dir;
  const auto problem = dir.path / "p.py";
  const auto candidate = dir.path / "c.py";
  std::ofstream(problem) << "import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
                            "    def __init__(self):\n        super().__init__()\n"
                            "        self.q = nn.Linear(16, 16, bias=False)\n"
                            "        self.k = nn.Linear(16, 16, bias=False)\n"
                            "        self.v = nn.Linear(16, 16, bias=False)\n"
                            "    def forward(self, x):\n"
                            "        return self.q(x) + 2 * self.k(x) + 3 * self.v(x)\n"
                            "def get_inputs():\n    return [torch.randn(8, 16)]\n"
                            "def get_init_inputs():\n    return []\n";
  std::ofstream(candidate) << "import torch\nimport torch.nn as nn\nclass ModelNew(nn.Module):\n"
                              "    def __init__(self):\n        super().__init__()\n"
                              "        ls = [nn.Linear(16, 16, bias=False) for _ in range(3)]\n"
                              "        self.w = nn.Parameter(torch.cat([l.weight.detach() "
                              "for l in ls]))\n"
                              "    def forward(self, x):\n"
                              "        v, k, q = (x @ self.w.t()).split(16, dim=1)\n"
                              "        return q + 2 * k + 3 * v\n";
  const auto r = run_eval(problem.string(), candidate.string(),
                          {"--device", "cpu", "--trials", "2", "--no-timing"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.result["status"], "incorrect") << r.output;
  EXPECT_TRUE(has_flag(r.result, "weights_not_copied")) << r.output;
  EXPECT_NE(r.result["message"].get<std::string>().find("see weights_not_copied"),
            std::string::npos)
      << r.result["message"];
}

TEST(EvalCpu, ProcessesStopWhereTheProblemOrCandidateFileChangedInBetween) {
  // A candidate that rewrote the problem file at import (its reference slowed by a sleep) had
  // processes 2 and 3 time another reference, and the pooled result read correct.
  const scratch_dir dir;
  const auto problem = dir.path / "p.py";
  std::ofstream(problem) << "import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
                            "    def forward(self, x):\n        return torch.relu(x)\n"
                            "def get_inputs():\n    return [torch.randn(16, 16)]\n"
                            "def get_init_inputs():\n    return []\n";
  const std::string model =
      "class ModelNew(torch.nn.Module):\n"
      "    def forward(self, x):\n        return torch.relu(x)\n";
  struct example {
    std::string rewrites, status, what;
    int exit_code;
  };
  for (const auto& [rewrites, status, what, exit_code] :
       std::vector<example>{{"P", "runtime_error", "the problem file", 4},
                            {"__file__", "runtime_error", "the candidate file", 4}}) {
    const auto candidate = dir.path / "c.py";
    std::ofstream(candidate) << "import torch\nP = " << nlohmann::json(problem.string()).dump()
                             << "\nopen(" << rewrites << ", 'a').write('# again\\n')\n"
                             << model;
    const auto r = run_eval(problem.string(), candidate.string(), with({"--processes", "3"}));
    EXPECT_EQ(r.exit_code, exit_code) << r.output;
    EXPECT_EQ(r.result["status"], status);
    EXPECT_EQ(r.result["runs"].size(), 2u) << r.result["runs"].dump();
    const auto message = r.result.value("message", "");
    EXPECT_EQ(message.rfind("process 2 of 3: " + what, 0), 0u) << message;
    EXPECT_NE(message.find("changed after process 1 started"), std::string::npos) << message;
  }
}

TEST(EvalCpu, ACrashInTheReferencesPartIsTheProblemsWhereTheReferenceCrashesAlone) {
  // A problem whose forward ends its process: the candidate ran first in the trial, and every
  // candidate got the crash. The reference is now run alone in a fresh worker.
  const scratch_dir dir;
  const std::string tail =
      "def get_inputs():\n    return [torch.randn(16, 16)]\n"
      "def get_init_inputs():\n    return []\n";
  const auto candidate = dir.path / "c.py";
  std::ofstream(candidate) << "import torch\nclass ModelNew(torch.nn.Module):\n"
                              "    def forward(self, x):\n        return torch.relu(x)\n";
  for (const std::string ending : {"import os; os._exit(0)",
                                   "import os, signal; "
                                   "os.kill(os.getpid(), signal.SIGKILL)"}) {
    const auto problem = dir.path / "p.py";
    std::ofstream(problem) << "import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
                              "    def forward(self, x):\n        "
                           << ending << "\n"
                           << tail;
    const auto r = run_eval(problem.string(), candidate.string(), with({"--no-timing"}));
    EXPECT_EQ(r.exit_code, 6) << r.output;
    EXPECT_EQ(r.result["status"], "problem_error");
    EXPECT_NE(r.result.value("message", "").find("the reference crashed there too"),
              std::string::npos)
        << r.result.value("message", "");
  }
}

TEST(EvalCpu, ACrashAtTheNominalSizeWhereBothSidesRunIsTheProblemsWhereTheReferenceCrashesAlone) {
  // A problem whose forward ends its process at its nominal size only: the trials (jittered)
  // pass, and the timing's set-up or the nominal-size check crashed, every candidate's crash.
  const scratch_dir dir;
  const std::string inputs =
      "def get_inputs():\n"
      "    return [torch.randn(popcorn_pri.jitter_int(1000), 32)]\n"
      "def get_init_inputs():\n    return []\n";
  const std::string exits_at_nominal = "        if x.shape[0] == 1000:\n            os._exit(3)\n";
  const auto problem = dir.path / "p.py";
  std::ofstream(problem) << "import os\nimport torch\nimport torch.nn as nn\n"
                            "class Model(nn.Module):\n    def forward(self, x):\n"
                         << exits_at_nominal << "        return x * 2\n"
                         << inputs;
  const auto candidate = dir.path / "c.py";
  std::ofstream(candidate) << "import torch\nclass ModelNew(torch.nn.Module):\n"
                              "    def forward(self, x):\n        return x * 2\n";
  for (const auto& [options, phase] :
       {std::pair{cpu_fast, std::string("'timing_setup'")},
        std::pair{with({"--no-timing"}), std::string("'nominal sizes check'")}}) {
    const auto r = run_eval(problem.string(), candidate.string(), options);
    EXPECT_EQ(r.exit_code, 6) << r.output;
    EXPECT_EQ(r.result["status"], "problem_error");
    const std::string message = r.result.value("message", "");
    EXPECT_NE(message.find("exited with code 3 during " + phase), std::string::npos) << message;
    EXPECT_NE(message.find("the reference crashed there too"), std::string::npos) << message;
  }
  // A candidate that crashes at the nominal size stays the candidate's.
  const auto honest = dir.path / "honest.py";
  std::ofstream(honest) << "import torch\nimport torch.nn as nn\n"
                           "class Model(nn.Module):\n    def forward(self, x):\n"
                           "        return x * 2\n"
                        << inputs;
  const auto crashing = dir.path / "crashing.py";
  std::ofstream(crashing) << "import os\nimport torch\nclass ModelNew(torch.nn.Module):\n"
                             "    def forward(self, x):\n"
                          << exits_at_nominal << "        return x * 2\n";
  const auto c = run_eval(honest.string(), crashing.string(), with({"--no-timing"}));
  EXPECT_EQ(c.exit_code, 4) << c.output;
  EXPECT_EQ(c.result["status"], "crashed");
  EXPECT_NE(c.result.value("message", "").find("candidate forward"), std::string::npos)
      << c.result.value("message", "");
}

TEST(EvalCpu, AProblemIsLoadedFromItsCheckedBytesNeverFromABytecodeCache) {
  const scratch_dir dir;
  const auto problem = dir.path / "p.py";
  const auto model = [](const std::string& times) {
    return "import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
           "    def forward(self, x):\n        return torch.relu(x)" +
           times +
           "\ndef get_inputs():\n    return [torch.randn(16, 16)]\n"
           "def get_init_inputs():\n    return []\n";
  };
  std::ofstream(problem) << model("");
  // A candidate that compiled a reference of its own into the problem's __pycache__ (a pyc
  // whose hash is not checked): a later process loaded that, the file's hash unchanged.
  const auto planter = dir.path / "planter.py";
  std::ofstream(planter)
      << "import importlib.util, py_compile, torch\nP = " << nlohmann::json(problem.string()).dump()
      << "\nfake = P + '.fake.py'\n"
      << "open(fake, 'w').write(" << nlohmann::json(model(" * 0")).dump()
      << ")\npy_compile.compile(fake, cfile=importlib.util.cache_from_source(P), "
         "invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)\n"
         "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
         "        return torch.relu(x)\n";
  const auto r =
      run_eval(problem.string(), planter.string(), with({"--processes", "2", "--no-pool"}));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["runs"].size(), 2u) << r.result["runs"].dump();
  // A candidate that rewrote the problem file (its forward ending the process) and then crashed
  // the worker in the reference's part: the reference alone would crash too, on the candidate's
  // problem, and the crash read as the problem's.
  const auto slow = dir.path / "slow.py";  // its forward long enough for the thread to see it
  std::ofstream(slow) << "import time\nimport torch\nimport torch.nn as nn\n"
                         "class Model(nn.Module):\n    def forward(self, x):\n"
                         "        time.sleep(0.2)\n        return torch.relu(x)\n"
                         "def get_inputs():\n    return [torch.randn(16, 16)]\n"
                         "def get_init_inputs():\n    return []\n";
  const auto rewriter = dir.path / "rewriter.py";
  std::ofstream(rewriter) << "import os, sys, threading, time\nimport torch\nP = "
                          << nlohmann::json(slow.string()).dump() << "\n"
                          << "open(P, 'a').write('Model.forward = lambda self, x: os._exit(0)\\n"
                             "import os\\n')\n"
                          << R"(MAIN = threading.main_thread().ident
def watch():
    while True:
        f = sys._current_frames().get(MAIN)
        while f is not None:
            if f.f_code.co_name == "forward" and f.f_globals.get("__name__") == "kjudge_problem":
                os._exit(0)
            f = f.f_back
        time.sleep(0.0005)
threading.Thread(target=watch, daemon=True).start()
class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
)";
  const auto c = run_eval(slow.string(), rewriter.string(), with({"--no-timing"}));
  EXPECT_EQ(c.exit_code, 4) << c.output;
  EXPECT_EQ(c.result["status"], "crashed");
  EXPECT_NE(c.result.value("message", "").find("changed since kjudge read it"), std::string::npos)
      << c.result.value("message", "");
}

/** `kjudge <args>` started in the background without the pool, its output going to `log`. */
pid_t start_kjudge(const std::vector<std::string>& args, const std::filesystem::path& log) {
  std::vector<std::string> strings = {KJ_KJUDGE_EXE};
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings = {"KJUDGE_POOL=0"};
  for (char** e = environ; *e != nullptr; ++e)
    if (std::string_view(*e).rfind("KJUDGE_POOL=", 0) != 0) env_strings.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int in = ::open("/dev/null", O_RDONLY);
    if (out < 0 || in < 0) ::_exit(126);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(out, 2);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  return pid;
}

using kj::runner::detail::children_of;

/** The `kjudge worker` that `eval` started (through its guard: a child of a child), once it
 *  runs; 0 if none within 60 s. */
pid_t worker_of(pid_t eval) {
  for (int i = 0; i < 6000; ++i) {
    for (const pid_t guard : children_of(eval))
      for (const pid_t c : children_of(guard))
        if (text_of("/proc/" + std::to_string(c) + "/cmdline").find(std::string("\0worker", 7)) !=
            std::string::npos)
          return c;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return 0;
}

/** The wait status of `pid`, or -1 when it still runs after `limit`. */
int wait_status_within(pid_t pid, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= until) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return status;
}

TEST(EvalCpu, StoppingTheEvaluationStopsItsWorker) {
  // A hanging candidate under a long timeout; `kjudge eval` is then interrupted (Ctrl-C), or
  // killed outright: its worker must not run on without a limit.
  const scratch_dir dir;
  const std::vector<std::string> args = {"eval",
                                         (source_dir() / "problems/level1/softmax.py").string(),
                                         (source_dir() / "examples/faulty/hang.py").string(),
                                         "--device",
                                         "cpu",
                                         "--no-timing",
                                         "--trials",
                                         "1",
                                         "--timeout",
                                         "300",
                                         "--no-pool"};
  for (const int sig : {SIGINT, SIGTERM, SIGKILL}) {
    const auto log = dir.path / ("eval-" + std::to_string(sig) + ".log");
    const pid_t eval = start_kjudge(args, log);
    ASSERT_GT(eval, 0);
    const pid_t worker = worker_of(eval);
    ASSERT_GT(worker, 0) << "no worker started; output:\n" << text_of(log);
    std::this_thread::sleep_for(std::chrono::seconds(1));
    ::kill(eval, sig);
    const int status = wait_status_within(eval, std::chrono::seconds(10));
    ASSERT_NE(status, -1) << "kjudge eval did not end on signal " << sig;
    if (sig == SIGKILL) {
      EXPECT_TRUE(WIFSIGNALED(status));
    } else {
      ASSERT_TRUE(WIFEXITED(status)) << status;
      EXPECT_EQ(WEXITSTATUS(status), 128 + sig);
      EXPECT_NE(text_of(log).find("interrupted by SIG"), std::string::npos) << text_of(log);
    }
    EXPECT_TRUE(gone_within(worker, std::chrono::seconds(5)))
        << "worker " << worker << " outlived kjudge eval (signal " << sig << ")";
    if (!process_gone(worker)) ::kill(worker, SIGKILL);
  }
}

/** A Python candidate that, on import, forks a process that leaves the worker's process group
 *  (setsid) and sleeps, holding the worker's output pipe, and writes its pid to `pid_file` (whole,
 *  by a rename); its forward runs `forward` (one statement). */
std::string daemon_candidate(const std::filesystem::path& pid_file, const std::string& forward) {
  const std::string file = pid_file.string();
  return "import os, time\n"
         "import torch\n"
         "import torch.nn as nn\n"
         "r, w = os.pipe()\n"
         "pid = os.fork()\n"
         "if pid == 0:\n"
         "    os.setsid()\n"
         "    os.write(w, b'1')\n"
         "    time.sleep(300)\n"
         "    os._exit(0)\n"
         "os.read(r, 1)\n"
         "with open('" +
         file + ".tmp', 'w') as f:\n    f.write(str(pid))\nos.rename('" + file + ".tmp', '" + file +
         "')\n"
         "class ModelNew(nn.Module):\n"
         "    def forward(self, x):\n"
         "        " +
         forward + "\n";
}

TEST(EvalCpu, ADaemonTheCandidateLeavesIsKilledWithTheWorker) {
  // The candidate forks a process that leaves the worker's process group (setsid) and would
  // sleep on, holding the worker's output pipe.
  const scratch_dir dir;
  const auto pid_file = dir.path / "daemon.pid";
  const auto candidate = dir.path / "leaves_a_daemon.py";
  std::ofstream(candidate) << daemon_candidate(pid_file, "return torch.softmax(x, dim=-1)");
  const auto r = run_eval("problems/level1/softmax.py", candidate.string(),
                          {"--device", "cpu", "--no-timing", "--trials", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(r.result.is_object()) << r.output;
  EXPECT_NE(r.result["worker"]["outcome"].get<std::string>().find(
                "1 process it left behind (outside its process group) was killed"),
            std::string::npos)
      << r.result["worker"]["outcome"];
  pid_t daemon = 0;
  std::ifstream(pid_file) >> daemon;
  ASSERT_GT(daemon, 0) << "the candidate wrote no pid";
  EXPECT_TRUE(gone_within(daemon, std::chrono::seconds(3)))
      << "daemon " << daemon << " outlived the evaluation";
  if (!process_gone(daemon)) ::kill(daemon, SIGKILL);
}

TEST(EvalCpu, ADaemonTheCandidateLeftDiesWhenKjudgeIsKilledOutright) {
  // kill -9 of `kjudge eval --no-pool` runs nothing of kjudge's: the worker's guard kills the
  // worker and the daemon the candidate left (setsid), then itself. The daemon used to go to init
  // and live on.
  const scratch_dir dir;
  const auto pid_file = dir.path / "daemon.pid";
  const auto candidate = dir.path / "daemon_then_hang.py";
  std::ofstream(candidate) << daemon_candidate(pid_file, "time.sleep(1000)");
  const auto log = dir.path / "eval.log";
  const pid_t eval = start_kjudge(
      {"eval", (source_dir() / "problems/level1/softmax.py").string(), candidate.string(),
       "--device", "cpu", "--no-timing", "--trials", "1", "--timeout", "300", "--no-pool"},
      log);
  ASSERT_GT(eval, 0);
  const pid_t worker = worker_of(eval);
  ASSERT_GT(worker, 0) << "no worker started; output:\n" << text_of(log);
  const std::vector<pid_t> guards = children_of(eval);
  const std::vector<pid_t> written = read_pids(pid_file, std::chrono::seconds(60));
  ASSERT_EQ(written.size(), 1U) << "the candidate wrote no pid; output:\n" << text_of(log);
  const pid_t daemon = written[0];
  ::kill(eval, SIGKILL);
  ASSERT_NE(wait_status_within(eval, std::chrono::seconds(10)), -1);
  for (const pid_t p : guards) {
    EXPECT_TRUE(gone_within(p, std::chrono::seconds(5))) << "guard " << p << " lives on";
    if (!process_gone(p)) ::kill(p, SIGKILL);
  }
  for (const pid_t p : {worker, daemon}) {
    EXPECT_TRUE(gone_within(p, std::chrono::seconds(5)))
        << p << " outlived kjudge eval, killed outright (worker " << worker << ")";
    if (!process_gone(p)) ::kill(p, SIGKILL);
  }
}

TEST(EvalCpu, AWorkerThatMovesToKjudgesProcessGroupStillTimesOut) {
  // The forward tries to join kjudge's own process group (out of the one the timeout signals),
  // then sleeps: the worker's guard leads a session of its own now, with the worker in its group,
  // so the worker cannot move (kjudge's group is another session's). It used to, and kjudge
  // waited for it forever.
  const scratch_dir dir;
  const auto candidate = dir.path / "moves_group.py";
  std::ofstream(candidate) << "import os, time\n"
                              "import torch\n"
                              "import torch.nn as nn\n"
                              "class ModelNew(nn.Module):\n"
                              "    def forward(self, x):\n"
                              "        try:\n"
                              "            os.setpgid(0, os.getpgid(os.getppid()))\n"
                              "        except OSError:\n"
                              "            pass\n"
                              "        time.sleep(1000)\n";
  const auto r = run_eval("problems/level1/softmax.py", candidate.string(),
                          {"--device", "cpu", "--no-timing", "--trials", "1", "--timeout", "15"},
                          std::chrono::seconds(120));
  EXPECT_EQ(r.exit_code, 5) << r.output;
  ASSERT_TRUE(r.result.is_object()) << r.output;
  EXPECT_EQ(r.result["status"], "timed_out");
  EXPECT_LT(r.result["wall_s"].get<double>(), 40.0);
}

/** Runs `script` with /bin/sh (kjudge is $KJ, the repository the working folder); returns its
 *  exit code, -1 when it did not exit. */
int run_shell(const std::string& script, std::chrono::seconds limit = std::chrono::seconds(180)) {
  runner::spawn_options o;
  o.argv = {"/bin/sh", "-c", script};
  o.env.emplace_back("KJ", KJ_KJUDGE_EXE);
  o.env.emplace_back("KJUDGE_POOL", "0");
  o.cwd = source_dir();
  o.timeout = limit;
  const auto p = runner::run_process(o);
  return p.how == runner::exit_kind::exited ? p.exit_code : -1;
}

TEST(EvalCpu, TorchCompileBuildsInTheWorkerUnlessTheCallerSaysOtherwise) {
  // Inductor's pool of compile worker processes starts in the background and imports torch: on
  // an H100 machine a torch.compile softmax's kept the wait before the timing busy for all of
  // its 5 s. kjudge's worker compiles in its own thread (compile_threads 1) unless the caller's
  // environment sets TORCHINDUCTOR_COMPILE_THREADS. The candidate records what Inductor read.
  const scratch_dir dir;
  const auto seen = dir.path / "threads.txt";
  std::ofstream(dir.path / "model.py") << "import torch\n"
                                          "import torch._inductor.config as inductor\n"
                                          "with open("
                                       << nlohmann::json(seen.string()).dump()
                                       << ", 'w') as f:\n"
                                          "    f.write(str(inductor.compile_threads))\n"
                                          "class ModelNew(torch.nn.Module):\n"
                                          "    def forward(self, x):\n"
                                          "        return torch.softmax(x, dim=-1)\n";
  const auto read_seen = [&] {
    std::ifstream in(seen);
    std::string text;
    std::getline(in, text);
    std::filesystem::remove(seen);
    return text;
  };
  const auto r = run_eval("problems/level1/softmax.py", (dir.path / "model.py").string(),
                          {"--device", "cpu", "--no-timing", "--trials", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_seen(), "1");
  const int rc = run_shell(
      "TORCHINDUCTOR_COMPILE_THREADS=2 \"$KJ\" eval problems/level1/softmax.py '" +
      (dir.path / "model.py").string() + "' --device cpu --no-timing --trials 1 > /dev/null 2>&1");
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(read_seen(), "2");
}

TEST(EvalCpu, TheCandidatesControlCharactersReachTheTerminalShownNotActedOn) {
  // Its output and its error's text are in the report: an escape sequence cleared the screen
  // or coloured it, a carriage return wrote over the line, NUL and BEL went through.
  const scratch_dir dir;
  std::ofstream(dir.path / "model.py")
      << "import sys\n"
         "import torch\n"
         "sys.stdout.write('\\x1b[2J\\rcleared\\x07\\x00\\n')\n"
         "class ModelNew(torch.nn.Module):\n"
         "    def forward(self, x):\n"
         "        raise RuntimeError('\\x1b[31mred\\x1b[0m \\xc2\\x9b')\n";
  const auto r = run_eval("problems/level1/softmax.py", (dir.path / "model.py").string(),
                          {"--device", "cpu", "--no-timing", "--trials", "1"});
  EXPECT_EQ(r.exit_code, 4) << r.output;
  for (const char c : {'\x1b', '\r', '\x07', '\0'})
    EXPECT_EQ(r.output.find(c), std::string::npos) << static_cast<int>(c) << "\n" << r.output;
  EXPECT_NE(r.output.find("\\x1b[2J\\x0dcleared\\x07\\x00"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\\x1b[31mred\\x1b[0m"), std::string::npos) << r.output;
  // The JSON keeps the text as it was.
  EXPECT_NE(r.result.value("message", "").find("\x1b[31mred"), std::string::npos)
      << r.result.value("message", "");
}

TEST(EvalCpu, AnOutputWhoseTypeComputesWhenComparedIsCaughtInTheTimingLoop) {
  // The list subclass of computes_when_read.py, whose metaclass also does the matmul when its
  // type is compared with ==: the audit's `type in (bool, int, float)` did so, and every audit
  // passed. The audit compares types by identity.
  const scratch_dir dir;
  std::ofstream(dir.path / "model.py") << R"(import torch
import torch.nn as nn
_pending = []
def _fill():
    while _pending:
        _pending.pop()()
class _Meta(type):
    def __eq__(cls, other):
        _fill()
        return type.__eq__(cls, other)
    __hash__ = type.__hash__
class _Lazy(list, metaclass=_Meta):
    def __len__(self):
        _fill()
        return list.__len__(self)
    def __iter__(self):
        _fill()
        return list.__iter__(self)
class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
        _pending.append(lambda: torch.matmul(a, b, out=out))
        return _Lazy([out])
)";
  const auto r = run_eval("problems/level1/matmul.py", (dir.path / "model.py").string(), cpu_fast);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.result["status"], "incorrect") << r.result["flags"].dump(1);
  EXPECT_NE(flag_message(r.result, "timing_outputs_differ").find("in the timing loop"),
            std::string::npos)
      << r.result["flags"].dump(1);
}

TEST(EvalCpu, AReaderThatGoesAwayDoesNotStopTheJson) {
  // `| true` closes the report's pipe at once: kjudge died of SIGPIPE at its first print,
  // writing no --json.
  const scratch_dir dir;
  const auto json = dir.path / "r.json";
  const int rc = run_shell(
      "\"$KJ\" eval problems/level1/softmax.py examples/softmax/naive.py --device cpu "
      "--trials 1 --budget 0.2 --json '" +
      json.string() + "' | true");
  EXPECT_EQ(rc, 0);
  std::ifstream in(json);
  ASSERT_TRUE(in.good()) << "no --json after the reader went away";
  const auto result = nlohmann::json::parse(in, nullptr, false);
  EXPECT_EQ(result.value("status", ""), "correct") << result.dump(1);
}

TEST(EvalCpu, ChildrenKjudgeHadBeforeItsWorkerAreNotItsLeftovers) {
  // A process that starts a child (in a session of its own, so that no process group the test
  // or kjudge signals holds it) and then execs kjudge: the child is kjudge's from the start,
  // and was killed as the worker's leftover.
  const scratch_dir dir;
  const auto json = dir.path / "r.json";
  const auto pid_file = dir.path / "sleep.pid";
  const int rc = run_shell(
      "exec \"$(command -v python3)\" -c 'import os, subprocess, sys; "
      "p = subprocess.Popen([\"sleep\", \"300\"], start_new_session=True); "
      "open(sys.argv[1], \"w\").write(str(p.pid)); os.execv(sys.argv[2], sys.argv[2:])' '" +
      pid_file.string() +
      "' \"$KJ\" eval problems/level1/softmax.py examples/softmax/naive.py --device cpu "
      "--no-timing --trials 1 --json '" +
      json.string() + "'");
  EXPECT_EQ(rc, 0);
  pid_t sleeper = 0;
  std::ifstream(pid_file) >> sleeper;
  ASSERT_GT(sleeper, 0) << "the child's pid was not written";
  std::ifstream in(json);
  ASSERT_TRUE(in.good());
  const auto result = nlohmann::json::parse(in, nullptr, false);
  EXPECT_EQ(result.value("status", ""), "correct") << result.dump(1);
  EXPECT_FALSE(has_flag(result, "leftover_processes")) << result.dump(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a SIGKILL would have landed
  EXPECT_FALSE(process_gone(sleeper)) << "kjudge killed a process it did not start";
  ::kill(sleeper, SIGKILL);
}

TEST(EvalCpu, AJsonPathTheCandidateTurnsIntoALinkIsReplacedNotFollowed) {
  // The candidate's code runs as the user: it replaced --json's file by a link to a file of the
  // user's, which kjudge's result then overwrote (or, the link into a folder kjudge cannot write,
  // left a result of its own there under the exit code 8).
  const scratch_dir dir;
  const auto json = dir.path / "r.json";
  const auto victim = dir.path / "victim.txt";
  std::ofstream(victim) << "the user's\n";
  const auto candidate = dir.path / "swaps_json.py";
  std::ofstream(candidate) << "import os\nimport torch\nimport torch.nn as nn\n"
                              "p = os.environ['KJ_TEST_JSON']\n"
                              "if os.path.lexists(p):\n    os.remove(p)\n"
                              "os.symlink(os.environ['KJ_TEST_VICTIM'], p)\n"
                              "class ModelNew(nn.Module):\n    def forward(self, x):\n"
                              "        return torch.softmax(x, dim=-1)\n";
  const int rc = run_shell("KJ_TEST_JSON='" + json.string() + "' KJ_TEST_VICTIM='" +
                           victim.string() + "' \"$KJ\" eval problems/level1/softmax.py '" +
                           candidate.string() + "' --device cpu --no-timing --trials 1 --json '" +
                           json.string() + "' > /dev/null 2>&1");
  EXPECT_EQ(rc, 0);
  std::ifstream v(victim);
  std::string first;
  std::getline(v, first);
  EXPECT_EQ(first, "the user's");
  EXPECT_FALSE(std::filesystem::is_symlink(json));
  std::ifstream in(json);
  const auto result = nlohmann::json::parse(in, nullptr, false);
  EXPECT_EQ(result.value("status", ""), "correct") << result.dump(1);
}

TEST(EvalCpu, AnIgnoredSigchldDoesNotHideTheWorkersCrash) {
  // SIGCHLD ignored by kjudge's parent (ignored dispositions survive exec) made the kernel reap
  // the worker: its segfault read as "exited with code 0".
  const scratch_dir dir;
  const auto json = dir.path / "r.json";
  const int rc = run_shell(
      "exec \"$(command -v python3)\" -c 'import os, signal, sys; "
      "signal.signal(signal.SIGCHLD, signal.SIG_IGN); os.execv(sys.argv[1], sys.argv[1:])' "
      "\"$KJ\" eval problems/level1/softmax.py examples/faulty/segfault.py --device cpu "
      "--no-timing --trials 1 --json '" +
      json.string() + "'");
  EXPECT_EQ(rc, 4);
  std::ifstream in(json);
  ASSERT_TRUE(in.good());
  const auto result = nlohmann::json::parse(in, nullptr, false);
  EXPECT_EQ(result.value("status", ""), "crashed") << result.dump(1);
  EXPECT_EQ(result["worker"].value("signal", 0), 11) << result.dump(1);
}

TEST(EvalCpu, JsonIsWrittenThroughSymlinksAndAFailedWriteIsNotAVerdict) {
  const scratch_dir dir;
  const std::string problem = (source_dir() / "problems/level1/softmax.py").string();
  const std::string candidate = (source_dir() / "examples/softmax/naive.py").string();
  const std::vector<std::string> quick = {"--device", "cpu", "--no-timing",
                                          "--trials", "1",   "--no-pool"};
  // Through a symbolic link (to a file in another folder): the link stays, its target is written.
  std::filesystem::create_directories(dir.path / "elsewhere");
  const auto target = dir.path / "elsewhere" / "result.json";
  std::ofstream(target) << "old";
  const auto link = dir.path / "link.json";
  std::filesystem::create_symlink(target, link);
  std::vector<std::string> args = {"eval", problem, candidate, "--json", link.string()};
  args.insert(args.end(), quick.begin(), quick.end());
  const auto r = run_raw(args, std::chrono::seconds(240));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  const auto written = nlohmann::json::parse(text_of(target), nullptr, false);
  ASSERT_TRUE(written.is_object()) << text_of(target);
  EXPECT_EQ(written["status"], "correct");

  // A write that fails after the evaluation (a full device): the report is printed, stderr says
  // the file was not written, and the exit code is 8, not the verdict's.
  args = {"eval", problem, candidate, "--json", "/dev/full"};
  args.insert(args.end(), quick.begin(), quick.end());
  const auto full = run_raw(args, std::chrono::seconds(240));
  EXPECT_EQ(full.exit_code, 8) << full.output;
  EXPECT_NE(full.output.find("status     CORRECT"), std::string::npos) << full.output;
  EXPECT_NE(full.output.find("NOT written to --json /dev/full"), std::string::npos) << full.output;

  // The report itself to a full device (`> report.txt` on a full disk): the result file is
  // written, stderr says the report was not, and the exit code is 8 (with -q as well).
  for (const bool quiet : {false, true}) {
    SCOPED_TRACE(quiet ? "-q" : "full report");
    const auto json = dir.path / "report_full.json";
    runner::spawn_options o;
    o.argv = {"/bin/sh",     "-c",     "exec \"$0\" \"$@\" > /dev/full",
              KJ_KJUDGE_EXE, "eval",   problem,
              candidate,     "--json", json.string()};
    o.argv.insert(o.argv.end(), quick.begin(), quick.end());
    if (quiet) o.argv.emplace_back("-q");
    o.timeout = std::chrono::seconds(240);
    const auto p = runner::run_process(o);
    EXPECT_EQ(p.how == runner::exit_kind::exited ? p.exit_code : -1, 8) << p.output_tail;
    EXPECT_NE(p.output_tail.find("the report was NOT written to standard output: No space left"),
              std::string::npos)
        << p.output_tail;
    EXPECT_EQ(nlohmann::json::parse(text_of(json), nullptr, false).value("status", ""), "correct");
  }
}

TEST(EvalCpu, WorkerByHandIsAUsageError) {
  const auto r = run_raw({"worker"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("not for direct use"), std::string::npos) << r.output;
}

TEST(EvalCpu, ExitInCandidateBecomesACrashResult) {
  for (const char* worker : k_workers) {
    const auto r = run_in_worker(worker, "problems/level1/softmax.py", "examples/faulty/exits.py");
    EXPECT_EQ(r.exit_code, 4) << worker << "\n" << r.output;
    EXPECT_EQ(r.result["status"], "crashed") << worker;
    EXPECT_NE(r.result["message"].get<std::string>().find("exited with code"), std::string::npos)
        << worker << ": " << r.result["message"];
  }
}

TEST(EvalCpu, OutOfMemoryIsARuntimeError) {
  for (const char* worker : k_workers) {
    const auto r = run_in_worker(worker, "problems/level1/softmax.py", "examples/faulty/oom.py");
    EXPECT_EQ(r.exit_code, 4) << worker << "\n" << r.output;
    EXPECT_EQ(r.result["status"], "runtime_error") << worker;
  }
}

TEST(EvalCpu, ExceptionInConstructorIsARuntimeError) {
  const auto r = run_eval("problems/level1/softmax.py", "examples/faulty/raises.py", cpu_fast);
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_NE(r.result["message"].get<std::string>().find("ModelNew"), std::string::npos);
}

TEST(EvalCpu, AnErrorOfSeveralLinesIsSummarisedByItsFirst) {
  // torch's "Could not run ..." errors end in a list of dispatch keys: the summary read the
  // list's last line ("PythonDispatcher: registered at ... [backend fallback]").
  const scratch_dir dir;
  const auto candidate = dir.path / "raises_long.py";
  std::ofstream(candidate) << "import torch\nclass ModelNew(torch.nn.Module):\n"
                              "    def forward(self, x):\n"
                              "        raise NotImplementedError('Could not run this op\\n'\n"
                              "                                  'CPU: registered at a.cpp\\n'\n"
                              "                                  'PythonDispatcher: registered')\n";
  const auto r = run_eval("problems/level1/softmax.py", candidate.string(), cpu_fast);
  EXPECT_EQ(r.exit_code, 4) << r.output;
  const std::string message = r.result.value("message", "");
  EXPECT_EQ(message.substr(0, message.find('\n')),
            "ModelNew.forward raised: NotImplementedError: Could not run this op")
      << message;
}

TEST(EvalCpu, ACandidateThatDoesNotImportIsACompileError) {
  const auto r =
      run_eval("problems/level1/softmax.py", "examples/faulty/syntax_error.py", cpu_fast);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_EQ(r.result["status"], "compile_error");
  // The message names the error itself, not only that the import failed.
  EXPECT_NE(r.result["message"].get<std::string>().find("SyntaxError"), std::string::npos)
      << r.result["message"];
  EXPECT_NE(r.result["build"]["log"].get<std::string>().find("syntax_error.py"), std::string::npos)
      << r.result["build"];
}

TEST(EvalCpu, BrokenProblemsAreProblemErrors) {
  const std::pair<const char*, const char*> problems[] = {
      {"problems/broken/syntax_error.py", "SyntaxError"},
      {"problems/broken/missing_get_inputs.py", "get_inputs"},
      {"problems/broken/raises_in_forward.py", "reference forward failed on purpose"},
      {"problems/broken/model_ctor_fails.py", "Model(*get_init_inputs())"},
      {"problems/broken/bare_tensor_inputs.py", "not a list or tuple of inputs"},
      {"problems/broken/nested_inputs.py", "not containers of them"},
      {"problems/broken/bad_tolerance.py", "KJUDGE_ATOL = nan"},
      {"problems/broken/unseeded_inputs.py", "different values for the same seed"}};
  for (const auto& [p, says] : problems) {
    const auto r = run_eval(p, "examples/softmax/naive.py", cpu_fast);
    EXPECT_EQ(r.exit_code, 6) << p << "\n" << r.output;
    EXPECT_EQ(r.result["status"], "problem_error") << p;
    EXPECT_NE(r.result["message"].get<std::string>().find(says), std::string::npos)
        << p << ": " << r.result["message"];
    // Ended before the models were built: the schema's value, not an empty string.
    if (std::string_view(p).find("syntax_error") != std::string_view::npos ||
        std::string_view(p).find("ctor_fails") != std::string_view::npos) {
      EXPECT_EQ(r.result["correctness"]["weight_copy"], "not_built") << p;
    }
  }
}

TEST(EvalCpu, ANumberNoInt64HoldsIsTheCandidatesError) {
  const auto r =
      run_eval("problems/level1/softmax.py", "examples/faulty/returns_huge_int.py", cpu_fast);
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_EQ(r.result["status"], "runtime_error");
  EXPECT_NE(r.result["message"].get<std::string>().find("no int64 holds"), std::string::npos)
      << r.result["message"];
}

TEST(EvalCpu, RenamedParametersAreCopiedByOrder) {
  const auto r = run_eval("problems/level1/layernorm.py", "examples/layernorm/renamed_params.py",
                          with({"--no-timing"}));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["correctness"]["weight_copy"], "by_order");
}

TEST(EvalCpu, TupleOutputsWithIntegerIndices) {
  const auto r = run_eval("problems/level1/max_with_indices.py",
                          "examples/max_with_indices/naive.py", with({"--no-timing"}));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto& outs = r.result["trials"][0]["outputs"];
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[1]["expected_dtype"], "int64");
  EXPECT_EQ(outs[1]["atol"], 0.0);
}

TEST(EvalCpu, ScalarOutput) {
  const auto r =
      run_eval("problems/level1/mse_loss.py", "examples/mse_loss/naive.py", with({"--no-timing"}));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(r.result["trials"][0]["outputs"][0]["expected_shape"].empty());
}

TEST(EvalCpu, IntegerInputsKeepTheirDtype) {
  const auto r = run_eval("problems/level1/embedding_lookup.py",
                          "examples/embedding_lookup/naive.py", with({"--no-timing"}));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["trials"][0]["input_dtypes"][0], "int64");
}

TEST(EvalCpu, TimingOnInputsThatCannotVarySaysSo) {
  // Indices alone: no rewrite can vary them from sample to sample, so a set's samples repeat,
  // which a cache keyed on the values would exploit unseen. Said, as information.
  const auto r = run_eval("problems/level1/embedding_lookup.py",
                          "examples/embedding_lookup/naive.py", cpu_fast);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_flag(r.result, "timing_inputs_repeat")) << r.result["flags"].dump(1);
  const auto f = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", cpu_fast);
  ASSERT_EQ(f.exit_code, 0) << f.output;
  EXPECT_FALSE(has_flag(f.result, "timing_inputs_repeat")) << f.result["flags"].dump(1);
}

TEST(EvalCpu, StressShapesScaleTheJitteredSizes) {
  const auto r =
      run_eval("problems/level2/quantvla_selective_layout_fusion.py", "examples/quantvla/naive.py",
               with({"--no-timing", "--shapes", "stress"}));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["correctness"]["stress_trials"], 2);
  EXPECT_EQ(r.result["correctness"]["stress_passed"], 2);
  for (const auto& t : r.result["trials"]) {
    if (t["kind"] == "stress") {
      EXPECT_GE(t["input_shapes"][0][1].get<int>(), 4 * 54);
    }
  }
}

TEST(EvalCpu, UsageErrors) {
  EXPECT_EQ(run_raw({"eval", "no/such/problem.py", "examples/softmax/naive.py"}).exit_code, 2);
  EXPECT_EQ(
      run_raw({"eval", "--trials", "0", (source_dir() / "problems/level1/softmax.py").string(),
               (source_dir() / "examples/softmax/naive.py").string()})
          .exit_code,
      2);
  // A native candidate needs a GPU.
  const auto r = run_raw(
      {"eval", (source_dir() / "problems/level2/quantvla_selective_layout_fusion.py").string(),
       (source_dir() / "examples/quantvla/fused.cu").string(), "--device", "cpu"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("GPU"), std::string::npos);
  // Graph replay is on or off, not both; and the flags take no value (--graph=false would read
  // as a request for graphs).
  const std::string problem = (source_dir() / "problems/level1/softmax.py").string();
  const std::string candidate = (source_dir() / "examples/softmax/naive.py").string();
  EXPECT_EQ(run_raw({"eval", problem, candidate, "--graph", "--no-graph"}).exit_code, 2);
  EXPECT_EQ(run_raw({"eval", problem, candidate, "--graph=false"}).exit_code, 2);
  EXPECT_EQ(run_raw({"eval", problem, candidate, "--no-graph=false"}).exit_code, 2);
  // Numbers must be finite and in range (NaN passes every comparison; a huge timeout overflowed);
  // --json must name a file, not a directory (refused before the evaluation runs).
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--timeout", "nan"},
        {"--timeout", "1e300"},
        {"--atol", "nan"},
        {"--rtol", "-1"},
        {"--budget", "inf"},
        {"--target-rse", "0"},
        {"--seed", "-1"},
        {"--seed", "18446744073709551616"},  // 2^64: was saturated to 2^64 - 1
        {"--seed", "12x"},
        {"--seed", "0x10"},  // hexadecimal: CLI11 alone read it as 16
        {"--trials", "0b11"},
        {"--min-samples", "4"},       // fewer than the 10 the noise rule needs
        {"--min-samples", "200000"},  // more than any figure takes
        {"--sets", "1"},  // a timing prepares at least 2 (1 had been accepted and prepared 2)
        {"--processes", "0"},
        {"--processes", "17"},
        {"--processes", "2", "--no-timing"},
        {"--sets", "257"},
        {"--python", std::filesystem::temp_directory_path().string()},  // a folder
        {"--json", ""},
        {"--json", std::filesystem::temp_directory_path().string()},
        {"--cache-dir", "-"},  // made a folder called "-"
        {"--nvcc-flag", ""},
        {"--nvcc-flag", "-Xcompiler=-MD"}}) {
    std::vector<std::string> args = {"eval", problem, candidate, "--device", "cpu"};
    args.insert(args.end(), bad.begin(), bad.end());
    const auto refused = run_raw(args);
    EXPECT_EQ(refused.exit_code, 2) << bad[0] << " " << bad[1] << ": " << refused.output;
    EXPECT_NE(refused.output.find(bad[0]), std::string::npos) << refused.output;
  }
  // A number no double holds says so (it read as out of a range it lies in).
  const auto tiny = run_raw({"eval", problem, candidate, "--device", "cpu", "--atol", "1e-400"});
  EXPECT_EQ(tiny.exit_code, 2) << tiny.output;
  EXPECT_NE(tiny.output.find("underflows"), std::string::npos) << tiny.output;
  // nvcc's dependency flags are kjudge's own (its build cache compares two such lists).
  for (const char* flag : {"--nvcc-flag=-MMD", "--nvcc-flag=-E"}) {
    const auto refused = run_raw({"eval", problem, candidate, "--device", "cpu", flag});
    EXPECT_EQ(refused.exit_code, 2) << flag << ": " << refused.output;
    EXPECT_NE(refused.output.find("--nvcc-flag -"), std::string::npos) << refused.output;
  }
  // Paths go to the worker as JSON: one that is not UTF-8 is refused (it was an internal error).
  const auto latin1 = std::filesystem::temp_directory_path() /
                      ("kjudge_caf\xe9_" + std::to_string(::getpid()) + ".py");
  std::filesystem::copy_file(problem, latin1, std::filesystem::copy_options::overwrite_existing);
  const auto u = run_raw({"eval", latin1.string(), candidate, "--device", "cpu"});
  EXPECT_EQ(u.exit_code, 2) << u.output;
  EXPECT_NE(u.output.find("not valid UTF-8"), std::string::npos) << u.output;
  std::filesystem::remove(latin1);
  // A word that names no command says so (it pointed at "kjudge bogus --help", which failed).
  const auto bogus = run_raw({"bogus"});
  EXPECT_EQ(bogus.exit_code, 2) << bogus.output;
  EXPECT_NE(bogus.output.find("unknown command 'bogus'"), std::string::npos) << bogus.output;
  // A mistyped option is named as such, before the problem and candidate that follow it (it
  // read "problem is required"); so is a word no argument takes (HelpComesFromTheDocs has an
  // option left without its value).
  const auto typo = run_raw({"eval", "--budjet", "1", problem, candidate});
  EXPECT_EQ(typo.exit_code, 2) << typo.output;
  EXPECT_NE(typo.output.find("kjudge: unknown option: --budjet"), std::string::npos) << typo.output;
  const auto extra = run_raw({"eval", problem, candidate, "more"});
  EXPECT_EQ(extra.exit_code, 2) << extra.output;
  EXPECT_NE(extra.output.find("kjudge: unexpected argument: more"), std::string::npos)
      << extra.output;
  const auto separated = run_raw({"eval", problem, candidate, "--", "--trials", "3"});
  EXPECT_EQ(separated.exit_code, 2) << separated.output;
  EXPECT_NE(separated.output.find("kjudge: unexpected arguments: --trials 3"), std::string::npos)
      << separated.output;
  // Integers are decimal: a leading zero does not make an octal number (010 ran as seed 8).
  const auto dir =
      std::filesystem::temp_directory_path() / ("kjudge_decimal_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto zero =
      run_raw({"eval", problem, candidate, "--device", "cpu", "--no-timing", "--trials", "02",
               "--seed", "010", "--json", (dir / "r.json").string()});
  EXPECT_EQ(zero.exit_code, 0) << zero.output;
  std::ifstream zero_json(dir / "r.json");
  const auto zr = nlohmann::json::parse(zero_json, nullptr, false);
  ASSERT_TRUE(zr.is_object()) << zero.output;
  EXPECT_EQ(zr["options"]["base_seed"], 10) << zr["options"].dump();
  EXPECT_EQ(zr["options"]["trials"], 2) << zr["options"].dump();
  // A file that cannot be read is a usage error, before any worker starts (it was a
  // problem_error, or a compile_error for the candidate). Root reads anything: not checked.
  if (::geteuid() != 0) {
    const auto locked = dir / "locked.py";
    std::filesystem::copy_file(problem, locked, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::permissions(locked, std::filesystem::perms::none);
    for (const auto& [p, c] :
         {std::pair{locked.string(), candidate}, std::pair{problem, locked.string()}}) {
      const auto unread = run_raw({"eval", p, c, "--device", "cpu"});
      EXPECT_EQ(unread.exit_code, 2) << unread.output;
      EXPECT_NE(unread.output.find("cannot be read"), std::string::npos) << unread.output;
    }
  }
  std::filesystem::remove_all(dir);
  // A folder is not a problem or candidate file, and is not called missing.
  const std::string folder = std::filesystem::temp_directory_path().string();
  for (const auto& [p, c] : {std::pair{folder, candidate}, std::pair{problem, folder}}) {
    const auto d = run_raw({"eval", p, c, "--device", "cpu"});
    EXPECT_EQ(d.exit_code, 2) << d.output;
    EXPECT_NE(d.output.find("is a directory"), std::string::npos) << d.output;
    EXPECT_EQ(d.output.find("no such file"), std::string::npos) << d.output;
  }
  // A problem that is not a .py file is refused before a worker starts (it ended as a
  // problem_error, "cannot load ... as a Python module").
  const auto text = std::filesystem::temp_directory_path() /
                    ("kjudge_problem_" + std::to_string(::getpid()) + ".txt");
  std::filesystem::copy_file(problem, text, std::filesystem::copy_options::overwrite_existing);
  const auto txt = run_raw({"eval", text.string(), candidate, "--device", "cpu"});
  std::filesystem::remove(text);
  EXPECT_EQ(txt.exit_code, 2) << txt.output;
  EXPECT_NE(txt.output.find("expected a Python file (.py)"), std::string::npos) << txt.output;
  // A cache folder from the environment that is not UTF-8 is refused as --cache-dir's is (it
  // was an internal error: the job travels to the worker as JSON text).
  const char* before = std::getenv("KJUDGE_CACHE_DIR");
  const std::string kept = before != nullptr ? before : "";
  ::setenv("KJUDGE_CACHE_DIR", "/tmp/kjudge_cache_\xff", 1);
  const auto bad = run_raw({"eval", problem, candidate, "--device", "cpu", "--no-timing"});
  if (before != nullptr)
    ::setenv("KJUDGE_CACHE_DIR", kept.c_str(), 1);
  else
    ::unsetenv("KJUDGE_CACHE_DIR");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("the cache folder"), std::string::npos) << bad.output;
}

TEST(EvalCpu, EveryResultNamesTheCommitKjudgeWasBuiltFrom) {
  // kjudge_version alone ("0.1.0") told two builds of different code apart in no result.
  const auto r =
      run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", with({"--no-timing"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto commit = r.result["provenance"]["kjudge_commit"].get<std::string>();
  // The commit git gives for the sources (12 hex digits; "-dirty" or "-unknown-state" may
  // follow), or "unknown" where git reads none (a tarball, no git).
  std::string head;
  const std::string ask =
      "git -C '" + source_dir().string() + "' rev-parse --short=12 HEAD 2>/dev/null";
  if (FILE* git = ::popen(ask.c_str(), "r")) {
    char line[128] = {};
    if (std::fgets(line, sizeof line, git) != nullptr) head = line;
    ::pclose(git);
  }
  while (!head.empty() && (head.back() == '\n' || head.back() == '\r')) head.pop_back();
  if (std::regex_match(head, std::regex("[0-9a-f]{12}")))
    EXPECT_TRUE(std::regex_match(commit, std::regex(head + "(-dirty|-unknown-state)?"))) << commit;
  else
    EXPECT_EQ(commit, "unknown") << "git gave '" << head << "'";
  EXPECT_NE(r.output.find("(" + commit + ")"), std::string::npos) << r.output;
  for (const char* how : {"--version", "version"}) {
    const auto v = run_raw({how});
    EXPECT_EQ(v.exit_code, 0) << v.output;
    EXPECT_NE(v.output.find("(" + commit + ")"), std::string::npos) << how << ": " << v.output;
  }
}

// A named interpreter is run once before the worker: a program that is no Python, a Python of
// another version than the embedded one and one that finds no torch each say so (the first two
// ended as "cannot import torch" in the worker, exit 7).
TEST(EvalCpu, ANamedInterpreterThatIsNoPythonOrAnotherVersionSaysSo) {
  namespace fs = std::filesystem;
  const auto version = run_raw({"version"});
  ASSERT_EQ(version.exit_code, 0) << version.output;
  const auto at = version.output.find("embeds Python ");
  ASSERT_NE(at, std::string::npos) << version.output;
  std::istringstream in(version.output.substr(at + 14));
  std::string embedded;
  in >> embedded;
  const fs::path dir =
      fs::temp_directory_path() / ("kjudge_fake_python_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto fake = [&dir](const std::string& name, const std::string& body) {
    const fs::path p = dir / name;
    std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
    fs::permissions(p, fs::perms::owner_all);
    return p.string();
  };
  struct expectation {
    std::string python;
    int exit_code;
    std::string says;
  };
  const std::vector<expectation> cases = {
      {"/bin/ls", 2, "not a Python interpreter"},
      {fake("silent", "exit 0"), 2, "not a Python interpreter"},
      {fake("old", "echo kjudge-probe 2.7"), 2,
       "is Python 2.7, but this kjudge embeds Python " + embedded},
      {fake("bare", "echo kjudge-probe " + embedded + "; echo kjudge-torch 0"), 2,
       "finds no torch on its path"},
  };
  const std::string problem = (source_dir() / "problems/level1/softmax.py").string();
  const std::string candidate = (source_dir() / "examples/softmax/naive.py").string();
  for (const auto& c : cases) {
    const auto r = run_raw(
        {"eval", problem, candidate, "--device", "cpu", "--no-timing", "--python", c.python});
    EXPECT_EQ(r.exit_code, c.exit_code) << c.python << ": " << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.python << ": " << r.output;
    EXPECT_EQ(r.output.find("cannot import torch"), std::string::npos) << r.output;
  }
  // $KJUDGE_PYTHON is checked the same way.
  const char* was = std::getenv("KJUDGE_PYTHON");
  const std::string before = was ? was : "";
  ::setenv("KJUDGE_PYTHON", "/bin/ls", 1);
  const auto env = run_raw({"eval", problem, candidate, "--device", "cpu", "--no-timing"});
  if (was)
    ::setenv("KJUDGE_PYTHON", before.c_str(), 1);
  else
    ::unsetenv("KJUDGE_PYTHON");
  EXPECT_EQ(env.exit_code, 2) << env.output;
  EXPECT_NE(env.output.find("$KJUDGE_PYTHON=/bin/ls: not a Python interpreter"), std::string::npos)
      << env.output;
  // A script that execs a Python (a pyenv shim, a wrapper) embeds the Python it runs: the
  // script's own path passed the check, then found no torch in the worker (exit 7).
  const auto plain = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py",
                              {"--device", "cpu", "--no-timing", "--trials", "1"});
  ASSERT_TRUE(plain.result.is_object()) << plain.output;
  const std::string chosen = plain.result["options"]["python"].get<std::string>();
  const std::string wrapper = fake("wrapper", "exec '" + chosen + "' \"$@\"");
  const auto wrapped =
      run_eval("problems/level1/softmax.py", "examples/softmax/naive.py",
               {"--device", "cpu", "--no-timing", "--trials", "1", "--python", wrapper});
  EXPECT_EQ(wrapped.exit_code, 0) << wrapped.output;
  ASSERT_TRUE(wrapped.result.is_object()) << wrapped.output;
  EXPECT_EQ(wrapped.result["options"]["python"], chosen) << wrapped.output;
  // One that does not end is given the smaller of 20 s and --timeout (it had 20 s whatever the
  // evaluation's limit).
  const auto t0 = std::chrono::steady_clock::now();
  const auto slow = run_raw({"eval", problem, candidate, "--device", "cpu", "--no-timing",
                             "--timeout", "1", "--python", fake("slow", "sleep 30")});
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(slow.exit_code, 2) << slow.output;
  EXPECT_NE(slow.output.find("did not end within the evaluation's --timeout of 1 s"),
            std::string::npos)
      << slow.output;
  EXPECT_LT(took.count(), 8.0) << slow.output;
  fs::remove_all(dir);
}

TEST(EvalCpu, AskingForTheGpuWithoutOneSaysTheGpuIsNotUsable) {
  // The device query runs in a thread while Python starts; without a usable GPU torch's device
  // setup fails too, but the result reports the query's CUDA error, not torch's.
  const auto r = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py",
                          {"--device", "cuda", "--trials", "1", "--no-timing"});
  if (r.result.is_object() && r.result["status"] == "correct")
    GTEST_SKIP() << "a usable GPU is present";
  ASSERT_TRUE(r.result.is_object()) << r.output;
  EXPECT_EQ(r.result["status"], "internal_error") << r.output;
  EXPECT_NE(r.result["message"].get<std::string>().find("the GPU is not usable before any "
                                                        "candidate code ran"),
            std::string::npos)
      << r.result["message"];
}

TEST(EvalCpu, HelpComesFromTheDocs) {
  const auto top = run_raw({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_NE(top.output.find("Commands:"), std::string::npos);
  const auto eval = run_raw({"eval", "--help"});
  EXPECT_EQ(eval.exit_code, 0);
  EXPECT_NE(eval.output.find("Exit codes:"), std::string::npos);
  EXPECT_NE(eval.output.find("--precise"), std::string::npos);
  // "-h" as --nvcc-flag's value is nvcc's, not a request for help: the command runs (here it
  // stops at a missing problem file).
  const auto passed_on =
      run_raw({"eval", "no/such/problem.py", "examples/softmax/naive.py", "--nvcc-flag", "-h"});
  EXPECT_EQ(passed_on.exit_code, 2) << passed_on.output;
  EXPECT_EQ(passed_on.output.find("Exit codes:"), std::string::npos) << passed_on.output;
  // An option given no value says which kind of value it takes, once.
  const auto no_value = run_raw({"eval", "a.py", "b.py", "--trials="});
  EXPECT_EQ(no_value.exit_code, 2);
  const std::string said = "--trials: no value given; it takes an integer";
  const auto at = no_value.output.find(said);
  EXPECT_NE(at, std::string::npos) << no_value.output;
  EXPECT_EQ(no_value.output.find(said, at + 1), std::string::npos) << no_value.output;
}

TEST(EvalCpu, AFailedImportSaysWhatItPrintedHowLongItTookAndWhoseFaultTheCacheIs) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kjudge_import_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // A verbose load_inline build prints the compiler's output and raises a short error: what the
  // worker printed comes with the build's log. The import's time is its build time, failed or not.
  std::ofstream(dir / "verbose.py") << "import time\n"
                                       "time.sleep(0.3)\n"
                                       "print('error: COMPILER_SAID_THIS at line 3', flush=True)\n"
                                       "raise RuntimeError('Error building extension')\n";
  const auto verbose = run_eval("problems/level1/softmax.py", (dir / "verbose.py").string(),
                                {"--device", "cpu", "--no-timing", "--trials", "1"});
  EXPECT_EQ(verbose.exit_code, 3) << verbose.output;
  EXPECT_NE(verbose.result["build"]["log"].get<std::string>().find("COMPILER_SAID_THIS"),
            std::string::npos)
      << verbose.result["build"].dump(1);
  EXPECT_GE(verbose.result["build"]["build_s"].get<double>(), 0.25);
  EXPECT_NE(verbose.output.find("COMPILER_SAID_THIS"), std::string::npos) << verbose.output;

  // A cache directory that cannot be made: an import that fails on it is kjudge's environment's
  // failure (7), a syntax error still the candidate's (3), and a candidate that builds nothing
  // runs (0).
  std::ofstream(dir / "afile") << "x";
  const std::string cache = (dir / "afile" / "cache").string();
  std::ofstream(dir / "uses_cache.py")
      << "import os\n"
         "os.makedirs(os.path.join(os.environ['TORCH_EXTENSIONS_DIR'], 'ext'), exist_ok=True)\n";
  std::ofstream(dir / "syntax.py") << "def f(:\n";
  const std::vector<std::string> args = {"--device", "cpu",         "--no-timing", "--trials",
                                         "1",        "--cache-dir", cache};
  const auto uses = run_eval("problems/level1/softmax.py", (dir / "uses_cache.py").string(), args);
  EXPECT_EQ(uses.exit_code, 7) << uses.output;
  EXPECT_NE(uses.result["message"].get<std::string>().find("could not be made"), std::string::npos)
      << uses.result["message"];
  const auto syntax = run_eval("problems/level1/softmax.py", (dir / "syntax.py").string(), args);
  EXPECT_EQ(syntax.exit_code, 3) << syntax.output;
  const auto plain = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", args);
  EXPECT_EQ(plain.exit_code, 0) << plain.output;
  fs::remove_all(dir);
}

TEST(EvalCpu, LoadInlineFoldersKeepCopiesInTwoFoldersAndTwoProblemsApart) {
  // A candidate whose load_inline sources come from a file beside it: two byte-identical copies
  // in two folders must not share a build folder (run at once, each would build the other's
  // sources), nor one file against two problems; the same file against the same problem does.
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("kjudge_ext_dirs_" + std::to_string(::getpid()));
  const std::string source =
      "import os\n"
      "import torch\n"
      "here = os.path.dirname(os.path.abspath(__file__))\n"
      "with open(os.path.join(here, 'ext_dir.txt'), 'a') as f:\n"
      "    f.write(os.environ['TORCH_EXTENSIONS_DIR'] + '\\n')\n"
      "class ModelNew(torch.nn.Module):\n"
      "    def forward(self, x):\n"
      "        return torch.softmax(x, dim=-1)\n";
  for (const char* sub : {"a", "b"}) {
    fs::create_directories(dir / sub);
    std::ofstream(dir / sub / "model.py") << source;
  }
  const auto ext_dirs = [&](const char* sub) {
    std::ifstream in(dir / sub / "ext_dir.txt");
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
  };
  const std::vector<std::string> args = {"--device", "cpu", "--no-timing", "--trials", "1"};
  for (const auto& [problem, sub] :
       {std::pair{"problems/level1/softmax.py", "a"}, std::pair{"problems/level1/softmax.py", "b"},
        std::pair{"problems/level1/softmax.py", "a"},
        std::pair{"problems/level1/layernorm.py", "a"}}) {
    const auto r = run_eval(problem, (dir / sub / "model.py").string(), args);
    // (layernorm's model takes arguments this one does not: a runtime error after the import)
    EXPECT_EQ(r.exit_code, std::string(problem).ends_with("softmax.py") ? 0 : 4) << r.output;
  }
  const auto a = ext_dirs("a"), b = ext_dirs("b");
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(fs::path(a[0]).parent_path().filename(), "torch_extensions") << a[0];
  EXPECT_NE(a[0], b[0]) << "two copies in two folders share " << a[0];
  EXPECT_EQ(a[0], a[1]) << "the same file and problem found another folder";
  EXPECT_NE(a[0], a[2]) << "one file against two problems shares " << a[0];
  fs::remove_all(dir);
}

TEST(EvalCpu, ABuildLockLeftByAWorkerThatEndedInTheImportIsRemoved) {
  // Older torch's build lock (FileBaton) is a file it waits on until it goes: a worker timed out
  // in a long load_inline build left it, and every later evaluation of the candidate timed out.
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("kjudge_stale_lock_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "model.py") << "import os, time\n"
                                     "import torch\n"
                                     "here = os.path.dirname(os.path.abspath(__file__))\n"
                                     "ext = os.environ['TORCH_EXTENSIONS_DIR']\n"
                                     "with open(os.path.join(here, 'ext_dir.txt'), 'w') as f:\n"
                                     "    f.write(ext)\n"
                                     "os.makedirs(os.path.join(ext, 'ext'), exist_ok=True)\n"
                                     "open(os.path.join(ext, 'ext', 'lock'), 'w').close()\n"
                                     "time.sleep(600)\n";
  const auto r = run_eval("problems/level1/softmax.py", (dir / "model.py").string(),
                          {"--device", "cpu", "--no-timing", "--trials", "1", "--timeout", "10"});
  EXPECT_EQ(r.exit_code, 5) << r.output;
  EXPECT_TRUE(has_flag(r.result, "stale_build_lock_removed")) << r.result["flags"].dump(1);
  std::ifstream in(dir / "ext_dir.txt");
  std::string extensions;
  std::getline(in, extensions);
  ASSERT_FALSE(extensions.empty());
  EXPECT_FALSE(fs::exists(fs::path(extensions) / "ext" / "lock"));
  fs::remove_all(extensions);
  fs::remove_all(dir);
}

TEST(EvalCpu, ALibraryCutShortInTheCandidatesBuildFolderIsRemovedBeforeItsImport) {
  // torch's load_inline loads a library it finds up to date, whole or not: one cut short ends
  // the import in SIGBUS, every time. kjudge removes it first, and says so.
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("kjudge_cut_library_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "model.py") << "import os\n"
                                     "import torch\n"
                                     "here = os.path.dirname(os.path.abspath(__file__))\n"
                                     "with open(os.path.join(here, 'ext_dir.txt'), 'w') as f:\n"
                                     "    f.write(os.environ['TORCH_EXTENSIONS_DIR'])\n"
                                     "class ModelNew(torch.nn.Module):\n"
                                     "    def forward(self, x):\n"
                                     "        return torch.softmax(x, dim=-1)\n";
  const std::vector<std::string> args = {"--device", "cpu", "--no-timing", "--trials", "1"};
  const auto first = run_eval("problems/level1/softmax.py", (dir / "model.py").string(), args);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_FALSE(has_flag(first.result, "damaged_build_removed"));
  std::ifstream in(dir / "ext_dir.txt");
  std::string extensions;
  std::getline(in, extensions);
  ASSERT_FALSE(extensions.empty());
  // Half of an ELF file (this machine's kjudge executable) where torch keeps an extension.
  std::ifstream exe(KJ_KJUDGE_EXE, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(exe)), std::istreambuf_iterator<char>());
  const fs::path library = fs::path(extensions) / "ext" / "ext.so";
  fs::create_directories(library.parent_path());
  std::ofstream(library, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  // An earlier build's: an hour old, beside the lock file torch's FileLock leaves behind.
  fs::last_write_time(library, fs::file_time_type::clock::now() - std::chrono::hours(1));
  std::ofstream(library.parent_path() / "lock") << "";

  const auto second = run_eval("problems/level1/softmax.py", (dir / "model.py").string(), args);
  EXPECT_EQ(second.exit_code, 0) << second.output;
  EXPECT_TRUE(has_flag(second.result, "damaged_build_removed")) << second.result["flags"].dump(1);
  EXPECT_FALSE(fs::exists(library));
  fs::remove_all(extensions);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kj::test

namespace kj::test {
namespace {

TEST(ProfileCpu, ProfileOptionsWithoutAProfileAreAUsageError) {
  const auto r = run_raw({"eval", (source_dir() / "problems/level1/softmax.py").string(),
                          (source_dir() / "examples/softmax/naive.py").string(), "--summary"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--profile"), std::string::npos) << r.output;
  // Their default value too (--ncu-cache-control all): given, it says a profile was meant.
  for (const std::vector<std::string>& given :
       {std::vector<std::string>{"--ncu-cache-control", "all"},
        {"--ncu", "/usr/bin/ncu"},
        {"--baseline", "earlier.json"}}) {
    std::vector<std::string> args = {"eval", (source_dir() / "problems/level1/softmax.py").string(),
                                     (source_dir() / "examples/softmax/naive.py").string()};
    args.insert(args.end(), given.begin(), given.end());
    const auto d = run_raw(args);
    EXPECT_EQ(d.exit_code, 2) << given[0] << ": " << d.output;
    EXPECT_NE(d.output.find("--profile"), std::string::npos) << d.output;
  }
}

TEST(ProfileCpu, TheSummarySaysTheVerdictAndAnUnusableKeepFolderIsRefusedFirst) {
  const std::string problem = (source_dir() / "problems/level1/softmax.py").string();
  // --summary alone read as a normal profile of a candidate that did not compile.
  const auto broken =
      run_raw({"profile", problem, (source_dir() / "examples/faulty/syntax_error.py").string(),
               "--device", "cpu", "--summary"});
  EXPECT_EQ(broken.exit_code, 3) << broken.output;
  EXPECT_NE(broken.output.find("COMPILE ERROR"), std::string::npos) << broken.output;
  // KJUDGE_NCU_KEEP naming a file: refused before the evaluation (it failed after it, with a
  // C++ exception and no --json).
  const auto file =
      std::filesystem::temp_directory_path() / ("kjudge_keep_file_" + std::to_string(::getpid()));
  std::ofstream(file) << "x";
  ::setenv("KJUDGE_NCU_KEEP", file.c_str(), 1);
  const auto keep =
      run_raw({"profile", problem, (source_dir() / "examples/softmax/naive.py").string(),
               "--device", "cpu", "--no-timing", "--trials", "1"});
  ::unsetenv("KJUDGE_NCU_KEEP");
  std::filesystem::remove(file);
  EXPECT_EQ(keep.exit_code, 2) << keep.output;
  EXPECT_NE(keep.output.find("KJUDGE_NCU_KEEP"), std::string::npos) << keep.output;
  EXPECT_EQ(keep.output.find("status"), std::string::npos) << keep.output;
}

TEST(ProfileCpu, ABaselineThatIsNotAProfileIsAUsageError) {
  // Read before any evaluation: each case answers at once, with exit code 2 and the reason.
  const auto dir =
      std::filesystem::temp_directory_path() / ("kjudge_baseline_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  const std::pair<std::string, std::string> cases[] = {
      // An eval result without --profile: it has no `profile` key at all.
      {write("eval.json", R"({"schema": "kjudge.eval/1", "status": "correct"})"),
       "holds no profile"},
      {write("other.json", R"({"schema": "something/1"})"),
       "not a kjudge.profile/2 profile (nor kjudge.profile/1)"},
      {write("broken.json", "{not json"), "not JSON"},
      {(dir / "missing.json").string(), "missing.json"}};
  for (const auto& [path, says] : cases) {
    const auto r =
        run_raw({"profile", (source_dir() / "problems/level1/softmax.py").string(),
                 (source_dir() / "examples/softmax/naive.py").string(), "--baseline", path});
    EXPECT_EQ(r.exit_code, 2) << path << ": " << r.output;
    EXPECT_NE(r.output.find(says), std::string::npos) << path << ": " << r.output;
  }
  std::filesystem::remove_all(dir);
}

TEST(ProfileCpu, WithoutAGpuTheProfileSaysWhyThereAreNoCounters) {
  const auto r = run_command("profile", "problems/level2/quantvla_selective_layout_fusion.py",
                             "examples/quantvla/naive.py", with({"--no-timing"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto& p = r.result["profile"];
  ASSERT_TRUE(p.is_object()) << r.output;
  EXPECT_EQ(p["schema"], "kjudge.profile/2");
  EXPECT_FALSE(p["counters"]["collected"].get<bool>());
  EXPECT_NE(p["counters"]["unavailable_reason"].get<std::string>().find("CPU"), std::string::npos)
      << p["counters"].dump();
  EXPECT_NE(r.output.find("counters_unavailable"), std::string::npos) << r.output;
  EXPECT_TRUE(r.result["launches"].is_null());
}

TEST(ProfileCpu, ABaselineOfAnotherProblemIsRefused) {
  // It was compared silently: deltas between two different functions.
  const auto mse =
      run_command("profile", "problems/level1/mse_loss.py", "examples/mse_loss/naive.py",
                  {"--device", "cpu", "--no-timing", "--trials", "1"});
  ASSERT_EQ(mse.exit_code, 0) << mse.output;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("kjudge_other_baseline_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "result.json") << mse.result.dump();
  std::ofstream(dir / "profile.json") << mse.result["profile"].dump();
  const std::string softmax = (source_dir() / "problems/level1/softmax.py").string();
  for (const char* name : {"result.json", "profile.json"}) {
    const auto r =
        run_raw({"profile", softmax, (source_dir() / "examples/softmax/naive.py").string(),
                 "--device", "cpu", "--no-timing", "--baseline", (dir / name).string()});
    EXPECT_EQ(r.exit_code, 2) << name << ": " << r.output;
    EXPECT_NE(r.output.find("a result of another problem"), std::string::npos) << r.output;
  }
  // The same problem's result is taken.
  const auto same = run_raw({"profile", (source_dir() / "problems/level1/mse_loss.py").string(),
                             (source_dir() / "examples/mse_loss/naive.py").string(), "--device",
                             "cpu", "--no-timing", "--trials", "1", "--summary", "--baseline",
                             (dir / "result.json").string()});
  EXPECT_EQ(same.exit_code, 0) << same.output;
  EXPECT_NE(same.output.find("baseline"), std::string::npos) << same.output;
  std::filesystem::remove_all(dir);
}

TEST(EvalCpu, AJsonPathThatIsAnInputAndEmptyPathsAreUsageErrors) {
  // --json naming the candidate overwrote it with the result; --python '' and --cache-dir ''
  // were taken as not given.
  const auto dir =
      std::filesystem::temp_directory_path() / ("kjudge_json_input_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto candidate = dir / "cand.py";
  std::filesystem::copy_file(source_dir() / "examples/softmax/naive.py", candidate);
  const std::string problem = (source_dir() / "problems/level1/softmax.py").string();
  const auto before = std::filesystem::file_size(candidate);
  const auto over = run_raw(
      {"eval", problem, candidate.string(), "--device", "cpu", "--json", candidate.string()});
  EXPECT_EQ(over.exit_code, 2) << over.output;
  EXPECT_NE(over.output.find("is the candidate file"), std::string::npos) << over.output;
  EXPECT_EQ(std::filesystem::file_size(candidate), before);
  for (const char* option : {"--python", "--cache-dir"}) {
    const auto r = run_raw({"eval", problem, candidate.string(), "--device", "cpu", option, ""});
    EXPECT_EQ(r.exit_code, 2) << option << ": " << r.output;
    EXPECT_NE(r.output.find("an empty path"), std::string::npos) << r.output;
  }
  // profile's --baseline and --ncu likewise (an empty one was taken as none).
  for (const char* option : {"--baseline", "--ncu"}) {
    const auto r = run_raw({"profile", problem, candidate.string(), "--device", "cpu", option, ""});
    EXPECT_EQ(r.exit_code, 2) << option << ": " << r.output;
    EXPECT_NE(r.output.find("an empty path"), std::string::npos) << r.output;
  }
  // A path option whose value was left out: `--json --quiet` wrote the result to a file called
  // "--quiet" in the working folder, and printed the whole report.
  const auto missing =
      run_raw({"eval", problem, candidate.string(), "--device", "cpu", "--json", "--quiet"});
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("--quiet looks like an option"), std::string::npos)
      << missing.output;
  EXPECT_FALSE(std::filesystem::exists("--quiet"));
  // "--option=" with nothing after the "=" took the next word as its value: `--json= 3` wrote
  // the result to a file called 3, and `--nvcc-flag= --no-timing` took the flag for nvcc's.
  const auto made = dir / "made";
  const auto empty_json =
      run_raw({"eval", problem, candidate.string(), "--device", "cpu", "--json=", made.string()});
  EXPECT_EQ(empty_json.exit_code, 2) << empty_json.output;
  EXPECT_NE(empty_json.output.find("--json: an empty value after '='"), std::string::npos)
      << empty_json.output;
  EXPECT_FALSE(std::filesystem::exists(made));
  const auto empty_flag = run_raw(
      {"eval", problem, candidate.string(), "--device", "cpu", "--nvcc-flag=", "--no-timing"});
  EXPECT_EQ(empty_flag.exit_code, 2) << empty_flag.output;
  EXPECT_NE(empty_flag.output.find("--nvcc-flag: an empty value"), std::string::npos)
      << empty_flag.output;
  // An option given twice says so in kjudge's words.
  const auto twice = run_raw(
      {"eval", problem, candidate.string(), "--device", "cpu", "--trials", "3", "--trials", "4"});
  EXPECT_EQ(twice.exit_code, 2) << twice.output;
  EXPECT_NE(twice.output.find("--trials: given 2 times"), std::string::npos) << twice.output;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kj::test
