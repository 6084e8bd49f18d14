#pragma once
/** @file kjudge's worker pool (kjudge/runner/pool.hpp): which pool serves an evaluation, and
 *  starting one. A pool is specific to one kjudge executable (path and modification time), one
 *  Python interpreter, one user and one environment (minus variables that change from shell to
 *  shell: PWD, OLDPWD, SHLVL, _), since torch reads some of its environment at import. */

#include <chrono>
#include <filesystem>
#include <string>

namespace kj::eval {

/** The abstract socket name of the pool for `executable` and `python` in this environment. */
[[nodiscard]] std::string pool_address(const std::filesystem::path& executable,
                                       const std::filesystem::path& python);

/** Starts `executable worker-pool --address A --python P --idle-exit-s N` detached (a session of
 *  its own, stdin from /dev/null, stdout and stderr appended to `log`) and returns without
 *  waiting for it. False when it could not be forked. */
bool start_pool(const std::filesystem::path& executable, const std::string& address,
                const std::filesystem::path& python, std::chrono::seconds idle_exit,
                const std::filesystem::path& log);

}  // namespace kj::eval
