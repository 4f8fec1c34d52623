"""A matrix product of symbolic rows built once for every size holds a version per class of row
counts, one row (a decoding step's one token), 2 to 7 (a batch of tokens), 8 to 127 (a prompt)
and 128 or more (a long sequence), and chooses at each call (driver/row_count_versions.h): each computes every size,
whichever the first run's sizes were, from the library and from its exported module."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera


def projection_model(tmp_path, rng):
    """y = (x @ w + b) @ v over x of [N, L, 64], its weights packed ahead of time (AlterOpLayout)."""
    w = rng.standard_normal((64, 96)).astype("float32")
    b = rng.standard_normal(96).astype("float32")
    v = rng.standard_normal((96, 40)).astype("float32")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["hb"]),
             helper.make_node("MatMul", ["hb", "v"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "L", 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "L", 40])],
                              [numpy_helper.from_array(a, n) for a, n in ((w, "w"), (b, "b"), (v, "v"))])
    path = str(tmp_path / "model.onnx")
    with open(path, "wb") as f:
        f.write(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    return path, lambda x: (x @ w + b) @ v


@pytest.mark.parametrize("first, other_versions",
                         [((1, 32), ["at fewer than 2 rows", "at 2 to 7 rows", "at 128 rows or more"]),
                          ((1, 1), ["at 2 to 7 rows", "at 8 to 127 rows", "at 128 rows or more"]),
                          ((2, 2), ["at fewer than 2 rows", "at 8 to 127 rows", "at 128 rows or more"]),
                          ((1, 200), ["at fewer than 2 rows", "at 2 to 7 rows", "at 8 to 127 rows"])])
def test_products_of_symbolic_rows_choose_a_version_by_the_rows_of_each_call(tmp_path, rng, first, other_versions):
    path, reference = projection_model(tmp_path, rng)
    lib = tessera.build(tessera.onnx.load(path), db=False)
    x = rng.standard_normal((*first, 64)).astype("float32")
    np.testing.assert_allclose(lib.run([x])[0], reference(x), rtol=1e-4, atol=1e-4)
    assert lib.symbolic
    products = [k for k in lib.kernels if "matmul" in k["op"]]
    assert products and all(v in k["schedule"] for k in products for v in other_versions), \
        [k["schedule"] for k in products]
    lib.export(str(tmp_path / "m.so"))
    module = tessera.load(str(tmp_path / "m.so"))
    # Rows in each class and at its bounds, rows not dividing the tiles, a batch folded into the
    # rows, none.
    for n, length in [(1, 1), (1, 2), (1, 3), (2, 1), (4, 1), (1, 5), (7, 1), (1, 8), (3, 3), (1, 9), (5, 13), (2, 0),
                      (1, 127), (1, 128), (2, 64), (3, 67), (1, 301)]:
        x = rng.standard_normal((n, length, 64)).astype("float32")
        for run in (lib.run, module.run):
            np.testing.assert_allclose(run([x])[0], reference(x), rtol=1e-4, atol=1e-4)


def test_constant_rows_and_a_gpu_build_have_one_version(tmp_path, rng):
    path, reference = projection_model(tmp_path, rng)
    x = rng.standard_normal((1, 1, 64)).astype("float32")
    static = tessera.build(tessera.onnx.load(path, shapes={"x": x.shape}), db=False)
    opencl = tessera.build(tessera.onnx.load(path), target="opencl", db=False)
    for lib in (static, opencl):
        np.testing.assert_allclose(lib.run([x])[0], reference(x), rtol=1e-4, atol=1e-4)
        assert not any("rows" in k["schedule"] for k in lib.kernels), [k["schedule"] for k in lib.kernels]
