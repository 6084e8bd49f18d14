// The process-wide native state the harness keeps to the candidate's calls: threads' CPU
// affinity found off the process's and put back, the OpenMP binding that leaves it alone, and
// glibc's malloc tunables (read from the environment, and set back over a candidate's).

#include <kjudge/runner/native_settings.hpp>

#include <fenv.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>

namespace kj::runner {
namespace {

int this_thread_id() {
  return static_cast<int>(::syscall(SYS_gettid));
}

/** A thread that waits until told to end, and says its id. */
class parked_thread {
 public:
  parked_thread()
      : m_thread([this] {
          m_tid = this_thread_id();
          while (!m_stop) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }) {
    while (m_tid == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~parked_thread() {
    m_stop = true;
    m_thread.join();
  }
  parked_thread(const parked_thread&) = delete;
  parked_thread& operator=(const parked_thread&) = delete;
  [[nodiscard]] int tid() const { return m_tid; }

 private:
  std::atomic<int> m_tid{0};
  std::atomic<bool> m_stop{false};
  std::thread m_thread;
};

TEST(NativeSettings, APinnedThreadIsFoundAndPutBackAndPinnedAgainOnRequest) {
  const cpu_list usual = thread_cpus();
  ASSERT_FALSE(usual.empty());
  if (usual.size() < 2) GTEST_SKIP() << "one CPU: no affinity narrower than the process's";
  parked_thread t;
  EXPECT_TRUE(threads_off(usual).empty());
  const std::vector<std::pair<int, cpu_list>> pinned{{t.tid(), {usual.front()}}};
  EXPECT_EQ(set_threads(pinned, usual), 0U);
  EXPECT_EQ(threads_off(usual), pinned);
  EXPECT_EQ(thread_cpus(t.tid()), cpu_list{usual.front()});
  // The reference's turn: every thread back on the process's CPUs.
  EXPECT_EQ(set_threads({}, usual), 0U);
  EXPECT_TRUE(threads_off(usual).empty());
  EXPECT_EQ(thread_cpus(t.tid()), usual);
}

TEST(NativeSettings, TransparentHugePagesAreReadAndSet) {
  const auto was = thp_disabled();
  if (!was) GTEST_SKIP() << "this kernel does not say whether huge pages are off";
  EXPECT_TRUE(set_thp_disabled(1));
  EXPECT_EQ(thp_disabled(), 1);
  EXPECT_TRUE(set_thp_disabled(0));
  EXPECT_EQ(thp_disabled(), 0);
  EXPECT_TRUE(set_thp_disabled(*was));
}

TEST(NativeSettings, AnOpenMpBindingInTheEnvironmentIsSeen) {
  auto env_of = [](std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](const char* name) -> const char* {
      const auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  };
  EXPECT_FALSE(openmp_binds_threads(env_of({})));
  EXPECT_FALSE(openmp_binds_threads(env_of({{"OMP_PROC_BIND", "FALSE"}})));
  EXPECT_FALSE(openmp_binds_threads(env_of({{"OMP_PROC_BIND", ""}})));
  EXPECT_TRUE(openmp_binds_threads(env_of({{"OMP_PROC_BIND", "close"}})));
  EXPECT_TRUE(openmp_binds_threads(env_of({{"OMP_PLACES", "cores"}})));
  EXPECT_TRUE(openmp_binds_threads(env_of({{"GOMP_CPU_AFFINITY", "0-3"}})));
  EXPECT_TRUE(openmp_binds_threads(env_of({{"KMP_AFFINITY", "compact"}})));
  EXPECT_FALSE(openmp_binds_threads(env_of({{"KMP_AFFINITY", "none"}})));
  EXPECT_FALSE(openmp_binds_threads(env_of({{"KMP_AFFINITY", "disabled"}})));
  // OMP_PROC_BIND=false binds nothing, places or not.
  EXPECT_FALSE(openmp_binds_threads(env_of({{"OMP_PROC_BIND", "false"}, {"OMP_PLACES", "cores"}})));
}

TEST(NativeSettings, TheAllocatorTunablesTakeTheEnvironmentsValues) {
  auto env_of = [](std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](const char* name) -> const char* {
      const auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  };
  const allocator_tunables d = allocator_tunables_from(env_of({}));
  EXPECT_EQ(d.mmap_threshold, 32L << 20);
  EXPECT_EQ(d.trim_threshold, 64L << 20);
  EXPECT_EQ(d.top_pad, 128L << 10);
  EXPECT_EQ(d.mxfast, 128);
  EXPECT_EQ(d.perturb, 0);
  const allocator_tunables e = allocator_tunables_from(
      env_of({{"MALLOC_MMAP_THRESHOLD_", "0x100000"},
              {"MALLOC_PERTURB_", "x"},   // not a number: ignored
              {"MALLOC_TOP_PAD_", "-5"},  // negative: ignored
              {"GLIBC_TUNABLES",
               "glibc.malloc.trim_threshold=4096:glibc.malloc.mxfast=0:"
               "glibc.malloc.tcache_count=0:bad:glibc.malloc.perturb=abc"}}));
  EXPECT_EQ(e.mmap_threshold, 1048576);
  EXPECT_EQ(e.trim_threshold, 4096);
  EXPECT_EQ(e.mxfast, 0);
  EXPECT_EQ(e.top_pad, 128L << 10);
  EXPECT_EQ(e.perturb, 0);
}

#if defined(__SANITIZE_ADDRESS__)
#define KJ_SANITIZED_HEAP 1  // ASan's allocator replaces glibc's (its mallopt does nothing)
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KJ_SANITIZED_HEAP 1
#endif
#endif

#if defined(__GLIBC__) && !defined(KJ_SANITIZED_HEAP)
#if __GLIBC_PREREQ(2, 33)
TEST(NativeSettings, TheAllocatorTunablesUndoALowMmapThreshold) {
  constexpr std::size_t block = 4 << 20;
  auto mapped_by = [&] {
    const auto before = static_cast<long>(mallinfo2().hblks);
    void* p = std::malloc(block);
    static_cast<volatile char*>(p)[0] = 1;  // used: the pair is not optimised away
    const auto during = static_cast<long>(mallinfo2().hblks);
    std::free(p);
    return during - before;
  };
  // As a candidate's ctypes calls did: the heap trimmed at every free, and every block of 64 KiB
  // and more that it cannot hold a fresh mapping.
  ASSERT_EQ(mallopt(M_MMAP_THRESHOLD, 64 << 10), 1);
  ASSERT_EQ(mallopt(M_TRIM_THRESHOLD, 0), 1);
  malloc_trim(0);  // as the next free into the heap's top does
  EXPECT_EQ(mapped_by(), 1);
  EXPECT_TRUE(apply_allocator_tunables(allocator_tunables{}));
  EXPECT_EQ(mapped_by(), 0);
}
#endif
#endif

void count_signal(int /*signal*/) {}

TEST(NativeSettings, AHandlerSetFromCIsFoundAndPutBack) {
  const auto before = signal_actions();
  auto handler_of = [](const std::vector<signal_action>& all, int s) -> std::uintptr_t {
    const auto it =
        std::find_if(all.begin(), all.end(), [s](const signal_action& a) { return a.signal == s; });
    return it == all.end() ? 0 : it->handler;
  };
  ASSERT_EQ(handler_of(before, SIGRTMAX), 0U) << "SIGRTMAX already had a handler";
  struct sigaction act {};
  act.sa_handler = count_signal;
  act.sa_flags = SA_RESTART;
  ::sigemptyset(&act.sa_mask);
  ::sigaddset(&act.sa_mask, SIGUSR2);
  ASSERT_EQ(::sigaction(SIGRTMAX, &act, nullptr), 0);
  const auto changed = signal_actions();
  EXPECT_EQ(handler_of(changed, SIGRTMAX), reinterpret_cast<std::uintptr_t>(&count_signal));
  const auto it = std::find_if(changed.begin(), changed.end(),
                               [](const signal_action& a) { return a.signal == SIGRTMAX; });
  ASSERT_NE(it, changed.end());
  EXPECT_EQ(it->flags, SA_RESTART);
  EXPECT_EQ(it->mask, std::uint64_t{1} << (SIGUSR2 - 1));
  EXPECT_NE(changed, before);

  EXPECT_EQ(set_signal_actions(before), 0U);
  EXPECT_EQ(signal_actions(), before);
  EXPECT_EQ(set_signal_actions(changed), 0U);  // and the changed one again, as it was
  EXPECT_EQ(signal_actions(), changed);
  EXPECT_EQ(set_signal_actions(before), 0U);
  EXPECT_EQ(signal_actions(), before);
}

TEST(NativeSettings, TheEnvironmentIsReadAndSetBack) {
  const auto before = environment();
  ASSERT_EQ(::setenv("KJ_TEST_ADDED", "1", 1), 0);
  ASSERT_EQ(::setenv("KJ_TEST_CHANGED", "before", 1), 0);
  const auto with = environment();
  ASSERT_EQ(::setenv("KJ_TEST_CHANGED", "after", 1), 0);
  ASSERT_EQ(::setenv("KJ_TEST_OTHER", "x=y", 1), 0);
  ASSERT_EQ(::unsetenv("KJ_TEST_ADDED"), 0);

  EXPECT_EQ(set_environment(with), 0U);
  auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(sorted(environment()), sorted(with));
  EXPECT_STREQ(std::getenv("KJ_TEST_CHANGED"), "before");
  EXPECT_STREQ(std::getenv("KJ_TEST_ADDED"), "1");
  EXPECT_EQ(std::getenv("KJ_TEST_OTHER"), nullptr);
  EXPECT_EQ(set_environment(before), 0U);
  EXPECT_EQ(sorted(environment()), sorted(before));
  EXPECT_EQ(set_environment({"no equals sign"}), 1U);  // refused, and everything else removed
  EXPECT_EQ(set_environment(before), 0U);
}

TEST(NativeSettings, TheRoundingModeIsReadAndSetBack) {
  const unsigned before = fp_control();
  ASSERT_EQ(::fesetround(FE_UPWARD), 0);
  const unsigned upward = fp_control();
  EXPECT_NE(upward, before);
  EXPECT_TRUE(set_fp_control(before));
  EXPECT_EQ(::fegetround(), FE_TONEAREST);
  EXPECT_EQ(fp_control(), before);
  EXPECT_TRUE(set_fp_control(upward));
  EXPECT_EQ(::fegetround(), FE_UPWARD);
  EXPECT_TRUE(set_fp_control(before));
}

}  // namespace
}  // namespace kj::runner
