// One QuantVLA problem instance on the device for the bench harnesses (main.cu, graph_paths.cu):
// random inputs and parameters, the kj_call that passes them to kj_forward (examples/quantvla/
// fused.cu, linked in), and the check of its output against a CPU reference.
#pragma once

#include <kjudge/candidate.h>

#include <cuda_runtime.h>

#include "bench_common.cuh"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace qv_bench {

inline kj_tensor make_tensor(void* data, const std::vector<long long>& shape, const char* name) {
  kj_tensor t{};
  t.data = data;
  t.dtype = KJ_DTYPE_F32;
  t.ndim = static_cast<int>(shape.size());
  t.name = name;
  long long stride = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    t.shape[d] = shape[d];
    t.strides[d] = stride;
    stride *= shape[d];
  }
  return t;
}

/** One problem instance on the device, with its host copies and the kj_call for it. */
struct instance {
  int batch, tokens, dim;
  std::vector<float> x, logits, weight, bias;
  float *d_x = nullptr, *d_logits = nullptr, *d_weight = nullptr, *d_bias = nullptr,
        *d_out = nullptr;
  void* workspace = nullptr;
  kj_tensor inputs[2], params[2], outputs[1];
  kj_call call{};
  char error[512] = {};

  instance(int b, int t, int d, unsigned seed) : batch(b), tokens(t), dim(d) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const size_t rows = static_cast<size_t>(b) * t;
    x.resize(rows * d);
    logits.resize(rows);
    weight.resize(static_cast<size_t>(d) * d);
    bias.resize(d);
    for (auto& v : x) v = normal(gen);
    for (auto& v : logits) v = normal(gen);
    for (auto& v : weight) v = normal(gen) / std::sqrt(static_cast<float>(d));
    for (auto& v : bias) v = 0.1f * normal(gen);
    upload(d_x, x);
    upload(d_logits, logits);
    upload(d_weight, weight);
    upload(d_bias, bias);
    check_cuda(cudaMalloc(&d_out, x.size() * sizeof(float)), "cudaMalloc out");
    inputs[0] = make_tensor(d_x, {b, t, d}, "input0");
    inputs[1] = make_tensor(d_logits, {b, t}, "input1");
    params[0] = make_tensor(d_weight, {d, d}, "out_proj.weight");
    params[1] = make_tensor(d_bias, {d}, "out_proj.bias");
    outputs[0] = make_tensor(d_out, {b, t, d}, "output0");
    call.abi_version = KJ_ABI_VERSION;
    call.inputs = inputs;
    call.num_inputs = 2;
    call.params = params;
    call.num_params = 2;
    call.outputs = outputs;
    call.num_outputs = 1;
    call.error = error;
    call.error_capacity = sizeof error;
    call.workspace_bytes = std::max<uint64_t>(kj_workspace_bytes(&call), 256);  // as kjudge
    check_cuda(cudaMalloc(&workspace, call.workspace_bytes), "cudaMalloc workspace");
    call.workspace = workspace;
  }

  static void upload(float*& dst, const std::vector<float>& src) {
    check_cuda(cudaMalloc(&dst, src.size() * sizeof(float)), "cudaMalloc");
    check_cuda(cudaMemcpy(dst, src.data(), src.size() * sizeof(float), cudaMemcpyHostToDevice),
               "upload");
  }

  void forward() {
    if (kj_forward(&call) != 0) {
      std::fprintf(stderr, "kj_forward failed: %s\n", error);
      std::exit(1);
    }
  }

  /** Uploads x and the weights again after the host copies were changed. */
  void reupload() {
    check_cuda(cudaMemcpy(d_x, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice),
               "upload x");
    check_cuda(
        cudaMemcpy(d_weight, weight.data(), weight.size() * sizeof(float), cudaMemcpyHostToDevice),
        "upload weight");
  }

  /** The worst |out - ref| / (atol + 1e-4 |ref|) over all outputs (but output column
   *  `skip_column`): <= 1 passes fp32's atol = rtol = 1e-4 (atol larger for inputs scaled up,
   *  whose cancelling outputs no fp32 GEMM gets within 1e-4). Outputs are poisoned with NaN
   *  first. */
  double worst_error(int skip_column = -1, double atol = 1e-4) {
    check_cuda(cudaMemset(d_out, 0xff, x.size() * sizeof(float)), "poison");
    forward();
    check_cuda(cudaDeviceSynchronize(), "forward");
    return output_error(skip_column, atol);
  }

  /** output_error() of one replay of `graph` (a forward of this instance) on `stream`, into an
   *  output poisoned with NaN first. */
  double graph_error(cudaGraphExec_t graph, cudaStream_t stream) {
    check_cuda(cudaMemsetAsync(d_out, 0xff, x.size() * sizeof(float), stream), "poison");
    check_cuda(cudaGraphLaunch(graph, stream), "graph launch");
    check_cuda(cudaStreamSynchronize(stream), "graph replay");
    return output_error();
  }

  /** output_error() of what the last forward wrote (after a synchronise). */
  double output_error(int skip_column = -1, double atol = 1e-4) {
    std::vector<float> out(x.size());
    check_cuda(cudaMemcpy(out.data(), d_out, out.size() * sizeof(float), cudaMemcpyDeviceToHost),
               "download");
    float amax = 0.0f;
    for (float v : x) amax = std::max(amax, std::fabs(v));
    const float scale = std::max(amax, 1e-8f) * (1.0f / 127.0f);
    std::vector<float> mixed(dim);
    double worst = 0.0;
    for (size_t m = 0; m < logits.size(); ++m) {
      const float alpha = 1.0f / (1.0f + std::exp(-logits[m]));
      for (int k = 0; k < dim; ++k) {
        const float v = x[m * dim + k];
        const float q = std::min(std::max(std::nearbyint(v / scale), -127.0f), 127.0f);
        mixed[k] = alpha * (q * scale) + (1.0f - alpha) * v;
      }
      for (int n = 0; n < dim; ++n) {
        if (n == skip_column) continue;
        double ref = bias[n];
        for (int k = 0; k < dim; ++k)
          ref += static_cast<double>(mixed[k]) * weight[static_cast<size_t>(n) * dim + k];
        const double err = std::fabs(ref - out[m * dim + n]) / (atol + 1e-4 * std::fabs(ref));
        worst = std::isnan(err) ? INFINITY : std::max(worst, err);
      }
    }
    return worst;
  }
};

}  // namespace qv_bench
