#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: the GoogleTest suites through ctest,
# then the Python tests twice: with Debian's python3 and numpy 1 on the build tree's package, and
# in build/venv, with numpy 2, on the package pip installed there.
#   --sanitize[=address,undefined]  instead: ctest and pytest built with ASan+UBSan (build-asan)
#   --sanitize=thread               instead: the thread pool and database concurrency tests under
#                                   ThreadSanitizer (build-tsan)
# (scripts/sanitizers.sh; README, "Testing": how often to run these.)
set -euo pipefail
source "$(dirname "$0")/setup.sh"

sanitize=""
for arg in "$@"; do
  case "$arg" in
    --sanitize) sanitize=address,undefined ;;
    --sanitize=address,undefined | --sanitize=thread) sanitize="${arg#--sanitize=}" ;;
    *) echo "usage: $0 [--sanitize[=address,undefined|thread]]" >&2; exit 2 ;;
  esac
done
if [ -n "$sanitize" ]; then
  source "$TESSERA_ROOT/scripts/sanitizers.sh"
  test_sanitized "$sanitize"
  exit 0
fi

ensure_packages
build_tessera

echo "== ctest"
ctest --test-dir "$TESSERA_BUILD" --output-on-failure -j"$(nproc)"
echo "== pytest, numpy 1: Debian's python3, build/python"
TESSERA_BUILD_DIR="$TESSERA_BUILD" "$TESSERA_PYTHON" -m pytest -q "$TESSERA_ROOT/tests/python"
echo "== pytest, numpy 2: the installed package in $TESSERA_VENV"
TESSERA_BUILD_DIR="$TESSERA_BUILD" TESSERA_TEST_INSTALLED=1 "$TESSERA_VENV/bin/python" -m pytest -q "$TESSERA_ROOT/tests/python"
echo "== ONNX node conformance, host target"
TESSERA_BUILD_DIR="$TESSERA_BUILD" "$TESSERA_PYTHON" "$TESSERA_ROOT/tests/onnx/run_node_tests.py"
# AVX2: the widths of another x86 target (SSE4.2 and AArch64 are checked by the model tests).
echo "== ONNX node conformance, llvm -mcpu=x86-64-v3"
TESSERA_BUILD_DIR="$TESSERA_BUILD" "$TESSERA_PYTHON" "$TESSERA_ROOT/tests/onnx/run_node_tests.py" \
  --target "llvm -mcpu=x86-64-v3" --opt-levels 0,3
# OpenCL on PoCL, with the default GPU schedules; a GPU build runs the graph passes of level 2.
echo "== ONNX node conformance, opencl"
TESSERA_BUILD_DIR="$TESSERA_BUILD" "$TESSERA_PYTHON" "$TESSERA_ROOT/tests/onnx/run_node_tests.py" \
  --target opencl --opt-levels 2
