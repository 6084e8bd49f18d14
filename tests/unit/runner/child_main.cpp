// A test child for process_test: one behaviour per mode, chosen by argv[1].
//   exit N             exit with code N
//   segfault | abort   die by SIGSEGV / SIGABRT
//   hang               sleep forever
//   ignore-term        ignore SIGTERM, then sleep forever
//   spam BYTES         write BYTES bytes of 'x' to stdout, then "END\n"
//   interleave         alternate lines on stdout and stderr
//   cat                copy stdin to stdout
//   ignore-stdin       exit 0 without reading stdin
//   channel FD TEXT    write TEXT to fd FD, "out\n" to stdout
//   env NAME           print $NAME (or "<unset>")
//   cwd                print the working directory
//   fds                print the open descriptors, one per line
//   rss MIB            touch MIB mebibytes, then exit 0
//   grandchild FILE    fork a child that writes its pid to FILE and sleeps; then sleep forever
//   orphan             fork a child that holds stdout and sleeps; exit 0 at once
//   pid FILE           write our pid to FILE, then sleep forever
//   daemon FILE THEN   leave a daemon: a grandchild that calls setsid() (leaving our process
//                      group) and sleeps holding stdout, its parent gone; write "<our pid>
//                      <daemon pid>" to FILE, then THEN: "exit" (print "parent done", exit 0)
//                      or "hang" (sleep forever)
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

[[noreturn]] void sleep_forever() {
  while (true) ::pause();
}

void write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n <= 0) std::exit(3);
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

void write_all(int fd, const std::string& text) {
  write_all(fd, text.data(), text.size());
}

/** Writes `text` to `path` whole (a temporary name, then rename): a reader never sees half. */
void write_file(const char* path, const std::string& text) {
  const std::string tmp = std::string(path) + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) ::_exit(7);
  std::fputs(text.c_str(), f);
  std::fclose(f);
  if (std::rename(tmp.c_str(), path) != 0) ::_exit(8);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 100;
  const std::string mode = argv[1];
  const char* arg = argc > 2 ? argv[2] : "";
  if (mode == "exit") return std::atoi(arg);
  if (mode == "segfault") ::raise(SIGSEGV);
  if (mode == "abort") std::abort();
  if (mode == "hang") sleep_forever();
  if (mode == "stop-pool") {  // the pool above its guard stopped; "keep": a child holds the pipes
    std::ifstream stat("/proc/" + std::to_string(::getppid()) + "/stat");
    std::string line;
    std::getline(stat, line);
    std::istringstream fields(line.substr(line.rfind(')') + 1));
    std::string state;
    long pool = 0;
    if (!(fields >> state >> pool) || pool <= 1) return 101;
    ::kill(static_cast<pid_t>(pool), SIGSTOP);
    if (argc > 3 && std::string(argv[3]) == "keep" && ::fork() == 0) sleep_forever();
    return std::atoi(arg);
  }
  if (mode == "ignore-term") {
    ::signal(SIGTERM, SIG_IGN);
    sleep_forever();
  }
  if (mode == "spam") {
    std::size_t left = std::strtoull(arg, nullptr, 10);
    const std::string block(1 << 16, 'x');
    while (left > 0) {
      std::size_t n = left < block.size() ? left : block.size();
      write_all(1, block.data(), n);
      left -= n;
    }
    write_all(1, "END\n");
    return 0;
  }
  if (mode == "interleave") {
    for (int i = 0; i < 3; ++i) {
      write_all(1, "out" + std::to_string(i) + "\n");
      write_all(2, "err" + std::to_string(i) + "\n");
    }
    return 0;
  }
  if (mode == "cat") {
    char buf[4096];
    ssize_t n = 0;
    while ((n = ::read(0, buf, sizeof buf)) > 0) write_all(1, buf, static_cast<std::size_t>(n));
    return 0;
  }
  if (mode == "ignore-stdin") return 0;
  if (mode == "channel") {
    write_all(std::atoi(arg), argc > 3 ? argv[3] : "");
    write_all(1, "out\n");
    return 0;
  }
  if (mode == "env") {
    const char* value = std::getenv(arg);
    write_all(1, std::string(value != nullptr ? value : "<unset>") + "\n");
    return 0;
  }
  if (mode == "cwd") {
    char buf[4096];
    if (::getcwd(buf, sizeof buf) == nullptr) return 4;
    write_all(1, std::string(buf) + "\n");
    return 0;
  }
  if (mode == "fds") {
    std::vector<int> fds;
    DIR* dir = ::opendir("/proc/self/fd");
    if (dir == nullptr) return 5;
    const int own = ::dirfd(dir);
    while (dirent* e = ::readdir(dir)) {
      if (e->d_name[0] == '.') continue;
      int fd = std::atoi(e->d_name);
      if (fd != own) fds.push_back(fd);
    }
    ::closedir(dir);
    std::string text;
    for (int fd : fds) text += std::to_string(fd) + "\n";
    write_all(1, text);
    return 0;
  }
  if (mode == "rss") {
    const std::size_t bytes = std::strtoull(arg, nullptr, 10) << 20;
    auto* p = static_cast<volatile char*>(std::malloc(bytes));
    if (p == nullptr) return 6;
    for (std::size_t i = 0; i < bytes; i += 4096) p[i] = 1;
    return 0;
  }
  if (mode == "grandchild") {
    // "after-stdin": once a byte has come on stdin (a requester writes its stdin only once it
    // supervises the child).
    if (argc > 3 && std::string(argv[3]) == "after-stdin") {
      char c = 0;
      if (::read(0, &c, 1) != 1) return 9;
    }
    pid_t pid = ::fork();
    if (pid == 0) {
      // Written whole under a temporary name, then renamed: the test never reads half a pid.
      const std::string tmp = std::string(arg) + ".tmp";
      FILE* f = std::fopen(tmp.c_str(), "w");
      if (f == nullptr) ::_exit(7);
      std::fprintf(f, "%d\n", static_cast<int>(::getpid()));
      std::fclose(f);
      if (std::rename(tmp.c_str(), arg) != 0) ::_exit(8);
      sleep_forever();
    }
    sleep_forever();
  }
  if (mode == "pid") {
    write_file(arg, std::to_string(::getpid()) + "\n");
    sleep_forever();
  }
  if (mode == "daemon") {
    int ready[2];
    if (::pipe(ready) != 0) return 9;
    const pid_t middle = ::fork();
    if (middle == 0) {
      if (::fork() == 0) {
        ::setsid();
        ::close(ready[0]);
        const std::string pid = std::to_string(::getpid());
        write_all(ready[1], pid);
        ::close(ready[1]);
        sleep_forever();
      }
      ::_exit(0);
    }
    ::close(ready[1]);
    int status = 0;
    ::waitpid(middle, &status, 0);
    char buf[32] = {};
    const ssize_t n = ::read(ready[0], buf, sizeof buf - 1);
    if (n <= 0) return 10;
    write_file(arg, std::to_string(::getpid()) + " " + buf + "\n");
    if (argc > 3 && std::string(argv[3]) == "hang") sleep_forever();
    write_all(1, "parent done\n");
    return 0;
  }
  if (mode == "orphan") {
    if (::fork() == 0) sleep_forever();
    write_all(1, "parent done\n");
    return 0;
  }
  return 101;
}
