#include <kjudge/roofline/obtain.hpp>

#include <algorithm>

#include <fmt/format.h>

#include <kjudge/core/error.hpp>
#include <kjudge/cuda/probe.hpp>
#include <kjudge/roofline/cache.hpp>
#include <kjudge/roofline/check.hpp>
#include <kjudge/roofline/measure.hpp>
#include <kjudge/roofline/report.hpp>
#include <kjudge/runner/file_lock.hpp>
#include <kjudge/runner/gpu_neighbours.hpp>

namespace kj::roofline {

namespace {

/** The flag `gpu_other_process` among a result's flags, or nullptr. */
const flag* other_programs_flag(const roofline_result& r) {
  const auto it = std::find_if(r.flags.begin(), r.flags.end(),
                               [](const flag& f) { return f.code == "gpu_other_process"; });
  return it == r.flags.end() ? nullptr : &*it;
}

/** What other work on the GPU during the measurement does to the ceilings. */
constexpr std::string_view ceilings_effect =
    "the ceilings may read low, and throughput percentages against them high";

}  // namespace

obtained obtain_roofline(const obtain_options& options) {
  const auto say = [&](std::string_view s) {
    if (options.progress) options.progress(s);
  };
  const auto d = cuda::query_device(options.device);
  const auto path = cache_path(options.cache_root, d.uuid, d.driver_version);
  std::string why;
  if (!options.refresh) {
    auto cached = load_cached(path, d.uuid, d.driver_version, &why);
    // A cached run with fewer repetitions than asked for is not the result the user wants.
    const auto reps = cached ? std::max({cached->dram_read.repetitions_tbps.size(),
                                         cached->dram_copy.repetitions_tbps.size(),
                                         cached->l2_read.repetitions_tbps.size()})
                             : std::size_t{0};
    if (cached && reps >= static_cast<std::size_t>(options.repetitions)) {
      if (other_programs_flag(*cached) == nullptr)
        return {std::move(*cached), "cached in " + path.string()};
      // Measured next to other programs: kept (and flagged) while they are there, measured
      // again once a look finds the GPU free of them. NVML lists only processes with a context.
      runner::neighbour_look look;
      try {
        cuda::create_primary_context(options.device);
        look = runner::look_for_neighbours(d.uuid, d.pci_bus_id);
      } catch (const error& e) {  // e.g. the GPU in exclusive mode and held by one of them
        look.why_unchecked = "no CUDA context could be made (" + e.message() + ")";
      }
      if (!look.checked || !look.others.empty())
        return {std::move(*cached),
                "cached in " + path.string() +
                    " (measured next to other programs on the GPU, which " +
                    (look.checked ? "are still there"
                                  : "cannot be looked for now: " + look.why_unchecked) +
                    ")"};
      why = "the cached result was measured next to other programs on the GPU, now gone";
    } else if (cached) {
      why = fmt::format("the cached result has {} repetitions, {} were asked for", reps,
                        options.repetitions);
    }
    say(why + "; measuring");
  }
  // Its ceilings are timed: the GPU to itself, as an evaluation has it (the same lock). At most
  // 2 minutes of waiting, under the 5-minute limit `kjudge profile` gives this command.
  const auto lock_path = runner::gpu_lock_path(d.uuid);
  auto gpu_turn = runner::file_lock::acquire(lock_path, std::chrono::milliseconds(0));
  if (gpu_turn.timed_out()) {
    say("waiting for the GPU, which " +
        (gpu_turn.holder().empty() ? std::string("another kjudge process") : gpu_turn.holder()) +
        " is using");
    gpu_turn = runner::file_lock::acquire(lock_path, std::chrono::minutes(2));
  }
  // Still held by another: measured anyway, marked as work outside the lock (its holder flags
  // it), flagged, and not cached. A lock file that cannot be used keeps nothing from being
  // measured.
  const bool crowded = gpu_turn.timed_out();
  runner::file_lock outside;
  if (crowded) {
    outside = runner::file_lock::mark(runner::outside_mark_path(lock_path));
    say("measuring without the GPU to itself (not cached): " + gpu_turn.error());
  } else if (!gpu_turn.held()) {
    say("measuring without the GPU's lock: " + gpu_turn.error());
  }
  measure_options o;
  o.device = options.device;
  o.repetitions = options.repetitions;
  o.progress = options.progress;
  // Programs other than kjudge do not take turns: looked for at the start and the end, as an
  // evaluation's timing does (the context first: NVML lists only processes that have one). So
  // are kjudge evaluations that gave up waiting for the lock and work beside its holder (their
  // marks, as the worker's check_gpu_shared looks: held now, or taken in between).
  cuda::create_primary_context(options.device);
  runner::neighbour_watch neighbours;
  neighbours.add(runner::look_for_neighbours(d.uuid, d.pci_bus_id), "start");
  runner::outside_marks marks(lock_path);
  bool marked = gpu_turn.held() && marks.look();
  obtained out{measure_roofline(o), "measured now, cached in " + path.string()};
  neighbours.add(runner::look_for_neighbours(d.uuid, d.pci_bus_id), "end");
  if (gpu_turn.held()) marked = marks.look() || marked;
  const auto neighbour_flags = neighbours.flags(
      "ceilings' measurement", fmt::format("if they ran work meanwhile, {}", ceilings_effect));
  out.result.flags.insert(out.result.flags.end(), neighbour_flags.begin(), neighbour_flags.end());
  const bool others = other_programs_flag(out.result) != nullptr;
  if (marked) {
    out.result.flags.push_back(
        {"gpu_shared", "warning",
         fmt::format("another kjudge evaluation worked on this GPU during the ceilings' "
                     "measurement without the GPU's lock (it gave up waiting for it): {}",
                     ceilings_effect)});
    out.origin = "measured now, next to another kjudge evaluation on the GPU (not cached)";
    say("not cached: another kjudge evaluation worked on the GPU meanwhile (flag gpu_shared)");
    return out;
  }
  if (crowded) {
    out.result.flags.push_back(
        {"gpu_lock_not_held", "warning",
         fmt::format("measured while another kjudge process used the GPU ({}): {}",
                     gpu_turn.error(), ceilings_effect)});
    out.origin = "measured now, next to another kjudge evaluation on the GPU (not cached)";
    return out;
  }
  if (others) {
    say("other programs had a context on the GPU (flag gpu_other_process): cached until a run "
        "finds the GPU free of them");
    out.origin = "measured now, next to other programs on the GPU; cached in " + path.string() +
                 " until a run finds the GPU free of them";
  }
  try {
    write_file_atomic(path, to_document(out.result, check_roofline(out.result)).dump(2) + "\n");
  } catch (const error& e) {
    say("not cached: " + e.message());
    out.origin = "measured now (not cached)";
  }
  return out;
}

}  // namespace kj::roofline
