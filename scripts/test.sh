#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: the GoogleTest suites through ctest,
# then the Python tests twice: with Debian's python3 and numpy 1 on the build tree's package, and
# in build/venv, with numpy 2, on the package pip installed there.
set -euo pipefail
source "$(dirname "$0")/setup.sh"
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
