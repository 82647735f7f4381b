"""The package shell: version, exception hierarchy, typed surface."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import ordcore
from ordcore import errors


def test_version_comes_from_the_wheel_metadata() -> None:
    assert ordcore.__version__ == importlib.metadata.version("ordcore")


def test_exception_hierarchy() -> None:
    assert issubclass(errors.InvalidArgumentError, ordcore.OrdcoreError)
    assert issubclass(errors.InvalidArgumentError, ValueError)
    assert issubclass(errors.DTypeError, TypeError)
    assert issubclass(errors.IndexFormatError, ValueError)
    assert issubclass(errors.InternalError, RuntimeError)


def test_package_is_typed() -> None:
    pkg = Path(ordcore.__file__).parent
    assert (pkg / "py.typed").exists()
    assert (pkg / "_core.pyi").exists()
