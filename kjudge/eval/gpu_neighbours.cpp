#include <kjudge/eval/gpu_neighbours.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kj::eval {

namespace {

std::string proc_file_line(unsigned pid, const char* file) {
  std::ifstream in(fmt::format("/proc/{}/{}", pid, file));
  std::string line;
  if (!in || !std::getline(in, line)) return {};
  return line;
}

std::string self_comm() {
  std::ifstream in("/proc/self/comm");
  std::string line;
  std::getline(in, line);
  return line;
}

std::string exe_of(const std::string& proc_dir) {
  std::error_code ec;
  auto target = std::filesystem::read_symlink(proc_dir + "/exe", ec);
  return ec ? std::string() : target.string();
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
                              const process_probe& probe) {
  neighbour_look look;
  if (!listed) {
    look.why_unchecked = "NVML did not list the GPU's processes";
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
  for (const cuda::gpu_process& p : *listed) {
    if (p.pid == probe.self || (probe.is_kjudge && probe.is_kjudge(p.pid))) continue;
    neighbour n;
    n.pid = p.pid;
    n.name = probe.name_of ? probe.name_of(p.pid) : std::string();
    n.used_memory_bytes = p.used_memory_bytes;
    look.others.push_back(std::move(n));
  }
  return look;
}

process_probe local_probe() {
  process_probe probe;
  probe.self = static_cast<unsigned>(::getpid());
  const std::string my_exe = exe_of("/proc/self");
  const std::string my_comm = self_comm();
  probe.is_kjudge = [my_exe, my_comm](unsigned pid) {
    const std::string dir = fmt::format("/proc/{}", pid);
    // Another user's process: its exe link cannot be read, its comm can.
    const std::string exe = exe_of(dir);
    if (!exe.empty() && exe == my_exe) return true;
    const std::string comm = proc_file_line(pid, "comm");
    return !comm.empty() && comm == my_comm;
  };
  probe.name_of = [](unsigned pid) { return proc_file_line(pid, "comm"); };
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
  return sort_processes(nvml->processes(*device), local_probe());
}

void neighbour_watch::add(const neighbour_look& look, std::string_view when) {
  if (!look.checked) {
    if (m_why_unchecked.empty()) m_why_unchecked = look.why_unchecked;
    return;
  }
  m_checked = true;
  for (const neighbour& n : look.others) {
    seen& s = m_seen[n.pid];
    if (s.when.empty()) s.who = n;
    if (s.who.name.empty()) s.who.name = n.name;
    if (!s.who.used_memory_bytes) s.who.used_memory_bytes = n.used_memory_bytes;
    if (std::find(s.when.begin(), s.when.end(), when) == s.when.end()) s.when.emplace_back(when);
  }
}

std::string neighbour_watch::warning(std::string_view measured) const {
  if (m_seen.empty()) return {};
  std::vector<std::string> who;
  who.reserve(m_seen.size());
  for (const auto& [pid, s] : m_seen) who.push_back(describe(s.who, s.when));
  return fmt::format(
      "{} other {} a context on this GPU during the {} (NVML): {}. kjudge's GPU lock does not "
      "hold other programs back; if they ran kernels meanwhile, the figures may be moved (on an "
      "H200, a process launching small kernels read a reference 12.5% lower; an idle context "
      "changed nothing measurable)",
      m_seen.size(), m_seen.size() == 1 ? "process had" : "processes had", measured,
      fmt::join(who, "; "));
}

std::string neighbour_watch::unchecked() const {
  if (m_checked) return {};
  return m_why_unchecked;
}

}  // namespace kj::eval
