/* The Tessera runtime's C API: load a model exported by Tessera (lib.export("model.so") or
 * `tessera compile model.onnx -o model.so`), describe its inputs and outputs, run it.
 * Link libtessera_runtime (shared or static); it needs only libc, libm, libstdc++ and pthreads.
 *
 * Every function that can fail returns a TesseraStatus; on failure tessera_last_error() gives
 * a message naming the problem (the file, the input, the expected shape), valid on the calling
 * thread until its next call into this API. A module is not safe to use from two threads at
 * once; separate modules are independent (they share the runtime's thread pool). */
#ifndef TESSERA_RUNTIME_H_
#define TESSERA_RUNTIME_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  TESSERA_OK = 0,
  TESSERA_ERROR_INVALID_ARGUMENT = 1, /* a null pointer, an index out of range, an unknown name */
  TESSERA_ERROR_INPUT_MISMATCH = 2,   /* an input of the wrong shape, dtype or size */
  TESSERA_ERROR_LOAD = 3,             /* not a module, truncated, corrupt, too new, wrong CPU */
  TESSERA_ERROR_RUN = 4,              /* an input not set, a kernel that failed */
  TESSERA_ERROR_IO = 5                /* a file that cannot be read or written (.npy) */
} TesseraStatus;

typedef enum {
  TESSERA_FLOAT16 = 0,
  TESSERA_FLOAT32 = 1,
  TESSERA_FLOAT64 = 2,
  TESSERA_INT8 = 3,
  TESSERA_INT16 = 4,
  TESSERA_INT32 = 5,
  TESSERA_INT64 = 6,
  TESSERA_UINT8 = 7,
  TESSERA_UINT16 = 8,
  TESSERA_UINT32 = 9,
  TESSERA_UINT64 = 10,
  TESSERA_BOOL = 11 /* one byte per element */
} TesseraDType;

/* A dense, row-major tensor: memory described by the caller (set_input), or memory the runtime
 * owns and lends (output, array_view). */
typedef struct {
  void* data;
  TesseraDType dtype;
  int32_t ndim;
  const int64_t* shape;
} TesseraTensor;

/* What a module's input or output is; the strings and the shape belong to the module. In a module
 * of symbolic sizes (a dynamic batch) a symbolic dimension is -1 and nbytes 0: an input takes
 * any size the module's shapes allow, set with the data (TesseraTensor's shape), and an output's
 * shape comes with tessera_module_get_output after a run. A module holding a program (a model
 * with control flow or data-dependent shapes, whose inputs and outputs are tensors) describes
 * what the model declares: an output of undeclared rank has ndim -1 and no shape, one of
 * undeclared element type fails output_info. */
typedef struct {
  const char* name;
  TesseraDType dtype;
  int32_t ndim;
  const int64_t* shape;
  size_t nbytes;
} TesseraTensorInfo;

typedef struct TesseraModule TesseraModule;
typedef struct TesseraArray TesseraArray;

/* The message of this thread's last failure ("" if none). */
const char* tessera_last_error(void);
const char* tessera_dtype_name(TesseraDType dtype); /* "float32", ...; "unknown" if invalid */
size_t tessera_dtype_size(TesseraDType dtype);      /* bytes per element; 0 if invalid */

/* Validates the file completely (format, version, checksums, this CPU's features) before any
 * of its code runs. *out is set on success; free it with tessera_module_free. A module built for
 * a CPU runs on the CPU; one built for opencl or cuda on the first device of its kind, where its
 * weights are uploaded now (a missing driver or device fails here, TESSERA_ERROR_LOAD). */
TesseraStatus tessera_module_load(const char* path, TesseraModule** out);
/* The same on `device`: "cpu", "opencl", "cuda", optionally with ":ID" ("cuda:1"). A device of
 * another kind than the module's code is refused. */
TesseraStatus tessera_module_load_on(const char* path, const char* device, TesseraModule** out);
void tessera_module_free(TesseraModule* module);
/* The target string the module was compiled for (owned by the module). */
const char* tessera_module_target(const TesseraModule* module);
/* Where it runs: "cpu(0)", "opencl(0)", "cuda(1)" (owned by the module). Inputs are given and
 * outputs read in host memory wherever it runs: a device module's inputs are copied to the
 * device by set_input, its outputs to the host by run. */
const char* tessera_module_device(const TesseraModule* module);

TesseraStatus tessera_module_num_inputs(const TesseraModule* module, int32_t* count);
TesseraStatus tessera_module_num_outputs(const TesseraModule* module, int32_t* count);
TesseraStatus tessera_module_input_info(const TesseraModule* module, int32_t index, TesseraTensorInfo* info);
TesseraStatus tessera_module_output_info(const TesseraModule* module, int32_t index, TesseraTensorInfo* info);
TesseraStatus tessera_module_input_index(const TesseraModule* module, const char* name, int32_t* index);

/* Sets input `index` from `value`, which must match its shape and dtype (the message names the
 * input otherwise). TESSERA_COPY copies the data now; TESSERA_BORROW uses it in place (when it
 * is 64-byte aligned; otherwise it is copied) and the caller keeps it alive and unchanged until
 * the input is set again or the module is freed. */
typedef enum { TESSERA_COPY = 0, TESSERA_BORROW = 1 } TesseraInputMode;
TesseraStatus tessera_module_set_input(TesseraModule* module, int32_t index, const TesseraTensor* value,
                                       TesseraInputMode mode);
TesseraStatus tessera_module_run(TesseraModule* module);
/* Output `index` as a tensor whose memory the module owns: valid until the next run or free. */
TesseraStatus tessera_module_get_output(const TesseraModule* module, int32_t index, TesseraTensor* out);
/* Copies output `index` into `dst`, which holds `nbytes` (at least the output's size). */
TesseraStatus tessera_module_copy_output(const TesseraModule* module, int32_t index, void* dst, size_t nbytes);

/* numpy .npy files (little-endian, C order), so programs exchange tensors with Python. */
TesseraStatus tessera_npy_load(const char* path, TesseraArray** out);
TesseraStatus tessera_npy_save(const char* path, const TesseraTensor* tensor);
/* A view of the array's memory (64-byte aligned), valid until tessera_array_free. */
TesseraStatus tessera_array_view(const TesseraArray* array, TesseraTensor* out);
void tessera_array_free(TesseraArray* array);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_RUNTIME_H_ */
