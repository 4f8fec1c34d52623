# Sanitizer builds, shared by test.sh --sanitize and fuzz.sh; sourced after setup.sh. Each
# sanitizer set has a clang tree of its own beside build/ (a full build: nothing is shared with
# the ordinary tree), built at -O1 -g: fast enough to run the tests, precise enough to name lines.
#   build-asan: AddressSanitizer + UndefinedBehaviorSanitizer, and the libFuzzer harnesses
#   build-tsan: ThreadSanitizer, for the thread pool and the database's concurrent writers
# Reports of code LLVM generates at run time are out of reach: that code is not instrumented.

TESSERA_SANITIZER_PACKAGES=(clang-14 libclang-rt-14-dev)

sanitized_tree() {
  case "$1" in
    thread) echo "$TESSERA_ROOT/build-tsan" ;;
    *) echo "$TESSERA_ROOT/build-asan" ;;
  esac
}

# build_sanitized SANITIZERS [TARGET...]: configures (once) and builds the tree for SANITIZERS
# ("address,undefined" or "thread"); the targets given, or everything.
build_sanitized() {
  local sanitizers="$1"
  shift
  local tree fuzz=OFF generator
  tree="$(sanitized_tree "$sanitizers")"
  [ "$sanitizers" != thread ] && fuzz=ON
  ensure_packages "${TESSERA_SANITIZER_PACKAGES[@]}"
  ensure_venv
  generator="$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$tree/CMakeCache.txt" 2>/dev/null || true)"
  echo "== building in $tree (clang, -fsanitize=$sanitizers)"
  cmake -S "$TESSERA_ROOT" -B "$tree" -G "${generator:-Ninja}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g -DNDEBUG" \
    -DTESSERA_SANITIZE="$sanitizers" -DTESSERA_FUZZ="$fuzz" -DTESSERA_BUILD_TESTS=ON \
    -DPython3_EXECUTABLE="$TESSERA_VENV/bin/python" \
    -Dpybind11_DIR="$("$TESSERA_VENV/bin/python" -m pybind11 --cmakedir)" >/dev/null
  cmake --build "$tree" -j"$(nproc)" ${1:+--target "$@"}
}

# The shared ASan runtime (which also holds UBSan's), for interpreters that load instrumented code.
asan_runtime() { clang-14 -print-file-name=libclang_rt.asan-x86_64.so; }

# Reports go to stderr with a stack; UBSan's abort (the build makes them unrecoverable).
export UBSAN_OPTIONS="print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

# test_sanitized SANITIZERS: builds the tree and runs the tests it is for.
test_sanitized() {
  local sanitizers="$1" tree
  tree="$(sanitized_tree "$sanitizers")"
  if [ "$sanitizers" = thread ]; then
    build_sanitized thread runtime_test autotune_test
    echo "== ctest under ThreadSanitizer: the thread pool and the database's concurrent writers"
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
      ctest --test-dir "$tree" --output-on-failure -j"$(nproc)" -R '^(ThreadPool|TuningDatabase)\.'
    return
  fi
  build_sanitized "$sanitizers"
  echo "== ctest under -fsanitize=$sanitizers (leak checking on)"
  # Some tests make these happen on purpose and check that Tessera reports them: a failed
  # allocation (malloc returning null, as without ASan) and a measured kernel that crashes the
  # worker (killed by its signal, as without ASan, rather than ASan's exit status 1).
  ASAN_OPTIONS="allocator_may_return_null=1:handle_segv=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
    ctest --test-dir "$tree" --output-on-failure -j"$(nproc)"
  # CPython keeps its objects to the end by design, so leak checking is off for the interpreter.
  # Left out: the tests of what a shipped runtime links and of C programs built against it with
  # cc; an instrumented runtime needs the ASan runtime, by design. --capture=sys: a sanitizer's
  # report is written to file descriptor 2 just before it aborts the interpreter, and pytest's
  # default capture of that descriptor would take it down with the process.
  echo "== pytest under -fsanitize=$sanitizers: Debian's python3, $tree/python"
  LD_PRELOAD="$(asan_runtime)" ASAN_OPTIONS="detect_leaks=0" TESSERA_BUILD_DIR="$tree" \
    "$TESSERA_PYTHON" -m pytest -q --capture=sys "$TESSERA_ROOT/tests/python" -k "not test_runtime_libraries_need_only_the_c_and_cpp_runtimes \
      and not test_install_gives_headers_libraries_cli_and_cmake_package and not test_examples_classify_with_the_installed_runtime_alone \
      and not test_aarch64_module_under_qemu_matches_the_host_module"
}
