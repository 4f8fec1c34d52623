"""pytest set-up: finds the package under test (package_under_test.py) and gives tests a seeded
RNG."""
import os
import sys

import numpy as np
import pytest

import package_under_test  # puts build/python on sys.path unless testing an installed package

sys.path.insert(0, os.path.join(package_under_test.ROOT, "scripts"))  # make_models, torch_numpy
sys.path.insert(0, os.path.join(package_under_test.ROOT, "examples"))  # gpu_kernels, gemm_gpu
# Tests build with default schedules unless they give a database: a tuning database left in
# the home folder by someone's tuning session must not change their results.
os.environ["TESSERA_DB"] = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"tessera-tests-{os.getpid()}-no.db")


@pytest.fixture
def rng():
    return np.random.default_rng(0)
