#include <kjudge/native/candidate_library.hpp>

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstring>
#include <utility>

#include <kjudge/core/error.hpp>
#include <kjudge/cuda/stream.hpp>

namespace kj::native {

candidate_library::candidate_library(const std::filesystem::path& path) : m_path(path.string()) {
  // RTLD_LOCAL: two candidates' symbols never mix; RTLD_NOW: missing symbols fail here, not later.
  void* handle = ::dlopen(m_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) KJ_THROW(error_kind::candidate, "cannot load {}: {}", m_path, ::dlerror());
  // The names a C++ definition gets without extern "C" (the header's declarations give C
  // linkage to a source that includes it, unless the definition's parameter is `kj_call*`, not
  // `const kj_call*`: another overload, of C++ linkage): found, they are a mistake to name, not
  // to miss (a kj_workspace_bytes taken for absent gave the default 16 MiB, and a fault in its
  // place).
  struct cxx_name {
    const char* c_name;
    const char* mangled;
  };
  for (const auto& [name, mangled] :
       {cxx_name{"kj_forward", "_Z10kj_forwardPK7kj_call"},
        cxx_name{"kj_forward", "_Z10kj_forwardP7kj_call"},
        cxx_name{"kj_workspace_bytes", "_Z18kj_workspace_bytesPK7kj_call"},
        cxx_name{"kj_workspace_bytes", "_Z18kj_workspace_bytesP7kj_call"}})
    if (::dlsym(handle, name) == nullptr && ::dlsym(handle, mangled) != nullptr)
      KJ_THROW(error_kind::candidate,
               "{} exports {} with C++ linkage ({}): declare it extern \"C\" KJ_EXPORT with "
               "the signature of kjudge/candidate.h (a const kj_call*), or include that header "
               "before defining it",
               m_path, name, mangled);
  m_forward = reinterpret_cast<forward_fn>(::dlsym(handle, "kj_forward"));
  if (!m_forward)
    KJ_THROW(error_kind::candidate,
             "{} does not export kj_forward (declare it extern \"C\" KJ_EXPORT, see "
             "include/kjudge/candidate.h)",
             m_path);
  m_workspace = reinterpret_cast<workspace_fn>(::dlsym(handle, "kj_workspace_bytes"));
  m_probe = reinterpret_cast<probe_fn>(::dlsym(handle, "kjudge_launch_probe_v1"));
  // What the library's runtime recorded while it loaded (its constructors' launches) is not a
  // forward's: cleared, so the first call does not take the blame for it.
  if (m_probe) m_probe(nullptr, 0);
}

void candidate_library::forward(const kj_call& call) const {
  if (call.error && call.error_capacity) call.error[0] = '\0';
  // The runtime's last error cleared before every call: one left by a call that returned
  // non-zero (a forward that failed under graph capture, before its eager launches are timed) or
  // by kj_workspace_bytes is not this call's.
  if (m_probe) m_probe(nullptr, 0);
  const int rc = m_forward(&call);
  if (rc != 0) {
    // The candidate may fill the buffer to its end without a terminating NUL.
    std::string message = call.error && call.error[0]
                              ? std::string(call.error, ::strnlen(call.error, call.error_capacity))
                              : "no message";
    KJ_THROW(error_kind::candidate, "kj_forward returned {}: {}", rc, message);
  }
  // A launch its runtime refused returns nothing to kjudge's runtime and leaves the outputs
  // unwritten: said as the CUDA error it is, not as wrong values.
  if (m_probe) {
    char what[512] = {};
    const int code = m_probe(what, sizeof what);
    // Errors that say the machine cannot run that runtime (its driver, its devices): a hint, not
    // a verdict (the candidate's code drives its runtime and could leave one of these itself;
    // what kjudge knows of the driver it checks before loading the library: worker.cpp).
    std::string hint;
    switch (code) {
      case cudaErrorInsufficientDriver:
      case cudaErrorCallRequiresNewerDriver:
      case cudaErrorNoDevice:
      case cudaErrorUnsupportedPtxVersion:
      case cudaErrorSystemNotReady:
      case cudaErrorSystemDriverMismatch:
      case cudaErrorCompatNotSupportedOnDevice:
        hint =
            "; this error usually says that the machine's driver cannot run the CUDA runtime of "
            "the toolkit that built the library, not the code: build with a toolkit the driver "
            "supports (KJUDGE_NVCC, CUDA_HOME), or update the driver";
        break;
      default:
        break;
    }
    if (code != 0)
      KJ_THROW(error_kind::candidate,
               "kj_forward returned 0, but the CUDA runtime it links recorded an error during the "
               "call: {} (a launch or CUDA call failed; check each with cudaGetLastError and "
               "return non-zero){}",
               what, hint);
  }
}

std::uint64_t candidate_library::workspace_bytes(const kj_call& shape_only_call) const {
  return m_workspace ? m_workspace(&shape_only_call) : default_workspace_bytes;
}

namespace {

kj_tensor to_abi(const python::tensor_view& v, const std::string& name) {
  // The problem's tensor, not the candidate's doing: a native candidate cannot take this
  // problem at all.
  if (v.shape.size() > KJ_MAX_DIMS)
    KJ_THROW(error_kind::problem,
             "tensor '{}' has {} dimensions; the native candidate ABI passes at most {}", name,
             v.shape.size(), KJ_MAX_DIMS);
  kj_tensor t{};
  t.data = v.data;
  t.dtype = static_cast<std::int32_t>(v.type);
  t.ndim = static_cast<std::int32_t>(v.shape.size());
  for (std::size_t i = 0; i < v.shape.size(); ++i) {
    t.shape[i] = v.shape[i];
    t.strides[i] = i < v.strides.size() ? v.strides[i] : 0;
  }
  t.name = name.c_str();
  return t;
}

}  // namespace

call_record::call_record(const std::vector<python::tensor_view>& inputs,
                         const std::vector<python::tensor_view>& params,
                         const std::vector<python::tensor_view>& outputs, void* stream)
    : m_error(4096, '\0') {
  m_names.reserve(inputs.size() + params.size() + outputs.size());
  auto fill = [&](const std::vector<python::tensor_view>& views, std::vector<kj_tensor>& out) {
    for (const auto& v : views) {
      m_names.push_back(v.name);
      out.push_back(to_abi(v, m_names.back()));
    }
  };
  fill(inputs, m_inputs);
  fill(params, m_params);
  fill(outputs, m_outputs);
  m_call.abi_version = KJ_ABI_VERSION;
  m_call.inputs = m_inputs.data();
  m_call.num_inputs = static_cast<std::int32_t>(m_inputs.size());
  m_call.params = m_params.data();
  m_call.num_params = static_cast<std::int32_t>(m_params.size());
  m_call.outputs = m_outputs.data();
  m_call.num_outputs = static_cast<std::int32_t>(m_outputs.size());
  m_call.stream = stream;
  m_call.error = m_error.data();
  m_call.error_capacity = m_error.size();
}

void call_record::set_workspace(void* data, std::uint64_t bytes) noexcept {
  m_call.workspace = data;
  m_call.workspace_bytes = bytes;
}

kj_call call_record::shape_only() const noexcept {
  kj_call c = m_call;
  c.workspace = nullptr;
  c.workspace_bytes = 0;
  return c;
}

const kj_call& call_record::call() noexcept {
  return m_call;
}

std::string native_target::capture_graphs() {
  // Captured on a stream of its own (the timing stream may be the legacy default stream, which
  // cannot be captured), handed to kj_forward in place of the timing stream; replayed on that.
  // A blocking stream: a candidate that launches on the legacy stream instead fails the capture
  // (cudaErrorStreamCaptureImplicit) rather than running outside the graph.
  const cuda::stream capture_stream(cudaStreamDefault);
  std::vector<cuda::graph_exec> graphs;
  graphs.reserve(m_calls.size());
  for (std::size_t i = 0; i < m_calls.size(); ++i) {
    kj_call call = m_calls[i]->call();
    call.stream = capture_stream.get();
    std::string why;
    cuda::graph_exec g = cuda::graph_exec::capture(
        capture_stream.get(), [&] { m_library.forward(call); }, why);
    if (!g) return why;
    graphs.push_back(std::move(g));
  }
  m_graphs = std::move(graphs);
  return {};
}

void native_target::run_graph() {
  if (m_index >= m_graphs.size())
    KJ_THROW(error_kind::internal, "run_graph() without a graph for input set {}", m_index);
  m_graphs[m_index].launch(static_cast<cudaStream_t>(m_calls[m_index]->call().stream));
}

}  // namespace kj::native
