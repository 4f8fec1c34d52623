"""GPU schedules through tessera.te: thread axes, bind, storage scopes and the lowered device IR of
TVM-style schedules (gpu_kernels.py), checked for what the device code generators need: thread
extents outermost in each kernel, shared and local allocations, barriers."""
import re

import pytest

import tessera
from tessera import te
from test_te_ops import matmul_def
import gpu_kernels


def kernels(text):
    """The function's top-level statements (one per kernel), as text."""
    body = text.split("\n", 1)[1].rsplit("}", 1)[0]
    return re.split(r"\n(?=  [^ }])", body.strip("\n"))


def test_thread_axis_names_its_tag():
    bx = te.thread_axis("blockIdx.x")
    assert bx.tag == "blockIdx.x" and repr(bx) == "ThreadAxis('blockIdx.x')"
    assert te.thread_axis("vthread", name="vx").name == "vx"
    with pytest.raises(ValueError, match="unknown tag 'threadIdx.w'"):
        te.thread_axis("threadIdx.w")


def test_bind_lowers_to_thread_extents():
    A, B, C = matmul_def(19, 37, 11)
    s = te.create_schedule(C)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    s[C].bind(xo, te.thread_axis("blockIdx.x"))
    s[C].bind(xi, te.thread_axis("threadIdx.x"))
    assert s[C].loop(xo).thread_tag == "blockIdx.x"
    text = te.lower(s, [A, B, C])
    assert "launch_thread (i.outer = blockIdx.x, 5) {\n    launch_thread (i.inner = threadIdx.x, 4) {" in text
    assert 'i_outer, i_inner = s["C"].split("i", factor=4)\ns["C"].bind("i.outer", "blockIdx.x")' in str(s.trace)
    with pytest.raises(tessera.Error, match="loop i.outer of stage C is bound to blockIdx.x"):
        te.lower(s, [A, B, C], for_device=False)
    with pytest.raises(tessera.Error, match="bind of C.j: blockIdx.x is already bound to loop i.outer"):
        s[C].bind(C.op.axis[1], te.thread_axis("blockIdx.x"))
    with pytest.raises(tessera.Error, match="bind of C.r: it is a reduction loop"):
        s[C].bind(C.op.reduce_axis[0], "blockIdx.y")


def test_scopes_and_storage_align_as_tvm_names_them():
    A, B, C = matmul_def(16, 16, 16)
    s = te.create_schedule(C)
    AA = s.cache_read(A, "shared", [C])
    BL = s.cache_read(B, "global", [C])
    s[BL].set_scope("local")
    assert s[AA].scope == "shared" and s[BL].scope == "local"
    s[AA].storage_align(AA.op.axis[0], 16, 1)
    with pytest.raises(tessera.Error, match="cache_read of A: 'texture' is not a storage scope"):
        s.cache_read(A, "texture", [C])
    with pytest.raises(tessera.Error, match="set_scope of C: it is an output"):
        s[C].set_scope("shared")
    io, ii = s[C].split(C.op.axis[0], factor=4)
    s[C].bind(io, te.thread_axis("blockIdx.x"))
    s[C].bind(ii, te.thread_axis("threadIdx.x"))
    s[AA].compute_at(s[C], C.op.axis[1])
    s[BL].compute_at(s[C], C.op.axis[1])
    text = te.lower(s, [A, B, C])
    # A's 4 rows of the block, their stride padded from 16 to 17; B's column of the thread.
    assert "allocate A.shared: float32[67] (shared)" in text
    assert "allocate B.global: float32[16] (local)" in text


@pytest.mark.parametrize("schedule,args", [
    (gpu_kernels.gemm, (70, 50, 37)),
    (gpu_kernels.gemm, (64, 64, 64)),
    (gpu_kernels.conv3x3, (2, 3, 10, 9, 4)),
    (gpu_kernels.elementwise_chain, (100,)),
    (gpu_kernels.elementwise_chain, (1,)),
    (gpu_kernels.row_sum, (5, 300)),
    (gpu_kernels.softmax, (3, 100, 48)),
    (gpu_kernels.softmax, (1, 1, 64)),
])
def test_schedules_lower_to_kernels_under_thread_extents(schedule, args):
    s, tensors = schedule(*args)
    text = te.lower(s, tensors, schedule.__name__)
    for kernel in kernels(text):
        if kernel.startswith("  allocate ") and "(global)" in kernel:
            continue  # an intermediate result between kernels, in global memory
        assert kernel.startswith("  launch_thread (") and "blockIdx" in kernel.splitlines()[0], kernel
        # Every thread extent of a kernel opens it, before any other statement.
        lines = kernel.splitlines()
        opening = next(i for i, l in enumerate(lines) if "launch_thread" not in l)
        assert all("launch_thread" not in l for l in lines[opening:]), kernel
    assert te.lower(s, tensors, schedule.__name__, for_device=True) == text
    # The trace replays as code to the same kernels.
    _, fresh = schedule(*args)
    replayed = te.create_schedule(fresh[-1])
    exec(str(s.trace), {"s": replayed})
    assert te.lower(replayed, fresh, schedule.__name__) == text


def test_gemm_tiles_in_shared_memory_and_registers():
    s, tensors = gpu_kernels.gemm(70, 50, 37)
    text = te.lower(s, tensors, "gemm")
    assert "allocate C.local: float32[16] (local)" in text
    assert "allocate A.shared: float32[256] (shared)" in text  # 32 rows x 8 of the reduction
    assert "allocate B.shared: float32[256] (shared)" in text
    # Each thread fetches a share of the panel: the fused loop's inner part is the thread's index.
    assert "ax0.ax1.fused.outer*64 + i.inner.outer*8 + j.inner.outer" in text
    assert text.count("launch_thread") == 4
    # A barrier after the panels are filled (read after write) and one before the next step refills
    # them while other threads may still read (write after read), both in the reduction loop.
    lines = [l.strip() for l in text.splitlines()]
    barriers = [i for i, l in enumerate(lines) if l == "barrier()"]
    assert len(barriers) == 2, text
    assert lines[barriers[0] - 1] == "for (r.outer, 0, 5) {" and lines[barriers[0] + 1].startswith("for (ax0.ax1.fused")
    assert lines[barriers[1] + 1] == "for (r.inner, 0, 8) {"
    # The shared panels are the block's: allocated at the kernel's top, under its thread extents.
    top = lines.index("launch_thread (j.inner.outer = threadIdx.x, 8) {")
    assert lines[top + 1:top + 3] == ["allocate A.shared: float32[256] (shared)", "allocate B.shared: float32[256] (shared)"]


@pytest.mark.parametrize("schedule,args", [(gpu_kernels.conv3x3, (1, 2, 5, 5, 3)),
                                           (gpu_kernels.elementwise_chain, (33,))])
def test_no_barriers_without_shared_memory(schedule, args):
    s, tensors = schedule(*args)
    assert "barrier()" not in te.lower(s, tensors)


def test_cross_thread_reduction_is_a_tree_through_shared_memory():
    s, tensors = gpu_kernels.row_sum(5, 300, threads=64)
    text = te.lower(s, tensors, "row_sum")
    lines = [l.strip() for l in text.splitlines()]
    # Each thread's partial over its strided share of the row, in its own memory...
    assert "allocate B.rf: float32[1] (local)" in lines
    assert "B.rf[0] = B.rf[0] + select(k.outer*64 + k.inner < 300, A[i*300 + k.outer*64 + k.inner], 0.0f)" in lines
    # ...then (on a device without warps) a tree over the block's 64 threads through shared memory,
    # a barrier before each step and before every thread takes the row's sum, which thread 0 stores.
    assert "allocate B.red: float32[64] (shared)" in lines
    steps = [l for l in lines if l.startswith("if (k.inner < ")]
    assert steps == [f"if (k.inner < {o}) {{" for o in (32, 16, 8, 4, 2, 1)]
    assert lines.count("barrier()") == 7
    write = lines.index("B[i] = B.partial[0]")
    assert lines[write - 3:write] == ["barrier()", "B.partial[0] = B.red[0]", "if (k.inner == 0) {"]


def test_cross_thread_reduction_of_threads_not_a_power_of_two():
    s, tensors = gpu_kernels.row_sum(2, 50, threads=48)
    lines = [l.strip() for l in te.lower(s, tensors).splitlines()]
    # 48 threads: the first step adds the 16 partials above 32 to those below.
    assert "if (k.inner < 32 && k.inner + 32 < 48) {" in lines
    assert "allocate B.red: float32[48] (shared)" in lines


def test_cross_thread_reduction_errors_name_the_stage_and_loop():
    A = te.placeholder((4, 64), "float32", name="A")
    k = te.reduce_axis((0, 64), name="k")
    B = te.compute((4,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B)
    with pytest.raises(tessera.Error, match="bind of B.k: it is a reduction loop, which only threadIdx axes can share"):
        s[B].bind(B.op.reduce_axis[0], te.thread_axis("blockIdx.x"))
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    s[B].bind(ki, te.thread_axis("threadIdx.x"))
    s[B].bind(B.op.axis[0], te.thread_axis("blockIdx.x"))
    with pytest.raises(tessera.Error, match="cross-thread reduction of stage B: its reduction loop bound to a thread "
                                            "axis must be the outermost of its reduction loops, not k.outer"):
        te.lower(s, [A, B])
    s[B].reorder(ki, ko)
    text = te.lower(s, [A, B])  # each thread sums its 4 elements, then the 16 threads combine
    assert "B.partial[0] = B.partial[0] + A[i*64 + k.outer*16 + k.inner]" in text
