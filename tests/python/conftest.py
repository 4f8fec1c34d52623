"""pytest set-up: finds the built package (build/python) and gives tests a seeded RNG."""
import os
import sys

import numpy as np
import pytest

_BUILD = os.environ.get("TESSERA_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
sys.path.insert(0, os.path.abspath(os.path.join(_BUILD, "python")))
# Tests build with default schedules unless they give a database: a tuning database left in
# the home folder by someone's tuning session must not change their results.
os.environ["TESSERA_DB"] = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"tessera-tests-{os.getpid()}-no.db")


@pytest.fixture
def build_dir():
    """The build tree the tests run against (its bin/ holds tessera and tessera-measure)."""
    return os.path.abspath(_BUILD)


@pytest.fixture
def rng():
    return np.random.default_rng(0)
