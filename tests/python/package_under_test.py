"""Which tessera the tests run: the build tree's (build/python and build/bin, the default) or,
with TESSERA_TEST_INSTALLED=1, the package installed in the running interpreter by
`pip install .` with its console scripts (scripts/test.sh runs the suite both ways)."""
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# The CMake tree: the C++ programs and libraries that tests of deployment build against.
BUILD = os.path.abspath(os.environ.get("TESSERA_BUILD_DIR", os.path.join(ROOT, "build")))
INSTALLED = os.environ.get("TESSERA_TEST_INSTALLED") == "1"
# The venv with numpy 2 that scripts/setup.sh installs the package into.
VENV = os.environ.get("TESSERA_VENV", os.path.join(BUILD, "venv"))


def program(name: str) -> str:
    """The path of `tessera` or `tessera-measure` as the tested package provides it."""
    if INSTALLED:
        return os.path.join(os.path.dirname(sys.executable), name)
    return os.path.join(BUILD, "bin", name)


if not INSTALLED:
    sys.path.insert(0, os.path.join(BUILD, "python"))
