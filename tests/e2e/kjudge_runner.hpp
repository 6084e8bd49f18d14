#pragma once
// Runs the kjudge executable as a user would and reads back its JSON result.

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <kjudge/runner/process.hpp>

#include "process_probe.hpp"

namespace kj::test {

inline std::filesystem::path source_dir() {
  return KJ_SOURCE_DIR_FOR_TESTS;
}

struct kjudge_run {
  int exit_code = -1;
  std::string output;
  nlohmann::json result;  // null when no JSON was written
};

/** This process's environment, sorted. */
inline std::vector<std::string> environment_now() {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  std::sort(env.begin(), env.end());
  return env;
}

/** The environment the test program started with, before any test set a variable. */
inline const std::vector<std::string> g_start_environment = environment_now();

/** Which worker kjudge runs. An evaluation with --no-pool, or that the pool's own tests run
 *  (they set KJ_POOL_TEST_MARKER and stop their pools), is left as it is, as is the worker of
 *  one whose caller chose for every test (KJUDGE_POOL set in ctest's environment:
 *  `KJUDGE_POOL=0 ctest` runs on exec'd workers every evaluation that does not pass --pool).
 *  Otherwise one worker pool serves the tests' runs (forked workers, torch imported once, as
 *  `kjudge eval` does by default): every run whose environment is the one the test program
 *  started with, in every test program, asks the same pool, which the user's other pools do not
 *  keep from starting (KJUDGE_POOL_MAX, unless set, is raised; it is not part of a pool's
 *  address), and which kjudge's own default chooses (so that under a preload or an injected
 *  CUDA tool, a sanitizer or Nsight, there is none, as kjudge decides); a fixture stops it after
 *  the last test (tests/e2e/stop_pools.cmake). A run whose test has set a variable or adds its
 *  own gets an exec'd worker, so that no test starts a pool of its own that would outlive it,
 *  unless it passes --pool. */
inline void choose_worker(runner::spawn_options& o, const std::vector<std::string>& args) {
  if (std::find(args.begin(), args.end(), "--no-pool") != args.end() ||
      std::getenv("KJ_POOL_TEST_MARKER") != nullptr)
    return;
  const bool asked = std::find(args.begin(), args.end(), "--pool") != args.end();
  const bool chosen = std::getenv("KJUDGE_POOL") != nullptr;
  const bool shared = o.env.empty() && environment_now() == g_start_environment;
  if (shared && (asked || !chosen) && std::getenv("KJUDGE_POOL_MAX") == nullptr)
    o.env.emplace_back("KJUDGE_POOL_MAX", "64");
  if (!shared && !asked && !chosen) o.env.emplace_back("KJUDGE_POOL", "0");
}

/** `kjudge <command> <problem> <candidate> <extra...> --json <tmp>` (command: eval, profile);
 *  relative paths are taken from the repository's root. */
inline kjudge_run run_command(const std::string& command, const std::string& problem,
                              const std::string& candidate, std::vector<std::string> extra = {},
                              std::chrono::seconds limit = std::chrono::seconds(240)) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  static std::atomic<unsigned> calls{0};  // a test may run evaluations side by side
  const auto json_path =
      std::filesystem::temp_directory_path() /
      (std::string("kjudge_e2e_") + info->test_suite_name() + "_" + info->name() + "_" +
       std::to_string(::getpid()) + "_" + std::to_string(calls++) + ".json");
  std::filesystem::remove(json_path);
  runner::spawn_options o;
  o.argv = {KJ_KJUDGE_EXE,
            command,
            (source_dir() / problem).string(),
            (source_dir() / candidate).string(),
            "--json",
            json_path.string()};
  choose_worker(o, extra);
  for (auto& e : extra) o.argv.push_back(std::move(e));
  o.timeout = limit;
  o.output_tail_bytes = 1 << 20;
  const auto p = runner::run_process(o);
  kjudge_run r;
  r.exit_code = p.how == runner::exit_kind::exited ? p.exit_code : -1;
  r.output = p.output_tail;
  std::ifstream in(json_path);
  if (in) {
    std::stringstream ss;
    ss << in.rdbuf();
    r.result = nlohmann::json::parse(ss.str(), nullptr, false);
    std::filesystem::remove(json_path);
  }
  return r;
}

/** `kjudge eval <problem> <candidate> <extra...> --json <tmp>`. */
inline kjudge_run run_eval(const std::string& problem, const std::string& candidate,
                           std::vector<std::string> extra = {},
                           std::chrono::seconds limit = std::chrono::seconds(240)) {
  return run_command("eval", problem, candidate, std::move(extra), limit);
}

/** Runs kjudge with raw arguments (help, usage errors, other commands). */
inline kjudge_run run_raw(std::vector<std::string> args,
                          std::chrono::seconds limit = std::chrono::seconds(60)) {
  runner::spawn_options o;
  o.argv = {KJ_KJUDGE_EXE};
  choose_worker(o, args);
  for (auto& a : args) o.argv.push_back(std::move(a));
  o.timeout = limit;
  const auto p = runner::run_process(o);
  return {p.how == runner::exit_kind::exited ? p.exit_code : -1, p.output_tail, nullptr};
}

/** A lock folder of this test's own (KJUDGE_LOCK_DIR) while it lives: the GPU's or the CPU's
 *  lock taken here is no other test's. */
struct private_lock_dir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("kj-lock-test-" + std::to_string(::getpid()));
  private_lock_dir() {
    std::filesystem::create_directories(path);
    ::setenv("KJUDGE_LOCK_DIR", path.c_str(), 1);
  }
  ~private_lock_dir() {
    ::unsetenv("KJUDGE_LOCK_DIR");
    std::filesystem::remove_all(path);
  }
  private_lock_dir(const private_lock_dir&) = delete;
  private_lock_dir& operator=(const private_lock_dir&) = delete;
};

inline bool has_flag(const nlohmann::json& result, const std::string& code) {
  for (const auto& f : result.value("flags", nlohmann::json::array()))
    if (f.value("code", "") == code) return true;
  return false;
}

/** The message of the first flag `code` in `result` ("" when there is none). */
inline std::string flag_message(const nlohmann::json& result, const std::string& code) {
  for (const auto& f : result.value("flags", nlohmann::json::array()))
    if (f.value("code", "") == code) return f.value("message", "");
  return "";
}

}  // namespace kj::test
