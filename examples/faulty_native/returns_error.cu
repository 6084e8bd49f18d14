// Refuses every call with a message, as a candidate does for shapes it does not support.
#include <stdio.h>

#include <kjudge/candidate.h>

extern "C" KJ_EXPORT int kj_forward(const kj_call* call) {
  snprintf(call->error, call->error_capacity, "unsupported hidden size %lld",
           static_cast<long long>(call->inputs[0].shape[2]));
  return 22;
}
