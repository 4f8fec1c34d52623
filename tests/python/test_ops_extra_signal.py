"""Signal-processing ONNX operators (windows, MelWeightMatrix, DFT, STFT) against numpy."""
import numpy as np
import pytest

import tessera
from extra_testing import assert_close, run


def window_ref(kind, size, periodic):
    a = {"HannWindow": (0.5, 0.5, 0), "HammingWindow": (25 / 46, 21 / 46, 0), "BlackmanWindow": (0.42, 0.5, 0.08)}[kind]
    n = np.arange(size, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = 2 * np.pi * n / (size if periodic else size - 1)
    return a[0] - a[1] * np.cos(x) + a[2] * np.cos(2 * x)


@pytest.mark.parametrize("kind", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("size,periodic", [(10, 1), (10, 0), (17, 1), (1, 1), (0, 0), (33, 0)])
def test_windows(kind, size, periodic):
    (y,) = run(kind, [np.array(size, np.int64)], {"periodic": periodic}, constants=(0,))
    assert_close(y, window_ref(kind, size, periodic), "float32", 1e-6)


def test_window_output_datatype_and_int32_size():
    (y,) = run("HannWindow", [np.array(7, np.int32)], {"output_datatype": 11}, constants=(0,))
    assert_close(y, window_ref("HannWindow", 7, 1), "float64", 1e-12)


def test_symmetric_window_of_one_is_nan_like_the_reference():
    (y,) = run("HammingWindow", [np.array(1, np.int64)], {"periodic": 0}, constants=(0,))
    assert y.shape == (1,) and np.isnan(y[0])


@pytest.mark.parametrize("exported", [False, True], ids=["in_process", "exported"])
def test_window_size_from_a_graph_input_is_taken_at_run_time(tmp_path, exported):
    # The size sets the output's length: a size the stage takes, so one build (and a module)
    # serves every size, its kernel computing the window in float64.
    from onnx import TensorProto, helper
    import onnx
    nodes = [helper.make_node(kind, ["n"], [kind], periodic=p, output_datatype=t)
             for kind, p, t in [("HannWindow", 1, 1), ("HammingWindow", 0, 11), ("BlackmanWindow", 0, 1)]]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("n", TensorProto.INT64, [])],
                              [helper.make_tensor_value_info(n.output[0], TensorProto.UNDEFINED, None) for n in nodes])
    path = tmp_path / "windows.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    lib = tessera.build(tessera.onnx.load(str(path)))
    if exported:
        lib.export(str(tmp_path / "m.so"))
        lib = tessera.load(str(tmp_path / "m.so"))
    for size in [8, 1, 0, 2, 131]:
        hann, hamming, blackman = lib.run([np.int64(size)])
        assert (hann.dtype, hamming.dtype, blackman.dtype) == (np.float32, np.float64, np.float32)
        np.testing.assert_allclose(hann, window_ref("HannWindow", size, 1), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(hamming, window_ref("HammingWindow", size, 0), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(blackman, window_ref("BlackmanWindow", size, 0), rtol=1e-6, atol=1e-7)
    if not exported:
        assert lib.symbolic
    with pytest.raises(tessera.Error, match="must not be negative"):
        lib.run([np.int64(-1)])


def mel_ref(bins, dft_length, sample_rate, lower, upper):
    spectrogram_bins = dft_length // 2 + 1
    low_mel, high_mel = 2595 * np.log10(1 + lower / 700), 2595 * np.log10(1 + upper / 700)
    step = (high_mel - low_mel) / (bins + 2)
    hz = 700 * (np.power(10, (np.arange(bins + 2) * step + low_mel) / 2595) - 1)
    edge = np.floor((dft_length + 1) * hz / sample_rate).astype(int)
    out = np.zeros((spectrogram_bins, bins))
    for i in range(bins):
        left, center, right = edge[i], edge[i + 1], edge[i + 2]
        if center == left:
            if center < spectrogram_bins:
                out[center, i] = 1
        else:
            for j in range(left, min(center + 1, spectrogram_bins)):
                out[j, i] = (j - left) / (center - left)
        for j in range(center, min(right, spectrogram_bins)):
            out[j, i] = (right - j) / (right - center)
    return out


@pytest.mark.parametrize("bins,dft_length,rate,lower,upper", [(8, 16, 8192, 0, 4096), (5, 33, 16000, 100, 7000), (13, 64, 22050, 20, 11025)])
def test_mel_weight_matrix(bins, dft_length, rate, lower, upper):
    inputs = [np.array(bins, np.int64), np.array(dft_length, np.int64), np.array(rate, np.int64),
              np.array(lower, np.float32), np.array(upper, np.float32)]
    (y,) = run("MelWeightMatrix", inputs, constants=range(5))
    assert_close(y, mel_ref(bins, dft_length, rate, lower, upper), "float32", 1e-6)


def test_mel_weight_matrix_and_stft_sized_at_run_time_run_on_the_host(tmp_path, rng):
    """MelWeightMatrix of inputs given at run time and STFT of a frame length given at run time
    (ONNX's node tests give them so): the program computes them on the host between its stages
    (runtime/signal_ops.h), so one build and its module serve every value (a module refused them:
    "needs its num_mel_bins as a constant")."""
    from onnx import TensorProto, helper
    from test_symbolic_ops import save, vi
    I64 = TensorProto.INT64
    nodes = [helper.make_node("MelWeightMatrix", ["bins", "dft", "rate", "low", "high"], ["mel"], name="mel"),
             helper.make_node("STFT", ["signal", "step", "", "frame"], ["spectrum"], onesided=1, name="stft"),
             helper.make_node("Relu", ["spectrum"], ["y"])]
    path = save(tmp_path, nodes, [vi("bins", [], I64), vi("dft", [], I64), vi("rate", [], I64), vi("low", []),
                                  vi("high", []), vi("signal", ["N", "L", 1]), vi("step", [], I64),
                                  vi("frame", [], I64)], [vi("mel", None), vi("y", None)])
    lib = tessera.build(tessera.onnx.load(path), db=False)
    lib.export(str(tmp_path / "m.so"))
    module = tessera.load(str(tmp_path / "m.so"))
    for bins, dft, rate, low, high, n, length, step, frame in [(8, 16, 8192, 0, 4096, 1, 64, 8, 16),
                                                               (5, 33, 16000, 100, 7000, 2, 37, 5, 13)]:
        signal = rng.standard_normal((n, length, 1)).astype("float32")
        args = [np.int64(bins), np.int64(dft), np.int64(rate), np.float32(low), np.float32(high), signal,
                np.int64(step), np.int64(frame)]
        for runner in (lib, module):
            mel, y = runner.run(args)
            assert_close(mel, mel_ref(bins, dft, rate, low, high), "float32", 1e-6)
            assert_close(y, np.maximum(stft_ref(signal, step, None, frame, 1), 0), "float32", 1e-4)
    args[0] = np.int64(0)
    for runner in (lib, module):
        with pytest.raises(tessera.Error, match="MelWeightMatrix.*num_mel_bins.*must be positive"):
            runner.run(args)


def to_complex(x):
    return x[..., 0] + 1j * x[..., 1] if x.shape[-1] == 2 else x[..., 0]


def from_complex(c):
    return np.stack([c.real, c.imag], axis=-1)


def dft_ref(x, axis, length, inverse, onesided):
    c = to_complex(x.astype(np.float64))
    y = np.fft.ifft(c, n=length, axis=axis) if inverse else np.fft.fft(c, n=length, axis=axis)
    if onesided:
        y = np.take(y, np.arange(length // 2 + 1), axis=axis)
    return from_complex(y)


@pytest.mark.parametrize("shape,axis,length,inverse,onesided", [
    ((2, 10, 1), 1, None, 0, 0),
    ((3, 7, 5, 2), 1, None, 0, 0),       # complex, odd length, batch of matrices
    ((3, 7, 5, 2), 2, None, 1, 0),       # inverse along the second signal axis
    ((3, 7, 5, 2), -2, None, 0, 0),      # negative axis counts from the back
    ((2, 9, 1), 1, 16, 0, 0),            # zero-padded to dft_length
    ((2, 20, 2), 1, 12, 0, 0),           # cut to dft_length
    ((4, 17, 1), 1, None, 0, 1),         # onesided
    ((1, 16, 3, 1), 1, 15, 0, 1),        # onesided after cutting, odd length
    ((1, 1, 1), 1, None, 0, 0),          # a single sample
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dft(rng, shape, axis, length, inverse, onesided, dtype):
    x = rng.standard_normal(shape).astype(dtype)
    inputs = [x] if length is None else [x, np.array(length, np.int64)]
    (y,) = run("DFT", inputs, {"axis": axis, "inverse": inverse, "onesided": onesided}, constants=(1,))
    n = length or shape[axis]
    assert_close(y, dft_ref(x, axis % len(shape), n, inverse, onesided), dtype, 1e-4 if dtype == "float32" else 1e-9)


def test_dft_float16(rng):
    x = rng.standard_normal((2, 8, 2)).astype("float16")
    (y,) = run("DFT", [x])
    assert_close(y, dft_ref(x, 1, 8, 0, 0), "float16", 2e-2)


def test_dft_rejects_a_bad_last_dimension(rng):
    with pytest.raises(tessera.Error, match="real|complex"):
        run("DFT", [rng.standard_normal((2, 8, 3)).astype("float32")])


def stft_ref(signal, step, window, length, onesided):
    c = to_complex(signal.astype(np.float64))
    frames = (c.shape[1] - length) // step + 1
    w = np.ones(length) if window is None else window.astype(np.float64)
    bins = length // 2 + 1 if onesided else length
    out = np.empty((c.shape[0], frames, bins), np.complex128)
    for f in range(frames):
        out[:, f] = np.fft.fft(c[:, f * step:f * step + length] * w, axis=1)[:, :bins]
    return from_complex(out)


@pytest.mark.parametrize("batch,length,parts,step,frame,onesided,window_kind", [
    (1, 128, 1, 8, 16, 1, None),
    (2, 50, 1, 7, 13, 1, "runtime"),     # the step does not divide the length, odd frame
    (3, 40, 2, 5, 10, 0, "constant"),    # complex signal, two-sided
    (1, 17, 1, 1, 17, 1, "constant"),    # a single frame
])
def test_stft(rng, batch, length, parts, step, frame, onesided, window_kind):
    signal = rng.standard_normal((batch, length, parts)).astype("float32")
    window = None if window_kind is None else rng.uniform(0.1, 1, frame).astype("float32")
    inputs = [signal, np.array(step, np.int64), window, np.array(frame, np.int64) if window is None else None]
    constants = (1, 3) + ((2,) if window_kind == "constant" else ())
    (y,) = run("STFT", inputs, {"onesided": onesided}, constants=constants)
    assert_close(y, stft_ref(signal, step, window, frame, onesided), "float32", 1e-4)


def test_stft_frame_longer_than_signal(rng):
    signal = rng.standard_normal((1, 8, 1)).astype("float32")
    with pytest.raises(tessera.Error, match="frame length"):
        run("STFT", [signal, np.array(2, np.int64), None, np.array(9, np.int64)], constants=(1, 3))


@pytest.mark.parametrize("parts,onesided,window_kind,step_given", [
    (1, 1, None, "at run time"),
    (2, 0, "constant", "at run time"),
    (1, 1, "runtime", "at run time"),
    (1, 1, "runtime", "constant"),       # a strided convolution over a signal of symbolic length
    (2, 0, None, "constant"),
])
def test_stft_of_a_symbolic_signal_and_a_frame_step_given_at_run_time(tmp_path, rng, parts, onesided, window_kind,
                                                                      step_given):
    """STFT of a signal of symbolic batch and length (an audio model exported with dynamic axes),
    its frame_step a constant or a value given at each run (a size): one build and its module
    serve every length, step and number of frames, one frame and none among them."""
    from onnx import TensorProto, helper, numpy_helper
    from test_symbolic_ops import save, vi
    frame = 12
    window = rng.uniform(0.1, 1, frame).astype("float32")
    inputs, inits = [vi("signal", ["N", "L", parts])], [numpy_helper.from_array(np.array(frame, "int64"), "frame")]
    if step_given == "at run time":
        inputs.append(vi("step", [], TensorProto.INT64))
    else:
        inits.append(numpy_helper.from_array(np.array(3, "int64"), "step"))
    if window_kind == "runtime":
        inputs.append(vi("window", [frame]))
    elif window_kind == "constant":
        inits.append(numpy_helper.from_array(window, "window"))
    node = helper.make_node("STFT", ["signal", "step", "window" if window_kind else "", "" if window_kind else "frame"],
                            ["y"], onesided=onesided, name="stft")
    path = save(tmp_path, [node], inputs, [vi("y", None)], inits)
    lib = tessera.build(tessera.onnx.load(path), db=False)
    lib.export(str(tmp_path / "m.so"))
    module = tessera.load(str(tmp_path / "m.so"))
    for n, length, step in [(1, 64, 3), (2, 37, 5), (3, 12, 3), (1, 20, 16), (2, 11, 3)]:
        if step_given == "constant":
            step = 3
        signal = rng.standard_normal((n, length, parts)).astype("float32")
        args = [signal] + ([np.array(step, "int64")] if step_given == "at run time" else [])
        args += [window] if window_kind == "runtime" else []
        want = stft_ref(signal, step, window if window_kind else None, frame, onesided)
        for runner in (lib, module):
            if length < frame and step_given == "constant":  # the strided convolution needs one frame
                with pytest.raises(tessera.Error, match="conv .*node 'stft'"):
                    runner.run(args)
                continue
            (y,) = runner.run(args)  # no frame: as many as ONNX's reference gives, none
            assert_close(y, want, "float32", 1e-4)
    assert lib.symbolic, lib.symbolic_reason


def test_dft_of_a_symbolic_batch(tmp_path, rng):
    from test_symbolic_ops import save, vi
    from onnx import helper
    path = save(tmp_path, [helper.make_node("DFT", ["x"], ["y"], axis=2)], [vi("x", ["N", "M", 9, 2])], [vi("y", None)])
    lib = tessera.build(tessera.onnx.load(path), db=False)
    lib.export(str(tmp_path / "m.so"))
    module = tessera.load(str(tmp_path / "m.so"))
    for shape in [(1, 1, 9, 2), (3, 5, 9, 2), (2, 0, 9, 2)]:
        x = rng.standard_normal(shape).astype("float32")
        for runner in (lib, module):
            assert_close(runner.run([x])[0], dft_ref(x, 2, 9, 0, 0), "float32", 1e-4)
