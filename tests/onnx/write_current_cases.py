#!/usr/bin/env python3
"""Writes the ONNX node test cases of the onnx package this interpreter has (a current release from
PyPI, which generates them instead of shipping them) in the layout of ONNX's test data:
OUT/<case>/model.onnx and OUT/<case>/test_data_set_<i>/{input,output}_<j>.pb, with each case's
tolerances in OUT/<case>/tolerance.json. Run in a venv with that onnx (scripts/setup.sh:
ensure_onnx_current), never into the repository.

    build/onnx-current/bin/python tests/onnx/write_current_cases.py OUT
"""
import json
import os
import shutil
import sys
import warnings

import onnx
from onnx import numpy_helper
from onnx.backend.test.case.node import collect_testcases


def serialize(value, value_info):
    """A tensor, sequence, optional or map value as the protobuf ONNX's test data stores (cases of
    types numpy lacks, such as float8, give a TensorProto already)."""
    if isinstance(value, onnx.TensorProto):
        value.name = value_info.name
        return value.SerializeToString()
    t = value_info.type
    if t.HasField("sequence_type"):
        return numpy_helper.from_list(value, value_info.name).SerializeToString()
    if t.HasField("optional_type"):
        return numpy_helper.from_optional(value, value_info.name).SerializeToString()
    if t.HasField("map_type"):
        return numpy_helper.from_dict(value, value_info.name).SerializeToString()
    return numpy_helper.from_array(value, value_info.name).SerializeToString()


def write_case(case, out):
    folder = os.path.join(out, case.name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    with open(os.path.join(folder, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    with open(os.path.join(folder, "tolerance.json"), "w") as f:
        json.dump({"rtol": case.rtol, "atol": case.atol}, f)
    for i, (inputs, outputs) in enumerate(case.data_sets):
        data = os.path.join(folder, f"test_data_set_{i}")
        os.makedirs(data)
        for kind, values, infos in (("input", inputs, case.model.graph.input),
                                    ("output", outputs, case.model.graph.output)):
            for j, value in enumerate(values):
                with open(os.path.join(data, f"{kind}_{j}.pb"), "wb") as f:
                    f.write(serialize(value, infos[j]))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    with warnings.catch_warnings():  # the reference implementations overflow on purpose
        warnings.simplefilter("ignore")
        cases = [c for c in collect_testcases() if c.kind == "node"]
    for case in cases:
        write_case(case, out)
    with open(os.path.join(out, "onnx_version.txt"), "w") as f:
        f.write(onnx.__version__ + "\n")
    print(f"wrote {len(cases)} node cases of onnx {onnx.__version__} to {out}")


if __name__ == "__main__":
    main()
