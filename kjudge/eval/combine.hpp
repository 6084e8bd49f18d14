#pragma once
/** @file `kjudge eval --processes N`: one job evaluated in N worker processes, one after another,
 *  and their timing pooled. Within one process a short kernel's samples can share a mode that
 *  another process does not (on the H200 the QuantVLA kernel's medians of consecutive
 *  evaluations lay up to 3% apart while each one's interval over input sets was 0.3% wide:
 *  docs/benchmarks.md, twenty-ninth session); only more processes show that spread. */

#include <vector>

#include <kjudge/core/result.hpp>
#include <kjudge/measure/timing.hpp>

namespace kj::eval {

/** The evaluations of one job in `runs.size()` processes, in order, as one result. The runs end
 *  at the first that is not correct: that run's result is the verdict (its message names the
 *  run). Otherwise the first run's result (trials, build, launches, provenance) with the timing
 *  of all of them: each figure's samples pooled (summary, error over samples and over every
 *  process's sets), each process's median, and the standard error of those medians as a third
 *  part of the figure's error (`rse_processes_pct`), judged against `options`' target and
 *  min_samples (the figure is noisy otherwise); each speedup the pooled medians' ratio, its
 *  interval the pooled bootstrap over sets widened to cover the Student t interval of the
 *  processes' own ratios (log scale, N - 1 degrees of freedom). Flags: the first run's, the
 *  others' that differ (their message names the run), noisy_timing recomputed for the pooled
 *  figures. `runs` lists every run's status and wall time. A single run is returned as it is.
 *  Precondition: runs is not empty. */
[[nodiscard]] eval_result combine_runs(std::vector<eval_result> runs,
                                       const measure::timing_options& options);

}  // namespace kj::eval
