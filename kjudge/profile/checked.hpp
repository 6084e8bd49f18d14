#pragma once
/** @file checked<T>: a derived metric that is either a number that passed its invariant, or the
 *  flag that says why there is no number. A failing metric cannot be read as a number by accident:
 *  value() on a failed metric throws, and the JSON form of a failed metric is `null` plus its
 *  flags. Printers show failure().message (or "n/a") where the number would go. */

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <kjudge/core/error.hpp>
#include <kjudge/core/result.hpp>

namespace kj::profile {

/** Severity strings of kj::flag. */
inline constexpr const char* severity_error = "error";
inline constexpr const char* severity_warning = "warning";
inline constexpr const char* severity_info = "info";

/** Flag code of a metric that cannot be computed (a zero denominator, a counter or roof that was
 *  not collected). Severity "info": nothing is wrong, there is just no number. */
inline constexpr const char* no_data_code = "no_data";

/** True when any flag has severity "error". */
[[nodiscard]] inline bool has_error(const std::vector<flag>& flags) noexcept {
  for (const auto& f : flags)
    if (f.severity == severity_error) return true;
  return false;
}

/** A value of type T that passed its checks, or the reason it is absent. Invariant: a failed
 *  checked holds at least one flag, and failure() is the first. A passing checked may carry notes
 *  (severity info or warning) that travel with the number. A default-constructed checked is failed
 *  with a `no_data` flag: nothing was computed. */
template <class T>
class checked {
 public:
  checked() : m_flags{{no_data_code, severity_info, "not computed"}} {}

  /** A number that passed its checks, with optional notes (none of severity "error"). */
  [[nodiscard]] static checked pass(T value, std::vector<flag> notes = {}) {
    KJ_EXPECTS(!has_error(notes));
    checked c;
    c.m_value = std::move(value);
    c.m_flags = std::move(notes);
    return c;
  }
  /** No number; `reason` says why, `more` carries further flags. */
  [[nodiscard]] static checked fail(flag reason, std::vector<flag> more = {}) {
    checked c;
    c.m_flags = {std::move(reason)};
    for (auto& f : more) c.m_flags.push_back(std::move(f));
    return c;
  }
  /** No number because an input is missing (severity info, code `no_data`). */
  [[nodiscard]] static checked missing(std::string why) {
    return fail({no_data_code, severity_info, std::move(why)});
  }

  [[nodiscard]] bool ok() const noexcept { return m_value.has_value(); }
  explicit operator bool() const noexcept { return ok(); }

  /** The number. Asking a failed metric for its number is a kjudge bug: throws kj::error
   *  (internal) naming the flag, so it can never be printed by mistake. */
  [[nodiscard]] const T& value() const {
    if (!m_value)
      KJ_THROW(error_kind::internal, "a failed metric was read as a number ({}: {})",
               m_flags.front().code, m_flags.front().message);
    return *m_value;
  }
  /** The reason there is no number; throws kj::error (internal) on a passing metric. */
  [[nodiscard]] const flag& failure() const {
    if (m_value) KJ_THROW(error_kind::internal, "failure() of a metric that passed its checks");
    return m_flags.front();
  }
  /** Every flag: the reason (first) when failed, the notes when passed. */
  [[nodiscard]] const std::vector<flag>& flags() const noexcept { return m_flags; }
  /** True when failed for lack of data rather than a broken invariant. */
  [[nodiscard]] bool is_missing() const noexcept {
    return !m_value && m_flags.front().code == no_data_code;
  }

 private:
  std::optional<T> m_value;
  std::vector<flag> m_flags;
};

/** `value` if `flags` holds no error, else failed with the flags (the first error first). This is
 *  the one place a number and its checks meet: a caller cannot keep the number of a failed check.
 */
template <class T>
[[nodiscard]] checked<T> make_checked(T value, std::vector<flag> flags) {
  if (!has_error(flags)) return checked<T>::pass(std::move(value), std::move(flags));
  std::vector<flag> ordered;
  for (auto& f : flags)
    if (f.severity == severity_error) ordered.push_back(f);
  for (auto& f : flags)
    if (f.severity != severity_error) ordered.push_back(f);
  flag first = ordered.front();
  ordered.erase(ordered.begin());
  return checked<T>::fail(std::move(first), std::move(ordered));
}

/** Runs `check` (value -> std::vector<kj::flag>) on `value` and keeps the value only if no error
 *  came back: check_metric(hit_pct, [](double v) { return check_percentage("L2 hit rate", v); }).
 */
template <class T, class Check>
[[nodiscard]] checked<T> check_metric(T value, Check&& check) {
  std::vector<flag> flags = std::forward<Check>(check)(static_cast<const T&>(value));
  return make_checked(std::move(value), std::move(flags));
}

/** Appends a flag; an error flag turns a passing metric into a failed one (losing its number). */
template <class T>
[[nodiscard]] checked<T> add_flag(checked<T> c, flag f) {
  std::vector<flag> all = c.flags();
  all.push_back(std::move(f));
  if (c.ok()) return make_checked(c.value(), std::move(all));
  flag first = all.front();
  all.erase(all.begin());
  return checked<T>::fail(std::move(first), std::move(all));
}

/** JSON: {"value": v, "flags": [...]} when it passed (`flags` [] without notes), {"value": null,
 *  "flags": [...]} when it failed: the same two keys always, so a reader need not test for them. */
template <class T>
void to_json(nlohmann::json& j, const checked<T>& c) {
  j = nlohmann::json::object();
  j["value"] = c.ok() ? nlohmann::json(c.value()) : nlohmann::json(nullptr);
  j["flags"] = c.flags();
}

}  // namespace kj::profile
