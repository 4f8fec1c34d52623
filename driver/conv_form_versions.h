// A convolution whose Winograd form pays at some of its symbolic sizes and not at others (7x7
// outputs over a batch of N; an image of H x W) reads both packings of its weight (AlterOpLayout)
// and is lowered once per form, each at size hints that choose it; its kernel takes the Winograd
// version where the condition holds at the call (kernel_versions.h), the direct one elsewhere.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "relay_ir/expr.h"
#include "tensor_ir/tensor.h"

namespace tessera::driver {

// Where the convolution of `call` (an op's call, or a fused one's) that reads both packings takes
// the Winograd form, an expression of the call's sizes; undefined when it has no such convolution.
tensor_ir::Expr winograd_condition(const relay_ir::CallNode* call);

// `call` as a graph of static sizes makes it, which each version is lowered from (so it replays
// the tuning records of that static kernel): its convolution of two packings reading only that of
// one form (`winograd`: the Winograd packing, else the blocked one) in the first packing's place,
// the other dropped. `from[j]`: the index among `call`'s arguments of the new call's argument j.
struct OnePackingCall {
  relay_ir::Expr call;
  std::vector<size_t> from;
};
OnePackingCall with_one_packing(const relay_ir::CallNode* call, bool winograd);

// Size hints (of every dimension variable of the graph of `outputs`) at which `condition` is
// `holds`: the given ones with the condition's variables scaled by powers of two (up for it to
// hold, down for it not to); none when no such scale is found.
std::optional<std::map<std::string, int64_t>> hints_where(const std::vector<tensor_ir::Tensor>& outputs,
                                                          const tensor_ir::Expr& condition, bool holds);

}  // namespace tessera::driver
