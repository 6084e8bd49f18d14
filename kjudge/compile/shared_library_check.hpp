#pragma once
/** @file Whether a shared library on disk is whole: a build cut short (a full disk, a copy or a
 *  link interrupted) leaves an ELF file whose segments reach past its end, and loading one ends
 *  in SIGBUS when the loader touches the missing pages. torch's load_inline sees such a library
 *  as up to date and loads it again on every import; kjudge removes it first. */

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace kj::compile {

/** Why `path` is not a whole 64-bit ELF file (too short for its header, not ELF, a header,
 *  program or section table, or a loadable segment that reaches past its end); empty when it is
 *  whole. A file that cannot be read gives its error. */
[[nodiscard]] std::string elf_damage(const std::filesystem::path& path);

/** Why `path` is not a shared library this process could load: elf_damage(), or an ELF file of
 *  another type (an object, an executable) or for another machine; empty when it is one. */
[[nodiscard]] std::string shared_library_problem(const std::filesystem::path& path);

/** A shared library removed by remove_damaged_libraries, and why. */
struct removed_library {
  std::filesystem::path path;
  std::string why;
};

/** Removes the libraries torch's builds left under `dir`, <dir>/<name>/<name>.so, that
 *  elf_damage() finds damaged (read errors aside), unless a build may be writing one now: its
 *  folder's `lock` is held (torch's FileLock takes flock on it; it is held here while a library
 *  is checked and removed, so a build that starts meanwhile waits), or the library was modified
 *  less than `quiet` ago (torch's older FileBaton takes no flock and its lock file stays behind
 *  a killed build, so neither its presence nor its absence says whether a link is underway; a
 *  linker writing the file keeps its time fresh). Nothing is done when `dir` is a symlink
 *  (kjudge makes it a folder; one the candidate replaced could point anywhere). Returns what it
 *  removed; errors leave the file, unreported: torch's import then fails as it would have. */
std::vector<removed_library> remove_damaged_libraries(
    const std::filesystem::path& dir, std::chrono::seconds quiet = std::chrono::seconds(10));

/** Removes the build locks torch left under `dir` (<dir>/<name>/lock) since `since` that no
 *  process holds (flock), for a worker that ended during the candidate's import without letting
 *  go of them (timed out, killed, crashed, exited): older torch's FileBaton takes no flock and
 *  waits for its lock file to go, so a stale one made every later import of that candidate wait
 *  until --timeout. A lock made before `since` belongs to another evaluation and stays. Returns
 *  the locks removed. */
std::vector<std::filesystem::path> remove_abandoned_build_locks(
    const std::filesystem::path& dir, std::filesystem::file_time_type since);

}  // namespace kj::compile
