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

/** How the addresses of this user's pools start: "kjudge-pool-<uid>-". */
[[nodiscard]] std::string pool_address_prefix();

/** The abstract socket name of the pool for `executable` and `python` in this environment. */
[[nodiscard]] std::string pool_address(const std::filesystem::path& executable,
                                       const std::filesystem::path& python);

/** Starts `executable worker-pool --address A --python P --idle-exit-s N --max-pools M` detached
 *  (a session of its own, working directory /, stdin from /dev/null, stdout and stderr appended to
 *  `log`) and returns without waiting for it. False, with the reason in `why`, when `max_pools`
 *  pools of this user run already (pools_beyond) or it could not be forked. The pool counts
 *  again as it claims its address, under pool_claim_lock(), and does not serve where pools
 *  started since (at the same moment by other evaluations) have reached the number. */
bool start_pool(const std::filesystem::path& executable, const std::string& address,
                const std::filesystem::path& python, std::chrono::seconds idle_exit,
                const std::filesystem::path& log, int max_pools, std::string& why);

/** Why one more pool of this user would be one too many where `max_pools` may run ("worker
 *  pools of this user running already: 4, the most allowed (KJUDGE_POOL_MAX=4); ..."), or "".
 *  Pools are counted by their sockets (listening, or claimed by a pool still starting), the one
 *  at `own_address` (the pool that asks) left out. */
[[nodiscard]] std::string pools_beyond(int max_pools, std::chrono::seconds idle_exit,
                                       const std::string& own_address = {});

/** The lock under which a starting pool counts this user's pools and claims its address:
 *  kjudge-pools-<uid>.lock in $KJUDGE_LOCK_DIR, else /tmp (where the GPU locks are). */
[[nodiscard]] std::filesystem::path pool_claim_lock();

}  // namespace kj::eval
