#!/usr/bin/env bash
# Installs what is missing, builds, then shows the main job on ResNet-18: import it from ONNX,
# compile it, check it against PyTorch, tune it for a minute, build it again from the tuning
# database, export it and run the module with the `tessera` command, and time it untuned and
# tuned beside PyTorch (examples/resnet18_demo.py). Then the GEMM example: an operator written
# in Tessera's DSL and scheduled by hand. Everything it writes goes to build/demo/.
set -euo pipefail
source "$(dirname "$0")/setup.sh"
cd "$TESSERA_ROOT"
DEMO="$(realpath -m --relative-to=. "$TESSERA_BUILD/demo")"  # build/demo: short paths in the output
trap 'echo "demo.sh: error: the step above failed (line $LINENO)" >&2' ERR

ensure_packages
mkdir -p "$DEMO"
# pip's verbose build would bury the demo; its log is kept for when the build fails.
BIN="$(realpath -m --relative-to=. "$TESSERA_VENV/bin")"  # build/venv/bin
echo "== building Tessera and installing it into $(dirname "$BIN") (pip install .; log: $DEMO/build.log)"
echo "   a first build takes minutes (about 7 on 2 cores); later ones only recompile what changed"
# The GoogleTest suites are left out: scripts/test.sh adds them to the same tree.
TESSERA_BUILD_TESTS=OFF build_tessera > "$DEMO/build.log" 2>&1 || { tail -n 30 "$DEMO/build.log"; echo "demo.sh: error: the build failed; see $DEMO/build.log" >&2; exit 1; }
# The installed package, as a Python user has it: the venv's interpreter and console script.
PY="$BIN/python"
TESSERA="$BIN/tessera"
start=$SECONDS

echo
echo "== 1/6 the example model: scripts/make_models.py exports ResNet-18 from PyTorch"
# Debian's interpreter: its numpy (1) is the one Debian's torch was built for.
"$TESSERA_PYTHON" scripts/make_models.py --out "$DEMO" resnet18 2>&1 | sed 's/^/  /'

"$PY" examples/resnet18_demo.py "$DEMO" --tune-seconds 30

echo
echo "== 6/6 the exported module, loaded by the runtime alone and run by the tessera command"
echo "  \$ tessera run $DEMO/resnet18.so --input input=$DEMO/resnet18.input.npy --output-dir $DEMO/out --bench 30"
"$TESSERA" run "$DEMO/resnet18.so" --input "input=$DEMO/resnet18.input.npy" --output-dir "$DEMO/out" --bench 30 | sed 's/^/  /'
"$PY" - "$DEMO" <<'EOF'
import sys, numpy as np
out, ref = (np.load(f"{sys.argv[1]}/{name}") for name in ("out/output0.npy", "resnet18.output.npy"))
err = float(np.abs(out - ref).max() / np.abs(ref).max())
if err > 1e-3:
    sys.exit(f"error: the module's output differs from PyTorch's by {err:.2e} (max relative error)")
print(f"  its output matches PyTorch's (max relative error {err:.1e})")
EOF

cat <<EOF

== where things are, how to go on (the ResNet-18 part took $((SECONDS - start)) s)
  model            $DEMO/resnet18.onnx (make_models.py also makes resnet34/50, mobilenet_v2, transformer)
  tuning database  $DEMO/tuning.db   (tessera db list --db $DEMO/tuning.db)
  tuning report    $DEMO/tuning.report.html (best time against trials, per kernel)
  exported module  $DEMO/resnet18.so (examples/deploy/ runs one from C and C++)
  the tessera command and Python are in $BIN; from there:
    tessera tune $DEMO/resnet18.onnx --db $DEMO/tuning.db --trials 2000  # tune longer; goes on from the records
    tessera inspect $DEMO/resnet18.onnx --db $DEMO/tuning.db             # the optimized graph, kernels, schedules
    /usr/bin/python3 benchmarks/e2e.py --models resnet18 --peers torch --db $DEMO/tuning.db
                                                    # vs PyTorch (benchmarks/setup.sh adds ONNX Runtime and TVM)
  README.md: "Whole models", "Tuning", "Deploying"; ../shared/DESIGN.md maps the whole stack
EOF

echo
echo "== examples/gemm.py: a matrix product in Tessera's DSL, scheduled by hand"
"$PY" examples/gemm.py
