#pragma once
/** @file Whether a shared library on disk is whole: a build cut short (a full disk, a copy or a
 *  link interrupted) leaves an ELF file whose segments reach past its end, and loading one ends
 *  in SIGBUS when the loader touches the missing pages. torch's load_inline sees such a library
 *  as up to date and loads it again on every import; kjudge removes it first. */

#include <filesystem>
#include <string>
#include <vector>

namespace kj::compile {

/** Why `path` is not a whole 64-bit ELF file (too short for its header, not ELF, a header,
 *  program or section table, or a loadable segment that reaches past its end); empty when it is
 *  whole. A file that cannot be read gives its error. */
[[nodiscard]] std::string elf_damage(const std::filesystem::path& path);

/** A shared library removed by remove_damaged_libraries, and why. */
struct removed_library {
  std::filesystem::path path;
  std::string why;
};

/** Removes every `*.so` file under `dir` (two levels: torch builds an extension in
 *  <dir>/<name>/<name>.so) that elf_damage() finds damaged, except in a folder that holds torch's
 *  build `lock` (a build underway writes its library there). Returns what it removed; errors
 *  (an unreadable folder, a removal refused) leave the file and are not reported: torch's own
 *  import then fails or crashes as it would have. */
std::vector<removed_library> remove_damaged_libraries(const std::filesystem::path& dir);

}  // namespace kj::compile
