// Checks examples/quantvla/fused.cu's division: q = RN(q0 + RN(x - s*q0) * r) with r = RN(1/s),
// q0 = RN(x * r) (Markstein's correction) against __fdiv_rn(x, s), for scales s = amax *
// float(1/127) as the kernel forms them (amax from ~5e-4 to ~2e3, one per thread), at the 13 floats
// around every tie (k + 0.5) * s for k in [-128, 127] and at 64 random x in [-amax, amax]. Prints
// how many quotients differ and how many of those round (rint) differently; both must be 0.
#include <cuda_runtime.h>
#include <cstdio>
__global__ void check(unsigned long long* bad_q, unsigned long long* bad_i, unsigned seed) {
  const unsigned id = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned h = id * 2654435761u ^ seed;
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  const float amax =
      __uint_as_float(0x3a000000u + (h % (0x45000000u - 0x3a000000u)));  // ~5e-4 .. 2e3
  const float s = fmaxf(amax, 1e-8f) * (1.0f / 127.0f);
  const float r = __frcp_rn(s);
  unsigned long long bq = 0, bi = 0;
  for (int k = -128; k <= 127; ++k) {
    const float t = __fmul_rn(__fadd_rn(static_cast<float>(k), 0.5f), s);  // near a tie
    unsigned tb = __float_as_uint(t);
    for (int d = -6; d <= 6; ++d) {
      const float x = __uint_as_float(tb + d);
      const float ref = __fdiv_rn(x, s);
      const float q0 = __fmul_rn(x, r);
      const float q = __fmaf_rn(__fmaf_rn(-s, q0, x), r, q0);
      bq += q != ref;
      bi += rintf(q) != rintf(ref);
    }
  }
  for (int j = 0; j < 64; ++j) {  // random x in [-amax, amax]
    h = h * 1664525u + 1013904223u;
    const float x = amax * (static_cast<float>(h >> 8) * (2.0f / 16777216.0f) - 1.0f);
    const float ref = __fdiv_rn(x, s);
    const float q0 = __fmul_rn(x, r);
    const float q = __fmaf_rn(__fmaf_rn(-s, q0, x), r, q0);
    bq += q != ref;
    bi += rintf(q) != rintf(ref);
  }
  atomicAdd(bad_q, bq);
  atomicAdd(bad_i, bi);
}
int main() {
  unsigned long long *d, h[2];
  cudaMalloc(&d, 16);
  cudaMemset(d, 0, 16);
  const int blocks = 4096, threads = 256;
  for (unsigned seed = 1; seed <= 8; ++seed) check<<<blocks, threads>>>(d, d + 1, seed * 7919u);
  cudaMemcpy(h, d, 16, cudaMemcpyDeviceToHost);
  const double n = 8.0 * blocks * threads * (256 * 13 + 64);
  std::printf(
      "divcheck: %.3g quotients, %llu differ from __fdiv_rn, %llu round (rint) differently\n", n,
      h[0], h[1]);
  return h[0] == 0 && h[1] == 0 ? 0 : 1;
}
