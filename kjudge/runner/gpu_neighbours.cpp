#include <kjudge/runner/gpu_neighbours.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kj::runner {

namespace {

/** The inode of the machine's first PID namespace (PROC_PID_INIT_INO in the kernel). */
constexpr ino_t initial_pid_namespace_inode = 0xEFFFFFFCU;

std::string proc_file_line(unsigned pid, const char* file) {
  std::ifstream in(fmt::format("/proc/{}/{}", pid, file));
  std::string line;
  if (!in || !std::getline(in, line)) return {};
  return line;
}

std::string exe_of(const std::string& proc_dir) {
  std::error_code ec;
  auto target = std::filesystem::read_symlink(proc_dir + "/exe", ec);
  return ec ? std::string() : target.string();
}

/** What the kernel names a process running `exe`: its file name, at most 15 bytes. Not this
 *  process's current name: torch 2.3 and 2.4 rename the thread that imports them. */
std::string process_name_for(const std::string& exe) {
  std::string name = std::filesystem::path(exe).filename().string();
  if (const auto deleted = name.find(" (deleted)"); deleted != std::string::npos)
    name.erase(deleted);
  return name.substr(0, 15);
}

std::string memory_text(const std::optional<unsigned long long>& bytes) {
  if (!bytes) return {};
  return fmt::format("{} MiB", (*bytes + (1ULL << 19)) >> 20);
}

std::string describe(const neighbour& n, const std::vector<std::string>& when) {
  std::vector<std::string> parts;
  if (!n.name.empty()) parts.push_back(n.name);
  if (const auto m = memory_text(n.used_memory_bytes); !m.empty()) parts.push_back(m);
  parts.push_back(fmt::format("at the {}", fmt::join(when, " and the ")));
  return fmt::format("pid {} ({})", n.pid, fmt::join(parts, ", "));
}

}  // namespace

neighbour_look sort_processes(const std::optional<std::vector<cuda::gpu_process>>& listed,
                              const process_probe& probe, std::string_view why) {
  neighbour_look look;
  if (!listed) {
    look.why_unchecked =
        why.empty() ? std::string("NVML did not list the GPU's processes") : std::string(why);
    return look;
  }
  const bool self_listed =
      std::any_of(listed->begin(), listed->end(),
                  [&](const cuda::gpu_process& p) { return p.pid == probe.self; });
  if (!self_listed) {
    look.why_unchecked = fmt::format(
        "this process (pid {}) is not among the {} NVML lists on the GPU: its process IDs are "
        "another PID namespace's (a container's host), so other programs cannot be told from "
        "kjudge's",
        probe.self, listed->size());
    return look;
  }
  look.checked = true;
  look.blind_spot = probe.blind_spot;
  for (const cuda::gpu_process& p : *listed) {
    if (p.pid == probe.self || (probe.is_kjudge && probe.is_kjudge(p.pid))) continue;
    neighbour n;
    n.pid = p.pid;
    n.name = probe.name_of ? probe.name_of(p.pid) : std::string();
    // The MPS daemon holds contexts for its clients, which are listed themselves.
    if (n.name.rfind("nvidia-cuda-mps", 0) == 0) continue;
    n.used_memory_bytes = p.used_memory_bytes;
    look.others.push_back(std::move(n));
  }
  return look;
}

process_probe local_probe() {
  process_probe probe;
  probe.self = static_cast<unsigned>(::getpid());
  const std::string my_exe = exe_of("/proc/self");
  const std::string my_name = process_name_for(my_exe.empty() ? "kjudge" : my_exe);
  const std::string my_file =
      my_exe.empty() ? std::string("kjudge") : std::filesystem::path(my_exe).filename().string();
  probe.is_kjudge = [my_exe, my_name, my_file](unsigned pid) {
    const std::string exe = exe_of(fmt::format("/proc/{}", pid));
    if (!exe.empty() && exe == my_exe) return true;
    // Another user's process (its exe link cannot be read) or another build of kjudge: the file
    // its command line started (kjudge starts workers by path; a pool's forks share its command
    // line), else its name, which torch 2.3 and 2.4 change.
    std::string argv0;
    if (std::ifstream in(fmt::format("/proc/{}/cmdline", pid)); in) std::getline(in, argv0, '\0');
    if (!argv0.empty() && std::filesystem::path(argv0).filename() == my_file) return true;
    const std::string comm = proc_file_line(pid, "comm");
    return !comm.empty() && comm == my_name;
  };
  probe.name_of = [](unsigned pid) { return proc_file_line(pid, "comm"); };
  struct stat ns {};
  if (::stat("/proc/self/ns/pid", &ns) == 0 && ns.st_ino != initial_pid_namespace_inode)
    probe.blind_spot =
        "this process runs in a PID namespace of its own (a container), and NVML lists only "
        "the processes it can see: programs outside it (on the host, in other containers) were "
        "not looked for";
  return probe;
}

neighbour_look look_for_neighbours(const std::string& uuid, const std::string& pci_bus_id) {
  neighbour_look look;
  cuda::nvml* nvml = cuda::nvml::instance();
  if (nvml == nullptr) {
    look.why_unchecked = "NVML is not available: " + cuda::nvml::unavailable_reason();
    return look;
  }
  const auto device = nvml->device(uuid, pci_bus_id);
  if (!device) {
    look.why_unchecked = fmt::format("NVML does not know the device {} ({})", uuid, pci_bus_id);
    return look;
  }
  if (nvml->mig_enabled(*device).value_or(false)) {
    look.why_unchecked =
        "MIG is on: NVML's process list spans the GPU's instances, which do not share SMs, and "
        "this process's instance is not told apart";
    return look;
  }
  std::string why;
  const auto listed = nvml->processes(*device, &why);
  return sort_processes(listed, local_probe(), why);
}

void neighbour_watch::add(const neighbour_look& look, std::string_view when) {
  if (!look.checked) {
    // Looks that failed for the same reason are said once: "the start and end looks: ...".
    auto same = std::find_if(m_failed.begin(), m_failed.end(),
                             [&](const auto& f) { return f.first == look.why_unchecked; });
    if (same == m_failed.end()) same = m_failed.insert(m_failed.end(), {look.why_unchecked, {}});
    same->second.emplace_back(when);
    return;
  }
  if (m_blind_spot.empty()) m_blind_spot = look.blind_spot;
  for (const neighbour& n : look.others) {
    seen& s = m_seen[n.pid];
    if (s.when.empty()) s.who = n;
    if (s.who.name.empty()) s.who.name = n.name;
    if (!s.who.used_memory_bytes) s.who.used_memory_bytes = n.used_memory_bytes;
    if (std::find(s.when.begin(), s.when.end(), when) == s.when.end()) s.when.emplace_back(when);
  }
}

std::string neighbour_watch::warning(std::string_view measured, std::string_view effect) const {
  if (m_seen.empty()) return {};
  std::vector<std::string> who;
  who.reserve(m_seen.size());
  for (const auto& [pid, s] : m_seen) who.push_back(describe(s.who, s.when));
  return fmt::format(
      "{} other {} a context on this GPU during the {} (NVML): {}. kjudge's GPU lock does not "
      "hold other programs back; {}",
      m_seen.size(), m_seen.size() == 1 ? "process had" : "processes had", measured,
      fmt::join(who, "; "), effect);
}

std::string neighbour_watch::unchecked() const {
  std::vector<std::string> gaps;
  for (const auto& [why, when] : m_failed)
    gaps.push_back(fmt::format("the {} look{}: {}", fmt::join(when, " and "),
                               when.size() == 1 ? "" : "s", why));
  if (!m_blind_spot.empty()) gaps.push_back(m_blind_spot);
  return fmt::format("{}", fmt::join(gaps, "; "));
}

std::vector<flag> neighbour_watch::flags(std::string_view measured, std::string_view effect) const {
  std::vector<flag> out;
  if (auto w = warning(measured, effect); !w.empty())
    out.push_back({"gpu_other_process", "warning", std::move(w)});
  if (const auto u = unchecked(); !u.empty())
    out.push_back({"gpu_processes_unchecked", "info",
                   fmt::format("whether programs other than kjudge used this GPU during the {} "
                               "was not checked in full: {}",
                               measured, u)});
  return out;
}

}  // namespace kj::runner
