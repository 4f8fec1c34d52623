// The gradient of resize (nearest, linear and cubic, every coordinate transformation).
// Interpolation is separable: each resized axis maps its input to its output through a sparse
// matrix (the taps and weights of every output index), and resize applies these one axis after
// the other. The gradient applies their transposes, as weighted_gather ops whose tables are
// computed here from the same coordinate arithmetic as the forward compute
// (tensor_ir/ops/transform_resize.cc), in float64 as it is.
#include <cmath>

#include "relay_ir/ops/transform_common.h"
#include "relay_ir/ops/transform_grad.h"
#include "runtime/error.h"
#include "tensor_ir/ops/transform_resize.h"

namespace tessera::relay_ir::transform_grad {

namespace {

namespace ops = tensor_ir::ops;
using E = const Expr&;

bool is_identity(const ops::ResizeParams& p, size_t d, int64_t in) {
  if (p.scales[d] != 1 || p.out_shape[d] != in) return false;
  switch (p.coordinates) {
    case ops::ResizeCoordinates::TfHalfPixelForNn: return false;
    case ops::ResizeCoordinates::TfCropAndResize: return p.roi[d] == 0 && p.roi[d + p.scales.size()] == 1;
    default: return true;
  }
}

// Where output index o of axis d falls in the input.
double input_coordinate(const ops::ResizeParams& p, size_t d, int64_t in, int64_t o) {
  double scale = p.scales[d], out_size = scale * static_cast<double>(in), x = static_cast<double>(o);
  switch (p.coordinates) {
    case ops::ResizeCoordinates::HalfPixel: return (x + 0.5) / scale - 0.5;
    case ops::ResizeCoordinates::PytorchHalfPixel: return out_size == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
    case ops::ResizeCoordinates::AlignCorners: return out_size == 1 ? 0 : x * (static_cast<double>(in - 1) / (out_size - 1));
    case ops::ResizeCoordinates::Asymmetric: return x / scale;
    case ops::ResizeCoordinates::TfHalfPixelForNn: return (x + 0.5) / scale;
    case ops::ResizeCoordinates::TfCropAndResize: {
      double start = p.roi[d], end = p.roi[d + p.scales.size()], span = static_cast<double>(in - 1);
      double base = start * span;
      return out_size == 1 ? (end - start) * span / 2 + base : x * ((end - start) * span / (out_size - 1)) + base;
    }
  }
  return x;
}

// Appends the taps of one output index (input indices, clamped, and weights) to `map`.
void add_taps(const ops::ResizeParams& p, double x, int64_t in, AxisMap& map) {
  double fl = std::floor(x), r = x - fl;
  auto f = static_cast<int64_t>(fl);
  auto clamped = [in](int64_t i) { return std::min(std::max<int64_t>(i, 0), in - 1); };
  auto tap = [&](int64_t i, double w) {
    map.index.push_back(clamped(i));
    map.weight.push_back(w);
  };
  if (p.mode == ops::ResizeMode::Nearest) {
    bool up = false;
    switch (p.nearest) {
      case ops::ResizeNearest::RoundPreferFloor: up = r > 0.5; break;
      case ops::ResizeNearest::RoundPreferCeil: up = r >= 0.5; break;
      case ops::ResizeNearest::Floor: up = false; break;
      case ops::ResizeNearest::Ceil: up = r > 0; break;
    }
    tap(up ? f + 1 : f, 1);
    return;
  }
  if (p.mode == ops::ResizeMode::Linear) {
    tap(f, 1 - r);
    tap(f + 1, r);
    return;
  }
  double a = p.cubic_coeff_a, s = 1 - r;
  auto far = [a](double u) {
    double v = u + 1;
    return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a;
  };
  auto near = [a](double u) { return ((a + 2) * u - (a + 3)) * u * u + 1; };
  double w[4] = {far(r), near(r), near(s), far(s)};
  if (p.exclude_outside) {
    double total = 0;
    for (int k = -1; k <= 2; ++k) {
      if (f + k < 0 || f + k >= in) w[k + 1] = 0;
      total += w[k + 1];
    }
    for (double& v : w) v /= total;
  }
  for (int k = -1; k <= 2; ++k) tap(f + k, w[k + 1]);
}

// Axis d's map from the input to the output; with tf_crop_and_resize, outputs whose
// coordinate leaves the input hold the extrapolation value and get no taps' weight.
AxisMap axis_map(const ops::ResizeParams& p, size_t d, int64_t in) {
  AxisMap map;
  map.rows = p.out_shape[d];
  map.taps = p.mode == ops::ResizeMode::Nearest ? 1 : p.mode == ops::ResizeMode::Linear ? 2 : 4;
  for (int64_t o = 0; o < map.rows; ++o) {
    double x = input_coordinate(p, d, in, o);
    size_t first = map.weight.size();
    add_taps(p, x, in, map);
    if (p.coordinates == ops::ResizeCoordinates::TfCropAndResize && (x < 0 || x > static_cast<double>(in - 1)))
      for (size_t k = first; k < map.weight.size(); ++k) map.weight[k] = 0;
  }
  return map;
}

}  // namespace

void register_resize(OpRegistry& r) {
  r.set_gradient("resize", [](E c, E g) {
    const auto& x = tensor_of(arg(c, 0));
    ops::ResizeParams p = transform::resize_params(x.shape, as_call(c).attrs);
    Expr grad = g;
    for (size_t d = 0; d < x.ndim(); ++d)
      if (!is_identity(p, d, x.shape[d])) grad = transposed_gather(grad, axis_map(p, d, x.shape[d]), static_cast<int64_t>(d), x.shape[d]);
    return std::vector<Expr>{grad};
  });
}

}  // namespace tessera::relay_ir::transform_grad
