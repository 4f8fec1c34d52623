// The work of one output element of an injective stage, for the templates' parallel thresholds,
// which count elements: an element whose value takes a sigmoid or a tanh costs as much as a few
// dozen that are a sum, so a recurrent cell over a few thousand elements is worth both cores
// where a copy of as many is not.
#pragma once
#include <cstdint>

#include "schedule/schedule.h"

namespace tessera::schedule {

// One arithmetic operation's share of a transcendental function (tensor_ir::is_transcendental),
// as computed by vectorized polynomials.
inline constexpr int64_t kTranscendentalCost = 8;

// 1 + kTranscendentalCost for each transcendental call that computing one element of `t` makes,
// through the producers inlined into it in `s`.
int64_t element_cost(Schedule& s, const Tensor& t);

}  // namespace tessera::schedule
