// Whole-file reads and all-or-nothing writes (kjudge/core/file_io.hpp).

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include <kjudge/core/error.hpp>
#include <kjudge/core/file_io.hpp>

namespace kj {
namespace {

namespace fs = std::filesystem;

fs::path scratch() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path dir = fs::temp_directory_path() / (std::string("kj_file_io_") + info->name() +
                                                    "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

TEST(FileIo, WriteCreatesFoldersReplacesWholeAndLeavesNoTemporary) {
  const fs::path dir = scratch();
  const fs::path file = dir / "a" / "b" / "result.json";
  write_file_atomic(file, "first");
  write_file_atomic(file, std::string("second\0with a nul", 17));
  EXPECT_EQ(read_file(file), std::string("second\0with a nul", 17));
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(file.parent_path())) ++entries;
  EXPECT_EQ(entries, 1) << "the temporary file was moved into place, not left behind";
  fs::remove_all(dir);
}

TEST(FileIo, ReadingAMissingFileNamesItAndIsAnIoError) {
  const fs::path missing = scratch() / "none.json";
  try {
    (void)read_file(missing);
    FAIL() << "no error";
  } catch (const kj::error& e) {
    EXPECT_EQ(e.kind(), error_kind::io);
    EXPECT_NE(e.message().find(missing.string()), std::string::npos) << e.message();
  }
}

TEST(FileIo, WritingIntoAFileAsAFolderIsAnIoError) {
  const fs::path dir = scratch();
  write_file_atomic(dir / "plain", "x");
  EXPECT_THROW(write_file_atomic(dir / "plain" / "under.json", "y"), kj::error);
  EXPECT_THROW(write_output(dir / "plain" / "under.json", "y"), kj::error);
  fs::remove_all(dir);
}

TEST(FileIo, TemporarySuffixesNeverRepeat) {
  EXPECT_NE(unique_temp_suffix(), unique_temp_suffix());
}

TEST(FileIo, TemporaryFolderGoesAwayWithItsContents) {
  std::filesystem::path kept;
  {
    const temp_dir a("kj-file-io-test-");
    const temp_dir b("kj-file-io-test-");
    EXPECT_NE(a.path(), b.path());
    ASSERT_TRUE(std::filesystem::is_directory(a.path()));
    EXPECT_EQ(a.path().filename().string().rfind("kj-file-io-test-", 0), 0U);
    write_file_atomic(a.path() / "sub" / "f.txt", "x");
    kept = a.path();
  }
  EXPECT_FALSE(std::filesystem::exists(kept));
}

}  // namespace
}  // namespace kj
