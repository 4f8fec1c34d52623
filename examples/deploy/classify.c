/* Classifies an image with a model compiled by Tessera, using the runtime alone (C API):
 *
 *   classify [-d DEVICE] model.so input.npy [scores.npy]
 *
 * loads the module (validated before any of its code runs) on DEVICE (for a model compiled for
 * opencl or cuda: "opencl", "cuda:1"; by default the CPU or the first device of the module's
 * kind), reads the input tensor from a
 * numpy .npy file with the runtime's reader, runs the model and prints the five classes with
 * the highest scores; given a third file, also writes all the scores there (for numpy), so
 * another build of the model can be compared in full. Build: see README.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera_runtime.h"

static int report(const char* what) {
  fprintf(stderr, "classify: %s: %s\n", what, tessera_last_error());
  return 1;
}

int main(int argc, char** argv) {
  const char* device = NULL;
  if (argc > 2 && strcmp(argv[1], "-d") == 0) {
    device = argv[2];
    argc -= 2;
    argv += 2;
  }
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: classify [-d DEVICE] model.so input.npy [scores.npy]\n");
    return 2;
  }
  TesseraModule* model = NULL;
  TesseraArray* input = NULL;
  int status = 1;
  TesseraStatus loaded = device ? tessera_module_load_on(argv[1], device, &model) : tessera_module_load(argv[1], &model);
  if (loaded != TESSERA_OK) return report("loading the model");
  TesseraTensor x, scores;
  if (tessera_npy_load(argv[2], &input) != TESSERA_OK || tessera_array_view(input, &x) != TESSERA_OK) {
    report("reading the input");
    goto done;
  }
  /* Borrowed, not copied: the array outlives the run. */
  if (tessera_module_set_input(model, 0, &x, TESSERA_BORROW) != TESSERA_OK) {
    report("setting the input");
    goto done;
  }
  if (tessera_module_run(model) != TESSERA_OK) {
    report("running the model");
    goto done;
  }
  if (tessera_module_get_output(model, 0, &scores) != TESSERA_OK) {
    report("reading the output");
    goto done;
  }
  if (scores.dtype != TESSERA_FLOAT32) {
    fprintf(stderr, "classify: expected float32 scores, the model gives %s\n", tessera_dtype_name(scores.dtype));
    goto done;
  }
  if (argc == 4 && tessera_npy_save(argv[3], &scores) != TESSERA_OK) {
    report("writing the scores");
    goto done;
  }
  int64_t n = 1;
  for (int32_t d = 0; d < scores.ndim; ++d) n *= scores.shape[d];
  const float* s = (const float*)scores.data;
  /* The top five by repeated selection: n is a few thousand classes at most. */
  int64_t top[5];
  int k = 0;
  for (; k < 5 && k < n; ++k) {
    int64_t best = -1;
    for (int64_t i = 0; i < n; ++i) {
      int taken = 0;
      for (int j = 0; j < k; ++j) taken |= top[j] == i;
      if (!taken && (best < 0 || s[i] > s[best])) best = i;
    }
    top[k] = best;
  }
  printf("top-%d of %lld classes:\n", k, (long long)n);
  for (int j = 0; j < k; ++j) printf("%d. class %lld score %.6f\n", j + 1, (long long)top[j], s[top[j]]);
  status = 0;
done:
  tessera_array_free(input);
  tessera_module_free(model);
  return status;
}
