#include <kjudge/python/interpreter.hpp>

#include <unistd.h>

#include <cstdlib>
#include <system_error>

#include <kjudge/config.hpp>
#include <kjudge/core/error.hpp>

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

}  // namespace

interpreter_choice choose_interpreter(const fs::path& explicit_python) {
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
  if (!explicit_python.empty()) {
    check(explicit_python, "--python " + explicit_python.string());
    return take(explicit_python, "--python");
  }
  if (const char* env = std::getenv("KJUDGE_PYTHON"); env && *env) {
    check(env, std::string("$KJUDGE_PYTHON=") + env);
    return take(env, "$KJUDGE_PYTHON");
  }
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
