// Compiles, but exports no kj_forward: its forward is misnamed (and not extern "C"), as when the
// ABI header's declaration is forgotten.
#include <kjudge/candidate.h>

int kj_forward_v2(const kj_call*) {
  return 0;
}
