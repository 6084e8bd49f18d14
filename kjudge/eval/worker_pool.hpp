#pragma once
/** @file kjudge's worker pool (kjudge/runner/pool.hpp): which pool serves an evaluation, and
 *  starting one. A pool is specific to one kjudge executable (path, size, modification time), one
 *  Python interpreter, one user, one environment (minus variables that change from shell to
 *  shell: PWD, OLDPWD, SHLVL, _; torch reads some of it at import) and the process attributes a
 *  forked worker inherits from the pool instead of its requester (namespaces, cgroup, resource
 *  limits, CPU affinity, umask, nice value). */

#include <chrono>
#include <filesystem>
#include <string>

namespace kj::eval {

/** Pools of one user at a time by default (an idle pool holds about half a GB): beyond it, no new
 *  one. KJUDGE_POOL_MAX sets another number (docs/cli.md). */
inline constexpr int k_default_max_pools = 4;

/** The abstract socket name of the pool for `executable` and `python` in this environment. */
[[nodiscard]] std::string pool_address(const std::filesystem::path& executable,
                                       const std::filesystem::path& python);

/** Starts `executable worker-pool --address A --python P --idle-exit-s N` detached (a session of
 *  its own, working directory /, stdin from /dev/null, stdout and stderr appended to `log`) and
 *  returns without waiting for it. False, with the reason in `why`, when `max_pools` pools of this
 *  user run already (listening or starting) or it could not be forked. */
bool start_pool(const std::filesystem::path& executable, const std::string& address,
                const std::filesystem::path& python, std::chrono::seconds idle_exit,
                const std::filesystem::path& log, int max_pools, std::string& why);

}  // namespace kj::eval
