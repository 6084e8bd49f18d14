#include <kjudge/eval/worker_pool.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include <kjudge/config.hpp>
#include <kjudge/core/sha256.hpp>

extern char** environ;  // NOLINT: POSIX global

namespace kj::eval {

namespace fs = std::filesystem;

std::string pool_address(const fs::path& executable, const fs::path& python) {
  std::error_code ec;
  const auto size = fs::file_size(executable, ec);
  const auto mtime = fs::last_write_time(executable, ec).time_since_epoch().count();
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const auto name = entry.substr(0, entry.find('='));
    if (name == "PWD" || name == "OLDPWD" || name == "SHLVL" || name == "_") continue;
    env.emplace_back(entry);
  }
  std::sort(env.begin(), env.end());
  std::string key = fmt::format("{}\n{}\n{}\n{}\n{}\n{}\n", KJ_VERSION, executable.string(), size,
                                mtime, python.string(), ::getuid());
  for (const auto& e : env) key += e + '\n';
  return fmt::format("kjudge-pool-{}-{}", ::getuid(), sha256_hex(key).substr(0, 24));
}

bool start_pool(const fs::path& executable, const std::string& address, const fs::path& python,
                std::chrono::seconds idle_exit, const fs::path& log) {
  std::vector<std::string> args = {
      executable.string(), "worker-pool",   "--address",     address,
      "--python",          python.string(), "--idle-exit-s", std::to_string(idle_exit.count())};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::error_code ec;
  fs::create_directories(log.parent_path(), ec);
  const std::string log_path = log.string();

  const pid_t first = ::fork();
  if (first < 0) return false;
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
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::_exit(pool < 0 ? 1 : 0);
  }
  int status = 0;
  while (::waitpid(first, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace kj::eval
