"""Errors that patchpose raises on bad input; the CLI turns them into a message and exit code 2."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from types import ModuleType

#: the git tag whose code still has the options and training settings removed on 2026-12-01 (no bundled model and
#: no documented use set them): the errors that refuse them name it
CLEANUP_TAG = "options-before-cleanup-2026-12-01"


class PatchPoseError(Exception):
    """Base class of patchpose's own errors."""


class InputError(PatchPoseError, ValueError):
    """An image, keypoint array or argument that cannot be used (the message says why)."""


class TrainingError(PatchPoseError):
    """A training run that cannot go on (e.g. a loss that is no longer finite); the message says what to change."""


class WeightsError(PatchPoseError):
    """A weights or checkpoint file that is missing, corrupt, or not a patchpose model."""


def is_int_in(value, lo: int, hi: int | None = None, integral_floats: bool = False) -> bool:
    """True if ``value`` is an integer (``bool`` is not one) within ``[lo, hi]``; with
    ``integral_floats``, a float with no fractional part (``4.0``, from a CLI or a config) counts too."""
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    if not isinstance(value, numbers.Integral):
        if not (integral_floats and float(value).is_integer()):
            return False
    return lo <= value and (hi is None or value <= hi)


@contextlib.contextmanager
def about(where) -> Iterator[None]:
    """An :class:`InputError` raised in the block says ``where`` (the file or option it is about) first: one line
    that names the file at fault, where the check itself only sees an array."""
    try:
        yield
    except InputError as e:
        raise InputError(f"{where}: {e}") from None


def require(module: str, extra: str) -> ModuleType:
    """Import ``module``, an optional dependency that the ``extra`` of the package installs (the extras are
    listed in ``pyproject.toml``). If it is not installed, a one-line :class:`InputError` names the extra;
    a module that is installed but fails to import raises its own error."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name is None or not (module == e.name or module.startswith(e.name + ".")):
            raise
        raise InputError(
            f"{module.split('.')[0]} is not installed; it comes with the '{extra}' extra: "
            f"pip install -e '.[{extra}]'"
        ) from None
