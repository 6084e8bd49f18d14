// The waits for a CPU (cpu_wait_monitor) and what the timing engine does with samples that
// waited: busy processes pinned to this process's CPU make the waits, so the tests do not hang
// on how loaded the machine is otherwise.

#include <gtest/gtest.h>

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <numeric>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <kjudge/measure/cpu_wait.hpp>
#include <kjudge/measure/timing.hpp>

namespace {

using kj::measure::detail::cpu_wait_monitor;
using kj::measure::detail::cpu_wait_window;
using kj::measure::detail::waited_for_cpu;
using steady = std::chrono::steady_clock;

void busy_for(std::chrono::microseconds d) {
  const auto until = steady::now() + d;
  while (steady::now() < until) {
  }
}

/** Pins the calling thread (and what it starts from now on) to one CPU, the one it runs on, and
 *  puts the old affinity back when it goes. */
class pinned {
 public:
  pinned() {
    sched_getaffinity(0, sizeof m_old, &m_old);
    const int cpu = sched_getcpu();
    m_cpu = cpu < 0 ? 0 : cpu;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(m_cpu, &one);
    m_ok = sched_setaffinity(0, sizeof one, &one) == 0;
  }
  ~pinned() { sched_setaffinity(0, sizeof m_old, &m_old); }
  pinned(const pinned&) = delete;
  pinned& operator=(const pinned&) = delete;
  [[nodiscard]] bool ok() const noexcept { return m_ok; }

 private:
  cpu_set_t m_old{};
  int m_cpu = 0;
  bool m_ok = false;
};

/** Busy child processes on the calling thread's CPU (forked from a pinned thread, they inherit
 *  its affinity), started stopped or running; killed when it goes. */
class hogs {
 public:
  hogs(int n, bool running) {
    for (int i = 0; i < n; ++i) {
      const pid_t pid = fork();
      if (pid == 0) {
        for (;;) asm volatile("");
      }
      if (pid > 0) {
        m_pids.push_back(pid);
        if (!running) kill(pid, SIGSTOP);
      }
    }
  }
  ~hogs() {
    for (const pid_t p : m_pids) {
      kill(p, SIGKILL);
      waitpid(p, nullptr, 0);
    }
  }
  hogs(const hogs&) = delete;
  hogs& operator=(const hogs&) = delete;
  void run(bool on) {
    for (const pid_t p : m_pids) kill(p, on ? SIGCONT : SIGSTOP);
  }
  [[nodiscard]] std::size_t size() const noexcept { return m_pids.size(); }

 private:
  std::vector<pid_t> m_pids;
};

TEST(CpuWait, ASampleWaitedWhereItsWaitReachesTheFloorAndTheFractionWithCpusFreeOfItsOwn) {
  using kj::measure::detail::long_wait;
  static_assert(!long_wait(5.0, 49.0));        // under the floor: a wake-up
  static_assert(long_wait(5.0, 50.0));         // a 5 us call that waited 50 us
  static_assert(long_wait(10000.0, 5000.0));   // half of a 10 ms call
  static_assert(!long_wait(10000.0, 4999.0));  // under half of it: kept, its share said
  // Others had the CPUs (the process kept 0.4 of its 2 busy): discarded.
  static_assert(waited_for_cpu(5.0, {.wait_us = 4000, .own_cpus = 0.4}, 2));
  // Its own threads kept both of its CPUs busy: its own oversubscription, kept.
  static_assert(!waited_for_cpu(5.0, {.wait_us = 4000, .own_cpus = 1.95}, 2));
  static_assert(waited_for_cpu(5.0, {.wait_us = 4000, .own_cpus = 1.85}, 2));
  static_assert(waited_for_cpu(5.0, {.wait_us = 4000, .own_cpus = 0.9}, 1));  // 10% others'
  static_assert(!waited_for_cpu(5.0, {.wait_us = 4000, .own_cpus = 0.97}, 1));
  static_assert(!waited_for_cpu(5.0, {.wait_us = 40, .own_cpus = 0.4}, 2));
  EXPECT_EQ(kj::measure::detail::cpu_wait_floor_us, 50.0);
}

TEST(CpuWait, NoWindowNoFigure) {
  cpu_wait_monitor m(cpu_wait_monitor::scope::process);
  if (!m.available()) GTEST_SKIP() << m.unavailable_reason();
  EXPECT_FALSE(m.end().has_value());  // no start()
  m.start();
  const auto w = m.end();
  ASSERT_TRUE(w.has_value());
  EXPECT_GE(w->wait_us, 0.0);
  EXPECT_GE(w->own_cpus, 0.0);
  EXPECT_GE(m.cpus(), 1);
  EXPECT_FALSE(m.end().has_value());  // a window is read once
}

TEST(CpuWait, TheTimingThreadSharingItsCpuWithBusyProcessesIsSeenWaiting) {
  pinned pin;
  ASSERT_TRUE(pin.ok());
  cpu_wait_monitor self(cpu_wait_monitor::scope::this_thread);
  if (!self.available()) GTEST_SKIP() << self.unavailable_reason();
  hogs busy(2, true);
  ASSERT_EQ(busy.size(), 2u);
  self.start();
  const auto t0 = steady::now();
  busy_for(std::chrono::milliseconds(150));
  const double wall_us = std::chrono::duration<double, std::micro>(steady::now() - t0).count();
  const auto w = self.end();
  ASSERT_TRUE(w.has_value());
  // Three runnable on one CPU: this thread ran about a third of the time and waited the rest,
  // the CPU the others'.
  EXPECT_GT(w->wait_us, 0.3 * wall_us) << "waited " << w->wait_us << " us of " << wall_us;
  EXPECT_LE(w->wait_us, wall_us * 1.05 + 20000);
  EXPECT_EQ(self.cpus(), 1);
  EXPECT_LT(w->own_cpus, 0.5);
  EXPECT_TRUE(waited_for_cpu(wall_us, *w, self.cpus()));
}

/** A window of `self` over 150 ms of busy work on this thread. */
cpu_wait_window busy_window(cpu_wait_monitor& self, double& wall_us) {
  self.start();
  const auto t0 = steady::now();
  busy_for(std::chrono::milliseconds(150));
  wall_us = std::chrono::duration<double, std::micro>(steady::now() - t0).count();
  const auto w = self.end();
  return w.value_or(cpu_wait_window{});
}

TEST(CpuWait, WaitsTheProcessMakesItselfAreToldFromOthersByItsOwnShareOfItsCpu) {
  // On one CPU, the timed thread beside two busy threads of its own (a candidate with more
  // threads than cores) and beside two busy processes: it waits about as long either way, but
  // only in the first did the process keep its CPU busy itself. On a quiet machine the first
  // window's share is all of the CPU, and its sample stays; tests running beside this one on the
  // same CPU take part of both shares, which keep their order.
  pinned pin;
  ASSERT_TRUE(pin.ok());
  cpu_wait_monitor self(cpu_wait_monitor::scope::this_thread);
  if (!self.available()) GTEST_SKIP() << self.unavailable_reason();
  std::atomic<bool> stop{false};
  std::vector<std::thread> own;
  for (int i = 0; i < 2; ++i)
    own.emplace_back([&stop] {
      while (!stop) {
      }
    });
  double own_wall_us = 0;
  const cpu_wait_window by_own = busy_window(self, own_wall_us);
  stop = true;
  for (auto& t : own) t.join();
  hogs busy(2, true);
  double other_wall_us = 0;
  const cpu_wait_window by_others = busy_window(self, other_wall_us);
  EXPECT_GT(by_own.wait_us, 0.3 * own_wall_us) << by_own.wait_us << " us of " << own_wall_us;
  EXPECT_GT(by_others.wait_us, 0.3 * other_wall_us)
      << by_others.wait_us << " us of " << other_wall_us;
  EXPECT_GT(by_own.own_cpus, by_others.own_cpus + 0.2)
      << by_own.own_cpus << " against " << by_others.own_cpus;
  EXPECT_TRUE(waited_for_cpu(other_wall_us, by_others, self.cpus()));
  if (by_own.own_cpus >= kj::measure::detail::cpu_wait_own_share) {
    EXPECT_FALSE(waited_for_cpu(own_wall_us, by_own, self.cpus()));
  }
}

TEST(CpuWait, EveryThreadOfTheProcessCountsAThreadStartedInTheWindowFromZero) {
  pinned pin;
  ASSERT_TRUE(pin.ok());
  cpu_wait_monitor all(cpu_wait_monitor::scope::process);
  cpu_wait_monitor self(cpu_wait_monitor::scope::this_thread);
  if (!all.available()) GTEST_SKIP() << all.unavailable_reason();
  hogs busy(2, true);
  all.start();
  self.start();
  // The work on a thread of its own (as torch's intra-op threads do a CPU forward's), started
  // in the window and pinned with the busy processes; this thread sleeps meanwhile. The thread
  // lives on past the window's end, as a thread pool's do: one that ends within it is left out.
  std::atomic<bool> worked{false}, read{false};
  std::thread worker([&] {
    busy_for(std::chrono::milliseconds(150));
    worked = true;
    while (!read) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (!worked) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const auto w_all = all.end();
  const auto w_self = self.end();
  read = true;
  worker.join();
  ASSERT_TRUE(w_all && w_self);
  // The longest wait of one thread: the worker's, which shared the CPU with two busy processes
  // for 150 ms (this thread slept, and waits only to wake).
  EXPECT_GT(w_all->wait_us, 40000.0) << "the worker thread's waits";
  EXPECT_GT(w_all->wait_us, w_self->wait_us + 20000.0)
      << "this thread's " << w_self->wait_us << " us against " << w_all->wait_us;
}

/** Busy-waits `d` a call, its busy processes let run during its own calls only. */
class contended_target : public kj::measure::target {
 public:
  contended_target(std::string name, std::chrono::microseconds d, hogs* busy)
      : m_name(std::move(name)), m_d(d), m_busy(busy) {}
  void prepare(std::size_t) override {}
  void run() override {
    if (m_busy != nullptr) m_busy->run(true);
    busy_for(m_d);
    if (m_busy != nullptr) m_busy->run(false);
  }
  [[nodiscard]] std::size_t input_sets() const override { return 1; }
  [[nodiscard]] std::string name() const override { return m_name; }

 private:
  std::string m_name;
  std::chrono::microseconds m_d;
  hogs* m_busy;
};

TEST(CpuWait, TheEngineDiscardsTheReferencesSamplesThatWaitedAndNeverTheCandidates) {
  pinned pin;
  ASSERT_TRUE(pin.ok());
  {
    cpu_wait_monitor probe(cpu_wait_monitor::scope::process);
    if (!probe.available()) GTEST_SKIP() << probe.unavailable_reason();
  }
  hogs busy(2, false);
  kj::measure::timing_options o;
  o.gpu = false;
  o.budget_per_side = kj::seconds(0.4);
  o.min_samples = 20;
  o.warmup_runs = 1;
  o.warmup_min_time = kj::seconds(0.0);
  {
    // The reference's calls share their CPU with two busy processes: most of them wait (2/3 of
    // their time), are discarded and counted, and their rounds are left out of the budget.
    contended_target reference("reference", std::chrono::microseconds(4000), &busy);
    contended_target candidate("candidate", std::chrono::microseconds(4000), nullptr);
    const auto c = kj::measure::time_pair(reference, candidate, nullptr, {}, o);
    EXPECT_TRUE(c.cpu_wait.checked);
    EXPECT_EQ(c.cpu_wait.scope, "worker threads");
    const auto& r = c.reference.host_wall;
    const std::size_t r_taken = r.samples_us.size() + r.discarded_cpu_wait;
    ASSERT_GT(r_taken, 10u);
    EXPECT_GT(r.discarded_cpu_wait, r_taken * 8 / 10) << r.discarded_cpu_wait << " of " << r_taken;
    EXPECT_GE(r.discarded_cpu_wait_max_us, 1000.0);
    EXPECT_GT(c.reference.cpu_wait_s, 0.0);
    EXPECT_EQ(c.candidate.host_wall.discarded_cpu_wait, 0u);
    EXPECT_FALSE(std::isnan(c.candidate.host_wall.cpu_wait_max_us));  // read all the same
  }
  {
    // The candidate's calls share it: none is discarded (a candidate could make its own threads
    // wait, and so choose which of its samples go); its waits stay in its figure and are said.
    contended_target reference("reference", std::chrono::microseconds(4000), nullptr);
    contended_target candidate("candidate", std::chrono::microseconds(4000), &busy);
    const auto c = kj::measure::time_pair(reference, candidate, nullptr, {}, o);
    const auto& k = c.candidate.host_wall;
    EXPECT_EQ(k.discarded_cpu_wait, 0u);
    ASSERT_FALSE(k.samples_us.empty());
    EXPECT_GT(k.cpu_wait_share_pct, 30.0) << k.cpu_wait_total_us;
    EXPECT_LE(k.cpu_wait_share_pct, 100.0);
    // Each kept sample's wait counts up to its own length (a wait booked in it that began before
    // it does not count whole).
    EXPECT_LE(k.cpu_wait_max_us, *std::max_element(k.samples_us.begin(), k.samples_us.end()));
    EXPECT_LE(k.cpu_wait_total_us, std::accumulate(k.samples_us.begin(), k.samples_us.end(), 0.0));
    EXPECT_EQ(c.candidate.cpu_wait_s, 0.0);
  }
}

}  // namespace
