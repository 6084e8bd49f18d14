// Dereferences a null pointer on the host inside the forward call: the worker dies of SIGSEGV.
#include <kjudge/candidate.h>

extern "C" KJ_EXPORT int kj_forward(const kj_call* call) {
  volatile int* nowhere = nullptr;
  *nowhere = call->num_inputs;
  return 0;
}
