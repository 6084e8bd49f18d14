"""Candidate for problems/level2/quantvla_selective_layout_fusion.py in the KernelBench style: a CUDA
kernel pair built with torch.utils.cpp_extension.load_inline, then cuBLAS for the linear.

  1. partial_absmax: each block reduces max|x| over its grid-stride share into partial[block];
  2. quant_blend: each block reduces the partials to the scale itself (no .item(), no host round
     trip), then writes mixed = alpha * fq(x) + (1 - alpha) * x;
  3. torch.addmm(bias, mixed, W^T) -- the same cuBLAS call nn.Linear makes.

The scale is formed as PyTorch forms it on CUDA (amax * (1.0f / 127.0f)) and the blend keeps the
reference's association without FMA contraction, so ties at x / scale = k + 0.5 round as the
reference rounds them. Built without --use_fast_math: the division must be IEEE.
Parameters keep the reference's names (`out_proj.weight`, `out_proj.bias`).
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP = "torch::Tensor quant_blend(torch::Tensor x, torch::Tensor logits);"

_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

namespace {

constexpr int kThreads = 256;
constexpr int kMaxParts = 512;

__device__ __forceinline__ float block_max(float v, float* red) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) red[warp] = v;
  __syncthreads();
  v = lane < (int)(blockDim.x >> 5) ? red[lane] : 0.0f;
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__global__ void partial_absmax(const float* __restrict__ x, long long n, float* __restrict__ partial) {
  __shared__ float red[32];
  float m = 0.0f;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    m = fmaxf(m, fabsf(x[i]));
  m = block_max(m, red);
  if (threadIdx.x == 0) partial[blockIdx.x] = m;
}

__global__ void quant_blend_kernel(const float* __restrict__ x, const float* __restrict__ logits,
                                   const float* __restrict__ partial, int parts, long long n, int d,
                                   float* __restrict__ mixed) {
  __shared__ float red[32];
  float m = 0.0f;
  for (int i = threadIdx.x; i < parts; i += blockDim.x) m = fmaxf(m, partial[i]);
  m = block_max(m, red);
  const float scale = fmaxf(m, 1e-8f) * (1.0f / 127.0f);
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = x[i];
    const float a = 1.0f / (1.0f + expf(-logits[i / d]));
    float q = rintf(__fdiv_rn(v, scale));
    q = fminf(fmaxf(q, -127.0f), 127.0f);
    const float xq = __fmul_rn(q, scale);
    mixed[i] = __fadd_rn(__fmul_rn(a, xq), __fmul_rn(__fsub_rn(1.0f, a), v));
  }
}

}  // namespace

torch::Tensor quant_blend(torch::Tensor x, torch::Tensor logits) {
  TORCH_CHECK(x.is_cuda() && logits.is_cuda(), "quant_blend: CUDA tensors expected");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32 && logits.scalar_type() == torch::kFloat32,
              "quant_blend: float32 expected");
  TORCH_CHECK(x.dim() == 3 && logits.dim() == 2, "quant_blend: x (B,T,D) and logits (B,T) expected");
  const c10::cuda::CUDAGuard guard(x.device());
  x = x.contiguous();
  logits = logits.contiguous();
  const long long n = x.numel();
  const int d = (int)x.size(2);
  auto mixed = torch::empty_like(x);
  long long blocks = (n + kThreads * 8LL - 1) / (kThreads * 8LL);
  const int parts = (int)std::max(1LL, std::min(blocks, (long long)kMaxParts));
  auto partial = torch::empty({parts}, x.options());
  auto stream = at::cuda::getCurrentCUDAStream();
  partial_absmax<<<parts, kThreads, 0, stream>>>(x.data_ptr<float>(), n, partial.data_ptr<float>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  const int blend_blocks = (int)std::max(1LL, std::min((n + kThreads - 1) / kThreads, 4096LL));
  quant_blend_kernel<<<blend_blocks, kThreads, 0, stream>>>(x.data_ptr<float>(), logits.data_ptr<float>(),
                                                            partial.data_ptr<float>(), parts, n, d,
                                                            mixed.data_ptr<float>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return mixed;
}
"""

_ext = load_inline(
    name="kjudge_quantvla_blend",
    cpp_sources=[_CPP],
    cuda_sources=[_CUDA],
    functions=["quant_blend"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim
        self.out_proj = nn.Linear(dim, dim, bias=True)

    def forward(self, x: torch.Tensor, layout_logits: torch.Tensor) -> torch.Tensor:
        B, T, D = x.shape
        mixed = _ext.quant_blend(x, layout_logits)
        out = torch.addmm(self.out_proj.bias, mixed.view(B * T, D), self.out_proj.weight.t())
        return out.view(B, T, D)
