"""RNN, GRU and LSTM over a sequence of symbolic length (issue 25): a model exported with a dynamic
sequence axis runs each recurrent node as a Scan over steps of the same operator, one build for
every length (a recurrence unrolls over a constant length only), in this process and from its
exported module; against test_ops_extra_rnn's reference of ONNX's equations and PyTorch."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tessera
from extra_testing import assert_close
from test_ops_extra_rnn import GATES, activation, make_inputs, reference
from test_symbolic_ops import save, vi


def recurrent_model(tmp_path, kind, w, r, b=None, p=None, lens=False, h0=False, c0=False, layout=0, opset=14,
                    outputs=("y", "y_h", "y_c"), **attrs):
    """One recurrent node: X of symbolic length L and batch N; the weights initializers (as
    exporters write them); sequence_lens and the initial states graph inputs when asked."""
    dirs, hidden = w.shape[0], r.shape[2]
    x_shape = ["N", "L", w.shape[2]] if layout else ["L", "N", w.shape[2]]
    state = ["N", dirs, hidden] if layout else [dirs, "N", hidden]
    dtype = TensorProto.DOUBLE if w.dtype == np.float64 else TensorProto.FLOAT
    inputs, inits = [vi("x", x_shape, dtype)], [numpy_helper.from_array(w, "w"), numpy_helper.from_array(r, "r")]
    names = ["x", "w", "r", "b" if b is not None else ""]
    if b is not None:
        inits.append(numpy_helper.from_array(b, "b"))
    names.append("lens" if lens else "")
    if lens:
        inputs.append(vi("lens", ["N"], TensorProto.INT32))
    for name, given in [("h0", h0), ("c0", c0)]:
        names.append(name if given else "")
        if given:
            inputs.append(vi(name, state, dtype))
    if p is not None:
        names.append("p")
        inits.append(numpy_helper.from_array(p, "p"))
    while not names[-1]:
        names.pop()
    outputs = list(outputs[:3 if kind == "LSTM" else 2])
    y_shape = ["N", "L", dirs, hidden] if layout else ["L", dirs, "N", hidden]
    node = helper.make_node(kind, names, outputs, hidden_size=hidden, layout=layout, **attrs) if opset >= 14 else \
        helper.make_node(kind, names, outputs, hidden_size=hidden, **attrs)
    declared = [vi(o, y_shape if i == 0 else state, dtype) for i, o in enumerate(outputs) if o]
    return save(tmp_path, [node], inputs, declared, inits, opset=opset)


def check_lengths(tmp_path, path, kind, sizes, make, want_of, dtype="float32", export=False):
    """Runs the model at each (L, N) of `sizes`: the inputs from make(L, N), against want_of(inputs)."""
    lib = tessera.build(tessera.onnx.load(path), db=False)
    assert isinstance(lib, tessera.ProgramLibrary) and "scan(" in lib.program
    runs = [lib.run]
    if export:
        lib.export(str(tmp_path / "m.so"))
        runs.append(tessera.load(str(tmp_path / "m.so")).run)
    for steps, batch in sizes:
        inputs = make(steps, batch)
        want = want_of(inputs)
        for run in runs:
            got = run([v for v in inputs if v is not None])
            assert len(got) == len([w for w in want if w is not None])
            for g, w in zip(got, [w for w in want if w is not None]):
                assert_close(g, w, dtype, 1e-4 if dtype == "float32" else 1e-9)
    assert lib.symbolic, lib.symbolic_reason  # one build served every length
    return lib


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction,layout", [("forward", 0), ("reverse", 1), ("bidirectional", 0), ("bidirectional", 1)])
def test_directions_and_layouts_at_every_length(tmp_path, rng, kind, direction, layout):
    dirs = 2 if direction == "bidirectional" else 1
    _, w, r, b, _, _, _ = make_inputs(rng, kind, 1, 1, 4, 9, dirs, "float32")
    path = recurrent_model(tmp_path, kind, w, r, b, h0=True, c0=kind == "LSTM", layout=layout, direction=direction)

    def make(steps, batch):
        x, _, _, _, h0, c0, _ = make_inputs(rng, kind, steps, batch, 4, 9, dirs, "float32", h0=True,
                                            c0=kind == "LSTM", layout=layout)
        return [x, h0, c0]

    check_lengths(tmp_path, path, kind, [(5, 3), (1, 1), (12, 2)], make,
                  lambda i: reference(kind, i[0], w, r, b, h0=i[1], c0=i[2], direction=direction, layout=layout),
                  export=direction == "bidirectional" and layout == 1)


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
def test_sequence_lengths_given_at_run_time(tmp_path, rng, kind):
    """Entries whose sequence ended keep their state and output zeros; the reverse direction reads
    each entry's own steps backwards (from its length, not the tensor's)."""
    _, w, r, b, _, _, _ = make_inputs(rng, kind, 1, 1, 3, 5, 2, "float32")
    path = recurrent_model(tmp_path, kind, w, r, b, lens=True, direction="bidirectional")
    lengths = {(6, 4): [6, 2, 0, 5], (1, 2): [1, 0], (3, 1): [3]}

    def make(steps, batch):
        x = make_inputs(rng, kind, steps, batch, 3, 5, 2, "float32")[0]
        return [x, np.array(lengths[steps, batch], np.int32)]

    check_lengths(tmp_path, path, kind, list(lengths), make,
                  lambda i: reference(kind, i[0], w, r, b, lens=i[1], direction="bidirectional"), export=kind == "GRU")


def test_lstm_peepholes_clip_and_activations_with_parameters(tmp_path, rng):
    _, w, r, b, _, _, p = make_inputs(rng, "LSTM", 1, 1, 3, 4, 2, "float64", peep=True)
    names = ["HardSigmoid", "ScaledTanh", "Affine", "LeakyRelu", "Softsign", "Elu"]
    alphas, betas = [0.25, 0.875, 0.5, 0.0625, 1.25], [0.375, 1.125, 0.25]
    acts = [activation("HardSigmoid", 0.25, 0.375), activation("ScaledTanh", 0.875, 1.125), activation("Affine", 0.5, 0.25),
            activation("LeakyRelu", 0.0625), activation("Softsign"), activation("Elu", 1.25)]
    path = recurrent_model(tmp_path, "LSTM", w, r, b, p=p, direction="bidirectional", clip=1.5, activations=names,
                           activation_alpha=alphas, activation_beta=betas)
    check_lengths(tmp_path, path, "LSTM", [(4, 2), (1, 3)],
                  lambda steps, batch: [make_inputs(rng, "LSTM", steps, batch, 3, 4, 2, "float64")[0]],
                  lambda i: reference("LSTM", i[0], w, r, b, p=p, direction="bidirectional", acts=acts, clip=1.5),
                  dtype="float64", export=True)


def test_gru_linear_before_reset_and_only_the_last_state(tmp_path, rng):
    _, w, r, b, _, _, _ = make_inputs(rng, "GRU", 1, 1, 5, 7, 1, "float32")
    path = recurrent_model(tmp_path, "GRU", w, r, b, direction="reverse", linear_before_reset=1, clip=0.7,
                           outputs=("", "y_h"))
    check_lengths(tmp_path, path, "GRU", [(6, 2), (2, 1)],
                  lambda steps, batch: [3 * make_inputs(rng, "GRU", steps, batch, 5, 7, 1, "float32")[0]],
                  lambda i: [reference("GRU", i[0], w, r, b, direction="reverse", clip=0.7, lbr=1)[1]])


@pytest.mark.parametrize("opset", [9, 12])
def test_opsets_before_axes_inputs(tmp_path, rng, opset):
    """Before opset 13 Squeeze and Unsqueeze take their axes as attributes; before 10 there is no
    ReverseSequence (a reverse direction without sequence_lens reads the Scan backwards)."""
    _, w, r, b, _, _, _ = make_inputs(rng, "LSTM", 1, 1, 3, 4, 2, "float32")
    path = recurrent_model(tmp_path, "LSTM", w, r, b, direction="bidirectional", opset=opset)
    check_lengths(tmp_path, path, "LSTM", [(4, 2), (1, 1)],
                  lambda steps, batch: [make_inputs(rng, "LSTM", steps, batch, 3, 4, 2, "float32")[0]],
                  lambda i: reference("LSTM", i[0], w, r, b, direction="bidirectional"), export=True)


def test_weights_given_at_run_time(tmp_path, rng):
    """Weights that are graph inputs (not initializers): each step projects its own input."""
    _, w, r, b, _, _, _ = make_inputs(rng, "LSTM", 1, 1, 3, 4, 2, "float32")
    node = helper.make_node("LSTM", ["x", "w", "r", "b"], ["y", "y_h"], hidden_size=4, direction="bidirectional")
    path = save(tmp_path, [node], [vi("x", ["L", "N", 3]), vi("w", [2, 16, 3]), vi("r", [2, 16, 4]), vi("b", [2, 32])],
                [vi("y", ["L", 2, "N", 4]), vi("y_h", [2, "N", 4])])
    check_lengths(tmp_path, path, "LSTM", [(5, 2), (1, 1)],
                  lambda steps, batch: [make_inputs(rng, "LSTM", steps, batch, 3, 4, 2, "float32")[0], w, r, b],
                  lambda i: reference("LSTM", i[0], w, r, b, direction="bidirectional")[:2], export=True)


def test_opset_8_recurrences_are_built_per_length_saying_why(tmp_path, rng):
    """Before opset 9 a Scan scans a batch: the node unrolls at each length it meets instead."""
    _, w, r, b, _, _, _ = make_inputs(rng, "GRU", 1, 1, 3, 4, 1, "float32")
    path = recurrent_model(tmp_path, "GRU", w, r, b, opset=8)
    lib = tessera.build(tessera.onnx.load(path), db=False)
    assert isinstance(lib, tessera.DynamicLibrary)
    for steps in [3, 1]:
        x = make_inputs(rng, "GRU", steps, 2, 3, 4, 1, "float32")[0]
        for g, want in zip(lib.run([x]), reference("GRU", x, w, r, b)):
            assert_close(g, want, "float32", 1e-4)
    assert not lib.symbolic and "the sequence length (L) is symbolic" in lib.symbolic_reason


def test_a_symbolic_batch_over_a_constant_length_unrolls_once(tmp_path, rng):
    _, w, r, b, _, _, _ = make_inputs(rng, "LSTM", 1, 1, 3, 4, 2, "float32")
    graph_x = vi("x", [5, "N", 3])
    path = save(tmp_path, [helper.make_node("LSTM", ["x", "w", "r", "b"], ["y"], hidden_size=4, direction="bidirectional")],
                [graph_x], [vi("y", [5, 2, "N", 4])],
                [numpy_helper.from_array(a, n) for a, n in [(w, "w"), (r, "r"), (b, "b")]])
    lib = tessera.build(tessera.onnx.load(path), db=False)
    for batch in [2, 1, 7]:
        x = make_inputs(rng, "LSTM", 5, batch, 3, 4, 2, "float32")[0]
        assert_close(lib.run([x])[0], reference("LSTM", x, w, r, b, direction="bidirectional")[0], "float32", 1e-4)
    assert isinstance(lib, tessera.DynamicLibrary) and lib.symbolic, lib.symbolic_reason


def test_pytorch_stack_exported_with_a_dynamic_sequence(tmp_path):
    torch = pytest.importorskip("torch")
    from torch_numpy import array

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(6, 8, num_layers=2, batch_first=True, bidirectional=True)
            self.gru = torch.nn.GRU(16, 5, batch_first=True)

        def forward(self, x):
            y, _ = self.lstm(x)
            return self.gru(y)

    torch.manual_seed(0)
    model = Model().eval()
    path = str(tmp_path / "rnn.onnx")
    torch.onnx.export(model, (torch.randn(2, 7, 6),), path, input_names=["x"], output_names=["y", "h"],
                      dynamic_axes={"x": {0: "N", 1: "L"}}, opset_version=17)
    lib = tessera.build(tessera.onnx.load(path), db=False)
    lib.export(str(tmp_path / "m.so"))
    module = tessera.load(str(tmp_path / "m.so"))
    for batch, steps in [(2, 7), (1, 1), (3, 30)]:
        x = torch.randn(batch, steps, 6)
        with torch.no_grad():
            want = [array(t) for t in model(x)]
        for run in (lib.run, module.run):
            for got, w in zip(run([array(x)]), want):
                np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind,attrs,peepholes,bias_input",
                         [("GRU", {"linear_before_reset": 1}, False, False), ("LSTM", {}, True, False),
                          ("RNN", {}, False, True)])
def test_both_directions_of_a_node_run_as_one_scan(tmp_path, rng, kind, attrs, peepholes, bias_input):
    """Both directions applying the same activations with W a constant run as one Scan (each step
    one batched product and one cell), the reverse direction's steps reversed around it by
    sequence_lens; a GRU's recurrent candidate bias, a bias given at run time and the peephole
    weights are read in the step."""
    _, w, r, b, _, _, p = make_inputs(rng, kind, 1, 1, 3, 5, 2, "float32", peep=peepholes)
    path = recurrent_model(tmp_path, kind, w, r, b, p=p, lens=True, h0=True, direction="bidirectional", **attrs)
    if bias_input:  # B a graph input instead of an initializer
        model = onnx.load(path)
        del model.graph.initializer[[i.name for i in model.graph.initializer].index("b")]
        model.graph.input.append(vi("b", list(b.shape)))
        onnx.save(model, path)
    lengths = {(6, 3): [6, 2, 0], (1, 2): [1, 0]}

    def make(steps, batch):
        x, _, _, _, h0, _, _ = make_inputs(rng, kind, steps, batch, 3, 5, 2, "float32", h0=True)
        return [x, np.array(lengths[steps, batch], np.int32), h0] + ([b] if bias_input else [])

    lib = check_lengths(tmp_path, path, kind, list(lengths), make,
                        lambda i: reference(kind, i[0], w, r, b, p=p, lens=i[1], h0=i[2], direction="bidirectional",
                                            lbr=attrs.get("linear_before_reset", 0)), export=True)
    assert lib.program.count(" = scan(") == 1, lib.program


def test_directions_of_different_activations_run_as_a_scan_each(tmp_path, rng):
    _, w, r, b, _, _, _ = make_inputs(rng, "RNN", 1, 1, 3, 4, 2, "float32")
    path = recurrent_model(tmp_path, "RNN", w, r, b, direction="bidirectional", activations=["Tanh", "Relu"])
    acts = [activation("Tanh"), activation("Relu")]
    lib = check_lengths(tmp_path, path, "RNN", [(4, 2), (1, 1)],
                        lambda steps, batch: [make_inputs(rng, "RNN", steps, batch, 3, 4, 2, "float32")[0]],
                        lambda i: reference("RNN", i[0], w, r, b, direction="bidirectional", acts=acts))
    assert lib.program.count(" = scan(") == 2, lib.program
