#include "relay_ir/attrs.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "runtime/error.h"

namespace tessera::relay_ir {

const char* attr_kind_name(const AttrValue& v) {
  static const char* names[] = {"int", "float", "string", "ints", "floats", "dims"};
  return names[v.index()];
}

namespace {
// The shortest text that reads back to the same double, with a decimal point or exponent so
// it reads back as a float, not an int.
std::string float_str(double d) {
  if (std::isnan(d)) return std::signbit(d) ? "-nan" : "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  std::string s(buf, r.ptr);
  if (s.find_first_not_of("-0123456789") == std::string::npos) s += ".0";
  return s;
}
std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}
}  // namespace

std::string attr_to_string(const AttrValue& v) {
  switch (v.index()) {
    case 0:
      return std::to_string(std::get<int64_t>(v));
    case 1:
      return float_str(std::get<double>(v));
    case 2:
      return quote(std::get<std::string>(v));
    case 3: {
      std::string s = "[";
      const auto& xs = std::get<std::vector<int64_t>>(v);
      for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + std::to_string(xs[i]);
      return s + "]";
    }
    case 5: {
      std::string s = std::get<Shape>(v).str();  // "(N, 512)"; a rank-1 shape's "(N,)"
      if (s.size() > 2 && s[s.size() - 2] == ',') s.erase(s.size() - 2, 1);
      return "[" + s.substr(1, s.size() - 2) + "]";
    }
    default: {
      std::string s = "[";
      const auto& xs = std::get<std::vector<double>>(v);
      for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + float_str(xs[i]);
      return s + "]";
    }
  }
}

Attrs::Attrs(std::initializer_list<std::pair<const std::string, AttrValue>> items) {
  for (const auto& [k, v] : items) set(k, v);
}

bool Attrs::has(const std::string& name) const {
  return std::any_of(items_.begin(), items_.end(), [&](const auto& p) { return p.first == name; });
}

const AttrValue& Attrs::get(const std::string& name) const {
  for (const auto& [k, v] : items_)
    if (k == name) return v;
  fail("missing attribute '", name, "'");
}

namespace {
template <typename T>
const T& typed(const Attrs& a, const std::string& name, const char* kind) {
  const AttrValue& v = a.get(name);
  if (const T* x = std::get_if<T>(&v)) return *x;
  fail("attribute '", name, "' is ", attr_kind_name(v), ", expected ", kind);
}
}  // namespace

int64_t Attrs::get_int(const std::string& name) const { return typed<int64_t>(*this, name, "int"); }

double Attrs::get_float(const std::string& name) const {
  const AttrValue& v = get(name);
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  return typed<double>(*this, name, "float");
}

const std::string& Attrs::get_str(const std::string& name) const { return typed<std::string>(*this, name, "string"); }

const std::vector<int64_t>& Attrs::get_ints(const std::string& name) const {
  if (const auto* dims = std::get_if<Shape>(&get(name))) return dims->ints();  // throws naming the symbolic one
  return typed<std::vector<int64_t>>(*this, name, "ints");
}

Shape Attrs::get_shape(const std::string& name) const {
  if (const auto* dims = std::get_if<Shape>(&get(name))) return *dims;
  return typed<std::vector<int64_t>>(*this, name, "ints or dims");
}

tensor_ir::Expr Attrs::get_dim(const std::string& name) const {
  if (const auto* dims = std::get_if<Shape>(&get(name)); dims && dims->size() == 1) return dims->dim(0);
  return typed<int64_t>(*this, name, "int or one dimension");
}

std::vector<double> Attrs::get_floats(const std::string& name) const {
  const AttrValue& v = get(name);
  if (const auto* i = std::get_if<std::vector<int64_t>>(&v)) return std::vector<double>(i->begin(), i->end());
  return typed<std::vector<double>>(*this, name, "floats");
}

void Attrs::set(const std::string& name, AttrValue value) {
  if (const auto* dims = std::get_if<Shape>(&value); dims && dims->is_static()) value = dims->ints();
  auto it = std::lower_bound(items_.begin(), items_.end(), name,
                             [](const auto& p, const std::string& n) { return p.first < n; });
  if (it != items_.end() && it->first == name) it->second = std::move(value);
  else items_.insert(it, {name, std::move(value)});
}

}  // namespace tessera::relay_ir
