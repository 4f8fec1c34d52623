// Default GPU schedules (opencl, cuda) for operator compute definitions, sized by the target's
// GpuParams (threads per block, warp size), whatever the operator:
//   * injective stages that are not outputs inline into their consumers;
//   * a reduction with a long reduction and few outputs gets a block per output element, its
//     threads sharing the reduction (rfactor; warp shuffles on cuda, a tree on OpenCL);
//   * any other reduction (a matrix product, a convolution) computes register tiles: each thread
//     a tile of up to 4 x 4 outputs (along the last axis and the longest other one, where they
//     divide), accumulated in registers with the reduction outermost, so each loaded value serves
//     a row or column of the tile; the tile is that of its only consumer of its own shape (the
//     fused epilogue) or, for an output, of a cache_write's copy; for a long matrix product or
//     convolution on a device with on-chip shared memory, blocks of up to 16 x 16 such threads
//     also stage what they read of the inputs in shared memory, a slice of the longest reduction
//     axis at a time (of at most 16 terms, fewer where the slices would take more than half the
//     shared memory of a block: a convolution's weights for a block's output channels);
//   * every other stage gets a thread per output element (its loops fused, split into blocks),
//     its reductions running in the thread; a reduction feeding only a consumer of its own shape
//     is computed inside that consumer's thread instead of a kernel of its own.
// Each stage left at the root becomes a kernel of its own, launched in order (a scalar that
// reduces nothing runs on one thread).
#pragma once
#include <memory>
#include <vector>

#include "schedule/schedule.h"
#include "schedule/templates/knobs.h"

namespace tessera::schedule {

std::unique_ptr<Schedule> default_gpu_schedule(const std::vector<Tensor>& outputs, const HardwareParams& hardware);
// The same in `s`, a fresh schedule made with a GPU's hardware, with the template's knobs answered
// by `knobs` (the tuner's search space): threads per block, register tile lengths, and a matrix
// product's shared-memory panels (whether, their depth, tiles per block along each axis).
void apply_gpu_templates(Schedule& s, TemplateKnobs& knobs);

}  // namespace tessera::schedule
