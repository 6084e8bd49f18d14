#include <kjudge/profile/ncu_csv.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <system_error>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include <kjudge/core/error.hpp>

namespace kj::profile {

namespace {

// ---------------------------------------------------------------------------------------------
// CSV (RFC 4180): fields separated by ',', records by LF or CRLF; a quoted field may hold commas,
// line breaks and doubled quotes ("" = one quote). A quote inside an unquoted field is an error.

[[noreturn]] void fail_at(std::size_t line, std::size_t column, std::string_view what) {
  KJ_THROW(error_kind::protocol, "ncu CSV, line {}, column {}: {}", line, column, what);
}

/** Reads records from ncu's output, keeping the line and column for messages. */
class csv_cursor {
 public:
  csv_cursor(std::string_view text, std::size_t pos, std::size_t line)
      : m_text(text), m_pos(pos), m_line(line), m_line_start(pos) {}

  [[nodiscard]] std::size_t line() const noexcept { return m_line; }

  /** Skips blank lines and ncu log lines ("==PROF==", "==WARNING==", ...) at a record start;
   *  false at the end of the text. */
  [[nodiscard]] bool next_record() {
    while (m_pos < m_text.size()) {
      const std::size_t eol = std::min(m_text.find('\n', m_pos), m_text.size());
      std::string_view line = m_text.substr(m_pos, eol - m_pos);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (!line.empty() && !line.starts_with("==")) return true;
      m_pos = eol == m_text.size() ? eol : eol + 1;
      ++m_line;
      m_line_start = m_pos;
    }
    return false;
  }

  /** One record; consumes its line break. */
  [[nodiscard]] std::vector<std::string> record() {
    std::vector<std::string> fields;
    std::string field;
    const std::size_t n = m_text.size();
    for (;;) {
      if (m_pos < n && m_text[m_pos] == '"') {
        const std::size_t open_line = m_line, open_column = column();
        ++m_pos;
        for (;;) {
          if (m_pos >= n)
            fail_at(open_line, open_column, "unterminated quoted field (the output is cut short?)");
          const char c = m_text[m_pos];
          if (c == '"') {
            if (m_pos + 1 < n && m_text[m_pos + 1] == '"') {
              field += '"';
              m_pos += 2;
              continue;
            }
            ++m_pos;
            break;
          }
          field += c;
          ++m_pos;
          if (c == '\n') {
            ++m_line;
            m_line_start = m_pos;
          }
        }
        if (m_pos < n && m_text[m_pos] != ',' && m_text[m_pos] != '\n' && m_text[m_pos] != '\r')
          fail_at(m_line, column(), "expected ',' or the end of the line after a closing quote");
      } else {
        while (m_pos < n && m_text[m_pos] != ',' && m_text[m_pos] != '\n' &&
               m_text[m_pos] != '\r') {
          if (m_text[m_pos] == '"') fail_at(m_line, column(), "a quote inside an unquoted field");
          field += m_text[m_pos++];
        }
      }
      fields.push_back(std::move(field));
      field.clear();
      if (m_pos < n && m_text[m_pos] == ',') {
        ++m_pos;
        continue;
      }
      if (m_pos < n && m_text[m_pos] == '\r') ++m_pos;
      if (m_pos < n && m_text[m_pos] == '\n') {
        ++m_pos;
        ++m_line;
        m_line_start = m_pos;
      }
      return fields;
    }
  }

 private:
  [[nodiscard]] std::size_t column() const noexcept { return m_pos - m_line_start + 1; }

  std::string_view m_text;
  std::size_t m_pos;
  std::size_t m_line;  // 1-based
  std::size_t m_line_start;
};

// ---------------------------------------------------------------------------------------------
// Numbers: "1,536", "137,438,953,472", "298.67", "1e+06"; "" and "n/a" are absent.

enum class number_state { absent, ok, bad };

[[nodiscard]] std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

[[nodiscard]] bool is_digit(char c) noexcept {
  return c >= '0' && c <= '9';
}

[[nodiscard]] number_state read_number(std::string_view s, double& out) {
  s = trim(s);
  if (s.empty() || s == "n/a" || s == "N/A") return number_state::absent;
  std::string clean;
  clean.reserve(s.size());
  std::size_t i = 0;
  if (s[i] == '-' || s[i] == '+') {
    if (s[i] == '-') clean += '-';
    ++i;
  }
  // Integer part; thousands separators only between complete groups of three digits.
  std::size_t group = 0;
  bool separated = false, digits = false;
  for (; i < s.size(); ++i) {
    if (is_digit(s[i])) {
      clean += s[i];
      ++group;
      digits = true;
    } else if (s[i] == ',') {
      if (group == 0 || (separated ? group != 3 : group > 3)) return number_state::bad;
      separated = true;
      group = 0;
    } else {
      break;
    }
  }
  if (separated && group != 3) return number_state::bad;
  if (!digits && (i >= s.size() || s[i] != '.')) return number_state::bad;
  clean.append(s.substr(i));
  const char* end = clean.data() + clean.size();
  const auto [ptr, ec] = std::from_chars(clean.data(), end, out);
  if (ec != std::errc{} || ptr != end || !std::isfinite(out)) return number_state::bad;
  return number_state::ok;
}

// ---------------------------------------------------------------------------------------------
// Units. With --print-units base ncu prints base units; scaled ones are converted all the same.

enum class dimension { time, bytes, count, percent };

/** "a time", ... for messages. */
[[nodiscard]] std::string_view to_string(dimension d) noexcept {
  constexpr std::string_view names[] = {"a time", "a byte count", "a count", "a percentage"};
  return names[static_cast<std::size_t>(d)];
}

/** Factor to the base unit (ns, byte, 1, %); absent for a unit kjudge does not know. */
[[nodiscard]] std::optional<double> unit_factor(dimension d, std::string_view unit) {
  switch (d) {
    case dimension::time: {
      if (unit == "ns" || unit == "nsecond") return 1.0;
      if (unit == "us" || unit == "usecond") return 1e3;
      if (unit == "ms" || unit == "msecond") return 1e6;
      if (unit == "s" || unit == "second") return 1e9;
      return std::nullopt;
    }
    case dimension::bytes: {
      if (unit.ends_with("/block")) unit.remove_suffix(6);  // shared memory per block
      std::string_view base;
      if (unit.ends_with("byte"))
        base = "byte";
      else if (unit.ends_with("B"))
        base = "B";
      else
        return std::nullopt;
      const std::string_view prefix = unit.substr(0, unit.size() - base.size());
      // ncu's K/M/G byte prefixes are decimal (SI); Ki/Mi/Gi are binary.
      static constexpr std::pair<std::string_view, double> prefixes[] = {
          {"", 1.0},         {"K", 1e3},           {"M", 1e6},
          {"G", 1e9},        {"T", 1e12},          {"Ki", 1024.0},
          {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0}};
      for (const auto& [p, f] : prefixes)
        if (prefix == p) return f;
      return std::nullopt;
    }
    case dimension::count: {
      static constexpr std::string_view bases[] = {
          "",       "cycle",           "warp", "inst", "sector", "request", "block",
          "thread", "register/thread", "SM"};
      const auto known = [](std::string_view u) {
        return std::find(std::begin(bases), std::end(bases), u) != std::end(bases);
      };
      if (known(unit)) return 1.0;
      constexpr std::string_view si = "KMGT";  // decimal: Kcycle = 1000 cycles
      if (unit.size() > 1 && known(unit.substr(1)) && si.find(unit.front()) != si.npos)
        return std::pow(1e3, static_cast<double>(si.find(unit.front()) + 1));
      return std::nullopt;
    }
    case dimension::percent: {
      if (unit == "%" || unit.empty()) return 1.0;
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Column -> kernel_metrics field map.

using setter = void (*)(kernel_metrics&, double);

/** Where one field of kernel_metrics comes from. */
struct metric_field {
  std::string_view metric;    ///< column (ncu metric name)
  std::string_view fallback;  ///< another column with the same quantity, or ""
  dimension dim;
  bool integer;  ///< must be a whole number that fits in uint32
  setter set;

  /** In ncu_metric_list(); ncu prints launch__ and device__ metrics without being asked. */
  [[nodiscard]] bool requested() const noexcept {
    return !metric.starts_with("launch__") && !metric.starts_with("device__");
  }
};

// FLOP counters. The smsp__sass_thread_inst_executed_op_* counters count THREAD-level
// instructions: a packed half2 HADD2 / HMUL2 / HFMA2 counts as one, not two, so plain fp16 FLOP
// of packed code are undercounted by up to 2x. ncu's own half-precision roofline applies the same
// convention (hadd + hmul + 2 x hfma). bf16 CUDA-core arithmetic has no separate counter in this
// list (flops.bf16 stays 0). The tensor-path counters sm__ops_path_tensor_src_* count FLOP (an
// m x n x k MMA is 2mnk): the 4096^3 bf16 GEMM of the fixture reports exactly 2 x 4096^3.
// Hit sectors: ncu 2025 names them *_lookup_hit; older releases *_sector_hit (the fallback).
#define KJ_REAL(metric, fallback, dim, expr)                                               \
  {                                                                                        \
    metric, fallback, dimension::dim, false, [](kernel_metrics& k, double v) { expr = v; } \
  }
#define KJ_ADD(metric, dim, expr)                                                     \
  {                                                                                   \
    metric, "", dimension::dim, false, [](kernel_metrics& k, double v) { expr += v; } \
  }
#define KJ_U32(metric, fallback, expr)                                            \
  {                                                                               \
    metric, fallback, dimension::count, true,                                     \
        [](kernel_metrics& k, double v) { expr = static_cast<std::uint32_t>(v); } \
  }
// clang-format off
constexpr metric_field fields[] = {
    KJ_REAL(ncu_metric::duration, "", time, k.duration_ns),
    KJ_U32("launch__grid_dim_x", "", k.grid.x),
    KJ_U32("launch__grid_dim_y", "", k.grid.y),
    KJ_U32("launch__grid_dim_z", "", k.grid.z),
    KJ_U32("launch__block_dim_x", "", k.block.x),
    KJ_U32("launch__block_dim_y", "", k.block.y),
    KJ_U32("launch__block_dim_z", "", k.block.z),
    KJ_U32(ncu_metric::registers, "", k.registers_per_thread),
    KJ_ADD(ncu_metric::shared_static, bytes, k.shared_mem_per_block_bytes),
    KJ_ADD(ncu_metric::shared_dynamic, bytes, k.shared_mem_per_block_bytes),
    KJ_U32("launch__occupancy_limit_registers", "", k.occupancy_limit_registers),
    KJ_U32("launch__occupancy_limit_shared_mem", "", k.occupancy_limit_shared_mem),
    KJ_U32("launch__occupancy_limit_warps", "", k.occupancy_limit_warps),
    KJ_U32("launch__occupancy_limit_blocks", "", k.occupancy_limit_blocks),
    KJ_REAL("launch__waves_per_multiprocessor", "", count, k.waves_per_sm),
    KJ_U32(ncu_metric::sm_count, "launch__sm_count", k.sm_count),
    KJ_U32(ncu_metric::max_warps, "", k.max_warps_per_sm),
    KJ_REAL(ncu_metric::dram_read, "", bytes, k.dram_read_bytes),
    KJ_REAL(ncu_metric::dram_write, "", bytes, k.dram_write_bytes),
    KJ_REAL(ncu_metric::l1_hit_sectors, "l1tex__t_sector_hit.sum", count, k.l1_hit_sectors),
    KJ_REAL(ncu_metric::l1_sectors, "", count, k.l1_sectors),
    KJ_REAL(ncu_metric::l2_hit_sectors, "lts__t_sector_hit.sum", count, k.l2_hit_sectors),
    KJ_REAL(ncu_metric::l2_sectors, "", count, k.l2_sectors),
    KJ_REAL(ncu_metric::load_requests, "", count, k.global_load_requests),
    KJ_REAL(ncu_metric::load_sectors, "", count, k.global_load_sectors),
    KJ_REAL(ncu_metric::store_requests, "", count, k.global_store_requests),
    KJ_REAL(ncu_metric::store_sectors, "", count, k.global_store_sectors),
    KJ_REAL(ncu_metric::sm_active_cycles, "", count, k.sm_active_cycles),
    KJ_REAL(ncu_metric::elapsed_cycles, "", count, k.elapsed_cycles),
    KJ_REAL(ncu_metric::warps_active, "", count, k.warps_active),
    KJ_REAL(ncu_metric::theoretical_occupancy, "", percent, k.theoretical_occupancy_pct),
    KJ_REAL(ncu_metric::sm_sol, "", percent, k.sm_throughput_pct),
    KJ_REAL(ncu_metric::memory_sol, "", percent,
            k.memory_throughput_pct),
    KJ_REAL(ncu_metric::instructions_issued, "", count, k.instructions_issued),
    KJ_REAL(ncu_metric::fp32_add, "", count, k.flops.fp32.add),
    KJ_REAL(ncu_metric::fp32_mul, "", count, k.flops.fp32.mul),
    KJ_REAL(ncu_metric::fp32_fma, "", count, k.flops.fp32.fma),
    KJ_REAL(ncu_metric::fp64_add, "", count, k.flops.fp64.add),
    KJ_REAL(ncu_metric::fp64_mul, "", count, k.flops.fp64.mul),
    KJ_REAL(ncu_metric::fp64_fma, "", count, k.flops.fp64.fma),
    KJ_REAL(ncu_metric::fp16_add, "", count, k.flops.fp16.add),
    KJ_REAL(ncu_metric::fp16_mul, "", count, k.flops.fp16.mul),
    KJ_REAL(ncu_metric::fp16_fma, "", count, k.flops.fp16.fma),
    KJ_REAL(ncu_metric::tensor_fp16, "", count, k.flops.tensor_fp16_flop),
    KJ_REAL(ncu_metric::tensor_bf16, "", count, k.flops.tensor_bf16_flop),
    KJ_REAL(ncu_metric::tensor_tf32, "", count, k.flops.tensor_tf32_flop),
    KJ_REAL(ncu_metric::tensor_fp64, "", count, k.flops.tensor_fp64_flop),
    KJ_REAL(ncu_metric::tensor_fp8, "", count, k.flops.tensor_fp8_flop),
};
// clang-format on
#undef KJ_REAL
#undef KJ_ADD
#undef KJ_U32

}  // namespace

std::vector<std::string_view> ncu_flop_metrics(flop_type t) {
  namespace m = ncu_metric;
  switch (t) {
    case flop_type::fp64:
      return {m::fp64_add, m::fp64_mul, m::fp64_fma};
    case flop_type::fp32:
      return {m::fp32_add, m::fp32_mul, m::fp32_fma};
    case flop_type::fp16:
      return {m::fp16_add, m::fp16_mul, m::fp16_fma};
    case flop_type::bf16:
      return {};
    case flop_type::tensor_fp64:
      return {m::tensor_fp64};
    case flop_type::tensor_tf32:
      return {m::tensor_tf32};
    case flop_type::tensor_fp16:
      return {m::tensor_fp16};
    case flop_type::tensor_bf16:
      return {m::tensor_bf16};
    case flop_type::tensor_fp8:
      return {m::tensor_fp8};
  }
  return {};
}

namespace {

/** Top-level pipes of sm__inst_executed_pipe_<p>.sum (not the _type_/_op_/_cmd_ breakdowns). */
// clang-format off
constexpr std::string_view pipes[] = {"alu", "fma", "fmaheavy", "fmalite", "fp64", "lsu", "tensor",
                                      "tex", "tma", "uniform", "xu", "adu", "cbu", "ipa"};

/** Stall reasons of smsp__warps_issue_stalled_<r>.sum on Hopper ("selected" is issuing, not a
 *  stall). The parser takes whatever reasons the table has; this list is what kjudge asks for. */
constexpr std::string_view stall_reasons[] = {
    "barrier", "branch_resolving", "dispatch_stall", "drain", "gmma", "imc_miss", "lg_throttle",
    "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction",
    "not_selected", "short_scoreboard", "sleeping", "tex_throttle", "wait"};
// clang-format on

/** ncu's own ratios, requested only to cross-check derive(). */
constexpr std::string_view cross_check_metrics[] = {
    "sm__warps_active.avg.pct_of_peak_sustained_active", "l1tex__t_sector_hit_rate.pct",
    "lts__t_sector_hit_rate.pct"};

constexpr std::string_view stall_prefix = ncu_stall_prefix;
constexpr std::string_view pipe_prefix = "sm__inst_executed_pipe_";
constexpr std::string_view nvtx_column_marker = "Push/Pop_Range";

/** A column read into one place, with its unit factor. */
struct bound_column {
  std::size_t index = 0;
  double factor = 1.0;
  bool integer = false;
};

/** Where a row is, for messages. */
struct row_context {
  std::size_t line;
  std::string_view id;
};

[[noreturn]] void fail_field(const row_context& r, std::string_view column, std::string_view what) {
  KJ_THROW(error_kind::protocol, "ncu CSV, line {} (kernel ID {}), column \"{}\": {}", r.line, r.id,
           column, what);
}

/** The value of one bound field; absent when empty or "n/a". */
[[nodiscard]] std::optional<double> field_value(const std::vector<std::string>& columns,
                                                const std::vector<std::string>& row,
                                                const bound_column& b, const row_context& r) {
  double v = 0;
  switch (read_number(row[b.index], v)) {
    case number_state::absent:
      return std::nullopt;
    case number_state::bad:
      fail_field(r, columns[b.index], fmt::format("\"{}\" is not a number", row[b.index]));
    case number_state::ok:
      break;
  }
  v *= b.factor;
  if (b.integer && (v < 0 || v > 4294967295.0 || v != std::floor(v)))
    fail_field(r, columns[b.index],
               fmt::format("\"{}\" is not a whole number in [0, 2^32)", row[b.index]));
  return v;
}

[[nodiscard]] bound_column bind(const ncu_table& t, std::size_t index, dimension d, bool integer) {
  const auto factor = unit_factor(d, t.units[index]);
  if (!factor)
    KJ_THROW(error_kind::protocol,
             "ncu CSV: column \"{}\" has unit \"{}\", which kjudge does not know for {} "
             "(run ncu with --print-units base)",
             t.columns[index], t.units[index], to_string(d));
  return {index, *factor, integer};
}

[[noreturn]] void fail_dims(const row_context& r, std::string_view column, std::string_view s) {
  fail_field(r, column, fmt::format("\"{}\" is not of the form (x, y, z)", s));
}

/** "(128, 1, 1)" -> dims. */
[[nodiscard]] launch_dims parse_dims(std::string_view text, std::string_view column,
                                     const row_context& r) {
  std::string_view s = trim(text);
  if (s.size() < 2 || s.front() != '(' || s.back() != ')') fail_dims(r, column, text);
  s = s.substr(1, s.size() - 2);
  std::uint32_t v[3] = {1, 1, 1};
  for (std::size_t i = 0; i < 3; ++i) {
    const std::size_t comma = i < 2 ? s.find(',') : s.size();
    if (comma == std::string_view::npos) fail_dims(r, column, text);
    const std::string_view part = trim(s.substr(0, comma));
    const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), v[i]);
    if (ec != std::errc{} || ptr != part.data() + part.size()) fail_dims(r, column, text);
    s = i < 2 ? s.substr(comma + 1) : std::string_view{};
  }
  return {v[0], v[1], v[2]};
}

/** `2634  "<default domain>:kjudge_reference:none:none:none:none:none:none" ` -> range names:
 *  a thread id, then one quoted domain:range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg per
 *  pushed range, outermost first. A stack that cannot be read to its end (a range the candidate
 *  named with a quote in it) keeps the ranges read before it, outermost first, kjudge's own among
 *  them, and says why in `unreadable`: it threw, and every kernel of both sides was lost. */
[[nodiscard]] std::vector<std::string> parse_nvtx_stack(std::string_view s, std::string_view column,
                                                        const row_context& r,
                                                        std::string& unreadable) {
  std::vector<std::string> ranges;
  // The rest unreadable: kjudge's own ranges are still looked for in it (by their names between
  // the domain's and the payload's colons), so that a kernel under a candidate's range that
  // cannot be read, outside or inside kjudge's, stays the side's it ran on.
  const auto fail_field = [&](const row_context& row, std::string_view col, std::string why) {
    unreadable =
        fmt::format("line {} (kernel ID {}), column \"{}\": {}", row.line, row.id, col, why);
    for (const std::string_view own : {ncu_reference_range, ncu_candidate_range})
      if (s.find(fmt::format(":{}:", own)) != std::string_view::npos &&
          std::find(ranges.begin(), ranges.end(), own) == ranges.end())
        ranges.emplace_back(own);
  };
  std::size_t i = 0;
  const auto skip_space = [&]() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  };
  skip_space();
  while (i < s.size() && is_digit(s[i])) ++i;  // thread id
  for (;;) {
    skip_space();
    if (i >= s.size()) break;
    if (s[i] != '"') {
      fail_field(r, column, fmt::format("cannot read the NVTX range stack \"{}\"", s));
      return ranges;
    }
    const std::size_t close = s.find('"', i + 1);
    if (close == std::string_view::npos) {
      fail_field(r, column, fmt::format("unterminated NVTX range in \"{}\"", s));
      return ranges;
    }
    const std::string_view entry = s.substr(i + 1, close - i - 1);
    i = close + 1;
    std::vector<std::string_view> parts;
    for (std::size_t start = 0;;) {
      const std::size_t colon = entry.find(':', start);
      parts.push_back(entry.substr(start, colon - start));
      if (colon == std::string_view::npos) break;
      start = colon + 1;
    }
    constexpr std::size_t trailing = 6;  // PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg
    if (parts.size() < 2 + trailing) {
      fail_field(r, column,
                 fmt::format("NVTX range \"{}\" is not domain:range:PL_Type:PL_Value:CLR_Type:"
                             "Color:Msg_Type:Msg",
                             entry));
      return ranges;
    }
    // The range name may itself hold ':'; the domain is before the first one.
    const std::size_t name_begin = parts[0].size() + 1;
    std::size_t name_end = entry.size();
    for (std::size_t k = 0; k < trailing; ++k) name_end -= parts[parts.size() - 1 - k].size() + 1;
    ranges.emplace_back(entry.substr(name_begin, name_end - name_begin));
  }
  return ranges;
}

}  // namespace

std::optional<std::size_t> ncu_table::column(std::string_view name) const {
  const auto it = std::find(columns.begin(), columns.end(), name);
  if (it == columns.end()) return std::nullopt;
  return static_cast<std::size_t>(it - columns.begin());
}

std::optional<double> parse_ncu_number(std::string_view field) {
  double v = 0;
  switch (read_number(field, v)) {
    case number_state::absent:
      return std::nullopt;
    case number_state::ok:
      return v;
    case number_state::bad:
      break;
  }
  KJ_THROW(error_kind::protocol, "ncu CSV: \"{}\" is not a number", field);
}

ncu_table read_ncu_table(std::string_view text) {
  ncu_table t;
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // UTF-8 byte-order mark
  // The table starts at the first line beginning "ID",; everything before is log or app output.
  std::size_t pos = 0, line = 1;
  bool found = false;
  std::string_view first_error;
  while (pos < text.size()) {
    const std::size_t eol = std::min(text.find('\n', pos), text.size());
    const std::string_view l = text.substr(pos, eol - pos);
    if (l.starts_with("\"ID\",")) {
      found = true;
      break;
    }
    if (first_error.empty() && l.starts_with("==ERROR==")) first_error = trim(l);
    pos = eol == text.size() ? eol : eol + 1;
    ++line;
  }
  if (!found) {
    if (text.find("No kernels were profiled") != std::string_view::npos) {
      t.no_kernels_profiled = true;
      return t;
    }
    KJ_THROW(error_kind::protocol,
             "no Nsight Compute table in the output: no line starts with \"ID\", (was ncu run "
             "with --csv --page raw?){}",
             first_error.empty() ? std::string{} : fmt::format("; ncu said: {}", first_error));
  }
  csv_cursor in(text, pos, line);
  (void)in.next_record();
  t.columns = in.record();
  if (!in.next_record())
    fail_at(in.line(), 1, "the table has a header but no units row (output cut short?)");
  const std::size_t units_line = in.line();
  t.units = in.record();
  if (t.units.size() != t.columns.size())
    fail_at(units_line, 1,
            fmt::format("the units row has {} fields, the header {}", t.units.size(),
                        t.columns.size()));
  if (!t.units.front().empty())
    fail_at(units_line, 1,
            fmt::format("expected the units row (empty unit under \"ID\"), found \"{}\"",
                        t.units.front()));
  while (in.next_record()) {
    const std::size_t row_line = in.line();
    auto row = in.record();
    if (row.size() != t.columns.size())
      fail_at(row_line, 1,
              fmt::format("the row has {} fields, the header {} (a truncated or corrupted row)",
                          row.size(), t.columns.size()));
    t.rows.push_back(std::move(row));
    t.row_lines.push_back(row_line);
  }
  return t;
}

ncu_report parse_ncu_raw_csv(std::string_view text) {
  const ncu_table t = read_ncu_table(text);
  ncu_report report;

  std::unordered_map<std::string_view, std::size_t> index;
  for (std::size_t i = t.columns.size(); i-- > 0;) index[t.columns[i]] = i;  // first one wins
  const auto find = [&](std::string_view name) -> std::optional<std::size_t> {
    if (name.empty()) return std::nullopt;
    const auto it = index.find(name);
    if (it == index.end()) return std::nullopt;
    return it->second;
  };

  // Bind every column read before the first row, so a unit error does not depend on the data.
  const auto grid_size = find("Grid Size");
  const auto block_size = find("Block Size");
  std::vector<std::pair<const metric_field*, bound_column>> bound;
  for (const auto& f : fields) {
    auto i = find(f.metric);
    if (!i) i = find(f.fallback);
    if (i) {
      bound.emplace_back(&f, bind(t, *i, f.dim, f.integer));
      continue;
    }
    const bool dims_in_tuple = (f.metric.starts_with("launch__grid_dim_") && grid_size) ||
                               (f.metric.starts_with("launch__block_dim_") && block_size);
    if (!t.no_kernels_profiled && !dims_in_tuple) report.missing_metrics.emplace_back(f.metric);
  }
  const bool grid_from_tuple = grid_size && !find("launch__grid_dim_x");
  const bool block_from_tuple = block_size && !find("launch__block_dim_x");

  std::vector<std::pair<std::string, bound_column>> pipe_columns, stall_columns;
  for (const auto p : pipes)
    if (const auto i = find(fmt::format("{}{}.sum", pipe_prefix, p)))
      pipe_columns.emplace_back(std::string(p), bind(t, *i, dimension::count, false));
  for (std::size_t i = 0; i < t.columns.size(); ++i) {
    std::string_view c = t.columns[i];
    if (!c.starts_with(stall_prefix) || !c.ends_with(".sum")) continue;
    c.remove_prefix(stall_prefix.size());
    c.remove_suffix(4);
    if (c.empty() || c == "selected" || c.ends_with("_not_issued") ||
        c.find('.') != std::string_view::npos)
      continue;
    stall_columns.emplace_back(std::string(c), bind(t, i, dimension::count, false));
  }

  const auto id_col = find("ID");
  const auto name_col = find("Kernel Name");
  if (!name_col && !t.rows.empty())
    KJ_THROW(error_kind::protocol, "ncu CSV: the table has no \"Kernel Name\" column");
  const auto stream_col = find("Stream");
  const auto device_col = find("device__attribute_display_name");
  std::optional<std::size_t> nvtx_col;
  for (std::size_t i = 0; i < t.columns.size(); ++i)
    if (t.columns[i].find(nvtx_column_marker) != std::string::npos) {
      nvtx_col = i;
      break;
    }

  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const auto& row = t.rows[r];
    const row_context ctx{t.row_lines[r], id_col ? std::string_view(row[*id_col]) : "?"};
    ncu_kernel k;
    const bound_column u32_id{id_col.value_or(0), 1.0, true};
    if (id_col)
      k.id = static_cast<std::uint32_t>(field_value(t.columns, row, u32_id, ctx).value_or(0));
    if (stream_col) {
      const bound_column s{*stream_col, 1.0, true};
      k.stream = static_cast<std::uint32_t>(field_value(t.columns, row, s, ctx).value_or(0));
    }
    if (nvtx_col) {
      std::string unreadable;
      k.nvtx_ranges = parse_nvtx_stack(row[*nvtx_col], t.columns[*nvtx_col], ctx, unreadable);
      if (!unreadable.empty()) report.nvtx_unreadable.push_back(std::move(unreadable));
    }
    kernel_metrics& m = k.metrics;
    m.name = row[*name_col];
    m.demangled_name = m.name;  // ncu prints demangled names by default
    for (const auto& [f, b] : bound) {
      if (const auto v = field_value(t.columns, row, b, ctx))
        f->set(m, *v);
      else
        m.unreported_metrics.emplace_back(f->metric);
    }
    if (grid_from_tuple) m.grid = parse_dims(row[*grid_size], t.columns[*grid_size], ctx);
    if (block_from_tuple) m.block = parse_dims(row[*block_size], t.columns[*block_size], ctx);
    // A value ncu printed as n/a (or left empty) is unreported, as for the fields above: not a
    // pipe or stall reason that counted nothing.
    for (const auto& [p, b] : pipe_columns)
      if (const auto v = field_value(t.columns, row, b, ctx))
        m.instructions_per_pipe[p] = *v;
      else
        m.unreported_metrics.push_back(fmt::format("{}{}.sum", pipe_prefix, p));
    for (const auto& [reason, b] : stall_columns)
      if (const auto v = field_value(t.columns, row, b, ctx))
        m.stall_cycles[reason] = *v;
      else
        m.unreported_metrics.push_back(fmt::format("{}{}.sum", stall_prefix, reason));
    if (report.device_name.empty() && device_col) report.device_name = row[*device_col];
    report.kernels.push_back(std::move(k));
  }
  return report;
}

const std::vector<std::string>& ncu_metric_list() {
  static const std::vector<std::string> list = [] {
    std::vector<std::string> out;
    for (const auto& f : fields)
      if (f.requested()) out.emplace_back(f.metric);
    for (const auto m : cross_check_metrics) out.emplace_back(m);
    for (const auto p : pipes) out.push_back(fmt::format("{}{}.sum", pipe_prefix, p));
    for (const auto s : stall_reasons) out.push_back(fmt::format("{}{}.sum", stall_prefix, s));
    return out;
  }();
  return list;
}

std::vector<kernel_metrics> kernels_in_range(const ncu_report& r, std::string_view range) {
  std::vector<kernel_metrics> out;
  for (const auto& k : r.kernels)
    if (std::find(k.nvtx_ranges.begin(), k.nvtx_ranges.end(), range) != k.nvtx_ranges.end())
      out.push_back(k.metrics);
  return out;
}

}  // namespace kj::profile
