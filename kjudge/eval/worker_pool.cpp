#include <kjudge/eval/worker_pool.hpp>

#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include <kjudge/config.hpp>
#include <kjudge/core/error.hpp>
#include <kjudge/core/file_io.hpp>
#include <kjudge/core/sha256.hpp>
#include <kjudge/runner/file_lock.hpp>
#include <kjudge/runner/pool.hpp>

extern char** environ;  // NOLINT: POSIX global

namespace kj::eval {

namespace fs = std::filesystem;

namespace {

/** The file's text, or "" where /proc does not have it (the pool key and count then lack it). */
std::string read_text(const fs::path& p) {
  try {
    return read_file(p);
  } catch (const kj::error&) {
    return "";
  }
}

/** What a forked worker inherits from the pool rather than from its requester, besides the
 *  environment: namespaces, cgroup, resource limits, CPU affinity, umask and nice value. Two
 *  requesters that differ in any of these get different pools. */
std::string process_attributes() {
  std::string out;
  std::error_code ec;
  for (const char* ns : {"mnt", "pid", "user", "cgroup", "net", "ipc", "uts"})
    out += fs::read_symlink(fs::path("/proc/self/ns") / ns, ec).string() + '\n';
  out += read_text("/proc/self/cgroup");
  for (int r = 0; r < RLIM_NLIMITS; ++r) {
    rlimit l{};
    if (::getrlimit(static_cast<__rlimit_resource>(r), &l) == 0)
      out += fmt::format("{} {} {}\n", r, l.rlim_cur, l.rlim_max);
  }
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (::sched_getaffinity(0, sizeof cpus, &cpus) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &cpus)) out += fmt::format("{},", c);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  errno = 0;
  const int nice = ::getpriority(PRIO_PROCESS, 0);
  out += fmt::format("\numask {:o} nice {}\n", mask, nice);
  return out;
}

/** Pools of this user but the one at `own_address`: names that a socket other than a connection
 *  holds, listening or still starting (a pool's accepted connections carry its name too). */
int running_pools(const std::string& own_address) {
  std::set<std::string> names;
  for (const auto& s : runner::abstract_sockets(pool_address_prefix()))
    if (!s.connected && s.name != own_address) names.insert(s.name);
  return static_cast<int>(names.size());
}

}  // namespace

std::string pool_address(const fs::path& executable, const fs::path& python) {
  std::error_code ec;
  const auto size = fs::file_size(executable, ec);
  const auto mtime = fs::last_write_time(executable, ec).time_since_epoch().count();
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const auto name = entry.substr(0, entry.find('='));
    // The shell's bookkeeping, KJUDGE_POOL, which only says whether to use a pool (set to 1 or
    // unset, the same pool serves), and KJUDGE_POOL_MAX, which only says how many may run.
    if (name == "PWD" || name == "OLDPWD" || name == "SHLVL" || name == "_" ||
        name == "KJUDGE_POOL" || name == "KJUDGE_POOL_MAX")
      continue;
    env.emplace_back(entry);
  }
  std::sort(env.begin(), env.end());
  std::string key = fmt::format("{}\n{}\n{}\n{}\n{}\n{}\n", KJ_VERSION, executable.string(), size,
                                mtime, python.string(), ::getuid());
  key += process_attributes();
  for (const auto& e : env) key += e + '\n';
  return pool_address_prefix() + sha256_hex(key).substr(0, 24);
}

std::string pool_address_prefix() {
  return fmt::format("kjudge-pool-{}-", ::getuid());
}

std::string pools_beyond(int max_pools, std::chrono::seconds idle_exit,
                         const std::string& own_address) {
  const int running = running_pools(own_address);
  if (running < max_pools) return {};
  return fmt::format(
      "worker pools of this user running already: {}, the most allowed (KJUDGE_POOL_MAX={}); "
      "an idle one exits after {} s without requests",
      running, max_pools, idle_exit.count());
}

fs::path pool_claim_lock() {
  return runner::lock_dir() / fmt::format("kjudge-pools-{}.lock", ::getuid());
}

bool start_pool(const fs::path& executable, const std::string& address, const fs::path& python,
                std::chrono::seconds idle_exit, const fs::path& log, int max_pools,
                std::string& why) {
  if (why = pools_beyond(max_pools, idle_exit); !why.empty()) return false;
  std::vector<std::string> args = {executable.string(), "worker-pool",
                                   "--address",         address,
                                   "--python",          python.string(),
                                   "--idle-exit-s",     std::to_string(idle_exit.count()),
                                   "--max-pools",       std::to_string(max_pools)};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::error_code ec;
  fs::create_directories(log.parent_path(), ec);
  const std::string log_path = log.string();

  const pid_t first = ::fork();
  if (first < 0) {
    why = fmt::format("fork failed: {}", std::strerror(errno));
    return false;
  }
  if (first == 0) {
    // The intermediate child: a new session, then the pool as its child, then gone, so the pool
    // is nobody's child here and outlives this command.
    ::setsid();
    const pid_t pool = ::fork();
    if (pool == 0) {
      const int in = ::open("/dev/null", O_RDONLY);
      const int out = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      if (in < 0 || out < 0 || ::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(out, 2) < 0)
        ::_exit(127);
      ::close_range(3, ~0U, 0);
      if (::chdir("/") != 0) ::_exit(127);  // keep no requester's directory busy
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::_exit(pool < 0 ? 1 : 0);
  }
  int status = 0;
  while (::waitpid(first, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  why = "the second fork, which makes the pool nobody's child, failed";
  return false;
}

}  // namespace kj::eval
