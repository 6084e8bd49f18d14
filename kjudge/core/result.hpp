#pragma once
/** @file The evaluation result: the only object that crosses from measuring to printing. It is
 *  serialised as versioned JSON (schema `kjudge.eval/1`, docs/result-schema.md); every number
 *  carries its unit in its name and every figure its method. Printers read this and nothing else.
 */

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <kjudge/core/exit_codes.hpp>
#include <kjudge/measure/timing.hpp>  // plain data types of the timing section (header only)

namespace kj {

/** Bump the number on any incompatible change; readers check it (check_schema). */
inline constexpr const char* eval_schema = "kjudge.eval/1";

/** A warning or error worth a user's attention that is not the status itself. */
struct flag {
  std::string code;      ///< stable identifier: "host_sync_in_forward", "input_modified", ...
  std::string severity;  ///< "info", "warning" or "error"
  std::string message;
};

/** The same flag: same code and message (the severity follows from the code). */
[[nodiscard]] bool same_flag(const flag& a, const flag& b) noexcept;
/** Appends every flag of `more`. */
void append(std::vector<flag>& into, const std::vector<flag>& more);
/** Appends each flag of `more` that `into` does not hold yet (same_flag), order kept. */
void append_unique(std::vector<flag>& into, const std::vector<flag>& more);

struct file_info {
  std::string path;
  std::string sha256;
  std::string kind;  ///< problem: "kernelbench"; candidate: "python" or "native"
};

struct build_info {
  bool attempted = false;
  bool ok = false;
  bool cached = false;
  double build_s = 0;  ///< compile or import time, apart from evaluation
  std::string tool;    ///< "nvcc", "python-import" (load_inline / Triton builds happen here)
  std::string command;
  std::string cache_key;
  std::string compiler_version;
  std::string log;  ///< the compiler's output: complete on failure; nvcc's warnings on success
  /** Why a native build that succeeded was not filed in the cache (it served this evaluation
   *  alone); empty when it was filed, or came from the cache. */
  std::string not_cached;
};

/** An output's error as a maximum takes it: JSON has no infinity, so an error that was infinite
 *  (a relative error over a reference value near 0 that overflowed a double) comes back from the
 *  worker as null, read as NaN; over elements that were compared (`count` > 0) it was infinite.
 *  NaN where none were (an output with no finite pair), which a maximum leaves out. */
[[nodiscard]] inline double compared_error(double v, std::uint64_t count) noexcept {
  return v != v && count > 0 ? std::numeric_limits<double>::infinity() : v;
}

/** max(acc, v) leaving out NaN (an error that was not taken). */
[[nodiscard]] inline double max_error(double acc, double v) noexcept {
  return v != v ? acc : std::max(acc, v);
}

struct mismatch_info {
  std::vector<std::int64_t> index;
  double expected = 0;  ///< null in JSON when not finite: expected_text says which
  double actual = 0;
  double abs_err = 0;
  /** The values as text ("0.125", "inf", "-inf", "nan"): JSON numbers hold no infinity. */
  std::string expected_text;
  std::string actual_text;
};

/** A value as mismatch_info's texts give it: the shortest text that reads back as the same
 *  double ("0.1", "1e+300"), "inf", "-inf" or "nan". */
[[nodiscard]] std::string value_text(double v);

struct output_check {
  int index = 0;
  bool passed = false;
  std::vector<std::int64_t> expected_shape, actual_shape;
  std::string expected_dtype, actual_dtype;
  double atol = 0, rtol = 0;
  std::uint64_t numel = 0, nan_count = 0, inf_count = 0, mismatch_count = 0;
  double max_abs_err = 0, mean_abs_err = 0, max_rel_err = 0, mean_rel_err = 0;
  /** The elements the means are over: both sides finite; for the relative error, a nonzero
   *  reference value too. */
  std::uint64_t abs_err_count = 0, rel_err_count = 0;
  std::vector<std::int64_t> worst_index;
  std::vector<mismatch_info> mismatches;
  bool constant_output = false;
  bool reference_constant = false;
  /** A floating reference whose values span more than rtol times their largest magnitude and
   *  more than atol / 100 (check::output_comparison::reference_varies). */
  bool reference_varies = false;
  std::uint64_t actual_hash = 0, expected_hash = 0;
  std::string message;
  /** The reference's sum and sum of magnitudes over its finite values: not serialised (the
   *  worker compares trials' references with them, output_repeats). */
  double reference_sum = 0, reference_abs_sum = 0;
  [[nodiscard]] bool shape_ok() const noexcept {
    return expected_shape == actual_shape && expected_dtype == actual_dtype;
  }
};

struct trial_result {
  std::string kind;  ///< "nominal", "held_out" or "stress"
  int index = 0;
  std::uint64_t seed = 0;
  std::int64_t shape_scale = 1;                ///< 4 for stress trials: jittered sizes scaled up
  std::map<std::string, std::int64_t> jitter;  ///< nominal size -> drawn size
  std::vector<std::vector<std::int64_t>> input_shapes;
  std::vector<std::string> input_dtypes;
  bool passed = false;
  std::vector<output_check> outputs;
  std::vector<int> inputs_modified;            ///< indices of inputs the candidate changed in place
  std::vector<int> reference_inputs_modified;  ///< those the reference changed in place
  std::string error;                           ///< candidate exception, with traceback tail
  /** A stress trial not run to its end because the problem cannot run at its sizes (`error`
   *  says why; flag stress_not_applicable). */
  bool skipped = false;
  double reference_ms = 0;  ///< host wall of the correctness call (not a timing figure)
  double candidate_ms = 0;
};

/** Precision over all passed and failed nominal trials, all outputs. */
struct precision_summary {
  double max_abs_err = 0, mean_abs_err = 0, max_rel_err = 0, mean_rel_err = 0;
};

struct correctness_summary {
  int trials = 0, trials_passed = 0;
  bool held_out_ran = false, held_out_passed = false;
  int stress_trials = 0, stress_passed = 0;
  int stress_skipped = 0;  ///< reported skipped: the problem cannot run at the stress sizes
  /** "by_name", "by_value", "by_name_end", "by_order", "by_shape", "partial", "seed_only", "none"
   * (no parameters), "native" (ABI), or "not_built": the evaluation ended before the models were
   *  built. */
  std::string weight_copy = "not_built";
  /** "dtype-default", "problem", "command line", "atol: <source>, rtol: <source>", or
   *  "not_resolved": the evaluation ended before the problem's tolerances were read. */
  std::string tolerance_source = "not_resolved";
  precision_summary precision;
};

struct gpu_info {
  std::string name, uuid, pci_bus_id;
  std::string compute_capability;  ///< "9.0"
  int sm_count = 0;
  std::uint64_t memory_bytes = 0, l2_bytes = 0;
  int sm_clock_max_mhz = 0, memory_clock_mhz = 0;
  std::string driver_version;  ///< CUDA driver API version "13.0"
  /** The kernel driver's release, "580.159.04" (NVML); absent where NVML is not available. */
  std::optional<std::string> driver_release;
  std::string runtime_version;  ///< kjudge's CUDA runtime "13.0"
};

struct provenance {
  std::string kjudge_version;
  std::string kjudge_commit;  ///< the commit it was built from (source_commit())
  std::string hostname;
  std::string started_at;  ///< ISO 8601 UTC
  std::string device;      ///< "cuda" or "cpu"
  std::optional<gpu_info> gpu;
  std::string torch_version, torch_cuda_version, python_version, python_executable;
  std::uint64_t base_seed = 0;
  std::vector<std::uint64_t> trial_seeds;
  std::uint64_t held_out_seed =
      0;                      ///< revealed after the run; derived from the orchestrator's secret
  std::string timing_preset;  ///< "agent" or "precise"
};

/** When a worker phase began, in seconds since the worker started. */
struct phase_time {
  std::string name;
  double start_s = 0;
};

struct worker_info {
  std::string outcome;  ///< process_result::describe()
  int exit_code = -1;
  int signal = 0;
  double wall_s = 0;
  std::uint64_t max_rss_kb = 0;
  std::string last_phase;
  std::vector<phase_time> phases;
  std::string output_tail;  ///< last lines of the candidate's / worker's stdout+stderr
  /** How the worker process was made: "exec" (fork and exec of `kjudge worker`) or "pool" (forked
   *  by the worker pool, torch already imported); "exec+pool_started" when the pool was asked
   *  for, did not serve (none ran, or it did not take the request), and a pool start was
   *  launched for the next evaluation. */
  std::string started_by = "exec";
  /** Why the pool there did not serve this evaluation ("no pool of this user listens at the
   *  address", "the pool refused it: stale pool: ..."); empty when it served or none was asked. */
  std::string pool_refused;
  /** Why no pool was started for the next evaluation when none served this one ("worker pools
   *  of this user running already: 4, the most allowed (KJUDGE_POOL_MAX=4); ..."); empty
   *  otherwise. */
  std::string pool_not_started;
  /** Seconds this evaluation waited for a pool that was still starting (0: it did not wait). */
  double pool_wait_s = 0;
  /** Seconds the worker waited, on a GPU, for another evaluation's work on it (trials, timing)
   *  to end before its own (0: it did not wait; flag gpu_lock_not_held when it gave up). */
  double gpu_lock_wait_s = 0;
  /** When the worker took (or began to wait for) the GPU's lock: "after the imports" (the
   *  problem's and the candidate's module code did no GPU work), "at the first GPU work of the
   *  candidate's import (cudaLaunchKernel)", or "after the imports (their GPU work was not
   *  watched: ...)"; empty on the CPU, or when the worker ended before. */
  std::string gpu_lock_at;
  /** Seconds the worker waited, on the CPU (`--device cpu`), for another evaluation's timing
   *  there to end before its own (0: it did not wait; flag cpu_lock_not_held when it gave up). */
  double cpu_lock_wait_s = 0;
};

struct eval_result {
  std::string schema = eval_schema;
  std::string kjudge_version;
  eval_status status = eval_status::internal_error;
  std::string message;
  file_info problem, candidate;
  nlohmann::json options = nlohmann::json::object();
  build_info build;
  correctness_summary correctness;
  std::vector<trial_result> trials;
  std::optional<measure::comparison> timing;
  /** CUPTI records of one cold-L2 forward per side ({"reference": ..., "candidate": ...,
   *  "fusion_ratio": ...}; kjudge::profile's cupti_forward JSON); null when not recorded. */
  nlohmann::json launches;
  /** `kjudge eval --profile`: the kjudge.profile/2 report; null otherwise. */
  nlohmann::json profile;
  std::vector<flag> flags;
  provenance prov;
  worker_info worker;
  double wall_s = 0;  ///< orchestrator: command start to result
  /** With `--processes` N > 1: one entry a worker process run ({"status", "message", "wall_s",
   *  "started_by"}), in order; empty for one. */
  nlohmann::json runs = nlohmann::json::array();

  void add_flag(std::string code, std::string severity, std::string message);
  [[nodiscard]] bool has_flag(const std::string& code) const;
};

void to_json(nlohmann::json& j, const eval_result& r);
void from_json(const nlohmann::json& j, eval_result& r);

/** Throws kj::error(protocol) unless j["schema"] is the schema this build reads. */
void check_schema(const nlohmann::json& j);

// Pieces that the worker sends one by one (see runner/worker_protocol.hpp).
void to_json(nlohmann::json& j, const flag& v);
void from_json(const nlohmann::json& j, flag& v);
void to_json(nlohmann::json& j, const build_info& v);
void from_json(const nlohmann::json& j, build_info& v);
void to_json(nlohmann::json& j, const output_check& v);
void from_json(const nlohmann::json& j, output_check& v);
void to_json(nlohmann::json& j, const trial_result& v);
void from_json(const nlohmann::json& j, trial_result& v);
void to_json(nlohmann::json& j, const correctness_summary& v);
void from_json(const nlohmann::json& j, correctness_summary& v);
void to_json(nlohmann::json& j, const provenance& v);
void from_json(const nlohmann::json& j, provenance& v);
void to_json(nlohmann::json& j, const file_info& v);
void from_json(const nlohmann::json& j, file_info& v);
void to_json(nlohmann::json& j, const gpu_info& v);
void from_json(const nlohmann::json& j, gpu_info& v);
void to_json(nlohmann::json& j, const phase_time& v);
void from_json(const nlohmann::json& j, phase_time& v);
void to_json(nlohmann::json& j, const worker_info& v);
void from_json(const nlohmann::json& j, worker_info& v);
void to_json(nlohmann::json& j, const precision_summary& v);
void from_json(const nlohmann::json& j, precision_summary& v);
void to_json(nlohmann::json& j, const mismatch_info& v);
void from_json(const nlohmann::json& j, mismatch_info& v);

}  // namespace kj

namespace kj::measure {
void to_json(nlohmann::json& j, const figure& v);
void from_json(const nlohmann::json& j, figure& v);
void to_json(nlohmann::json& j, const side_result& v);
void from_json(const nlohmann::json& j, side_result& v);
void to_json(nlohmann::json& j, const comparison& v);
void from_json(const nlohmann::json& j, comparison& v);
}  // namespace kj::measure
