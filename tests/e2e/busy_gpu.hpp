#pragma once
// Another program on the GPU for the end-to-end tests: tests/e2e/kj_busy_gpu, run as a child.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace kj::test {

/** Another program with a context on the GPU (kj_busy_gpu), started with `mode` ("idle" or a
 *  launch period in µs) and killed when this goes. */
class busy_gpu {
 public:
  explicit busy_gpu(const char* mode) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    m_pid = ::fork();
    if (m_pid == 0) {
      ::dup2(fds[1], 1);
      ::close(fds[0]);
      ::close(fds[1]);
      ::execl(KJ_BUSY_GPU_EXE, KJ_BUSY_GPU_EXE, mode, "600", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(fds[1]);
    char buf[16] = {};
    const auto n = ::read(fds[0], buf, sizeof buf - 1);  // "ready\n" once its context exists
    m_ready = n > 0 && std::string(buf).rfind("ready", 0) == 0;
    ::close(fds[0]);
  }
  ~busy_gpu() {
    if (m_pid <= 0) return;
    ::kill(m_pid, SIGKILL);
    ::waitpid(m_pid, nullptr, 0);
  }
  busy_gpu(const busy_gpu&) = delete;
  busy_gpu& operator=(const busy_gpu&) = delete;
  [[nodiscard]] bool ready() const { return m_ready; }
  [[nodiscard]] pid_t pid() const { return m_pid; }

 private:
  pid_t m_pid = -1;
  bool m_ready = false;
};

}  // namespace kj::test
