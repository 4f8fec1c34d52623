// Default CPU schedules for operator compute definitions, chosen by the tag of each output's
// operation ("elemwise", "broadcast", "injective", "reduce", "matmul", "conv", ...).
// A tag without a template of its own gets the generic one: injective intermediates inlined,
// the innermost axis vectorized, the outer axes fused and spread over threads.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "schedule/schedule.h"
#include "schedule/templates/knobs.h"

namespace tessera::schedule {

// Schedules the stages computing `output` (and its intermediates) in `s`.
using CpuTemplate = std::function<void(Schedule& s, const Tensor& output)>;
// A built-in template: the same, its rule-of-thumb choices asked of `knobs` (knobs.h).
using TunableTemplate = std::function<void(Schedule& s, const Tensor& output, TemplateKnobs& knobs)>;
// A template that has no knobs.
TunableTemplate without_knobs(CpuTemplate schedule);

// Templates by tag: each family adds its own in its file through the add_*_templates function
// below; cpu_templates.cc calls them once.
const std::map<std::string, TunableTemplate>& cpu_templates();

// The families' templates (templates/<family>.cc).
void add_math_templates(std::map<std::string, TunableTemplate>& t);
void add_nn_templates(std::map<std::string, TunableTemplate>& t);
void add_transform_templates(std::map<std::string, TunableTemplate>& t);
void add_extra_templates(std::map<std::string, TunableTemplate>& t);

// A schedule for `outputs` using the template of each output's tag. For a fused kernel,
// `anchor` is the stage of its main op (a convolution under its bias and activation): its
// template schedules it, and the stages after it get the generic schedule.
std::unique_ptr<Schedule> default_cpu_schedule(const std::vector<Tensor>& outputs, const Tensor& anchor,
                                               const HardwareParams& hardware);
// The same in `s`, a fresh schedule of the kernel computing `outputs` made with the target's
// hardware, with the templates' knobs answered by `knobs`.
void apply_cpu_templates(Schedule& s, const std::vector<Tensor>& outputs, const Tensor& anchor, TemplateKnobs& knobs);

// The generic schedule of one stage, for templates to build on: vectorizes the innermost
// data-parallel axis (by `lanes`, or whole when shorter) and fuses and parallelizes the outer
// ones when the stage is large enough to be worth threads.
void schedule_generic_stage(Schedule& s, const Tensor& t);
// The innermost data-parallel loop `last` (of `extent`) for vectors of `lanes`: split into whole
// vectors and a guarded tail (the outer part appended to `outer`), vectorized whole when
// shorter, or left scalar at extent 1 (appended to `outer`). Returns the loop to vectorize, or
// null when there is none.
Loop split_into_vectors(Stage& st, const Loop& last, int64_t extent, int lanes, std::vector<Loop>& outer);
// Fuses the stage's outer loops `outer` (adjacent, outermost first) into the loop to run in
// parallel. A loop of symbolic extent joins only while the loops fused before it make fewer than
// kParallelChunks iterations (at their size hints): each iteration of a fused loop recovers the
// inner indices by dividing by the inner extents, a few cycles for constants but dozens for a
// value known at run time (a decoding step's cache length: a concatenation of 64-element rows
// spent most of its time dividing). Left out, it runs as a plain loop in each iteration. Nor
// does any loop join a symbolic one past kParallelChunks iterations: the index arithmetic of
// symbolic sizes in the outer loop's terms (the row of merged heads, i // N) is then computed
// once per iteration, outside the inner loops, not once per vector.
// `joined`, when given, receives how many of `outer` the returned loop fuses.
Loop fuse_for_parallel(Stage& st, const std::vector<Loop>& outer, size_t* joined = nullptr);
constexpr int64_t kParallelChunks = 4;
// Inlines every injective (non-reduction) stage feeding `output` that is not an output itself.
void inline_injective_producers(Schedule& s, const Tensor& output);

}  // namespace tessera::schedule
