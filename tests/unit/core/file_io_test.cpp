// Whole-file reads and all-or-nothing writes (kjudge/core/file_io.hpp).

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <utility>

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

TEST(FileIo, ASymlinkIsWrittenThroughNotReplaced) {
  const fs::path dir = scratch();
  const fs::path target = dir / "elsewhere" / "result.json";
  write_file_atomic(target, "old");
  fs::create_directories(dir / "links");
  // An absolute link, a relative one, and a link to that link.
  const fs::path absolute = dir / "links" / "absolute.json";
  const fs::path relative = dir / "links" / "relative.json";
  const fs::path chained = dir / "chained.json";
  fs::create_symlink(target, absolute);
  fs::create_symlink(fs::path("..") / "elsewhere" / "result.json", relative);
  fs::create_symlink(fs::path("links") / "relative.json", chained);
  for (const auto& [link, text] :
       {std::pair{absolute, "first"}, std::pair{relative, "second"}, std::pair{chained, "third"}}) {
    write_file_atomic(link, text);
    EXPECT_TRUE(fs::is_symlink(link)) << link << " was replaced";
    EXPECT_EQ(read_file(target), text) << "through " << link;
    const auto resolved = resolve_output(link);
    EXPECT_EQ(resolved.how, output_target::kind::file);
    EXPECT_EQ(fs::canonical(resolved.path), fs::canonical(target));
  }
  // The temporary file was made beside the target, and moved into place.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(target.parent_path())) ++entries;
  EXPECT_EQ(entries, 1);
  // A dangling link names the file to create (its folder too).
  const fs::path dangling = dir / "dangling.json";
  fs::create_symlink(dir / "new" / "made.json", dangling);
  write_output(dangling, "made");
  EXPECT_TRUE(fs::is_symlink(dangling));
  EXPECT_EQ(read_file(dir / "new" / "made.json"), "made");
  // A loop of links is an error, not a hang.
  fs::create_symlink(dir / "loop_b", dir / "loop_a");
  fs::create_symlink(dir / "loop_a", dir / "loop_b");
  EXPECT_THROW(write_file_atomic(dir / "loop_a", "x"), kj::error);
  // A link to a folder is a folder.
  fs::create_symlink(dir / "links", dir / "folder_link");
  EXPECT_THROW(write_file_atomic(dir / "folder_link", "x"), kj::error);
  fs::remove_all(dir);
}

TEST(FileIo, DevicesFifosAndOwnDescriptorsAreWrittenInPlace) {
  const fs::path dir = scratch();
  fs::create_directories(dir);
  // A character device (through a link to it): written, not replaced by a regular file.
  const fs::path null_link = dir / "null.json";
  fs::create_symlink("/dev/null", null_link);
  EXPECT_EQ(resolve_output(null_link).how, output_target::kind::direct);
  write_file_atomic(null_link, "discarded");
  EXPECT_TRUE(fs::is_symlink(null_link));
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  // A FIFO: written in place (a reader gets the text).
  const fs::path fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = read_file(fifo); });
  write_file_atomic(fifo, "through the fifo");
  reader.join();
  EXPECT_EQ(got, "through the fifo");
  EXPECT_EQ(fs::status(fifo).type(), fs::file_type::fifo);
  // A pipe whose reader is gone: an error (EPIPE), not death by SIGPIPE.
  int ends[2];
  ASSERT_EQ(::pipe(ends), 0);
  ::close(ends[0]);
  EXPECT_THROW(write_file_atomic("/dev/fd/" + std::to_string(ends[1]), "nobody reads"), kj::error);
  ::close(ends[1]);
  // Nobody reading: an error after a short wait, not a hang.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(write_file_atomic(fifo, "lost"), kj::error);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  // One of our descriptors (a regular file behind it, as with `--json /dev/stdout > out.txt`):
  // written where its offset is, not replaced by rename (which would lose what it held).
  const fs::path file = dir / "out.txt";
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "report\n", 7), 7);
  for (const std::string via : {"/proc/self/fd/", "/dev/fd/"}) {
    const fs::path path = via + std::to_string(fd);
    const auto target = resolve_output(path);
    EXPECT_EQ(target.how, output_target::kind::descriptor) << path;
    EXPECT_EQ(target.fd, fd) << path;
  }
  write_file_atomic("/dev/fd/" + std::to_string(fd), "{json}\n");
  ::close(fd);
  EXPECT_EQ(read_file(file), "report\n{json}\n");
  // A descriptor open only for reading is refused.
  const int ro = ::open(file.c_str(), O_RDONLY);
  ASSERT_GE(ro, 0);
  EXPECT_THROW((void)resolve_output("/proc/self/fd/" + std::to_string(ro)), kj::error);
  ::close(ro);
  // A device that refuses the write is an error.
  if (fs::exists("/dev/full")) {
    EXPECT_THROW(write_file_atomic("/dev/full", "x"), kj::error);
  }
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
