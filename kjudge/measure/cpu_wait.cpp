#include <kjudge/measure/cpu_wait.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace kj::measure::detail {

namespace {

/** The second number of a schedstat file's text ("<on-CPU ns> <run-queue ns> <slices>"). */
std::optional<std::uint64_t> run_delay_of(std::string_view text) {
  const auto skip_spaces = [&] {
    while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  };
  skip_spaces();
  const std::size_t end = text.find(' ');
  if (end == std::string_view::npos) return std::nullopt;
  text.remove_prefix(end);
  skip_spaces();
  std::uint64_t v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p == text.data()) return std::nullopt;
  return v;
}

/** The run-queue delay read from an open schedstat file (nullopt: the read failed, as for a
 *  thread that has ended). */
std::optional<std::uint64_t> read_delay(int fd) {
  char buf[96];
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return std::nullopt;
  return run_delay_of(std::string_view(buf, static_cast<std::size_t>(n)));
}

int open_read(const char* path) {
  return ::open(path, O_RDONLY | O_CLOEXEC);
}

/** Seconds of `clock` (CLOCK_PROCESS_CPUTIME_ID: every thread's CPU time; CLOCK_MONOTONIC). */
double seconds_of(clockid_t clock) {
  timespec t{};
  ::clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

}  // namespace

cpu_wait_monitor::cpu_wait_monitor(scope s) : m_scope(s) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof allowed, &allowed) == 0)
    m_cpus = std::max(1, CPU_COUNT(&allowed));
  // This thread's file first, either way: it says whether the kernel keeps the waits at all.
  m_self_fd = open_read("/proc/thread-self/schedstat");
  if (m_self_fd < 0)
    m_self_fd = open_read(fmt::format("/proc/self/task/{}/schedstat", ::gettid()).c_str());
  if (m_self_fd < 0) {
    m_reason = fmt::format(
        "the scheduler's per-thread statistics cannot be read "
        "(/proc/thread-self/schedstat: {})",
        std::strerror(errno));
    return;
  }
  if (!read_delay(m_self_fd)) {
    m_reason =
        "the scheduler's per-thread statistics hold no run-queue delay "
        "(/proc/thread-self/schedstat)";
    return;
  }
  if (m_scope == scope::process) {
    DIR* d = ::opendir("/proc/self/task");
    if (d == nullptr) {
      m_reason = fmt::format("the process's threads cannot be listed (/proc/self/task: {})",
                             std::strerror(errno));
      return;
    }
    m_dir = d;
  }
}

cpu_wait_monitor::~cpu_wait_monitor() {
  if (m_self_fd >= 0) ::close(m_self_fd);
  for (const auto& [tid, fd] : m_fds)
    if (fd >= 0) ::close(fd);
  if (m_dir != nullptr) ::closedir(static_cast<DIR*>(m_dir));
}

int cpu_wait_monitor::fd_of(pid_t tid) {
  if (const auto it = m_fds.find(tid); it != m_fds.end()) return it->second;
  const int fd = open_read(fmt::format("/proc/self/task/{}/schedstat", tid).c_str());
  m_fds.emplace(tid, fd);
  return fd;
}

bool cpu_wait_monitor::read(std::map<pid_t, std::uint64_t>& out, bool relist) {
  out.clear();
  if (m_scope == scope::this_thread) {
    const auto v = read_delay(m_self_fd);
    if (!v) return false;
    out.emplace(0, *v);
    return true;
  }
  if (relist || m_fds.empty()) {
    DIR* d = static_cast<DIR*>(m_dir);
    ::rewinddir(d);
    while (const dirent* e = ::readdir(d)) {
      pid_t tid = 0;
      const char* name = e->d_name;
      const auto [p, ec] = std::from_chars(name, name + std::strlen(name), tid);
      if (ec != std::errc() || *p != '\0') continue;  // "." and ".."
      const int fd = fd_of(tid);
      if (fd < 0) continue;  // ended between the listing and the open
      if (const auto v = read_delay(fd)) out.emplace(tid, *v);
    }
  } else {
    for (const auto& [tid, fd] : m_fds)
      if (const auto v = fd >= 0 ? read_delay(fd) : std::nullopt) out.emplace(tid, *v);
  }
  // The files of threads that have ended (a new thread may take a freed id: it opens afresh).
  for (auto it = m_fds.begin(); it != m_fds.end();) {
    if (out.contains(it->first)) {
      ++it;
      continue;
    }
    if (it->second >= 0) ::close(it->second);
    it = m_fds.erase(it);
  }
  return !out.empty();
}

void cpu_wait_monitor::start() {
  // The threads the last window's end listed: a thread started since is counted from 0 at the
  // end (its waits so far are a few scheduler wake-ups), and one listing a sample is enough.
  m_started = available() && read(m_before, false);
  m_cpu_s_before = seconds_of(CLOCK_PROCESS_CPUTIME_ID);
  m_wall_s_before = seconds_of(CLOCK_MONOTONIC);
}

std::optional<cpu_wait_window> cpu_wait_monitor::end() {
  if (!m_started) return std::nullopt;
  m_started = false;
  const double cpu_s = seconds_of(CLOCK_PROCESS_CPUTIME_ID) - m_cpu_s_before;
  const double wall_s = seconds_of(CLOCK_MONOTONIC) - m_wall_s_before;
  if (!read(m_now, true)) return std::nullopt;
  // The longest any one thread waited: waits are per thread and the sample's time is wall time
  // (two threads waiting 30% of a sample each are not a sample that waited 60% of its time).
  std::uint64_t ns = 0;
  for (const auto& [tid, delay] : m_now) {
    const auto it = m_before.find(tid);
    const std::uint64_t before = it == m_before.end() ? 0 : it->second;
    if (delay > before) ns = std::max(ns, delay - before);
  }
  cpu_wait_window w;
  w.wait_us = static_cast<double>(ns) / 1000.0;
  w.own_cpus = wall_s > 0 ? cpu_s / wall_s : 0.0;
  return w;
}

}  // namespace kj::measure::detail
