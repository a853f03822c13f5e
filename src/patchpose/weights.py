"""Bundled and exported weights: safetensors files whose header carries the model config.

A weights file is a safetensors file with ``__metadata__`` = ``{"format": "patchpose", "name": ...,
"model_config": <json>, "notes": ...}``. Bundled files are listed in :data:`BUNDLED` with their sha256,
verified at load by name; nothing is ever downloaded. A file loaded by path whose metadata names a bundled model
is that model when its sha256 is the bundled file's, or else when its contents are (:func:`bundled_difference`: the
tensors exactly, the model config and read plan as values); any other is refused. A file of any other name carries
no checksum and is only checked for structure (its config, tensor names, shapes, dtypes and finite values); a
bundled model's name is refused for a model of one's own (:func:`check_own_name`).
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
import pickle
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, safe_open, save

from . import checks
from .errors import InputError, WeightsError, is_int_in
from .fileio import make_folder, write_through
from .models import ModelConfig, PoseNet
from .models.posenet import drop_removed_settings
from .models.shapenet import ShapeNet, ShapeNetConfig
from .recipes import MODELS

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
#: the bundled pose network read unless told otherwise (:data:`patchpose.recipes.MODELS`)
DEFAULT_MODEL = MODELS["estimate"]
#: the bundled affine shape network (:class:`~patchpose.models.shapenet.ShapeNet`)
DEFAULT_SHAPE_MODEL = MODELS["shape"]
#: pose networks: name -> (file inside patchpose/weights, sha256)
BUNDLED: dict[str, tuple[str, str]] = {}
#: the git tag whose tree still holds the files of :data:`REMOVED_MODELS`
#: (``src/patchpose/weights/NAME.safetensors``) and their training recipes
REMOVED_MODELS_TAG = "models-v1-v8-2026-11-28"
#: models bundled once and no longer shipped (issue #59): no recipe or documented use loads them
REMOVED_MODELS = (
    "patchpose-v1",
    "patchpose-v2",
    "patchpose-v3",
    "patchpose-v6",
    "patchpose-v7",
    "patchpose-v8",
)
#: affine shape networks: name -> (file inside patchpose/weights, sha256)
BUNDLED_SHAPES: dict[str, tuple[str, str]] = {}
_BUNDLED_JSON = WEIGHTS_DIR / "bundled.json"
if _BUNDLED_JSON.is_file():
    for _name, _entry in json.loads(_BUNDLED_JSON.read_text()).items():
        (BUNDLED_SHAPES if _entry.get("kind") == "shape" else BUNDLED)[_name] = (
            _entry["file"],
            _entry["sha256"],
        )


def sha256_of(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def config_from_json(text: str, where: str) -> ModelConfig:
    """Parse and validate a model config stored as JSON in a weights file's metadata.

    ``where`` names the file in the message of the :class:`WeightsError` raised for a config that is not
    valid JSON, not a JSON object, or not a valid patchpose model config, or that uses a removed setting
    (:data:`~patchpose.models.posenet.REMOVED_SETTINGS`; named at its "off" value, as in the bundled files,
    it is accepted)."""

    def non_finite(name: str) -> float:
        raise ValueError(f"non-finite number {name}")

    try:
        d = json.loads(text, parse_constant=non_finite)
    except (ValueError, TypeError) as e:
        raise WeightsError(f"{where}: model_config is not valid JSON ({one_line(e)})") from None
    if not isinstance(d, dict):
        raise WeightsError(f"{where}: model_config is not an object (got {type(d).__name__})")
    try:
        d = drop_removed_settings(d)
    except ValueError as e:  # a removed setting in use: a network this code does not build
        raise WeightsError(f"{where}: {one_line(e)}") from None
    try:
        cfg = ModelConfig.from_dict(d)
        cfg.validate()
    except (ValueError, TypeError, KeyError, AttributeError, ArithmeticError) as e:
        raise WeightsError(f"{where}: model_config is not a valid model config ({one_line(e)})") from None
    return cfg


def check_finite(state: dict[str, torch.Tensor], where: str) -> None:
    """Raise :class:`WeightsError` naming ``where`` and the tensor if a tensor holds NaN or infinity."""
    for key, t in state.items():
        if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex()):
            if not bool(torch.isfinite(t).all()):
                raise WeightsError(f"{where}: tensor {key!r} holds non-finite values (NaN or infinity)")


def check_float_dtypes(
    state: dict[str, torch.Tensor], reference: dict[str, torch.Tensor], where: str
) -> None:
    """Raise :class:`WeightsError` naming ``where`` and the tensor if ``state`` holds integers where the
    network's own ``reference`` state has floats (``load_state_dict`` would cast them without a word; an
    integer buffer such as BatchNorm's step counter is integer in both)."""
    for key, t in reference.items():
        if key in state and t.is_floating_point() and not state[key].is_floating_point():
            raise WeightsError(f"{where}: tensor {key!r} is {state[key].dtype}, not floating point")


def one_line(e: BaseException, limit: int = 300) -> str:
    """An exception's message on one line (whitespace runs collapsed), at most ``limit`` characters."""
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _torch_load_reason(e: BaseException) -> str:
    """Why ``torch.load(weights_only=True)`` failed, in a few words and without torch's advice to unpickle
    with ``weights_only=False`` (files from elsewhere must never be unpickled)."""
    text = str(e)
    if isinstance(e, EOFError):
        return "the file is empty or truncated"
    if isinstance(e, pickle.UnpicklingError):
        m = re.search(r"Unsupported global: GLOBAL (\S+)", text)
        if m:
            return f"it holds a {m.group(1)} object; only tensors and plain containers are loaded"
        return "not a file written by torch.save"
    if "PytorchStreamReader" in text:
        return "a corrupt or truncated torch.save archive"
    reason = one_line(e, 200)
    return f"{type(e).__name__}" if "weights_only" in reason else f"{type(e).__name__}: {reason}"


def load_torch_file(path: str | Path, what: str = "PyTorch state dict / checkpoint") -> Any:
    """``torch.load(path, weights_only=True)`` on CPU; a file it cannot read is a one-line
    :class:`WeightsError` ``"<path> is not a <what> (<reason>)"``. Nothing but tensors and plain
    containers is ever unpickled."""
    path = Path(path)
    if not path.is_file():
        raise WeightsError(f"file not found: {path}")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - any failure: not a usable torch file
        raise WeightsError(f"{path} is not a {what} ({_torch_load_reason(e)})") from None


def load_state_into(
    net: torch.nn.Module,
    path: str | Path,
    name: str,
    drop_prefix: str | None = None,
    keep: tuple[str, ...] = (),
    mismatch: Callable[[], str | None] | None = None,
):
    """Load the state dict in ``path`` (or its ``{"state_dict": ...}``) into ``net``, strictly, and return
    ``net`` in eval mode: nothing unpickled (:func:`load_torch_file`), the dtypes and finiteness checked first
    (``load_state_dict`` would cast integers and take NaN without a word), keys starting with ``drop_prefix``
    left out, the entries named in ``keep`` that the file lacks taken from ``net`` as it is (buffers a library
    adds to a published network); any failure a one-line :class:`WeightsError` naming ``name``, where the file's
    tensors are not ``net``'s (names or shapes) what ``mismatch()`` says where given (called only then; None: torch's
    list of them). For
    networks that are not ours (descriptors, the peers)."""
    state = load_torch_file(path)
    if isinstance(state, dict) and isinstance(state.get("state_dict"), dict):
        state = state["state_dict"]
    if not isinstance(state, dict):
        raise WeightsError(f"{path} is not a PyTorch state dict (it holds a {type(state).__name__})")
    if not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise WeightsError(f"{path} is not a PyTorch state dict (not a mapping of names to tensors)")
    if drop_prefix:
        state = {k: v for k, v in state.items() if not k.startswith(drop_prefix)}
    own = net.state_dict()
    state = {**{k: own[k] for k in keep if k in own and k not in state}, **state}
    check_float_dtypes(state, own, str(path))
    check_finite(state, str(path))
    try:
        net.load_state_dict(state)
    except (RuntimeError, ValueError, TypeError, KeyError) as e:
        why = mismatch() if mismatch is not None else None
        raise WeightsError(why or f"cannot load {name} weights from {path}: {one_line(e)}") from None
    return net.eval()


#: the metadata keys of a weights file's read plan (:class:`patchpose.ReadPlan`'s fields; :func:`save_weights`'
#: keywords)
PLAN_KEYS = ("passes", "orientation_offset", "descriptor_region", "reread_scale")
#: what a read plan takes where a weights file's metadata says nothing (:class:`patchpose.ReadPlan`'s defaults): one
#: read, the orientation in the scale's frame, a descriptor window of one radius, the scale read again
PLAN_DEFAULTS = {"passes": 1, "orientation_offset": 0.0, "descriptor_region": 1.0, "reread_scale": True}

#: reads per keypoint a weights file may recommend (its ``passes`` metadata; see :func:`recommended_passes`)
MAX_PASSES = 8


def recommended_passes(meta: dict, where: str = "the weights") -> int | None:
    """How many times a model is meant to read each keypoint (the ``passes`` metadata of its file, which
    :meth:`ReadPlan.from_meta <patchpose.ReadPlan.from_meta>` puts in the estimator's read plan), or None
    when the file does not say. A value that is not an integer from 1 to :data:`MAX_PASSES` is a
    :class:`WeightsError`."""
    v = meta.get("passes")
    if v is None:
        return None
    if not (isinstance(v, str) and v.isdigit() and 1 <= int(v) <= MAX_PASSES):
        raise WeightsError(f"{where}: metadata 'passes' must be an integer from 1 to {MAX_PASSES}, got {v!r}")
    return int(v)


#: the largest descriptor window a weights file may give, in units of its characteristic radius
MAX_DESCRIPTOR_REGION = 16.0


def check_descriptor_region(v, where: str = "descriptor_region") -> float:
    """``v`` as a float in (0, :data:`MAX_DESCRIPTOR_REGION`], else :class:`~patchpose.errors.InputError`."""
    ok = isinstance(v, numbers.Real) and not isinstance(v, bool)
    if not (ok and math.isfinite(v) and 0 < v <= MAX_DESCRIPTOR_REGION):
        raise InputError(f"{where} must be a number in (0, {MAX_DESCRIPTOR_REGION:g}], got {v!r}")
    return float(v)


def recommended_descriptor_region(meta: dict, where: str = "the weights") -> float | None:
    """The half-width of a descriptor patch, in units of the model's characteristic radius (``16 · 2**σ``
    pixels), that a weights file was calibrated with (its ``descriptor_region`` metadata; the matching
    pipeline's window for the model's own pose), or None when the file does not say (then 1).

    Why a model needs it: self-supervised training fixes only *relative* scale, so where a model puts σ = 0
    on a structure is its own, and so is the window a descriptor needs about it
    (``docs/usage.md``, "The read plan"). A value that is not a number in
    (0, :data:`MAX_DESCRIPTOR_REGION`] is a :class:`WeightsError`."""
    return _recommended_number(meta, "descriptor_region", check_descriptor_region, where)


def _recommended_number(meta: dict, key: str, check, where: str) -> float | None:
    """``meta[key]`` (a metadata string) as the float ``check`` accepts, or None when absent; a value that is
    not a number, or one ``check`` refuses, is a :class:`WeightsError` that says what ``check`` wants."""
    v = meta.get(key)
    if v is None:
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        x = v  # not a number at all: ``check`` says what it should be
    try:
        return check(x, f"{where}: metadata {key!r}")
    except InputError as e:
        raise WeightsError(str(e)) from None


#: the largest move (octaves, either way) of the orientation read from the frame of the scale found
MAX_ORIENTATION_OFFSET = 4.0


def check_orientation_offset(v, where: str = "orientation_offset") -> float:
    """``v`` as a float in [−:data:`MAX_ORIENTATION_OFFSET`, +:data:`MAX_ORIENTATION_OFFSET`], else
    :class:`~patchpose.errors.InputError`."""
    ok = isinstance(v, numbers.Real) and not isinstance(v, bool)
    if not (ok and math.isfinite(v) and abs(v) <= MAX_ORIENTATION_OFFSET):
        raise InputError(
            f"{where} must be a number of octaves in [-{MAX_ORIENTATION_OFFSET:g}, {MAX_ORIENTATION_OFFSET:g}], "
            f"got {v!r}"
        )
    return float(v)


def recommended_orientation_offset(meta: dict, where: str = "the weights") -> float | None:
    """How many octaves from the frame of the scale found a model's orientation is meant to be read (its
    ``orientation_offset`` metadata, which :meth:`ReadPlan.from_meta <patchpose.ReadPlan.from_meta>` puts in
    the estimator's read plan), or None when the file does not say (then 0: in that frame). Negative: a
    smaller frame, so that the orientation rests on content nearer the keypoint (``docs/usage.md``, "The read
    plan").
    A value that is not a number in [−:data:`MAX_ORIENTATION_OFFSET`, :data:`MAX_ORIENTATION_OFFSET`] is a
    :class:`WeightsError`."""
    return _recommended_number(meta, "orientation_offset", check_orientation_offset, where)


def parse_flag(v: str, where: str = "the value") -> bool:
    """``"true"`` / ``"false"`` (any case; also ``1`` / ``0``) as a bool, else :class:`~patchpose.errors.InputError`."""
    flag = {"true": True, "1": True, "false": False, "0": False}.get(str(v).strip().lower())
    if flag is None:
        raise InputError(f"{where} must be true or false, got {v!r}")
    return flag


def meta_string(v) -> str:
    """A read plan value as weights-file metadata: floats exactly (``repr``), flags as ``true`` / ``false``."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v) if isinstance(v, float) else str(v)


def recommended_reread_scale(meta: dict, where: str = "the weights") -> bool | None:
    """Whether the last of a model's reads reads the scale again (its ``reread_scale`` metadata, ``true`` or
    ``false``, which :meth:`ReadPlan.from_meta <patchpose.ReadPlan.from_meta>` puts in the estimator's read
    plan), or None when the file does not say (then true). Any other value is a :class:`WeightsError`."""
    v = meta.get("reread_scale")
    if v is None:
        return None
    try:
        return parse_flag(v, f"{where}: metadata 'reread_scale'")
    except InputError as e:
        raise WeightsError(str(e)) from None


def check_recommendations(meta: dict, where: str = "the weights") -> None:
    """What a weights file (or an ONNX file carrying its metadata) recommends, checked: its ``passes``
    (:func:`recommended_passes`), ``descriptor_region`` (:func:`recommended_descriptor_region`),
    ``orientation_offset`` (:func:`recommended_orientation_offset`) and ``reread_scale``
    (:func:`recommended_reread_scale`); a bad value is a :class:`WeightsError`."""
    recommended_passes(meta, where)
    recommended_descriptor_region(meta, where)
    recommended_orientation_offset(meta, where)
    recommended_reread_scale(meta, where)


def save_weights(
    model: PoseNet,
    path: str | Path,
    name: str = "custom",
    notes: str = "",
    passes: int | None = None,
    descriptor_region: float | None = None,
    orientation_offset: float | None = None,
    reread_scale: bool | None = None,
) -> Path:
    """Write ``model`` as a patchpose safetensors file (atomically). ``passes``: the reads per keypoint the
    model is meant for (stored in the metadata, from which the estimator's read plan takes it), or None (not
    stored: one read). ``descriptor_region``: the descriptor window the model's pose was calibrated
    with (:func:`recommended_descriptor_region`), or None (1). ``orientation_offset``: where its
    orientation is meant to be read (:func:`recommended_orientation_offset`), or None (0).
    ``reread_scale``: whether its last read reads the scale again (:func:`recommended_reread_scale`), or None
    (true). ``name``: not a bundled model's (:func:`check_own_name`)."""
    check_own_name(name)
    if passes is not None and not is_int_in(passes, 1, MAX_PASSES):
        raise InputError(f"passes must be None or an integer from 1 to {MAX_PASSES}, got {passes!r}")
    if descriptor_region is not None:
        descriptor_region = check_descriptor_region(descriptor_region)
    if orientation_offset is not None:
        orientation_offset = check_orientation_offset(orientation_offset)
    if reread_scale is not None:
        reread_scale = checks.flag(reread_scale, "reread_scale")
    meta = {
        "format": "patchpose",
        "name": name,
        "model_config": json.dumps(model.cfg.to_dict()),
        "notes": notes,
    }
    stated = zip(PLAN_KEYS, (passes, orientation_offset, descriptor_region, reread_scale))
    meta.update({key: meta_string(v) for key, v in stated if v is not None})
    return _write_safetensors(model, path, meta, "model.safetensors")


def safetensors_bytes(tensors: dict[str, torch.Tensor], meta: dict[str, str]) -> bytes:
    """The safetensors file of ``tensors`` and ``meta``, the same bytes for the same model: safetensors writes
    the metadata in a hash map's order, which changes from one writing to the next (one checkpoint exported
    twice gave two files), so its keys are put in sorted order; the tensors' entries and data stay as written."""
    data = save(tensors, metadata=meta)
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + n])
    if "__metadata__" in header:
        header["__metadata__"] = dict(sorted(header["__metadata__"].items()))
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-len(text) % 8)  # the header padded to 8 bytes with spaces, as safetensors pads it
    return len(text).to_bytes(8, "little") + text + data[8 + n :]


def _save_file(tensors: dict[str, torch.Tensor], filename: str, metadata: dict[str, str]) -> None:
    """:func:`safetensors_bytes` written to ``filename`` (as safetensors' ``save_file`` writes, but the same bytes
    for the same model)."""
    Path(filename).write_bytes(safetensors_bytes(tensors, metadata))


def _write_safetensors(model: torch.nn.Module, path: str | Path, meta: dict, example: str) -> Path:
    """``model``'s state dict and ``meta`` as a safetensors file at ``path``, atomically, as ``export onnx`` and
    ``estimate`` write (:func:`~patchpose.fileio.write_through`: a new temporary sibling, then a rename; an error or
    an interrupt leaves the old file and no temporary); a symbolic link at ``path`` is replaced by the file, its
    target left as it was. A folder for ``path`` is an :class:`InputError` naming ``example`` as a file name."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path} is a folder: give the weights file's name, e.g. {path / example}")
    make_folder(path.parent, for_file=path)
    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    try:
        # the temporary takes the new file's permission bits at the rename (safetensors writes owner-only files)
        write_through(
            path, lambda tmp: _save_file(tensors, str(tmp), metadata=meta), "weights file", keep_link=False
        )
    # an OSError said in one line naming the file: a weights file not written, as it always was
    except InputError as e:
        raise WeightsError(str(e)) from None
    except Exception as e:  # noqa: BLE001 - safetensors' own error types: the file could not be written
        raise WeightsError(f"cannot write {path}: {one_line(e)}") from None
    return path


def _read_safetensors(path: Path, expected_sha256: str | None) -> tuple[dict, dict]:
    """``(metadata, state dict)`` of a safetensors file, its sha256 checked first when given; a missing,
    unreadable or tampered file is a one-line :class:`WeightsError`."""
    if path.is_dir():
        raise WeightsError(f"{path} is a folder, not a weights file")
    if not path.is_file():
        raise WeightsError(f"weights file not found: {path}")
    if expected_sha256 and sha256_of(path) != expected_sha256:
        raise WeightsError(f"checksum mismatch for {path}: the file is corrupt or was modified")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
        state = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as e:
        if _looks_like_onnx(path):
            raise WeightsError(
                f"{path} is an ONNX file, not safetensors weights: load it with PatchPoseEstimator.load(path, "
                "backend='onnx') under a name ending in .onnx; the command line's --weights takes a bundled "
                "model's name or a .safetensors file only"
            ) from None
        hint = (
            f" (a training checkpoint? 'patchpose export {path} --out W.safetensors' writes its weights)"
            if path.suffix == ".pt"
            else ""
        )
        raise WeightsError(f"{path} is not a readable safetensors file ({one_line(e)}){hint}") from None
    return meta, state


def _looks_like_onnx(path: Path) -> bool:
    """Whether a file safetensors cannot read is an ONNX model: named ``.onnx``, or one ``patchpose export onnx``
    wrote under another name (a protobuf that begins with its ``ir_version`` and carries our config key)."""
    if path.suffix.lower() == ".onnx":
        return True
    try:
        if path.stat().st_size > 256 << 20:
            return False
        data = path.read_bytes()
    except OSError:
        return False
    return data[:1] == b"\x08" and b"patchpose_model_config" in data


def _check_bundled_copy(
    path: Path, meta: dict, state: dict[str, torch.Tensor], config: dict, registry: dict[str, tuple[str, str]]
) -> None:
    """Raise :class:`WeightsError` if ``meta`` names a model of ``registry`` (:data:`BUNDLED` or
    :data:`BUNDLED_SHAPES`) and the file at ``path`` holds another model: a file of that model's sha256 is that
    model; one of another sha256 (safetensors writes its metadata in another key order in each process, so a file
    saved again unchanged is one) is compared with the bundled file, checksum-verified, by its contents
    (:func:`bundled_difference`: ``state``, ``config`` as a dict and the read plan of ``meta``). The weights files
    themselves carry no checksum, the registry does. Models trained here are exported under other names
    (:func:`patchpose.training.recipe.export_name`)."""
    name = meta.get("name")
    if not (isinstance(name, str) and name in registry) or sha256_of(path) == registry[name][1]:
        return
    why = bundled_difference(name, state, config, meta, registry)
    if why is not None:
        raise WeightsError(f"{path}: {why}: save a model of your own under another name")


def bundled_difference(
    name: str,
    state: dict[str, torch.Tensor],
    config: dict,
    meta: dict | None,
    registry: dict[str, tuple[str, str]] | None = None,
) -> str | None:
    """How a model differs from the bundled model ``name`` (of ``registry``, by default :data:`BUNDLED` and
    :data:`BUNDLED_SHAPES`), or None when it does not: its tensors (``state``: the same names, dtypes, shapes and
    values, ``torch.equal``), then its settings, compared as values, not as text: ``config`` (the network's config
    as a dict, ``to_dict()``) and, for a pose network, the read plan that ``meta`` states
    (:meth:`ReadPlan.from_meta <patchpose.ReadPlan.from_meta>`; ``None``: not compared). Notes and the order of the
    metadata are not compared. The bundled file is read checksum-verified."""
    if registry is None:
        registry = {**BUNDLED, **BUNDLED_SHAPES}
    fname, sha = registry[name]
    ref_meta, ref_state = _read_safetensors(WEIGHTS_DIR / fname, sha)
    theirs = {k: v.detach().cpu() for k, v in state.items()}
    if theirs.keys() != ref_state.keys() or any(
        t.dtype != ref_state[k].dtype or t.shape != ref_state[k].shape or not torch.equal(t, ref_state[k])
        for k, t in theirs.items()
    ):
        return f"its tensors differ from the bundled model {name!r} it names (a modified copy or another version)"
    if ref_meta.get("format") == SHAPE_FORMAT:
        ref_config = ShapeNetConfig.from_dict(json.loads(ref_meta["model_config"])).to_dict()
    else:
        ref_config = config_from_json(ref_meta["model_config"], str(WEIGHTS_DIR / fname)).to_dict()
    settings = [
        (f"model_config.{k}", ref_config.get(k), config.get(k)) for k in sorted({*ref_config, *config})
    ]
    if meta is not None and ref_meta.get("format") != SHAPE_FORMAT:
        ref_plan, plan = ({**PLAN_DEFAULTS, **stated_plan(m)} for m in (ref_meta, meta))
        settings = [(k, ref_plan[k], plan[k]) for k in PLAN_KEYS] + settings
    for key, ref, own in settings:
        if ref != own:
            return (
                f"same tensors as the bundled model {name!r} it names, other settings (key {key!r}: "
                f"{_setting(ref)} -> {_setting(own)})"
            )
    return None


def stated_plan(meta: dict, where: str = "the weights") -> dict:
    """The read plan settings a weights file's metadata states (:data:`PLAN_KEYS`; those it leaves out are not in
    the dict: :data:`PLAN_DEFAULTS`), each checked (:func:`recommended_passes` and the others; a bad value is a
    :class:`WeightsError`): what :meth:`ReadPlan.from_meta <patchpose.ReadPlan.from_meta>` makes a plan of."""
    stated = {
        "passes": recommended_passes(meta, where),
        "orientation_offset": recommended_orientation_offset(meta, where),
        "descriptor_region": recommended_descriptor_region(meta, where),
        "reread_scale": recommended_reread_scale(meta, where),
    }
    return {k: v for k, v in stated.items() if v is not None}


def _setting(v) -> str:
    """A setting's value as a message gives it: numbers as written (``2``, ``-1.3333333333333333``), others by repr."""
    return repr(v) if isinstance(v, (str, list, tuple, dict)) or v is None else str(v)


def check_own_name(name) -> None:
    """An :class:`~patchpose.errors.InputError` if ``name`` is a bundled model's (pose or shape): a file written
    under it would be taken for that model (:func:`_check_bundled_copy` refuses it at load)."""
    if isinstance(name, str) and (name in BUNDLED or name in BUNDLED_SHAPES):
        raise InputError(f"{name!r} is a bundled model's name; save yours under another")


def load_weights(path: str | Path, expected_sha256: str | None = None) -> tuple[PoseNet, dict]:
    """Rebuild a :class:`PoseNet` from a patchpose safetensors file (strict: every key must match).

    Raises :class:`WeightsError` with a clear message for a missing, corrupt, foreign or tampered file.
    """
    path = Path(path)
    meta, state = _read_safetensors(path, expected_sha256)
    if meta.get("format") != "patchpose" or "model_config" not in meta:
        raise WeightsError(f"{path} is a safetensors file but not a patchpose model: {_missing_meta(meta)}")
    cfg = config_from_json(meta["model_config"], str(path))
    check_recommendations(meta, str(path))
    check_finite(state, str(path))
    try:
        model = PoseNet(cfg)
        model.load_state_dict(state, strict=True)
    except (ValueError, RuntimeError, KeyError, TypeError, ArithmeticError) as e:
        raise WeightsError(f"{path}: weights do not fit the stored model config ({one_line(e)})") from None
    check_float_dtypes(state, model.state_dict(), str(path))
    if expected_sha256 is None:  # last: a file of a bundled name whose structure is wrong says what is wrong
        _check_bundled_copy(path, meta, state, cfg.to_dict(), BUNDLED)
    model.eval()
    return model, meta


def _missing_meta(meta: dict) -> str:
    """What a safetensors file's metadata lacks to be a pose network's (the key, by name)."""
    fmt = meta.get("format")
    if not meta:
        return (
            "it has no metadata (a patchpose weights file's holds 'format': 'patchpose' and 'model_config')"
        )
    if fmt is None:
        return "its metadata has no 'format' key (a patchpose weights file's is 'patchpose')"
    if fmt == SHAPE_FORMAT:
        return (
            f"its metadata 'format' is {SHAPE_FORMAT!r}, an affine shape network's "
            "(patchpose.AffineShapeEstimator.load reads it)"
        )
    if fmt != "patchpose":
        return f"its metadata 'format' is {fmt!r}, not 'patchpose'"
    return "its metadata has no 'model_config' key (the network's config, as JSON)"


def _no_longer_bundled(name: str) -> WeightsError:
    return WeightsError(
        f"{name} is no longer bundled (bundled: {sorted(BUNDLED)}); its file is "
        f"src/patchpose/weights/{name}.safetensors at git tag {REMOVED_MODELS_TAG}: pass that file's path"
    )


def _a_shape_model(name: str) -> WeightsError:
    return WeightsError(
        f"{name!r} is the bundled affine shape network, not a pose model: it gives keypoints affine frames through "
        f"patchpose.AffineShapeEstimator (and LAFAffineShape, eval hpatches --shape-weights); pose models: "
        f"{sorted(BUNDLED)}"
    )


def load_bundled(name: str = DEFAULT_MODEL) -> tuple[PoseNet, dict]:
    if name in REMOVED_MODELS:
        raise _no_longer_bundled(name)
    if name in BUNDLED_SHAPES:
        raise _a_shape_model(name)
    if name not in BUNDLED:
        raise WeightsError(f"no bundled model {name!r}; bundled: {sorted(BUNDLED) or 'none'}")
    fname, sha = BUNDLED[name]
    return load_weights(WEIGHTS_DIR / fname, expected_sha256=sha)


def load_model(name_or_path: str | Path | None = None) -> tuple[PoseNet, dict]:
    """A bundled model by name, a patchpose safetensors file, or (None) the default bundled model."""
    if name_or_path is not None and not isinstance(name_or_path, (str, os.PathLike)):
        raise InputError(
            f"weights must be a bundled model's name or a file path, got {type(name_or_path).__name__}"
        )
    if not name_or_path:
        return load_bundled()
    if str(name_or_path) in BUNDLED:
        return load_bundled(str(name_or_path))
    if str(name_or_path) in REMOVED_MODELS and not Path(name_or_path).exists():
        raise _no_longer_bundled(str(name_or_path))
    if str(name_or_path) in BUNDLED_SHAPES and not Path(name_or_path).exists():
        raise _a_shape_model(str(name_or_path))
    if not Path(name_or_path).exists():
        raise WeightsError(f"weights file not found: {name_or_path} (nor a bundled model: {sorted(BUNDLED)})")
    return load_weights(name_or_path)


#: what a training checkpoint always holds (:func:`patchpose.training.checkpoint.save_checkpoint` writes
#: these; ``"train_model"``, ``"metrics"`` and ``"best"`` are optional)
CHECKPOINT_KEYS = ("model", "config", "step", "optimizer", "scheduler")


def load_checkpoint(path: str | Path) -> dict:
    """Load a training checkpoint written by :func:`~patchpose.training.checkpoint.save_checkpoint`
    (``weights_only=True``: no code is unpickled).

    The structure is checked (its keys, a valid model config, weights that fit that config and are finite):
    anything else is a one-line :class:`WeightsError`, so callers may index the checkpoint freely."""
    path = Path(path)
    if path.is_dir():
        inside = [p.name for p in (path / "checkpoint.pt", path / "best.pt") if p.is_file()]
        hint = (
            f": give its {' or '.join(inside)} ({path / inside[0]})" if inside else ", not a checkpoint file"
        )
        raise WeightsError(f"{path} is a folder{hint}")
    if not path.is_file():
        raise WeightsError(f"checkpoint not found: {path}")
    try:
        ckpt = load_torch_file(path)
    except WeightsError as e:  # corrupt, truncated or foreign file
        raise WeightsError(f"cannot read checkpoint: {e}") from None
    _validate_checkpoint(ckpt, path)
    return ckpt


def _not_a_checkpoint(path: Path, why: str) -> WeightsError:
    return WeightsError(f"{path} is not a patchpose training checkpoint: {why}")


def _validate_checkpoint(ckpt: object, path: Path) -> None:
    """Raise :class:`WeightsError` unless ``ckpt`` has the structure ``save_checkpoint`` writes."""
    if not isinstance(ckpt, dict):
        raise _not_a_checkpoint(path, f"it holds a {type(ckpt).__name__}, not a dict")
    missing = [k for k in CHECKPOINT_KEYS if k not in ckpt]
    if missing:
        raise _not_a_checkpoint(path, f"missing {', '.join(map(repr, missing))}")
    config = ckpt["config"]
    if not isinstance(config, dict) or not isinstance(config.get("model"), dict):
        raise _not_a_checkpoint(path, "its config has no 'model' section")
    step = ckpt["step"]
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise _not_a_checkpoint(path, f"'step' must be a whole number >= 0, got {step!r}")
    best = ckpt.get("best", -1.0)
    if not isinstance(best, (int, float)) or isinstance(best, bool):
        raise _not_a_checkpoint(path, f"'best' must be a number, got {type(best).__name__}")
    for key in ("optimizer", "scheduler"):
        if not isinstance(ckpt[key], dict):
            raise _not_a_checkpoint(path, f"{key!r} is a {type(ckpt[key]).__name__}, not a state dict")
    states = [k for k in ("model", "train_model") if k in ckpt]
    for key in states:
        state = ckpt[key]
        if not isinstance(state, dict) or not all(
            isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()
        ):
            raise _not_a_checkpoint(path, f"{key!r} is not a state dict of named tensors")
    try:
        net = PoseNet(ModelConfig.from_dict(config["model"]))
    except (ValueError, TypeError, KeyError, AttributeError, RuntimeError, ArithmeticError) as e:
        raise _not_a_checkpoint(path, f"invalid model config ({one_line(e, 200)})") from None
    for key in states:
        try:
            net.load_state_dict(ckpt[key], strict=True)
        except RuntimeError as e:
            raise WeightsError(
                f"{path}: the {key!r} weights do not fit the checkpoint's model config ({one_line(e)})"
            ) from None
        check_finite(ckpt[key], f"{path} ({key!r})")
        check_float_dtypes(ckpt[key], net.state_dict(), f"{path} ({key!r})")


def export_checkpoint(
    checkpoint: str | Path,
    out: str | Path,
    name: str = "custom",
    notes: str = "",
    **plan,
) -> Path:
    """Training checkpoint (``torch.load(weights_only=True)``) → safetensors weights file; ``plan``: the read
    plan to store, by :func:`save_weights`' keywords (:data:`PLAN_KEYS`; another is an
    :class:`~patchpose.errors.InputError`); ``name``: not a bundled model's (:func:`check_own_name`)."""
    check_own_name(name)
    unknown = sorted(set(plan) - set(PLAN_KEYS))
    if unknown:
        raise InputError(f"unknown read plan setting(s) {unknown}; the settings are {list(PLAN_KEYS)}")
    ckpt = load_checkpoint(checkpoint)  # validated: the config builds and the weights fit it
    model = PoseNet(ModelConfig.from_dict(ckpt["config"]["model"]))
    model.load_state_dict(ckpt["model"])
    return save_weights(
        model,
        out,
        name=name,
        notes=notes or f"exported from step {ckpt['step']}",
        **plan,
    )


#: the ``format`` metadata of an affine shape network's weights file
SHAPE_FORMAT = "patchpose-shape"


def save_shape_weights(
    model: ShapeNet,
    path: str | Path,
    name: str = "custom-shape",
    notes: str = "",
    train_config: dict | None = None,
) -> Path:
    """Write an affine shape network as a safetensors file (atomically) whose metadata carries its config:
    ``{"format": "patchpose-shape", "name", "model_config", "notes"}``, and ``"train_config"`` (JSON) when
    given: the settings of the ``patchpose train-shape`` run that made it. ``name``: not a bundled model's
    (:func:`check_own_name`)."""
    check_own_name(name)
    meta = {
        "format": SHAPE_FORMAT,
        "name": name,
        "model_config": json.dumps(model.cfg.to_dict()),
        "notes": notes,
    }
    if train_config is not None:
        meta["train_config"] = json.dumps(train_config)
    return _write_safetensors(model, path, meta, "shape.safetensors")


def load_shape_weights(path: str | Path, expected_sha256: str | None = None) -> tuple[ShapeNet, dict]:
    """Rebuild a :class:`~patchpose.models.shapenet.ShapeNet` from a file :func:`save_shape_weights` wrote
    (strict), in eval mode, with the file's metadata. A missing, corrupt, foreign or tampered file (a pose
    network's file too) is a one-line :class:`WeightsError`."""
    path = Path(path)
    meta, state = _read_safetensors(path, expected_sha256)
    if meta.get("format") != SHAPE_FORMAT or "model_config" not in meta:
        if meta.get("format") == "patchpose":
            what = "a pose network"
        elif meta.get("format") == SHAPE_FORMAT:
            what = "its metadata has no 'model_config' key"
        else:
            what = "not a patchpose model: " + _missing_meta(meta)
        raise WeightsError(f"{path} is not an affine shape network ({what})")
    try:
        d = json.loads(meta["model_config"])
        cfg = ShapeNetConfig.from_dict(d if isinstance(d, dict) else {"?": d})
    except (ValueError, TypeError) as e:
        raise WeightsError(
            f"{path}: model_config is not a valid shape network config ({one_line(e)})"
        ) from None
    check_finite(state, str(path))
    model = ShapeNet(cfg)
    check_float_dtypes(state, model.state_dict(), str(path))
    try:
        model.load_state_dict(state, strict=True)
    except (RuntimeError, KeyError) as e:
        raise WeightsError(f"{path}: weights do not fit the stored model config ({one_line(e)})") from None
    if expected_sha256 is None:
        _check_bundled_copy(path, meta, state, cfg.to_dict(), BUNDLED_SHAPES)
    return model.eval(), meta


def load_shape_model(name_or_path: str | Path | None = None) -> tuple[ShapeNet, dict]:
    """A bundled affine shape network by name, a file :func:`save_shape_weights` wrote, or (None) the
    default, :data:`DEFAULT_SHAPE_MODEL`."""
    name = str(name_or_path or DEFAULT_SHAPE_MODEL)
    if name in BUNDLED_SHAPES:
        fname, sha = BUNDLED_SHAPES[name]
        return load_shape_weights(WEIGHTS_DIR / fname, expected_sha256=sha)
    if not name_or_path:
        raise WeightsError(f"no bundled shape model {name!r}")
    if name in BUNDLED:
        raise WeightsError(
            f"{name!r} is a pose model; bundled shape models: {sorted(BUNDLED_SHAPES) or 'none'}"
        )
    return load_shape_weights(name_or_path)


def register_bundled(path: str | Path, name: str, kind: str = "pose") -> None:
    """Record a file in ``patchpose/weights`` as a bundled model with its checksum (maintainers only);
    ``kind``: ``"pose"`` (a :class:`PoseNet`) or ``"shape"`` (a :class:`~patchpose.models.shapenet.ShapeNet`)."""
    if kind not in ("pose", "shape"):
        raise InputError(f"kind must be 'pose' or 'shape', got {kind!r}")
    path = Path(path)
    d = json.loads(_BUNDLED_JSON.read_text()) if _BUNDLED_JSON.is_file() else {}
    d[name] = {"file": path.name, "sha256": sha256_of(path), **({"kind": kind} if kind != "pose" else {})}
    _BUNDLED_JSON.write_text(json.dumps(d, indent=1) + "\n")


__all__ = [
    "BUNDLED",
    "DEFAULT_MODEL",
    "REMOVED_MODELS",
    "REMOVED_MODELS_TAG",
    "load_bundled",
    "load_weights",
    "load_model",
    "recommended_passes",
    "recommended_descriptor_region",
    "recommended_orientation_offset",
    "recommended_reread_scale",
    "PLAN_DEFAULTS",
    "PLAN_KEYS",
    "check_recommendations",
    "load_torch_file",
    "save_weights",
    "export_checkpoint",
    "load_checkpoint",
    "BUNDLED_SHAPES",
    "DEFAULT_SHAPE_MODEL",
    "save_shape_weights",
    "load_shape_weights",
    "load_shape_model",
]
