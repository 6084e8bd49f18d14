#pragma once
/** @file A native candidate loaded from its shared library, and the kj_call records that hand it
 *  kjudge-owned memory (include/kjudge/candidate.h). */

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <kjudge/candidate.h>
#include <kjudge/cuda/graph.hpp>
#include <kjudge/measure/target.hpp>
#include <kjudge/python/bridge.hpp>

namespace kj::native {

/** The dlopen'd library. It is never unloaded: its kernels may still be queued on the stream and
 *  its CUDA module registrations live as long as the process. */
class candidate_library {
 public:
  /** Throws kj::error(candidate) when the library cannot be loaded or lacks kj_forward. */
  explicit candidate_library(const std::filesystem::path& path);

  /** Calls kj_forward; throws kj::error(candidate) with the candidate's message on non-zero,
   *  or with the CUDA error its own runtime recorded during the call (a refused launch). */
  void forward(const kj_call& call) const;
  /** kj_workspace_bytes when exported, else default_workspace_bytes. */
  [[nodiscard]] std::uint64_t workspace_bytes(const kj_call& shape_only_call) const;

  static constexpr std::uint64_t default_workspace_bytes = 16ull << 20;

 private:
  using forward_fn = int (*)(const kj_call*);
  using workspace_fn = std::uint64_t (*)(const kj_call*);
  using probe_fn = int (*)(char*, unsigned long);
  forward_fn m_forward = nullptr;
  workspace_fn m_workspace = nullptr;
  probe_fn m_probe = nullptr;  ///< include/kjudge/detail/launch_probe.h, built in by kjudge
  std::string m_path;
};

/** Owns the kj_tensor arrays and error buffer behind one kj_call. Views must outlive it. */
class call_record {
 public:
  call_record(const std::vector<python::tensor_view>& inputs,
              const std::vector<python::tensor_view>& params,
              const std::vector<python::tensor_view>& outputs, void* stream);
  call_record(const call_record&) = delete;
  call_record& operator=(const call_record&) = delete;
  call_record(call_record&&) = delete;

  void set_workspace(void* data, std::uint64_t bytes) noexcept;
  /** The same record with the workspace nulled (tensors as they are), for kj_workspace_bytes. */
  [[nodiscard]] kj_call shape_only() const noexcept;
  [[nodiscard]] const kj_call& call() noexcept;

 private:
  std::vector<kj_tensor> m_inputs, m_params, m_outputs;
  std::vector<std::string> m_names;  // backing storage for kj_tensor::name
  std::vector<char> m_error;
  kj_call m_call{};
};

/** Times a native candidate through the timing engine: one call_record per input set. */
class native_target final : public measure::target {
 public:
  /** `refresh(sample)` rewrites the inputs for a sample and returns the set index to use (the
   *  records point at those inputs); without it sets rotate unchanged. */
  native_target(const candidate_library& library, std::vector<std::unique_ptr<call_record>> calls,
                std::function<std::size_t(std::size_t)> refresh = {})
      : m_library(library), m_calls(std::move(calls)), m_refresh(std::move(refresh)) {}
  void prepare(std::size_t sample_index) override {
    m_index = (m_refresh ? m_refresh(sample_index) : sample_index) % m_calls.size();
  }
  void run() override { m_library.forward(m_calls[m_index]->call()); }
  /** One stream capture of kj_forward per input set (its record's pointers are fixed); replays
   *  go to the record's stream, as run() does. */
  [[nodiscard]] std::string capture_graphs() override;
  void run_graph() override;
  void drop_graphs() override { m_graphs.clear(); }
  [[nodiscard]] std::size_t input_sets() const override { return m_calls.size(); }
  [[nodiscard]] std::string name() const override { return "candidate"; }

 private:
  const candidate_library& m_library;
  std::vector<std::unique_ptr<call_record>> m_calls;
  std::function<std::size_t(std::size_t)> m_refresh;
  std::size_t m_index = 0;
  std::vector<cuda::graph_exec> m_graphs;  ///< one per input set, after capture_graphs()
};

}  // namespace kj::native
