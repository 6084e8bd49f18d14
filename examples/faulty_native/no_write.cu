// Launches nothing and leaves the outputs as kjudge poisoned them (NaN; for integer and bool
// outputs a fill that alternates between trials).
#include <kjudge/candidate.h>

extern "C" KJ_EXPORT int kj_forward(const kj_call*) {
  return 0;
}
