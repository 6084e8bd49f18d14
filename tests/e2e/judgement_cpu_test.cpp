// End-to-end tests of what the judgement means, on the CPU, each with a small problem and
// candidate written for it: integer outputs compare exactly, NaN inputs are not "modified",
// models stay in training mode as in KernelBench, non-persistent buffers are copied, sizes drawn
// while the models are built agree with the trials', unsupported output dtypes are a mismatch,
// a passing constant output is not flagged, stress shapes that scale nothing say so, a forged
// report of trials is not believed; dropout and integer inputs a forward sorts survive the
// post-timing check, which says why a candidate relying on unscaled values fails it; BatchNorm's
// counter does not stop a copy by order; Python numbers compare as their kind.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <system_error>
#include <vector>

#include "kjudge_runner.hpp"

namespace kj::test {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> quick = {"--device", "cpu", "--no-timing", "--trials", "2"};

/** The temporary folders this process's tests wrote, removed when its tests end (a CI machine
 *  ran these tests hundreds of times and kept every folder). */
class case_folders : public ::testing::Environment {
 public:
  void add(const fs::path& dir) { m_dirs.push_back(dir); }
  void TearDown() override {
    for (const auto& d : m_dirs) {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  }

 private:
  std::vector<fs::path> m_dirs;
};

case_folders& folders() {
  // gtest owns (and deletes) a registered environment.
  static case_folders* const env = [] {
    auto* e = new case_folders;
    ::testing::AddGlobalTestEnvironment(e);
    return e;
  }();
  return *env;
}
// Registered before RUN_ALL_TESTS, so that its TearDown runs.
[[maybe_unused]] const case_folders& registered_folders = folders();

/** A file under this test's own temporary folder, written with `text`; returns its path. */
std::string write_case(const std::string& name, const std::string& text) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const auto dir = fs::temp_directory_path() / (std::string("kjudge_judgement_") + info->name() +
                                                "_" + std::to_string(::getpid()));
  if (fs::create_directories(dir)) folders().add(dir);
  const auto path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

std::vector<std::string> with(std::vector<std::string> extra) {
  auto v = quick;
  v.insert(v.end(), extra.begin(), extra.end());
  return v;
}

const char* const int64_problem = R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return x * 3
def get_inputs():
    return [torch.randint(0, 1000, (64,), dtype=torch.int64) + 2**60]
def get_init_inputs():
    return []
)";

TEST(JudgementCpu, Int64OutputsCompareExactlyBeyondTwoToThe53) {
  const auto p = write_case("p.py", int64_problem);
  const auto off = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return x * 3 + 1
)");
  const auto r = run_eval(p, off, quick);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.result["status"], "incorrect");
  EXPECT_EQ(r.result["message"], "2 of 2 nominal trials failed, and so did the held-out trial");
  const auto& o = r.result["trials"][0]["outputs"][0];
  EXPECT_EQ(o["mismatch_count"], 64);
  EXPECT_EQ(o["max_abs_err"], 1.0);
  EXPECT_NE(o["message"].get<std::string>().find("int64 compares exactly"), std::string::npos)
      << o["message"];
}

TEST(JudgementCpu, IntegerOutputsStayExactUnderAProblemsTolerance) {
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
KJUDGE_RTOL = 1e-2
class Model(nn.Module):
    def forward(self, x):
        return torch.max(x, dim=-1)
def get_inputs():
    return [torch.randn(16, 300)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        v, i = torch.max(x, dim=-1)
        return v, torch.clamp(i + 1, max=299)
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const auto& outs = r.result["trials"][0]["outputs"];
  ASSERT_EQ(outs.size(), 2u) << r.result.dump(1);
  EXPECT_TRUE(outs[0]["passed"].get<bool>());
  EXPECT_EQ(outs[0]["rtol"], 1e-2);
  EXPECT_FALSE(outs[1]["passed"].get<bool>());
  EXPECT_EQ(outs[1]["atol"], 0.0);
  EXPECT_EQ(outs[1]["rtol"], 0.0);
}

TEST(JudgementCpu, NanInAnInputIsNotAChangeAndTrainingModeIsKernelBenchs) {
  // Two checks in one evaluation: a NaN the candidate did not write is no in-place change, and
  // BatchNorm normalises by the batch's statistics (training mode, as KernelBench leaves it).
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(8)
    def forward(self, x, m):
        return self.bn(torch.nan_to_num(x)) + m.sum()
def get_inputs():
    x = torch.randn(32, 8) * 3 + 5
    x[0, 0] = float("nan")
    return [x, torch.ones(2)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(8)
    def forward(self, x, m):
        y = torch.where(torch.isnan(x), torch.zeros_like(x), x)
        mean = y.mean(0)
        var = y.var(0, unbiased=False)
        out = (y - mean) / torch.sqrt(var + self.bn.eps) * self.bn.weight + self.bn.bias
        return out + m.sum()
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct");
  EXPECT_FALSE(has_flag(r.result, "input_modified")) << r.result.dump(1);
}

TEST(JudgementCpu, NonPersistentBuffersAreCopied) {
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.register_buffer("scale", torch.randn(16), persistent=False)
    def forward(self, x):
        return self.lin(x) * self.scale
def get_inputs():
    return [torch.randn(4, 16)]
def get_init_inputs():
    return []
)");
  // Its buffer is drawn first, so under the same seed its values differ from the reference's.
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.randn(16), persistent=False)
        self.lin = nn.Linear(16, 16)
    def forward(self, x):
        return self.lin(x) * self.scale
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["correctness"]["weight_copy"], "by_name");
  // A candidate without the buffer still has its state_dict copied (by order: other names).
  const auto fixed = write_case("fixed.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.kernel = nn.Parameter(torch.empty(16, 16))
        self.offset = nn.Parameter(torch.empty(16))
        self.register_buffer("unused", torch.zeros(1), persistent=False)
    def forward(self, x):
        return x
)");
  const auto f = run_eval(p, fixed, quick);
  EXPECT_EQ(f.result["correctness"]["weight_copy"], "by_order") << f.output;
}

TEST(JudgementCpu, RenamedParametersInAnotherOrderAreCopiedByShape) {
  // The candidate renames Linear's parameters (to names whose ends say nothing: `w` and `b`
  // would read as `weight` and `bias`) and declares the bias first: the scan in order
  // found no weight after the bias and copied nothing (seed_only), and the seed's own weights
  // made a correct kernel incorrect.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(32, 16)
    def forward(self, x):
        return self.proj(x)
def get_inputs():
    return [torch.randn(8, 32)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.shift = nn.Parameter(torch.zeros(16))
        self.mat = nn.Parameter(torch.zeros(16, 32))
    def forward(self, x):
        return torch.addmm(self.shift, x, self.mat.t())
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct") << r.result.dump(1);
  EXPECT_EQ(r.result["correctness"]["weight_copy"], "by_shape") << r.output;
}

TEST(JudgementCpu, ReferenceBuffersTheCandidateKeepsNoneOfAreLeftOut) {
  // The candidate's BatchNorm keeps no running statistics (the same function in training
  // mode): the reference's running_mean and running_var could not be paired, and nothing was
  // copied, not even the parameters every one of which had its namesake (seed_only, incorrect).
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 32)
        self.bn = nn.BatchNorm1d(32)
        self.bias = nn.Parameter(torch.randn(32) * 0.02)
    def forward(self, x):
        return self.bn(self.fc(x)) + self.bias
def get_inputs():
    return [torch.randn(64, 32)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(32))
        self.fc = nn.Linear(32, 32)
        self.bn = nn.BatchNorm1d(32, track_running_stats=False)
        with torch.no_grad():
            self.bn.weight.mul_(3.0)  # the reference's value must arrive by name
    def forward(self, x):
        return self.bn(self.fc(x)) + self.bias
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct") << r.result.dump(1);
  EXPECT_EQ(r.result["correctness"]["weight_copy"], "by_name") << r.output;

  // A parameter without a partner keeps the candidate's seeded value, and the rest are copied
  // ("partial", named in the flag).
  const auto odd = write_case("odd.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 32)
        self.bn = nn.BatchNorm1d(32, track_running_stats=False)
        self.shift = nn.Parameter(torch.zeros(1, 32))
    def forward(self, x):
        return self.bn(self.fc(x)) + self.shift
)");
  const auto o = run_eval(p, odd, quick);
  EXPECT_EQ(o.result["correctness"]["weight_copy"], "partial") << o.output;
  bool flagged = false;
  for (const auto& f : o.result["flags"])
    if (f["code"] == "weights_not_copied") {
      flagged = true;
      EXPECT_NE(f["message"].get<std::string>().find("some of the reference's parameters (bias)"),
                std::string::npos)
          << f.dump();
    }
  EXPECT_TRUE(flagged) << o.result["flags"].dump(1);

  // A reference of buffers alone, none of which the candidate keeps: nothing copied, which read
  // by_name.
  const auto buffers = write_case("buffers.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer('b', torch.randn(32))
    def forward(self, x):
        return x * self.b
def get_inputs():
    return [torch.randn(64, 32)]
def get_init_inputs():
    return []
)");
  const auto plain = write_case("plain.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.zeros(32)
    def forward(self, x):
        return x * self.scale
)");
  const auto b = run_eval(buffers, plain, quick);
  EXPECT_EQ(b.exit_code, 1) << b.output;
  EXPECT_EQ(b.result["correctness"]["weight_copy"], "none") << b.output;
}

TEST(JudgementCpu, AModuleWithExtraStateIsJudged) {
  // get_extra_state() puts a value that is no tensor into the state_dict: an internal error
  // ('dict' object has no attribute 'detach').
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.mode = "plain"
    def get_extra_state(self):
        return {"mode": self.mode}
    def set_extra_state(self, state):
        self.mode = state["mode"]
    def forward(self, x):
        return self.lin(x)
def get_inputs():
    return [torch.randn(4, 8)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
    def forward(self, x):
        return self.lin(x)
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct") << r.result.dump(1);
  EXPECT_EQ(r.result["correctness"]["weight_copy"], "by_name") << r.output;
}

TEST(JudgementCpu, AForwardThatDrawsFromPythonsRandomPassesThePostTimingCheck) {
  // Each check forward starts both sides from the same state of every generator a trial
  // seeds: Python's random and NumPy's too, not torch's alone.
  const auto p = write_case("p.py", R"(import random
import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        return x * random.random()
def get_inputs():
    return [torch.randn(64, 64)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import random
import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        return x * random.random()
)");
  const auto r = run_eval(p, c, {"--device", "cpu", "--trials", "2", "--budget", "0.2"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct") << r.result["message"];
}

TEST(JudgementCpu, ATorchGlobalTheCandidateSetsFromNoneIsNoneAgainForTheReference) {
  // A watched module's global that was None and that the candidate bound to a function: for
  // the reference's calls it was deleted, not set back to None, and the reference's code that
  // reads it failed (a problem error).
  const auto p = write_case("p.py", R"(import sys
import types
import torch
import torch.nn as nn
probe = sys.modules.setdefault("torch.nn._kjudge_probe", types.ModuleType("torch.nn._kjudge_probe"))
probe.HOOK = None
class Model(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        hook = sys.modules["torch.nn._kjudge_probe"].HOOK
        return x * 2 if hook is None else hook(x)
def get_inputs():
    return [torch.randn(16, 16)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import sys
import torch
import torch.nn as nn
sys.modules["torch.nn._kjudge_probe"].HOOK = lambda x: x * 2
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        return sys.modules["torch.nn._kjudge_probe"].HOOK(x)
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct") << r.result["message"];
  bool flagged = false;
  for (const auto& f : r.result["flags"])
    if (f["code"] == "candidate_changed_torch_state")
      flagged =
          f["message"].get<std::string>().find("torch.nn._kjudge_probe.HOOK") != std::string::npos;
  EXPECT_TRUE(flagged) << r.result["flags"].dump(1);
}

TEST(JudgementCpu, TwoTensorsOfAShapeOutOfOrderArePairedByTheirSeededValues) {
  // The reference's state_dict is scale (16), weight, bias (16); the candidate's w, b, s. By
  // shape alone the scale would go into b and the bias into s. The candidate built its tensors
  // as the reference did, under the same seed, so each equals its partner: they are paired by
  // value (nothing needs copying), and it passes.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(32, 16)
        self.scale = nn.Parameter(torch.randn(16))
    def forward(self, x):
        return self.lin(x) * self.scale
def get_inputs():
    return [torch.randn(8, 32)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        lin = nn.Linear(32, 16)
        self.w = nn.Parameter(lin.weight.detach().clone())
        self.b = nn.Parameter(lin.bias.detach().clone())
        self.s = nn.Parameter(torch.randn(16))
    def forward(self, x):
        return torch.addmm(self.b, x, self.w.t()) * self.s
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["correctness"]["weight_copy"], "by_value") << r.output;
}

TEST(JudgementCpu, AWeightKeptTransposedFromTheSeedIsNotOverwritten) {
  // A square weight stored as W^T (a GEMM kernel's layout), built from the candidate's own
  // nn.Linear under the seed: copying by order would put W into it, and a correct candidate
  // would fail. Its values equal the transpose of the reference's weight: kept as built.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(64, 64)
    def forward(self, x):
        return self.lin(x)
def get_inputs():
    return [torch.randn(8, 64)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        lin = nn.Linear(64, 64)
        self.w_t = nn.Parameter(lin.weight.detach().t().contiguous())
        self.b = nn.Parameter(lin.bias.detach().clone())
    def forward(self, x):
        return torch.addmm(self.b, x, self.w_t)
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct") << r.result.dump(1);
  EXPECT_EQ(r.result["correctness"]["weight_copy"], "by_value") << r.output;
}

TEST(JudgementCpu, TiedWeightsAreCopiedOnceAndNamesakeBuffersFound) {
  // The reference ties its head to its embedding (one tensor, two state_dict names); the
  // candidate keeps the one tensor. Its other buffer is non-persistent where the reference's is
  // persistent: still a namesake.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Linear(16, 32, bias=False)
        self.head = nn.Linear(16, 32, bias=False)
        self.head.weight = self.emb.weight
        self.out = nn.Linear(32, 8)
        self.register_buffer("scale", torch.rand(8) + 0.5)
    def forward(self, x):
        return self.out(self.emb(x) + self.head(x)) * self.scale
def get_inputs():
    return [torch.randn(4, 16)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Linear(16, 32, bias=False)
        self.out = nn.Linear(32, 8)
        self.register_buffer("scale", torch.ones(8), persistent=False)
    def forward(self, x):
        return self.out(2 * self.emb(x)) * self.scale
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct") << r.result.dump(1);
  EXPECT_EQ(r.result["correctness"]["weight_copy"], "by_name") << r.output;
}

TEST(JudgementCpu, ALazyReferenceIsTheProblemsErrorSaidPlainly) {
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.LazyLinear(8)
    def forward(self, x):
        return self.l(x)
def get_inputs():
    return [torch.randn(4, 16)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(16, 8)
    def forward(self, x):
        return self.l(x)
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.result["status"], "problem_error") << r.result.dump(1);
  EXPECT_NE(r.result["message"].get<std::string>().find("lazy module"), std::string::npos)
      << r.result["message"];
}

TEST(JudgementCpu, TimingKeepsTheInputsLayoutAndRescalesFloat8) {
  // A channels-last input stays channels-last in the timing copies, as in the trials (a
  // candidate that relies on the layout it was given must not fail only when timed), and a
  // float8 input, which has no mul of its own, is rescaled through float32.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x, a):
        return x.sum(1) + (a.float() @ a.float().t()).sum()
def get_inputs():
    return [torch.randn(2, 8, 4, 4).to(memory_format=torch.channels_last),
            torch.randn(4, 8).to(torch.float8_e4m3fn)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x, a):
        n, ch, h, w = x.shape
        s = x.permute(0, 2, 3, 1).view(n * h * w, ch).sum(1).view(n, h, w)
        return s + (a.float() @ a.float().t()).sum()
)");
  const auto r = run_eval(p, c, {"--device", "cpu", "--budget", "0.2", "--trials", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct") << r.result.dump(1);
  EXPECT_TRUE(r.result["timing"]["candidate"]["host_wall"]["valid"].get<bool>()) << r.output;
}

TEST(JudgementCpu, ZerosForAReferenceThatIsZeroButForRoundingAreNotFlagged) {
  // The means of centred rows are 1e-8 or so: zeros are the exact answer, not a constant that
  // passed by atol.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return (x - x.mean(1, keepdim=True)).mean(1)
def get_inputs():
    return [torch.randn(64, 256)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.zeros(x.shape[0])
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(has_flag(r.result, "constant_output")) << r.result.dump(1);
  EXPECT_FALSE(has_flag(r.result, "output_repeats")) << r.result.dump(1);
}

TEST(JudgementCpu, SizesDrawnWhileBuildingStayNominalInEveryTrial) {
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.w = nn.Parameter(torch.randn(h))
    def forward(self, x):
        return x * self.w
def get_inputs():
    return [torch.randn(popcorn_pri.jitter_int(8), popcorn_pri.jitter_int(64))]
def get_init_inputs():
    return [popcorn_pri.jitter_int(64)]
)");
  // The candidate's own draws at its import pin nothing (else a candidate could switch
  // jitter off for the sizes it was written for).
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
popcorn_pri.jitter_int(8)
class ModelNew(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.w = nn.Parameter(torch.randn(h))
    def forward(self, x):
        return x * self.w
)");
  const auto r = run_eval(p, c, with({"--shapes", "stress"}));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const auto& t : r.result["trials"]) {
    EXPECT_EQ(t["input_shapes"][0][1], 64) << t.dump();
    EXPECT_EQ(t["jitter"]["64"], 64) << t.dump();
    if (t["kind"] == "stress") {
      EXPECT_NE(t["input_shapes"][0][0], 8) << t.dump();
    }
  }
  // The batch size was drawn in get_inputs only: it jitters, and stress trials scale it.
  EXPECT_FALSE(has_flag(r.result, "stress_not_scaled"));
}

TEST(JudgementCpu, StressThatScalesNothingSaysSo) {
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn(16, 64)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        assert x.shape == (16, 64)
        return x.clamp_min(0)
)");
  const auto r = run_eval(p, c, with({"--shapes", "stress"}));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_flag(r.result, "stress_not_scaled")) << r.result.dump(1);
}

TEST(JudgementCpu, StressSizesTheProblemCannotRunAreSkippedNotBlamedOnTheCandidate) {
  // A fixed table of 300 positions: its sequence (256, jittered) cannot grow x4. The candidate
  // raises there as the reference does: the stress trials are skipped, the verdict stands.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("pos", torch.randn(300))
    def forward(self, x):
        return x + self.pos[: x.shape[1]].unsqueeze(0).expand_as(x)
def get_inputs():
    return [torch.randn(popcorn_pri.jitter_int(8), popcorn_pri.jitter_int(256))]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("pos", torch.zeros(300))
    def forward(self, x):
        assert x.shape[1] <= 300, "longer than the table"
        return x + self.pos[: x.shape[1]].unsqueeze(0)
)");
  const auto r = run_eval(p, c, with({"--shapes", "stress"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct");
  EXPECT_TRUE(has_flag(r.result, "stress_not_applicable")) << r.result.dump(1);
  EXPECT_FALSE(has_flag(r.result, "stress_not_scaled")) << r.result.dump(1);
  EXPECT_EQ(r.result["correctness"]["stress_skipped"], 2);
  int skipped = 0;
  for (const auto& t : r.result["trials"])
    if (t["kind"] == "stress") {
      EXPECT_TRUE(t["skipped"].get<bool>()) << t.dump();
      EXPECT_FALSE(t["passed"].get<bool>()) << t.dump();
      ++skipped;
    }
  EXPECT_EQ(skipped, 2);
  EXPECT_NE(r.output.find("stress skipped"), std::string::npos) << r.output;
  // The flag says why, not only where: the reference's error, not a line ending in ':'.
  for (const auto& f : r.result["flags"])
    if (f["code"] == "stress_not_applicable") {
      const std::string m = f["message"].get<std::string>();
      EXPECT_EQ(m.find(":;"), std::string::npos) << m;
      EXPECT_NE(m.find("Error"), std::string::npos) << m;
      // The candidate's code had run in that worker: the skip stands once the reference alone,
      // in a fresh worker, fails there as well.
      EXPECT_NE(m.find("the reference alone, in a fresh worker without the candidate's code, "
                       "failed there too"),
                std::string::npos)
          << m;
    }
}

TEST(JudgementCpu, AStressTrialWhoseReferenceTheCandidateMadeFailIsTheCandidatesError) {
  // Zeros at the stress sizes, and an exception raised into the reference's forward there from
  // a thread (examples/faulty/fails_reference_in_stress.py): the stress trials were skipped as
  // the problem's, and a candidate written for the nominal sizes read correct, exit 0. The
  // reference alone, in a fresh worker, runs that trial through.
  const auto r =
      run_eval("problems/level1/softmax.py", "examples/faulty/fails_reference_in_stress.py",
               with({"--shapes", "stress"}));
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_EQ(r.result["status"], "runtime_error") << r.output;
  EXPECT_TRUE(has_flag(r.result, "problem_error_not_reproduced")) << r.result.dump(1);
  EXPECT_FALSE(has_flag(r.result, "stress_not_applicable")) << r.result.dump(1);
  EXPECT_NE(r.result["message"].get<std::string>().find("stress trial 1 failed in the problem's"),
            std::string::npos)
      << r.result["message"];
  EXPECT_EQ(r.result["correctness"]["stress_skipped"], 0) << r.result["correctness"];
  // The same with a MemoryError: the worker held the candidate's memory as well, the fresh one
  // none of it, so the skip stands, said unchecked (a limit docs/methodology.md names).
  std::ifstream in(source_dir() / "examples/faulty/fails_reference_in_stress.py");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string raised = "ctypes.py_object(ValueError)";
  const auto at = text.find(raised);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, raised.size(), "ctypes.py_object(MemoryError)");
  const auto m = run_eval("problems/level1/softmax.py", write_case("c.py", text),
                          with({"--shapes", "stress"}));
  EXPECT_EQ(m.exit_code, 0) << m.output;
  EXPECT_EQ(m.result["status"], "correct") << m.output;
  EXPECT_TRUE(has_flag(m.result, "stress_skip_unconfirmed")) << m.result.dump(1);
  EXPECT_TRUE(has_flag(m.result, "stress_not_applicable")) << m.result.dump(1);
}

TEST(JudgementCpu, AReferenceThatCannotRunItsOwnTrialIsTheProblemsErrorNotTheCandidates) {
  // The input's width jitters, the Linear's does not: the reference fails on a nominal trial's
  // inputs, and the candidate, which raises on them first, is not blamed.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 32)
    def forward(self, x):
        return self.fc(x)
def get_inputs():
    return [torch.randn(popcorn_pri.jitter_int(16), popcorn_pri.jitter_int(64))]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 32)
    def forward(self, x):
        return self.fc(x)
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 6) << r.output;
  EXPECT_EQ(r.result["status"], "problem_error");
  EXPECT_NE(r.result["message"].get<std::string>().find("the reference fails on the inputs of"),
            std::string::npos)
      << r.result["message"];
}

TEST(JudgementCpu, AProblemWhoseOutputsKjudgeDoesNotJudgeIsSaidToBeSoNotToFail) {
  // A dict out of both forwards: the problem's outputs are not of a kind kjudge compares, which
  // the message says as such (it read "the reference fails ... too").
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return {"a": x * 2, "b": x + 1}
def get_inputs():
    return [torch.randn(8, 16)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return {"a": x * 2, "b": x + 1}
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 6) << r.output;
  EXPECT_EQ(r.result["status"], "problem_error");
  const std::string m = r.result["message"].get<std::string>();
  EXPECT_TRUE(m.starts_with("the problem's own outputs cannot be judged")) << m;
  EXPECT_NE(m.find("Model.forward returned a dict"), std::string::npos) << m;
  EXPECT_EQ(m.find("fails on the inputs"), std::string::npos) << m;
}

TEST(JudgementCpu, WithoutTimingTheNominalSizesAreStillChecked) {
  // Wrong only at the nominal shape, the one a benchmark times, which the trials' jitter does not
  // draw here (with these seeds): the check at the nominal sizes catches it without timing too.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
def get_inputs():
    return [torch.randn(popcorn_pri.jitter_int(64), popcorn_pri.jitter_int(96))]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        if tuple(x.shape) == (64, 96):
            return torch.zeros_like(x)
        return torch.softmax(x, dim=-1)
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.result["status"], "incorrect");
  // The held-out trial's seed is secret, and about once in 550 runs it draws the nominal shape:
  // that trial fails then, and the check after the trials does not run.
  bool held_out_nominal = false;
  for (const auto& t : r.result["trials"]) {
    const bool nominal_shape = t["input_shapes"] == nlohmann::json::parse("[[64, 96]]");
    if (t["kind"] == "held_out" && nominal_shape) {
      held_out_nominal = true;
      EXPECT_FALSE(t["passed"].get<bool>()) << t.dump();
      continue;
    }
    EXPECT_TRUE(t["passed"].get<bool>()) << "a trial drew the nominal shape: " << t.dump();
  }
  if (!held_out_nominal) {
    EXPECT_TRUE(has_flag(r.result, "nominal_sizes_differ")) << r.result.dump(1);
    // The reference (softmax) repeats itself on those inputs: the mismatch is the candidate's.
    EXPECT_FALSE(has_flag(r.result, "reference_nondeterministic")) << r.result.dump(1);
  }
}

TEST(JudgementCpu, ACandidateThatChoosesTheTrialsSizesIsNotBelievedAndSizesAreIntegers) {
  // Hard-coded to 256 x 128, with the trials' sizes pinned there by replacing jitter_int or by
  // adding to kjudge's table of sizes drawn while the models were built: each is caught before
  // the first trial's draw, and not judged correct.
  const std::string problem = R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
def get_inputs():
    return [torch.randn(popcorn_pri.jitter_int(256), popcorn_pri.jitter_int(128))]
def get_init_inputs():
    return []
)";
  const auto p = write_case("p.py", problem);
  const std::string forward = R"(import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.zeros_like(x)
        y[:256, :128] = torch.softmax(x[:256, :128], dim=-1)
        return y
)";
  const auto patch =
      write_case("patch.py",
                 "import torch\ntype(popcorn_pri).jitter_int = lambda self, n: int(n)\n" + forward);
  // Drawn at its import and sealed before kjudge seals the sizes kept in every trial.
  const auto pins = write_case("pins.py",
                               "import torch\npopcorn_pri.jitter_int(256)\npopcorn_pri.jitter_int("
                               "128)\npopcorn_pri.seal(2)\n" +
                                   forward);
  for (const auto& [c, says] :
       {std::pair{patch, "replaced kjudge's popcorn_pri"},
        std::pair{pins, "the candidate chose the sizes kept in every trial"}}) {
    const auto r = run_eval(p, c, quick);
    EXPECT_EQ(r.exit_code, 4) << r.output;
    EXPECT_NE(r.result["message"].get<std::string>().find(says), std::string::npos)
        << r.result["message"];
  }
  // A size that is not an integer (a float the problem computed) is the problem's error.
  const auto floats = write_case(
      "floats.py",
      std::string(problem).replace(problem.find("jitter_int(128)"), 15, "jitter_int(128 * 1.0)"));
  const auto r = run_eval(floats, write_case("ok.py", "import torch\n" + forward), quick);
  EXPECT_EQ(r.exit_code, 6) << r.output;
  EXPECT_NE(r.result["message"].get<std::string>().find("takes an integer size, not float"),
            std::string::npos)
      << r.result["message"];
  // Nor one beyond 64 bits (pybind11's "Unable to cast Python instance to C++ type").
  const auto huge = write_case(
      "huge.py",
      std::string(problem).replace(problem.find("jitter_int(128)"), 15, "jitter_int(10**19)"));
  const auto h = run_eval(huge, write_case("ok.py", "import torch\n" + forward), quick);
  EXPECT_EQ(h.exit_code, 6) << h.output;
  EXPECT_NE(h.result["message"].get<std::string>().find(
                "popcorn_pri.jitter_int(10000000000000000000): a size beyond 64 bits"),
            std::string::npos)
      << h.result["message"];
}

TEST(JudgementCpu, ACandidateThatChangesTheProcesssLimitsIsCaughtBeforeTheNextDraw) {
  // Lowered limits (the memory a trial's inputs may take, say) would fail the reference's part of
  // the next trial, and the problem would be blamed: the change is the candidate's error.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn(popcorn_pri.jitter_int(64), 32)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import resource, torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(64, soft - 1), hard))
        return torch.relu(x)
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_NE(r.result["message"].get<std::string>().find("lowered the process's resource limits"),
            std::string::npos)
      << r.result["message"];
}

TEST(JudgementCpu, StressScalesOnlySizesThatJitter) {
  // 3 input channels never jitter, so they stay 3 under stress; the batch and image sizes grow.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
    def forward(self, x):
        return self.conv(x)
def get_inputs():
    j = popcorn_pri.jitter_int
    return [torch.randn(j(2), j(3), j(16), j(16))]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
    def forward(self, x):
        return self.conv(x)
)");
  const auto r = run_eval(p, c, with({"--shapes", "stress"}));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["correctness"]["stress_passed"], 2) << r.result.dump(1);
  for (const auto& t : r.result["trials"])
    if (t["kind"] == "stress") {
      const auto shape = t["input_shapes"][0];
      EXPECT_EQ(shape[0], 2) << shape;  // below 7: neither jittered nor scaled
      EXPECT_EQ(shape[1], 3) << shape;
      EXPECT_GE(shape[2].get<int>(), 4 * 14) << shape;  // 16 jittered (14..18), then x4
    }
}

TEST(JudgementCpu, AnOutputDtypeKjudgeCannotCompareIsADtypeMismatch) {
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return x * 2
def get_inputs():
    return [torch.randn(8, 8)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return (x * 2).to(torch.complex64)
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.result["status"], "incorrect");
  const auto& o = r.result["trials"][0]["outputs"][0];
  EXPECT_EQ(o["actual_dtype"], "complex64");
  EXPECT_NE(o["message"].get<std::string>().find("dtype mismatch"), std::string::npos) << o;
}

TEST(JudgementCpu, AConstantOutputThatPassesIsNotFlagged) {
  // softmax rows sum to 1 within rounding: all ones is a correct answer, not a cached one.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1).sum(-1)
def get_inputs():
    return [torch.randn(32, 100)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.ones(x.shape[0])
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(has_flag(r.result, "constant_output")) << r.result.dump(1);
  EXPECT_FALSE(has_flag(r.result, "output_repeats")) << r.result.dump(1);
}

TEST(JudgementCpu, AConstantOutputThatPassesOnlyByTheAbsoluteToleranceIsFlagged) {
  // The reference's outputs lie in [0, 1e-5], all within atol 1e-4 of a constant 5e-6: correct
  // by the tolerance, but the candidate ignores its input. Warnings, not errors: the verdict
  // stands.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.sigmoid(x) * 1e-5
def get_inputs():
    return [torch.randn(16, 64)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.full_like(x, 5e-6)
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct");
  for (const char* code : {"constant_output", "output_repeats"}) {
    bool warned = false;
    for (const auto& f : r.result["flags"])
      if (f["code"] == code) {
        warned = true;
        EXPECT_EQ(f["severity"], "warning") << f;
        EXPECT_NE(f["message"].get<std::string>().find("too loose"), std::string::npos) << f;
      }
    EXPECT_TRUE(warned) << code << "\n" << r.result.dump(1);
  }
  EXPECT_TRUE(r.result["trials"][0]["outputs"][0]["reference_varies"].get<bool>());
}

TEST(JudgementCpu, ANamedtupleConstructorArgumentAndAParameterInputAreTakenAsTheyAre) {
  // KernelBench passes get_init_inputs() to both constructors untouched (a namedtuple was rebuilt
  // from one generator and failed: internal_error), and get_inputs() to both forwards (an
  // nn.Parameter input failed the reproducibility check's comparison: internal_error).
  const auto p = write_case("p.py", R"(import collections
import torch
import torch.nn as nn
Cfg = collections.namedtuple("Cfg", "scale shift")
class Model(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
    def forward(self, x, w):
        return x * self.cfg.scale + self.cfg.shift + w
def get_inputs():
    return [torch.randn(8, 8), nn.Parameter(torch.randn(8, 8), requires_grad=False)]
def get_init_inputs():
    return [Cfg(2.0, torch.ones(8))]
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.scale, self.shift = cfg
    def forward(self, x, w):
        return torch.addcmul(self.shift + w, x, torch.full_like(x, self.scale))
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct") << r.result.dump(1);
}

TEST(JudgementCpu, AForgedReportOfEveryTrialIsNotBelieved) {
  // At import the candidate writes a whole "correct" report into every pipe it holds (the
  // event channel among them), each trial passed but with seed 0, then ends the worker.
  const auto c = write_case("c.py", R"(import json, os
import torch
import torch.nn as nn
events = [{"trial": {"kind": "nominal", "index": i, "passed": True}} for i in range(2)]
events += [{"trial": {"kind": "held_out", "index": 0, "passed": True}},
           {"final": {"status": "correct", "message": ""}}]
data = "".join(json.dumps(e) + "\n" for e in events).encode()
for name in os.listdir("/proc/self/fd"):
    try:
        if os.readlink("/proc/self/fd/" + name).startswith("pipe:"):
            os.write(int(name), data)
    except OSError:
        pass
os._exit(0)
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.zeros_like(x)
)");
  const auto r = run_eval("problems/level1/softmax.py", c, quick);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.result["status"], "correct");
  EXPECT_TRUE(has_flag(r.result, "unverified_verdict")) << r.result.dump(1);
  EXPECT_NE(flag_message(r.result, "unverified_verdict").find("seed"), std::string::npos)
      << flag_message(r.result, "unverified_verdict");
}

/** The opening of a candidate that reaches into kjudge's harness (as `h`). */
const std::string with_harness =
    "import sys\nimport torch\nimport torch.nn as nn\nh = sys.modules[\"kjudge_harness\"]\n";

/** A ModelNew that computes the softmax of problems/level1/softmax.py. */
const std::string honest_softmax =
    "class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.softmax(x, "
    "dim=1)\n";

/** The opening of a candidate that writes `data` (a Python bytes expression) at import into
 *  every pipe the worker holds (its event channel among them). */
std::string writes_into_pipes(const std::string& data) {
  return "import os\nimport torch\nimport torch.nn as nn\ndata = " + data +
         "\nfor name in os.listdir('/proc/self/fd'):\n"
         "    try:\n"
         "        if os.readlink('/proc/self/fd/' + name).startswith('pipe:'):\n"
         "            os.write(int(name), data)\n"
         "    except OSError:\n"
         "        pass\n";
}

/** The evaluation ended with `status` and its exit code, its message saying `text`. */
void expect_ended(const kjudge_run& r, int exit_code, const char* status, const char* text) {
  EXPECT_EQ(r.exit_code, exit_code) << r.output;
  EXPECT_EQ(r.result["status"], status) << r.result.dump(1);
  EXPECT_NE(r.result["message"].get<std::string>().find(text), std::string::npos)
      << r.result["message"];
}

/** A softmax candidate whose forward runs `in_loop` (Python, indented 12) in the timing loop:
 *  the evaluation ends as its runtime error, the message saying `text`. */
void expect_refused_in_loop(const std::string& in_loop, const char* text) {
  const auto c = write_case("c.py", with_harness +
                                        "class ModelNew(nn.Module):\n"
                                        "    def forward(self, x):\n"
                                        "        if h._turns:\n" +
                                        in_loop + "        return torch.softmax(x, dim=1)\n");
  expect_ended(run_eval("problems/level1/softmax.py", c,
                        {"--device", "cpu", "--trials", "2", "--budget", "0.1"}),
               4, "runtime_error", text);
}

TEST(JudgementCpu, TheHarnesssFunctionsTakeNoOtherCode) {
  // The harness's checks compared its functions by identity: a candidate that gave trial_finish
  // other code (reporting the reference's outputs as its own) had outputs of zeros judged
  // correct. The worker's audit hook refuses the change.
  const auto c =
      write_case("c.py", with_harness + R"(h.trial_finish.__code__ = (lambda: None).__code__
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.zeros_like(x)
)");
  expect_ended(run_eval("problems/level1/softmax.py", c, quick), 3, "compile_error",
               "refuses to change __code__");
}

TEST(JudgementCpu, AMethodOfTheHarnesssObjectsShadowedIsTheCandidatesError) {
  // An attribute of its own in place of a method of the harness's _reach object: the worker
  // ran it (here after the first trial's candidate call), and a candidate wrote a forged timing
  // event from there.
  const auto c = write_case("c.py", with_harness + R"(class ModelNew(nn.Module):
    def forward(self, x):
        h._reach.new_changes = lambda: []
        return torch.softmax(x, dim=1)
)");
  expect_ended(run_eval("problems/level1/softmax.py", c, quick), 4, "runtime_error",
               "an attribute of kjudge_harness._reach in place of its method new_changes");
}

TEST(JudgementCpu, TheAuditsKeptCopiesAreOutOfTheCandidatesReach) {
  // An honest softmax that overwrites every CPU tensor it can find holding one of its recent
  // outputs (other than those it returned or made): while the harness kept the audits' copies,
  // it found them and the evaluation read incorrect, so a dishonest one could have written the
  // right answers in (the harness's audit state switched off passed at 419x, too). kjudge's C++
  // keeps them now.
  const auto c = write_case("c.py", R"(import gc
import weakref
import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.outs, self.returned = [], {}
    def forward(self, x):
        out = torch.softmax(x, dim=1)
        for t in gc.get_objects():
            if type(t) is not torch.Tensor or t.device.type != "cpu" or t.shape != out.shape:
                continue
            r = self.returned.get(id(t))
            if (r is not None and r() is t) or any(o is t for o in self.outs):
                continue
            if any(torch.equal(t, o) for o in self.outs):
                t.fill_(0.5)
        self.outs = (self.outs + [out.clone()])[-16:]
        self.returned = {k: r for k, r in self.returned.items() if r() is not None}
        self.returned[id(out)] = weakref.ref(out)
        return out
)");
  const auto r = run_eval("problems/level1/softmax.py", c,
                          {"--device", "cpu", "--trials", "2", "--budget", "0.3"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct") << r.result.dump(1);
}

TEST(JudgementCpu, ACandidatesGcCallbackIsKeptToItsOwnCalls) {
  // A gc callback (run at nearly every allocation with a threshold of 1) that slept inside the
  // reference's calls: correct at 2.66x for the same matmul with sleeps of 2 ms. The
  // interpreter's gc settings are each side's own now, as torch's are. The callback leaves a
  // mark where it finds itself in the reference's forward, which collects (it makes a thousand
  // tensors): a bound on the sides' host-wall ratio failed in CI at 6.45x without any mark (the
  // CPU softmax's samples fell into runs of 1.3, 5 and 23 ms on both sides).
  const auto mark = fs::path(write_case("mark.txt", "")).replace_filename("reached");
  const auto c = write_case("c.py", R"(import gc
import sys
import time
import torch
import torch.nn as nn
MARK = )" + nlohmann::json(mark.string()).dump() +
                                        R"(
def slow_the_reference(phase, info):
    h = sys.modules["kjudge_harness"]
    f = sys._getframe(1)
    while f is not None:
        if f.f_locals.get("self") is h._ref:
            open(MARK, "a").write(phase + "\n")
            time.sleep(0.002)
            return
        f = f.f_back
class ModelNew(nn.Module):
    def forward(self, x):
        if slow_the_reference not in gc.callbacks:
            gc.callbacks.append(slow_the_reference)
            gc.set_threshold(1)
        return torch.softmax(x, dim=1)
)");
  // A reference whose forward makes a thousand tensors: collections run inside it.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(torch.stack([row for row in x]), dim=1)
def get_inputs():
    return [torch.randn(1000, 16)]
def get_init_inputs():
    return []
)");
  const auto r = run_eval(p, c, {"--device", "cpu", "--trials", "2", "--budget", "0.2"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct") << r.result.dump(1);
  const std::string changed = flag_message(r.result, "candidate_changed_torch_state");
  EXPECT_NE(changed.find("gc.callbacks"), std::string::npos) << changed;
  EXPECT_NE(changed.find("gc.get_threshold()"), std::string::npos) << changed;
  EXPECT_FALSE(fs::exists(mark)) << "the candidate's gc callback ran in the reference's forward";
}

TEST(JudgementCpu, TimedCallsRunWithoutTheCycleCollectorsAutomaticPasses) {
  // The collector's counts carry from one side's calls to the other's: a candidate with
  // gc.set_threshold(1) had full passes of the heap (5-25 ms with torch) fall into the
  // reference's timed calls, which read 6.45x slower than the candidate's in CI. Timed calls
  // now run with automatic collection off, as timeit's do; the candidate's trials keep its
  // switch. While the reference's state is in force the automatic passes are held off
  // altogether (a pass there ran the candidate's finalisers, whose changes were taken for the
  // reference's own): its trials too.
  const auto log = write_case("calls.txt", "");
  const std::string logging =
      "import gc\nimport torch\nimport torch.nn as nn\nLOG = " + nlohmann::json(log).dump() + "\n";
  const auto body = [&](const std::string& cls, const std::string& who) {
    return "class " + cls +
           "(nn.Module):\n    def forward(self, x):\n"
           "        with open(LOG, 'a') as f:\n"
           "            f.write('" +
           who + " %d\\n' % gc.isenabled())\n        return x * 2\n";
  };
  const auto p = write_case("p.py", logging + body("Model", "reference") +
                                        "def get_inputs():\n    return [torch.randn(8)]\n"
                                        "def get_init_inputs():\n    return []\n");
  const auto c = write_case("c.py", logging + body("ModelNew", "candidate"));
  const auto r =
      run_eval(p, c, {"--device", "cpu", "--trials", "2", "--budget", "0.05", "--seed", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::map<std::string, int> seen;
  std::ifstream in(log);
  for (std::string who, on; in >> who >> on;) ++seen[who + " " + on];
  EXPECT_GT(seen["candidate 1"], 0) << "no call of the candidate's with the collector on";
  EXPECT_EQ(seen["reference 1"], 0) << "a call of the reference's with the collector on";
  for (const std::string who : {"reference", "candidate"})
    EXPECT_GE(seen[who + " 0"], 10) << who << ": no timed calls with it off";
  // The collector's switch is each side's own again after the timed calls.
  EXPECT_FALSE(has_flag(r.result, "candidate_changed_torch_state")) << r.result["flags"].dump(1);
}

TEST(JudgementCpu, ATimersSignalIsNotHandledByTheCandidateInTheReferencesCalls) {
  // SIGALRM every 2 ms, whose handler slept inside the reference's calls: correct at 1.47x.
  // Signal handlers are each side's own now: in the reference's part the signal has its
  // default action, and ends the worker, which is the candidate's crash. Also where the
  // candidate rebound signal.getitimer and signal.getsignal at import, which hid the timer and
  // its handler from the checks (correct, unflagged): the harness reads them as it loaded them.
  for (const char* hide : {"",
                           "signal.getitimer = lambda which: (0.0, 0.0)\n"
                           "signal.getsignal = lambda number: signal.SIG_DFL\n"}) {
    const auto c = write_case("c.py", std::string(R"(import signal
import time
import torch
import torch.nn as nn
getitimer = signal.getitimer
)") + hide + R"(class ModelNew(nn.Module):
    def forward(self, x):
        if getitimer(signal.ITIMER_REAL) == (0.0, 0.0):
            signal.signal(signal.SIGALRM, lambda *_: time.sleep(0.001))
            signal.setitimer(signal.ITIMER_REAL, 0.002, 0.002)
        return torch.softmax(x, dim=1)
)");
    const auto r = run_eval("problems/level1/softmax.py", c, quick);
    EXPECT_EQ(r.exit_code, 4) << hide << r.output;
    EXPECT_NE(r.result["status"], "correct") << r.result.dump(1);
  }
}

TEST(JudgementCpu, TheTimingKeysHashAnswersOnlyForTheSampleBeingPrepared) {
  // With the key in the harness's globals, a candidate computed its next samples' inputs and
  // returned their outputs for free (correct at 408x). The key is C++'s now, which hashes only
  // for the call it has in progress: a forward that asks for another sample's factor raises.
  expect_refused_in_loop("            h._factor(10**6, 2)\n",
                         "answers only for the samples kjudge is preparing");
}

TEST(JudgementCpu, ACandidatesGcCallbackCannotMendACallBeforeItsAuditCopy) {
  // Zeros in the timing loop, and a gc callback (threshold 1, set in a trial) that writes the
  // right answer into the last call's outputs: the candidate's gc settings stay in force from
  // its call to its next prepare(), where the audit's copy is made, and a collection there ran
  // the callback first (correct at 2.80x without the collector paused; a weakref callback on
  // the harness's kept copies did as much at 1.55x).
  const auto c = write_case("c.py", with_harness + R"(import gc
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.last = None
    def mend(self, phase, info):
        if phase == "start" and self.last is not None:
            out, x = self.last
            self.last = None
            out.copy_(torch.softmax(x, dim=1))
    def forward(self, x):
        if self.mend not in gc.callbacks:
            gc.callbacks.append(self.mend)
            gc.set_threshold(1)
        if not h._turns:
            return torch.softmax(x, dim=1)
        self.last = None
        out = torch.zeros_like(x)
        self.last = (out, x)
        return out
)");
  const auto r = run_eval("problems/level1/softmax.py", c,
                          {"--device", "cpu", "--trials", "2", "--budget", "0.5"});
  expect_ended(r, 1, "incorrect", "a call of the candidate's in the timing loop");
  EXPECT_TRUE(has_flag(r.result, "timing_outputs_differ")) << r.result["flags"].dump(1);
}

TEST(JudgementCpu, AFinalizerRunInTheReferencesTurnCannotMendACallBeforeItsAuditCopy) {
  // Zeros from the last call of each of its turns, cyclic garbage whose finalizer writes the
  // right answer into them, and the collector's count left at its threshold: the collection
  // came in the reference's turn, before the candidate's next prepare(), where the audit's copy
  // was then made (correct, about 40 of the loop's calls zeros; found by review). The copy is
  // made at the first prepare() of either side now.
  const auto c = write_case("c.py", with_harness + R"(import gc
class Mender:
    def __init__(self, out, x):
        self.out, self.x, self.me = out, x, self
    def __del__(self):
        self.out.copy_(torch.softmax(self.x, dim=1))
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.reference_out, self.in_turn, self.warm, self.junk = None, 0, False, []
    def forward(self, x):
        if not h._turns:
            return torch.softmax(x, dim=1)
        ro = h._run_outputs.get("reference", [None])[0]
        if ro is not self.reference_out:  # the reference ran since: a new turn
            self.warm = self.warm or self.in_turn >= 3
            self.in_turn, self.reference_out = 0, ro
        self.in_turn += 1
        ro = None
        if not self.warm or self.in_turn != 3:
            return torch.softmax(x, dim=1)
        out = torch.zeros_like(x)
        Mender(out, x)
        self.junk = [None] * 4000
        i = 0
        while gc.get_count()[0] < gc.get_threshold()[0]:
            self.junk[i] = []
            i += 1
        return out
)");
  const auto r = run_eval("problems/level1/softmax.py", c,
                          {"--device", "cpu", "--trials", "2", "--budget", "0.5"});
  expect_ended(r, 1, "incorrect", "a call of the candidate's in the timing loop");
}

TEST(JudgementCpu, ANameKjudgeCannotPrintInTheHarnessIsNoInternalError) {
  // An attribute named by a lone surrogate on the harness's _reach object: the seal's check read
  // the name as UTF-8 and ended the evaluation as kjudge's internal error (exit 7).
  const auto c =
      write_case("c.py", with_harness + "h._reach.__dict__[\"\\udcff\"] = 1\n" + honest_softmax);
  const auto r = run_eval("problems/level1/softmax.py", c, quick);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct") << r.result.dump(1);
}

TEST(JudgementCpu, ASecondTimingEventIsNotBelieved) {
  // The worker sends one timing event; the fold took the last one's figures. A candidate that
  // wrote one of its own into the channel after the worker's (from code of its that the worker
  // ran after timing) read correct with the 50x it forged. Here it is written at import, before
  // the worker's: either way the evaluation has two, and the verdict is not believed.
  const auto c = write_case(
      "c.py", writes_into_pipes(R"(b'{"timing":{"stopped_by":"forged"}}\n')") + honest_softmax);
  const auto r = run_eval("problems/level1/softmax.py", c,
                          {"--device", "cpu", "--trials", "2", "--budget", "0.1"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.result["status"], "incorrect") << r.result.dump(1);
  EXPECT_NE(flag_message(r.result, "unverified_verdict").find("'timing' event"), std::string::npos)
      << r.result["flags"].dump(1);
  EXPECT_TRUE(r.result["timing"].is_null()) << "neither timing event is shown";
}

TEST(JudgementCpu, AFloodOfPhaseEventsIsCappedAndTheVerdictNotBelieved) {
  // At import the candidate writes 10,000 well-formed phase lines into every pipe it holds (the
  // event channel among them), then computes the right answer. They were all kept (a 100 MiB
  // flood grew kjudge to 3.3 GB) and the verdict stood.
  const auto c =
      write_case("c.py", writes_into_pipes(R"(b'{"phase":"p"}\n' * 10000)") + honest_softmax);
  const auto r = run_eval("problems/level1/softmax.py", c, quick);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "incorrect") << r.result.dump(1);
  EXPECT_TRUE(has_flag(r.result, "event_flood")) << r.result.dump(1);
  EXPECT_TRUE(has_flag(r.result, "unverified_verdict")) << r.result.dump(1);
  EXPECT_LE(r.result["worker"]["phases"].size(), 4096u);
}

TEST(JudgementCpu, ACrashInTheReferencesForwardAfterTheCandidatesIsTheCandidates) {
  // The candidate's forward leaves a thread that waits for the reference's forward to run on
  // the main thread, then crashes the worker: a "problem error" would blame the problem.
  const auto c = write_case("c.py", R"(import ctypes, sys, threading, time
import torch
import torch.nn as nn
main = threading.main_thread().ident
def crash_in_reference():
    deadline = time.time() + 20
    while time.time() < deadline:
        frame = sys._current_frames().get(main)
        while frame is not None:
            if frame.f_code.co_name == "forward" and "softmax" in frame.f_code.co_filename:
                ctypes.string_at(0)
            frame = frame.f_back
        time.sleep(0.0005)
class ModelNew(nn.Module):
    started = False
    def forward(self, x):
        if not ModelNew.started:
            ModelNew.started = True
            threading.Thread(target=crash_in_reference, daemon=True).start()
        return torch.softmax(x, dim=1)
)");
  const auto r = run_eval("problems/level1/softmax.py", c, quick);
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_EQ(r.result["status"], "crashed") << r.result.dump(1);
  EXPECT_NE(r.result["message"].get<std::string>().find("counted as the candidate's crash"),
            std::string::npos)
      << r.result["message"];
  // The reference, run alone in a fresh worker, got through the same trials.
  EXPECT_NE(r.result["message"].get<std::string>().find("the reference alone, in a fresh worker "
                                                        "without the candidate, ran through the "
                                                        "same trials"),
            std::string::npos)
      << r.result["message"];
}

// Timed briefly on the CPU, so the post-timing check runs.
const std::vector<std::string> timed = {"--device", "cpu", "--trials",      "2",
                                        "--budget", "0.2", "--min-samples", "10"};

TEST(JudgementCpu, OutputBytesCountEachViewOnceAndAnExpandedOneByItsElements) {
  // The floor on bytes moved (faster_than_memory) took a tensor returned twice twice and an
  // expanded one at its logical size.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        y = x * 2.0
        return y, y, x.sum(dim=1, keepdim=True).expand(-1, 4096)
def get_inputs():
    return [torch.randn(64, 256)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        y = x * 2.0
        return y, y, x.sum(dim=1, keepdim=True).expand(-1, 4096)
)");
  const auto r = run_eval(p, c, timed);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // y once (64 x 256 floats) and the expanded sums by their 64 elements.
  EXPECT_EQ(r.result["options"]["timing_inputs"]["output_bytes"], 64 * 256 * 4 + 64 * 4)
      << r.result["options"]["timing_inputs"].dump();
}

TEST(JudgementCpu, AnExpandedOutputOfTheWrongShapeIsJudgedWithoutWritingItOut) {
  // One float expanded to 2^15 x 2^15 (4 GiB written out, 4 bytes of memory): its host copy was
  // written out whole before its shape was compared (2^28 elements: 39 s and 2.8 GB of memory
  // over three trials). Now the elements its strides reach are kept, and the wrong shape is said
  // with them: incorrect, as constant as it is, in a worker far below the 4 GiB.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)
def get_inputs():
    return [torch.randn(16, 64)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.zeros(()).expand(2**15, 2**15)
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  ASSERT_EQ(r.result["status"], "incorrect") << r.result.dump(1);
  const auto& check = r.result["trials"][0]["outputs"][0];
  EXPECT_EQ(check["actual_shape"], (std::vector<int>{32768, 32768})) << check.dump();
  EXPECT_NE(check["message"].get<std::string>().find("shape mismatch"), std::string::npos);
  EXPECT_NE(r.output.find("constant_output"), std::string::npos) << r.output;
  EXPECT_LT(r.result["worker"]["max_rss_kb"].get<std::uint64_t>(), 2'000'000U)
      << r.result["worker"].dump();
  // The same of a ZeroTensor, which has no memory (a reviewer's: 1:45 and 8.9 GB).
  const auto z = write_case("z.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return torch._efficientzerotensor(()).expand(2**15, 2**15)
)");
  const auto zr = run_eval(p, z, quick);
  EXPECT_EQ(zr.exit_code, 1) << zr.output;
  EXPECT_EQ(zr.result["status"], "incorrect") << zr.result.dump(1);
  EXPECT_LT(zr.result["worker"]["max_rss_kb"].get<std::uint64_t>(), 2'000'000U)
      << zr.result["worker"].dump();
}

TEST(JudgementCpu, AnExpandedOutputOfTheRightShapeIsComparedElementByElement) {
  // Written out where its shape is the reference's: compared as any output, in the trials and
  // in the check after timing.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)
def get_inputs():
    return [torch.randn(16, 64)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.full((1, 1), 1.0 / 64).expand(x.shape[0], x.shape[1])
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  ASSERT_EQ(r.result["status"], "incorrect") << r.result.dump(1);
  const auto& check = r.result["trials"][0]["outputs"][0];
  EXPECT_EQ(check["actual_shape"], (std::vector<int>{16, 64})) << check.dump();
  // Values compared: the uniform 1/64 against the softmax's peaked rows.
  EXPECT_GT(check["mismatch_count"].get<int>(), 0) << check.dump();
  EXPECT_GT(check["max_abs_err"].get<double>(), 0.01) << check.dump();
  EXPECT_NE(r.output.find("constant_output"), std::string::npos) << r.output;
  // The right shape in another dtype: said from the elements reached, not written out.
  const auto d = write_case("d.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.full((1, 1), 1.0 / 64, dtype=torch.float64).expand(x.shape[0], x.shape[1])
)");
  const auto dr = run_eval(p, d, quick);
  EXPECT_EQ(dr.exit_code, 1) << dr.output;
  const auto& dcheck = dr.result["trials"][0]["outputs"][0];
  EXPECT_NE(dcheck["message"].get<std::string>().find("dtype mismatch: expected float32, got "
                                                      "float64"),
            std::string::npos)
      << dcheck.dump();
  EXPECT_TRUE(dcheck["constant_output"].get<bool>()) << dcheck.dump();
}

TEST(JudgementCpu, DropoutMatchesInTheTrialsAndInThePostTimingCheck) {
  // Each side's forward starts from the same generator state in the trials and, since this
  // test, in the check after timing (it compared two different dropout masks there).
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)
    def forward(self, x):
        return self.drop(x) * 2
def get_inputs():
    return [torch.randn(64, 64)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.nn.functional.dropout(x, 0.5, True) * 2
)");
  const auto r = run_eval(p, c, timed);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct") << r.result.dump(1);
  EXPECT_FALSE(has_flag(r.result, "timing_outputs_differ")) << r.result.dump(1);
}

TEST(JudgementCpu, ACandidateThatReliesOnUnscaledValuesIsToldWhyTheCheckFailed) {
  // Targets are +-1 and the candidate takes them as signs: right in every trial, but the check
  // after timing scales its inputs as the timed samples were (a known limit: methodology.md).
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, p, t):
        return torch.clamp(1 - p * t, min=0)
def get_inputs():
    return [torch.randn(256), torch.randint(0, 2, (256,)).float() * 2 - 1]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, p, t):
        return torch.clamp(torch.where(t > 0, 1 - p, 1 + p), min=0)
)");
  const auto r = run_eval(p, c, timed);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.result["correctness"]["trials_passed"], 2) << r.result.dump(1);
  EXPECT_TRUE(has_flag(r.result, "timing_outputs_differ")) << r.result.dump(1);
  EXPECT_NE(r.result["message"].get<std::string>().find("rely on values that scaling changes"),
            std::string::npos)
      << r.result["message"];
}

TEST(JudgementCpu, IntegerTimingInputsAreCopiedBackBeforeEverySample) {
  // The candidate sorts its indices in place (the sum does not change) and refuses sorted ones:
  // timed on its own sorted copy, sample after sample, it raised.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x, idx):
        return x[idx].sum(0)
def get_inputs():
    return [torch.randn(512, 16), torch.randint(0, 512, (2048,))]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x, idx):
        if bool((idx[1:] >= idx[:-1]).all()):
            raise RuntimeError("timed on indices this forward sorted before")
        idx.copy_(torch.sort(idx).values)
        return x[idx].sum(0)
)");
  const auto r = run_eval(p, c, timed);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct") << r.result.dump(1);
  EXPECT_TRUE(has_flag(r.result, "input_modified")) << r.result.dump(1);
}

TEST(JudgementCpu, WeightsCopyByOrderWithoutTheBatchNormCounter) {
  // The candidate keeps BatchNorm's parameters and running statistics as its own tensors, and
  // has no num_batches_tracked: the floating-point tensors still copy by order.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 8)
        self.bn = nn.BatchNorm1d(8)
    def forward(self, x):
        return self.bn(self.fc(x))
def get_inputs():
    return [torch.randn(32, 16)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 16))
        self.b = nn.Parameter(torch.randn(8))
        self.gamma = nn.Parameter(torch.randn(8))
        self.beta = nn.Parameter(torch.randn(8))
        self.register_buffer("rm", torch.zeros(8))
        self.register_buffer("rv", torch.ones(8))
    def forward(self, x):
        y = x @ self.w.t() + self.b
        return torch.nn.functional.batch_norm(y, self.rm, self.rv, self.gamma, self.beta, True,
                                              0.1, 1e-5)
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct") << r.result.dump(1);
  EXPECT_EQ(r.result["correctness"]["weight_copy"], "by_order") << r.result.dump(1);
}

TEST(JudgementCpu, PythonIntegerAndBoolOutputsCompareExactly) {
  // A count near 10^5 off by 7 passed fp64's relative tolerance (1e-4 x 10^5 = 10).
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return int((x > 0).sum()), bool((x > 0).any())
def get_inputs():
    return [torch.randn(200000)]
def get_init_inputs():
    return []
)");
  const auto off = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return int((x > 0).sum()) + 7, bool((x > 0).any())
)");
  const auto r = run_eval(p, off, quick);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.result["status"], "incorrect") << r.result.dump(1);
  const auto& outs = r.result["trials"][0]["outputs"];
  EXPECT_EQ(outs[0]["expected_dtype"], "int64") << outs.dump(1);
  EXPECT_EQ(outs[0]["max_abs_err"], 7.0);
  EXPECT_EQ(outs[1]["expected_dtype"], "bool") << outs.dump(1);
  EXPECT_TRUE(outs[1]["passed"].get<bool>());
  const auto same = write_case("same.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return int((x > 0).sum()), bool((x > 0).any())
)");
  const auto ok = run_eval(p, same, quick);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}

TEST(JudgementCpu, SubclassesOfTuplesAndNumbersAreJudgedAlikeWithAndWithoutTiming) {
  // The trials took a namedtuple, torch.Size or numpy float64 output, and the timing loop's
  // audits refused it ("computes differently while timed"): a faithful copy was incorrect with
  // timing and correct without. The audits now read such subclasses through their base class.
  const std::string head =
      "import collections\nimport numpy as np\nimport torch\n"
      "import torch.nn as nn\n"
      "T = collections.namedtuple('T', 'a b')\n";
  const std::string tail =
      "def get_inputs():\n    return [torch.randn(64, 32)]\n"
      "def get_init_inputs():\n    return []\n";
  for (const std::string body : {"T(x * 2, x + 1)", "x.shape", "np.float64(x.sum().item())",
                                 "[np.float64(x.mean().item()), T(1, 2)[0]]"}) {
    const std::string model =
        "class Model(nn.Module):\n    def forward(self, x):\n        return " + body + "\n";
    const auto p = write_case("p.py", head + model + tail);
    const auto c = write_case("c.py", head + model + "ModelNew = Model\n");
    for (const auto& args : {timed, quick}) {
      const auto r = run_eval(p, c, args);
      EXPECT_EQ(r.exit_code, 0) << body << "\n" << r.output;
      EXPECT_EQ(r.result["status"], "correct") << body << "\n" << r.result["flags"].dump(1);
    }
  }
  // A tensor subclass the audits cannot read without its Python is the candidate's error in the
  // trials too, with and without timing.
  const auto p = write_case("p.py", head +
                                        "class Model(nn.Module):\n    def forward(self, x):\n"
                                        "        return x * 2\n" +
                                        tail);
  const auto c = write_case("c.py", head +
                                        "class Mine(torch.Tensor):\n    pass\n"
                                        "class ModelNew(nn.Module):\n    def forward(self, x):\n"
                                        "        return (x * 2).as_subclass(Mine)\n");
  for (const auto& args : {timed, quick}) {
    const auto r = run_eval(p, c, args);
    EXPECT_EQ(r.exit_code, 4) << r.output;
    EXPECT_NE(r.result.value("message", "").find("is a Mine, a subclass of torch.Tensor"),
              std::string::npos)
        << r.result.value("message", "");
  }
}

/** A problem's inputs (one 16 x 8 tensor, no init inputs), after its model. */
const char* const one_input_tail =
    "def get_inputs():\n    return [torch.randn(16, 8)]\n"
    "def get_init_inputs():\n    return []\n";

/** A module `cls` whose forward(x) returns `body`. */
std::string one_line_model(const std::string& cls, const std::string& body) {
  return "import torch\nimport torch.nn as nn\nclass " + cls +
         "(nn.Module):\n    def forward(self, x):\n        return " + body + "\n";
}

TEST(JudgementCpu, AnOutputWithNoValuesToCompareIsTheErrorOfTheSideThatReturnedIt) {
  // A reference that returns a sparse, meta or quantized tensor, against a candidate that
  // returns the same: the candidate's output was copied first, failed, and the candidate got
  // the runtime error.
  for (const std::string body : {"(x * 2).to_sparse()", "torch.empty(3, device='meta')",
                                 "torch.quantize_per_tensor(x, 0.1, 0, torch.qint8)"}) {
    const auto p = write_case("p.py", one_line_model("Model", body) + one_input_tail);
    const auto same = write_case("same.py", one_line_model("ModelNew", body));
    const auto r = run_eval(p, same, quick);
    EXPECT_EQ(r.exit_code, 6) << body << "\n" << r.output;
    EXPECT_NE(r.result.value("message", "").find("Model.forward returned a"), std::string::npos)
        << body << "\n"
        << r.result.value("message", "");
  }
  // The candidate's own, against a dense reference, is the candidate's.
  const auto p = write_case("p.py", one_line_model("Model", "x * 2") + one_input_tail);
  const auto sparse = write_case("sparse.py", one_line_model("ModelNew", "(x * 2).to_sparse()"));
  const auto r = run_eval(p, sparse, quick);
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_NE(r.result.value("message", "").find("ModelNew.forward returned a sparse_coo tensor"),
            std::string::npos)
      << r.result.value("message", "");
}

TEST(JudgementCpu, ADtypeMismatchSaysWhichSideReturnedANumber) {
  // A Python number is compared as a 0-dim float64, int64 or bool tensor: "expected float64,
  // got float32" alone read as if the reference returned a float64 tensor.
  struct example {
    std::string reference, candidate, note;
  };
  for (const auto& [ref, cand, note] : std::vector<example>{
           {"float(x.sum())", "x.sum()",
            "(the reference returned a Python float, compared as "
            "float64)"},
           {"x.sum()", "float(x.sum())",
            "(the candidate returned a Python float, compared as "
            "float64)"},
           {"(x, int(x.numel()))", "(x, x.numel() * 1.0)",
            "(the reference returned a Python int, compared as int64; the candidate returned a "
            "Python float, compared as float64)"},
           {"x.sum()", "__import__('numpy').float64(x.sum().item())",
            "(the candidate returned a float64 (a Python float), compared as float64)"}}) {
    const auto p = write_case("p.py", one_line_model("Model", ref) + one_input_tail);
    const auto c = write_case("c.py", one_line_model("ModelNew", cand));
    const auto r = run_eval(p, c, quick);
    EXPECT_EQ(r.exit_code, 1) << ref << " / " << cand << "\n" << r.output;
    const auto& outputs = r.result["trials"][0]["outputs"];
    ASSERT_FALSE(outputs.empty()) << r.result.dump(1);
    const auto message = outputs.back().value("message", "");
    EXPECT_NE(message.find("dtype mismatch"), std::string::npos) << message;
    EXPECT_NE(message.find(note), std::string::npos) << message;
  }
  // Tensors of different dtypes: no such note.
  const auto p = write_case("p.py", one_line_model("Model", "x.sum()") + one_input_tail);
  const auto c = write_case("c.py", one_line_model("ModelNew", "x.double().sum()"));
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.result["trials"][0]["outputs"][0].value("message", ""),
            "dtype mismatch: expected float32, got float64");
}

TEST(JudgementCpu, AReferenceThatDoesNotRepeatItselfIsFlaggedAtTheFirstFailedTrial) {
  // A candidate failed against a reference whose outputs are not a function of its inputs, and
  // the report blamed the candidate alone.
  const auto wrong = write_case("wrong.py", one_line_model("ModelNew", "x * 1"));
  const std::string counter =
      "import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
      "    def __init__(self):\n        super().__init__()\n        self.calls = 0\n"
      "    def forward(self, x):\n        self.calls += 1\n        return x * self.calls\n";
  for (const std::string& problem :
       {one_line_model("Model",
                       "x + torch.randn(x.shape, generator=(lambda g: (g.seed(), g)[1])("
                       "torch.Generator()))"),
        counter}) {
    const auto p = write_case("p.py", problem + one_input_tail);
    const auto r = run_eval(p, wrong, quick);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_EQ(r.result["status"], "incorrect");  // the verdict stands
    const auto message = flag_message(r.result, "reference_nondeterministic");
    EXPECT_NE(message.find("output 0: "), std::string::npos) << r.result["flags"].dump(1);
    EXPECT_NE(message.find(" of 128 elements outside"), std::string::npos)
        << r.result["flags"].dump(1);
    for (const auto& f : r.result["flags"])
      if (f["code"] == "reference_nondeterministic") {
        EXPECT_EQ(f["severity"], "error");
      }
  }
  // A draw kjudge's seed reaches repeats: a wrong candidate against it is not excused, and a
  // candidate that draws the same is correct.
  for (const std::string body : {"x + torch.randn_like(x)", "nn.functional.dropout(x, 0.5)"}) {
    const auto p = write_case("p.py", one_line_model("Model", body) + one_input_tail);
    const auto r = run_eval(p, wrong, quick);
    EXPECT_EQ(r.exit_code, 1) << body << "\n" << r.output;
    EXPECT_FALSE(has_flag(r.result, "reference_nondeterministic")) << body << "\n"
                                                                   << r.result["flags"].dump(1);
    const auto same = run_eval(p, write_case("same.py", one_line_model("ModelNew", body)), quick);
    EXPECT_EQ(same.exit_code, 0) << body << "\n" << same.output;
  }
}

TEST(JudgementCpu, AReferenceThatDoesNotRepeatItselfIsFlaggedWhereTheChecksAfterTheTrialsFail) {
  // A reference that counts its calls, against an exact copy of itself: the two count alike
  // through the trials, and apart in the nominal-size check (--no-timing) and the post-timing
  // check, whose messages sent the user to the candidate's code alone.
  const std::string counter =
      "import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
      "    def __init__(self):\n        super().__init__()\n        self.calls = 0\n"
      "    def forward(self, x):\n        self.calls += 1\n        return x + self.calls\n";
  const auto p = write_case("p.py", counter + one_input_tail);
  const auto copy = write_case("c.py", counter + "ModelNew = Model\n");
  for (const auto& [options, check] :
       {std::pair{quick, "nominal_sizes_differ"}, std::pair{timed, "timing_outputs_differ"}}) {
    const auto r = run_eval(p, copy, options);
    EXPECT_EQ(r.exit_code, 1) << check << "\n" << r.output;
    EXPECT_EQ(r.result["status"], "incorrect");  // the verdict stands
    EXPECT_EQ(r.result["correctness"]["trials_passed"], 2) << r.output;
    EXPECT_NE(flag_message(r.result, "reference_nondeterministic").find("run twice more"),
              std::string::npos)
        << check << "\n"
        << r.result["flags"].dump(1);
    EXPECT_NE(flag_message(r.result, check).find("the mismatch may not be the candidate's"),
              std::string::npos)
        << r.result["flags"].dump(1);
  }
  // A reference that repeats itself is not flagged (and its candidate not excused) where such a
  // check fails: WithoutTimingTheNominalSizesAreStillChecked, and EvalCpu.ResultsReplayed...
}

TEST(JudgementCpu, AModuleLoadedAgainInPlaceOfItselfInSysModulesIsNoChange) {
  // torch's inductor does so with code it generated again (the same code, a new module object):
  // an honest torch.compile candidate with a warm cache failed the check of sys.modules as a
  // runtime error. An entry gone or set to None is still the candidate's error (EvalCpu).
  const auto p = write_case("p.py", one_line_model("Model", "x * 2") + one_input_tail);
  const auto c = write_case("c.py", R"(import sys
import types
import torch
import torch.nn as nn
sys.modules["kj_generated_code"] = types.ModuleType("kj_generated_code")
class ModelNew(nn.Module):
    def forward(self, x):
        sys.modules["kj_generated_code"] = types.ModuleType("kj_generated_code")
        return x * 2
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct") << r.result.value("message", "");
}

TEST(JudgementCpu, ACandidatesChangesToTheInterpreterAndTheProblemsModulesStayWithIt) {
  // math.sqrt rebound at the candidate's import: the reference scaled by 1, and x.clone() was
  // correct. numpy's submodules likewise.
  struct example {
    std::string imports, reference, candidate_head, candidate, changed;
  };
  for (const auto& [imports, reference, head, candidate, changed] : std::vector<example>{
           {"import math\n", "x / math.sqrt(x.shape[-1])",
            "import math\nmath.sqrt = lambda v: 1.0\n", "x.clone()", "math.sqrt replaced"},
           {"import numpy as np\n", "x * float(np.linalg.norm(np.ones(4)))",
            "import numpy as np\nnp.linalg.norm = lambda v: 1.0\n", "x.clone()",
            "numpy.linalg.norm replaced"}}) {
    const auto p =
        write_case("p.py", imports + one_line_model("Model", reference) + one_input_tail);
    const auto c = write_case("c.py", head + one_line_model("ModelNew", candidate));
    const auto r = run_eval(p, c, quick);
    EXPECT_EQ(r.exit_code, 1) << reference << "\n" << r.output;
    EXPECT_NE(flag_message(r.result, "candidate_changed_torch_state").find(changed),
              std::string::npos)
        << r.result["flags"].dump(1);
  }
  // Kept to the candidate's own calls: one that computes with its own math.sqrt is judged by its
  // values.
  const auto p = write_case(
      "p.py", "import math\n" + one_line_model("Model", "x / math.sqrt(64)") + one_input_tail);
  const auto own = write_case("own.py", "import math\nmath.sqrt = lambda v: 8.0\n" +
                                            one_line_model("ModelNew", "x / math.sqrt(1)"));
  EXPECT_EQ(run_eval(p, own, quick).exit_code, 0);
  // The interpreter's state: a candidate that made warnings errors, lowered the recursion limit
  // or sent sys.stdout to a full device failed the reference's warning, get_inputs() or print,
  // and the problem was blamed (exit 6). Each is the candidate's own now.
  const auto warns = write_case(
      "warns.py", "import warnings\n" +
                      one_line_model("Model", "(warnings.warn('reference note'), x * 2)[1]") +
                      one_input_tail);
  const auto prints =
      write_case("prints.py", one_line_model("Model", "(print('reference', x.shape), x * 2)[1]") +
                                  one_input_tail);
  // get_inputs() 60 calls deep.
  const auto deep = write_case(
      "deep.py", one_line_model("Model", "x * 2") +
                     "def draw(n):\n    return torch.randn(16, 8) if n == 0 else draw(n - 1)\n"
                     "def get_inputs():\n    return [draw(60)]\n"
                     "def get_init_inputs():\n    return []\n");
  struct disturbance {
    std::string problem, candidate_head;
  };
  for (const auto& [problem, head] : std::vector<disturbance>{
           {warns, "import warnings\nwarnings.simplefilter('error')\n"},
           {deep, "import sys\nsys.setrecursionlimit(50)\n"},
           {prints, "import sys\nsys.stdout = open('/dev/full', 'w', buffering=1)\n"},
           // One that says it equals any other is told apart by identity.
           {prints,
            "import sys\nclass Out:\n    def write(self, s):\n        raise OSError(28, "
            "'full')\n    def flush(self):\n        pass\n    def __eq__(self, other):\n"
            "        return True\n    __hash__ = object.__hash__\nsys.stdout = Out()\n"}}) {
    const auto c = write_case("c.py", head + one_line_model("ModelNew", "x * 2"));
    const auto r = run_eval(problem, c, quick);
    EXPECT_EQ(r.exit_code, 0) << head << "\n" << r.output;
  }
  // A signal handler that says it equals any other went unnoticed (the settings were compared
  // with ==), and stayed in force for the reference.
  const auto sneaky =
      write_case("sneaky.py",
                 "import signal\nclass H:\n    def __eq__(self, other):\n        return True\n"
                 "    __hash__ = object.__hash__\n    def __call__(self, *args):\n        pass\n"
                 "signal.signal(signal.SIGUSR1, H())\n" +
                     one_line_model("ModelNew", "x * 2"));
  const auto noticed = run_eval(prints, sneaky, quick);
  EXPECT_EQ(noticed.exit_code, 0) << noticed.output;
  EXPECT_NE(flag_message(noticed.result, "candidate_changed_torch_state").find("signal handlers"),
            std::string::npos)
      << noticed.result["flags"].dump(1);
  // The two sides' warning filters differ (torch.compile's sympy adds one): switched between
  // every timed sample, they cleared the record of warnings shown, and a reference that warns
  // on each call printed its warning in every sample.
  const auto filtering = write_case(
      "filtering.py", "import warnings\nwarnings.filterwarnings('ignore', message='unrelated')\n" +
                          one_line_model("ModelNew", "x * 2"));
  const auto r = run_eval(warns, filtering, timed);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto tail = r.result["worker"].value("output_tail", "");
  std::size_t shown = 0;
  for (auto at = tail.find("reference note"); at != std::string::npos;
       at = tail.find("reference note", at + 1))
    ++shown;
  EXPECT_LE(shown, 2u) << tail;
}

TEST(JudgementCpu, AModelThatIsNoModuleSaysSo) {
  // It read "'ModelNew' object has no attribute 'to'".
  const auto p = write_case("p.py", one_line_model("Model", "x * 2") + one_input_tail);
  const auto c = write_case("c.py",
                            "import torch\nclass ModelNew:\n"
                            "    def __call__(self, x):\n        return x * 2\n");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_NE(r.result.value("message", "")
                .find("ModelNew(...) made a ModelNew, not a "
                      "torch.nn.Module"),
            std::string::npos)
      << r.result.value("message", "");
  const auto plain = write_case("plain.py",
                                "import torch\nclass Model:\n"
                                "    def __call__(self, x):\n        return x * 2\n" +
                                    std::string(one_input_tail));
  const auto same = write_case("same.py", one_line_model("ModelNew", "x * 2"));
  const auto q = run_eval(plain, same, quick);
  EXPECT_EQ(q.exit_code, 6) << q.output;
  EXPECT_NE(q.result.value("message", "").find("Model(...) made a Model, not a torch.nn.Module"),
            std::string::npos)
      << q.result.value("message", "");
}

TEST(JudgementCpu, ACorrectVerdictThatComparedNoValueSaysSo) {
  // An empty output, or one of NaN, against a candidate that returns the same: correct, every
  // error n/a, and nothing said.
  for (const std::string body : {"x[:0] * 2", "x / 0 * 0", "(x[:0], x.sum() / 0 * 0)"}) {
    const auto p = write_case("p.py", one_line_model("Model", body) + one_input_tail);
    const auto c = write_case("c.py", one_line_model("ModelNew", body));
    const auto r = run_eval(p, c, quick);
    EXPECT_EQ(r.exit_code, 0) << body << "\n" << r.output;
    EXPECT_TRUE(has_flag(r.result, "nothing_compared")) << body << "\n"
                                                        << r.result["flags"].dump(1);
  }
  // One finite value compared is enough.
  const auto p = write_case("p.py", one_line_model("Model", "(x[:0], x.sum())") + one_input_tail);
  const auto c = write_case("c.py", one_line_model("ModelNew", "(x[:0], x.sum())"));
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(has_flag(r.result, "nothing_compared")) << r.result["flags"].dump(1);
}

TEST(JudgementCpu, OutputsAreComparedByTheirValuesNotTheirRawMemory) {
  // Outputs were copied to the host by .to("cpu").contiguous(), which returns a contiguous CPU
  // tensor as itself, lazy flags and all; the comparison reads raw memory.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn(16, 32)]
def get_init_inputs():
    return []
)");
  // A negative view: logically -relu(x) (wrong), its memory relu(x). It passed.
  const auto neg = run_eval(p, write_case("neg.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return torch._neg_view(torch.relu(x))
)"),
                            quick);
  EXPECT_EQ(neg.exit_code, 1) << neg.output;
  EXPECT_EQ(neg.result["status"], "incorrect");
  // A zero tensor without storage (wrong too): an internal error before, a null pointer read.
  const auto zero = run_eval(p, write_case("zero.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return torch._efficientzerotensor(x.shape)
)"),
                             quick);
  EXPECT_EQ(zero.exit_code, 1) << zero.output;
  EXPECT_EQ(zero.result["status"], "incorrect");
  // The imaginary part of a conjugate (public API, honest): its memory holds the value's negation.
  // It failed.
  const auto q = write_case("q.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return -x.sum()
def get_inputs():
    return [torch.randn(8, 3)]
def get_init_inputs():
    return []
)");
  const auto imag_py = write_case("imag.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.complex(torch.zeros_like(x), x).sum().conj().imag
)");
  const auto imag = run_eval(q, imag_py, quick);
  EXPECT_EQ(imag.exit_code, 0) << imag.output;
  EXPECT_EQ(imag.result["status"], "correct");
  // And timed: the audits' copies of its calls (made by kjudge's C++ straight from a plain CPU
  // output's memory, one copy instead of two) resolve the negative bit as the trials' do.
  const auto imag_timed = run_eval(q, imag_py, timed);
  EXPECT_EQ(imag_timed.exit_code, 0) << imag_timed.output;
  EXPECT_EQ(imag_timed.result["status"], "correct") << imag_timed.result["flags"].dump(1);
}

TEST(JudgementCpu, AnInputThatIsNoTensorOrNumberAndATextToleranceAreTheProblems) {
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x, *rest):
        return x * 2
)");
  // A NumPy array among the inputs: an internal error before (the reproducibility check
  // compared arrays with ==).
  const auto array = run_eval(write_case("array.py", R"(import numpy as np
import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x, a):
        return x * 2
def get_inputs():
    return [torch.randn(8), np.random.randn(8)]
def get_init_inputs():
    return []
)"),
                              c, quick);
  EXPECT_EQ(array.exit_code, 6) << array.output;
  EXPECT_EQ(array.result["status"], "problem_error");
  EXPECT_NE(array.result["message"].get<std::string>().find("item 1 is a ndarray"),
            std::string::npos)
      << array.result["message"];
  // A tolerance given as text (float() read "0.5") or as a bool (True read 1.0) is refused; a
  // NumPy number and a one-element tensor are numbers (refused as "not finite"); past 1e30,
  // where --atol stops, is not (it was taken).
  for (const auto& [value, ok] : {std::pair<const char*, bool>{"'0.5'", false},
                                  {"True", false},
                                  {"__import__('numpy').float32(0.001)", true},
                                  {"torch.tensor(1e-3)", true},
                                  {"1e40", false},
                                  {"torch.tensor([True])", false}}) {
    const auto r = run_eval(write_case("tolerance.py", std::string(R"(import torch
import torch.nn as nn
KJUDGE_ATOL = )") + value + R"(
class Model(nn.Module):
    def forward(self, x):
        return x * 2
def get_inputs():
    return [torch.randn(8)]
def get_init_inputs():
    return []
)"),
                            c, quick);
    EXPECT_EQ(r.exit_code, ok ? 0 : 6) << value << r.output;
    if (ok)
      EXPECT_NEAR(r.result["trials"][0]["outputs"][0]["atol"].get<double>(), 1e-3, 1e-9) << value;
    else
      EXPECT_NE(r.result["message"].get<std::string>().find("KJUDGE_ATOL"), std::string::npos)
          << r.result["message"];
  }
}

TEST(JudgementCpu, WhatTheReferenceChangesOfItselfIsNotTheCandidates) {
  // The reference's state was fixed when both models were built; what its own forward changed
  // later (a mask made on first use, a call counter, rows Embedding's max_norm renormalises) was
  // blamed on the candidate, an exact copy of the reference here, as a runtime error.
  const char* const problems[] = {R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.mask = None
    def forward(self, x):
        if self.mask is None:
            self.mask = torch.tril(torch.ones(x.shape[-1], x.shape[-1]))
        return x @ self.mask
def get_inputs():
    return [torch.randn(4, 16)]
def get_init_inputs():
    return []
)",
                                  R"(import torch
import torch.nn as nn
_calls = 0
class Model(nn.Module):
    def forward(self, x):
        global _calls
        _calls += 1
        return x * 2
def get_inputs():
    return [torch.randn(8)]
def get_init_inputs():
    return []
)",
                                  R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 16, max_norm=1.0)
    def forward(self, i):
        return self.emb(i)
def get_inputs():
    return [torch.randint(0, 100, (32,))]
def get_init_inputs():
    return []
)"};
  int n = 0;
  for (const char* problem : problems) {
    const std::string text = problem;
    const auto p = write_case("p" + std::to_string(n) + ".py", text);
    const auto c = write_case("c" + std::to_string(n++) + ".py", text + "\nModelNew = Model\n");
    const auto r = run_eval(p, c, {"--device", "cpu", "--budget", "0.2"});
    EXPECT_EQ(r.exit_code, 0) << text << r.output;
    EXPECT_EQ(r.result["status"], "correct") << r.result.value("message", "");
  }
}

TEST(JudgementCpu, TorchSettingsTheReferenceChangesInItsTimedCallsAreNotTheCandidates) {
  // The reference flips a torch setting on every call; the candidate computes the same and
  // touches no setting. At the reference's next turn the flip was blamed on the candidate ("the
  // candidate changed torch's global state while it was timed"), a runtime error.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        torch.backends.cudnn.benchmark = not torch.backends.cudnn.benchmark
        return x * 2
def get_inputs():
    return [torch.randn(64)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return x * 2
)");
  const auto r = run_eval(p, c, {"--device", "cpu", "--budget", "0.2"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct") << r.result.value("message", "");
  // A candidate's own change is still its own: kept to its calls and reported, not taken for
  // the reference's.
  const auto sets = write_case("sets.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        torch.backends.cudnn.deterministic = True
        return x * 2
)");
  const auto q = run_eval(p, sets, {"--device", "cpu", "--budget", "0.2", "--trials", "1"});
  EXPECT_NE(flag_message(q.result, "candidate_changed_torch_state").find("cudnn.deterministic"),
            std::string::npos)
      << q.output;
  EXPECT_EQ(q.result["status"], "correct") << q.result.value("message", "");
}

TEST(JudgementCpu, FlushingSubnormalsToZeroIsTheCandidatesOwnSetting) {
  // torch.set_flush_denormal has no getter, and kjudge did not track it: a candidate that set it
  // at import left the reference's forwards flushing subnormals (this problem's forward raises
  // then), and no flag said so. The flag holds per thread, and torch's CPU threads inherit it
  // from the thread that starts them: the candidate's parallel op at import (2^22 elements) had
  // them start flushing, out of reach of the main thread's reset, and the reference's parallel
  // op below flushed.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        if (torch.tensor([1e-40]) * 1.0).item() == 0.0:
            raise RuntimeError("the reference runs with subnormals flushed to zero")
        flushed = int(((torch.ones(1 << 22) * 1e-40) * 1.0 == 0).sum())
        if flushed:
            raise RuntimeError("the reference's parallel ops flush %d subnormals" % flushed)
        return x * 2
def get_inputs():
    return [torch.randn(64)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
if not torch.set_flush_denormal(True):
    raise RuntimeError("SKIP: this CPU cannot flush subnormals")
_warm = torch.ones(1 << 22) * 2.0
class ModelNew(nn.Module):
    def forward(self, x):
        if (torch.tensor([1e-40]) * 1.0).item() != 0.0:
            raise RuntimeError("the candidate's own setting is not in force")
        return x * 2
)");
  const auto r = run_eval(p, c, {"--device", "cpu", "--budget", "0.2", "--trials", "2"});
  if (r.output.find("SKIP: this CPU cannot flush subnormals") != std::string::npos)
    GTEST_SKIP() << "torch.set_flush_denormal is not supported on this CPU";
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct") << r.result.value("message", "");
  EXPECT_NE(flag_message(r.result, "candidate_changed_torch_state")
                .find("torch.set_flush_denormal: False -> True"),
            std::string::npos)
      << r.result["flags"].dump(1);
  EXPECT_GT(r.result["timing"]["candidate"]["host_wall"]["n"].get<int>(), 0) << r.output;
}

TEST(JudgementCpu, AProblemWhoseFirstDrawDiffersIsTheProblemsErrorNotTheCandidates) {
  // get_inputs() makes a constant on its first call: that draw differs from the next ones, which
  // agree. The rule "a third draw equal to the second: the candidate changed the pristine copy"
  // blamed an honest candidate; the copy's digest, taken before the candidate ran, says it did
  // not.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
_cache = {}
class Model(nn.Module):
    def forward(self, x, t):
        return x * 2 + t.sum()
def get_inputs():
    if "t" not in _cache:
        _cache["t"] = torch.randn(10)
    return [torch.randn(8), _cache["t"]]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x, t):
        return x * 2 + t.sum()
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 6) << r.output;
  EXPECT_EQ(r.result["status"], "problem_error");
  EXPECT_NE(r.result["message"].get<std::string>().find("gave different values for the same seed"),
            std::string::npos)
      << r.result["message"];
}

TEST(JudgementCpu, InputsThatRequireGradAreTimedAndChecked) {
  // kjudge's rewrite of the timing inputs (mul with out=) raised with autograd on: a problem
  // whose get_inputs gives an nn.Parameter or a tensor that requires grad was a problem error
  // when timed and an internal error under --no-timing.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, a, b, c):
        return a + b * c
def get_inputs():
    return [torch.randn(64, 32, requires_grad=True), nn.Parameter(torch.randn(64, 32)),
            torch.randn(64, 32)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, a, b, c):
        return torch.addcmul(a, b, c)
)");
  for (const auto& extra :
       {std::vector<std::string>{"--device", "cpu", "--trials", "2", "--budget", "0.2"}, quick}) {
    const auto r = run_eval(p, c, extra);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.result["status"], "correct") << r.result.dump(1);
  }
}

TEST(JudgementCpu, ACandidatesErrorStaysItsOwnWhateverItsMessageOrTraceback) {
  // A lone surrogate in the message could not be encoded as UTF-8, and a candidate that broke
  // the traceback module broke the harness's formatting: both were kjudge's internal errors.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return x * 2
def get_inputs():
    return [torch.randn(8)]
def get_init_inputs():
    return []
)");
  const auto surrogate = write_case("surrogate.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        raise ValueError("bad \ud800 value")
)");
  const auto r = run_eval(p, surrogate, quick);
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_EQ(r.result["status"], "runtime_error") << r.result.dump(1);
  EXPECT_NE(r.result["message"].get<std::string>().find("bad \\ud800 value"), std::string::npos)
      << r.result["message"];
  EXPECT_FALSE(r.result["trials"].empty()) << r.result.dump(1);

  // The traceback module broken (its module attributes, and the class format_exception uses
  // inside), a type whose name raises when formatted, kjudge's own error type subclassed with a
  // message that raises: each was kjudge's internal error.
  const auto broken = write_case("broken.py", R"(import traceback
import torch
import torch.nn as nn
def _broken(*args, **kwargs):
    return 1 / 0
traceback.format_exception = traceback.format_exc = traceback.format_tb = _broken
traceback.TracebackException = _broken
class ModelNew(nn.Module):
    def forward(self, x):
        raise ValueError("the candidate's own error")
)");
  const auto b = run_eval(p, broken, quick);
  EXPECT_EQ(b.exit_code, 4) << b.output;
  EXPECT_EQ(b.result["status"], "runtime_error") << b.result.dump(1);
  EXPECT_NE(b.result["message"].get<std::string>().find("the candidate's own error"),
            std::string::npos)
      << b.result["message"];
  EXPECT_NE(b.result["message"].get<std::string>().find("could not be formatted"),
            std::string::npos)
      << b.result["message"];
  const auto name = write_case("name.py", R"(import torch
import torch.nn as nn
class Evil(str):
    def __format__(self, spec):
        raise RuntimeError("no format")
    def __str__(self):
        raise RuntimeError("no str")
class E(Exception):
    pass
E.__qualname__ = Evil("E")
E.__module__ = "builtins"
class ModelNew(nn.Module):
    def forward(self, x):
        raise E("the candidate's own error")
)");
  const auto subclass = write_case("subclass.py", R"(import sys
import torch
import torch.nn as nn
class E(sys.modules["kjudge_harness"].CandidateError):
    def __str__(self):
        raise RuntimeError("no str")
class ModelNew(nn.Module):
    def forward(self, x):
        raise E("x")
)");
  for (const auto& c : {name, subclass}) {
    const auto e = run_eval(p, c, quick);
    EXPECT_EQ(e.exit_code, 4) << c << "\n" << e.output;
    EXPECT_EQ(e.result["status"], "runtime_error") << e.result.dump(1);
  }
  // A function whose code object's name is no valid UTF-8, raising while timed: its traceback
  // ended the worker in std::terminate (SIGABRT).
  const auto late = write_case("late.py", R"(import torch
import torch.nn as nn
calls = [0]
def helper(x):
    calls[0] += 1
    if calls[0] > 12:
        raise ValueError("late failure")
    return x * 2
helper.__code__ = helper.__code__.replace(co_name="h\udc80lper")
class ModelNew(nn.Module):
    def forward(self, x):
        return helper(x)
)");
  const auto t = run_eval(p, late, {"--device", "cpu", "--trials", "2", "--budget", "0.2"});
  EXPECT_EQ(t.exit_code, 4) << t.output;
  EXPECT_EQ(t.result["status"], "runtime_error") << t.result.dump(1);
  EXPECT_NE(t.result["message"].get<std::string>().find("late failure"), std::string::npos)
      << t.result["message"];
  EXPECT_NE(t.result["message"].get<std::string>().find("h\\udc80lper"), std::string::npos)
      << t.result["message"];
}

TEST(JudgementCpu, InputsWithinMinusOneToOneStayInTheirDomainWhenTimed) {
  // The timing rewrite scaled every float input by a factor up to 2: probabilities and targets
  // left [0, 1], and binary cross-entropy raised on them, an exact copy of the reference a
  // runtime error (--no-timing's check at the nominal sizes) or a problem error (timed).
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
import torch.nn.functional as F
class Model(nn.Module):
    def forward(self, pred, target, x):
        return F.binary_cross_entropy(pred, target) + x.sum()
def get_inputs():
    return [torch.rand(128, 16) * 0.98 + 0.01, torch.randint(0, 2, (128, 16)).float(),
            torch.randn(8) * 4]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
import torch.nn.functional as F
class ModelNew(nn.Module):
    def forward(self, pred, target, x):
        return F.binary_cross_entropy(pred, target) + x.sum()
)");
  for (const auto& extra :
       {std::vector<std::string>{"--device", "cpu", "--trials", "2", "--budget", "0.2"}, quick}) {
    const auto r = run_eval(p, c, extra);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.result["status"], "correct") << r.result.dump(1);
  }
  const auto r = run_eval(p, c, {"--device", "cpu", "--trials", "1", "--budget", "0.1"});
  EXPECT_EQ(r.result["options"]["timing_inputs"]["shrink_only_inputs"],
            nlohmann::json::array({0, 1, 2}))
      << r.result["options"].dump(1);
}

TEST(JudgementCpu, AMillionOutputsAreRefusedAtOnce) {
  // Each number became a tensor and was compared: seconds a call, and a --timeout instead of a
  // judgement.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return x * 2
def get_inputs():
    return [torch.randn(8)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return [x * 2] + [0.0] * 1000000
)");
  const auto r = run_eval(p, c, with({"--timeout", "60"}));
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_EQ(r.result["status"], "runtime_error") << r.result.dump(1);
  EXPECT_NE(r.result["message"].get<std::string>().find("at most 65536 outputs"), std::string::npos)
      << r.result["message"];
  EXPECT_LT(r.result["wall_s"].get<double>(), 30.0);
}

TEST(JudgementCpu, WhatTheProblemsOwnGetInputsChangesIsNotTheCandidates) {
  // A warning in get_inputs() makes the problem module's __warningregistry__, a global set on
  // first use changes a binding: both were read as the candidate's change to the reference's
  // side (runtime_error), so no candidate could pass such a problem.
  const auto c = write_case("c.py", R"(import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return x * 2
)");
  for (const char* body : {"    warnings.warn('a harmless warning from the problem')\n",
                           "    global _SCALE\n    if _SCALE is None:\n        _SCALE = 3.0\n"}) {
    const auto p = write_case("p.py", std::string(R"(import warnings
import torch
import torch.nn as nn
_SCALE = None
class Model(nn.Module):
    def forward(self, x):
        return x * 2
def get_inputs():
)") + body + R"(    return [torch.randn(8, 16)]
def get_init_inputs():
    return []
)");
    const auto r = run_eval(p, c, quick);
    EXPECT_EQ(r.exit_code, 0) << body << r.output;
    EXPECT_EQ(r.result["status"], "correct") << body << r.result.dump(1);
  }
  // The candidate's own change to a problem global is still its error.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
_SCALE = None
class Model(nn.Module):
    def forward(self, x):
        return x * 2
def get_inputs():
    return [torch.randn(8, 16)]
def get_init_inputs():
    return []
)");
  const auto meddler = write_case("meddler.py", R"(import sys
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        for m in list(sys.modules.values()):
            if getattr(m, "_SCALE", 0) is None:
                m._SCALE = 5.0
        return x * 2
)");
  const auto r = run_eval(p, meddler, quick);
  EXPECT_EQ(r.result["status"], "runtime_error") << r.result.dump(1);
  EXPECT_NE(r.result["message"].get<std::string>().find("the problem's _SCALE"), std::string::npos)
      << r.result["message"];
}

TEST(JudgementCpu, AnOutputKjudgeCannotJudgeIsTheProblemsWhenTheReferenceReturnsIt) {
  // The candidate runs first: a faithful copy of a reference whose output holds a None (as
  // nn.MultiheadAttention's does with need_weights=False) took the blame (runtime_error), where
  // another candidate had the problem_error.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return x * 2, None
def get_inputs():
    return [torch.randn(8)]
def get_init_inputs():
    return []
)");
  const auto copy = write_case("copy.py", R"(import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return x * 2, None
)");
  const auto r = run_eval(p, copy, quick);
  EXPECT_EQ(r.exit_code, 6) << r.output;
  EXPECT_EQ(r.result["status"], "problem_error") << r.result.dump(1);
  EXPECT_NE(r.result["message"].get<std::string>().find("Model.forward returned a tuple whose "
                                                        "item 1 is None"),
            std::string::npos)
      << r.result["message"];
  // Against a reference whose output is fine, the same output stays the candidate's error.
  const auto fine = write_case("fine.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return x * 2
def get_inputs():
    return [torch.randn(8)]
def get_init_inputs():
    return []
)");
  const auto own = run_eval(fine, copy, quick);
  EXPECT_EQ(own.exit_code, 4) << own.output;
  EXPECT_NE(own.result["message"].get<std::string>().find("ModelNew.forward returned a tuple"),
            std::string::npos)
      << own.result["message"];
}

TEST(JudgementCpu, AMatmulMoreAccurateThanTheReferencesIsCorrectAfterTiming) {
  // Accumulated in float64, rounded once: its trials pass (some elements by rtol alone). The
  // post-timing check scaled both inputs by factors up to 2, so its outputs grew up to 4x
  // against the same atol, and it failed there (timing_outputs_differ) twice out of twice; the
  // factors are at most 1 now.
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, a, b):
        return (a.double() @ b.double()).float()
)");
  const auto r = run_eval("problems/level1/matmul.py", c,
                          {"--device", "cpu", "--trials", "2", "--budget", "0.3"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.result["status"], "correct") << r.result["flags"].dump(1);
  EXPECT_FALSE(has_flag(r.result, "timing_outputs_differ")) << r.result["flags"].dump(1);
}

TEST(JudgementCpu, ASparseInputIsTheProblemsError) {
  // torch.equal has no sparse kernel: the reproducibility check raised, an internal error.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.sparse.mm(x, torch.ones(16, 4))
def get_inputs():
    return [torch.randn(8, 16).relu().to_sparse()]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.sparse.mm(x, torch.ones(16, 4))
)");
  const auto r = run_eval(p, c, quick);
  EXPECT_EQ(r.exit_code, 6) << r.output;
  EXPECT_NE(r.result["message"].get<std::string>().find("layout sparse_coo"), std::string::npos)
      << r.result["message"];
  // A nested tensor's layout reads strided.
  const auto nested = write_case("nested.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return x.to_padded_tensor(0.0)
def get_inputs():
    return [torch.nested.nested_tensor([torch.randn(3), torch.randn(5)])]
def get_init_inputs():
    return []
)");
  const auto n = run_eval(nested, c, quick);
  EXPECT_EQ(n.exit_code, 6) << n.output;
  EXPECT_NE(n.result["message"].get<std::string>().find("is a nested tensor"), std::string::npos)
      << n.result["message"];
}

TEST(JudgementCpu, AnInfiniteRelativeErrorIsNotReportedAsZero) {
  // A reference value near 0 (a float64 denormal): the relative error overflows a double, came
  // back from the worker as null, and the maxima read it as 0.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return x.double() * 0 + 5e-324
def get_inputs():
    return [torch.randn(8)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return x.double() * 0 + 1e-5
)");
  const auto r = run_eval(p, c, quick);
  ASSERT_EQ(r.exit_code, 0) << r.output;  // within atol
  EXPECT_TRUE(r.result["correctness"]["precision"]["max_rel_err"].is_null())
      << r.result["correctness"]["precision"].dump();
  EXPECT_NE(r.output.find("max rel inf"), std::string::npos) << r.output;
}

TEST(JudgementCpu, AnInfiniteValueIsShownAsOneNotAsNan) {
  // JSON has no infinity: a mismatch's values came back from the worker as null, and the report
  // said "expected nan got nan" for -inf against inf.
  const auto p = write_case("p.py", R"(import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        y = x * 2
        y[0] = float('-inf')
        return y
def get_inputs():
    return [torch.randn(8)]
def get_init_inputs():
    return []
)");
  const auto c = write_case("c.py", R"(import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        y = x * 2
        y[0] = float('inf')
        return y
)");
  const auto r = run_eval(p, c, quick);
  ASSERT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("at [0] expected -inf got inf"), std::string::npos) << r.output;
  const auto& m = r.result["trials"][0]["outputs"][0]["mismatches"][0];
  EXPECT_TRUE(m["expected"].is_null()) << m.dump();
  EXPECT_EQ(m["expected_text"], "-inf") << m.dump();
  EXPECT_EQ(m["actual_text"], "inf") << m.dump();
}

}  // namespace
}  // namespace kj::test
