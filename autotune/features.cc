#include "autotune/features.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <unordered_map>

#include "tensor_ir/arith/const_bound.h"
#include "tensor_ir/arith/linear_form.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/op.h"
#include "tensor_ir/substitute.h"

namespace tessera::autotune {

using namespace tensor_ir;

namespace {

const std::vector<std::string> kGlobal = {"stores",       "float_ops",       "bytes",           "alloc_bytes",
                                          "allocs",       "max_alloc_bytes", "vector_fraction", "parallel_fraction",
                                          "max_parallel", "intensity",       "parallel_loops",  "loops",
                                          // GPUs (0 on CPUs): the largest launch's blocks and threads per
                                          // block, shared memory per block, coalesced share of global bytes
                                          "blocks",       "threads",         "shared_bytes",    "coalesced"};
const std::vector<std::string> kStatement = {
    "trip",    "float_add", "float_mul",       "float_div", "float_minmax", "float_cmp",      "float_special",
    "int_ops", "lanes",     "unrolled",        "parallel",  "serial",       "depth",          "outer0",
    "outer1",  "outer2",    "inner0",          "inner1",    "inner2",       "inner_unrolled", "outer_parallel",
    "buffers", "bytes",     "bytes_per_outer", "intensity", "bytes_inner2"};
const std::vector<std::string> kBuffer = {
    "bytes",  "bytes_per_outer", "bytes_inner2", "invariant",   "contiguous", "strided",     "gather",
    "stride", "reuse_count",     "reuse_iters",  "reuse_bytes", "written",    "unique_ratio",
    // GPUs: the index's step between neighbouring threads (threadIdx.x), and whether the buffer is
    // the block's shared memory
    "thread_stride", "shared"};
constexpr int kBuffersPerStatement = 4;
constexpr int kStatements = 2;

float scaled(double x) { return static_cast<float>(std::log2(1.0 + std::max(0.0, x))); }

struct LoopInfo {
  const VarNode* var;
  int64_t extent;
  ForKind kind;     // a GPU's block and thread axes count as parallel loops
  std::string tag;  // theirs: "blockIdx.x", "threadIdx.x", ...; empty for loops
};

// One level of an access: a loop (or the vector lanes, innermost) and the index's coefficient.
struct Level {
  int64_t extent;
  int64_t coeff;       // |coefficient| of the level's variable in the index
  bool affine = true;  // false: the variable also sits in a non-linear term (x // 8, a load)
};

struct Access {
  const BufferNode* buffer;
  std::vector<Level> levels;  // outermost first, vector lanes last
  bool gather = false;        // a vector of computed indices
  bool written = false;
  bool shared = false;        // the block's shared memory
  bool global = false;        // a GPU kernel's argument or workspace in device memory
  int64_t thread_stride = 0;  // |coefficient| of threadIdx.x in the index (0: none); -1: not affine in it
  int64_t elem_bytes = 4;
  size_t order = 0;  // first appearance, to break ties deterministically

  // Elements touched while levels [from, end) run: the product of the extents the index
  // depends on, at most the span the affine ones cover.
  double footprint(size_t from) const {
    double count = 1, span = 1, other = 1;
    for (size_t i = from; i < levels.size(); ++i) {
      if (levels[i].coeff == 0 || levels[i].extent <= 1) continue;
      double e = static_cast<double>(levels[i].extent);
      if (!levels[i].affine) {
        other *= e;
        continue;
      }
      count *= e;
      span += static_cast<double>(levels[i].coeff) * (e - 1);
    }
    return other * std::min(count, span);
  }
};

class OpCounter : public IRVisitor {
 public:
  double add = 0, mul = 0, div = 0, minmax = 0, cmp = 0, special = 0, int_ops = 0;
  std::vector<std::pair<const BufferNode*, Expr>> loads;

 protected:
  void count(const ExprNode* op, double& float_slot) { (op->type.is_float() ? float_slot : int_ops) += op->type.lanes; }
  void visit_(const Add* op) override {
    count(op, add);
    IRVisitor::visit_(op);
  }
  void visit_(const Sub* op) override {
    count(op, add);
    IRVisitor::visit_(op);
  }
  void visit_(const Mul* op) override {
    count(op, mul);
    IRVisitor::visit_(op);
  }
  void visit_(const Div* op) override {
    count(op, div);
    IRVisitor::visit_(op);
  }
  void visit_(const Min* op) override {
    count(op, minmax);
    IRVisitor::visit_(op);
  }
  void visit_(const Max* op) override {
    count(op, minmax);
    IRVisitor::visit_(op);
  }
  void visit_(const Select* op) override {
    cmp += op->type.lanes;
    IRVisitor::visit_(op);
  }
  void visit_(const Call* op) override {
    count(op, special);
    IRVisitor::visit_(op);
  }
  void visit_(const Load* op) override {
    loads.emplace_back(op->buffer.get(), op->index);
    IRVisitor::visit_(op);
  }
};

struct Statement {
  double trip = 1;
  int64_t lanes = 1;
  double add = 0, mul = 0, div = 0, minmax = 0, cmp = 0, special = 0, int_ops = 0;
  std::vector<LoopInfo> loops;
  std::vector<Access> accesses;  // one per buffer
  double float_ops() const { return (add + mul + div + minmax + cmp + special) * trip; }
};

class Extractor : public IRVisitor {
 public:
  std::vector<Statement> statements;
  std::vector<double> allocations;  // bytes
  int parallel_loops = 0, loops = 0;
  double blocks = 0, threads = 0, shared_bytes = 0;  // the largest of any kernel's launch

 protected:
  void visit_(const For* op) override {
    arith::ConstBound min = arith::const_bound(op->min, bounds_);
    arith::ConstBound ext = arith::const_bound(op->extent, bounds_);
    int64_t extent = ext.bounded() ? std::max<int64_t>(ext.max, 0) : 1;
    ++loops;
    parallel_loops += op->for_kind == ForKind::Parallel;
    stack_.push_back({op->var.get(), extent, op->for_kind, ""});
    if (min.bounded()) bounds_[op->var.get()] = {min.min, min.max + std::max<int64_t>(extent - 1, 0)};
    visit(op->body);
    bounds_.erase(op->var.get());
    stack_.pop_back();
  }

  // A kernel's block or thread axis: a parallel loop whose extent the launch gives.
  void visit_(const ThreadExtent* op) override {
    arith::ConstBound ext = arith::const_bound(op->extent, bounds_);
    int64_t extent = ext.bounded() ? std::max<int64_t>(ext.max, 1) : 1;
    bool thread = op->tag.rfind("threadIdx", 0) == 0;
    if (std::none_of(stack_.begin(), stack_.end(), [](const LoopInfo& l) { return !l.tag.empty(); })) shared_ = 0;
    double& count = thread ? threads_ : blocks_;
    count *= static_cast<double>(extent);
    (thread ? threads : blocks) = std::max(thread ? threads : blocks, count);
    stack_.push_back({op->var.get(), extent, ForKind::Parallel, op->tag});
    bounds_[op->var.get()] = {0, extent - 1};
    visit(op->body);
    bounds_.erase(op->var.get());
    stack_.pop_back();
    count /= static_cast<double>(extent);
  }

  void visit_(const Allocate* op) override {
    const double bytes = static_cast<double>(op->buffer->num_elements()) * op->buffer->dtype.element_bytes();
    allocations.push_back(bytes);
    if (op->buffer->scope == MemoryScope::Shared) shared_bytes = std::max(shared_bytes, shared_ += bytes);
    visit(op->body);
  }

  void visit_(const Store* op) override {
    Statement st;
    st.loops = stack_;
    for (const auto& l : stack_) st.trip *= static_cast<double>(std::max<int64_t>(l.extent, 1));
    st.lanes = op->index.type().lanes;
    OpCounter ops;
    ops.visit(op->value);
    ops.visit(op->index);
    st.add = ops.add, st.mul = ops.mul, st.div = ops.div, st.minmax = ops.minmax, st.cmp = ops.cmp,
    st.special = ops.special;
    st.int_ops = ops.int_ops;
    std::map<const BufferNode*, size_t> by_buffer;
    auto add_access = [&](const BufferNode* b, const Expr& index, bool written) {
      Access a = access(b, index, written, st.lanes);
      auto it = by_buffer.find(b);
      if (it == by_buffer.end()) {
        a.order = st.accesses.size();
        by_buffer[b] = st.accesses.size();
        st.accesses.push_back(std::move(a));
        return;
      }
      Access& old = st.accesses[it->second];
      bool was_written = old.written || written;
      if (a.footprint(0) > old.footprint(0)) {
        a.order = old.order;
        old = std::move(a);
      }
      old.written = was_written;
    };
    add_access(op->buffer.get(), op->index, true);
    for (const auto& [b, index] : ops.loads) add_access(b, index, false);
    statements.push_back(std::move(st));
  }

 private:
  Access access(const BufferNode* b, const Expr& index, bool written, int64_t statement_lanes) const {
    Access a;
    a.buffer = b;
    a.written = written;
    a.elem_bytes = b->dtype.element_bytes();
    a.shared = b->scope == MemoryScope::Shared;
    Expr base = index;
    int64_t lanes = 1, stride = 0;
    if (const auto* ramp = index.as<Ramp>()) {
      base = ramp->base;
      lanes = ramp->lanes;
      const int64_t* s = as_const_int(ramp->stride);
      if (s) stride = std::llabs(*s);
      else a.gather = true;
    } else if (index.type().lanes > 1) {
      a.gather = true;
      lanes = index.type().lanes;
      stride = 1;
    }
    arith::LinearForm form = arith::to_linear_form(base);
    std::unordered_map<const VarNode*, int64_t> coeff;
    std::unordered_map<const VarNode*, bool> nonlinear;
    for (const auto& [term, c] : form.terms) {
      if (const auto* v = term.as<VarNode>()) {
        coeff[v] += c;
        continue;
      }
      // A non-linear term (x // 8, min(...), a load): every loop variable in it counts once.
      for (const auto& l : stack_)
        if (uses_var(term, l.var)) nonlinear[l.var] = true;
    }
    for (const auto& l : stack_) {
      auto it = coeff.find(l.var);
      int64_t c = it == coeff.end() ? 0 : std::llabs(it->second);
      bool odd = nonlinear.count(l.var) > 0;
      a.levels.push_back({l.extent, odd ? std::max<int64_t>(c, 1) : c, !odd});
      if (l.tag == "threadIdx.x") a.thread_stride = odd ? -1 : c;
      if (!l.tag.empty()) a.global = b->scope == MemoryScope::Global;
    }
    // A scalar read in a vector statement is the same for every lane (a broadcast).
    if (lanes == 1 && statement_lanes > 1) a.levels.push_back({statement_lanes, 0, true});
    if (lanes > 1) a.levels.push_back({lanes, stride, !a.gather});
    return a;
  }

  std::vector<LoopInfo> stack_;
  arith::BoundMap bounds_;
  double blocks_ = 1, threads_ = 1, shared_ = 0;  // of the kernel being visited
};

void write_buffer(const Access& a, const Statement& st, float* out) {
  double bytes = static_cast<double>(a.elem_bytes);
  size_t n = a.levels.size();
  out[0] = scaled(a.footprint(0) * bytes);
  out[1] = scaled(a.footprint(std::min<size_t>(1, n)) * bytes);
  out[2] = scaled(a.footprint(n >= 2 ? n - 2 : 0) * bytes);
  // The innermost level that iterates says how consecutive accesses relate.
  const Level* inner = nullptr;
  for (auto it = a.levels.rbegin(); it != a.levels.rend() && !inner; ++it)
    if (it->extent > 1) inner = &*it;
  int category = !inner ? 0 : !inner->affine ? 3 : inner->coeff == 0 ? 0 : inner->coeff == 1 ? 1 : 2;
  out[3 + category] = 1;
  out[7] = scaled(inner ? static_cast<double>(inner->coeff) : 0);
  // Reuse: the innermost level the index does not depend on.
  for (size_t k = n; k-- > 0;) {
    if (a.levels[k].coeff != 0 || a.levels[k].extent <= 1) continue;
    double iters = 1;
    for (size_t i = k + 1; i < n; ++i) iters *= static_cast<double>(a.levels[i].extent);
    out[8] = scaled(static_cast<double>(a.levels[k].extent));
    out[9] = scaled(iters);
    out[10] = scaled(a.footprint(k + 1) * bytes);
    break;
  }
  out[11] = a.written ? 1.0f : 0.0f;
  double accessed = st.trip * static_cast<double>(st.lanes);
  out[12] = static_cast<float>(a.footprint(0) / std::max(accessed, 1.0));
  // A computed (gathered) index counts as far apart as a warp can be.
  out[13] = scaled(a.thread_stride < 0 ? 32.0 : static_cast<double>(a.thread_stride));
  out[14] = a.shared ? 1.0f : 0.0f;
}

void write_statement(const Statement& st, float* out) {
  out[0] = scaled(st.trip * static_cast<double>(st.lanes));
  double counts[] = {st.add, st.mul, st.div, st.minmax, st.cmp, st.special, st.int_ops};
  for (int i = 0; i < 7; ++i) out[1 + i] = scaled(counts[i] * st.trip);
  out[8] = scaled(static_cast<double>(st.lanes));
  double unrolled = 1, parallel = 1, serial = 1;
  for (const auto& l : st.loops) {
    double e = static_cast<double>(std::max<int64_t>(l.extent, 1));
    (l.kind == ForKind::Unrolled ? unrolled : l.kind == ForKind::Parallel ? parallel : serial) *= e;
  }
  out[9] = scaled(unrolled);
  out[10] = scaled(parallel);
  out[11] = scaled(serial);
  size_t depth = st.loops.size();
  out[12] = static_cast<float>(depth);
  for (size_t i = 0; i < 3; ++i) {
    if (i < depth) out[13 + i] = scaled(static_cast<double>(st.loops[i].extent));
    if (i < depth) out[16 + i] = scaled(static_cast<double>(st.loops[depth - 1 - i].extent));
  }
  out[19] = depth && st.loops.back().kind == ForKind::Unrolled;
  out[20] = depth && st.loops.front().kind == ForKind::Parallel;
  out[21] = static_cast<float>(st.accesses.size());
  double bytes = 0, per_outer = 0, inner2 = 0;
  for (const auto& a : st.accesses) {
    size_t n = a.levels.size();
    bytes += a.footprint(0) * a.elem_bytes;
    per_outer += a.footprint(std::min<size_t>(1, n)) * a.elem_bytes;
    inner2 += a.footprint(n >= 2 ? n - 2 : 0) * a.elem_bytes;
  }
  out[22] = scaled(bytes);
  out[23] = scaled(per_outer);
  out[24] = scaled(st.float_ops() / std::max(bytes, 1.0));
  out[25] = scaled(inner2);
  std::vector<const Access*> buffers;
  for (const auto& a : st.accesses) buffers.push_back(&a);
  std::stable_sort(buffers.begin(), buffers.end(), [](const Access* x, const Access* y) {
    double bx = x->footprint(0) * x->elem_bytes, by = y->footprint(0) * y->elem_bytes;
    return bx != by ? bx > by : x->order < y->order;
  });
  for (size_t b = 0; b < buffers.size() && b < kBuffersPerStatement; ++b)
    write_buffer(*buffers[b], st, out + kStatement.size() + b * kBuffer.size());
}

size_t statement_size() { return kStatement.size() + kBuffersPerStatement * kBuffer.size(); }

}  // namespace

size_t feature_count() { return kGlobal.size() + kStatements * statement_size(); }

const std::vector<std::string>& feature_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = kGlobal;
    for (int s = 0; s < kStatements; ++s) {
      std::string p = "s" + std::to_string(s) + ".";
      for (const auto& f : kStatement) n.push_back(p + f);
      for (int b = 0; b < kBuffersPerStatement; ++b)
        for (const auto& f : kBuffer) n.push_back(p + "b" + std::to_string(b) + "." + f);
    }
    return n;
  }();
  return names;
}

std::vector<float> extract_features(const LoweredFunc& func) {
  Extractor ex;
  ex.visit(func.body);
  std::vector<float> out(feature_count(), 0.0f);
  double flops = 0, bytes = 0, vector_flops = 0, parallel_flops = 0, max_parallel = 1;
  double global_bytes = 0, coalesced_bytes = 0;
  for (const auto& st : ex.statements) {
    double f = st.float_ops();
    flops += f;
    for (const auto& a : st.accesses) {
      bytes += a.footprint(0) * a.elem_bytes;
      if (!a.global) continue;
      // Neighbouring threads read the same or neighbouring elements: one transaction per warp.
      const double accessed = st.trip * static_cast<double>(st.lanes) * static_cast<double>(a.elem_bytes);
      global_bytes += accessed;
      if (a.thread_stride == 0 || a.thread_stride == 1) coalesced_bytes += accessed;
    }
    if (st.lanes > 1) vector_flops += f;
    double parallel = 1;
    for (const auto& l : st.loops)
      if (l.kind == ForKind::Parallel) parallel *= static_cast<double>(std::max<int64_t>(l.extent, 1));
    if (parallel > 1) parallel_flops += f;
    max_parallel = std::max(max_parallel, parallel);
  }
  double alloc = 0, max_alloc = 0;
  for (double a : ex.allocations) alloc += a, max_alloc = std::max(max_alloc, a);
  float global[] = {static_cast<float>(ex.statements.size()),
                    scaled(flops),
                    scaled(bytes),
                    scaled(alloc),
                    static_cast<float>(ex.allocations.size()),
                    scaled(max_alloc),
                    static_cast<float>(flops > 0 ? vector_flops / flops : 0),
                    static_cast<float>(flops > 0 ? parallel_flops / flops : 0),
                    scaled(max_parallel),
                    scaled(flops / std::max(bytes, 1.0)),
                    static_cast<float>(ex.parallel_loops),
                    static_cast<float>(ex.loops),
                    scaled(ex.blocks),
                    scaled(ex.threads),
                    scaled(ex.shared_bytes),
                    static_cast<float>(global_bytes > 0 ? coalesced_bytes / global_bytes : 0)};
  std::copy(std::begin(global), std::end(global), out.begin());
  // The statements doing the most arithmetic (then the most iterations), first one first on ties.
  std::vector<size_t> order(ex.statements.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Statement &x = ex.statements[a], &y = ex.statements[b];
    if (x.float_ops() != y.float_ops()) return x.float_ops() > y.float_ops();
    return x.trip * x.lanes > y.trip * y.lanes;
  });
  for (size_t s = 0; s < order.size() && s < kStatements; ++s)
    write_statement(ex.statements[order[s]], out.data() + kGlobal.size() + s * statement_size());
  return out;
}

}  // namespace tessera::autotune
