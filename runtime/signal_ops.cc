#include "runtime/signal_ops.h"

#include <cmath>
#include <string>
#include <vector>

#include "runtime/element.h"
#include "runtime/error.h"

namespace tessera::runtime {

namespace {

constexpr double kPi = 3.14159265358979323846;

void require_host_float(const NDArray& a, const std::string& what) {
  if (a.device().type != DeviceType::CPU) fail(what, " must be on the CPU, got an array on ", a.device().str());
  if (!a.dtype().is_float()) fail(what, " must be float16, float32 or float64, got ", a.dtype().str());
}

}  // namespace

NDArray mel_weight_matrix(int64_t bins, int64_t dft_length, int64_t sample_rate, double lower, double upper,
                          DataType dtype) {
  if (bins < 1 || dft_length < 1 || sample_rate < 1)
    fail("MelWeightMatrix: num_mel_bins, dft_length and sample_rate must be positive, got ", bins, ", ", dft_length,
         ", ", sample_rate);
  if (!dtype.is_float()) fail("MelWeightMatrix: output_datatype must be a float type, got ", dtype.str());
  if (!(lower >= 0 && lower <= upper))
    fail("MelWeightMatrix: the edges must satisfy 0 <= lower_edge_hertz <= upper_edge_hertz, got ", lower, " and ",
         upper);
  auto to_mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  const double low_mel = to_mel(lower), step = (to_mel(upper) - low_mel) / static_cast<double>(bins + 2);
  // The spectrogram bin of each of the bins + 2 edge frequencies, spaced evenly on the mel scale.
  std::vector<int64_t> edge(bins + 2);
  for (int64_t i = 0; i < bins + 2; ++i) {
    const double hz = 700 * (std::pow(10.0, (low_mel + static_cast<double>(i) * step) / 2595) - 1);
    edge[i] =
        static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate)));
  }
  const int64_t rows = dft_length / 2 + 1;
  NDArray out = NDArray::empty({rows, bins}, dtype);
  for (int64_t i = 0; i < rows * bins; ++i) store_element(out, i, 0);
  // Triangles rising from edge i to edge i + 1 and falling to edge i + 2; rows past the
  // spectrogram (an upper edge above the Nyquist frequency) are left out.
  auto put = [&](int64_t row, int64_t col, double v) {
    if (row >= 0 && row < rows) store_element(out, row * bins + col, v);
  };
  for (int64_t i = 0; i < bins; ++i) {
    const int64_t left = edge[i], center = edge[i + 1], right = edge[i + 2];
    if (center == left) {
      put(center, i, 1);
    } else {
      for (int64_t j = left; j <= center; ++j)
        put(j, i, static_cast<double>(j - left) / static_cast<double>(center - left));
    }
    for (int64_t j = center; j < right; ++j)
      put(j, i, static_cast<double>(right - j) / static_cast<double>(right - center));
  }
  return out;
}

NDArray stft(const NDArray& signal, int64_t frame_step, const std::optional<NDArray>& window, int64_t frame_length,
             bool onesided) {
  require_host_float(signal, "STFT: the signal");
  if (signal.ndim() != 3 || (signal.shape()[2] != 1 && signal.shape()[2] != 2))
    fail("STFT: the signal must be [batch, length, 1 or 2], got shape ", signal.shape_str());
  const int64_t batch = signal.shape()[0], length = signal.shape()[1], parts = signal.shape()[2];
  if (frame_step < 1) fail("STFT: frame_step must be positive, got ", frame_step);
  if (frame_length < 1 || frame_length > length)
    fail("STFT: the frame length ", frame_length, " must be in [1, ", length, "] (the signal's length)");
  if (window) {
    require_host_float(*window, "STFT: the window");
    if (window->ndim() != 1 || window->shape()[0] != frame_length)
      fail("STFT: the window must be 1-D of the frame length ", frame_length, ", got shape ", window->shape_str());
  }
  const int64_t frames = (length - frame_length) / frame_step + 1;
  const int64_t bins = onesided ? frame_length / 2 + 1 : frame_length;
  // exp(-2 pi i m / L) for each m = k n mod L (the angle reduced exactly), the same for every frame.
  std::vector<double> cosine(frame_length), sine(frame_length);
  for (int64_t m = 0; m < frame_length; ++m) {
    const double angle = -2 * kPi * static_cast<double>(m) / static_cast<double>(frame_length);
    cosine[m] = std::cos(angle);
    sine[m] = std::sin(angle);
  }
  NDArray out = NDArray::empty({batch, frames, bins, 2}, signal.dtype());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < frames; ++f)
      for (int64_t k = 0; k < bins; ++k) {
        double re = 0, im = 0;
        for (int64_t n = 0; n < frame_length; ++n) {
          const int64_t at = (b * length + f * frame_step + n) * parts, m = (k * n) % frame_length;
          const double w = window ? element_as_double(*window, n) : 1.0;
          const double x = element_as_double(signal, at) * w,
                       y = parts == 2 ? element_as_double(signal, at + 1) * w : 0;
          re += x * cosine[m] - y * sine[m];
          im += x * sine[m] + y * cosine[m];
        }
        const int64_t o = ((b * frames + f) * bins + k) * 2;
        store_element(out, o, re);
        store_element(out, o + 1, im);
      }
  return out;
}

}  // namespace tessera::runtime
