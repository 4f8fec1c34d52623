"""Training gradients of whole models against PyTorch autograd, in float32 with the same weights:
a small CNN (grouped strided convolutions, batch normalization in training mode with its
running statistics, relu, max pooling, global average pooling, a linear layer, cross-entropy)
and a transformer block (layer norm, attention through matmul and softmax, tanh-GELU MLP,
residuals). The loss and every parameter gradient match to 1e-5, relative to each tensor's
largest value."""
import numpy as np
import pytest

import tessera

torch = pytest.importorskip("torch")
import torch_numpy  # noqa: E402

RTOL = 1e-5


def assert_close(got, want, what):
    want = np.asarray(want)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL * max(float(np.abs(want).max()), 1e-30), err_msg=what)


def signature(values):
    return ", ".join(f"%{name}: {'int64' if v.dtype == np.int64 else 'float32'}[{', '.join(map(str, v.shape))}]"
                     for name, v in values.items())


def run_gradient(text, values, wrt, cotangents):
    """The outputs and the gradients w.r.t. `wrt` of the module `text` (parameters in the order of
    `values`), for the given output cotangents."""
    mod = tessera.relay.parse(text)
    lib = tessera.build(tessera.relay.gradient(mod, wrt, cotangents=True))
    results = lib.run(list(values.values()) + cotangents)
    n = len(cotangents)
    return results[:n], dict(zip(wrt, results[n:]))


def test_cnn_with_batch_norm_in_training_mode():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            # No biases before the batch norms: their gradients are zero up to rounding.
            self.conv1 = torch.nn.Conv2d(4, 8, 3, stride=2, padding=1, groups=2, bias=False)
            self.bn1 = torch.nn.BatchNorm2d(8)
            self.conv2 = torch.nn.Conv2d(8, 16, 3, padding=1, bias=False)
            self.bn2 = torch.nn.BatchNorm2d(16)
            self.fc = torch.nn.Linear(16, 5)

        def forward(self, x):
            x = torch.relu(self.bn1(self.conv1(x)))
            x = torch.nn.functional.max_pool2d(x, 2, 2)
            x = torch.relu(self.bn2(self.conv2(x)))
            x = torch.nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
            return self.fc(x)

    net = Net().train()
    with torch.no_grad():  # batch norms away from the identity, running statistics not at their initial values
        for bn in (net.bn1, net.bn2):
            bn.weight.uniform_(0.5, 1.5), bn.bias.uniform_(-0.5, 0.5)
            bn.running_mean.uniform_(-1, 1), bn.running_var.uniform_(0.5, 2)
    x = rng.standard_normal((4, 4, 12, 12)).astype("float32")
    labels = rng.integers(0, 5, 4).astype("int64")
    params = {"w1": net.conv1.weight, "s1": net.bn1.weight, "c1": net.bn1.bias, "w2": net.conv2.weight, "s2": net.bn2.weight,
              "c2": net.bn2.bias,
              "fw": net.fc.weight, "fb": net.fc.bias}
    stats = {"m1": net.bn1.running_mean, "v1": net.bn1.running_var, "m2": net.bn2.running_mean, "v2": net.bn2.running_var}
    values = {"x": x, "labels": labels}
    values.update({k: torch_numpy.array(p) for k, p in params.items()})
    values.update({k: torch_numpy.array(s) for k, s in stats.items()})
    bn = "epsilon=1e-05, momentum=0.9, unbiased_running_var=1"  # ONNX momentum: the weight of the old running value
    text = f"""def @main({signature(values)}) {{
      %0 = conv(%x, %w1, strides=[2, 2], pads=[1, 1, 1, 1], groups=2);
      %1 = batch_norm_train(%0, %s1, %c1, %m1, %v1, {bn});
      %2 = relu(%1.0);
      %3 = max_pool(%2, kernel=[2, 2], strides=[2, 2]);
      %4 = conv(%3, %w2, pads=[1, 1, 1, 1]);
      %5 = batch_norm_train(%4, %s2, %c2, %m2, %v2, {bn});
      %6 = relu(%5.0);
      %7 = global_avg_pool(%6);
      %8 = reshape(%7, shape=[4, 16]);
      %9 = gemm(%8, %fw, %fb, trans_b=1);
      %10 = log_softmax(%9, axis=1);
      %11 = nll_loss(%10, %labels, reduction="mean");
      (%11, %1.1, %1.2, %5.1, %5.2)
    }}"""
    cotangents = [np.array(1, "float32")] + [np.zeros(s.shape, "float32") for s in stats.values()]
    outs, grads = run_gradient(text, values, list(params), cotangents)

    loss = torch.nn.functional.cross_entropy(net(torch_numpy.tensor(x)), torch_numpy.tensor(labels))
    loss.backward()
    assert_close(outs[0], loss.item(), "loss")
    for k, want in zip(stats, stats.values()):  # the running statistics the step updated
        assert_close(outs[1 + list(stats).index(k)], torch_numpy.array(want), k)
    for k, p in params.items():
        assert_close(grads[k], torch_numpy.array(p.grad), "d/d" + k)


def test_transformer_block():
    torch.manual_seed(1)
    rng = np.random.default_rng(1)
    B, T, D, H, F = 2, 5, 8, 2, 16
    dh = D // H

    def lin(i, o):
        return (torch.randn(i, o) / np.sqrt(i)).requires_grad_(), (0.1 * torch.randn(o)).requires_grad_()

    p = {}
    p["g1"], p["e1"] = (1 + 0.1 * torch.randn(D)).requires_grad_(), (0.1 * torch.randn(D)).requires_grad_()
    for name, (i, o) in {"q": (D, D), "k": (D, D), "v": (D, D), "o": (D, D), "f1": (D, F), "f2": (F, D)}.items():
        p["W" + name], p["b" + name] = lin(i, o)
    del p["bk"]  # a key bias shifts every score of a row alike: softmax ignores it, its gradient is rounding
    p["g2"], p["e2"] = (1 + 0.1 * torch.randn(D)).requires_grad_(), (0.1 * torch.randn(D)).requires_grad_()
    x = torch_numpy.tensor(rng.standard_normal((B, T, D)).astype("float32"), requires_grad=True)

    def gelu(t):
        return 0.5 * t * (1 + torch.tanh(np.sqrt(2 / np.pi) * (t + 0.044715 * t ** 3)))

    def block(x):
        h = torch.nn.functional.layer_norm(x, (D,), p["g1"], p["e1"], eps=1e-5)
        def heads(t):
            return t.reshape(B, T, H, dh).transpose(1, 2)
        q, k, v = heads(h @ p["Wq"] + p["bq"]), heads(h @ p["Wk"]), heads(h @ p["Wv"] + p["bv"])
        att = torch.softmax(q @ k.transpose(-1, -2) / np.sqrt(dh), dim=-1)
        a = (att @ v).transpose(1, 2).reshape(B, T, D)
        x = x + a @ p["Wo"] + p["bo"]
        h = torch.nn.functional.layer_norm(x, (D,), p["g2"], p["e2"], eps=1e-5)
        return x + gelu(h @ p["Wf1"] + p["bf1"]) @ p["Wf2"] + p["bf2"]

    loss = (block(x) ** 2).mean()
    loss.backward()

    values = {"x": torch_numpy.array(x)}
    values.update({k: torch_numpy.array(t) for k, t in p.items()})
    c = lambda v: f"constant(float32[], [{float(v)!r}])"
    lines = []

    def let(expr):  # binds expr to the next %N
        lines.append(f"%{len(lines)} = {expr};")
        return f"%{len(lines) - 1}"

    ln1 = let("layer_norm(%x, %g1, %e1, epsilon=1e-05)")
    q, v = (let(f"add(matmul({ln1}.0, %W{n}), %b{n})") for n in "qv")
    k = let(f"matmul({ln1}.0, %Wk)")
    split = f"shape=[{B}, {T}, {H}, {dh}]"
    qh = let(f"transpose(reshape({q}, {split}), perm=[0, 2, 1, 3])")
    kt = let(f"transpose(reshape({k}, {split}), perm=[0, 2, 3, 1])")
    vh = let(f"transpose(reshape({v}, {split}), perm=[0, 2, 1, 3])")
    att = let(f"softmax(mul(matmul({qh}, {kt}), {c(1 / np.sqrt(dh))}), axis=-1)")
    a = let(f"reshape(transpose(matmul({att}, {vh}), perm=[0, 2, 1, 3]), shape=[{B}, {T}, {D}])")
    x1 = let(f"add(%x, add(matmul({a}, %Wo), %bo))")
    ln2 = let(f"layer_norm({x1}, %g2, %e2, epsilon=1e-05)")
    u = let(f"add(matmul({ln2}.0, %Wf1), %bf1)")
    inner = let(f"mul({c(np.sqrt(2 / np.pi))}, add({u}, mul({c(0.044715)}, mul({u}, mul({u}, {u})))))")
    gelu = let(f"mul(mul({c(0.5)}, {u}), add({c(1.0)}, tanh({inner})))")
    y = let(f"add({x1}, add(matmul({gelu}, %Wf2), %bf2))")
    body = "\n      ".join(lines)
    text = f"""def @main({signature(values)}) {{
      {body}
      reduce_mean(mul({y}, {y}), axes=[], keepdims=0)
    }}"""
    wrt = list(values)
    outs, grads = run_gradient(text, values, wrt, [np.array(1, "float32")])
    assert_close(outs[0], loss.item(), "loss")
    assert_close(grads["x"], torch_numpy.array(x.grad), "d/dx")
    for k, t in p.items():
        assert_close(grads[k], torch_numpy.array(t.grad), "d/d" + k)
