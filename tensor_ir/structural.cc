#include "tensor_ir/structural.h"

#include <cstring>
#include <functional>
#include <unordered_map>

namespace tessera::tensor_ir {

namespace {

// Nodes whose identity matters rather than their name: mapped one-to-one on first meeting.
bool is_binder(const Object* n) { return n->kind == NodeKind::Var || n->kind == NodeKind::Buffer; }

// True for node handles (Expr, Var, Tensor, ...), whose fields compare as nodes.
template <typename T, typename = void>
struct has_node_type : std::false_type {};
template <typename T>
struct has_node_type<T, std::void_t<typename T::NodeType>> : std::true_type {};

class Equal {
 public:
  explicit Equal(bool map_free_vars) : map_free_vars_(map_free_vars) {}

  bool equal(const Object* a, const Object* b) {
    if (!a || !b) return a == b;
    if (a->kind != b->kind) return false;
    if (is_binder(a)) {
      auto fa = map_.find(a);
      if (fa != map_.end()) return fa->second == b;
      if (reverse_.count(b)) return false;
      if (a == b) return true;
      return map_free_vars_ && bind(a, b);
    }
    if (a == b) return true;
    if (const auto* alloc = a->as<Allocate>()) {
      if (!bind(alloc->buffer.get(), b->as<Allocate>()->buffer.get())) return false;
    }
    return dispatch(a, [&](const auto* x) {
      using T = std::remove_cv_t<std::remove_pointer_t<decltype(x)>>;
      return fields_equal(x->fields(), static_cast<const T*>(b)->fields());
    });
  }

 private:
  // Maps binder a to b, where they are defined (or first met, for free variables).
  bool bind(const Object* a, const Object* b) {
    auto fa = map_.find(a);
    if (fa != map_.end()) return fa->second == b;
    if (reverse_.count(b) || !binder_fields_equal(a, b)) return false;
    map_[a] = b;
    reverse_[b] = a;
    return true;
  }

  bool binder_fields_equal(const Object* a, const Object* b) {
    if (const auto* va = a->as<VarNode>()) return va->type == b->as<VarNode>()->type;
    const auto* ba = a->as<BufferNode>();
    const auto* bb = b->as<BufferNode>();
    return ba->dtype == bb->dtype && ba->scope == bb->scope && field(ba->shape, bb->shape);
  }

  template <typename... A, typename... B>
  bool fields_equal(const std::tuple<A...>& a, const std::tuple<B...>& b) {
    return std::apply(
        [&](const auto&... x) { return std::apply([&](const auto&... y) { return (field(x, y) && ...); }, b); }, a);
  }

  template <typename T>
  bool field(const Ref<T>& a, const Ref<T>& b) {
    return equal(a.get(), b.get());
  }
  // A field of type Var is a definition (loop variable, let, axis): it binds.
  bool field(const Var& a, const Var& b) { return bind(a.get(), b.get()); }
  bool field(const Range& a, const Range& b) { return field(a.min, b.min) && field(a.extent, b.extent); }
  bool field(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
  template <typename T>
  bool field(const std::vector<T>& a, const std::vector<T>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!field(a[i], b[i])) return false;
    return true;
  }
  template <typename T>
  bool field(const T& a, const T& b) {
    if constexpr (has_node_type<T>::value) return equal(a.get(), b.get());
    else return a == b;
  }

  bool map_free_vars_;
  std::unordered_map<const Object*, const Object*> map_, reverse_;

 public:
  bool func_equal(const LoweredFunc& a, const LoweredFunc& b) {
    if (a.name != b.name || a.args.size() != b.args.size()) return false;
    for (size_t i = 0; i < a.args.size(); ++i)
      if (!bind(a.args[i].get(), b.args[i].get())) return false;
    return equal(a.body.get(), b.body.get());
  }
};

class Hasher {
 public:
  uint64_t value = 0x9e3779b97f4a7c15ull;

  void node(const Object* n) {
    if (!n) return mix(0);
    mix(static_cast<uint64_t>(n->kind) + 1);
    if (is_binder(n)) {
      auto [it, fresh] = binder_ids_.emplace(n, binder_ids_.size());
      mix(it->second);
      if (!fresh) return;
      if (const auto* v = n->as<VarNode>()) return field(v->type);
      const auto* b = n->as<BufferNode>();
      field(b->dtype);
      field(b->shape);
      return;
    }
    dispatch(n, [&](const auto* x) { std::apply([&](const auto&... f) { (field(f), ...); }, x->fields()); });
  }

 private:
  void mix(uint64_t x) {
    value = (value ^ (x + 0x9e3779b97f4a7c15ull + (value << 6) + (value >> 2))) * 0x100000001b3ull;
  }
  template <typename T>
  void field(const Ref<T>& r) {
    node(r.get());
  }
  void field(const Range& r) {
    node(r.min.get());
    node(r.extent.get());
  }
  void field(const std::string& s) { mix(std::hash<std::string>()(s)); }
  void field(const runtime::DataType& t) { mix((uint64_t(t.code) << 32) | (uint64_t(t.bits) << 16) | t.lanes); }
  void field(double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof d);
    mix(bits);
  }
  void field(const std::pair<std::string, int64_t>& p) {
    field(p.first);
    mix(static_cast<uint64_t>(p.second));
  }
  template <typename T>
  void field(const std::vector<T>& v) {
    mix(v.size());
    for (const auto& x : v) field(x);
  }
  template <typename T>
  void field(const T& x) {
    if constexpr (has_node_type<T>::value) node(x.get());
    else mix(static_cast<uint64_t>(x));
  }
  std::unordered_map<const Object*, uint64_t> binder_ids_;
};

}  // namespace

bool structural_equal(const Expr& a, const Expr& b, bool map_free_vars) {
  return Equal(map_free_vars).equal(a.get(), b.get());
}
bool structural_equal(const Stmt& a, const Stmt& b, bool map_free_vars) {
  return Equal(map_free_vars).equal(a.get(), b.get());
}
bool structural_equal(const Tensor& a, const Tensor& b, bool map_free_vars) {
  return Equal(map_free_vars).equal(a.get(), b.get());
}
bool structural_equal(const LoweredFunc& a, const LoweredFunc& b) { return Equal(true).func_equal(a, b); }

uint64_t structural_hash(const Expr& e) {
  Hasher h;
  h.node(e.get());
  return h.value;
}
uint64_t structural_hash(const Stmt& s) {
  Hasher h;
  h.node(s.get());
  return h.value;
}
uint64_t structural_hash(const Tensor& t) {
  Hasher h;
  h.node(t.get());
  return h.value;
}

}  // namespace tessera::tensor_ir
