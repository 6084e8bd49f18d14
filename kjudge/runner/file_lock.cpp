#include <kjudge/core/text.hpp>
#include <kjudge/runner/file_lock.hpp>
#include <kjudge/runner/process.hpp>

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace kj::runner {

namespace fs = std::filesystem;

namespace {

// A lock file holds one short line; anything larger is not one of ours.
constexpr off_t max_lock_file_bytes = 4096;

std::string errno_text(int e) {
  return std::strerror(e);
}

// ---- Descriptors a forked child must not keep ----
// A lock (flock, OFD) belongs to the open file description, which fork() shares: a child forked
// without exec (a candidate's daemon) would keep the GPU's lock after its holder died without
// letting go (killed with its pool), and every later evaluation would wait for the daemon. So
// every descriptor that carries a lock of ours is registered here, and a fork() through libc
// (C's, Python's os.fork, multiprocessing) closes them in the child, in an atfork handler:
// closing only drops the child's copy, the holder keeps its lock. A process that forks by a raw
// clone system call, or holds more than k_fork_slots locks at once, keeps the copies.
constexpr int k_fork_slots = 16;
std::array<std::atomic<int>, k_fork_slots> g_lock_fds{};  // fd + 1; 0 is a free slot

void close_lock_fds_in_child() noexcept {
  for (auto& slot : g_lock_fds)
    if (const int v = slot.exchange(0); v > 0) ::close(v - 1);  // async-signal-safe
}

void register_lock_fd(int fd) noexcept {
  static const bool installed = ::pthread_atfork(nullptr, nullptr, close_lock_fds_in_child) == 0;
  if (!installed || fd < 0) return;
  for (auto& slot : g_lock_fds) {
    int free = 0;
    if (slot.compare_exchange_strong(free, fd + 1)) return;
  }
}

/** Closes `fd`, forgotten by the registry first (the number may be reused at once). */
void close_lock_fd(int fd) noexcept {
  for (auto& slot : g_lock_fds) {
    int mine = fd + 1;
    if (slot.compare_exchange_strong(mine, 0)) break;
  }
  ::close(fd);
}

/** What the holder wrote into the file: its first line, at most 200 bytes, made printable (the
 *  file is writable by every user, and the text goes into flags and the terminal). */
std::string read_holder(int fd) {
  std::array<char, 200> buf{};
  const ssize_t n = ::pread(fd, buf.data(), buf.size(), 0);
  if (n <= 0) return {};
  std::string s(buf.data(), static_cast<std::size_t>(n));
  if (const auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  for (char& c : s)
    if (c < 0x20 || c > 0x7e) c = '?';
  return s;
}

bool write_holder(int fd) {
  const std::string line = fmt::format("pid {} on {}\n", ::getpid(), host_name());
  return ::ftruncate(fd, 0) == 0 &&
         ::pwrite(fd, line.data(), line.size(), 0) == static_cast<ssize_t>(line.size());
}

struct opened {
  int fd = -1;
  bool writable = false;
};

/** Opens the lock file without following a symlink or blocking on a FIFO, and checks that it is
 *  a plain file of one link (a hard link would make this write into, and, had it been created
 *  here, widen the mode of, another file). The mode is widened only on a file created here. */
opened open_lock_file_once(const fs::path& path, std::string& error, int& err_out) {
  const int common = O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
  opened o;
  bool created = false;
  // Without O_CREAT first: fs.protected_regular refuses O_CREAT opens of another user's file in
  // a sticky directory such as /tmp, even one it could write.
  o.fd = ::open(path.c_str(), O_RDWR | common);
  int err = errno;
  if (o.fd < 0 && err == ENOENT) {
    o.fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | common, 0666);
    err = errno;
    if (o.fd >= 0) {
      created = true;
    } else if (err == EEXIST) {  // another process made it in between
      o.fd = ::open(path.c_str(), O_RDWR | common);
      err = errno;
    }
  }
  o.writable = o.fd >= 0;
  // A file this user may not write (another user's; a read-only mount; an immutable file):
  // flock needs only a descriptor.
  if (o.fd < 0 && (err == EACCES || err == EROFS || err == EPERM)) {
    o.fd = ::open(path.c_str(), O_RDONLY | common);
    if (o.fd < 0 && errno != ENOENT) err = errno;  // ENOENT: it could not be created at all
  }
  err_out = err;
  if (o.fd < 0) {
    error = fmt::format("cannot open the lock file {}: {}", path.string(), errno_text(err));
    return o;
  }
  struct stat st {};
  std::string wrong;
  if (::fstat(o.fd, &st) != 0)
    wrong = errno_text(errno);
  else if (!S_ISREG(st.st_mode))
    wrong = "not a regular file";
  else if (st.st_nlink != 1)
    wrong = fmt::format("a file with {} links", st.st_nlink);
  else if (st.st_size > max_lock_file_bytes)
    wrong = fmt::format("{} bytes long", st.st_size);
  if (!wrong.empty()) {
    error = fmt::format("refusing the lock file {}: {}", path.string(), wrong);
    ::close(o.fd);
    return {};
  }
  // open()'s mode is cut by the umask: widened so that other users can write it too.
  if (created) static_cast<void>(::fchmod(o.fd, 0666));
  return o;
}

opened open_lock_file(const fs::path& path, std::string& error) {
  // Another user's process may have just created the file and not yet widened its mode: a
  // refusal is tried again a few times.
  for (int attempt = 0;; ++attempt) {
    int err = 0;
    error.clear();
    auto o = open_lock_file_once(path, error, err);
    if (o.fd >= 0 || err != EACCES || attempt == 4) return o;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

/** The lock file at `path` is still the one `fd` locked: not removed or replaced meanwhile (a
 *  lock on a file no longer there would not exclude a process that creates the path anew). */
bool still_at_path(int fd, const fs::path& path) {
  struct stat held {
  }, now{};
  return ::fstat(fd, &held) == 0 && ::lstat(path.c_str(), &now) == 0 && held.st_dev == now.st_dev &&
         held.st_ino == now.st_ino;
}

/** One open-file-description lock (fcntl F_OFD_*: released when every descriptor of the open
 *  file is closed, so by a process's death too; independent of flock) on `len` bytes at `start`;
 *  false when another description holds a conflicting one (or the call fails). */
bool ofd_lock(int fd, short type, off_t start, off_t len) {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = start;
  fl.l_len = len;
  return ::fcntl(fd, F_OFD_SETLK, &fl) == 0;
}

/** A lock another open file description holds (OFD or POSIX) on bytes within [start, start +
 *  len), clipped to that range: {start, length}; nullopt when there is none. Which one, when
 *  there are several, is the kernel's choice, not the lowest. */
std::optional<std::pair<off_t, off_t>> some_lock_within(int fd, off_t start, off_t len) {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = start;
  fl.l_len = len;
  if (::fcntl(fd, F_OFD_GETLK, &fl) != 0 || fl.l_type == F_UNLCK) return std::nullopt;
  const off_t from = std::max(fl.l_start, start);
  const off_t to = fl.l_len == 0 ? start + len : std::min(fl.l_start + fl.l_len, start + len);
  return std::make_pair(from, std::max<off_t>(to - from, 1));
}

/** Where the waiters for an exclusive lock stand in line, so that they take it in order of
 *  arrival: the file `<lock>.queue` (0666, as the lock) holds the next ticket number; a waiter
 *  takes one under a lock on byte 0 and holds a lock on byte 1 + ticket while it waits. Those
 *  locks die with their process, so a waiter that is killed leaves the line by itself; a waiter
 *  is first when no byte before its own is locked. Best effort: when the file cannot be used the
 *  waiter polls the lock as one out of line, and a process that does not queue (an older kjudge)
 *  can still take the lock between two waiters. */
class waiting_line {
 public:
  /** Joins the line of the lock at `lock_path` when `join` is true. */
  waiting_line(const fs::path& lock_path, bool join) {
    if (!join) return;
    fs::path p = lock_path;
    p += ".queue";
    std::string error;
    const auto file = open_lock_file(p, error);
    if (file.fd < 0) return;
    if (!file.writable) {
      ::close(file.fd);
      return;
    }
    m_fd = file.fd;
    register_lock_fd(m_fd);
    m_owner = ::getpid();
    // The counter's guard is held for a few system calls; a holder that keeps it longer (not
    // kjudge), or a file system without these locks, leaves this waiter out of line.
    bool guarded = false;
    for (int i = 0; i < 200; ++i) {
      if ((guarded = ofd_lock(m_fd, F_WRLCK, 0, 1))) break;
      if (errno != EAGAIN && errno != EACCES) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!guarded) {
      leave();
      return;
    }
    std::array<char, 32> buf{};
    const ssize_t n = ::pread(m_fd, buf.data(), buf.size() - 1, 0);
    char* end = nullptr;
    long long next = n > 0 ? std::strtoll(buf.data(), &end, 10) : 0;
    if (next < 0 || next > kMaxTicket) next = 0;  // not a counter of ours: start again
    // A ticket still held (a counter reset, by hand or above) is skipped.
    for (int i = 0; i < 64 && m_ticket < 0; ++i, ++next)
      if (ofd_lock(m_fd, F_WRLCK, 1 + next, 1)) m_ticket = next;
    if (m_ticket >= 0) {
      const std::string text = fmt::format("{}\n", next);
      if (::ftruncate(m_fd, 0) != 0 ||
          ::pwrite(m_fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
        m_ticket = -1;  // a line whose counter cannot move is not kept
    }
    ofd_lock(m_fd, F_UNLCK, 0, 1);
    if (m_ticket < 0) leave();
  }
  waiting_line(const waiting_line&) = delete;
  waiting_line& operator=(const waiting_line&) = delete;
  ~waiting_line() { leave(); }

  [[nodiscard]] bool joined() const noexcept { return m_ticket >= 0; }
  /** No waiter that arrived earlier is still in line (true when not in line at all). */
  [[nodiscard]] bool first() const {
    return !joined() || m_ticket == 0 || !some_lock_within(m_fd, 1, m_ticket);
  }
  /** How many waiters that arrived earlier are still in line (locked bytes before this one's;
   *  at most 1000 looked at). */
  [[nodiscard]] int ahead() const {
    if (!joined() || m_ticket == 0) return 0;  // (a length of 0 would mean "to the end")
    int count = 0;
    std::vector<std::pair<off_t, off_t>> ranges{{1, m_ticket}};  // {start, length} to look in
    for (int looks = 0; !ranges.empty() && looks < 1000; ++looks) {
      const auto [start, len] = ranges.back();
      ranges.pop_back();
      const auto found = some_lock_within(m_fd, start, len);
      if (!found) continue;
      ++count;
      if (found->first > start) ranges.emplace_back(start, found->first - start);
      const off_t after = found->first + found->second;
      if (after < start + len) ranges.emplace_back(after, start + len - after);
    }
    return count;
  }
  void leave() noexcept {
    if (m_fd < 0) return;
    if (::getpid() != m_owner) {  // a forked child's copy: closed at the fork, the ticket not ours
      m_fd = -1;
      m_ticket = -1;
      return;
    }
    if (m_ticket >= 0) ofd_lock(m_fd, F_UNLCK, 1 + m_ticket, 1);
    close_lock_fd(std::exchange(m_fd, -1));
    m_ticket = -1;
  }

 private:
  static constexpr long long kMaxTicket = 1LL << 60;
  int m_fd = -1;
  pid_t m_owner = -1;
  long long m_ticket = -1;
};

}  // namespace

file_lock file_lock::acquire(const fs::path& path, std::chrono::milliseconds limit) {
  return take(path, false, limit, true);
}

file_lock file_lock::try_now(const fs::path& path) {
  // 20 ms, not one try: a waiter's look at the lock (take()) holds it for an instant.
  return take(path, false, std::chrono::milliseconds(20), false);
}

file_lock file_lock::mark(const fs::path& path) {
  // others_marked() holds the file exclusively for an instant while it looks: waited for, up to
  // 100 ms, never blocking on a holder that would not let go.
  auto lock = take(path, true, std::chrono::milliseconds(100), false);
  // Its time says a mark was taken since a look that saw none (best effort: the file is 0666).
  if (lock.held()) static_cast<void>(::futimens(lock.m_fd, nullptr));
  return lock;
}

file_lock file_lock::take(const fs::path& path, bool shared, std::chrono::milliseconds limit,
                          bool in_line) {
  using clock = std::chrono::steady_clock;
  file_lock lock;
  auto file = open_lock_file(path, lock.m_error);
  if (file.fd < 0) return lock;
  int fd = file.fd;
  register_lock_fd(fd);  // from the start: a child forked before the lock is had must not share it
  const auto start = clock::now();
  const auto deadline = start + limit;
  bool waited = false;
  // Exclusive takers stand in line, so the lock goes in order of arrival; one that is not first
  // does not try it (shared marks do not queue: they wait 100 ms at most; nor does try_now()).
  waiting_line line(path, in_line && !shared);
  // A ticket can outlive its waiter (a child it forked by a raw clone keeps the description:
  // libc's fork closes the copy), and an earlier waiter may be stuck: one that is not first looks
  // at the lock every 250 ms, and takes it once it has found it free at every look for a second on
  // end (looks more than 500 ms apart, as after this waiter was stopped itself, start the second
  // again).
  // When the lock was first found free in the current run of looks; `never` when it was not (a
  // time point, not an optional: GCC 12 took the optional's payload for read uninitialised).
  constexpr auto never = clock::time_point::max();
  auto free_since = never;
  auto last_look = start;
  auto next_look = start;
  for (int replaced = 0;;) {
    int e = EWOULDBLOCK;  // not first in line and not looking: as if the lock were held
    bool seen_free = false;
    const bool first = line.first();
    if (first || clock::now() >= next_look) {
      e = ::flock(fd, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) == 0 ? 0 : errno;
      if (!first) {
        const auto now = clock::now();
        if (now - last_look > std::chrono::milliseconds(500)) free_since = never;
        last_look = now;
        next_look = now + std::chrono::milliseconds(250);
        if (e != 0) {
          free_since = never;
        } else if (free_since == never || now - free_since < std::chrono::seconds(1)) {
          if (free_since == never) free_since = now;
          static_cast<void>(::flock(fd, LOCK_UN));  // the line goes first
          e = EWOULDBLOCK;
          seen_free = true;
        }
      }
    }
    if (e == 0) {
      if (still_at_path(fd, path) || replaced == 10) break;
      // Removed or replaced while this waited: the lock that counts is on the file there now.
      close_lock_fd(fd);
      ++replaced;
      free_since = never;
      file = open_lock_file(path, lock.m_error);
      if (file.fd < 0) return lock;
      fd = file.fd;
      register_lock_fd(fd);
      continue;
    }
    if (e == EINTR) continue;
    if (e != EWOULDBLOCK) {
      lock.m_error = fmt::format("cannot lock {}: {}", path.string(), errno_text(e));
      close_lock_fd(fd);
      return lock;
    }
    // Read again each time: the holder seen last is the one that made this wait end or time out
    // (none when this look found the lock free: a line left by a killed holder names no one).
    if (seen_free)
      lock.m_holder.clear();
    else if (!shared)
      if (auto h = read_holder(fd); !h.empty()) lock.m_holder = std::move(h);
    if (clock::now() >= deadline) {
      lock.m_waited = clock::now() - start;
      lock.m_timed_out = true;
      const int ahead = line.ahead();
      const std::string before =
          ahead == 0 ? std::string() : fmt::format("{} waiting before this one", ahead);
      if (lock.m_holder.empty() && ahead > 0)  // perhaps free, but not this one's turn yet
        lock.m_error = fmt::format("{} after {}", before, seconds_text(lock.m_waited.count()));
      else
        lock.m_error =
            fmt::format("{} still held it after {}{}",
                        lock.m_holder.empty() ? "another process" : lock.m_holder,
                        seconds_text(lock.m_waited.count()), ahead == 0 ? "" : ", with " + before);
      close_lock_fd(fd);
      return lock;
    }
    waited = true;
    // Holds last seconds; 5 ms between looks is a small fraction of that.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  line.leave();
  if (waited)
    lock.m_waited = clock::now() - start;
  else
    lock.m_holder.clear();
  // Shared holders are many: none names itself in the file.
  lock.m_wrote_holder = !shared && file.writable && write_holder(fd);
  lock.m_fd = fd;
  lock.m_owner = ::getpid();
  return lock;
}

bool file_lock::others_marked(const fs::path& path) {
  std::string error;
  const auto file = open_lock_file(path, error);
  if (file.fd < 0) return false;
  const bool marked = ::flock(file.fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  if (!marked) static_cast<void>(::flock(file.fd, LOCK_UN));  // at once: a mark() may be waiting
  ::close(file.fd);
  return marked;
}

file_lock::file_lock(file_lock&& other) noexcept
    : m_fd(std::exchange(other.m_fd, -1)),
      m_owner(other.m_owner),
      m_wrote_holder(other.m_wrote_holder),
      m_timed_out(other.m_timed_out),
      m_waited(other.m_waited),
      m_holder(std::move(other.m_holder)),
      m_error(std::move(other.m_error)) {}

file_lock& file_lock::operator=(file_lock&& other) noexcept {
  if (this != &other) {
    release();
    m_fd = std::exchange(other.m_fd, -1);
    m_owner = other.m_owner;
    m_wrote_holder = other.m_wrote_holder;
    m_timed_out = other.m_timed_out;
    m_waited = other.m_waited;
    m_holder = std::move(other.m_holder);
    m_error = std::move(other.m_error);
  }
  return *this;
}

file_lock::~file_lock() {
  release();
}

void file_lock::release() noexcept {
  if (m_fd < 0) return;
  if (::getpid() != m_owner) {
    // A child forked without exec that runs on through this code: its copy was closed at the
    // fork (the number may name another file now), and unlocking the shared description would
    // take the holder's lock away.
    m_fd = -1;
    m_wrote_holder = false;
    return;
  }
  // A waiter that reads the file after this must not name this process.
  if (m_wrote_holder && ::ftruncate(m_fd, 0) != 0) {
    // best effort: a holder line left names a process that no longer holds the lock
  }
  // Explicitly: closing drops the lock only when no forked child kept a copy of the descriptor.
  static_cast<void>(::flock(m_fd, LOCK_UN));
  close_lock_fd(std::exchange(m_fd, -1));
  m_wrote_holder = false;
}

fs::path lock_dir() {
  const char* d = std::getenv("KJUDGE_LOCK_DIR");
  return d != nullptr && *d != '\0' ? fs::path(d) : fs::path("/tmp");
}

fs::path gpu_lock_path(std::string_view uuid) {
  std::string name = "kjudge-gpu-";
  for (const char c : uuid) {
    const bool ok =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    name += ok ? c : '_';
  }
  return lock_dir() / (name + ".lock");
}

fs::path cpu_lock_path() {
  return lock_dir() / "kjudge-cpu.lock";
}

fs::path outside_mark_path(const fs::path& lock) {
  fs::path p = lock;
  p += ".outside";
  return p;
}

bool outside_marks::look() {
  const bool now = file_lock::others_marked(m_marks);  // makes the file if missing
  std::error_code ec;
  const auto stamp = fs::last_write_time(m_marks, ec);
  const bool since = m_looked && !ec && m_first && stamp != *m_first;
  if (!m_looked && !ec) m_first = stamp;
  m_looked = true;
  return now || since;
}

}  // namespace kj::runner
