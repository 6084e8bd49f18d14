#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <algorithm>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include <kjudge/core/error.hpp>
#include <kjudge/core/exit_codes.hpp>
#include <kjudge/eval/worker.hpp>
#include <kjudge/eval/worker_pool.hpp>
#include <kjudge/python/bridge.hpp>
#include <kjudge/runner/fence.hpp>
#include <kjudge/runner/pool.hpp>

#include "commands.hpp"

namespace kj::app {

namespace fs = std::filesystem;

namespace {

/** Ends the process without interpreter finalisation or static destructors: torch's teardown is
 *  slow, and after a candidate's CUDA error the context is unusable anyway. Everything was
 *  reported before. */
[[noreturn]] void exit_without_teardown(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);
}

/** Before any problem or candidate code runs: the worker becomes non-dumpable (no process of
 *  the user can read or write its memory, the job's secrets among it) and fences itself and
 *  what it starts off its ancestors and `kjudge eval`'s (runner/fence.hpp). A kernel without
 *  seccomp filters leaves the worker unfenced, flagged (worker_not_fenced). */
void fence_worker(const eval::job& j, eval::event_writer& events) {
  runner::set_not_dumpable();
  std::vector<runner::fenced_process> keep = runner::ancestry(::getppid());
  // An exec'd worker's ancestors hold `kjudge eval` already; a pooled one's do not.
  const bool known = std::any_of(keep.begin(), keep.end(),
                                 [&](const auto& p) { return p.pid == j.orchestrator_pid; });
  if (j.orchestrator_pid > 0 && !known)
    for (auto& p : runner::ancestry(j.orchestrator_pid)) keep.push_back(std::move(p));
  if (const std::string why = runner::install_fence(keep); !why.empty())
    events.flag("worker_not_fenced", "warning",
                fmt::format("the worker could not fence itself off kjudge's processes ({}): "
                            "the candidate's code could stop or signal them "
                            "(docs/methodology.md, \"The worker's fence\")",
                            why));
}

}  // namespace

int run_worker_command() {
  // Started by hand (no event channel), it would wait for a job on the terminal, then abort.
  if (::fcntl(eval::channel_fd, F_GETFD) < 0) {
    std::fprintf(stderr,
                 "kjudge worker: not for direct use: it runs one evaluation for kjudge eval, "
                 "reading the job on stdin and reporting on descriptor %d, which is not open "
                 "here; run kjudge eval <problem.py> <candidate> instead\n",
                 eval::channel_fd);
    return exit_code::usage;
  }
  // The job (with the held-out seed) arrives on stdin; read it all, then put /dev/null there so
  // nothing the candidate runs can read it.
  std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  const int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) {
    ::dup2(devnull, STDIN_FILENO);
    ::close(devnull);
  }
  std::optional<eval::event_writer> made;
  try {
    made.emplace(eval::channel_fd);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kjudge worker: %s\n", e.what());
    return exit_code::usage;
  }
  eval::event_writer& events = *made;
  try {
    const auto j = eval::job_from_json(nlohmann::json::parse(text));
    fence_worker(j, events);
    eval::run_worker(j, events, [] { exit_without_teardown(0); });
  } catch (const std::exception& e) {
    events.final(eval_status::internal_error, fmt::format("worker: {}", e.what()));
  }
  exit_without_teardown(0);
}

int run_worker_pool_command(int argc, char** argv) {
  runner::pool_server_options o;
  python::session_options py;
  std::vector<std::pair<fs::path, fs::file_time_type>> import_dirs;
  int max_pools = 0;  // no limit unless given
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--address") {
      o.address = value;
    } else if (flag == "--python") {
      py.python_executable = value;
    } else if (flag == "--idle-exit-s") {
      o.idle_exit = std::chrono::seconds(std::strtol(value, nullptr, 10));
    } else if (flag == "--max-pools") {
      max_pools = static_cast<int>(std::strtol(value, nullptr, 10));
    } else {
      std::fprintf(stderr, "kjudge worker-pool: unknown option %s\n", flag.c_str());
      return 2;
    }
  }
  if (o.address.empty() || py.python_executable.empty() || o.idle_exit.count() <= 0 ||
      max_pools < 0) {
    std::fprintf(stderr,
                 "usage: kjudge worker-pool --address NAME --python PYTHON3 [--idle-exit-s N] "
                 "[--max-pools N]\n");
    return 2;
  }
  // Evaluations that start pools at the same moment each counted the pools before theirs
  // started: counted again here, one pool after another, the number holds.
  if (max_pools > 0) {
    o.may_claim = [&] { return eval::pools_beyond(max_pools, o.idle_exit, o.address); };
    o.claim_lock = eval::pool_claim_lock();
  }
  // The interpreter and torch are loaded once the address is ours; CUDA never is (a forked
  // child could not use it): each worker initialises its own.
  o.prepare = [&] {
    std::fprintf(stderr, "kjudge worker-pool: pid %d serves %s (python %s); importing torch\n",
                 static_cast<int>(::getpid()), o.address.c_str(),
                 py.python_executable.string().c_str());
    // A start that hangs (an import stalled on a file system, a site module that blocks) ends
    // the pool after 2 minutes (SIGALRM, default action), freeing its address for another: until
    // then evaluations wait for it, at most until it is 30 s old (docs/methodology.md).
    ::signal(SIGALRM, SIG_DFL);  // whatever the process that started the pool left behind
    sigset_t alarm_only;
    sigemptyset(&alarm_only);
    sigaddset(&alarm_only, SIGALRM);
    ::sigprocmask(SIG_UNBLOCK, &alarm_only, nullptr);
    ::alarm(120);
    python::prewarm(py);
    ::alarm(0);
    // What the interpreter imports from, as it was when torch was imported: a package installed,
    // upgraded or removed since (pip changes these directories) makes the pool stale.
    for (const auto& dir : python::prewarmed_import_dirs()) {
      std::error_code ec;
      import_dirs.emplace_back(dir, fs::last_write_time(dir, ec));
    }
    std::fprintf(stderr, "kjudge worker-pool: pid %d ready\n", static_cast<int>(::getpid()));
  };
  o.stale = [&import_dirs]() -> std::string {
    for (const auto& [dir, when] : import_dirs) {
      std::error_code ec;
      if (fs::last_write_time(dir, ec) != when)
        return fmt::format(
            "{} changed since the pool imported torch (a package installed, "
            "upgraded or removed)",
            dir.string());
    }
    return {};
  };
  o.before_fork = python::before_fork;
  o.after_fork_parent = python::after_fork_parent;
  o.after_fork_child = python::after_fork_child;
  o.child_main = [](const std::vector<std::string>& args) {
    if (args.size() < 2 || args[1] != "worker") {
      std::fprintf(stderr, "kjudge worker-pool: only 'worker' runs here\n");
      exit_without_teardown(2);
    }
    std::_Exit(run_worker_command());
  };
  // The server runs in a child of this process, which only waits for it: a server killed while
  // its workers run (from outside, by the OOM killer, or by a candidate, whose worker's parent
  // it is) leaves them, and the daemons they had adopted, to this process, which kills them
  // (without it they would outlive their evaluations, reparented to init).
  return runner::run_guarded(
      [&]() -> int {
        try {
          if (!runner::serve_pool(o)) return 0;  // another pool serves this address already
        } catch (const std::exception& e) {
          std::fprintf(stderr, "kjudge worker-pool: %s\n", e.what());
          exit_without_teardown(1);
        }
        exit_without_teardown(0);  // as the worker
      },
      [](int status, std::size_t killed) {  // in this process, the server's parent
        if (status == 0 && killed == 0) return;
        std::fprintf(stderr,
                     "kjudge worker-pool: pid %d: the server ended with status %d; killed %zu "
                     "processes its workers left behind\n",
                     static_cast<int>(::getpid()), status, killed);
      });
}

}  // namespace kj::app
