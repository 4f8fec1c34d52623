"""Numerical gradient checking: central differences in float64 against tessera.relay.gradient."""
import numpy as np

import tessera


def numeric_gradient(lib, inputs, index, seeds, eps=1e-6):
    """d sum_i <seed_i, output_i> / d inputs[index], by central differences."""
    x = inputs[index]
    grad = np.zeros_like(x)
    for pos in np.ndindex(*x.shape):
        values = []
        for sign in (1, -1):
            shifted = [a.copy() for a in inputs]
            shifted[index][pos] += sign * eps
            outs = lib.run(shifted)
            values.append(sum(float(np.sum(o.astype("float64") * s)) for o, s in zip(outs, seeds)))
        grad[pos] = (values[0] - values[1]) / (2 * eps)
    return grad


def check_gradient(text, inputs, wrt, rtol=1e-5, atol=1e-7, seed=0):
    """Builds the module of `text` and its gradient w.r.t. the parameters `wrt` (names), and
    compares the gradient with central differences on `inputs` (float64 arrays, in parameter
    order), with random cotangents for the outputs."""
    mod = tessera.relay.parse(text)
    names = mod.input_names
    lib = tessera.build(mod)
    outs = lib.run(inputs)
    rng = np.random.default_rng(seed)
    seeds = [rng.standard_normal(o.shape) for o in outs]
    grad_lib = tessera.build(tessera.relay.gradient(mod, wrt, cotangents=True))
    results = grad_lib.run(list(inputs) + [s.astype(o.dtype) for s, o in zip(seeds, outs)])
    for k, name in enumerate(wrt):
        analytic = results[len(outs) + k]
        numeric = numeric_gradient(lib, list(inputs), names.index(name), seeds)
        np.testing.assert_allclose(analytic, numeric, rtol=rtol, atol=atol, err_msg=f"d/d{name}")
    for o, r in zip(outs, results):  # the gradient function returns the outputs first
        np.testing.assert_allclose(r, o, rtol=1e-12)
