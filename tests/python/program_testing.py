"""What the program tests share (test_programs.py, test_program_values.py): ONNX graph building and
the `build` fixture that runs each model in this process and as an exported module."""
import os
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def save(tmp_path, nodes, inputs, outputs, initializers=(), opset=17, name="model.onnx"):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    path = os.path.join(str(tmp_path), name)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), path)
    return path


def const(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def without_values_as_shape(program):
    """An exported program as the library's: without the steps that give stages values as sizes."""
    lines = [line for line in program.splitlines(keepends=True) if "= values_as_shape(" not in line]
    return re.sub(r"#shape@\d+", "", "".join(lines))


@pytest.fixture(params=["in_process", "module"])
def build(request, tmp_path):
    """tessera.build of the ONNX model at a path: in this process (built on the first run, for every
    size where it can be), or exported and loaded back as a module (every stage built for every size)."""
    def make(path):
        lib = tessera.build(tessera.onnx.load(path))
        assert isinstance(lib, tessera.ProgramLibrary)
        if request.param == "in_process":
            return lib
        module = str(tmp_path / f"exported{len(list(tmp_path.glob('exported*.so')))}.so")
        lib.export(module)
        loaded = tessera.load(module)
        assert isinstance(loaded, tessera.ProgramLibrary) and loaded.builds == []
        assert loaded.input_names == lib.input_names and without_values_as_shape(loaded.program) == lib.program
        return loaded
    make.in_process = request.param == "in_process"
    return make
