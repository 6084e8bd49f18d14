#pragma once
/** @file How long a process's threads waited for a CPU (Linux: the run-queue delay the scheduler
 *  keeps per thread, /proc/self/task/<tid>/schedstat's second field). A host-timed sample during
 *  which the threads doing its work sat runnable but without a CPU (another program, or another
 *  evaluation, busy on every core) measures the machine's load, not the code: on a 2-core machine
 *  with one busy loop beside it, a 16 x 64 torch.softmax read 7.9 ms where it takes 5 us, its
 *  intra-op thread woken only at the busy loop's next scheduler tick. The timing engine reads
 *  the wait around each host-timed sample and discards the reference's samples that waited
 *  (waited_for_cpu(); never the candidate's, whose code could make its own threads wait). */

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace kj::measure::detail {

/** A sample is taken to have waited for a CPU when its threads' run-queue delay during it
 *  reaches both the floor (a thread woken on an idle core waits microseconds: a wait below the
 *  floor is the cost of the wake-up, which a call pays anyway) and half of the sample's own
 *  time: it measured the wait more than the code. Shorter waits stay in the figure, and their
 *  share of its samples' time is said (cpu_wait_share_pct, flag cpu_wait_samples): on a machine
 *  loaded by turns (tests side by side on 2 cores) most samples of a 5 ms matmul waited 5-40% of
 *  their time, and dropping every one left no figure at all. */
inline constexpr double cpu_wait_floor_us = 50.0;
inline constexpr double cpu_wait_fraction = 0.5;

/** On the CPU, the rounds whose sample waited for a CPU (and was discarded) are left out of a
 *  side's budget up to this many budgets: a machine busy by turns still gives clean samples. */
inline constexpr double cpu_wait_budget_factor = 4.0;

/** What a window of cpu_wait_monitor read. */
struct cpu_wait_window {
  double wait_us = 0;   ///< the longest run-queue delay of one thread during it
  double own_cpus = 0;  ///< this process's CPU time during it over its wall time (CPUs kept busy)
};

/** Whether a wait of `wait_us` is long for a sample of `sample_us`. */
[[nodiscard]] constexpr bool long_wait(double sample_us, double wait_us) noexcept {
  return wait_us >= cpu_wait_floor_us && wait_us >= cpu_wait_fraction * sample_us;
}

/** The share of its CPUs' time a process must have used itself during a window for its
 *  threads' waits to be its own doing. */
inline constexpr double cpu_wait_own_share = 0.95;

/** Whether a sample of `sample_us` whose window read `w` is discarded, on a process allowed
 *  `cpus` CPUs: a long wait, while this process's own threads did not keep its CPUs busy (95%
 *  of their time): someone else had them. Waits its own threads made, more of them runnable than
 *  it has CPUs (a candidate that sets more torch threads than cores), are its cost and stay in
 *  its figure: discarded, they would leave its luckier samples alone. */
[[nodiscard]] constexpr bool waited_for_cpu(double sample_us, const cpu_wait_window& w,
                                            int cpus) noexcept {
  return long_wait(sample_us, w.wait_us) && w.own_cpus < cpu_wait_own_share * cpus;
}

class cpu_wait_monitor {
 public:
  /** Whose waits count: every thread of this process (a CPU forward's work runs on torch's
   *  intra-op threads as well as the caller's), or only the thread that constructed the monitor
   *  (on a GPU, the thread that issues the work and waits for it; one read instead of one a
   *  thread, around samples of tens of microseconds). */
  enum class scope { process, this_thread };

  /** Opens what it reads; never throws: where the waits cannot be read (not Linux, a kernel
   *  without schedstat, no /proc), available() is false and unavailable_reason() says why. */
  explicit cpu_wait_monitor(scope s);
  ~cpu_wait_monitor();
  cpu_wait_monitor(const cpu_wait_monitor&) = delete;
  cpu_wait_monitor& operator=(const cpu_wait_monitor&) = delete;

  [[nodiscard]] bool available() const noexcept { return m_reason.empty(); }
  [[nodiscard]] const std::string& unavailable_reason() const noexcept { return m_reason; }
  [[nodiscard]] scope whose() const noexcept { return m_scope; }
  /** The CPUs this process may run on (the constructing thread's affinity), at least 1. */
  [[nodiscard]] int cpus() const noexcept { return m_cpus; }

  /** Begins a window: reads every thread's wait so far, the process's CPU time and the clock. */
  void start();
  /** The window since start(): the longest wait of any one thread in microseconds (a thread
   *  that started since counted from 0, one that ended left out) and the CPUs the process kept
   *  busy. nullopt when unavailable, or when no window was started. */
  [[nodiscard]] std::optional<cpu_wait_window> end();

 private:
  /** Every thread's run-queue delay so far (ns), by thread id (this thread's alone for
   *  scope::this_thread): of the threads /proc/self/task lists now where `relist`, else of those
   *  the last listing found; false when a read failed. */
  bool read(std::map<pid_t, std::uint64_t>& out, bool relist);
  /** The open schedstat file of thread `tid`, opened on first use (-1: cannot). */
  int fd_of(pid_t tid);

  scope m_scope;
  std::string m_reason;        ///< empty: available
  void* m_dir = nullptr;       ///< DIR* of /proc/self/task (scope::process)
  int m_self_fd = -1;          ///< /proc/thread-self/schedstat (scope::this_thread)
  std::map<pid_t, int> m_fds;  ///< schedstat file of each thread seen (scope::process)
  std::map<pid_t, std::uint64_t> m_before, m_now;
  bool m_started = false;
  int m_cpus = 1;
  double m_cpu_s_before = 0;   ///< the process's CPU time at start()
  double m_wall_s_before = 0;  ///< the monotonic clock at start()
};

}  // namespace kj::measure::detail
