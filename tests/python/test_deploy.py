"""Deployment: a built model exported as one shared library (kernels, plan, weights), loaded back
by the runtime alone (tessera.load, the C API, `tessera run`), installed with its headers and
CMake package, and used from C and C++ programs built with one compiler command; every way a
module file can be wrong is refused before its code runs; cross-compilation for AArch64."""
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import package_under_test
import tessera

ROOT = package_under_test.ROOT
BUILD = package_under_test.BUILD
TESSERA = package_under_test.program("tessera")
MODEL_DIR = os.path.join(ROOT, "models")
sys.path.insert(0, os.path.join(ROOT, "scripts"))


def run(*args, ok=True, **kwargs):
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=600, **kwargs)
    if ok:
        assert proc.returncode == 0, f"{' '.join(map(str, args))}\n{proc.stdout}\n{proc.stderr}"
    return proc


def small_cnn(path):
    """conv -> relu -> global average pool -> flatten -> gemm, plus a second output (the pooled
    features): two outputs, weights as initializers."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype("float32"), "w")
    b = numpy_helper.from_array(rng.standard_normal(8).astype("float32"), "b")
    fc = numpy_helper.from_array(rng.standard_normal((10, 8)).astype("float32"), "fc")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["p"]), helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1)]
    g = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 10]),
                           helper.make_tensor_value_info("f", TensorProto.FLOAT, [2, 8])], [w, b, fc])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    d = tmp_path_factory.mktemp("cnn")
    path = small_cnn(d / "cnn.onnx")
    lib = tessera.build(tessera.onnx.load(str(path)))
    lib.export(d / "cnn.so")
    x = np.random.default_rng(1).standard_normal((2, 3, 16, 16)).astype("float32")
    np.save(d / "x.npy", x)
    return {"dir": d, "onnx": path, "so": d / "cnn.so", "lib": lib, "x": x}


@pytest.fixture(scope="module")
def resnet18(tmp_path_factory):
    import make_models  # needs python3-torch and python3-torchvision, which scripts/test.sh installs
    path = make_models.ensure("resnet18", MODEL_DIR)
    d = tmp_path_factory.mktemp("resnet18")
    lib = tessera.build(tessera.onnx.load(path))
    start = time.perf_counter()
    lib.export(d / "resnet18.so")
    print(f"\nresnet18: exported in {time.perf_counter() - start:.1f} s, {os.path.getsize(d / 'resnet18.so') / 2**20:.1f} MiB")
    x = np.load(os.path.join(MODEL_DIR, "resnet18.input.npy"))
    np.save(d / "x.npy", x)
    return {"dir": d, "so": d / "resnet18.so", "lib": lib, "x": x}


def median_ms(f, repeat=20):
    f()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        f()
        times.append((time.perf_counter() - start) * 1e3)
    return float(np.median(times))


def test_exported_module_matches_the_in_process_one(cnn):
    lib2 = tessera.load(cnn["so"])
    assert lib2.inputs == [{"name": "x", "shape": (2, 3, 16, 16), "dtype": "float32"}]
    assert [o["shape"] for o in lib2.outputs] == [(2, 10), (2, 8)]
    assert lib2.target.startswith("llvm -mtriple=")
    expected = cnn["lib"].run([cnn["x"]])
    got = lib2.run({"x": cnn["x"]})
    assert len(got) == 2
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(g, e)


def test_modules_loaded_side_by_side_each_run_their_own_code(tmp_path):
    """Two modules whose kernels have the same name (k0_leaky_relu) but different code: the
    second one loaded must not be handed the first one's."""
    x = -np.arange(4, dtype=np.float32)
    modules = []
    for alpha in (0.1, 0.5):
        g = helper.make_graph([helper.make_node("LeakyRelu", ["x"], ["y"], alpha=alpha)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
        path = tmp_path / f"leaky_{alpha}.onnx"
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
        tessera.build(tessera.onnx.load(str(path))).export(str(tmp_path / f"leaky_{alpha}.so"))
        modules.append(tessera.load(str(tmp_path / f"leaky_{alpha}.so")))
    for alpha, module in zip((0.1, 0.5), modules):
        np.testing.assert_allclose(module.run([x])[0], alpha * x, rtol=1e-6)


def test_resnet18_exported_matches_in_process(resnet18):
    start = time.perf_counter()
    lib2 = tessera.load(resnet18["so"])
    load_ms = (time.perf_counter() - start) * 1e3
    x = resnet18["x"]
    expected = resnet18["lib"].run([x])[0]
    np.testing.assert_array_equal(lib2.run([x])[0], expected)
    # Its parallel loops call the runtime's thread pool through the hook the loader set.
    assert "tessera_hook_parallel_launch" in run("nm", "-D", "--defined-only", resnet18["so"]).stdout
    ref = np.load(os.path.join(MODEL_DIR, "resnet18.output.npy"))
    assert np.abs(expected - ref).max() / np.abs(ref).max() <= 1e-3
    in_process = median_ms(lambda: resnet18["lib"].run([x]))
    exported = median_ms(lambda: lib2.run([x]))
    print(f"\nresnet18: load {load_ms:.1f} ms; median latency in-process {in_process:.2f} ms, exported {exported:.2f} ms")


def test_exported_module_needs_only_libc_and_libm(cnn):
    needed = re.findall(r"\(NEEDED\).*\[(.*)\]", run("readelf", "-d", cnn["so"]).stdout)
    assert set(needed) <= {"libc.so.6", "libm.so.6"}, needed
    undefined = run("nm", "-D", "--undefined-only", cnn["so"]).stdout
    assert "tessera" not in undefined  # the runtime is reached through hooks, never linked


def test_runtime_libraries_need_only_the_c_and_cpp_runtimes(tmp_path):
    allowed = {"libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1", "libpthread.so.0", "ld-linux-x86-64.so.2",
               "ld-linux-aarch64.so.1"}
    shared = os.path.join(BUILD, "lib", "libtessera_runtime.so")
    needed = set(re.findall(r"\(NEEDED\).*\[(.*)\]", run("readelf", "-d", shared).stdout))
    assert needed <= allowed, needed
    ldd = run("ldd", shared).stdout
    assert "LLVM" not in ldd and "tessera" not in ldd.replace(shared, "")
    # The archive has no undefined reference beyond those: a C program using every part of it
    # links with just the C++ runtime, libm and pthreads.
    program = tmp_path / "all.c"
    program.write_text('#include <stdio.h>\n#include "tessera_runtime.h"\n'
                       'int main(void) { TesseraModule* m; TesseraArray* a;\n'
                       '  if (tessera_npy_load("none.npy", &a) != TESSERA_ERROR_IO) return 1;\n'
                       '  if (tessera_module_load("none.so", &m) != TESSERA_ERROR_LOAD) return 1;\n'
                       '  puts(tessera_last_error()); return 0; }\n')
    run("cc", program, "-I", os.path.join(ROOT, "runtime"), os.path.join(BUILD, "lib", "libtessera_runtime.a"), "-lstdc++",
        "-lm", "-pthread", "-o", tmp_path / "all")
    assert "cannot open module 'none.so'" in run(tmp_path / "all", cwd=tmp_path).stdout


def test_loading_refuses_bad_files_before_running_them(cnn, tmp_path):
    good = cnn["so"].read_bytes()

    def load_error(data, name):
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(tessera.Error) as e:
            tessera.load(path)
        return str(e.value)

    assert "not a Tessera module" in load_error(b"hello, world", "text.so")
    assert "not a Tessera module" in load_error(good[:2000], "cut_early.so")
    assert "is truncated" in load_error(good[:-1000], "truncated.so")
    code_byte = bytearray(good)
    code_byte[3000] ^= 0xFF
    assert "code section fails its checksum" in load_error(bytes(code_byte), "corrupt_code.so")
    weight_byte = bytearray(good)
    weight_byte[len(good) - 40 - 64] ^= 0x01  # inside the last weights
    assert "weights section fails its checksum" in load_error(bytes(weight_byte), "corrupt_weights.so")
    newer = bytearray(good)
    newer[-24] += 1  # the trailer's u32 format version (module_file.h)
    assert "written by a newer Tessera (module format version 7" in load_error(bytes(newer), "newer.so")


# LLVM's name and /proc/cpuinfo's for features some x86 CPUs lack.
_FEATURES = {"avx512fp16": "avx512_fp16", "amx-tile": "amx_tile", "avx512vp2intersect": "avx512_vp2intersect",
             "avx512bf16": "avx512_bf16", "xop": "xop", "fma4": "fma4", "avx512f": "avx512f"}


def test_loading_refuses_code_for_cpu_features_this_host_lacks(cnn, tmp_path):
    if os.uname().machine != "x86_64":
        pytest.skip("x86 feature names")
    flags = set(re.search(r"^flags\s*:(.*)$", open("/proc/cpuinfo").read(), re.M).group(1).split())
    missing = [llvm for llvm, linux in _FEATURES.items() if linux not in flags]
    if not missing:
        pytest.skip("this CPU has every feature tried")
    lib = tessera.build(tessera.onnx.load(str(cnn["onnx"])), target=f"llvm -mattr=+{missing[0]}", jit=False)
    lib.export(tmp_path / "needs.so")
    # The features it implies are named too (avx512fp16 needs avx512f, ...).
    with pytest.raises(tessera.Error, match=f"needs CPU features this host lacks: .*{missing[0]} \\(not supported by this CPU\\)"):
        tessera.load(tmp_path / "needs.so")


def test_inputs_of_the_wrong_shape_or_dtype_name_the_input(cnn):
    lib2 = tessera.load(cnn["so"])
    with pytest.raises(tessera.Error, match=r"input 'x' \(#0\): expected shape \(2, 3, 16, 16\) float32, got \(1, 3, 16, 16\) float32"):
        lib2.run([cnn["x"][:1]])
    with pytest.raises(tessera.Error, match=r"input 'x' \(#0\): expected shape \(2, 3, 16, 16\) float32, got \(2, 3, 16, 16\) float64"):
        lib2.run([cnn["x"].astype("float64")])
    with pytest.raises(tessera.Error, match="loaded from a file"):
        lib2.export(cnn["dir"] / "again.so")


def test_cli_compiles_to_a_module_and_runs_it(cnn, tmp_path):
    out = run(TESSERA, "compile", cnn["onnx"], "-o", tmp_path / "m.so").stdout
    assert "wrote " + str(tmp_path / "m.so") in out
    out = run(TESSERA, "run", tmp_path / "m.so", "--input", f"x={cnn['dir'] / 'x.npy'}", "--output-dir", tmp_path / "out",
              "--bench", 10).stdout
    assert "loaded " in out and "output 0: float32(2, 10)" in out and "output 1: float32(2, 8)" in out
    assert re.search(r"latency over 10 runs: min [\d.]+ ms, median [\d.]+ ms, p90 [\d.]+ ms", out)
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "output0.npy"), cnn["lib"].run([cnn["x"]])[0])
    proc = run(TESSERA, "run", tmp_path / "m.so", "--input", f"x={cnn['dir'] / 'x.npy'}", "--shape", "x=1,3,16,16", ok=False)
    assert "--shape and --bind apply to ONNX models" in proc.stderr
    (tmp_path / "bad.so").write_bytes(b"\x7fELF not really")
    proc = run(TESSERA, "run", tmp_path / "bad.so", ok=False)
    assert proc.returncode == 1 and "not a Tessera module" in proc.stderr


def test_cross_compiles_for_aarch64(cnn, tmp_path):
    out_path = tmp_path / "arm.so"
    run(TESSERA, "compile", cnn["onnx"], "-t", "llvm -mtriple=aarch64-linux-gnu", "-o", out_path)
    assert re.search(r"Machine:\s+AArch64", run("readelf", "-h", out_path).stdout)
    with pytest.raises(tessera.Error, match="it was compiled for aarch64"):
        tessera.load(out_path)
    with pytest.raises(tessera.Error, match="built without JIT compilation"):
        tessera.build(tessera.onnx.load(str(cnn["onnx"])), target="llvm -mtriple=aarch64-linux-gnu", jit=False).run([cnn["x"]])


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    prefix = tmp_path_factory.mktemp("prefix")
    run("cmake", "--install", BUILD, "--prefix", prefix)
    return prefix


def top5(text):
    return [(int(c), float(s)) for c, s in re.findall(r"^\d\. class (\d+) score (\S+)$", text, re.M)]


def test_install_gives_headers_libraries_cli_and_cmake_package(installed, cnn, tmp_path):
    for f in ["include/tessera_runtime.h", "include/tessera_runtime.hpp", "lib/libtessera_runtime.so",
              "lib/libtessera_runtime.a", "lib/cmake/Tessera/TesseraConfig.cmake", "bin/tessera"]:
        assert (installed / f).exists(), f
    assert "compile" in run(installed / "bin" / "tessera", "--help").stdout
    # find_package(Tessera) from a project of its own.
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(os.path.join(ROOT, "examples", "deploy", "classify.c"), project)
    (project / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.25)\nproject(classify C)\n"
                                            "find_package(Tessera 0.1 REQUIRED)\nadd_executable(classify classify.c)\n"
                                            "target_link_libraries(classify PRIVATE Tessera::runtime_static)\n")
    run("cmake", "-S", project, "-B", project / "build", f"-DCMAKE_PREFIX_PATH={installed}")
    run("cmake", "--build", project / "build")
    out = run(project / "build" / "classify", cnn["so"], cnn["dir"] / "x.npy").stdout
    assert len(top5(out)) == 5 and "top-5 of 20 classes" in out


def test_examples_classify_with_the_installed_runtime_alone(installed, resnet18, tmp_path):
    p = str(installed)
    readme = open(os.path.join(ROOT, "examples", "deploy", "README.md")).read()
    expected = resnet18["lib"].run([resnet18["x"]])[0].ravel()
    order = np.argsort(-expected, kind="stable")[:5]
    for source, command in [("classify.c", r"`(cc -O2 classify\.c [^`]*-ltessera_runtime[^`]*)`"),
                            ("classify.cpp", r"`(c\+\+ -std=c\+\+17 -O2 classify\.cpp [^`]*)`"),
                            ("classify.c", r"`(cc -O2 classify\.c [^`]*libtessera_runtime\.a[^`]*)`")]:
        # The exact one-line command the README documents, with P set.
        line = re.search(command, readme).group(1).replace("$P", p)
        args = line.split()
        args[args.index("-o") + 1] = str(tmp_path / "classify")
        run(*args, cwd=os.path.join(ROOT, "examples", "deploy"))
        out = run(tmp_path / "classify", resnet18["so"], resnet18["dir"] / "x.npy", env={"PATH": "/usr/bin:/bin"}).stdout
        got = top5(out)
        assert [c for c, _ in got] == list(order), (source, out)
        np.testing.assert_allclose([s for _, s in got], expected[order], rtol=1e-5, atol=1e-5)
        ldd = run("ldd", tmp_path / "classify").stdout
        if "libtessera_runtime.a" in line:
            assert "libtessera_runtime" not in ldd, ldd
        else:
            assert os.path.join(p, "lib", "libtessera_runtime.so") in ldd, ldd
