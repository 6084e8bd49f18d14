#include <kjudge/core/sigpipe.hpp>

#include <pthread.h>

#include <cerrno>
#include <ctime>

namespace kj {

sigpipe_guard::sigpipe_guard() noexcept {
  sigemptyset(&m_pipe);
  sigaddset(&m_pipe, SIGPIPE);
  m_blocked = ::pthread_sigmask(SIG_BLOCK, &m_pipe, &m_old) == 0;
  sigset_t pending;
  sigemptyset(&pending);
  ::sigpending(&pending);
  m_was_pending = sigismember(&pending, SIGPIPE) == 1;
}

sigpipe_guard::~sigpipe_guard() {
  if (!m_blocked) return;
  if (!m_was_pending) {
    const timespec zero{};
    while (true) {
      const int got = ::sigtimedwait(&m_pipe, nullptr, &zero);
      if (got != SIGPIPE && !(got < 0 && errno == EINTR)) break;
    }
  }
  ::pthread_sigmask(SIG_SETMASK, &m_old, nullptr);
}

}  // namespace kj
