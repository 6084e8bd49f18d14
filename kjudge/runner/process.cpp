// run_process: fork/exec one child in its own process group, feed its stdin, collect its output
// and channel, and enforce the wall-clock limit on the whole group. Also: the registry of running
// children behind exit_on_interrupt, and the collection of what they leave behind
// (set_orphan_cleanup).
#include <kjudge/core/error.hpp>
#include <kjudge/core/file_io.hpp>
#include <kjudge/core/sigpipe.hpp>
#include <kjudge/runner/process.hpp>
#include <kjudge/runner/process_detail.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string_view>
#include <system_error>
#include <thread>

#include <fmt/format.h>

extern char** environ;  // NOLINT: POSIX global

namespace kj::runner {
namespace {

/** Running children, by the group each leads (0: a free slot): read by the interrupt handler, so
 *  lock-free and of fixed size. */
constexpr std::size_t k_max_registered = 256;
std::array<std::atomic<pid_t>, k_max_registered> g_registered{};
/** The signal that interrupted this process (0: none yet); see exit_on_interrupt. */
std::atomic<int> g_interrupt{0};
/** A pipe the handler writes to, so a supervising loop in poll() wakes up. */
std::atomic<int> g_wake_read{-1};
std::atomic<int> g_wake_write{-1};
/** The name the interrupt message starts with, written before the handlers are installed. */
std::array<char, 64> g_program{'k', 'j', 'u', 'd', 'g', 'e', '\0'};
std::atomic<bool> g_orphan_cleanup{false};
/** How many interrupt_deferral objects live (cleanup an exit from the handler would cut short). */
std::atomic<int> g_deferred{0};
/** How many run_process calls want this process to be a child subreaper right now. */
std::mutex g_subreaper_mutex;
int g_subreaper_users = 0;

void write_stderr_raw(const char* text) noexcept {
  std::size_t size = 0;
  while (text[size] != '\0') ++size;
  while (size > 0) {
    const ssize_t n = ::write(STDERR_FILENO, text, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text += n;
    size -= static_cast<std::size_t>(n);
  }
}

const char* interrupt_name(int sig) noexcept {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "a signal";
  }
}

extern "C" void on_interrupt(int sig) {
  const int saved_errno = errno;
  int first = 0;
  // A second signal while the first is handled: exit at once (the groups were killed already).
  if (!g_interrupt.compare_exchange_strong(first, sig)) detail::exit_interrupted(first);
  bool running = false;
  for (auto& slot : g_registered) {
    const pid_t group = slot.load();
    if (group <= 0) continue;
    detail::signal_group(group, SIGKILL);
    running = true;
  }
  // Nothing to reap and no cleanup under way: exit now. Otherwise the supervising loop reaps the
  // child (and what it left behind) and exits; a child forked but not registered yet dies with
  // us (PR_SET_PDEATHSIG).
  if (!running && g_deferred.load() == 0) detail::exit_interrupted(sig);
  if (const int fd = g_wake_write.load(); fd >= 0) {
    const ssize_t ignored = ::write(fd, "!", 1);
    (void)ignored;
  }
  errno = saved_errno;
}

/** /proc/PID/stat's state, parent and process group; state 0 where the process is gone. */
struct proc_status {
  char state = 0;
  pid_t parent = -1;
  pid_t group = -1;
};

proc_status status_of(pid_t pid) {
  proc_status out;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return out;
  const auto close_paren = line.rfind(')');
  if (close_paren == std::string::npos) return out;
  std::istringstream rest(line.substr(close_paren + 1));
  std::string state;
  long parent = -1, group = -1;
  if (!(rest >> state >> parent >> group) || state.empty()) return out;
  out.state = state[0];
  out.parent = static_cast<pid_t>(parent);
  out.group = static_cast<pid_t>(group);
  return out;
}

[[nodiscard]] bool is_number(std::string_view name) {
  return !name.empty() && name.find_first_not_of("0123456789") == std::string_view::npos;
}

/** Makes this process a child subreaper while an object lives (where `on`); nests. */
class subreaper_scope {
 public:
  explicit subreaper_scope(bool on) : m_on(on) {
    if (!m_on) return;
    const std::lock_guard lock(g_subreaper_mutex);
    if (g_subreaper_users++ == 0) ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  }
  subreaper_scope(const subreaper_scope&) = delete;
  subreaper_scope& operator=(const subreaper_scope&) = delete;
  ~subreaper_scope() {
    if (!m_on) return;
    const std::lock_guard lock(g_subreaper_mutex);
    if (--g_subreaper_users == 0) ::prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
  }

 private:
  bool m_on;
};

}  // namespace

namespace detail {

child_registration::child_registration(pid_t pid) noexcept {
  for (std::size_t i = 0; i < g_registered.size(); ++i) {
    pid_t free_slot = 0;
    if (g_registered[i].compare_exchange_strong(free_slot, pid)) {
      m_slot = static_cast<int>(i);
      return;
    }
  }
}

void child_registration::release() noexcept {
  if (m_slot >= 0) g_registered[static_cast<std::size_t>(m_slot)].store(0);
  m_slot = -1;
}

interrupt_deferral::interrupt_deferral() noexcept {
  g_deferred.fetch_add(1);
}

interrupt_deferral::~interrupt_deferral() {
  g_deferred.fetch_sub(1);
}

bool registered_child(pid_t pid) noexcept {
  return std::any_of(g_registered.begin(), g_registered.end(),
                     [pid](const auto& slot) { return slot.load() == pid; });
}

int interrupt_signal() noexcept {
  return g_interrupt.load();
}

int interrupt_fd() noexcept {
  return g_wake_read.load();
}

void exit_interrupted(int sig) noexcept {
  remove_temp_dirs_now();  // _exit runs no destructors: an Nsight Compute run's folder, say
  write_stderr_raw(g_program.data());
  write_stderr_raw(": interrupted by ");
  write_stderr_raw(interrupt_name(sig));
  write_stderr_raw("; the evaluation was stopped and its processes killed\n");
  ::_exit(128 + sig);
}

std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  const std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* tasks = ::opendir(task_dir.c_str());
  if (tasks == nullptr) return out;  // gone
  bool readable = false;
  while (const dirent* e = ::readdir(tasks)) {
    if (!is_number(e->d_name)) continue;
    std::ifstream children(task_dir + "/" + e->d_name + "/children");
    if (!children) continue;
    readable = true;
    for (long child = 0; children >> child;) out.push_back(static_cast<pid_t>(child));
  }
  ::closedir(tasks);
  if (readable) return out;
  // No children files (a kernel without CONFIG_PROC_CHILDREN): every process's parent.
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (const dirent* e = ::readdir(proc)) {
    if (!is_number(e->d_name)) continue;
    const auto other = static_cast<pid_t>(std::strtol(e->d_name, nullptr, 10));
    if (status_of(other).parent == pid) out.push_back(other);
  }
  ::closedir(proc);
  return out;
}

bool kill_if_child_of(pid_t pid, pid_t parent) {
  if (parent == ::getpid())  // ours: its pid is not reused until this process reaps it
    return status_of(pid).parent == parent && ::kill(pid, SIGKILL) == 0;
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
  const long fd = ::syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0) {
    const bool same = status_of(pid).parent == parent;
    const long rc =
        same ? ::syscall(SYS_pidfd_send_signal, static_cast<int>(fd), SIGKILL, nullptr, 0) : -1;
    const int err = errno;
    ::close(static_cast<int>(fd));
    // Refused outright (the worker's fence, runner/fence.hpp, refuses pidfd_send_signal; an old
    // kernel has none): by pid, as without a pidfd.
    if (same && rc != 0 && (err == EPERM || err == ENOSYS))
      return status_of(pid).parent == parent && ::kill(pid, SIGKILL) == 0;
    return rc == 0;
  }
#endif
  return status_of(pid).parent == parent && ::kill(pid, SIGKILL) == 0;
}

std::size_t kill_adopted(pid_t group, const std::function<bool(pid_t)>& keep,
                         std::chrono::milliseconds patience) {
  const pid_t self = ::getpid();
  const auto give_up = std::chrono::steady_clock::now() + patience;
  std::vector<pid_t> counted;
  while (true) {
    std::vector<pid_t> adopted;
    for (const pid_t c : children_of(self))
      if (!keep(c)) adopted.push_back(c);
    if (adopted.empty()) break;
    // Each subtree, parents before their children (a child forked meanwhile is reparented here
    // and found in the next round). Each process with the parent it was found under: this
    // process's own children keep their pids until it reaps them, but a deeper one can end and
    // be reaped by its parent after the look, and its pid be reused by then.
    std::vector<std::pair<pid_t, pid_t>> tree;  // {pid, parent}
    for (const pid_t c : adopted) tree.emplace_back(c, self);
    for (std::size_t i = 0; i < tree.size() && tree.size() < 100'000; ++i) {
      const auto [p, parent] = tree[i];
      const auto st = status_of(p);
      if (st.state == 0 || st.parent != parent) continue;  // gone, or not the process found
      if (st.state != 'Z' && st.state != 'X') {
        if (kill_if_child_of(p, parent) && st.group != group &&
            std::find(counted.begin(), counted.end(), p) == counted.end())
          counted.push_back(p);
      }
      for (const pid_t c : children_of(p)) tree.emplace_back(c, p);
    }
    bool reaped = false;
    for (const pid_t c : adopted) {
      int status = 0;
      const pid_t w = ::waitpid(c, &status, WNOHANG);
      if (w == c || (w < 0 && errno == ECHILD)) reaped = true;
    }
    if (std::chrono::steady_clock::now() >= give_up) break;
    if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return counted.size();
}

std::string errno_text(int err) {
  return std::error_code(err, std::generic_category()).message();
}

void unique_fd::reset() noexcept {
  if (m_fd >= 0) ::close(m_fd);
  m_fd = -1;
}

pipe_ends make_pipe() {
  std::array<int, 2> fds{};
  if (::pipe2(fds.data(), O_CLOEXEC) != 0)
    KJ_THROW(error_kind::io, "cannot create a pipe: {}", errno_text(errno));
  return {unique_fd(fds[0]), unique_fd(fds[1])};
}

void set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
    KJ_THROW(error_kind::io, "cannot make a pipe non-blocking: {}", errno_text(errno));
}

std::vector<std::string> build_environment(
    const std::vector<std::pair<std::string, std::string>>& overrides,
    const std::optional<std::vector<std::string>>& base) {
  std::vector<std::string> out;
  const std::vector<std::string> parent = base ? *base : environment_snapshot();
  for (const std::string& entry : parent) {
    std::string_view text(entry);
    std::string_view name = text.substr(0, text.find('='));
    bool replaced = std::any_of(overrides.begin(), overrides.end(),
                                [&](const auto& kv) { return kv.first == name; });
    if (!replaced) out.emplace_back(text);
  }
  for (const auto& [name, value] : overrides) out.push_back(name + "=" + value);
  return out;
}

unique_fd open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  long fd = ::syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0) {
    ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
    return unique_fd(static_cast<int>(fd));
  }
#else
  (void)pid;
#endif
  return {};
}

void signal_group(pid_t leader, int sig) noexcept {
  if (leader <= 1) return;
  ::killpg(leader, sig);
  ::kill(leader, sig);
}

void reset_child_process() noexcept {
  // The parent's interrupt handler (exit_on_interrupt) is not the child's: it would signal the
  // parent's other children.
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction current {};
    if (::sigaction(sig, nullptr, &current) == 0 && current.sa_handler == &on_interrupt)
      ::signal(sig, SIG_DFL);
  }
  ::setsid();
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Ignored dispositions survive exec (and fork); the child gets the defaults.
  ::signal(SIGPIPE, SIG_DFL);
  ::signal(SIGXFSZ, SIG_DFL);
  ::signal(SIGCHLD, SIG_DFL);
}

bool die_with_parent(pid_t parent) noexcept {
  // The signal comes when the forking thread ends; a parent that died before prctl sent none,
  // which getppid() shows (0: a parent outside our pid namespace, which we cannot check).
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  const pid_t now = ::getppid();
  return now == parent || now == 0;
}

int install_child_fds(int stdin_fd, int output_fd, int channel_src, int channel_target) noexcept {
  // Move every source above every target first, so a dup2 never overwrites a source still needed.
  const bool channel = channel_src >= 0 && channel_target >= 3;
  const int floor = std::max(3, channel ? channel_target + 1 : 3);
  const int in = ::fcntl(stdin_fd, F_DUPFD_CLOEXEC, floor);
  const int out = in < 0 ? -1 : ::fcntl(output_fd, F_DUPFD_CLOEXEC, floor);
  const int chan = out < 0 || !channel ? -1 : ::fcntl(channel_src, F_DUPFD_CLOEXEC, floor);
  if (in < 0 || out < 0 || (channel && chan < 0)) return errno;
  if (::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(out, 2) < 0 ||
      (channel && ::dup2(chan, channel_target) < 0))
    return errno;
  ::close(in);
  ::close(out);
  if (channel) ::close(chan);
  // Descriptors other threads opened without O_CLOEXEC must not leak through an exec either.
  if (channel) {
    const auto target = static_cast<unsigned>(channel_target);
    if (target > 3) ::close_range(3, target - 1, CLOSE_RANGE_CLOEXEC);
    ::close_range(target + 1, ~0U, CLOSE_RANGE_CLOEXEC);
  } else {
    ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
  }
  return 0;
}

}  // namespace detail

namespace {

using steady = std::chrono::steady_clock;
using detail::errno_text;
using detail::make_pipe;
using detail::open_pidfd;
using detail::pipe_ends;
using detail::set_nonblocking;
using detail::unique_fd;

/** How long the group gets between SIGTERM and SIGKILL: what a timed-out worker that ignores
 *  SIGTERM runs past the limit (the worker itself takes SIGTERM's default action; 1 s put a
 *  candidate that ignored it a second past --timeout). */
constexpr auto k_term_grace = std::chrono::milliseconds(250);
/** After the child is gone, how long we keep reading pipes that escaped the group (setsid). */
constexpr auto k_drain_grace = std::chrono::milliseconds(500);
/** Poll period when no pidfd is available to tell us that the child exited. */
constexpr int k_fallback_tick_ms = 10;
/** After SIGKILL, how long a child that cannot be reaped here (the pool's) may take to be
 *  reported ended before we stop waiting for it. */
constexpr auto k_unreported_grace = std::chrono::seconds(3);
/** With the child's pipes closed and no report of its end, how often a child that may go
 *  unreported is looked at (it has ended where its pool, stopped or stalled, has not reaped it;
 *  a pool that runs reports within milliseconds). */
constexpr auto k_unreported_look = std::chrono::milliseconds(250);

/** argv[0] as a path to execve: names without a slash are looked up on `search_path` as exec
 *  finds them for a process that runs in `cwd` (this process's folder when empty): a relative
 *  folder of PATH (an empty entry is the current one) is that folder's, and is returned joined to
 *  it. Empty when not found. Done before fork, because PATH lookup allocates. */
[[nodiscard]] std::string resolve_program(const std::string& name, std::string_view search_path,
                                          const std::filesystem::path& cwd = {}) {
  if (name.find('/') != std::string::npos) return name;
  if (search_path.empty()) search_path = "/usr/local/bin:/usr/bin:/bin";
  std::size_t begin = 0;
  while (begin <= search_path.size()) {
    std::size_t end = search_path.find(':', begin);
    if (end == std::string_view::npos) end = search_path.size();
    std::string dir(search_path.substr(begin, end - begin));
    if (dir.empty()) dir = ".";
    if (dir.front() != '/' && !cwd.empty()) dir = (cwd / dir).string();
    std::string candidate = dir + "/" + name;
    if (is_executable_file(candidate)) return candidate;
    begin = end + 1;
  }
  return {};
}

[[nodiscard]] std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

/** What the child reports on the error pipe when it cannot reach exec. */
enum class child_stage : int { fds = 1, chdir = 2, exec = 3, guard = 4 };

struct child_report {
  child_stage stage;
  int err;
};

/** Everything the child needs, prepared before fork: the child only makes async-signal-safe calls.
 */
struct child_plan {
  const char* program = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* cwd = nullptr;  // nullptr: keep the parent's
  int stdin_fd = -1;
  int output_fd = -1;
  int channel_src = -1;
  int channel_target = -1;
  int error_fd = -1;
  pid_t parent = -1;   // the process that forks (to check that it is still there)
  bool guard = false;  // with orphan cleanup: a guard process between us and the child (below)
};

[[noreturn]] void child_fail(int error_fd, child_stage stage, int err) noexcept {
  child_report report{stage, err};
  ssize_t ignored = ::write(error_fd, &report, sizeof report);
  (void)ignored;
  ::_exit(127);
}

// The guard (orphan cleanup, i.e. kjudge eval's worker): a forked copy of this process that leads
// the child's session and group, is a child subreaper, and forks the child itself, which stays in
// its group. While this process lives the guard only waits: once the child ends it ends the same
// way (its exit code, or its signal), and what it adopted meanwhile (a daemon the child's
// descendants left with setsid()) is reparented here, where forked_child::reap() kills it as
// before. Were this process killed outright (SIGKILL: nothing of ours runs), the guard gets
// SIGUSR2 (PR_SET_PDEATHSIG) and kills the child and everything it adopted, round after round,
// then itself: such a daemon used to go to init and outlive the evaluation. The group's SIGTERM
// at a timeout is the child's: the guard ignores it (the child keeps its grace period), and dies
// with the group's SIGKILL (the child, if it left the group, by its own PR_SET_PDEATHSIG). Only
// async-signal-safe calls: the guard is a fork of a process with threads and never execs.

/** Digits of `text` as pids, for each calling `fn`. */
template <class Fn>
void for_each_pid(const char* text, std::size_t size, Fn&& fn) noexcept {
  long value = -1;
  for (std::size_t i = 0; i <= size; ++i) {
    const char c = i < size ? text[i] : ' ';
    if (c >= '0' && c <= '9') {
      value = (value < 0 ? 0 : value * 10) + (c - '0');
    } else if (value >= 0) {
      fn(static_cast<pid_t>(value));
      value = -1;
    }
  }
}

/** In the guard (one thread): SIGKILL to every child, and to the group each leads, reaping them,
 *  until none is left (what a killed one had started is reparented here and found in the next
 *  round) or a second has passed; then to its own group, itself included. */
[[noreturn]] void guard_kill_all(pid_t child) noexcept {
  ::kill(child, SIGKILL);
  for (int round = 0; round < 1000; ++round) {
    bool any = false;
    const int fd = ::open("/proc/thread-self/children", O_RDONLY | O_CLOEXEC);
    if (fd < 0) break;  // no such file (a kernel without CONFIG_PROC_CHILDREN): the group only
    std::array<char, 4096> buffer{};
    std::size_t kept = 0;  // a pid cut by the end of one read is completed by the next
    while (true) {
      const ssize_t n = ::read(fd, buffer.data() + kept, buffer.size() - kept);
      if (n < 0 && errno == EINTR) continue;
      const std::size_t size = kept + static_cast<std::size_t>(std::max<ssize_t>(n, 0));
      std::size_t whole = size;
      if (n > 0)
        while (whole > 0 && buffer[whole - 1] >= '0' && buffer[whole - 1] <= '9') --whole;
      for_each_pid(buffer.data(), whole, [&](pid_t p) {
        any = true;
        ::kill(p, SIGKILL);  // ours: the pid is not reused before we reap it
        if (::getpgid(p) == p) ::killpg(p, SIGKILL);
      });
      if (n <= 0) break;
      kept = size - whole;
      std::memmove(buffer.data(), buffer.data() + whole, kept);
    }
    ::close(fd);
    int status = 0;
    while (::waitpid(-1, &status, WNOHANG) > 0) {
    }
    if (!any) break;
    const timespec pause{0, 1'000'000};
    ::nanosleep(&pause, nullptr);
  }
  ::killpg(0, SIGKILL);
  ::_exit(128 + SIGKILL);
}

/** In the guard: end as the child ended. */
[[noreturn]] void guard_end_like(int status) noexcept {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    ::sigprocmask(SIG_UNBLOCK, &one, nullptr);
    ::kill(::getpid(), sig);
    ::_exit(128 + sig);
  }
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 127);
}

/** Forks the guard's child, which returns the guard's pid; the guard never returns. `parent`:
 *  the process that forked this one (the guard ends at once where it is gone); a failure goes to
 *  `error_fd` (child_fail; -1: none, the exit code 127 alone). */
pid_t become_guard(pid_t parent, int error_fd) noexcept {
  sigset_t waited;
  sigemptyset(&waited);
  sigaddset(&waited, SIGCHLD);
  sigaddset(&waited, SIGUSR2);
  ::sigprocmask(SIG_BLOCK, &waited, nullptr);
  // SIGUSR2 once the thread that forked us ends; a parent gone before the prctl sent none.
  ::prctl(PR_SET_PDEATHSIG, SIGUSR2, 0, 0, 0);
  if (const pid_t now = ::getppid(); now != parent && now != 0) ::_exit(127);
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0)
    child_fail(error_fd, child_stage::guard, errno);
  const pid_t self = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) child_fail(error_fd, child_stage::guard, errno);
  if (child == 0) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    return self;
  }
  // The child's pipes must close when it and its descendants are done with them: none here.
  ::close_range(0, ~0U, 0);
  ::prctl(PR_SET_NAME, "kjudge-guard", 0, 0, 0);  // what ps shows
  for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::signal(sig, SIG_IGN);
  while (true) {
    siginfo_t info{};
    const int sig = ::sigwaitinfo(&waited, &info);
    if (sig == SIGUSR2) guard_kill_all(child);
    if (sig != SIGCHLD) continue;
    int status = 0;
    for (pid_t w = 0; (w = ::waitpid(-1, &status, WNOHANG)) > 0;)
      if (w == child) guard_end_like(status);  // adopted ones that ended are only reaped
  }
}

[[noreturn]] void run_child(child_plan plan) noexcept {
  detail::reset_child_process();  // the guard, or else the child, leads a session of its own
  if (plan.guard) plan.parent = become_guard(plan.parent, plan.error_fd);
  // Killed with the thread (or guard) that started it, rather than left running without a limit.
  if (!detail::die_with_parent(plan.parent)) ::_exit(127);
  // The error pipe goes above every target first, so no dup2 lands on it.
  const int error_fd =
      ::fcntl(plan.error_fd, F_DUPFD_CLOEXEC, std::max(3, plan.channel_target + 1));
  if (error_fd < 0) ::_exit(127);
  if (const int err = detail::install_child_fds(plan.stdin_fd, plan.output_fd, plan.channel_src,
                                                plan.channel_target);
      err != 0)
    child_fail(error_fd, child_stage::fds, err);
  if (plan.cwd != nullptr && ::chdir(plan.cwd) != 0)
    child_fail(error_fd, child_stage::chdir, errno);
  ::execve(plan.program, plan.argv, plan.envp);
  child_fail(error_fd, child_stage::exec, errno);
}

/** Keeps the last `limit` bytes of everything appended, in at most 2 * limit bytes of memory. */
void append_tail(std::string& tail, std::string_view chunk, std::size_t limit) {
  if (limit == 0) return;
  if (chunk.size() >= limit) {
    tail.assign(chunk.substr(chunk.size() - limit));
    return;
  }
  tail.append(chunk);
  if (tail.size() > 2 * limit) tail.erase(0, tail.size() - limit);
}

/** Writes `text` to our stderr as far as it takes it without waiting, a pipe's atomic size at a
 *  time; returns the bytes it did not take. The echo must never block the supervising loop: a
 *  reader of our stderr that stalls (`-v 2>&1 | slow`) held the child's time limit off for as
 *  long as it stalled. */
std::size_t echo_to_stderr(std::string_view text) noexcept {
  while (!text.empty()) {
    pollfd out{STDERR_FILENO, POLLOUT, 0};
    if (::poll(&out, 1, 0) != 1 || (out.revents & POLLOUT) == 0) break;
    const std::size_t piece = std::min<std::size_t>(text.size(), PIPE_BUF);
    const ssize_t n = ::write(STDERR_FILENO, text.data(), piece);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return text.size();
}

/** Milliseconds from now until `when`, clamped to [0, 60 s] for poll(). */
[[nodiscard]] int ms_until(steady::time_point when, steady::time_point now) {
  if (when <= now) return 0;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(when - now);
  return static_cast<int>(std::min<std::chrono::milliseconds::rep>(left.count(), 60'000));
}

/** True once the child has exited; it stays a zombie (WNOWAIT) so its group id stays reserved. */
[[nodiscard]] bool child_exited(pid_t pid) {
  siginfo_t info{};
  while (true) {
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0)
      return info.si_pid == pid;
    if (errno != EINTR) return true;  // ECHILD: someone else reaped it; nothing left to wait for
  }
}

/** One pipe we read from: the output (kept as a tail) or the channel (kept whole). */
struct reader {
  unique_fd fd;
  std::string* sink = nullptr;
  bool tail_only = false;
};

/** A child this process forked: ended() looks without reaping (WNOWAIT), so the group id stays
 *  reserved until reap() has ended the rest of the group. */
class forked_child final : public detail::child_handle {
 public:
  forked_child(pid_t pid, detail::child_registration registration, bool cleanup,
               std::vector<pid_t> before)
      : m_pid(pid),
        m_pidfd(open_pidfd(pid)),
        m_registration(std::move(registration)),
        m_cleanup(cleanup),
        m_before(std::move(before)) {}
  [[nodiscard]] pid_t group() const noexcept override { return m_pid; }
  [[nodiscard]] bool ended() override { return child_exited(m_pid); }
  [[nodiscard]] int wait_fd() const noexcept override { return m_pidfd.get(); }
  std::string reap(int& status, rusage& usage, std::size_t& leftovers) override {
    // An interrupt from here on (the child no longer registered once reaped) waits for the
    // cleanup to end, then the supervising loop exits: what the child left is not left running.
    const detail::interrupt_deferral cleanup;
    // The leader is a zombie, so the group id cannot be reused yet: end any descendants still
    // in the group (they would hold our pipes open), then reap with rusage.
    ::killpg(m_pid, SIGKILL);
    pid_t w = 0;
    do {
      w = ::wait4(m_pid, &status, 0, &usage);
    } while (w < 0 && errno == EINTR);
    m_registration.release();  // the pid may be reused from now on
    m_pidfd.reset();
    // What left the group (setsid) was reparented here (a subreaper meanwhile): end it too.
    if (m_cleanup)
      leftovers = detail::kill_adopted(m_pid, [this](pid_t p) {
        return detail::registered_child(p) ||
               std::find(m_before.begin(), m_before.end(), p) != m_before.end();
      });
    return {};
  }

 private:
  pid_t m_pid;
  unique_fd m_pidfd;
  detail::child_registration m_registration;
  /** Orphan cleanup as it was when the child was started (with its guard and our subreaper). */
  bool m_cleanup;
  /** This process's children before the fork (kjudge exec'd by a shell that had started others):
   *  not the child's leftovers. */
  std::vector<pid_t> m_before;
};

}  // namespace

namespace detail {

pid_t fork_under_guard(pid_t parent) noexcept {
  return become_guard(parent, -1);
}

process_result supervise(child_handle& child, unique_fd stdin_fd, unique_fd output_fd,
                         unique_fd channel_fd, const spawn_options& options,
                         steady::time_point start, const std::string& program) {
  process_result result;
  const pid_t pid = child.group();
  std::size_t stdin_offset = 0;
  if (options.stdin_data.empty())
    stdin_fd.reset();
  else
    set_nonblocking(stdin_fd.get());

  std::array<reader, 2> readers;
  readers[0] = {std::move(output_fd), &result.output_tail, true};
  readers[1] = {std::move(channel_fd), &result.channel, false};
  for (auto& r : readers)
    if (r.fd.open()) set_nonblocking(r.fd.get());

  const bool unlimited = options.timeout >= std::chrono::hours(24 * 365);
  const auto deadline = unlimited ? steady::time_point::max() : start + options.timeout;
  steady::time_point kill_at = steady::time_point::max();
  steady::time_point drain_until = steady::time_point::max();
  bool timed_out = false;
  bool killed = false;
  std::size_t echo_dropped = 0;  // echoed output our stderr could not take without waiting
  bool reaped = false;
  steady::time_point next_unreported_look = steady::time_point::min();
  int interrupted = 0;  // the signal, once seen (exit_on_interrupt)
  steady::time_point interrupted_give_up = steady::time_point::max();
  int status = 0;
  rusage usage{};
  std::vector<char> buffer(64 * 1024);

  while (true) {
    auto now = steady::now();
    if (interrupted == 0 && interrupt_signal() != 0) {
      // The handler has SIGKILLed the group: reap the child (a pool's may never be reported),
      // then exit below.
      interrupted = interrupt_signal();
      if (!reaped) detail::signal_group(pid, SIGKILL);
      interrupted_give_up = now + std::chrono::seconds(2);
      stdin_fd.reset();
    }
    if (!reaped && child.ended()) {
      result.error = child.reap(status, usage, result.leftovers_killed);
      result.wall = steady::now() - start;
      reaped = true;
      stdin_fd.reset();
      drain_until = now + k_drain_grace;
    }
    if (interrupted != 0 && (reaped || now >= interrupted_give_up)) break;
    const bool pipes_open = readers[0].fd.open() || readers[1].fd.open();
    if (reaped && (!pipes_open || now >= drain_until)) break;

    // Ended and not reported (its pool was stopped after the child's end; child_handle::
    // ended_unreported() judges that): not the child's timeout, since it ended within its limit,
    // nor a wait for the limit once its pipes closed.
    const bool look_unreported =
        !reaped && !timed_out && child.may_go_unreported() && (!pipes_open || now >= deadline);
    if (look_unreported && (now >= next_unreported_look || now >= deadline)) {
      next_unreported_look = now + k_unreported_look;
      if (child.ended_unreported()) {
        detail::signal_group(pid, SIGKILL);  // what is left of its group (the zombie holds the id)
        result.error =
            "the worker pool (stopped or stalled) did not report the exit status of its child, "
            "which had ended";
        result.wall = steady::now() - start;
        reaped = true;
        stdin_fd.reset();
        drain_until = now + k_drain_grace;
        continue;
      }
    }
    if (!reaped && !timed_out && now >= deadline) {
      timed_out = true;
      detail::signal_group(pid, SIGTERM);
      kill_at = now + k_term_grace;
      stdin_fd.reset();
    }
    if (!reaped && !killed && now >= kill_at) {
      killed = true;
      detail::signal_group(pid, SIGKILL);
    }
    if (!reaped && killed && child.may_go_unreported() && now >= kill_at + k_unreported_grace) {
      result.error = "no exit status came after SIGKILL (the worker pool is stopped or stalled)";
      result.wall = steady::now() - start;
      reaped = true;
      stdin_fd.reset();
      drain_until = now;
    }

    int wait_ms = 60'000;
    if (reaped)
      wait_ms = ms_until(drain_until, now);
    else if (!timed_out)
      wait_ms = ms_until(deadline, now);
    else if (!killed)
      wait_ms = ms_until(kill_at, now);
    else if (child.may_go_unreported())
      wait_ms = ms_until(kill_at + k_unreported_grace, now);
    if (interrupted != 0) wait_ms = std::min(wait_ms, ms_until(interrupted_give_up, now));
    if (look_unreported) wait_ms = std::min(wait_ms, ms_until(next_unreported_look, now));
    const int child_fd = reaped ? -1 : child.wait_fd();
    if (!reaped && child_fd < 0) wait_ms = std::min(wait_ms, k_fallback_tick_ms);
    std::array<pollfd, 5> fds{};
    nfds_t count = 0;
    auto watch = [&](int fd, short events) {
      if (fd >= 0) fds[count++] = pollfd{fd, events, 0};
    };
    watch(stdin_fd.get(), POLLOUT);
    watch(readers[0].fd.get(), POLLIN);
    watch(readers[1].fd.get(), POLLIN);
    watch(child_fd, POLLIN);
    if (interrupted == 0) watch(interrupt_fd(), POLLIN);
    if (::poll(fds.data(), count, wait_ms) < 0) {
      if (errno == EINTR) continue;
      KJ_THROW(error_kind::io, "poll failed while running '{}': {}", program, errno_text(errno));
    }

    for (nfds_t i = 0; i < count; ++i) {
      const pollfd& p = fds[i];
      if (p.revents == 0) continue;
      if (p.fd == stdin_fd.get()) {
        const std::string& data = options.stdin_data;
        ssize_t n = ::write(p.fd, data.data() + stdin_offset, data.size() - stdin_offset);
        if (n > 0) stdin_offset += static_cast<std::size_t>(n);
        const bool failed = n < 0 && errno != EAGAIN && errno != EINTR;
        if (failed || stdin_offset == data.size()) stdin_fd.reset();
        continue;
      }
      for (auto& r : readers) {
        if (p.fd != r.fd.get()) continue;
        ssize_t n = ::read(p.fd, buffer.data(), buffer.size());
        if (n > 0) {
          std::string_view chunk(buffer.data(), static_cast<std::size_t>(n));
          if (r.tail_only) {
            result.output_bytes += chunk.size();
            append_tail(*r.sink, chunk, options.output_tail_bytes);
            if (options.echo_output) echo_dropped += echo_to_stderr(chunk);
          } else if (r.sink->size() + chunk.size() <= options.channel_limit_bytes) {
            r.sink->append(chunk);
          } else {
            result.channel_overflow = true;  // read on, so the child never blocks, but drop it
          }
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
          r.fd.reset();
        }
      }
    }
  }

  // An interrupt that came after the loop's last look (the handler then saw the child still
  // registered and left the exit to this loop) must not be lost.
  if (interrupted == 0) interrupted = interrupt_signal();
  if (interrupted != 0) {
    std::fflush(stdout);
    exit_interrupted(interrupted);
  }
  if (result.output_tail.size() > options.output_tail_bytes)
    result.output_tail.erase(0, result.output_tail.size() - options.output_tail_bytes);
  if (echo_dropped > 0)
    echo_to_stderr(
        fmt::format("[kjudge: {} bytes of the child's output were not echoed: stderr "
                    "did not take them without waiting]\n",
                    echo_dropped));
  result.max_rss_kb = static_cast<std::size_t>(std::max<long>(usage.ru_maxrss, 0));
  if (timed_out) {
    result.how = exit_kind::timed_out;
  } else if (!result.error.empty()) {
    result.how = exit_kind::lost;
  } else if (WIFEXITED(status)) {
    result.how = exit_kind::exited;
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.how = exit_kind::signaled;
    result.signal = WTERMSIG(status);
  }
  return result;
}

}  // namespace detail

std::string host_name() {
  std::array<char, 256> buf{};
  if (::gethostname(buf.data(), buf.size() - 1) != 0) return {};
  return buf.data();
}

std::vector<std::string> environment_snapshot() {
  std::vector<std::string> out;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry)
    out.emplace_back(*entry);
  return out;
}

process_result run_process(const spawn_options& options) {
  process_result result;
  if (options.argv.empty()) {
    result.error = "empty command line";
    return result;
  }
  const bool want_channel = options.channel_fd >= 3;

  // Everything the child touches is prepared here, before fork.
  std::string search_path;
  for (const auto& [name, value] : options.env)
    if (name == "PATH") search_path = value;
  if (search_path.empty() && options.base_environment) {
    for (const auto& entry : *options.base_environment)
      if (entry.starts_with("PATH=")) search_path = entry.substr(5);
  } else if (search_path.empty()) {
    if (const char* p = std::getenv("PATH")) search_path = p;
  }
  const std::string program = resolve_program(options.argv[0], search_path, options.cwd);
  if (program.empty()) {
    result.error = fmt::format("cannot execute '{}': not found on PATH", options.argv[0]);
    return result;
  }
  std::vector<std::string> argv_strings = options.argv;
  std::vector<char*> argv = c_strings(argv_strings);
  std::vector<std::string> env_strings =
      detail::build_environment(options.env, options.base_environment);
  std::vector<char*> envp = c_strings(env_strings);
  const std::string cwd = options.cwd.string();

  pipe_ends in = make_pipe();
  pipe_ends out = make_pipe();
  pipe_ends chan;
  if (want_channel) chan = make_pipe();
  pipe_ends err = make_pipe();

  child_plan plan;
  plan.program = program.c_str();
  plan.argv = argv.data();
  plan.envp = envp.data();
  plan.cwd = cwd.empty() ? nullptr : cwd.c_str();
  plan.stdin_fd = in.read.get();
  plan.output_fd = out.write.get();
  plan.channel_src = want_channel ? chan.write.get() : -1;
  plan.channel_target = want_channel ? options.channel_fd : -1;
  plan.error_fd = err.write.get();
  plan.parent = ::getpid();
  // One reading for this child: its guard, our subreaper and the cleanup after it go together.
  const bool cleanup = g_orphan_cleanup.load();
  plan.guard = cleanup;

  // With orphan cleanup, what the child's descendants leave behind comes here, not to init.
  const subreaper_scope subreaper(cleanup);
  // Blocked while the child's stdin is written (a child that exits without reading gives EPIPE).
  const sigpipe_guard pipe_guard;
  const std::vector<pid_t> children_before =
      cleanup ? detail::children_of(::getpid()) : std::vector<pid_t>{};
  const auto start = steady::now();
  const pid_t pid = ::fork();
  if (pid < 0) KJ_THROW(error_kind::io, "cannot fork: {}", errno_text(errno));
  if (pid == 0) run_child(plan);

  // The child makes its own session and group (reset_child_process); until it has, signals reach
  // it by its pid (signal_group). The parent does not set the group: a child already made a group
  // leader could no longer call setsid().
  detail::child_registration registration(pid);
  in.read.reset();
  out.write.reset();
  chan.write.reset();
  err.write.reset();

  // The error pipe closes on a successful exec (close-on-exec) or carries a child_report.
  child_report report{};
  ssize_t got = 0;
  do {
    got = ::read(err.read.get(), &report, sizeof report);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof report)) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    registration.release();
    const std::string why = errno_text(report.err);
    switch (report.stage) {
      case child_stage::chdir:
        result.error = fmt::format("cannot change directory to '{}': {}", cwd, why);
        break;
      case child_stage::exec:
        result.error = fmt::format("cannot execute '{}': {}", program, why);
        break;
      case child_stage::fds:
        result.error = fmt::format("cannot set up descriptors for '{}': {}", program, why);
        break;
      case child_stage::guard:
        result.error = fmt::format("cannot start the guard process for '{}': {}", program, why);
        break;
    }
    result.wall = steady::now() - start;
    if (const int sig = detail::interrupt_signal(); sig != 0) detail::exit_interrupted(sig);
    return result;
  }
  err.read.reset();

  forked_child child(pid, std::move(registration), cleanup, children_before);
  return detail::supervise(child, std::move(in.write), std::move(out.read), std::move(chan.read),
                           options, start, program);
}

void set_orphan_cleanup(bool on) {
  g_orphan_cleanup.store(on);
}

void exit_on_interrupt(const std::string& program) {
  if (g_wake_write.load() < 0) {
    std::array<int, 2> fds{};
    if (::pipe2(fds.data(), O_CLOEXEC | O_NONBLOCK) != 0)
      KJ_THROW(error_kind::io, "cannot create a pipe: {}", errno_text(errno));
    // Far from the low descriptors a user may name (--json /dev/fd/4 must not be this pipe).
    for (int& fd : fds) {
      const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 200);
      if (high >= 0) {
        ::close(fd);
        fd = high;
      }
    }
    g_wake_read.store(fds[0]);
    g_wake_write.store(fds[1]);
  }
  const std::size_t size = std::min(program.size(), g_program.size() - 1);
  std::memcpy(g_program.data(), program.data(), size);
  g_program[size] = '\0';
  struct sigaction action {};
  action.sa_handler = &on_interrupt;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&action.sa_mask, sig);
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    // A signal ignored by whoever started us (nohup, a background job's SIGINT) stays ignored.
    struct sigaction current {};
    if (::sigaction(sig, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) continue;
    ::sigaction(sig, &action, nullptr);
  }
}

bool is_executable_file(const std::filesystem::path& path) {
  std::error_code ec;
  return !path.empty() && std::filesystem::is_regular_file(path, ec) &&
         ::access(path.c_str(), X_OK) == 0;
}

std::filesystem::path find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr || *path == '\0') return {};
  return resolve_program(name, path);
}

std::filesystem::path find_on_path(const std::string& name, std::string_view search_path,
                                   const std::filesystem::path& cwd) {
  return resolve_program(name, search_path, cwd);
}

}  // namespace kj::runner
