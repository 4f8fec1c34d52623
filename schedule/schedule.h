// Schedules: how the loops of each operation run, kept apart from what it computes. A Schedule
// holds one Stage per operation; primitives (split, reorder, compute_at, cache_write, ...)
// reshape a stage's loops or move it in the loop nest of another. Every primitive checks its
// arguments, throws an Error naming the stage and loop when they are invalid, and appends
// itself to the schedule's Trace, from which the same schedule can be replayed.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "schedule/hardware_params.h"
#include "schedule/trace.h"
#include "tensor_ir/ir.h"

namespace tessera::schedule {

using tensor_ir::Expr;
using tensor_ir::ForKind;
using tensor_ir::IterKind;
using tensor_ir::IterVar;
using tensor_ir::Pragmas;
using tensor_ir::Tensor;
using tensor_ir::Var;

// A loop of a stage: an axis of the operation, or one made by split or fuse. Its name says its
// role ("i", "i.outer", "i.inner.j.fused") and is unique within the stage, which is how traces
// refer to it.
struct LoopNode {
  Var var;
  std::string name;  // may differ from var's name when two axes of an operation share one
  IterKind kind;
  ForKind for_kind = ForKind::Serial;
  Pragmas pragmas;
  // The thread axis the loop is bound to (Stage::bind): a tensor_ir thread tag or kVirtualThread;
  // empty when it is not bound.
  std::string thread_tag;
};
using Loop = std::shared_ptr<LoopNode>;

// How leaf loops derive from root loops: parent = outer * inner_extent + inner (split) and
// fused = outer * inner_extent + inner (fuse).
struct SplitRelation {
  Loop parent, outer, inner;
  int64_t factor = 0;  // exactly one of factor / nparts is nonzero
  int64_t nparts = 0;
};
struct FuseRelation {
  Loop outer, inner, fused;
};
struct Relation {
  enum Kind { Split, Fuse } kind;
  SplitRelation split;
  FuseRelation fuse;
};

enum class AttachKind { Root, Inline, At };

// A virtual thread (TVM's): the loop's iterations are interleaved in one thread, lowered to an
// unrolled loop, so that a thread computes several strided pieces of a tile (spreading its
// accesses over memory banks) without more threads or a loop the compiler cannot schedule.
inline constexpr const char* kVirtualThread = "vthread";
// The tags Stage::bind accepts: blockIdx.{x,y,z}, threadIdx.{x,y,z} and vthread.
const std::vector<std::string>& thread_axis_tags();
// Throws an Error naming `primitive` and `stage` unless `scope` is "global", "shared" or "local".
void check_storage_scope(const char* primitive, const std::string& stage, const std::string& scope);

// A prefetch (Stage::prefetch): the part of `tensor` that the iteration `offset` steps further
// along `from` reads, fetched into cache a share per iteration of `at`. `from` is a leaf loop of
// `from_stage` or a loop fused into one.
struct PrefetchSpec {
  Tensor tensor;
  Loop at, from;
  const class Stage* from_stage = nullptr;
  int64_t offset = 1;
};

class Schedule;

class Stage {
 public:
  const std::string& name() const { return name_; }
  // The operation this stage computes now (cache_write replaces the original's definition).
  const Tensor& op() const { return op_; }
  const std::vector<Loop>& root_loops() const { return root_loops_; }
  const std::vector<Loop>& leaf_loops() const { return leaf_loops_; }
  const std::vector<Relation>& relations() const { return relations_; }
  AttachKind attach_kind() const { return attach_kind_; }
  Stage* attach_stage() const { return attach_stage_; }
  const Loop& attach_loop() const { return attach_loop_; }
  bool is_output() const { return is_output_; }
  // The memory the stage's buffer lives in: "global", "shared" or "local" as cache_read,
  // cache_write or set_scope gave it; "" when none did, and lowering chooses as TVM does: local
  // for a stage computed inside a loop bound to threadIdx, shared inside one bound to blockIdx,
  // global otherwise.
  const std::string& scope() const { return scope_; }
  const std::vector<PrefetchSpec>& prefetches() const { return prefetches_; }
  // Per dimension: (factor, offset) from storage_align, factor 0 when unset.
  const std::vector<std::pair<int64_t, int64_t>>& storage_align() const { return storage_align_; }

  // True once any split, fuse, reorder or loop annotation has been applied.
  bool has_loop_schedule() const;

  // Finds a loop of this stage by name or by the variable of an operation axis.
  Loop loop(const std::string& name) const;
  Loop loop(const IterVar& axis) const;
  Loop loop(const Var& var) const;
  // A current loop of this stage by name, or a loop fused into one.
  Loop loop_or_fused(const std::string& name) const;
  // The current loop that `loop` is or was fused into, and the loops fused inside `loop` on the
  // way (the product of their extents is its stride along that leaf). Fails where `loop` was
  // split or is not this stage's.
  std::pair<Loop, std::vector<Loop>> leaf_of_fused(const Loop& loop) const;

  // --- loop primitives -------------------------------------------------------------------
  std::pair<Loop, Loop> split(const Loop& parent, int64_t factor);
  std::pair<Loop, Loop> split_nparts(const Loop& parent, int64_t nparts);
  // Splits x and y and orders the result x.outer, y.outer, x.inner, y.inner.
  std::vector<Loop> tile(const Loop& x, const Loop& y, int64_t x_factor, int64_t y_factor);
  Loop fuse(const Loop& outer, const Loop& inner);
  // The given loops take, in this order, the positions they occupy among the leaves.
  void reorder(const std::vector<Loop>& order);
  // A reduction loop vectorizes where it is innermost and accumulates one element (the combining
  // step after rfactor): its lanes combine as a tree, a fixed reassociation of the reduction
  // (tensor_ir/transforms/vectorize.h). Elsewhere it runs as a serial loop.
  void vectorize(const Loop& loop);
  void unroll(const Loop& loop);
  void parallel(const Loop& loop);
  // Binds loop `loop` to a thread axis of a device launch (thread_axis_tags()): each block or
  // thread runs one iteration. Bind after splitting and fusing; a stage binds a tag to one loop
  // (vthread excepted). Device lowering (lower_for_device) turns it into a ThreadExtent. A
  // reduction loop may be bound to threadIdx only, the outermost of its stage's reduction loops:
  // the block's threads then reduce together (a cross-thread reduction, schedule_ops.cc).
  void bind(const Loop& loop, const std::string& thread_tag);
  void pragma(const Loop& loop, const std::string& key, int64_t value);
  // Prefetching for data streamed from memory: the part of `tensor` that the iteration
  // `offset` steps further along `from` reads (every loop inside `from` ranging) is fetched into
  // cache (L2) in even shares, one at the start of each iteration of `at`, across the `offset`
  // iterations of `from` before it. A matrix product whose weight panel serves several row
  // tiles fetches the next panel while the current one's tiles run (from: the panel loop,
  // offset: 1, at: the reduction loop), at the rate they compute rather than in one burst that
  // waits on memory. `tensor` is read by this stage (directly or through inlined stages); `from`
  // is `at` or a loop around it: this stage's own, or one of `from_stage`, a stage this one is
  // computed in; the loops from `from` down to `at` have constant extents. `from` may be a loop
  // fused into one around `at` (the panel loop fused with the row tiles'): its next iteration is
  // then as many steps ahead on that loop as the loops fused inside it run, a count that follows
  // symbolic sizes. Near the end of `from` the part fetched may lie past the tensor's end:
  // prefetches never fault.
  void prefetch(const Tensor& tensor, const Loop& at, Stage& from_stage, const Loop& from, int64_t offset);

  // --- where the stage is computed -------------------------------------------------------
  void compute_at(Stage& consumer, const Loop& loop);
  void compute_inline();
  void compute_root();
  // Pads the stride of dimension `dim` of this stage's buffer so that stride % factor == offset.
  void set_storage_align(int dim, int64_t factor, int64_t offset);
  // Places the stage's buffer in memory `scope` ("global", "shared" or "local"; an output's is
  // its argument, in global memory).
  void set_scope(const std::string& scope);

 private:
  friend class Schedule;
  Stage(Schedule* schedule, Tensor op, std::string name, bool is_output);
  void init_loops();
  std::string fresh_name(const std::string& base) const;
  Loop make_loop(const std::string& name, IterKind kind);
  size_t leaf_position(const Loop& loop, const char* primitive) const;
  // Refuses to annotate or restructure `loop` with `primitive` once it is bound to a thread axis.
  void check_not_bound(const Loop& loop, const char* primitive) const;
  void replace_leaf(size_t position, std::vector<Loop> with);
  void record(Instruction inst);

  Schedule* schedule_;
  Tensor op_;
  Tensor origin_op_;  // the operation the user created this stage for
  std::string name_;
  bool is_output_;
  std::vector<Loop> root_loops_, leaf_loops_;
  std::vector<Relation> relations_;
  AttachKind attach_kind_ = AttachKind::Root;
  Stage* attach_stage_ = nullptr;
  Loop attach_loop_;
  std::string scope_;
  std::vector<std::pair<int64_t, int64_t>> storage_align_;
  std::vector<PrefetchSpec> prefetches_;
};

class Schedule {
 public:
  // Stages for `outputs` and every operation they depend on, producers first; `hardware`: the
  // machine the kernel is built for, which the default templates (templates/cpu.h) size their
  // vectors and tiles by (a schedule written by hand needs none).
  explicit Schedule(std::vector<Tensor> outputs, HardwareParams hardware = {});
  Schedule(const Schedule&) = delete;
  Schedule& operator=(const Schedule&) = delete;

  const std::vector<Tensor>& outputs() const { return outputs_; }
  // Stages in dependency order (producers first), placeholders included.
  const std::vector<std::unique_ptr<Stage>>& stages() const { return stages_; }
  // The stage of a tensor (the user's tensor, or one a primitive returned).
  Stage& operator[](const Tensor& t);
  Stage& stage(const std::string& name);
  const Trace& trace() const { return trace_; }
  const HardwareParams& hardware() const { return hardware_; }

  // --- primitives that add stages --------------------------------------------------------
  // A stage copying `t` into a buffer of `scope`, read by `readers` instead of `t`.
  Tensor cache_read(const Tensor& t, const std::string& scope, const std::vector<Tensor>& readers);
  // `t` is computed into a new stage of `scope`, then copied into `t`. Must come before other
  // primitives on t's stage.
  Tensor cache_write(const Tensor& t, const std::string& scope);
  // Factors reduction loop `loop` of `t` out into a new stage that computes partial results
  // along a new axis at position `factor_axis`; t then reduces over that axis.
  Tensor rfactor(const Tensor& t, const Loop& loop, int factor_axis = 0);

  // Stages that read `stage`'s output, in dependency order.
  std::vector<Stage*> consumers(const Stage& stage) const;

 private:
  friend class Stage;
  Stage& add_stage(Tensor op, bool is_output, size_t position);
  // Makes `readers` read `to` wherever they read `from`, replacing their operations.
  void replace_reads(const std::vector<Stage*>& readers, const Tensor& from, const Tensor& to);
  size_t position_of(const Stage& s) const;
  std::string unique_stage_name(const std::string& base) const;

  std::vector<Tensor> outputs_;
  HardwareParams hardware_;
  std::vector<std::unique_ptr<Stage>> stages_;
  Trace trace_;
};

}  // namespace tessera::schedule
