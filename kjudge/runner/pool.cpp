// The worker pool's two ends. A request is one message on a fresh connection: a 4-byte length,
// then that many bytes of JSON ({"argv", "env", "cwd", "channel_fd"}), with the child's stdin,
// output and (optional) channel descriptors attached (SCM_RIGHTS). The server forks, answers
// {"pid": N} once the child leads its own process group, and {"status": S, "max_rss_kb": K,
// "leftovers_killed": L} when it has reaped it (and killed what it left behind). The requester
// supervises the child with the same loop as run_process; when the requester goes away (its
// connection closes), the server kills the child's group.
#include <kjudge/core/error.hpp>
#include <kjudge/core/sigpipe.hpp>
#include <kjudge/runner/file_lock.hpp>
#include <kjudge/runner/pool.hpp>
#include <kjudge/runner/process_detail.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <list>
#include <optional>
#include <sstream>
#include <string_view>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kj::runner {
namespace {

using detail::errno_text;
using detail::unique_fd;
using steady = std::chrono::steady_clock;

/** Largest request accepted (the environment dominates it). */
constexpr std::uint32_t k_max_request = 4u << 20;
/** How long the requester waits for the server's reply to a request. */
constexpr int k_message_timeout_s = 10;
/** How long the server gives a requester to deliver its whole request: the server serves one
 *  request at a time, so a slow or stopped requester must not hold the others up. */
constexpr auto k_request_deadline = std::chrono::milliseconds(1000);
/** The longest a running pool may leave a child that ended unreaped (ended_unreported): its
 *  loop's longest step, killing another child's leftovers (kill_adopted, 2 s), and a request's
 *  deadline, with room. */
constexpr auto k_pool_busy_limit = std::chrono::seconds(4);

[[nodiscard]] sockaddr_un abstract_address(const std::string& name, socklen_t& length) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (name.empty() || name.size() + 1 > sizeof addr.sun_path)
    KJ_THROW(error_kind::usage, "worker pool address '{}' is empty or too long", name);
  addr.sun_path[0] = '\0';  // abstract namespace: no file, gone with the socket
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return addr;
}

void set_timeouts(int fd) {
  timeval tv{};
  tv.tv_sec = k_message_timeout_s;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

bool write_all(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

/** Waits until `fd` is readable or `deadline` passes. */
bool readable_by(int fd, steady::time_point deadline) {
  while (true) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - steady::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(left.count()));
    if (rc > 0) return true;
    if (rc == 0 || errno != EINTR) return false;
  }
}

bool read_exact(int fd, char* out, std::size_t size, steady::time_point deadline) {
  std::size_t done = 0;
  while (done < size) {
    if (!readable_by(fd, deadline)) return false;
    const ssize_t n = ::recv(fd, out + done, size - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

/** One JSON object per line; nullopt when the connection ends or times out first. */
std::optional<nlohmann::json> read_line(int fd) {
  std::string line;
  char c = 0;
  while (true) {
    const ssize_t n = ::recv(fd, &c, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    if (c == '\n') break;
    line.push_back(c);
    if (line.size() > 4096) return std::nullopt;
  }
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

/** Whether the other end of `fd` closes it, with nothing left to read, within `limit`. */
bool hangs_up_within(int fd, std::chrono::milliseconds limit) {
  if (!readable_by(fd, steady::now() + limit)) return false;
  char c = 0;
  ssize_t n = 0;
  do {
    n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  return n == 0;
}

bool send_line(int fd, const nlohmann::json& j) {
  return write_all(fd, j.dump() + "\n");
}

/** The credentials of the process at the other end of a connected unix socket. */
std::optional<ucred> peer_of(int fd) {
  ucred cred{};
  socklen_t length = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0) return std::nullopt;
  return cred;
}

/** The fields of /proc/PID/stat after the command name (which may hold spaces and parentheses):
 *  [0] is field 3, the state; empty where the process is gone. */
std::vector<std::string> stat_fields(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::vector<std::string> out;
  if (!std::getline(stat, line)) return out;
  const auto close_paren = line.rfind(')');
  if (close_paren == std::string::npos) return out;
  std::istringstream rest(line.substr(close_paren + 1));
  for (std::string f; rest >> f;) out.push_back(std::move(f));
  return out;
}

/** Whether `pid`'s cgroup is frozen (or freezing), by the v2 cgroup's events ("frozen 1") or
 *  the v1 freezer's state; its process state shows S or D then, not T. False where unknown. */
bool in_frozen_cgroup(pid_t pid) {
  std::ifstream groups("/proc/" + std::to_string(pid) + "/cgroup");
  for (std::string line; std::getline(groups, line);) {
    const auto first = line.find(':');
    const auto second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (controllers.empty()) {  // v2: "0::/path"
      std::ifstream events("/sys/fs/cgroup" + path + "/cgroup.events");
      for (std::string e; std::getline(events, e);)
        if (e == "frozen 1") return true;
      std::ifstream freeze("/sys/fs/cgroup" + path + "/cgroup.freeze");
      std::string value;
      if (freeze >> value && value == "1") return true;
    } else if (("," + controllers + ",").find(",freezer,") != std::string::npos) {
      std::ifstream state("/sys/fs/cgroup/freezer" + path + "/freezer.state");
      std::string value;
      if (state >> value && (value == "FROZEN" || value == "FREEZING")) return true;
    }
  }
  return false;
}

/** Whether `pid` is stopped (SIGSTOP, a debugger's stop: "T" or "t" in /proc) or frozen with its
 *  cgroup. */
bool is_stopped(pid_t pid) {
  const auto fields = stat_fields(pid);
  if (!fields.empty() && (fields[0] == "T" || fields[0] == "t")) return true;
  return in_frozen_cgroup(pid);
}

/** The parent pid of `pid` from /proc, or -1. */
pid_t parent_of(pid_t pid) {
  const auto fields = stat_fields(pid);
  return fields.size() > 1 ? static_cast<pid_t>(std::strtol(fields[1].c_str(), nullptr, 10)) : -1;
}

// ---- requester ---------------------------------------------------------------------------------

/** The pool's child as the supervising loop sees it: it has ended when the server's status line
 *  arrives (or the connection drops). */
class pool_child final : public detail::child_handle {
 public:
  pool_child(pid_t pid, pid_t server, unique_fd connection)
      : m_pid(pid), m_server(server), m_conn(std::move(connection)), m_registration(pid) {}
  [[nodiscard]] pid_t group() const noexcept override { return m_pid; }
  [[nodiscard]] bool ended() override {
    pollfd p{m_conn.get(), POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
  }
  [[nodiscard]] int wait_fd() const noexcept override { return m_conn.get(); }
  [[nodiscard]] bool may_go_unreported() const noexcept override { return true; }
  [[nodiscard]] bool ended_unreported() override {
    // Unreaped, the pid is still the pool's zombie child (not reused).
    const auto fields = stat_fields(m_pid);
    const bool zombie = fields.size() > 1 && fields[0] == "Z" &&
                        std::strtol(fields[1].c_str(), nullptr, 10) == m_server;
    if (!zombie) {
      m_zombie_since.reset();
      return false;
    }
    const auto now = steady::now();
    if (!m_zombie_since) m_zombie_since = now;
    // A pool that runs reaps it once it is done with what holds it (another child's leftovers
    // take up to 2 s to kill, a slow request 1 s): only a stopped or frozen one, or one that
    // has not for longer than those, will not.
    return is_stopped(m_server) || now - *m_zombie_since >= k_pool_busy_limit;
  }
  std::string reap(int& status, rusage& usage, std::size_t& leftovers) override {
    const auto reply = read_line(m_conn.get());
    m_conn.reset();
    if (!reply || !reply->contains("status")) {
      // The pool is gone (its children die with it): end whatever is left of the group.
      ::killpg(m_pid, SIGKILL);  // not its pid: the pool may have reaped it
      m_registration.release();
      return "the worker pool closed the connection without the child's exit status (the pool "
             "was stopped or died)";
    }
    m_registration.release();  // reaped by the pool: the pid may be reused from now on
    status = reply->value("status", 0);
    usage.ru_maxrss = reply->value("max_rss_kb", 0L);
    leftovers = reply->value("leftovers_killed", std::size_t{0});
    return {};
  }

 private:
  pid_t m_pid;
  pid_t m_server;
  std::optional<steady::time_point> m_zombie_since;  ///< first seen as the pool's zombie
  unique_fd m_conn;
  detail::child_registration m_registration;  ///< for exit_on_interrupt
};

[[nodiscard]] unique_fd connect_to(const std::string& address) {
  socklen_t length = 0;
  const sockaddr_un addr = abstract_address(address, length);
  // Non-blocking for the connect alone: a pool that stopped accepting (stopped, frozen, stuck)
  // with its backlog full would hold a blocking connect without end, past --timeout; so it
  // fails at once (EAGAIN) and the evaluation runs a worker of its own.
  unique_fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.open()) return {};
  int rc = 0;
  do {
    rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), length);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return {};
  if (::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK) != 0) return {};
  // Abstract names carry no permissions: serve only from a pool of our own user, in our view.
  const auto peer = peer_of(fd.get());
  if (!peer || peer->uid != ::geteuid() || peer->pid <= 0) return {};
  set_timeouts(fd.get());
  return fd;
}

/** Sends the request with the descriptors attached to its first byte. */
bool send_request(int fd, const std::string& body, const std::vector<int>& fds) {
  std::string message(4, '\0');
  const auto size = static_cast<std::uint32_t>(body.size());
  std::memcpy(message.data(), &size, sizeof size);
  message += body;
  iovec iov{message.data(), 1};
  std::array<char, CMSG_SPACE(sizeof(int) * 3)> control{};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
  cmsghdr* cm = CMSG_FIRSTHDR(&msg);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  std::memcpy(CMSG_DATA(cm), fds.data(), sizeof(int) * fds.size());
  ssize_t n = 0;
  do {
    n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n != 1) return false;
  return write_all(fd, message.substr(1));
}

// ---- server ------------------------------------------------------------------------------------

struct received_request {
  nlohmann::json body;
  std::vector<unique_fd> fds;
};

std::optional<received_request> receive_request(int fd) {
  const auto deadline = steady::now() + k_request_deadline;
  if (!readable_by(fd, deadline)) return std::nullopt;
  received_request r;
  std::array<char, 4> head{};
  iovec iov{head.data(), 1};
  std::array<char, CMSG_SPACE(sizeof(int) * 3)> control{};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  ssize_t n = 0;
  do {
    n = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n != 1) return std::nullopt;
  for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm != nullptr; cm = CMSG_NXTHDR(&msg, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int v = -1;
      std::memcpy(&v, CMSG_DATA(cm) + i * sizeof(int), sizeof v);
      r.fds.emplace_back(v);
    }
  }
  if ((msg.msg_flags & MSG_CTRUNC) != 0) return std::nullopt;
  if (!read_exact(fd, head.data() + 1, 3, deadline)) return std::nullopt;
  std::uint32_t size = 0;
  std::memcpy(&size, head.data(), sizeof size);
  if (size > k_max_request) return std::nullopt;
  std::string body(size, '\0');
  if (!read_exact(fd, body.data(), size, deadline)) return std::nullopt;
  r.body = nlohmann::json::parse(body, nullptr, false);
  if (r.body.is_discarded() || !r.body.is_object()) return std::nullopt;
  return r;
}

/** A request being served: its connection and the child it started. */
struct served {
  unique_fd conn;
  pid_t pid = -1;
  unique_fd pidfd;  ///< readable when the child exits (not open where unsupported)
  bool requester_gone = false;
};

/** In the forked child: descriptors, group, signals, directory, environment; then the entry.
 *  Never returns. Messages go to the output descriptor, which is the requester's tail. */
[[noreturn]] void become_child(const pool_server_options& o, received_request& req,
                               const std::vector<int>& server_fds, pid_t server) {
  // The server's sockets first: the process that holds the pool's address is its server (kjudge
  // pool finds it so).
  for (int fd : server_fds) ::close(fd);
  // A child must not outlive the pool: nobody would report its end, and its requester has stopped
  // waiting for it. (The check closes the window before prctl.)
  if (!detail::die_with_parent(server)) ::_exit(127);
  detail::reset_child_process();
  // This process becomes the worker's guard, as an exec'd worker has one (run() with orphan
  // cleanup): a candidate that kills its parent (os.getppid()) kills the guard, and its
  // evaluation ends as that crash, as without the pool, not the server with every evaluation it
  // runs. The guard is a subreaper: what the worker's descendants leave behind (a daemon that
  // called setsid()) is reparented to it, not to the pool, while the worker runs; once the
  // guard has ended, the pool takes every other child it has for the leftovers of a child that
  // ended (and kills them), never of one still running. Were the server to die, the guard kills
  // the worker and everything it adopted.
  const pid_t guard = detail::fork_under_guard(server);
  if (!detail::die_with_parent(guard)) ::_exit(127);

  const int channel_target = req.body.value("channel_fd", -1);
  const int channel_src = req.fds.size() > 2 ? req.fds[2].get() : -1;
  if (detail::install_child_fds(req.fds[0].get(), req.fds[1].get(), channel_src, channel_target) !=
      0)
    ::_exit(127);
  // No exec follows: the received descriptors must be closed, except where a dup2 has already
  // put one of ours on the same number.
  for (auto& f : req.fds) {
    const int n = f.get();
    if (n <= 2 || n == channel_target)
      f.release();
    else
      f.reset();
  }

  const std::string cwd = req.body.value("cwd", "");
  if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) {
    const std::string text =
        "worker pool: cannot change directory to '" + cwd + "': " + errno_text(errno) + "\n";
    ssize_t ignored = ::write(2, text.data(), text.size());
    (void)ignored;
    ::_exit(127);
  }
  ::clearenv();
  for (const auto& e : req.body.value("env", std::vector<std::string>{}))
    ::putenv(::strdup(e.c_str()));  // putenv keeps the pointer: the copy lives as long as we do
  if (o.after_fork_child) o.after_fork_child();
  o.child_main(req.body.value("argv", std::vector<std::string>{}));
  ::_exit(127);
}

/** Whether `pid` has a descriptor of the socket with this inode. */
bool holds_socket(pid_t pid, unsigned long inode) {
  namespace fs = std::filesystem;
  const std::string target = "socket:[" + std::to_string(inode) + "]";
  std::error_code ec;
  for (fs::directory_iterator fd(fs::path("/proc") / std::to_string(pid) / "fd", ec), end;
       !ec && fd != end; fd.increment(ec)) {
    std::error_code link_ec;
    if (fs::read_symlink(fd->path(), link_ec).string() == target) return true;
  }
  return false;
}

/** The process of this user that holds the socket with this inode (one of its descriptors links
 *  to "socket:[inode]"), or 0. Other users' processes are skipped unread. */
pid_t own_process_holding(unsigned long inode) {
  namespace fs = std::filesystem;
  const uid_t me = ::geteuid();
  std::error_code ec;
  for (fs::directory_iterator p("/proc", ec), end; !ec && p != end; p.increment(ec)) {
    const std::string pid = p->path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    struct stat st {};
    if (::stat(p->path().c_str(), &st) != 0 || st.st_uid != me) continue;
    const auto n = static_cast<pid_t>(std::stol(pid));
    if (holds_socket(n, inode)) return n;  // a process that ends meanwhile is skipped
  }
  return 0;
}

/** The children of `pid` that have not ended (zombies left out): a pool server's requests in
 *  progress. */
std::size_t children_running(pid_t pid) {
  std::size_t n = 0;
  for (const pid_t c : detail::children_of(pid)) {
    const auto fields = stat_fields(c);
    if (!fields.empty() && fields[0] != "Z" && fields[0] != "X") ++n;
  }
  return n;
}

/** How long ago the process started (/proc/PID/stat's start time, field 22, against
 *  /proc/uptime); nullopt where either cannot be read. */
std::optional<std::chrono::duration<double>> process_age(pid_t pid) {
  const auto fields = stat_fields(pid);
  double uptime_s = 0;
  std::ifstream uptime_file("/proc/uptime");
  const long ticks_per_s = ::sysconf(_SC_CLK_TCK);
  if (fields.size() <= 19 || !(uptime_file >> uptime_s) || ticks_per_s <= 0) return std::nullopt;
  const double start_s = static_cast<double>(std::strtoull(fields[19].c_str(), nullptr, 10)) /
                         static_cast<double>(ticks_per_s);
  return std::chrono::duration<double>(std::max(0.0, uptime_s - start_s));
}

/** The socket named `address` that is not a connection: its inode (0: none) and whether it
 *  accepts. */
std::pair<unsigned long, bool> claim_of(const std::string& address) {
  for (const auto& s : abstract_sockets(address))
    if (s.name == address && !s.connected) return {s.inode, s.accepting};
  return {0, false};
}

}  // namespace

std::vector<abstract_socket> abstract_sockets(std::string_view prefix) {
  // Lines: "Num: RefCount Protocol Flags Type St Inode [Path]"; an abstract name is "@name".
  std::vector<abstract_socket> out;
  std::ifstream in("/proc/net/unix");
  const std::string needle = "@" + std::string(prefix);
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    if (line.find(needle) == std::string::npos) continue;  // most lines, unparsed
    std::istringstream fields(line);
    std::string num, refcount, protocol, flags, type, st, path;
    unsigned long inode = 0;
    if (!(fields >> num >> refcount >> protocol >> flags >> type >> st >> inode >> path)) continue;
    if (path.size() < 2 || path.rfind(needle, 0) != 0) continue;
    constexpr unsigned long accepts_connections = 0x10000;  // __SO_ACCEPTCON
    constexpr unsigned long ss_unconnected = 1;             // socket_state SS_UNCONNECTED
    abstract_socket s;
    s.name = path.substr(1);
    s.accepting = (std::strtoul(flags.c_str(), nullptr, 16) & accepts_connections) != 0;
    // Connections, accepted or still queued (SS_CONNECTING, inode 0), carry the listener's name.
    s.connected = std::strtoul(st.c_str(), nullptr, 16) != ss_unconnected || inode == 0;
    s.inode = inode;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<pool_server_info> pool_servers(std::string_view prefix) {
  std::vector<pool_server_info> out;
  for (const auto& s : abstract_sockets(prefix)) {
    if (s.connected) continue;
    const pid_t pid = own_process_holding(s.inode);
    if (pid <= 0) continue;
    pool_server_info i;
    i.address = s.name;
    i.inode = s.inode;
    i.accepting = s.accepting;
    i.stopped = is_stopped(pid);
    i.pid = pid;
    i.age_s = process_age(pid).value_or(std::chrono::duration<double>(0)).count();
    i.serving = children_running(pid);
    std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
    for (std::string arg; std::getline(cmdline, arg, '\0');) i.argv.push_back(arg);
    std::error_code ec;
    i.executable =
        std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec).string();
    out.push_back(std::move(i));
  }
  return out;
}

pool_stop_result stop_pool_server(const pool_server_info& p, bool force,
                                  std::chrono::milliseconds wait) {
  const unique_fd pidfd = detail::open_pidfd(p.pid);
  // Opened first, then checked: a pidfd names one process, so the one that holds the socket now
  // is the one signalled, whatever became of the pid since the listing.
  if (!holds_socket(p.pid, p.inode)) return {pool_stop::gone, {}};
  if (is_stopped(p.pid) && !force)
    return {pool_stop::halted, "stopped (SIGSTOP, a debugger) or frozen; --force ends it"};
  if (const auto n = children_running(p.pid); n > 0 && !force)
    return {pool_stop::serving,
            fmt::format("serving {} evaluation{}; --force stops it and ends them", n,
                        n == 1 ? "" : "s")};
  const auto send = [&](int sig) {
#ifdef SYS_pidfd_send_signal
    if (pidfd.open()) return ::syscall(SYS_pidfd_send_signal, pidfd.get(), sig, nullptr, 0) == 0;
#endif
    return ::kill(p.pid, sig) == 0;
  };
  if (!send(SIGTERM)) {
    if (errno == ESRCH) return {pool_stop::gone, {}};
    return {pool_stop::failed, fmt::format("SIGTERM failed: {}", errno_text(errno))};
  }
  if (force) send(SIGCONT);  // a stopped server takes the SIGTERM once it runs
  const auto until = steady::now() + wait;
  while (true) {
    if (pidfd.open()) {
      pollfd ended{pidfd.get(), POLLIN, 0};
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(until - steady::now()).count();
      if (::poll(&ended, 1, static_cast<int>(std::max<std::int64_t>(0, left))) > 0)
        return {pool_stop::stopped, {}};
    } else {
      if (!holds_socket(p.pid, p.inode)) return {pool_stop::stopped, {}};
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (steady::now() >= until)
      return {pool_stop::not_ended, fmt::format("still running {} ms after SIGTERM", wait.count())};
  }
}

pool_wait wait_for_pool(const std::string& address, std::chrono::milliseconds limit) {
  const auto start = steady::now();
  pool_wait out;
  unsigned long checked = 0;  // the claim being waited for, its holder found to be ours
  pid_t holder = 0;           // that holder
  auto deadline = start;      // when that holder will be `limit` old
  bool slept = false;         // looks alone are not a wait: `waited` stays 0 until a sleep
  while (true) {
    const auto [claim, accepting] = claim_of(address);
    if (slept) out.waited = steady::now() - start;
    if (accepting || claim == 0) {
      out.state = accepting ? pool_state::accepting : pool_state::absent;
      return out;
    }
    if (claim != checked) {
      holder = own_process_holding(claim);
      if (holder == 0) {
        // Another user's, or one that ended between the two reads: only a claim still there
        // is another user's.
        if (claim_of(address).first != claim) continue;
        out.state = pool_state::foreign;
        return out;
      }
      checked = claim;
      const auto age = process_age(holder).value_or(std::chrono::duration<double>(0));
      deadline = steady::now() + std::chrono::duration_cast<steady::duration>(
                                     std::chrono::duration<double>(limit) - age);
    }
    out.state = pool_state::starting;
    const auto left = deadline - steady::now();
    // A stopped pool starts no sooner for the wait: taken as stuck at once.
    if (left <= steady::duration::zero() || is_stopped(holder)) return out;
    std::this_thread::sleep_for(std::min<steady::duration>(left, std::chrono::milliseconds(20)));
    slept = true;
  }
}

std::optional<process_result> run_process_in_pool(const std::string& address,
                                                  const spawn_options& options,
                                                  std::string* refused) {
  const auto refuse = [refused](std::string why) -> std::optional<process_result> {
    if (refused != nullptr) *refused = std::move(why);
    return std::nullopt;
  };
  if (options.argv.empty()) return refuse("nothing to run");
  const auto start = steady::now();
  unique_fd conn = connect_to(address);
  if (!conn.open()) return refuse("no pool of this user listens at the address");
  // A stopped pool would take the request and answer nothing for k_message_timeout_s: not asked.
  const auto server = peer_of(conn.get());
  if (!server) return refuse("the pool's connection names no process");
  if (is_stopped(server->pid))
    return refuse(fmt::format("the pool (pid {}) is stopped", server->pid));

  const bool want_channel = options.channel_fd >= 3;
  detail::pipe_ends in = detail::make_pipe();
  detail::pipe_ends out = detail::make_pipe();
  detail::pipe_ends chan;
  if (want_channel) chan = detail::make_pipe();
  std::string cwd = options.cwd.string();
  if (cwd.empty()) {
    std::error_code ec;
    cwd = std::filesystem::current_path(ec).string();
  }
  std::string body;
  try {  // JSON needs UTF-8: an environment that is not runs without the pool
    body = nlohmann::json{{"argv", options.argv},
                          {"env", detail::build_environment(options.env)},
                          {"cwd", cwd},
                          {"channel_fd", want_channel ? options.channel_fd : -1}}
               .dump();
  } catch (const nlohmann::json::exception&) {
    return refuse("the request is not UTF-8 (argv, environment or directory)");
  }
  std::vector<int> fds = {in.read.get(), out.write.get()};
  if (want_channel) fds.push_back(chan.write.get());
  const sigpipe_guard pipe_guard;
  if (!send_request(conn.get(), body, fds))
    return refuse("the request could not be sent: " + errno_text(errno));
  in.read.reset();
  out.write.reset();
  chan.write.reset();
  // The answer comes within milliseconds from a pool that runs; one stopped meanwhile is not
  // waited for (looked at every 100 ms).
  const auto answer_by = steady::now() + std::chrono::seconds(k_message_timeout_s);
  while (!readable_by(conn.get(),
                      std::min(answer_by, steady::now() + std::chrono::milliseconds(100)))) {
    if (is_stopped(server->pid))
      return refuse(fmt::format("the pool (pid {}) was stopped before it answered", server->pid));
    if (steady::now() >= answer_by)  // (read_line would wait its own 10 s on top)
      return refuse("the pool closed the connection (or took 10 s) without an answer");
  }
  const auto reply = read_line(conn.get());
  if (!reply) return refuse("the pool closed the connection (or took 10 s) without an answer");
  if (!reply->contains("pid"))
    return refuse("the pool refused it: " + reply->value("error", reply->dump()));
  const auto pid = static_cast<pid_t>(reply->value("pid", -1));
  // Only a child of the pool we talk to is ever signalled (a child that already ended and was
  // reaped has no /proc entry: nothing to signal either way).
  if (pid <= 1) return refuse("the pool's answer names no process: " + reply->dump());
  const pid_t parent = parent_of(pid);
  if (parent != server->pid && parent != -1) {
    // Where the connection closes too, the pool died after its fork and its child, just
    // started, was reparented: it was ours, and its group is ended (the caller runs the command
    // itself). A pool still there has answered with a pid not its child's: nothing is signalled.
    if (hangs_up_within(conn.get(), std::chrono::milliseconds(1000))) {
      detail::signal_group(pid, SIGKILL);
      return refuse(
          fmt::format("the pool (pid {}) died after it started the child (pid {}), "
                      "which was ended",
                      server->pid, pid));
    }
    return refuse(
        fmt::format("the pool (pid {}) answered with pid {}, which is not its child "
                    "(its parent is {})",
                    server->pid, pid, parent));
  }
  pool_child child(pid, server->pid, std::move(conn));  // registered: an interrupt kills its group
  return detail::supervise(child, std::move(in.write), std::move(out.read), std::move(chan.read),
                           options, start, options.argv[0]);
}

bool serve_pool(const pool_server_options& o) {
  socklen_t length = 0;
  const sockaddr_un addr = abstract_address(o.address, length);
  unique_fd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener.open())
    KJ_THROW(error_kind::io, "worker pool: cannot create a socket: {}", errno_text(errno));
  {
    // The claim before the count: of servers that each count after their own claim, the last of
    // any set that serve sees them all, so no more serve than the count allows. The lock makes
    // claim and count one step among servers that share it: started at once, they would
    // otherwise each count all the others' claims and all give up. A server whose address is
    // held already ends at its claim, without a reason of the count.
    file_lock claiming;
    if (o.may_claim && !o.claim_lock.empty()) {
      claiming = file_lock::acquire(o.claim_lock, std::chrono::seconds(5));
      if (!claiming.held())
        std::fprintf(stderr, "kjudge worker-pool: pid %d claims its address without the lock: %s\n",
                     static_cast<int>(::getpid()), claiming.error().c_str());
    }
    if (::bind(listener.get(), reinterpret_cast<const sockaddr*>(&addr), length) != 0) {
      if (errno == EADDRINUSE) return false;
      KJ_THROW(error_kind::io, "worker pool: cannot bind '{}': {}", o.address, errno_text(errno));
    }
    if (o.may_claim) {
      if (const std::string why = o.may_claim(); !why.empty()) {
        std::fprintf(stderr, "kjudge worker-pool: pid %d does not serve %s: %s\n",
                     static_cast<int>(::getpid()), o.address.c_str(), why.c_str());
        return false;  // the socket closed, the address given up, before the lock is let go
      }
    }
  }
  if (o.prepare) o.prepare();
  if (::listen(listener.get(), 64) != 0)
    KJ_THROW(error_kind::io, "worker pool: cannot listen: {}", errno_text(errno));

  std::list<served> running;
  auto last_activity = steady::now();
  const uid_t me = ::getuid();
  const pid_t server_pid = ::getpid();
  ::signal(SIGCHLD, SIG_DFL);  // an inherited SIG_IGN would make children reap themselves
  ::signal(SIGPIPE, SIG_IGN);
  // Descendants of a child that outlive it outside its group (setsid) are reparented here, not to
  // init, and killed when it is reaped. Children the server had before (none in kjudge) stay.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  const std::vector<pid_t> own_children = detail::children_of(server_pid);
  const auto keep = [&](pid_t p) {
    return std::find(own_children.begin(), own_children.end(), p) != own_children.end() ||
           std::any_of(running.begin(), running.end(), [p](const served& s) { return s.pid == p; });
  };
  while (true) {
    // Reap: a child that ended gets its group ended (descendants would hold the requester's
    // pipes), and what it left outside the group too (every child of the server that it is not
    // running: each child is a subreaper, so only an ended child's leftovers come here); then its
    // status and peak memory go to its requester.
    for (auto it = running.begin(); it != running.end();) {
      siginfo_t info{};
      if (::waitid(P_PID, static_cast<id_t>(it->pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
          info.si_pid != it->pid) {
        ++it;
        continue;
      }
      ::killpg(it->pid, SIGKILL);  // the group's rest: the child itself has ended
      int status = 0;
      rusage usage{};
      while (::wait4(it->pid, &status, 0, &usage) < 0 && errno == EINTR) {
      }
      const pid_t group = it->pid;
      it->pid = -1;  // reaped: not kept
      const std::size_t leftovers = detail::kill_adopted(group, keep);
      if (!it->requester_gone)
        send_line(
            it->conn.get(),
            {{"status", status}, {"max_rss_kb", usage.ru_maxrss}, {"leftovers_killed", leftovers}});
      it = running.erase(it);
      last_activity = steady::now();
    }
    const auto idle_left = o.idle_exit - (steady::now() - last_activity);
    if (running.empty() && (idle_left <= steady::duration::zero() || !listener.open())) return true;

    std::vector<pollfd> fds;
    fds.push_back({listener.get(), POLLIN, 0});
    bool tick = false;  // a child without a pidfd: look again every 5 ms
    for (auto& s : running) {
      if (!s.requester_gone) fds.push_back({s.conn.get(), POLLIN, 0});
      if (s.pidfd.open())
        fds.push_back({s.pidfd.get(), POLLIN, 0});
      else
        tick = true;
    }
    int wait_ms =
        running.empty()
            ? static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(idle_left).count())
            : (tick ? 5 : 60'000);
    wait_ms = std::clamp(wait_ms, 0, 60'000);
    if (::poll(fds.data(), fds.size(), wait_ms) < 0) {
      if (errno == EINTR) continue;
      KJ_THROW(error_kind::io, "worker pool: poll failed: {}", errno_text(errno));
    }
    // A requester that hung up (killed, or gave up) takes its child with it.
    for (std::size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      for (auto& s : running) {
        if (s.requester_gone || s.conn.get() != fds[i].fd) continue;
        char c = 0;
        if (::recv(s.conn.get(), &c, 1, MSG_DONTWAIT) <= 0 || (fds[i].revents & POLLHUP) != 0) {
          s.requester_gone = true;
          detail::signal_group(s.pid, SIGKILL);
        }
      }
    }
    if ((fds[0].revents & POLLIN) == 0) continue;

    unique_fd conn(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn.open()) continue;
    last_activity = steady::now();
    // Only our own user may start processes as us, and only from our pid namespace (pid 0: a
    // process we cannot see, whose process groups we could not tell apart).
    const auto cred = peer_of(conn.get());
    if (!cred || cred->uid != me || cred->pid <= 0) continue;
    auto request = receive_request(conn.get());
    if (!request || request->fds.size() < 2 || !request->body.contains("argv")) {
      send_line(conn.get(), {{"error", "malformed request"}});
      continue;
    }
    if (o.stale) {
      if (const std::string why = o.stale(); !why.empty()) {
        // Refused: the requester runs its worker itself. The address is given up now (a new pool
        // may claim it) and the server ends once the children it runs have ended.
        std::fprintf(stderr, "kjudge worker-pool: pid %d stops: %s\n", static_cast<int>(::getpid()),
                     why.c_str());
        send_line(conn.get(), {{"error", "stale pool: " + why}});
        listener.reset();
        continue;
      }
    }
    std::vector<int> server_fds = {listener.get(), conn.get()};
    for (auto& s : running) {  // another evaluation's connection or pidfd must not reach this one
      server_fds.push_back(s.conn.get());
      if (s.pidfd.open()) server_fds.push_back(s.pidfd.get());
    }
    if (o.before_fork) o.before_fork();
    const pid_t pid = ::fork();
    if (pid == 0) become_child(o, *request, server_fds, server_pid);
    if (o.after_fork_parent) o.after_fork_parent();
    if (pid < 0) {
      send_line(conn.get(), {{"error", "fork failed: " + errno_text(errno)}});
      continue;
    }
    // The child makes its own session and group (reset_child_process); until it has, the
    // requester's signals reach it by its pid (signal_group).
    request->fds.clear();
    if (!send_line(conn.get(), {{"pid", pid}})) detail::signal_group(pid, SIGKILL);
    running.push_back({std::move(conn), pid, detail::open_pidfd(pid), false});
  }
}

namespace {

/** The signals run_guarded() passes on to its child. */
constexpr std::array<int, 4> k_passed_on = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};

/** The guarded child of run_guarded(), for the forwarding handler (0: none). */
volatile sig_atomic_t g_guarded = 0;

extern "C" void forward_to_guarded(int sig) {
  const int saved = errno;
  const pid_t child = static_cast<pid_t>(g_guarded);
  if (child > 0) ::kill(child, sig);
  errno = saved;
}

}  // namespace

int run_guarded(const std::function<int()>& body,
                const std::function<void(int, std::size_t)>& ended) {
  // Waited for here: an inherited SIG_IGN (it survives exec) would have the kernel reap the child
  // itself, and its status would be lost.
  ::signal(SIGCHLD, SIG_DFL);
  // Held until the handlers are in place: one that came between the fork and them would end this
  // process by its default action and leave the child unguarded.
  sigset_t passed_on, before;
  sigemptyset(&passed_on);
  for (const int sig : k_passed_on) sigaddset(&passed_on, sig);
  ::sigprocmask(SIG_BLOCK, &passed_on, &before);
  // A subreaper before the fork: once the child has ended, whatever its descendants leave (its
  // workers, then the daemons they had adopted) is reparented here, and to nobody else's care.
  const bool subreaper = ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
  const int subreaper_errno = errno;
  const pid_t child = subreaper ? ::fork() : -1;
  if (child == 0) {
    ::sigprocmask(SIG_SETMASK, &before, nullptr);
    ::prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);  // the body makes itself one where it needs to
    int code = 1;
    try {
      code = body();
    } catch (...) {
    }
    ::_exit(code);
  }
  if (child < 0) {
    const int err = subreaper ? errno : subreaper_errno;
    ::sigprocmask(SIG_SETMASK, &before, nullptr);
    std::fprintf(stderr, "kjudge: pid %d runs unguarded: %s failed: %s\n",
                 static_cast<int>(::getpid()), subreaper ? "fork" : "PR_SET_CHILD_SUBREAPER",
                 errno_text(err).c_str());
    return body();
  }
  g_guarded = static_cast<sig_atomic_t>(child);
  struct sigaction forward {};
  forward.sa_handler = forward_to_guarded;
  sigemptyset(&forward.sa_mask);
  forward.sa_flags = SA_RESTART;
  for (const int sig : k_passed_on) ::sigaction(sig, &forward, nullptr);
  ::sigprocmask(SIG_SETMASK, &before, nullptr);
  // Seen ended but not reaped, so that its pid cannot be reused while a signal may still be
  // passed on to it; then reaped.
  siginfo_t info{};
  int waited = 0;
  while ((waited = ::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT)) != 0 &&
         errno == EINTR) {
  }
  const int wait_errno = errno;
  g_guarded = 0;
  while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {  // the status is `info`'s
  }
  int code = 0;
  if (waited != 0) {
    std::fprintf(stderr, "kjudge: pid %d lost its child %d: waitid failed: %s\n",
                 static_cast<int>(::getpid()), static_cast<int>(child),
                 errno_text(wait_errno).c_str());
    code = 127;
  } else {
    code = info.si_code == CLD_EXITED ? info.si_status : 128 + info.si_status;
  }
  // Every process here now was left by the child's descendants: its own children were
  // reparented here when it ended, before its end could be waited for.
  const std::size_t killed = detail::kill_adopted(0, [](pid_t) { return false; });
  if (ended) ended(code, killed);
  return code;
}

}  // namespace kj::runner
