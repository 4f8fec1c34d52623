"""Shared pieces of the benchmarks: timing, the environment peers need to run at their best,
one worker process per thread count, and the RESULT lines of DESIGN.md."""
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BUILD = os.environ.get("TESSERA_BUILD_DIR", os.path.join(ROOT, "build"))


# The distinct convolutions of ResNet-50 at batch 1 (torchvision's v1.5: a bottleneck's stride is on
# its 3x3): (name, in_channels, out_channels, input_size, kernel, stride), padding kernel // 2.
# sN_reduce_in / sN_reduce are a stage's 1x1 reduce in its first / later blocks, sN_3x3_s2 the first
# block's strided 3x3, sN_expand the 1x1 expand, sN_down the first block's 1x1 stride-2 downsample
# (stage 1's downsample, 64 -> 256 at 56 with stride 1, has s1_expand's shape). The same 23 shapes
# as the Conv nodes of models/resnet50.onnx.
RESNET50_CONVS = [
    ("conv1", 3, 64, 224, 7, 2),
    ("s1_reduce_in", 64, 64, 56, 1, 1),
    ("s1_3x3", 64, 64, 56, 3, 1),
    ("s1_expand", 64, 256, 56, 1, 1),
    ("s1_reduce", 256, 64, 56, 1, 1),
    ("s2_reduce_in", 256, 128, 56, 1, 1),
    ("s2_3x3_s2", 128, 128, 56, 3, 2),
    ("s2_expand", 128, 512, 28, 1, 1),
    ("s2_down", 256, 512, 56, 1, 2),
    ("s2_reduce", 512, 128, 28, 1, 1),
    ("s2_3x3", 128, 128, 28, 3, 1),
    ("s3_reduce_in", 512, 256, 28, 1, 1),
    ("s3_3x3_s2", 256, 256, 28, 3, 2),
    ("s3_expand", 256, 1024, 14, 1, 1),
    ("s3_down", 512, 1024, 28, 1, 2),
    ("s3_reduce", 1024, 256, 14, 1, 1),
    ("s3_3x3", 256, 256, 14, 3, 1),
    ("s4_reduce_in", 1024, 512, 14, 1, 1),
    ("s4_3x3_s2", 512, 512, 14, 3, 2),
    ("s4_expand", 512, 2048, 7, 1, 1),
    ("s4_down", 1024, 2048, 14, 1, 2),
    ("s4_reduce", 2048, 512, 7, 1, 1),
    ("s4_3x3", 512, 512, 7, 3, 1),
]


def conv_output_size(size, kernel, stride):
    """The output size of a RESNET50_CONVS layer (padding kernel // 2)."""
    return (size + 2 * (kernel // 2) - kernel) // stride + 1


def has_avx512():
    try:
        with open("/proc/cpuinfo") as f:
            return "avx512f" in f.read()
    except OSError:
        return False


def tvm_target(threads):
    """The one place the LLVM target is chosen: Zen 4 (AVX-512) on an AMD CPU with AVX-512 where
    TVM's LLVM knows znver4, else Skylake-AVX512 on any AVX-512 CPU, else the host's own CPU."""
    import tvm
    from tvm.target import codegen
    triple = codegen.llvm_get_system_triple()
    if has_avx512() and codegen.llvm_get_system_x86_vendor() == "amd" and codegen.llvm_is_valid_cpu("znver4", triple):
        mcpu = "znver4"
    elif has_avx512():
        mcpu = "skylake-avx512"
    else:
        mcpu = codegen.llvm_get_system_cpu()
    return tvm.target.Target({"kind": "llvm", "mcpu": mcpu, "num-cores": threads})


def peer_environment(threads):
    """Thread counts for every library, set before they load. Debian's OpenBLAS 0.3.21 does not
    recognize this CPU and would run its slowest generic kernels without OPENBLAS_CORETYPE."""
    env = dict(os.environ)
    env.update({
        "TESSERA_NUM_THREADS": str(threads),
        "OPENBLAS_NUM_THREADS": str(threads),
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "TVM_NUM_THREADS": str(threads),
        "OPENBLAS_CORETYPE": "SkylakeX" if has_avx512() else "Haswell",
        # tvm_ffi otherwise tries (and here fails) to compile a PyTorch extension at every import,
        # a C++ build that takes both cores for tens of seconds.
        "TVM_FFI_DISABLE_TORCH_C_DLPACK": "1",
    })
    env.pop("OMP_PROC_BIND", None)
    env["PYTHONPATH"] = os.path.join(BUILD, "python") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_workers(script, thread_counts, extra_args):
    """Runs `script --worker --threads N ...` once per thread count, streaming its output."""
    failed = False
    for threads in thread_counts:
        cmd = [sys.executable, script, "--worker", "--threads", str(threads)] + extra_args
        failed |= subprocess.call(cmd, env=peer_environment(threads)) != 0
    return 1 if failed else 0


def timed_calls(fn, repeat, warmup):
    """Seconds of each of `repeat` calls of fn() after `warmup` untimed ones. A fn that returns a
    float has timed itself (Tessera's kernels alone, say: see kernels_alone) and is taken at its word."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        own = fn()
        times.append(own if isinstance(own, float) else time.perf_counter() - start)
    return times


def kernels_alone(lib, inputs):
    """A timer of one run of `lib`'s kernels (lib.profile: no input or output copies), seconds."""
    return lambda: sum(ms for _, ms in lib.profile(inputs, 1)) / 1e3


def measure(fn, repeat, warmup=3):
    """(min, median) seconds of fn() after warm-up."""
    times = timed_calls(fn, repeat, warmup)
    return min(times), statistics.median(times)


def measure_rounds(runs, repeat, rounds=5):
    """{name: (min, median) seconds} of each fn in `runs` (name -> fn), which take turns in
    `rounds` rounds of repeat / rounds timed calls each: a stretch of seconds in which this
    machine runs at half speed (one core taken) then falls on every library alike, instead of
    on whichever was being timed."""
    times = {name: [] for name in runs}
    per_round = max(1, -(-repeat // rounds))
    for _ in range(rounds):
        for name, fn in runs.items():
            times[name] += timed_calls(fn, per_round, warmup=2)
            pause()
    return {name: (min(t), statistics.median(t)) for name, t in times.items()}


def pause():
    """Lets spinning OpenMP/BLAS workers of the previous peer go idle before the next one."""
    time.sleep(0.5)


def blas_library():
    """The BLAS library numpy actually loaded (from this process's memory map)."""
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "blas" in line.lower()}
    except OSError:
        return "unknown"
    names = sorted(os.path.basename(l) for l in libs if l.startswith("/"))
    return ", ".join(names) or "none"


def result_line(bench, case, threads, times, peers, subject="tessera", extra=None):
    """The machine-readable RESULT line: <lib>_ms (median) and <lib>_min_ms for `subject` and each
    peer timed, speedup_vs_<peer> = peer median / subject median, then `extra` (tuning seconds,
    trials...)."""
    record = {"bench": bench, "case": case, "threads": threads,
              f"{subject}_ms": round(times[subject][1] * 1e3, 3),
              f"{subject}_min_ms": round(times[subject][0] * 1e3, 3)}
    for peer in peers:
        if peer in times:
            record[f"{peer}_ms"] = round(times[peer][1] * 1e3, 3)
            record[f"{peer}_min_ms"] = round(times[peer][0] * 1e3, 3)
            record[f"speedup_vs_{peer}"] = round(times[peer][1] / times[subject][1], 3)
    record.update(extra or {})
    return "RESULT " + json.dumps(record)
