#pragma once
/** @file The build cache's housekeeping: what the cache holds, and removing the builds used
 *  longest ago, by hand (`kjudge cache`) or after an evaluation when the cache has outgrown its
 *  limit. The cache root (default_cache_dir()) holds
 *
 *    native/<key>/<variant>/     a filed nvcc build of a native candidate (build_native)
 *    native/<key>/.build.*       a build under way, or one an ended process left
 *    torch_extensions/<key>/     a load_inline candidate's torch builds (the orchestrator)
 *    roofline/                   measured ceilings per GPU: never removed here
 *    anything else               the worker pool's log and the like: never removed here
 *
 *  A build is "used" when an evaluation looks it up: build_native() marks a filed build before
 *  it checks it, the orchestrator marks a load_inline folder before the worker starts
 *  (mark_used sets the folder's modification time). A build is removed by renaming it aside
 *  first, then looking at its time again: one an evaluation marked in between is put back, one
 *  it did not mark is gone before any evaluation could load it (a lookup that finds the name
 *  missing builds again). A load_inline folder whose torch build lock is held, or was taken in
 *  the last hour (torch's older FileBaton takes no flock), is never removed. */

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kj::compile {

enum class cache_part {
  native_build,       ///< native/<key>/<variant>
  load_inline_build,  ///< torch_extensions/<key>
};

[[nodiscard]] std::string_view to_string(cache_part p) noexcept;

/** One build the cache may give up. */
struct cache_entry {
  std::filesystem::path path;
  cache_part part = cache_part::native_build;
  std::uintmax_t bytes = 0;  ///< on disk (allocated blocks), every file under it
  std::time_t last_used = 0;
  bool busy = false;  ///< a torch build lock in it is held, or younger than an hour
};

struct cache_tally {
  std::size_t count = 0;
  std::uintmax_t bytes = 0;
};

/** What the cache holds. Sizes are what the files take on disk; a folder that cannot be read
 *  counts with what could be. */
struct cache_inventory {
  std::filesystem::path root;
  bool exists = false;
  std::vector<cache_entry>
      builds;  ///< native and load_inline builds, the least recently used first
  cache_tally native, load_inline;
  cache_tally unfinished;  ///< build or removal folders under way, or left by ended processes
  cache_tally roofline;    ///< files under roofline/
  cache_tally other;       ///< files anywhere else
  std::uintmax_t total_bytes = 0;
};

[[nodiscard]] cache_inventory scan_cache(const std::filesystem::path& root);

struct prune_policy {
  /** Remove builds, least recently used first, until the whole cache takes at most this. */
  std::optional<std::uintmax_t> max_bytes;
  /** Remove every build not used for this long. */
  std::optional<std::chrono::seconds> unused_for;
  /** Remove every build (`kjudge cache clear`). */
  bool everything = false;
  /** Never remove a build used more recently than this: an evaluation may be loading it. */
  std::chrono::seconds keep_recent{3600};
  /** Say what would go, remove nothing. */
  bool dry_run = false;
};

struct prune_outcome {
  cache_inventory before;
  std::vector<cache_entry> removed;  ///< or, with dry_run, what would be
  /** Builds the policy picked but that stay: used within keep_recent (now, or while this ran),
   *  or busy. */
  std::vector<cache_entry> kept;
  std::uintmax_t kept_bytes = 0;  ///< of `kept`
  std::uintmax_t removed_bytes = 0;
  /** Folders of ended builds and removals taken away on the way (none with dry_run). */
  std::size_t leftovers_removed = 0;
  std::uintmax_t bytes_after = 0;   ///< the scan's total less what was removed
  std::vector<std::string> errors;  ///< builds that could not be removed, and why
};

/** Applies `policy` to the cache at `root` (see the file's comment for how a build is removed
 *  safely next to running evaluations): first the folders ended processes left, then a scan,
 *  unless `scanned` is one just made. Never throws for the file system's errors: they are in
 *  `errors`. Callers that may run side by side hold <root>/.prune.lock (runner::file_lock). */
[[nodiscard]] prune_outcome prune_cache(const std::filesystem::path& root,
                                        const prune_policy& policy,
                                        const cache_inventory* scanned = nullptr);

/** Marks a build folder as used now (its modification time); errors are ignored (a read-only
 *  cache still serves). */
void mark_used(const std::filesystem::path& build) noexcept;

/** "10G", "512MiB", "1.5 G", "2GB", "0", "123456" (bytes): K, M, G, T and KiB ... TiB are powers
 *  of 1024, KB ... TB powers of 1000. nullopt with `why` for anything else. */
[[nodiscard]] std::optional<std::uintmax_t> parse_size(std::string_view text, std::string& why);
/** "90s", "30m" (or "30min"), "12h", "7d", "2w", "0"; a bare number is seconds. nullopt with
 *  `why` otherwise. */
[[nodiscard]] std::optional<std::chrono::seconds> parse_duration(std::string_view text,
                                                                 std::string& why);
/** "0 B", "512 B", "1.5 KiB", "10.0 GiB". */
[[nodiscard]] std::string size_text(std::uintmax_t bytes);

/** The path of the lock that prunes of one cache take. */
[[nodiscard]] inline std::filesystem::path prune_lock_path(const std::filesystem::path& root) {
  return root / ".prune.lock";
}

/** The size past which an evaluation prunes the cache: $KJUDGE_CACHE_MAX_SIZE (parse_size; "0",
 *  "off" or "none" for no limit), else 10 GiB. */
struct cache_limit {
  std::optional<std::uintmax_t> bytes;  ///< nullopt: no limit
  std::string source;                   ///< "default" or "KJUDGE_CACHE_MAX_SIZE"
  std::string error;                    ///< the variable's value cannot be read: no limit, and why
};
[[nodiscard]] cache_limit cache_limit_from_environment();
inline constexpr std::uintmax_t default_cache_limit_bytes = std::uintmax_t{10} << 30;
/** What a prune after an evaluation brings a cache over `limit` down to: 90% of it. */
[[nodiscard]] constexpr std::uintmax_t prune_target(std::uintmax_t limit) noexcept {
  return limit / 10 * 9;
}

/** After an evaluation: when the cache at `root` takes more than the limit, removes the builds
 *  used longest ago (none used in the last hour) until it takes at most 90% of it. Looks at most
 *  once in 10 minutes per cache (the time of <root>/.last-prune), and not while another process
 *  prunes it. nullopt when it did not look (no limit, too soon, another prune, no cache). Never
 *  throws. */
[[nodiscard]] std::optional<prune_outcome> prune_if_over_limit(const std::filesystem::path& root);

}  // namespace kj::compile
