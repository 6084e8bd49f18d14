#include <kjudge/core/source_commit.hpp>

#include <kjudge/source_commit.hpp>

namespace kj {

const char* source_commit() noexcept {
  return KJ_SOURCE_COMMIT;
}

}  // namespace kj
