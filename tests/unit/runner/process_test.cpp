#include <kjudge/runner/process.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "process_probe.hpp"

#include <kjudge/core/file_io.hpp>
#include <kjudge/runner/process_detail.hpp>

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using kj::runner::exit_kind;
using kj::runner::process_result;
using kj::runner::run_process;
using kj::runner::spawn_options;
using kj::test::gone_within;
using kj::test::process_gone;
using kj::test::read_pids;

/** Options that run the helper child (tests/unit/runner/child_main.cpp) in `mode`. */
spawn_options child(std::vector<std::string> args) {
  spawn_options options;
  options.argv = {KJ_RUNNER_CHILD};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  options.timeout = 20s;
  return options;
}

class process_test : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    m_dir = fs::temp_directory_path() /
            (std::string("kj_process_test_") + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }
  fs::path m_dir;
};

TEST_F(process_test, reports_exit_code) {
  auto r = run_process(child({"exit", "3"}));
  EXPECT_EQ(r.how, exit_kind::exited);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.describe(), "exited with code 3");

  auto zero = run_process(child({"exit", "0"}));
  EXPECT_TRUE(zero.ok());
  EXPECT_GT(zero.wall.count(), 0.0);
}

TEST_F(process_test, reports_crash_signal) {
  auto r = run_process(child({"segfault"}));
  EXPECT_EQ(r.how, exit_kind::signaled);
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_EQ(r.describe(), "killed by signal 11 (SIGSEGV)");

  auto a = run_process(child({"abort"}));
  EXPECT_EQ(a.how, exit_kind::signaled);
  EXPECT_EQ(a.signal, SIGABRT);
  EXPECT_NE(a.describe().find("SIGABRT"), std::string::npos);
}

TEST_F(process_test, hanging_child_times_out_promptly) {
  auto options = child({"hang"});
  options.timeout = 300ms;
  auto r = run_process(options);
  EXPECT_EQ(r.how, exit_kind::timed_out);
  EXPECT_FALSE(r.ok());
  EXPECT_GE(r.wall.count(), 0.3);
  EXPECT_LT(r.wall.count(), 1.0) << "SIGTERM should end it without waiting for SIGKILL";
  EXPECT_EQ(r.describe().rfind("timed out after 0.", 0), 0U) << r.describe();
}

TEST_F(process_test, child_ignoring_sigterm_gets_sigkill) {
  auto options = child({"ignore-term"});
  options.timeout = 200ms;
  auto r = run_process(options);
  EXPECT_EQ(r.how, exit_kind::timed_out);
  // SIGKILL 0.25 s after SIGTERM: so far past the limit and no further (it was 1 s).
  EXPECT_GE(r.wall.count(), 0.44);
  EXPECT_LT(r.wall.count(), 1.15);
}

TEST_F(process_test, timeout_kills_the_whole_group) {
  const fs::path pid_file = m_dir / "grandchild.pid";
  auto options = child({"grandchild", pid_file.string()});
  options.timeout = 500ms;
  auto r = run_process(options);
  EXPECT_EQ(r.how, exit_kind::timed_out);
  ASSERT_TRUE(fs::exists(pid_file)) << "the grandchild never started";
  std::ifstream in(pid_file);
  pid_t grandchild = 0;
  in >> grandchild;
  ASSERT_GT(grandchild, 0);
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = process_gone(grandchild);
    if (!gone) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(gone) << "grandchild " << grandchild << " survived the timeout";
  if (!gone) ::kill(grandchild, SIGKILL);
}

TEST_F(process_test, descendant_holding_output_does_not_hold_us) {
  // The child exits at once, leaving a sleeping descendant on its stdout: the group is ended
  // when the child exits, so the pipe closes and we return without waiting out any grace period.
  const auto start = std::chrono::steady_clock::now();
  auto r = run_process(child({"orphan"}));
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.output_tail, "parent done\n");
  EXPECT_LT(took.count(), 0.4);
}

/** Forks a process that runs `body` and exits with what it returns, its stderr in `err`. */
pid_t fork_process(const fs::path& err, const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) ::dup2(fd, 2);
    int code = 99;
    try {
      code = body();
    } catch (...) {
      code = 98;
    }
    ::_exit(code);  // never back into the test framework
  }
  return pid;
}

/** The wait status of `pid`, or -1 when it is still running after `limit`. */
int wait_status_within(pid_t pid, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= until) return -1;
    std::this_thread::sleep_for(10ms);
  }
  return status;
}

/** Forks a parent that runs the test child with `args` (orphan cleanup as `cleanup`) under a long
 *  limit, kills it outright (no handler runs) once the `count` pids the child writes to
 *  `pid_file` are there, and expects each of those processes to end soon after. */
void expect_gone_with_their_parent(const std::vector<std::string>& args, const fs::path& pid_file,
                                   std::size_t count, bool cleanup, const fs::path& err) {
  const pid_t parent = fork_process(err, [&] {
    kj::runner::set_orphan_cleanup(cleanup);
    auto options = child(args);
    options.timeout = 600s;
    (void)run_process(options);
    return 0;
  });
  ASSERT_GT(parent, 0);
  const auto pids = read_pids(pid_file);
  ASSERT_EQ(pids.size(), count) << "the child never started";
  ::kill(parent, SIGKILL);
  EXPECT_NE(wait_status_within(parent, 5s), -1);
  for (const pid_t p : pids) {
    EXPECT_TRUE(gone_within(p, 5s)) << p << " outlived its parent, killed outright";
    if (!process_gone(p)) ::kill(p, SIGKILL);
  }
}

TEST_F(process_test, a_child_dies_with_the_process_that_started_it) {
  // The child must not run on unlimited.
  const fs::path pid_file = m_dir / "child.pid";
  expect_gone_with_their_parent({"pid", pid_file.string()}, pid_file, 1, false,
                                m_dir / "parent.err");
}

TEST_F(process_test, leftovers_outside_the_group_are_killed_with_orphan_cleanup) {
  // A daemon (setsid, so killing the child's group misses it) holding the output pipe.
  const fs::path pid_file = m_dir / "daemon.pids";
  // Without orphan cleanup it outlives the child (as before), and the pipe it holds is given up
  // after the drain grace.
  auto plain = run_process(child({"daemon", pid_file.string(), "exit"}));
  EXPECT_TRUE(plain.ok()) << plain.describe();
  EXPECT_EQ(plain.leftovers_killed, 0U);
  auto pids = read_pids(pid_file);
  ASSERT_EQ(pids.size(), 2U);
  EXPECT_FALSE(process_gone(pids[1]));
  ::kill(pids[1], SIGKILL);
  fs::remove(pid_file);

  kj::runner::set_orphan_cleanup(true);
  const auto start = std::chrono::steady_clock::now();
  auto r = run_process(child({"daemon", pid_file.string(), "exit"}));
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  kj::runner::set_orphan_cleanup(false);
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.output_tail, "parent done\n");
  EXPECT_EQ(r.leftovers_killed, 1U);
  EXPECT_NE(r.describe().find("1 process it left behind (outside its process group) was killed"),
            std::string::npos)
      << r.describe();
  EXPECT_LT(took.count(), 0.45) << "the daemon's pipe kept us waiting out the drain grace";
  pids = read_pids(pid_file);
  ASSERT_EQ(pids.size(), 2U);
  EXPECT_TRUE(gone_within(pids[1], 2s)) << "daemon " << pids[1] << " outlived the child";
  if (!process_gone(pids[1])) ::kill(pids[1], SIGKILL);
  // Leftovers of a timed-out child go the same way; the group (orphan mode) is not counted.
  fs::remove(pid_file);
  kj::runner::set_orphan_cleanup(true);
  auto options = child({"daemon", pid_file.string(), "hang"});
  options.timeout = 300ms;
  auto t = run_process(options);
  auto o = run_process(child({"orphan"}));
  kj::runner::set_orphan_cleanup(false);
  EXPECT_EQ(t.how, exit_kind::timed_out);
  EXPECT_EQ(t.leftovers_killed, 1U);
  EXPECT_TRUE(o.ok());
  EXPECT_EQ(o.leftovers_killed, 0U) << "a process of the child's own group is no leftover";
  pids = read_pids(pid_file);
  ASSERT_EQ(pids.size(), 2U);
  EXPECT_TRUE(gone_within(pids[1], 2s));
  if (!process_gone(pids[1])) ::kill(pids[1], SIGKILL);
}

TEST_F(process_test, an_interrupt_kills_the_child_and_its_leftovers_then_exits) {
  const fs::path pid_file = m_dir / "daemon.pids";
  const fs::path err = m_dir / "parent.err";
  const fs::path folder_file = m_dir / "folder.path";
  const pid_t parent = fork_process(err, [&] {
    kj::runner::exit_on_interrupt("kj-interrupt-test");
    kj::runner::set_orphan_cleanup(true);
    // A temporary folder alive across the wait (as an Nsight Compute run's is): _exit runs no
    // destructor, and it was left behind.
    const kj::temp_dir folder("kj-interrupt-test-");
    fs::create_directories(folder.path() / "a" / "b");
    std::ofstream(folder.path() / "a" / "b" / "raw.csv") << "x\n";
    std::ofstream(folder.path() / "top.txt") << "y\n";
    std::ofstream(folder_file) << folder.path().string() << "\n";
    auto options = child({"daemon", pid_file.string(), "hang"});
    options.timeout = 600s;
    (void)run_process(options);
    return 0;  // not reached: the interrupt exits
  });
  ASSERT_GT(parent, 0);
  const auto pids = read_pids(pid_file);
  ASSERT_EQ(pids.size(), 2U) << "the child never started";
  ::kill(parent, SIGTERM);
  const int status = wait_status_within(parent, 5s);
  ASSERT_NE(status, -1) << "the interrupted parent did not exit";
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
  for (const pid_t p : pids) {
    EXPECT_TRUE(gone_within(p, 3s)) << p << " outlived the interrupted parent";
    if (!process_gone(p)) ::kill(p, SIGKILL);
  }
  std::ifstream in(err);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("kj-interrupt-test: interrupted by SIGTERM"), std::string::npos)
      << text.str();
  std::string folder_path;
  std::getline(std::ifstream(folder_file), folder_path);
  ASSERT_FALSE(folder_path.empty());
  EXPECT_FALSE(fs::exists(folder_path)) << folder_path << " outlived the interrupted parent";

  // With no child running, an interrupt exits at once (from the signal handler), and removes
  // the temporary folders too.
  const fs::path ready = m_dir / "idle.ready";
  const fs::path idle_folder_file = m_dir / "idle_folder.path";
  const pid_t idle = fork_process(m_dir / "idle.err", [&] {
    kj::runner::exit_on_interrupt("kj-interrupt-test");
    const kj::temp_dir folder("kj-interrupt-test-");
    std::ofstream(folder.path() / "f") << "z\n";
    std::ofstream(idle_folder_file) << folder.path().string() << "\n";
    std::ofstream(ready) << "1\n";
    std::this_thread::sleep_for(60s);
    return 0;
  });
  ASSERT_EQ(read_pids(ready).size(), 1U);
  ::kill(idle, SIGINT);
  const int idle_status = wait_status_within(idle, 5s);
  ASSERT_NE(idle_status, -1);
  ASSERT_TRUE(WIFEXITED(idle_status));
  EXPECT_EQ(WEXITSTATUS(idle_status), 128 + SIGINT);
  std::string idle_folder;
  std::getline(std::ifstream(idle_folder_file), idle_folder);
  ASSERT_FALSE(idle_folder.empty());
  EXPECT_FALSE(fs::exists(idle_folder)) << idle_folder;
}

TEST_F(process_test, an_interrupt_during_the_cleanup_after_a_child_waits_for_it) {
  // Once the child is reaped it is no longer registered, and an interrupt while what it left
  // behind was being killed exited from the handler halfway through, leaving the rest running.
  const fs::path marker = m_dir / "cleaned";
  const pid_t p = fork_process(m_dir / "deferral.err", [&] {
    kj::runner::exit_on_interrupt("kj-interrupt-test");
    {
      const kj::runner::detail::interrupt_deferral cleanup;
      ::raise(SIGINT);
      std::ofstream(marker) << "cleanup ended\n";
    }
    const int sig = kj::runner::detail::interrupt_signal();
    if (sig != 0) kj::runner::detail::exit_interrupted(sig);  // as the supervising loop does
    return 3;
  });
  ASSERT_GT(p, 0);
  const int status = wait_status_within(p, 5s);
  ASSERT_NE(status, -1);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT);
  std::string line;
  std::getline(std::ifstream(marker), line);
  EXPECT_EQ(line, "cleanup ended");
}

TEST_F(process_test, the_guard_of_orphan_cleanup_passes_on_how_the_child_ended) {
  // With orphan cleanup a guard process stands between us and the child: what we see of the
  // child (exit code, signal, timeouts with their grace, the group, start failures, memory)
  // must be what we saw without it.
  kj::runner::set_orphan_cleanup(true);
  const auto code = run_process(child({"exit", "3"}));
  const auto segfault = run_process(child({"segfault"}));
  const auto abort = run_process(child({"abort"}));
  auto options = child({"hang"});
  options.timeout = 300ms;
  const auto hang = run_process(options);
  options = child({"ignore-term"});
  options.timeout = 200ms;
  const auto ignore_term = run_process(options);
  const fs::path pid_file = m_dir / "grandchild.pid";
  options = child({"grandchild", pid_file.string()});
  options.timeout = 500ms;
  const auto group = run_process(options);
  spawn_options missing;
  missing.argv = {(m_dir / "no-such-program").string()};
  const auto not_started = run_process(missing);
  const auto rss = run_process(child({"rss", "64"}));
  const auto channel = [] {
    auto o = child({"channel", "3", "hello"});
    o.channel_fd = 3;
    return run_process(o);
  }();
  kj::runner::set_orphan_cleanup(false);

  EXPECT_EQ(code.how, exit_kind::exited);
  EXPECT_EQ(code.exit_code, 3);
  EXPECT_EQ(segfault.how, exit_kind::signaled);
  EXPECT_EQ(segfault.signal, SIGSEGV);
  EXPECT_EQ(abort.how, exit_kind::signaled);
  EXPECT_EQ(abort.signal, SIGABRT);
  EXPECT_EQ(hang.how, exit_kind::timed_out);
  EXPECT_LT(hang.wall.count(), 1.0) << "SIGTERM should end it without waiting for SIGKILL";
  EXPECT_EQ(ignore_term.how, exit_kind::timed_out);
  EXPECT_GE(ignore_term.wall.count(), 0.44) << "the child lost its grace between the signals";
  EXPECT_LT(ignore_term.wall.count(), 1.15);
  EXPECT_EQ(group.how, exit_kind::timed_out);
  pid_t grandchild = 0;
  std::ifstream(pid_file) >> grandchild;
  ASSERT_GT(grandchild, 0) << "the grandchild never started";
  EXPECT_TRUE(gone_within(grandchild, 2s)) << "grandchild " << grandchild << " survived";
  if (!process_gone(grandchild)) ::kill(grandchild, SIGKILL);
  EXPECT_EQ(not_started.how, exit_kind::spawn_failed);
  EXPECT_NE(not_started.error.find("No such file"), std::string::npos) << not_started.error;
  ASSERT_TRUE(rss.ok()) << rss.describe();
  EXPECT_GE(rss.max_rss_kb, 64U * 1024);
  EXPECT_TRUE(channel.ok()) << channel.describe();
  EXPECT_EQ(channel.channel, "hello");
}

TEST_F(process_test, a_parent_killed_outright_leaves_nothing_running_with_orphan_cleanup) {
  // SIGKILL runs nothing of the parent's: its guard kills the child and the daemon the child
  // left (setsid: out of the group; it went to init before there was a guard).
  const fs::path pid_file = m_dir / "daemon.pids";
  expect_gone_with_their_parent({"daemon", pid_file.string(), "hang"}, pid_file, 2, true,
                                m_dir / "parent.err");
}

TEST_F(process_test, output_keeps_only_the_tail_in_bounded_memory) {
  rusage before{};
  ::getrusage(RUSAGE_SELF, &before);
  constexpr std::size_t k_bytes = std::size_t{256} << 20;
  auto options = child({"spam", std::to_string(k_bytes)});
  options.output_tail_bytes = 1000;
  auto r = run_process(options);
  rusage after{};
  ::getrusage(RUSAGE_SELF, &after);
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.output_bytes, k_bytes + 4);
  ASSERT_EQ(r.output_tail.size(), 1000U);
  EXPECT_EQ(r.output_tail, std::string(996, 'x') + "END\n");
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 32L * 1024)
      << "parent memory grew with output (KiB)";
}

TEST_F(process_test, stdout_and_stderr_are_merged_in_order) {
  auto r = run_process(child({"interleave"}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.output_tail, "out0\nerr0\nout1\nerr1\nout2\nerr2\n");
  EXPECT_EQ(r.output_bytes, r.output_tail.size());
}

TEST_F(process_test, echo_copies_output_to_our_stderr) {
  const fs::path captured = m_dir / "stderr.txt";
  const int saved = ::dup(2);
  const int file = ::open(captured.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(file, 0);
  ::dup2(file, 2);
  auto options = child({"interleave"});
  options.echo_output = true;
  auto r = run_process(options);
  ::dup2(saved, 2);
  ::close(saved);
  ::close(file);
  ASSERT_TRUE(r.ok());
  std::ifstream in(captured);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "out0\nerr0\nout1\nerr1\nout2\nerr2\n");
}

TEST_F(process_test, an_echo_that_stderr_does_not_take_is_dropped_not_waited_for) {
  // Our stderr a pipe that nobody reads, full: `kjudge eval -v 2>&1 | slow` held the supervising
  // loop in its echo, and the child's time limit with it, for as long as the reader stalled.
  int full[2];
  ASSERT_EQ(::pipe2(full, O_CLOEXEC | O_NONBLOCK), 0);
  const std::string block(4096, 'y');
  while (::write(full[1], block.data(), block.size()) > 0) {
  }
  // Blocking again, as a terminal's or a pipe's stderr is: a write would wait.
  ::fcntl(full[1], F_SETFL, ::fcntl(full[1], F_GETFL) & ~O_NONBLOCK);
  const int saved = ::dup(2);
  ::dup2(full[1], 2);
  auto options = child({"spam", "1000000"});
  options.echo_output = true;
  const auto start = std::chrono::steady_clock::now();
  auto r = run_process(options);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  ::dup2(saved, 2);
  ::close(saved);
  ::close(full[0]);
  ::close(full[1]);
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_LT(took.count(), 10.0);
  EXPECT_TRUE(r.output_tail.ends_with("END\n"));
}

TEST_F(process_test, stdin_is_fed_and_closed) {
  std::string data;
  for (int i = 0; data.size() < (1U << 20); ++i) data += std::to_string(i) + ",";
  auto options = child({"cat"});
  options.stdin_data = data;
  options.output_tail_bytes = 4U << 20;
  auto r = run_process(options);
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.output_tail, data);
}

TEST_F(process_test, child_not_reading_stdin_is_not_an_error) {
  auto options = child({"ignore-stdin"});
  options.stdin_data = std::string(8U << 20, 'z');
  auto r = run_process(options);
  EXPECT_TRUE(r.ok()) << r.describe();
  // The EPIPE's SIGPIPE was consumed, not left pending for the test process.
  sigset_t pending;
  sigemptyset(&pending);
  ::sigpending(&pending);
  EXPECT_EQ(sigismember(&pending, SIGPIPE), 0);
}

TEST_F(process_test, channel_data_is_returned_whole) {
  for (int fd : {3, 7}) {
    const std::string text(100'000, 'c');
    auto options = child({"channel", std::to_string(fd), text});
    options.channel_fd = fd;
    options.output_tail_bytes = 10;
    auto r = run_process(options);
    ASSERT_TRUE(r.ok()) << r.describe();
    EXPECT_EQ(r.channel, text);
    EXPECT_EQ(r.output_tail, "out\n");
  }
}

TEST_F(process_test, a_flooded_channel_is_cut_at_its_limit) {
  auto options = child({"channel", "3", std::string(100'000, 'c')});
  options.channel_fd = 3;
  options.channel_limit_bytes = 1000;
  auto r = run_process(options);
  ASSERT_TRUE(r.ok()) << r.describe();  // the child was not blocked: its writes were read
  EXPECT_TRUE(r.channel_overflow);
  EXPECT_LE(r.channel.size(), 1000U);
  options.channel_limit_bytes = 100'000;  // exactly the limit: kept whole
  r = run_process(options);
  EXPECT_FALSE(r.channel_overflow);
  EXPECT_EQ(r.channel.size(), 100'000U);
}

TEST_F(process_test, only_the_standard_and_channel_fds_reach_the_child) {
  // A descriptor opened without O_CLOEXEC (as another thread might) must not leak either.
  const int stray = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(stray, 0);
  auto plain = run_process(child({"fds"}));
  auto options = child({"fds"});
  options.channel_fd = 5;
  auto with_channel = run_process(options);
  ::close(stray);
  EXPECT_EQ(plain.output_tail, "0\n1\n2\n");
  EXPECT_EQ(with_channel.output_tail, "0\n1\n2\n5\n");
}

TEST_F(process_test, environment_overrides_and_cwd) {
  auto options = child({"env", "KJ_PROCESS_TEST_VAR"});
  options.env = {{"KJ_PROCESS_TEST_VAR", "hello there"}};
  EXPECT_EQ(run_process(options).output_tail, "hello there\n");
  EXPECT_EQ(run_process(child({"env", "KJ_PROCESS_TEST_VAR"})).output_tail, "<unset>\n");
  ASSERT_NE(std::getenv("PATH"), nullptr);
  options = child({"env", "PATH"});
  options.env = {{"PATH", "/kj/only"}};
  EXPECT_EQ(run_process(options).output_tail, "/kj/only\n");

  options = child({"cwd"});
  options.cwd = m_dir;
  EXPECT_EQ(run_process(options).output_tail, fs::canonical(m_dir).string() + "\n");

  // A snapshot stands for the parent's environment: what changes after it does not reach the
  // child, and overrides still apply on top of it.
  const std::vector<std::string> snapshot = kj::runner::environment_snapshot();
  ::setenv("KJ_PROCESS_TEST_VAR", "set after the snapshot", 1);
  options = child({"env", "KJ_PROCESS_TEST_VAR"});
  options.base_environment = snapshot;
  EXPECT_EQ(run_process(options).output_tail, "<unset>\n");
  options.env = {{"KJ_PROCESS_TEST_VAR", "override"}};
  EXPECT_EQ(run_process(options).output_tail, "override\n");
  ::unsetenv("KJ_PROCESS_TEST_VAR");
}

TEST_F(process_test, programs_are_found_on_path) {
  spawn_options options;
  options.argv = {"sh", "-c", "echo hi; exit 4"};
  auto r = run_process(options);
  EXPECT_EQ(r.how, exit_kind::exited);
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_EQ(r.output_tail, "hi\n");
}

// A relative folder of PATH is the folder the child runs in, as exec finds it there after the
// child's chdir, not this process's.
TEST_F(process_test, a_relative_path_folder_is_the_childs) {
  fs::create_directories(m_dir / "bin");
  const fs::path tool = m_dir / "bin" / "kj-relative-tool";
  std::ofstream(tool) << "#!/bin/sh\necho found\n";
  fs::permissions(tool, fs::perms::owner_all);
  EXPECT_EQ(kj::runner::find_on_path("kj-relative-tool", "bin", m_dir),
            m_dir / "bin" / "kj-relative-tool");
  EXPECT_TRUE(kj::runner::find_on_path("kj-relative-tool", "bin").empty());  // not in our folder
  spawn_options options;
  options.argv = {"kj-relative-tool"};
  options.env = {{"PATH", "bin"}};
  options.cwd = m_dir;
  const auto r = run_process(options);
  EXPECT_EQ(r.how, exit_kind::exited) << r.error;
  EXPECT_EQ(r.output_tail, "found\n");
}

TEST_F(process_test, start_failures_are_values) {
  spawn_options options;
  options.argv = {(m_dir / "no-such-program").string()};
  auto missing = run_process(options);
  EXPECT_EQ(missing.how, exit_kind::spawn_failed);
  EXPECT_NE(missing.error.find("No such file"), std::string::npos) << missing.error;
  EXPECT_EQ(missing.describe().rfind("failed to start: ", 0), 0U);

  options.argv = {"kj-no-such-program-on-path"};
  auto not_on_path = run_process(options);
  EXPECT_EQ(not_on_path.how, exit_kind::spawn_failed);
  EXPECT_NE(not_on_path.error.find("kj-no-such-program-on-path"), std::string::npos);

  const fs::path plain_file = m_dir / "not-executable";
  std::ofstream(plain_file) << "#!/bin/sh\nexit 0\n";
  options.argv = {plain_file.string()};
  auto denied = run_process(options);
  EXPECT_EQ(denied.how, exit_kind::spawn_failed);
  EXPECT_NE(denied.error.find("ermission denied"), std::string::npos) << denied.error;

  auto bad_cwd = child({"exit", "0"});
  bad_cwd.cwd = m_dir / "missing-dir";
  auto r = run_process(bad_cwd);
  EXPECT_EQ(r.how, exit_kind::spawn_failed);
  EXPECT_NE(r.error.find("missing-dir"), std::string::npos) << r.error;
}

TEST_F(process_test, reports_peak_memory) {
  auto r = run_process(child({"rss", "64"}));
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_GE(r.max_rss_kb, 64U * 1024);
  EXPECT_LT(r.max_rss_kb, 1024U * 1024);
}

TEST(process_text, describe_formats) {
  process_result r;
  r.how = exit_kind::timed_out;
  r.wall = std::chrono::duration<double>(30.04);
  EXPECT_EQ(r.describe(), "timed out after 30.0 s");
  r.error = "no exit status came after SIGKILL (the worker pool is stopped or stalled)";
  EXPECT_EQ(r.describe(),
            "timed out after 30.0 s; no exit status came after SIGKILL (the worker pool is "
            "stopped or stalled)");
  r.how = exit_kind::exited;
  r.exit_code = 0;
  r.leftovers_killed = 2;
  EXPECT_EQ(r.describe(),
            "exited with code 0; 2 processes it left behind (outside its process group) were "
            "killed");
  r.leftovers_killed = 0;
  r.how = exit_kind::spawn_failed;
  r.error = "cannot execute 'x': No such file or directory";
  EXPECT_EQ(r.describe(), "failed to start: cannot execute 'x': No such file or directory");
}

TEST(process_reaping, a_descendant_is_signalled_only_under_the_parent_it_was_found_under) {
  // A grandchild found under its parent may end and its pid be reused before the signal: the
  // signal goes only where the pid is still that parent's child.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t parent = ::fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    const pid_t grandchild = ::fork();
    if (grandchild == 0) {
      for (;;) ::pause();
    }
    if (::write(fds[1], &grandchild, sizeof grandchild) != static_cast<ssize_t>(sizeof grandchild))
      ::_exit(2);
    int status = 0;
    ::waitpid(grandchild, &status, 0);
    ::_exit(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? 0 : 1);
  }
  pid_t grandchild = -1;
  ASSERT_EQ(::read(fds[0], &grandchild, sizeof grandchild),
            static_cast<ssize_t>(sizeof grandchild));
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_FALSE(kj::runner::detail::kill_if_child_of(grandchild, ::getpid()));  // not ours
  EXPECT_FALSE(kj::runner::detail::kill_if_child_of(grandchild, 1));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(::kill(grandchild, 0), 0) << "signalled under a parent it does not have";
  EXPECT_TRUE(kj::runner::detail::kill_if_child_of(grandchild, parent));
  int status = -1;
  ASSERT_EQ(::waitpid(parent, &status, 0), parent);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the grandchild was not killed";
}

TEST(process_text, signal_names) {
  EXPECT_EQ(kj::runner::signal_name(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(kj::runner::signal_name(SIGKILL), "SIGKILL");
  EXPECT_EQ(kj::runner::signal_name(1000), "signal 1000");
  EXPECT_EQ(kj::runner::signal_name(SIGRTMAX), "SIGRTMAX");
  EXPECT_EQ(kj::runner::signal_name(SIGRTMIN), "SIGRTMIN");
  EXPECT_EQ(kj::runner::signal_name(SIGRTMIN + 1), "SIGRTMIN+1");
  EXPECT_EQ(kj::runner::signal_name(SIGRTMAX - 1), "SIGRTMAX-1");
}

TEST(process_text, last_lines) {
  using kj::runner::last_lines;
  EXPECT_EQ(last_lines("a\nb\nc\n", 2), "b\nc\n");
  EXPECT_EQ(last_lines("a\nb\nc", 2), "b\nc");
  EXPECT_EQ(last_lines("a\nb\nc\n", 10), "a\nb\nc\n");
  EXPECT_EQ(last_lines("a\nb\nc\n", 3), "a\nb\nc\n");
  EXPECT_EQ(last_lines("single", 1), "single");
  EXPECT_EQ(last_lines("a\nb", 0), "");
  EXPECT_EQ(last_lines("", 3), "");
}

TEST(process_text, self_executable_is_this_test) {
  auto self = kj::runner::self_executable();
  EXPECT_TRUE(self.is_absolute());
  EXPECT_EQ(self.filename(), "kj_runner_process_test");
}

TEST(process_text, oom_kills_from_vmstat) {
  using kj::runner::oom_kills_from;
  EXPECT_EQ(oom_kills_from("pgfault 10\noom_kill 3\nnuma_hit 1\n"), 3U);
  EXPECT_EQ(oom_kills_from("oom_kill 0"), 0U);
  EXPECT_FALSE(oom_kills_from("pgfault 10\n").has_value());
  EXPECT_FALSE(oom_kills_from("oom_kill x\n").has_value());
  EXPECT_FALSE(oom_kills_from("oom_kill_other 5\n").has_value());
  // This machine's, where its kernel keeps the count (Linux 4.13+).
  std::ifstream vmstat("/proc/vmstat");
  const std::string text((std::istreambuf_iterator<char>(vmstat)),
                         std::istreambuf_iterator<char>());
  EXPECT_EQ(kj::runner::oom_kills().has_value(), text.find("\noom_kill ") != std::string::npos);
}

}  // namespace
