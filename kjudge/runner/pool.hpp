#pragma once
/** @file The worker pool: a long-lived server process that has paid the fixed start-up costs a
 *  fresh worker would pay (for kjudge: the interpreter and `import torch`, 3-5 s) and forks one
 *  child per request. Each child is a new process with its own address space, process group,
 *  descriptors, environment and working directory, supervised by the requester exactly like a
 *  child of run_process (timeouts signal its group; its output, channel, exit status and peak
 *  memory come back the same way). A child dies with the pool (PR_SET_PDEATHSIG) and with its
 *  requester (the server kills its group when the requester's connection closes); what its
 *  descendants leave running outside its group is killed when it ends (process_result::
 *  leftovers_killed). Linux only: an abstract unix socket, credentials checked. */

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <kjudge/runner/process.hpp>

namespace kj::runner {

/** Runs `options` (argv, stdin, channel, environment overrides, working directory, timeout) as a
 *  child of the pool listening on `address` (an abstract socket name). nullopt when no pool
 *  answers there or it refuses the request: the caller then runs the command itself, and
 *  `refused`, where given, is told why ("no pool of this user listens at the address", "the pool
 * refused it: stale pool: ..."). The child's environment is this process's with the overrides
 * applied, as with run_process. */
[[nodiscard]] std::optional<process_result> run_process_in_pool(const std::string& address,
                                                                const spawn_options& options,
                                                                std::string* refused = nullptr);

/** A unix socket with a name in the abstract namespace, as /proc/net/unix lists it. */
struct abstract_socket {
  std::string name;        ///< without the leading '@'
  bool accepting = false;  ///< listening (__SO_ACCEPTCON)
  bool connected = false;  ///< a connection, accepted or queued (they carry the listener's name)
  unsigned long inode = 0;
};

/** The abstract unix sockets of this network namespace whose names start with `prefix`; empty
 *  where /proc/net/unix cannot be read. */
[[nodiscard]] std::vector<abstract_socket> abstract_sockets(std::string_view prefix = {});

/** A pool server of this user, as /proc shows it. */
struct pool_server_info {
  std::string address;            ///< its abstract socket's name
  unsigned long inode = 0;        ///< that socket's
  bool accepting = false;         ///< it accepts requests; false while it prepares (starting)
  bool stopped = false;           ///< stopped (SIGSTOP, a debugger) or frozen with its cgroup
  pid_t pid = 0;                  ///< the process holding the address
  double age_s = 0;               ///< since that process started
  std::size_t serving = 0;        ///< requests it is serving now (its children not yet ended)
  std::vector<std::string> argv;  ///< its command line (/proc/PID/cmdline)
  std::string executable;         ///< /proc/PID/exe; "" where it cannot be read
};

/** The processes of this user holding sockets whose names start with `prefix` (every name that a
 *  socket other than a connection holds, listening or still starting), each with its holder;
 *  names held by other users' processes (or by none any more) are left out. Whether a holder is
 *  a pool server is the caller's to check (its argv). */
[[nodiscard]] std::vector<pool_server_info> pool_servers(std::string_view prefix);

/** How stop_pool_server went. */
enum class pool_stop { stopped, gone, serving, halted, not_ended, failed };

struct pool_stop_result {
  pool_stop outcome = pool_stop::failed;
  std::string why;  ///< for every outcome but stopped and gone
};

/** Ends the server `p` (as pool_servers found it) with SIGTERM, through a pidfd opened first and
 *  only while that process still holds `p.inode` (else `gone`: it ended, or gave its address
 *  up, since it was listed, and the pid may be another process's now). Its requests in progress
 *  are counted again just before: with any, or where it is stopped, it is left running
 *  (`serving`, `halted`) unless `force` (then SIGCONT follows SIGTERM, for a stopped one). Waits
 *  up to `wait` for it to end (`not_ended` past that). */
[[nodiscard]] pool_stop_result stop_pool_server(const pool_server_info& p, bool force,
                                                std::chrono::milliseconds wait);

/** What holds a pool's address. */
enum class pool_state {
  absent,     ///< nothing: no server runs there
  starting,   ///< a process of this user claimed it and does not accept yet (in prepare)
  accepting,  ///< a server accepts requests there
  foreign,    ///< claimed, not accepting, by a process that is not this user's
};

struct pool_wait {
  pool_state state = pool_state::absent;  ///< at the last look
  /** Time spent waiting: 0 when the first look found no server starting. */
  std::chrono::duration<double> waited{0};
};

/** Where a server of this user has claimed `address` but does not accept requests yet (its
 *  prepare(): for kjudge, `import torch`), waits until it accepts or is gone, looking every
 *  20 ms, for as long as that server is younger than `limit` (a server still starting at that
 *  age is taken to be stuck, and not waited for at all); otherwise returns at once. */
[[nodiscard]] pool_wait wait_for_pool(const std::string& address, std::chrono::milliseconds limit);

struct pool_server_options {
  /** Abstract socket name, without the leading NUL. */
  std::string address;
  /** The server exits after this long without a request or a running child. */
  std::chrono::seconds idle_exit{600};
  /** Called once the name is claimed, before the server accepts requests (the slow start-up:
   *  requests meanwhile are refused, and their senders run the command themselves). */
  std::function<void()> prepare;
  /** In the child, with descriptors 0-2 (and the channel) in place, the requester's environment
   *  and working directory applied and the server's sockets closed. Must not return. */
  std::function<void(const std::vector<std::string>& argv)> child_main;
  /** Around fork: in the server before it and after it (parent); in the child once descriptors,
   *  process group, working directory and environment are set up, before child_main. */
  std::function<void()> before_fork, after_fork_parent, after_fork_child;
  /** Before each fork: why the server's state no longer serves (its interpreter's packages
   *  changed), or "". A reason refuses the request (its sender runs the command itself), gives
   *  up the address and ends the server once its running children have ended. */
  std::function<std::string()> stale;
  /** Where set, asked once the address is claimed (bound, not yet listening): why this server
   *  should not serve (by the caller's count, one server too many), or "". A reason gives the
   *  address up, says so on stderr and makes serve_pool return false. */
  std::function<std::string()> may_claim;
  /** The file whose exclusive lock (file_lock, taken in the line of waiters) is held from
   *  before the claim until `may_claim` has answered, so that servers started at the same moment
   *  claim and ask one after another, each seeing the claims made before it and none made after.
   *  Without it (waited for at most 5 s; past that, or where the file cannot be used, the server
   *  claims and asks without it and says so on stderr), a count made after the server's own claim
   *  still lets no more serve than it allows, but servers started together may all give up. Unused
   *  without `may_claim`. */
  std::filesystem::path claim_lock;
};

/** Claims `options.address` and serves until idle. Returns false at once when another server
 *  holds the address or `options.may_claim` gives a reason not to serve; throws kj::error(io)
 *  when the socket cannot be set up. */
bool serve_pool(const pool_server_options& options);

/** Runs `body` in a forked child and stays its parent, a child subreaper, until the child ends;
 *  then kills (SIGKILL) every process reparented here meanwhile, with its descendants, and
 *  returns the child's exit status (128 + the signal where a signal ended it), after calling
 *  `ended` (when given) with that status and how many running processes were killed. For a pool
 *  server: a server killed while its children run leaves them and what they adopted (a daemon a
 *  candidate started with setsid()) to the nearest subreaper above it, which is this process.
 *  SIGTERM, SIGINT, SIGHUP and SIGQUIT sent here are passed on to the child (the caller's
 *  handlers for them are replaced; they are held from before the fork until the handlers are in
 *  place), and SIGCHLD is reset to its default (an inherited SIG_IGN would lose the child's
 *  status). A child that cannot be waited for gives 127, said on stderr. Where this process
 *  cannot be a subreaper or fork, `body` runs here, unguarded, and stderr says why. Call it
 *  before any thread starts. */
int run_guarded(const std::function<int()>& body,
                const std::function<void(int status, std::size_t killed)>& ended = {});

}  // namespace kj::runner
