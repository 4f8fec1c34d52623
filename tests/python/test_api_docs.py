"""The public Python API documents itself: every module, function, class, method and property
reachable from tessera, tessera.te, .onnx, .relay, .train, .autotune (and tessera.nd) has a
docstring; functions written in Python annotate every parameter and their return; functions of
the extension (tessera._tessera, pybind11) name every argument, so help() shows named, typed
signatures."""
import importlib
import importlib.util
import inspect
import re
import types

import pytest

import tessera

MODULES = ["tessera", "tessera.te", "tessera.onnx", "tessera.relay", "tessera.train", "tessera.autotune",
           "tessera.nd", "tessera._cli", "tessera._tessera"]


def present_modules():
    return [importlib.import_module(name) for name in MODULES if importlib.util.find_spec(name) is not None]


def public_names(module):
    """__all__ where the module defines it; otherwise its public names that are its own (not
    imported modules or objects of other packages)."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    names = []
    for name, value in vars(module).items():
        if name.startswith("_") or isinstance(value, types.ModuleType):
            continue
        origin = getattr(value, "__module__", None) or module.__name__
        if callable(value) and origin.startswith("tessera"):
            names.append(name)
    return names


def is_python_function(obj):
    return inspect.isfunction(obj) or inspect.ismethod(obj)


def is_public(name):
    return not name.startswith("_")


def walk():
    """(qualified name, kind, object) for every entry point: kind is "module", "class",
    "function", "method" (first parameter self), "dunder" (only signatures are checked),
    "property" or "object" (an instance, documented by its class)."""
    seen = set()
    entries = []

    def add(qualname, kind, obj):
        key = (id(obj), kind)
        if key in seen:
            return
        seen.add(key)
        entries.append((qualname, kind, obj))

    for module in present_modules():
        add(module.__name__, "module", module)
        for name in public_names(module):
            obj = getattr(module, name)
            qualname = f"{module.__name__}.{name}"
            if isinstance(obj, types.ModuleType):
                continue  # walked as a module of its own
            if inspect.isclass(obj):
                add(qualname, "class", obj)
                walk_class(qualname, obj, add)
            elif callable(obj):
                add(qualname, "function", obj)
            elif not isinstance(obj, (int, float, str, bool, tuple, list, dict, type(None))):
                add(qualname, "object", obj)
    return entries


def walk_class(qualname, cls, add):
    for name, raw in vars(cls).items():
        member = f"{qualname}.{name}"
        if isinstance(raw, property):
            if is_public(name):
                add(member, "property", raw)
            continue
        if isinstance(raw, (staticmethod, classmethod)):
            obj, kind = getattr(cls, name), "function" if isinstance(raw, staticmethod) else "method"
        elif callable(raw):
            obj, kind = getattr(cls, name), "method"
        else:
            continue  # a class attribute (dataclass field defaults, ...)
        if name == "__init__" or (name.startswith("__") and name.endswith("__")):
            add(member, "init" if name == "__init__" else "dunder", obj)
        elif is_public(name):
            add(member, kind, obj)


# --- the checks, one function per rule; each returns a list of problems ---------------------

def pybind_signatures(obj):
    """The signature lines of a pybind11 function's docstring (several when overloaded), or None
    when `obj` is not a pybind11 function."""
    if is_python_function(obj) or inspect.isclass(obj):
        return None
    doc = getattr(obj, "__doc__", None) or ""
    name = getattr(obj, "__name__", "")
    lines = doc.splitlines()
    if not name or not lines or not lines[0].startswith(name + "("):
        return None
    return [lines[0]] + [l for l in lines[1:] if re.match(rf"\d+\. {re.escape(name)}\(", l)]


def pybind_description(doc, signatures):
    lines = [l for l in doc.splitlines() if l.strip() and l not in signatures and l != "Overloaded function."]
    return "\n".join(lines).strip()


def docstring_problems(qualname, kind, obj):
    if kind == "dunder":
        return []
    if kind == "object":
        doc = type(obj).__doc__
    elif kind == "property":
        doc = obj.__doc__
        # pybind11 gives an undocumented property its getter's signature, "(arg0: T) -> U".
        if doc and re.match(r"\(.*\) ->", doc.strip()):
            doc = None
    else:
        doc = inspect.getdoc(obj) if not hasattr(obj, "__func__") else obj.__doc__
        signatures = pybind_signatures(obj)
        if signatures is not None:
            doc = pybind_description(doc, signatures)
        elif kind == "init":
            return []  # a Python class documents its constructor in the class docstring
    if not doc or not doc.strip():
        return [f"{qualname} ({kind}) has no docstring"]
    return []


def annotation_problems(qualname, kind, obj):
    if kind not in ("function", "method", "init") or not is_python_function(obj):
        return []
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return [f"{qualname}: no signature"]
    params = list(signature.parameters.values())
    if kind in ("method", "init") and not inspect.ismethod(obj) and params and params[0].name in ("self", "cls"):
        params = params[1:]
    problems = [f"{qualname}: parameter {p.name!r} has no type annotation" for p in params
                if p.annotation is inspect.Parameter.empty]
    if signature.return_annotation is inspect.Signature.empty:
        problems.append(f"{qualname}: no return annotation")
    return problems


def signature_problems(qualname, kind, obj):
    if kind == "property":
        # A getter's own argument is self (pybind11 calls it arg0); only the types matter.
        getter = obj.fget.__doc__ if obj.fget is not None and not is_python_function(obj.fget) else ""
        lines = (getter or "").splitlines()[:1]
        return [f"{qualname}: a C++ type in the getter's signature {line!r} (register that type first)"
                for line in lines if "::" in line]
    signatures = pybind_signatures(obj)
    problems = []
    for line in signatures or []:
        if re.search(r"\barg\d+\b", line):
            problems.append(f"{qualname}: unnamed argument in the signature {line!r} (give each a py::arg)")
        # A C++ type pybind11 does not know shows as its C++ name, which means nothing in Python.
        if "::" in line:
            problems.append(f"{qualname}: a C++ type in the signature {line!r} (bind the type, or take a Python one)")
    return problems


def all_problems(check, entries):
    return [p for qualname, kind, obj in entries for p in check(qualname, kind, obj)]


@pytest.fixture(scope="module")
def entries():
    return walk()


def test_the_walk_reaches_the_whole_api(entries):
    names = {qualname for qualname, _, _ in entries}
    for expected in ["tessera.build", "tessera.load", "tessera.Library.run", "tessera.Library.inputs",
                     "tessera.Module.text", "tessera.te.compute", "tessera.te.exp", "tessera.te.Schedule.cache_read",
                     "tessera.te.Stage.split", "tessera.te.Trace.from_json", "tessera.te.Function.get_source",
                     "tessera.onnx.load", "tessera.onnx.BindingRequired", "tessera.relay.gradient", "tessera.relay.op",
                     "tessera.train.Trainer.step", "tessera.train.SGD", "tessera.autotune.tune",
                     "tessera.autotune.TuneReport", "tessera._tessera.Operation.axis", "tessera._tessera.training_step"]:
        assert expected in names, f"the walk missed {expected}"
    assert len(entries) > 200


def test_every_entry_point_has_a_docstring(entries):
    problems = all_problems(docstring_problems, entries)
    assert not problems, "\n".join(problems)


def test_python_functions_annotate_parameters_and_return(entries):
    problems = all_problems(annotation_problems, entries)
    assert not problems, "\n".join(problems)


def test_extension_signatures_name_every_argument(entries):
    problems = all_problems(signature_problems, entries)
    assert not problems, "\n".join(problems)


def test_the_checks_catch_what_they_look_for():
    """The rules above fail on a bare function, an unannotated one and an unnamed argument."""
    def documented(x: int) -> int:
        """Doc."""
        return x

    def bare(x: int) -> int:
        return x

    def untyped(x):
        """Doc."""
        return x

    assert not docstring_problems("documented", "function", documented)
    assert not annotation_problems("documented", "function", documented)
    assert docstring_problems("bare", "function", bare)
    assert annotation_problems("untyped", "function", untyped) == [
        "untyped: parameter 'x' has no type annotation", "untyped: no return annotation"]

    class FakeBinding:  # what pybind11 makes of m.def("f", ...) without py::arg or a docstring
        __name__ = "f"
        __doc__ = "f(arg0: int, arg1: tessera::Thing) -> int\n"

        def __call__(self, *args):
            pass

    fake = FakeBinding()
    assert docstring_problems("f", "function", fake) == ["f (function) has no docstring"]
    assert len(signature_problems("f", "function", fake)) == 2
    assert len(signature_problems("p", "property", property(fake))) == 1
    assert not signature_problems("tessera.te.Stage.split", "method", tessera.te.Stage.split)
