"""The graph IR from Python: modules print as text (str(mod)) and parse back.

    mod = tessera.relay.parse('''
    def @main(%x: float32[2, 3]) -> float32[2, 3] {
      relu(%x)
    }''')
    lib = tessera.build(mod)"""
from . import _tessera as _t
from ._tessera import Module

__all__ = ["parse", "Module"]


def parse(text):
    """A module from its text form; errors say line:column and what was expected."""
    return _t.relay_parse(text)
