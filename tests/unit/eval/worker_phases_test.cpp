// The worker's phases through the real executable on the CPU: Python's start-up is split into
// its steps (the interpreter, importing torch, device setup), in order, before load_problem, in
// an exec'd worker (--no-pool; a pooled one starts at python_prewarmed, tests/e2e/pool_cpu_test).
// Needs the PyTorch the build was configured with, like tests/e2e.

#include <algorithm>

#include "kjudge_runner.hpp"

namespace kj::test {
namespace {

TEST(WorkerPhases, PythonStartUpStepsAreReportedInOrder) {
  const auto r = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py",
                          {"--device", "cpu", "--trials", "1", "--no-timing", "--no-pool"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> names;
  std::vector<double> starts;
  for (const auto& p : r.result["worker"]["phases"]) {
    names.push_back(p["name"].get<std::string>());
    starts.push_back(p["start_s"].get<double>());
  }
  const std::vector<std::string> start_up = {"start_python", "import_torch", "torch_device_setup",
                                             "load_problem"};
  ASSERT_GE(names.size(), start_up.size());
  // On the CPU nothing comes before Python: no device query, no context to wait for.
  EXPECT_TRUE(std::equal(start_up.begin(), start_up.end(), names.begin()))
      << r.result["worker"]["phases"].dump();
  EXPECT_EQ(std::count(names.begin(), names.end(), "wait_cuda_context"), 0);
  EXPECT_TRUE(std::is_sorted(starts.begin(), starts.end()));
  // Importing torch takes time, so the step after it starts later.
  EXPECT_GT(starts[2], starts[1]);
}

}  // namespace
}  // namespace kj::test
