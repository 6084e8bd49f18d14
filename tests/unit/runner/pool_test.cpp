// The worker pool's protocol and supervision: the same child behaviours as process_test, started
// by a pool server (forked from this test, its children exec the helper child) instead of by
// fork/exec here. The kjudge pool runs the worker in place of exec; everything else is this code.
#include <kjudge/runner/pool.hpp>
#include <kjudge/runner/process_detail.hpp>

#include <dirent.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "process_probe.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using kj::runner::exit_kind;
using kj::runner::process_result;
using kj::runner::spawn_options;
using kj::test::gone_within;
using kj::test::process_gone;
using kj::test::process_stopped;
using kj::test::read_pids;

spawn_options child(std::vector<std::string> args) {
  spawn_options options;
  options.argv = {KJ_RUNNER_CHILD};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  options.timeout = 20s;
  return options;
}

/** A child entry that runs the command, as the suite's server does. */
void exec_argv(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execv(args[0], args.data());
  ::_exit(126);
}

class pool_test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    s_address = "kjudge-pool-test-" + std::to_string(::getpid());
    s_server = ::fork();
    ASSERT_GE(s_server, 0);
    if (s_server == 0) {
      kj::runner::pool_server_options o;
      o.address = s_address;
      o.idle_exit = 120s;
      o.child_main = exec_argv;
      const bool served = kj::runner::serve_pool(o);
      ::_exit(served ? 0 : 3);
    }
    // The server listens once it has bound; wait until a request goes through.
    for (int i = 0; i < 200; ++i) {
      if (kj::runner::run_process_in_pool(s_address, child({"exit", "0"}))) return;
      std::this_thread::sleep_for(10ms);
    }
    FAIL() << "the pool server never answered";
  }
  static void TearDownTestSuite() {
    ::kill(s_server, SIGTERM);
    int status = 0;
    ::waitpid(s_server, &status, 0);
  }
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("kj_pool_test_" + std::to_string(::getpid()));
    fs::create_directories(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }

  static process_result run(const spawn_options& o) {
    std::string why;
    auto r = kj::runner::run_process_in_pool(s_address, o, &why);
    EXPECT_TRUE(r.has_value()) << "the pool refused the request: " << why;
    return r.value_or(process_result{});
  }

  static inline std::string s_address;
  static inline pid_t s_server = -1;
  fs::path m_dir;
};

TEST_F(pool_test, reports_exit_code_and_crash_signal) {
  auto r = run(child({"exit", "3"}));
  EXPECT_EQ(r.how, exit_kind::exited);
  EXPECT_EQ(r.exit_code, 3);
  auto s = run(child({"segfault"}));
  EXPECT_EQ(s.how, exit_kind::signaled);
  EXPECT_EQ(s.signal, SIGSEGV);
}

TEST_F(pool_test, timeouts_signal_the_childs_group) {
  auto options = child({"hang"});
  options.timeout = 300ms;
  auto r = run(options);
  EXPECT_EQ(r.how, exit_kind::timed_out);
  EXPECT_LT(r.wall.count(), 1.0);

  options = child({"ignore-term"});
  options.timeout = 200ms;
  auto k = run(options);
  EXPECT_EQ(k.how, exit_kind::timed_out);
  // SIGKILL 0.25 s after SIGTERM, as for an exec'd child.
  EXPECT_GE(k.wall.count(), 0.44);
  EXPECT_LT(k.wall.count(), 1.15);

  const fs::path pid_file = m_dir / "grandchild.pid";
  options = child({"grandchild", pid_file.string()});
  options.timeout = 500ms;
  EXPECT_EQ(run(options).how, exit_kind::timed_out);
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

TEST_F(pool_test, a_requester_that_dies_takes_its_child_with_it) {
  // The requester (kjudge eval) is killed outright: its connection closes, and the pool kills
  // the child it was running for it, rather than leaving it to run without a limit.
  const fs::path pid_file = m_dir / "child.pid";
  fs::remove(pid_file);
  const pid_t requester = ::fork();
  ASSERT_GE(requester, 0);
  if (requester == 0) {
    auto o = child({"pid", pid_file.string()});
    o.timeout = 600s;
    (void)kj::runner::run_process_in_pool(s_address, o);
    ::_exit(0);
  }
  const auto pids = read_pids(pid_file);
  ::kill(requester, SIGKILL);
  int status = 0;
  ::waitpid(requester, &status, 0);
  ASSERT_EQ(pids.size(), 1U) << "the child never started";
  EXPECT_TRUE(gone_within(pids[0], 5s)) << "child " << pids[0] << " outlived its requester";
  if (!process_gone(pids[0])) ::kill(pids[0], SIGKILL);
}

TEST_F(pool_test, leftovers_outside_the_group_are_killed_and_counted) {
  // A daemon (setsid: out of the child's group) holding the output pipe, its parent gone.
  const fs::path pid_file = m_dir / "daemon.pids";
  fs::remove(pid_file);
  const auto start = std::chrono::steady_clock::now();
  const auto r = run(child({"daemon", pid_file.string(), "exit"}));
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.output_tail, "parent done\n");
  EXPECT_EQ(r.leftovers_killed, 1U) << r.describe();
  EXPECT_LT(took.count(), 0.45) << "the daemon's pipe kept the requester waiting";
  auto pids = read_pids(pid_file);
  ASSERT_EQ(pids.size(), 2U);
  EXPECT_TRUE(gone_within(pids[1], 2s)) << "daemon " << pids[1] << " outlived its child";
  if (!process_gone(pids[1])) ::kill(pids[1], SIGKILL);

  // A child still running keeps what its descendants leave (it is their subreaper): another
  // child ending meanwhile does not take them for its leftovers.
  fs::remove(pid_file);
  auto running = std::async(std::launch::async, [&] {
    auto o = child({"daemon", pid_file.string(), "hang"});
    o.timeout = 3s;
    return run(o);
  });
  pids = read_pids(pid_file);
  ASSERT_EQ(pids.size(), 2U);
  const auto other = run(child({"exit", "0"}));
  EXPECT_EQ(other.leftovers_killed, 0U);
  EXPECT_FALSE(process_gone(pids[1])) << "a running child's daemon was killed";
  const auto ended = running.get();
  EXPECT_EQ(ended.how, exit_kind::timed_out);
  EXPECT_EQ(ended.leftovers_killed, 1U) << ended.describe();
  EXPECT_TRUE(gone_within(pids[1], 2s));
  if (!process_gone(pids[1])) ::kill(pids[1], SIGKILL);
}

TEST_F(pool_test, stdin_output_and_channel_flow_as_with_run_process) {
  std::string data;
  for (int i = 0; data.size() < (1U << 20); ++i) data += std::to_string(i) + ",";
  auto options = child({"cat"});
  options.stdin_data = data;
  options.output_tail_bytes = 4U << 20;
  auto r = run(options);
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.output_tail, data);

  for (int fd : {3, 7}) {
    const std::string text(100'000, 'c');
    auto o = child({"channel", std::to_string(fd), text});
    o.channel_fd = fd;
    auto c = run(o);
    ASSERT_TRUE(c.ok()) << c.describe();
    EXPECT_EQ(c.channel, text);
    EXPECT_EQ(c.output_tail, "out\n");
  }
  EXPECT_EQ(run(child({"interleave"})).output_tail, "out0\nerr0\nout1\nerr1\nout2\nerr2\n");
}

TEST_F(pool_test, child_gets_only_its_descriptors_environment_and_directory) {
  auto options = child({"fds"});
  options.channel_fd = 5;
  EXPECT_EQ(run(options).output_tail, "0\n1\n2\n5\n");

  // The requester's environment, not the server's: a variable set here after the server
  // started reaches the child.
  ::setenv("KJ_POOL_TEST_LATE", "set after the server started", 1);
  EXPECT_EQ(run(child({"env", "KJ_POOL_TEST_LATE"})).output_tail, "set after the server started\n");
  ::unsetenv("KJ_POOL_TEST_LATE");
  EXPECT_EQ(run(child({"env", "KJ_POOL_TEST_LATE"})).output_tail, "<unset>\n");
  options = child({"env", "KJ_POOL_TEST_VAR"});
  options.env = {{"KJ_POOL_TEST_VAR", "override"}};
  EXPECT_EQ(run(options).output_tail, "override\n");

  options = child({"cwd"});
  options.cwd = m_dir;
  EXPECT_EQ(run(options).output_tail, fs::canonical(m_dir).string() + "\n");
  options.cwd = m_dir / "missing";
  auto bad = run(options);
  EXPECT_EQ(bad.how, exit_kind::exited);
  EXPECT_EQ(bad.exit_code, 127);
  EXPECT_NE(bad.output_tail.find("missing"), std::string::npos) << bad.output_tail;
}

TEST_F(pool_test, reports_the_childs_peak_memory) {
  auto r = run(child({"rss", "64"}));
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_GE(r.max_rss_kb, 64U * 1024);
  EXPECT_LT(r.max_rss_kb, 1024U * 1024);
}

TEST_F(pool_test, concurrent_requests_each_get_their_own_child) {
  std::vector<std::future<process_result>> runs;
  for (int i = 0; i < 6; ++i) {
    runs.push_back(std::async(std::launch::async, [i] {
      auto o = child({"cat"});
      o.stdin_data = std::string(200'000, static_cast<char>('a' + i));
      o.output_tail_bytes = 1 << 20;
      return run(o);
    }));
  }
  for (int i = 0; i < 6; ++i) {
    const auto r = runs[static_cast<std::size_t>(i)].get();
    ASSERT_TRUE(r.ok()) << r.describe();
    EXPECT_EQ(r.output_tail, std::string(200'000, static_cast<char>('a' + i)));
  }
}

/** The abstract socket address `name` (sun_path starts with NUL), and its length. */
sockaddr_un abstract_address(const std::string& name, socklen_t& length) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return addr;
}

TEST_F(pool_test, a_malformed_or_stalled_request_does_not_stop_the_server) {
  // A client that connects and sends half a request, and one that sends garbage.
  socklen_t length = 0;
  const sockaddr_un addr = abstract_address(s_address, length);
  const int stalled = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_EQ(::connect(stalled, reinterpret_cast<const sockaddr*>(&addr), length), 0);
  ASSERT_EQ(::send(stalled, "\x10", 1, 0), 1);
  const int garbage = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_EQ(::connect(garbage, reinterpret_cast<const sockaddr*>(&addr), length), 0);
  const std::string junk = std::string("\x05\0\0\0", 4) + "nope!";
  ASSERT_EQ(::send(garbage, junk.data(), junk.size(), 0), static_cast<ssize_t>(junk.size()));
  // A real request behind them is served once the stalled one's deadline (1 s) passed.
  const auto start = std::chrono::steady_clock::now();
  const auto r = run(child({"exit", "4"}));
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.how, exit_kind::exited);
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_LT(took.count(), 3.0);
  ::close(stalled);
  ::close(garbage);
}

TEST_F(pool_test, a_second_server_does_not_take_the_address) {
  kj::runner::pool_server_options o;
  o.address = s_address;
  o.child_main = [](const std::vector<std::string>&) { ::_exit(1); };
  EXPECT_FALSE(kj::runner::serve_pool(o));
}

/** A server of its own (forked from this test) with the given child entry and prepare(); killed
 *  on scope exit. */
class dedicated_server {
 public:
  explicit dedicated_server(std::function<void(const std::vector<std::string>&)> child_main,
                            std::function<void()> prepare = {})
      : m_address("kjudge-pool-test-own-" + std::to_string(::getpid())) {
    m_pid = ::fork();
    if (m_pid == 0) {
      kj::runner::pool_server_options o;
      o.address = m_address;
      o.idle_exit = 120s;
      o.prepare = std::move(prepare);
      o.child_main = std::move(child_main);
      try {
        ::_exit(kj::runner::serve_pool(o) ? 0 : 3);
      } catch (...) {
        ::_exit(4);  // never back into the test framework from the forked server
      }
    }
  }
  ~dedicated_server() { stop(SIGKILL); }
  dedicated_server(const dedicated_server&) = delete;
  dedicated_server& operator=(const dedicated_server&) = delete;
  void stop(int sig) {
    if (m_pid <= 0) return;
    ::kill(m_pid, sig);
    int status = 0;
    ::waitpid(m_pid, &status, 0);
    m_pid = -1;
  }
  /** Runs through this server once it listens. */
  process_result run(const spawn_options& o) {
    std::string why;
    for (int i = 0; i < 200; ++i) {
      if (auto r = kj::runner::run_process_in_pool(m_address, o, &why)) return *r;
      std::this_thread::sleep_for(10ms);
    }
    ADD_FAILURE() << "the dedicated pool server never answered: " << why;
    return {};
  }
  /** Waits (up to 5 s) until the address is claimed: the server has bound it. */
  bool claimed() const {
    for (int i = 0; i < 500; ++i) {
      const auto sockets = kj::runner::abstract_sockets(m_address);
      if (std::any_of(sockets.begin(), sockets.end(),
                      [&](const auto& s) { return s.name == m_address; }))
        return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
  const std::string& address() const { return m_address; }
  [[nodiscard]] pid_t pid() const { return m_pid; }

 private:
  std::string m_address;
  pid_t m_pid = -1;
};

TEST(pool, a_child_that_does_not_exec_holds_only_its_own_descriptors) {
  // kjudge's children run in place (no exec): the server's sockets and the pidfds of the other
  // children it runs must be closed, not merely close-on-exec. A "hang" child runs alongside.
  dedicated_server server([](const std::vector<std::string>& argv) {
    if (argv.size() > 1 && argv[1] == "hang")
      while (true) ::pause();
    std::string text;
    DIR* dir = ::opendir("/proc/self/fd");
    if (dir == nullptr) ::_exit(5);
    const int own = ::dirfd(dir);
    while (dirent* e = ::readdir(dir)) {
      if (e->d_name[0] == '.') continue;
      const int fd = std::atoi(e->d_name);
      if (fd == own) continue;
      // Descriptors the test process itself held when it forked the server stay (they are this
      // test's, not the pool's); sockets and pidfds must not.
      std::error_code ec;
      const auto target =
          std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(fd), ec).string();
      const bool pool_kind =
          target.rfind("socket:", 0) == 0 || target.find("pidfd") != std::string::npos;
      if (fd <= 2 || fd == 9 || pool_kind)
        text += std::to_string(fd) + (pool_kind ? " " + target : std::string()) + "\n";
    }
    ::closedir(dir);
    ssize_t ignored = ::write(1, text.data(), text.size());
    (void)ignored;
    ::_exit(0);
  });
  auto hang = std::async(std::launch::async, [&] {
    auto o = child({"hang"});
    o.timeout = 2s;
    return server.run(o);
  });
  std::this_thread::sleep_for(300ms);  // the hanging child is running now
  auto options = child({});
  options.channel_fd = 9;  // above the server's own descriptors, so no dup2 hides a leak
  const auto r = server.run(options);
  ASSERT_TRUE(r.ok()) << r.describe() << r.output_tail;
  EXPECT_EQ(r.output_tail, "0\n1\n2\n9\n");
  EXPECT_EQ(hang.get().how, exit_kind::timed_out);
}

TEST(pool, a_pool_that_dies_loses_its_child_and_the_childs_group) {
  const fs::path pid_file =
      fs::temp_directory_path() / ("kj_pool_test_lost_" + std::to_string(::getpid()));
  fs::remove(pid_file);
  dedicated_server server(exec_argv);
  server.run(child({"exit", "0"}));  // listening now
  auto result = std::async(std::launch::async, [&] {
    // The grandchild starts once the requester supervises the child: the pool is killed after
    // the request was answered, not between its fork and its answer.
    auto o = child({"grandchild", pid_file.string(), "after-stdin"});
    o.stdin_data = "go";
    o.timeout = 60s;
    return server.run(o);
  });
  pid_t grandchild = 0;
  for (int i = 0; i < 200 && grandchild == 0; ++i) {
    std::this_thread::sleep_for(10ms);
    std::ifstream in(pid_file);
    in >> grandchild;
  }
  ASSERT_GT(grandchild, 0) << "the grandchild never started";
  const auto killed_at = std::chrono::steady_clock::now();
  server.stop(SIGKILL);
  ASSERT_EQ(result.wait_for(10s), std::future_status::ready) << "the requester kept waiting";
  const auto r = result.get();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count(),
            5.0);
  EXPECT_EQ(r.how, exit_kind::lost) << r.describe();
  EXPECT_NE(r.describe().find("worker pool"), std::string::npos) << r.describe();
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = process_gone(grandchild);
    if (!gone) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(gone) << "grandchild " << grandchild << " outlived the pool";
  if (!gone) ::kill(grandchild, SIGKILL);
  fs::remove(pid_file);
}

TEST(pool, a_guard_returns_its_childs_status_even_where_sigchld_was_ignored) {
  // SIG_IGN for SIGCHLD survives exec (a caller may start the pool so); the kernel would then
  // reap the child itself and its status be lost, a killed server read as a clean exit.
  for (const bool ignored : {false, true}) {
    const pid_t tester = ::fork();
    ASSERT_GE(tester, 0);
    if (tester == 0) {
      if (ignored) ::signal(SIGCHLD, SIG_IGN);
      const int exited = kj::runner::run_guarded([] { return 3; });
      const int killed = kj::runner::run_guarded([]() -> int {
        ::raise(SIGKILL);
        return 0;
      });
      ::_exit(exited == 3 && killed == 128 + SIGKILL ? 0 : 1);
    }
    int status = -1;
    ASSERT_EQ(::waitpid(tester, &status, 0), tester);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "SIGCHLD ignored: " << ignored << ", status " << status;
  }
}

TEST(pool, a_guarded_server_that_dies_takes_what_its_children_adopted_with_it) {
  // A child that leaves a daemon (setsid, its parent gone: adopted by the child, a subreaper)
  // and runs on; then its server is killed. The child dies with its server; unguarded, the
  // daemon would go to init and live on. Guarded (run_guarded, as `kjudge worker-pool` runs
  // its server), it goes to the guard, which kills it once the server has ended.
  const std::string tag = std::to_string(::getpid());
  const std::string address = "kjudge-pool-test-guarded-" + tag;
  const fs::path pid_file = fs::temp_directory_path() / ("kj_pool_test_guarded_" + tag);
  const fs::path ended_file = fs::temp_directory_path() / ("kj_pool_test_guard_ended_" + tag);
  fs::remove(pid_file);
  fs::remove(ended_file);
  std::future<std::optional<process_result>> running;  // ended after the cleanup below
  const pid_t guard = ::fork();
  ASSERT_GE(guard, 0);
  if (guard == 0) {
    const int code = kj::runner::run_guarded(
        [&] {
          kj::runner::pool_server_options o;
          o.address = address;
          o.idle_exit = 120s;
          o.child_main = exec_argv;
          try {
            return kj::runner::serve_pool(o) ? 0 : 3;
          } catch (...) {
            return 4;
          }
        },
        [&](int status, std::size_t killed) {
          std::ofstream(ended_file) << status << ' ' << killed << '\n';
        });
    ::_exit(code == 128 + SIGKILL ? 0 : 1);  // never back into the test framework
  }
  std::string why;
  bool listening = false;
  for (int i = 0; i < 500 && !listening; ++i) {
    listening = kj::runner::run_process_in_pool(address, child({"exit", "0"}), &why).has_value();
    if (!listening) std::this_thread::sleep_for(10ms);
  }
  // Whatever an assertion leaves running (the server, the guard) is killed on the way out.
  struct cleanup {
    pid_t guard;
    bool reaped = false;  // then its pid may be another process's
    ~cleanup() {
      if (reaped) return;
      for (const pid_t p : kj::runner::detail::children_of(guard)) ::kill(p, SIGKILL);
      ::kill(guard, SIGKILL);
      int status = 0;
      ::waitpid(guard, &status, 0);
    }
  } on_exit{guard};
  ASSERT_TRUE(listening) << why;
  running = std::async(std::launch::async, [&] {
    auto o = child({"daemon", pid_file.string(), "hang"});
    o.timeout = 60s;
    return kj::runner::run_process_in_pool(address, o);
  });
  const auto pids = read_pids(pid_file);
  ASSERT_EQ(pids.size(), 2U) << "the child never left its daemon";
  const auto servers = kj::runner::detail::children_of(guard);
  ASSERT_EQ(servers.size(), 1U) << "the guard should have one child, the server";
  ::kill(servers[0], SIGKILL);
  ASSERT_EQ(running.wait_for(10s), std::future_status::ready) << "the requester kept waiting";
  const auto r = running.get();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->how, exit_kind::lost) << r->describe();
  EXPECT_TRUE(gone_within(pids[1], 5s)) << "daemon " << pids[1] << " outlived the killed server";
  if (!process_gone(pids[1])) ::kill(pids[1], SIGKILL);
  // The guard ends on its own (and is reaped here, not by the cleanup): it exits 0 where its
  // server's status was 137 (see above), and writes what it saw.
  bool guard_ended = false;
  for (int i = 0; i < 500 && !guard_ended; ++i) {
    std::ifstream probe(ended_file);
    guard_ended = probe.peek() != std::ifstream::traits_type::eof();
    if (!guard_ended) std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(guard_ended) << "the guard never said its server ended";
  int status = -1;
  for (int i = 0; i < 500 && !on_exit.reaped; ++i) {
    on_exit.reaped = ::waitpid(guard, &status, WNOHANG) == guard;
    if (!on_exit.reaped) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the guard did not end with its server's status, 137: " << status;
  std::ifstream in(ended_file);
  int server_status = 0;
  std::size_t killed = 0;
  in >> server_status >> killed;
  EXPECT_EQ(server_status, 128 + SIGKILL);
  // Who killed the daemon races: the server's child is a guard itself (fork_under_guard), which
  // kills what it adopted when the server dies, and this outer guard kills what is left when
  // it looks (the inner guard among it, where still running). Either way it is gone (above);
  // the count is what this guard found, 0 when the inner one was quicker (1 run in 10 on a
  // loaded 2-core machine).
  EXPECT_LE(killed, 3U) << "the guard counted more than the server's child, worker and daemon";
  fs::remove(pid_file);
  fs::remove(ended_file);
}

TEST(pool, a_pool_that_dies_right_after_its_answer_has_its_child_ended) {
  // A server that forks its child and dies at once, the child sending the server's answer (its
  // own pid) once it has been reparented: the requester finds the child's parent is no longer
  // the server it talks to, and the server gone. The request is refused (the caller runs the
  // command itself), and the child, which was the request's, is ended with its group rather
  // than left running beside the command.
  const std::string address = "kjudge-pool-test-orphan-" + std::to_string(::getpid());
  socklen_t length = 0;
  const sockaddr_un addr = abstract_address(address, length);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t server = ::fork();
  ASSERT_GE(server, 0);
  if (server == 0) {
    ::close(ready[0]);
    const int listener = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (listener < 0 || ::bind(listener, reinterpret_cast<const sockaddr*>(&addr), length) != 0 ||
        ::listen(listener, 4) != 0 || ::write(ready[1], "r", 1) != 1)
      ::_exit(2);
    const int conn = ::accept(listener, nullptr, nullptr);
    if (conn < 0) ::_exit(3);
    // The whole request (a 4-byte size, then that many bytes), as a pool reads it before its
    // fork; the descriptors that came with it are dropped.
    std::string request;
    char buffer[4096];
    std::uint32_t size = 0;
    while (request.size() < 4 || request.size() < 4 + size) {
      const ssize_t n = ::recv(conn, buffer, sizeof buffer, 0);
      if (n <= 0) ::_exit(6);
      request.append(buffer, static_cast<std::size_t>(n));
      if (request.size() >= 4) std::memcpy(&size, request.data(), sizeof size);
    }
    const pid_t me = ::getpid();
    if (::fork() == 0) {
      ::setsid();
      ::close(listener);
      while (::getppid() == me) ::usleep(1000);
      const pid_t self = ::getpid();
      if (::write(ready[1], &self, sizeof self) != sizeof self) ::_exit(5);
      const std::string line = "{\"pid\": " + std::to_string(self) + "}\n";
      if (::write(conn, line.data(), line.size()) != static_cast<ssize_t>(line.size())) ::_exit(4);
      ::close(conn);
      while (true) ::pause();
    }
    ::_exit(0);
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1) << "the server never listened";
  auto o = child({"hang"});
  o.timeout = 30s;
  const auto start = std::chrono::steady_clock::now();
  std::string why;
  const auto r = kj::runner::run_process_in_pool(address, o, &why);
  int status = 0;
  ::waitpid(server, &status, 0);
  EXPECT_FALSE(r.has_value()) << r->describe();
  EXPECT_NE(why.find("died after it started the child"), std::string::npos) << why;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  // The orphan, in a session of its own, was ended with its group.
  pid_t orphan = 0;
  const bool told = ::read(ready[0], &orphan, sizeof orphan) == sizeof orphan;
  ::close(ready[0]);
  ASSERT_TRUE(told && orphan > 1) << "the orphan never said its pid";
  EXPECT_TRUE(gone_within(orphan, 5s)) << "child " << orphan << " outlived its refused request";
  if (!process_gone(orphan)) ::kill(orphan, SIGKILL);
}

TEST_F(pool_test, a_listening_server_is_seen_accepting_and_not_waited_for) {
  const auto sockets = kj::runner::abstract_sockets();
  EXPECT_TRUE(std::any_of(sockets.begin(), sockets.end(), [](const auto& s) {
    return s.name == s_address && s.accepting && !s.connected;
  }));
  const auto w = kj::runner::wait_for_pool(s_address, 5s);
  EXPECT_EQ(w.state, kj::runner::pool_state::accepting);
  EXPECT_EQ(w.waited.count(), 0.0);
}

TEST(pool, nothing_at_the_address_is_not_waited_for) {
  const auto w =
      kj::runner::wait_for_pool("kjudge-pool-test-nobody-" + std::to_string(::getpid()), 5s);
  EXPECT_EQ(w.state, kj::runner::pool_state::absent);
  EXPECT_EQ(w.waited.count(), 0.0);
}

/** A child entry for servers whose children are never asked for. */
void exit_at_once(const std::vector<std::string>& /*argv*/) {
  ::_exit(0);
}

TEST(pool, a_server_still_in_prepare_is_waited_for_until_it_accepts) {
  dedicated_server server(exit_at_once, [] { std::this_thread::sleep_for(1500ms); });
  ASSERT_TRUE(server.claimed());
  // Refused while it prepares: without waiting, the requester would run the command itself.
  EXPECT_FALSE(kj::runner::run_process_in_pool(server.address(), child({"exit", "0"})));
  // The limit is the server's age: waited for until it is 800 ms old, then not at all.
  const auto short_wait = kj::runner::wait_for_pool(server.address(), 800ms);
  EXPECT_EQ(short_wait.state, kj::runner::pool_state::starting);
  EXPECT_GE(short_wait.waited.count(), 0.3);
  EXPECT_LT(short_wait.waited.count(), 1.0);
  const auto too_old = kj::runner::wait_for_pool(server.address(), 100ms);
  EXPECT_EQ(too_old.state, kj::runner::pool_state::starting);
  EXPECT_EQ(too_old.waited.count(), 0.0);
  const auto w = kj::runner::wait_for_pool(server.address(), 20s);
  EXPECT_EQ(w.state, kj::runner::pool_state::accepting);
  EXPECT_GT(w.waited.count(), 0.2);
  EXPECT_LT(w.waited.count(), 10.0);
  const auto r = kj::runner::run_process_in_pool(server.address(), child({"exit", "0"}));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->how, exit_kind::exited);
}

TEST(pool, servers_started_at_once_count_each_others_claims_under_the_claim_lock) {
  // Six servers, released together, each allowed to serve only where at most two of the six
  // hold their addresses once it holds its own. Their count is slow to start and to answer, as a
  // busy machine would make it: without the claim lock each would claim, count all six and give
  // its address up, and none serve. Under it they claim and count one after another, and two serve.
  const std::string prefix = "kjudge-pool-test-claims-" + std::to_string(::getpid()) + "-";
  const fs::path lock = fs::temp_directory_path() / (prefix + "lock");
  int gate[2];
  ASSERT_EQ(::pipe(gate), 0);
  std::vector<pid_t> servers;
  for (int i = 0; i < 6; ++i) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(gate[1]);
      char c = 0;
      (void)!::read(gate[0], &c, 1);  // until the test closes the gate: all start together
      kj::runner::pool_server_options o;
      o.address = prefix + std::to_string(i);
      o.idle_exit = 120s;
      o.prepare = [&] {  // past the count: serving
        std::ofstream(fs::temp_directory_path() / (o.address + ".serving")).put('1');
        std::this_thread::sleep_for(60s);
      };
      o.child_main = exit_at_once;
      o.claim_lock = lock;
      o.may_claim = [&]() -> std::string {
        std::this_thread::sleep_for(100ms);
        const auto claimed = kj::runner::abstract_sockets(prefix).size();
        std::this_thread::sleep_for(100ms);  // and slow to answer: claims stay while others count
        return claimed > 2 ? "two serve already" : "";
      };
      try {
        ::_exit(kj::runner::serve_pool(o) ? 0 : 3);
      } catch (...) {
        ::_exit(4);
      }
    }
    servers.push_back(pid);
  }
  ::close(gate[0]);
  ::close(gate[1]);
  // Those that do not serve end with 3; the others mark that they serve and stay in prepare.
  std::size_t declined = 0;
  std::size_t marked = 0;
  const auto until = std::chrono::steady_clock::now() + 20s;
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const fs::path mark = fs::temp_directory_path() / (prefix + std::to_string(i) + ".serving");
    int status = 0;
    while (std::chrono::steady_clock::now() < until) {
      if (::waitpid(servers[i], &status, WNOHANG) == servers[i]) {
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3) << "status " << status;
        ++declined;
        servers[i] = -1;
        break;
      }
      if (fs::exists(mark)) {
        ++marked;
        break;
      }
      std::this_thread::sleep_for(10ms);
    }
    fs::remove(mark);
  }
  const auto serving = kj::runner::abstract_sockets(prefix).size();
  for (const pid_t pid : servers) {
    if (pid <= 0) continue;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  fs::remove(lock);
  EXPECT_EQ(marked, 2U);
  fs::remove(fs::path(lock.string() + ".queue"));
  EXPECT_EQ(serving, 2U);
  EXPECT_EQ(declined, 4U);
}

TEST(pool, a_server_that_dies_in_prepare_ends_the_wait) {
  dedicated_server server(exit_at_once, [] { std::this_thread::sleep_for(60s); });
  ASSERT_TRUE(server.claimed());
  auto killer = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(300ms);
    server.stop(SIGKILL);
  });
  const auto w = kj::runner::wait_for_pool(server.address(), 20s);
  killer.get();
  EXPECT_EQ(w.state, kj::runner::pool_state::absent);
  EXPECT_GT(w.waited.count(), 0.2);
  EXPECT_LT(w.waited.count(), 5.0);
}

TEST(pool, a_stopped_server_is_not_asked) {
  // Stopped, it would take the request and answer nothing for 10 s: the requester runs the
  // command itself at once instead.
  dedicated_server server(exec_argv);
  ASSERT_EQ(server.run(child({"exit", "0"})).how, exit_kind::exited);
  ASSERT_EQ(::kill(server.pid(), SIGSTOP), 0);
  for (int i = 0; i < 100 && !process_stopped(server.pid()); ++i) std::this_thread::sleep_for(5ms);
  std::string why;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(kj::runner::run_process_in_pool(server.address(), child({"exit", "0"}), &why));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_EQ(why, "the pool (pid " + std::to_string(server.pid()) + ") is stopped");
  ASSERT_EQ(::kill(server.pid(), SIGCONT), 0);
  EXPECT_EQ(server.run(child({"exit", "4"})).exit_code, 4);
}

TEST(pool, a_child_that_ended_under_a_stopped_pool_has_not_timed_out) {
  // The pool was stopped after its child had ended, before it reported: the evaluation waited
  // out its --timeout and ended as the candidate's timeout.
  dedicated_server server(exec_argv);
  ASSERT_EQ(server.run(child({"exit", "0"})).how, exit_kind::exited);
  auto options = child({"stop-pool", "0"});
  options.timeout = 6s;
  const auto r = server.run(options);
  EXPECT_EQ(r.how, exit_kind::lost) << r.describe();
  EXPECT_NE(r.error.find("did not report the exit status of its child, which had ended"),
            std::string::npos)
      << r.error;
  // Seen once its pipes closed: a look within 0.25 s, then a second for the report.
  EXPECT_LT(r.wall.count(), 3.0);
  ASSERT_EQ(::kill(server.pid(), SIGCONT), 0);

  // Its pipes held open by a descendant: seen at the time limit, still not a timeout, and the
  // descendant killed with the group.
  ASSERT_EQ(server.run(child({"exit", "0"})).how, exit_kind::exited);
  options = child({"stop-pool", "0", "keep"});
  options.timeout = 1s;
  const auto k = server.run(options);
  EXPECT_EQ(k.how, exit_kind::lost) << k.describe();
  EXPECT_GE(k.wall.count(), 1.0);
  EXPECT_LT(k.wall.count(), 4.0);
  ASSERT_EQ(::kill(server.pid(), SIGCONT), 0);

  // A child that really outlives its limit is still timed out.
  options = child({"hang"});
  options.timeout = 300ms;
  EXPECT_EQ(server.run(options).how, exit_kind::timed_out);
}

TEST(pool, a_server_whose_backlog_is_full_is_not_waited_for) {
  // Stopped with its listen backlog full (connections queued, never accepted), the server held
  // a blocking connect without end, past the evaluation's --timeout.
  dedicated_server server(exec_argv);
  ASSERT_EQ(server.run(child({"exit", "0"})).how, exit_kind::exited);
  ASSERT_EQ(::kill(server.pid(), SIGSTOP), 0);
  for (int i = 0; i < 100 && !process_stopped(server.pid()); ++i) std::this_thread::sleep_for(5ms);
  socklen_t length = 0;
  const sockaddr_un addr = abstract_address(server.address(), length);
  std::vector<int> queued;
  for (int i = 0; i < 1000; ++i) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    ASSERT_GE(fd, 0);
    queued.push_back(fd);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), length) != 0) break;  // full
  }
  std::string why;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(kj::runner::run_process_in_pool(server.address(), child({"exit", "0"}), &why));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_EQ(why, "no pool of this user listens at the address");
  for (const int fd : queued) ::close(fd);
  ASSERT_EQ(::kill(server.pid(), SIGCONT), 0);
}

TEST(pool, a_server_stopped_while_it_prepares_is_not_waited_for) {
  dedicated_server server(exit_at_once, [] { std::this_thread::sleep_for(60s); });
  ASSERT_TRUE(server.claimed());
  ASSERT_EQ(::kill(server.pid(), SIGSTOP), 0);
  for (int i = 0; i < 100 && !process_stopped(server.pid()); ++i) std::this_thread::sleep_for(5ms);
  const auto w = kj::runner::wait_for_pool(server.address(), 20s);
  EXPECT_EQ(w.state, kj::runner::pool_state::starting);
  EXPECT_LT(w.waited.count(), 1.0);
}

TEST(pool, no_server_means_no_result) {
  std::string why;
  EXPECT_FALSE(
      kj::runner::run_process_in_pool("kjudge-pool-test-nobody-" + std::to_string(::getpid()),
                                      child({"exit", "0"}), &why)
          .has_value());
  EXPECT_EQ(why, "no pool of this user listens at the address");
}

}  // namespace
