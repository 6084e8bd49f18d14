#pragma once
/** @file Process-wide native state that a Python candidate can change through ctypes and that
 *  kjudge's reference runs under: the CPU affinity of the worker's threads, the C library
 *  allocator's tunables (mallopt), MKL's thread-local thread count and whether transparent huge
 *  pages are off. None of it is torch's own setting, so the harness's table of torch's settings
 *  did not see it, and the first three slowed the reference's timed calls (an exact copy of the
 *  reference read 1.9-4.8x on the CPU). The harness keeps each to the candidate's calls through
 *  these (docs/methodology.md, "Native state of the worker's process"). Linux only; every
 *  function answers what it could do rather than throwing. */

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kj::runner {

/** CPU numbers, ascending. */
using cpu_list = std::vector<int>;

/** The calling thread's CPU affinity (empty where it cannot be read). */
[[nodiscard]] cpu_list thread_cpus(int tid = 0);

/** Each of this process's threads (/proc/self/task) whose affinity is not `usual`, with its
 *  CPUs, by thread id ascending. Threads that end while they are read are left out. */
[[nodiscard]] std::vector<std::pair<int, cpu_list>> threads_off(const cpu_list& usual);

/** Sets each of this process's threads to its CPUs in `wanted` (thread id -> CPUs; a thread not
 *  in it gets `usual`), where its affinity differs. Returns the number of threads it could not
 *  set (not counting threads that ended meanwhile). */
std::size_t set_threads(const std::vector<std::pair<int, cpu_list>>& wanted, const cpu_list& usual);

/** Whether an environment names an OpenMP binding of threads to CPUs (OMP_PROC_BIND other than
 *  false, OMP_PLACES or GOMP_CPU_AFFINITY unless OMP_PROC_BIND is false, KMP_AFFINITY other than
 *  none or disabled): the runtime's own threads then have affinities of their own, which are not
 *  a candidate's doing. */
[[nodiscard]] bool openmp_binds_threads(const std::function<const char*(const char*)>& env);

/** Whether transparent huge pages are off for this process (prctl PR_GET_THP_DISABLE: 0 or 1);
 *  empty where the kernel cannot say (before Linux 3.15). A process that turns them off takes a
 *  page fault for every 4 KiB of a fresh allocation where the system gives huge pages. */
[[nodiscard]] std::optional<int> thp_disabled();
/** Sets it (PR_SET_THP_DISABLE); false where the kernel refused. */
bool set_thp_disabled(int off);

/** Whether this process is a child subreaper (prctl PR_GET_CHILD_SUBREAPER); nullopt where it
 *  cannot be read. */
[[nodiscard]] std::optional<bool> child_subreaper();
/** Makes it one, or not (PR_SET_CHILD_SUBREAPER); false where the kernel refused. The worker is
 *  one while a Python candidate runs, so that a process its children leave behind (a grandchild
 *  whose parent exited) comes to it, where the harness counts its CPU, not to the guard. */
bool set_child_subreaper(bool on);

/** This process's environment as the C library holds it (what native libraries read with
 *  getenv, at their first use say), "NAME=value" entries in its order. */
[[nodiscard]] std::vector<std::string> environment();
/** Sets the C library's environment to `wanted` ("NAME=value" entries): each variable whose value
 *  differs is set (setenv) and each that `wanted` lacks removed (unsetenv). Returns the number of
 *  entries it could not set (a malformed one among them). */
std::size_t set_environment(const std::vector<std::string>& wanted);

/** A signal's disposition as sigaction(2) reads it: the handler's address (SIG_DFL 0, SIG_IGN 1),
 *  the flags without SA_RESTORER (which the C library adds itself) and the signals 1-64 blocked
 *  while it runs, as bits (bit n - 1 for signal n). */
struct signal_action {
  int signal = 0;
  std::uintptr_t handler = 0;
  int flags = 0;
  std::uint64_t mask = 0;
  friend bool operator==(const signal_action&, const signal_action&) = default;
};

/** Every signal (SIGKILL and SIGSTOP aside) whose disposition is not the default, by number:
 *  handlers set from C (a candidate's sigaction through ctypes) as well as Python's. */
[[nodiscard]] std::vector<signal_action> signal_actions();
/** Gives each signal the disposition `wanted` has for it (one it lacks: the default), where that
 *  differs. Returns the number of signals it could not set. */
std::size_t set_signal_actions(const std::vector<signal_action>& wanted);

/** A function of a library torch's CPU library brings in (OpenMP's runtime, MKL), looked up in
 *  the global scope, then in libtorch_cpu.so and what it loaded (never loaded here); null where
 *  there is none. */
[[nodiscard]] void* torch_cpu_symbol(const char* name);

/** OpenMP's state that decides how many threads a parallel region of the calling thread gets,
 *  beyond its thread count: the nesting limit (omp_get_max_active_levels: 0 runs every region
 *  on one thread) and dynamic adjustment (omp_get_dynamic: libgomp then gives a region the CPUs
 *  less the load average). Empty where the process has no OpenMP runtime. */
struct openmp_state {
  int max_active_levels = 0;
  int dynamic = 0;
  friend bool operator==(const openmp_state&, const openmp_state&) = default;
};
[[nodiscard]] std::optional<openmp_state> openmp();
/** Sets it; false where the runtime is missing or refused. */
bool set_openmp(const openmp_state& s);

/** MKL's thread count for its BLAS domain (mkl_serv_domain_get_max_threads(MKL_DOMAIN_BLAS)),
 *  which mkl_get_max_threads does not show: empty where MKL does not export it. No setter is
 *  exported: a change can be seen, not undone. */
[[nodiscard]] std::optional<int> mkl_blas_threads();

/** The calling thread's floating-point control, beyond flushing subnormals (which
 *  torch.set_flush_denormal sets and the harness reads on its own): the rounding mode
 *  (fegetround) and, on x86-64, SSE's exception masks and rounding bits (MXCSR bits 7-14).
 *  Rounding upward from a candidate's fesetround through ctypes made the next trial's inputs
 *  differ (get_inputs() drew other values for the same seed), blamed on the problem. */
[[nodiscard]] unsigned fp_control();
/** Sets it; false where the C library refused. */
bool set_fp_control(unsigned control);

/** glibc's malloc tunables that change how fast an allocation is (mallopt): the values kjudge's
 *  worker holds in every call of either side. Defaults: the largest values glibc's own dynamic
 *  thresholds reach on a 64-bit system (mmap 32 MiB, trim twice that), as a process that has
 *  freed large blocks has them; glibc's top pad, fast-bin limit, and no perturbation. */
struct allocator_tunables {
  long mmap_threshold = 32L << 20;
  long trim_threshold = 64L << 20;
  long top_pad = 128L << 10;
  long mxfast = 128;
  long perturb = 0;
};

/** The tunables with what the environment set (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_,
 *  MALLOC_TOP_PAD_, MALLOC_PERTURB_, and GLIBC_TUNABLES' glibc.malloc.mmap_threshold,
 *  trim_threshold, top_pad, mxfast, perturb) in place of the defaults: what the user asked for
 *  holds. Values that do not parse as a non-negative integer (decimal, or hexadecimal with 0x)
 *  are ignored. */
[[nodiscard]] allocator_tunables allocator_tunables_from(
    const std::function<const char*(const char*)>& env);

/** Applies the tunables with mallopt. False where this C library has no mallopt (not glibc) or
 *  refused one. */
bool apply_allocator_tunables(const allocator_tunables& t);

/** MKL's thread count for the calling thread (mkl_get_max_threads, with the thread-local value
 *  of mkl_set_num_threads_local in force), where the process has MKL loaded (torch's CPU library
 *  links it in on x86). */
class mkl_threads {
 public:
  /** MKL's functions in this process, looked up in the global scope and then in torch's CPU
   *  library (already loaded: never loaded here). Empty where there are none. */
  [[nodiscard]] static std::optional<mkl_threads> find();
  [[nodiscard]] int get() const;
  /** The calling thread's count: the thread-local value cleared (the global count back), then
   *  set to `n` where that is not already the count. True where get() reads `n` after. */
  bool set(int n) const;

 private:
  using get_fn = int (*)();
  using set_by_value_fn = int (*)(int);
  using set_by_pointer_fn = int (*)(const int*);
  get_fn m_get = nullptr;
  void* m_set = nullptr;
  bool m_by_pointer = false;  // the symbol is the Fortran form (an int passed by address)
};

}  // namespace kj::runner
