#include <kjudge/runner/native_settings.hpp>

#include <dirent.h>
#include <dlfcn.h>
#include <fenv.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

extern char** environ;  // NOLINT: the C library's, which getenv reads

namespace kj::runner {

namespace {

cpu_list cpus_of(const cpu_set_t& set) {
  cpu_list out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

/** The affinity of thread `tid` (0: the caller); nullopt where it cannot be read (ended). */
std::optional<cpu_list> affinity_of(int tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(tid, sizeof set, &set) != 0) return std::nullopt;
  return cpus_of(set);
}

/** This process's thread ids, ascending. */
std::vector<int> task_ids() {
  std::vector<int> out;
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return out;
  while (const dirent* e = ::readdir(dir)) {
    int tid = 0;
    const std::string_view name(e->d_name);
    const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), tid);
    if (ec == std::errc() && end == name.data() + name.size() && tid > 0) out.push_back(tid);
  }
  ::closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

/** A non-negative integer as glibc reads its tunables: decimal, or hexadecimal with 0x. */
std::optional<long> non_negative(std::string_view text) {
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
    base = 16;
  }
  long v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < 0)
    return std::nullopt;
  return v;
}

}  // namespace

cpu_list thread_cpus(int tid) {
  return affinity_of(tid).value_or(cpu_list{});
}

std::vector<std::pair<int, cpu_list>> threads_off(const cpu_list& usual) {
  std::vector<std::pair<int, cpu_list>> out;
  for (const int tid : task_ids()) {
    auto cpus = affinity_of(tid);
    if (cpus && *cpus != usual) out.emplace_back(tid, std::move(*cpus));
  }
  return out;
}

std::size_t set_threads(const std::vector<std::pair<int, cpu_list>>& wanted,
                        const cpu_list& usual) {
  std::size_t failed = 0;
  for (const int tid : task_ids()) {
    const auto it =
        std::find_if(wanted.begin(), wanted.end(), [tid](const auto& w) { return w.first == tid; });
    const cpu_list& want = it == wanted.end() ? usual : it->second;
    const auto now = affinity_of(tid);
    if (!now || *now == want || want.empty()) continue;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (const int c : want)
      if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
    if (::sched_setaffinity(tid, sizeof set, &set) != 0 && errno != ESRCH) ++failed;
  }
  return failed;
}

std::optional<int> thp_disabled() {
  const int v = ::prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
  if (v < 0) return std::nullopt;
  return v;
}

bool set_thp_disabled(int off) {
  return ::prctl(PR_SET_THP_DISABLE, off != 0 ? 1 : 0, 0, 0, 0) == 0;
}

std::optional<bool> child_subreaper() {
  int on = 0;
  if (::prctl(PR_GET_CHILD_SUBREAPER, &on, 0, 0, 0) != 0) return std::nullopt;
  return on != 0;
}

bool set_child_subreaper(bool on) {
  return ::prctl(PR_SET_CHILD_SUBREAPER, on ? 1 : 0, 0, 0, 0) == 0;
}

std::vector<std::string> environment() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) out.emplace_back(*e);
  return out;
}

std::size_t set_environment(const std::vector<std::string>& wanted) {
  std::size_t failed = 0;
  std::vector<std::string> keep;  // the names `wanted` holds
  for (const std::string& entry : wanted) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) {
      ++failed;
      continue;
    }
    const std::string name = entry.substr(0, eq);
    keep.push_back(name);
    const char* now = std::getenv(name.c_str());
    if (now != nullptr && entry.compare(eq + 1, std::string::npos, now) == 0) continue;
    if (::setenv(name.c_str(), entry.c_str() + eq + 1, 1) != 0) ++failed;
  }
  std::sort(keep.begin(), keep.end());
  // The names to remove first, then removed: unsetenv reorders the array being walked.
  std::vector<std::string> extra;
  for (const std::string& entry : environment()) {
    const std::string name = entry.substr(0, entry.find('='));
    if (!std::binary_search(keep.begin(), keep.end(), name)) extra.push_back(name);
  }
  for (const std::string& name : extra)
    if (::unsetenv(name.c_str()) != 0) ++failed;
  return failed;
}

namespace {

/** Signals whose disposition can be read and set: 1 to SIGRTMAX but SIGKILL and SIGSTOP. */
template <typename F>
void for_each_signal(F&& f) {
  for (int s = 1; s <= SIGRTMAX; ++s)
    if (s != SIGKILL && s != SIGSTOP) f(s);
}

// SA_RESTORER, which glibc adds to every disposition it sets (its own return trampoline) and
// its headers do not name: Linux's value on every architecture that has it.
constexpr int kLibraryFlags = 0x04000000;

std::optional<signal_action> action_of(int s) {
  struct sigaction now {};
  if (::sigaction(s, nullptr, &now) != 0) return std::nullopt;
  signal_action out;
  out.signal = s;
  out.handler = (now.sa_flags & SA_SIGINFO) != 0
                    ? reinterpret_cast<std::uintptr_t>(now.sa_sigaction)
                    : reinterpret_cast<std::uintptr_t>(now.sa_handler);
  out.flags = now.sa_flags & ~kLibraryFlags;
  // Linux's sigset_t holds signal n at bit n - 1 of its first words: signals 1-64 in the first
  // 8 bytes (a sigismember() a signal took most of a read's time).
  std::memcpy(&out.mask, &now.sa_mask, sizeof out.mask);
  return out;
}

}  // namespace

std::vector<signal_action> signal_actions() {
  std::vector<signal_action> out;
  for_each_signal([&](int s) {
    const auto a = action_of(s);
    if (a &&
        (a->handler != reinterpret_cast<std::uintptr_t>(SIG_DFL) || a->flags != 0 || a->mask != 0))
      out.push_back(*a);
  });
  return out;
}

std::size_t set_signal_actions(const std::vector<signal_action>& wanted) {
  std::size_t failed = 0;
  for_each_signal([&](int s) {
    signal_action want;
    want.signal = s;
    want.handler = reinterpret_cast<std::uintptr_t>(SIG_DFL);
    for (const signal_action& w : wanted)
      if (w.signal == s) want = w;
    // A signal the C library keeps to itself (its thread cancellation's and set*id's) reads
    // as an error: left as it is.
    const auto now = action_of(s);
    if (!now || *now == want) return;
    struct sigaction act {};
    ::sigemptyset(&act.sa_mask);
    std::memcpy(&act.sa_mask, &want.mask, sizeof want.mask);
    act.sa_flags = want.flags;
    if ((want.flags & SA_SIGINFO) != 0)
      act.sa_sigaction = reinterpret_cast<void (*)(int, siginfo_t*, void*)>(want.handler);
    else
      act.sa_handler = reinterpret_cast<void (*)(int)>(want.handler);
    if (::sigaction(s, &act, nullptr) != 0) ++failed;
  });
  return failed;
}

bool openmp_binds_threads(const std::function<const char*(const char*)>& env) {
  auto lower = [&](const char* name) {
    const char* v = env(name);
    std::string out = v == nullptr ? "" : v;
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  // OMP_PROC_BIND=false binds nothing, whatever OMP_PLACES says; so do Intel's none and
  // disabled.
  const std::string bind = lower("OMP_PROC_BIND");
  if (bind == "false") return false;
  const std::string kmp = lower("KMP_AFFINITY");
  if (!kmp.empty() && kmp.find("none") == std::string::npos &&
      kmp.find("disabled") == std::string::npos)
    return true;
  return !bind.empty() || !lower("OMP_PLACES").empty() || !lower("GOMP_CPU_AFFINITY").empty();
}

allocator_tunables allocator_tunables_from(const std::function<const char*(const char*)>& env) {
  allocator_tunables t;
  const std::pair<const char*, long*> by_env[] = {{"MALLOC_MMAP_THRESHOLD_", &t.mmap_threshold},
                                                  {"MALLOC_TRIM_THRESHOLD_", &t.trim_threshold},
                                                  {"MALLOC_TOP_PAD_", &t.top_pad},
                                                  {"MALLOC_PERTURB_", &t.perturb}};
  for (const auto& [name, slot] : by_env)
    if (const char* v = env(name))
      if (const auto n = non_negative(v)) *slot = *n;
  // GLIBC_TUNABLES: name=value pairs separated by ':' (glibc reads them after the old names).
  const char* tunables = env("GLIBC_TUNABLES");
  if (tunables == nullptr) return t;
  const std::pair<std::string_view, long*> by_tunable[] = {
      {"glibc.malloc.mmap_threshold", &t.mmap_threshold},
      {"glibc.malloc.trim_threshold", &t.trim_threshold},
      {"glibc.malloc.top_pad", &t.top_pad},
      {"glibc.malloc.mxfast", &t.mxfast},
      {"glibc.malloc.perturb", &t.perturb}};
  std::string_view rest(tunables);
  while (!rest.empty()) {
    const auto colon = rest.find(':');
    const std::string_view item = rest.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    for (const auto& [name, slot] : by_tunable)
      if (item.substr(0, eq) == name)
        if (const auto n = non_negative(item.substr(eq + 1))) *slot = *n;
  }
  return t;
}

bool apply_allocator_tunables(const allocator_tunables& t) {
#if defined(__GLIBC__)
  // mallopt takes an int; a value beyond it is glibc's to refuse.
  auto set = [](int param, long v) {
    return v <= 0x7fffffffL && ::mallopt(param, static_cast<int>(v)) == 1;
  };
  bool ok = set(M_MXFAST, t.mxfast);
  ok = set(M_TRIM_THRESHOLD, t.trim_threshold) && ok;
  ok = set(M_TOP_PAD, t.top_pad) && ok;
  ok = set(M_MMAP_THRESHOLD, t.mmap_threshold) && ok;
  ok = set(M_PERTURB, t.perturb) && ok;
  return ok;
#else
  (void)t;
  return false;
#endif
}

void* torch_cpu_symbol(const char* name) {
  // torch's CPU library is loaded local to torch's extension, with the libraries it needs
  // (OpenMP's runtime, MKL linked in): not in the global scope, so it is asked for by name, and
  // only if already loaded (RTLD_NOLOAD); a handle's lookup reaches its dependencies.
  // Not kept: a lookup before torch is loaded finds no library, and a later one must. Callers
  // keep what they find.
  if (void* f = ::dlsym(RTLD_DEFAULT, name)) return f;
  void* torch_cpu = ::dlopen("libtorch_cpu.so", RTLD_LAZY | RTLD_NOLOAD);
  if (torch_cpu == nullptr) return nullptr;
  void* f = ::dlsym(torch_cpu, name);
  ::dlclose(torch_cpu);  // torch's own reference keeps it loaded, and `f` valid
  return f;
}

namespace {

using int_getter = int (*)();
using int_setter = void (*)(int);

struct openmp_functions {
  int_getter get_levels = nullptr, get_dynamic = nullptr;
  int_setter set_levels = nullptr, set_dynamic = nullptr;
  [[nodiscard]] bool complete() const {
    return get_levels != nullptr && get_dynamic != nullptr && set_levels != nullptr &&
           set_dynamic != nullptr;
  }
};

const openmp_functions& openmp_runtime() {
  static const openmp_functions f = [] {
    openmp_functions out;
    out.get_levels = reinterpret_cast<int_getter>(torch_cpu_symbol("omp_get_max_active_levels"));
    out.get_dynamic = reinterpret_cast<int_getter>(torch_cpu_symbol("omp_get_dynamic"));
    out.set_levels = reinterpret_cast<int_setter>(torch_cpu_symbol("omp_set_max_active_levels"));
    out.set_dynamic = reinterpret_cast<int_setter>(torch_cpu_symbol("omp_set_dynamic"));
    return out;
  }();
  return f;
}

#if defined(__x86_64__)
constexpr unsigned kMxcsrControl = 0x7F80U;  // exception masks (7-12) and rounding (13-14)
#endif

}  // namespace

std::optional<openmp_state> openmp() {
  const auto& f = openmp_runtime();
  if (!f.complete()) return std::nullopt;
  return openmp_state{f.get_levels(), f.get_dynamic()};
}

bool set_openmp(const openmp_state& s) {
  const auto& f = openmp_runtime();
  if (!f.complete()) return false;
  f.set_levels(s.max_active_levels);
  f.set_dynamic(s.dynamic);
  return openmp() == s;
}

std::optional<int> mkl_blas_threads() {
  using domain_getter = int (*)(int);
  static const auto get =
      reinterpret_cast<domain_getter>(torch_cpu_symbol("mkl_serv_domain_get_max_threads"));
  constexpr int kMklDomainBlas = 1;
  if (get == nullptr) return std::nullopt;
  return get(kMklDomainBlas);
}

unsigned fp_control() {
  // The rounding mode's four values fit in bits 10-11 on x86 (and in the low bits elsewhere):
  // kept apart from MXCSR's by a shift.
  auto out = static_cast<unsigned>(::fegetround()) << 16U;
#if defined(__x86_64__)
  out |= _mm_getcsr() & kMxcsrControl;
#endif
  return out;
}

bool set_fp_control(unsigned control) {
  const bool ok = ::fesetround(static_cast<int>(control >> 16U)) == 0;
#if defined(__x86_64__)
  _mm_setcsr((_mm_getcsr() & ~kMxcsrControl) | (control & kMxcsrControl));
#endif
  return ok && fp_control() == control;
}

std::optional<mkl_threads> mkl_threads::find() {
  void* get = torch_cpu_symbol("MKL_Get_Max_Threads");
  if (get == nullptr) get = torch_cpu_symbol("mkl_get_max_threads");
  // MKL's C entry takes the count by value (mkl_service.h maps the lower-case name onto it); the
  // lower-case symbol itself is the Fortran entry, which takes it by address (PyPI's torch
  // exports both).
  void* set = torch_cpu_symbol("MKL_Set_Num_Threads_Local");
  bool by_pointer = false;
  if (set == nullptr) {
    set = torch_cpu_symbol("mkl_set_num_threads_local");
    by_pointer = true;
  }
  if (get == nullptr || set == nullptr) return std::nullopt;
  mkl_threads m;
  m.m_get = reinterpret_cast<get_fn>(get);
  m.m_set = set;
  m.m_by_pointer = by_pointer;
  return m;
}

int mkl_threads::get() const {
  return m_get();
}

bool mkl_threads::set(int n) const {
  auto call = [this](int v) {
    if (m_by_pointer)
      reinterpret_cast<set_by_pointer_fn>(m_set)(&v);
    else
      reinterpret_cast<set_by_value_fn>(m_set)(v);
  };
  call(0);  // the thread-local value cleared: the global count in force
  if (get() != n) call(n);
  return get() == n;
}

}  // namespace kj::runner
