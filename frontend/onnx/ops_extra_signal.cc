// Converters of ONNX signal-processing operators (opsets 17 to 20). Window functions and
// MelWeightMatrix of constant inputs become constants computed here (a window of a symbolic size
// a kernel; MelWeightMatrix, and STFT of a frame length, given at run time, the program computes
// on the host: runtime/signal_ops.h).
// DFT becomes one matrix product with a constant [samples, bins] matrix of cosines and sines (a
// direct DFT, O(n * bins) per transform); STFT the same coefficients as the filters of a strided
// 1-D convolution over the signal, or, for a frame_step given at run time, as a matrix times its
// frames gathered. Batches and signal lengths may be symbolic; transform lengths are constants.
#include <cmath>
#include <cstring>

#include "frontend/onnx/dim_values.h"
#include "frontend/onnx/ops_extra.h"
#include "frontend/onnx/ops_transform.h"
#include "frontend/onnx/tensor_proto.h"
#include "runtime/error.h"
#include "runtime/signal_ops.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"

namespace tessera::frontend::onnx {

using relay_ir::Expr;
using runtime::DataType;
using runtime::NDArray;

namespace {

constexpr double kPi = 3.14159265358979323846;

DataType output_datatype(const ConvertContext& c) {
  return dtype_from_onnx(static_cast<int>(c.attr_int("output_datatype", 1)), c.where() + " output_datatype");
}

int64_t constant_integer(const ConvertContext& c, size_t input, const std::string& what) {
  std::vector<int64_t> v = c.constant_ints(input, what);
  if (v.size() != 1) c.error(what + " must be a scalar, got " + std::to_string(v.size()) + " values");
  return v[0];
}

// A window whose size is a dimension variable (computed from the sizes, or a value given at run
// time that the stage takes as a size): the same formula, computed by its kernel in float64.
Expr window_of_symbolic_size(ConvertContext& c, const tensor_ir::Expr& size, bool periodic, double a0, double a1,
                             double a2) {
  const DataType f64 = runtime::kFloat64;
  Expr n = c.call("arange", {relay_ir::scalar(0.0, f64), relay_ir::scalar(1.0, f64)},
                  {{"shape", relay_ir::Shape(std::vector<tensor_ir::Expr>{size})}});
  Expr denominator = c.call(
      "cast", {c.call("shape_values", {}, shape_values_attrs(DimValue::scalar_of(periodic ? size : size - 1), "size"))},
      {{"dtype", f64.str()}});
  Expr x = c.call("div", {c.call("mul", {n, relay_ir::scalar(2 * kPi, f64)}), denominator});
  Expr w = c.call("sub", {relay_ir::scalar(a0, f64), c.call("mul", {relay_ir::scalar(a1, f64), c.call("cos", {x})})});
  if (a2 != 0) {
    Expr x2 = c.call("mul", {x, relay_ir::scalar(2.0, f64)});
    w = c.call("add", {w, c.call("mul", {relay_ir::scalar(a2, f64), c.call("cos", {x2})})});
  }
  return c.call("cast", {w}, {{"dtype", output_datatype(c).str()}});
}

// a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N = size (periodic) or size - 1 (symmetric).
Expr cosine_window(ConvertContext& c, double a0, double a1, double a2) {
  c.check_attrs({"output_datatype", "periodic"});
  int64_t periodic = c.attr_int("periodic", 1);
  if (periodic != 0 && periodic != 1) c.error("periodic must be 0 or 1, got " + std::to_string(periodic));
  if (c.is_dim_input(0)) {
    const std::vector<tensor_ir::Expr> size = c.dim_ints(0, "size");
    if (size.size() != 1) c.error("size must be a scalar, got " + std::to_string(size.size()) + " values");
    return window_of_symbolic_size(c, size[0], periodic != 0, a0, a1, a2);
  }
  int64_t size = constant_integer(c, 0, "size");
  if (size < 0) c.error("size must not be negative, got " + std::to_string(size));
  // A symmetric window of size 1 divides 0 by 0, NaN, as in ONNX's reference and ONNX Runtime.
  double n_1 = static_cast<double>(periodic ? size : size - 1);
  NDArray out = NDArray::empty({size}, output_datatype(c));
  for (int64_t n = 0; n < size; ++n) {
    double x = 2 * kPi * static_cast<double>(n) / n_1;
    store_element(out, n, a0 - a1 * std::cos(x) + a2 * std::cos(2 * x));
  }
  return relay_ir::constant(out);
}

// Of constant inputs, a constant (runtime/signal_ops.h); given at run time, the program computes
// it on the host (frontend/onnx/program.cc).
Expr mel_weight_matrix(ConvertContext& c) {
  c.check_attrs({"output_datatype"});
  return relay_ir::constant(
      runtime::mel_weight_matrix(constant_integer(c, 0, "num_mel_bins"), constant_integer(c, 1, "dft_length"),
                                 constant_integer(c, 2, "sample_rate"), constant_scalar(c, 3, "lower_edge_hertz"),
                                 constant_scalar(c, 4, "upper_edge_hertz"), output_datatype(c)));
}

void require_float(const ConvertContext& c, const relay_ir::TensorTypeNode& t, const std::string& what) {
  if (!t.dtype.is_float()) c.error(what + " must be float16, float32 or float64, got " + t.dtype.str());
}

// The coefficients of a DFT of `length` points over the first `n` samples (zero-padded or cut
// to `length`) of a signal of `parts` (1: real, 2: real and imaginary), yielding `bins` bins:
// put(part, sample, column, value) for column k (the real part of bin k) and bins + k (its
// imaginary part). e^(sign i theta), sign -1 forward and +1 inverse (which also scales by
// 1 / length); `window` (or empty) weighs the samples.
template <typename Put>
void dft_coefficients(int64_t parts, int64_t n, int64_t length, int64_t bins, bool inverse,
                      const std::vector<double>& window, Put put) {
  double sign = inverse ? 1 : -1, scale = inverse ? 1.0 / static_cast<double>(length) : 1.0;
  for (int64_t s = 0; s < std::min(n, length); ++s) {
    double ws = (window.empty() ? 1.0 : window[s]) * scale;
    for (int64_t k = 0; k < bins; ++k) {
      // k * s modulo length first: the angle stays below 2 pi, where cos and sin are exact.
      double theta = 2 * kPi * static_cast<double>((k * s) % length) / static_cast<double>(length);
      double cs = std::cos(theta) * ws, sn = sign * std::sin(theta) * ws;
      put(0, s, k, cs);
      put(0, s, bins + k, sn);
      if (parts == 2) {
        put(1, s, k, -sn);
        put(1, s, bins + k, cs);
      }
    }
  }
}

// A direct DFT is a dense [samples, bins] matrix: refuse sizes whose matrix is unreasonable.
void check_dft_size(const ConvertContext& c, int64_t parts, int64_t n, int64_t bins) {
  constexpr int64_t kMaxCoefficients = int64_t{1} << 26;
  if (parts * n * 2 * bins > kMaxCoefficients)
    c.error("a DFT of " + std::to_string(n) + " samples into " + std::to_string(bins) + " bins needs a " +
            std::to_string(parts * n) + " x " + std::to_string(2 * bins) +
            " coefficient matrix (Tessera computes DFTs as matrix products); the largest supported has " +
            std::to_string(kMaxCoefficients) + " entries");
}

// The coefficients of an inverse DFT of `length` points whose input holds the first `n` bins of
// a spectrum with conjugate symmetry (X[length - k] = X[k]*, numpy's irfft), of which bins past
// length / 2 are not read: put(part, bin, sample, value), the output real. The bins between 0 and
// length / 2 stand for their mirror images too.
template <typename Put>
void inverse_real_dft_coefficients(int64_t n, int64_t length, Put put) {
  for (int64_t k = 0; k < std::min(n, length / 2 + 1); ++k) {
    const bool mirrored = k != 0 && 2 * k != length;
    const double scale = (mirrored ? 2.0 : 1.0) / static_cast<double>(length);
    for (int64_t s = 0; s < length; ++s) {
      double theta = 2 * kPi * static_cast<double>((k * s) % length) / static_cast<double>(length);
      put(0, k, s, std::cos(theta) * scale);
      put(1, k, s, -std::sin(theta) * scale);
    }
  }
}

// The DFT of `x` along `axis` as one matrix product. x ends in a dimension of 1 (real) or 2
// (complex); the transform has `length` points and yields `length` bins, or length / 2 + 1 when
// onesided. The result has the bins at `axis` and (real, imaginary) last. Onesided and inverse,
// it is the real signal of `length` samples whose spectrum's first bins x holds (IRFFT), with its
// samples at `axis` and a last dimension of 1.
Expr dft(const ConvertContext& c, const Expr& x, int64_t axis, int64_t length, bool inverse, bool onesided) {
  const auto& t = c.input_type(0);
  const relay_ir::Shape& shape = t.shape;
  int64_t rank = static_cast<int64_t>(shape.size()), n = shape[axis], parts = shape.back();
  const bool real_output = onesided && inverse;
  if (onesided && !inverse && parts != 1) c.error("a onesided forward DFT takes a real input (last dimension 1)");
  if (real_output && parts != 2) c.error("a onesided inverse DFT takes a complex input (last dimension 2)");
  // Columns: the real then the imaginary part of each bin, or the samples of a real output.
  int64_t bins = onesided && !inverse ? length / 2 + 1 : length, columns = real_output ? length : 2 * bins;
  check_dft_size(c, parts, n, columns / 2);
  NDArray w = NDArray::empty({parts * n, columns}, t.dtype);
  std::memset(w.data(), 0, w.nbytes());
  auto put = [&](int64_t part, int64_t s, int64_t col, double v) { store_element(w, (part * n + s) * columns + col, v); };
  if (real_output) inverse_real_dft_coefficients(n, length, put);
  else dft_coefficients(parts, n, length, bins, inverse, {}, put);
  // [rest..., parts, n] -> [rest..., parts * n] @ w -> [rest..., 2, bins] -> bins back at axis.
  std::vector<int64_t> perm;
  std::vector<tensor_ir::Expr> rest;
  for (int64_t d = 0; d < rank - 1; ++d)
    if (d != axis) {
      perm.push_back(d);
      rest.push_back(shape.dim(d));
    }
  perm.push_back(rank - 1);
  perm.push_back(axis);
  Expr moved = c.call("transpose", {x}, {{"perm", perm}});
  std::vector<tensor_ir::Expr> flat = rest, split = rest;
  flat.emplace_back(parts * n);
  split.emplace_back(int64_t{real_output ? 1 : 2});
  split.emplace_back(real_output ? length : bins);
  Expr product =
      c.call("matmul", {c.call("reshape", {moved}, {{"shape", relay_ir::Shape(flat)}}), relay_ir::constant(w)});
  Expr unflat = c.call("reshape", {product}, {{"shape", relay_ir::Shape(split)}});
  std::vector<int64_t> back;
  for (int64_t d = 0, r = 0; d < rank - 1; ++d) back.push_back(d == axis ? rank - 1 : r++);
  back.push_back(rank - 2);
  return c.call("transpose", {unflat}, {{"perm", back}});
}

int64_t complex_parts(const ConvertContext& c, const relay_ir::TensorTypeNode& t, const std::string& what) {
  if (t.ndim() < 2 || (t.shape.back() != 1 && t.shape.back() != 2))
    c.error(what + " must end in a dimension of 1 (real) or 2 (complex), got shape " + runtime::shape_str(t.shape));
  return t.shape.back();
}

int64_t flag(const ConvertContext& c, const char* name, int64_t fallback) {
  int64_t v = c.attr_int(name, fallback);
  if (v != 0 && v != 1) c.error(std::string(name) + " must be 0 or 1, got " + std::to_string(v));
  return v;
}

// Opset 17 takes the axis as an attribute (default 1), opset 20 as a third input (default -2, the
// last axis of the signal).
Expr convert_dft(ConvertContext& c) {
  const bool axis_input = c.opset() >= 20;
  if (axis_input) c.check_attrs({"inverse", "onesided"});
  else c.check_attrs({"axis", "inverse", "onesided"});
  const auto& x = c.input_type(0);
  require_float(c, x, "the input");
  complex_parts(c, x, "the input");
  int64_t rank = static_cast<int64_t>(x.ndim());
  int64_t axis = axis_input ? (c.has_input(2) ? constant_integer(c, 2, "axis") : -2) : c.attr_int("axis", 1);
  if (axis < -rank || axis > rank - 2 || axis == -1)
    c.error("axis " + std::to_string(axis) + " is out of range for an input of rank " + std::to_string(rank) +
            " (the last dimension holds the real and imaginary parts)");
  if (axis < 0) axis += rank;
  const bool inverse = flag(c, "inverse", 0) == 1, onesided = flag(c, "onesided", 0) == 1;
  // An inverse of a onesided spectrum of n bins is, by default, a signal of 2 (n - 1) samples.
  int64_t length = c.has_input(1) ? constant_integer(c, 1, "dft_length")
                                  : onesided && inverse ? 2 * (x.shape[axis] - 1) : x.shape[axis];
  if (length < 1) c.error("dft_length must be positive, got " + std::to_string(length));
  return dft(c, c.input(0), axis, length, inverse, onesided);
}

// STFT of a constant frame_step: frame f's bins are a dot product of the samples from
// f * stride with the (windowed) coefficients `w` ([2 * bins, parts, frame]): a 1-D convolution of
// that stride with 2 * bins filters, which reads the frames in place.
Expr stft_by_convolution(ConvertContext& c, const NDArray& w, const Expr& runtime_window, int64_t stride,
                         const tensor_ir::Expr& frames) {
  const int64_t bins = w.shape()[0] / 2, frame = w.shape()[2];
  Expr weight = relay_ir::constant(w);
  if (runtime_window.defined())
    weight =
        c.call("mul", {weight, c.call("reshape", {runtime_window}, {{"shape", std::vector<int64_t>{1, 1, frame}}})});
  Expr channels_first = c.call("transpose", {c.input(0)}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  Expr conv = c.call("conv", {channels_first, weight}, {{"strides", std::vector<int64_t>{stride}}});
  Expr split = c.call("reshape", {conv},
                      {{"shape", relay_ir::Shape({c.input_type(0).shape.dim(0), tensor_ir::Expr(int64_t{2}),
                                                  tensor_ir::Expr(bins), frames})}});
  return c.call("transpose", {split}, {{"perm", std::vector<int64_t>{0, 3, 2, 1}}});
}

// STFT of a frame_step given at run time (a size): the frames gathered ([batch, frames, frame,
// parts]; sample s of frame f at f * step + s) times the coefficients `w` ([frame * parts,
// 2 * bins]).
Expr stft_by_gathered_frames(ConvertContext& c, const NDArray& w, const Expr& runtime_window, int64_t frame,
                             const tensor_ir::Expr& step, const tensor_ir::Expr& frames) {
  const int64_t bins = w.shape()[1] / 2;
  const runtime::DataType i64 = runtime::kInt64;
  Expr starts = c.call("arange",
                       {relay_ir::scalar(0.0, i64),
                        c.call("shape_values", {}, shape_values_attrs(DimValue::scalar_of(step), "frame_step"))},
                       {{"shape", relay_ir::Shape(std::vector<tensor_ir::Expr>{frames})}});
  NDArray offsets = NDArray::empty({1, frame}, i64);
  for (int64_t s = 0; s < frame; ++s) offsets.data_as<int64_t>()[s] = s;
  Expr positions =
      c.call("add", {c.call("reshape", {starts}, {{"shape", relay_ir::Shape({frames, tensor_ir::Expr(int64_t{1})})}}),
                     relay_ir::constant(offsets)});
  Expr gathered = c.call("take", {c.input(0), positions}, {{"axis", int64_t{1}}});
  if (runtime_window.defined())
    gathered =
        c.call("mul", {gathered, c.call("reshape", {runtime_window}, {{"shape", std::vector<int64_t>{frame, 1}}})});
  const tensor_ir::Expr batch = c.input_type(0).shape.dim(0);
  Expr flat =
      c.call("reshape", {gathered}, {{"shape", relay_ir::Shape({batch, frames, tensor_ir::Expr(w.shape()[0])})}});
  Expr product = c.call("matmul", {flat, relay_ir::constant(w)});
  Expr split =
      c.call("reshape", {product},
             {{"shape", relay_ir::Shape({batch, frames, tensor_ir::Expr(int64_t{2}), tensor_ir::Expr(bins)})}});
  return c.call("transpose", {split}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
}

// The signal's batch and length may be symbolic, and frame_step a value given at run time.
Expr convert_stft(ConvertContext& c) {
  c.check_attrs({"onesided"});
  const auto& signal = c.input_type(0);
  require_float(c, signal, "the signal");
  if (signal.ndim() != 3) c.error("the signal must be [batch, length, 1 or 2], got shape " + signal.shape.str());
  complex_parts(c, signal, "the signal");
  const std::vector<tensor_ir::Expr> steps = c.dim_ints(1, "frame_step");
  if (steps.size() != 1) c.error("frame_step must be a scalar, got " + std::to_string(steps.size()) + " values");
  const tensor_ir::Expr step = steps[0];
  if (const int64_t* v = tensor_ir::as_const_int(step); v && *v < 1)
    c.error("frame_step must be positive, got " + std::to_string(*v));
  int64_t frame = -1;
  if (c.has_input(3)) frame = constant_integer(c, 3, "frame_length");
  std::vector<double> window;
  Expr runtime_window;
  if (c.has_input(2)) {
    const auto& w = c.input_type(2);
    if (w.ndim() != 1 || w.dtype != signal.dtype || !w.shape.is_static())
      c.error("window must be 1-D of the signal's dtype " + signal.dtype.str() + " and a constant length, got " +
              w.dtype.str() + w.shape.str());
    if (frame >= 0 && frame != w.shape[0])
      c.error("frame_length " + std::to_string(frame) + " differs from the window's length " +
              std::to_string(w.shape[0]));
    frame = w.shape[0];
    if (auto v = c.try_constant_input(2)) {
      for (int64_t i = 0; i < frame; ++i) window.push_back(element_as_double(*v, i));
    } else {
      runtime_window = c.input(2);
    }
  }
  if (frame < 0) c.error("either window or frame_length must be given");
  const tensor_ir::Expr length = signal.shape.dim(1);
  if (const int64_t* n = tensor_ir::as_const_int(length); frame < 1 || (n && frame > *n))
    c.error("the frame length " + std::to_string(frame) + " must be in [1, " + tensor_ir::to_string(length) +
            "] (the signal's length)");
  int64_t parts = signal.shape[2], bins = flag(c, "onesided", 1) == 1 ? frame / 2 + 1 : frame;
  check_dft_size(c, parts, frame, bins);
  // The (windowed) coefficients in the layout each form reads, (part, sample, column) at `at`.
  auto coefficients = [&](std::vector<int64_t> shape, auto at) {
    NDArray w = NDArray::empty(shape, signal.dtype);
    dft_coefficients(parts, frame, frame, bins, false, window,
                     [&](int64_t part, int64_t s, int64_t col, double v) { store_element(w, at(part, s, col), v); });
    return w;
  };
  const tensor_ir::Expr frames =
      tensor_ir::arith::simplify(tensor_ir::floordiv(length - tensor_ir::Expr(frame), step) + tensor_ir::Expr(1));
  if (const int64_t* stride = tensor_ir::as_const_int(step)) {
    NDArray w = coefficients({2 * bins, parts, frame},
                             [&](int64_t part, int64_t s, int64_t col) { return (col * parts + part) * frame + s; });
    return stft_by_convolution(c, w, runtime_window, *stride, frames);
  }
  NDArray w = coefficients({frame * parts, 2 * bins},
                           [&](int64_t part, int64_t s, int64_t col) { return (s * parts + part) * 2 * bins + col; });
  return stft_by_gathered_frames(c, w, runtime_window, frame, step, frames);
}

template <typename F>
Converter one(F f) {
  return [f](ConvertContext& c) { return std::vector<Expr>{f(c)}; };
}

}  // namespace

void register_extra_signal_converters(ConverterTable& t) {
  t.add("HannWindow", one([](ConvertContext& c) { return cosine_window(c, 0.5, 0.5, 0); }), {0});
  t.add("HammingWindow", one([](ConvertContext& c) { return cosine_window(c, 25.0 / 46, 21.0 / 46, 0); }), {0});
  t.add("BlackmanWindow", one([](ConvertContext& c) { return cosine_window(c, 0.42, 0.5, 0.08); }), {0});
  t.add("MelWeightMatrix", one(mel_weight_matrix), {0, 1, 2, 3, 4});
  t.add("DFT", one(convert_dft), {1, 2});
  t.add("STFT", one(convert_stft), {1, 3});
}

}  // namespace tessera::frontend::onnx
