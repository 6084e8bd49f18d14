#include <kjudge/eval/protocol.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <kjudge/core/error.hpp>

namespace kj::eval {

event_writer::event_writer(int fd) {
  m_fd = ::fcntl(fd, F_DUPFD_CLOEXEC, 100);
  if (m_fd < 0) KJ_THROW(error_kind::io, "event channel fd {} is not open", fd);
  ::close(fd);
}

event_writer::~event_writer() {
  if (m_fd >= 0) ::close(m_fd);
}

void event_writer::send(const nlohmann::json& event) {
  std::string line = event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line.push_back('\n');
  const std::lock_guard lock(m_mutex);
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(m_fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // the orchestrator is gone; nothing useful to do
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

void event_writer::phase(std::string_view name) {
  send({{"phase", name}, {"t_s", elapsed().count()}});
}

void event_writer::flag(std::string code, std::string severity, std::string message) {
  send({{"flag", kj::flag{std::move(code), std::move(severity), std::move(message)}}});
}

void event_writer::final(eval_status status, std::string_view message) {
  send({{"final", {{"status", to_string(status)}, {"message", message}}}});
}

void apply_event_line(eval_result& r, std::string_view line, fold_state& state) {
  // The worker ends with its final event; anything after it is not the worker's.
  if (line.empty()) return;
  if (state.final_seen) {
    ++state.lines_after_final;
    return;
  }
  nlohmann::json e;
  // No event nests deeper than a few levels; a line that does (a candidate writing into the
  // channel) is malformed: copying or printing a value nested 10^5 deep recurses as deep and
  // would end this process. Nor does one hold millions of values; past the limit, values are
  // dropped as they are read (the callback's false), so such a line costs no more memory.
  bool over_limit = false;  // too deep, or too many values
  std::size_t values = 0;
  const nlohmann::json::parser_callback_t limits =
      [&over_limit, &values](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
        if (depth > k_max_event_depth) over_limit = true;
        if (event == nlohmann::json::parse_event_t::value ||
            event == nlohmann::json::parse_event_t::object_start ||
            event == nlohmann::json::parse_event_t::array_start)
          if (++values > k_max_event_values) over_limit = true;
        return !over_limit;
      };
  try {
    e = nlohmann::json::parse(line.begin(), line.end(), limits);
  } catch (const nlohmann::json::exception&) {
    ++state.malformed_lines;
    return;
  }
  if (over_limit) {
    ++state.malformed_lines;
    return;
  }
  if (!e.is_object()) {
    ++state.malformed_lines;
    return;
  }
  for (const std::string_view key : k_once_events) {
    if (!e.contains(key)) continue;
    const auto in = [key](const std::vector<std::string>& v) {
      return std::find(v.begin(), v.end(), key) != v.end();
    };
    if (!in(state.once_seen))
      state.once_seen.emplace_back(key);
    else if (!in(state.repeated_events))
      state.repeated_events.emplace_back(key);
  }
  try {
    if (auto it = e.find("phase"); it != e.end()) {
      state.last_phase = it->get<std::string>();
      if (state.last_phase.starts_with("trial ") && state.last_phase.ends_with(" candidate"))
        state.candidate_forward_seen = true;
      if (state.last_phase == "load_candidate" || state.last_phase == "load_native")
        state.candidate_code_seen = true;
      if (r.worker.phases.size() < k_max_event_phases)
        r.worker.phases.push_back({state.last_phase, e.value("t_s", 0.0)});
      else
        ++state.events_dropped;
    }
    if (auto it = e.find("provenance"); it != e.end()) {
      nlohmann::json merged = r.prov;
      merged.update(*it);
      r.prov = merged.get<provenance>();
    }
    if (auto it = e.find("build"); it != e.end()) r.build = it->get<build_info>();
    if (auto it = e.find("weight_copy"); it != e.end())
      r.correctness.weight_copy = it->get<std::string>();
    // The candidate's own weights kept (worker: own_weights_pass), sent after weight_copy.
    if (e.contains("weight_copy_undone")) r.correctness.weight_copy = "seed_kept";
    if (auto it = e.find("tolerance_source"); it != e.end())
      r.correctness.tolerance_source = it->get<std::string>();
    if (auto it = e.find("trial"); it != e.end()) {
      if (r.trials.size() < k_max_event_trials)
        r.trials.push_back(it->get<trial_result>());
      else
        ++state.events_dropped;
    }
    if (auto it = e.find("timing"); it != e.end()) r.timing = it->get<measure::comparison>();
    if (auto it = e.find("timing_inputs"); it != e.end()) r.options["timing_inputs"] = *it;
    if (auto it = e.find("launches"); it != e.end()) r.launches = *it;
    if (auto it = e.find("gpu_lock"); it != e.end()) {  // sent once the wait is over
      // Twice when the problem's import took the lock and let it go for the candidate's build.
      r.worker.gpu_lock_wait_s += it->at("waited_s").get<double>();
      r.worker.gpu_lock_at = it->value("at", std::string());
      state.gpu_lock_seen = true;
    }
    if (auto it = e.find("cpu_lock"); it != e.end())  // sent once the wait is over
      r.worker.cpu_lock_wait_s += it->at("waited_s").get<double>();
    if (auto it = e.find("flag"); it != e.end()) {
      auto f = it->get<flag>();
      const bool known = std::any_of(r.flags.begin(), r.flags.end(),
                                     [&f](const flag& g) { return same_flag(f, g); });
      if (!known && r.flags.size() < k_max_event_flags)
        r.flags.push_back(std::move(f));
      else if (!known)
        ++state.flags_dropped;
    }
    if (auto it = e.find("final"); it != e.end()) {
      r.status = eval_status_from_string(it->at("status").get<std::string>());
      r.message = it->value("message", "");
      state.final_seen = true;
    }
  } catch (const std::exception&) {
    ++state.malformed_lines;
  }
}

void summarize_correctness(eval_result& r) {
  auto& c = r.correctness;
  c.trials = c.trials_passed = c.stress_trials = c.stress_passed = c.stress_skipped = 0;
  c.held_out_ran = c.held_out_passed = false;
  c.precision = {};
  double abs_sum = 0, rel_sum = 0;
  std::uint64_t abs_count = 0, rel_count = 0;
  for (const auto& t : r.trials) {
    if (t.kind == "held_out") {
      c.held_out_ran = true;
      c.held_out_passed = t.passed;
    } else if (t.kind == "stress") {
      ++c.stress_trials;
      c.stress_passed += t.passed && !t.skipped ? 1 : 0;
      c.stress_skipped += t.skipped ? 1 : 0;
    } else {
      ++c.trials;
      c.trials_passed += t.passed ? 1 : 0;
    }
    if (t.kind != "nominal") continue;
    for (const auto& o : t.outputs) {
      if (!o.shape_ok()) continue;
      c.precision.max_abs_err =
          max_error(c.precision.max_abs_err, compared_error(o.max_abs_err, o.abs_err_count));
      c.precision.max_rel_err =
          max_error(c.precision.max_rel_err, compared_error(o.max_rel_err, o.rel_err_count));
      // Each output's means weighted by the elements they were taken over: an output of NaN
      // (no finite pair) weighed its element count at an error of 0.
      if (o.abs_err_count > 0)
        abs_sum +=
            compared_error(o.mean_abs_err, o.abs_err_count) * static_cast<double>(o.abs_err_count);
      if (o.rel_err_count > 0)
        rel_sum +=
            compared_error(o.mean_rel_err, o.rel_err_count) * static_cast<double>(o.rel_err_count);
      abs_count += o.abs_err_count;
      rel_count += o.rel_err_count;
    }
  }
  if (abs_count > 0) c.precision.mean_abs_err = abs_sum / static_cast<double>(abs_count);
  if (rel_count > 0) c.precision.mean_rel_err = rel_sum / static_cast<double>(rel_count);
}

}  // namespace kj::eval
