#include <kjudge/roofline/result.hpp>

#include <kjudge/core/stats.hpp>

#include <algorithm>

#include <kjudge/core/error.hpp>

namespace kj::roofline {

namespace {

using nlohmann::json;

template <class T>
void put_optional(json& j, const char* key, const std::optional<T>& v) {
  j[key] = v ? json(*v) : json(nullptr);
}

template <class T>
void get_optional(const json& j, const char* key, std::optional<T>& v) {
  if (j.contains(key) && !j.at(key).is_null())
    v = j.at(key).get<T>();
  else
    v.reset();
}

template <class T>
void get_if(const json& j, const char* key, T& v) {
  if (j.contains(key) && !j.at(key).is_null()) v = j.at(key).get<T>();
}

void put_common(json& j, const std::string& method, const std::string& reason) {
  j["method"] = method;
  if (!reason.empty()) j["unavailable_reason"] = reason;
}

json to_json_figure(const bandwidth_figure& f) {
  json j = {{"kind", "bandwidth"},
            {"best_tbps", f.best_tbps},
            {"median_tbps", f.median_tbps},
            {"repetitions_tbps", f.repetitions_tbps},
            {"working_set_bytes", f.working_set_bytes},
            {"bytes_per_launch", f.bytes_per_launch},
            {"launch_ms", f.launch_ms}};
  put_common(j, f.method, f.unavailable_reason);
  return j;
}

json to_json_figure(const compute_figure& f) {
  json j = {{"kind", "compute"},
            {"best_tflops", f.best_tflops},
            {"median_tflops", f.median_tflops},
            {"repetitions_tflops", f.repetitions_tflops},
            {"flop_per_launch", f.flop_per_launch},
            {"launch_ms", f.launch_ms}};
  put_common(j, f.method, f.unavailable_reason);
  return j;
}

json to_json_figure(const latency_figure& f) {
  json j = {{"kind", "latency"},
            {"best_us", f.best_us},
            {"median_us", f.median_us},
            {"repetitions_us", f.repetitions_us},
            {"launches_per_repetition", f.launches_per_repetition},
            {"repetition_ms", f.repetition_ms}};
  put_common(j, f.method, f.unavailable_reason);
  return j;
}

void from_json_figure(const json& j, bandwidth_figure& f) {
  get_if(j, "best_tbps", f.best_tbps);
  get_if(j, "median_tbps", f.median_tbps);
  get_if(j, "repetitions_tbps", f.repetitions_tbps);
  get_if(j, "working_set_bytes", f.working_set_bytes);
  get_if(j, "bytes_per_launch", f.bytes_per_launch);
  get_if(j, "launch_ms", f.launch_ms);
  get_if(j, "method", f.method);
  get_if(j, "unavailable_reason", f.unavailable_reason);
}

void from_json_figure(const json& j, compute_figure& f) {
  get_if(j, "best_tflops", f.best_tflops);
  get_if(j, "median_tflops", f.median_tflops);
  get_if(j, "repetitions_tflops", f.repetitions_tflops);
  get_if(j, "flop_per_launch", f.flop_per_launch);
  get_if(j, "launch_ms", f.launch_ms);
  get_if(j, "method", f.method);
  get_if(j, "unavailable_reason", f.unavailable_reason);
}

void from_json_figure(const json& j, latency_figure& f) {
  get_if(j, "best_us", f.best_us);
  get_if(j, "median_us", f.median_us);
  get_if(j, "repetitions_us", f.repetitions_us);
  get_if(j, "launches_per_repetition", f.launches_per_repetition);
  get_if(j, "repetition_ms", f.repetition_ms);
  get_if(j, "method", f.method);
  get_if(j, "unavailable_reason", f.unavailable_reason);
}

/** The benchmarks by their JSON name, in report order. */
template <class Result, class Visit>
void for_each_figure(Result& r, Visit&& visit) {
  visit("dram_read", r.dram_read);
  visit("dram_write", r.dram_write);
  visit("dram_copy", r.dram_copy);
  visit("l2_read", r.l2_read);
  visit("shared_read", r.shared_read);
  visit("fp32_fma", r.fp32_fma);
  visit("fp64_fma", r.fp64_fma);
  visit("fp16_tensor", r.fp16_tensor);
  visit("bf16_tensor", r.bf16_tensor);
  visit("launch_stream", r.launch_stream);
  visit("launch_stream_queued", r.launch_stream_queued);
  visit("launch_graph", r.launch_graph);
  visit("round_trip", r.round_trip);
}

}  // namespace

void summarise(bandwidth_figure& f) {
  const auto& r = f.repetitions_tbps;
  f.best_tbps = r.empty() ? 0.0 : *std::max_element(r.begin(), r.end());
  f.median_tbps = stats::median(r);
}

void summarise(compute_figure& f) {
  const auto& r = f.repetitions_tflops;
  f.best_tflops = r.empty() ? 0.0 : *std::max_element(r.begin(), r.end());
  f.median_tflops = stats::median(r);
}

void summarise(latency_figure& f) {
  const auto& r = f.repetitions_us;
  f.best_us = r.empty() ? 0.0 : *std::min_element(r.begin(), r.end());
  f.median_us = stats::median(r);
}

void to_json(nlohmann::json& j, const roofline_result& r) {
  const auto& g = r.gpu;
  j = json::object();
  j["schema"] = r.schema;
  j["gpu"] = {{"name", g.name},
              {"uuid", g.uuid},
              {"pci_bus_id", g.pci_bus_id},
              {"cc_major", g.cc_major},
              {"cc_minor", g.cc_minor},
              {"sm_count", g.sm_count},
              {"memory_bytes", g.memory_bytes},
              {"l2_bytes", g.l2_bytes},
              {"smem_per_sm_bytes", g.smem_per_sm_bytes},
              {"driver_version", g.driver_version},
              {"runtime_version", g.runtime_version}};
  j["measured_at_utc"] = r.measured_at_utc;
  j["measure_s"] = r.measure_s;
  json c = {{"source", r.clocks.source},
            {"readings", r.clocks.readings},
            {"clock_event_reasons", r.clocks.clock_event_reasons}};
  put_optional(c, "sm_min_mhz", r.clocks.sm_min_mhz);
  put_optional(c, "sm_median_mhz", r.clocks.sm_median_mhz);
  put_optional(c, "sm_max_mhz", r.clocks.sm_max_mhz);
  put_optional(c, "sm_default_mhz", r.clocks.sm_default_mhz);
  put_optional(c, "sm_boost_mhz", r.clocks.sm_boost_mhz);
  j["clocks"] = std::move(c);
  json b = json::object();
  for_each_figure(r, [&b](const char* name, const auto& f) { b[name] = to_json_figure(f); });
  j["benchmarks"] = std::move(b);
  j["flags"] = r.flags;
}

void from_json(const nlohmann::json& j, roofline_result& r) {
  try {
    if (!j.is_object() || j.value("schema", "") != roofline_schema)
      KJ_THROW(error_kind::protocol, "not a {} object (schema '{}')", roofline_schema,
               j.is_object() ? j.value("schema", "") : std::string("?"));
    r = roofline_result{};
    const auto& g = j.at("gpu");
    // What get_if reads from something that is no object is nothing: a `gpu` of 5 gave an
    // empty device, and a negative count read into an unsigned field a huge one.
    const auto require_object = [](const nlohmann::json& v, const char* name) {
      if (!v.is_object())
        KJ_THROW(error_kind::protocol, "malformed {} object: `{}` is a {}, not an object",
                 roofline_schema, name, v.type_name());
    };
    require_object(g, "gpu");
    for (const char* name :
         {"cc_major", "cc_minor", "sm_count", "memory_bytes", "l2_bytes", "smem_per_sm_bytes"})
      if (g.contains(name) && g.at(name).is_number() && g.at(name).get<double>() < 0)
        KJ_THROW(error_kind::protocol, "malformed {} object: gpu.{} is negative ({})",
                 roofline_schema, name, g.at(name).dump());
    get_if(g, "name", r.gpu.name);
    get_if(g, "uuid", r.gpu.uuid);
    get_if(g, "pci_bus_id", r.gpu.pci_bus_id);
    get_if(g, "cc_major", r.gpu.cc_major);
    get_if(g, "cc_minor", r.gpu.cc_minor);
    get_if(g, "sm_count", r.gpu.sm_count);
    get_if(g, "memory_bytes", r.gpu.memory_bytes);
    get_if(g, "l2_bytes", r.gpu.l2_bytes);
    get_if(g, "smem_per_sm_bytes", r.gpu.smem_per_sm_bytes);
    get_if(g, "driver_version", r.gpu.driver_version);
    get_if(g, "runtime_version", r.gpu.runtime_version);
    get_if(j, "measured_at_utc", r.measured_at_utc);
    get_if(j, "measure_s", r.measure_s);
    if (j.contains("clocks")) {
      const auto& c = j.at("clocks");
      require_object(c, "clocks");
      get_if(c, "source", r.clocks.source);
      get_if(c, "readings", r.clocks.readings);
      get_if(c, "clock_event_reasons", r.clocks.clock_event_reasons);
      get_optional(c, "sm_min_mhz", r.clocks.sm_min_mhz);
      get_optional(c, "sm_median_mhz", r.clocks.sm_median_mhz);
      get_optional(c, "sm_max_mhz", r.clocks.sm_max_mhz);
      get_optional(c, "sm_default_mhz", r.clocks.sm_default_mhz);
      get_optional(c, "sm_boost_mhz", r.clocks.sm_boost_mhz);
    }
    const auto& b = j.at("benchmarks");
    require_object(b, "benchmarks");
    for_each_figure(r, [&b](const char* name, auto& f) {
      if (b.contains(name))
        from_json_figure(b.at(name), f);
      else
        f.unavailable_reason = absent_reason;
    });
    get_if(j, "flags", r.flags);
  } catch (const nlohmann::json::exception& e) {
    KJ_THROW(error_kind::protocol, "malformed {} object: {}", roofline_schema, e.what());
  }
}

std::vector<std::string> absent_benchmarks(const roofline_result& r) {
  std::vector<std::string> out;
  for_each_figure(r, [&](const char* name, const auto& f) {
    if (f.unavailable_reason == absent_reason) out.emplace_back(name);
  });
  return out;
}

}  // namespace kj::roofline
