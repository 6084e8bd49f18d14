#include <kjudge/eval/profile_job.hpp>

#include <optional>

#include <kjudge/core/error.hpp>
#include <kjudge/core/file_io.hpp>
#include <kjudge/device/datasheet.hpp>
#include <kjudge/measure/timing.hpp>
#include <kjudge/profile/forward_json.hpp>
#include <kjudge/roofline/cache.hpp>
#include <kjudge/roofline/check.hpp>
#include <kjudge/runner/process.hpp>

namespace kj::eval {

namespace {

/** The CUPTI record of one side from the evaluation, if it has one. */
std::optional<profile::cupti_forward> cupti_side(const eval_result& r, const char* side) {
  if (!r.launches.is_object() || !r.launches.contains(side)) return std::nullopt;
  try {
    return profile::cupti_forward_from_json(r.launches.at(side));
  } catch (const kj::error&) {
    return std::nullopt;
  }
}

/** The side's device figure, when valid: its median and whether it is of CUDA graph replays. */
void set_device_time(const eval_result& r, bool reference, profile::side_inputs& in) {
  if (!r.timing) return;
  const auto& f = reference ? r.timing->reference.device : r.timing->candidate.device;
  if (!f.valid) return;
  in.device_time_ns = f.summary.median * 1000.0;
  in.device_time_from_graph = f.method == measure::graph_device_method;
}

struct roofs {
  profile::ceilings c;
  std::string source;
  std::vector<flag> flags;
};

/** The ceilings from `kjudge roofline` run as a child (the cached result, measured when there is
 *  none), so the orchestrator itself never loads CUDA or cuBLAS; checked here (pure). */
roofs ceilings_for(const profile_options& o) {
  roofs out;
  const auto fail = [&out](const std::string& why) {
    out.source = "none";
    out.flags.push_back({"no_ceilings", "warning",
                         "the GPU's ceilings could not be obtained (" + why +
                             "): throughput percentages and the roofline point are missing"});
    return out;
  };
  std::optional<temp_dir> temporary;
  try {
    temporary.emplace("kjudge-roofline-");
  } catch (const kj::error& e) {
    return fail(e.message());
  }
  const std::filesystem::path& dir = temporary->path();
  runner::spawn_options so;
  so.argv = {runner::self_executable().string(),
             "roofline",
             "--cache-dir",
             o.cache_root.string(),
             "--json",
             (dir / "roofline.json").string()};
  so.timeout = std::chrono::minutes(5);
  const auto p = runner::run_process(so);
  std::optional<roofline::roofline_result> result;
  std::string why;
  if (!p.ok()) {
    why = fmt::format("kjudge roofline {}: {}", p.describe(), runner::last_lines(p.output_tail, 2));
  } else {
    try {
      result = roofline::read_result(dir / "roofline.json");
    } catch (const kj::error& e) {
      why = e.message();
    }
  }
  if (!result) return fail(why);
  const auto checked = roofline::check_roofline(*result);
  out.c = checked.ceilings;
  out.source =
      fmt::format("kjudge roofline, {} measured {}", result->gpu.name, result->measured_at_utc);
  if (checked.datasheet != nullptr) out.source += "; datasheet " + checked.datasheet->name;
  // Said as the roofline's: the Nsight Compute run's flags of the same codes are the profile's
  // own (profile_evaluation).
  for (const auto& f : checked.flags)
    if (f.severity != profile::severity_info)
      out.flags.push_back({f.code, f.severity, "kjudge roofline: " + f.message});
  return out;
}

}  // namespace

bool profilable(const eval_result& r) noexcept {
  return r.status == eval_status::correct || r.status == eval_status::incorrect;
}

profile::profile_report profile_evaluation(const job& j, const eval_result& r,
                                           const profile_options& o) {
  const auto say = [&](std::string_view s) {
    if (o.progress) o.progress(s);
  };
  profile::side_inputs ref, cand;
  ref.cupti = cupti_side(r, "reference");
  cand.cupti = cupti_side(r, "candidate");
  set_device_time(r, true, ref);
  set_device_time(r, false, cand);

  profile::counter_source source;
  std::vector<flag> lock_flags;
  if (j.device != "cuda") {
    source.unavailable_reason = "counters need a GPU (this evaluation ran on the CPU)";
  } else if (!o.collect_counters) {
    source.unavailable_reason = "not requested (--no-counters)";
  } else if (!profilable(r)) {
    source.unavailable_reason = fmt::format(
        "not collected: the evaluation ended '{}' before the candidate could be profiled",
        to_string(r.status));
  } else {
    say("running the forwards under Nsight Compute");
    auto run = collect_counters(j, o.counters);
    source = run.source;
    // The ncu run waits for the GPU's lock as the evaluation did; not having had it is said.
    for (const auto& f : run.worker.flags)
      if (f.code == "gpu_lock_not_held" || f.code == "gpu_shared" ||
          f.code == "gpu_other_process" || f.code == "gpu_processes_unchecked")
        lock_flags.push_back({f.code, f.severity, "Nsight Compute run: " + f.message});
    ref.ncu_kernels = std::move(run.reference);
    cand.ncu_kernels = std::move(run.candidate);
  }
  roofs c;
  c.source = "none (no counters to compare with them)";
  if (source.collected) {  // the ceilings are the roofs of the counters' throughputs
    say("ceilings from kjudge roofline");
    c = ceilings_for(o);
  }
  auto report = profile::build_report(j.problem.string(), j.candidate.string(),
                                      r.prov.gpu ? r.prov.gpu->name : std::string("cpu"), c.c,
                                      c.source, source, ref, cand);
  for (auto& f : c.flags) report.flags.push_back(std::move(f));
  for (auto& f : lock_flags) report.flags.push_back(std::move(f));
  return report;
}

}  // namespace kj::eval
