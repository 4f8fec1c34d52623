#include "relay_ir/transforms/training.h"

#include "relay_ir/ops/grad_util.h"
#include "relay_ir/transforms/gradient.h"
#include "relay_ir/transforms/infer_type.h"
#include "runtime/error.h"

namespace tessera::relay_ir {

namespace {

Expr scalar_like(const Expr& like, double v) { return scalar_of(v, as_tensor(like->checked_type, "parameter").dtype); }

}  // namespace

std::vector<std::string> optimizer_state_names(const OptimizerSpec& spec) {
  if (spec.kind == OptimizerSpec::Adam) return {"m", "v"};
  if (spec.momentum != 0) return {"velocity"};
  return {};
}

Module training_step(const Module& loss, const std::vector<std::string>& wrt, const OptimizerSpec& spec) {
  if (spec.learning_rate <= 0) fail("training: the learning rate must be positive");
  Module grads = gradient(loss, wrt);  // (outputs..., d loss / d wrt...)
  const Function& g = grads.main();
  const auto* results = g->body.as<TupleNode>();
  size_t n_outputs = results->elements.size() - wrt.size();
  if (n_outputs != 1) {
    // Only the loss is differentiated: the other outputs must get zero cotangents.
    fail("training: main must return the loss alone (a scalar); it returns ", n_outputs, " values");
  }
  const auto& loss_type = as_tensor(results->elements[0]->checked_type, "loss");
  if (!loss_type.shape.empty())
    fail("training: the loss must be a scalar, got ", to_string(results->elements[0]->checked_type));

  // New parameters: the loss function's, then the optimizer state.
  std::vector<Var> params = g->params;
  auto names = optimizer_state_names(spec);
  std::vector<Expr> weights, gradients;
  std::vector<std::vector<Var>> state(wrt.size());
  for (size_t i = 0; i < wrt.size(); ++i) {
    for (const auto& p : g->params)
      if (p->name == wrt[i]) weights.push_back(p);
    gradients.push_back(results->elements[n_outputs + i]);
    for (const auto& s : names) {
      Var v(wrt[i] + "." + s, weights.back()->checked_type);
      params.push_back(v);
      state[i].push_back(v);
    }
  }
  Var step;
  if (spec.kind == OptimizerSpec::Adam) {
    step = Var("step", tensor_type({}, as_tensor(weights[0]->checked_type, "parameter").dtype));
    params.push_back(step);
  }

  std::vector<Expr> outputs{results->elements[0]}, new_state;
  Expr t, bias1, bias2;
  if (spec.kind == OptimizerSpec::Adam) {
    t = add(step, scalar_like(weights[0], 1));
    // Bias corrections 1 - beta^t, from the step count the function is given.
    bias1 = sub(scalar_like(weights[0], 1), call("pow", {scalar_like(weights[0], spec.beta1), t}));
    bias2 = sub(scalar_like(weights[0], 1), call("pow", {scalar_like(weights[0], spec.beta2), t}));
  }
  for (size_t i = 0; i < wrt.size(); ++i) {
    const Expr& w = weights[i];
    Expr grad = gradients[i];
    if (spec.weight_decay != 0) grad = add(grad, mul(scalar_like(w, spec.weight_decay), w));
    Expr lr = scalar_like(w, spec.learning_rate);
    if (spec.kind == OptimizerSpec::SGD) {
      if (spec.momentum != 0) {
        Expr v = add(mul(scalar_like(w, spec.momentum), state[i][0]), grad);
        new_state.push_back(v);
        grad = v;
      }
      outputs.push_back(sub(w, mul(lr, grad)));
    } else {
      Expr m = add(mul(scalar_like(w, spec.beta1), state[i][0]), mul(scalar_like(w, 1 - spec.beta1), grad));
      Expr v = add(mul(scalar_like(w, spec.beta2), state[i][1]), mul(scalar_like(w, 1 - spec.beta2), mul(grad, grad)));
      new_state.push_back(m);
      new_state.push_back(v);
      Expr m_hat = div(m, bias1), v_hat = div(v, bias2);
      outputs.push_back(sub(w, div(mul(lr, m_hat), add(call("sqrt", {v_hat}), scalar_like(w, spec.epsilon)))));
    }
  }
  outputs.insert(outputs.end(), new_state.begin(), new_state.end());
  if (step) outputs.push_back(t);
  Module out(function(params, tuple(outputs)));
  return infer_type(out);
}

}  // namespace tessera::relay_ir
