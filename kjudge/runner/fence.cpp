#include <kjudge/runner/fence.hpp>

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/sockios.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace kj::runner {

std::vector<fenced_process> ancestry(pid_t pid) {
  std::vector<fenced_process> out;
  for (int hops = 0; pid > 0 && hops < 4096; ++hops) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
    const auto close = text.rfind(')');
    if (close == std::string::npos) break;
    std::istringstream rest(text.substr(close + 1));
    char state = 0;
    long parent = -1, group = -1;
    if (!(rest >> state >> parent >> group)) break;
    fenced_process p{pid, static_cast<pid_t>(group), {}};
    std::error_code ec;
    for (std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/task", ec), end;
         !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos)
        p.threads.push_back(static_cast<pid_t>(std::stol(name)));
    }
    out.push_back(std::move(p));
    if (pid == 1) break;
    pid = static_cast<pid_t>(parent);  // 0: the parent is outside this pid namespace
  }
  return out;
}

namespace {

/** /dev/userfaultfd's ioctl that makes a userfaultfd (USERFAULTFD_IOC_NEW, _IO(0xAA, 0x00);
 *  Linux 6.1's header, spelled out for older ones). */
constexpr std::uint32_t k_userfaultfd_ioc_new = _IO(0xAA, 0x00);

#if defined(__x86_64__)
constexpr std::uint32_t k_arch = AUDIT_ARCH_X86_64;
constexpr std::uint32_t k_x32_bit = 0x40000000U;  // __X32_SYSCALL_BIT: x32's numbers
#elif defined(__aarch64__)
constexpr std::uint32_t k_arch = AUDIT_ARCH_AARCH64;
constexpr std::uint32_t k_x32_bit = 0;
#else
constexpr std::uint32_t k_arch = 0;  // not known: no fence
constexpr std::uint32_t k_x32_bit = 0;
#endif

constexpr std::uint32_t k_allow = SECCOMP_RET_ALLOW;
constexpr std::uint32_t k_eperm = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
constexpr std::uint32_t k_enosys = SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA);

/** The low 32 bits of argument i (little-endian: where every argument the fence reads lives,
 *  as the kernel reads an int or unsigned int argument). */
constexpr std::uint32_t arg_low(int i) {
  return static_cast<std::uint32_t>(offsetof(seccomp_data, args) + 8 * i);
}

/** A block of instructions whose conditional jumps go to returns `allow` and `deny` placed
 *  after at most k_reach instructions (a conditional jump's offset has 8 bits): every k_reach
 *  instructions a pair of them is put in, jumped over. */
class block {
 public:
  void load(std::uint32_t offset) {
    m_code.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset));
    reach();
  }
  /** If the accumulator equals k: return EPERM (deny) or allow. */
  void if_equal(std::uint32_t k, bool deny) {
    m_jumps.push_back({m_code.size(), k, deny});
    m_code.push_back({});
    reach();
  }
  [[nodiscard]] std::vector<sock_filter> finish(std::uint32_t fallthrough) {
    m_code.push_back(BPF_STMT(BPF_RET | BPF_K, fallthrough));
    returns();
    return std::move(m_code);
  }

 private:
  static constexpr std::size_t k_reach = 240;
  void reach() {
    if (m_jumps.empty() || m_code.size() - m_jumps.front().at < k_reach) return;
    m_code.push_back(BPF_STMT(BPF_JMP | BPF_JA | BPF_K, 2));  // over the two returns
    returns();
  }
  /** The two returns, here, and the pending jumps patched to them. */
  void returns() {
    const std::size_t allow = m_code.size(), deny = allow + 1;
    m_code.push_back(BPF_STMT(BPF_RET | BPF_K, k_allow));
    m_code.push_back(BPF_STMT(BPF_RET | BPF_K, k_eperm));
    for (const auto& j : m_jumps)
      m_code[j.at] = BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, j.k,
                              static_cast<std::uint8_t>((j.deny ? deny : allow) - j.at - 1), 0);
    m_jumps.clear();
  }
  struct jump {
    std::size_t at;
    std::uint32_t k;
    bool deny;
  };
  std::vector<sock_filter> m_code;
  std::vector<jump> m_jumps;
};

struct targets {
  std::vector<std::uint32_t> pids;    ///< as the low 32 bits of a pid argument
  std::vector<std::uint32_t> groups;  ///< -pgid, likewise
};

/** A signal-sending call: `pid_arg` names the target (kill's convention: 0 the caller's group,
 *  -1 everyone, below -1 a group), `sig_arg` the signal. */
std::vector<sock_filter> signal_block(const targets& t, int pid_arg, int sig_arg) {
  block b;
  b.load(arg_low(sig_arg));
  b.if_equal(0, false);  // only a check that the target exists
  for (const int stop : {SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU}) b.if_equal(stop, true);
  b.load(arg_low(pid_arg));
  b.if_equal(0xFFFFFFFFU, true);  // -1: every process the caller may signal
  for (const auto p : t.pids) b.if_equal(p, true);
  for (const auto g : t.groups) b.if_equal(g, true);
  return b.finish(k_allow);
}

/** A call whose argument `arg` must not be one of `values`. */
std::vector<sock_filter> deny_values_block(int arg, const std::vector<std::uint32_t>& values) {
  block b;
  b.load(arg_low(arg));
  for (const auto v : values) b.if_equal(v, true);
  return b.finish(k_allow);
}

/** Appends: if the syscall number (in the accumulator) is `nr`, run `body` (which ends in a
 *  return), else jump over it (an unconditional jump: its offset has 32 bits). */
void add_rule(std::vector<sock_filter>& code, long nr, const std::vector<sock_filter>& body) {
  code.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(nr), 1, 0));
  code.push_back(BPF_STMT(BPF_JMP | BPF_JA | BPF_K, static_cast<std::uint32_t>(body.size())));
  code.insert(code.end(), body.begin(), body.end());
}

void add_deny(std::vector<sock_filter>& code, long nr) {
  add_rule(code, nr, {BPF_STMT(BPF_RET | BPF_K, k_eperm)});
}

}  // namespace

std::vector<std::uint64_t> fence_program(const std::vector<fenced_process>& keep, pid_t own_group) {
  if (k_arch == 0) return {};
  targets t;
  for (const auto& p : keep) {
    if (p.pid > 0) t.pids.push_back(static_cast<std::uint32_t>(p.pid));
    // kill() and prlimit64 take any thread's id for its process.
    for (const pid_t tid : p.threads)
      if (tid > 0) t.pids.push_back(static_cast<std::uint32_t>(tid));
    if (p.group > 0 && p.group != own_group)
      t.groups.push_back(static_cast<std::uint32_t>(-static_cast<std::int64_t>(p.group)));
  }
  for (auto* v : {&t.pids, &t.groups}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }

  std::vector<sock_filter> code;
  code.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  code.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k_arch, 1, 0));
  code.push_back(BPF_STMT(BPF_RET | BPF_K, k_enosys));
  code.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
  if (k_x32_bit != 0) {
    code.push_back(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, k_x32_bit, 0, 1));
    code.push_back(BPF_STMT(BPF_RET | BPF_K, k_enosys));
  }
  add_rule(code, SYS_kill, signal_block(t, 0, 1));
  add_rule(code, SYS_rt_sigqueueinfo, signal_block(t, 0, 1));
  // tgkill(tgid, tid, sig): the process is the tgid (a positive pid; -1 and groups are invalid).
  add_rule(code, SYS_tgkill, signal_block(t, 0, 2));
  add_rule(code, SYS_rt_tgsigqueueinfo, signal_block(t, 0, 2));
  add_deny(code, SYS_tkill);
  add_deny(code, SYS_ptrace);
  add_deny(code, SYS_process_vm_readv);
  add_deny(code, SYS_process_vm_writev);
#ifdef SYS_pidfd_send_signal
  add_deny(code, SYS_pidfd_send_signal);
#endif
#ifdef SYS_pidfd_getfd
  add_deny(code, SYS_pidfd_getfd);
#endif
#ifdef SYS_process_madvise
  add_deny(code, SYS_process_madvise);
#endif
#ifdef SYS_userfaultfd
  add_deny(code, SYS_userfaultfd);
#endif
  add_rule(code, SYS_fcntl, deny_values_block(1, {F_SETOWN, F_SETOWN_EX}));
  add_rule(code, SYS_ioctl,
           deny_values_block(1, {static_cast<std::uint32_t>(FIOSETOWN),
                                 static_cast<std::uint32_t>(SIOCSPGRP), k_userfaultfd_ioc_new}));
  add_rule(code, SYS_prlimit64, deny_values_block(0, t.pids));
  code.push_back(BPF_STMT(BPF_RET | BPF_K, k_allow));
  // The kernel's limit (BPF_MAXINSNS): four signal blocks and prlimit64's hold every id, about
  // 800 processes' and threads' ids in all.
  if (code.size() > BPF_MAXINSNS) return {};

  std::vector<std::uint64_t> out(code.size());
  static_assert(sizeof(sock_filter) == sizeof(std::uint64_t));
  std::memcpy(out.data(), code.data(), code.size() * sizeof(sock_filter));
  return out;
}

std::string install_fence(const std::vector<fenced_process>& keep) {
  std::vector<std::uint64_t> words = fence_program(keep, ::getpgrp());
  if (words.empty()) return "the fence does not know this architecture";
  std::vector<sock_filter> code(words.size());
  std::memcpy(code.data(), words.data(), words.size() * sizeof(sock_filter));
  sock_fprog program{static_cast<unsigned short>(code.size()), code.data()};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return std::string("prctl(PR_SET_NO_NEW_PRIVS): ") + std::strerror(errno);
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program) != 0)
    return std::string("seccomp(SECCOMP_SET_MODE_FILTER): ") + std::strerror(errno);
  return {};
}

bool set_not_dumpable(bool not_dumpable) {
  return ::prctl(PR_SET_DUMPABLE, not_dumpable ? 0 : 1, 0, 0, 0) == 0;
}

signals_blocked::signals_blocked() {
  sigset_t all;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, &m_before);
}

signals_blocked::~signals_blocked() {
  ::pthread_sigmask(SIG_SETMASK, &m_before, nullptr);
}

}  // namespace kj::runner
