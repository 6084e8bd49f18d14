// The build cache's housekeeping (compile/cache.hpp) on real folders: what a scan counts, which
// builds a prune removes and which it keeps, and the sizes and durations the options take.

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <kjudge/compile/cache.hpp>
#include <kjudge/compile/nvcc.hpp>

namespace kj::compile {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

class cache_test : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root = fs::temp_directory_path() /
           (std::string("kj_cache_test_") + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root);
    ::unsetenv("KJUDGE_CACHE_MAX_SIZE");
  }
  void TearDown() override {
    fs::remove_all(root);
    ::unsetenv("KJUDGE_CACHE_MAX_SIZE");
  }

  /** A file of `bytes` bytes that no file system compresses, so that it takes as many on disk. */
  static void write(const fs::path& p, std::size_t bytes) {
    fs::create_directories(p.parent_path());
    std::string data(bytes, '\0');
    std::uint64_t x = 0x9e3779b97f4a7c15ULL ^ bytes;
    for (char& c : data) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift64
      c = static_cast<char>(x);
    }
    std::ofstream(p, std::ios::binary) << data;
  }
  /** Sets `p`'s modification time to `age` ago. */
  static void age(const fs::path& p, seconds age) {
    const timespec t{std::time(nullptr) - static_cast<std::time_t>(age.count()), 0};
    const timespec times[2] = {t, t};
    ASSERT_EQ(::utimensat(AT_FDCWD, p.c_str(), times, AT_SYMLINK_NOFOLLOW), 0) << p;
  }
  /** A filed native build of `bytes`, last used `ago`. */
  fs::path native(const std::string& key, seconds ago, std::size_t bytes = 64 * 1024) {
    const fs::path dir = root / "native" / key / "v1";
    write(dir / "candidate.so", bytes);
    write(dir / "build.json", 10);
    age(dir, ago);
    return dir;
  }
  /** A load_inline folder with one extension built in it, last used `ago`. */
  fs::path load_inline(const std::string& key, seconds ago, std::size_t bytes = 64 * 1024) {
    const fs::path dir = root / "torch_extensions" / key;
    write(dir / "ext" / "ext.so", bytes);
    age(dir / "ext", ago);
    age(dir, ago);
    return dir;
  }

  /** What `du` says the tree under `p` takes, in bytes. */
  static std::uintmax_t du(const fs::path& p) {
    const auto blocks = [](const fs::path& f) {
      struct stat st {};
      return ::lstat(f.c_str(), &st) == 0 ? static_cast<std::uintmax_t>(st.st_blocks) * 512 : 0;
    };
    std::uintmax_t total = blocks(p);
    for (const auto& e : fs::recursive_directory_iterator(p)) total += blocks(e.path());
    return total;
  }

  fs::path root;
};

TEST(cache_sizes, sizes_and_durations_read_as_documented) {
  std::string why;
  EXPECT_EQ(parse_size("0", why), 0u);
  EXPECT_EQ(parse_size("123456", why), 123456u);
  EXPECT_EQ(parse_size("10G", why), std::uintmax_t{10} << 30);
  EXPECT_EQ(parse_size(" 512 MiB ", why), std::uintmax_t{512} << 20);
  EXPECT_EQ(parse_size("1.5k", why), 1536u);
  EXPECT_EQ(parse_size("2GB", why), 2000000000u);  // SI where it says so
  EXPECT_EQ(parse_size("1t", why), std::uintmax_t{1} << 40);
  for (const char* bad : {"", "G", "-1G", "1.G", ".5G", "10Q", "1e3", "99999999999T"}) {
    why.clear();
    EXPECT_FALSE(parse_size(bad, why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
  EXPECT_EQ(parse_duration("90", why), seconds(90));
  EXPECT_EQ(parse_duration("30m", why), seconds(1800));
  EXPECT_EQ(parse_duration("12h", why), seconds(43200));
  EXPECT_EQ(parse_duration("7d", why), seconds(604800));
  EXPECT_EQ(parse_duration("2w", why), seconds(1209600));
  EXPECT_EQ(parse_duration("1.5h", why), seconds(5400));
  for (const char* bad : {"", "h", "-1h", "3x", "1 hour"}) EXPECT_FALSE(parse_duration(bad, why));
  EXPECT_EQ(size_text(0), "0 B");
  EXPECT_EQ(size_text(1023), "1023 B");
  EXPECT_EQ(size_text(1536), "1.5 KiB");
  EXPECT_EQ(size_text(std::uintmax_t{10} << 30), "10.0 GiB");
}

TEST_F(cache_test, the_limit_comes_from_the_environment) {
  ::unsetenv("KJUDGE_CACHE_MAX_SIZE");
  EXPECT_EQ(cache_limit_from_environment().bytes, default_cache_limit_bytes);
  EXPECT_EQ(cache_limit_from_environment().source, "default");
  ::setenv("KJUDGE_CACHE_MAX_SIZE", "2G", 1);
  EXPECT_EQ(cache_limit_from_environment().bytes, std::uintmax_t{2} << 30);
  for (const char* none : {"0", "off", "None"}) {
    ::setenv("KJUDGE_CACHE_MAX_SIZE", none, 1);
    EXPECT_FALSE(cache_limit_from_environment().bytes) << none;
    EXPECT_TRUE(cache_limit_from_environment().error.empty()) << none;
  }
  ::setenv("KJUDGE_CACHE_MAX_SIZE", "lots", 1);
  const auto bad = cache_limit_from_environment();
  EXPECT_FALSE(bad.bytes);
  EXPECT_NE(bad.error.find("KJUDGE_CACHE_MAX_SIZE=lots"), std::string::npos) << bad.error;
}

TEST_F(cache_test, a_scan_counts_every_part_and_orders_builds_by_last_use) {
  const auto n_old = native("aaaa", seconds(3 * 86400), 200 * 1024);
  const auto l_mid = load_inline("bbbb", seconds(2 * 86400), 100 * 1024);
  const auto n_new = native("cccc", seconds(86400), 50 * 1024);
  write(root / "native" / "cccc" / ".build.somehost.tmp.1.2.3" / "x.o", 8192);
  write(root / "roofline" / "gpu-580.json", 4096);
  write(root / "worker-pool.log", 4096);
  const auto inv = scan_cache(root);
  ASSERT_TRUE(inv.exists);
  ASSERT_EQ(inv.builds.size(), 3u);
  EXPECT_EQ(inv.builds[0].path, n_old);
  EXPECT_EQ(inv.builds[1].path, l_mid);
  EXPECT_EQ(inv.builds[2].path, n_new);
  EXPECT_EQ(inv.builds[1].part, cache_part::load_inline_build);
  EXPECT_EQ(inv.native.count, 2u);
  EXPECT_EQ(inv.load_inline.count, 1u);
  EXPECT_EQ(inv.unfinished.count, 1u);
  EXPECT_EQ(inv.roofline.count, 1u);
  EXPECT_EQ(inv.other.count, 1u);
  EXPECT_GE(inv.builds[0].bytes, 200u * 1024);
  EXPECT_GE(inv.builds[1].bytes, 100u * 1024);
  EXPECT_GE(inv.unfinished.bytes, 8192u);
  EXPECT_EQ(inv.total_bytes, du(root));
  EXPECT_NEAR(static_cast<double>(std::time(nullptr) - inv.builds[0].last_used), 3 * 86400, 60);
  EXPECT_FALSE(scan_cache(root / "none").exists);
}

TEST_F(cache_test, a_prune_to_a_size_removes_the_least_recently_used_first) {
  const auto oldest = native("aaaa", seconds(5 * 86400), 256 * 1024);
  const auto older = load_inline("bbbb", seconds(4 * 86400), 256 * 1024);
  const auto newer = native("cccc", seconds(3 * 86400), 256 * 1024);
  const auto recent = load_inline("dddd", seconds(60), 256 * 1024);
  const std::uintmax_t before = du(root);
  prune_policy p;
  p.max_bytes = before - 300 * 1024;  // two builds must go
  p.dry_run = true;
  const auto dry = prune_cache(root, p);
  ASSERT_EQ(dry.removed.size(), 2u);
  EXPECT_EQ(dry.removed[0].path, oldest);
  EXPECT_EQ(dry.removed[1].path, older);
  EXPECT_TRUE(fs::exists(oldest));  // a dry run removes nothing
  EXPECT_EQ(du(root), before);
  p.dry_run = false;
  const auto out = prune_cache(root, p);
  ASSERT_EQ(out.removed.size(), 2u) << (out.errors.empty() ? "" : out.errors[0]);
  EXPECT_FALSE(fs::exists(oldest));
  EXPECT_FALSE(fs::exists(oldest.parent_path()));  // the key's folder, left empty
  EXPECT_FALSE(fs::exists(older));
  EXPECT_TRUE(fs::exists(newer / "candidate.so"));
  EXPECT_TRUE(fs::exists(recent / "ext" / "ext.so"));
  EXPECT_LE(out.bytes_after, *p.max_bytes);
  EXPECT_EQ(out.bytes_after, du(root));
  EXPECT_GE(out.removed_bytes, 512u * 1024);
  EXPECT_TRUE(out.errors.empty());
  // Nothing under the root but the kept builds and their folders.
  for (const auto& e : fs::recursive_directory_iterator(root))
    EXPECT_EQ(e.path().filename().string().find(".prune."), std::string::npos) << e.path();
}

TEST_F(cache_test, builds_used_recently_or_being_built_stay) {
  const auto used = native("aaaa", seconds(5 * 86400));
  const auto building = load_inline("bbbb", seconds(5 * 86400));
  // torch's FileBaton: a lock file ten minutes old, no flock (older than keep_recent below).
  write(building / "ext" / "lock", 0);
  age(building / "ext" / "lock", seconds(600));
  age(building / "ext", seconds(5 * 86400));
  age(building, seconds(5 * 86400));
  const auto locked = load_inline("cccc", seconds(5 * 86400));
  write(locked / "ext" / "lock", 0);
  age(locked / "ext" / "lock", seconds(2 * 86400));
  age(locked / "ext", seconds(5 * 86400));
  age(locked, seconds(5 * 86400));
  const int fd = ::open((locked / "ext" / "lock").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  // An flock held by another open file description (torch's FileLock in a worker).
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  const auto stale = load_inline("dddd", seconds(5 * 86400));
  write(stale / "ext" / "lock", 0);  // a killed FileBaton build's, two days old
  age(stale / "ext" / "lock", seconds(2 * 86400));
  age(stale / "ext", seconds(5 * 86400));
  age(stale, seconds(5 * 86400));
  mark_used(used);  // an evaluation looked it up
  prune_policy p;
  p.everything = true;
  p.keep_recent = seconds(60);
  const auto out = prune_cache(root, p);
  ::close(fd);
  EXPECT_TRUE(fs::exists(used / "candidate.so"));
  EXPECT_TRUE(fs::exists(building / "ext" / "ext.so"));
  EXPECT_TRUE(fs::exists(locked / "ext" / "ext.so"));
  EXPECT_FALSE(fs::exists(stale));
  ASSERT_EQ(out.removed.size(), 1u);
  EXPECT_EQ(out.removed[0].path, stale);
  EXPECT_EQ(out.kept.size(), 3u);
  // Unlocked and old, the locked one goes too.
  age(locked / "ext" / "lock", seconds(2 * 86400));
  age(locked / "ext", seconds(5 * 86400));
  age(locked, seconds(5 * 86400));
  EXPECT_EQ(prune_cache(root, p).removed.size(), 1u);
  EXPECT_FALSE(fs::exists(locked));
}

TEST_F(cache_test, a_prune_by_age_removes_builds_unused_that_long) {
  const auto old = native("aaaa", seconds(8 * 86400));
  const auto young = native("bbbb", seconds(2 * 86400));
  prune_policy p;
  p.unused_for = seconds(7 * 86400);
  const auto out = prune_cache(root, p);
  ASSERT_EQ(out.removed.size(), 1u);
  EXPECT_FALSE(fs::exists(old));
  EXPECT_TRUE(fs::exists(young));
}

TEST_F(cache_test, folders_that_ended_processes_left_are_removed) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);  // an ended process's number
  const std::string owner = build_folder_owner();
  const auto ended_build =
      root / "native" / "aaaa" / (".build." + owner + ".tmp." + std::to_string(child) + ".1.1");
  const auto ended_prune =
      root / "torch_extensions" / (".prune." + owner + ".tmp." + std::to_string(child) + ".1.1");
  const auto live_build = root / "native" / "aaaa" /
                          (".build." + owner + ".tmp." + std::to_string(::getppid()) + ".1.1");
  write(ended_build / "x.o", 100);
  write(ended_prune / "ext" / "ext.so", 100);
  write(live_build / "x.o", 100);
  prune_policy p;
  p.unused_for = seconds(86400);
  const auto out = prune_cache(root, p);
  EXPECT_EQ(out.leftovers_removed, 2u);
  EXPECT_FALSE(fs::exists(ended_build));
  EXPECT_FALSE(fs::exists(ended_prune));
  EXPECT_TRUE(fs::exists(live_build));
  EXPECT_EQ(out.before.unfinished.count, 1u);
}

TEST_F(cache_test, an_evaluation_prunes_only_above_the_limit_and_at_most_every_ten_minutes) {
  const auto oldest = native("aaaa", seconds(5 * 86400), 512 * 1024);
  const auto newer = native("bbbb", seconds(4 * 86400), 512 * 1024);
  ::setenv("KJUDGE_CACHE_MAX_SIZE", "100M", 1);
  EXPECT_FALSE(prune_if_over_limit(root));  // under the limit: nothing to do
  EXPECT_TRUE(fs::exists(oldest));
  fs::remove(root / ".last-prune");
  // 90% of the limit leaves room for one of the two.
  ::setenv("KJUDGE_CACHE_MAX_SIZE", std::to_string(du(root) - 256 * 1024).c_str(), 1);
  const auto out = prune_if_over_limit(root);
  ASSERT_TRUE(out);
  ASSERT_EQ(out->removed.size(), 1u);
  EXPECT_FALSE(fs::exists(oldest));
  EXPECT_TRUE(fs::exists(newer));
  ::setenv("KJUDGE_CACHE_MAX_SIZE", "1", 1);
  EXPECT_FALSE(prune_if_over_limit(root));  // looked less than 10 minutes ago
  EXPECT_TRUE(fs::exists(newer));
  fs::remove(root / ".last-prune");
  ::setenv("KJUDGE_CACHE_MAX_SIZE", "off", 1);
  EXPECT_FALSE(prune_if_over_limit(root));
  EXPECT_TRUE(fs::exists(newer));
}

}  // namespace
}  // namespace kj::compile
