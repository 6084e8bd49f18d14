#pragma once
/** @file `kjudge profile` / `kjudge eval --profile` after the evaluation: counters from a second
 *  worker run under Nsight Compute (ncu_run.hpp), the GPU's ceilings (roofline cache, measured
 *  when missing), the CUPTI records and device medians of the evaluation, all assembled into a
 *  profile::profile_report whose every number passed its invariant. */

#include <filesystem>
#include <functional>
#include <string_view>

#include <kjudge/core/result.hpp>
#include <kjudge/eval/job.hpp>
#include <kjudge/eval/ncu_run.hpp>
#include <kjudge/profile/report.hpp>

namespace kj::eval {

struct profile_options {
  counter_options counters;
  bool collect_counters = true;      ///< false: CUPTI and timing only (no ncu run)
  std::filesystem::path cache_root;  ///< roofline cache
  /** Progress messages for people ("measuring the roofline", "running ncu"); may be empty. */
  std::function<void(std::string_view)> progress;
};

/** Whether an evaluation got far enough to profile: the candidate built and ran its trials. */
[[nodiscard]] bool profilable(const eval_result& r) noexcept;

/** Profiles the evaluation `r` of `j`. Never throws for tool problems (no ncu, no counters, no
 *  ceilings): they become the report's counter_source reason and flags. */
[[nodiscard]] profile::profile_report profile_evaluation(const job& j, const eval_result& r,
                                                         const profile_options& options);

}  // namespace kj::eval
