// End-to-end tests of `kjudge eval` on a GPU: native candidates through the C ABI, faulty native
// kernels, Python CUDA candidates, and timing figures. Skipped (not passed) without a GPU.

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <thread>

#include <kjudge/cuda/nvml.hpp>
#include <kjudge/cuda/probe.hpp>
#include <kjudge/runner/file_lock.hpp>

#include "busy_gpu.hpp"
#include "kjudge_runner.hpp"

namespace kj::test {
namespace {

class EvalGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto p = cuda::probe();
    if (!p.available) GTEST_SKIP() << "no GPU: " << p.reason;
  }
};

const char* quantvla = "problems/level2/quantvla_selective_layout_fusion.py";

/** What this machine lets a worker see of other programs on GPU 0 (docs/methodology.md, "One
 *  evaluation at a time on a GPU"): `looks` when NVML lists its processes, MIG is off and this
 *  process is in the machine's first PID namespace (in a container a worker raises
 *  gpu_processes_unchecked); `others` when some process already holds a context there (a
 *  display server, another user's job: a worker then raises gpu_other_process). */
struct gpu_watch_conditions {
  bool looks = false;
  bool others = false;
};

gpu_watch_conditions watch_conditions() {
  gpu_watch_conditions c;
  cuda::nvml* nvml = cuda::nvml::instance();
  if (nvml == nullptr) return c;
  const auto props = cuda::query_device(0);
  const auto device = nvml->device(props.uuid, props.pci_bus_id);
  if (!device) return c;
  const auto listed = nvml->processes(*device);
  struct stat ns {};
  c.looks = listed && !nvml->mig_enabled(*device).value_or(false) &&
            ::stat("/proc/self/ns/pid", &ns) == 0 && ns.st_ino == 0xEFFFFFFCU;
  c.others = !listed || !listed->empty();  // this test process holds no context
  return c;
}

TEST_F(EvalGpu, NativeKernelIsCorrectAndTimedOnTheDevice) {
  const auto before = watch_conditions();
  const auto r = run_eval(quantvla, "examples/quantvla/fused.cu", {"--shapes", "stress"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto& j = r.result;
  EXPECT_EQ(j["correctness"]["weight_copy"], "native");
  EXPECT_EQ(j["correctness"]["stress_passed"], 2);
  EXPECT_TRUE(j["build"]["ok"].get<bool>());
  const auto& t = j["timing"];
  for (const char* side : {"reference", "candidate"}) {
    const auto& d = t[side]["device"];
    ASSERT_TRUE(d["valid"].get<bool>()) << side << " " << d.dump();
    EXPECT_TRUE(d["cold"].get<bool>());
    EXPECT_EQ(d["method"], "cuda-graph+blocking-kernel+events") << side << " " << d["note"];
    EXPECT_GE(d["median_us"].get<double>(), 0.5);
    // Device figure <= stream figure <= host wall (medians, with slack for noise). The untimed
    // eager forward after each replay leaves the eager stream and host-wall samples as they are
    // without replays.
    EXPECT_LE(d["median_us"].get<double>(), 1.1 * t[side]["stream"]["median_us"].get<double>());
    EXPECT_LE(t[side]["stream"]["median_us"].get<double>(),
              1.1 * t[side]["host_wall"]["median_us"].get<double>());
  }
  EXPECT_GE(t["l2_flush_bytes"].get<double>(),
            2.0 * j["provenance"]["gpu"]["l2_bytes"].get<double>());
  EXPECT_FALSE(j["provenance"]["gpu"]["name"].get<std::string>().empty());
  EXPECT_NE(r.output.find("device figure: one CUDA graph replay"), std::string::npos) << r.output;
  // Alone on the GPU, nothing is said of other programs; where a worker can look, it did
  // (AnotherProgramOnTheGpuIsFlagged).
  // Sampled before and after: another test's process (ctest -j) may come and go meanwhile.
  const auto after = watch_conditions();
  const gpu_watch_conditions watch{before.looks && after.looks, before.others || after.others};
  if (!watch.others) {
    EXPECT_FALSE(has_flag(j, "gpu_other_process")) << j["flags"];
  }
  if (watch.looks) {
    EXPECT_FALSE(has_flag(j, "gpu_processes_unchecked")) << j["flags"];
  }
}

TEST_F(EvalGpu, NoGraphTimesTheForwardsOwnLaunches) {
  // --no-graph: both sides' own launches behind the blocking kernel, no capture, no reason given.
  const auto r = run_eval(quantvla, "examples/quantvla/fused.cu", {"--no-graph"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto& t = r.result["timing"];
  for (const char* side : {"reference", "candidate"}) {
    const auto& d = t[side]["device"];
    ASSERT_TRUE(d["valid"].get<bool>()) << side << " " << d.dump();
    EXPECT_EQ(d["method"], "blocking-kernel+events") << side << " " << d["note"];
    EXPECT_EQ(d["note"].get<std::string>().find("no CUDA graph replay"), std::string::npos)
        << side << " " << d["note"];
    EXPECT_LE(d["median_us"].get<double>(), 1.1 * t[side]["stream"]["median_us"].get<double>());
  }
  EXPECT_EQ(r.output.find("device figure: one CUDA graph replay"), std::string::npos) << r.output;
}

TEST_F(EvalGpu, ReferenceGraphThatDiffersFromItsForwardIsWithheld) {
  // The reference's graph leaves out work its eager forward does: after timing its replay is
  // compared with the forward, and its device figure and the device speedup are withheld. The
  // candidate is correct, and its figures stand.
  const auto r = run_eval("problems/broken/graph_differs.py", "examples/faulty/doubled_softmax.py");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto& t = r.result["timing"];
  EXPECT_TRUE(has_flag(r.result, "reference_graph_differs")) << r.output;
  EXPECT_FALSE(t["reference"]["device"]["valid"].get<bool>()) << t["reference"]["device"].dump();
  EXPECT_NE(t["reference"]["device"]["note"].get<std::string>().find("withheld"),
            std::string::npos);
  EXPECT_TRUE(t["candidate"]["device"]["valid"].get<bool>()) << t["candidate"]["device"].dump();
  EXPECT_TRUE(t["reference"]["stream"]["valid"].get<bool>());
  for (const auto& s : t["speedups"])
    EXPECT_EQ(s["valid"].get<bool>(), s["kind"] != "device") << s.dump();
}

TEST_F(EvalGpu, NativeCompileErrorCarriesTheCompilerOutput) {
  const auto r = run_eval(quantvla, "examples/faulty_native/syntax_error.cu");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  const auto log = r.result["build"]["log"].get<std::string>();
  EXPECT_NE(log.find("syntax_error.cu"), std::string::npos) << log;
  EXPECT_NE(log.find("error"), std::string::npos) << log;
}

TEST_F(EvalGpu, IllegalAddressIsARuntimeError) {
  const auto r = run_eval(quantvla, "examples/faulty_native/illegal_address.cu");
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_NE(r.result["message"].get<std::string>().find("illegal"), std::string::npos)
      << r.result["message"];
}

TEST_F(EvalGpu, InfiniteKernelTimesOut) {
  const auto r = run_eval(quantvla, "examples/faulty_native/infinite_loop.cu", {"--timeout", "30"});
  EXPECT_EQ(r.exit_code, 5) << r.output;
}

TEST_F(EvalGpu, WrongNativeResultIsIncorrect) {
  const auto wrong = run_eval(quantvla, "examples/faulty_native/wrong_result.cu");
  EXPECT_EQ(wrong.exit_code, 1) << wrong.output;
  const auto r = run_eval(quantvla, "examples/faulty_native/no_write.cu");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_GT(r.result["trials"][0]["outputs"][0]["nan_count"].get<int>(), 0);
  // The reference ran again on the first failed trial's inputs after the native candidate, and
  // repeated itself (the GPU's reference: cuBLAS, an amax reduction).
  for (const auto* e : {&wrong, &r})
    EXPECT_FALSE(has_flag(e->result, "reference_nondeterministic")) << e->result["flags"].dump(1);
}

TEST_F(EvalGpu, AnUnwrittenBoolOutputFailsWhenTheAnswerIsAllTrue) {
  // Bool outputs were filled with True in every trial: a kernel that wrote nothing passed a
  // problem whose answer is all True. The fill now alternates between trials.
  const auto dir =
      std::filesystem::temp_directory_path() / ("kjudge_bool_poison_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto problem = (dir / "isfinite.py").string();
  std::ofstream(problem) << R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.isfinite(x)
def get_inputs():
    return [torch.randn(4096)]
def get_init_inputs():
    return []
)";
  const auto r = run_eval(problem, "examples/faulty_native/no_write.cu", {"--no-timing"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.result["status"], "incorrect") << r.result.dump(1);
  std::filesystem::remove_all(dir);
}

TEST_F(EvalGpu, AZeroDimensionalIntegerOutputIsPoisonedAndJudged) {
  // The fill of a 0-d int64 output (a count) took a byte view torch refuses for 0-d tensors:
  // every native evaluation of such a problem was an internal error. Unwritten, it is now
  // incorrect.
  const auto dir = std::filesystem::temp_directory_path() /
                   ("kjudge_count_poison_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto problem = (dir / "count.py").string();
  std::ofstream(problem) << R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return (x > 0).sum()
def get_inputs():
    return [torch.randn(4096)]
def get_init_inputs():
    return []
)";
  const auto r = run_eval(problem, "examples/faulty_native/no_write.cu", {"--no-timing"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.result["status"], "incorrect") << r.result.dump(1);
  std::filesystem::remove_all(dir);
}

TEST_F(EvalGpu, ANativeCandidateWithoutTimingIsCheckedAtTheNominalSizes) {
  // --no-timing runs both sides on two input sets at the nominal sizes, as the check after
  // timing does: a native candidate's forward on those sets' buffers, its workspace sized for
  // them.
  const auto r = run_eval(quantvla, "examples/quantvla/fused.cu", {"--no-timing"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(has_flag(r.result, "nominal_sizes_differ")) << r.output;
  bool checked = false;
  for (const auto& ph : r.result["worker"]["phases"])
    checked = checked || ph["name"].get<std::string>().starts_with("timing check 1 candidate");
  EXPECT_TRUE(checked) << r.result["worker"]["phases"].dump();
}

TEST_F(EvalGpu, ANativeWriteIntoANonContiguousInputIsReported) {
  // A native candidate gets contiguous copies of inputs that are not contiguous; the check for
  // modified inputs looked only at the tensors the copies were made from, and missed a write.
  const auto dir = std::filesystem::temp_directory_path() /
                   ("kjudge_native_input_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto problem = (dir / "transposed_twice.py").string();
  std::ofstream(problem) << R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return x.contiguous() * 2
def get_inputs():
    return [torch.randn(64, 32).t()]
def get_init_inputs():
    return []
)";
  const auto r = run_eval(problem, "examples/faulty_native/writes_input.cu", {"--no-timing"});
  EXPECT_TRUE(has_flag(r.result, "input_modified")) << r.output;
  ASSERT_FALSE(r.result["trials"].empty()) << r.output;
  EXPECT_EQ(r.result["trials"][0]["inputs_modified"], nlohmann::json::array({0}))
      << r.result["trials"][0].dump();
  std::filesystem::remove_all(dir);
}

TEST_F(EvalGpu, ANativeForwardThatWaitsForTheHostIsTimedByItsLaunches) {
  // Its wait fails under graph capture and it returns 1; the CUDA error that left in its own
  // runtime was read after its first eager call (which returned 0) and ended the evaluation as a
  // runtime_error.
  const auto dir =
      std::filesystem::temp_directory_path() / ("kjudge_native_sync_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto problem = (dir / "twice.py").string();
  std::ofstream(problem) << R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return x * 2
def get_inputs():
    return [torch.randn(4096)]
def get_init_inputs():
    return []
)";
  const auto r = run_eval(problem, "examples/faulty_native/host_sync.cu", {"--budget", "0.3"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct") << r.result.dump(1);
  EXPECT_TRUE(has_flag(r.result, "host_sync_in_forward")) << r.output;
  EXPECT_FALSE(r.result["timing"]["candidate"]["device"]["valid"].get<bool>()) << r.output;
  EXPECT_TRUE(r.result["timing"]["candidate"]["stream"]["valid"].get<bool>()) << r.output;
  std::filesystem::remove_all(dir);
}

TEST_F(EvalGpu, ExpandedCudaOutputsAreCopiedAsTheElementsTheyReach) {
  // A CUDA output of 2^30 elements in 4 bytes: the wrong shape, said without writing it out on
  // the GPU or the host.
  const auto wrong =
      run_eval("problems/level1/softmax.py", "examples/faulty/expanded_wrong_shape.py",
               {"--no-timing", "--trials", "2"});
  EXPECT_EQ(wrong.exit_code, 1) << wrong.output;
  EXPECT_EQ(wrong.result["status"], "incorrect") << wrong.result.dump(1);
  EXPECT_NE(
      wrong.result["trials"][0]["outputs"][0]["message"].get<std::string>().find("shape mismatch"),
      std::string::npos)
      << wrong.result["trials"][0].dump();
  EXPECT_LT(wrong.result["worker"]["max_rss_kb"].get<std::uint64_t>(), 4'000'000U)
      << wrong.result["worker"].dump();
  // The right shape: written out and compared in the trials, the timing's audits and its check.
  const auto dir =
      std::filesystem::temp_directory_path() / ("kjudge_expanded_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto problem = (dir / "row_sums.py").string();
  const auto candidate = (dir / "row_sums_new.py").string();
  const char* forward = R"(
    def forward(self, x):
        return x.sum(dim=1, keepdim=True).expand(-1, 4096)
)";
  std::ofstream(problem) << "import torch\nimport torch.nn as nn\nclass Model(nn.Module):"
                         << forward << R"(def get_inputs():
    return [torch.randn(64, 256)]
def get_init_inputs():
    return []
)";
  std::ofstream(candidate) << "import torch\nimport torch.nn as nn\nclass ModelNew(nn.Module):"
                           << forward;
  const auto right = run_eval(problem, candidate, {"--budget", "0.3"});
  EXPECT_EQ(right.exit_code, 0) << right.output;
  EXPECT_EQ(right.result["status"], "correct") << right.result.dump(1);
  EXPECT_TRUE(right.result["timing"]["candidate"]["device"]["valid"].get<bool>()) << right.output;
  std::filesystem::remove_all(dir);
}

TEST_F(EvalGpu, ARefusedLaunchIsARuntimeErrorNamingTheCudaError) {
  // The candidate's static CUDA runtime refused the launch and kj_forward returned 0: it was
  // an incorrect result with NaN outputs, the CUDA error nowhere. (CUDA 13.0 on the H200 names
  // 2048 threads a block cudaErrorInvalidValue.)
  const auto r = run_eval(quantvla, "examples/faulty_native/bad_launch.cu", {"--no-timing"});
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_EQ(r.result["status"], "runtime_error") << r.result.dump(1);
  const auto message = r.result["message"].get<std::string>();
  EXPECT_NE(message.find("the CUDA runtime it links recorded an error"), std::string::npos)
      << message;
  EXPECT_NE(message.find(": cudaError"), std::string::npos) << message;
}

TEST_F(EvalGpu, NativeErrorReturnAndExit) {
  const auto e = run_eval(quantvla, "examples/faulty_native/returns_error.cu");
  EXPECT_EQ(e.exit_code, 4) << e.output;
  EXPECT_NE(e.result["message"].get<std::string>().find("unsupported hidden size"),
            std::string::npos);
  const auto x = run_eval(quantvla, "examples/faulty_native/exits.cu");
  EXPECT_EQ(x.exit_code, 4) << x.output;
  EXPECT_EQ(x.result["status"], "crashed");
  const auto s = run_eval(quantvla, "examples/faulty_native/host_segfault.cu");
  EXPECT_EQ(s.exit_code, 4) << s.output;
  EXPECT_EQ(s.result["status"], "crashed");
  EXPECT_NE(s.result["message"].get<std::string>().find("SIGSEGV"), std::string::npos)
      << s.result["message"];
  const auto n = run_eval(quantvla, "examples/faulty_native/no_forward.cu");
  EXPECT_EQ(n.exit_code, 4) << n.output;
  EXPECT_EQ(n.result["status"], "runtime_error");
  EXPECT_NE(n.result["message"].get<std::string>().find("does not export kj_forward"),
            std::string::npos)
      << n.result["message"];
}

TEST_F(EvalGpu, ACrashInTheReferencesPartAfterANativeForwardIsTheProblemsWhereItCrashesAlone) {
  // A native candidate's trial runs the reference first, so a problem whose second forward ends
  // its process crashes in trial 1's reference part, after the candidate's forward in trial 0.
  // The reference alone, in a fresh worker that loads no candidate library, crashes there too:
  // the problem's.
  const auto dir = std::filesystem::temp_directory_path() /
                   ("kjudge_native_alone_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto problem = (dir / "quantvla_exits.py").string();
  {
    std::ifstream in(source_dir() / quantvla);
    ASSERT_TRUE(in) << (source_dir() / quantvla);
    std::ofstream out(problem);
    out << in.rdbuf() << R"(
_calls = [0]
_forward = Model.forward
def _counted(self, *args):
    _calls[0] += 1
    if _calls[0] == 2:
        import os
        os._exit(0)
    return _forward(self, *args)
Model.forward = _counted
)";
  }
  const auto r = run_eval(problem, "examples/quantvla/fused.cu", {"--no-timing"});
  EXPECT_EQ(r.exit_code, 6) << r.output;
  EXPECT_EQ(r.result["status"], "problem_error") << r.result.dump(1);
  const auto message = r.result.value("message", "");
  EXPECT_NE(message.find("the reference crashed there too"), std::string::npos) << message;
  EXPECT_NE(message.find("during 'trial nominal 1 reference'"), std::string::npos) << message;
  std::filesystem::remove_all(dir);
}

TEST_F(EvalGpu, CaptureThatRunsOutOfMemoryIsTriedAgainAfterEmptyingTheCache) {
  // Its first capture runs out of memory because PyTorch's cache holds the block the capture
  // needs (examples/faulty/tight_memory.py); emptied, the second capture fits. Were it not tried
  // again, neither side would replay graphs.
  const auto r = run_eval("problems/level1/softmax.py", "examples/faulty/tight_memory.py");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct");
  for (const char* side : {"reference", "candidate"}) {
    const auto& d = r.result["timing"][side]["device"];
    EXPECT_TRUE(d["valid"].get<bool>()) << side << " " << d.dump();
    EXPECT_EQ(d["method"], "cuda-graph+blocking-kernel+events") << side << " " << d["note"];
  }
}

TEST_F(EvalGpu, EvaluationsTakeTurnsTimingOnOneGpu) {
  // Two evaluations started together: the second to reach the GPU waits for the first's trials
  // and timing to end (the GPU's lock) instead of running alongside them.
  auto first = std::async(std::launch::async, [] {
    return run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", {"--budget", "2"});
  });
  const auto second =
      run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", {"--budget", "2"});
  const auto one = first.get();
  double waited = 0;
  for (const auto* r : {&one, &second}) {
    ASSERT_EQ(r->exit_code, 0) << r->output;
    EXPECT_FALSE(has_flag(r->result, "gpu_lock_not_held")) << r->result["flags"];
    waited = std::max(waited, r->result["worker"]["gpu_lock_wait_s"].get<double>());
  }
  EXPECT_GT(waited, 0.5) << one.result["worker"].dump() << second.result["worker"].dump();
}

TEST_F(EvalGpu, AnImportsFirstGpuWorkWaitsForTheGpusLock) {
  // The GPU's lock held here for 15 s: a candidate whose import launches a kernel waits for it at
  // that launch, inside its import (and the wait is not its build time); one whose import does
  // no GPU work imports at once and waits after it.
  const private_lock_dir dir;
  const auto uuid = cuda::query_device(0).uuid;
  for (const char* candidate :
       {"examples/faulty/gpu_work_at_import.py", "examples/softmax/naive.py"}) {
    SCOPED_TRACE(candidate);
    auto lock = runner::file_lock::acquire(runner::gpu_lock_path(uuid), std::chrono::seconds(1));
    ASSERT_TRUE(lock.held()) << lock.error();
    std::thread holder([&lock] {
      // Well past the worker's start and torch's import (5-6 s from the command's start on the
      // H200), within the worker's wait (a third of --timeout).
      std::this_thread::sleep_for(std::chrono::seconds(15));
      lock.release();
    });
    const auto r = run_eval("problems/level1/softmax.py", candidate, {"--timeout", "90"});
    holder.join();
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto& w = r.result["worker"];
    EXPECT_FALSE(has_flag(r.result, "gpu_lock_not_held")) << r.result["flags"];
    EXPECT_GE(w["gpu_lock_wait_s"].get<double>(), 1.0) << w.dump();
    const std::string at = w["gpu_lock_at"].get<std::string>();
    std::vector<std::string> phases;
    for (const auto& p : w["phases"]) phases.push_back(p["name"].get<std::string>());
    const auto index = [&](const std::string& name) {
      const auto found = std::find(phases.begin(), phases.end(), name);
      EXPECT_NE(found, phases.end()) << name << " " << w["phases"];
      return found - phases.begin();
    };
    if (std::string(candidate).find("at_import") != std::string::npos) {
      EXPECT_TRUE(at.starts_with("at the first GPU work of the candidate's import (")) << at;
      EXPECT_TRUE(at.find("Launch") != std::string::npos || at.find("Memset") != std::string::npos)
          << at;
      // load_candidate, the wait inside it, then load_candidate again.
      EXPECT_LT(index("load_candidate"), index("wait_gpu_lock")) << w["phases"];
      EXPECT_LT(r.result["build"]["build_s"].get<double>(), w["gpu_lock_wait_s"].get<double>())
          << r.result["build"].dump();
      EXPECT_NE(r.output.find("waiting for another evaluation's work on the GPU at the first"),
                std::string::npos)
          << r.output;
    } else {
      EXPECT_EQ(at, "after the imports");
      EXPECT_GT(index("wait_gpu_lock"), index("load_candidate")) << w["phases"];
    }
  }
}

/** Whether some process has `file` open (a link in /proc/<pid>/fd names it). */
bool open_somewhere(const std::filesystem::path& file) {
  std::error_code ec;
  for (std::filesystem::directory_iterator p("/proc", ec), end; !ec && p != end; p.increment(ec)) {
    std::error_code e2;
    for (std::filesystem::directory_iterator fd(p->path() / "fd", e2), fd_end; !e2 && fd != fd_end;
         fd.increment(e2)) {
      std::error_code e3;
      if (std::filesystem::read_symlink(fd->path(), e3) == file) return true;
    }
  }
  return false;
}

TEST_F(EvalGpu, ANativeBuildRemovedWhileItsWorkerWaitsForTheGpuStillLoads) {
  // A cache prune (`kjudge cache clear` keeps builds looked up in the last minute only) may
  // remove a native build between the worker's build step and its load, which waits for the
  // GPU's lock (up to a third of --timeout): the worker holds the library open from the build
  // step on, and loads that file where the path is gone.
  const private_lock_dir dir;
  const auto cache = std::filesystem::temp_directory_path() /
                     ("kj-cache-held-open-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(cache);
  auto lock = runner::file_lock::acquire(runner::gpu_lock_path(cuda::query_device(0).uuid),
                                         std::chrono::seconds(1));
  ASSERT_TRUE(lock.held()) << lock.error();
  bool removed_while_open = false;
  std::thread holder([&] {
    // Until the worker holds the filed library open (it then waits for this lock), then the
    // whole native cache removed, and the lock let go 2 s later.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    while (!removed_while_open && std::chrono::steady_clock::now() < deadline) {
      std::error_code ec;
      for (std::filesystem::recursive_directory_iterator it(cache / "native", ec), end;
           !ec && it != end; it.increment(ec))
        if (it->path().filename() == "candidate.so" &&
            it->path().string().find("/.build.") == std::string::npos &&
            open_somewhere(it->path())) {
          std::error_code removed;
          std::filesystem::remove_all(cache / "native", removed);
          removed_while_open = !removed;
          break;
        }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::this_thread::sleep_for(std::chrono::seconds(2));
    lock.release();
  });
  const auto r = run_eval(quantvla, "examples/quantvla/fused.cu",
                          {"--no-timing", "--timeout", "150", "--cache-dir", cache.string()});
  holder.join();
  ASSERT_TRUE(removed_while_open) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct");
  EXPECT_GE(r.result["worker"]["gpu_lock_wait_s"].get<double>(), 1.0) << r.result["worker"];
  EXPECT_FALSE(std::filesystem::exists(cache / "native"));
  std::error_code ec;
  std::filesystem::remove_all(cache, ec);
}

TEST_F(EvalGpu, AGpuHeldTooLongIsTimedAnywayAndFlagged) {
  // The GPU's lock held here past the evaluation's wait (a third of --timeout): it goes on
  // without it and says so.
  const private_lock_dir dir;
  const auto lock = runner::file_lock::acquire(runner::gpu_lock_path(cuda::query_device(0).uuid),
                                               std::chrono::seconds(1));
  ASSERT_TRUE(lock.held()) << lock.error();
  const auto r =
      run_eval("problems/level1/softmax.py", "examples/softmax/naive.py", {"--timeout", "30"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(flag_message(r.result, "gpu_lock_not_held").find("still held it after "),
            std::string::npos)
      << r.result["flags"];
  EXPECT_GE(r.result["worker"]["gpu_lock_wait_s"].get<double>(), 9.9);
  EXPECT_LT(r.result["worker"]["gpu_lock_wait_s"].get<double>(), 15.0);
  EXPECT_TRUE(r.result["timing"]["candidate"]["device"]["valid"].get<bool>());
}

TEST_F(EvalGpu, AnotherProgramOnTheGpuIsFlagged) {
  // kjudge's lock cannot hold other programs back: one with a context on the GPU while a side is
  // timed is named in a warning (NVML lists it; in a container too, since it runs in the same
  // one). Without one, nothing is said: NativeKernelIsCorrectAndTimedOnTheDevice.
  const busy_gpu other("1000");
  ASSERT_TRUE(other.ready());
  const auto r = run_eval("problems/level1/softmax.py", "examples/softmax/naive.py");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string m = flag_message(r.result, "gpu_other_process");
  EXPECT_NE(m.find("pid " + std::to_string(other.pid()) + " (kj_busy_gpu"), std::string::npos)
      << r.result["flags"];
  EXPECT_NE(m.find("at the start and the end"), std::string::npos) << m;
  if (watch_conditions().looks) {
    EXPECT_FALSE(has_flag(r.result, "gpu_processes_unchecked")) << r.result["flags"];
  }
  EXPECT_TRUE(r.result["timing"]["candidate"]["device"]["valid"].get<bool>());
}

TEST_F(EvalGpu, RooflineNextToAnotherProgramIsFlaggedAndMeasuredAgainWhenItGoes) {
  // `kjudge roofline` looks for other programs as an evaluation's timing does: ceilings measured
  // next to one carry the warning, and the cached result is measured again by the first run that
  // finds the GPU free of them.
  const auto cache = std::filesystem::temp_directory_path() /
                     ("kj-roofline-neighbour-" + std::to_string(::getpid()));
  const auto json = cache / "out.json";
  std::filesystem::create_directories(cache);
  const auto roofline = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"roofline",     "--repetitions", "5",          "--cache-dir",
                                     cache.string(), "--json",        json.string()};
    for (auto& e : extra) args.push_back(std::move(e));
    auto r = run_raw(std::move(args), std::chrono::seconds(200));  // the lock: 2 min at most
    std::ifstream in(json);
    r.result = nlohmann::json::parse(in, nullptr, false);
    return r;
  };
  const auto cached_flags = [&] {
    std::vector<std::string> codes;
    if (!std::filesystem::is_directory(cache / "roofline")) return codes;  // nothing cached
    for (const auto& e : std::filesystem::recursive_directory_iterator(cache / "roofline")) {
      std::ifstream in(e.path());
      const auto j = nlohmann::json::parse(in, nullptr, false);
      for (const auto& f : j.value("flags", nlohmann::json::array()))
        codes.push_back(f.value("code", ""));
    }
    return codes;
  };
  const auto before = watch_conditions();
  std::optional<busy_gpu> other(std::in_place, "1000");
  ASSERT_TRUE(other->ready());
  const auto busy = roofline({"--refresh"});
  ASSERT_EQ(busy.exit_code, 0) << busy.output;
  ASSERT_TRUE(busy.result.is_object()) << busy.output;
  if (has_flag(busy.result, "gpu_lock_not_held") || has_flag(busy.result, "gpu_shared")) {
    std::filesystem::remove_all(cache);  // measured beside another test's evaluation: not cached
    GTEST_SKIP() << "another kjudge evaluation used the GPU meanwhile";
  }
  const std::string m = flag_message(busy.result, "gpu_other_process");
  EXPECT_NE(m.find("pid " + std::to_string(other->pid()) + " (kj_busy_gpu"), std::string::npos)
      << busy.result["flags"];
  EXPECT_NE(m.find("at the start and the end"), std::string::npos) << m;
  if (before.looks) {
    EXPECT_FALSE(has_flag(busy.result, "gpu_processes_unchecked")) << busy.result["flags"];
  }
  EXPECT_NE(busy.output.find("until a run finds the GPU free of them"), std::string::npos)
      << busy.output;
  auto codes = cached_flags();
  EXPECT_NE(std::find(codes.begin(), codes.end(), "gpu_other_process"), codes.end());
  // Still there: the cached result is used, with its flag.
  const auto still = roofline({});
  ASSERT_EQ(still.exit_code, 0) << still.output;
  EXPECT_NE(still.output.find("which are still there"), std::string::npos) << still.output;
  EXPECT_TRUE(has_flag(still.result, "gpu_other_process"));
  const pid_t killed_pid = other->pid();
  other.reset();
  // The driver may list a killed process for a moment.
  for (int i = 0; i < 100 && watch_conditions().others; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (watch_conditions().others) {
    std::filesystem::remove_all(cache);
    GTEST_SKIP() << "another program holds a context on the GPU: it cannot be found free";
  }
  const auto free = roofline({});
  ASSERT_EQ(free.exit_code, 0) << free.output;
  const std::string killed = "pid " + std::to_string(killed_pid) + " (";
  const std::string other_now = flag_message(free.result, "gpu_other_process");
  if (watch_conditions().others || has_flag(free.result, "gpu_lock_not_held") ||
      has_flag(free.result, "gpu_shared") ||
      (!other_now.empty() && other_now.find(killed) == std::string::npos)) {
    // Another test's program or evaluation came meanwhile (ctest -j): not the GPU free.
    std::filesystem::remove_all(cache);
    GTEST_SKIP() << "another program took a context on the GPU during the last run";
  }
  EXPECT_NE(free.output.find("now gone; measuring"), std::string::npos) << free.output;
  EXPECT_FALSE(has_flag(free.result, "gpu_other_process")) << free.result["flags"];
  codes = cached_flags();
  EXPECT_EQ(std::find(codes.begin(), codes.end(), "gpu_other_process"), codes.end());
  std::filesystem::remove_all(cache);
}

TEST_F(EvalGpu, HostSyncInForwardIsDetected) {
  const auto r = run_eval("problems/level1/softmax.py", "examples/faulty/host_sync.py");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(r.result["timing"]["candidate"]["host_sync_detected"].get<bool>());
  EXPECT_FALSE(r.result["timing"]["candidate"]["device"]["valid"].get<bool>());
  EXPECT_TRUE(r.result["timing"]["candidate"]["stream"]["valid"].get<bool>());
  EXPECT_TRUE(has_flag(r.result, "host_sync_in_forward"));
  // Its capture failed, so neither side replays graphs (both are timed the same way).
  const auto& ref = r.result["timing"]["reference"]["device"];
  EXPECT_EQ(ref["method"], "blocking-kernel+events") << ref.dump();
  EXPECT_NE(ref["note"].get<std::string>().find("no CUDA graph replay"), std::string::npos)
      << ref.dump();
  // Its CUPTI forward waited for the host too: no event time (null), the reference's a number.
  const auto& launches = r.result["launches"];
  EXPECT_TRUE(launches["candidate"]["event_time_ns"].is_null()) << launches.dump(1);
  EXPECT_TRUE(launches["reference"]["event_time_ns"].is_number()) << launches.dump(1);
  // The same with a draw from the device's generator in every call: after the failed capture
  // the generator must be usable again (kjudge resets it), else the forward raises.
  const auto g = run_eval("problems/level1/softmax.py", "examples/faulty/host_sync_rng.py");
  EXPECT_EQ(g.exit_code, 0) << g.output;
  EXPECT_TRUE(g.result["timing"]["candidate"]["host_sync_detected"].get<bool>()) << g.output;
  EXPECT_TRUE(g.result["timing"]["reference"]["device"]["valid"].get<bool>()) << g.output;
}

TEST_F(EvalGpu, WorkOnAStreamTheEventsMissIsWithheld) {
  const auto r = run_eval("problems/level1/softmax.py", "examples/faulty/side_stream.py");
  EXPECT_EQ(r.exit_code, 0) << r.output;  // correct, but its device time is not measured
  EXPECT_TRUE(has_flag(r.result, "kernels_outside_timed_region")) << r.result["flags"];
  const auto& cand = r.result["timing"]["candidate"];
  for (const char* figure : {"device", "stream"}) {
    EXPECT_FALSE(cand[figure]["valid"].get<bool>()) << cand[figure].dump();
    EXPECT_EQ(cand[figure]["note"].get<std::string>().rfind("withheld: ", 0), 0U)
        << cand[figure].dump();
  }
  EXPECT_TRUE(cand["host_wall"]["valid"].get<bool>()) << cand["host_wall"].dump();
  for (const auto& s : r.result["timing"]["speedups"])
    EXPECT_EQ(s["valid"].get<bool>(), s["kind"] == "host_wall") << s.dump();
  EXPECT_TRUE(r.result["timing"]["reference"]["device"]["valid"].get<bool>());
}

TEST_F(EvalGpu, HostWallHoldsWorkOnAStreamNothingWaitsFor) {
  // Host-wall samples waited for the timing stream only: a 10 ms kernel on a side stream the
  // forward never joins was left out of the one figure that stands.
  const auto r = run_eval("problems/level1/softmax.py", "examples/faulty/unjoined_stream.py");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_flag(r.result, "kernels_outside_timed_region")) << r.result["flags"];
  const auto& cand = r.result["timing"]["candidate"];
  ASSERT_TRUE(cand["host_wall"]["valid"].get<bool>()) << cand["host_wall"].dump();
  // The CUPTI forward's kernels (its summary is null: the escape fails its checks), all on the
  // side stream, one after another.
  double busy_us = 0;
  for (const auto& k : r.result["launches"]["candidate"]["kernels"])
    busy_us += k["duration_ns"].get<double>() / 1e3;
  const double wall_us = cand["host_wall"]["median_us"].get<double>();
  EXPECT_GT(busy_us, 5000.0) << r.result["launches"].dump();  // the spin ran
  EXPECT_GE(wall_us, 0.8 * busy_us) << cand["host_wall"].dump();
}

TEST_F(EvalGpu, WorkOnAStreamTheEventsMissIsWithheldWhenTheForwardAlsoWaitsForTheHost) {
  // A forward that waits for the host left its CUPTI event time unmeasured, and with it the
  // check for kernels the events missed: the stream figure (events around the call as issued,
  // here the .item() check's few microseconds against 10 ms on the side stream) stood.
  const auto r = run_eval("problems/level1/softmax.py", "examples/faulty/unjoined_stream_item.py");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_flag(r.result, "host_sync_in_forward")) << r.result["flags"];
  EXPECT_TRUE(has_flag(r.result, "kernels_outside_timed_region")) << r.result["flags"];
  const auto& cand = r.result["timing"]["candidate"];
  EXPECT_FALSE(cand["device"]["valid"].get<bool>()) << cand["device"].dump();
  EXPECT_FALSE(cand["stream"]["valid"].get<bool>()) << cand["stream"].dump();
  EXPECT_EQ(cand["stream"]["note"].get<std::string>().rfind("withheld: ", 0), 0U)
      << cand["stream"].dump();
  ASSERT_TRUE(cand["host_wall"]["valid"].get<bool>()) << cand["host_wall"].dump();
  EXPECT_GT(cand["host_wall"]["median_us"].get<double>(), 5000.0) << cand["host_wall"].dump();
  for (const auto& s : r.result["timing"]["speedups"])
    EXPECT_EQ(s["valid"].get<bool>(), s["kind"] == "host_wall") << s.dump();
  // The result still leaves out the event time: with the host's wait in it, it is no device time.
  EXPECT_TRUE(r.result["launches"]["candidate"]["event_time_ns"].is_null())
      << r.result["launches"].dump(1);
}

TEST_F(EvalGpu, PythonCudaCandidates) {
  const auto li =
      run_eval(quantvla, "examples/quantvla/load_inline.py", {}, std::chrono::seconds(400));
  EXPECT_EQ(li.exit_code, 0) << li.output;
  EXPECT_EQ(li.result["build"]["tool"], "python-import");
  const auto tr = run_eval("problems/level1/softmax.py", "examples/softmax/triton_rowwise.py");
  EXPECT_EQ(tr.exit_code, 0) << tr.output;
  // Building and importing them changes nothing of torch's global state.
  for (const auto* r : {&li, &tr})
    EXPECT_FALSE(has_flag(r->result, "candidate_changed_torch_state")) << r->result["flags"];
}

TEST_F(EvalGpu, Tf32SetByTheCandidateDoesNotReachTheReference) {
  // Its TF32 matmul against the reference's fp32 one: incorrect. Were the setting shared, the
  // reference would run in TF32 too and agree with it exactly.
  const auto r = run_eval("problems/level1/matmul.py", "examples/faulty/tf32_matmul.py");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.result["status"], "incorrect");
  EXPECT_NE(flag_message(r.result, "candidate_changed_torch_state")
                .find("torch.backends.cuda.matmul.allow_tf32: False -> True"),
            std::string::npos)
      << r.result["flags"];
  EXPECT_GT(r.result["trials"][0]["outputs"][0]["max_abs_err"].get<double>(), 1e-3);
}

TEST_F(EvalGpu, SettingsChangedAtImportHoldForEveryCandidateCallWhileTimed) {
  // Its forward raises unless its settings (float64 default dtype, cuDNN benchmark) are in force.
  // Timing on the GPU opens each side's turn with an untimed forward of its own; that forward
  // too must run under the side's own state, not the state the other side's turn left.
  const auto r = run_eval("problems/level1/softmax.py", "examples/faulty/changes_settings.py");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct");
  EXPECT_TRUE(r.result["timing"]["candidate"]["device"]["valid"].get<bool>()) << r.output;
  EXPECT_TRUE(r.result["timing"]["reference"]["device"]["valid"].get<bool>()) << r.output;
}

TEST_F(EvalGpu, CudaCrashInPythonCandidate) {
  const auto r = run_eval("problems/level1/softmax.py", "examples/faulty/segfault.py");
  EXPECT_EQ(r.exit_code, 4) << r.output;
}

}  // namespace
}  // namespace kj::test
