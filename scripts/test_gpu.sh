#!/usr/bin/env bash
# The CUDA half of the GPU tests, for a machine with an NVIDIA GPU and its driver (CI has neither:
# there CUDA code is only compiled by NVRTC and checked by ptxas). Builds Tessera as test.sh does,
# refuses to go on without a CUDA device, then runs on it: the runtime's and the targets' CUDA
# tests, the te kernels and operators (tests/python/test_gpu_kernels.py, test_te_ops.py' GPU
# schedules, test_device.py, test_dlpack.py), the models (test_gpu_models.py), tuning on the device
# (test_gpu_tuning.py), the GEMM example and the GPU benchmark with a short tuning session.
#   scripts/test_gpu.sh [GEMM_SIZE]   (4096 by default)
set -euo pipefail
source "$(dirname "$0")/setup.sh"
ensure_packages
build_tessera
export TESSERA_BUILD_DIR="$TESSERA_BUILD"
"$TESSERA_PYTHON" -c "import tessera, sys; d = tessera.device('cuda'); sys.exit(0 if d.exists else 'no CUDA device here')"
ctest --test-dir "$TESSERA_BUILD" --output-on-failure -R 'CUDA|Cuda'
"$TESSERA_PYTHON" -m pytest -q -rs "$TESSERA_ROOT/tests/python/test_gpu_kernels.py" "$TESSERA_ROOT/tests/python/test_device.py" \
  "$TESSERA_ROOT/tests/python/test_dlpack.py" "$TESSERA_ROOT/tests/python/test_te_targets_source.py" \
  "$TESSERA_ROOT/tests/python/test_te_ops.py" "$TESSERA_ROOT/tests/python/test_gpu_models.py" \
  "$TESSERA_ROOT/tests/python/test_gpu_tuning.py" -k "gpu or cuda or device or dlpack or source"
PYTHONPATH="$TESSERA_BUILD/python" "$TESSERA_PYTHON" "$TESSERA_ROOT/examples/gemm_gpu.py" --target cuda --size 1024
PYTHONPATH="$TESSERA_BUILD/python" "$TESSERA_PYTHON" "$TESSERA_ROOT/benchmarks/gpu.py" --target cuda --gemm "${1:-4096}" \
  --models resnet50 mobilenet_v2 transformer --tune 200 --db "$TESSERA_BUILD/gpu_tuning.db"
