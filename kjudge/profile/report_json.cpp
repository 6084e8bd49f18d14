// JSON of kjudge.profile/2 (read: /1 too). The raw inputs (every counter, the roofs, the CUPTI
// forward) are written in full next to the derived figures; reading takes the raw inputs and
// derives again with build_report(), so a restored report holds the same numbers, classes and flags
// as the one written, through the same checks.

#include <kjudge/profile/report.hpp>

#include <algorithm>
#include <cstdint>
#include <string>

#include <kjudge/core/error.hpp>
#include <kjudge/profile/forward_json.hpp>

namespace kj::profile {

namespace {

using json = nlohmann::json;

json optional_number(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

std::optional<double> optional_from(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<double>();
}

/** A figure that is 0 where it was not measured (a ceiling, a device time): null then, so that
 *  no reader takes the 0 for a measurement. */
template <class T>
json measured_or_null(T v) {
  return v > 0 ? json(v) : json(nullptr);
}

/** A text that is empty where nothing was run (the counters' tool and controls): null then. */
json text_or_null(const std::string& v) {
  return v.empty() ? json(nullptr) : json(v);
}

/** The field read back, `unset` where null or absent (what measured_or_null() and text_or_null()
 *  wrote null for, and what profiles of kjudge.profile/1 wrote as 0 or ""). */
template <class T>
T field_or(const json& j, const char* key, T unset) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? unset : it->get<T>();
}

json ops_json(const scalar_ops& o) {
  return {{"add", o.add}, {"mul", o.mul}, {"fma", o.fma}};
}

scalar_ops ops_from(const json& j) {
  return {j.value("add", 0.0), j.value("mul", 0.0), j.value("fma", 0.0)};
}

json flops_json(const flop_counts& f) {
  return {{"fp64", ops_json(f.fp64)},
          {"fp32", ops_json(f.fp32)},
          {"fp16", ops_json(f.fp16)},
          {"bf16", ops_json(f.bf16)},
          {"tensor_fp64_flop", f.tensor_fp64_flop},
          {"tensor_tf32_flop", f.tensor_tf32_flop},
          {"tensor_fp16_flop", f.tensor_fp16_flop},
          {"tensor_bf16_flop", f.tensor_bf16_flop},
          {"tensor_fp8_flop", f.tensor_fp8_flop}};
}

flop_counts flops_from(const json& j) {
  flop_counts f;
  f.fp64 = ops_from(j.value("fp64", json::object()));
  f.fp32 = ops_from(j.value("fp32", json::object()));
  f.fp16 = ops_from(j.value("fp16", json::object()));
  f.bf16 = ops_from(j.value("bf16", json::object()));
  f.tensor_fp64_flop = j.value("tensor_fp64_flop", 0.0);
  f.tensor_tf32_flop = j.value("tensor_tf32_flop", 0.0);
  f.tensor_fp16_flop = j.value("tensor_fp16_flop", 0.0);
  f.tensor_bf16_flop = j.value("tensor_bf16_flop", 0.0);
  f.tensor_fp8_flop = j.value("tensor_fp8_flop", 0.0);
  return f;
}

json counters_json(const kernel_metrics& k) {
  return {{"name", k.name},
          {"demangled_name", k.demangled_name},
          {"duration_ns", k.duration_ns},
          {"grid", dims(k.grid)},
          {"block", dims(k.block)},
          {"registers_per_thread", k.registers_per_thread},
          {"shared_mem_per_block_bytes", k.shared_mem_per_block_bytes},
          {"occupancy_limit_registers_blocks", k.occupancy_limit_registers},
          {"occupancy_limit_shared_mem_blocks", k.occupancy_limit_shared_mem},
          {"occupancy_limit_warps_blocks", k.occupancy_limit_warps},
          {"occupancy_limit_blocks_blocks", k.occupancy_limit_blocks},
          {"waves_per_sm", k.waves_per_sm},
          {"sm_count", k.sm_count},
          {"max_warps_per_sm", k.max_warps_per_sm},
          {"dram_read_bytes", k.dram_read_bytes},
          {"dram_write_bytes", k.dram_write_bytes},
          {"l1_hit_sectors", k.l1_hit_sectors},
          {"l1_sectors", k.l1_sectors},
          {"l2_hit_sectors", k.l2_hit_sectors},
          {"l2_sectors", k.l2_sectors},
          {"global_load_requests", k.global_load_requests},
          {"global_load_sectors", k.global_load_sectors},
          {"global_store_requests", k.global_store_requests},
          {"global_store_sectors", k.global_store_sectors},
          {"sm_active_cycles", k.sm_active_cycles},
          {"elapsed_cycles", k.elapsed_cycles},
          {"warps_active_warp_cycles", k.warps_active},
          {"theoretical_occupancy_pct", optional_number(k.theoretical_occupancy_pct)},
          {"sm_throughput_pct", optional_number(k.sm_throughput_pct)},
          {"memory_throughput_pct", optional_number(k.memory_throughput_pct)},
          {"flops", flops_json(k.flops)},
          {"instructions_issued", k.instructions_issued},
          {"instructions_per_pipe", k.instructions_per_pipe},
          {"stall_cycles", k.stall_cycles},
          {"unreported_metrics", k.unreported_metrics}};
}

kernel_metrics counters_from(const json& j) {
  kernel_metrics k;
  k.name = j.at("name").get<std::string>();
  k.demangled_name = j.value("demangled_name", std::string{});
  k.duration_ns = j.at("duration_ns").get<double>();
  k.grid = dims_from(j.value("grid", json()));
  k.block = dims_from(j.value("block", json()));
  k.registers_per_thread = j.value("registers_per_thread", std::uint32_t{0});
  k.shared_mem_per_block_bytes = j.value("shared_mem_per_block_bytes", 0.0);
  k.occupancy_limit_registers = j.value("occupancy_limit_registers_blocks", std::uint32_t{0});
  k.occupancy_limit_shared_mem = j.value("occupancy_limit_shared_mem_blocks", std::uint32_t{0});
  k.occupancy_limit_warps = j.value("occupancy_limit_warps_blocks", std::uint32_t{0});
  k.occupancy_limit_blocks = j.value("occupancy_limit_blocks_blocks", std::uint32_t{0});
  k.waves_per_sm = j.value("waves_per_sm", 0.0);
  k.sm_count = j.value("sm_count", std::uint32_t{0});
  k.max_warps_per_sm = j.value("max_warps_per_sm", std::uint32_t{0});
  k.unreported_metrics = j.value("unreported_metrics", std::vector<std::string>{});
  k.dram_read_bytes = j.value("dram_read_bytes", 0.0);
  k.dram_write_bytes = j.value("dram_write_bytes", 0.0);
  k.l1_hit_sectors = j.value("l1_hit_sectors", 0.0);
  k.l1_sectors = j.value("l1_sectors", 0.0);
  k.l2_hit_sectors = j.value("l2_hit_sectors", 0.0);
  k.l2_sectors = j.value("l2_sectors", 0.0);
  k.global_load_requests = j.value("global_load_requests", 0.0);
  k.global_load_sectors = j.value("global_load_sectors", 0.0);
  k.global_store_requests = j.value("global_store_requests", 0.0);
  k.global_store_sectors = j.value("global_store_sectors", 0.0);
  k.sm_active_cycles = j.value("sm_active_cycles", 0.0);
  k.elapsed_cycles = j.value("elapsed_cycles", 0.0);
  k.warps_active = j.value("warps_active_warp_cycles", 0.0);
  k.theoretical_occupancy_pct = optional_from(j, "theoretical_occupancy_pct");
  k.sm_throughput_pct = optional_from(j, "sm_throughput_pct");
  k.memory_throughput_pct = optional_from(j, "memory_throughput_pct");
  k.flops = flops_from(j.value("flops", json::object()));
  k.instructions_issued = j.value("instructions_issued", 0.0);
  k.instructions_per_pipe = j.value("instructions_per_pipe", std::map<std::string, double>{});
  k.stall_cycles = j.value("stall_cycles", std::map<std::string, double>{});
  return k;
}

json derived_json(const derived_metrics& d) {
  json flop_rate = json::object(), flop_pct = json::object();
  for (auto t : all_flop_types) {
    flop_rate[std::string(to_string(t))] = d.flops(t);
    flop_pct[std::string(to_string(t))] = d.flop_pct(t);
  }
  return {{"dram_bytes_per_s", d.dram_bytes_per_s},
          {"l2_bytes_per_s", d.l2_bytes_per_s},
          {"l1_bytes_per_s", d.l1_bytes_per_s},
          {"l1_hit_rate_pct", d.l1_hit_rate_pct},
          {"l2_hit_rate_pct", d.l2_hit_rate_pct},
          {"global_load_sectors_per_request", d.global_load_sectors_per_request},
          {"global_store_sectors_per_request", d.global_store_sectors_per_request},
          {"achieved_occupancy_pct", d.achieved_occupancy_pct},
          {"theoretical_occupancy_pct", d.theoretical_occupancy_pct},
          {"sm_busy_pct", d.sm_busy_pct},
          {"flop_per_s", flop_rate},
          {"arithmetic_intensity_flop_per_byte", d.arithmetic_intensity_flop_per_byte},
          {"dram_throughput_pct", d.dram_throughput_pct},
          {"l2_throughput_pct", d.l2_throughput_pct},
          {"l1_throughput_pct", d.l1_throughput_pct},
          {"flop_throughput_pct", flop_pct},
          {"memory_throughput_pct", d.memory_throughput_pct},
          {"compute_throughput_pct", d.compute_throughput_pct},
          {"stall_share_pct", d.stall_share_pct},
          {"stall_cycles_per_issued_instruction", d.stall_cycles_per_issued_instruction},
          {"bound", {{"class", to_string(d.bound.bound)}, {"reason", d.bound.reason}}}};
}

json profile_json(const kernel_profile& p) {
  return {{"counters", counters_json(p.counters)}, {"derived", derived_json(p.derived)}};
}

json bandwidth_json(const bandwidth_ceiling& c) {
  return {{"measured_bytes_per_s", measured_or_null(c.measured_bytes_per_s)},
          {"datasheet_bytes_per_s", measured_or_null(c.datasheet_bytes_per_s)},
          {"working_set_bytes", measured_or_null(c.working_set_bytes)}};
}

bandwidth_ceiling bandwidth_from(const json& j) {
  return {field_or(j, "measured_bytes_per_s", 0.0), field_or(j, "datasheet_bytes_per_s", 0.0),
          field_or(j, "working_set_bytes", std::uint64_t{0})};
}

json ceilings_json(const ceilings& c) {
  json compute = json::object();
  for (auto t : all_flop_types)
    compute[std::string(to_string(t))] = {
        {"measured_flop_per_s", measured_or_null(c.at(t).measured_flop_per_s)},
        {"datasheet_dense_flop_per_s", measured_or_null(c.at(t).datasheet_dense_flop_per_s)}};
  return {{"l1", bandwidth_json(c.l1)},
          {"l2", bandwidth_json(c.l2)},
          {"dram", bandwidth_json(c.dram)},
          {"compute", compute}};
}

ceilings ceilings_from(const json& j) {
  ceilings c;
  c.l1 = bandwidth_from(j.at("l1"));
  c.l2 = bandwidth_from(j.at("l2"));
  c.dram = bandwidth_from(j.at("dram"));
  const json& compute = j.at("compute");
  for (auto t : all_flop_types) {
    const auto it = compute.find(std::string(to_string(t)));
    if (it == compute.end()) continue;
    c.at(t) = {field_or(*it, "measured_flop_per_s", 0.0),
               field_or(*it, "datasheet_dense_flop_per_s", 0.0)};
  }
  return c;
}

json side_json(const side_profile& s) {
  json kernels = json::array();
  for (const auto& k : s.kernels) kernels.push_back(profile_json(k));
  json durations = json::array();
  for (const auto& d : s.durations)
    durations.push_back({{"name", d.name},
                         {"cupti_ns", d.cupti_ns},
                         {"ncu_ns", d.ncu_ns},
                         {"difference_pct", d.difference_pct}});
  return {{"side", s.side},
          {"device_time_ns", measured_or_null(s.device_time_ns)},
          {"device_time_from_graph", s.device_time_from_graph},
          {"kernels", kernels},
          {"total", s.total ? profile_json(*s.total) : json(nullptr)},
          {"bound", {{"class", to_string(s.bound.bound)}, {"reason", s.bound.reason}}},
          {"roofline",
           {{"intensity_flop_per_byte", s.intensity_flop_per_byte},
            {"achieved_flop_per_s", s.achieved_flop_per_s},
            {"attainable_flop_per_s", s.attainable_flop_per_s}}},
          {"cupti", s.cupti ? to_json(*s.cupti) : json(nullptr)},
          {"durations", durations},
          {"flags", s.flags}};
}

/** The raw inputs a side was built from. */
side_inputs side_inputs_from(const json& j) {
  side_inputs in;
  for (const auto& k : j.at("kernels")) in.ncu_kernels.push_back(counters_from(k.at("counters")));
  if (const auto it = j.find("cupti"); it != j.end() && !it->is_null())
    in.cupti = cupti_forward_from_json(*it);
  in.device_time_ns = field_or(j, "device_time_ns", 0.0);
  in.device_time_from_graph = j.value("device_time_from_graph", false);
  return in;
}

/** The written flags, then any that derivation raises now and they lack (a flag added after
 *  build_report() by the caller survives the round trip). */
std::vector<flag> merged_flags(const json& j, const std::vector<flag>& derived) {
  std::vector<flag> out = j.value("flags", std::vector<flag>{});
  append_unique(out, derived);
  return out;
}

}  // namespace

nlohmann::json to_json(const profile_report& r) {
  return {{"schema", r.schema},
          {"problem", r.problem},
          {"candidate", r.candidate},
          {"gpu", r.gpu},
          {"ceilings_source", r.ceilings_source},
          {"ceilings", ceilings_json(r.roofs)},
          {"counters",
           {{"collected", r.counters.collected},
            {"tool", text_or_null(r.counters.tool)},
            {"clock_control", text_or_null(r.counters.clock_control)},
            {"cache_control", text_or_null(r.counters.cache_control)},
            {"unavailable_reason", r.counters.unavailable_reason},
            // null where no Nsight Compute run happened (no ncu, no counters asked for)
            {"wall_s", r.counters.wall_s > 0 ? json(r.counters.wall_s) : json(nullptr)},
            {"missing_metrics", r.counters.missing_metrics},
            {"nvtx_unreadable", r.counters.nvtx_unreadable}}},
          {"sides",
           {{"reference", side_json(r.reference)}, {"candidate", side_json(r.candidate_side)}}},
          {"fusion_ratio", r.fusion_ratio},
          {"flags", r.flags}};
}

profile_report report_from_json(const nlohmann::json& j) {
  const json* schema = j.is_object() && j.contains("schema") ? &j["schema"] : nullptr;
  if (schema == nullptr || (*schema != profile_schema && *schema != profile_schema_v1))
    KJ_THROW(error_kind::protocol, "not a {} profile (nor {}): schema is {}", profile_schema,
             profile_schema_v1, schema != nullptr ? schema->dump() : "missing");
  try {
    counter_source counters;
    const json& c = j.at("counters");
    counters.collected = c.value("collected", false);
    counters.tool = field_or(c, "tool", std::string{});
    counters.clock_control = field_or(c, "clock_control", std::string{});
    counters.cache_control = field_or(c, "cache_control", std::string{});
    counters.unavailable_reason = c.value("unavailable_reason", std::string{});
    counters.wall_s = field_or(c, "wall_s", 0.0);  // null: no Nsight Compute run
    // Absent in profiles written before the field existed: nothing was known to be missing.
    counters.missing_metrics = c.value("missing_metrics", std::vector<std::string>{});
    counters.nvtx_unreadable = c.value("nvtx_unreadable", std::vector<std::string>{});
    const json& sides = j.at("sides");
    const json& ref = sides.at("reference");
    const json& cand = sides.at("candidate");
    profile_report r =
        build_report(j.at("problem").get<std::string>(), j.at("candidate").get<std::string>(),
                     j.value("gpu", std::string{}), ceilings_from(j.at("ceilings")),
                     j.value("ceilings_source", std::string{}), std::move(counters),
                     side_inputs_from(ref), side_inputs_from(cand));
    r.flags = merged_flags(j, r.flags);
    r.reference.flags = merged_flags(ref, r.reference.flags);
    r.candidate_side.flags = merged_flags(cand, r.candidate_side.flags);
    return r;
  } catch (const nlohmann::json::exception& e) {
    KJ_THROW(error_kind::protocol, "malformed {} profile: {}", profile_schema, e.what());
  }
}

}  // namespace kj::profile
