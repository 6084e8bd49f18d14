#pragma once
// What the tests read of other processes: their state in /proc, and pid files their children
// write. Shared by the runner's unit tests and the end-to-end tests.

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace kj::test {

/** The state letter of /proc/PID/stat ('R', 'S', 'T', 'Z', ...); 0 where the process is gone. */
inline char process_state(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto close_paren = line.rfind(')');
  return close_paren != std::string::npos && close_paren + 2 < line.size() ? line[close_paren + 2]
                                                                           : '\0';
}

/** Gone, or a zombie (killed, not reaped yet by its new parent). */
inline bool process_gone(pid_t pid) {
  const char state = process_state(pid);
  return state == '\0' || state == 'Z';
}

/** Stopped (SIGSTOP). */
inline bool process_stopped(pid_t pid) {
  return process_state(pid) == 'T';
}

/** Waits up to `limit` for `pid` to be gone. */
inline bool gone_within(pid_t pid, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!process_gone(pid)) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

/** The pids in `file` (written whole by a child), once it exists; empty after `limit`. */
inline std::vector<pid_t> read_pids(const std::filesystem::path& file,
                                    std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (true) {
    std::ifstream in(file);
    std::vector<pid_t> pids;
    for (pid_t p = 0; in >> p;) pids.push_back(p);
    if (!pids.empty() || std::chrono::steady_clock::now() >= until) return pids;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace kj::test
