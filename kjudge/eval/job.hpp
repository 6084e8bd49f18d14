#pragma once
/** @file What the orchestrator asks a worker to do. Sent as JSON (schema kjudge.job/1) on the
 *  worker's stdin, which the worker reads to the end and closes before any problem or candidate
 *  code runs, so the held-out seed is never visible to the candidate through argv, the
 *  environment or a file. */

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <kjudge/measure/timing.hpp>

namespace kj::eval {

inline constexpr const char* job_schema = "kjudge.job/1";

enum class candidate_kind { python, native };
[[nodiscard]] const char* to_string(candidate_kind k) noexcept;
/** ".cu" (and ".cuh"-less CUDA sources) are native; ".py" is Python. Throws kj::error(usage). */
[[nodiscard]] candidate_kind candidate_kind_for(const std::filesystem::path& path);

/** The most input sets a timing prepares (`--sets`, `timing_options.max_input_sets`); it
 *  prepares at least 2. */
inline constexpr std::size_t max_input_sets = 256;

/** job::reference_alone_until's value for the whole of the reference's work (no phase is
 *  named so). */
inline constexpr std::string_view k_reference_alone_all = "*";

/** The phase a trial's reference part reports ("trial stress 0 reference", index from 0): the
 *  worker sends it, and job::reference_alone_until names a step by it. */
[[nodiscard]] std::string trial_reference_phase(std::string_view kind, int index);

/** How the error of a trial that was not run begins (the stress trials after the first that
 *  failed, or all of them where their inputs were judged too large before any ran). */
inline constexpr std::string_view k_trial_not_run = "not run: ";

/** Named timing budgets: "agent" (about a second per side) and "precise" (leaderboard). */
[[nodiscard]] measure::timing_options timing_preset(const std::string& name);

struct job {
  std::filesystem::path problem;
  std::filesystem::path candidate;
  candidate_kind kind = candidate_kind::python;
  std::string device = "cuda";  ///< "cuda" or "cpu"
  std::filesystem::path python;
  std::filesystem::path cache_dir;
  std::filesystem::path include_dir;  ///< holds kjudge/candidate.h for native builds
  int trials = 5;
  std::uint64_t base_seed = 42;
  std::uint64_t held_out_seed = 0;
  /** Keys the timed samples' generator seeds and input factors (from a fresh secret, like the
   *  held-out seed; in no result): a forward cannot tell one sample's number from another's,
   *  nor so the post-timing check's calls from timed ones. */
  std::uint64_t timing_key = 0;
  bool stress = false;  ///< stress_trials more trials with jittered sizes times stress_scale
  std::int64_t stress_scale = 4;
  std::optional<double> atol, rtol;
  bool timing = true;
  std::string timing_preset_name = "agent";
  measure::timing_options timing_options;
  std::vector<std::string> nvcc_flags;
  /** On a GPU, the longest the worker waits for another evaluation's work on the same GPU to
   *  end (runner::gpu_lock_path) before it goes on without the GPU to itself, flagged. */
  double gpu_lock_wait_s = 100;
  /** The evaluation's wall-clock limit (--timeout), which the worker's wait for the GPU leaves
   *  room under; 0: none known. */
  double timeout_s = 0;
  /** For a run under Nsight Compute: no timing; after the trials each side runs twice unprofiled
   *  (warm-up) and once inside an NVTX push/pop range (profile::ncu_reference_range,
   *  ncu_candidate_range), which ncu selects. */
  bool profile_ranges = false;
  /** Not empty: the worker runs the reference alone (no candidate is loaded), through the
   *  trials in their order, each up to its reference's part, and stops after the phase named
   *  here ("trial nominal 2 reference"): the orchestrator's check of a crash in a reference
   *  phase after a candidate's forward (did the reference crash on its own?). Or, as
   *  k_reference_alone_all, its tolerance, the nominal and held-out trials (a Python job's
   *  inputs drawn twice), two of the timing's input sets at the nominal sizes and its runner
   *  once a set: the check of a problem error reported after the candidate's code could run
   *  (does the problem fail on its own?). */
  std::string reference_alone_until;
  /** The problem file's SHA-256 as the orchestrator read it when the evaluation started: the
   *  worker loads the problem from bytes that hash to it, or fails (empty: unchecked). */
  std::string problem_sha256;
  /** The `kjudge eval` (or `profile`) process that asked for the job: with its ancestors, a
   *  process the worker's fence protects (runner/fence.hpp) where the worker is not its
   *  descendant (one forked by a pool). 0: none named. */
  int orchestrator_pid = 0;
};

[[nodiscard]] nlohmann::json to_json(const job& j);
/** Throws kj::error(protocol) on a wrong schema or missing fields. */
[[nodiscard]] job job_from_json(const nlohmann::json& j);

/** Seed of nominal trial i (0-based), derived from the base seed. */
/** How many stress trials --shapes stress adds. */
inline constexpr int stress_trials = 2;

[[nodiscard]] std::uint64_t trial_seed(std::uint64_t base_seed, int i) noexcept;
/** Held-out seed from the orchestrator's secret and the base seed. */
[[nodiscard]] std::uint64_t held_out_seed(std::uint64_t secret, std::uint64_t base_seed) noexcept;

}  // namespace kj::eval
