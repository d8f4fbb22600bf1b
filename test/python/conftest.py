"""Shared fixtures of the Python tests."""

import pytest

import xla_gpu  # noqa: F401  (registers the dialect before any Context exists)
from mlir import ir


@pytest.fixture
def ctx():
    """A fresh context with an unknown location as the default."""
    with ir.Context() as context, ir.Location.unknown():
        yield context
