#pragma once
/** @file JSON of what CUPTI saw in one forward (report.hpp's cupti_forward), as the worker sends
 *  it in every GPU evaluation (eval_result::launches) and as kjudge.profile/2 embeds it. Units are
 *  in the field names. Reading restores the checked<> figures with their flags. */

#include <nlohmann/json.hpp>

#include <kjudge/profile/report.hpp>

namespace kj::profile {

[[nodiscard]] nlohmann::json to_json(const cupti_forward& f);
/** Throws kj::error(protocol) when a required field is missing or has the wrong type. */
[[nodiscard]] cupti_forward cupti_forward_from_json(const nlohmann::json& j);

/** [x, y, z]; reading anything else gives 1 x 1 x 1. */
[[nodiscard]] nlohmann::json dims(const launch_dims& d);
[[nodiscard]] launch_dims dims_from(const nlohmann::json& j);

[[nodiscard]] nlohmann::json to_json(const launch_summary& s);
[[nodiscard]] launch_summary launch_summary_from_json(const nlohmann::json& j);
/** The same, as nlohmann's ADL hooks, so checked<launch_summary> / checked<peak_memory> write
 *  through checked.hpp's to_json. */
void to_json(nlohmann::json& j, const launch_summary& s);
void to_json(nlohmann::json& j, const peak_memory& m);

/** checked<T> back from {"value": v | null, "flags": [...]}; `read` turns the value into a T. */
template <class T, class Read>
[[nodiscard]] checked<T> checked_from_json(const nlohmann::json& j, Read&& read) {
  std::vector<flag> flags;
  if (auto it = j.find("flags"); it != j.end()) flags = it->get<std::vector<flag>>();
  const auto v = j.find("value");
  if (v != j.end() && !v->is_null()) return make_checked<T>(read(*v), std::move(flags));
  if (flags.empty()) return checked<T>{};
  flag first = flags.front();
  flags.erase(flags.begin());
  return checked<T>::fail(std::move(first), std::move(flags));
}

}  // namespace kj::profile
