#pragma once
/** @file `kjudge eval --processes N`: one job evaluated in N worker processes, one after another,
 *  and their timing pooled. Within one process a short kernel's samples can share a mode that
 *  another process does not (on the H200 the QuantVLA kernel's medians of consecutive
 *  evaluations lay up to 3% apart while each one's interval over input sets was 0.3% wide:
 *  docs/benchmarks.md, twenty-ninth session); only more processes show that spread. */

#include <cstddef>
#include <vector>

#include <kjudge/core/result.hpp>
#include <kjudge/measure/timing.hpp>

namespace kj::eval {

/** The evaluations of one job in up to `requested` processes, in order, as one result: `runs`
 *  ends at the first that is not correct, whose result is then the verdict (its message names the
 *  process: "process k of n: "). Otherwise the first run's result (trials, build, launches,
 *  provenance) with the timing of all of them: each figure's samples pooled (summary, error over
 *  samples and over every process's sets), each process's median, and the processes' part of
 *  the error (`rse_processes_pct`: the standard deviation of their medians times the square root
 *  of the sum of their squared shares of the samples, as the pooled median weighs them), judged
 *  against `options`' target and min_samples (the figure is noisy otherwise); each speedup the
 *  pooled medians' ratio, its interval the pooled bootstrap over sets widened to cover the
 *  Student t interval around it from the spread of the processes' own ratios (log scale, N - 1
 *  degrees of freedom, weighted by their shares as above). A
 *  figure some process took by another method or cache state is not pooled (method_mismatch).
 *  Flags: each distinct one once, naming the processes that raised it where not all did; the
 *  timing checks (check_timing, but the memory floor) run again on the pooled figures, whose
 *  noisy_timing, throttled_samples and very_fast flags replace the processes'. `runs` lists every
 * run's status and wall time. With `requested` 1 the run is returned as it is. Precondition: runs
 * is not empty. */
/** A later process's run against the first: where the problem's or the candidate's file changed
 *  in between (each run hashes both as it starts, and its worker loads the problem from bytes
 *  of that hash), the processes judged different code, and `later` becomes the verdict that says
 *  so: a `runtime_error`, the candidate's, for either file, as only the candidate's code ran in
 *  between (a `problem_error` would let a candidate that passed process 1 turn any later
 *  verdict into the problem's by rewriting it); the message says a file edited by hand during
 *  the run reads the same. Returns whether it did. */
bool stop_if_files_changed(const eval_result& first, eval_result& later);

[[nodiscard]] eval_result combine_runs(std::vector<eval_result> runs, std::size_t requested,
                                       const measure::timing_options& options);

}  // namespace kj::eval
