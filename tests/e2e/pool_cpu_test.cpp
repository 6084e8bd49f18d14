// End-to-end tests of the worker pool on the CPU: the first evaluation starts the worker pool,
// later ones are forked from it (torch already imported) and are judged exactly as before,
// crashes, hangs and wrong answers included; the pool is the default, --no-pool and KJUDGE_POOL=0
// turn it off. The pool is this test's own (a marker variable in
// the environment makes its address unique) and is stopped at the end.
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <memory>
#include <regex>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include <kjudge/config.hpp>
#include <kjudge/runner/pool.hpp>

#include "kjudge_runner.hpp"

namespace kj::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class PoolCpu : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    s_cache = fs::temp_directory_path() / ("kjudge_pool_e2e_" + std::to_string(::getpid()));
    fs::remove_all(s_cache);
    fs::create_directories(s_cache);
    ::setenv("KJUDGE_CACHE_DIR", s_cache.c_str(), 1);
    ::setenv("KJ_POOL_TEST_MARKER", std::to_string(::getpid()).c_str(), 1);
    // Pools this user runs outside the test (other evaluations, other test runs: an idle pool
    // lives 10 minutes) must not use up the number allowed, or these tests would start none.
    ::setenv("KJUDGE_POOL_MAX", "64", 1);
  }
  static void TearDownTestSuite() {
    for (const pid_t pid : pool_pids()) ::kill(pid, SIGTERM);
    ::unsetenv("KJ_POOL_TEST_MARKER");
    fs::remove_all(s_cache);
  }
  static std::string log() {
    std::ifstream in(s_cache / "worker-pool.log");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  /** Every pool that said it was ready, in the order of the log. */
  static std::vector<pid_t> pool_pids() {
    std::vector<pid_t> pids;
    const std::string text = log();
    const std::regex ready("pid (\\d+) ready");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), ready);
         it != std::sregex_iterator(); ++it)
      pids.push_back(std::stoi((*it)[1]));
    return pids;
  }
  /** Pools that claimed their address (and started importing torch), as the log says. */
  static std::size_t pool_starts() {
    const std::string text = log();
    std::size_t n = 0;
    for (auto at = text.find("importing torch"); at != std::string::npos;
         at = text.find("importing torch", at + 1))
      ++n;
    return n;
  }
  /** Waits for one more pool than `before` to have imported torch. */
  static bool pool_ready(std::size_t before = 0) {
    for (int i = 0; i < 600; ++i) {
      if (pool_pids().size() > before) return true;
      std::this_thread::sleep_for(200ms);
    }
    return false;
  }
  static inline fs::path s_cache;
};

/** A unix socket bound to `name` in the abstract namespace (sun_path[0] is NUL), as a pool's
 *  claim looks; -1 where it cannot be made. */
int hold_abstract_socket(const std::string& name) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    const int error = errno;  // for the caller's message, past close()
    ::close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

const std::vector<std::string> cpu_pool = {"--device", "cpu", "--budget", "0.2",
                                           "--trials", "3",   "--pool"};

TEST_F(PoolCpu, FirstStartsThePoolThenEvaluationsAreForkedFromIt) {
  const auto first = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", cpu_pool);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_EQ(first.result["worker"]["started_by"], "exec+pool_started");
  ASSERT_TRUE(pool_ready()) << "pool log:\n" << log();

  const auto second = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", cpu_pool);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  const auto& w = second.result["worker"];
  EXPECT_EQ(w["started_by"], "pool");
  ASSERT_FALSE(w["phases"].empty());
  EXPECT_EQ(w["phases"][0]["name"], "python_prewarmed");
  EXPECT_EQ(second.result["status"], "correct");
  EXPECT_EQ(second.result["correctness"]["trials_passed"], 3);
  EXPECT_TRUE(second.result["timing"]["candidate"]["host_wall"]["valid"].get<bool>());
  EXPECT_GT(w["max_rss_kb"].get<std::uint64_t>(), 0U);

  // Each evaluation is a process of its own: a crash, a hang and a wrong answer come back as
  // they do without the pool, and the pool goes on serving.
  const auto crash =
      run_eval("problems/level1/softmax.py", "examples/faulty/segfault.py", cpu_pool);
  EXPECT_EQ(crash.exit_code, 4) << crash.output;
  EXPECT_EQ(crash.result["status"], "crashed");
  EXPECT_EQ(crash.result["worker"]["signal"], 11);
  EXPECT_EQ(crash.result["worker"]["started_by"], "pool");

  auto hang_args = cpu_pool;
  hang_args.insert(hang_args.end(), {"--timeout", "20"});
  const auto hang = run_eval("problems/level1/softmax.py", "examples/faulty/hang.py", hang_args);
  EXPECT_EQ(hang.exit_code, 5) << hang.output;
  EXPECT_EQ(hang.result["status"], "timed_out");
  EXPECT_EQ(hang.result["worker"]["started_by"], "pool");

  const auto wrong =
      run_eval("problems/level1/softmax.py", "examples/faulty/wrong_values.py", cpu_pool);
  EXPECT_EQ(wrong.exit_code, 1) << wrong.output;
  EXPECT_EQ(wrong.result["status"], "incorrect");

  // A candidate's signal to its parent (the worker's guard; before the guard, the pool's server,
  // and every evaluation the pool ran was lost as kjudge's internal error) is refused by the
  // worker's fence; one to its own process group kills the guard with the worker, not the pool:
  // a crash, as without the pool. The candidate exits 3 where the first got through.
  const fs::path killer = s_cache / "kills_parent.py";
  std::ofstream(killer) << "import os, signal, time\n"
                           "import torch\n"
                           "class ModelNew(torch.nn.Module):\n"
                           "    def forward(self, x):\n"
                           "        try:\n"
                           "            os.kill(os.getppid(), signal.SIGKILL)\n"
                           "            os._exit(3)\n"
                           "        except PermissionError:\n"
                           "            os.killpg(0, signal.SIGKILL)\n"
                           "        time.sleep(30)\n"
                           "        return torch.softmax(x, dim=-1)\n";
  const auto parent = run_eval("problems/level1/softmax.py", killer.string(), cpu_pool);
  EXPECT_EQ(parent.exit_code, 4) << parent.output;
  EXPECT_EQ(parent.result["status"], "crashed") << parent.output;
  EXPECT_EQ(parent.result["worker"]["signal"], 9) << parent.output;
  EXPECT_EQ(parent.result["worker"]["started_by"], "pool");

  const auto again = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", cpu_pool);
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(again.result["worker"]["started_by"], "pool");

  // Python in a forked worker sees the worker's environment, not the pool's: the pool was started
  // without TORCH_EXTENSIONS_DIR, which the orchestrator gives each worker.
  const fs::path candidate = s_cache / "env_check.py";
  std::ofstream(candidate) << "import os\n"
                              "import torch\n"
                              "d = os.environ.get('TORCH_EXTENSIONS_DIR', '')\n"
                              "assert os.path.basename(os.path.dirname(d)) == "
                              "'torch_extensions', repr(d)\n"
                              "class ModelNew(torch.nn.Module):\n"
                              "    def forward(self, x):\n"
                              "        return torch.softmax(x, dim=-1)\n";
  const auto env = run_eval("problems/level1/softmax.py", candidate.string(), cpu_pool);
  EXPECT_EQ(env.exit_code, 0) << env.output;
  EXPECT_EQ(env.result["worker"]["started_by"], "pool");
}

// The first evaluation starts the pool before its own worker; one that starts while that pool is
// still importing torch waits for it and is forked from it, rather than importing torch itself.
// The pool's start is made 3 s longer by a sitecustomize module that sleeps (on PYTHONPATH, part
// of this pool's environment; a worker forked from the pool does not start Python again).
TEST_F(PoolCpu, AnEvaluationWaitsForAPoolThatIsStillStarting) {
  const fs::path site = s_cache / "slow_site";
  fs::create_directories(site);
  std::ofstream(site / "sitecustomize.py") << "import time\ntime.sleep(3)\n";
  ::setenv("KJ_POOL_TEST_MARKER", (std::to_string(::getpid()) + "-wait").c_str(), 1);
  ::setenv("PYTHONPATH", site.c_str(), 1);
  const std::size_t before = pool_starts();
  auto first = std::async(std::launch::async, [] {
    return run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", cpu_pool);
  });
  bool claimed = false;
  for (int i = 0; i < 1500 && !claimed; ++i) {
    claimed = pool_starts() > before;
    if (!claimed) std::this_thread::sleep_for(20ms);
  }
  const auto second =
      claimed ? run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", cpu_pool)
              : kjudge_run{};
  const auto a = first.get();
  ::unsetenv("PYTHONPATH");
  ::setenv("KJ_POOL_TEST_MARKER", std::to_string(::getpid()).c_str(), 1);
  ASSERT_TRUE(claimed) << "no pool started; pool log:\n" << log();
  ASSERT_EQ(a.exit_code, 0) << a.output;
  EXPECT_EQ(a.result["worker"]["started_by"], "exec+pool_started");
  EXPECT_EQ(a.result["worker"]["pool_wait_s"], 0.0);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  const auto& w = second.result["worker"];
  EXPECT_EQ(w["started_by"], "pool");
  EXPECT_GT(w["pool_wait_s"].get<double>(), 0.5);
  EXPECT_LT(w["pool_wait_s"].get<double>(), 30.0);
  EXPECT_NE(second.output.find("waiting for it to finish starting"), std::string::npos)
      << second.output;
}

// A pool whose interpreter's import folders changed (a package installed, upgraded or removed)
// refuses the next evaluation, which runs its own worker, and ends: it used to serve on with the
// packages of its start (a `.pth` added since was never read). Its interpreter is given by a
// relative path, which the pool (it runs from /) could not find before.
TEST_F(PoolCpu, APoolWhoseImportFoldersChangedRefusesAndEnds) {
  const auto probe = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py",
                              {"--device", "cpu", "--no-timing", "--trials", "1", "--no-pool"});
  ASSERT_EQ(probe.exit_code, 0) << probe.output;
  const fs::path python = probe.result["options"]["python"].get<std::string>();
  const fs::path relative = python.lexically_relative(fs::current_path());  // not resolved
  ASSERT_TRUE(relative.is_relative()) << relative;
  const fs::path extra = s_cache / "extra_path";
  fs::create_directories(extra);
  ::setenv("KJ_POOL_TEST_MARKER", (std::to_string(::getpid()) + "-stale").c_str(), 1);
  ::setenv("PYTHONPATH", extra.c_str(), 1);
  auto args = cpu_pool;
  args.insert(args.end(), {"--python", relative.string()});
  const std::size_t before = pool_pids().size();
  const auto first = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", args);
  const bool ready = pool_ready(before);
  const auto second = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", args);
  std::this_thread::sleep_for(50ms);
  std::ofstream(extra / "new_module.py") << "X = 1\n";  // the folder's mtime changes
  const auto third = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", args);
  ::unsetenv("PYTHONPATH");
  ::setenv("KJ_POOL_TEST_MARKER", std::to_string(::getpid()).c_str(), 1);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  ASSERT_TRUE(ready) << "pool log:\n" << log();
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_EQ(second.result["worker"]["started_by"], "pool");
  ASSERT_EQ(third.exit_code, 0) << third.output;
  EXPECT_NE(third.result["worker"]["started_by"], "pool");
  // The evaluation says why it was not forked, in its result and on the terminal.
  const std::string refused = third.result["worker"].value("pool_refused", "");
  EXPECT_EQ(refused.rfind("the pool refused it: stale pool: ", 0), 0U) << third.result.dump(1);
  EXPECT_NE(third.output.find("worker pool not used: the pool refused it: stale pool"),
            std::string::npos)
      << third.output;
  EXPECT_EQ(second.result["worker"].value("pool_refused", "?"), "");
  // The pool that refused says so (the third evaluation may have started the next pool).
  std::smatch m;
  const std::string text = log();
  ASSERT_TRUE(std::regex_search(
      text, m, std::regex("pid (\\d+) stops: .* changed since the pool imported torch")))
      << text;
  const pid_t stale = std::stoi(m[1]);
  bool ended = false;
  for (int i = 0; i < 100 && !ended; ++i) {
    ended = ::kill(stale, 0) != 0;
    if (!ended) std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(ended) << "the stale pool " << stale << " is still running";
}

// A pool killed while its worker runs: the worker dies with it (and the evaluation ends as an
// internal error), and a daemon the candidate had started (setsid: out of the worker's group,
// adopted by the worker) is killed by the process that runs the pool's server, which it then
// goes to; it used to go to init and outlive the evaluation.
TEST_F(PoolCpu, APoolKilledWhileItsWorkerRunsTakesTheCandidatesDaemonWithIt) {
  ::setenv("KJ_POOL_TEST_MARKER", (std::to_string(::getpid()) + "-guard").c_str(), 1);
  const std::size_t before = pool_pids().size();
  const auto first = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", cpu_pool);
  const bool ready = pool_ready(before);
  const fs::path pid_file = s_cache / "daemon.pid";
  const fs::path candidate = s_cache / "daemon_then_hang.py";
  std::ofstream(candidate) << "import os, time\n"
                              "import torch\n"
                              "r, w = os.pipe()\n"
                              "if os.fork() == 0:\n"
                              "    os.setsid()\n"
                              "    if os.fork() == 0:\n"
                              "        os.write(w, str(os.getpid()).encode())\n"
                              "        time.sleep(300)\n"
                              "    os._exit(0)\n"
                              "daemon = os.read(r, 32).decode()\n"
                              "with open('"
                           << pid_file.string()
                           << ".tmp', 'w') as f:\n"
                              "    f.write(daemon)\n"
                              "os.rename('"
                           << pid_file.string() << ".tmp', '" << pid_file.string()
                           << "')\n"
                              "class ModelNew(torch.nn.Module):\n"
                              "    def forward(self, x):\n"
                              "        time.sleep(300)\n"
                              "        return torch.softmax(x, dim=-1)\n";
  auto args = cpu_pool;
  args.insert(args.end(), {"--timeout", "200"});
  auto hung = std::async(std::launch::async, [&] {
    return run_eval("problems/level1/softmax.py", candidate.string(), args);
  });
  pid_t daemon = 0;
  for (int i = 0; i < 600 && daemon == 0; ++i) {
    std::ifstream(pid_file) >> daemon;
    if (daemon == 0) std::this_thread::sleep_for(100ms);
  }
  const auto pools = pool_pids();
  if (ready && pools.size() > before) ::kill(pools[before], SIGKILL);
  const bool ended = hung.wait_for(60s) == std::future_status::ready;
  ::setenv("KJ_POOL_TEST_MARKER", std::to_string(::getpid()).c_str(), 1);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  ASSERT_TRUE(ready) << "pool log:\n" << log();
  ASSERT_GT(daemon, 0) << "the candidate never started its daemon";
  ASSERT_TRUE(ended) << "the evaluation kept waiting for a killed pool";
  const auto r = hung.get();
  EXPECT_EQ(r.exit_code, 7) << r.output;
  EXPECT_EQ(r.result["worker"]["started_by"], "pool") << r.result.dump(1);
  EXPECT_TRUE(gone_within(daemon, 10s)) << "daemon " << daemon << " outlived the killed pool";
  if (!process_gone(daemon)) ::kill(daemon, SIGKILL);
  // The process that ran the server says what it killed (the daemon, and the worker when it was
  // not yet dead of its server's death).
  const std::regex said("the server ended with status 137; killed (\\d+) processes");
  std::smatch m;
  std::string text = log();
  for (int i = 0; i < 100 && !std::regex_search(text, m, said); ++i) {
    std::this_thread::sleep_for(100ms);
    text = log();
  }
  ASSERT_TRUE(std::regex_search(text, m, said)) << text;
  EXPECT_GE(std::stoi(m[1]), 1) << text;
}

// Without --pool or --no-pool, KJUDGE_POOL decides, and unset (or empty) means the pool.
TEST_F(PoolCpu, ThePoolIsTheDefaultAndNoPoolOrKjudgePool0ExecsAWorker) {
  const std::vector<std::string> cpu = {"--device", "cpu", "--budget", "0.2", "--trials", "2"};
  // A pool of this test's own (another marker: another address), whatever ran before.
  ::setenv("KJ_POOL_TEST_MARKER", (std::to_string(::getpid()) + "-default").c_str(), 1);
  ::setenv("KJUDGE_POOL", "", 1);
  ::unsetenv("CUDA_INJECTION64_PATH");
  ::unsetenv("LD_PRELOAD");
  const std::size_t before = pool_pids().size();
  const auto first = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", cpu);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_EQ(first.result["worker"]["started_by"], "exec+pool_started");
  EXPECT_EQ(first.result["worker"]["pool_refused"], "no pool of this user listens at the address");
  EXPECT_NE(first.output.find("worker pool started for the next evaluation"), std::string::npos)
      << first.output;
  EXPECT_EQ(first.output.find("worker pool not used"), std::string::npos) << first.output;
  ASSERT_TRUE(pool_ready(before)) << "pool log:\n" << log();

  const auto pooled = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", cpu);
  ASSERT_EQ(pooled.exit_code, 0) << pooled.output;
  EXPECT_EQ(pooled.result["worker"]["started_by"], "pool");
  EXPECT_NE(pooled.output.find("forked from the worker pool"), std::string::npos) << pooled.output;

  auto no_pool = cpu;
  no_pool.emplace_back("--no-pool");
  const auto execd = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", no_pool);
  ASSERT_EQ(execd.exit_code, 0) << execd.output;
  EXPECT_EQ(execd.result["worker"]["started_by"], "exec");

  // Under a tool that injects itself (here a harmless preload), no pool by default: it would
  // outlive the tool's session.
  ::setenv("LD_PRELOAD", "libm.so.6", 1);
  const auto injected = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", cpu);
  ::unsetenv("LD_PRELOAD");
  ASSERT_EQ(injected.exit_code, 0) << injected.output;
  EXPECT_EQ(injected.result["worker"]["started_by"], "exec");

  ::setenv("KJUDGE_POOL", "0", 1);
  const auto env_off = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", cpu);
  ASSERT_EQ(env_off.exit_code, 0) << env_off.output;
  EXPECT_EQ(env_off.result["worker"]["started_by"], "exec");

  ::setenv("KJUDGE_POOL", "yes", 1);
  const auto bad_env = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", cpu);
  EXPECT_EQ(bad_env.exit_code, 2) << bad_env.output;
  EXPECT_NE(bad_env.output.find("KJUDGE_POOL=yes"), std::string::npos) << bad_env.output;
  ::unsetenv("KJUDGE_POOL");

  auto both = cpu;
  both.insert(both.end(), {"--pool", "--no-pool"});
  const auto clash = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", both);
  EXPECT_EQ(clash.exit_code, 2) << clash.output;
}

// With as many pools of the user running as KJUDGE_POOL_MAX allows, an evaluation that finds no
// pool of its own runs its own worker, starts no pool, and says why; a bad KJUDGE_POOL_MAX is a
// usage error. The running pool is a listening socket under a pool's name held by this test
// (kjudge counts pools by their sockets), so the count does not wait on a real pool's start.
TEST_F(PoolCpu, NoPoolIsStartedBeyondKjudgePoolMaxAndTheResultSaysWhy) {
  const std::string name =
      "kjudge-pool-" + std::to_string(::getuid()) + "-test-held-" + std::to_string(::getpid());
  const int fd = hold_abstract_socket(name);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ASSERT_EQ(::listen(fd, 1), 0);
  ::setenv("KJ_POOL_TEST_MARKER", (std::to_string(::getpid()) + "-max").c_str(), 1);
  ::setenv("KJUDGE_POOL_MAX", "1", 1);
  const std::size_t before = pool_starts();
  const auto full = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", cpu_pool);
  ::setenv("KJUDGE_POOL_MAX", "0", 1);
  const auto zero = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", cpu_pool);
  ::setenv("KJUDGE_POOL_MAX", "4x", 1);
  const auto junk = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", cpu_pool);
  // A limit on pools: without the pool it is not read.
  std::vector<std::string> no_pool = cpu_pool;
  no_pool.back() = "--no-pool";  // in place of --pool
  const auto unread = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", no_pool);
  // A pool started anyway (by an evaluation that counted before the held socket was there)
  // counts again as it claims its address, and does not serve.
  const auto late = run_raw({"worker-pool", "--address", name + "-late", "--python",
                             KJ_DEFAULT_PYTHON, "--idle-exit-s", "5", "--max-pools", "1"});
  ::setenv("KJUDGE_POOL_MAX", "64", 1);
  ::setenv("KJ_POOL_TEST_MARKER", std::to_string(::getpid()).c_str(), 1);
  ::close(fd);

  ASSERT_EQ(full.exit_code, 0) << full.output;
  const auto& w = full.result["worker"];
  EXPECT_EQ(w["started_by"], "exec");
  EXPECT_EQ(w["pool_refused"], "no pool of this user listens at the address");
  const std::string why = w.value("pool_not_started", "");
  EXPECT_NE(why.find("worker pools of this user running already: "), std::string::npos) << why;
  EXPECT_NE(why.find("(KJUDGE_POOL_MAX=1)"), std::string::npos) << why;
  EXPECT_NE(full.output.find("no worker pool started: worker pools of this user running"),
            std::string::npos)
      << full.output;
  std::this_thread::sleep_for(1s);  // a pool started anyway would have logged its claim by now
  EXPECT_EQ(pool_starts(), before) << "a pool was started:\n" << log();

  EXPECT_EQ(zero.exit_code, 2) << zero.output;
  EXPECT_NE(zero.output.find("KJUDGE_POOL_MAX=0"), std::string::npos) << zero.output;
  EXPECT_EQ(junk.exit_code, 2) << junk.output;
  EXPECT_NE(junk.output.find("KJUDGE_POOL_MAX=4x"), std::string::npos) << junk.output;
  EXPECT_EQ(unread.exit_code, 0) << unread.output;
  EXPECT_EQ(late.exit_code, 0) << late.output;
  EXPECT_NE(late.output.find("does not serve " + name +
                             "-late: worker pools of this user "
                             "running already: "),
            std::string::npos)
      << late.output;
  EXPECT_EQ(late.output.find("importing torch"), std::string::npos) << late.output;
}

// `kjudge pool` lists this user's pools (pid, state, python, executable, requests in hand) and
// `kjudge pool stop <pid>` stops one: a stopped (SIGSTOP) pool only with --force (exit 7 without);
// a process that holds an address of a pool's form but is no pool is not listed, and its pid is a
// usage error, as is --force without stop. The pool is started here directly, under an address of
// its own, so that no other test's pool is listed for it or stopped.
TEST_F(PoolCpu, KjudgePoolListsThisUsersPoolsAndStopsOne) {
  const std::string address = fmt::format("kjudge-pool-{}-test-list-{}", ::getuid(), ::getpid());
  auto pool = std::async(std::launch::async, [&] {
    runner::spawn_options o;
    o.argv = {KJ_KJUDGE_EXE, "worker-pool",     "--address",     address,
              "--python",    KJ_DEFAULT_PYTHON, "--idle-exit-s", "120"};
    o.timeout = 150s;
    return runner::run_process(o);
  });
  pid_t pid = 0;
  for (int i = 0; i < 500 && pid == 0; ++i) {
    for (const auto& p : runner::pool_servers(address)) pid = p.pid;
    if (pid == 0) std::this_thread::sleep_for(20ms);
  }
  // Whatever fails below, the pool ends with the test (the future waits for it otherwise).
  const std::shared_ptr<void> end_pool(nullptr, [&](void*) {
    if (pid > 0) {
      ::kill(pid, SIGCONT);
      ::kill(pid, SIGKILL);
    }
  });
  ASSERT_GT(pid, 0) << "the pool never claimed " << address;
  // Not a pool: this test's own socket under a pool's name.
  const std::string fake_name = fmt::format("kjudge-pool-{}-test-fake-{}", ::getuid(), ::getpid());
  const int fake = hold_abstract_socket(fake_name);
  ASSERT_GE(fake, 0) << std::strerror(errno);

  const auto listed = run_raw({"pool", "--json", "-"});
  EXPECT_EQ(listed.exit_code, 0) << listed.output;
  const auto doc = nlohmann::json::parse(listed.output, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << listed.output;
  EXPECT_EQ(doc["schema"], "kjudge.pool/1");
  bool found = false;
  for (const auto& p : doc["pools"]) {
    EXPECT_NE(p["address"], fake_name) << "a process that is no pool was listed";
    if (p["address"] != address) continue;
    found = true;
    EXPECT_EQ(p["pid"], pid);
    EXPECT_TRUE(p["state"] == "starting" || p["state"] == "accepting") << p.dump();
    EXPECT_EQ(p["python"], KJ_DEFAULT_PYTHON);
    EXPECT_EQ(p["serving"], 0);
    EXPECT_EQ(p["idle_exit_s"], 120);
    EXPECT_EQ(fs::path(p["executable"].get<std::string>()).filename(), "kjudge") << p.dump();
  }
  EXPECT_TRUE(found) << listed.output;
  const auto text = run_raw({"pool"});
  EXPECT_NE(text.output.find(fmt::format("pid {}", pid)), std::string::npos) << text.output;

  EXPECT_EQ(run_raw({"pool", "list", "--force"}).exit_code, 2);
  const auto not_a_pool = run_raw({"pool", "stop", std::to_string(::getpid())});
  ::close(fake);
  EXPECT_EQ(not_a_pool.exit_code, 2) << not_a_pool.output;
  EXPECT_NE(not_a_pool.output.find("is not a worker pool of this user"), std::string::npos)
      << not_a_pool.output;

  // Stopped, it is left without --force, and ended with it.
  ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  const auto left = run_raw({"pool", "stop", std::to_string(pid)});
  EXPECT_EQ(left.exit_code, 7) << left.output;
  EXPECT_NE(left.output.find(fmt::format("left pid {}: stopped", pid)), std::string::npos)
      << left.output;
  EXPECT_NE(left.output.find(" stopped "), std::string::npos) << left.output;  // its state
  const auto stopped = run_raw({"pool", "stop", std::to_string(pid), "--force"});
  EXPECT_EQ(stopped.exit_code, 0) << stopped.output;
  EXPECT_NE(stopped.output.find(fmt::format("stopped pid {}", pid)), std::string::npos)
      << stopped.output;
  EXPECT_TRUE(runner::pool_servers(address).empty());
  ASSERT_EQ(pool.wait_for(30s), std::future_status::ready) << "the pool process did not end";
  const auto ended = pool.get();
  const pid_t server = std::exchange(pid, 0);  // ended: not to be killed at the end
  // The pid stopped is the server's, as it named itself.
  EXPECT_NE(ended.output_tail.find(fmt::format("pid {} serves {}", server, address)),
            std::string::npos)
      << ended.output_tail;
}

}  // namespace
}  // namespace kj::test
