#include <kjudge/native/candidate_library.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include <kjudge/core/error.hpp>

namespace {

namespace fs = std::filesystem;

/** A shared library built from `source` with the host compiler (no CUDA: loading and the
 *  exported names are what is tested), in a folder of this test's own. */
class candidate_library_test : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() /
            ("kj_native_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(m_dir);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(m_dir, ec);
  }
  fs::path library(const std::string& name, const std::string& source) {
    const fs::path src = m_dir / (name + ".cpp");
    const fs::path so = m_dir / (name + ".so");
    std::ofstream(src) << source;
    const std::string command = std::string("'") + KJ_TEST_CXX + "' -shared -fPIC -o '" +
                                so.string() + "' '" + src.string() + "'";
    if (std::system(command.c_str()) != 0) ADD_FAILURE() << "cannot build: " << command;
    return so;
  }
  /** The candidate error's message from loading `so`, or "" where it loaded. */
  static std::string load_error(const fs::path& so) {
    try {
      kj::native::candidate_library lib(so);
      return "";
    } catch (const kj::error& e) {
      EXPECT_EQ(e.kind(), kj::error_kind::candidate) << e.message();
      return e.message();
    }
  }
  fs::path m_dir;
};

TEST_F(candidate_library_test, entry_points_of_cpp_linkage_are_named_as_the_mistake_they_are) {
  // Defined without extern "C" and with a kj_call* (not const) parameter, kj_forward is another
  // overload of C++ linkage: said so, not "does not export kj_forward".
  const std::string forward = load_error(library("forward", R"(struct kj_call;
int kj_forward(kj_call*) { return 0; }
)"));
  EXPECT_NE(forward.find("exports kj_forward with C++ linkage (_Z10kj_forwardP7kj_call)"),
            std::string::npos)
      << forward;
  EXPECT_NE(forward.find("const kj_call*"), std::string::npos) << forward;
  // kj_workspace_bytes so defined was taken for absent: the default 16 MiB, and a fault where
  // the candidate wrote past it.
  const std::string workspace = load_error(library("workspace", R"(struct kj_call;
extern "C" int kj_forward(const kj_call*) { return 0; }
unsigned long kj_workspace_bytes(const kj_call*) { return 1ul << 30; }
)"));
  EXPECT_NE(workspace.find("exports kj_workspace_bytes with C++ linkage "
                           "(_Z18kj_workspace_bytesPK7kj_call)"),
            std::string::npos)
      << workspace;
  const std::string mutable_workspace = load_error(library("mutable", R"(struct kj_call;
extern "C" int kj_forward(const kj_call*) { return 0; }
unsigned long kj_workspace_bytes(kj_call*) { return 1ul << 30; }
)"));
  EXPECT_NE(mutable_workspace.find("(_Z18kj_workspace_bytesP7kj_call)"), std::string::npos)
      << mutable_workspace;
}

TEST_F(candidate_library_test, a_library_without_kj_forward_or_that_cannot_load_is_the_candidates) {
  const std::string none = load_error(library("none", "extern \"C\" int other() { return 0; }\n"));
  EXPECT_NE(none.find("does not export kj_forward"), std::string::npos) << none;
  // The header's signature, of C linkage, loads (no workspace function: kjudge's default).
  EXPECT_EQ(load_error(library("ok", R"(struct kj_call;
extern "C" int kj_forward(const kj_call*) { return 0; }
)")),
            "");
  const fs::path junk = m_dir / "junk.so";
  std::ofstream(junk) << "not an ELF file";
  const std::string bad = load_error(junk);
  EXPECT_NE(bad.find("cannot load"), std::string::npos) << bad;
}

}  // namespace
