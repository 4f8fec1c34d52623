// Lowering: a schedule and the tensors a kernel takes become one LoweredFunc, through a
// straight-line sequence of steps (each printed to TESSERA_DUMP_IR when it names a folder, or
// to stderr when it is "1"). For a CPU (lower):
//   bound inference -> loop nest -> storage flattening -> narrow types -> simplify -> loop partitioning ->
//   simplify -> vectorization -> legalization -> simplify.
// For a device (lower_for_device), loops bound to blocks and threads become ThreadExtents (one
// per tag and kernel: a stage computed inside a thread-bound loop runs on the same threads),
// buffers live in their stages' memory scopes, and the CPU's steps that would break a kernel are
// left out: loop partitioning (it copies loop bodies, barriers with them, into branches) and
// vectorization (each thread computes scalars; a device's vector units are its threads):
//   bound inference -> loop nest -> storage flattening -> narrow types -> simplify -> legalization -> simplify ->
//   shared allocations hoisted to the top of each kernel -> barrier insertion.
#pragma once
#include <string>
#include <vector>

#include "schedule/schedule.h"
#include "tensor_ir/stmt.h"

namespace tessera::schedule {

// `args` are the kernel's buffers in calling order: inputs and outputs (every output of the
// schedule must be among them).
// A loop bound to a block or thread axis is an error here (a CPU has none).
tensor_ir::LoweredFunc lower(Schedule& schedule, const std::vector<Tensor>& args, const std::string& name = "main");

// The function for a device: its body is one statement per kernel, each under its ThreadExtents
// (what the host/device split takes). Vectorized loops stay loops marked vectorized, their bodies
// scalar; a loop marked parallel is an error (bind it to a thread axis instead). `warp_size` is
// the device's (targets::Target::warp_size()): cross-thread reductions shuffle within warps where
// it is above 1.
tensor_ir::LoweredFunc lower_for_device(Schedule& schedule, const std::vector<Tensor>& args,
                                        const std::string& name = "main", int warp_size = 1);

}  // namespace tessera::schedule
