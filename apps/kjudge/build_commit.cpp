#include "build_commit.hpp"

#include <kjudge/source_commit.hpp>

namespace kj::app {

const char* build_commit() noexcept {
  return KJ_SOURCE_COMMIT;
}

}  // namespace kj::app
