#include <kjudge/core/result.hpp>

#include <algorithm>
#include <limits>
#include <type_traits>

#include <fmt/format.h>

#include <kjudge/core/error.hpp>

namespace kj {

namespace {

// Field-by-field (de)serialisation: every listed member becomes a key of the same name; missing
// or null keys leave the member at its default, so older or partial documents still read.
template <class T>
void put(nlohmann::json& j, const char* name, const T& value) {
  j[name] = value;
}
template <class T>
void get(const nlohmann::json& j, const char* name, T& value) {
  const auto it = j.find(name);
  if (it == j.end()) return;
  if (!it->is_null()) {
    it->get_to(value);
  } else if constexpr (std::is_floating_point_v<T>) {
    // JSON has no NaN or infinity: nlohmann writes them as null, and null reads back as NaN (a
    // NaN output's error stays NaN, not 0).
    value = std::numeric_limits<T>::quiet_NaN();
  }
}

// An absent optional is null, and null reads back as absent.
template <class T>
void put(nlohmann::json& j, const char* name, const std::optional<T>& value) {
  j[name] = value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}
template <class T>
void get(const nlohmann::json& j, const char* name, std::optional<T>& value) {
  const auto it = j.find(name);
  if (it == j.end() || it->is_null()) {
    value.reset();
    return;
  }
  value = it->get<T>();
}

#define KJ_PUT(field) put(j, #field, v.field);
#define KJ_GET(field) get(j, #field, v.field);
#define KJ_JSON_FIELDS(type, ...)                    \
  void to_json(nlohmann::json& j, const type& v) {   \
    j = nlohmann::json::object();                    \
    NLOHMANN_JSON_PASTE(KJ_PUT, __VA_ARGS__)         \
  }                                                  \
  void from_json(const nlohmann::json& j, type& v) { \
    NLOHMANN_JSON_PASTE(KJ_GET, __VA_ARGS__)         \
  }

}  // namespace

KJ_JSON_FIELDS(flag, code, severity, message)
KJ_JSON_FIELDS(file_info, path, sha256, kind)
KJ_JSON_FIELDS(build_info, attempted, ok, cached, build_s, tool, command, cache_key,
               compiler_version, log, not_cached)
KJ_JSON_FIELDS(mismatch_info, index, expected, actual, abs_err, expected_text, actual_text)
KJ_JSON_FIELDS(output_check, index, passed, expected_shape, actual_shape, expected_dtype,
               actual_dtype, atol, rtol, numel, nan_count, inf_count, mismatch_count, max_abs_err,
               mean_abs_err, max_rel_err, mean_rel_err, abs_err_count, rel_err_count, worst_index,
               mismatches, constant_output, reference_constant, reference_varies, actual_hash,
               expected_hash, message)
KJ_JSON_FIELDS(trial_result, kind, index, seed, shape_scale, jitter, input_shapes, input_dtypes,
               passed, outputs, inputs_modified, reference_inputs_modified, error, skipped,
               reference_ms, candidate_ms)
KJ_JSON_FIELDS(precision_summary, max_abs_err, mean_abs_err, max_rel_err, mean_rel_err)
KJ_JSON_FIELDS(correctness_summary, trials, trials_passed, held_out_ran, held_out_passed,
               stress_trials, stress_passed, stress_skipped, weight_copy, tolerance_source,
               precision)
KJ_JSON_FIELDS(gpu_info, name, uuid, pci_bus_id, compute_capability, sm_count, memory_bytes,
               l2_bytes, sm_clock_max_mhz, memory_clock_mhz, driver_version, driver_release,
               runtime_version)
KJ_JSON_FIELDS(phase_time, name, start_s)
KJ_JSON_FIELDS(worker_info, outcome, exit_code, signal, wall_s, max_rss_kb, last_phase, phases,
               output_tail, started_by, pool_refused, pool_not_started, pool_wait_s,
               gpu_lock_wait_s, gpu_lock_at, cpu_lock_wait_s)

void to_json(nlohmann::json& j, const provenance& v) {
  j = nlohmann::json::object();
  NLOHMANN_JSON_PASTE(KJ_PUT, kjudge_version, kjudge_commit, hostname, started_at, device,
                      torch_version, torch_cuda_version, python_version, python_executable,
                      base_seed, trial_seeds, held_out_seed, timing_preset)
  j["gpu"] = v.gpu ? nlohmann::json(*v.gpu) : nlohmann::json();
}
void from_json(const nlohmann::json& j, provenance& v) {
  NLOHMANN_JSON_PASTE(KJ_GET, kjudge_version, kjudge_commit, hostname, started_at, device,
                      torch_version, torch_cuda_version, python_version, python_executable,
                      base_seed, trial_seeds, held_out_seed, timing_preset)
  if (auto it = j.find("gpu"); it != j.end() && it->is_object()) v.gpu = it->get<gpu_info>();
}

std::string value_text(double v) {
  return v != v ? std::string("nan") : fmt::format("{}", v);  // fmt writes a signed NaN "-nan"
}

bool same_flag(const flag& a, const flag& b) noexcept {
  return a.code == b.code && a.message == b.message;
}

void append(std::vector<flag>& into, const std::vector<flag>& more) {
  into.insert(into.end(), more.begin(), more.end());
}

void append_unique(std::vector<flag>& into, const std::vector<flag>& more) {
  for (const auto& f : more)
    if (std::none_of(into.begin(), into.end(), [&f](const flag& g) { return same_flag(f, g); }))
      into.push_back(f);
}

void eval_result::add_flag(std::string code, std::string severity, std::string msg) {
  append_unique(flags, {{std::move(code), std::move(severity), std::move(msg)}});
}

bool eval_result::has_flag(const std::string& code) const {
  for (const auto& f : flags)
    if (f.code == code) return true;
  return false;
}

void check_schema(const nlohmann::json& j) {
  const auto it = j.find("schema");
  if (it == j.end() || !it->is_string())
    KJ_THROW(error_kind::protocol, "not a kjudge result: no \"schema\" field");
  if (it->get<std::string>() != eval_schema)
    KJ_THROW(error_kind::protocol, "result schema '{}' is not the one this kjudge reads ('{}')",
             it->get<std::string>(), eval_schema);
}

void to_json(nlohmann::json& j, const eval_result& v) {
  j = nlohmann::json::object();
  j["schema"] = v.schema;
  j["kjudge_version"] = v.kjudge_version;
  j["status"] = std::string(to_string(v.status));
  j["exit_code"] = exit_code_for(v.status);
  NLOHMANN_JSON_PASTE(KJ_PUT, message, problem, candidate, options, build, correctness, trials,
                      flags, worker, wall_s, runs)
  j["provenance"] = v.prov;
  j["timing"] = v.timing ? nlohmann::json(*v.timing) : nlohmann::json();
  j["launches"] = v.launches;
  if (!v.profile.is_null()) j["profile"] = v.profile;
}

void from_json(const nlohmann::json& j, eval_result& v) {
  check_schema(j);
  v.schema = j.at("schema").get<std::string>();
  get(j, "kjudge_version", v.kjudge_version);
  v.status = eval_status_from_string(j.at("status").get<std::string>());
  NLOHMANN_JSON_PASTE(KJ_GET, message, problem, candidate, options, build, correctness, trials,
                      flags, worker, wall_s, runs)
  get(j, "provenance", v.prov);
  if (auto it = j.find("timing"); it != j.end() && it->is_object())
    v.timing = it->get<measure::comparison>();
  if (auto it = j.find("launches"); it != j.end()) v.launches = *it;
  if (auto it = j.find("profile"); it != j.end()) v.profile = *it;
}

}  // namespace kj

namespace kj::measure {

// Defined here rather than in measure/: the result (core) names figures without linking CUDA code.
const char* to_string(figure_kind k) noexcept {
  switch (k) {
    case figure_kind::device:
      return "device";
    case figure_kind::stream:
      return "stream";
    case figure_kind::host_wall:
      return "host_wall";
  }
  return "unknown";
}

const figure& figure_of(const side_result& s, figure_kind k) noexcept {
  switch (k) {
    case figure_kind::device:
      return s.device;
    case figure_kind::stream:
      return s.stream;
    case figure_kind::host_wall:
      break;
  }
  return s.host_wall;
}

namespace {
figure_kind figure_kind_from(const std::string& s) {
  if (s == "device") return figure_kind::device;
  if (s == "stream") return figure_kind::stream;
  if (s == "host_wall") return figure_kind::host_wall;
  KJ_THROW(error_kind::protocol, "unknown figure kind '{}'", s);
}

/** A figure's statistic or a speedup's number: null where the figure is not valid (not taken,
 *  withheld, or failed a check), so that no reader can take it for a measurement. */
nlohmann::json number_if(bool valid, double value) {
  return valid ? nlohmann::json(value) : nlohmann::json(nullptr);
}
}  // namespace

void to_json(nlohmann::json& j, const figure& v) {
  const auto& s = v.summary;
  const bool ok = v.valid;
  j = {{"kind", to_string(v.kind)},
       {"method", v.method},
       {"cold", v.cold},
       {"valid", v.valid},
       {"note", v.note},
       {"noisy", v.noisy},
       {"n", s.n},
       {"median_us", number_if(ok, s.median)},
       {"q1_us", number_if(ok, s.q1)},
       {"q3_us", number_if(ok, s.q3)},
       {"mean_us", number_if(ok, s.mean)},
       {"stddev_us", number_if(ok, s.stddev)},
       {"min_us", number_if(ok, s.min)},
       {"max_us", number_if(ok, s.max)},
       {"rse_pct", number_if(ok, s.rse_pct)},
       {"rse_samples_pct", number_if(ok, v.rse_samples_pct)},
       {"rse_sets_pct", number_if(ok, v.rse_sets_pct)},  // NaN (too few sets) dumps as null
       {"discarded_throttled", v.discarded_throttled},
       {"discarded_cpu_wait", v.discarded_cpu_wait},
       {"discarded_cpu_wait_max_us", v.discarded_cpu_wait_max_us},
       {"cpu_wait_max_us", v.cpu_wait_max_us},  // NaN (not read) dumps as null
       {"cpu_wait_share_pct", v.cpu_wait_share_pct},
       {"cpu_wait_total_us", v.cpu_wait_total_us},
       {"samples_us", v.samples_us},
       {"samples_set", v.samples_set},
       {"set_medians_us", v.set_medians_us},  // NaN (a set without samples) dumps as null
       {"samples_process", v.samples_process},
       {"process_medians_us", v.process_medians_us},
       {"rse_processes_pct", number_if(ok, v.rse_processes_pct)}};  // NaN: one process
}

void from_json(const nlohmann::json& j, figure& v) {
  v.kind = figure_kind_from(j.at("kind").get<std::string>());
  get(j, "method", v.method);
  get(j, "cold", v.cold);
  get(j, "valid", v.valid);
  get(j, "note", v.note);
  get(j, "noisy", v.noisy);
  get(j, "n", v.summary.n);
  get(j, "median_us", v.summary.median);
  get(j, "q1_us", v.summary.q1);
  get(j, "q3_us", v.summary.q3);
  get(j, "mean_us", v.summary.mean);
  get(j, "stddev_us", v.summary.stddev);
  get(j, "min_us", v.summary.min);
  get(j, "max_us", v.summary.max);
  get(j, "rse_pct", v.summary.rse_pct);
  get(j, "rse_samples_pct", v.rse_samples_pct);
  get(j, "rse_sets_pct", v.rse_sets_pct);
  get(j, "discarded_throttled", v.discarded_throttled);
  get(j, "discarded_cpu_wait", v.discarded_cpu_wait);
  get(j, "discarded_cpu_wait_max_us", v.discarded_cpu_wait_max_us);
  get(j, "cpu_wait_max_us", v.cpu_wait_max_us);
  get(j, "cpu_wait_share_pct", v.cpu_wait_share_pct);
  get(j, "cpu_wait_total_us", v.cpu_wait_total_us);
  get(j, "samples_us", v.samples_us);
  get(j, "samples_set", v.samples_set);
  v.set_medians_us.clear();
  if (auto it = j.find("set_medians_us"); it != j.end() && it->is_array())
    for (const auto& m : *it)
      v.set_medians_us.push_back(m.is_number() ? m.get<double>()
                                               : std::numeric_limits<double>::quiet_NaN());
  get(j, "samples_process", v.samples_process);
  get(j, "process_medians_us", v.process_medians_us);
  get(j, "rse_processes_pct", v.rse_processes_pct);
}

void to_json(nlohmann::json& j, const side_result& v) {
  j = nlohmann::json::object();
  NLOHMANN_JSON_PASTE(KJ_PUT, name, device, stream, host_wall, host_sync_detected, warmup_runs,
                      warmup_first_call_ms, spent_s, checks_s, cpu_wait_s, input_sets)
}
void from_json(const nlohmann::json& j, side_result& v) {
  NLOHMANN_JSON_PASTE(KJ_GET, name, device, stream, host_wall, host_sync_detected, warmup_runs,
                      warmup_first_call_ms, spent_s, checks_s, cpu_wait_s, input_sets)
}

void to_json(nlohmann::json& j, const comparison& v) {
  j = nlohmann::json::object();
  NLOHMANN_JSON_PASTE(KJ_PUT, reference, candidate, interleaved, l2_flush_bytes, stopped_by,
                      processes)
  auto& sp = j["speedups"] = nlohmann::json::array();
  for (const auto& s : v.speedups)
    sp.push_back({{"kind", to_string(s.kind)},
                  {"valid", s.valid},
                  {"ratio", number_if(s.valid, s.ci.ratio)},
                  {"ci_lo", number_if(s.valid, s.ci.lo)},
                  {"ci_hi", number_if(s.valid, s.ci.hi)},
                  {"confidence", s.ci.confidence},
                  {"resamples", s.ci.resamples},
                  {"resampled", s.ci.by_group ? "input_sets" : "samples"},
                  {"over_processes", s.ci.by_process}});
  const auto& c = v.clocks;
  j["clocks"] = {{"available", c.available},
                 {"source", c.source},
                 {"default_sm_mhz", c.default_sm_mhz},
                 {"max_sm_mhz", c.max_sm_mhz},
                 {"median_sm_mhz", c.median_sm_mhz},
                 {"min_sm_mhz", c.min_sm_mhz},
                 {"throttle_reasons", c.throttle_reasons}};
  j["cpu_wait"] = {
      {"checked", v.cpu_wait.checked}, {"scope", v.cpu_wait.scope}, {"note", v.cpu_wait.note}};
}

void from_json(const nlohmann::json& j, comparison& v) {
  NLOHMANN_JSON_PASTE(KJ_GET, reference, candidate, interleaved, l2_flush_bytes, stopped_by,
                      processes)
  v.speedups.clear();
  if (auto it = j.find("speedups"); it != j.end())
    for (const auto& s : *it) {
      speedup out;
      out.kind = figure_kind_from(s.at("kind").get<std::string>());
      get(s, "valid", out.valid);
      get(s, "ratio", out.ci.ratio);
      get(s, "ci_lo", out.ci.lo);
      get(s, "ci_hi", out.ci.hi);
      get(s, "confidence", out.ci.confidence);
      get(s, "resamples", out.ci.resamples);
      std::string resampled = "samples";
      get(s, "resampled", resampled);
      out.ci.by_group = resampled == "input_sets";
      get(s, "over_processes", out.ci.by_process);
      v.speedups.push_back(out);
    }
  if (auto it = j.find("clocks"); it != j.end() && it->is_object()) {
    auto& c = v.clocks;
    get(*it, "available", c.available);
    get(*it, "source", c.source);
    get(*it, "default_sm_mhz", c.default_sm_mhz);
    get(*it, "max_sm_mhz", c.max_sm_mhz);
    get(*it, "median_sm_mhz", c.median_sm_mhz);
    get(*it, "min_sm_mhz", c.min_sm_mhz);
    get(*it, "throttle_reasons", c.throttle_reasons);
  }
  if (auto it = j.find("cpu_wait"); it != j.end() && it->is_object()) {
    get(*it, "checked", v.cpu_wait.checked);
    get(*it, "scope", v.cpu_wait.scope);
    get(*it, "note", v.cpu_wait.note);
  }
}

}  // namespace kj::measure
