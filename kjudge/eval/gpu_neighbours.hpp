#pragma once
/** @file Other programs on the GPU an evaluation measures on. kjudge's evaluations take turns
 *  through the GPU's lock (kjudge/runner/file_lock.hpp); other programs do not, and their kernels
 *  move a timed side's figures (on an H200, a process launching a small kernel every millisecond
 *  read the QuantVLA reference 12.5% lower; an idle context changed nothing measurable,
 *  docs/benchmarks.md). NVML lists the processes that hold a context on the GPU; this process
 *  and other kjudge processes are left out, and what remains is said in a warning. NVML cannot
 *  tell an idle context from a busy one, so the warning says "may". */

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <kjudge/cuda/nvml.hpp>

namespace kj::eval {

/** A process with a context on the GPU that is neither this process nor kjudge. */
struct neighbour {
  unsigned pid = 0;
  std::string name;  ///< /proc/<pid>/comm; empty when it cannot be read (the process is gone)
  std::optional<unsigned long long> used_memory_bytes;
};

/** One look at the GPU's processes. */
struct neighbour_look {
  bool checked = false;       ///< false: why_unchecked says why
  std::string why_unchecked;  ///< e.g. "NVML is not available: ..."
  std::vector<neighbour> others;
};

/** How the listed pids are told apart. */
struct process_probe {
  unsigned self = 0;                             ///< this process's pid
  std::function<bool(unsigned)> is_kjudge;       ///< the pid runs kjudge (takes turns)
  std::function<std::string(unsigned)> name_of;  ///< its name, "" when unknown
};

/** From NVML's list (std::nullopt: NVML did not answer), the processes other than this one and
 *  kjudge's. A list without this process (which has a context when it looks) is in another PID
 *  namespace (a container whose PIDs NVML does not translate): it cannot be sorted, and the look
 *  is unchecked. */
[[nodiscard]] neighbour_look sort_processes(
    const std::optional<std::vector<cuda::gpu_process>>& listed, const process_probe& probe);

/** This machine's probe: getpid(), and a pid runs kjudge when its /proc/<pid>/exe or
 *  /proc/<pid>/comm is this process's. */
[[nodiscard]] process_probe local_probe();

/** A look now at the GPU with this UUID (or PCI bus id), through NVML. */
[[nodiscard]] neighbour_look look_for_neighbours(const std::string& uuid,
                                                 const std::string& pci_bus_id);

/** The looks of one measurement (at its start and at its end), and what they come to. */
class neighbour_watch {
 public:
  /** `when`: "start", "end". */
  void add(const neighbour_look& look, std::string_view when);
  /** The warning `gpu_other_process`, "" when no look saw another process. */
  [[nodiscard]] std::string warning(std::string_view measured) const;
  /** Why no look could check (the info flag `gpu_processes_unchecked`), "" when one did. */
  [[nodiscard]] std::string unchecked() const;

 private:
  struct seen {
    neighbour who;
    std::vector<std::string> when;
  };
  std::map<unsigned, seen> m_seen;
  bool m_checked = false;
  std::string m_why_unchecked;
};

}  // namespace kj::eval
