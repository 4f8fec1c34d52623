"""The console scripts of an installed package (pyproject.toml): `tessera` and `tessera-measure`
are C++ programs installed in the package's bin/ folder; these entry points replace the Python
process with them, so arguments, exit codes and signals are the programs' own."""
import os
import sys
from typing import NoReturn

_BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin")


def _exec(program: str) -> NoReturn:
    path = os.path.join(_BIN, program)
    if not os.access(path, os.X_OK):
        sys.exit(f"{program}: {path} is missing; this tessera package was not installed with pip "
                 f"(in a build tree, run build/bin/{program})")
    os.execv(path, [program] + sys.argv[1:])


def tessera() -> NoReturn:
    """`tessera`: compile, run, inspect and tune models (`tessera --help`)."""
    _exec("tessera")


def tessera_measure() -> NoReturn:
    """`tessera-measure`: the tuner's measurement worker, started by the tuner itself."""
    _exec("tessera-measure")
