// elf_damage and remove_damaged_libraries on real ELF files: this test's own executable, whole
// and cut short at several lengths, and files that are no ELF at all.

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <kjudge/compile/shared_library_check.hpp>

namespace kj::compile {
namespace {

namespace fs = std::filesystem;

class shared_library_check : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("kjudge_elf_check_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ifstream in("/proc/self/exe", std::ios::binary);
    elf.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    ASSERT_GT(elf.size(), 4096u);
  }
  void TearDown() override { fs::remove_all(dir); }

  /** Writes the first `bytes` of this executable to `path` (all of it by default). */
  fs::path write(const fs::path& path, std::size_t bytes = std::string::npos) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << elf.substr(0, bytes);
    return path;
  }

  fs::path dir;
  std::string elf;
};

TEST_F(shared_library_check, a_whole_file_passes_and_every_cut_is_found) {
  EXPECT_EQ(elf_damage(write(dir / "whole.so")), "");
  // The section headers sit at the end: any cut loses them; cuts inside the segments lose those.
  for (const std::size_t bytes : {std::size_t{0}, std::size_t{10}, std::size_t{64},
                                  std::size_t{4096}, elf.size() / 2, elf.size() - 1}) {
    const auto path = write(dir / ("cut_" + std::to_string(bytes) + ".so"), bytes);
    EXPECT_NE(elf_damage(path), "") << bytes << " bytes of " << elf.size();
  }
  std::ofstream(dir / "text.so") << std::string(200, 'x');
  EXPECT_EQ(elf_damage(dir / "text.so"), "not an ELF file");
  EXPECT_NE(elf_damage(dir / "missing.so").rfind("cannot ", 0), std::string::npos);
}

/** Sets `path`'s modification time an hour back: older than any build underway. */
void age(const fs::path& path) {
  fs::last_write_time(path, fs::file_time_type::clock::now() - std::chrono::hours(1));
}

TEST_F(shared_library_check, damaged_libraries_are_removed_unless_a_build_may_be_writing_them) {
  const auto whole = write(dir / "ext" / "ext.so");
  const auto cut = write(dir / "other" / "other.so", elf.size() / 3);
  // torch's FileLock leaves its lock file behind: present but not held is no build.
  const auto idle_lock = write(dir / "idle" / "idle.so", 100);
  std::ofstream(dir / "idle" / "lock") << "";
  const auto held = write(dir / "busy" / "busy.so", 100);  // a build holds flock on its lock
  std::ofstream(dir / "busy" / "lock") << "";
  const auto fresh = write(dir / "fresh" / "fresh.so", 100);  // written just now: maybe a link
  const auto top = write(dir / "top.so", 100);                // not where torch builds
  const auto other_name = write(dir / "ext" / "helper.so", 100);
  const auto deep = write(dir / "a" / "b" / "b.so", 100);
  for (const auto& p : {whole, cut, idle_lock, held, top, other_name, deep}) age(p);

  const int fd = ::open((dir / "busy" / "lock").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  auto removed = remove_damaged_libraries(dir);
  ::close(fd);
  std::vector<fs::path> paths;
  for (const auto& r : removed) {
    paths.push_back(r.path);
    EXPECT_FALSE(r.why.empty());
  }
  std::sort(paths.begin(), paths.end());
  EXPECT_EQ(paths, (std::vector<fs::path>{idle_lock, cut}));
  for (const auto& p : {whole, held, fresh, top, other_name, deep}) EXPECT_TRUE(fs::exists(p)) << p;
  EXPECT_FALSE(fs::exists(cut));
  EXPECT_FALSE(fs::exists(idle_lock));

  // Once the build is over (its lock let go) and the fresh file is old enough, they go too.
  age(fresh);
  removed = remove_damaged_libraries(dir);
  EXPECT_EQ(removed.size(), 2u);
  EXPECT_FALSE(fs::exists(held));
  EXPECT_FALSE(fs::exists(fresh));

  // A build folder that is a symlink (kjudge makes a folder) is left alone, and so is its target.
  const auto target = write(dir / "elsewhere" / "x" / "x.so", 100);
  age(target);
  fs::create_directory_symlink(dir / "elsewhere", dir / "link");
  EXPECT_TRUE(remove_damaged_libraries(dir / "link").empty());
  EXPECT_TRUE(fs::exists(target));
  EXPECT_TRUE(remove_damaged_libraries(dir / "no such folder").empty());
}

TEST_F(shared_library_check, abandoned_build_locks_made_since_go_unless_held) {
  const auto since = fs::file_time_type::clock::now() - std::chrono::minutes(1);
  for (const char* name : {"fresh", "held", "old"}) {
    fs::create_directories(dir / name);
    std::ofstream(dir / name / "lock") << "";
  }
  fs::last_write_time(dir / "old" / "lock", since - std::chrono::hours(1));  // another's
  const int fd = ::open((dir / "held" / "lock").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  const auto removed = remove_abandoned_build_locks(dir, since);
  ::close(fd);
  EXPECT_EQ(removed, (std::vector<fs::path>{dir / "fresh" / "lock"}));
  EXPECT_TRUE(fs::exists(dir / "held" / "lock"));
  EXPECT_TRUE(fs::exists(dir / "old" / "lock"));
}

}  // namespace
}  // namespace kj::compile
