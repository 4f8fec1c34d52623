// Training as graph functions: an optimizer update is a graph function of parameters, gradients
// and optimizer state, and a training step is one function — forward, backward (gradient) and
// update together — so all of it is fused and compiled like any other graph.
#pragma once
#include <string>
#include <vector>

#include "relay_ir/module.h"

namespace tessera::relay_ir {

struct OptimizerSpec {
  enum Kind { SGD, Adam } kind = SGD;
  double learning_rate = 0.01;
  double momentum = 0.0;                              // SGD: v = momentum * v + g;  w -= lr * v
  double weight_decay = 0.0;                          // both: g += weight_decay * w (L2, as torch.optim does)
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;  // Adam
};

// The optimizer state each parameter needs: its names' suffixes, e.g. {"velocity"} or
// {"m", "v"} (Adam also keeps one scalar step count, named "step").
std::vector<std::string> optimizer_state_names(const OptimizerSpec& spec);

// A training step for `loss` (main returns the loss, a scalar, or a tuple whose first element is
// the loss): a function of main's parameters followed by the optimizer state (per parameter in
// `wrt`, in order, for each state name: "<param>.<name>"; then Adam's "step") returning the loss
// followed by the new value of each `wrt` parameter and then the new state, in the same order.
Module training_step(const Module& loss, const std::vector<std::string>& wrt, const OptimizerSpec& spec);

}  // namespace tessera::relay_ir
