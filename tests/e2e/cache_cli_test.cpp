// End-to-end tests of `kjudge cache`, and of the prune an evaluation makes of a cache over its
// limit, through the real executable on folders of builds made here (no GPU, no nvcc needed).

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "kjudge_runner.hpp"

namespace kj::test {
namespace {

namespace fs = std::filesystem;

class CacheCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root = fs::temp_directory_path() /
           (std::string("kjudge_e2e_cache_") + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root);
    ::unsetenv("KJUDGE_CACHE_MAX_SIZE");  // the limit the text shows is the default's
  }
  void TearDown() override {
    fs::remove_all(root);
    ::unsetenv("KJUDGE_CACHE_MAX_SIZE");
  }

  static void age(const fs::path& p, long days) {
    const timespec t{std::time(nullptr) - days * 86400, 0};
    const timespec times[2] = {t, t};
    ASSERT_EQ(::utimensat(AT_FDCWD, p.c_str(), times, AT_SYMLINK_NOFOLLOW), 0) << p;
  }
  /** A build folder of `kib` KiB (a native variant, or a load_inline folder), last used `days`
   *  ago. */
  fs::path build(const fs::path& dir, const std::string& file, long days, std::size_t kib = 256) {
    fs::create_directories(dir);
    // Bytes no file system compresses: the file takes on disk what it holds.
    std::string data(kib * 1024, '\0');
    std::uint64_t x = 0x2545f4914f6cdd1dULL;
    for (char& c : data) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift64
      c = static_cast<char>(x);
    }
    std::ofstream(dir / file, std::ios::binary) << data;
    age(dir, days);
    return dir;
  }

  fs::path root;
};

TEST_F(CacheCli, InfoPruneAndClearSayWhatTheyFindAndRemove) {
  const auto old_native = build(root / "native" / "k1" / "v1", "candidate.so", 10);
  const auto old_inline = build(root / "torch_extensions" / "0123456789abcdef", "ext.so", 9);
  const auto fresh = build(root / "native" / "k2" / "v1", "candidate.so", 1);
  fs::create_directories(root / "roofline");
  std::ofstream(root / "roofline" / "gpu-1.json") << "{}";

  auto r = run_raw({"cache", "--cache-dir", root.string(), "--json", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto info = nlohmann::json::parse(r.output, nullptr, false);
  ASSERT_TRUE(info.is_object()) << r.output;
  EXPECT_EQ(info["schema"], "kjudge.cache/1");
  EXPECT_EQ(info["action"], "info");
  EXPECT_EQ(info["parts"]["native"]["count"], 2);
  EXPECT_EQ(info["parts"]["load_inline"]["count"], 1);
  EXPECT_EQ(info["parts"]["roofline"]["count"], 1);
  ASSERT_EQ(info["builds"].size(), 3u);
  EXPECT_EQ(info["builds"][0]["path"], old_native.string());  // least recently used first
  EXPECT_GE(info["total_bytes"].get<std::uint64_t>(), 3u * 256 * 1024);

  r = run_raw({"cache", "--cache-dir", root.string(), "--list"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("native/k1/v1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("limit: 10.0 GiB"), std::string::npos) << r.output;

  r = run_raw({"cache", "prune", "--cache-dir", root.string(), "--unused-for", "8d", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("would remove 2 builds"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(old_native));
  EXPECT_TRUE(fs::exists(old_inline));
  // Nothing written either: it left the prune lock's files (mode 0666) behind.
  for (const auto& entry : fs::directory_iterator(root))
    EXPECT_EQ(entry.path().filename().string().find(".prune.lock"), std::string::npos)
        << entry.path();

  r = run_raw({"cache", "prune", "--cache-dir", root.string(), "--unused-for", "9d12h"});
  EXPECT_EQ(r.exit_code, 2) << r.output;  // one unit a value
  r = run_raw({"cache", "prune", "--cache-dir", root.string(), "--unused-for", "228h"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("removed 1 build "), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(old_native));
  EXPECT_FALSE(fs::exists(root / "native" / "k1"));
  EXPECT_TRUE(fs::exists(old_inline));

  r = run_raw({"cache", "clear", "--cache-dir", root.string(), "--json", "-"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto cleared = nlohmann::json::parse(r.output, nullptr, false);
  ASSERT_TRUE(cleared.is_object()) << r.output;
  EXPECT_EQ(cleared["removed"].size(), 2u);
  EXPECT_FALSE(fs::exists(old_inline));
  EXPECT_FALSE(fs::exists(fresh));
  EXPECT_TRUE(fs::exists(root / "roofline" / "gpu-1.json"));  // measured ceilings stay
  EXPECT_EQ(cleared["bytes_after"].get<std::uint64_t>() < 64u * 1024, true) << cleared.dump(1);
}

TEST_F(CacheCli, BadValuesAndOptionsOfAnotherActionAreUsageErrors) {
  const auto dir = root.string();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"cache", "prune", "--max-size", "lots", "--cache-dir", dir},
        {"cache", "--max-size", "1G", "--cache-dir", dir},
        {"cache", "clear", "--unused-for", "1d", "--cache-dir", dir},
        {"cache", "info", "--dry-run", "--cache-dir", dir},
        {"cache", "clear", "--keep-recent", "10s", "--cache-dir", dir},
        {"cache", "tidy", "--cache-dir", dir},
        {"cache", "--cache-dir", ""},
        // Empty values read as not given (the default limit), and "-" made a folder called "-".
        {"cache", "prune", "--max-size", "", "--cache-dir", dir},
        {"cache", "prune", "--unused-for", "", "--cache-dir", dir},
        {"cache", "prune", "--keep-recent", "", "--cache-dir", dir},
        {"cache", "info", "--cache-dir", "-"}}) {
    const auto r = run_raw(args);
    EXPECT_EQ(r.exit_code, 2) << args[1] << " " << args[2] << "\n" << r.output;
  }
  ::setenv("KJUDGE_CACHE_MAX_SIZE", "off", 1);
  const auto r = run_raw({"cache", "prune", "--cache-dir", dir});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no limit is set"), std::string::npos) << r.output;
  // A cache that does not exist yet is no error.
  const auto none = run_raw({"cache", "--cache-dir", (root / "none").string()});
  EXPECT_EQ(none.exit_code, 0) << none.output;
  EXPECT_NE(none.output.find("nothing has been built there"), std::string::npos) << none.output;
}

TEST_F(CacheCli, AnEvaluationPrunesACacheOverItsLimitAndKeepsWhatItUsed) {
  const std::vector<std::string> args = {"--device", "cpu",         "--no-timing", "--trials",
                                         "1",        "--cache-dir", root.string()};
  const auto first = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", args);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_EQ(first.output.find("over its limit"), std::string::npos) << first.output;
  // The candidate's load_inline folder, used 12 days ago as far as a prune can tell (the one
  // it would remove first), beside a native build of 2 MiB unused for 11 days.
  ASSERT_TRUE(fs::exists(root / "torch_extensions"));
  fs::path own;
  for (const auto& e : fs::directory_iterator(root / "torch_extensions")) own = e.path();
  ASSERT_FALSE(own.empty());
  age(own, 12);
  const auto old = build(root / "native" / "k1" / "v1", "candidate.so", 11, 2048);
  fs::remove(root / ".last-prune");  // the first evaluation looked (at most once in 10 minutes)
  ::setenv("KJUDGE_CACHE_MAX_SIZE", "1M", 1);
  const auto r = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct");
  EXPECT_FALSE(fs::exists(old)) << r.output;
  EXPECT_NE(r.output.find("over its limit of 1.0 MiB: removed 1 build"), std::string::npos)
      << r.output;
  // The evaluation marked its own folder used before the prune: it stays.
  EXPECT_TRUE(fs::exists(own));
  EXPECT_TRUE(fs::exists(root / ".last-prune"));
  // A limit that cannot be read is said, and prunes nothing.
  ::setenv("KJUDGE_CACHE_MAX_SIZE", "lots", 1);
  const auto bad = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", args);
  EXPECT_EQ(bad.exit_code, 0) << bad.output;
  EXPECT_NE(bad.output.find("not kept within a limit: KJUDGE_CACHE_MAX_SIZE=lots"),
            std::string::npos)
      << bad.output;
}

}  // namespace
}  // namespace kj::test
