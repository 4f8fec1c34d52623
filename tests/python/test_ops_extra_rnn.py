"""RNN, GRU and LSTM against a numpy reference of ONNX's equations: directions, layouts, biases,
initial states, peepholes, clip, activations with parameters, sequence lengths, all outputs."""
import numpy as np
import pytest

import tessera
from extra_testing import assert_close, run

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
DEFAULT_ACTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}


def activation(name, alpha=None, beta=None):
    sigmoid = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    return {
        "Tanh": np.tanh, "Sigmoid": sigmoid, "Relu": lambda x: np.maximum(x, 0),
        "LeakyRelu": lambda x: np.where(x < 0, (0.01 if alpha is None else alpha) * x, x),
        "HardSigmoid": lambda x: np.clip((0.2 if alpha is None else alpha) * x + (0.5 if beta is None else beta), 0, 1),
        "Affine": lambda x: alpha * x + beta, "ScaledTanh": lambda x: alpha * np.tanh(beta * x),
        "Softsign": lambda x: x / (1 + np.abs(x)), "Softplus": lambda x: np.log1p(np.exp(x)),
        "Elu": lambda x: np.where(x < 0, (1.0 if alpha is None else alpha) * (np.exp(x) - 1), x),
        "ThresholdedRelu": lambda x: np.where(x > (1.0 if alpha is None else alpha), x, 0),
    }[name]


def reference(kind, x, w, r, b=None, lens=None, h0=None, c0=None, p=None, direction="forward", layout=0, clip=None,
              acts=None, lbr=0):
    """ONNX's equations step by step in float64; returns Y, Y_h (and Y_c for LSTM)."""
    x = x.astype(np.float64)
    if layout:
        x = x.transpose(1, 0, 2)
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
        c0 = None if c0 is None else c0.transpose(1, 0, 2)
    steps, batch, _ = x.shape
    dirs, hidden = w.shape[0], r.shape[2]
    lens = np.full(batch, steps) if lens is None else lens
    acts = acts or [activation(a) for a in DEFAULT_ACTS[kind]] * dirs
    per = len(DEFAULT_ACTS[kind])
    y = np.zeros((steps, dirs, batch, hidden))
    y_h, y_c = np.zeros((dirs, batch, hidden)), np.zeros((dirs, batch, hidden))
    cl = (lambda v: np.clip(v, -clip, clip)) if clip else (lambda v: v)
    for d in range(dirs):
        f = acts[d * per:(d + 1) * per]
        wd, rd = w[d].astype(np.float64), r[d].astype(np.float64)
        bd = np.zeros(2 * GATES[kind] * hidden) if b is None else b[d].astype(np.float64)
        wb, rb = np.split(bd, 2)
        reverse = direction == "reverse" or d == 1
        for n in range(batch):
            h = np.zeros(hidden) if h0 is None else h0[d, n].astype(np.float64)
            c = np.zeros(hidden) if c0 is None else c0[d, n].astype(np.float64)
            order = range(lens[n] - 1, -1, -1) if reverse else range(lens[n])
            for t in order:
                xt = x[t, n]
                if kind == "RNN":
                    h = f[0](cl(wd @ xt + rd @ h + wb + rb))
                elif kind == "GRU":
                    wz, wr, wh = np.split(wd, 3)
                    rz, rr, rh = np.split(rd, 3)
                    (wbz, wbr, wbh), (rbz, rbr, rbh) = np.split(wb, 3), np.split(rb, 3)
                    z = f[0](cl(wz @ xt + rz @ h + wbz + rbz))
                    rt = f[0](cl(wr @ xt + rr @ h + wbr + rbr))
                    if lbr:
                        hh = f[1](cl(wh @ xt + rt * (rh @ h + rbh) + wbh))
                    else:
                        hh = f[1](cl(wh @ xt + rh @ (rt * h) + rbh + wbh))
                    h = (1 - z) * hh + z * h
                else:
                    g = wd @ xt + rd @ h + wb + rb
                    gi, go, gf, gc = np.split(g, 4)
                    pi, po, pf = np.split(np.zeros(3 * hidden) if p is None else p[d].astype(np.float64), 3)
                    i = f[0](cl(gi + pi * c))
                    ff = f[0](cl(gf + pf * c))
                    c = ff * c + i * f[1](cl(gc))
                    o = f[0](cl(go + po * c))
                    h = o * f[2](c)
                y[t, d, n] = h
            y_h[d, n], y_c[d, n] = h, c
    if layout:
        y, y_h, y_c = y.transpose(2, 0, 1, 3), y_h.transpose(1, 0, 2), y_c.transpose(1, 0, 2)
    return (y, y_h, y_c) if kind == "LSTM" else (y, y_h)


def make_inputs(rng, kind, steps, batch, inp, hidden, dirs, dtype, bias=True, h0=False, c0=False, peep=False, layout=0):
    g = GATES[kind]
    x = rng.standard_normal((batch, steps, inp) if layout else (steps, batch, inp)).astype(dtype)
    w = (rng.standard_normal((dirs, g * hidden, inp)) * 0.5).astype(dtype)
    r = (rng.standard_normal((dirs, g * hidden, hidden)) * 0.5).astype(dtype)
    b = (rng.standard_normal((dirs, 2 * g * hidden)) * 0.5).astype(dtype) if bias else None
    state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    h = rng.standard_normal(state).astype(dtype) if h0 else None
    c = rng.standard_normal(state).astype(dtype) if c0 else None
    p = rng.standard_normal((dirs, 3 * hidden)).astype(dtype) if peep else None
    return x, w, r, b, h, c, p


def check(kind, inputs, attrs, want, dtype, constants=(), outputs=None):
    n_out = 3 if kind == "LSTM" else 2
    got = run(kind, inputs, attrs, opset=14, outputs=outputs or n_out, constants=constants)
    for g, w in zip(got, [w for w, name in zip(want, outputs or ["y"] * n_out) if name]):
        assert_close(g, w, dtype, 1e-4 if dtype == "float32" else 1e-9)


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("layout", [0, 1])
def test_directions_and_layouts(rng, kind, direction, layout):
    dirs = 2 if direction == "bidirectional" else 1
    x, w, r, b, h0, c0, _ = make_inputs(rng, kind, 5, 3, 4, 17, dirs, "float32", h0=True, c0=kind == "LSTM", layout=layout)
    want = reference(kind, x, w, r, b, h0=h0, c0=c0, direction=direction, layout=layout)
    inputs = [x, w, r, b, None, h0] + ([c0] if kind == "LSTM" else [])
    check(kind, inputs, {"hidden_size": 17, "direction": direction, "layout": layout}, want, "float32")


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
def test_defaults_float64_one_step_constant_weights(rng, kind):
    x, w, r, _, _, _, _ = make_inputs(rng, kind, 1, 1, 3, 2, 1, "float64", bias=False)
    want = reference(kind, x, w, r)
    check(kind, [x, w, r], {"hidden_size": 2}, want, "float64", constants=(1, 2))


def test_gru_linear_before_reset_and_clip(rng):
    x, w, r, b, h0, _, _ = make_inputs(rng, "GRU", 6, 2, 5, 7, 2, "float32", h0=True)
    x *= 3
    want = reference("GRU", x, w, r, b, h0=h0, direction="bidirectional", clip=0.7, lbr=1)
    check("GRU", [x, w, r, b, None, h0], {"hidden_size": 7, "direction": "bidirectional", "clip": 0.7, "linear_before_reset": 1},
          want, "float32")


def test_lstm_peepholes_clip_and_only_some_outputs(rng):
    x, w, r, b, h0, c0, p = make_inputs(rng, "LSTM", 4, 3, 2, 5, 1, "float32", h0=True, c0=True, peep=True)
    want = reference("LSTM", x, w, r, b, h0=h0, c0=c0, p=p, clip=1.5)
    attrs = {"hidden_size": 5, "clip": 1.5}
    check("LSTM", [x, w, r, b, None, h0, c0, p], attrs, want, "float32", outputs=["", "", "y_c"])
    check("LSTM", [x, w, r, b, None, h0, c0, p], attrs, want, "float32", outputs=["y", "", "y_c"])


def test_both_directions_with_peepholes(rng):
    """Both directions of the same activations unroll as one recurrence (each step one batched
    product and one cell), each direction with its own peephole weights."""
    x, w, r, b, h0, c0, p = make_inputs(rng, "LSTM", 4, 3, 2, 5, 2, "float32", h0=True, c0=True, peep=True)
    want = reference("LSTM", x, w, r, b, h0=h0, c0=c0, p=p, direction="bidirectional", clip=1.5)
    check("LSTM", [x, w, r, b, None, h0, c0, p], {"hidden_size": 5, "direction": "bidirectional", "clip": 1.5}, want,
          "float32")


def test_activations_with_parameters(rng):
    x, w, r, b, _, _, _ = make_inputs(rng, "LSTM", 3, 2, 3, 4, 2, "float64")
    names = ["HardSigmoid", "ScaledTanh", "Affine", "LeakyRelu", "Softsign", "Elu"]
    # Values go to the activations taking them, in order: HardSigmoid, ScaledTanh, Affine, LeakyRelu, Elu.
    # (The attributes are float32: these values are exact in it.)
    alphas, betas = [0.25, 0.875, 0.5, 0.0625, 1.25], [0.375, 1.125, 0.25]
    acts = [activation("HardSigmoid", 0.25, 0.375), activation("ScaledTanh", 0.875, 1.125), activation("Affine", 0.5, 0.25),
            activation("LeakyRelu", 0.0625), activation("Softsign"), activation("Elu", 1.25)]
    want = reference("LSTM", x, w, r, b, direction="bidirectional", acts=acts)
    attrs = {"hidden_size": 4, "direction": "bidirectional", "activations": names, "activation_alpha": alphas,
             "activation_beta": betas}
    check("LSTM", [x, w, r, b], attrs, want, "float64")


def test_rnn_default_parameters_of_activations(rng):
    x, w, r, b, _, _, _ = make_inputs(rng, "RNN", 4, 2, 3, 6, 2, "float64")
    # ThresholdedRelu takes the one alpha given; LeakyRelu then keeps its default 0.01.
    acts = [activation("ThresholdedRelu", 0.125), activation("LeakyRelu")]
    want = reference("RNN", x, w, r, b, direction="bidirectional", acts=acts)
    attrs = {"hidden_size": 6, "direction": "bidirectional", "activations": ["ThresholdedRelu", "LeakyRelu"], "activation_alpha": [0.125]}
    check("RNN", [x, w, r, b], attrs, want, "float64")


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("constant_lengths", [True, False])
def test_sequence_lengths(rng, kind, constant_lengths):
    x, w, r, b, h0, c0, _ = make_inputs(rng, kind, 5, 4, 3, 3, 2, "float32", h0=True, c0=kind == "LSTM")
    lens = np.array([5, 2, 0, 4], np.int32)
    want = reference(kind, x, w, r, b, lens=lens, h0=h0, c0=c0, direction="bidirectional")
    inputs = [x, w, r, b, lens, h0] + ([c0] if kind == "LSTM" else [])
    check(kind, inputs, {"hidden_size": 3, "direction": "bidirectional"}, want, "float32", constants=(4,) if constant_lengths else ())


def test_full_sequence_lengths_are_free(rng):
    x, w, r, b, _, _, _ = make_inputs(rng, "GRU", 3, 2, 3, 4, 1, "float32")
    want = reference("GRU", x, w, r, b)
    check("GRU", [x, w, r, b, np.array([3, 3], np.int32)], {"hidden_size": 4}, want, "float32", constants=(4,))


def test_errors(rng):
    x, w, r, b, _, _, _ = make_inputs(rng, "LSTM", 3, 2, 3, 4, 1, "float32")
    with pytest.raises(tessera.Error, match="activations"):
        run("LSTM", [x, w, r], {"hidden_size": 4, "activations": ["Sigmoid"]}, opset=14, outputs=2)
    with pytest.raises(tessera.Error, match="sequence_lens"):
        run("LSTM", [x, w, r, b, np.array([4, 1], np.int32)], {"hidden_size": 4}, opset=14, outputs=2, constants=(4,))
    with pytest.raises(tessera.Error, match="W must be"):
        run("LSTM", [x, w[:, :-1], r], {"hidden_size": 4}, opset=14, outputs=2)
    with pytest.raises(tessera.Error, match="Cosh"):
        run("RNN", [x, w[:, :4], r[:, :4]], {"hidden_size": 4, "activations": ["Cosh"]}, opset=14, outputs=2)
