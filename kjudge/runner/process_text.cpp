// Text around child processes: result descriptions, signal names, output tails.
#include <kjudge/core/error.hpp>
#include <kjudge/core/text.hpp>
#include <kjudge/runner/process.hpp>

#include <charconv>
#include <csignal>
#include <fstream>
#include <iterator>
#include <system_error>

#include <fmt/format.h>

namespace kj::runner {

namespace {

std::string describe_ending(const process_result& r) {
  using enum exit_kind;
  switch (r.how) {
    case exited:
      return fmt::format("exited with code {}", r.exit_code);
    case signaled:
      return fmt::format("killed by signal {} ({})", r.signal, signal_name(r.signal));
    case timed_out:
      // error: what went wrong after the timeout (no exit status came after SIGKILL, or the
      // worker pool's report of the killed child failed).
      return r.error.empty()
                 ? "timed out after " + seconds_text(r.wall.count())
                 : fmt::format("timed out after {}; {}", seconds_text(r.wall.count()), r.error);
    case spawn_failed:
      return fmt::format("failed to start: {}", r.error);
    case lost:
      return fmt::format("ended unobserved: {}", r.error);
  }
  return "in an unknown state";
}

}  // namespace

std::string process_result::describe() const {
  std::string text = describe_ending(*this);
  if (leftovers_killed == 1)
    text += "; 1 process it left behind (outside its process group) was killed";
  else if (leftovers_killed > 1)
    text += fmt::format("; {} processes it left behind (outside its process group) were killed",
                        leftovers_killed);
  return text;
}

std::filesystem::path self_executable() {
  std::error_code ec;
  auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) KJ_THROW(error_kind::io, "cannot read /proc/self/exe: {}", ec.message());
  return path;
}

std::string last_lines(const std::string& text, std::size_t max_lines) {
  if (max_lines == 0 || text.empty()) return {};
  // A trailing newline ends the last line; it does not start an empty one.
  std::size_t end = text.size();
  if (text[end - 1] == '\n') --end;
  std::size_t start = end;
  std::size_t lines = 0;
  while (start > 0) {
    std::size_t nl = text.rfind('\n', start - 1);
    if (nl == std::string::npos) {
      start = 0;
      break;
    }
    if (++lines == max_lines) {
      start = nl + 1;
      break;
    }
    start = nl;
  }
  return text.substr(start);
}

std::string signal_name(int sig) {
  switch (sig) {
#define KJ_SIGNAL_CASE(name) \
  case name:                 \
    return #name;
    KJ_SIGNAL_CASE(SIGHUP)
    KJ_SIGNAL_CASE(SIGINT)
    KJ_SIGNAL_CASE(SIGQUIT)
    KJ_SIGNAL_CASE(SIGILL)
    KJ_SIGNAL_CASE(SIGTRAP)
    KJ_SIGNAL_CASE(SIGABRT)
    KJ_SIGNAL_CASE(SIGBUS)
    KJ_SIGNAL_CASE(SIGFPE)
    KJ_SIGNAL_CASE(SIGKILL)
    KJ_SIGNAL_CASE(SIGUSR1)
    KJ_SIGNAL_CASE(SIGSEGV)
    KJ_SIGNAL_CASE(SIGUSR2)
    KJ_SIGNAL_CASE(SIGPIPE)
    KJ_SIGNAL_CASE(SIGALRM)
    KJ_SIGNAL_CASE(SIGTERM)
    KJ_SIGNAL_CASE(SIGCHLD)
    KJ_SIGNAL_CASE(SIGCONT)
    KJ_SIGNAL_CASE(SIGSTOP)
    KJ_SIGNAL_CASE(SIGTSTP)
    KJ_SIGNAL_CASE(SIGTTIN)
    KJ_SIGNAL_CASE(SIGTTOU)
    KJ_SIGNAL_CASE(SIGURG)
    KJ_SIGNAL_CASE(SIGXCPU)
    KJ_SIGNAL_CASE(SIGXFSZ)
    KJ_SIGNAL_CASE(SIGVTALRM)
    KJ_SIGNAL_CASE(SIGPROF)
    KJ_SIGNAL_CASE(SIGWINCH)
    KJ_SIGNAL_CASE(SIGIO)
    KJ_SIGNAL_CASE(SIGSYS)
#undef KJ_SIGNAL_CASE
    default:
      break;
  }
  // The real-time signals, as kill -l names them ("signal 64 (signal 64)" said nothing of the
  // POSIX timer's signal that ended a candidate's worker).
  if (sig == SIGRTMIN) return "SIGRTMIN";
  if (sig == SIGRTMAX) return "SIGRTMAX";
  if (sig > SIGRTMIN && sig < SIGRTMAX) {
    const int up = sig - SIGRTMIN, down = SIGRTMAX - sig;
    return up <= down ? fmt::format("SIGRTMIN+{}", up) : fmt::format("SIGRTMAX-{}", down);
  }
  return fmt::format("signal {}", sig);
}

std::optional<std::uint64_t> oom_kills_from(std::string_view vmstat) {
  constexpr std::string_view key = "oom_kill ";
  for (std::size_t at = 0; at < vmstat.size();) {
    const std::size_t end = std::min(vmstat.find('\n', at), vmstat.size());
    const std::string_view line = vmstat.substr(at, end - at);
    if (line.starts_with(key)) {
      std::uint64_t n = 0;
      const auto digits = line.substr(key.size());
      const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
      if (ec == std::errc() && ptr == digits.data() + digits.size()) return n;
      return std::nullopt;
    }
    at = end + 1;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> oom_kills() {
  std::ifstream in("/proc/vmstat");
  if (!in) return std::nullopt;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return oom_kills_from(text);
}

}  // namespace kj::runner
