// The OpenCL entry points the runtime uses, looked up with dlsym in libOpenCL.so.1 (the ICD
// loader) when an OpenCL device is first asked for: the runtime never links OpenCL, so it starts
// on machines without it. The Khronos headers give the types only.
#pragma once
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>

#include <string>

namespace tessera::runtime {

struct OpenCLLibrary {
#define TESSERA_OPENCL_FUNCTIONS(X)                                                                                    \
  X(clGetPlatformIDs)                                                                                                  \
  X(clGetPlatformInfo)                                                                                                 \
  X(clGetDeviceIDs)                                                                                                    \
  X(clGetDeviceInfo) X(clCreateContext) X(clReleaseContext) X(clCreateCommandQueueWithProperties)                      \
      X(clReleaseCommandQueue) X(clCreateBuffer) X(clReleaseMemObject) X(clEnqueueWriteBuffer) X(clEnqueueReadBuffer)  \
          X(clEnqueueCopyBuffer) X(clEnqueueFillBuffer) X(clFinish) X(clCreateProgramWithSource)                       \
              X(clCreateProgramWithBinary) X(clGetProgramInfo) X(clBuildProgram) X(clGetProgramBuildInfo)              \
                  X(clReleaseProgram) X(clCreateKernel) X(clReleaseKernel) X(clSetKernelArg) X(clEnqueueNDRangeKernel) \
                      X(clEnqueueMarkerWithWaitList) X(clGetEventProfilingInfo) X(clWaitForEvents) X(clReleaseEvent)
#define TESSERA_DECLARE(name) decltype(&::name) name = nullptr;
  TESSERA_OPENCL_FUNCTIONS(TESSERA_DECLARE)
#undef TESSERA_DECLARE
};

// The loaded entry points. Throws "no OpenCL driver found (libOpenCL.so.1 could not be loaded:
// ...)" or names the entry point the library lacks (an ICD loader older than OpenCL 2.0).
const OpenCLLibrary& opencl_library();

// "CL_INVALID_VALUE (-30)": OpenCL's name of an error code.
std::string opencl_error_str(cl_int code);

}  // namespace tessera::runtime
