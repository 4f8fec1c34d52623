#include "tensor_ir/transforms/split_host_device.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "runtime/error.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/functor.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"
#include "tensor_ir/structural.h"
#include "tensor_ir/substitute.h"

namespace tessera::tensor_ir {

namespace {

class BufferUses : public IRVisitor {
 public:
  std::vector<Buffer> used;
  std::unordered_set<const BufferNode*> allocated;

 private:
  std::unordered_set<const BufferNode*> seen_;
  void use(const Buffer& b) {
    if (seen_.insert(b.get()).second) used.push_back(b);
  }
  void visit_(const Load* op) override {
    use(op->buffer);
    IRVisitor::visit_(op);
  }
  void visit_(const Store* op) override {
    use(op->buffer);
    IRVisitor::visit_(op);
  }
  void visit_(const Allocate* op) override {
    allocated.insert(op->buffer.get());
    IRVisitor::visit_(op);
  }
};

// The launch extent of each thread tag (the largest a kernel binds it with) and its shared memory.
// A block's threads are a constant number; the blocks may be a symbolic number.
class LaunchShape : public IRVisitor {
 public:
  explicit LaunchShape(const std::string& kernel) : kernel_(kernel) {}
  std::map<int, Expr> extents;  // thread_tag_index -> extent
  int64_t shared_bytes = 0;

 private:
  void visit_(const ThreadExtent* op) override {
    const int index = thread_tag_index(op->tag);
    const int64_t* c = as_const_int(op->extent);
    if (c ? *c < 1 : index >= 3)
      fail("kernel '", kernel_, "': the extent of ", op->tag, " (", op->var.name(),
           ") must be a positive constant, not ", op->extent);
    if (std::count(open_.begin(), open_.end(), index))
      fail("kernel '", kernel_, "': ", op->tag, " is bound again (", op->var.name(), ") inside a loop bound to it");
    auto it = extents.find(index);
    extents[index] = it == extents.end() ? op->extent : arith::simplify(max(it->second, op->extent));
    open_.push_back(index);
    IRVisitor::visit_(op);
    open_.pop_back();
  }
  void visit_(const Allocate* op) override {
    if (op->buffer->scope == MemoryScope::Shared)
      shared_bytes += op->buffer->num_elements() * op->buffer.dtype().element_bytes() * op->buffer.dtype().lanes;
    IRVisitor::visit_(op);
  }
  const std::string& kernel_;
  std::vector<int> open_;
};

// Gives every ThreadExtent its tag's launch extent, guarding bodies bound with less.
class WidenThreadExtents : public IRMutator {
 public:
  explicit WidenThreadExtents(const std::map<int, Expr>& extents) : extents_(extents) {}

 private:
  Stmt mutate_(const ThreadExtent* op) override {
    Stmt body = mutate(op->body);
    const Expr& launch = extents_.at(thread_tag_index(op->tag));
    const int64_t *own = as_const_int(op->extent), *all = as_const_int(launch);
    const bool whole = own && all ? *own == *all : structural_equal(op->extent, launch);
    if (whole && body.same_as(op->body)) return Stmt(op);
    if (!whole) body = IfThenElse::make(LT::make(op->var, cast(op->var.type(), op->extent)), body);
    return ThreadExtent::make(op->var, op->tag, cast(op->extent.type(), launch), body);
  }
  const std::map<int, Expr>& extents_;
};

class Splitter {
 public:
  explicit Splitter(const LoweredFunc& func) {
    program_.name = func.name;
    program_.args = func.args;
    program_.shape_vars = func.shape_vars;
  }

  DeviceProgram run(const Stmt& body) {
    split(body);
    return std::move(program_);
  }

 private:
  void split(const Stmt& s) {
    if (is_no_op(s)) return;
    if (const auto* block = s.as<Block>()) {
      for (const Stmt& x : block->stmts) split(x);
      return;
    }
    if (const auto* alloc = s.as<Allocate>()) {
      // Outside the kernels a buffer is seen by every block: it lives in global memory.
      if (alloc->buffer->scope == MemoryScope::Shared)
        fail("function '", program_.name, "': shared buffer '", alloc->buffer.name(),
             "' is allocated outside every kernel; allocate it under a loop bound to blockIdx");
      program_.workspace.push_back(alloc->buffer);
      split(alloc->body);
      return;
    }
    // A launch of no blocks or threads (a stage of an empty tensor) does nothing: no kernel.
    if (const auto* launch = s.as<ThreadExtent>(); launch && is_zero(launch->extent)) return;
    add_kernel(s);
  }

  void add_kernel(const Stmt& s) {
    DeviceKernel k;
    k.func.name = program_.name + "_kernel" + std::to_string(program_.kernels.size());
    LaunchShape shape(k.func.name);
    shape.visit(s);
    for (const auto& [index, extent] : shape.extents) {
      if (index >= 3) {
        k.block[index - 3] = *as_const_int(extent);
        continue;
      }
      // The host computes the grid from the arguments' sizes before the launch.
      for (const Var& v : vars_of(extent))
        if (std::none_of(program_.shape_vars.begin(), program_.shape_vars.end(),
                         [&](const Var& d) { return d.same_as(v); }))
          fail("kernel '", k.func.name, "': the number of blocks (", extent, ") depends on ", v.name(),
               ", which is not a dimension of the arguments");
      k.grid[index] = extent;
    }
    k.shared_bytes = shape.shared_bytes;
    k.func.body = WidenThreadExtents(shape.extents).mutate(s);
    for (const Var& v : program_.shape_vars)
      if (uses_var(k.func.body, v.get())) k.func.shape_vars.push_back(v);
    const std::vector<Buffer> used = free_buffers(s);
    for (const Buffer& b : used) {
      if (!is_program_buffer(b))
        fail("kernel '", k.func.name, "' uses buffer '", b.name(), "', which is neither an argument of '",
             program_.name, "' nor allocated");
    }
    // Parameters in program order, so that kernels of one program agree on their buffers' order.
    auto uses = [&](const Buffer& b) {
      return std::any_of(used.begin(), used.end(), [&](const Buffer& u) { return u.same_as(b); });
    };
    for (const auto* list : {&program_.args, &program_.workspace})
      for (const Buffer& b : *list)
        if (uses(b)) k.func.args.push_back(b);
    program_.kernels.push_back(std::move(k));
  }

  bool is_program_buffer(const Buffer& b) const {
    for (const auto* list : {&program_.args, &program_.workspace})
      for (const Buffer& x : *list)
        if (x.same_as(b)) return true;
    return false;
  }

  DeviceProgram program_;
};

}  // namespace

std::vector<Buffer> free_buffers(const Stmt& s) {
  BufferUses uses;
  uses.visit(s);
  std::vector<Buffer> free;
  for (const Buffer& b : uses.used)
    if (!uses.allocated.count(b.get())) free.push_back(b);
  return free;
}

DeviceProgram split_host_device(const LoweredFunc& func) { return Splitter(func).run(func.body); }

}  // namespace tessera::tensor_ir
