// Other programs on the GPU (kjudge/runner/gpu_neighbours.hpp): sorting NVML's process list into
// this process, kjudge's and the others; the warning the looks come to; and the /proc probe,
// against real processes.

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <kjudge/runner/gpu_neighbours.hpp>

namespace kj::runner {
namespace {

cuda::gpu_process listed(unsigned pid, std::optional<unsigned long long> bytes = std::nullopt) {
  cuda::gpu_process p;
  p.pid = pid;
  p.used_memory_bytes = bytes;
  return p;
}

/** Pid 100 is this process, 200 and 201 run kjudge, every other pid is "python3". */
process_probe fake_probe() {
  process_probe p;
  p.self = 100;
  p.is_kjudge = [](unsigned pid) { return pid == 200 || pid == 201; };
  p.name_of = [](unsigned pid) { return pid == 404 ? std::string() : std::string("python3"); };
  return p;
}

TEST(GpuNeighbours, OnlyProgramsOtherThanKjudgeAreLeft) {
  const auto look = sort_processes(std::vector{listed(200), listed(100, 600ULL << 20),
                                               listed(300, 612ULL << 20), listed(201), listed(404)},
                                   fake_probe());
  ASSERT_TRUE(look.checked) << look.why_unchecked;
  ASSERT_EQ(look.others.size(), 2u);
  EXPECT_EQ(look.others[0].pid, 300u);
  EXPECT_EQ(look.others[0].name, "python3");
  EXPECT_EQ(look.others[0].used_memory_bytes, 612ULL << 20);
  EXPECT_EQ(look.others[1].pid, 404u);
  EXPECT_TRUE(look.others[1].name.empty());
  EXPECT_FALSE(look.others[1].used_memory_bytes);
}

TEST(GpuNeighbours, AListWithoutThisProcessIsAnotherNamespacesAndUnchecked) {
  // This process has a context when it looks; a list without it cannot be sorted.
  const auto look = sort_processes(std::vector{listed(7001), listed(7002)}, fake_probe());
  EXPECT_FALSE(look.checked);
  EXPECT_TRUE(look.others.empty());
  EXPECT_NE(look.why_unchecked.find("pid 100"), std::string::npos) << look.why_unchecked;
  EXPECT_NE(look.why_unchecked.find("PID namespace"), std::string::npos) << look.why_unchecked;
  const auto silent = sort_processes(std::nullopt, fake_probe());
  EXPECT_FALSE(silent.checked);
  EXPECT_NE(silent.why_unchecked.find("did not list"), std::string::npos);
}

TEST(GpuNeighbours, WarningNamesEachProcessAndWhenItWasSeen) {
  neighbour_watch w;
  w.add(sort_processes(std::vector{listed(100), listed(300, 612ULL << 20)}, fake_probe()), "start");
  w.add(
      sort_processes(std::vector{listed(100), listed(300, 612ULL << 20), listed(404), listed(200)},
                     fake_probe()),
      "end");
  const std::string text = w.warning("timing");
  EXPECT_NE(text.find("2 other processes had a context on this GPU during the timing"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("pid 300 (python3, 612 MiB, at the start and the end)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("pid 404 (at the end)"), std::string::npos) << text;
  EXPECT_EQ(text.find("pid 200"), std::string::npos) << text;
  EXPECT_NE(text.find("may be moved"), std::string::npos) << text;
  EXPECT_TRUE(w.unchecked().empty());
}

TEST(GpuNeighbours, NothingToSayWhenOnlyKjudgeIsThere) {
  neighbour_watch w;
  w.add(sort_processes(std::vector{listed(100), listed(201)}, fake_probe()), "start");
  w.add(sort_processes(std::vector{listed(100)}, fake_probe()), "end");
  EXPECT_TRUE(w.warning("timing").empty());
  EXPECT_TRUE(w.unchecked().empty());
  EXPECT_TRUE(w.flags("timing").empty());
}

TEST(GpuNeighbours, FlagsCarryTheWarningWithItsEffectAndWhatWasNotChecked) {
  neighbour_watch w;
  w.add(sort_processes(std::vector{listed(100), listed(300)}, fake_probe()), "start");
  w.add(sort_processes(std::nullopt, fake_probe(), "NVML is not available: gone"), "end");
  const auto f = w.flags("ceilings' measurement", "the ceilings may read low");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].code, "gpu_other_process");
  EXPECT_EQ(f[0].severity, "warning");
  EXPECT_EQ(f[0].message, w.warning("ceilings' measurement", "the ceilings may read low"));
  EXPECT_NE(f[0].message.find("during the ceilings' measurement"), std::string::npos);
  EXPECT_NE(f[0].message.find("hold other programs back; the ceilings may read low"),
            std::string::npos)
      << f[0].message;
  EXPECT_EQ(f[1].code, "gpu_processes_unchecked");
  EXPECT_EQ(f[1].severity, "info");
  EXPECT_EQ(f[1].message,
            "whether programs other than kjudge used this GPU during the ceilings' measurement "
            "was not checked in full: the end look: NVML is not available: gone");
}

TEST(GpuNeighbours, EveryLookThatCouldNotBeMadeIsSaid) {
  neighbour_watch none;
  none.add(sort_processes(std::nullopt, fake_probe(), "NVML's compute process list: Unknown Error"),
           "start");
  none.add(sort_processes(std::nullopt, fake_probe()), "end");
  EXPECT_NE(none.unchecked().find("the start look: NVML's compute process list: Unknown Error"),
            std::string::npos)
      << none.unchecked();
  EXPECT_NE(none.unchecked().find("the end look: NVML did not list"), std::string::npos)
      << none.unchecked();
  EXPECT_TRUE(none.warning("timing").empty());
  neighbour_watch same;  // the same reason twice is said once
  same.add(sort_processes(std::nullopt, fake_probe()), "start");
  same.add(sort_processes(std::nullopt, fake_probe()), "end");
  EXPECT_EQ(same.unchecked(), "the start and end looks: NVML did not list the GPU's processes");
  // The start looked and saw pid 300; the end could not look: both are said.
  neighbour_watch one;
  one.add(sort_processes(std::vector{listed(100), listed(300)}, fake_probe()), "start");
  one.add(sort_processes(std::nullopt, fake_probe()), "end");
  EXPECT_NE(one.unchecked().find("the end look"), std::string::npos) << one.unchecked();
  EXPECT_EQ(one.unchecked().find("the start look"), std::string::npos) << one.unchecked();
  EXPECT_NE(one.warning("profiled run")
                .find("1 other process had a context on this GPU during "
                      "the profiled run (NVML): pid 300 (python3, at the start)"),
            std::string::npos)
      << one.warning("profiled run");
}

TEST(GpuNeighbours, AContainersBlindSpotIsSaidAndTheMpsDaemonIsNotANeighbour) {
  process_probe probe = fake_probe();
  probe.blind_spot = "programs outside it were not looked for";
  probe.name_of = [](unsigned pid) {
    return pid == 500 ? std::string("nvidia-cuda-mps") : std::string("python3");
  };
  neighbour_watch w;
  w.add(sort_processes(std::vector{listed(100), listed(500)}, probe), "start");
  w.add(sort_processes(std::vector{listed(100), listed(500)}, probe), "end");
  EXPECT_TRUE(w.warning("timing").empty()) << w.warning("timing");
  EXPECT_EQ(w.unchecked(), "programs outside it were not looked for");
}

/** Children of a test, killed and reaped however the test ends. */
struct children {
  std::vector<pid_t> pids;
  ~children() {
    for (pid_t p : pids) {
      ::kill(p, SIGKILL);
      ::waitpid(p, nullptr, 0);
    }
  }
};

/** This thread's name (/proc/self/comm) set for the scope; the old one back after. */
struct thread_name {
  char old[16] = {};
  explicit thread_name(const char* name) {
    ::prctl(PR_GET_NAME, old);
    ::prctl(PR_SET_NAME, name);
  }
  ~thread_name() { ::prctl(PR_SET_NAME, old); }
};

TEST(GpuNeighbours, LocalProbeTellsThisProgramFromAnother) {
  // A copy of this program (forked, same executable) counts as kjudge; sleep(1) does not. Both
  // start before this thread is renamed (a fork copies the name), and sleep's exec is seen done.
  children kids;
  const pid_t twin = ::fork();
  ASSERT_GE(twin, 0);
  if (twin == 0) {
    ::pause();
    ::_exit(0);
  }
  kids.pids.push_back(twin);
  const pid_t other = ::fork();
  ASSERT_GE(other, 0);
  if (other == 0) {
    ::execlp("sleep", "sleep", "30", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  kids.pids.push_back(other);
  const std::string other_exe = "/proc/" + std::to_string(other) + "/exe";
  const auto exec_done = [&] {
    std::error_code ec;
    return std::filesystem::read_symlink(other_exe, ec).filename() == "sleep";
  };
  for (int i = 0; i < 500 && !exec_done(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(exec_done());
  // This process renamed as torch 2.3 and 2.4 rename the thread that imports them: kjudge is
  // still told by its executable's file name, not by whatever its thread is called now.
  const thread_name renamed("sleep");
  const process_probe probe = local_probe();
  EXPECT_EQ(probe.self, static_cast<unsigned>(::getpid()));
  EXPECT_TRUE(probe.is_kjudge(probe.self));
  EXPECT_EQ(probe.name_of(static_cast<unsigned>(other)), "sleep");
  EXPECT_FALSE(probe.is_kjudge(static_cast<unsigned>(other)));
  EXPECT_TRUE(probe.is_kjudge(static_cast<unsigned>(twin)));
  for (pid_t p : kids.pids) {
    ::kill(p, SIGKILL);
    ::waitpid(p, nullptr, 0);
  }
  kids.pids.clear();
  // A process that has exited has no name; it is not kjudge.
  EXPECT_TRUE(probe.name_of(static_cast<unsigned>(other)).empty());
  EXPECT_FALSE(probe.is_kjudge(static_cast<unsigned>(other)));
}

}  // namespace
}  // namespace kj::runner
