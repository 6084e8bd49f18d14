#include <kjudge/runner/fence.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace {

using kj::runner::ancestry;
using kj::runner::fenced_process;
using kj::runner::install_fence;

/** errno of a call that returned -1, or 0 where it succeeded. */
int error_of(long rc) {
  return rc == -1 ? errno : 0;
}

/** A child that sleeps in a process group of its own until killed; `threads` more threads
 *  sleep beside its first. Returns once they all run. */
pid_t sleeper(int threads = 0) {
  std::array<int, 2> ready{};
  if (::pipe(ready.data()) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    for (int i = 0; i < threads; ++i)
      std::thread([] {
        while (true) ::pause();
      }).detach();
    (void)!::write(ready[1], "x", 1);
    while (true) ::pause();
  }
  ::setpgid(pid, pid);
  char c = 0;
  (void)!::read(ready[0], &c, 1);
  ::close(ready[0]);
  ::close(ready[1]);
  return pid;
}

/** The ids of `pid`'s threads other than its first. */
std::vector<pid_t> other_threads(pid_t pid) {
  std::vector<pid_t> out;
  const auto chain = ancestry(pid);
  if (chain.empty()) return out;
  for (const pid_t p : chain.front().threads)
    if (p != pid) out.push_back(p);
  return out;
}

void end(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

TEST(fence, AncestryLeadsFromAProcessToTheFirstOne) {
  const auto chain = ancestry(::getpid());
  ASSERT_GE(chain.size(), 2U);
  EXPECT_EQ(chain[0].pid, ::getpid());
  EXPECT_EQ(chain[0].group, ::getpgrp());
  EXPECT_EQ(chain[1].pid, ::getppid());
  const pid_t child = sleeper();
  const auto of_child = ancestry(child);
  ASSERT_GE(of_child.size(), 2U);
  EXPECT_EQ(of_child[0].pid, child);
  EXPECT_EQ(of_child[0].group, child);  // its own group
  EXPECT_EQ(of_child[1].pid, ::getpid());
  end(child);
  EXPECT_TRUE(ancestry(child).empty());  // gone (reaped)
}

/** The checks, each run in a fenced child and reported as one byte: what the call's errno was
 *  against what the fence must make it. */
struct check {
  const char* what;
  int expected;  ///< errno, 0 for success
};

TEST(fence, RefusesStopsSignalsToProtectedProcessesAndReachingIntoThem) {
  // A protected process (as kjudge eval is to the worker), with a second thread: kill() takes
  // a thread's id for its whole process.
  const pid_t keep = sleeper(1);
  const auto keep_threads = other_threads(keep);
  ASSERT_EQ(keep_threads.size(), 1U);
  const pid_t keep_thread = keep_threads[0];
  std::array<int, 2> out{};
  ASSERT_EQ(::pipe(out.data()), 0);
  const std::vector<check> checks = {
      {"kill(protected, SIGKILL)", EPERM},
      {"kill(protected, SIGTERM)", EPERM},
      {"kill(a protected process's second thread, SIGKILL)", EPERM},
      {"prlimit(a protected process's second thread, RLIMIT_NOFILE) (read only)", EPERM},
      {"kill(protected, 0): whether it exists", 0},
      {"kill(-protected's group, SIGKILL)", EPERM},
      {"kill(-1, SIGCONT): every process of the user", EPERM},
      {"tgkill(protected, protected, SIGKILL)", EPERM},
      {"rt_sigqueueinfo(protected, SIGUSR1) (sigqueue)", EPERM},
      {"tkill(own child, SIGKILL)", EPERM},
      {"kill(own child, SIGSTOP)", EPERM},
      {"kill(self, SIGTSTP)", EPERM},
      {"kill(0, SIGTTIN): its own group", EPERM},
      {"kill(own child, SIGKILL)", 0},
      {"kill(0, SIGCONT): its own group", 0},
      {"ptrace(PTRACE_ATTACH, protected)", EPERM},
      {"process_vm_readv(protected)", EPERM},
      {"fcntl(F_SETOWN, protected)", EPERM},
      {"fcntl(F_GETOWN)", 0},
      {"prlimit(protected, RLIMIT_NOFILE) (read only)", EPERM},
      {"prlimit(0, RLIMIT_NOFILE) (read only)", 0},
      {"pidfd_send_signal", EPERM},
      {"userfaultfd(UFFD_USER_MODE_ONLY)", EPERM},
      {"ioctl(USERFAULTFD_IOC_NEW) (on a pipe: ENOTTY unfenced)", EPERM},
  };
  const pid_t fenced = ::fork();
  if (fenced == 0) {
    ::close(out[0]);
    ::setpgid(0, 0);  // not the test's group: kill(0, ...) below stays here
    const pid_t own = ::fork();
    if (own == 0) {
      while (true) ::pause();
    }
    auto chain = ancestry(keep);
    if (chain.size() > 1) chain.resize(1);  // keep itself, its threads and its group
    const std::string why = chain.empty() ? std::string("no /proc entry for the protected process")
                                          : install_fence(chain);
    if (!why.empty()) {
      (void)!::write(out[1], why.data(), why.size());
      ::kill(own, SIGKILL);
      ::_exit(2);
    }
    std::vector<unsigned char> got;
    const auto put = [&](long rc) { got.push_back(static_cast<unsigned char>(error_of(rc))); };
    put(::kill(keep, SIGKILL));
    put(::kill(keep, SIGTERM));
    put(::kill(keep_thread, SIGKILL));
    {
      rlimit l{};
      put(::prlimit(keep_thread, RLIMIT_NOFILE, nullptr, &l));
    }
    put(::kill(keep, 0));
    put(::kill(-keep, SIGKILL));
    put(::kill(-1, SIGCONT));
    put(::syscall(SYS_tgkill, keep, keep, SIGKILL));
    put(::sigqueue(keep, SIGUSR1, sigval{}));
    put(::syscall(SYS_tkill, own, SIGKILL));
    put(::kill(own, SIGSTOP));
    put(::kill(::getpid(), SIGTSTP));
    put(::kill(0, SIGTTIN));
    const long killed = ::kill(own, SIGKILL);
    put(killed);
    put(::kill(0, SIGCONT));
    const long attached = ::ptrace(PTRACE_ATTACH, keep, nullptr, nullptr);
    if (attached == 0) ::ptrace(PTRACE_DETACH, keep, nullptr, nullptr);
    put(attached);
    char byte = 0;
    iovec local{&byte, 1}, remote{reinterpret_cast<void*>(&byte), 1};
    put(::process_vm_readv(keep, &local, 1, &remote, 1, 0));
    put(::fcntl(out[1], F_SETOWN, keep));
    put(::fcntl(out[1], F_GETOWN) < 0 ? -1 : 0);
    rlimit limit{};
    put(::prlimit(keep, RLIMIT_NOFILE, nullptr, &limit));
    put(::prlimit(0, RLIMIT_NOFILE, nullptr, &limit));
#ifdef SYS_pidfd_send_signal
    put(::syscall(SYS_pidfd_send_signal, 0, SIGKILL, nullptr, 0));
#else
    got.push_back(EPERM);
#endif
#ifdef SYS_userfaultfd
    put(::syscall(SYS_userfaultfd, 1));  // UFFD_USER_MODE_ONLY: open to every user otherwise
#else
    got.push_back(EPERM);
#endif
    put(::ioctl(out[1], _IO(0xAA, 0x00)));
    (void)!::write(out[1], got.data(), got.size());
    ::_exit(killed == 0 ? 0 : 3);
  }
  ::close(out[1]);
  std::string text;
  std::array<char, 256> buffer{};
  for (ssize_t n = 0; (n = ::read(out[0], buffer.data(), buffer.size())) > 0;)
    text.append(buffer.data(), n);
  ::close(out[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(fenced, &status, 0), fenced);
  // The protected process outlived every attempt.
  EXPECT_EQ(::kill(keep, 0), 0);
  end(keep);
  ASSERT_TRUE(WIFEXITED(status)) << "the fenced child ended by signal " << WTERMSIG(status);
  ASSERT_NE(WEXITSTATUS(status), 2) << "no fence: " << text;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  ASSERT_EQ(text.size(), checks.size());
  for (std::size_t i = 0; i < checks.size(); ++i)
    EXPECT_EQ(static_cast<int>(static_cast<unsigned char>(text[i])), checks[i].expected)
        << checks[i].what;
}

TEST(fence, ProtectsTheLastOfManyProcesses) {
  // More ids than a conditional jump reaches (8-bit offsets): the filter puts returns in
  // between. Made-up pids first (above any pid_max), the real one last.
  const pid_t keep = sleeper();
  std::vector<fenced_process> many;
  for (int i = 0; i < 300; ++i) many.push_back({5'000'000 + i, 5'000'000 + i, {}});
  many.push_back({keep, keep, {}});
  const pid_t fenced = ::fork();
  if (fenced == 0) {
    ::setpgid(0, 0);
    if (!install_fence(many).empty()) ::_exit(2);
    const int a = error_of(::kill(keep, SIGKILL)), b = error_of(::kill(-keep, SIGKILL));
    const int c = error_of(::kill(5'000'000, SIGKILL));
    ::_exit(a == EPERM && b == EPERM && c == EPERM ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(fenced, &status, 0), fenced);
  EXPECT_EQ(::kill(keep, 0), 0);
  end(keep);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_NE(WEXITSTATUS(status), 2) << "no fence";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

#if defined(__x86_64__)
TEST(fence, RefusesTheOtherSystemCallAbis) {
  const pid_t fenced = ::fork();
  if (fenced == 0) {
    if (!install_fence({}).empty()) ::_exit(2);
    long rc = 0;
    // getpid through the 32-bit ABI (int 0x80: number 20 there).
    asm volatile("int $0x80" : "=a"(rc) : "a"(20L) : "memory");
    if (rc != -ENOSYS) ::_exit(3);
    // getpid through x32's numbers (bit 30 set).
    rc = ::syscall(0x40000000L | SYS_getpid);
    ::_exit(rc == -1 && errno == ENOSYS ? 0 : 4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(fenced, &status, 0), fenced);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_NE(WEXITSTATUS(status), 2) << "no fence";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: int 0x80 ran; 4: an x32 number ran";
}
#endif

/** The page that on_fault() makes readable and fills with 42 (a candidate's handler that
 *  computes its output when it is first read). */
volatile char* g_unreadable = nullptr;

void on_fault(int /*signo*/) {
  ::mprotect(const_cast<char*>(g_unreadable), 4096, PROT_READ | PROT_WRITE);
  g_unreadable[0] = 42;
}

TEST(fence, AReadWithSignalsBlockedEndsAtAnUnreadablePageInsteadOfRunningAHandler) {
  const pid_t child = ::fork();
  if (child == 0) {
    struct sigaction action {};
    action.sa_handler = on_fault;
    action.sa_flags = SA_NODEFER;
    ::sigaction(SIGSEGV, &action, nullptr);
    const auto unreadable = [] {
      return static_cast<char*>(
          ::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    };
    // Without the guard the handler runs and the read goes on with what it wrote.
    g_unreadable = unreadable();
    if (g_unreadable[0] != 42) ::_exit(3);
    g_unreadable = unreadable();
    {
      const kj::runner::signals_blocked guard;
      (void)g_unreadable[0];  // a synchronous fault with SIGSEGV blocked: the default action
    }
    ::_exit(4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_FALSE(WIFEXITED(status)) << "3: the handler did not fill the page; 4: the guarded read "
                                     "went on";
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
  // The guard puts the thread's mask back as it was.
  sigset_t before, after;
  ::pthread_sigmask(SIG_SETMASK, nullptr, &before);
  { const kj::runner::signals_blocked guard; }
  ::pthread_sigmask(SIG_SETMASK, nullptr, &after);
  for (int s = 1; s < NSIG; ++s) EXPECT_EQ(::sigismember(&before, s), ::sigismember(&after, s));
}

TEST(fence, MakesAProcessNonDumpableAndBack) {
  ASSERT_TRUE(kj::runner::set_not_dumpable());
  EXPECT_EQ(::prctl(PR_GET_DUMPABLE), 0);
  ASSERT_TRUE(kj::runner::set_not_dumpable(false));
  EXPECT_EQ(::prctl(PR_GET_DUMPABLE), 1);
}

}  // namespace
