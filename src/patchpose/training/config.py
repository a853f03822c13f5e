"""Typed training configuration: a YAML file (or a named preset in ``patchpose/configs/``) plus
``key=value`` overrides, validated by OmegaConf in struct mode (a mistyped key is an error)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ..data.pairs import PairConfig
from ..errors import CLEANUP_TAG
from ..losses import LossConfig
from ..models import ModelConfig

PRESETS_DIR = Path(__file__).resolve().parent.parent / "configs"
#: the most pairs a training step or the validation takes (each pair two patches of ``data.patch_size``²)
MAX_BATCH = 16_384
MAX_VAL_PAIRS = 100_000


@dataclass
class DataConfig(PairConfig):
    photos: str = "data/photos"  # folder of photos (splits.json inside, or split by image hash)
    num_workers: int = 1  # data-loading processes (0 = in the training process)
    val_pairs: int = 1536  # fixed validation pairs per protocol (scale-only, rotation-only, joint); 0: none


@dataclass
class OptimConfig:
    steps: int = 20000
    batch_size: int = 128  # pairs per step (2× patches)
    optimizer: str = "adamw"  # "adamw" | "sgd" (paper: SGD lr 3, momentum 0.9, T = 20)
    lr: float = 2e-3
    momentum: float = 0.9
    weight_decay: float = 1e-4
    schedule: str = "cosine"  # "cosine" | "constant"
    warmup_steps: int = 500
    grad_clip: float = 5.0  # max gradient norm (0 = off)
    amp: str = "bf16"  # "bf16" | "fp16" (CUDA only) | "none"
    channels_last: bool = True


@dataclass
class RunConfig:
    seed: int = 0
    device: str = "auto"  # "auto" (CUDA when present, else CPU) | "cpu" | "cuda"
    threads: int = 0  # torch intra-op threads on CPU (0 = torch default)
    val_every: int = 1000  # steps
    log_every: int = 50
    checkpoint_minutes: float = 5.0  # also at every validation and at the end
    checkpoint_every: int = 0  # also every this many steps (0 = off)
    max_minutes: float = 0.0  # stop (with a checkpoint) after this wall time; 0 = no limit
    init_from: str = ""  # start a new run from these weights (checkpoint.pt or .safetensors; same network)
    # a fixed network whose histograms the student learns too (with loss.distill > 0): a bundled model's
    # name or a .safetensors file, reading the same inputs (grid or windows) with the same bins
    teacher: str = ""


@dataclass
class TrainConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    loss: LossConfig = field(default_factory=LossConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    run: RunConfig = field(default_factory=RunConfig)


#: training settings this code no longer has, by ``(section, key)``: the value at which each was off, and the git
#: tag of patchpose whose code still trains with it. A config written while it existed (a checkpoint's, a run
#: folder's ``config.yaml``) names it: at its "off" value that is a run this code makes, and the key is ignored;
#: at any other value it is a run that only that tag continues (:func:`removed_settings_in_use`). The model's
#: removed settings are :data:`patchpose.models.posenet.REMOVED_SETTINGS` (a network this code cannot build).
REMOVED_TRAINING_SETTINGS: dict[tuple[str, str], tuple[object, str]] = {
    ("data", "jitter"): (0.0, "lab-2026-11-25"),
    ("data", "level_jitter"): (False, "lab-2026-11-25"),
    ("data", "teacher_turns"): (1, "lab-2026-11-25"),
    ("data", "context_swap"): (0.0, "lab-2026-11-25"),
    ("data", "reread"): (0.0, "lab-2026-11-25"),
    ("data", "harris"): (False, CLEANUP_TAG),  # Harris corners beside SIFT's keypoints
    ("data", "anisotropy"): (0.0, CLEANUP_TAG),  # affine views (a stretch of one view of a pair)
    ("data", "anisotropy_prob"): (0.5, CLEANUP_TAG),
    ("data", "shading"): (0.0, CLEANUP_TAG),  # an illumination ramp per log-polar view
    ("optim", "ema"): (0.0, CLEANUP_TAG),  # a moving average of the weights
    ("loss", "scale_entropy"): (0.0, CLEANUP_TAG),  # an entropy penalty on the scale histograms
    ("loss", "scale_weight"): (1.0, CLEANUP_TAG),
    ("loss", "ori_weight"): (1.0, CLEANUP_TAG),
}


#: removed settings that had no effect where another one was off: ``(section, key)`` → ``(other key, its off value)``
OFF_WITH = {("data", "anisotropy_prob"): ("anisotropy", 0.0)}


def removed_settings_in_use(config: dict) -> str:
    """``""`` when each of the :data:`REMOVED_TRAINING_SETTINGS` that ``config`` (a training config as a dict: a
    checkpoint's, a ``config.yaml``'s) names is at its "off" value; else those in use, in words, with the git tag
    that still trains with them: ``"data.harris=True, a setting removed from patchpose; git tag … still trains
    with it"``."""
    used, tags = [], []
    for (section, key), (off, tag) in REMOVED_TRAINING_SETTINGS.items():
        values = config.get(section)
        if (section, key) in OFF_WITH and isinstance(values, dict):
            other, other_off = OFF_WITH[(section, key)]
            if values.get(other, other_off) == other_off:
                continue  # no effect where the setting it qualifies is off (no draw was made)
        if isinstance(values, dict) and key in values and values[key] != off:
            used.append(f"{section}.{key}={values[key]!r}")
            tags += [tag] if tag not in tags else []
    if not used:
        return ""
    one = len(used) == 1
    return (
        f"{', '.join(used)}, {'a setting' if one else 'settings'} removed from patchpose; "
        f"git tag {' / '.join(tags)} still trains with {'it' if one else 'them'}"
    )


def without_removed_settings(config: dict) -> dict:
    """``config`` without the :data:`REMOVED_TRAINING_SETTINGS` it names (each at its "off" value: check with
    :func:`removed_settings_in_use` first)."""
    return {
        section: {k: v for k, v in values.items() if (section, k) not in REMOVED_TRAINING_SETTINGS}
        if isinstance(values, dict)
        else values
        for section, values in config.items()
    }


def list_presets() -> list[str]:
    return sorted(p.stem for p in PRESETS_DIR.glob("*.yaml"))


def load_config(path_or_preset: str | None = None, overrides: list[str] | None = None):
    """Defaults ← YAML file or preset name ← dotlist overrides (``optim.lr=1e-3``); values checked
    (:func:`check_config`)."""
    import yaml

    try:
        cfg = _load(path_or_preset, overrides)
    except (OmegaConfBaseException, yaml.YAMLError, TypeError) as e:
        raise ValueError(f"bad training config: {' '.join(str(e).split())[:300]}") from None
    check_config(cfg)
    return cfg


def check_config(cfg) -> None:
    """ValueError naming an optimisation or run setting that cannot be used (it would otherwise divide by
    zero, train with a negative learning rate, reverse the gradient or finish at step 0)."""
    import math

    from ..checks import MAX_THREADS
    from ..data.keypoints import MAX_KEYPOINTS
    from ..errors import is_int_in

    o, r, d = cfg.optim, cfg.run, cfg.data

    def real(v) -> bool:  # a finite number, not a boolean
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    rules = [
        ("optim.steps", o.steps, isinstance(o.steps, int) and o.steps >= 1),
        ("optim.batch_size", o.batch_size, is_int_in(o.batch_size, 1, MAX_BATCH)),
        ("optim.lr", o.lr, math.isfinite(o.lr) and o.lr >= 0),
        ("optim.momentum", o.momentum, 0 <= o.momentum < 1),
        ("optim.weight_decay", o.weight_decay, math.isfinite(o.weight_decay) and o.weight_decay >= 0),
        ("optim.warmup_steps", o.warmup_steps, o.warmup_steps >= 0),
        ("optim.grad_clip", o.grad_clip, math.isfinite(o.grad_clip) and o.grad_clip >= 0),
        ("run.log_every", r.log_every, r.log_every >= 1),
        ("run.val_every", r.val_every, r.val_every >= 1),
        ("run.checkpoint_minutes", r.checkpoint_minutes, r.checkpoint_minutes > 0),
        ("run.checkpoint_every", r.checkpoint_every, r.checkpoint_every >= 0),
        ("run.max_minutes", r.max_minutes, math.isfinite(r.max_minutes) and r.max_minutes >= 0),
        ("run.threads", r.threads, is_int_in(r.threads, 0, MAX_THREADS)),
        ("data.val_pairs", d.val_pairs, is_int_in(d.val_pairs, 0, MAX_VAL_PAIRS)),  # 0: no validation
        ("data.max_keypoints", d.max_keypoints, is_int_in(d.max_keypoints, 1, MAX_KEYPOINTS)),
        ("data.long_side", d.long_side, is_int_in(d.long_side, 0, 2**16)),
        ("data.margin", d.margin, real(d.margin) and d.margin >= 0),
        ("data.delta_scale", d.delta_scale, real(d.delta_scale) and 0 <= d.delta_scale <= 8),
        (
            "data.sigma_min",
            d.sigma_min,
            real(d.sigma_min) and real(d.sigma_max) and d.sigma_min < d.sigma_max,
        ),
        ("data.noise", d.noise, real(d.noise) and d.noise >= 0),
        ("data.gamma", d.gamma, real(d.gamma) and d.gamma >= 0),
        ("data.jitter_px", d.jitter_px, real(d.jitter_px) and d.jitter_px >= 0),
    ]
    from ..checks import workers

    workers(cfg.data.num_workers, "data.num_workers", lo=0)  # 0: in the training process
    for name, value, ok in rules:
        if not ok:
            raise ValueError(f"bad training config: {name}={value!r} is out of range")


def _load(path_or_preset, overrides):
    base = OmegaConf.structured(TrainConfig)
    OmegaConf.set_struct(base, True)
    if path_or_preset:
        p = Path(path_or_preset)
        if not p.is_file():
            p = PRESETS_DIR / f"{path_or_preset}.yaml"
        if not p.is_file():
            raise FileNotFoundError(f"no config file or preset {path_or_preset!r}; presets: {list_presets()}")
        base = OmegaConf.merge(base, _read_yaml(p))
    if overrides:
        bad = [o for o in overrides if "=" not in o]
        if bad:
            raise ValueError(f"overrides must look like key=value, got {bad}")
        for o in overrides:  # a removed setting is said as such, not as a key this config never had
            section, _, key = o.split("=", 1)[0].partition(".")
            if (section, key) in REMOVED_TRAINING_SETTINGS:
                tag = REMOVED_TRAINING_SETTINGS[section, key][1]
                raise ValueError(
                    f"{section}.{key} was removed from patchpose; git tag {tag} still trains with it"
                )
        base = OmegaConf.merge(base, OmegaConf.from_dotlist([_quote_if_str(base, o) for o in overrides]))
    return base


def _read_yaml(path: Path):
    """A config file, less the removed settings it names at their "off" value (a run folder's ``config.yaml``
    written while they existed names them all); ValueError for one it names at another value."""
    loaded = OmegaConf.load(path)
    if not isinstance(loaded, DictConfig):
        return loaded  # merging it fails, in words
    plain = OmegaConf.to_container(loaded)
    used = removed_settings_in_use(plain)
    if used:
        raise ValueError(f"bad training config: {path} sets {used}")
    kept = without_removed_settings(plain)
    return loaded if kept == plain else OmegaConf.create(kept)


def _quote_if_str(base, override: str) -> str:
    """``key=value`` with the value quoted when the field is a string, so that YAML keeps it as written
    (unquoted, YAML would read ``data.photos=010`` as ``'8'``, ``=on`` as ``'True'``, ``=2e5`` as
    ``'200000.0'``)."""
    key, value = override.split("=", 1)
    parent, _, leaf = key.rpartition(".")
    try:
        node = OmegaConf.select(base, parent) if parent else base
        is_str = node is not None and OmegaConf.get_type(node, leaf) is str
    except OmegaConfBaseException:
        return override  # an unknown key: OmegaConf names it
    if not is_str or value[:1] in ("'", '"'):
        return override
    return f"{key}='{value.replace(chr(39), chr(39) * 2)}'"


def to_container(cfg) -> dict:
    return OmegaConf.to_container(cfg, resolve=True)


#: a config's sections that make what a run learns (``run.*`` says how it runs)
LEARNING_SECTIONS = ("model", "loss", "data", "optim")


def config_changes(stored: dict, given: dict, sections, counts=lambda section, key: True) -> list[str]:
    """``"section.key: old -> new"`` for each setting of ``sections`` that two resolved configs both hold with
    different values and that ``counts(section, key)``, in order (a key that only one of them has is not compared):
    what a resume or a rerun into a finished run would change."""
    return [
        f"{section}.{key}: {stored[section][key]!r} -> {given[section][key]!r}"
        for section in sections
        for key in sorted(set(stored.get(section) or {}) & set(given.get(section) or {}))
        if counts(section, key) and stored[section][key] != given[section][key]
    ]
