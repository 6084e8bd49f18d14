#pragma once
/** @file The per-GPU cache of roofline results and the files `--json` / `--from` name. A result is
 *  cached at <cache root>/roofline/<gpu uuid>-<driver version>.json, so another GPU or a driver
 *  update measures afresh. Files are written atomically (temporary file, then rename). */

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <kjudge/core/file_io.hpp>  // write_file_atomic, for the cache and --json files
#include <kjudge/roofline/result.hpp>

namespace kj::roofline {

/** <cache_root>/roofline/<uuid>-<driver_version>.json. Characters of `uuid` outside
 *  [A-Za-z0-9-_.] become '_' (a UUID never has them; a hand-edited one must not escape the folder).
 *  Throws kj::error(usage) when `uuid` is empty: without it there is no key. */
[[nodiscard]] std::filesystem::path cache_path(const std::filesystem::path& cache_root,
                                               std::string_view uuid, int driver_version);

/** Reads a result file. Throws kj::error(io) when it cannot be read and kj::error(protocol) when
 *  it is not a kjudge.roofline/1 object. */
[[nodiscard]] roofline_result read_result(const std::filesystem::path& path);

/** The cached result at `path`, or nullopt when there is none or it is unusable (unreadable, an
 *  older schema, for another GPU / driver than `uuid` / `driver_version`, or written by an older
 *  kjudge without every benchmark of this one: absent_benchmarks()); `why` then says which, when
 *  given. Never throws for a bad file: a bad cache is re-measured. */
[[nodiscard]] std::optional<roofline_result> load_cached(const std::filesystem::path& path,
                                                         std::string_view uuid, int driver_version,
                                                         std::string* why = nullptr);

}  // namespace kj::roofline
