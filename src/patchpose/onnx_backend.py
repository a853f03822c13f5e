"""ONNX export and an onnxruntime backend for the estimator (optional: ``pip install onnx onnxruntime``).

``patchpose export onnx --weights NAME_OR_FILE --out model.onnx`` writes the network (inputs
``x (N, C, rings, angles)`` or ``(N, C, PS, PS)``, outputs ``scale_logits`` and ``ori_logits``; dynamic N) with
the model config in the ONNX metadata, and the weights file's name and read plan (:class:`~patchpose.ReadPlan`:
``passes``, ``orientation_offset``, ``descriptor_region``, ``reread_scale``), so that an estimator loaded from the ``.onnx`` file
reads and describes as one loaded from the weights does. The
log-polar network is exported on its FFT-free path (the same numbers: circular padding and a plain
convolution, a cosine/sine table for the angular harmonics), since ONNX has no real FFT.

``PatchPoseEstimator.load(weights, backend="onnx")`` runs the same estimator on onnxruntime: ``weights``
may be an ``.onnx`` file written by the command above, or any patchpose weights (exported in memory).
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
from pathlib import Path

import numpy as np
import torch
from torch import nn

from .errors import InputError, WeightsError
from .fileio import make_folder, write_bytes_atomic
from .models import PoseNet
from .weights import (
    BUNDLED,
    BUNDLED_SHAPES,
    PLAN_KEYS,
    bundled_difference,
    check_own_name,
    check_recommendations,
    config_from_json,
    one_line,
)

#: the weights-file metadata an ONNX file carries over (``patchpose_meta``, a JSON object of strings)
CARRIED_META = ("name", "notes", *PLAN_KEYS)


def _require():
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        raise InputError("the onnx backend needs onnxruntime: pip install onnx onnxruntime") from None


def export_bytes(model: PoseNet, opset: int = 18, meta: dict | None = None) -> bytes:
    """The model as ONNX bytes (FFT-free path, dynamic batch), with its config in the metadata and, from
    ``meta`` (a weights file's metadata), the entries of :data:`CARRIED_META` it has."""
    import warnings

    try:
        import onnx
    except ImportError:
        raise InputError("ONNX export needs the onnx package: pip install onnx onnxruntime") from None
    carried = {k: str(meta[k]) for k in CARRIED_META if meta and meta.get(k) is not None}
    try:
        check_recommendations(carried, "the ONNX export")
    except WeightsError as e:  # a bad value given to the export, not a bad file
        raise InputError(str(e)) from None
    m = copy.deepcopy(model).eval().float()
    if m.cfg.is_polar:
        m.polar.use_fft = False
    x = torch.zeros(2, *m.cfg.input_shape)
    names = list(m.cfg.output_sizes)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            m, (x,), buf, input_names=["x"], output_names=names, dynamic_axes={"x": {0: "n"}},
            opset_version=opset, dynamo=False,
        )  # fmt: skip
    proto = onnx.load_from_string(buf.getvalue())
    entry = proto.metadata_props.add()
    entry.key, entry.value = "patchpose_model_config", json.dumps(m.cfg.to_dict())
    if carried:
        entry = proto.metadata_props.add()
        entry.key, entry.value = "patchpose_meta", json.dumps(carried)
    return proto.SerializeToString()


def export_onnx(model: PoseNet, path: str | Path, opset: int = 18, meta: dict | None = None) -> Path:
    """Write ``model`` as an ONNX file (through a temporary sibling and a rename); ``meta``: the weights
    file's metadata to carry over (:func:`export_bytes`). A ``name`` in ``meta`` that is a bundled model's is
    written for that model's own tensors only (a bundled model exported, its read plan changed or not); another
    model under it is an :class:`InputError` (:func:`~patchpose.weights.check_own_name`): an ONNX file carries no
    checksum."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path} is a folder: give the ONNX file's name, e.g. {path / 'model.onnx'}")
    name = (meta or {}).get("name")
    if isinstance(name, str) and name in BUNDLED_SHAPES:
        check_own_name(name)
    if isinstance(name, str) and name in BUNDLED:
        why = bundled_difference(name, model.state_dict(), model.cfg.to_dict(), None, BUNDLED)
        if why is not None:
            raise InputError(f"{name!r} is a bundled model's name; save yours under another ({why})")
    data = export_bytes(model, opset, meta)
    make_folder(path.parent, for_file=path)
    # a new sibling, renamed over the file (a link replaced by it, as a checkpoint's export does); a folder that
    # cannot be written is one line naming the file
    return write_bytes_atomic(path, data, "ONNX file", keep_link=False)


class OnnxPoseNet(nn.Module):
    """A :class:`PoseNet` look-alike (``cfg``, ``forward(x) -> dict``) that runs on onnxruntime (CPU)."""

    def __init__(self, source: bytes | str | Path, threads: int | None = None) -> None:
        super().__init__()
        _require()
        import onnx
        import onnxruntime as ort
        from onnx import numpy_helper

        name = f"ONNX file {source}" if isinstance(source, (str, Path)) else "the in-memory ONNX model"
        self.name = name
        try:
            data = Path(source).read_bytes() if isinstance(source, (str, Path)) else source
            proto = onnx.load_from_string(data)
        except Exception as e:  # noqa: BLE001 - any failure: not a usable ONNX file
            raise WeightsError(
                f"cannot read ONNX model {source if not isinstance(source, bytes) else ''}: {one_line(e)}"
            ) from None
        #: SHA-256 of the ONNX model's bytes (:attr:`patchpose.PatchPoseEstimator.fingerprint`)
        self.digest = hashlib.sha256(data).hexdigest()
        meta = {p.key: p.value for p in proto.metadata_props}
        if "patchpose_model_config" not in meta:
            raise WeightsError("this ONNX file is not a patchpose model (no patchpose_model_config metadata)")
        self.cfg = config_from_json(meta["patchpose_model_config"], name)
        self.meta = _carried_meta(meta.get("patchpose_meta"), name)
        for init in proto.graph.initializer:  # what check_finite does for safetensors weights
            if init.data_location == onnx.TensorProto.EXTERNAL:  # ours carry their weights inside
                where = {e.key: e.value for e in init.external_data}.get("location", "?")
                raise WeightsError(
                    f"{name}: weight {init.name!r} points to an external file ({where!r}); patchpose reads only "
                    "ONNX models that carry their weights inside"
                )
            arr = numpy_helper.to_array(init)
            if arr.dtype.kind == "f" and not np.isfinite(arr).all():
                raise WeightsError(f"{name}: weight {init.name!r} holds non-finite values (NaN or infinity)")
        opts = ort.SessionOptions()
        if threads:
            opts.intra_op_num_threads = int(threads)
        try:
            self.session = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
        except Exception as e:  # noqa: BLE001 - onnxruntime's own error types: an unusable graph
            raise WeightsError(f"{name}: onnxruntime cannot load the model ({one_line(e)})") from None
        self.outputs = [o.name for o in self.session.get_outputs()]
        self._check_graph(name)
        self._anchor = nn.Parameter(torch.zeros(0), requires_grad=False)  # device of "the model": CPU

    def _check_graph(self, name: str) -> None:
        """The graph's input and outputs must be those of the stored config (static sizes compared)."""
        cfg = self.cfg

        def fits(shape, want: tuple[int, ...]) -> bool:
            return len(shape) == len(want) + 1 and all(
                not isinstance(d, int) or d == w for d, w in zip(shape[1:], want)
            )

        inputs = self.session.get_inputs()
        if len(inputs) != 1 or inputs[0].name != "x" or not fits(inputs[0].shape, cfg.input_shape):
            got = ", ".join(f"{i.name} {list(i.shape)}" for i in inputs)
            raise WeightsError(
                f"{name}: the graph's input ({got}) does not match its model config "
                f"(x [N, {', '.join(map(str, cfg.input_shape))}])"
            )
        bins = cfg.output_sizes
        want = list(bins)
        shapes = {o.name: o.shape for o in self.session.get_outputs()}
        if sorted(shapes) != sorted(want) or not all(fits(shapes[o], (bins[o],)) for o in want):
            raise WeightsError(
                f"{name}: the graph's outputs ({', '.join(f'{k} {list(v)}' for k, v in shapes.items())}) "
                f"do not match its model config ({', '.join(f'{o} [N, {bins[o]}]' for o in want)})"
            )

    def forward(self, x: torch.Tensor, heads=None) -> dict[str, torch.Tensor]:
        """Every output of the graph; ``heads`` (as :meth:`PoseNet.forward`) only drops the others (the graph
        computes them all)."""
        if x.dim() != 4 or tuple(x.shape[1:]) != self.cfg.input_shape:
            raise ValueError(
                f"expected inputs (N, {', '.join(map(str, self.cfg.input_shape))}), got {tuple(x.shape)}"
            )
        try:
            res = self.session.run(None, {"x": np.ascontiguousarray(x.detach().cpu().numpy(), np.float32)})
        except Exception as e:  # noqa: BLE001 - onnxruntime's own error types: the graph cannot run
            raise WeightsError(f"{self.name}: onnxruntime cannot run the model ({one_line(e)})") from None
        keep = self.cfg.outputs_of(heads)
        return {name: torch.from_numpy(v) for name, v in zip(self.outputs, res) if name in keep}


def _carried_meta(text: str | None, name: str) -> dict[str, str]:
    """The weights metadata an ONNX file carries (:data:`CARRIED_META`), checked as a weights file's is."""
    if text is None:
        return {}
    try:
        meta = json.loads(text)
    except ValueError:
        meta = None
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise WeightsError(f"{name}: its patchpose_meta metadata is not a JSON object of strings")
    meta = {k: v for k, v in meta.items() if k in CARRIED_META}
    check_recommendations(meta, name)
    return meta


__all__ = ["CARRIED_META", "export_onnx", "export_bytes", "OnnxPoseNet"]
