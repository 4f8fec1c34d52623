// ONNX's spectral operators whose sizes are values given at run time (MelWeightMatrix's bin count
// and DFT length, STFT's frame length): no compiled kernel is sized ahead of time for them, so the
// program executor computes them on the host, on CPU arrays, between compiled stages. Where the
// model gives those values as constants, the importer compiles the operators instead (the mel
// matrix then a constant of the graph, computed by mel_weight_matrix here). Semantics are ONNX's
// reference implementation's; bad input throws tessera::Error naming the operator.
#pragma once
#include <cstdint>
#include <optional>

#include "runtime/ndarray.h"

namespace tessera::runtime {

// MelWeightMatrix: [dft_length / 2 + 1, num_mel_bins] of `dtype`, triangles over the spectrogram's
// bins at edges spaced evenly on the mel scale from lower_edge_hertz to upper_edge_hertz. Throws
// naming a count, length or rate below 1, or edges outside 0 <= lower <= upper.
NDArray mel_weight_matrix(int64_t num_mel_bins, int64_t dft_length, int64_t sample_rate, double lower_edge_hertz,
                          double upper_edge_hertz, DataType dtype);

// STFT of `signal` [batch, length, 1 or 2 (real, imaginary)], frames of `frame_length` samples
// every `frame_step`, each times `window` where given (its length the frame length): [batch,
// frames, bins, 2], frames = (length - frame_length) / frame_step + 1, bins frame_length / 2 + 1
// where `onesided`, else frame_length. Sums in double. Throws naming a step or length out of range.
NDArray stft(const NDArray& signal, int64_t frame_step, const std::optional<NDArray>& window, int64_t frame_length,
             bool onesided);

}  // namespace tessera::runtime
