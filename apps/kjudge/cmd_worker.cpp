#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <string>

#include <kjudge/core/error.hpp>
#include <kjudge/eval/worker.hpp>

#include "commands.hpp"

namespace kj::app {

int run_worker_command() {
  // The job (with the held-out seed) arrives on stdin; read it all, then put /dev/null there so
  // nothing the candidate runs can read it.
  std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  const int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) {
    ::dup2(devnull, STDIN_FILENO);
    ::close(devnull);
  }
  eval::event_writer events(eval::channel_fd);
  try {
    const auto j = eval::job_from_json(nlohmann::json::parse(text));
    eval::run_worker(j, events, [] {
      std::fflush(stdout);
      std::fflush(stderr);
      std::_Exit(0);  // see below
    });
  } catch (const std::exception& e) {
    events.final(eval_status::internal_error, fmt::format("worker: {}", e.what()));
  }
  std::fflush(stdout);
  std::fflush(stderr);
  // Skip interpreter finalisation and static destructors: torch's teardown is slow, and after a
  // candidate's CUDA error the context is unusable anyway. Everything was already reported.
  std::_Exit(0);
}

}  // namespace kj::app
