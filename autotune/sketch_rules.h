// Sketch generation (Ansor, OSDI 2020): from a kernel's compute definition alone, rules decide per
// stage which primitives shape its loops, leaving their parameters to be sampled
// (autotune/decisions.h). On CPU:
//  * injective stages without branches or expensive math are always inlined;
//  * a reduction with data reuse (some input ignores a data-parallel axis: matmul, conv) is
//    multi-level tiled S0 S1 R0 S2 R1 S3; when its only consumer is an injective output, that
//    output is tiled S0 S1 S2 S3 and the reduction computed at its tile (consumer fusion); an
//    output that accumulates itself gets a variant with cache_write doing the same;
//  * a reduction without reuse (softmax rows, sums) keeps its data-parallel axes outside: rows
//    over threads and reduction loops inside, or an rfactor variant that vectorizes the partial
//    sums along the reduction;
//  * other injective stages are fused outer loops + split innermost + parallel + vectorize;
//  * a stage that is neither an output nor always inlined has its place decided by sampling:
//    root, inline (when injective) or at one of the tile levels of the output that consumes it.
// On GPUs (Ansor's GPU rules), the same analysis with loops bound to blocks and threads:
//  * a reduction with reuse is tiled S0 S1 R0 S2 R1 S3 with S0 fused into blockIdx.x and S1 into
//    threadIdx.x, the thread's S2 x S3 tile accumulated in registers (its output's cache_write,
//    or the output it is fused into, computed at the thread); where the device's shared memory is
//    on the chip, a variant stages each input's R1 slice in shared memory, fetched by all the
//    block's threads together;
//  * a reduction without reuse runs a row per thread, or a row per block with its threads
//    sharing the reduction (cross-thread rfactor);
//  * injective stages get a thread per element; a stage's place is the root or inline.
#pragma once
#include <string>
#include <vector>

#include "autotune/decisions.h"
#include "schedule/hardware_params.h"
#include "tensor_ir/tensor.h"

namespace tessera::schedule {
class Schedule;
}

namespace tessera::autotune {

enum class Placement {
  Root,        // computed in full at the root (outputs, unfusable reductions)
  Inline,      // always inlined
  Decided,     // root, inline or at a tile level of `target`: a sampled decision
  InConsumer,  // a reduction computed at its consumer's tile (the consumer's rule schedules it)
};

enum class LoopRule {
  None,        // inlined, or scheduled by another stage's rule
  Rows,        // injective: outer axes fused (threads), innermost split and vectorized
  ReduceRows,  // reduction without reuse: the same, reduction loops inside the rows
  Rfactor,     // reduction without reuse: innermost reduction split, its inner part factored out and
               // vectorized (a GPU: the longest split across the block's threads)
  Tile,        // reduction with reuse: S0 S1 R0 S2 R1 S3 on its own loops
  TileFused,   // an output tiled S0 S1 S2 S3 with `anchor` computed at its tile, R0 S2 R1 S3 there
};

struct StageSketch {
  std::string stage;  // the stage's name in a fresh schedule of the kernel
  Placement placement = Placement::Root;
  LoopRule loops = LoopRule::None;
  std::string target;        // Decided: the output it may be computed in (empty: root or inline only)
  bool injective = false;    // Decided: whether inlining is allowed
  std::string anchor;        // TileFused without cache_write: the reduction computed at the tile
  bool cache_write = false;  // TileFused: the output's own reduction moves to a cache stage first
  bool shared = false;       // GPU TileFused: the anchor's inputs are staged in shared memory
  // TileFused: per axis of this stage, the anchor axis its index walks (-1: none); matched axes
  // share one tiling, so the anchor's tile and the consumer's line up.
  std::vector<int> matched;
};

struct Sketch {
  std::string name;         // a readable summary: "matmul_out:tile_fused(matmul)"
  bool is_default = false;  // the default template's schedule (no decisions)
  // The default templates with their knobs (schedule/templates/knobs.h) as decisions: the
  // hand-written search space beside the rule-generated ones.
  bool is_template = false;
  std::vector<StageSketch> stages;  // consumers before producers: the order rules apply in
};

// The rule-generated sketches of the kernel computing `outputs` for `hardware` (the search space adds the
// default template's schedule and the templates' knobs as sketches of their own).
std::vector<Sketch> generate_sketches(const std::vector<tensor_ir::Tensor>& outputs,
                                      const schedule::HardwareParams& hardware);

// Applies a rule sketch to `s` (a fresh schedule of the kernel), its parameters from `tape`.
// Throws tessera::Error when the decisions do not fit the sketch or a primitive rejects them.
void apply_sketch(const Sketch& sketch, schedule::Schedule& s, DecisionTape& tape);

// The analyses the rules rest on, for tests.
// Injective, without select or expensive intrinsics (exp, log, ...): inlining it costs nothing.
bool strictly_inlinable(const tensor_ir::Tensor& t);
// A reduction some of whose inputs are read independently of a data-parallel axis (extent > 1).
bool has_data_reuse(const tensor_ir::Tensor& t);

}  // namespace tessera::autotune
