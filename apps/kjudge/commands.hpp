#pragma once
/** @file The subcommands. Each registers its options on a CLI11 app and runs from the parsed
 *  values; main() only dispatches. */

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <kjudge/core/file_io.hpp>

namespace kj::app {

/** An empty path names nothing: refused (a usage error) for --json by every command that writes
 *  JSON, and for --python and --cache-dir; `what` says what to name instead. "-" alone is
 *  standard output where `what` is the default (--json), and refused elsewhere (`--cache-dir -`
 *  made a folder called "-"). */
[[nodiscard]] CLI::Validator not_empty_path(const char* what = nullptr);
/** A value that must not be empty (`--max-size ''` read as not given); `what` names it. */
[[nodiscard]] CLI::Validator not_empty(const char* what);
/** An integer in [min, max] written in decimal digits only, rewritten without leading zeros; for
 *  ->transform(). CLI11 alone reads "010" as octal 8 and "0x10" as 16. */
[[nodiscard]] CLI::Validator decimal_in(std::uint64_t min, std::uint64_t max);
/** A span of time in its largest whole unit: "40s", "12m", "5h", "3d" (negative reads 0s). */
[[nodiscard]] std::string span_text(double seconds);
/** Fails early (a usage error) when --json's file cannot be written, rather than after the
 *  work. "-" (standard output) and "" (no file) pass. */
output_target check_json_path(const std::string& path);
/** Writes --json's document (nothing for an empty path) once the report is out: 0, or
 *  exit_code::result_not_written with the reason (and `ended`, what became of the work) on
 *  stderr when the file cannot be written. `seen`: what the path led to when check_json_path()
 *  looked (an evaluation's: the candidate's code, run meanwhile, may have replaced the path by a
 *  link to a file of the user's, or to one it wrote itself where kjudge cannot write): where it
 *  leads elsewhere now, the result replaces what is at the path itself, link or not, and where
 *  even that fails, what is there is removed, so that no file at the path passes for kjudge's. */
[[nodiscard]] int write_json_last(const std::string& path, const std::string& document,
                                  const char* command, const std::string& ended = {},
                                  const output_target* seen = nullptr);

struct eval_args {
  std::string problem, candidate;
  std::string device = "auto";
  int trials = 5;
  std::uint64_t seed = 42;
  std::string shapes = "nominal";
  std::optional<double> atol, rtol;
  std::string json_path;
  bool precise = false;
  std::optional<double> budget_s;
  std::optional<double> target_rse_pct;
  std::optional<std::size_t> min_samples;
  std::optional<std::size_t> sets;  ///< --sets: input sets at most (the preset's otherwise)
  std::size_t processes = 1;        ///< --processes: worker processes timed, pooled
  bool warm = false;
  bool graph = false;     ///< --graph (the default): device figure by CUDA graph replay
  bool no_graph = false;  ///< --no-graph: the forward's own launches behind the blocking kernel
  bool no_timing = false;
  double timeout_s = 300;
  std::string python;
  std::string cache_dir;
  std::vector<std::string> nvcc_flags;
  bool verbose = false;
  bool quiet = false;
  bool pool = false;     ///< --pool: fork the worker from the worker pool (the default)
  bool no_pool = false;  ///< --no-pool: exec a fresh `kjudge worker` (also KJUDGE_POOL=0)
  // Profiling (`eval --profile`, and always for `kjudge profile`).
  bool profile = false;
  /** One of the profile's own options was given (with any value, its default included). */
  bool profile_options_given = false;
  std::string baseline_path;              ///< an earlier result (or profile) to show deltas against
  bool summary_only = false;              ///< print the agent summary instead of the full report
  bool no_counters = false;               ///< skip the Nsight Compute run
  std::string ncu_path;                   ///< ncu to use (default: KJUDGE_NCU, PATH, usual folders)
  std::string ncu_cache_control = "all";  ///< ncu --cache-control
};

/** Registers `eval`'s options (names as in docs/cli.md). */
CLI::App* add_eval_command(CLI::App& app, eval_args& args);
/** Runs an evaluation; returns the process exit code. */
[[nodiscard]] int run_eval(const eval_args& args);

/** Registers `profile`: eval's options plus the profile ones (docs/cli.md). */
CLI::App* add_profile_command(CLI::App& app, eval_args& args);
/** `kjudge profile`: evaluation, then counters; returns the process exit code. */
[[nodiscard]] int run_profile(eval_args args);

/** The hidden worker: reads a job on stdin, reports on fd 3. Returns the exit code. */
[[nodiscard]] int run_worker_command();

/** The hidden worker pool: `kjudge worker-pool --address A --python P [--idle-exit-s N]` imports
 *  torch once, then forks a worker per request (kjudge/runner/pool.hpp). Returns the exit code. */
[[nodiscard]] int run_worker_pool_command(int argc, char** argv);

[[nodiscard]] int run_version();

struct specs_args {
  std::string json_path;
  bool all = false;
};

/** Registers `specs`'s options (names as in docs/cli.md). */
CLI::App* add_specs_command(CLI::App& app, specs_args& args);
/** Prints the GPU's properties and datasheet peaks; returns the process exit code. */
[[nodiscard]] int run_specs(const specs_args& args);

struct roofline_args {
  bool refresh = false;
  std::string json_path;
  std::string from_path;
  int device = 0;
  int repetitions = 7;
  std::string cache_dir;
};

/** Registers `roofline`'s options (names as in docs/cli.md). */
CLI::App* add_roofline_command(CLI::App& app, roofline_args& args);
/** Shows the measured ceilings (cached, measured, or read with --from); returns the exit code. */
[[nodiscard]] int run_roofline(const roofline_args& args);

struct cache_args {
  std::string action = "info";  ///< info, prune or clear
  std::string max_size;         ///< --max-size, as given (compile::parse_size)
  std::string unused_for;       ///< --unused-for (compile::parse_duration)
  std::string keep_recent;      ///< --keep-recent
  bool dry_run = false;
  bool list = false;
  std::string json_path;
  std::string cache_dir;
};

/** Registers `cache`'s options (names as in docs/cli.md). */
CLI::App* add_cache_command(CLI::App& app, cache_args& args);
/** `kjudge cache [info|prune|clear]`; returns the process exit code. */
[[nodiscard]] int run_cache(const cache_args& args);
struct pool_args {
  std::string action = "list";  ///< list or stop
  std::vector<pid_t> pids;      ///< only these pools (every pool of the user where none)
  bool force = false;           ///< stop: pools serving evaluations too
  std::string json_path;
};

/** Registers `pool`'s options (names as in docs/cli.md). */
CLI::App* add_pool_command(CLI::App& app, pool_args& args);
/** `kjudge pool [list|stop]`; returns the process exit code. */
[[nodiscard]] int run_pool(const pool_args& args);

/** After an evaluation: prunes the cache at `cache_root` when it has outgrown its limit
 *  (compile::prune_if_over_limit), and says so on stderr unless `quiet`. Never throws. */
void prune_after_evaluation(const std::filesystem::path& cache_root, bool quiet);

}  // namespace kj::app
