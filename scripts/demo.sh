#!/usr/bin/env bash
# Installs what is missing, builds, then runs the main example: a matrix multiplication written
# in Tessera's DSL, scheduled by hand, compiled for this CPU and checked against numpy.
set -euo pipefail
source "$(dirname "$0")/setup.sh"
ensure_packages
build_tessera

echo "== examples/gemm.py"
PYTHONPATH="$TESSERA_BUILD/python" "$TESSERA_PYTHON" "$TESSERA_ROOT/examples/gemm.py"
