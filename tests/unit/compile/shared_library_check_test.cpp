// elf_damage and remove_damaged_libraries on real ELF files: this test's own executable, whole
// and cut short at several lengths, and files that are no ELF at all.

#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
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

TEST_F(shared_library_check, damaged_libraries_are_removed_except_under_a_build_lock) {
  const auto whole = write(dir / "ext" / "ext.so");
  const auto cut = write(dir / "other" / "other.so", elf.size() / 3);
  const auto top = write(dir / "top.so", 100);
  const auto not_a_library = write(dir / "ext" / "ext.o", 100);  // only .so files are looked at
  const auto building = write(dir / "busy" / "busy.so", 100);    // torch's build holds its lock
  std::ofstream(dir / "busy" / "lock") << "";
  const auto deep = write(dir / "a" / "b" / "deep.so", 100);  // deeper than torch builds

  auto removed = remove_damaged_libraries(dir);
  std::vector<fs::path> paths;
  for (const auto& r : removed) {
    paths.push_back(r.path);
    EXPECT_FALSE(r.why.empty());
  }
  std::sort(paths.begin(), paths.end());
  EXPECT_EQ(paths, (std::vector<fs::path>{cut, top}));
  EXPECT_TRUE(fs::exists(whole));
  EXPECT_FALSE(fs::exists(cut));
  EXPECT_FALSE(fs::exists(top));
  EXPECT_TRUE(fs::exists(not_a_library));
  EXPECT_TRUE(fs::exists(building));
  EXPECT_TRUE(fs::exists(deep));
  EXPECT_TRUE(remove_damaged_libraries(dir / "no such folder").empty());
}

}  // namespace
}  // namespace kj::compile
