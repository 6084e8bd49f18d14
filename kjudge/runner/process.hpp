#pragma once
/** @file Child processes with a wall-clock limit. The orchestrator runs every evaluation in a
 *  fresh child (`kjudge worker`), and the worker runs nvcc the same way; a crash, hang, exit() or
 *  runaway output in the child ends only the child and comes back as a value, never an exception
 *  (only a failure to create pipes or to fork throws). A child dies with the thread that started
 *  it (PR_SET_PDEATHSIG, SIGKILL): a parent killed outright leaves no child running on. POSIX
 *  (Linux) only. */

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kj::runner {

struct spawn_options {
  /** argv[0] is the program; searched on PATH when it has no slash. */
  std::vector<std::string> argv;
  /** Written to the child's stdin, which is then closed. */
  std::string stdin_data;
  /** Wall-clock limit; the child's whole process group gets SIGTERM, then SIGKILL 0.25 s later. */
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  /** The last this many bytes of the child's combined stdout and stderr are kept. */
  std::size_t output_tail_bytes = 64 * 1024;
  /** When >= 3, the child gets a pipe on this fd whose data is returned whole in
   *  process_result::channel (the worker's result protocol). -1: none. */
  int channel_fd = -1;
  /** At most this many channel bytes are kept; the rest is read and dropped (a child that floods
   *  the channel must not exhaust the parent's memory), and channel_overflow says so. */
  std::size_t channel_limit_bytes = std::size_t{256} << 20;
  /** Extra environment variables (NAME, value) on top of the parent's environment. */
  std::vector<std::pair<std::string, std::string>> env;
  /** "NAME=value" entries that stand for the parent's environment when set: a snapshot taken
   *  by one thread for a child another starts, which must not read `environ` while the first
   *  may change it (setenv). */
  std::optional<std::vector<std::string>> base_environment;
  /** Working directory; empty keeps the parent's. */
  std::filesystem::path cwd;
  /** When true, the child's output is also copied to the parent's stderr as it arrives. */
  bool echo_output = false;
};

enum class exit_kind {
  exited,    ///< normal exit; see exit_code
  signaled,  ///< killed by a signal it did not handle (SIGSEGV, SIGABRT, SIGKILL by the OOM killer)
  timed_out,     ///< killed by us at the wall-clock limit
  spawn_failed,  ///< exec failed (program missing, not executable); see error
  lost,  ///< started by the worker pool, which went away before reporting how it ended; see error
};

struct process_result {
  exit_kind how = exit_kind::spawn_failed;
  int exit_code = -1;             ///< when how == exited
  int signal = 0;                 ///< when how == signaled
  std::string channel;            ///< what the child wrote to channel_fd, up to channel_limit_bytes
  bool channel_overflow = false;  ///< the child wrote more than channel_limit_bytes
  std::string output_tail;  ///< last output_tail_bytes of stdout+stderr, interleaved as written
  std::size_t output_bytes = 0;  ///< total bytes of stdout+stderr seen
  std::chrono::duration<double> wall{0};
  std::size_t max_rss_kb = 0;  ///< peak resident set of the child, from wait4's rusage
  std::string error;           ///< spawn_failed, lost: why; timed_out: what failed after it
  /** Processes the child's descendants left running outside its process group (a daemon that
   *  called setsid()), killed once the child ended: counted where they are collected, by this
   *  process with set_orphan_cleanup(true), or by the worker pool. */
  std::size_t leftovers_killed = 0;
  [[nodiscard]] bool ok() const noexcept { return how == exit_kind::exited && exit_code == 0; }
  /** "exited with code 3", "killed by signal 11 (SIGSEGV)", "timed out after 30.0 s", ...; with
   *  leftovers, "...; 2 processes it left behind (outside its process group) were killed". */
  [[nodiscard]] std::string describe() const;
};

/** The kernel's count of processes its out-of-memory killer ended, machine-wide and cgroups'
 *  included (`oom_kill` in /proc/vmstat, Linux 4.13+); empty where it cannot be read. */
[[nodiscard]] std::optional<std::uint64_t> oom_kills();
/** The `oom_kill` count in the text of /proc/vmstat; empty where it has none. */
[[nodiscard]] std::optional<std::uint64_t> oom_kills_from(std::string_view vmstat);

/** This machine's host name (gethostname); empty when it cannot be read. */
[[nodiscard]] std::string host_name();

/** `environ` as NAME=value entries, for spawn_options::base_environment (take it on the thread
 *  that may change the environment, or before others start). */
[[nodiscard]] std::vector<std::string> environment_snapshot();

/** Runs a child to completion (or to its limit). Thread-compatible; SIGPIPE is ignored while
 *  writing stdin. */
[[nodiscard]] process_result run_process(const spawn_options& options);

/** For a process whose only children are those run_process starts (kjudge eval): while one runs,
 *  this process is a child subreaper (PR_SET_CHILD_SUBREAPER), so what the child's descendants
 *  leave running outside its process group (a daemon that called setsid(), which killing the group
 *  misses) is reparented here instead of to init; once the child has ended, each such process is
 *  killed with its descendants and reaped (process_result::leftovers_killed counts them). The
 *  child is started by a guard ("kjudge-guard": a fork of this process that leads the child's
 *  session and group, a subreaper too, and ends as the child ended); should this process be killed
 *  outright, the guard kills the child and everything it adopted, then itself. Off by default: in
 *  a process with children of its own (the worker, whose Python may start some) they would be
 *  taken for leftovers. */
void set_orphan_cleanup(bool on);

/** Makes SIGINT, SIGTERM and SIGHUP end this process without leaving a child running: the handler
 *  SIGKILLs the process group of every child that run_process or run_process_in_pool is running;
 *  the loop supervising it reaps it (and its leftovers, see set_orphan_cleanup), writes
 *  "<program>: interrupted by SIGINT; ..." to stderr and exits with 128 + the signal's number.
 *  With no child running the process exits so at once; a second signal does too. */
void exit_on_interrupt(const std::string& program);

/** A regular file this process may execute. */
[[nodiscard]] bool is_executable_file(const std::filesystem::path& path);
/** The first executable `name` in the folders of $PATH, as exec would find it; empty when none
 *  (or PATH is unset). */
[[nodiscard]] std::filesystem::path find_on_path(const std::string& name);
/** The same with `search_path` for PATH (another process's environment); an empty one searches
 *  /usr/local/bin:/usr/bin:/bin, as exec does. With `cwd`, the folder that process runs in, a
 *  relative folder of PATH is taken there (and the path found is joined to it). */
[[nodiscard]] std::filesystem::path find_on_path(const std::string& name,
                                                 std::string_view search_path,
                                                 const std::filesystem::path& cwd = {});

/** The path of the running executable (/proc/self/exe). */
[[nodiscard]] std::filesystem::path self_executable();

/** The last `max_lines` lines of text (for error tails in results). */
[[nodiscard]] std::string last_lines(const std::string& text, std::size_t max_lines);

/** Name of a signal ("SIGSEGV"), or "signal N". */
[[nodiscard]] std::string signal_name(int sig);

}  // namespace kj::runner
