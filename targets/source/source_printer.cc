#include "targets/source/source_printer.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <optional>

#include "runtime/error.h"
#include "targets/source/lift_lets.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/printer.h"

namespace tessera::targets::source {

namespace {

// Words of C, OpenCL C and CUDA C a tensor or loop could be named, and the functions kernels call
// (a tensor named after its operator, "acos", would hide the function).
const std::unordered_set<std::string> kReserved = [] {
  std::unordered_set<std::string> words = {
      "auto", "bool", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
      "extern", "float", "for", "goto", "half", "if", "inline", "int", "long", "register", "return", "short",
      "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while",
      "kernel", "global", "local", "private", "constant", "args", "num_args", "uchar", "ushort", "uint", "ulong",
      "blockIdx", "threadIdx", "true", "false",
      // Functions of the dialects beside the math library's.
      "fabs", "fabsf", "rint", "rintf", "fmod", "fmodf", "vload_half", "vstore_half", "get_group_id", "get_local_id",
      "select", "min", "max",
      // The c dialect's names in parallel loops.
      "tessera_c", "tessera_closure", "tessera_task", "tessera_num_tasks", "tessera_begin", "tessera_end",
      "tessera_threads", "tessera_extent", "tessera_status", "tessera_min"};
  for (int op = 0; op < kNumIntrinsics; ++op) {
    const std::string name = intrinsic_name(static_cast<Intrinsic>(op));
    words.insert(name);
    words.insert(name + "f");
  }
  return words;
}();

class SharedBuffers : public IRVisitor {
 public:
  std::vector<Buffer> shared;

 private:
  void visit_(const Allocate* op) override {
    if (op->buffer->scope == MemoryScope::Shared) shared.push_back(op->buffer);
    IRVisitor::visit_(op);
  }
};

class StoredBuffers : public IRVisitor {
 public:
  std::unordered_set<const BufferNode*> written;

 private:
  void visit_(const Store* op) override {
    written.insert(op->buffer.get());
    IRVisitor::visit_(op);
  }
};

}  // namespace

void SourcePrinter::unsupported(const std::string& what) const {
  fail("kernel '", kernel_, "': the ", dialect_, " source printer cannot print ", what);
}

std::ostream& SourcePrinter::line() { return os_ << std::string(2 * indent_, ' '); }

void SourcePrinter::start_kernel(const std::string& kernel) {
  kernel_ = kernel;
  names_.clear();
  in_scope_.clear();
  taken_ = kReserved;
  // The name is what the runtime looks the kernel up by, so it is not changed but checked.
  bool identifier = !kernel.empty() && !std::isdigit(static_cast<unsigned char>(kernel[0])) && !kReserved.count(kernel);
  for (char c : kernel) identifier &= std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  if (!identifier) fail("kernel '", kernel, "': its name is not a C identifier");
  taken_.insert(kernel);
}

std::string SourcePrinter::name_of(const Object* node, const std::string& hint) {
  if (auto it = names_.find(node); it != names_.end()) return it->second;
  std::string base;
  for (char c : hint) base += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0]))) base = "v" + base;
  // Leading underscores are the implementation's; a trailing one keeps the name readable.
  if (base[0] == '_') base = "v" + base;
  std::string name = base;
  for (int i = 1; !taken_.insert(name).second; ++i) name = base + "_" + std::to_string(i);
  return names_[node] = name;
}

std::unordered_set<const BufferNode*> SourcePrinter::written_buffers(const Stmt& body) {
  StoredBuffers v;
  v.visit(body);
  return v.written;
}

void SourcePrinter::print_device_kernel(const DeviceKernel& k) {
  const auto written = written_buffers(k.func.body);
  os_ << "(";
  for (size_t i = 0; i < k.func.args.size(); ++i) {
    const Buffer& b = k.func.args[i];
    os_ << (i ? ", " : "") << pointer_parameter(b, !written.count(b.get()));
    add_parameter(b.get());
  }
  // The dimension variables' values, passed as int64 (runtime/device_program.h) and converted
  // where a variable has another type.
  std::vector<const Var*> converted;
  size_t params = k.func.args.size();
  for (const Var& v : k.func.shape_vars) {
    const bool int64 = v.type() == runtime::kInt64;
    os_ << (params++ ? ", " : "") << type_name(runtime::kInt64) << " "
        << (int64 ? name_of(v.get(), v.name()) : name_of(v.get(), v.name()) + "_value");
    if (!int64) converted.push_back(&v);
    add_parameter(v.get());
  }
  os_ << ") {\n";
  ++indent_;
  for (const Var* v : converted) {
    const std::string name = name_of(v->get(), v->name());
    line() << "const " << type_name(v->type()) << " " << name << " = (" << type_name(v->type()) << ")" << name
           << "_value;\n";
  }
  SharedBuffers shared;
  shared.visit(k.func.body);
  for (const Buffer& b : shared.shared) line() << shared_declaration(b) << "\n";
  stmt(k.func.body);
  --indent_;
  os_ << "}\n\n";
}

void SourcePrinter::print_helpers() {
  // C's / and % truncate; the IR's floor division rounds toward -infinity (Python's //, %).
  for (const char* t : {"int32", "int64"}) {
    const std::string type = type_name(std::string(t) == "int32" ? runtime::kInt32 : runtime::kInt64);
    os_ << helper_qualifier() << " " << type << " tessera_floordiv_" << t << "(" << type << " a, " << type
        << " b) {\n  " << type << " q = a / b, r = a % b;\n  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;\n}\n";
    os_ << helper_qualifier() << " " << type << " tessera_floormod_" << t << "(" << type << " a, " << type
        << " b) {\n  " << type << " r = a % b;\n  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n}\n";
  }
  os_ << "\n";
}

// --- expressions ------------------------------------------------------------------------------

std::string SourcePrinter::literal(const Expr& e) {
  DataType t = e.type().element();
  if (const auto* i = e.as<IntImm>()) {
    if (t.is_bool()) return i->value ? "true" : "false";
    // Negative ones in parentheses, so that no operator before them makes "--".
    if (t == runtime::kInt64) return i->value < 0 ? "(" + int64_literal(i->value) + ")" : int64_literal(i->value);
    if (t == runtime::kInt32) return i->value < 0 ? "(" + std::to_string(i->value) + ")" : std::to_string(i->value);
    return "((" + type_name(t) + ")" + int64_literal(i->value) + ")";
  }
  const double v = e.as<FloatImm>()->value;
  const bool single = t.bits != 64;  // float16 values are float in registers
  if (std::isnan(v)) return single ? "(0.0f / 0.0f)" : "(0.0 / 0.0)";
  if (std::isinf(v)) return std::string(v < 0 ? "(-" : "(") + (single ? "1.0f / 0.0f)" : "1.0 / 0.0)");
  // Nine significant digits give a float back exactly, seventeen a double.
  char buf[64];
  std::snprintf(buf, sizeof buf, single ? "%.9g" : "%.17g", single ? static_cast<double>(static_cast<float>(v)) : v);
  std::string text = buf;
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  if (single) text += "f";
  return v < 0 ? "(" + text + ")" : text;
}

std::string SourcePrinter::one(DataType t) { return t.bits == 64 ? "1.0" : "1.0f"; }

std::string SourcePrinter::binary(const char* op, const Expr& a, const Expr& b) {
  return "(" + expr(a) + " " + op + " " + expr(b) + ")";
}

std::string SourcePrinter::cast(DataType to, const Expr& value) {
  if (to.is_bool()) return "(" + expr(value) + " != 0)";
  return "((" + type_name(to) + ")" + expr(value) + ")";
}

std::string SourcePrinter::load(const Buffer& b, const std::string& index) {
  if (b.dtype().is_bool()) return "(" + buffer_name(b) + "[" + index + "] != 0)";
  return buffer_name(b) + "[" + index + "]";
}

std::string SourcePrinter::store(const Buffer& b, const std::string& index, const std::string& value) {
  if (b.dtype().is_bool()) return buffer_name(b) + "[" + index + "] = (" + memory_type(b.dtype()) + ")" + value + ";";
  return buffer_name(b) + "[" + index + "] = " + value + ";";
}

std::string SourcePrinter::call(const Call* op) {
  std::vector<std::string> a;
  for (const Expr& x : op->args) a.push_back(expr(x));
  switch (op->op) {
    case Intrinsic::likely:
      return a[0];
    case Intrinsic::bitwise_and:
      return "(" + a[0] + " & " + a[1] + ")";
    case Intrinsic::bitwise_or:
      return "(" + a[0] + " | " + a[1] + ")";
    case Intrinsic::bitwise_xor:
      return "(" + a[0] + " ^ " + a[1] + ")";
    case Intrinsic::bitwise_not:
      return "(~" + a[0] + ")";
    case Intrinsic::shift_left:
      return "(" + a[0] + " << " + a[1] + ")";
    case Intrinsic::shift_right:
      return "(" + a[0] + " >> " + a[1] + ")";
    // Type-generic in C99 (macros), OpenCL C and CUDA alike.
    case Intrinsic::isnan:
    case Intrinsic::isinf:
      return "(" + std::string(intrinsic_name(op->op)) + "(" + a[0] + ") != 0)";
    case Intrinsic::sigmoid:
      return "(" + one(op->type) + " / (" + one(op->type) + " + " + float_function("exp", op->type) + "(-(" + a[0] +
             "))))";
    case Intrinsic::rsqrt:
      return "(" + one(op->type) + " / " + float_function("sqrt", op->type) + "(" + a[0] + "))";
    case Intrinsic::prefetch:
    case Intrinsic::barrier:
      unsupported(std::string(intrinsic_name(op->op)) + "() inside an expression");
    case Intrinsic::warp_shuffle_down:
      return warp_shuffle_down(a[0], a[1], op->type);
    case Intrinsic::reinterpret: {
      DataType from = op->args[0].type().element(), to = op->type.element();
      if (from.is_narrow()) from = from.storage_type();
      if (to.is_narrow()) to = to.storage_type();
      if (from == to) return a[0];
      if (from == runtime::kFloat16 || to == runtime::kFloat16)
        unsupported("reading float16 bits as another type (" + from.str() + " as " + to.str() + ")");
      return reinterpret(a[0], from, to);
    }
    default:
      break;
  }
  // An integer's abs, in its own type (OpenCL's abs of a long gives a ulong; C's takes an int).
  if (op->op == Intrinsic::abs && op->type.is_uint()) return a[0];
  if (op->op == Intrinsic::abs && op->type.is_int()) return "((" + a[0] + ") < 0 ? -(" + a[0] + ") : (" + a[0] + "))";
  if (!op->type.is_float()) unsupported(std::string(intrinsic_name(op->op)) + " of " + op->type.str());
  // The IR's names are C's but for these; round is half to even, like numpy.
  std::string name = intrinsic_name(op->op);
  if (op->op == Intrinsic::abs) name = "fabs";
  if (op->op == Intrinsic::round) name = "rint";
  std::string s = float_function(name, op->type) + "(";
  for (size_t i = 0; i < a.size(); ++i) s += (i ? ", " : "") + a[i];
  return s + ")";
}

std::string SourcePrinter::expr(const Expr& e) {
  // Vector values are printed one lane at a time, inside the loop over lanes of a vector store.
  if (e.type().is_vector() && lane_.empty()) unsupported("vector values (" + e.type().str() + ") outside a store");
  const DataType t = e.type().element();
  switch (e->kind) {
    case NodeKind::Ramp: {
      const auto* r = e.as<Ramp>();
      return "(" + expr(r->base) + " + " + expr(r->stride) + " * " + lane_ + ")";
    }
    case NodeKind::Broadcast:
      return expr(e.as<Broadcast>()->value);
    case NodeKind::IntImm:
    case NodeKind::FloatImm:
      return literal(e);
    case NodeKind::Var: {
      const auto* v = e.as<VarNode>();
      auto it = names_.find(v);
      if (it == names_.end()) unsupported("the free variable '" + v->name + "' (kernels take only buffers)");
      return it->second;
    }
    case NodeKind::Add:
      return binary("+", e.as<Add>()->a, e.as<Add>()->b);
    case NodeKind::Sub:
      return binary("-", e.as<Sub>()->a, e.as<Sub>()->b);
    case NodeKind::Mul:
      return binary("*", e.as<Mul>()->a, e.as<Mul>()->b);
    case NodeKind::Div:
      return binary("/", e.as<Div>()->a, e.as<Div>()->b);
    case NodeKind::Mod: {
      const auto* m = e.as<Mod>();
      if (t.is_float()) return float_function("fmod", t) + "(" + expr(m->a) + ", " + expr(m->b) + ")";
      return binary("%", m->a, m->b);
    }
    case NodeKind::FloorDiv:
    case NodeKind::FloorMod: {
      const bool is_div = e->kind == NodeKind::FloorDiv;
      const Expr& a = is_div ? e.as<FloorDiv>()->a : e.as<FloorMod>()->a;
      const Expr& b = is_div ? e.as<FloorDiv>()->b : e.as<FloorMod>()->b;
      if (t.is_uint()) return binary(is_div ? "/" : "%", a, b);
      // int8 and int16 operands promote to int in C; the result fits their type again.
      if (t.is_int() && t.bits < 32)
        return "((" + type_name(t) + ")tessera_floor" + (is_div ? "div" : "mod") + "_int32(" + expr(a) + ", " + expr(b) +
               "))";
      if (t != runtime::kInt32 && t != runtime::kInt64) unsupported("floor division of " + t.str());
      return std::string("tessera_floor") + (is_div ? "div_" : "mod_") + t.str() + "(" + expr(a) + ", " + expr(b) + ")";
    }
    // As the LLVM backend: a < b ? a : b, what x86's minps computes, NaN cases included.
    case NodeKind::Min: {
      const auto* m = e.as<Min>();
      const std::string a = expr(m->a), b = expr(m->b);
      return "(" + a + " < " + b + " ? " + a + " : " + b + ")";
    }
    case NodeKind::Max: {
      const auto* m = e.as<Max>();
      const std::string a = expr(m->a), b = expr(m->b);
      return "(" + a + " > " + b + " ? " + a + " : " + b + ")";
    }
    case NodeKind::EQ:
      return binary("==", e.as<EQ>()->a, e.as<EQ>()->b);
    case NodeKind::NE:
      return binary("!=", e.as<NE>()->a, e.as<NE>()->b);
    case NodeKind::LT:
      return binary("<", e.as<LT>()->a, e.as<LT>()->b);
    case NodeKind::LE:
      return binary("<=", e.as<LE>()->a, e.as<LE>()->b);
    case NodeKind::GT:
      return binary(">", e.as<GT>()->a, e.as<GT>()->b);
    case NodeKind::GE:
      return binary(">=", e.as<GE>()->a, e.as<GE>()->b);
    case NodeKind::And:
      return binary("&&", e.as<And>()->a, e.as<And>()->b);
    case NodeKind::Or:
      return binary("||", e.as<Or>()->a, e.as<Or>()->b);
    case NodeKind::Not:
      return "(!" + expr(e.as<Not>()->a) + ")";
    case NodeKind::Select: {
      // Only the chosen side is evaluated, which guards its loads (padding reads out of bounds).
      const auto* s = e.as<Select>();
      return "(" + expr(s->condition) + " ? " + expr(s->true_value) + " : " + expr(s->false_value) + ")";
    }
    case NodeKind::Cast:
      return cast(t, e.as<Cast>()->value);
    case NodeKind::Call:
      return call(e.as<Call>());
    case NodeKind::Load: {
      const auto* l = e.as<Load>();
      return load(l->buffer, expr(l->index));
    }
    case NodeKind::Let: {
      // C has no let expressions; the value is pure, so its text stands for the variable (scalar
      // stores lift theirs into locals first: lift_lets.h). A chain of lets, each read twice (a
      // vectorized integer Pow), doubles the text at each: past a megabyte it is refused rather
      // than printed for ever.
      const auto* l = e.as<Let>();
      const std::string value = expr(l->value);
      if (value.size() > (1 << 20))
        unsupported("the let-bound value '" + l->var.name() + "' (over a megabyte of text once the lets it reads are "
                    "substituted; build it for llvm)");
      auto bound = names_.find(l->var.get());
      const std::optional<std::string> outer =
          bound == names_.end() ? std::nullopt : std::optional<std::string>(bound->second);
      names_[l->var.get()] = "(" + value + ")";
      std::string body = expr(l->body);
      if (outer) names_[l->var.get()] = *outer;
      else names_.erase(l->var.get());
      return body;
    }
    default:
      unsupported(std::string("the expression node ") + node_kind_name(e->kind));
  }
}

// --- statements -------------------------------------------------------------------------------

void SourcePrinter::print_thread_index(const ThreadExtent* op) { unsupported("thread extents (" + op->tag + ")"); }

std::string SourcePrinter::barrier() const { unsupported("barriers"); }

std::string SourcePrinter::reinterpret(const std::string& value, DataType from, DataType to) const {
  return "((union { " + type_name(from) + " from; " + type_name(to) + " to; }){.from = " + value + "}).to";
}

std::string SourcePrinter::warp_shuffle_down(const std::string&, const std::string&, DataType) const {
  unsupported("warp shuffles (a cross-thread reduction lowered for cuda)");
}

void SourcePrinter::print_parallel_for(const For* op) {
  unsupported("the parallel loop '" + op->var.name() + "'; bind it to blockIdx or threadIdx instead");
}

void SourcePrinter::print_local_allocate(const Allocate* op) {
  const Buffer& b = op->buffer;
  if (b->scope == MemoryScope::Global)
    unsupported("the global buffer '" + b.name() + "' allocated inside it (allocate it outside the kernels)");
  line() << memory_type(b.dtype()) << " " << buffer_name(b) << "[" << b->num_elements() << "];\n";
  stmt(op->body);
}

// C has no portable vectors: the lanes in a loop, which the C compiler may vectorize again; under
// a condition per lane (vectorize.cc), each lane's store guarded by its own.
void SourcePrinter::vector_store(const Store* st, const Expr& condition) {
  lane_ = name_of(st, "lane");
  line() << "for (" << type_name(kIndexType) << " " << lane_ << " = 0; " << lane_ << " < "
         << std::max(st->value.type().lanes, st->index.type().lanes) << "; ++" << lane_ << ") {\n";
  const std::string guard = condition.defined() ? expr(condition) : "";
  const std::string index = expr(st->index), value = expr(st->value);
  lane_.clear();
  ++indent_;
  if (condition.defined()) {
    line() << "if (" << guard << ") {\n";
    ++indent_;
  }
  line() << store(st->buffer, index, value) << "\n";
  if (condition.defined()) {
    --indent_;
    line() << "}\n";
  }
  --indent_;
  line() << "}\n";
}

void SourcePrinter::print_for(const For* op) {
  if (op->for_kind == ForKind::Parallel) return print_parallel_for(op);
  const std::string v = name_of(op->var.get(), op->var.name());
  const std::string type = type_name(op->var.type());
  const auto* zero = op->min.as<IntImm>();
  const std::string min = expr(op->min);
  const std::string end = zero && zero->value == 0 ? expr(op->extent) : expr(Add::make(op->min, op->extent));
  line() << "for (" << type << " " << v << " = " << min << "; " << v << " < " << end << "; ++" << v << ") {\n";
  ++indent_;
  scoped(op->var.get(), op->body);
  --indent_;
  line() << "}\n";
}

void SourcePrinter::scoped(const Object* node, const Stmt& body) {
  in_scope_.insert(node);
  stmt(body);
  in_scope_.erase(node);
}

void SourcePrinter::stmt(const Stmt& s) {
  switch (s->kind) {
    case NodeKind::LetStmt: {
      const auto* l = s.as<LetStmt>();
      const std::string value = expr(l->value);
      line() << "const " << type_name(l->var.type()) << " " << name_of(l->var.get(), l->var.name()) << " = " << value
             << ";\n";
      return scoped(l->var.get(), l->body);
    }
    case NodeKind::For:
      return print_for(s.as<For>());
    case NodeKind::IfThenElse: {
      const auto* i = s.as<IfThenElse>();
      if (i->condition.type().is_vector()) {  // IfThenElse::make admits only a store under it
        if (!lift_let_expressions(i->then_case).same_as(i->then_case))
          unsupported("a condition per vector lane over a store that binds values");
        return vector_store(i->then_case.as<Store>(), i->condition);
      }
      line() << "if (" << expr(i->condition) << ") {\n";
      ++indent_;
      stmt(i->then_case);
      --indent_;
      if (i->else_case) {
        line() << "} else {\n";
        ++indent_;
        stmt(i->else_case);
        --indent_;
      }
      line() << "}\n";
      return;
    }
    case NodeKind::Store: {
      const Stmt lifted = lift_let_expressions(s);
      if (!lifted.same_as(s)) return stmt(lifted);
      const auto* st = s.as<Store>();
      if (std::max(st->value.type().lanes, st->index.type().lanes) == 1) {
        const std::string index = expr(st->index), value = expr(st->value);
        line() << store(st->buffer, index, value) << "\n";
        return;
      }
      return vector_store(st, Expr());
    }
    case NodeKind::Allocate: {
      const auto* a = s.as<Allocate>();
      in_scope_.insert(a->buffer.get());
      if (a->buffer->scope == MemoryScope::Shared) {
        stmt(a->body);  // declared at the kernel's top
      } else {
        // A block of its own: loop partitioning and unswitching copy a body, its allocations with
        // it, into one scope.
        line() << "{\n";
        ++indent_;
        print_local_allocate(a);
        --indent_;
        line() << "}\n";
      }
      in_scope_.erase(a->buffer.get());
      return;
    }
    case NodeKind::Block:
      for (const Stmt& x : s.as<Block>()->stmts) stmt(x);
      return;
    case NodeKind::Evaluate: {
      const Expr& v = s.as<Evaluate>()->value;
      if (const auto* c = v.as<Call>()) {
        if (c->op == Intrinsic::barrier) {
          line() << barrier() << "\n";
          return;
        }
        if (c->op == Intrinsic::prefetch) return;  // a hint; C has no portable prefetch
      }
      if (v.as<IntImm>()) return;  // the empty statement
      line() << "(void)" << expr(v) << ";\n";
      return;
    }
    case NodeKind::ThreadExtent: {
      const auto* t = s.as<ThreadExtent>();
      print_thread_index(t);
      return scoped(t->var.get(), t->body);
    }
    default:
      unsupported(std::string("the statement node ") + node_kind_name(s->kind));
  }
}

}  // namespace tessera::targets::source
