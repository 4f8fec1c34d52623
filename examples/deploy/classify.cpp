// Classifies an image with a model compiled by Tessera, using the runtime alone (C++ wrapper):
//
//   classify_cpp [-d DEVICE] model.so input.npy
//
// prints the five classes with the highest scores; DEVICE ("opencl", "cuda:1") is where a model
// compiled for opencl or cuda runs (by default the first device of its kind). Build: see README.md.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "tessera_runtime.hpp"

int main(int argc, char** argv) {
  std::string device;
  if (argc > 2 && std::strcmp(argv[1], "-d") == 0) {
    device = argv[2];
    argc -= 2;
    argv += 2;
  }
  if (argc != 3) {
    std::fprintf(stderr, "usage: classify_cpp [-d DEVICE] model.so input.npy\n");
    return 2;
  }
  try {
    tessera::rt::Module model(argv[1], device);
    tessera::rt::Array input = tessera::rt::Array::load_npy(argv[2]);
    model.set_input(0, input.tensor(), TESSERA_BORROW);  // the array outlives the run
    model.run();
    std::vector<float> scores = model.output<float>(0);
    std::vector<size_t> order(scores.size());
    std::iota(order.begin(), order.end(), 0);
    const size_t k = std::min<size_t>(5, order.size());
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](size_t a, size_t b) { return scores[a] > scores[b]; });
    std::printf("top-%zu of %zu classes:\n", k, scores.size());
    for (size_t j = 0; j < k; ++j) std::printf("%zu. class %zu score %.6f\n", j + 1, order[j], scores[order[j]]);
  } catch (const tessera::rt::Error& e) {
    std::fprintf(stderr, "classify: %s\n", e.what());
    return 1;
  }
  return 0;
}
