import os

import pytest


@pytest.fixture(scope="module")
def module_cache_dir(tmp_path_factory):
    """``MINPY_CACHE_DIR`` set to a fresh folder for one test module (compiled kernels
    cached there, not in the user's cache), restored after."""
    old = os.environ.get("MINPY_CACHE_DIR")
    os.environ["MINPY_CACHE_DIR"] = str(tmp_path_factory.mktemp("minpy-cache"))
    yield
    if old is None:
        del os.environ["MINPY_CACHE_DIR"]
    else:
        os.environ["MINPY_CACHE_DIR"] = old
