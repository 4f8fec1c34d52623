// Reading and writing numpy's .npy files (format 1.0-3.0, little-endian, C order), so that
// command-line tools and deployed programs exchange tensors with Python without a library.
#pragma once
#include <string>

#include "runtime/ndarray.h"

namespace tessera::runtime {

// Throws tessera::Error naming the file for anything that is not a C-ordered, little-endian
// array of a supported dtype.
NDArray load_npy(const std::string& path);
// Writes `array` (copied from its device first, when it is on one) as a .npy file.
void save_npy(const std::string& path, const NDArray& array);

}  // namespace tessera::runtime
