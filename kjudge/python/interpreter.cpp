#include <kjudge/python/interpreter.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <system_error>

#include <kjudge/config.hpp>
#include <kjudge/core/error.hpp>
#include <kjudge/runner/process.hpp>

namespace kj::python {

namespace fs = std::filesystem;

std::string embedded_version() {
  return KJ_PYTHON_VERSION;
}

namespace {

/** A cheap check that needs no subprocess: <prefix>/lib/pythonX.Y/site-packages/torch exists
 *  (venvs and pip installs), or the Debian dist-packages layout. */
bool has_torch(const fs::path& python, std::string& why) {
  std::error_code ec;
  if (!fs::exists(python, ec)) {
    why = "does not exist";
    return false;
  }
  const fs::path prefix = python.parent_path().parent_path();
  const std::string ver = embedded_version();
  const fs::path candidates[] = {
      prefix / "lib" / ("python" + ver) / "site-packages" / "torch" / "__init__.py",
      prefix / "local" / "lib" / ("python" + ver) / "dist-packages" / "torch" / "__init__.py",
      prefix / "lib" / "python3" / "dist-packages" / "torch" / "__init__.py",
  };
  for (const auto& c : candidates)
    if (fs::exists(c, ec)) return true;
  why = "no torch for Python " + ver + " under " + prefix.string();
  return false;
}

/** Runs an interpreter the user named, once, to learn that it is a Python, its version and
 *  whether torch is on its path (found, not imported: a few tens of milliseconds). Without this,
 *  a program that is no Python (`--python /bin/ls`) or a Python of another version than the one
 *  embedded ended as "the embedded interpreter cannot import torch" deep in the worker. Returns
 *  the interpreter's own `sys.executable` (empty where it gave none): for a script that execs a
 *  Python (a pyenv shim, a wrapper), the Python it runs, whose path the embedded interpreter
 *  must take to find the same packages (the script's own path found none: exit 7). */
std::string check_named_interpreter(const fs::path& python, const std::string& what,
                                    std::chrono::milliseconds limit) {
  runner::spawn_options o;
  // Absolute: the program the worker will take (a bare name is the file in this folder), not
  // one PATH finds.
  std::error_code ec;
  const fs::path program = fs::absolute(python, ec);
  o.argv = {(ec ? python : program).string(), "-c",
            // The markers are joined at run time: a program that echoes its arguments (ls does, in
            // its complaint) does not print them.
            "import sys; print('kjudge' + '-probe %d.%d' % sys.version_info[:2]); "
            "import importlib.util as u; "
            "print('kjudge' + '-torch %d' % (u.find_spec('torch') is not None)); "
            "print('kjudge' + '-exe ' + (sys.executable or ''))"};
  o.timeout = limit;
  o.output_tail_bytes = 4096;
  const auto r = runner::run_process(o);
  // What the probe printed after `key`, to the end of its line ("" where it printed no key).
  const auto line_after = [&r](const std::string& key) {
    const auto at = r.output_tail.find(key);
    if (at == std::string::npos) return std::string();
    const std::string rest = r.output_tail.substr(at + key.size());
    return rest.substr(0, rest.find_first_of("\r\n"));
  };
  const auto word_after = [&line_after](const std::string& key) {
    std::istringstream in(line_after(key));
    std::string word;
    in >> word;
    return word;
  };
  if (r.how == runner::exit_kind::timed_out) {
    const double s = std::chrono::duration<double>(o.timeout).count();
    if (limit < k_interpreter_check_limit)
      KJ_THROW(error_kind::usage,
               "{}: started with -c to read its version, it did not end within the evaluation's "
               "--timeout of {:g} s, which this check is held to (the whole evaluation must fit "
               "in it; a longer --timeout gives the interpreter time to start)",
               what, s);
    KJ_THROW(error_kind::usage,
             "{}: started with -c to read its version, it did not end within {:g} s (a Python "
             "whose start imports much, or a program that waits for input?)",
             what, s);
  }
  const std::string version = word_after("kjudge-probe ");
  const bool looks_like_version = version.size() >= 3 && version.find('.') != std::string::npos &&
                                  version.find_first_not_of("0123456789.") == std::string::npos;
  if (!looks_like_version) {
    std::string said = runner::last_lines(r.output_tail, 1);
    while (!said.empty() && (said.back() == '\n' || said.back() == '\r')) said.pop_back();
    if (said.size() > 160) said = said.substr(0, 160) + "...";
    KJ_THROW(error_kind::usage, "{}: not a Python interpreter (run with -c, it {}{}{})", what,
             r.describe(), said.empty() ? "" : ": ", said);
  }
  if (version != embedded_version())
    KJ_THROW(error_kind::usage,
             "{} is Python {}, but this kjudge embeds Python {}: name a python{} (or a venv made "
             "from one), or build kjudge against this one (-DKJ_PYTHON={})",
             what, version, embedded_version(), embedded_version(), python.string());
  if (word_after("kjudge-torch ") != "1")
    KJ_THROW(error_kind::usage,
             "{} (Python {}) finds no torch on its path ({}); install torch for it, or name "
             "another interpreter",
             what, version, r.ok() ? "importlib finds no 'torch'" : r.describe());
  return line_after("kjudge-exe ");  // its whole line: a path may hold spaces
}

/** The interpreter to embed for one the user named: the Python it runs where that is another
 *  file (a script or launcher that execs one), else the named path itself (a venv's python3, a
 *  link whose venv must stay found, is its own sys.executable). */
fs::path interpreter_to_embed(const fs::path& named, const std::string& reported) {
  if (reported.empty() || !fs::path(reported).is_absolute()) return named;
  std::error_code ec;
  if (fs::equivalent(fs::absolute(named, ec), reported, ec)) return named;
  return fs::is_regular_file(reported, ec) ? fs::path(reported) : named;
}

}  // namespace

interpreter_choice choose_interpreter(const fs::path& explicit_python,
                                      std::chrono::milliseconds check_limit) {
  check_limit = std::clamp(check_limit, std::chrono::milliseconds(1), k_interpreter_check_limit);
  interpreter_choice out;
  // Absolute, not resolved: a venv's python3 is a link whose venv must stay found, and the worker
  // pool runs from / (a relative path would name nothing there).
  const auto take = [&out](const fs::path& path, const char* source) {
    std::error_code ec;
    out.executable = fs::absolute(path, ec);
    out.source = source;
    return out;
  };
  // An interpreter named by the user must be a file that can be run (a folder passed this and
  // ended as an internal error, with a worker pool started for it).
  const auto check = [](const fs::path& path, const std::string& what) {
    std::error_code ec;
    const auto st = fs::status(path, ec);
    if (!fs::exists(st)) KJ_THROW(error_kind::usage, "{}: no such file", what);
    if (!fs::is_regular_file(st)) KJ_THROW(error_kind::usage, "{}: not a file", what);
    if (::access(path.c_str(), X_OK) != 0) KJ_THROW(error_kind::usage, "{}: not executable", what);
  };
  const auto named = [&](const fs::path& path, const std::string& what, const char* source) {
    check(path, what);
    return take(interpreter_to_embed(path, check_named_interpreter(path, what, check_limit)),
                source);
  };
  if (!explicit_python.empty())
    return named(explicit_python, "--python " + explicit_python.string(), "--python");
  if (const char* env = std::getenv("KJUDGE_PYTHON"); env && *env)
    return named(env, std::string("$KJUDGE_PYTHON=") + env, "$KJUDGE_PYTHON");
  struct probe {
    fs::path path;
    const char* source;
  };
  std::vector<probe> probes = {{KJ_DEFAULT_PYTHON, "configured"},
                               {fs::path(KJ_SOURCE_DIR) / ".venv/bin/python3", "probed"},
                               {"/opt/torch/.venv/bin/python3", "probed"},
                               {"/usr/bin/python3", "probed"}};
  if (const char* venv = std::getenv("VIRTUAL_ENV"); venv && *venv)
    probes.insert(probes.begin() + 1, {fs::path(venv) / "bin/python3", "probed"});
  for (const auto& p : probes) {
    std::string why;
    if (has_torch(p.path, why)) return take(p.path, p.source);
    out.rejected.push_back(p.path.string() + ": " + why);
  }
  std::string tried;
  for (const auto& r : out.rejected) tried += "\n  " + r;
  KJ_THROW(error_kind::python,
           "no python3 {} with torch found; pass --python or set KJUDGE_PYTHON. Tried:{}",
           embedded_version(), tried);
}

}  // namespace kj::python
