#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz, in the ASan+UBSan tree build-asan) and runs each for
# a bounded time from its seed corpus in tests/fuzz/corpus/<harness>; a finding (crash,
# sanitizer report, an exception other than tessera::Error, an input slower than 10 s) is kept
# as build-asan/fuzz/findings/<harness>-*, and the script fails.
#   scripts/fuzz.sh [SECONDS]          each harness SECONDS (60 by default)
#   scripts/fuzz.sh --merge [SECONDS]  then folds what the runs found into the seed corpora,
#                                      keeping only inputs that add coverage (-merge=1)
# What the runs find between merges stays in build-asan/fuzz/corpus/<harness>.
set -euo pipefail
source "$(dirname "$0")/setup.sh"
source "$TESSERA_ROOT/scripts/sanitizers.sh"

merge=0
if [ "${1:-}" = --merge ]; then
  merge=1
  shift
fi
seconds="${1:-60}"
harnesses=(onnx_import_fuzz module_load_fuzz trace_json_fuzz relay_text_fuzz db_import_fuzz)

build_sanitized address,undefined "${harnesses[@]}"
tree="$(sanitized_tree address,undefined)"
findings="$tree/fuzz/findings"
mkdir -p "$findings"
failed=()
for h in "${harnesses[@]}"; do
  seeds="$TESSERA_ROOT/tests/fuzz/corpus/$h" found="$tree/fuzz/corpus/$h"
  mkdir -p "$found"
  echo "== $h: $seconds s"
  # New inputs go to the first folder; the seeds are only read.
  if ! "$tree/fuzz/$h" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
      -artifact_prefix="$findings/$h-" "$found" "$seeds" 2>"$tree/fuzz/$h.log"; then
    tail -n 60 "$tree/fuzz/$h.log"
    failed+=("$h")
    continue
  fi
  grep -E '^stat::(number_of_executed_units|new_units_added)' "$tree/fuzz/$h.log" || true
  if [ "$merge" = 1 ]; then
    merged="$tree/fuzz/merged-$h"
    rm -rf "$merged" && mkdir -p "$merged"
    "$tree/fuzz/$h" -merge=1 "$merged" "$seeds" "$found" 2>>"$tree/fuzz/$h.log"
    rm -rf "$seeds" && mv "$merged" "$seeds"
    echo "   seed corpus: $(ls "$seeds" | wc -l) files, $(du -sh "$seeds" | cut -f1)"
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "findings in: ${failed[*]} (inputs in $findings, logs in $tree/fuzz/*.log)" >&2
  exit 1
fi
echo "== no findings"
