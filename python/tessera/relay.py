"""The graph IR from Python: modules print as text (str(mod)) and parse back.

    mod = tessera.relay.parse('''
    def @main(%x: float32[2, 3]) -> float32[2, 3] {
      relu(%x)
    }''')
    lib = tessera.build(mod)"""
from . import _tessera as _t
from ._tessera import Module

__all__ = ["parse", "gradient", "Module"]


def parse(text):
    """A module from its text form; errors say line:column and what was expected."""
    return _t.relay_parse(text)


def gradient(mod, wrt, cotangents=False):
    """Reverse-mode autodiff: a module of the same inputs (followed, with `cotangents`, by one
    cotangent per output; otherwise ones) returning the original outputs followed by the gradient
    of each parameter named in `wrt`. It builds and runs like any module."""
    if isinstance(wrt, str):
        wrt = [wrt]
    return _t.relay_gradient(mod, list(wrt), cotangents)
