#include <kjudge/profile/forward_json.hpp>

#include <kjudge/core/error.hpp>

namespace kj::profile {

nlohmann::json to_json(const launch_summary& s) {
  return {{"kernel_launches", s.kernel_launches},
          {"memcpy_count", s.memcpy_count},
          {"memset_count", s.memset_count},
          {"memcpy_bytes", s.memcpy_bytes},
          {"memset_bytes", s.memset_bytes},
          {"untimed_kernels", s.untimed_kernels},
          {"dropped_records", s.dropped_records},
          {"kernel_time_sum_ns", s.kernel_time_sum.count()},
          {"kernel_busy_time_ns", s.kernel_busy_time.count()},
          {"kernel_span_ns", s.kernel_span.count()},
          {"memory_op_time_sum_ns", s.memory_op_time_sum.count()},
          {"kernel_streams", s.kernel_streams},
          {"memory_op_streams", s.memory_op_streams}};
}

void to_json(nlohmann::json& j, const launch_summary& s) {
  j = to_json(s);
}

void to_json(nlohmann::json& j, const peak_memory& m) {
  j = {{"peak_bytes", m.bytes}, {"allocator_bytes", m.allocator_bytes}, {"raw_bytes", m.raw_bytes}};
}

launch_summary launch_summary_from_json(const nlohmann::json& j) {
  launch_summary s;
  s.kernel_launches = j.at("kernel_launches").get<std::uint64_t>();
  s.memcpy_count = j.at("memcpy_count").get<std::uint64_t>();
  s.memset_count = j.at("memset_count").get<std::uint64_t>();
  s.memcpy_bytes = j.value("memcpy_bytes", std::uint64_t{0});
  s.memset_bytes = j.value("memset_bytes", std::uint64_t{0});
  s.untimed_kernels = j.value("untimed_kernels", std::uint64_t{0});
  s.dropped_records = j.value("dropped_records", std::uint64_t{0});
  s.kernel_time_sum = nanoseconds(j.at("kernel_time_sum_ns").get<double>());
  s.kernel_busy_time = nanoseconds(j.at("kernel_busy_time_ns").get<double>());
  s.kernel_span = nanoseconds(j.at("kernel_span_ns").get<double>());
  s.memory_op_time_sum = nanoseconds(j.value("memory_op_time_sum_ns", 0.0));
  s.kernel_streams = j.value("kernel_streams", std::set<std::uint32_t>{});
  s.memory_op_streams = j.value("memory_op_streams", std::set<std::uint32_t>{});
  return s;
}

nlohmann::json dims(const launch_dims& d) {
  return nlohmann::json::array({d.x, d.y, d.z});
}

launch_dims dims_from(const nlohmann::json& j) {
  launch_dims d;
  if (j.is_array() && j.size() == 3) {
    d.x = j[0].get<std::uint32_t>();
    d.y = j[1].get<std::uint32_t>();
    d.z = j[2].get<std::uint32_t>();
  }
  return d;
}

nlohmann::json to_json(const cupti_forward& f) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& k : f.kernels)
    kernels.push_back({{"name", k.name},
                       {"duration_ns", k.duration_ns},
                       {"grid", dims(k.grid)},
                       {"block", dims(k.block)},
                       {"stream_id", k.stream_id}});
  return {{"kernels", kernels},
          {"launches", f.launches},  // checked<T>: {"value": v | null, "flags": [...]}
          {"peak_memory", f.memory},
          // 0: not taken (the forward waited for the host): null, as every figure not taken.
          {"event_time_ns",
           f.event_time_ns > 0 ? nlohmann::json(f.event_time_ns) : nlohmann::json(nullptr)}};
}

cupti_forward cupti_forward_from_json(const nlohmann::json& j) {
  try {
    cupti_forward f;
    for (const auto& k : j.at("kernels")) {
      timed_kernel t;
      t.name = k.at("name").get<std::string>();
      t.duration_ns = k.at("duration_ns").get<double>();
      t.grid = dims_from(k.value("grid", nlohmann::json()));
      t.block = dims_from(k.value("block", nlohmann::json()));
      t.stream_id = k.value("stream_id", std::uint32_t{0});
      f.kernels.push_back(std::move(t));
    }
    f.launches = checked_from_json<launch_summary>(
        j.at("launches"), [](const nlohmann::json& v) { return launch_summary_from_json(v); });
    f.memory = checked_from_json<peak_memory>(j.at("peak_memory"), [](const nlohmann::json& v) {
      return peak_memory{v.at("peak_bytes").get<std::uint64_t>(),
                         v.at("allocator_bytes").get<std::uint64_t>(),
                         v.at("raw_bytes").get<std::uint64_t>()};
    });
    const auto event = j.find("event_time_ns");
    f.event_time_ns = event != j.end() && event->is_number() ? event->get<double>() : 0.0;
    return f;
  } catch (const nlohmann::json::exception& e) {
    KJ_THROW(error_kind::protocol, "malformed CUPTI forward record: {}", e.what());
  }
}

}  // namespace kj::profile
