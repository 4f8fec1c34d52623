#include "relay_ir/printer.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "relay_ir/functor.h"
#include "runtime/element.h"
#include "runtime/error.h"
#include "runtime/half.h"

namespace tessera::relay_ir {

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  return true;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string name_text(const std::string& s) { return is_identifier(s) ? s : quoted(s); }

// The shortest text that reads back to the same value (std::to_chars), so constants round-trip
// exactly without printing 17 digits of noise for 0.1.
template <typename T>
std::string shortest(T v) {
  if (std::isnan(v)) return std::signbit(v) ? "-nan" : "nan";  // x86 makes -nan (0 * inf)
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string attrs_text(const Attrs& attrs) {
  std::string s;
  for (const auto& [k, v] : attrs.items()) s += (s.empty() ? "" : ", ") + k + "=" + attr_to_string(v);
  return s;
}

template <typename T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::string element_text(const runtime::NDArray& a, int64_t i) {
  DataType t = a.dtype();
  const char* p = static_cast<const char*>(a.data()) + i * t.element_bytes();
  // A narrow type prints as the float or integer it widens to, which reads back exactly.
  if (t.is_narrow_float()) return shortest(static_cast<float>(runtime::element_as_double(a, i)));
  if (t.is_narrow()) return std::to_string(static_cast<int>(runtime::element_as_double(a, i)));
  switch (t.code) {
    case runtime::TypeCode::Float:
      // float16 prints as the float it widens to; reading that float back narrows exactly.
      if (t.bits == 16) return shortest(runtime::half_to_float(load<uint16_t>(p)));
      if (t.bits == 32) return shortest(load<float>(p));
      return shortest(load<double>(p));
    case runtime::TypeCode::Int:
      if (t.bits == 8) return std::to_string(load<int8_t>(p));
      if (t.bits == 16) return std::to_string(load<int16_t>(p));
      if (t.bits == 32) return std::to_string(load<int32_t>(p));
      return std::to_string(load<int64_t>(p));
    case runtime::TypeCode::UInt:
      if (t.bits == 8) return std::to_string(load<uint8_t>(p));
      if (t.bits == 16) return std::to_string(load<uint16_t>(p));
      if (t.bits == 32) return std::to_string(load<uint32_t>(p));
      return std::to_string(load<uint64_t>(p));
    case runtime::TypeCode::Bool:
      return *p ? "1" : "0";
    default:
      break;
  }
  fail("to_text: constant of unsupported dtype ", t.str());
}

// Comments end at "*/" and at the end of the line; keep an origin from cutting either short.
std::string comment_safe(std::string s) {
  for (size_t at; (at = s.find("*/")) != std::string::npos;) s.replace(at, 2, "* /");
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

// Every node reachable from root, inputs first, as post_order lists them, except that a call's
// arguments come before the function it calls: a fused function then prints next to its call,
// not ahead of everything that computes its arguments.
std::vector<Expr> print_order(const Expr& root) {
  return post_order(root, [](const Expr& e) {
    std::vector<Expr> kids = children(e);
    if (const auto* c = e.as<CallNode>(); c && c->op.as<FunctionNode>())
      std::rotate(kids.begin(), kids.begin() + 1, kids.end());
    return kids;
  });
}

bool always_bound(const Expr& e) {
  RelayKind k = e->kind;
  return k == RelayKind::Call || k == RelayKind::Tuple || k == RelayKind::TupleGetItem || k == RelayKind::Function;
}

// Where nodes are bound. A node is bound in the innermost function whose body uses it
// everywhere it is used (the common ancestor of its users' scopes), so a value shared between
// a function and its surroundings is bound once, outside, and the function refers to it.
// Scopes are keyed by their FunctionNode; nullptr is the outermost text.
class Scopes {
 public:
  explicit Scopes(const Expr& root) : order_(print_order(root)) {
    depth_[nullptr] = 0;
    scope_[root.get()] = nullptr;
    // Users come after their inputs in post order, so walking it backwards meets every user
    // of a node before the node and its scope is final when it is reached.
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      const ExprNode* x = it->get();
      const FunctionNode* s = scope_.at(x);
      if (const auto* f = x->as<FunctionNode>()) {
        parent_[f] = s;
        depth_[f] = depth_[s] + 1;
        for (const Var& p : f->params) {
          params_.insert(p.get());
          scope_.emplace(p.get(), f);  // an unused parameter has no use to place it
        }
      }
      for_each_use(*it, [&](const Expr& c, const FunctionNode* u) {
        ++uses_[c.get()];
        auto [at, fresh] = scope_.emplace(c.get(), u);
        if (!fresh) at->second = common(at->second, u);
      });
    }
    for (const Expr& e : order_) {
      members_[scope_.at(e.get())].push_back(e);
      // A function that refers to a node bound outside it (a closure) continues the outer
      // numbering, so its own %N never hide the outer ones it uses.
      for_each_use(e, [&](const Expr& c, const FunctionNode* u) {
        if (!is_bound(c)) return;
        for (const FunctionNode* s = u; s != scope_.at(c.get()); s = parent_.at(s)) captures_.insert(s);
      });
    }
  }

  // Bound to a %N (rather than written where it is used) unless it is its scope's result.
  bool is_bound(const Expr& e) const {
    auto it = uses_.find(e.get());  // the root has no uses
    return always_bound(e) || (e.as<ConstantNode>() && it != uses_.end() && it->second > 1);
  }
  bool is_param(const VarNode* v) const { return params_.count(v) > 0; }
  bool captures(const FunctionNode* f) const { return captures_.count(f) > 0; }
  const FunctionNode* scope_of(const Expr& e) const { return scope_.at(e.get()); }
  const std::vector<Expr>& members(const FunctionNode* s) const {
    static const std::vector<Expr> none;
    auto it = members_.find(s);
    return it == members_.end() ? none : it->second;
  }

 private:
  // Calls f(input, scope the use is in) for each input of e; a function's body is used inside it.
  template <typename F>
  void for_each_use(const Expr& e, F&& f) const {
    if (const auto* fn = e.as<FunctionNode>()) return f(fn->body, fn);
    for (const Expr& c : children(e)) f(c, scope_.at(e.get()));
  }

  const FunctionNode* common(const FunctionNode* a, const FunctionNode* b) const {
    while (depth_.at(a) > depth_.at(b)) a = parent_.at(a);
    while (depth_.at(b) > depth_.at(a)) b = parent_.at(b);
    while (a != b) a = parent_.at(a), b = parent_.at(b);
    return a;
  }

  std::vector<Expr> order_;
  std::unordered_map<const ExprNode*, const FunctionNode*> scope_;
  std::unordered_map<const ExprNode*, int> uses_;
  std::unordered_map<const FunctionNode*, const FunctionNode*> parent_;
  std::unordered_map<const FunctionNode*, int> depth_;
  std::unordered_map<const FunctionNode*, std::vector<Expr>> members_;
  std::unordered_set<const FunctionNode*> captures_;
  std::unordered_set<const VarNode*> params_;
};

// Writes one definition or expression. Recursion follows the nesting of functions only (each
// function's text is written inside its binding line); graph depth never recurses.
class Printer {
 public:
  Printer(const Expr& root, const PrintOptions& options) : scopes_(root), options_(options) {}

  std::string def(const std::string& name, const Function& f) {
    os_ << "def @" << name_text(name);
    signature(f, " ");
    os_ << " {\n";
    scope(f.get(), f->body, 1, 0);
    os_ << "}\n";
    return os_.str();
  }

  std::string expr(const Expr& root) {
    scope(nullptr, root, 0, 0);
    std::string s = os_.str();
    s.pop_back();  // the final newline: an expression is a value, not a block
    return s;
  }

 private:
  void indent(int depth) { os_ << std::string(2 * depth, ' '); }

  // The bindings of scope s, then its result on the last line.
  void scope(const FunctionNode* s, const Expr& result, int depth, int first_number) {
    int next = first_number;
    bool result_inline = scopes_.scope_of(result) == s;
    for (const Expr& e : scopes_.members(s)) {
      if (!scopes_.is_bound(e) || (result_inline && e.same_as(result))) continue;
      int n = next++;
      indent(depth);
      os_ << "%" << n << " = ";
      value(e, depth, next);
      numbers_[e.get()] = n;
      os_ << ";";
      comments(e);
    }
    indent(depth);
    if (result_inline) {
      value(result, depth, next);
      comments(result);
    } else {
      ref(result);
      os_ << "\n";
    }
  }

  void comments(const Expr& e) {
    if (const auto* c = e.as<CallNode>(); c && !c->origin.empty() && options_.show_origins)
      os_ << " /* " << comment_safe(c->origin) << " */";
    if (options_.show_types) os_ << " // " << to_string(e->checked_type);
    os_ << "\n";
  }

  // The text of e itself (the right-hand side of its binding). `next` is the enclosing scope's
  // next free number, where a closure's own numbering continues.
  void value(const Expr& e, int depth, int next) {
    if (const auto* c = e.as<CallNode>()) {
      if (const auto* o = c->op.as<OpNode>()) os_ << o->name();
      else ref(c->op);
      os_ << "(";
      list(c->args);
      std::string attrs = attrs_text(c->attrs);
      os_ << (!c->args.empty() && !attrs.empty() ? ", " : "") << attrs << ")";
    } else if (const auto* t = e.as<TupleNode>()) {
      os_ << "(";
      list(t->elements);
      os_ << (t->elements.size() == 1 ? ",)" : ")");
    } else if (const auto* g = e.as<TupleGetItemNode>()) {
      // %x.0 would read as a variable named "x.0".
      bool paren = g->tuple.as<VarNode>() != nullptr;
      os_ << (paren ? "(" : "");
      ref(g->tuple);
      os_ << (paren ? ")" : "") << "." << g->index;
    } else if (const auto* f = e.as<FunctionNode>()) {
      os_ << "fn ";
      signature(Function(f), "");
      os_ << " {\n";
      scope(f, f->body, depth + 1, scopes_.captures(f) ? next : 0);
      indent(depth);
      os_ << "}";
      // Sibling functions may reuse parameter names (every fused group has its %p0).
      for (const Var& p : f->params) visible_.erase(names_.at(p.get()));
    } else if (const auto* k = e.as<ConstantNode>()) {
      constant(k->data);
    } else {
      ref(e);
    }
  }

  // [attrs] (%p: type, ...) -> type, the attributes after `before`. Parameter names stay
  // visible (and so are not reused) until the function's text ends.
  void signature(const Function& f, const char* before) {
    if (!f->attrs.items().empty()) os_ << before << "[" << attrs_text(f->attrs) << "] ";
    os_ << "(";
    for (size_t i = 0; i < f->params.size(); ++i) {
      const VarNode* p = f->params[i].get();
      os_ << (i ? ", " : "") << "%" << name_text(fresh_name(p));
      if (p->type_annotation) os_ << ": " << to_string(p->type_annotation);
    }
    os_ << ")";
    if (f->body->checked_type) os_ << " -> " << to_string(f->body->checked_type);
  }

  // A name no visible variable has: the node's own name, else with a suffix _1, _2, ...
  const std::string& fresh_name(const VarNode* v) {
    auto it = names_.find(v);
    if (it != names_.end()) return it->second;
    std::string name = v->name;
    for (int i = 1; visible_.count(name); ++i) name = v->name + "_" + std::to_string(i);
    visible_.insert(name);
    return names_[v] = name;
  }

  void ref(const Expr& e) {
    if (const auto* v = e.as<VarNode>()) {
      // A free variable is declared, with its type, where it first appears.
      bool declare = !scopes_.is_param(v) && !names_.count(v);
      os_ << "%" << name_text(fresh_name(v));
      if (declare && v->type_annotation) os_ << ": " << to_string(v->type_annotation);
      return;
    }
    auto it = numbers_.find(e.get());
    if (it != numbers_.end()) {
      os_ << "%" << it->second;
      return;
    }
    if (const auto* k = e.as<ConstantNode>()) return constant(k->data);
    if (const auto* o = e.as<OpNode>()) {
      os_ << o->name();
      return;
    }
    fail("internal error: to_text met a node before its binding");
  }

  void list(const std::vector<Expr>& xs) {
    for (size_t i = 0; i < xs.size(); ++i) {
      if (i) os_ << ", ";
      ref(xs[i]);
    }
  }

  void constant(const runtime::NDArray& a) {
    os_ << "constant(" << a.dtype().str() << "[";
    for (int i = 0; i < a.ndim(); ++i) os_ << (i ? ", " : "") << a.shape()[i];
    os_ << "], ";
    int64_t n = a.numel();
    if (options_.max_constant_elements >= 0 && n > options_.max_constant_elements) {
      os_ << "...)";
      return;
    }
    os_ << "[";
    for (int64_t i = 0; i < n; ++i) os_ << (i ? ", " : "") << element_text(a, i);
    os_ << "])";
  }

  Scopes scopes_;
  const PrintOptions& options_;
  std::ostringstream os_;
  std::unordered_map<const ExprNode*, int> numbers_;
  std::unordered_map<const VarNode*, std::string> names_;
  std::unordered_set<std::string> visible_;
};

}  // namespace

std::string to_text(const Module& m, const PrintOptions& options) {
  std::string out;
  for (const auto& [name, f] : m.functions()) {
    if (!out.empty()) out += "\n";
    out += Printer(f, options).def(name, f);
  }
  return out;
}

std::string to_text(const Expr& e, const PrintOptions& options) {
  if (!e) fail("to_text: undefined expression");
  return Printer(e, options).expr(e);
}

}  // namespace tessera::relay_ir
