// Statement nodes: the loop nests that lowering produces. Realize/ProducerStore address tensors
// by multi-dimensional indices (straight out of the schedule); storage flattening turns them
// into Allocate/Store on flat buffers, which is what code generators see.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "tensor_ir/buffer.h"
#include "tensor_ir/tensor.h"

namespace tessera::tensor_ir {

struct StmtNode : Object {
  static constexpr bool kind_matches(NodeKind k) {
#define TESSERA_X(kind, type) k == NodeKind::kind ||
    return TESSERA_STMT_NODES(TESSERA_X) false;
#undef TESSERA_X
  }

 protected:
  explicit StmtNode(NodeKind k) : Object(k) {}
};

class Stmt : public Ref<StmtNode> {
 public:
  using Ref<StmtNode>::Ref;
  Stmt() = default;
};

struct LetStmt : StmtNode {
  TESSERA_NODE(LetStmt)
  Var var;
  Expr value;
  Stmt body;
  TESSERA_FIELDS(var, value, body)
  static Stmt make(Var var, Expr value, Stmt body);
  LetStmt(Var v, Expr val, Stmt b) : StmtNode(kKind), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
};

enum class ForKind : uint8_t { Serial, Parallel, Vectorized, Unrolled };
const char* for_kind_name(ForKind kind);

// Extra facts a schedule attaches to a loop (pragma(key, value)), kept in order.
using Pragmas = std::vector<std::pair<std::string, int64_t>>;

struct For : StmtNode {
  TESSERA_NODE(For)
  Var var;
  Expr min, extent;
  ForKind for_kind;
  Stmt body;
  Pragmas pragmas;
  TESSERA_FIELDS(var, min, extent, for_kind, body, pragmas)
  static Stmt make(Var var, Expr min, Expr extent, ForKind for_kind, Stmt body, Pragmas pragmas = {});
  For(Var v, Expr m, Expr e, ForKind k, Stmt b, Pragmas p)
      : StmtNode(kKind),
        var(std::move(v)),
        min(std::move(m)),
        extent(std::move(e)),
        for_kind(k),
        body(std::move(b)),
        pragmas(std::move(p)) {}
};

// A scalar condition, or (after vectorization) a vector of them guarding one store of as many
// lanes: only the lanes where it holds are written, and the store's value reads only those.
struct IfThenElse : StmtNode {
  TESSERA_NODE(IfThenElse)
  Expr condition;
  Stmt then_case, else_case;  // else_case may be undefined
  TESSERA_FIELDS(condition, then_case, else_case)
  static Stmt make(Expr condition, Stmt then_case, Stmt else_case = Stmt());
  IfThenElse(Expr c, Stmt t, Stmt e)
      : StmtNode(kKind), condition(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
};

struct Store : StmtNode {
  TESSERA_NODE(Store)
  Buffer buffer;
  Expr value, index;
  TESSERA_FIELDS(buffer, value, index)
  static Stmt make(Buffer buffer, Expr value, Expr index);
  Store(Buffer b, Expr v, Expr i) : StmtNode(kKind), buffer(std::move(b)), value(std::move(v)), index(std::move(i)) {}
};

// A local buffer live within `body`; its shape must be constant.
struct Allocate : StmtNode {
  TESSERA_NODE(Allocate)
  Buffer buffer;
  Stmt body;
  TESSERA_FIELDS(buffer, body)
  static Stmt make(Buffer buffer, Stmt body);
  Allocate(Buffer b, Stmt s) : StmtNode(kKind), buffer(std::move(b)), body(std::move(s)) {}
};

// Statements run in order.
struct Block : StmtNode {
  TESSERA_NODE(Block)
  std::vector<Stmt> stmts;
  TESSERA_FIELDS(stmts)
  // Flattens nested blocks and drops undefined and empty statements; one statement comes back
  // as itself, none as Evaluate(0).
  static Stmt make(std::vector<Stmt> stmts);
  explicit Block(std::vector<Stmt> s) : StmtNode(kKind), stmts(std::move(s)) {}
};

// Evaluate(0) is the empty statement: passes return it for code they removed.
bool is_no_op(const Stmt& s);

struct Evaluate : StmtNode {
  TESSERA_NODE(Evaluate)
  Expr value;
  TESSERA_FIELDS(value)
  static Stmt make(Expr value);
  explicit Evaluate(Expr v) : StmtNode(kKind), value(std::move(v)) {}
};

// The region `bounds` of `tensor` is materialized for the duration of `body`.
struct Realize : StmtNode {
  TESSERA_NODE(Realize)
  Tensor tensor;
  std::vector<Range> bounds;
  Stmt body;
  TESSERA_FIELDS(tensor, bounds, body)
  static Stmt make(Tensor tensor, std::vector<Range> bounds, Stmt body);
  Realize(Tensor t, std::vector<Range> b, Stmt s)
      : StmtNode(kKind), tensor(std::move(t)), bounds(std::move(b)), body(std::move(s)) {}
};

struct ProducerStore : StmtNode {
  TESSERA_NODE(ProducerStore)
  Tensor tensor;
  Expr value;
  std::vector<Expr> indices;
  TESSERA_FIELDS(tensor, value, indices)
  static Stmt make(Tensor tensor, Expr value, std::vector<Expr> indices);
  ProducerStore(Tensor t, Expr v, std::vector<Expr> i)
      : StmtNode(kKind), tensor(std::move(t)), value(std::move(v)), indices(std::move(i)) {}
};

// `body` runs once for each thread of one dimension of a device launch, with `var` the thread's
// index along `tag` (blockIdx.{x,y,z} or threadIdx.{x,y,z}), from 0 to `extent`: what a loop bound
// to a thread axis (Stage::bind) lowers to. The host/device split turns the thread extents of a
// kernel into its launch grid.
struct ThreadExtent : StmtNode {
  TESSERA_NODE(ThreadExtent)
  Var var;
  std::string tag;
  Expr extent;
  Stmt body;
  TESSERA_FIELDS(var, tag, extent, body)
  static Stmt make(Var var, std::string tag, Expr extent, Stmt body);
  ThreadExtent(Var v, std::string t, Expr e, Stmt b)
      : StmtNode(kKind), var(std::move(v)), tag(std::move(t)), extent(std::move(e)), body(std::move(b)) {}
};

// The thread axes a launch has, in CUDA's names (OpenCL's get_group_id(d) / get_local_id(d)).
bool is_thread_tag(const std::string& tag);
// blockIdx.*: 0 to 2 for x to z; threadIdx.*: 3 to 5.
int thread_tag_index(const std::string& tag);

// A lowered kernel: its arguments (in calling order) and its body. `shape_vars` are the
// variables of the arguments' symbolic dimensions, each also some argument's dimension by itself
// (so a call's shapes give its value); the kernel takes their values after the buffers.
struct LoweredFunc {
  std::string name;
  std::vector<Buffer> args;
  Stmt body;
  std::vector<Var> shape_vars = {};
};

}  // namespace tessera::tensor_ir
