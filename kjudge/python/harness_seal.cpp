#include <kjudge/python/harness_seal.hpp>

#include <algorithm>

#include <fmt/format.h>

namespace kj::python::detail {

namespace {

/** A borrowed reference as an owned object (none for nullptr). */
py::object own(PyObject* p) {
  return p == nullptr ? py::object() : py::reinterpret_borrow<py::object>(p);
}

/** Whether the object `o` is (by identity) the one held in `held` (both may be null). */
bool same(PyObject* o, const py::object& held) {
  return o == held.ptr();
}

std::string name_of(const py::handle& fn) {
  const py::object q = py::getattr(fn, "__qualname__", py::none());
  return py::isinstance<py::str>(q) ? q.cast<std::string>() : std::string("<function>");
}

}  // namespace

void harness_seal::add_function(const py::handle& fn) {
  if (!PyFunction_Check(fn.ptr()) || m_function_set.contains(fn.ptr())) return;
  m_functions.push_back(py::reinterpret_borrow<py::object>(fn));
  m_function_set.insert(fn.ptr());
}

void harness_seal::seal(const py::module_& harness) {
  m_module = harness;
  const py::str module_name = harness.attr("__name__");
  const py::dict globals = harness.attr("__dict__");
  const py::module_ builtins = py::module_::import("builtins");
  const py::object staticmethod = builtins.attr("staticmethod");
  const py::object classmethod = builtins.attr("classmethod");
  const py::object property = builtins.attr("property");
  for (const auto& [key, value] : globals) {
    if (!py::isinstance<py::str>(key)) continue;
    const std::string name = key.cast<std::string>();
    if (PyFunction_Check(value.ptr())) {
      m_bindings.emplace_back(name, py::reinterpret_borrow<py::object>(value));
      add_function(value);
      continue;
    }
    if (!PyType_Check(value.ptr())) continue;
    const py::object owner = py::getattr(value, "__module__", py::none());
    if (!owner.equal(module_name)) continue;  // a class the harness imported, not its own
    m_bindings.emplace_back(name, py::reinterpret_borrow<py::object>(value));
    class_entry entry{py::reinterpret_borrow<py::object>(value), {}, {}};
    const py::object attributes = value.attr("__dict__");
    for (const auto& item : attributes.attr("items")()) {
      const auto pair = item.cast<py::tuple>();
      const std::string attribute = pair[0].cast<std::string>();
      const py::object v = pair[1];
      entry.attributes.emplace_back(attribute, v);
      py::object fn = v;
      if (py::isinstance(v, staticmethod) || py::isinstance(v, classmethod))
        fn = v.attr("__func__");
      if (py::isinstance(v, property)) {
        for (const char* part : {"fget", "fset", "fdel"}) add_function(v.attr(part));
        entry.methods.insert(attribute);
      }
      if (PyFunction_Check(fn.ptr())) {
        add_function(fn);
        entry.methods.insert(attribute);
      }
    }
    m_classes.push_back(std::move(entry));
  }
  // What the functions hold now is what they must hold: code, defaults, keyword defaults.
  const std::vector<py::object> functions = m_functions;
  for (const auto& fn : functions) add_closure(fn);
}

void harness_seal::add_closure(const py::handle& fn) {
  if (!PyFunction_Check(fn.ptr())) return;
  const bool known = std::any_of(m_closures.begin(), m_closures.end(),
                                 [&](const closure_entry& e) { return e.function.is(fn); });
  if (known) return;
  add_function(fn);
  closure_entry entry{py::reinterpret_borrow<py::object>(fn), {}};
  entry.cells.push_back(own(PyFunction_GET_CODE(fn.ptr())));
  entry.cells.push_back(own(PyFunction_GET_DEFAULTS(fn.ptr())));
  entry.cells.push_back(own(PyFunction_GET_KW_DEFAULTS(fn.ptr())));
  PyObject* closure = PyFunction_GET_CLOSURE(fn.ptr());
  const Py_ssize_t n = closure == nullptr ? 0 : PyTuple_GET_SIZE(closure);
  std::vector<py::object> nested;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* content = PyCell_GET(PyTuple_GET_ITEM(closure, i));
    entry.cells.push_back(own(content));
    if (content != nullptr && PyFunction_Check(content)) nested.push_back(own(content));
  }
  m_closures.push_back(std::move(entry));
  for (const auto& f : nested) add_closure(f);
}

void harness_seal::check_instances(std::vector<std::string>& found) const {
  const py::dict globals = m_module.attr("__dict__");
  for (const auto& [key, value] : globals) {
    const auto cls = std::find_if(m_classes.begin(), m_classes.end(), [&](const class_entry& c) {
      return c.type.ptr() == reinterpret_cast<PyObject*>(Py_TYPE(value.ptr()));
    });
    if (cls == m_classes.end()) continue;
    PyObject* raw = PyObject_GenericGetDict(value.ptr(), nullptr);  // new reference
    if (raw == nullptr) {
      PyErr_Clear();
      continue;
    }
    const py::object dict = py::reinterpret_steal<py::object>(raw);
    PyObject* k = nullptr;
    PyObject* v = nullptr;
    Py_ssize_t pos = 0;
    while (PyDict_Next(dict.ptr(), &pos, &k, &v)) {
      if (!PyUnicode_Check(k)) continue;
      const std::string attribute = py::reinterpret_borrow<py::str>(k).cast<std::string>();
      if (cls->methods.contains(attribute))
        found.push_back(fmt::format("an attribute of kjudge_harness.{} in place of its method {}",
                                    py::str(key).cast<std::string>(), attribute));
    }
  }
}

std::string harness_seal::changed() const {
  if (!is_sealed()) return "";
  std::vector<std::string> found;
  PyObject* globals = PyModule_GetDict(m_module.ptr());  // borrowed
  for (const auto& [name, obj] : m_bindings) {
    if (!same(PyDict_GetItemString(globals, name.c_str()), obj))
      found.push_back(fmt::format("kjudge_harness.{} (rebound)", name));
  }
  for (const auto& c : m_classes) {
    const py::object attributes = c.type.attr("__dict__");
    std::size_t count = 0;
    for (const auto& item : attributes) {
      if (py::str(item).cast<std::string>() != "__annotations__") ++count;
    }
    bool whole = count == c.attributes.size();
    for (const auto& [name, obj] : c.attributes)
      whole = whole && attributes.attr("get")(name).is(obj);
    if (!whole)
      found.push_back(fmt::format("the attributes of kjudge_harness.{}",
                                  py::str(c.type.attr("__qualname__")).cast<std::string>()));
  }
  for (const auto& e : m_closures) {
    PyObject* fn = e.function.ptr();
    bool whole = same(PyFunction_GET_CODE(fn), e.cells[0]) &&
                 same(PyFunction_GET_DEFAULTS(fn), e.cells[1]) &&
                 same(PyFunction_GET_KW_DEFAULTS(fn), e.cells[2]);
    PyObject* closure = PyFunction_GET_CLOSURE(fn);
    const Py_ssize_t n = closure == nullptr ? 0 : PyTuple_GET_SIZE(closure);
    whole = whole && static_cast<std::size_t>(n) + 3 == e.cells.size();
    for (Py_ssize_t i = 0; whole && i < n; ++i)
      whole =
          same(PyCell_GET(PyTuple_GET_ITEM(closure, i)), e.cells[static_cast<std::size_t>(i) + 3]);
    if (!whole)
      found.push_back(fmt::format("the code, defaults or closure of {}", name_of(e.function)));
  }
  check_instances(found);
  if (found.empty()) return "";
  std::sort(found.begin(), found.end());
  const std::size_t shown = std::min<std::size_t>(found.size(), 6);
  std::string out;
  for (std::size_t i = 0; i < shown; ++i) out += (i ? "; " : "") + found[i];
  if (found.size() > shown) out += fmt::format(" (and {} more)", found.size() - shown);
  return out;
}

}  // namespace kj::python::detail
