#pragma once
/** @file What an evaluation's worker (and every process it starts) may not do to the processes
 *  around it. A candidate runs as the same user as `kjudge eval`, so without a fence its code
 *  could stop or kill the evaluation that judges it (SIGSTOP to `kjudge eval`: no timeout, no
 *  result), stop the worker from a child of its own while the reference is timed (a stopped
 *  thread neither runs nor waits for a CPU, so nothing saw it: 2.5-2.8x for an exact copy), or
 *  read and write another process's memory (ptrace, process_vm_writev).
 *
 *  The fence is a seccomp filter (Linux; no_new_privs), installed by the worker before any
 *  problem or candidate code runs, inherited by every process started from it and never
 *  removed. It answers EPERM to:
 *  - stop signals (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU), to any process;
 *  - any signal to a protected process (kill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo), to a
 *    protected process's group, or to every process (kill(-1, ...)); signal 0 (a check that a
 *    process exists) stays allowed;
 *  - tkill and pidfd_send_signal (their target cannot be checked: a thread id of a protected
 *    process, a pidfd opened from /proc), ptrace, process_vm_readv/writev, pidfd_getfd and
 *    process_madvise;
 *  - making a process a descriptor's owner for SIGIO (fcntl F_SETOWN, F_SETOWN_EX; ioctl
 *    FIOSETOWN, SIOCSPGRP), refused whatever the process (its own too: the owner's pid is not
 *    told from a protected one's by a filter on every thread's calls), since another would
 *    be signalled by the kernel;
 *  - prlimit64 on a protected process (an open-files limit of 0 in `kjudge eval`, say);
 *  - userfaultfd (the system call, and /dev/userfaultfd's USERFAULTFD_IOC_NEW): memory whose
 *    pages a thread of the candidate's fills when they are first read would let a forward
 *    return outputs it never computed, computed only when kjudge reads them, outside every
 *    timed region (kjudge reads outputs with every signal blocked, so a SIGSEGV handler cannot
 *    do the same: signals_blocked below).
 *  System calls of another ABI than the process's own (x86's int 0x80 and x32) get ENOSYS.
 *  The protected processes are the worker's ancestors and `kjudge eval`'s (the worker forked
 *  by a pool is not its child), each with its process group unless that group is the worker's
 *  own. Reading another process's memory through /proc/<pid>/mem is not a system call the
 *  filter can tell apart; kjudge's own processes that a candidate must not reach that way make
 *  themselves non-dumpable (set_not_dumpable). */

#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kj::runner {

/** A process the fence protects, its process group and its threads' ids (kill() and
 *  prlimit64 take any of them for the process). */
struct fenced_process {
  pid_t pid = 0;
  pid_t group = 0;
  std::vector<pid_t> threads;  ///< as they were when it was read
};

/** `pid` and its ancestors (from /proc/<pid>/stat and /proc/<pid>/task), nearest first, up to
 *  and including pid 1 (or the last one visible in this pid namespace). Empty where `pid`
 *  cannot be read. A thread a protected process starts after this is not protected. */
[[nodiscard]] std::vector<fenced_process> ancestry(pid_t pid);

/** The filter's program for this process's architecture: the protected processes (their pids,
 *  threads' ids and groups; `own_group`, the caller's group, is left out of the groups, so a
 *  process may still signal its own group) as classic BPF instructions (struct sock_filter, 8
 *  bytes each). Empty on an architecture the fence does not know, or where the ids are too
 *  many for the kernel's 4096 instructions (about 800). */
[[nodiscard]] std::vector<std::uint64_t> fence_program(const std::vector<fenced_process>& keep,
                                                       pid_t own_group);

/** Installs the fence in the calling process (every thread: SECCOMP_FILTER_FLAG_TSYNC) for
 *  `keep`. Returns "" or why it could not (the kernel has no seccomp filters, the architecture
 *  is not known); the caller decides whether to go on unfenced. */
[[nodiscard]] std::string install_fence(const std::vector<fenced_process>& keep);

/** Makes the calling process non-dumpable (PR_SET_DUMPABLE 0): processes of the same user can
 *  no longer attach to it, read or write its memory through /proc/<pid>/mem, or take its
 *  descriptors. Inherited by fork, reset by execve. False where the kernel refused. */
bool set_not_dumpable(bool not_dumpable = true);

/** While it lives, every signal that can be blocked is blocked on the thread that made it
 *  (pthread_sigmask), so that no handler runs on that thread: kjudge reads the memory a
 *  candidate hands over (a Python candidate's CPU outputs) under one. A page there that the
 *  candidate left unreadable (mprotect, a protection key) then ends the process with SIGSEGV,
 *  as the kernel ends a synchronous fault whose signal is blocked, where a handler of the
 *  candidate's would have computed what the page holds and let the read go on: outputs computed
 *  when kjudge reads them, not in the call that returned them (with the fence's refusal of
 *  userfaultfd, which needs no signal). The worker's thread also keeps one while it times and
 *  checks the timed calls (eval/worker.cpp): no handler of the candidate's runs there between a
 *  call and kjudge's copy of its outputs. SIGKILL and SIGSTOP cannot be blocked. */
class signals_blocked {
 public:
  signals_blocked();
  ~signals_blocked();
  signals_blocked(const signals_blocked&) = delete;
  signals_blocked& operator=(const signals_blocked&) = delete;

 private:
  sigset_t m_before{};
};

}  // namespace kj::runner
