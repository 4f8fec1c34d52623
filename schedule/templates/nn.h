// Helpers shared by the nn family's CPU templates (schedule/templates/nn*.cc) and the
// template registrations each file provides to add_nn_templates (nn.cc).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "schedule/templates/cpu.h"
#include "tensor_ir/op.h"

namespace tessera::schedule {

void add_nn_matmul_templates(std::map<std::string, TunableTemplate>& t);     // nn_matmul.cc
void add_nn_conv_templates(std::map<std::string, TunableTemplate>& t);       // nn_conv.cc
void add_nn_conv_nhwc_templates(std::map<std::string, TunableTemplate>& t);  // nn_conv_nhwc.cc: channels-last
void add_nn_pool_templates(std::map<std::string, TunableTemplate>& t);       // nn_pool.cc: window pooling
void add_nn_norm_templates(std::map<std::string, TunableTemplate>& t);  // nn_rows.cc: normalizations, softmax, losses
void add_nn_grad_templates(std::map<std::string, TunableTemplate>& t);  // nn_grad.cc: gradient ops, batch_norm_train
void add_nn_attention_templates(std::map<std::string, TunableTemplate>& t);  // nn_attention.cc: fused attention

namespace nn {

// Below this many multiply-adds (or elements touched) a parallel loop costs more than it saves.
constexpr int64_t kMinParallelWork = 1 << 18;

// The first operation behind `output` (itself included) whose tag is `tag`, or undefined.
Tensor find_tagged(const Tensor& output, const std::string& tag);
// Inlines every injective stage feeding `output` except the outputs and those in `keep`.
void inline_injective_except(Schedule& s, const Tensor& output, const std::vector<Tensor>& keep);
// Root compute stages behind `output` (itself included) that nothing scheduled yet, producers
// first: what a template may still schedule when another output of the kernel came first.
std::vector<Tensor> unscheduled_stages(Schedule& s, const Tensor& output);
// The tensor in memory that reads of `t` touch: `t`, or where it is inlined, what it copies (a
// stage with one input), followed through such copies.
Tensor stored_source(Schedule& s, Tensor t);
// Fuses the given adjacent loops (outermost first) into one; an empty list gives null.
Loop fuse_all(Stage& st, const std::vector<Loop>& loops);
// The matmul tiling (nn_matmul.cc): `out` reads the padded `product` (tag "matmul") elementwise,
// its loops `batch`, `rows` and `cols` running over the product's batch, row and column
// dimensions, `columns` the extent of `cols` (the product pads it to whole panels); `packed` is
// the product's B panel stage (tag "matmul_pack", or an inlined "matmul_prepacked" copy of
// panels packed ahead of time). With `rows_contiguous`, consecutive rows of `out` are adjacent
// in memory (not columns), so the tile is stored a column at a time. Knobs: the tile's rows,
// threads, whether panels are the outer loop, the unroll of the reduction, whether the next
// panel is prefetched.
void schedule_matmul_tiles(Schedule& s, const Tensor& out, const Tensor& product, const Tensor& packed,
                           std::vector<Loop> batch, const Loop& rows, const Loop& cols, int64_t columns,
                           TemplateKnobs& knobs, bool rows_contiguous = false);
// A product left unpacked (few rows or narrow columns): dot products along k where an operand
// reads along the product's last axis other than as its innermost index (vectors there would
// gather), vectors of columns otherwise (nn_matmul.cc).
void schedule_unpacked_product(Schedule& s, const Tensor& product);
// Vectorizes `loop` (of `extent` iterations) in vectors of the register width, `lanes`: split
// into whole vectors, unrolled, where it is wider than one (LLVM splits a 32-lane vector op into
// two registers cleanly, but a 48-lane one spilled; and where the extent is not a
// multiple, only the remainder runs scalar); as it is otherwise.
void vectorize_in_registers(Stage& st, const Loop& loop, int64_t extent, int lanes);
// A row statistic (a reduction over its last reduction axis, `stat`) as vector partial results:
// that axis split by the vector width and factored out (rfactor), the lanes combined at the end.
// Returns the partials' stage, undefined (nothing done) where the axis is shorter than a vector.
Tensor vector_partials(Schedule& s, const Tensor& stat, int lanes);
// The stage a template of an op that takes an epilogue (conv, matmul) should tile: `main`, the
// op's own output, or in a fused kernel whose output applies elementwise ops to main (bias,
// activation, residual add), that output, with main inlined into it so the epilogue runs on the
// tile while it is in registers.
Tensor epilogue_target(Schedule& s, const Tensor& main);
// The product of a compute's output dimensions.
int64_t num_elements(const Tensor& t);
// The product of a compute's reduction extents (1 without reductions).
int64_t reduction_volume(const tensor_ir::ComputeOp* c);
// Rows of vectors (nn_pool.cc): every dimension but the last fused into rows (those of symbolic
// extent only as fuse_for_parallel allows), in parallel when the stage does enough work
// (`work_per_element` times its elements); the last split into whole vectors then a tail; the
// reduction loops (unrolled when small) between the two, so a vector's accumulator stays in a
// register. Returns the innermost rows loop (the fused one, or the last left out of it).
Loop schedule_rows_of_vectors(Schedule& s, const Tensor& t, int64_t work_per_element);

}  // namespace nn
}  // namespace tessera::schedule
