#include <kjudge/python/harness_seal.hpp>

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace kj::python::detail {

namespace {

/** A borrowed reference as an owned object (none for nullptr). */
py::object own(PyObject* p) {
  return p == nullptr ? py::object() : py::reinterpret_borrow<py::object>(p);
}

/** str(obj) as UTF-8 whatever it holds (a lone surrogate escaped), for messages; never throws. */
std::string text_of(PyObject* obj) {
  if (obj == nullptr) return "?";
  PyObject* s = PyObject_Str(obj);
  if (s == nullptr) {
    PyErr_Clear();
    return "?";
  }
  PyObject* bytes = PyUnicode_AsEncodedString(s, "utf-8", "backslashreplace");
  Py_DECREF(s);
  if (bytes == nullptr) {
    PyErr_Clear();
    return "?";
  }
  std::string out(PyBytes_AS_STRING(bytes), static_cast<std::size_t>(PyBytes_GET_SIZE(bytes)));
  Py_DECREF(bytes);
  return out;
}

/** A type's own attribute dict (a new reference). */
py::object type_dict(PyObject* type) {
#if PY_VERSION_HEX >= 0x030C0000
  return py::reinterpret_steal<py::object>(PyType_GetDict(reinterpret_cast<PyTypeObject*>(type)));
#else
  return own(reinterpret_cast<PyTypeObject*>(type)->tp_dict);
#endif
}

/** Keys Python adds to a class's dict when its annotations are read (3.14 keeps them apart). */
bool lazy_annotation_key(PyObject* key) {
  return PyUnicode_Check(key) &&
         (PyUnicode_CompareWithASCIIString(key, "__annotations__") == 0 ||
          PyUnicode_CompareWithASCIIString(key, "__annotate_func__") == 0 ||
          PyUnicode_CompareWithASCIIString(key, "__annotations_cache__") == 0);
}

}  // namespace

std::unordered_set<std::string> rebound_names(std::string_view source) {
  std::unordered_set<std::string> out;
  std::istringstream lines{std::string(source)};
  for (std::string line; std::getline(lines, line);) {
    const auto start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line.compare(start, 7, "global ") != 0) continue;
    std::istringstream names(line.substr(start + 7));
    for (std::string name; std::getline(names, name, ',');) {
      const auto a = name.find_first_not_of(" \t");
      const auto b = name.find_last_not_of(" \t\r#");
      if (a != std::string::npos && b != std::string::npos && b >= a)
        out.insert(name.substr(a, b - a + 1));
    }
  }
  return out;
}

void harness_seal::seal(const py::module_& harness,
                        const std::unordered_set<std::string>& rebound) {
  m_module = harness;
  m_rebound = rebound;
  const py::str module_name = harness.attr("__name__");
  const py::module_ builtins = py::module_::import("builtins");
  const py::object staticmethod = builtins.attr("staticmethod");
  const py::object classmethod = builtins.attr("classmethod");
  const py::object property = builtins.attr("property");
  PyObject* globals = PyModule_GetDict(harness.ptr());  // borrowed
  PyObject* key = nullptr;
  PyObject* value = nullptr;
  Py_ssize_t pos = 0;
  while (PyDict_Next(globals, &pos, &key, &value)) {
    const bool free = PyUnicode_Check(key) && rebound.contains(text_of(key));
    m_globals.push_back({own(key), own(value), free});
    if (PyFunction_Check(value)) add_closure(value);
    if (!PyType_Check(value)) continue;
    const py::object owner = py::getattr(value, "__module__", py::none());
    if (!owner.equal(module_name)) continue;  // a class the harness imported, not its own
    class_entry entry{own(value), {}, py::reinterpret_steal<py::object>(PySet_New(nullptr))};
    const py::object attributes = type_dict(value);
    PyObject* k = nullptr;
    PyObject* v = nullptr;
    Py_ssize_t p = 0;
    while (PyDict_Next(attributes.ptr(), &p, &k, &v)) {
      if (lazy_annotation_key(k)) continue;
      entry.attributes.emplace_back(own(k), own(v));
      const py::handle attribute(v);
      py::object fn = own(v);
      if (py::isinstance(attribute, staticmethod) || py::isinstance(attribute, classmethod))
        fn = attribute.attr("__func__");
      bool method = PyFunction_Check(fn.ptr());
      if (py::isinstance(attribute, property)) {
        for (const char* part : {"fget", "fset", "fdel"}) add_closure(attribute.attr(part));
        method = true;
      }
      if (method) {
        add_closure(fn);
        PySet_Add(entry.methods.ptr(), k);
      }
    }
    m_classes.push_back(std::move(entry));
  }
}

void harness_seal::add_closure(const py::handle& fn) {
  if (!PyFunction_Check(fn.ptr()) || !m_function_set.insert(fn.ptr()).second) return;
  // What it holds now is what it must hold: code, defaults, keyword defaults, cells.
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

void harness_seal::check_globals(std::vector<std::string>& found) const {
  PyObject* globals = PyModule_GetDict(m_module.ptr());  // borrowed
  PyObject* key = nullptr;
  PyObject* value = nullptr;
  Py_ssize_t pos = 0;
  std::size_t i = 0;
  // In insertion order, as sealed: a rebinding keeps its place, a deletion or an insertion
  // shifts the rest.
  while (PyDict_Next(globals, &pos, &key, &value)) {
    if (i < m_globals.size()) {
      const auto& g = m_globals[i];
      if (key != g.key.ptr() && PyObject_RichCompareBool(key, g.key.ptr(), Py_EQ) != 1) {
        PyErr_Clear();
        found.push_back(fmt::format("the names of kjudge_harness (one added, or {} removed)",
                                    text_of(g.key.ptr())));
        return;
      }
      if (!g.free && value != g.value.ptr())
        found.push_back(fmt::format("kjudge_harness.{} (rebound)", text_of(key)));
    } else if (!PyUnicode_Check(key) || !m_rebound.contains(text_of(key))) {
      found.push_back(fmt::format("kjudge_harness.{} (added)", text_of(key)));
    }
    ++i;
  }
  if (i < m_globals.size()) found.push_back("the names of kjudge_harness (one removed)");
}

void harness_seal::pin_items(const char* name) {
  const py::object bound = m_module.attr(name);
  if (!PyList_Check(bound.ptr())) throw std::logic_error(std::string("not a list: ") + name);
  const auto items = py::reinterpret_borrow<py::list>(bound);
  pinned_entry entry{name, {}};
  for (const py::handle item : items)
    entry.items.push_back(py::reinterpret_borrow<py::object>(item));
  for (auto& p : m_pinned) {
    if (p.name == entry.name) {
      p = std::move(entry);
      return;
    }
  }
  m_pinned.push_back(std::move(entry));
}

void harness_seal::check_pinned(std::vector<std::string>& found) const {
  PyObject* globals = PyModule_GetDict(m_module.ptr());  // borrowed
  for (const auto& p : m_pinned) {
    PyObject* list = PyDict_GetItemString(globals, p.name.c_str());  // borrowed
    bool same = list != nullptr && PyList_Check(list) &&
                static_cast<std::size_t>(PyList_GET_SIZE(list)) == p.items.size();
    for (std::size_t i = 0; same && i < p.items.size(); ++i)
      same = PyList_GET_ITEM(list, static_cast<Py_ssize_t>(i)) == p.items[i].ptr();
    if (!same) found.push_back(fmt::format("the items of kjudge_harness.{}", p.name));
  }
}

void harness_seal::check_classes(std::vector<std::string>& found) const {
  for (const auto& c : m_classes) {
    const py::object attributes = type_dict(c.type.ptr());
    PyObject* k = nullptr;
    PyObject* v = nullptr;
    Py_ssize_t pos = 0;
    std::size_t i = 0;
    bool whole = true;
    while (whole && PyDict_Next(attributes.ptr(), &pos, &k, &v)) {
      if (lazy_annotation_key(k)) continue;
      whole = i < c.attributes.size() && k == c.attributes[i].first.ptr() &&
              v == c.attributes[i].second.ptr();
      ++i;
    }
    if (!whole || i != c.attributes.size())
      found.push_back(fmt::format("the attributes of kjudge_harness.{}",
                                  text_of(py::getattr(c.type, "__qualname__", py::none()).ptr())));
  }
}

void harness_seal::check_instances(std::vector<std::string>& found) const {
  PyObject* globals = PyModule_GetDict(m_module.ptr());  // borrowed
  PyObject* name = nullptr;
  PyObject* value = nullptr;
  Py_ssize_t pos = 0;
  while (PyDict_Next(globals, &pos, &name, &value)) {
    const auto cls = std::find_if(m_classes.begin(), m_classes.end(), [&](const class_entry& c) {
      return c.type.ptr() == reinterpret_cast<PyObject*>(Py_TYPE(value));
    });
    if (cls == m_classes.end()) continue;
    PyObject* raw = PyObject_GenericGetDict(value, nullptr);  // new reference
    if (raw == nullptr) {
      PyErr_Clear();
      continue;
    }
    const py::object dict = py::reinterpret_steal<py::object>(raw);
    PyObject* k = nullptr;
    PyObject* v = nullptr;
    Py_ssize_t p = 0;
    while (PyDict_Next(dict.ptr(), &p, &k, &v)) {
      const int shadows = PySet_Contains(cls->methods.ptr(), k);
      if (shadows < 0) PyErr_Clear();
      if (shadows == 1)
        found.push_back(fmt::format("an attribute of kjudge_harness.{} in place of its method {}",
                                    text_of(name), text_of(k)));
    }
  }
}

std::string harness_seal::changed() const {
  if (!is_sealed()) return "";
  std::vector<std::string> found;
  check_globals(found);
  check_pinned(found);
  check_classes(found);
  for (const auto& e : m_closures) {
    PyObject* fn = e.function.ptr();
    bool whole = PyFunction_GET_CODE(fn) == e.cells[0].ptr() &&
                 PyFunction_GET_DEFAULTS(fn) == e.cells[1].ptr() &&
                 PyFunction_GET_KW_DEFAULTS(fn) == e.cells[2].ptr();
    PyObject* closure = PyFunction_GET_CLOSURE(fn);
    const Py_ssize_t n = closure == nullptr ? 0 : PyTuple_GET_SIZE(closure);
    whole = whole && static_cast<std::size_t>(n) + 3 == e.cells.size();
    for (Py_ssize_t i = 0; whole && i < n; ++i)
      whole = PyCell_GET(PyTuple_GET_ITEM(closure, i)) ==
              e.cells[static_cast<std::size_t>(i) + 3].ptr();
    if (!whole) {
      const py::object name = py::reinterpret_steal<py::object>(
          PyObject_GetAttrString(fn, "__qualname__"));  // null (an error) is said as "?"
      if (!name) PyErr_Clear();
      found.push_back(fmt::format("the code, defaults or closure of {}", text_of(name.ptr())));
    }
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
