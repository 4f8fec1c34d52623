// The parts of the extra family's ONNX converters (frontend/onnx/ops_extra*.cc), which
// register_extra_converters (ops_extra.cc) calls in turn.
#pragma once
#include "frontend/onnx/converter.h"

namespace tessera::frontend::onnx {

// ops_extra_signal.cc: HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix, DFT, STFT.
void register_extra_signal_converters(ConverterTable& t);
// ops_extra_rnn.cc: RNN, GRU, LSTM.
void register_extra_rnn_converters(ConverterTable& t);

}  // namespace tessera::frontend::onnx
