#include "tensor_ir/printer.h"

#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "tensor_ir/graph.h"

namespace tessera::tensor_ir {

namespace {

// Binding strength, loosest first; a child binding looser than its parent is parenthesized.
enum Precedence { kOr = 1, kAnd, kCompare, kAdd, kMul, kUnary, kAtom };

class Printer {
 public:
  std::ostringstream os;

  std::string name_of(const Object* node, const std::string& hint) {
    auto it = names_.find(node);
    if (it != names_.end()) return it->second;
    std::string name = hint.empty() ? "v" : hint;
    for (int i = 1; used_.count(name); ++i) name = hint + "_" + std::to_string(i);
    used_.insert(name);
    names_[node] = name;
    return name;
  }

  void print(const Expr& e, int parent = 0) {
    if (!e) {
      os << "<undefined>";
      return;
    }
    dispatch(e.get(), [&](const auto* op) {
      using T = std::remove_cv_t<std::remove_pointer_t<decltype(op)>>;
      if constexpr (std::is_base_of_v<ExprNode, T>) print_node(op, parent);
    });
  }

  void print(const Stmt& s, int indent) {
    if (!s) return;
    dispatch(s.get(), [&](const auto* op) {
      using T = std::remove_cv_t<std::remove_pointer_t<decltype(op)>>;
      if constexpr (std::is_base_of_v<StmtNode, T>) print_node(op, indent);
    });
  }

  void print_list(const std::vector<Expr>& list) {
    for (size_t i = 0; i < list.size(); ++i) {
      if (i) os << ", ";
      print(list[i]);
    }
  }

  void print_range(const Range& r) {
    print(r.min);
    os << ":";
    if (r.min.as<IntImm>() && r.extent.as<IntImm>()) {
      os << r.min.as<IntImm>()->value + r.extent.as<IntImm>()->value;
    } else {
      os << "+";
      print(r.extent, kAdd + 1);
    }
  }

  std::string var(const Var& v) { return name_of(v.get(), v.name()); }
  std::string buffer(const Buffer& b) { return name_of(b.get(), b.name()); }
  std::string tensor(const Tensor& t) { return name_of(t.get(), t.name()); }

  // --- expressions ---------------------------------------------------------------------
  void print_node(const IntImm* op, int) {
    if (op->type.is_bool()) os << (op->value ? "true" : "false");
    else if (op->type == kIndexType) os << op->value;
    else os << op->type.str() << "(" << op->value << ")";
  }
  void print_node(const FloatImm* op, int) {
    std::ostringstream v;
    if (std::isinf(op->value)) v << (op->value > 0 ? "inf" : "-inf");
    else if (std::isnan(op->value)) v << "nan";
    else v << std::setprecision(std::numeric_limits<double>::max_digits10) << op->value;
    std::string s = v.str();
    if (s.find_first_of(".ein") == std::string::npos) s += ".0";
    if (op->type.bits == 32) os << s << "f";
    else if (op->type.bits == 64) os << s;
    else os << op->type.str() << "(" << s << ")";
  }
  void print_node(const VarNode* op, int) { os << name_of(op, op->name); }

  template <NodeKind K>
  void print_node(const BinaryNode<K>* op, int parent) {
    const char* infix = nullptr;
    int prec = 0;
    switch (K) {
      case NodeKind::Add:
        infix = " + ";
        prec = kAdd;
        break;
      case NodeKind::Sub:
        infix = " - ";
        prec = kAdd;
        break;
      case NodeKind::Mul:
        infix = "*";
        prec = kMul;
        break;
      case NodeKind::Div:
        infix = "/";
        prec = kMul;
        break;
      case NodeKind::FloorDiv:
        infix = " // ";
        prec = kMul;
        break;
      case NodeKind::FloorMod:
        infix = " % ";
        prec = kMul;
        break;
      case NodeKind::EQ:
        infix = " == ";
        prec = kCompare;
        break;
      case NodeKind::NE:
        infix = " != ";
        prec = kCompare;
        break;
      case NodeKind::LT:
        infix = " < ";
        prec = kCompare;
        break;
      case NodeKind::LE:
        infix = " <= ";
        prec = kCompare;
        break;
      case NodeKind::GT:
        infix = " > ";
        prec = kCompare;
        break;
      case NodeKind::GE:
        infix = " >= ";
        prec = kCompare;
        break;
      case NodeKind::And:
        infix = " && ";
        prec = kAnd;
        break;
      case NodeKind::Or:
        infix = " || ";
        prec = kOr;
        break;
      default:
        break;
    }
    if (!infix) {  // min, max, truncmod
      os << (K == NodeKind::Min ? "min(" : K == NodeKind::Max ? "max(" : "truncmod(");
      print(op->a);
      os << ", ";
      print(op->b);
      os << ")";
      return;
    }
    bool paren = prec < parent;
    if (paren) os << "(";
    print(op->a, prec);
    os << infix;
    // Left-associative: a right operand of equal strength needs parentheses (a - (b - c)).
    print(op->b, prec + 1);
    if (paren) os << ")";
  }
  void print_node(const Not* op, int) {
    os << "!";
    print(op->a, kUnary);
  }
  void print_node(const Select* op, int) {
    os << "select(";
    print_list({op->condition, op->true_value, op->false_value});
    os << ")";
  }
  void print_node(const Cast* op, int) {
    os << op->type.str() << "(";
    print(op->value);
    os << ")";
  }
  void print_node(const Call* op, int) {
    os << intrinsic_name(op->op) << "(";
    print_list(op->args);
    os << ")";
  }
  void print_node(const ProducerLoad* op, int) {
    os << tensor(op->tensor) << "[";
    print_list(op->indices);
    os << "]";
  }
  void print_node(const Reduce* op, int) {
    os << reduce_kind_name(op->combiner) << "(";
    print(op->source);
    os << ", axis=[";
    for (size_t i = 0; i < op->axis.size(); ++i) {
      if (i) os << ", ";
      os << var(op->axis[i].var()) << " in ";
      print_range(op->axis[i]->dom);
    }
    os << "]";
    if (!(op->condition.as<IntImm>() && op->condition.as<IntImm>()->value)) {
      os << ", where=";
      print(op->condition);
    }
    os << ")";
  }
  void print_node(const Load* op, int) {
    os << buffer(op->buffer) << "[";
    print(op->index);
    os << "]";
  }
  void print_node(const Ramp* op, int) {
    os << "ramp(";
    print_list({op->base, op->stride});
    os << ", " << op->lanes << ")";
  }
  void print_node(const Broadcast* op, int) {
    os << "x" << op->lanes << "(";
    print(op->value);
    os << ")";
  }
  void print_node(const Let* op, int parent) {
    os << "(let " << var(op->var) << " = ";
    print(op->value);
    os << " in ";
    print(op->body);
    os << ")";
  }

  // --- statements ----------------------------------------------------------------------
  void line(int indent) { os << std::string(2 * indent, ' '); }

  void print_node(const LetStmt* op, int indent) {
    line(indent);
    os << "let " << var(op->var) << " = ";
    print(op->value);
    os << "\n";
    print(op->body, indent);
  }
  void print_node(const For* op, int indent) {
    for (const auto& [key, value] : op->pragmas) {
      line(indent);
      os << "// pragma " << key << " = " << value << "\n";
    }
    line(indent);
    os << for_kind_name(op->for_kind) << " (" << var(op->var) << ", ";
    print(op->min);
    os << ", ";
    print(op->extent);
    os << ") {\n";
    print(op->body, indent + 1);
    line(indent);
    os << "}\n";
  }
  void print_node(const ThreadExtent* op, int indent) {
    line(indent);
    os << "launch_thread (" << var(op->var) << " = " << op->tag << ", ";
    print(op->extent);
    os << ") {\n";
    print(op->body, indent + 1);
    line(indent);
    os << "}\n";
  }
  void print_node(const IfThenElse* op, int indent) {
    line(indent);
    os << "if (";
    print(op->condition);
    os << ") {\n";
    print(op->then_case, indent + 1);
    if (op->else_case) {
      line(indent);
      os << "} else {\n";
      print(op->else_case, indent + 1);
    }
    line(indent);
    os << "}\n";
  }
  void print_node(const Store* op, int indent) {
    line(indent);
    os << buffer(op->buffer) << "[";
    print(op->index);
    os << "] = ";
    print(op->value);
    os << "\n";
  }
  void print_node(const Allocate* op, int indent) {
    line(indent);
    os << "allocate " << buffer(op->buffer) << ": " << op->buffer.dtype().str() << "[";
    print_list(op->buffer->shape);
    os << "] (" << memory_scope_name(op->buffer->scope) << ")\n";
    print(op->body, indent);
  }
  void print_node(const Block* op, int indent) {
    for (const auto& s : op->stmts) print(s, indent);
  }
  void print_node(const Evaluate* op, int indent) {
    line(indent);
    print(op->value);
    os << "\n";
  }
  void print_node(const Realize* op, int indent) {
    line(indent);
    os << "realize " << tensor(op->tensor) << "[";
    for (size_t i = 0; i < op->bounds.size(); ++i) {
      if (i) os << ", ";
      print_range(op->bounds[i]);
    }
    os << "] {\n";
    print(op->body, indent + 1);
    line(indent);
    os << "}\n";
  }
  void print_node(const ProducerStore* op, int indent) {
    line(indent);
    os << tensor(op->tensor) << "[";
    print_list(op->indices);
    os << "] = ";
    print(op->value);
    os << "\n";
  }

  void print_operation(const Tensor& t) {
    os << tensor(t) << ": " << t.dtype().str() << "[";
    print_list(t->shape);
    os << "]";
    if (const auto* c = t.as<ComputeOp>()) {
      os << " = compute(";
      for (size_t i = 0; i < c->axis.size(); ++i) os << (i ? ", " : "") << var(c->axis[i].var());
      os << " => ";
      print(c->body);
      os << ")";
      if (!c->tag.empty()) os << "  // " << c->tag;
    } else {
      os << " = placeholder";
    }
    os << "\n";
  }

 private:
  std::unordered_map<const Object*, std::string> names_;
  std::unordered_set<std::string> used_;
};

}  // namespace

std::string to_string(const Expr& e) {
  Printer p;
  p.print(e);
  return p.os.str();
}

std::string to_string(const Stmt& s) {
  Printer p;
  p.print(s, 0);
  return p.os.str();
}

std::string to_string(const LoweredFunc& f) {
  Printer p;
  p.os << "func " << f.name << "(";
  for (size_t i = 0; i < f.args.size(); ++i) {
    if (i) p.os << ", ";
    p.os << p.buffer(f.args[i]) << ": " << f.args[i].dtype().str() << "[";
    p.print_list(f.args[i]->shape);
    p.os << "]";
  }
  p.os << ") {\n";
  p.print(f.body, 1);
  p.os << "}\n";
  return p.os.str();
}

std::string to_string(const std::vector<Tensor>& outputs) {
  Printer p;
  for (const Tensor& t : topological_order(outputs)) p.print_operation(t);
  return p.os.str();
}

std::ostream& operator<<(std::ostream& os, const Expr& e) { return os << to_string(e); }
std::ostream& operator<<(std::ostream& os, const Stmt& s) { return os << to_string(s); }

std::string shape_str(const std::vector<Expr>& shape) {
  std::string s = "(";
  for (size_t d = 0; d < shape.size(); ++d) s += (d ? ", " : "") + to_string(shape[d]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace tessera::tensor_ir
