"""Operators and forms of ONNX opsets 18 to 28 against numpy, on awkward shapes: Attention
(grouped queries, a past, masks, causal and window bounds, softcap), RotaryEmbedding, signed
BitShift, ScatterND/ScatterElements max and min, SpaceToDepth CRD, Split num_outputs, Swish,
CenterCropPad, TensorScatter, CausalConvWithState, SwiGLU, LinearAttention. (The current ONNX
release's node cases run in CI too: tests/onnx.)"""
import numpy as np
import pytest

import tessera
from nn_testing import assert_close, run


def softmax(x):
    with np.errstate(invalid="ignore"):  # a row of -inf is NaN here, zeroed by the caller
        e = np.exp(x - np.max(x, axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


def attention_reference(q, k, v, mask=None, past=None, causal=False, softcap=0.0, left=-1, right=-1):
    """4-D [batch, heads, seq, size] scaled dot-product attention as the ONNX spec defines it."""
    if past is not None:
        k, v = np.concatenate([past[0], k], 2), np.concatenate([past[1], v], 2)
    group = q.shape[1] // k.shape[1]
    kr, vr = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = q.astype("float64") @ kr.astype("float64").transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    if softcap > 0:
        s = softcap * np.tanh(s / softcap)
    sq, sk = q.shape[2], k.shape[2]
    offset = 0 if past is None else past[0].shape[2]
    i, j = np.arange(sq)[:, None] + offset, np.arange(sk)[None, :]
    allowed = np.ones((sq, sk), bool)
    if causal:
        allowed &= j <= i
    if left >= 0:
        allowed &= j >= i - left
    if right >= 0:
        allowed &= j <= i + right
    if mask is not None and mask.dtype == bool:
        allowed = allowed & mask
    elif mask is not None:
        s = s + mask
    s = np.where(allowed, s, -np.inf)
    p = softmax(s)
    p = np.where(np.any(allowed, axis=-1, keepdims=True), p, 0)
    return p @ vr.astype("float64"), k, v


@pytest.mark.parametrize("heads,kv_heads", [(4, 4), (6, 2), (3, 1)])
@pytest.mark.parametrize("past_len", [0, 5])
def test_attention_4d_against_numpy(rng, heads, kv_heads, past_len):
    b, sq, sk, d = 2, 7, 7, 12
    q = rng.standard_normal((b, heads, sq, d)).astype("float32")
    k, v = (rng.standard_normal((b, kv_heads, sk, d)).astype("float32") for _ in range(2))
    inputs = [q, k, v]
    past = None
    if past_len:
        past = tuple(rng.standard_normal((b, kv_heads, past_len, d)).astype("float32") for _ in range(2))
        inputs += [None, past[0], past[1]]
    y, present_k, present_v = run("Attention", inputs, {"is_causal": 1}, opset=23, outputs=3)
    want, wk, wv = attention_reference(q, k, v, past=past, causal=True)
    assert_close(y, want, "float32", rtol=1e-4, atol=1e-4)
    assert_close(present_k, wk, "float32")
    assert_close(present_v, wv, "float32")


def test_attention_3d_masks_softcap_and_window(rng):
    b, s, heads, d = 2, 9, 3, 5
    q, k, v = (rng.standard_normal((b, s, heads * d)).astype("float32") for _ in range(3))
    split = lambda x: x.reshape(b, s, heads, d).transpose(0, 2, 1, 3)
    merge = lambda y: y.transpose(0, 2, 1, 3).reshape(b, s, heads * d)
    bool_mask = rng.random((s, s)) < 0.7
    bool_mask[3] = False  # a row with no key: zeros, not NaN
    attrs = {"q_num_heads": heads, "kv_num_heads": heads}
    (y,) = run("Attention", [q, k, v, bool_mask], {**attrs, "softcap": 2.0}, opset=23)
    want = attention_reference(split(q), split(k), split(v), mask=bool_mask, softcap=2.0)[0]
    assert_close(y, merge(want), "float32", rtol=1e-4, atol=1e-4)
    assert not np.isnan(y).any() and np.all(y.reshape(b, s, heads, d)[:, 3] == 0)
    float_mask = rng.standard_normal((1, heads, s, s)).astype("float32")
    (y,) = run("Attention", [q, k, v, float_mask], {**attrs, "left_window_size": 2, "right_window_size": 1}, opset=25)
    want = attention_reference(split(q), split(k), split(v), mask=float_mask, left=2, right=1)[0]
    assert_close(y, merge(want), "float32", rtol=1e-4, atol=1e-4)


def test_attention_errors(rng):
    q = rng.standard_normal((1, 4, 3, 8)).astype("float32")
    k = rng.standard_normal((1, 3, 3, 8)).astype("float32")
    with pytest.raises(tessera.Error, match=r"query heads \(4\) must be a multiple of the key heads \(3\)"):
        run("Attention", [q, k, k], {}, opset=23)
    with pytest.raises(tessera.Error, match="needs q_num_heads"):
        run("Attention", [q[0], k[0], k[0]], {}, opset=23)


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("rotary_dim", [0, 6])
def test_rotary_embedding(rng, interleaved, rotary_dim):
    b, heads, s, d = 2, 3, 5, 10
    x = rng.standard_normal((b, heads, s, d)).astype("float32")
    r = rotary_dim or d
    positions = rng.integers(0, 11, (b, s)).astype("int64")
    cos, sin = (rng.standard_normal((11, r // 2)).astype("float32") for _ in range(2))
    (y,) = run("RotaryEmbedding", [x, cos, sin, positions], {"interleaved": interleaved, "rotary_embedding_dim": rotary_dim},
               opset=23)
    c, sn = cos[positions][:, None], sin[positions][:, None]  # [b, 1, s, r / 2]
    rot = x[..., :r]
    x1, x2 = (rot[..., 0::2], rot[..., 1::2]) if interleaved else (rot[..., :r // 2], rot[..., r // 2:])
    real, imag = c * x1 - sn * x2, sn * x1 + c * x2
    out = np.stack([real, imag], -1).reshape(rot.shape) if interleaved else np.concatenate([real, imag], -1)
    assert_close(y, np.concatenate([out, x[..., r:]], -1), "float32")


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_signed_bitshift(dtype):
    bits = np.iinfo(dtype).bits
    x = np.array([5, -5, -1, np.iinfo(dtype).min, 3, -7, 9], dtype)
    y = np.array([1, 1, 3, 1, bits, -1, bits + 2], dtype)
    in_range = (y >= 0) & (y < bits)
    safe = np.where(in_range, y, 0)
    (right,) = run("BitShift", [x, y], {"direction": "RIGHT"}, opset=28)
    want = np.where(in_range, x >> safe, np.where(x < 0, -1, 0)).astype(dtype)
    np.testing.assert_array_equal(right, want)
    (left,) = run("BitShift", [x, y], {"direction": "LEFT"}, opset=28)
    wide = (x.astype("int64").view("uint64") << safe.astype("uint64")).astype(np.dtype(dtype).str.replace("i", "u"))
    np.testing.assert_array_equal(left, np.where(in_range, wide.view(dtype), 0).astype(dtype))


@pytest.mark.parametrize("reduction", ["max", "min"])
def test_scatter_max_min_with_duplicates(rng, reduction):
    data = rng.standard_normal((5, 7)).astype("float32")
    indices = np.array([[1, 3, 1], [4, 0, 4], [2, 2, 2]], "int64")
    updates = rng.standard_normal((3, 3)).astype("float32")
    (y,) = run("ScatterElements", [data, indices, updates], {"axis": 1, "reduction": reduction}, opset=18)
    want = data.copy()
    f = np.maximum if reduction == "max" else np.minimum
    for r in range(3):
        for c in range(3):
            want[r, indices[r, c]] = f(want[r, indices[r, c]], updates[r, c])
    assert_close(y, want, "float32")
    nd_indices = np.array([[1], [3], [1]], "int64")
    (y,) = run("ScatterND", [data, nd_indices, updates[:, :1].repeat(7, 1)], {"reduction": reduction}, opset=18)
    want = data.copy()
    for r, i in enumerate(nd_indices[:, 0]):
        want[i] = f(want[i], updates[r, 0])
    assert_close(y, want, "float32")
    with pytest.raises(tessera.Error, match="not one of opset 16's"):
        run("ScatterND", [data, nd_indices, updates[:, :1].repeat(7, 1)], {"reduction": reduction}, opset=16)


def test_space_to_depth_crd(rng):
    x = rng.standard_normal((2, 3, 6, 4)).astype("float32")
    (y,) = run("SpaceToDepth", [x], {"blocksize": 2, "mode": "CRD"}, opset=28)
    want = x.reshape(2, 3, 3, 2, 2, 2).transpose(0, 1, 3, 5, 2, 4).reshape(2, 12, 3, 2)
    assert_close(y, want, "float32")


def test_split_num_outputs_and_swish_and_center_crop_pad(rng):
    x = rng.standard_normal((3, 10)).astype("float32")
    parts = run("Split", [x], {"axis": 1, "num_outputs": 4}, opset=18, outputs=4)
    for got, want in zip(parts, [x[:, 0:3], x[:, 3:6], x[:, 6:9], x[:, 9:]]):
        assert_close(got, want, "float32")
    (y,) = run("Swish", [x], {"alpha": 0.7}, opset=24)
    assert_close(y, x / (1 + np.exp(-0.7 * x)), "float32")
    image = rng.standard_normal((5, 8, 3)).astype("float32")
    (y,) = run("CenterCropPad", [image, np.array([4, 11], "int64")], {"axes": [0, 1]}, opset=18, constants=[1])
    want = np.zeros((4, 11, 3), "float32")
    want[:, 1:9] = image[0:4]
    assert_close(y, want, "float32")


@pytest.mark.parametrize("mode", ["linear", "circular"])
@pytest.mark.parametrize("axis", [-2, 1])
def test_tensor_scatter(rng, mode, axis):
    cache = rng.standard_normal((3, 7, 5)).astype("float32")
    update_shape = list(cache.shape)
    update_shape[axis] = 3
    update = rng.standard_normal(update_shape).astype("float32")
    length = cache.shape[axis]
    starts = np.array([0, 2, 5] if mode == "circular" else [0, 2, length - 3], "int64")
    (y,) = run("TensorScatter", [cache, update, starts], {"axis": axis, "mode": mode}, opset=24)
    want = cache.copy()
    moved, upd = np.moveaxis(want, axis, -1), np.moveaxis(update, axis, -1)  # views: writes reach `want`
    for b in range(3):
        for j in range(3):
            moved[b, ..., (starts[b] + j) % length] = upd[b, ..., j]
    assert_close(y, want, "float32")


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


@pytest.mark.parametrize("channels,length,k", [(5, 9, 4), (1, 1, 3), (3, 7, 1)])
@pytest.mark.parametrize("with_state", [False, True])
def test_causal_conv_with_state_against_numpy(rng, channels, length, k, with_state):
    b = 2
    x = rng.standard_normal((b, channels, length)).astype("float32")
    w = rng.standard_normal((channels, 1, k)).astype("float32")
    bias = rng.standard_normal(channels).astype("float32")
    past = rng.standard_normal((b, channels, k - 1)).astype("float32") if with_state else None
    y, present = run("CausalConvWithState", [x, w, bias] + ([past] if with_state else []),
                     {"activation": "silu"}, opset=27, outputs=2)
    seq = np.concatenate([past if with_state else np.zeros((b, channels, k - 1), "float32"), x], axis=2)
    conv = np.stack([sum(seq[:, :, t + j] * w[None, :, 0, j] for j in range(k)) for t in range(length)], axis=2)
    conv = conv + bias[None, :, None]
    assert_close(y, conv * sigmoid(conv), "float32", rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(present, seq[:, :, length:])


def test_swiglu_against_numpy(rng):
    a, b = (rng.standard_normal((3, 1, 17)).astype("float32") for _ in range(2))
    (y,) = run("SwiGLU", [a, b], {"alpha": 1.702}, opset=28)
    assert_close(y, a * sigmoid(1.702 * a) * b, "float32", rtol=1e-5, atol=1e-6)
    with pytest.raises(tessera.Error, match="must have one shape"):
        run("SwiGLU", [a, b[:, :, :5]], {}, opset=28)


def linear_attention_reference(q, k, v, past, decay, beta, heads, kv_heads, rule):
    """The recurrence token by token, in float64, as the ONNX spec states it."""
    b, t = q.shape[:2]
    dk, dv = k.shape[2] // kv_heads, v.shape[2] // kv_heads
    group = heads // kv_heads
    qh = q.reshape(b, t, kv_heads, group, dk).astype("float64")
    kh, vh = k.reshape(b, t, kv_heads, dk).astype("float64"), v.reshape(b, t, kv_heads, dv).astype("float64")
    s = past.astype("float64").copy()
    out = np.zeros((b, t, kv_heads, group, dv))
    for i in range(t):
        if rule in ("gated", "gated_delta"):
            g = decay[:, i].reshape(b, kv_heads, -1)
            s = np.exp(g)[..., None] * s
        update = vh[:, i][:, :, None, :]
        if rule in ("delta", "gated_delta"):
            recalled = np.einsum("bhkv,bhk->bhv", s, kh[:, i])[:, :, None, :]
            update = beta[:, i].reshape(b, -1, 1, 1) * (update - recalled)
        s = s + kh[:, i][..., None] * update
        out[:, i] = np.einsum("bhgk,bhkv->bhgv", qh[:, i], s) / np.sqrt(dk)
    return out.reshape(b, t, -1), s


@pytest.mark.parametrize("rule", ["linear", "gated", "delta", "gated_delta"])
@pytest.mark.parametrize("tokens", [1, 5])
def test_linear_attention_against_numpy(rng, rule, tokens):
    b, heads, kv_heads, dk, dv = 2, 6, 2, 3, 5
    q = rng.standard_normal((b, tokens, heads * dk)).astype("float32")
    k = rng.standard_normal((b, tokens, kv_heads * dk)).astype("float32")
    k /= np.linalg.norm(k.reshape(b, tokens, kv_heads, dk), axis=-1).repeat(dk, axis=-1)
    v = rng.standard_normal((b, tokens, kv_heads * dv)).astype("float32")
    past = rng.standard_normal((b, kv_heads, dk, dv)).astype("float32")
    decay = -rng.uniform(0, 1, (b, tokens, kv_heads * dk)).astype("float32")  # per key dimension
    beta = rng.uniform(0, 1, (b, tokens, kv_heads)).astype("float32")
    inputs = [q, k, v, past, decay if "gated" in rule else None, beta if "delta" in rule else None]
    while inputs[-1] is None:
        inputs.pop()
    attrs = {"q_num_heads": heads, "kv_num_heads": kv_heads, "update_rule": rule}
    y, state = run("LinearAttention", inputs, attrs, opset=27, outputs=2)
    want_y, want_state = linear_attention_reference(q, k, v, past, decay, beta, heads, kv_heads, rule)
    assert_close(y, want_y, "float32", rtol=1e-4, atol=1e-4)
    assert_close(state, want_state, "float32", rtol=1e-4, atol=1e-4)


def test_linear_attention_refuses_a_missing_gate(rng):
    q = rng.standard_normal((1, 2, 4)).astype("float32")
    with pytest.raises(tessera.Error, match="needs the decay input"):
        run("LinearAttention", [q, q, q], {"q_num_heads": 1, "kv_num_heads": 1, "update_rule": "gated"}, opset=27,
            outputs=2)
