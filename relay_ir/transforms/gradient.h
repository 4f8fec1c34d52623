// Reverse-mode automatic differentiation of a graph. The result is an ordinary module, so a
// gradient is optimized, fused, compiled (and differentiated again) like any other graph.
#pragma once
#include <string>
#include <vector>

#include "relay_ir/module.h"

namespace tessera::relay_ir {

// The gradient of `m`'s main function with respect to the parameters named in `wrt`: a function
// of the same parameters (followed, with `cotangent_inputs`, by one cotangent per output, named
// d_<i>; otherwise each output's cotangent is ones) returning the original outputs followed by
// one gradient per `wrt` entry. Values used several times accumulate their cotangents;
// integer and bool values, and parameters not in `wrt`, are not differentiated. An op on a
// differentiated path without a gradient is an error naming it.
Module gradient(const Module& m, const std::vector<std::string>& wrt, bool cotangent_inputs = false);

}  // namespace tessera::relay_ir
