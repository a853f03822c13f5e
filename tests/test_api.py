"""The public API: what ``import patchpose`` offers, typed and documented."""

import inspect

import pytest

import patchpose


def _public_callables():
    for name in patchpose.__all__:
        obj = getattr(patchpose, name)
        if inspect.isclass(obj):
            if issubclass(obj, Exception):
                continue
            for mname, m in vars(obj).items():
                if mname.startswith("_") and mname != "__init__":
                    continue
                f = m.__func__ if isinstance(m, (classmethod, staticmethod)) else m
                if inspect.isfunction(f):
                    yield f"{name}.{mname}", f
        elif inspect.isfunction(obj):
            yield name, obj


@pytest.mark.parametrize("name, fn", list(_public_callables()), ids=lambda x: x if isinstance(x, str) else "")
def test_every_public_function_is_typed_and_documented(name, fn):
    sig = inspect.signature(fn)
    untyped = [
        p.name
        for p in sig.parameters.values()
        if p.name not in ("self", "cls") and p.annotation is inspect.Parameter.empty
    ]
    assert not untyped, (name, untyped)
    assert sig.return_annotation is not inspect.Signature.empty, name
    assert fn.__name__ == "__init__" or (fn.__doc__ and fn.__doc__.strip()), name


def test_the_public_names():
    assert {"PatchPoseEstimator", "Poses", "ReadPlan", "assign", "resolve_orientations"} <= set(
        patchpose.__all__
    )
    assert patchpose.__version__ == "1.0.0"
