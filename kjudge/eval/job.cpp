#include <kjudge/eval/job.hpp>

#include <fmt/format.h>

#include <kjudge/core/error.hpp>
#include <kjudge/core/jitter.hpp>

namespace kj::eval {

const char* to_string(candidate_kind k) noexcept {
  return k == candidate_kind::native ? "native" : "python";
}

candidate_kind candidate_kind_for(const std::filesystem::path& path) {
  const auto ext = path.extension().string();
  if (ext == ".cu") return candidate_kind::native;
  if (ext == ".py") return candidate_kind::python;
  KJ_THROW(error_kind::usage,
           "candidate {}: expected a Python file (.py, defining ModelNew) or a CUDA file (.cu, "
           "implementing include/kjudge/candidate.h)",
           path.string());
}

measure::timing_options timing_preset(const std::string& name) {
  measure::timing_options o;
  if (name == "agent") {
    o.budget_per_side = seconds(1.0);
    o.min_samples = 20;
    o.target_rse_pct = 0.5;
    o.min_time = seconds(0.0);
  } else if (name == "precise") {
    o.budget_per_side = seconds(10.0);
    o.min_samples = 100;
    o.target_rse_pct = 0.1;
    o.min_time = seconds(1.0);
    o.warmup_min_time = seconds(0.2);
    // The median's error over sets falls as 1 / sqrt(sets): on the H200 the QuantVLA
    // reference's device medians by set spread 2-3%, 0.3% of error over 8 sets.
    o.max_input_sets = 32;
  } else {
    KJ_THROW(error_kind::usage, "unknown timing preset '{}' (agent, precise)", name);
  }
  return o;
}

namespace {

nlohmann::json timing_to_json(const measure::timing_options& o) {
  return {{"budget_per_side_s", o.budget_per_side.count()},
          {"min_samples", o.min_samples},
          {"max_samples", o.max_samples},
          {"target_rse_pct", o.target_rse_pct},
          {"min_time_s", o.min_time.count()},
          {"cold", o.cold},
          {"warmup_runs", o.warmup_runs},
          {"warmup_min_time_s", o.warmup_min_time.count()},
          {"gpu", o.gpu},
          {"throttle_fraction", o.throttle_fraction},
          {"max_input_sets", o.max_input_sets},
          {"bootstrap_resamples", o.bootstrap_resamples},
          {"confidence", o.confidence},
          {"blocking_timeout_ms", o.blocking_timeout.count()},
          {"graph_replay", o.graph_replay}};
}

measure::timing_options timing_from_json(const nlohmann::json& j) {
  measure::timing_options o;
  o.budget_per_side = seconds(j.at("budget_per_side_s").get<double>());
  o.min_samples = j.at("min_samples").get<std::size_t>();
  o.max_samples = j.at("max_samples").get<std::size_t>();
  o.target_rse_pct = j.at("target_rse_pct").get<double>();
  o.min_time = seconds(j.at("min_time_s").get<double>());
  o.cold = j.at("cold").get<bool>();
  o.warmup_runs = j.at("warmup_runs").get<std::size_t>();
  o.warmup_min_time = seconds(j.at("warmup_min_time_s").get<double>());
  o.gpu = j.at("gpu").get<bool>();
  o.throttle_fraction = j.at("throttle_fraction").get<double>();
  o.max_input_sets = j.value("max_input_sets", o.max_input_sets);
  o.bootstrap_resamples = j.at("bootstrap_resamples").get<std::size_t>();
  o.confidence = j.at("confidence").get<double>();
  o.blocking_timeout = milliseconds(j.at("blocking_timeout_ms").get<double>());
  o.graph_replay = j.value("graph_replay", true);  // kjudge eval's default (no --no-graph)
  return o;
}

}  // namespace

nlohmann::json to_json(const job& j) {
  nlohmann::json out = {{"schema", job_schema},
                        {"problem", j.problem.string()},
                        {"candidate", j.candidate.string()},
                        {"kind", to_string(j.kind)},
                        {"device", j.device},
                        {"python", j.python.string()},
                        {"cache_dir", j.cache_dir.string()},
                        {"include_dir", j.include_dir.string()},
                        {"trials", j.trials},
                        {"base_seed", j.base_seed},
                        {"held_out_seed", j.held_out_seed},
                        {"timing_key", j.timing_key},
                        {"stress", j.stress},
                        {"stress_scale", j.stress_scale},
                        {"timing", j.timing},
                        {"timing_preset", j.timing_preset_name},
                        {"timing_options", timing_to_json(j.timing_options)},
                        {"nvcc_flags", j.nvcc_flags},
                        {"gpu_lock_wait_s", j.gpu_lock_wait_s},
                        {"timeout_s", j.timeout_s},
                        {"profile_ranges", j.profile_ranges},
                        {"reference_alone_until", j.reference_alone_until},
                        {"problem_sha256", j.problem_sha256},
                        {"orchestrator_pid", j.orchestrator_pid}};
  out["atol"] = j.atol ? nlohmann::json(*j.atol) : nlohmann::json();
  out["rtol"] = j.rtol ? nlohmann::json(*j.rtol) : nlohmann::json();
  return out;
}

job job_from_json(const nlohmann::json& in) {
  try {
    if (in.value("schema", "") != job_schema)
      KJ_THROW(error_kind::protocol, "job schema '{}' is not '{}'", in.value("schema", ""),
               job_schema);
    job j;
    j.problem = in.at("problem").get<std::string>();
    j.candidate = in.at("candidate").get<std::string>();
    j.kind = in.at("kind").get<std::string>() == "native" ? candidate_kind::native
                                                          : candidate_kind::python;
    j.device = in.at("device").get<std::string>();
    j.python = in.at("python").get<std::string>();
    j.cache_dir = in.at("cache_dir").get<std::string>();
    j.include_dir = in.at("include_dir").get<std::string>();
    j.trials = in.at("trials").get<int>();
    j.base_seed = in.at("base_seed").get<std::uint64_t>();
    j.held_out_seed = in.at("held_out_seed").get<std::uint64_t>();
    j.timing_key = in.at("timing_key").get<std::uint64_t>();
    j.stress = in.at("stress").get<bool>();
    j.stress_scale = in.at("stress_scale").get<std::int64_t>();
    j.timing = in.at("timing").get<bool>();
    j.timing_preset_name = in.at("timing_preset").get<std::string>();
    j.timing_options = timing_from_json(in.at("timing_options"));
    j.nvcc_flags = in.at("nvcc_flags").get<std::vector<std::string>>();
    j.profile_ranges = in.value("profile_ranges", false);
    j.reference_alone_until = in.value("reference_alone_until", std::string());
    j.problem_sha256 = in.value("problem_sha256", std::string());
    j.orchestrator_pid = in.value("orchestrator_pid", 0);
    j.gpu_lock_wait_s = in.value("gpu_lock_wait_s", j.gpu_lock_wait_s);
    j.timeout_s = in.value("timeout_s", j.timeout_s);
    if (!in.at("atol").is_null()) j.atol = in.at("atol").get<double>();
    if (!in.at("rtol").is_null()) j.rtol = in.at("rtol").get<double>();
    return j;
  } catch (const nlohmann::json::exception& e) {
    KJ_THROW(error_kind::protocol, "malformed job: {}", e.what());
  }
}

std::string trial_reference_phase(std::string_view kind, int index) {
  return fmt::format("trial {} {} reference", kind, index);
}

std::uint64_t trial_seed(std::uint64_t base_seed, int i) noexcept {
  return mix64(base_seed * 0x100000001b3ULL + static_cast<std::uint64_t>(i) + 1) & 0xffffffffULL;
}

std::uint64_t held_out_seed(std::uint64_t secret, std::uint64_t base_seed) noexcept {
  return mix64(secret ^ mix64(base_seed)) & 0xffffffffULL;
}

}  // namespace kj::eval
