"""Fixtures shared by the test modules (helpers without pytest's machinery live in support.py,
sampler_support.py and chromium.py)."""

import pytest

from chromium import Browser, find_chromium


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for every browser test; they fail (not skip) where there is none."""
    if find_chromium() is None:
        pytest.fail("no Chromium to run the report's browser tests: install Debian's chromium "
                    "(tools/test-all does, as root with apt-get)", pytrace=False)
    with Browser() as b:
        yield b
