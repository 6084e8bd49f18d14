// Deliberately broken: a missing semicolon and an undeclared name.
#include <kjudge/candidate.h>

extern "C" KJ_EXPORT int kj_forward(const kj_call* call) {
  int x = 1 return undeclared_name + x;
}
