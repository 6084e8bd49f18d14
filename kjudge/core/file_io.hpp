#pragma once
/** @file Whole-file reads and all-or-nothing writes, for every file kjudge keeps (results, the
 *  build and roofline caches, ncu's reports). */

#include <filesystem>
#include <string>
#include <string_view>

namespace kj {

/** The whole file as bytes. Throws kj::error(io) naming the file and the reason. */
[[nodiscard]] std::string read_file(const std::filesystem::path& path);

/** "tmp.<pid>.<thread>.<n>": a suffix no other process or thread of this one uses, for files
 *  moved into place with rename() (write_file_atomic, the build cache's libraries). */
[[nodiscard]] std::string unique_temp_suffix();

/** Where a write to a path lands (resolve_output). */
struct output_target {
  enum class kind {
    file,        ///< a regular file, or none yet: replaced whole (temporary file, then rename())
    direct,      ///< an existing file that is not a regular one (a character device, a FIFO):
                 ///< opened and written in place
    descriptor,  ///< one of this process's open descriptors (/dev/stdout, /dev/fd/N,
                 ///< /proc/self/fd/N): written to it, where its offset is
  };
  kind how = kind::file;
  /** file: the final target, every symbolic link on the way resolved (a dangling one names the
   *  file to create); direct, descriptor: the last path on the way. */
  std::filesystem::path path;
  int fd = -1;  ///< descriptor: its number
};

/** Follows `path` through symbolic links (up to 40) to what a write would replace or write into.
 *  Throws kj::error(io) for a folder, a loop of links, or a descriptor not open for writing. */
[[nodiscard]] output_target resolve_output(const std::filesystem::path& path);

/** Writes `text` to `path` through a temporary file in the same folder and rename(), so readers
 *  see the old file or the new one, never half of it; creates missing parent folders. A symbolic
 *  link is written through, not replaced: the file it leads to is (its temporary file in that
 *  file's folder); a path to something other than a regular file (a character device such as
 *  /dev/null or a terminal, a FIFO) or to one of this process's descriptors (/dev/stdout) is
 *  written directly, without rename (resolve_output). The temporary name carries the process,
 *  the thread and a counter, so concurrent writers (two builds into one cache entry, two
 *  `kjudge roofline --refresh`) never share one. Throws kj::error(io); the temporary file is
 *  removed on failure. */
void write_file_atomic(const std::filesystem::path& path, std::string_view text);

/** `text` as the file at `path` itself, whatever is there now (a symbolic link is replaced, not
 *  written through): a temporary file beside it, then rename(). Throws kj::error(io); the
 *  temporary file is removed on failure. */
void replace_file(const std::filesystem::path& path, std::string_view text);

/** A fresh folder under the system's temporary directory (mkdtemp), removed with everything in it
 *  when the object goes away, on every path; and by remove_temp_dirs_now() where the process
 *  exits without unwinding (an interrupt). */
class temp_dir {
 public:
  /** Creates <tmp>/<prefix>XXXXXX. Throws kj::error(io). */
  explicit temp_dir(std::string_view prefix);
  ~temp_dir();
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return m_path; }

 private:
  std::filesystem::path m_path;
  int m_slot = -1;  ///< its entry among the live folders (remove_temp_dirs_now), or -1
};

/** Removes every temp_dir alive now, with all it holds, before a process ends without unwinding
 *  (`_exit` on an interrupt). Async-signal-safe: system calls only, no allocation or locks. */
void remove_temp_dirs_now() noexcept;

/** An output the user named (`--json <path>`): "-" is standard output, anything else a file
 *  written with write_file_atomic. Throws kj::error(io), also when standard output fails. */
void write_output(const std::filesystem::path& path, std::string_view text);

}  // namespace kj
