#pragma once
/** @file Internal: the datasheet rows with the rules that match a CUDA device name to them. */

#include <string>
#include <vector>

#include <kjudge/device/datasheet.hpp>

namespace kj::device::detail {

/** A name matches when, for every group in all_of, one of the group's words is in the name, and
 *  no word of none_of is. Words are lower-case runs of letters and digits. */
struct name_rule {
  std::vector<std::vector<std::string>> all_of;
  std::vector<std::string> none_of;
};

struct datasheet_row {
  datasheet_entry entry;
  name_rule rule;
};

/** The rows, built once; lives for the process. */
[[nodiscard]] const std::vector<datasheet_row>& datasheet_rows();

}  // namespace kj::device::detail
