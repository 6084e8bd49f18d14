#include <kjudge/core/source_commit.hpp>

#include <atomic>

namespace kj {
namespace {

std::atomic<const char*> g_commit{"unknown"};

}  // namespace

const char* source_commit() noexcept {
  return g_commit.load(std::memory_order_acquire);
}

void set_source_commit(const char* commit) noexcept {
  if (commit != nullptr && *commit != '\0') g_commit.store(commit, std::memory_order_release);
}

}  // namespace kj
