#pragma once
/** @file The orchestrator: runs one evaluation in a fresh worker process and turns whatever
 *  happens to it (a result, a crash, a hang) into an eval_result. It never loads CUDA or Python. */

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <kjudge/core/result.hpp>
#include <kjudge/eval/job.hpp>
#include <kjudge/eval/worker_pool.hpp>

namespace kj::eval {

struct run_options {
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};  ///< whole evaluation, wall clock
  bool echo_output = false;  ///< stream the worker's stdout/stderr to ours as it runs
  std::filesystem::path worker_executable;  ///< empty: this executable (`kjudge worker`)
  /** A command the worker runs under (a profiler: {"ncu", "--csv", ...}); empty: none. The worker
   *  must keep the wrapper's stdin and the event channel (ncu passes both through). */
  std::vector<std::string> wrapper;
  /** Fork the worker from the worker pool (torch already imported) when one runs for this
   *  executable, interpreter and environment; otherwise run it as usual and start the pool in
   *  the background for the next evaluation. Ignored with a wrapper or another executable. */
  bool use_pool = false;
  /** How long a pool started here waits for requests before it exits. */
  std::chrono::seconds pool_idle_exit{600};
  /** No pool is started while this many pools of this user run (KJUDGE_POOL_MAX). */
  int max_pools = k_default_max_pools;
  /** An evaluation waits for a pool of this user that is still starting (importing torch)
   *  as long as that pool is younger than this; then it runs a worker of its own instead. */
  std::chrono::milliseconds pool_start_wait{std::chrono::seconds(30)};
};

/** Never throws for anything the candidate or problem does; throws kj::error only when the worker
 *  cannot be started at all. */
[[nodiscard]] eval_result evaluate(const job& j, const run_options& options);

/** A fresh 64-bit secret from the OS (std::random_device), never stored. */
[[nodiscard]] std::uint64_t fresh_secret();

/** Whether an NVIDIA driver is present, without loading CUDA (/proc/driver/nvidia). */
[[nodiscard]] bool nvidia_driver_present();

}  // namespace kj::eval
