// The base of every IR node: an intrusive reference count, a kind tag checked by as<T>() (no
// RTTI), and the list of node kinds that drives dispatch in visitors, mutators, printing and
// structural equality. Nodes are immutable once made.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace tessera::tensor_ir {

// X(Kind, Struct) for every node; the groups tell visitors which result type a node has.
#define TESSERA_EXPR_NODES(X)                                                                                     \
  X(IntImm, IntImm)                                                                                               \
  X(FloatImm, FloatImm) X(Var, VarNode) X(Add, Add) X(Sub, Sub) X(Mul, Mul) X(Div, Div) X(Mod, Mod)               \
      X(FloorDiv, FloorDiv) X(FloorMod, FloorMod) X(Min, Min) X(Max, Max) X(EQ, EQ) X(NE, NE) X(LT, LT) X(LE, LE) \
          X(GT, GT) X(GE, GE) X(And, And) X(Or, Or) X(Not, Not) X(Select, Select) X(Cast, Cast) X(Call, Call)     \
              X(ProducerLoad, ProducerLoad) X(Reduce, Reduce) X(Load, Load) X(Ramp, Ramp) X(Broadcast, Broadcast) \
                  X(Let, Let)
#define TESSERA_STMT_NODES(X)                                                                                       \
  X(LetStmt, LetStmt)                                                                                               \
  X(For, For) X(IfThenElse, IfThenElse) X(Store, Store) X(Allocate, Allocate) X(Block, Block) X(Evaluate, Evaluate) \
      X(Realize, Realize) X(ProducerStore, ProducerStore) X(ThreadExtent, ThreadExtent)
#define TESSERA_OTHER_NODES(X) \
  X(IterVar, IterVarNode) X(PlaceholderOp, PlaceholderOp) X(ComputeOp, ComputeOp) X(Buffer, BufferNode)
#define TESSERA_ALL_NODES(X) TESSERA_EXPR_NODES(X) TESSERA_STMT_NODES(X) TESSERA_OTHER_NODES(X)

enum class NodeKind : uint8_t {
#define TESSERA_X(kind, type) kind,
  TESSERA_ALL_NODES(TESSERA_X)
#undef TESSERA_X
};

const char* node_kind_name(NodeKind kind);

// The reference count every node carries; each IR (tensor IR here, the graph IR in relay_ir)
// derives its own node base with its own kind tags from it.
class RefCounted {
 public:
  RefCounted(const RefCounted&) = delete;
  RefCounted& operator=(const RefCounted&) = delete;
  // Deletes a node whose count reached zero. Nodes it frees in turn are deleted by a loop, not
  // by recursion, so dropping a graph of any depth cannot overflow the stack.
  static void destroy(const RefCounted* node);

 protected:
  RefCounted() = default;
  virtual ~RefCounted() = default;

 private:
  mutable std::atomic<int32_t> refs_{0};
  template <typename>
  friend class Ref;
};

class Object : public RefCounted {
 public:
  const NodeKind kind;

  template <typename T>
  const T* as() const {
    return T::kind_matches(kind) ? static_cast<const T*>(this) : nullptr;
  }

 protected:
  explicit Object(NodeKind k) : kind(k) {}
};

// Declares a node's kind; the default `kind_matches` is exact, base classes widen it.
#define TESSERA_NODE(Kind)                          \
  static constexpr NodeKind kKind = NodeKind::Kind; \
  static constexpr bool kind_matches(NodeKind k) { return k == kKind; }

// Declares a node's fields once: fields() ties them for generic code (equality, hashing,
// mutation, printing), field_names() names them. `make` takes them in the same order.
#define TESSERA_FIELDS(...)                                                                              \
  auto fields() const { return std::tie(__VA_ARGS__); }                                                  \
  static const std::vector<std::string>& field_names() {                                                 \
    static const std::vector<std::string> names = ::tessera::tensor_ir::split_field_names(#__VA_ARGS__); \
    return names;                                                                                        \
  }
std::vector<std::string> split_field_names(const char* joined);

// An owning, reference-counted pointer to an immutable node.
template <typename T>
class Ref {
 public:
  using NodeType = T;
  Ref() = default;
  Ref(const T* p) : p_(p) { retain(); }  // NOLINT: implicit from a fresh node
  Ref(const Ref& o) : p_(o.p_) { retain(); }
  Ref(Ref&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  template <typename U, typename = std::enable_if_t<std::is_base_of_v<T, U>>>
  Ref(const Ref<U>& o) : p_(o.get()) {
    retain();
  }  // NOLINT: upcast
  ~Ref() { release(); }
  Ref& operator=(Ref o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }

  const T* get() const { return p_; }
  const T* operator->() const { return p_; }
  const T& operator*() const { return *p_; }
  bool defined() const { return p_ != nullptr; }
  explicit operator bool() const { return p_ != nullptr; }
  bool same_as(const Ref& o) const { return p_ == o.p_; }
  template <typename U>
  const U* as() const {
    return p_ ? p_->template as<U>() : nullptr;
  }

 private:
  void retain() {
    if (p_) p_->refs_.fetch_add(1, std::memory_order_relaxed);
  }
  void release() {
    if (p_ && p_->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) RefCounted::destroy(p_);
    p_ = nullptr;
  }
  const T* p_ = nullptr;
};

// Calls f(static_cast<const Struct*>(node)) for the node's concrete type.
template <typename F>
decltype(auto) dispatch(const Object* node, F&& f);

// Hashes and orders handles by identity, for maps keyed by a particular node.
struct RefHash {
  template <typename T>
  size_t operator()(const Ref<T>& r) const {
    return std::hash<const void*>()(r.get());
  }
};
struct RefEqual {
  template <typename T>
  bool operator()(const Ref<T>& a, const Ref<T>& b) const {
    return a.same_as(b);
  }
};

}  // namespace tessera::tensor_ir
