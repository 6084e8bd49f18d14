// build_native: one candidate .cu -> a cached shared library, built by nvcc in a child process.
#include <kjudge/compile/nvcc.hpp>

#include <kjudge/compile/cache.hpp>
#include <kjudge/compile/shared_library_check.hpp>
#include <kjudge/config.hpp>
#include <kjudge/core/error.hpp>
#include <kjudge/core/file_io.hpp>
#include <kjudge/core/sha256.hpp>
#include <kjudge/runner/process.hpp>

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <string_view>
#include <system_error>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kj::compile {
namespace {

namespace fs = std::filesystem;
using steady = std::chrono::steady_clock;

/** Large enough that no real compiler log is cut; the runner never holds more than twice this. */
constexpr std::size_t k_log_limit = std::size_t{16} << 20;
/** Bumped when the layout of the cache or the meaning of a key changes. */
constexpr std::string_view k_cache_version = "kjudge-native-cache-v3";  // v3: launch probe
/** Environment variables that nvcc or its host compiler read: they change what a build makes.
 *  The second line's are nvcc.profile's, which extends them from the environment (`+=`). */
constexpr std::array<const char*, 11> k_build_env = {
    "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN", "CPATH",
    "CPLUS_INCLUDE_PATH", "C_INCLUDE_PATH",    "INCLUDES",   "SYSTEM_INCLUDES",
    "LIBRARIES",          "CUDAFE_FLAGS",      "PTXAS_FLAGS"};

[[nodiscard]] std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string(value) : std::string();
}

/** kj::read_file that reports failure through `why` (a missing cache entry is not an error). */
[[nodiscard]] bool read_file(const fs::path& path, std::string& out, std::string& why) {
  try {
    out = kj::read_file(path);
    return true;
  } catch (const kj::error& e) {
    why = e.message();
    return false;
  }
}

/** kj::write_file_atomic of dir/name, reporting failure through `why`. */
[[nodiscard]] bool write_file_atomic(const fs::path& dir, const std::string& name,
                                     std::string_view content, std::string& why) {
  try {
    kj::write_file_atomic(dir / name, content);
    return true;
  } catch (const kj::error& e) {
    why = e.message();
    return false;
  }
}

/** "90", "90a", "100f": digits, then at most one lowercase letter. */
[[nodiscard]] bool valid_arch(std::string_view arch) {
  std::size_t digits = 0;
  while (digits < arch.size() && arch[digits] >= '0' && arch[digits] <= '9') ++digits;
  if (digits == 0) return false;
  const std::size_t rest = arch.size() - digits;
  return rest == 0 || (rest == 1 && arch.back() >= 'a' && arch.back() <= 'z');
}

/** kjudge's own flags; they and extra_flags (but not the include, source and output paths, which
 *  vary between machines and checkouts) go into the cache key. `--no-undefined`: a symbol that
 *  nothing provides fails the link, with the linker's message, not the dlopen later.
 *  `-Bsymbolic`: the library's own references to the functions and variables it defines bind to
 *  its own definitions, not to same-named ones the worker's process already has (libpython's,
 *  libc's, torch's, kjudge's: RTLD_LOCAL keeps the candidate's names from leaking out, not
 *  theirs from coming in). */
[[nodiscard]] std::vector<std::string> base_flags(const std::string& arch) {
  return {"-O3",      "-std=c++17", "-shared",  "-Xcompiler",
          "-fPIC",    "-lineinfo",  "-Xlinker", "--no-undefined",
          "-Xlinker", "-Bsymbolic", "-gencode", fmt::format("arch=compute_{0},code=sm_{0}", arch)};
}

/** The probe kjudge calls after kj_forward to read the candidate's own CUDA runtime's last error
 *  (include/kjudge/detail/launch_probe.h), included into every build; empty without an include
 *  folder (build_native refuses a build whose folder lacks it). */
[[nodiscard]] fs::path launch_probe(const nvcc_request& request) {
  if (request.include_dir.empty()) return {};
  fs::path probe = request.include_dir / "kjudge" / "detail" / "launch_probe.h";
  std::error_code ec;
  return fs::is_regular_file(probe, ec) ? probe : fs::path();
}

/** kjudge's flags, the include folder and the extra flags: what every nvcc run of a request
 *  shares (the build, the dependency scan, the canary). */
[[nodiscard]] std::vector<std::string> shared_args(const fs::path& nvcc,
                                                   const nvcc_request& request) {
  std::vector<std::string> command{nvcc.empty() ? std::string("nvcc") : nvcc.string()};
  for (auto& flag : base_flags(request.arch)) command.push_back(std::move(flag));
  if (!request.include_dir.empty()) {
    command.push_back("-I" + request.include_dir.string());
    if (const fs::path probe = launch_probe(request); !probe.empty())
      command.insert(command.end(), {"-include", probe.string()});
  }
  command.insert(command.end(), request.extra_flags.begin(), request.extra_flags.end());
  return command;
}

/** The list of the files the build itself included, which nvcc writes as it compiles
 *  (build_command's for "candidate"). */
constexpr const char* k_build_depfile = "candidate.d";

/** nvcc's options that write the files a run includes to `depfile` (`option`: "-M" alone, "-MD"
 *  as it compiles), the rule named "kjudge" in both (nvcc would name it after -o's path or the
 *  source's base name, unescaped, which a space splits into more words). */
[[nodiscard]] std::vector<std::string> depfile_args(const char* option, const fs::path& depfile) {
  return {option, "-MF", depfile.string(), "-MT", "kjudge"};
}

/** The command that builds `source` into `dir`/`name`.so, listing the files it includes in
 *  `dir`/`name`.d as it goes (the build's, and the canary's in the same shape). */
[[nodiscard]] std::vector<std::string> build_command(const fs::path& nvcc,
                                                     const nvcc_request& request,
                                                     const fs::path& source, const fs::path& dir,
                                                     const std::string& name) {
  std::vector<std::string> command = shared_args(nvcc, request);
  command.push_back(source.string());
  for (auto& arg : depfile_args("-MD", dir / (name + ".d"))) command.push_back(std::move(arg));
  command.push_back("-o");
  command.push_back((dir / (name + ".so")).string());
  return command;
}

/** The command that builds the request's source into `dir`/candidate.so (its list in
 *  `dir`/candidate.d). */
[[nodiscard]] std::vector<std::string> make_command(const fs::path& nvcc,
                                                    const nvcc_request& request,
                                                    const fs::path& dir) {
  return build_command(nvcc, request, request.source, dir, "candidate");
}

/** One field of the key, length-prefixed so that no two field lists hash the same bytes. */
void hash_field(sha256& hash, std::string_view bytes) {
  hash.update(fmt::format("{}:", bytes.size()));
  hash.update(bytes);
}

/** What every nvcc run of one build shares, taken once on the caller's thread: which nvcc, the
 *  environment and the working folder (nvcc runs there; relative paths resolve there). */
struct context {
  fs::path nvcc;
  std::vector<std::string> env;  ///< NAME=value
  fs::path cwd;
  /** The request's time limit counts for the whole build (scan, build, canary), not each run. */
  steady::time_point deadline = steady::time_point::max();

  [[nodiscard]] std::optional<std::string> value(std::string_view name) const {
    for (const auto& entry : env)
      if (entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=')
        return entry.substr(name.size() + 1);
    return std::nullopt;
  }
  [[nodiscard]] runner::spawn_options spawn(std::vector<std::string> argv,
                                            std::chrono::milliseconds timeout,
                                            std::size_t tail_bytes) const {
    runner::spawn_options o;
    o.argv = std::move(argv);
    o.base_environment = env;
    o.cwd = cwd;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline == steady::time_point::max() ? timeout : deadline - steady::now());
    o.timeout = std::clamp(left, std::chrono::milliseconds(1), timeout);
    o.output_tail_bytes = tail_bytes;
    return o;
  }
  /** A path nvcc printed (relative to where it ran) as this process can open it. */
  [[nodiscard]] fs::path resolve(const fs::path& p) const { return p.is_absolute() ? p : cwd / p; }
};

/** Runs a child, turning a failure to start it (an exception: no pipe, no fork) into a result. */
[[nodiscard]] runner::process_result run(const runner::spawn_options& options) {
  try {
    return runner::run_process(options);
  } catch (const std::exception& e) {
    runner::process_result r;
    r.how = runner::exit_kind::spawn_failed;
    r.error = e.what();
    return r;
  }
}

/** The words of `text` split on white space (the flags in NVCC_APPEND_FLAGS and the like; nvcc
 *  splits them so, quotes aside). */
[[nodiscard]] std::vector<std::string> words_of(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(std::move(w));
  return out;
}

/** Every extra flag a build gets, in the order nvcc reads them: NVCC_PREPEND_FLAGS', the
 *  request's, NVCC_APPEND_FLAGS'. */
[[nodiscard]] std::vector<std::string> all_extra_flags(const nvcc_request& request,
                                                       const context& ctx) {
  std::vector<std::string> flags = words_of(ctx.value("NVCC_PREPEND_FLAGS").value_or(""));
  flags.insert(flags.end(), request.extra_flags.begin(), request.extra_flags.end());
  for (auto& w : words_of(ctx.value("NVCC_APPEND_FLAGS").value_or("")))
    flags.push_back(std::move(w));
  return flags;
}

/** Arguments of the extra flags (all_extra_flags(): the environment's and the request's) that
 *  name existing files (an --options-file, an object, an archive or a linker script given by
 *  path, `-Xlinker=script.ld`...): their bytes change what nvcc makes, and nvcc -M does not list
 *  them. Libraries found by `-l` are not. */
[[nodiscard]] std::vector<fs::path> flag_files(const std::vector<std::string>& flags,
                                               const context& ctx) {
  std::vector<fs::path> out;
  for (const auto& flag : flags) {
    // The flag, and what follows each '=' in it (-Xlinker=--version-script=v.map names v.map).
    std::vector<std::string> candidates{flag};
    for (auto eq = flag.find('='); eq != std::string::npos; eq = flag.find('=', eq + 1))
      candidates.push_back(flag.substr(eq + 1));
    for (std::string c : candidates) {
      for (std::size_t start = 0;;) {  // comma-separated lists (-Xlinker a,b)
        const std::size_t comma = c.find(',', start);
        const std::string part = c.substr(start, comma - start);
        std::error_code ec;
        if (!part.empty() && fs::is_regular_file(ctx.resolve(part), ec))
          out.push_back(ctx.resolve(part));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    }
  }
  return out;
}

/** The host compiler the flags (all_extra_flags(), in nvcc's order) name (-ccbin,
 *  --compiler-bindir; alone with the value after, or joined by '='): the last one, as nvcc
 *  takes it; empty where none does. One an --options-file names is not seen. */
[[nodiscard]] std::string ccbin_in_flags(const std::vector<std::string>& flags) {
  std::string out;
  for (std::size_t i = 0; i < flags.size(); ++i)
    for (const std::string_view name : {"-ccbin", "--compiler-bindir"}) {
      const std::string_view flag = flags[i];
      if (flag == name && i + 1 < flags.size())
        out = flags[i + 1];
      else if (flag.size() > name.size() && flag.starts_with(name) && flag[name.size()] == '=')
        out = std::string(flag.substr(name.size() + 1));
    }
  return out;
}

/** A file's size and modification time, "<none>" where they cannot be read. */
[[nodiscard]] std::string file_stamp(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) return "<none>";
  const auto time = fs::last_write_time(path, ec);
  if (ec) return "<none>";
  return fmt::format("{} bytes, modified {}", size, time.time_since_epoch().count());
}

/** The host compilers nvcc would run, resolved (another g++ makes another library): the one
 *  -ccbin in the flags or else NVCC_CCBIN names (a file, a folder holding gcc and g++, or a bare
 *  name found on PATH), or gcc and g++ found on PATH; each by its real path, size and
 *  modification time, "<none>" where none is found. PATH and relative names are taken as nvcc
 *  sees them, in the request's folder. */
[[nodiscard]] std::string host_compilers(const context& ctx,
                                         const std::vector<std::string>& flags) {
  std::string ccbin = ccbin_in_flags(flags);
  if (ccbin.empty()) ccbin = ctx.value("NVCC_CCBIN").value_or("");
  const std::string path = ctx.value("PATH").value_or("");
  std::vector<fs::path> found;
  std::error_code ec;
  if (ccbin.empty()) {
    for (const char* name : {"gcc", "g++"})
      found.push_back(runner::find_on_path(name, path, ctx.cwd));
  } else if (ccbin.find('/') == std::string::npos) {
    found.push_back(runner::find_on_path(ccbin, path, ctx.cwd));
  } else if (const fs::path named = ctx.resolve(ccbin); fs::is_directory(named, ec)) {
    for (const char* name : {"gcc", "g++"})
      found.push_back(runner::is_executable_file(named / name) ? named / name : fs::path());
  } else {
    found.push_back(named);
  }
  std::string out = ccbin + ":";
  for (const fs::path& f : found) {
    const fs::path real = f.empty() ? f : fs::canonical(f, ec);
    if (f.empty()) {
      out += "<none>;";
      continue;
    }
    const fs::path& file = ec ? f : real;
    out += file.string() + " (" + file_stamp(file) + ");";  // a compiler upgraded in place too
  }
  return out;
}

/** The key of everything known before nvcc runs: the source's bytes, the flags (and the bytes of
 *  files they name), which nvcc and its release, the ABI header, the build environment and the
 *  host compilers on PATH, and (with extra flags, the environment's too, whose relative paths
 *  resolve there) the working folder. The headers the
 *  source includes are checked after: see dependency. */
[[nodiscard]] std::string cache_key(const nvcc_request& request, const context& ctx,
                                    std::string_view source, std::string_view version,
                                    std::string_view abi_header) {
  sha256 hash;
  hash_field(hash, k_cache_version);
  hash_field(hash, source);
  for (const auto& flag : base_flags(request.arch)) hash_field(hash, flag);
  hash_field(hash, "extra");
  for (const auto& flag : request.extra_flags) hash_field(hash, flag);
  const std::vector<std::string> flags = all_extra_flags(request, ctx);
  for (const auto& file : flag_files(flags, ctx)) {
    hash_field(hash, file.string());
    try {
      hash_field(hash, kj::sha256_file(file));
    } catch (const kj::error& e) {
      hash_field(hash, e.message());
    }
  }
  hash_field(hash, version);
  hash_field(hash, abi_header);
  std::error_code ec;
  const fs::path nvcc_real = fs::weakly_canonical(ctx.nvcc, ec);
  hash_field(hash, ec ? ctx.nvcc.string() : nvcc_real.string());
  // The nvcc at that path as it is now (a wrapper script edited, a toolkit replaced in place:
  // the version string is remembered per path for the process), and the nvcc.profile beside
  // it, whose INCLUDES and LIBRARIES every build takes.
  const fs::path nvcc_file = ec ? ctx.nvcc : nvcc_real;
  hash_field(hash, file_stamp(nvcc_file));
  const fs::path profile = nvcc_file.parent_path() / "nvcc.profile";
  try {
    hash_field(hash, fs::is_regular_file(profile, ec) ? kj::sha256_file(profile) : "<none>");
  } catch (const kj::error& e) {
    hash_field(hash, e.message());
  }
  for (const char* name : k_build_env) hash_field(hash, ctx.value(name).value_or("<unset>"));
  hash_field(hash, host_compilers(ctx, flags));
  if (!flags.empty()) hash_field(hash, ctx.cwd.string());
  return hash.hex();
}

/** The prerequisites of the make rules nvcc -M writes ("kjudge : a b", lines continued by a
 *  backslash, spaces in names escaped with one), every rule's, targets left out. */
[[nodiscard]] std::vector<std::string> parse_depfile(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  const auto end_word = [&] {
    if (!word.empty()) words.push_back(std::move(word));
    word.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size() && (text[i + 1] == '\n' || text[i + 1] == '\r')) {
      ++i;  // a line continuation
      end_word();
    } else if (c == '\\' && i + 1 < text.size() && text[i + 1] == ' ') {
      word += ' ';
      ++i;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      end_word();
    } else {
      word += c;
    }
  }
  end_word();
  std::vector<std::string> out;
  // The target is always "kjudge" (depfile_args): a prerequisite may end in ':' itself (a
  // header named "h:", which nvcc writes unescaped), so only that name counts as a target.
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (words[i] == ":" || words[i] == "kjudge:") continue;
    if (words[i] == "kjudge" && i + 1 < words.size() && words[i + 1] == ":") continue;
    out.push_back(std::move(words[i]));
  }
  return out;
}

/** Every file the source includes, as nvcc resolves them with these flags and this environment
 *  (`nvcc -M`: search order, symbolic links, `__has_include`, system and toolkit headers
 *  alike), in nvcc's order, with a SHA-256 of each ("absent" for a file it names that does not
 *  exist, as a `#line` directive can). Empty with `why` when the scan fails (a missing header:
 *  the build then says why). */
struct dependency {
  std::string path;
  std::string sha256;
};

[[nodiscard]] std::string hash_or_absent(const fs::path& p) {
  std::error_code ec;
  if (!fs::exists(p, ec)) return "absent";
  return kj::sha256_file(p);
}

[[nodiscard]] std::vector<dependency> scan_dependencies(const nvcc_request& request,
                                                        const context& ctx, std::string& why) {
  std::error_code ec;
  const fs::path depfile =
      fs::temp_directory_path(ec) / fmt::format("kjudge-deps-{}.d", kj::unique_temp_suffix());
  std::vector<std::string> argv = shared_args(ctx.nvcc, request);
  for (auto& arg : depfile_args("-M", depfile)) argv.push_back(std::move(arg));
  argv.push_back(request.source.string());
  const runner::process_result r = run(ctx.spawn(std::move(argv), request.timeout, 64 * 1024));
  std::string text;
  if (!r.ok()) {
    why = "nvcc -M " + r.describe();
  } else if (!read_file(depfile, text, why)) {
    why = "nvcc -M wrote no list: " + why;
  }
  fs::remove(depfile, ec);
  if (!why.empty()) return {};
  std::vector<dependency> out;
  for (std::string& name : parse_depfile(text)) {
    dependency d;
    try {
      d.sha256 = hash_or_absent(ctx.resolve(name));
    } catch (const kj::error& e) {
      why = e.message();
      return {};
    }
    d.path = ctx.resolve(name).string();
    out.push_back(std::move(d));
  }
  if (out.empty()) why = "nvcc -M listed no files";
  // Every build includes the launch probe: a list without it is not what the build reads (the
  // host compiler told to drop its line markers, -Xcompiler -P, lists the source alone).
  if (const fs::path probe = launch_probe(request); !out.empty() && !probe.empty()) {
    const bool listed = std::any_of(out.begin(), out.end(), [&](const dependency& d) {
      std::error_code same_ec;
      return fs::equivalent(d.path, probe, same_ec);
    });
    if (!listed) {
      why = fmt::format(
          "nvcc -M listed {} file(s), without the launch probe every build includes "
          "(do the flags turn the preprocessor's line markers off?)",
          out.size());
      return {};
    }
  }
  return out;
}

/** Whether the build included the files the scan listed, in its order (a header that appeared
 *  in an earlier search folder, or went, while nvcc ran makes another list); `why` when not. */
[[nodiscard]] bool built_from_scanned(const fs::path& depfile, const std::vector<dependency>& deps,
                                      const context& ctx, std::string& why) {
  std::string text;
  const bool read = read_file(depfile, text, why);
  std::error_code ec;
  fs::remove(depfile, ec);  // build.json keeps the list
  if (!read) {
    why = "nvcc wrote no list of the files the build included: " + why;
    return false;
  }
  const std::vector<std::string> names = parse_depfile(text);
  bool same = names.size() == deps.size();
  for (std::size_t i = 0; same && i < names.size(); ++i)
    same = ctx.resolve(names[i]).string() == deps[i].path;
  if (!same) why = "the files it included were not those listed before it (one appeared or went)";
  return same;
}

/** True when every file still has the bytes it had at the scan. */
[[nodiscard]] bool unchanged(const std::vector<dependency>& deps) {
  for (const auto& d : deps) {
    try {
      if (hash_or_absent(d.path) != d.sha256) return false;
    } catch (const kj::error&) {
      return false;
    }
  }
  return true;
}

/** The folder of one build under a key: named by the bytes of the files nvcc resolves, in its
 *  order (not their paths: the same headers in another checkout share the build; another header
 *  found first, or an edited one, makes another build). */
[[nodiscard]] std::string variant_name(const std::vector<dependency>& deps) {
  sha256 hash;
  for (const auto& d : deps) hash_field(hash, d.sha256);
  return hash.hex().substr(0, 16);
}

[[nodiscard]] nlohmann::json to_json(const std::vector<dependency>& deps) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : deps) out.push_back({{"path", d.path}, {"sha256", d.sha256}});
  return out;
}

/** Whether nvcc itself can build an empty source with the request's flags and environment into
 *  `dir`; when not, a failed build is the tool's (a broken host compiler, an architecture the
 *  toolkit does not know, bad flags), not the candidate's. `why`: the canary's output. */
[[nodiscard]] bool nvcc_builds_a_canary(const nvcc_request& request, const context& ctx,
                                        const fs::path& dir, std::string& why) {
  const fs::path source = dir / "canary.cu";
  if (!write_file_atomic(dir, "canary.cu", "extern \"C\" int kj_canary() { return 0; }\n", why))
    return false;
  // The build's shape, its dependency list included (a flag that refuses -MD fails here too).
  const runner::process_result r =
      run(ctx.spawn(build_command(ctx.nvcc, request, source, dir, "canary"),
                    std::min(request.timeout, std::chrono::milliseconds(120'000)), 64 * 1024));
  if (!r.ok()) why = fmt::format("{}\n{}", r.describe(), r.output_tail);
  return r.ok();
}

/** `line` without its quoted spans (`...', '...', "...", each only where it closes): the linker
 *  and the compilers quote the names they report, symbols and files among them, which a
 *  candidate chooses. An apostrophe that closes nothing ("can't") stays. */
[[nodiscard]] std::string without_quoted(const std::string& line) {
  std::string out;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '`' || c == '\'' || c == '"') {
      const std::size_t end = line.find(c == '`' ? '\'' : c, i + 1);
      if (end != std::string::npos) {
        i = end;
        continue;
      }
    }
    out += c;
  }
  return out;
}

/** A line of the compilers' output for a one-line message: without a trailing carriage return,
 *  cut at 300 bytes. */
[[nodiscard]] std::string message_line(std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line.size() > 300 ? line.substr(0, 300) + "..." : line;
}

/** Output that says the compiler or the machine failed, not the source: nvcc's report of a
 *  child killed by a signal (the OOM killer), the host compiler's, a full disk. Only the tools'
 *  own lines count: a diagnostic about a source line ("c.cu(1): error: ...", "c.cu:1:2: error:
 *  #error No space left on device") and the source text the compilers echo (indented) are the
 *  candidate's words, which must not pass its failure off as the tool's. A diagnostic is known
 *  by its position ("(12): error", ":12:3: "), whatever file it names: `#line` lets a source
 *  name any file (a header's, or one called "nvcc error   : "). Returns the tool's line that
 *  says so (empty when there is none). */
[[nodiscard]] std::string tool_failure_in(const std::string& log, const fs::path& source) {
  static const std::regex diagnostic(
      R"(\(\d+\): (error|warning|remark|catastrophic error|internal error)|:\d+:\d+: )");
  const std::string path = source.string(), name = source.filename().string();
  const std::string quoted_path = '"' + path + '"', quoted_name = '"' + name + '"';
  const auto about_source = [&](const std::string& line) {
    for (const std::string* s : {&path, &name})
      if (!s->empty() && line.starts_with(*s) && line.size() > s->size() &&
          (line[s->size()] == ':' || line[s->size()] == '('))
        return true;
    return line.starts_with(quoted_path) || line.starts_with(quoted_name);
  };
  // The linker's lines about an object (`x.o:(.text+0x71): undefined reference to ...`) carry
  // no source position but name the candidate's sections and symbols, which it chooses.
  static const std::regex object_location(R"(:\([^)]*\+0x[0-9a-fA-F]+\))");
  // The assembler's diagnostics (`/tmp/x.s:12: Error: ...`) echo what the source's asm says.
  static const std::regex assembler(R"(\.s:\d+: (Error|Warning): )");
  // What follows the assembler's header (`/tmp/x.s: Assembler messages:`) is its diagnostics
  // and what the source's asm prints (`.print "No space left on device"`: lines of the source's
  // choosing, with no position), up to the next line a tool starts (the link goes on after an
  // assembler's warning, and a linker killed then is the tool's failure). A `.print` that starts
  // like a tool's line can still pass for one: the candidate's build then fails as the tool's,
  // which gains it nothing; an honest candidate is never blamed for the tool.
  static const std::regex assembler_header(R"(: Assembler messages:\s*$)");
  static const std::regex tool_line(
      R"(^(nvcc|g\+\+|gcc|c\+\+|cc1plus|cc1|collect2|ld|/\S*/ld|ptxas|cicc|fatbinary|nvlink)\b)");
  bool in_assembler = false;
  std::istringstream lines(log);
  for (std::string raw; std::getline(lines, raw);) {
    std::string line = raw;
    if (std::regex_search(line, assembler_header)) {
      in_assembler = true;
      continue;
    }
    if (in_assembler && !std::regex_search(line, tool_line)) continue;
    in_assembler = false;
    if (about_source(line)) continue;
    line = without_quoted(line);  // names the candidate chose (symbols, files) are quoted
    if (line.empty() || line[0] == ' ' || line[0] == '\t' ||
        std::regex_search(line, object_location) || std::regex_search(line, assembler) ||
        line.find("#error") != std::string::npos || line.find("#warning") != std::string::npos ||
        (std::regex_search(line, diagnostic) &&
         line.find("fatal error: error writing to") == std::string::npos))  // the host compiler's
      continue;
    if (line.starts_with("nvcc error") && line.find("died due to signal") != std::string::npos)
      return message_line(raw);
    if (line.find("fatal error: Killed signal terminated program") != std::string::npos ||
        line.find("terminated with signal") != std::string::npos)  // collect2: ld ... [Killed]
      return message_line(raw);
    if (line.find("No space left on device") != std::string::npos ||
        line.find("Disk quota exceeded") != std::string::npos)
      return message_line(raw);
  }
  return {};
}

/** The compilers' or the linker's first error line in a build's output ("c.cu(3): error: ...",
 *  "c.cu:3:1: error: ...", "... undefined reference to ..."), for the one-line message; empty
 *  when none is recognised (the full output is in the log either way). */
[[nodiscard]] std::string first_error_line(const std::string& log) {
  static const std::regex error_line(
      R"(\(\d+\): (catastrophic )?error|:\d+:\d+: (fatal )?error|undefined reference to|^ptxas (fatal|error))");
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);)
    if (std::regex_search(line, error_line)) return message_line(line);
  return {};
}

/** Parses "Cuda compilation tools, release 13.0, V13.0.88" into "13.0.88" (or "13.0"). */
[[nodiscard]] std::string parse_version(const std::string& text) {
  const std::size_t release = text.find("release ");
  if (release == std::string::npos) return {};
  const std::size_t v = text.find(", V", release);
  const std::size_t begin = v != std::string::npos ? v + 3 : release + 8;
  std::size_t end = begin;
  while (end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[end])) != 0 || text[end] == '.'))
    ++end;
  return text.substr(begin, end - begin);
}

/** nvcc --version, remembered per path for the life of the process. Empty with `why` on failure. */
[[nodiscard]] std::string query_version(const fs::path& nvcc, std::string& why,
                                        const std::vector<std::string>* env = nullptr) {
  static std::mutex mutex;
  static std::map<std::string, std::string> known;
  {
    std::lock_guard lock(mutex);
    if (auto it = known.find(nvcc.string()); it != known.end()) return it->second;
  }
  runner::spawn_options options;
  options.argv = {nvcc.string(), "--version"};
  options.timeout = std::chrono::minutes(1);
  if (env != nullptr) options.base_environment = *env;
  const runner::process_result r = run(options);
  if (!r.ok()) {
    why = fmt::format("cannot run {} --version: {}", nvcc.string(), r.describe());
    return {};
  }
  std::string version = parse_version(r.output_tail);
  if (version.empty()) {
    why = fmt::format("cannot find a release number in the output of {} --version", nvcc.string());
    return {};
  }
  std::lock_guard lock(mutex);
  known.emplace(nvcc.string(), version);
  return version;
}

}  // namespace

std::string build_folder_owner() {
  std::string name = runner::host_name();
  std::replace(name.begin(), name.end(), '.', '_');
  if (name.empty()) name = "host";
  // "pid:[4026531836]": the namespace's inode. Containers that share a host name (host
  // networking) have PID namespaces of their own, where the same number is another process.
  std::error_code ec;
  const std::string ns = fs::read_symlink("/proc/self/ns/pid", ec).string();
  std::string inode;
  for (const char c : ns)
    if (c >= '0' && c <= '9') inode += c;
  return inode.empty() ? name : name + "-pidns" + inode;
}

std::size_t remove_ended_folders(const fs::path& dir, const std::string& owner,
                                 std::string_view name_start) {
  const std::string prefix = fmt::format("{}{}.tmp.", name_start, owner);
  std::size_t removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with(prefix)) continue;
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code e2;
    if (fs::remove_all(it->path(), e2) > 0 && !e2) ++removed;
  }
  return removed;
}

std::size_t remove_ended_builds_under(const fs::path& native_root, const std::string& owner) {
  std::size_t removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(native_root, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e2;
    if (it->is_symlink(e2) || !it->is_directory(e2) ||
        it->path().filename().string().starts_with("."))
      continue;
    removed += remove_ended_folders(it->path(), owner, ".build.");
    removed += remove_ended_folders(it->path(), owner, ".prune.");
    fs::remove(it->path(), e2);  // only if empty
  }
  return removed;
}

namespace {

/** The start of the names of this user's builds in the temporary directory (unfiled_build()). */
[[nodiscard]] std::string unfiled_name_start() {
  return fmt::format("kjudge-unfiled-build.{}.", ::getuid());
}

/** A build folder of this process in the system's temporary directory, for a cache that cannot
 *  take the build: made by mkdtemp (this user's alone, mode 0700, a name no other process had),
 *  so that no other user can put a library where this evaluation will load one. Dead ones of
 *  this user, host and PID namespace are removed first. Empty, with `why` set, if none can be
 *  made. */
[[nodiscard]] fs::path unfiled_build(const std::string& owner, std::string& why) {
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec);
  if (ec) {
    why = ec.message();
    return {};
  }
  remove_ended_folders(tmp, owner, unfiled_name_start());
  std::string name =
      (tmp / fmt::format("{}{}.tmp.{}.XXXXXX", unfiled_name_start(), owner, ::getpid())).string();
  if (::mkdtemp(name.data()) == nullptr) {
    why = fmt::format("{}: {}", name, std::strerror(errno));
    return {};
  }
  return name;
}

[[nodiscard]] std::chrono::duration<double> since(steady::time_point start) {
  return steady::now() - start;
}

}  // namespace

fs::path find_nvcc() {
  if (std::string explicit_path = env_or_empty("KJUDGE_NVCC"); !explicit_path.empty())
    return explicit_path;  // the user's explicit choice; if it is wrong the build says so
  if (std::string cuda_home = env_or_empty("CUDA_HOME"); !cuda_home.empty()) {
    fs::path candidate = fs::path(cuda_home) / "bin" / "nvcc";
    if (runner::is_executable_file(candidate)) return candidate;
  }
  if (fs::path on_path = runner::find_on_path("nvcc"); !on_path.empty()) return on_path;
  if (fs::path configured = KJ_NVCC_PATH; runner::is_executable_file(configured)) return configured;
  return {};
}

std::string refused_flag(std::string_view flag) {
  // nvcc's dependency options: -M, -MM, -MD, -MMD, -MF, -MT, -MP (alone, or with their value
  // after '=' or joined), and their long names.
  static constexpr std::array<std::string_view, 7> long_names = {
      "--generate-dependencies",
      "--generate-nonsystem-dependencies",
      "--generate-dependencies-with-compile",
      "--generate-nonsystem-dependencies-with-compile",
      "--dependency-output",
      "--dependency-target-name",
      "--generate-dependency-targets"};
  if (flag.empty()) return "'': an empty flag (was its value left out?)";
  const std::string_view name = flag.substr(0, flag.find('='));
  bool dependency = (flag.size() >= 2 && flag.substr(0, 2) == "-M") ||
                    std::find(long_names.begin(), long_names.end(), name) != long_names.end();
  // The host compiler's, passed through nvcc joined to their option (-Xcompiler=-MD,-O2): its
  // dependency flags write lists kjudge does not compare either. (Given apart, -Xcompiler -MD,
  // the second flag is refused above.)
  if ((name == "-Xcompiler" || name == "--compiler-options") && name.size() < flag.size()) {
    std::string_view rest = flag.substr(name.size() + 1);
    while (!dependency && !rest.empty()) {
      const std::string_view item = rest.substr(0, rest.find(','));
      dependency = item.size() >= 2 && item.substr(0, 2) == "-M";
      rest.remove_prefix(std::min(rest.size(), item.size() + 1));
    }
  }
  if (dependency)
    return fmt::format(
        "{}: kjudge lists the files a build includes itself (the cache compares "
        "its scan with the build's own list); dependency flags are not taken",
        flag);
  if (name == "-E" || name == "--preprocess")
    return fmt::format("{}: preprocessing alone builds no library", flag);
  // Options that make nvcc stop at another phase or write something else than the shared library
  // kjudge asks for (an object, PTX, a cubin, an archive), run what it built, only print, or
  // write it elsewhere.
  static constexpr std::array<std::string_view, 36> phase_or_output = {"-c",
                                                                       "--compile",
                                                                       "-dc",
                                                                       "--device-c",
                                                                       "-dw",
                                                                       "--device-w",
                                                                       "-ptx",
                                                                       "--ptx",
                                                                       "-cubin",
                                                                       "--cubin",
                                                                       "-fatbin",
                                                                       "--fatbin",
                                                                       "-lib",
                                                                       "--lib",
                                                                       "-run",
                                                                       "--run",
                                                                       "-dlink",
                                                                       "--device-link",
                                                                       "-optix-ir",
                                                                       "--optix-ir",
                                                                       "-cuda",
                                                                       "--cuda",
                                                                       "-dryrun",
                                                                       "--dryrun",
                                                                       "-V",
                                                                       "--version",
                                                                       "-h",
                                                                       "--help",
                                                                       "-o",
                                                                       "--output-file",
                                                                       "-odir",
                                                                       "--output-directory",
                                                                       "--list-gpu-arch",
                                                                       "-arch-ls",
                                                                       "--list-gpu-code",
                                                                       "-code-ls"};
  if (std::find(phase_or_output.begin(), phase_or_output.end(), name) != phase_or_output.end())
    return fmt::format(
        "{}: kjudge builds a shared library of its own choosing (-shared -o candidate.so); "
        "options that choose another phase, output or action are not taken",
        flag);
  return {};
}

std::string toolkit_newer_than_driver(std::string_view nvcc_version, int driver_version) {
  int major = 0;
  std::size_t i = 0;
  for (; i < nvcc_version.size() && std::isdigit(static_cast<unsigned char>(nvcc_version[i])) != 0;
       ++i)
    major = major * 10 + (nvcc_version[i] - '0');
  if (i == 0 || i > 3 || driver_version <= 0) return {};
  const int driver_major = driver_version / 1000;
  if (major <= driver_major) return {};
  return fmt::format(
      "nvcc {} built the candidate, and its CUDA runtime needs a driver of CUDA {} or newer; "
      "this machine's driver supports CUDA {}.{} (not the candidate's fault: point kjudge at an "
      "older toolkit with KJUDGE_NVCC or CUDA_HOME, or update the driver)",
      nvcc_version, major, driver_major, (driver_version % 1000) / 10);
}

std::string nvcc_version(const fs::path& nvcc) {
  std::string why;
  return query_version(nvcc, why);
}

fs::path default_cache_dir() {
  if (std::string dir = env_or_empty("KJUDGE_CACHE_DIR"); !dir.empty()) return dir;
  // The XDG base directory spec: a relative XDG_CACHE_HOME is invalid and ignored.
  if (std::string xdg = env_or_empty("XDG_CACHE_HOME"); !xdg.empty() && xdg.front() == '/')
    return fs::path(xdg) / "kjudge";
  std::string home = env_or_empty("HOME");
  if (home.empty()) {
    passwd entry{};
    passwd* found = nullptr;
    std::vector<char> buffer(16384);
    if (::getpwuid_r(::getuid(), &entry, buffer.data(), buffer.size(), &found) == 0 &&
        found != nullptr && found->pw_dir != nullptr)
      home = found->pw_dir;
  }
  if (home.empty()) return fs::temp_directory_path() / "kjudge-cache";
  return fs::path(home) / ".cache" / "kjudge";
}

std::string shell_hazard(const fs::path& path) {
  const std::string text = path.string();
  for (const char c : {'$', '`', '"', '\\'})
    if (text.find(c) != std::string::npos)
      return fmt::format(
          "{} has a {} in its path, which nvcc does not pass on as it is (it runs its tools "
          "through a shell, which expands $ and backquotes, and lists \\ as /): use a path "
          "without $, `, \" or \\",
          text, c == '`' ? std::string("backquote") : fmt::format("'{}'", c));
  return {};
}

std::string source_name_hazard(const fs::path& source) {
  const std::string name = source.filename().string();
  if (name.find(',') == std::string::npos) return {};
  return fmt::format(
      "{} has a comma in its file name, which nvcc cannot build (it names an intermediate file "
      "after the source, and fatbinary splits that name on commas): rename the file",
      source.string());
}

namespace {

/** The first of the paths nvcc is given that it cannot take, as shell_hazard and
 *  source_name_hazard say; empty if none. */
[[nodiscard]] std::string path_hazard(const nvcc_request& request, const fs::path& cache_dir) {
  for (const fs::path* p : {&request.source, &cache_dir, &request.include_dir})
    if (std::string why = shell_hazard(*p); !why.empty()) return why;
  return source_name_hazard(request.source);
}

}  // namespace

build_result build_native(const nvcc_request& request) {
  const auto start = steady::now();
  build_result out;
  out.failure = build_failure::tool;  // until nvcc has run (or the cache has answered)
  context ctx;
  ctx.deadline = start + request.timeout;
  ctx.nvcc = request.nvcc.empty() ? find_nvcc() : request.nvcc;
  ctx.env = request.environment ? *request.environment : runner::environment_snapshot();
  std::error_code ec;
  ctx.cwd = request.working_dir.empty() ? fs::current_path(ec) : request.working_dir;
  const fs::path& nvcc = ctx.nvcc;
  const fs::path cache_dir =
      request.cache_dir.empty() ? default_cache_dir() / "native" : request.cache_dir;
  out.command = make_command(nvcc, request, cache_dir / "<key>" / "<build>");

  if (!valid_arch(request.arch)) {
    out.error = fmt::format("invalid arch '{}': expected a compute capability such as 90 or 90a",
                            request.arch);
    return out;
  }
  if (request.include_dir.string().find(',') != std::string::npos) {
    // nvcc splits -I's and -include's values on commas, and has no escape for one.
    out.error = fmt::format(
        "kjudge's include folder {} has a comma in its path, which nvcc reads as a list "
        "separator in -I and -include: install or check out kjudge where the path has none",
        request.include_dir.string());
    return out;
  }
  if (std::string hazard = path_hazard(request, cache_dir); !hazard.empty()) {
    out.error = std::move(hazard);
    return out;
  }
  for (const auto& flag : request.extra_flags)
    if (std::string why = refused_flag(flag); !why.empty()) {
      out.error = "nvcc flag refused: " + why;
      return out;
    }
  std::string source;
  std::string why;
  if (!read_file(request.source, source, why)) {
    out.error = fmt::format("cannot read {}: {}", request.source.string(), why);
    return out;
  }
  if (nvcc.empty()) {
    out.error = "nvcc not found (set KJUDGE_NVCC or CUDA_HOME, or put nvcc on PATH)";
    return out;
  }
  out.nvcc_version = query_version(nvcc, why, &ctx.env);
  if (out.nvcc_version.empty()) {
    out.error = why;
    return out;
  }
  std::string abi_header = "<none>";
  if (!request.include_dir.empty()) {
    // kjudge's own headers, missing (a binary whose source folder moved), would fail the build
    // of any candidate that includes them as the candidate's compile error.
    for (const char* own : {"candidate.h", "detail/launch_probe.h"}) {
      std::error_code missing;
      if (!fs::is_regular_file(request.include_dir / "kjudge" / own, missing)) {
        out.failure = build_failure::tool;
        out.error = fmt::format(
            "kjudge's candidate headers are missing: no {} (was kjudge's source folder moved "
            "or removed after it was built?)",
            (request.include_dir / "kjudge" / own).string());
        return out;
      }
    }
    std::string header;
    if (read_file(request.include_dir / "kjudge" / "candidate.h", header, why)) abi_header = header;
  }

  out.key = cache_key(request, ctx, source, out.nvcc_version, abi_header);
  const fs::path entry = cache_dir / out.key;
  // What this build would include, now: the build under the key made from those same bytes
  // serves. A scan that fails skips the cache (the build says what is wrong).
  std::string scan_error;
  const std::vector<dependency> deps = scan_dependencies(request, ctx, scan_error);
  const std::string variant = deps.empty() ? std::string() : variant_name(deps);
  if (!scan_error.empty() && steady::now() >= ctx.deadline) {
    out.failure = build_failure::tool;  // as a build cut by the time limit is
    out.error = "the build's time limit ran out during nvcc's include scan: " + scan_error;
    return out;
  }

  // Marked used before it is looked at: a prune that moved it aside meanwhile puts it back
  // (compile/cache.hpp); one that removed it first leaves this a miss, which builds again.
  if (!variant.empty()) mark_used(entry / variant);
  if (!variant.empty() && detail::filed_build_whole(entry / variant)) {
    // build.log and build.json are renamed into place with the library, so a hit has them.
    const fs::path hit = entry / variant;
    out.library = hit / "candidate.so";
    out.command = make_command(nvcc, request, hit);
    std::string log;
    if (read_file(hit / "build.log", log, why)) out.log = std::move(log);
    out.ok = true;
    out.cached = true;
    out.failure = build_failure::none;
    out.build_time = since(start);
    return out;
  }

  // The whole build happens in a folder of its own, named by this host, PID namespace and
  // process, renamed into place once complete; what builds of processes of the same host and
  // namespace that have ended left (killed, or not filed), under any key, goes first.
  const std::string owner = build_folder_owner();
  remove_ended_builds_under(cache_dir, owner);
  fs::path build_entry = entry;  // the key's entry, where the build's folder is; none outside it
  fs::path work = entry / fmt::format(".build.{}.{}", owner, kj::unique_temp_suffix());
  // Another process's sweep may remove the key's entry between its creation and the folder's.
  for (int attempt = 0; attempt < 3; ++attempt) {
    fs::create_directories(work, ec);
    if (ec != std::errc::no_such_file_or_directory) break;
  }
  // A cache that cannot take the build (read-only, another user's) still serves its hits; a miss
  // builds unfiled, in a folder of the system's temporary directory.
  std::string unwritable;
  if (ec) {
    unwritable = fmt::format("the cache cannot take it ({}: {})", entry.string(), ec.message());
    std::string fallback_why;
    const fs::path fallback = unfiled_build(owner, fallback_why);
    if (fallback.empty()) {
      out.error = fmt::format(
          "cannot create build directory {}: {}; nor one in the temporary "
          "directory: {}",
          work.string(), ec.message(), fallback_why);
      return out;
    }
    work = fallback;
    build_entry.clear();
    ec.clear();
  }
  auto fail = [&](build_failure kind, std::string message) {
    out.ok = false;  // a failure after the library was made (filing it) serves nothing
    out.library.clear();
    out.failure = kind;
    out.error = std::move(message);
    fs::remove_all(work, ec);
    if (!build_entry.empty()) fs::remove(build_entry, ec);  // only if empty: no other build
    return out;
  };
  out.command = make_command(nvcc, request, work);
  const runner::process_result built = run(ctx.spawn(out.command, request.timeout, k_log_limit));
  out.log = built.output_tail;
  if (built.output_bytes > built.output_tail.size())
    out.log.insert(0, fmt::format("[kjudge: the first {} bytes of compiler output were dropped]\n",
                                  built.output_bytes - built.output_tail.size()));
  out.build_time = since(start);

  // nvcc that ran to the end and said no has rejected the source, unless it cannot build even
  // an empty one with these flags and this environment; anything else (a signal, the time
  // limit, a spawn failure) is the tool's failure, not the candidate's.
  if (!built.ok()) {
    std::string canary_why;
    // A scan that failed first (it may have used up the time limit: the build then had a
    // millisecond) says why.
    const std::string scan_note =
        scan_error.empty() ? std::string()
                           : fmt::format(" (before it, the include scan failed: {})", scan_error);
    if (built.how != runner::exit_kind::exited)
      return fail(build_failure::tool, "nvcc " + built.describe() + scan_note);
    if (const std::string line = tool_failure_in(out.log, request.source); !line.empty())
      return fail(build_failure::tool,
                  fmt::format("nvcc {}{}: {}", built.describe(), scan_note, line));
    if (!nvcc_builds_a_canary(request, ctx, work, canary_why))
      return fail(build_failure::tool,
                  fmt::format("nvcc {}, and fails on an empty source with the same flags and "
                              "environment too (not the candidate's fault): {}",
                              built.describe(), canary_why));
    const std::string first = first_error_line(out.log);
    return fail(build_failure::rejected,
                "nvcc " + built.describe() + (first.empty() ? std::string() : ": " + first));
  }
  if (!fs::is_regular_file(work / "candidate.so", ec))
    return fail(build_failure::tool, "nvcc succeeded but wrote no library");
  // An option that reached nvcc otherwise (NVCC_APPEND_FLAGS, an --options-file) can still make
  // it write an object or PTX there: never filed, never loaded.
  if (std::string not_library = shared_library_problem(work / "candidate.so"); !not_library.empty())
    return fail(build_failure::tool,
                fmt::format("nvcc succeeded but what it wrote is no shared library for this "
                            "machine ({}): an nvcc option that chooses another phase or output?",
                            not_library));
  out.ok = true;
  out.failure = build_failure::none;
  out.library = work / "candidate.so";
  // Published only when the files it included were scanned, are the files the build itself
  // included, and did not change while nvcc ran (an edit, or a header that appeared earlier in
  // the search, during the build would file a library of other bytes under the scanned ones). An
  // unpublished build serves this evaluation from its own folder, which the next build of this
  // key on this host removes once this process has ended.
  // An unfiled build serves this evaluation from its own folder, which out.command names.
  const auto unfiled = [&](const std::string& reason) {
    out.not_cached = reason;
    out.log += fmt::format("[kjudge: this build was not cached: {}]\n", reason);
    return out;
  };
  std::string not_cached;
  if (!unwritable.empty())
    not_cached = unwritable;  // nowhere to file it
  else if (variant.empty())
    not_cached = "its includes could not be listed (" + scan_error + ")";
  else if (built_from_scanned(work / k_build_depfile, deps, ctx, not_cached) && !unchanged(deps))
    not_cached = "an included file changed during it";
  if (!not_cached.empty()) return unfiled(not_cached);
  const fs::path final_dir = entry / variant;
  nlohmann::json info = {
      {"command", make_command(nvcc, request, final_dir)},
      {"nvcc", nvcc.string()},
      {"nvcc_version", out.nvcc_version},
      {"arch", request.arch},
      {"source", request.source.string()},
      {"dependencies", to_json(deps)},
      {"build_seconds", out.build_time.count()},
      {"key", out.key},
      {"library_bytes", fs::file_size(work / "candidate.so", ec)},
  };
  try {  // failures are values: a library gone meanwhile is the tool's (the disk's) failure
    info["library_sha256"] = kj::sha256_file(work / "candidate.so");
  } catch (const kj::error& e) {
    return fail(build_failure::tool, "the library nvcc wrote cannot be read: " + e.message());
  }
  // Paths that are not UTF-8 (a header's name in Latin-1) are kept, replaced where they are not.
  const std::string info_text =
      info.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (!write_file_atomic(work, "build.log", out.log, why) ||
      !write_file_atomic(work, "build.json", info_text, why))
    return unfiled(why);  // the library itself is complete
  fs::rename(work, final_dir, ec);
  // The target folder exists and is not empty: another build of the same key and bytes finished
  // first (its library serves), or a damaged entry is in the way (its library missing, cut
  // short or changed, or not recorded), which this build replaces; the folder it is moved to is
  // named as a build folder of this process, which the next build of this key removes once this
  // process has ended, were it left behind.
  bool filed = !ec;
  bool served = filed || detail::filed_build_whole(final_dir);
  if (!served && fs::exists(final_dir)) {
    const auto replaced = detail::replace_damaged_entry(
        work, final_dir, entry / fmt::format(".build.{}.{}", owner, kj::unique_temp_suffix()));
    served = replaced.served;
    filed = replaced.filed;
    ec = replaced.error;
  }
  if (!served)
    return fail(build_failure::tool,
                fmt::format("cannot move the build into {}: {}", final_dir.string(), ec.message()));
  if (!filed) fs::remove_all(work, ec);  // another build's library serves
  out.command = make_command(nvcc, request, final_dir);
  out.library = final_dir / "candidate.so";
  return out;
}

std::string target_arch(const std::string& device_arch) {
  const bool digits = !device_arch.empty() && device_arch.size() <= 4 &&
                      device_arch.find_first_not_of("0123456789") == std::string::npos;
  if (!digits) return device_arch;  // already a target ("90a"), or for build_native to refuse
  return std::stoi(device_arch) >= 90 ? device_arch + "a" : device_arch;
}

namespace detail {

/** Whether a filed build at `dir` is whole: its build.json names the library's size and
 *  SHA-256, and candidate.so has them. A library cut short (a full disk, a copy interrupted) or
 *  changed, or an entry without its library or its record (one an older kjudge filed included),
 *  is not served: loading it would fail, or crash, and the candidate would be blamed. */
bool filed_build_whole(const fs::path& dir) {
  std::error_code ec;
  const fs::path library = dir / "candidate.so";
  if (!fs::is_regular_file(library, ec)) return false;
  try {
    const auto info = nlohmann::json::parse(kj::read_file(dir / "build.json"));
    const auto bytes = info.at("library_bytes").get<std::uintmax_t>();
    const auto size = fs::file_size(library, ec);
    return !ec && size == bytes &&
           kj::sha256_file(library) == info.at("library_sha256").get<std::string>();
  } catch (const std::exception&) {  // unreadable, not JSON, fields missing or of another type
    return false;
  }
}

filing replace_damaged_entry(const fs::path& work, const fs::path& entry, const fs::path& aside) {
  filing out;
  // Swapped in one step where the file system can: `entry` never goes missing, and what it held
  // goes from `work`: the damaged build, or a whole one another build of the key filed
  // meanwhile, which serves its evaluation no better than this one (the same bytes built the
  // same way), and whose library stays readable to a process that has it open or loaded.
  if (::renameat2(AT_FDCWD, work.c_str(), AT_FDCWD, entry.c_str(), RENAME_EXCHANGE) == 0) {
    out.filed = out.served = true;
    std::error_code removed;
    fs::remove_all(work, removed);
    return out;
  }
  // Else in two renames (a window without `entry`).
  std::error_code moved;
  fs::rename(entry, aside, moved);
  if (!moved && filed_build_whole(aside)) {
    std::error_code back;
    fs::rename(aside, entry, back);
    if (!back) {
      out.served = true;
      return out;
    }
    // A third build filed in the meantime: that one serves, and this whole one goes below.
  }
  fs::rename(work, entry, out.error);
  out.filed = !out.error;
  std::error_code removed;
  fs::remove_all(aside, removed);  // nothing there where the move failed
  out.served = out.filed || filed_build_whole(entry);
  return out;
}

}  // namespace detail

}  // namespace kj::compile
