#pragma once
/** @file Other programs on the GPU an evaluation measures on. kjudge's evaluations take turns
 *  through the GPU's lock (kjudge/runner/file_lock.hpp); other programs do not, and their kernels
 *  move a timed side's figures (on an H200, a process launching a small kernel every millisecond,
 *  or every 100 ms, read the QuantVLA reference's CUDA graph replay 12-14% lower, its own
 *  launches not; an idle context changed nothing measurable, docs/benchmarks.md). `kjudge
 *  roofline` looks too (its ceilings). NVML lists the processes that hold a context on the GPU;
 *  this process and other kjudge processes are left out, and what remains is said in a warning.
 *  NVML cannot tell an idle context from a busy one, so the warning says "may". */

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <kjudge/core/result.hpp>
#include <kjudge/cuda/nvml.hpp>

namespace kj::runner {

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
  std::string blind_spot;     ///< checked, but what could not be seen ("" when nothing)
  std::vector<neighbour> others;
};

/** How the listed pids are told apart. */
struct process_probe {
  unsigned self = 0;                             ///< this process's pid
  std::function<bool(unsigned)> is_kjudge;       ///< the pid runs kjudge (takes turns)
  std::function<std::string(unsigned)> name_of;  ///< its name, "" when unknown
  /** What NVML cannot show from here ("" when nothing): set when this process runs in a PID
   *  namespace of its own (a container), whose NVML lists only the processes it can see. */
  std::string blind_spot;
};

/** From NVML's list (std::nullopt: NVML did not answer, `why` says why), the processes other
 *  than this one, kjudge's and the MPS daemon's. A list without this process (which has a context
 *  when it looks) is in another PID namespace (a driver that does not translate a container's
 *  PIDs): it cannot be sorted, and the look is unchecked. */
[[nodiscard]] neighbour_look sort_processes(
    const std::optional<std::vector<cuda::gpu_process>>& listed, const process_probe& probe,
    std::string_view why = {});

/** This machine's probe: getpid(); a pid runs kjudge when its /proc/<pid>/exe is this process's
 *  executable, or (another user's process, another build) the file its command line started or
 *  its name is that executable's file name; the blind spot of a PID namespace other than the
 *  machine's first. */
[[nodiscard]] process_probe local_probe();

/** A look now at the GPU with this UUID (or PCI bus id), through NVML. */
[[nodiscard]] neighbour_look look_for_neighbours(const std::string& uuid,
                                                 const std::string& pci_bus_id);

/** The looks of one measurement (at its start and at its end), and what they come to. */
class neighbour_watch {
 public:
  /** `when`: "start", "end". */
  void add(const neighbour_look& look, std::string_view when);
  /** What another program's work does to an evaluation's figures (warning()'s default). */
  static constexpr std::string_view timing_effect =
      "if they ran kernels meanwhile, the figures may be moved (on an H200, a process launching "
      "small kernels read a reference's CUDA graph replay 12-14% lower, its own launches not; "
      "an idle context changed nothing measurable)";
  /** The warning `gpu_other_process` for the `measured` ("timing", ...), ending with `effect`
   *  (what their work may have done to it); "" when no look saw another process. */
  [[nodiscard]] std::string warning(std::string_view measured,
                                    std::string_view effect = timing_effect) const;
  /** What the looks could not check (the info flag `gpu_processes_unchecked`): a look that
   *  could not be made, or a blind spot; "" when every look saw everything. */
  [[nodiscard]] std::string unchecked() const;
  /** What the looks of the `measured` come to, as flags: the warning `gpu_other_process`
   *  (warning(measured, effect)) and the info flag `gpu_processes_unchecked`, each when it has
   *  something to say. */
  [[nodiscard]] std::vector<flag> flags(std::string_view measured,
                                        std::string_view effect = timing_effect) const;

 private:
  struct seen {
    neighbour who;
    std::vector<std::string> when;
  };
  std::map<unsigned, seen> m_seen;
  /** Looks not made, by reason, in order: {why, {"start", "end"}}. */
  std::vector<std::pair<std::string, std::vector<std::string>>> m_failed;
  std::string m_blind_spot;
};

}  // namespace kj::runner
