#pragma once
/** @file The harness sealed against the Python code it runs. A candidate shares the worker's
 *  interpreter with kjudge's harness, and the harness's own checks are Python that Python can
 *  change: a candidate that gave `trial_finish` and `timing_check_finish` other code (their
 *  `__code__`; the function objects, which the checks compare, stayed the same) had its outputs
 *  of zeros judged correct, and one that shadowed a method of the harness's `_reach` object with
 *  an attribute of its own ran code of its choice from the worker, after timing. The seal holds,
 *  from C++, what the harness was once its code had run: its functions' code, defaults and
 *  keyword defaults may not be replaced at all (the worker's audit hook refuses the change, as
 *  Python audits it), and its module's names (all but those its own code rebinds: `global`),
 *  its classes' attributes, its instances' attributes (none may shadow a method) and the code
 *  and cells of its functions and of the runner closures it makes for timing are compared with
 *  what the seal took, around every call the session makes into the harness and before every
 *  timed sample's prepare().
 *  It raises the bar, no more: what Python does not audit and changes back within one call of
 *  the harness's goes unseen, and `ctypes` reaches everything (docs/methodology.md). */

#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include <pybind11/pybind11.h>

namespace kj::python::detail {

namespace py = pybind11;

/** The names a Python source declares `global` in its functions: the module-level names its own
 *  code rebinds, which the seal lets change. */
[[nodiscard]] std::unordered_set<std::string> rebound_names(std::string_view source);

class harness_seal {
 public:
  /** Takes the harness module as its code left it; `rebound`: its names its code rebinds. */
  void seal(const py::module_& harness, const std::unordered_set<std::string>& rebound);

  /** Seals a function (of the harness's own, or one it made later: a runner closure): its
   *  code, defaults and the contents of its cells, and the same of every function among those
   *  contents. */
  void add_closure(const py::handle& fn);

  /** Seals, from now on, the items of the list the module binds to `name` as they are now, by
   *  identity (a list the harness's own code fills after the seal: setup()'s generators, which
   *  every seeding draws on; a candidate that put a wrapper in their place through
   *  sys.modules["kjudge_harness"] had every input drawn as zeros). Again for the same name:
   *  its items as they are then. */
  void pin_items(const char* name);

  /** "" when the harness is as sealed, else what changed (a few names). Never throws. */
  [[nodiscard]] std::string changed() const;

  [[nodiscard]] bool is_sealed() const noexcept { return m_module.ptr() != nullptr; }

  /** Whether `obj` is a function whose code, defaults and keyword defaults are sealed. */
  [[nodiscard]] bool holds_function(PyObject* obj) const noexcept {
    return m_function_set.contains(obj);
  }

 private:
  struct global_entry {
    py::object key, value;
    bool free = false;  ///< a name the harness rebinds
  };
  struct class_entry {
    py::object type;
    std::vector<std::pair<py::object, py::object>> attributes;  ///< in the dict's order
    py::object methods;  ///< a set of the attribute names that hold functions
  };
  struct closure_entry {
    py::object function;
    std::vector<py::object> cells;  ///< code, defaults, keyword defaults, then the cells' contents
  };

  struct pinned_entry {
    std::string name;
    std::vector<py::object> items;
  };

  void check_globals(std::vector<std::string>& found) const;
  void check_pinned(std::vector<std::string>& found) const;
  void check_classes(std::vector<std::string>& found) const;
  void check_instances(std::vector<std::string>& found) const;

  py::module_ m_module;
  std::unordered_set<std::string> m_rebound;
  std::vector<global_entry> m_globals;  ///< the module's dict, in its order
  std::vector<class_entry> m_classes;
  std::vector<closure_entry> m_closures;
  std::vector<pinned_entry> m_pinned;
  /** The sealed functions (held by m_closures, so that no other object reuses an address). */
  std::unordered_set<PyObject*> m_function_set;
};

}  // namespace kj::python::detail
