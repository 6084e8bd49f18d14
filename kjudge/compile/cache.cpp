#include <kjudge/compile/cache.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <system_error>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include <kjudge/compile/nvcc.hpp>
#include <kjudge/core/file_io.hpp>
#include <kjudge/runner/file_lock.hpp>

namespace kj::compile {

namespace fs = std::filesystem;

namespace {

/** A torch build lock younger than this keeps its folder, held or not: torch's older FileBaton
 *  takes no flock, and its lock file's presence is all there is to see of a build under way. */
constexpr std::time_t k_young_lock_s = 3600;
/** prune_if_over_limit() looks at a cache at most this often. */
constexpr std::time_t k_prune_interval_s = 600;

struct file_facts {
  bool exists = false;
  bool directory = false;
  std::uintmax_t bytes = 0;  ///< allocated on disk
  std::time_t modified = 0;
};

[[nodiscard]] file_facts facts(const fs::path& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return {};
  return {true, S_ISDIR(st.st_mode), static_cast<std::uintmax_t>(st.st_blocks) * 512u,
          st.st_mtim.tv_sec};
}

/** Whether the cache root is a folder: the one place a link is followed (a cache on another
 *  disk, ~/.cache/kjudge -> /scratch/kjudge). Below it, nothing is. */
[[nodiscard]] bool root_folder(const fs::path& root) {
  struct stat st {};
  return ::stat(root.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

/** Bytes on disk of `p` and of everything under it; links are not followed. */
[[nodiscard]] std::uintmax_t disk_bytes(const fs::path& p) {
  const file_facts top = facts(p);
  std::uintmax_t total = top.bytes;
  if (!top.directory) return total;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(p, fs::directory_options::skip_permission_denied, ec),
       end;
       !ec && it != end; it.increment(ec))
    total += facts(it->path()).bytes;
  return total;
}

/** The names in folder `dir` (none where it cannot be read). */
[[nodiscard]] std::vector<fs::path> children(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    out.push_back(it->path());
  return out;
}

/** Whether another process holds an flock on `lock` (torch's FileLock). Taking it for an instant
 *  to see makes a build that starts meanwhile wait that instant. */
[[nodiscard]] bool flock_held(const fs::path& lock) {
  const int fd = ::open(lock.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // lets go of it, where this took it
  return held;
}

/** A build's last use and whether it is busy, from what is on disk now: a native build's folder
 *  time (mark_used, or its filing); a load_inline folder's time, its extensions' folders' (a
 *  build writes into them) and their locks'. */
void look_at(cache_entry& e, std::time_t now) {
  e.last_used = facts(e.path).modified;
  e.busy = false;
  if (e.part != cache_part::load_inline_build) return;
  for (const fs::path& extension : children(e.path)) {
    const file_facts f = facts(extension);
    if (!f.directory) continue;
    e.last_used = std::max(e.last_used, f.modified);
    const fs::path lock = extension / "lock";
    const file_facts l = facts(lock);
    if (!l.exists) continue;
    e.last_used = std::max(e.last_used, l.modified);
    if (now - l.modified < k_young_lock_s || flock_held(lock)) e.busy = true;
  }
}

/** Whether `e` stays whatever the policy: used within `keep_recent` of `now`, or busy. */
[[nodiscard]] bool in_use(const cache_entry& e, std::time_t now, std::chrono::seconds keep_recent) {
  return e.busy || now - e.last_used < keep_recent.count();
}

void add(cache_tally& t, std::uintmax_t bytes, std::size_t count = 1) {
  t.count += count;
  t.bytes += bytes;
}

/** What is at `p`, where a build of `part` goes (native/<key>/<variant>,
 *  torch_extensions/<key>), into `inv`: a build folder, a folder under way or left behind (its
 *  name starts with a dot), or anything else. */
void take(cache_inventory& inv, const fs::path& p, cache_part part, std::time_t now) {
  if (p.filename().string().starts_with(".")) {
    add(inv.unfinished, disk_bytes(p));
  } else if (facts(p).directory) {
    cache_entry e{p, part, disk_bytes(p)};
    look_at(e, now);
    add(part == cache_part::native_build ? inv.native : inv.load_inline, e.bytes);
    inv.builds.push_back(std::move(e));
  } else {
    add(inv.other, disk_bytes(p));
  }
}

/** Folders of ended builds and removals under `root` (this host's and PID namespace's only:
 *  remove_ended_folders), and native keys left empty. Returns how many went. */
std::size_t remove_leftovers(const fs::path& root) {
  const std::string owner = build_folder_owner();
  std::size_t n = 0;
  // Parts that are links (not kjudge's making) are left as they are, as the scan leaves them.
  if (facts(root / "native").directory) n += remove_ended_builds_under(root / "native", owner);
  if (facts(root / "torch_extensions").directory)
    n += remove_ended_folders(root / "torch_extensions", owner, ".prune.");
  return n;
}

enum class removal { removed, in_use, gone, failed };

/** Removes build `e`: renamed aside first (a lookup from then on misses it and builds again),
 *  then looked at again, and put back where an evaluation marked it (or a torch build took its
 *  lock) since it was scanned. `freed`: the bytes removed (its key's folder's with it, left empty).
 */
removal remove_build(const cache_entry& e, std::chrono::seconds keep_recent, std::string& why,
                     std::uintmax_t& freed) {
  // Looked at once more just before it goes out of sight: the window in which a lookup misses a
  // build that stays is then this function's, not the whole prune's.
  cache_entry now_seen = e;
  look_at(now_seen, std::time(nullptr));
  if (in_use(now_seen, std::time(nullptr), keep_recent)) return removal::in_use;
  const fs::path aside = e.path.parent_path() / fmt::format(".prune.{}.{}", build_folder_owner(),
                                                            kj::unique_temp_suffix());
  if (::rename(e.path.c_str(), aside.c_str()) != 0) {
    if (errno == ENOENT) return removal::gone;  // another process's prune
    why = std::strerror(errno);
    return removal::failed;
  }
  cache_entry moved = e;
  moved.path = aside;
  const std::time_t now = std::time(nullptr);
  look_at(moved, now);
  std::error_code ec;
  if (in_use(moved, now, keep_recent)) {
    // Where another build of the key was filed in its place meanwhile, that one serves.
    if (::rename(aside.c_str(), e.path.c_str()) != 0) fs::remove_all(aside, ec);
    return removal::in_use;
  }
  fs::remove_all(aside, ec);
  if (ec) {
    // What is left carries this process's name: the next prune or build here removes it.
    why = ec.message();
    return removal::failed;
  }
  freed = e.bytes;
  if (e.part == cache_part::native_build) {  // the key's folder too, if that left it empty
    const std::uintmax_t key_bytes = facts(e.path.parent_path()).bytes;
    if (fs::remove(e.path.parent_path(), ec)) freed += key_bytes;
  }
  return removal::removed;
}

[[nodiscard]] std::string lower_trimmed(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/** The factor of `unit` in `units`, or 0 where it is not there. */
template <std::size_t N>
[[nodiscard]] double factor_of(std::string_view unit,
                               const std::pair<std::string_view, double> (&units)[N]) {
  for (const auto& [name, factor] : units)
    if (unit == name) return factor;
  return 0;
}

/** A non-negative decimal number at the start of `text` ("12", "1.5"), and the rest after any
 *  spaces; nullopt where there is none. */
[[nodiscard]] std::optional<std::pair<double, std::string>> number_and_unit(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  const std::size_t digits = i;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  }
  if (digits == 0 || (i > digits && i == digits + 1)) return std::nullopt;  // "", ".5", "5."
  const double value = std::strtod(std::string(text.substr(0, i)).c_str(), nullptr);
  std::size_t unit = i;
  while (unit < text.size() && std::isspace(static_cast<unsigned char>(text[unit]))) ++unit;
  return std::pair{value, std::string(text.substr(unit))};
}

}  // namespace

std::string_view to_string(cache_part p) noexcept {
  return p == cache_part::native_build ? "native" : "load_inline";
}

cache_inventory scan_cache(const fs::path& root) {
  cache_inventory inv;
  inv.root = root;
  inv.exists = root_folder(root);
  if (!inv.exists) return inv;
  const file_facts top = facts(root);
  const std::time_t now = std::time(nullptr);
  for (const fs::path& item : children(root)) {
    const std::string name = item.filename().string();
    const file_facts f = facts(item);
    if (name == "native" && f.directory) {
      add(inv.native, f.bytes, 0);
      for (const fs::path& key : children(item)) {
        const file_facts k = facts(key);
        if (!k.directory) {
          add(inv.other, k.bytes);
          continue;
        }
        add(inv.native, k.bytes, 0);
        for (const fs::path& variant : children(key))
          take(inv, variant, cache_part::native_build, now);
      }
    } else if (name == "torch_extensions" && f.directory) {
      add(inv.load_inline, f.bytes, 0);
      for (const fs::path& key : children(item)) take(inv, key, cache_part::load_inline_build, now);
    } else if (name == "roofline" && f.directory) {
      add(inv.roofline, f.bytes, 0);
      for (const fs::path& file : children(item)) add(inv.roofline, disk_bytes(file));
    } else {
      add(inv.other, disk_bytes(item));
    }
  }
  std::sort(inv.builds.begin(), inv.builds.end(), [](const cache_entry& a, const cache_entry& b) {
    return std::tie(a.last_used, a.path) < std::tie(b.last_used, b.path);
  });
  inv.total_bytes = top.bytes + inv.native.bytes + inv.load_inline.bytes + inv.unfinished.bytes +
                    inv.roofline.bytes + inv.other.bytes;
  return inv;
}

prune_outcome prune_cache(const fs::path& root, const prune_policy& policy,
                          const cache_inventory* scanned) {
  prune_outcome out;
  if (scanned != nullptr) {
    out.before = *scanned;
  } else {
    if (!policy.dry_run && root_folder(root)) out.leftovers_removed = remove_leftovers(root);
    out.before = scan_cache(root);
  }
  std::uintmax_t total = out.before.total_bytes;
  const std::time_t now = std::time(nullptr);
  for (const cache_entry& e : out.before.builds) {  // least recently used first
    const bool unused = policy.unused_for && now - e.last_used >= policy.unused_for->count();
    const bool over = policy.max_bytes && total > *policy.max_bytes;
    if (!policy.everything && !unused && !over) continue;
    if (in_use(e, now, policy.keep_recent)) {
      out.kept.push_back(e);
      out.kept_bytes += e.bytes;
      continue;
    }
    if (policy.dry_run) {
      out.removed.push_back(e);
      out.removed_bytes += e.bytes;
      total -= std::min(total, e.bytes);
      continue;
    }
    std::string why;
    std::uintmax_t freed = 0;
    switch (remove_build(e, policy.keep_recent, why, freed)) {
      case removal::removed:
        out.removed.push_back(e);
        out.removed_bytes += freed;
        total -= std::min(total, freed);
        break;
      case removal::in_use:
        out.kept.push_back(e);
        out.kept_bytes += e.bytes;
        break;
      case removal::gone:
        total -= std::min(total, e.bytes);
        break;
      case removal::failed:
        out.errors.push_back(fmt::format("{}: {}", e.path.string(), why));
        break;
    }
  }
  out.bytes_after = total;
  return out;
}

void mark_used(const fs::path& build) noexcept {
  (void)::utimensat(AT_FDCWD, build.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
}

std::optional<std::uintmax_t> parse_size(std::string_view text, std::string& why) {
  const std::string t = lower_trimmed(text);
  const auto parsed = number_and_unit(t);
  if (!parsed) {
    why = fmt::format(
        "'{}' is not a size (a number of bytes, or one with K, M, G or T: 10G, 512MiB)", text);
    return std::nullopt;
  }
  const auto& [value, unit] = *parsed;
  static constexpr std::pair<std::string_view, double> units[] = {
      {"", 1},       {"b", 1},        {"k", 0x1p10},   {"kib", 0x1p10}, {"kb", 1e3},
      {"m", 0x1p20}, {"mib", 0x1p20}, {"mb", 1e6},     {"g", 0x1p30},   {"gib", 0x1p30},
      {"gb", 1e9},   {"t", 0x1p40},   {"tib", 0x1p40}, {"tb", 1e12},
  };
  const double multiplier = factor_of(unit, units);
  if (multiplier == 0) {
    why = fmt::format(
        "'{}': unknown unit '{}' (B, K/KiB, M/MiB, G/GiB, T/TiB; KB, MB, GB, TB are "
        "powers of 1000)",
        text, unit);
    return std::nullopt;
  }
  const double bytes = std::round(value * multiplier);
  if (!(bytes < 0x1p63)) {
    why = fmt::format("'{}' is too large", text);
    return std::nullopt;
  }
  return static_cast<std::uintmax_t>(bytes);
}

std::optional<std::chrono::seconds> parse_duration(std::string_view text, std::string& why) {
  const std::string t = lower_trimmed(text);
  const auto parsed = number_and_unit(t);
  static constexpr std::pair<std::string_view, double> units[] = {
      {"", 1}, {"s", 1}, {"m", 60}, {"min", 60}, {"h", 3600}, {"d", 86400}, {"w", 604800}};
  const double multiplier = parsed ? factor_of(parsed->second, units) : 0;
  if (multiplier == 0) {
    why = fmt::format("'{}' is not a duration (a number with s, m, h, d or w: 90s, 30m, 12h, 7d)",
                      text);
    return std::nullopt;
  }
  const double s = std::round(parsed->first * multiplier);
  if (!(s < 0x1p52)) {
    why = fmt::format("'{}' is too long", text);
    return std::nullopt;
  }
  return std::chrono::seconds(static_cast<long long>(s));
}

std::string size_text(std::uintmax_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  static constexpr const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes) / 1024;
  std::size_t u = 0;
  while (value >= 1023.95 && u + 1 < std::size(units)) {  // 1048575 bytes: "1.0 MiB"
    value /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", value, units[u]);
}

cache_limit cache_limit_from_environment() {
  cache_limit out;
  const char* value = std::getenv("KJUDGE_CACHE_MAX_SIZE");
  if (value == nullptr || *value == '\0') {
    out.bytes = default_cache_limit_bytes;
    out.source = "default";
    return out;
  }
  out.source = "KJUDGE_CACHE_MAX_SIZE";
  const std::string word = lower_trimmed(value);
  if (word == "off" || word == "none") return out;
  std::string why;
  const auto bytes = parse_size(value, why);
  if (!bytes)
    out.error = fmt::format("KJUDGE_CACHE_MAX_SIZE={}: {}", value, why);
  else if (*bytes > 0)
    out.bytes = bytes;
  return out;
}

std::optional<prune_outcome> prune_if_over_limit(const fs::path& root) {
  try {
    const cache_limit limit = cache_limit_from_environment();
    if (!limit.bytes || !root_folder(root)) return std::nullopt;
    const fs::path stamp = root / ".last-prune";
    const file_facts last = facts(stamp);
    const std::time_t now = std::time(nullptr);
    if (last.exists && last.modified <= now && now - last.modified < k_prune_interval_s)
      return std::nullopt;
    const auto lock = runner::file_lock::try_now(prune_lock_path(root));
    if (!lock.held()) return std::nullopt;
    const int fd = ::open(stamp.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) ::close(fd);
    mark_used(stamp);
    std::size_t leftovers = remove_leftovers(root);
    const cache_inventory inv = scan_cache(root);
    if (inv.total_bytes <= *limit.bytes) return std::nullopt;
    prune_policy policy;
    policy.max_bytes = prune_target(*limit.bytes);
    prune_outcome out = prune_cache(root, policy, &inv);
    out.leftovers_removed = leftovers;
    return out;
  } catch (const std::exception&) {  // an allocation, a path's conversion: the evaluation stands
    return std::nullopt;
  }
}

}  // namespace kj::compile
