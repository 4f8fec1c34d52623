"""pytest set-up: finds the built package (build/python) and gives tests a seeded RNG."""
import os
import sys

import numpy as np
import pytest

_BUILD = os.environ.get("TESSERA_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
sys.path.insert(0, os.path.abspath(os.path.join(_BUILD, "python")))


@pytest.fixture
def rng():
    return np.random.default_rng(0)
