#pragma once
/** @file Building native candidates: one .cu file -> a shared library for the GPU that is present,
 *  with nvcc, cached by a content hash of (source bytes, flags, nvcc and its release, ABI header,
 *  the build environment), each build under a key named by the bytes of every file nvcc resolves
 *  for the source's includes. */

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace kj::compile {

struct nvcc_request {
  std::filesystem::path source;  ///< the candidate .cu
  /** Compute capability as "90", "90a", "100"...: builds -gencode arch=compute_X,code=sm_X. */
  std::string arch;
  std::vector<std::string> extra_flags;  ///< appended after kjudge's own (-O3, -std=c++17 ...)
  std::filesystem::path cache_dir;       ///< e.g. ~/.cache/kjudge/native
  std::filesystem::path include_dir;     ///< holds kjudge/candidate.h
  std::filesystem::path nvcc;            ///< empty: find_nvcc()
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  /** The environment nvcc runs in, as NAME=value; none: this process's, read when called. A
   *  caller that builds on another thread takes it first (runner::environment_snapshot), so
   *  that no thread reads the environment while another may change it. */
  std::optional<std::vector<std::string>> environment;
  /** Where nvcc runs (relative paths resolve there); empty: the current folder when called. */
  std::filesystem::path working_dir;
};

/** Why a build failed: the compiler rejected the source (a compile error: nvcc ran to the end
 *  and exited non-zero, the link included, while it builds an empty source with the same flags
 *  and environment), or the tool did (nvcc missing, killed or unable to build anything that way,
 *  the time limit, the cache folder not writable: not the candidate's fault). */
enum class build_failure { none, rejected, tool };

struct build_result {
  bool ok = false;
  build_failure failure = build_failure::none;
  bool cached = false;            ///< the library came from the cache; no compiler ran
  std::filesystem::path library;  ///< the .so to dlopen, when ok
  std::string key;                ///< cache key (sha256 hex)
  /** The nvcc command line, with the paths of the cache folder the build lives in (nvcc itself
   *  wrote to a temporary folder beside it, renamed into place; an unpublished build stays in
   *  that folder). */
  std::vector<std::string> command;
  /** The compiler's stdout+stderr, complete up to 16 MiB (beyond that the first bytes are
   *  dropped, after a line saying how many). */
  std::string log;
  std::chrono::duration<double> build_time{0};
  std::string nvcc_version;  ///< "13.0.88" (from nvcc --version)
  /** Why a build that succeeded was not filed in the cache (it serves from its own folder);
   *  empty when it was filed or came from the cache. The log ends with the same words. */
  std::string not_cached;
  std::string error;  ///< one line when !ok: "nvcc exited with code 1", "nvcc not found", ...
};

/** The target to build a native candidate for on a GPU of compute capability `device_arch`
 *  ("90", "100"): the architecture-specific one from Hopper on ("90a", "100a", "120a"), which
 *  the features of that generation need (wgmma and setmaxnreg on Hopper, tcgen05 and the tensor
 *  memory on Blackwell) and which runs on that architecture only, as the build does; the plain
 *  one before ("80"). */
[[nodiscard]] std::string target_arch(const std::string& device_arch);

/** nvcc from $KJUDGE_NVCC, then $CUDA_HOME/bin, then PATH, then the configure-time toolkit.
 *  Empty when none is found. */
[[nodiscard]] std::filesystem::path find_nvcc();

/** Why kjudge refuses `flag` among the extra nvcc flags (--nvcc-flag), or empty: the dependency
 *  listing (-M, -MM, -MD, -MMD, -MF, -MT, -MP and their long forms) and preprocessing alone (-E)
 *  are kjudge's own (its cache compares the list its scan makes with the one the build makes;
 *  neither builds a library). */
[[nodiscard]] std::string refused_flag(std::string_view flag);

/** Why nvcc cannot be given `path` (the candidate, its cache folder, kjudge's include folder),
 *  or empty: nvcc runs its tools through a shell with every path in double quotes, where `$`,
 *  a backquote, `"` and `\` are still read (a `$HOME` in a folder's name was expanded, a
 *  backquoted command ran, and nvcc's dependency list turns `\` into `/`). */
[[nodiscard]] std::string shell_hazard(const std::filesystem::path& path);

/** Why nvcc cannot build a source of this file name, or empty: a comma (nvcc names its
 *  intermediate cubin after the source, and fatbinary splits its file=... argument on commas;
 *  a comma in a folder's name is fine). */
[[nodiscard]] std::string source_name_hazard(const std::filesystem::path& source);

/** Why a library nvcc `nvcc_version` ("13.0.88") built cannot run on a driver of CUDA version
 *  `driver_version` (13000 = 13.0; cudaDriverGetVersion), or empty: the library links that
 *  toolkit's CUDA runtime, which needs a driver of at least its major version (within one major
 *  version, CUDA's minor version compatibility holds). Empty when either version is unknown. */
[[nodiscard]] std::string toolkit_newer_than_driver(std::string_view nvcc_version,
                                                    int driver_version);

/** Release string of an nvcc binary ("13.0.88"); cached per path for the process. */
[[nodiscard]] std::string nvcc_version(const std::filesystem::path& nvcc);

/** Builds (or finds in the cache) the candidate library. Every call first lists the files the
 *  source includes as nvcc resolves them (`nvcc -M` with the same flags and environment) and
 *  hashes them; the build under the key made from those same bytes, in that order, serves. A
 *  build is filed under them only when the list nvcc makes as it builds (`-MD`) is the same and
 *  the files did not change while nvcc ran. Concurrent builds of
 *  the same key are safe: each builds in a folder of its own and renames it into place. A
 *  failure is a value (ok = false, failure says whose, log = the compiler's output), not an
 *  exception. */
[[nodiscard]] build_result build_native(const nvcc_request& request);

/** This process's host name and PID namespace as build folders name them
 *  (`<entry>/.build.<owner>.tmp.<pid>.<...>`; the host's dots as '_', then "-pidns" and the
 *  namespace's inode): a build only removes the folders of ended processes of its own owner. */
[[nodiscard]] std::string build_folder_owner();

/** Removes `<dir>/<name_start><owner>.tmp.<pid>.*` folders whose process has ended: builds that
 *  were killed, unfiled ones whose evaluation is over, a cache prune's folders (".prune.") that
 *  it could not finish. A folder of a live process, or of another host or PID namespace (a
 *  cache on a shared disk, or shared between containers), is left alone. Returns how many went. */
std::size_t remove_ended_folders(const std::filesystem::path& dir, const std::string& owner,
                                 std::string_view name_start);

/** remove_ended_folders() of builds (".build.") and of cache prunes (".prune.") in every key's
 *  entry under `native_root` (<cache>/native), and the entries that leaves empty: an unfiled
 *  build stays in its key's entry until its process has ended, and a key may never be built
 *  again (an agent's candidates differ from one call to the next). A build of another process
 *  that just made its key's entry and lost it here makes it again (build_native()). Links are
 *  not followed. Returns how many folders went. */
std::size_t remove_ended_builds_under(const std::filesystem::path& native_root,
                                      const std::string& owner);

/** The user's cache root: $KJUDGE_CACHE_DIR, else $XDG_CACHE_HOME/kjudge, else ~/.cache/kjudge. */
[[nodiscard]] std::filesystem::path default_cache_dir();

namespace detail {

struct filing {
  bool served = false;  ///< `entry` holds a whole build: this one, or another's filed meanwhile
  bool filed =
      false;  ///< this build's folder was renamed into `entry` (else the caller removes it)
  std::error_code error;  ///< of the rename of this build into `entry`, where it failed
};

/** Files the complete build in `work` as the cache entry `entry`, which the caller found taken
 *  and not whole (damaged). Where the file system can, the two are exchanged in one rename
 *  (`entry` is never missing) and what `entry` held is removed. Else that folder is moved to
 *  `aside`, this build renamed into its place, and the damaged one removed; where what was moved
 *  aside is whole after all (another build of the same key found the damage too and filed its
 *  library between the caller's look and the move: its evaluation may be about to load it), it
 *  is put back and serves, and this build is not filed. */
[[nodiscard]] filing replace_damaged_entry(const std::filesystem::path& work,
                                           const std::filesystem::path& entry,
                                           const std::filesystem::path& aside);

/** Whether a filed build at `dir` is whole: its build.json names the library's size and
 *  SHA-256, and candidate.so has them. */
[[nodiscard]] bool filed_build_whole(const std::filesystem::path& dir);

}  // namespace detail

}  // namespace kj::compile
