#pragma once
/** @file Writing to a pipe whose reader may be gone without dying of SIGPIPE. */

#include <signal.h>

namespace kj {

/** Blocks SIGPIPE in the calling thread while it lives, so that a write to a pipe nobody reads
 *  fails with EPIPE (an error the caller reports) instead of killing the process; a SIGPIPE
 *  raised meanwhile is consumed before the old mask returns (one already pending before is
 *  left). Used around a child's stdin (kjudge::runner) and a --json pipe (write_output). */
class sigpipe_guard {
 public:
  sigpipe_guard() noexcept;
  sigpipe_guard(const sigpipe_guard&) = delete;
  sigpipe_guard& operator=(const sigpipe_guard&) = delete;
  ~sigpipe_guard();

 private:
  sigset_t m_pipe{};
  sigset_t m_old{};
  bool m_was_pending = false;
  bool m_blocked = false;
};

}  // namespace kj
