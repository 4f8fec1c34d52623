// The `make` functions: each checks its operands and derives the node's type, so an ill-typed
// node can never exist. Messages quote the offending operands.
#include <algorithm>
#include <cmath>

#include "runtime/error.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/ir.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"

namespace tessera::tensor_ir {

namespace {
void require(const Expr& e, const char* node, const char* field) {
  if (!e) fail(node, ": operand '", field, "' is undefined");
}
bool is_index_like(DataType t) { return t.is_integer(); }
}  // namespace

Expr::Expr(int64_t value) : Expr(IntImm::make(kIndexType, value)) {}

Range Range::from_min_max(Expr begin, Expr end) {
  const auto* b = begin.as<IntImm>();
  const auto* e = end.as<IntImm>();
  if (b && e && b->type == e->type) return Range(begin, IntImm::make(b->type, e->value - b->value));
  return Range(begin, BinaryNode<NodeKind::Sub>::make(end, begin));
}

Var::Var(std::string name, DataType type) : Ref<VarNode>(new VarNode(type, std::move(name))) {}

Expr IntImm::make(DataType type, int64_t value) {
  if (!(type.is_integer() || type.is_bool()) || type.is_vector())
    fail("IntImm: type must be a scalar integer or bool, got ", type.str());
  if (type.is_bool()) value = value != 0;
  return Expr(new IntImm(type, value));
}

Expr FloatImm::make(DataType type, double value) {
  if (!(type.is_float() || type.is_narrow_float()) || type.is_vector())
    fail("FloatImm: type must be a scalar float, got ", type.str());
  return Expr(new FloatImm(type, value));
}

Expr VarNode::make(DataType type, std::string name) { return Expr(new VarNode(type, std::move(name))); }

template <NodeKind K>
Expr BinaryNode<K>::make(Expr a, Expr b) {
  const char* name = node_kind_name(K);
  require(a, name, "a");
  require(b, name, "b");
  if (a.type() != b.type())
    fail(name, ": operand types differ: ", to_string(a), " is ", a.type().str(), ", ", to_string(b), " is ",
         b.type().str());
  DataType t = a.type();
  constexpr bool is_compare = K == NodeKind::EQ || K == NodeKind::NE || K == NodeKind::LT || K == NodeKind::LE ||
                              K == NodeKind::GT || K == NodeKind::GE;
  constexpr bool is_logic = K == NodeKind::And || K == NodeKind::Or;
  constexpr bool int_only = K == NodeKind::FloorDiv || K == NodeKind::FloorMod;
  if (t.is_handle()) fail(name, ": handles have no arithmetic");
  if (is_logic && !t.is_bool()) fail(name, ": operands must be bool, got ", t.str());
  if (!is_logic && !is_compare && t.is_bool())
    fail(name, ": arithmetic on bool operands ", to_string(a), ", ", to_string(b));
  if (int_only && !t.is_integer()) fail(name, ": operands must be integers, got ", t.str());
  DataType result = is_compare ? DataType::Bool(t.lanes) : t;
  return Expr(new BinaryNode<K>(result, std::move(a), std::move(b)));
}
#define TESSERA_INSTANTIATE(kind) template struct BinaryNode<NodeKind::kind>;
TESSERA_INSTANTIATE(Add)
TESSERA_INSTANTIATE(Sub) TESSERA_INSTANTIATE(Mul) TESSERA_INSTANTIATE(Div) TESSERA_INSTANTIATE(Mod)
    TESSERA_INSTANTIATE(FloorDiv) TESSERA_INSTANTIATE(FloorMod) TESSERA_INSTANTIATE(Min) TESSERA_INSTANTIATE(Max)
        TESSERA_INSTANTIATE(EQ) TESSERA_INSTANTIATE(NE) TESSERA_INSTANTIATE(LT) TESSERA_INSTANTIATE(LE)
            TESSERA_INSTANTIATE(GT) TESSERA_INSTANTIATE(GE) TESSERA_INSTANTIATE(And) TESSERA_INSTANTIATE(Or)
#undef TESSERA_INSTANTIATE

                Expr Not::make(Expr a) {
  require(a, "Not", "a");
  if (!a.type().is_bool()) fail("Not: operand must be bool, got ", a.type().str());
  DataType t = a.type();
  return Expr(new Not(t, std::move(a)));
}

Expr Select::make(Expr c, Expr tv, Expr fv) {
  require(c, "Select", "condition");
  require(tv, "Select", "true_value");
  require(fv, "Select", "false_value");
  if (!c.type().is_bool()) fail("Select: condition must be bool, got ", c.type().str());
  if (tv.type() != fv.type()) fail("Select: branch types differ: ", tv.type().str(), " vs ", fv.type().str());
  if (c.type().lanes != 1 && c.type().lanes != tv.type().lanes)
    fail("Select: condition has ", c.type().lanes, " lanes, values have ", tv.type().lanes);
  DataType t = tv.type();
  return Expr(new Select(t, std::move(c), std::move(tv), std::move(fv)));
}

Expr Cast::make(DataType type, Expr value) {
  require(value, "Cast", "value");
  if (type.lanes != value.type().lanes) fail("Cast: cannot change lanes from ", value.type().lanes, " to ", type.lanes);
  if (type.is_handle() || value.type().is_handle()) fail("Cast: handles cannot be cast");
  return Expr(new Cast(type, std::move(value)));
}

Expr Call::make(DataType type, Intrinsic op, std::vector<Expr> args) {
  const char* name = intrinsic_name(op);
  if (static_cast<int>(args.size()) != intrinsic_arity(op))
    fail(name, ": takes ", intrinsic_arity(op), " arguments, got ", args.size());
  for (auto& a : args) require(a, name, "argument");
  if (op == Intrinsic::barrier) {
    if (type != runtime::kInt32) fail(name, ": returns int32");
    return Expr(new Call(type, op, std::move(args)));
  }
  if (op == Intrinsic::warp_shuffle_down) {
    if (args[0].type().lanes != 1 || type != args[0].type()) fail(name, ": takes and returns a scalar value");
    if (args[1].type() != runtime::kInt32) fail(name, ": the offset must be int32, got ", args[1].type().str());
    return Expr(new Call(type, op, std::move(args)));
  }
  DataType arg = args[0].type();
  for (auto& a : args)
    if (a.type() != arg) fail(name, ": argument types differ: ", arg.str(), " vs ", a.type().str());
  switch (op) {
    case Intrinsic::isnan:
    case Intrinsic::isinf:
      if (!arg.is_float()) fail(name, ": argument must be a float, got ", arg.str());
      if (type != DataType::Bool(arg.lanes)) fail(name, ": returns bool");
      break;
    case Intrinsic::bitwise_and:
    case Intrinsic::bitwise_or:
    case Intrinsic::bitwise_xor:
    case Intrinsic::bitwise_not:
    case Intrinsic::shift_left:
    case Intrinsic::shift_right:
      if (!(arg.is_integer() || (arg.is_bool() && op != Intrinsic::shift_left && op != Intrinsic::shift_right)))
        fail(name, ": argument must be an integer, got ", arg.str());
      if (type != arg) fail(name, ": returns its argument type");
      break;
    case Intrinsic::likely:
      if (!arg.is_bool() || type != arg) fail(name, ": takes and returns bool");
      break;
    case Intrinsic::reinterpret: {
      auto width = [](DataType t) { return t.is_narrow() ? t.storage_type().bits : t.bits; };
      if (arg.is_bool() || type.is_bool() || arg.is_handle() || type.is_handle() || type.lanes != arg.lanes ||
          width(type) != width(arg))
        fail(name, ": cannot read ", arg.str(), " as ", type.str(), " (both must be numbers of one width)");
      break;
    }
    case Intrinsic::prefetch:
      if (!(args[0].as<ProducerLoad>() || args[0].as<Load>()) || arg.lanes != 1)
        fail(name, ": takes a scalar load of the element to fetch, got ", to_string(args[0]));
      if (type != arg) fail(name, ": returns its argument type");
      break;
    case Intrinsic::abs:
      if (!(arg.is_float() || arg.is_int() || arg.is_uint())) fail(name, ": argument must be numeric, got ", arg.str());
      if (type != arg) fail(name, ": returns its argument type");
      break;
    default:
      if (!arg.is_float()) fail(name, ": argument must be a float, got ", arg.str(), " (cast it first)");
      if (type != arg) fail(name, ": returns its argument type");
  }
  return Expr(new Call(type, op, std::move(args)));
}

Expr Ramp::make(Expr base, Expr stride, int64_t lanes) {
  require(base, "Ramp", "base");
  require(stride, "Ramp", "stride");
  if (!base.type().is_integer() || base.type().is_vector() || base.type() != stride.type())
    fail("Ramp: base and stride must be scalar integers of one type");
  if (lanes < 1 || lanes > 1024) fail("Ramp: invalid lane count ", lanes);
  DataType t = base.type().with_lanes(static_cast<int>(lanes));
  return Expr(new Ramp(t, std::move(base), std::move(stride), lanes));
}

Expr Broadcast::make(Expr value, int64_t lanes) {
  require(value, "Broadcast", "value");
  if (value.type().is_vector()) fail("Broadcast: value must be a scalar, got ", value.type().str());
  if (lanes < 1 || lanes > 1024) fail("Broadcast: invalid lane count ", lanes);
  DataType t = value.type().with_lanes(static_cast<int>(lanes));
  return Expr(new Broadcast(t, std::move(value), lanes));
}

Expr Let::make(Var var, Expr value, Expr body) {
  require(value, "Let", "value");
  require(body, "Let", "body");
  if (var.type() != value.type())
    fail("Let: variable ", var.name(), " is ", var.type().str(), ", value is ", value.type().str());
  DataType t = body.type();
  return Expr(new Let(t, std::move(var), std::move(value), std::move(body)));
}

Expr Load::make(Buffer buffer, Expr index) {
  if (!buffer) fail("Load: buffer is undefined");
  require(index, "Load", "index");
  if (!is_index_like(index.type()))
    fail("Load from ", buffer.name(), ": index must be an integer, got ", index.type().str());
  DataType t = buffer.dtype().with_lanes(index.type().lanes);
  return Expr(new Load(t, std::move(buffer), std::move(index)));
}

// --- Statements ---------------------------------------------------------------------------

Stmt LetStmt::make(Var var, Expr value, Stmt body) {
  require(value, "LetStmt", "value");
  if (var.type() != value.type())
    fail("LetStmt: variable ", var.name(), " is ", var.type().str(), ", value is ", value.type().str());
  return Stmt(new LetStmt(std::move(var), std::move(value), std::move(body)));
}

Stmt For::make(Var var, Expr min, Expr extent, ForKind kind, Stmt body, Pragmas pragmas) {
  require(min, "For", "min");
  require(extent, "For", "extent");
  if (min.type() != var.type() || extent.type() != var.type() || !var.type().is_integer())
    fail("For ", var.name(), ": min and extent must have the loop variable's integer type");
  return Stmt(new For(std::move(var), std::move(min), std::move(extent), kind, std::move(body), std::move(pragmas)));
}

Stmt ThreadExtent::make(Var var, std::string tag, Expr extent, Stmt body) {
  require(extent, "ThreadExtent", "extent");
  if (!is_thread_tag(tag))
    fail("ThreadExtent ", var.name(), ": '", tag, "' is not a thread axis (blockIdx.x/y/z, threadIdx.x/y/z)");
  if (extent.type() != var.type() || !var.type().is_integer())
    fail("ThreadExtent ", var.name(), ": the extent must have the variable's integer type");
  return Stmt(new ThreadExtent(std::move(var), std::move(tag), std::move(extent), std::move(body)));
}

int thread_tag_index(const std::string& tag) {
  static const char* const tags[] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                     "threadIdx.x", "threadIdx.y", "threadIdx.z"};
  for (int i = 0; i < 6; ++i)
    if (tag == tags[i]) return i;
  return -1;
}

bool is_thread_tag(const std::string& tag) { return thread_tag_index(tag) >= 0; }

Stmt IfThenElse::make(Expr condition, Stmt then_case, Stmt else_case) {
  require(condition, "IfThenElse", "condition");
  if (condition.type().element() != runtime::kBool)
    fail("IfThenElse: condition must be a bool, got ", condition.type().str());
  // A vector of conditions (vectorize.cc) guards one store of as many lanes, nothing else.
  const auto* store = then_case.as<Store>();
  if (condition.type().is_vector() && (else_case || !store || store->index.type().lanes != condition.type().lanes))
    fail("IfThenElse: a condition of ", condition.type().lanes, " lanes guards only a store of as many");
  return Stmt(new IfThenElse(std::move(condition), std::move(then_case), std::move(else_case)));
}

Stmt Store::make(Buffer buffer, Expr value, Expr index) {
  if (!buffer) fail("Store: buffer is undefined");
  require(value, "Store", "value");
  require(index, "Store", "index");
  if (value.type() != buffer.dtype().with_lanes(index.type().lanes))
    fail("Store to ", buffer.name(), ": value is ", value.type().str(), ", buffer holds ", buffer.dtype().str(),
         " and the index has ", index.type().lanes, " lanes");
  return Stmt(new Store(std::move(buffer), std::move(value), std::move(index)));
}

Stmt Allocate::make(Buffer buffer, Stmt body) {
  if (!buffer) fail("Allocate: buffer is undefined");
  for (const Expr& d : buffer->shape)
    if (!d.type().is_int()) fail("Allocate of ", buffer.name(), ": its dimension ", to_string(d), " is not an integer");
  return Stmt(new Allocate(std::move(buffer), std::move(body)));
}

Stmt Block::make(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (auto& s : stmts) {
    if (!s || is_no_op(s)) continue;
    if (const auto* b = s.as<Block>()) flat.insert(flat.end(), b->stmts.begin(), b->stmts.end());
    else flat.push_back(std::move(s));
  }
  if (flat.empty()) return Evaluate::make(0);
  if (flat.size() == 1) return flat[0];
  return Stmt(new Block(std::move(flat)));
}

bool is_no_op(const Stmt& s) {
  const auto* e = s.as<Evaluate>();
  return e && (e->value.as<IntImm>() || e->value.as<FloatImm>());
}

Stmt Evaluate::make(Expr value) {
  require(value, "Evaluate", "value");
  return Stmt(new Evaluate(std::move(value)));
}

Stmt Realize::make(Tensor tensor, std::vector<Range> bounds, Stmt body) {
  if (bounds.size() != tensor.ndim())
    fail("Realize ", tensor.name(), ": ", bounds.size(), " bounds for ", tensor.ndim(), " dimensions");
  return Stmt(new Realize(std::move(tensor), std::move(bounds), std::move(body)));
}

Stmt ProducerStore::make(Tensor tensor, Expr value, std::vector<Expr> indices) {
  require(value, "ProducerStore", "value");
  if (indices.size() != tensor.ndim())
    fail("store to ", tensor.name(), ": ", indices.size(), " indices for ", tensor.ndim(), " dimensions");
  if (value.type() != tensor.dtype())
    fail("store to ", tensor.name(), ": value is ", value.type().str(), ", tensor holds ", tensor.dtype().str());
  return Stmt(new ProducerStore(std::move(tensor), std::move(value), std::move(indices)));
}

// --- Buffers and iteration variables ------------------------------------------------------

Ref<BufferNode> BufferNode::make(std::string name, DataType dtype, std::vector<Expr> shape, MemoryScope scope) {
  if (dtype.is_vector()) fail("buffer ", name, ": element type must be scalar, got ", dtype.str());
  return Ref<BufferNode>(new BufferNode(std::move(name), dtype, std::move(shape), scope));
}

const char* memory_scope_name(MemoryScope scope) {
  switch (scope) {
    case MemoryScope::Global: return "global";
    case MemoryScope::Shared: return "shared";
    case MemoryScope::Local: return "local";
  }
  return "?";
}

MemoryScope parse_memory_scope(const std::string& name) {
  for (MemoryScope s : {MemoryScope::Global, MemoryScope::Shared, MemoryScope::Local})
    if (name == memory_scope_name(s)) return s;
  fail("'", name, "' is not a storage scope (global, shared or local)");
}

Expr BufferNode::element_count() const {
  if (std::all_of(shape.begin(), shape.end(), [](const Expr& d) { return d.as<IntImm>(); }))
    return Expr(num_elements());
  Expr n(int64_t{1});
  for (const auto& d : shape) n = n * cast(kIndexType, d);
  return n;
}

int64_t BufferNode::num_elements() const {
  int64_t n = 1;
  for (const auto& d : shape) {
    const auto* c = d.as<IntImm>();
    if (!c) fail("buffer ", name, ": shape dimension ", to_string(d), " is not a constant");
    n *= c->value;
  }
  return n;
}

Ref<IterVarNode> IterVarNode::make(Var var, Range dom, IterKind kind) {
  if (!dom.min || !dom.extent) fail("iteration variable ", var.name(), ": domain is undefined");
  if (!var.type().is_integer()) fail("iteration variable ", var.name(), " must be an integer");
  return Ref<IterVarNode>(new IterVarNode(std::move(var), std::move(dom), kind));
}

}  // namespace tessera::tensor_ir
