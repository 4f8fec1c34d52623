"""Hot sizes of a model of symbolic sizes (issue 25, item 3): tessera.build(specialize=[...])
builds the listed sizes now as static models, which run the calls of those sizes; the other sizes
run the build for every size (or their own, for a model built per size). served_by says which
build runs a size. An exported module holds them all and serves each size as the library does."""
import numpy as np
import pytest

import tessera
from test_symbolic_build import dense_model, needs_constant_shape


def test_listed_sizes_run_static_builds_and_the_rest_the_build_for_every_size(tmp_path, rng):
    path, reference = dense_model(tmp_path, rng)
    lib = tessera.build(tessera.onnx.load(path), db=False, specialize=[{"N": 4}, {"N": 1}])
    assert lib.specialized == [{"N": 4}, {"N": 1}] and lib.built == [{"N": 4}, {"N": 1}]
    assert lib.served_by({"x": (4, 7)}) == "specialized for N = 4"
    assert lib.served_by([(3, 7)]) == "not built yet: the first run builds the model for every size"
    for n in [3, 4, 1, 9, 0, 4]:
        x = rng.standard_normal((n, 7)).astype("float32")
        y, f = lib.run([x])
        ref_y, ref_f = reference(x)
        np.testing.assert_allclose(y, ref_y, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(f, ref_f, rtol=1e-6, atol=1e-6)
    assert lib.symbolic and lib.built == [{"N": 4}, {"N": 1}]  # no size built on its run
    assert lib.served_by({"x": (1, 7)}) == "specialized for N = 1"
    assert lib.served_by({"x": (9, 7)}) == "the build for every size"
    static = lib.specialize({"x": (4, 7)})  # the hot build itself: static kernels
    assert all("N" not in k["signature"] for k in static.kernels)
    assert all("N" in k["signature"] for k in lib.kernels)


def test_a_model_built_per_size_builds_its_hot_sizes_first(tmp_path, rng):
    lib = tessera.build(tessera.onnx.load(needs_constant_shape(tmp_path)), db=False, specialize=[{"N": 2}])
    assert lib.built == [{"N": 2}]
    assert lib.served_by({"x": (2, 4)}) == "specialized for N = 2"
    for n in [2, 5]:
        x = rng.standard_normal((n, 4)).astype("float32")
        np.testing.assert_array_equal(lib.run([x])[0], x + 1)
    assert lib.built == [{"N": 2}, {"N": 5}] and lib.served_by({"x": (5, 4)}) == "built for N = 5 on its first run"


def test_hot_sizes_that_do_not_fit_are_errors_naming_the_dimension(tmp_path, rng):
    path, _ = dense_model(tmp_path, rng)
    mod = tessera.onnx.load(path)
    with pytest.raises(tessera.Error, match="no dimension 'L' .*dimensions are: N"):
        tessera.build(mod, db=False, specialize=[{"N": 2, "L": 3}])
    with pytest.raises(tessera.Error, match="gives no value for the dimension N"):
        tessera.build(mod, db=False, specialize=[{}])
    with pytest.raises(tessera.Error, match="applies to models of symbolic sizes"):
        tessera.build(mod.specialize({"x": (2, 7)}), db=False, specialize=[{"N": 2}])
    lib = tessera.build(mod, db=False, specialize=[{"N": 2}])
    with pytest.raises(tessera.Error, match="input 'x'.*dimension 1 must be 7, got 6"):
        lib.served_by({"x": (2, 6)})


def test_a_library_with_hot_sizes_exports_them_in_one_module(tmp_path, rng):
    """The module holds the build for every size and the hot sizes' static builds (module format
    5), written before any run, and serves each size with the build the library would."""
    path, reference = dense_model(tmp_path, rng)
    tessera.build(tessera.onnx.load(path), db=False, specialize=[{"N": 2}, {"N": 5}]).export(tmp_path / "hot.so")
    m = tessera.load(tmp_path / "hot.so")
    assert m.specialized == [{"N": 2}, {"N": 5}]
    assert m.served_by({"x": (5, 7)}) == "specialized for N = 5"
    assert m.served_by([(3, 7)]) == "the build for every size"
    with pytest.raises(tessera.Error, match="input 'x'.*dimension 1 must be 7, got 6"):
        m.served_by({"x": (2, 6)})
    for n in [2, 3, 5, 0, 2]:
        x = rng.standard_normal((n, 7)).astype("float32")
        y, f = m.run([x])
        ref_y, ref_f = reference(x)
        np.testing.assert_allclose(y, ref_y, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(f, ref_f, rtol=1e-6, atol=1e-6)
        kernels = [k for k, _ in m.profile([x], repeat=1)]
        assert {k.startswith("hot") for k in kernels if k != "copy"} == {n in (2, 5)}, kernels
    static = tessera.build(tessera.onnx.load(path).specialize({"x": (2, 7)}), db=False)
    assert static.served_by([(2, 7)]) == "the build of its one size" and static.specialized == []
