// Probes for examples/quantvla/fused.cu, compiled in with -DKJ_QV_PROBE=N by
// bench/quantvla_phases/run.sh (KJ_QV_PROBES): at probe site N, QV_PROBE(N, v) passes v through a
// dependent chain of 50 FMAs (about 0.1 us at 1.98 GHz) whose result the compiler cannot see
// through, and leaves v as it was. What the delay does to the forward and to the phases says
// whether the site is on the critical path: a site with slack absorbs it, one on the path passes it
// on whole. Sites in the strip kernel:
//   1 the block's maximum, before the cluster barrier and the push (delays the push);
//   2 W's power-of-two scale, after the push (delays the work that needs no scale);
//   3 the scale's reciprocal, after the wait (delays everything after the wait).
// The thirty-eighth session's probes (the same chain written into the source, docs/benchmarks.md):
// at 2 the span grew by 0.13 us with the wait unchanged, at 3 by 0.07 us.
#pragma once

#include <cuda_runtime.h>

#define QV_PROBE_FMA5                            \
  "fma.rn.f32 t, t, 0f3F800001, 0f00000000;\n\t" \
  "fma.rn.f32 t, t, 0f3F800001, 0f00000000;\n\t" \
  "fma.rn.f32 t, t, 0f3F800001, 0f00000000;\n\t" \
  "fma.rn.f32 t, t, 0f3F800001, 0f00000000;\n\t" \
  "fma.rn.f32 t, t, 0f3F800001, 0f00000000;\n\t"

/** v times (1 + 2^-23) fifty times over, one dependent FMA after another, in volatile PTX. */
__device__ __forceinline__ float qv_probe_delay(float v) {
  float r;
  asm volatile(
      "{ .reg .f32 t;\n\tmov.f32 t, %1;\n\t" QV_PROBE_FMA5 QV_PROBE_FMA5 QV_PROBE_FMA5 QV_PROBE_FMA5
          QV_PROBE_FMA5 QV_PROBE_FMA5 QV_PROBE_FMA5 QV_PROBE_FMA5 QV_PROBE_FMA5 QV_PROBE_FMA5
      "mov.f32 %0, t; }"
      : "=f"(r)
      : "f"(v));
  return r;
}

// The chain's result decides whether v is doubled, so the compiler must run the chain before v is
// used; it never is: the test is for a NaN payload GPU arithmetic never produces (an FMA returns
// the canonical NaN, 0x7fffffff).
#define QV_PROBE(site, v)                                                 \
  do {                                                                    \
    if ((site) == KJ_QV_PROBE) {                                          \
      if (__float_as_uint(qv_probe_delay(v)) == 0x7fc00001u) (v) *= 2.0f; \
    }                                                                     \
  } while (0)
