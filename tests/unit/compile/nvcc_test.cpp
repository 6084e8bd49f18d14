#include <kjudge/compile/nvcc.hpp>

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <kjudge/core/sha256.hpp>

namespace {

namespace fs = std::filesystem;
using kj::compile::build_native;
using kj::compile::build_result;
using kj::compile::nvcc_request;

constexpr const char* k_valid_source = R"(#include <kjudge/candidate.h>
extern "C" int kj_test_answer() { return 42; }
__global__ void kj_test_kernel(float* x) { x[threadIdx.x] *= 2.0f; }
// libc defines optind too (1 until getopt runs): the library's own use must see its own.
int optind = 7;
extern "C" int kj_test_optind() { return optind; }
)";

/** Line 3 uses an undeclared name. */
constexpr const char* k_broken_source = R"(#include <kjudge/candidate.h>
__global__ void kj_test_kernel(float* x) {
  x[0] = kj_undeclared_name;
}
)";

/** Sets an environment variable for one scope, then restores it. */
class scoped_env {
 public:
  scoped_env(const char* name, const char* value) : m_name(name) {
    if (const char* old = std::getenv(name)) m_old = old;
    if (value != nullptr)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;
  ~scoped_env() {
    if (m_old)
      ::setenv(m_name.c_str(), m_old->c_str(), 1);
    else
      ::unsetenv(m_name.c_str());
  }

 private:
  std::string m_name;
  std::optional<std::string> m_old;
};

class nvcc_test : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    m_dir = fs::temp_directory_path() /
            (std::string("kj_nvcc_test_") + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }

  fs::path write(const std::string& name, const std::string& text, bool executable = false) {
    const fs::path path = m_dir / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
    if (executable) fs::permissions(path, fs::perms::owner_all);
    return path;
  }

  nvcc_request request(const fs::path& source) const {
    nvcc_request r;
    r.source = source;
    r.arch = "90";
    r.cache_dir = m_dir / "cache";
    r.include_dir = fs::path(KJ_SOURCE_DIR_FOR_TESTS) / "include";
    return r;
  }

  static void require_nvcc() {
    if (kj::compile::find_nvcc().empty()) GTEST_SKIP() << "no nvcc on this machine";
  }

  fs::path m_dir;
};

TEST_F(nvcc_test, builds_a_loadable_library_then_hits_the_cache) {
  require_nvcc();
  const auto source = write("ok.cu", k_valid_source);
  const build_result first = build_native(request(source));
  ASSERT_TRUE(first.ok) << first.error << "\n" << first.log;
  EXPECT_FALSE(first.cached);
  EXPECT_EQ(first.key.size(), 64U);
  EXPECT_EQ(first.library.parent_path().parent_path(), m_dir / "cache" / first.key);
  EXPECT_EQ(first.library.filename(), "candidate.so");
  EXPECT_EQ(first.failure, kj::compile::build_failure::none);
  EXPECT_TRUE(fs::is_regular_file(first.library));
  EXPECT_TRUE(fs::is_regular_file(first.library.parent_path() / "build.log"));
  EXPECT_TRUE(first.error.empty());

  std::ifstream json_file(first.library.parent_path() / "build.json");
  const auto info = nlohmann::json::parse(json_file);
  EXPECT_EQ(info.at("nvcc_version"), first.nvcc_version);
  EXPECT_EQ(info.at("command"), first.command);
  EXPECT_GT(info.at("build_seconds").get<double>(), 0.0);

  // Every file nvcc resolved for the source, with its hash: the source and the ABI header among
  // them (system and toolkit headers too).
  std::set<std::string> listed;
  for (const auto& d : info.at("dependencies")) listed.insert(d.at("path").get<std::string>());
  EXPECT_TRUE(listed.count(source.string()) == 1) << info.dump(2);
  EXPECT_TRUE(listed.count(
                  (fs::path(KJ_SOURCE_DIR_FOR_TESTS) / "include/kjudge/candidate.h").string()) == 1)
      << info.dump(2);

  // Exactly one leftover-free entry: no temporary files remain beside the library, and the key
  // holds one build and no build folder.
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(first.library.parent_path()))
    names.insert(e.path().filename());
  EXPECT_EQ(names, (std::set<std::string>{"build.json", "build.log", "candidate.so"}));
  EXPECT_EQ(
      std::distance(fs::directory_iterator(m_dir / "cache" / first.key), fs::directory_iterator()),
      1);

  // The command is the documented one.
  const std::string joined = [&] {
    std::string s;
    for (const auto& a : first.command) s += a + " ";
    return s;
  }();
  EXPECT_NE(
      joined.find("-O3 -std=c++17 -shared -Xcompiler -fPIC -lineinfo -Xlinker "
                  "--no-undefined -Xlinker -Bsymbolic -gencode arch=compute_90,code=sm_90 -I"),
      std::string::npos)
      << joined;

  void* handle = ::dlopen(first.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << ::dlerror();
  auto* answer = reinterpret_cast<int (*)()>(::dlsym(handle, "kj_test_answer"));
  ASSERT_NE(answer, nullptr);
  EXPECT_EQ(answer(), 42);
  // -Bsymbolic: the library's optind is its own, not libc's, which the process already has.
  auto* own_optind = reinterpret_cast<int (*)()>(::dlsym(handle, "kj_test_optind"));
  ASSERT_NE(own_optind, nullptr);
  EXPECT_EQ(own_optind(), 7);
  ::dlclose(handle);

  const build_result second = build_native(request(source));
  ASSERT_TRUE(second.ok) << second.error;
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(second.key, first.key);
  EXPECT_EQ(second.library, first.library);
  EXPECT_EQ(second.log, first.log);
  // A hit lists the includes (nvcc -M) and hashes them, no compile: well under a build, which
  // does that and compiles too (a quarter failed under a loaded 2-core CI: 0.33 against 0.92 s).
  EXPECT_LT(second.build_time.count(), first.build_time.count() / 2);

  // A hit marks its build used (its folder's time), which a cache prune goes by
  // (compile/cache.hpp): a build looked up now is not one to remove.
  const fs::path build_dir = first.library.parent_path();
  const timespec long_ago{std::time(nullptr) - 30 * 86400, 0};
  const timespec times[2] = {long_ago, long_ago};
  ASSERT_EQ(::utimensat(AT_FDCWD, build_dir.c_str(), times, 0), 0);
  ASSERT_TRUE(build_native(request(source)).cached);
  struct stat st {};
  ASSERT_EQ(::stat(build_dir.c_str(), &st), 0);
  EXPECT_LT(std::time(nullptr) - st.st_mtim.tv_sec, 600);
}

TEST_F(nvcc_test, a_damaged_cache_entry_is_built_again_not_served) {
  // A filed library cut short, emptied or removed (or an entry without its record of the
  // library) must not be served: loading it fails and the candidate would be blamed. Each is
  // built again, filed in its place, and loads.
  require_nvcc();
  const auto source = write("ok.cu", k_valid_source);
  const build_result first = build_native(request(source));
  ASSERT_TRUE(first.ok) << first.error << "\n" << first.log;
  const fs::path library = first.library;
  const auto whole = fs::file_size(library);
  const std::vector<std::pair<std::string, std::function<void()>>> damages = {
      {"cut short", [&] { fs::resize_file(library, 4096); }},
      {"emptied", [&] { fs::resize_file(library, 0); }},
      {"removed", [&] { fs::remove(library); }},
      {"same size, other bytes",
       [&] {
         std::fstream f(library, std::ios::in | std::ios::out | std::ios::binary);
         f.seekp(static_cast<std::streamoff>(whole / 2));
         f.put('\x5a').put('\x5a').put('\x5a').put('\x5a');
       }},
      {"record without the library's hash",
       [&] {
         auto info = nlohmann::json::parse(std::ifstream(library.parent_path() / "build.json"));
         info.erase("library_sha256");
         std::ofstream(library.parent_path() / "build.json") << info.dump();
       }},
  };
  for (const auto& [what, damage] : damages) {
    damage();
    const build_result again = build_native(request(source));
    ASSERT_TRUE(again.ok) << what << ": " << again.error << "\n" << again.log;
    EXPECT_FALSE(again.cached) << what;
    EXPECT_EQ(again.library, library) << what << ": not filed in the damaged entry's place";
    ASSERT_TRUE(fs::is_regular_file(again.library)) << what;
    EXPECT_EQ(fs::file_size(again.library), whole) << what;
    void* handle = ::dlopen(again.library.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle, nullptr) << what << ": " << ::dlerror();
    ::dlclose(handle);
    const build_result hit = build_native(request(source));
    EXPECT_TRUE(hit.ok && hit.cached) << what;
  }
  // Nothing left beside the entry: the damaged folders were removed.
  EXPECT_EQ(
      std::distance(fs::directory_iterator(m_dir / "cache" / first.key), fs::directory_iterator()),
      1);
}

TEST(nvcc_target, the_arch_specific_target_from_hopper_on) {
  // Blackwell got plain sm_100: tcgen05 and the tensor memory need sm_100a.
  using kj::compile::target_arch;
  EXPECT_EQ(target_arch("80"), "80");
  EXPECT_EQ(target_arch("89"), "89");
  EXPECT_EQ(target_arch("90"), "90a");
  EXPECT_EQ(target_arch("100"), "100a");
  EXPECT_EQ(target_arch("103"), "103a");
  EXPECT_EQ(target_arch("120"), "120a");
  EXPECT_EQ(target_arch("90a"), "90a");  // a target already
  EXPECT_EQ(target_arch(""), "");
}

TEST_F(nvcc_test, a_build_filed_meanwhile_in_a_damaged_entrys_place_stays_served) {
  // Two builds of one key found its entry damaged. The first moved it aside and filed its own;
  // the second then moved that whole build aside and removed it, while the first evaluation had
  // still to load it: the entry was gone. Now the entry always holds a whole build: the second
  // swaps its own in (one rename), or where the file system cannot, puts the first one back.
  namespace detail = kj::compile::detail;
  const auto filed_build = [](const fs::path& dir, const std::string& bytes) {
    fs::create_directories(dir);
    std::ofstream(dir / "candidate.so", std::ios::binary) << bytes;
    const nlohmann::json info = {{"library_bytes", bytes.size()},
                                 {"library_sha256", kj::sha256_file(dir / "candidate.so")}};
    std::ofstream(dir / "build.json") << info.dump();
  };
  const auto library_of = [](const fs::path& dir) {
    std::ifstream in(dir / "candidate.so", std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const fs::path entry = m_dir / "key" / "variant";
  const fs::path work = m_dir / "key" / ".build.mine";
  const fs::path aside = m_dir / "key" / ".build.aside";
  filed_build(entry, "the first build's library");
  filed_build(work, "the second build's library");
  ASSERT_TRUE(detail::filed_build_whole(entry));
  auto r = detail::replace_damaged_entry(work, entry, aside);
  EXPECT_TRUE(r.served);
  EXPECT_TRUE(detail::filed_build_whole(entry));
  EXPECT_FALSE(fs::exists(aside));
  if (r.filed) {  // exchanged
    EXPECT_EQ(library_of(entry), "the second build's library");
    EXPECT_FALSE(fs::exists(work)) << "what the entry held is removed";
  } else {  // put back
    EXPECT_EQ(library_of(entry), "the first build's library");
    EXPECT_TRUE(fs::exists(work)) << "the caller removes a build that was not filed";
    fs::remove_all(work);
  }
  filed_build(work, "the second build's library");

  // Damaged indeed: replaced, and the damaged folder removed.
  fs::resize_file(entry / "candidate.so", 3);
  ASSERT_FALSE(detail::filed_build_whole(entry));
  r = detail::replace_damaged_entry(work, entry, aside);
  EXPECT_TRUE(r.served);
  EXPECT_TRUE(r.filed);
  EXPECT_FALSE(r.error) << r.error.message();
  EXPECT_EQ(library_of(entry), "the second build's library");
  EXPECT_TRUE(detail::filed_build_whole(entry));
  EXPECT_FALSE(fs::exists(aside));
  EXPECT_FALSE(fs::exists(work));
}

TEST_F(nvcc_test, concurrent_builds_of_one_key_are_safe) {
  require_nvcc();
  const auto source = write("same.cu", k_valid_source);
  build_result a;
  build_result b;
  std::thread other([&] { b = build_native(request(source)); });
  a = build_native(request(source));
  other.join();
  ASSERT_TRUE(a.ok) << a.error;
  ASSERT_TRUE(b.ok) << b.error;
  EXPECT_EQ(a.library, b.library);
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(a.library.parent_path()))
    names.insert(e.path().filename());
  EXPECT_EQ(names, (std::set<std::string>{"build.json", "build.log", "candidate.so"}));
  // The build that lost the race left nothing behind.
  EXPECT_EQ(
      std::distance(fs::directory_iterator(m_dir / "cache" / a.key), fs::directory_iterator()), 1);
  void* handle = ::dlopen(a.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << ::dlerror();
  ::dlclose(handle);
}

TEST_F(nvcc_test, a_build_removes_only_dead_builds_of_its_own_host_and_pid_namespace) {
  require_nvcc();
  const auto source = write("dead_builds.cu", k_valid_source);
  const build_result first = build_native(request(source));
  ASSERT_TRUE(first.ok) << first.error;
  const fs::path entry = first.library.parent_path().parent_path();
  fs::remove_all(first.library.parent_path());  // the next build of the key is a miss

  const auto ended = [] {  // a process id that no process holds now
    const pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    int status = 0;
    ::waitpid(child, &status, 0);
    return child;
  }();
  const pid_t live = ::fork();  // a process that runs while the build does
  if (live == 0) {
    ::pause();
    ::_exit(0);
  }
  const std::string owner = kj::compile::build_folder_owner();
  EXPECT_NE(owner.find("-pidns"), std::string::npos) << owner;
  const fs::path dead = entry / (".build." + owner + ".tmp." + std::to_string(ended) + ".1.2");
  const fs::path running = entry / (".build." + owner + ".tmp." + std::to_string(live) + ".1.2");
  // The same host name and process id, another PID namespace (a container sharing the host's
  // name): that process may be alive there.
  const fs::path foreign = entry / (".build." + owner + "0.tmp." + std::to_string(ended) + ".1.2");
  for (const auto& d : {dead, running, foreign}) fs::create_directories(d);

  const build_result second = build_native(request(source));
  ::kill(live, SIGKILL);
  ::waitpid(live, nullptr, 0);
  ASSERT_TRUE(second.ok) << second.error;
  EXPECT_FALSE(second.cached);
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(running));
  EXPECT_TRUE(fs::exists(foreign));
}

TEST_F(nvcc_test, compile_error_is_a_value_with_the_full_log) {
  require_nvcc();
  const auto source = write("broken.cu", k_broken_source);
  const build_result r = build_native(request(source));
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.cached);
  EXPECT_EQ(r.error.rfind("nvcc exited with code ", 0), 0U) << r.error;
  EXPECT_EQ(r.failure, kj::compile::build_failure::rejected);
  EXPECT_NE(r.log.find("broken.cu(3): error"), std::string::npos) << r.log;
  // The one-line message carries the first diagnostic too.
  EXPECT_NE(r.error.find("broken.cu(3): error"), std::string::npos) << r.error;
  EXPECT_NE(r.log.find("kj_undeclared_name"), std::string::npos) << r.log;
  EXPECT_FALSE(fs::exists(m_dir / "cache" / r.key));  // nothing left of the failed build
  // Failures are not cached: a second attempt runs the compiler again.
  const build_result again = build_native(request(source));
  EXPECT_FALSE(again.ok);
  EXPECT_FALSE(again.cached);
  EXPECT_EQ(again.log, r.log);
}

TEST_F(nvcc_test, cache_key_follows_source_flags_arch_and_abi_header) {
  require_nvcc();
  // Sources that stop in the preprocessor: the key is computed before nvcc runs, and this is fast.
  const auto source = write("a.cu", "#error stop\n");
  const auto base = build_native(request(source));
  ASSERT_EQ(base.key.size(), 64U) << base.error;
  EXPECT_FALSE(base.ok);

  EXPECT_EQ(build_native(request(source)).key, base.key);
  // The same bytes under another name and directory are the same candidate.
  EXPECT_EQ(build_native(request(write("elsewhere/b.cu", "#error stop\n"))).key, base.key);

  std::set<std::string> keys{base.key};
  auto flagged = request(source);
  flagged.extra_flags = {"-DKJ_EXTRA=1"};
  keys.insert(build_native(flagged).key);
  keys.insert(build_native(request(write("c.cu", "#error stop \n"))).key);
  auto arch = request(source);
  arch.arch = "90a";
  const auto arch_result = build_native(arch);
  keys.insert(arch_result.key);
  auto header = request(source);
  header.include_dir = m_dir / "include";
  write("include/kjudge/candidate.h", "/* another ABI */\n");
  fs::create_directories(m_dir / "include" / "kjudge" / "detail");
  fs::copy_file(
      fs::path(KJ_SOURCE_DIR_FOR_TESTS) / "include" / "kjudge" / "detail" / "launch_probe.h",
      m_dir / "include" / "kjudge" / "detail" / "launch_probe.h");
  keys.insert(build_native(header).key);
  EXPECT_EQ(keys.size(), 5U);

  bool has_arch_flag = false;
  for (const auto& a : arch_result.command) has_arch_flag |= a == "arch=compute_90a,code=sm_90a";
  EXPECT_TRUE(has_arch_flag);
}

TEST_F(nvcc_test, included_headers_are_checked_on_every_hit) {
  require_nvcc();
  constexpr const char* source_text = R"(#include <kjudge/candidate.h>
#include "tile config.cuh"
extern "C" int kj_test_answer() { return KJ_TILE; }
)";
  const auto source = write("a/fused.cu", source_text);
  write("a/tile config.cuh", "#define KJ_TILE 16\n");
  const build_result first = build_native(request(source));
  ASSERT_TRUE(first.ok) << first.error << "\n" << first.log;
  EXPECT_FALSE(first.cached);
  const build_result hit = build_native(request(source));
  EXPECT_TRUE(hit.cached);
  EXPECT_EQ(hit.library, first.library);

  // The header edited: the same key, another build.
  write("a/tile config.cuh", "#define KJ_TILE 32\n");
  const build_result edited = build_native(request(source));
  ASSERT_TRUE(edited.ok) << edited.error;
  EXPECT_FALSE(edited.cached);
  EXPECT_EQ(edited.key, first.key);
  EXPECT_NE(edited.library, first.library);
  void* handle = ::dlopen(edited.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << ::dlerror();
  EXPECT_EQ(reinterpret_cast<int (*)()>(::dlsym(handle, "kj_test_answer"))(), 32);
  ::dlclose(handle);

  // Back to the first bytes: the first build serves again.
  write("a/tile config.cuh", "#define KJ_TILE 16\n");
  EXPECT_EQ(build_native(request(source)).library, first.library);

  // The same source in another folder: checked against its own neighbour, by relative path.
  const auto copy = write("b/fused.cu", source_text);
  write("b/tile config.cuh", "#define KJ_TILE 32\n");
  const build_result other = build_native(request(copy));
  EXPECT_TRUE(other.cached);
  EXPECT_EQ(other.library, edited.library);
  write("b/tile config.cuh", "#define KJ_TILE 64\n");
  EXPECT_FALSE(build_native(request(copy)).cached);
  // A header reached through a symbolic link: pointed elsewhere, another build.
  write("c/v1.cuh", "#define KJ_TILE 101\n");
  write("c/v2.cuh", "#define KJ_TILE 102\n");
  const auto linked = write("c/fused.cu", source_text);
  fs::create_symlink("v1.cuh", m_dir / "c/tile config.cuh");
  const build_result via_v1 = build_native(request(linked));
  ASSERT_TRUE(via_v1.ok) << via_v1.error;
  fs::remove(m_dir / "c/tile config.cuh");
  fs::create_symlink("v2.cuh", m_dir / "c/tile config.cuh");
  const build_result via_v2 = build_native(request(linked));
  ASSERT_TRUE(via_v2.ok) << via_v2.error;
  EXPECT_FALSE(via_v2.cached);
  void* h2 = ::dlopen(via_v2.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h2, nullptr) << ::dlerror();
  EXPECT_EQ(reinterpret_cast<int (*)()>(::dlsym(h2, "kj_test_answer"))(), 102);
  ::dlclose(h2);

  // A header found first elsewhere (an -I folder's, then one next to the source): another build.
  write("d/inc/tile config.cuh", "#define KJ_TILE 201\n");
  const auto shadowed = write("d/src/fused.cu", source_text);
  auto with_include = request(shadowed);
  with_include.extra_flags = {"-I" + (m_dir / "d/inc").string()};
  const build_result from_include = build_native(with_include);
  ASSERT_TRUE(from_include.ok) << from_include.error << from_include.log;
  write("d/src/tile config.cuh", "#define KJ_TILE 202\n");
  const build_result from_neighbour = build_native(with_include);
  ASSERT_TRUE(from_neighbour.ok) << from_neighbour.error;
  EXPECT_FALSE(from_neighbour.cached);
  EXPECT_NE(from_neighbour.library, from_include.library);

  // A neighbour gone: not a hit, and nvcc says why.
  fs::remove(m_dir / "b/tile config.cuh");
  const build_result gone = build_native(request(copy));
  EXPECT_FALSE(gone.ok);
  EXPECT_EQ(gone.failure, kj::compile::build_failure::rejected);
}

TEST_F(nvcc_test, a_header_that_appears_during_the_build_is_not_filed_under_the_scanned_ones) {
  require_nvcc();
  // The scan finds "tile config.cuh" in the -I folder; while nvcc builds, one appears next to
  // the source, which the build then includes first. That library must not be filed under the
  // scanned headers' bytes: once the neighbour has gone again, a build must not be served it.
  constexpr const char* source_text = R"(#include <kjudge/candidate.h>
#include "tile config.cuh"
extern "C" int kj_test_answer() { return KJ_TILE; }
)";
  write("inc/tile config.cuh", "#define KJ_TILE 301\n");
  const auto source = write("src/fused.cu", source_text);
  write("neighbour.cuh", "#define KJ_TILE 302\n");
  // nvcc, but a build (-MD) while the marker exists first puts the neighbour in place.
  const auto wrapper = write("nvcc-wrapper.sh",
                             "#!/bin/sh\n"
                             "for a in \"$@\"; do\n"
                             "  if [ \"$a\" = -MD ] && [ -f '" +
                                 (m_dir / "appear").string() + "' ]; then\n    cp '" +
                                 (m_dir / "neighbour.cuh").string() + "' '" +
                                 (m_dir / "src/tile config.cuh").string() + "'\n    rm '" +
                                 (m_dir / "appear").string() +
                                 "'\n  fi\n"
                                 "done\n"
                                 "exec '" +
                                 kj::compile::find_nvcc().string() + "' \"$@\"\n",
                             true);
  auto req = request(source);
  req.nvcc = wrapper;
  req.extra_flags = {"-I" + (m_dir / "inc").string()};
  const auto answer = [](const fs::path& library) {
    void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(handle, nullptr) << ::dlerror();
    if (handle == nullptr) return -1;
    const int value = reinterpret_cast<int (*)()>(::dlsym(handle, "kj_test_answer"))();
    ::dlclose(handle);
    return value;
  };
  write("appear", "");
  const build_result during = build_native(req);
  ASSERT_TRUE(during.ok) << during.error << "\n" << during.log;
  EXPECT_FALSE(fs::exists(m_dir / "appear"));
  EXPECT_EQ(answer(during.library), 302);  // the build took the neighbour
  EXPECT_NE(during.log.find("not cached: the files it included were not those listed"),
            std::string::npos)
      << during.log;

  fs::remove(m_dir / "src/tile config.cuh");
  const build_result after = build_native(req);
  ASSERT_TRUE(after.ok) << after.error << "\n" << after.log;
  EXPECT_FALSE(after.cached);
  EXPECT_EQ(answer(after.library), 301);
  // This one was built from the scanned files: filed, and served next time.
  const build_result hit = build_native(req);
  EXPECT_TRUE(hit.cached);
  EXPECT_EQ(hit.library, after.library);
}

TEST_F(nvcc_test, spaces_in_the_source_and_cache_paths_still_cache) {
  require_nvcc();
  // nvcc names a dependency rule after -o's path or the source's base name, unescaped: a space
  // there had made the build's own list differ from the scan's, and nothing was cached.
  const auto source = write("sp ace/my kernel.cu", k_valid_source);
  auto req = request(source);
  req.cache_dir = m_dir / "cache dir";
  const build_result first = build_native(req);
  ASSERT_TRUE(first.ok) << first.error << "\n" << first.log;
  EXPECT_EQ(first.log.find("not cached"), std::string::npos) << first.log;
  const build_result second = build_native(req);
  EXPECT_TRUE(second.cached) << second.log;
  EXPECT_EQ(second.library, first.library);
}

TEST_F(nvcc_test, a_header_whose_name_is_not_utf8_still_builds_and_caches) {
  require_nvcc();
  // The build's record (build.json) names every header; a Latin-1 name made the JSON writer
  // throw out of build_native after the library was built.
  const std::string header = "caf\xe9.cuh";
  std::ofstream(m_dir / header) << "#define KJ_TEST_ANSWER 42\n";
  const auto source = write("latin1.cu", "#include <kjudge/candidate.h>\n#include \"" + header +
                                             "\"\nextern \"C\" int kj_test_answer() { return "
                                             "KJ_TEST_ANSWER; }\n");
  const build_result first = build_native(request(source));
  ASSERT_TRUE(first.ok) << first.error << first.log;
  const build_result second = build_native(request(source));
  ASSERT_TRUE(second.ok) << second.error << second.log;
  EXPECT_TRUE(second.cached) << second.log;
}

TEST_F(nvcc_test, kjudges_own_headers_missing_are_the_tools_failure) {
  // A kjudge whose source folder moved: the candidate's #include <kjudge/candidate.h> failed as
  // its compile error.
  require_nvcc();
  nvcc_request r = request(write("ok.cu", k_valid_source));
  r.include_dir = m_dir / "no-such-include";
  const build_result b = build_native(r);
  EXPECT_FALSE(b.ok);
  EXPECT_EQ(b.failure, kj::compile::build_failure::tool) << b.error;
  EXPECT_NE(b.error.find("kjudge's candidate headers are missing"), std::string::npos) << b.error;
}

TEST_F(nvcc_test, an_include_folder_with_a_comma_is_a_clear_error) {
  require_nvcc();
  // nvcc splits -I's value on commas: the build failed with "<command-line>: fatal error".
  const fs::path include = m_dir / "k,j" / "include";
  fs::create_directories(include);
  fs::copy(fs::path(KJ_SOURCE_DIR_FOR_TESTS) / "include", include, fs::copy_options::recursive);
  nvcc_request r = request(write("comma.cu", k_valid_source));
  r.include_dir = include;
  const build_result b = build_native(r);
  EXPECT_FALSE(b.ok);
  EXPECT_EQ(b.failure, kj::compile::build_failure::tool);
  EXPECT_NE(b.error.find("has a comma in its path"), std::string::npos) << b.error;
}

TEST_F(nvcc_test, a_list_without_the_line_markers_is_not_trusted) {
  require_nvcc();
  // The host compiler without line markers (-Xcompiler -P) makes nvcc -M list the source alone:
  // such a build is not cached, so an edited header is built anew (it had been served the old
  // library).
  constexpr const char* source_text = R"(#include <kjudge/candidate.h>
#include "tile.cuh"
extern "C" int kj_test_answer() { return KJ_TILE; }
)";
  const auto source = write("p/fused.cu", source_text);
  write("p/tile.cuh", "#define KJ_TILE 401\n");
  auto req = request(source);
  req.extra_flags = {"-Xcompiler", "-P"};
  const build_result first = build_native(req);
  ASSERT_TRUE(first.ok) << first.error << "\n" << first.log;
  EXPECT_NE(first.log.find("not cached: its includes could not be listed"), std::string::npos)
      << first.log;
  write("p/tile.cuh", "#define KJ_TILE 402\n");
  const build_result edited = build_native(req);
  ASSERT_TRUE(edited.ok) << edited.error;
  EXPECT_FALSE(edited.cached);
  void* handle = ::dlopen(edited.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << ::dlerror();
  EXPECT_EQ(reinterpret_cast<int (*)()>(::dlsym(handle, "kj_test_answer"))(), 402);
  ::dlclose(handle);
}

TEST_F(nvcc_test, dependency_and_preprocessing_flags_are_refused) {
  for (const char* flag :
       {"-M", "-MM", "-MD", "-MMD", "-MF", "-MFdeps.d", "-MT=x", "-MP",
        "--generate-nonsystem-dependencies-with-compile", "--dependency-output=deps.d", "-E",
        "--preprocess", "", "-Xcompiler=-MD", "-Xcompiler=-O2,-MMD", "--compiler-options=-MF,x.d",
        // another phase, output or action than the shared library kjudge asks for
        "-c", "--compile", "-dc", "--device-c", "-ptx", "-cubin", "--fatbin", "-lib", "--run",
        "-dlink", "-dryrun", "-V", "--help", "-o", "--output-file=x.so", "-odir"})
    EXPECT_FALSE(kj::compile::refused_flag(flag).empty()) << flag;
  for (const char* flag : {"-O2", "-maxrregcount=32", "--use_fast_math", "-lineinfo", "-DMODE=1",
                           "-Xptxas=-v", "-Ifoo", "--expt-relaxed-constexpr", "-Xcompiler=-O2",
                           "-Xcompiler=-fno-math-errno,-march=native", "-Xcompiler"})
    EXPECT_TRUE(kj::compile::refused_flag(flag).empty()) << flag;
  const auto source = write("fine.cu", k_valid_source);
  auto req = request(source);
  req.extra_flags = {"-MMD"};
  const build_result r = build_native(req);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("-MMD"), std::string::npos) << r.error;
}

TEST_F(nvcc_test, a_cache_that_cannot_take_a_build_still_builds_unfiled) {
  require_nvcc();
  const auto source = write("unwritable.cu", k_valid_source);
  // Root writes through permission bits, so the cache folder sits under a regular file: no
  // user can create it. (Not as root, a read-only folder is tried as well.)
  write("not_a_folder", "");
  std::vector<fs::path> caches = {m_dir / "not_a_folder" / "cache"};
  if (::geteuid() != 0) {
    fs::create_directories(m_dir / "read_only");
    fs::permissions(m_dir / "read_only", fs::perms::owner_read | fs::perms::owner_exec);
    caches.push_back(m_dir / "read_only");
  }
  for (const fs::path& cache : caches) {
    auto r = request(source);
    r.cache_dir = cache;
    const build_result built = build_native(r);
    ASSERT_TRUE(built.ok) << cache << ": " << built.error << "\n" << built.log;
    EXPECT_FALSE(built.cached);
    EXPECT_NE(built.not_cached.find("the cache cannot take it"), std::string::npos)
        << built.not_cached;
    // A folder of the temporary directory that only this user can enter, made for this build.
    const fs::path folder = built.library.parent_path();
    EXPECT_EQ(folder.parent_path(), fs::temp_directory_path());
    EXPECT_TRUE(folder.filename().string().starts_with("kjudge-unfiled-build." +
                                                       std::to_string(::getuid()) + "."))
        << folder;
    EXPECT_EQ(fs::status(folder).permissions() & fs::perms::all, fs::perms::owner_all);
    void* handle = ::dlopen(built.library.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle, nullptr) << ::dlerror();
    EXPECT_EQ(reinterpret_cast<int (*)()>(::dlsym(handle, "kj_test_answer"))(), 42);
    ::dlclose(handle);
    fs::remove_all(folder);
  }
  if (::geteuid() != 0) fs::permissions(m_dir / "read_only", fs::perms::owner_all);  // TearDown
}

TEST_F(nvcc_test, builds_left_behind_under_other_keys_are_removed_once_their_process_ended) {
  require_nvcc();
  const std::string owner = kj::compile::build_folder_owner();
  const auto ended = [] {
    const pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    ::waitpid(child, nullptr, 0);
    return child;
  }();
  // An unfiled build of a key never built again, and one of another host beside it.
  const fs::path lone_key = m_dir / "cache" / std::string(64, 'a');
  const fs::path dead = lone_key / (".build." + owner + ".tmp." + std::to_string(ended) + ".1.2");
  const fs::path shared_key = m_dir / "cache" / std::string(64, 'b');
  const fs::path dead_too =
      shared_key / (".build." + owner + ".tmp." + std::to_string(ended) + ".3.4");
  const fs::path foreign = shared_key / (".build.otherhost.tmp." + std::to_string(ended) + ".1.2");
  for (const auto& d : {dead, dead_too, foreign}) fs::create_directories(d / "x");

  const build_result built = build_native(request(write("other_key.cu", k_valid_source)));
  ASSERT_TRUE(built.ok) << built.error;
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_FALSE(fs::exists(lone_key));  // left empty: removed with it
  EXPECT_FALSE(fs::exists(dead_too));
  EXPECT_TRUE(fs::exists(foreign));
}

TEST_F(nvcc_test, the_host_compiler_is_in_the_key_as_nvcc_finds_it) {
  require_nvcc();
  const auto source = write("ccbin.cu", "#error stop\n");
  // Two compilers of one name in two folders; nvcc would run the first on PATH.
  write("one/kjcc", "#!/bin/sh\nexit 1\n", true);
  write("two/kjcc", "#!/bin/sh\nexit 2\n", true);
  const std::string path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  const auto key = [&](const std::string& search, std::vector<std::string> flags,
                       const char* ccbin_env = nullptr, const char* prepended = nullptr) {
    scoped_env set("PATH", search.c_str());
    scoped_env cc("NVCC_CCBIN", ccbin_env);
    scoped_env before("NVCC_PREPEND_FLAGS", prepended);
    scoped_env after("NVCC_APPEND_FLAGS", nullptr);
    auto r = request(source);
    r.extra_flags = std::move(flags);
    r.working_dir = m_dir;
    return build_native(r).key;
  };
  const std::string in_one = (m_dir / "one").string() + ":" + path;
  const std::string in_two = (m_dir / "two").string() + ":" + path;
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"-ccbin", "kjcc"}, {"-ccbin=kjcc"}, {"--compiler-bindir=kjcc"}}) {
    const std::string one = key(in_one, flags);
    ASSERT_EQ(one.size(), 64U);
    EXPECT_NE(key(in_two, flags), one) << flags[0];
    // A relative folder on PATH is the working folder's, where nvcc runs, not kjudge's.
    EXPECT_EQ(key("one:" + path, flags), one) << flags[0];
  }
  // NVCC_CCBIN's bare name is found the same way; a folder names its gcc and g++.
  EXPECT_NE(key(in_one, {}, "kjcc"), key(in_two, {}, "kjcc"));
  write("gcc_folder/g++", "#!/bin/sh\nexit 3\n", true);
  const std::vector<std::string> folder = {"-ccbin", (m_dir / "gcc_folder").string()};
  const std::string folder_key = key(path, folder);
  write("gcc_folder/gcc", "#!/bin/sh\nexit 4\n", true);
  EXPECT_NE(key(path, folder), folder_key);
  // nvcc reads NVCC_PREPEND_FLAGS before the command line: the command line's -ccbin is the one
  // it runs (found on PATH here), not the prepended one (the same in both).
  const std::string prepended = "-ccbin " + (m_dir / "two" / "kjcc").string();
  EXPECT_NE(key(in_one, {"-ccbin", "kjcc"}, nullptr, prepended.c_str()),
            key(in_two, {"-ccbin", "kjcc"}, nullptr, prepended.c_str()));
}

TEST_F(nvcc_test, an_nvcc_changed_at_its_path_is_another_key) {
  require_nvcc();
  // A wrapper script edited at the same path (or a toolkit replaced in place): the path and the
  // version string, remembered per path, stayed the same, and a cached library built by the
  // old one served.
  const auto source = write("a.cu", "#error stop\n");
  const std::string real = kj::compile::find_nvcc().string();
  const auto wrapper = write("wrap/nvcc", "#!/bin/sh\nexec '" + real + "' \"$@\"\n", true);
  auto r = request(source);
  r.nvcc = wrapper;
  const std::string before = build_native(r).key;
  ASSERT_EQ(before.size(), 64U);
  EXPECT_EQ(build_native(r).key, before);
  write("wrap/nvcc", "#!/bin/sh\nexec '" + real + "' -DKJ_WRAPPED \"$@\"\n", true);
  const std::string edited = build_native(r).key;
  EXPECT_NE(edited, before);
  // The nvcc.profile beside it, whose INCLUDES and LIBRARIES every build takes.
  write("wrap/nvcc.profile", "INCLUDES += -DKJ_PROFILE\n");
  EXPECT_NE(build_native(r).key, edited);
}

TEST_F(nvcc_test, build_environment_is_in_the_key) {
  require_nvcc();
  const auto source = write("a.cu", "#error stop\n");
  const std::string base = build_native(request(source)).key;
  ASSERT_EQ(base.size(), 64U);
  std::string appended;
  {
    scoped_env flags("NVCC_APPEND_FLAGS", "-DKJ_FROM_ENV=1");
    appended = build_native(request(source)).key;
  }
  EXPECT_NE(appended, base);
  EXPECT_EQ(build_native(request(source)).key, base);
  // nvcc.profile extends these from the environment: ptxas's flags, the includes.
  for (const char* name : {"PTXAS_FLAGS", "INCLUDES", "CUDAFE_FLAGS", "LIBRARIES"}) {
    scoped_env set(name, "-DKJ_FROM_ENV=2");
    EXPECT_NE(build_native(request(source)).key, base) << name;
  }
  // A file named in the environment's flags is hashed as one named by --nvcc-flag is.
  const auto options = write("env_flags.txt", "-DKJ_TILE=1\n");
  std::string one, two;
  {
    const std::string value = "--options-file " + options.string();
    scoped_env flags("NVCC_APPEND_FLAGS", value.c_str());
    one = build_native(request(source)).key;
    write("env_flags.txt", "-DKJ_TILE=2\n");
    two = build_native(request(source)).key;
  }
  EXPECT_NE(one, base);
  EXPECT_NE(two, one);
}

TEST_F(nvcc_test, a_warning_from_nvcc_does_not_turn_the_cache_off) {
  require_nvcc();
  // -std=c++20 after kjudge's -std=c++17: nvcc warns of the redefinition on every run, the
  // dependency scan included (the list is read from its own file, not from the output).
  const auto source = write("warned.cu", k_valid_source);
  auto r = request(source);
  r.extra_flags = {"-std=c++20"};
  const build_result first = build_native(r);
  ASSERT_TRUE(first.ok) << first.error << first.log;
  EXPECT_EQ(first.log.find("not cached"), std::string::npos) << first.log;
  const build_result second = build_native(r);
  EXPECT_TRUE(second.cached) << second.log;
  for (const auto& e : fs::directory_iterator(m_dir / "cache" / first.key))
    EXPECT_FALSE(e.path().filename().string().starts_with(".build")) << e.path();
}

TEST_F(nvcc_test, files_named_by_flags_are_in_the_key) {
  require_nvcc();
  const auto source = write("tiled.cu", R"(#include <kjudge/candidate.h>
extern "C" int kj_test_answer() { return KJ_TILE; }
)");
  const auto options = write("flags.txt", "-DKJ_TILE=1\n");
  auto r = request(source);
  r.extra_flags = {"--options-file", options.string()};
  const build_result one = build_native(r);
  ASSERT_TRUE(one.ok) << one.error << one.log;
  write("flags.txt", "-DKJ_TILE=2\n");
  const build_result two = build_native(r);
  ASSERT_TRUE(two.ok) << two.error << two.log;
  EXPECT_FALSE(two.cached);
  void* handle = ::dlopen(two.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << ::dlerror();
  EXPECT_EQ(reinterpret_cast<int (*)()>(::dlsym(handle, "kj_test_answer"))(), 2);
  ::dlclose(handle);

  // A file behind a second '=' (-Xlinker=--version-script=v.map): an edit served the build
  // made with the old map.
  const auto map = write("v.map", "{ global: kj_test_answer; local: *; };\n");
  auto scripted = request(source);
  scripted.extra_flags = {"-DKJ_TILE=3", "-Xlinker=--version-script=" + map.string()};
  const build_result kept = build_native(scripted);
  ASSERT_TRUE(kept.ok) << kept.error << kept.log;
  write("v.map", "{ global: kj_forward; local: *; };\n");
  const build_result edited = build_native(scripted);
  ASSERT_TRUE(edited.ok) << edited.error << edited.log;
  EXPECT_FALSE(edited.cached);
  EXPECT_NE(edited.key, kept.key);
}

TEST_F(nvcc_test, a_failure_of_the_tool_is_not_a_compile_error) {
  require_nvcc();
  // The source is fine; the host compiler nvcc is told to use does not exist, so an empty
  // source fails as well.
  const auto source = write("fine.cu", k_valid_source);
  scoped_env ccbin("NVCC_CCBIN", "/nonexistent/g++");
  const build_result r = build_native(request(source));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.failure, kj::compile::build_failure::tool) << r.error << "\n" << r.log;
  EXPECT_NE(r.error.find("empty source"), std::string::npos) << r.error;
}

TEST_F(nvcc_test, a_source_that_quotes_a_tool_failure_is_still_a_compile_error) {
  require_nvcc();
  // The words kjudge reads as a full disk or a killed compiler, in the candidate's own
  // diagnostics (device and host pass) and in the source text the compilers echo.
  for (const std::string& body :
       {std::string("#error No space left on device\n"),
        std::string("static_assert(sizeof(int) == 3, \"No space left on device\");\n"),
        std::string("#error fatal error: Killed signal terminated program cc1plus\n"),
        // #line names another file, or one named like nvcc's own report, in the diagnostics.
        std::string("#line 1 \"elsewhere.h\"\n"
                    "static_assert(sizeof(int) == 3, \"No space left on device\");\n"),
        std::string("#line 1 \"nvcc error   : 'cicc' died due to signal 9 (Kill signal)\"\n"
                    "static_assert(sizeof(int) == 3, \"x\");\n"),
        // The linker's words about a symbol the source named (no source position in its
        // line: "x.o:(.text+0x33): undefined reference to `No space left on device'") read as
        // the tool's failure (an internal error).
        std::string("extern \"C\" int kj_g() __asm__(\"\\\"No space left on device\\\"\");\n"
                    "extern \"C\" int kj_test_answer() { return kj_g(); }\n"),
        // The assembler's words on the source's own asm ("x.s:47: Error: ...").
        std::string("#ifndef __CUDA_ARCH__\nasm(\".error \\\"No space left on device\\\"\");\n"
                    "#endif\n"),
        // What the source's asm prints (`.print`: a line with no position, after the
        // assembler's header): a full disk.
        std::string("#ifndef __CUDA_ARCH__\nasm(\".print \\\"No space left on device\\\"\\n\\t"
                    ".error \\\"boom\\\"\");\n#endif\n")}) {
    const auto source = write("quoting.cu", "#include <kjudge/candidate.h>\n" + body);
    const build_result r = build_native(request(source));
    EXPECT_FALSE(r.ok) << body;
    EXPECT_EQ(r.failure, kj::compile::build_failure::rejected) << body << r.error << "\n" << r.log;
  }
}

TEST_F(nvcc_test, paths_a_shell_would_change_are_refused_before_nvcc_runs) {
  // nvcc runs its tools through a shell with the paths in double quotes: a `$HOME` in a folder's
  // name was expanded (a compile error blamed on the candidate), a backquoted command ran.
  for (const std::string folder : {"src$HOME", "bt`touch PWNED`", "quo\"te", "back\\slash"}) {
    const auto source = write(folder + "/ok.cu", k_valid_source);
    const build_result r = build_native(request(source));
    EXPECT_FALSE(r.ok) << folder;
    EXPECT_EQ(r.failure, kj::compile::build_failure::tool) << folder;
    EXPECT_NE(r.error.find("in its path"), std::string::npos) << folder << ": " << r.error;
    EXPECT_FALSE(fs::exists(m_dir / folder / "PWNED")) << folder;
    EXPECT_FALSE(fs::exists("PWNED")) << folder;
  }
  auto r = request(write("ok.cu", k_valid_source));
  r.cache_dir = m_dir / "cache$USER";
  const build_result cache = build_native(r);
  EXPECT_FALSE(cache.ok);
  EXPECT_NE(cache.error.find("cache$USER has a '$' in its path"), std::string::npos) << cache.error;
  EXPECT_TRUE(kj::compile::shell_hazard(m_dir / "plain folder, with comma" / "ok.cu").empty());
}

TEST_F(nvcc_test, a_source_whose_file_name_has_a_comma_is_refused_before_nvcc_runs) {
  // fatbinary splits its file=<name>.cubin argument on commas: "my,kernel.cu" failed as the
  // candidate's compile error ("'kernel.cubin' is not in 'keyword=value' format").
  const build_result b = build_native(request(write("my,kernel.cu", k_valid_source)));
  EXPECT_FALSE(b.ok);
  EXPECT_EQ(b.failure, kj::compile::build_failure::tool) << b.error;
  EXPECT_NE(b.error.find("has a comma in its file name"), std::string::npos) << b.error;
  EXPECT_TRUE(b.log.empty()) << "nvcc must not have run: " << b.log;
  // A comma in a folder's name builds (only the file's own name reaches fatbinary so).
  EXPECT_TRUE(kj::compile::source_name_hazard(m_dir / "a,b" / "ok.cu").empty());
}

TEST_F(nvcc_test, the_time_limit_counts_for_the_whole_build) {
  // A compiler that hangs on every run: the scan and the build (and a canary) had the whole
  // limit each, so a build asked to end in 1.5 s ran for three times that.
  const auto fake = write("bin/nvcc",
                          "#!/bin/sh\n"
                          "case \"$1\" in --version) echo 'Cuda compilation tools, release 13.0, "
                          "V13.0.88'; exit 0;; esac\n"
                          "exec sleep 30\n",
                          true);
  auto r = request(write("ok.cu", k_valid_source));
  r.nvcc = fake;
  r.timeout = std::chrono::milliseconds(1500);
  const auto start = std::chrono::steady_clock::now();
  const build_result b = build_native(r);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(b.ok);
  EXPECT_EQ(b.failure, kj::compile::build_failure::tool) << b.error;
  EXPECT_LT(took.count(), 2.5) << b.error;
  EXPECT_LT(b.build_time.count(), 2.5) << b.error;
  // The scan took the limit, so no build ran: the error says so ("nvcc timed out after 0.0 s"
  // alone read as the build's fault).
  EXPECT_NE(b.error.find("time limit ran out during nvcc's include scan: nvcc -M"),
            std::string::npos)
      << b.error;
}

TEST_F(nvcc_test, every_library_carries_the_launch_probe) {
  require_nvcc();
  // kjudge reads the candidate's own CUDA runtime's last error through it after kj_forward.
  const auto source = write("probed.cu", k_valid_source);
  const build_result r = build_native(request(source));
  ASSERT_TRUE(r.ok) << r.error << r.log;
  void* handle = ::dlopen(r.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << ::dlerror();
  EXPECT_NE(::dlsym(handle, "kjudge_launch_probe_v1"), nullptr);
  ::dlclose(handle);
}

TEST_F(nvcc_test, link_errors_are_compile_errors) {
  require_nvcc();
  const auto source = write("undefined.cu", R"(#include <kjudge/candidate.h>
extern "C" int kj_nowhere_defined(int);
extern "C" int kj_test_answer() { return kj_nowhere_defined(1); }
)");
  const build_result r = build_native(request(source));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.failure, kj::compile::build_failure::rejected);
  EXPECT_NE(r.log.find("kj_nowhere_defined"), std::string::npos) << r.log;
  EXPECT_NE(r.error.find("undefined reference to"), std::string::npos) << r.error;
}

TEST_F(nvcc_test, what_nvcc_writes_is_filed_only_as_a_shared_library) {
  require_nvcc();
  // An option that reaches nvcc past refused_flag (here the environment's) makes it write an
  // object where the library should be: the tool's failure, never filed nor loaded.
  scoped_env append("NVCC_APPEND_FLAGS", "-c");
  const build_result r = build_native(request(write("fine.cu", k_valid_source)));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.failure, kj::compile::build_failure::tool) << r.error << "\n" << r.log;
  EXPECT_NE(r.error.find("no shared library"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("an object"), std::string::npos) << r.error;
  EXPECT_TRUE(r.library.empty());
  EXPECT_FALSE(fs::exists(m_dir / "cache" / r.key));
}

TEST_F(nvcc_test, a_header_whose_name_ends_in_a_colon_is_in_the_key) {
  require_nvcc();
  // nvcc lists it unescaped ("h:"), as a target would be written.
  const auto source = write("c/main.cu", R"(#include <kjudge/candidate.h>
#include "h:"
extern "C" int kj_test_answer() { return VAL; }
)");
  write("c/h:", "#define VAL 1\n");
  const build_result first = build_native(request(source));
  ASSERT_TRUE(first.ok) << first.error << "\n" << first.log;
  write("c/h:", "#define VAL 5\n");
  const build_result edited = build_native(request(source));
  ASSERT_TRUE(edited.ok) << edited.error;
  EXPECT_FALSE(edited.cached);
  EXPECT_NE(edited.library, first.library);
  void* handle = ::dlopen(edited.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << ::dlerror();
  EXPECT_EQ(reinterpret_cast<int (*)()>(::dlsym(handle, "kj_test_answer"))(), 5);
  ::dlclose(handle);
}

TEST_F(nvcc_test, the_tools_failure_names_the_line_that_says_so) {
  // A compiler whose cicc the OOM killer ended: the message carries nvcc's own line, not only
  // "nvcc exited with code 1" (the log has it all).
  const auto fake = write("bin/nvcc",
                          "#!/bin/sh\n"
                          "case \"$1\" in --version) echo 'Cuda compilation tools, release 13.0, "
                          "V13.0.88'; exit 0;; esac\n"
                          "echo \"nvcc error   : 'cicc' died due to signal 9 (Kill signal)\" >&2\n"
                          "exit 1\n",
                          true);
  auto r = request(write("ok.cu", k_valid_source));
  r.nvcc = fake;
  const build_result b = build_native(r);
  EXPECT_FALSE(b.ok);
  EXPECT_EQ(b.failure, kj::compile::build_failure::tool) << b.error;
  EXPECT_NE(b.error.find("'cicc' died due to signal 9"), std::string::npos) << b.error;
}

TEST_F(nvcc_test, missing_or_broken_nvcc_is_a_clean_error) {
  const auto source = write("ok.cu", k_valid_source);
  auto r = request(source);
  r.nvcc = m_dir / "no-such-nvcc";
  const auto missing = build_native(r);
  EXPECT_FALSE(missing.ok);
  EXPECT_EQ(missing.failure, kj::compile::build_failure::tool);
  EXPECT_NE(missing.error.find("no-such-nvcc"), std::string::npos) << missing.error;

  r.nvcc = write("fake-nvcc", "#!/bin/sh\necho 'not a compiler'\n", true);
  const auto fake = build_native(r);
  EXPECT_FALSE(fake.ok);
  EXPECT_NE(fake.error.find("release number"), std::string::npos) << fake.error;
}

TEST_F(nvcc_test, missing_source_and_bad_arch_are_values) {
  auto r = request(m_dir / "absent.cu");
  const auto missing = build_native(r);
  EXPECT_FALSE(missing.ok);
  EXPECT_EQ(missing.error.rfind("cannot read ", 0), 0U) << missing.error;
  EXPECT_NE(missing.error.find("absent.cu"), std::string::npos);

  r = request(write("ok.cu", k_valid_source));
  r.arch = "sm_90";
  const auto bad_arch = build_native(r);
  EXPECT_FALSE(bad_arch.ok);
  EXPECT_NE(bad_arch.error.find("sm_90"), std::string::npos);
}

TEST_F(nvcc_test, nvcc_version_is_parsed) {
  const auto fake = write("bin/nvcc",
                          "#!/bin/sh\necho 'nvcc: NVIDIA (R) Cuda compiler driver'\n"
                          "echo 'Cuda compilation tools, release 12.4, V12.4.131'\n",
                          true);
  EXPECT_EQ(kj::compile::nvcc_version(fake), "12.4.131");
  EXPECT_EQ(kj::compile::nvcc_version(m_dir / "nothing-here"), "");

  const auto real = kj::compile::find_nvcc();
  if (real.empty()) GTEST_SKIP() << "no nvcc on this machine";
  EXPECT_TRUE(std::regex_match(kj::compile::nvcc_version(real), std::regex(R"(\d+\.\d+\.\d+)")))
      << kj::compile::nvcc_version(real);
}

TEST(nvcc_driver, a_toolkit_of_a_newer_major_version_than_the_driver_is_said) {
  using kj::compile::toolkit_newer_than_driver;
  EXPECT_EQ(toolkit_newer_than_driver("13.0.88", 13000), "");
  EXPECT_EQ(toolkit_newer_than_driver("13.1.50", 13000), "");  // minor version compatibility
  EXPECT_EQ(toolkit_newer_than_driver("12.8.93", 13000), "");
  const std::string why = toolkit_newer_than_driver("13.0.88", 12080);
  EXPECT_NE(why.find("nvcc 13.0.88"), std::string::npos) << why;
  EXPECT_NE(why.find("CUDA 13 or newer"), std::string::npos) << why;
  EXPECT_NE(why.find("supports CUDA 12.8"), std::string::npos) << why;
  EXPECT_EQ(toolkit_newer_than_driver("", 12080), "");  // unknown: nothing said
  EXPECT_EQ(toolkit_newer_than_driver("13.0", 0), "");
}

TEST_F(nvcc_test, find_nvcc_order) {
  const auto fake = write("cuda/bin/nvcc", "#!/bin/sh\n", true);
  {
    scoped_env explicit_nvcc("KJUDGE_NVCC", "/opt/custom/nvcc");
    EXPECT_EQ(kj::compile::find_nvcc(), fs::path("/opt/custom/nvcc"));
  }
  scoped_env no_explicit("KJUDGE_NVCC", nullptr);
  {
    scoped_env cuda_home("CUDA_HOME", (m_dir / "cuda").c_str());
    EXPECT_EQ(kj::compile::find_nvcc(), fake);
  }
  {
    scoped_env cuda_home("CUDA_HOME", (m_dir / "empty").c_str());
    scoped_env path("PATH", (m_dir / "cuda" / "bin").c_str());
    EXPECT_EQ(kj::compile::find_nvcc(), fake);
  }
}

TEST_F(nvcc_test, default_cache_dir_order) {
  scoped_env home("HOME", "/home/kj");
  {
    scoped_env dir("KJUDGE_CACHE_DIR", "/var/kj");
    EXPECT_EQ(kj::compile::default_cache_dir(), fs::path("/var/kj"));
  }
  scoped_env no_dir("KJUDGE_CACHE_DIR", nullptr);
  {
    scoped_env xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(kj::compile::default_cache_dir(), fs::path("/xdg/kjudge"));
  }
  {
    // Relative: invalid under the XDG base directory spec, and ignored.
    scoped_env xdg("XDG_CACHE_HOME", "relative");
    EXPECT_EQ(kj::compile::default_cache_dir(), fs::path("/home/kj/.cache/kjudge"));
  }
  scoped_env no_xdg("XDG_CACHE_HOME", nullptr);
  EXPECT_EQ(kj::compile::default_cache_dir(), fs::path("/home/kj/.cache/kjudge"));
}

}  // namespace
