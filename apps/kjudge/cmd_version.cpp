#include <cstdio>

#include <kjudge/config.hpp>
#include <kjudge/core/error.hpp>
#include <kjudge/core/source_commit.hpp>
#include <kjudge/python/interpreter.hpp>

#include "commands.hpp"

namespace kj::app {

int run_version() {
  std::printf("kjudge %s (%s)\nembeds Python %s\n", KJ_VERSION, source_commit(),
              python::embedded_version().c_str());
  try {
    const auto choice = python::choose_interpreter({});
    std::printf("interpreter %s (%s)\n", choice.executable.c_str(), choice.source.c_str());
  } catch (const kj::error& e) {
    std::printf("interpreter: none usable: %s\n", e.message().c_str());
  }
  return 0;
}

}  // namespace kj::app
