#pragma once
/** @file An exclusive advisory lock on a file (flock), held by an open descriptor: the kernel
 *  drops it when the holder lets go or dies in any way (a crash, SIGKILL, a timeout), so no lock
 *  outlives its process. A child forked through libc without exec (a candidate's daemon) does not
 *  keep it: an atfork handler closes the child's copies of the descriptors of every lock held or
 *  being taken, and release() in such a child touches nothing of the holder's. Used to give one
 *  evaluation at a time a GPU: another process's kernels while a side is timed move its figures,
 *  without anything in its samples saying so. POSIX only. */

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace kj::runner {

class file_lock {
 public:
  /** Takes the lock on `path`, waiting at most `limit` for another holder to let go and for the
   *  waiters that came first to have had their turn (waiters stand in line in `path`.queue and
   *  take the lock in order of arrival; docs/methodology.md says how far that holds). A missing
   *  file is created, writable by every user (so that other users' processes share it); an
   *  existing one is opened as it is, read-only where this user may not write it (flock needs
   *  no more). Anything but a plain file of one link and a few bytes there (a symlink, a FIFO, a
   *  hard link to another file) is refused, never followed, written or waited on. Never throws
   *  for a lock that cannot be had: held() is then false and error() says why (the file could
   *  not be used, or the limit passed while `holder()` still had it or earlier waiters were
   *  still in line). The holder writes
   *  "pid N on host" into the file, when it may, for waiters to name it. */
  static file_lock acquire(const std::filesystem::path& path, std::chrono::milliseconds limit);

  /** The exclusive lock on `path` now (tried for 20 ms), out of the line of waiters (for a caller
   * that goes on whether or not it has the lock: taking a free lock then keeps a waiter from
   *  measuring beside it). Same file rules as acquire(). */
  static file_lock try_now(const std::filesystem::path& path);

  /** A shared lock on `path` (same rules), taken within 100 ms (others_marked() holds the
   *  file for an instant while it looks) or not at all: the mark of a process that works outside
   * the exclusive lock, which the exclusive holder can see (others_marked). Taking it also sets the
   *  file's modification time, so a mark taken and dropped between two looks shows too. */
  static file_lock mark(const std::filesystem::path& path);
  /** True while some process holds a shared mark() on `path`. */
  [[nodiscard]] static bool others_marked(const std::filesystem::path& path);

  file_lock() = default;
  file_lock(file_lock&& other) noexcept;
  file_lock& operator=(file_lock&& other) noexcept;
  file_lock(const file_lock&) = delete;
  file_lock& operator=(const file_lock&) = delete;
  ~file_lock();

  [[nodiscard]] bool held() const noexcept { return m_fd >= 0; }
  /** Time spent waiting for another holder (0 when the lock was free at once). */
  [[nodiscard]] std::chrono::duration<double> waited() const noexcept { return m_waited; }
  /** Who held the lock while this one waited, as that holder wrote it ("pid 123 on host", made
   *  printable); empty when it was free, or the holder could not write the file. */
  [[nodiscard]] const std::string& holder() const noexcept { return m_holder; }
  [[nodiscard]] const std::string& error() const noexcept { return m_error; }
  /** Not held because another process still held it, or earlier waiters were still in line,
   *  when the limit passed (not because the file could not be used). */
  [[nodiscard]] bool timed_out() const noexcept { return m_timed_out; }
  /** Lets go now (clearing the holder line it wrote, unlocking, closing); the destructor does
   *  the same. */
  void release() noexcept;

 private:
  /** acquire(), try_now() (exclusive) and mark() (shared): the one polling loop; `in_line`:
   *  an exclusive taker stands in the line of waiters. */
  static file_lock take(const std::filesystem::path& path, bool shared,
                        std::chrono::milliseconds limit, bool in_line);

  int m_fd = -1;
  pid_t m_owner = -1;  ///< the process that took it (a forked child's copy is not the lock)
  bool m_wrote_holder = false;
  bool m_timed_out = false;
  std::chrono::duration<double> m_waited{0};
  std::string m_holder;
  std::string m_error;
};

/** Where kjudge's locks between processes live: `$KJUDGE_LOCK_DIR`, else /tmp (fixed, not
 *  $TMPDIR, so that every user and job of the machine finds the same files; containers that
 *  share a GPU need a shared directory in KJUDGE_LOCK_DIR). */
[[nodiscard]] std::filesystem::path lock_dir();

/** Where evaluations on the GPU with this UUID take turns: lock_dir() holds
 *  kjudge-gpu-<uuid>.lock; characters of `uuid` outside [A-Za-z0-9-] become '_'. */
[[nodiscard]] std::filesystem::path gpu_lock_path(std::string_view uuid);

/** Where timed evaluations on the CPU (`--device cpu`) take turns: lock_dir() holds
 *  kjudge-cpu.lock. */
[[nodiscard]] std::filesystem::path cpu_lock_path();

/** The file whose shared marks say that a process runs on the GPU of `lock` without holding it
 *  (it gave up waiting): `lock` with ".outside" appended. */
[[nodiscard]] std::filesystem::path outside_mark_path(const std::filesystem::path& lock);

/** How the holder of `lock` looks for work outside it during a measurement (an evaluation's
 *  timing, the roofline's ceilings): a mark held at a look, or taken since the first look (the
 *  mark file's time moved). */
class outside_marks {
 public:
  explicit outside_marks(const std::filesystem::path& lock) : m_marks(outside_mark_path(lock)) {}
  /** True when a mark is held now or, after the first look, one was taken since it. */
  [[nodiscard]] bool look();

 private:
  std::filesystem::path m_marks;
  bool m_looked = false;
  std::optional<std::filesystem::file_time_type> m_first;  ///< the file's time at the first look
};

}  // namespace kj::runner
