#pragma once
/** @file Internals shared by run_process (fork/exec) and run_process_in_pool (a child forked by
 *  the worker pool): descriptors, pipes, and the loop that feeds a child's stdin, collects its
 *  output and channel, enforces the wall-clock limit and reaps it. Not part of the API. */

#include <sys/resource.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <kjudge/runner/process.hpp>

namespace kj::runner::detail {

[[nodiscard]] std::string errno_text(int err);

/** Owns one file descriptor; closes it on destruction. */
class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) noexcept : m_fd(fd) {}
  unique_fd(unique_fd&& other) noexcept : m_fd(std::exchange(other.m_fd, -1)) {}
  unique_fd& operator=(unique_fd&& other) noexcept {
    if (this != &other) {
      reset();
      m_fd = std::exchange(other.m_fd, -1);
    }
    return *this;
  }
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  ~unique_fd() { reset(); }
  [[nodiscard]] int get() const noexcept { return m_fd; }
  [[nodiscard]] bool open() const noexcept { return m_fd >= 0; }
  void reset() noexcept;
  /** Gives up ownership without closing. */
  int release() noexcept { return std::exchange(m_fd, -1); }

 private:
  int m_fd = -1;
};

struct pipe_ends {
  unique_fd read;
  unique_fd write;
};

/** Both ends close-on-exec: a child gets only the ends it dup2()s onto 0, 1, 2 and channel_fd. */
[[nodiscard]] pipe_ends make_pipe();

void set_nonblocking(int fd);

/** In a freshly forked child: a session and process group of its own (setsid: a session leader
 *  cannot move to another group, so the child cannot leave the one it is killed by), no blocked
 *  signals, SIGPIPE, SIGXFSZ and SIGCHLD at their defaults. Async-signal-safe. */
void reset_child_process() noexcept;

/** Sends `sig` to the group `leader` leads and to `leader` itself (which may not lead it yet: a
 *  child forked but not yet past reset_child_process). Async-signal-safe. */
void signal_group(pid_t leader, int sig) noexcept;

/** In a freshly forked child of `parent`: SIGKILL when the thread that forked it ends (with its
 *  process, killed or not). False when `parent` is already gone (it died before prctl, so no
 *  signal will come): the child must then exit. Async-signal-safe. */
[[nodiscard]] bool die_with_parent(pid_t parent) noexcept;

/** In a child that leads its own session and group (after reset_child_process): forks it, and
 *  makes this process the child's guard, as run() makes one for orphan cleanup: a subreaper that
 *  only waits and ends the way the child ends (its exit code or signal), ignores SIGINT, SIGTERM
 *  and SIGHUP (the child's to take), and kills the child and all it adopted where `parent` (the
 *  process that forked this one) dies. Returns the guard's pid in the child; never returns in
 *  the guard. A guard whose parent is already gone, or that cannot fork, exits 127.
 *  Async-signal-safe; the guard closes every descriptor it has. */
[[nodiscard]] pid_t fork_under_guard(pid_t parent) noexcept;

/** Marks a running child (the group it leads) for the interrupt handler (exit_on_interrupt) and
 *  for orphan cleanup (set_orphan_cleanup: a registered pid is never taken for a leftover), from
 *  construction until release(); release() once the child has been reaped, when its pid may be
 *  reused. */
class child_registration {
 public:
  child_registration() = default;
  explicit child_registration(pid_t pid) noexcept;
  child_registration(child_registration&& other) noexcept
      : m_slot(std::exchange(other.m_slot, -1)) {}
  child_registration& operator=(child_registration&& other) noexcept {
    if (this != &other) {
      release();
      m_slot = std::exchange(other.m_slot, -1);
    }
    return *this;
  }
  child_registration(const child_registration&) = delete;
  child_registration& operator=(const child_registration&) = delete;
  ~child_registration() { release(); }
  void release() noexcept;

 private:
  int m_slot = -1;
};

/** While one lives, an interrupt (exit_on_interrupt) with no registered child running does not
 *  exit from the handler: the handler records it, and the caller exits once its work is done
 *  (interrupt_signal()). For the cleanup after a child was reaped (killing what it left behind),
 *  which an exit halfway through would leave running. Async-signal-safe; nests. */
class interrupt_deferral {
 public:
  interrupt_deferral() noexcept;
  ~interrupt_deferral();
  interrupt_deferral(const interrupt_deferral&) = delete;
  interrupt_deferral& operator=(const interrupt_deferral&) = delete;
};

/** Whether `pid` is a child some run_process or run_process_in_pool of this process runs. */
[[nodiscard]] bool registered_child(pid_t pid) noexcept;

/** The signal that interrupted this process (exit_on_interrupt), or 0. */
[[nodiscard]] int interrupt_signal() noexcept;

/** Readable once an interrupt came (exit_on_interrupt); -1 where none is installed. */
[[nodiscard]] int interrupt_fd() noexcept;

/** Writes "<program>: interrupted by <signal>; ..." and exits with 128 + the signal. */
[[noreturn]] void exit_interrupted(int sig) noexcept;

/** The children of `pid` (every thread's), from /proc/PID/task/TID/children, or where the kernel
 *  has no such file from the parent pid of every process in /proc. */
[[nodiscard]] std::vector<pid_t> children_of(pid_t pid);

/** SIGKILL to `pid` while it is still a child of `parent`; true when sent. Through a pidfd
 *  where the kernel has them (the parent is checked once the pidfd is open, so a pid that ended
 *  and was reused after the caller looked is never signalled), else by pid after the same check
 *  (a window of a few system calls). A child of this process is signalled by pid: its pid is not
 *  reused before this process reaps it. */
bool kill_if_child_of(pid_t pid, pid_t parent);

/** Kills (SIGKILL) every child of this process for which `keep` is false, with all its
 *  descendants, and reaps those children, round after round (the descendants of a killed child
 *  are reparented here when this process is a child subreaper) until none is left or `patience`
 *  has passed. Returns how many of the killed processes were running (not zombies) outside
 *  process group `group`: the leftovers that killing the group missed. */
std::size_t kill_adopted(pid_t group, const std::function<bool(pid_t)>& keep,
                         std::chrono::milliseconds patience = std::chrono::seconds(2));

/** In a freshly forked child: `stdin_fd` on 0, `output_fd` on 1 and 2, `channel_src` (when >= 0)
 *  on `channel_target`, every other descriptor from 3 up close-on-exec. The sources are copied
 *  above every target before any dup2 and stay open. Returns 0, or the errno of the call that
 *  failed. Async-signal-safe. */
int install_child_fds(int stdin_fd, int output_fd, int channel_src, int channel_target) noexcept;

/** A pidfd for `pid` (readable once it exits), close-on-exec; not open where unsupported. */
[[nodiscard]] unique_fd open_pidfd(pid_t pid);

/** The parent's environment (or `base`, when given) with `overrides` replacing (or adding)
 *  entries, as NAME=value. */
[[nodiscard]] std::vector<std::string> build_environment(
    const std::vector<std::pair<std::string, std::string>>& overrides,
    const std::optional<std::vector<std::string>>& base = std::nullopt);

/** A running child as the supervising loop sees it: a process group to signal, a way to learn
 *  that it ended, and its exit status. */
class child_handle {
 public:
  virtual ~child_handle() = default;
  /** The process group the child leads (its pid): timeouts signal the whole group. */
  [[nodiscard]] virtual pid_t group() const noexcept = 0;
  /** Whether the child has ended; never blocks. */
  [[nodiscard]] virtual bool ended() = 0;
  /** A descriptor that becomes readable when the child may have ended; -1: poll on a tick. */
  [[nodiscard]] virtual int wait_fd() const noexcept = 0;
  /** After ended(): ends what is left of the group (and the leftovers outside it, where they are
   *  collected: `leftovers` counts them), collects the wait status and usage. Returns an empty
   *  string, or why no status could be had (the result then says so). */
  virtual std::string reap(int& status, rusage& usage, std::size_t& leftovers) = 0;
  /** Whether the loop may stop waiting for ended() a while after SIGKILL (a child someone else
   *  reaps, whose report may never come). SIGKILL follows the timeout, so the result is then
   *  `timed_out`, its error saying that no exit status came. */
  [[nodiscard]] virtual bool may_go_unreported() const noexcept { return false; }
  /** Whether the child is seen to have ended although ended() has not said so and will not
   *  (a pool's child left unreaped, a zombie of the pool, by a pool that is stopped or frozen,
   *  or has not reaped it for longer than a running pool would): the loop then stops waiting
   *  for the report, and the result is `lost`, not the candidate's timeout. */
  [[nodiscard]] virtual bool ended_unreported() { return false; }
};

/** Feeds stdin (then closes it), reads the output (tail) and the channel (whole) until the child
 *  ended and its pipes closed (or a grace period passed), and enforces options.timeout from
 *  `start` with SIGTERM, then SIGKILL, to the group. After an interrupt (exit_on_interrupt) it
 *  reaps the child (waiting at most 2 s for it) and exits the process. */
[[nodiscard]] process_result supervise(child_handle& child, unique_fd stdin_fd, unique_fd output_fd,
                                       unique_fd channel_fd, const spawn_options& options,
                                       std::chrono::steady_clock::time_point start,
                                       const std::string& program);

}  // namespace kj::runner::detail
