// The `launches` section of `kjudge eval`'s terminal report, from the CUPTI records of one real
// evaluation (tests/data/cupti/quantvla_fused_launches.json, README there).
#include <kjudge/report/terminal_printer.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace kj::report {
namespace {

nlohmann::json recorded_launches() {
  std::ifstream in(std::string(KJ_TEST_DATA_DIR) + "/cupti/quantvla_fused_launches.json");
  EXPECT_TRUE(in) << "fixture missing";
  std::ostringstream s;
  s << in.rdbuf();
  return nlohmann::json::parse(s.str());
}

TEST(TerminalPrinter, LaunchesSectionQuotesTheRecordedForwards) {
  eval_result r;
  r.status = eval_status::correct;
  r.launches = recorded_launches();
  const std::string text = render_terminal(r);
  EXPECT_NE(text.find("launches  one cold-L2 forward per side, CUPTI device records"),
            std::string::npos)
      << text;
  // Peak memory in the same SI units as `kjudge profile` (1051648 bytes over the baseline).
  EXPECT_NE(text.find("peak memory +1.05 MB"), std::string::npos) << text;
  EXPECT_NE(text.find("peak memory +0 B"), std::string::npos) << text;
  // The candidate's one kernel, and the reference's longest first.
  EXPECT_NE(text.find("1 kernel "), std::string::npos) << text;
  EXPECT_NE(text.find("quantvla_kernel"), std::string::npos) << text;
  const auto reduce = text.find("8.26 us  reduce_kernel"), gemm = text.find("5.76 us  sm80_xmma");
  ASSERT_NE(reduce, std::string::npos) << text;
  ASSERT_NE(gemm, std::string::npos) << text;
  EXPECT_LT(reduce, gemm);
  EXPECT_NE(text.find("(11 more)"), std::string::npos) << text;
  EXPECT_NE(text.find("fusion ratio"), std::string::npos) << text;
}

}  // namespace
}  // namespace kj::report
