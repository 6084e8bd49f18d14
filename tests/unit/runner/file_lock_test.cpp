// The lock that gives one evaluation at a time a GPU: free, contended, waited for, released by a
// holder that dies or lets go while a forked child keeps its descriptor, the files it refuses,
// and the shared marks of work outside it.

#include <kjudge/runner/file_lock.hpp>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace kj::runner {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

/** A child process that is killed and reaped when this goes, whatever the test did. */
class child_guard {
 public:
  explicit child_guard(pid_t pid) : m_pid(pid) {}
  ~child_guard() { kill_and_reap(); }
  /** The child was reaped elsewhere: nothing to kill (its pid may be reused). */
  void forget() { m_pid = -1; }
  child_guard(const child_guard&) = delete;
  child_guard& operator=(const child_guard&) = delete;
  void kill_and_reap() {
    if (m_pid <= 0) return;
    ::kill(m_pid, SIGKILL);
    int status = 0;
    ::waitpid(m_pid, &status, 0);
    m_pid = -1;
  }

 private:
  pid_t m_pid;
};

class FileLock : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() /
            ("kj-file-lock-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }
  [[nodiscard]] fs::path path() const { return m_dir / "gpu.lock"; }
  static std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  /** Forks a child that takes the lock on path() and then sleeps, keeping it. Returns once the
   *  lock file names the child. */
  [[nodiscard]] pid_t holder_child() const {
    const pid_t child = ::fork();
    if (child == 0) {
      auto lock = file_lock::acquire(path(), 5s);
      if (!lock.held()) ::_exit(1);
      for (;;) ::pause();
    }
    const std::string line = "pid " + std::to_string(child) + " on ";
    for (int i = 0; i < 500 && read(path()).rfind(line, 0) != 0; ++i)
      std::this_thread::sleep_for(10ms);
    return child;
  }
  fs::path m_dir;
};

std::string self_pid() {
  return "pid " + std::to_string(::getpid()) + " on ";
}

TEST_F(FileLock, a_free_lock_is_taken_at_once_and_names_its_holder) {
  {
    const auto lock = file_lock::acquire(path(), 1s);
    ASSERT_TRUE(lock.held()) << lock.error();
    EXPECT_EQ(lock.waited().count(), 0.0);
    EXPECT_TRUE(lock.holder().empty());
    EXPECT_EQ(read(path()).rfind(self_pid(), 0), 0u) << read(path());
    // Any user may take it after this one: the file it created is writable by all.
    struct stat st {};
    ASSERT_EQ(::stat(path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0666u);
  }
  // Its destructor let go, and cleared its line so that no waiter names a process that is gone.
  EXPECT_EQ(read(path()), "");
  const auto again = file_lock::acquire(path(), 0ms);
  EXPECT_TRUE(again.held()) << again.error();
}

TEST_F(FileLock, a_held_lock_is_not_had_within_the_limit_and_says_who_holds_it) {
  const auto first = file_lock::acquire(path(), 1s);
  ASSERT_TRUE(first.held()) << first.error();
  // Locks belong to open files, so a second open in this process contends like another process.
  const auto t0 = std::chrono::steady_clock::now();
  const auto second = file_lock::acquire(path(), 150ms);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
  EXPECT_FALSE(second.held());
  EXPECT_GE(second.waited().count(), 0.15);
  EXPECT_GE(took.count(), 0.15);
  EXPECT_LT(took.count(), 2.0);
  EXPECT_EQ(second.holder().rfind(self_pid(), 0), 0u) << second.holder();
  EXPECT_NE(second.error().find("still held it after"), std::string::npos) << second.error();
}

TEST_F(FileLock, a_lock_file_replaced_while_waiting_is_locked_anew) {
  // A holds the file; B waits on it; the file is removed and made again, and C takes the new
  // one (with flock alone, as a process that does not stand in line: B is first in it); A lets
  // go of the old. B must not take the old file's lock for the GPU's: C holds it.
  auto a = file_lock::acquire(path(), 1s);
  ASSERT_TRUE(a.held()) << a.error();
  file_lock b;
  std::thread waiter([&b, this] { b = file_lock::acquire(path(), 600ms); });
  std::this_thread::sleep_for(100ms);
  fs::remove(path());
  const int c = ::open(path().c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  ASSERT_GE(c, 0);
  ASSERT_EQ(::flock(c, LOCK_EX | LOCK_NB), 0);
  a.release();
  waiter.join();
  EXPECT_FALSE(b.held());
  EXPECT_TRUE(b.timed_out()) << b.error();
  ::close(c);
  // Once C lets go, the new file's lock is had.
  EXPECT_TRUE(file_lock::acquire(path(), 1s).held());
}

TEST_F(FileLock, timed_out_tells_a_busy_lock_from_an_unusable_file) {
  const auto first = file_lock::acquire(path(), 1s);
  ASSERT_TRUE(first.held());
  EXPECT_FALSE(first.timed_out());
  EXPECT_TRUE(file_lock::acquire(path(), 0ms).timed_out());
  const auto missing = file_lock::acquire(m_dir / "no-such-dir" / "gpu.lock", 0ms);
  EXPECT_FALSE(missing.held());
  EXPECT_FALSE(missing.timed_out());
}

TEST_F(FileLock, a_waiter_takes_the_lock_when_the_holder_lets_go) {
  auto first = file_lock::acquire(path(), 1s);
  ASSERT_TRUE(first.held()) << first.error();
  std::thread releaser([&first] {
    std::this_thread::sleep_for(200ms);
    first.release();
  });
  const auto second = file_lock::acquire(path(), 10s);
  releaser.join();
  ASSERT_TRUE(second.held()) << second.error();
  EXPECT_GE(second.waited().count(), 0.15);
  EXPECT_LT(second.waited().count(), 5.0);
  EXPECT_EQ(second.holder().rfind(self_pid(), 0), 0u) << second.holder();
  EXPECT_FALSE(first.held());
}

/** The number of tickets the line of `lock` has given (its counter; 0 before any). */
long long tickets_given(const fs::path& lock) {
  fs::path q = lock;
  q += ".queue";
  std::ifstream in(q);
  long long n = 0;
  in >> n;
  return n;
}

/** Forks a child that waits up to `limit` for the lock on `lock`; once it has it, the child
 *  writes `id` to `out`, keeps the lock `hold` long and exits 0 (1 when it never had it).
 *  Returns once the child stands in line (the line's counter has moved, its guard is free). */
pid_t waiting_child(const fs::path& lock, char id, int out, std::chrono::milliseconds limit,
                    std::chrono::milliseconds hold) {
  const long long before = tickets_given(lock);
  const pid_t child = ::fork();
  if (child == 0) {
    auto l = file_lock::acquire(lock, limit);
    if (!l.held()) ::_exit(1);
    static_cast<void>(::write(out, &id, 1));
    std::this_thread::sleep_for(hold);
    ::_exit(0);
  }
  for (int i = 0; i < 5000 && tickets_given(lock) == before; ++i) std::this_thread::sleep_for(2ms);
  if (tickets_given(lock) == before) ADD_FAILURE() << "waiter " << id << " not in line after 10 s";
  // The counter is written under a lock on its byte 0: that let go too, the child only waits.
  fs::path q = lock;
  q += ".queue";
  const int fd = ::open(q.c_str(), O_RDONLY | O_CLOEXEC);
  for (int i = 0; fd >= 0 && i < 5000; ++i) {
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_len = 1;
    if (::fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type == F_UNLCK) break;
    std::this_thread::sleep_for(2ms);
  }
  if (fd >= 0) ::close(fd);
  return child;
}

TEST_F(FileLock, waiters_take_the_lock_in_order_of_arrival) {
  auto held = file_lock::acquire(path(), 1s);
  ASSERT_TRUE(held.held()) << held.error();
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::vector<pid_t> children;
  for (const char id : std::string("abcde")) {
    children.push_back(waiting_child(path(), id, fds[1], 20s, 30ms));
    std::this_thread::sleep_for(20ms);  // each polls a few times before the next arrives
  }
  std::vector<std::unique_ptr<child_guard>> guards;
  for (const pid_t c : children) guards.push_back(std::make_unique<child_guard>(c));
  EXPECT_EQ(tickets_given(path()), 6);  // this process's, then one a child
  held.release();
  std::string order;
  for (const pid_t c : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(c, &status, 0), c);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  for (auto& g : guards) g->forget();  // reaped above
  ::close(fds[1]);
  char buf[16] = {};
  const auto n = ::read(fds[0], buf, sizeof buf);
  ::close(fds[0]);
  order.assign(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
  EXPECT_EQ(order, "abcde");
}

TEST_F(FileLock, a_waiter_that_leaves_the_line_holds_no_one_up) {
  // The first in line is killed, the second gives up: the third has the lock once it is free.
  auto held = file_lock::acquire(path(), 1s);
  ASSERT_TRUE(held.held()) << held.error();
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  child_guard killed(waiting_child(path(), 'k', fds[1], 20s, 0ms));
  const pid_t gives_up = waiting_child(path(), 'g', fds[1], 100ms, 0ms);
  child_guard third(waiting_child(path(), 't', fds[1], 20s, 0ms));
  killed.kill_and_reap();
  int status = 0;
  ASSERT_EQ(::waitpid(gives_up, &status, 0), gives_up);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1);  // it timed out in line
  held.release();
  char got = 0;
  pollfd p{fds[0], POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10000), 1) << "no waiter took the lock within 10 s";
  EXPECT_EQ(::read(fds[0], &got, 1), 1);
  EXPECT_EQ(got, 't');
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_F(FileLock, a_line_stuck_in_front_is_passed_once_the_lock_stays_free) {
  // The waiter in front holds its ticket but never looks (stopped, as a ticket kept by a child
  // forked without exec would be): the one behind takes the free lock after about a second.
  auto held = file_lock::acquire(path(), 1s);
  ASSERT_TRUE(held.held()) << held.error();
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t stuck = waiting_child(path(), 's', fds[1], 60s, 0ms);
  child_guard guard(stuck);
  ASSERT_EQ(::kill(stuck, SIGSTOP), 0);
  held.release();
  const auto behind = file_lock::acquire(path(), 10s);
  ASSERT_TRUE(behind.held()) << behind.error();
  EXPECT_GE(behind.waited().count(), 0.95);
  EXPECT_LT(behind.waited().count(), 5.0);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_F(FileLock, a_waiter_behind_others_says_so_when_it_times_out) {
  auto held = file_lock::acquire(path(), 1s);
  ASSERT_TRUE(held.held()) << held.error();
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  child_guard ahead(waiting_child(path(), 'a', fds[1], 20s, 3s));
  const auto late = file_lock::acquire(path(), 50ms);
  EXPECT_TRUE(late.timed_out());
  EXPECT_NE(late.error().find("still held it after"), std::string::npos) << late.error();
  EXPECT_NE(late.error().find(", with 1 waiting before this one"), std::string::npos)
      << late.error();
  // Once the waiter in line holds it, a try without waiting does not have it either.
  held.release();
  char got = 0;
  pollfd p{fds[0], POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10000), 1) << "the waiter did not take the lock within 10 s";
  EXPECT_EQ(::read(fds[0], &got, 1), 1);
  EXPECT_FALSE(file_lock::acquire(path(), 0ms).held());
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_F(FileLock, a_try_without_waiting_does_not_jump_the_line_but_try_now_does) {
  // The lock free, a waiter in line that has not looked yet (stopped): acquire(0 ms) leaves it
  // to the waiter and says so; try_now(), for a caller that goes on anyway, takes it.
  auto held = file_lock::acquire(path(), 1s);
  ASSERT_TRUE(held.held()) << held.error();
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t waiting = waiting_child(path(), 'w', fds[1], 60s, 0ms);
  child_guard guard(waiting);
  ASSERT_EQ(::kill(waiting, SIGSTOP), 0);
  held.release();
  const auto polite = file_lock::acquire(path(), 0ms);
  EXPECT_FALSE(polite.held());
  EXPECT_TRUE(polite.timed_out());
  EXPECT_EQ(polite.error().rfind("1 waiting before this one after ", 0), 0u) << polite.error();
  const auto now = file_lock::try_now(path());
  EXPECT_TRUE(now.held()) << now.error();
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_F(FileLock, a_holder_that_is_killed_lets_go) {
  child_guard child(holder_child());
  EXPECT_FALSE(file_lock::acquire(path(), 50ms).held());
  child.kill_and_reap();
  const auto lock = file_lock::acquire(path(), 5s);
  EXPECT_TRUE(lock.held()) << lock.error();
}

TEST_F(FileLock, release_lets_go_even_where_a_forked_child_keeps_the_descriptor) {
  auto lock = file_lock::acquire(path(), 1s);
  ASSERT_TRUE(lock.held()) << lock.error();
  const pid_t child = ::fork();  // no exec: O_CLOEXEC does not close the child's copy
  if (child == 0) {
    for (;;) ::pause();
  }
  child_guard guard(child);
  lock.release();
  const auto next = file_lock::acquire(path(), 0ms);
  EXPECT_TRUE(next.held()) << next.error();
}

TEST_F(FileLock, a_child_forked_by_a_holder_that_dies_without_letting_go_does_not_keep_it) {
  // A holder (a pooled worker killed with its pool) forks a daemon without exec, then dies
  // without release(): the daemon's copy of the descriptor was closed at the fork, so the lock
  // goes with the holder.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t holder = ::fork();
  if (holder == 0) {
    auto lock = file_lock::acquire(path(), 5s);
    if (!lock.held()) ::_exit(1);
    const pid_t daemon = ::fork();
    if (daemon == 0) {
      for (;;) ::pause();
    }
    if (::write(fds[1], &daemon, sizeof daemon) != static_cast<ssize_t>(sizeof daemon)) ::_exit(2);
    ::_exit(0);  // no release(), no destructor: as a SIGKILL leaves it
  }
  child_guard holder_guard(holder);
  pid_t daemon = -1;
  ASSERT_EQ(::read(fds[0], &daemon, sizeof daemon), static_cast<ssize_t>(sizeof daemon));
  ASSERT_GT(daemon, 0);
  int status = -1;
  ASSERT_EQ(::waitpid(holder, &status, 0), holder);
  holder_guard.forget();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ASSERT_EQ(::kill(daemon, 0), 0) << "the daemon should still run";
  const auto next = file_lock::acquire(path(), 2s);
  EXPECT_TRUE(next.held()) << next.error();
  EXPECT_LT(next.waited().count(), 1.0);
  ::kill(daemon, SIGKILL);  // not our child: reaped by init (or this test's subreaper)
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_F(FileLock, a_forked_child_that_releases_its_copy_leaves_the_holder_its_lock) {
  // A child forked without exec that runs on through the holder's code (a candidate's fork that
  // returns into the worker) and lets its copy go must not unlock the description it shared.
  auto lock = file_lock::acquire(path(), 1s);
  ASSERT_TRUE(lock.held()) << lock.error();
  const pid_t child = ::fork();
  if (child == 0) {
    lock.release();
    ::_exit(0);
  }
  int status = -1;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_FALSE(file_lock::try_now(path()).held()) << "the child's release unlocked the holder's";
  EXPECT_EQ(read(path()).rfind(self_pid(), 0), 0u) << read(path());  // still names its holder
  lock.release();
  EXPECT_TRUE(file_lock::try_now(path()).held());
}

TEST_F(FileLock, another_users_file_it_may_not_write_still_locks) {
  { std::ofstream(path()) << "pid 1 on elsewhere\n"; }
  ASSERT_EQ(::chmod(path().c_str(), 0444), 0);
  ASSERT_EQ(::chmod(m_dir.c_str(), 0755), 0);
  // Root writes any file: the check runs in a child that is "nobody" then.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(3);
    if (::access(path().c_str(), W_OK) == 0) ::_exit(4);
    const auto lock = file_lock::acquire(path(), 1s);
    if (!lock.held()) ::_exit(5);
    if (read(path()) != "pid 1 on elsewhere\n") ::_exit(6);  // not writable: left as it was
    if (file_lock::acquire(path(), 0ms).held()) ::_exit(7);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: no nobody; 4: writable; 5: not held; 6: written; "
                                       "7: held twice";
}

TEST_F(FileLock, what_is_not_a_plain_lock_file_is_refused_not_followed_written_or_waited_on) {
  const auto missing = file_lock::acquire(m_dir / "no-such-dir" / "gpu.lock", 1s);
  EXPECT_FALSE(missing.held());
  EXPECT_NE(missing.error().find("cannot open the lock file"), std::string::npos)
      << missing.error();
  // A symlink planted where the lock goes.
  fs::create_symlink(m_dir / "elsewhere", path());
  EXPECT_FALSE(file_lock::acquire(path(), 1s).held());
  EXPECT_FALSE(fs::exists(m_dir / "elsewhere"));
  fs::remove(path());
  // A FIFO: opening one for reading would block until a writer came.
  ASSERT_EQ(::mkfifo(path().c_str(), 0644), 0);
  const auto t0 = std::chrono::steady_clock::now();
  const auto fifo = file_lock::acquire(path(), 1s);
  EXPECT_FALSE(fifo.held());
  EXPECT_NE(fifo.error().find("not a regular file"), std::string::npos) << fifo.error();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.5);
  fs::remove(path());
  // A hard link to a file of this user: neither its mode nor its content may change.
  const auto precious = m_dir / "precious";
  { std::ofstream(precious) << "precious data\n"; }
  ASSERT_EQ(::chmod(precious.c_str(), 0600), 0);
  fs::create_hard_link(precious, path());
  const auto link = file_lock::acquire(path(), 1s);
  EXPECT_FALSE(link.held());
  EXPECT_NE(link.error().find("2 links"), std::string::npos) << link.error();
  EXPECT_EQ(read(precious), "precious data\n");
  struct stat st {};
  ASSERT_EQ(::stat(precious.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(FileLock, a_holder_line_is_made_printable) {
  { std::ofstream(path()) << "pid 7\x1b[2J on \x07host\n"; }
  const auto first = file_lock::acquire(path(), 1s);  // rewrites the line: hold it elsewhere
  ASSERT_TRUE(first.held());
  { std::ofstream(path()) << "pid 7\x1b[2J on \x07host\n"; }
  const auto second = file_lock::acquire(path(), 20ms);
  EXPECT_EQ(second.holder(), "pid 7?[2J on ?host");
}

TEST_F(FileLock, marks_of_work_outside_the_lock_are_seen_while_they_are_held) {
  const auto marks = outside_mark_path(path());
  EXPECT_EQ(marks.filename(), "gpu.lock.outside");
  EXPECT_FALSE(file_lock::others_marked(marks));
  auto one = file_lock::mark(marks);
  auto two = file_lock::mark(marks);
  ASSERT_TRUE(one.held()) << one.error();
  ASSERT_TRUE(two.held()) << two.error();
  EXPECT_TRUE(file_lock::others_marked(marks));
  one.release();
  EXPECT_TRUE(file_lock::others_marked(marks));
  two.release();
  EXPECT_FALSE(file_lock::others_marked(marks));
  // A mark asked for while others_marked() holds the file for its look is taken right after.
  auto look = file_lock::acquire(marks, 0ms);  // the exclusive hold a look takes
  ASSERT_TRUE(look.held());
  file_lock three;
  std::thread marker([&three, &marks] { three = file_lock::mark(marks); });
  std::this_thread::sleep_for(20ms);
  look.release();
  marker.join();
  EXPECT_TRUE(three.held()) << three.error();
}

TEST_F(FileLock, the_holder_sees_marks_held_at_a_look_or_taken_between_looks) {
  outside_marks quiet(path());
  EXPECT_FALSE(quiet.look());
  EXPECT_FALSE(quiet.look());
  outside_marks watch(path());
  EXPECT_FALSE(watch.look());
  {
    auto held = file_lock::mark(outside_mark_path(path()));
    ASSERT_TRUE(held.held()) << held.error();
    EXPECT_TRUE(watch.look());  // held now
  }
  EXPECT_TRUE(watch.look());  // gone, but taken since the first look
  outside_marks later(path());
  EXPECT_FALSE(later.look());  // a new watch starts from the file as it is
}

TEST_F(FileLock, gpu_lock_path_is_per_gpu_in_the_lock_dir_else_tmp) {
  ASSERT_EQ(::setenv("KJUDGE_LOCK_DIR", m_dir.c_str(), 1), 0);
  EXPECT_EQ(gpu_lock_path("GPU-1234-abcd"), m_dir / "kjudge-gpu-GPU-1234-abcd.lock");
  EXPECT_EQ(gpu_lock_path("GPU/../x y"), m_dir / "kjudge-gpu-GPU____x_y.lock");
  ASSERT_EQ(::unsetenv("KJUDGE_LOCK_DIR"), 0);
  // Not $TMPDIR: every user and job of the machine must find the same file.
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string saved = tmpdir != nullptr ? tmpdir : "";
  ASSERT_EQ(::setenv("TMPDIR", m_dir.c_str(), 1), 0);
  EXPECT_EQ(gpu_lock_path("GPU-1"), fs::path("/tmp/kjudge-gpu-GPU-1.lock"));
  if (tmpdir != nullptr)
    ::setenv("TMPDIR", saved.c_str(), 1);
  else
    ::unsetenv("TMPDIR");
}

}  // namespace
}  // namespace kj::runner
