"""``patchpose bench``: wall time of scale+orientation for N keypoints next to OpenCV SIFT detection on the
same photo, in one run (medians of repeats; the host is noisy, compare only within a run)."""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import asdict
from pathlib import Path

import cv2
import numpy as np
import torch

from ..errors import require


class _NoBar:
    """What :func:`_bar` gives where tqdm is not installed: a bar that shows nothing."""

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def _bar(**kw):
    """A tqdm bar on stderr that leaves no line behind, or :class:`_NoBar` where tqdm is not installed (``bench
    --scaling`` needs no extra)."""
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(leave=False, **kw)


def _median_times_interleaved(fns: dict, repeats: int) -> dict:
    """Median seconds of each of ``fns`` (name → callable), timed in turn within every repeat, so that a
    machine that speeds up or slows down during the run moves all of them alike (one warm-up each)."""
    names = ", ".join(n for n in fns if n != "fn")
    bar = _bar(total=repeats + 1, desc=f"timing {names}" if names else "timing", unit="round")
    for fn in fns.values():
        fn()
    bar.update()  # the bar moves between rounds, never inside a timed call
    ts: dict = {name: [] for name in fns}
    for _ in range(repeats):
        bar.update()
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            ts[name].append(time.perf_counter() - t)
    bar.close()
    return {name: float(np.median(v)) for name, v in ts.items()}


def _median_time(fn, repeats: int) -> float:
    """Median seconds of ``fn`` over ``repeats`` calls after one warm-up."""
    return _median_times_interleaved({"fn": fn}, repeats)["fn"]


def _check_out(out) -> None:
    """A benchmark's ``out``: a folder or None; an empty name is a one-line error."""
    from ..errors import InputError

    if out is not None and not str(out).strip():
        raise InputError("--out must name a folder (or be left out)")


def _write_result(out, name: str, res: dict) -> None:
    """``res`` as ``OUT/name`` (JSON), written atomically, when ``out`` is given."""
    from ..fileio import write_text_atomic

    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        write_text_atomic(Path(out) / name, json.dumps(res, indent=1))


def conv_flops_per_keypoint(est, image: np.ndarray, xy: np.ndarray) -> float:
    """Multiply-adds × 2 of the network's 1-D convolutions per keypoint in one ``est.estimate`` (every read of
    its plan; a whole-circle convolution run through the FFT is counted as the direct convolution it equals)."""
    total = [0]

    def count(m, inputs, out):
        total[0] += 2 * out.numel() * (m.in_channels // m.groups) * m.kernel_size[0]

    hooks = [m.register_forward_hook(count) for m in est.model.modules() if isinstance(m, torch.nn.Conv1d)]
    # the FFT path reads a convolution's weights without calling it: count that one run directly
    nets = {m: m.use_fft for m in est.model.modules() if hasattr(m, "use_fft")}
    try:
        for m in nets:
            m.use_fft = False
        with one_chunk_at_a_time():  # the hooks count on this thread
            est.estimate(image, xy)
    finally:
        for h in hooks:
            h.remove()
        for m, v in nets.items():
            m.use_fft = v
    return total[0] / max(len(xy), 1)


@contextlib.contextmanager
def one_chunk_at_a_time():
    """This thread on one torch thread for the block: an estimator then reads one chunk at a time on this thread
    (what a profile can follow), as each of its reading threads does on several."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def profile_default_read(est, image: np.ndarray, xy: np.ndarray, repeats: int) -> dict:
    """Where the default read's time goes (cProfile over ``repeats`` calls on one torch thread, one chunk at a
    time, as each reading thread runs: cProfile sees only its own thread): the shares of log-polar sampling
    (``PolarReads``, ``extract_polar``), the network (``predict_histograms``), the image pyramid and the rest;
    the network's FLOPs per keypoint; one thread's float32 matmul throughput; and the time the network would
    take at it."""
    import cProfile
    import pstats

    with one_chunk_at_a_time():
        est.estimate(image, xy)  # warm-up
        prof = cProfile.Profile()
        t = time.perf_counter()
        prof.enable()
        for _ in range(repeats):
            est.estimate(image, xy)
        prof.disable()
        total = time.perf_counter() - t
        a = torch.randn(1024, 1024)
        mm = _median_time(lambda: a @ a, 5)  # the throughput of the thread the network ran on
    stats = pstats.Stats(prof).stats

    def cum(name: str, file_part: str = "", not_from: str = "") -> float:
        """Cumulative time of the functions ``name`` in files matching ``file_part``, less what they spent
        when called by a function ``not_from`` (counted there)."""
        total = 0.0
        for k, v in stats.items():
            if k[2] == name and file_part in k[0]:
                total += v[3] - sum(c[3] for f, c in v[4].items() if f[2] == not_from and file_part in f[0])
        return total

    parts = {
        # log-polar sampling: the estimator's PolarReads, and extract_polar wherever PolarReads did not call it
        "sampling": cum("__call__", "polar.py") + cum("extract_polar", "polar.py", not_from="__call__"),
        "network": cum("predict_histograms"),
        "pyramid": cum("__init__", "patches.py"),
    }
    res = {f"profile_{k}_share": v / total for k, v in parts.items()}
    res["profile_other_share"] = 1.0 - sum(res.values())
    flops = conv_flops_per_keypoint(est, image, xy)
    res["network_mflop_per_keypoint"] = flops / 1e6
    res["matmul_gflop_per_s"] = 2 * 1024**3 / mm / 1e9
    res["network_at_matmul_speed_s"] = flops * len(xy) / (res["matmul_gflop_per_s"] * 1e9)
    res["network_s"] = parts["network"] / repeats
    return res


def bench(
    weights: str | None = None,
    num_keypoints: int = 2048,
    size=(1024, 768),
    repeats: int = 7,
    out: str | Path | None = None,
    backends=("torch", "onnx"),
) -> dict:
    """``patchpose bench``: seconds of our poses (the model's read plan, and one read) for ``num_keypoints``
    keypoints next to OpenCV SIFT's detection on the same photo, their ratios, the profile of the default
    read, the backends and kornia's dominant gradient, on this process's torch and OpenCV threads (the CLI's
    ``--threads`` sets them). Writes ``OUT/bench.json`` atomically when ``out`` is given."""
    from ..data.keypoints import MAX_KEYPOINTS, detect_sift
    from ..data.patches import load_image
    from ..data.photos import demo_photo
    from ..errors import InputError, is_int_in
    from ..estimator import PatchPoseEstimator

    for name, v, hi in (("keypoints", num_keypoints, MAX_KEYPOINTS // 4), ("repeats", repeats, None)):
        if not is_int_in(v, 1, hi):  # SIFT is asked for 4× the keypoints timed
            raise InputError(f"{name} must be an integer from 1{f' to {hi:,}' if hi else ''}, got {v!r}")
    _check_out(out)
    img = cv2.resize(load_image(demo_photo()), size, interpolation=cv2.INTER_CUBIC)
    gray = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)
    sift = cv2.SIFT_create()
    xy, _ = detect_sift(img, 4 * num_keypoints)
    rng = np.random.default_rng(0)
    if len(xy) < num_keypoints:  # pad with random points so that exactly N are timed
        extra = rng.uniform([0, 0], [size[0] - 1, size[1] - 1], (num_keypoints - len(xy), 2))
        xy = np.concatenate([xy, extra])
    xy = xy[:num_keypoints]
    res = {
        "image": f"{Path(demo_photo()).name} resized to {size[0]}x{size[1]}",
        "num_keypoints": int(len(xy)),
        "torch_threads": torch.get_num_threads(),
        "opencv_threads": cv2.getNumThreads(),
    }
    n = len(xy)
    est = PatchPoseEstimator.load(weights)
    one = est.with_plan(passes=1)
    res["model"] = est.name
    res["plan"] = asdict(est.plan)
    # SIFT's detection, the model as it runs by default (its read plan) and one read, timed in turn
    t = _median_times_interleaved(
        {
            "sift_detect_s": lambda: sift.detect(gray, None),
            "patchpose_default_s": lambda: est.estimate(img, xy),
            "patchpose_one_read_s": lambda: one.estimate(img, xy),
        },
        repeats,
    )
    res.update(t)
    res["ratio_default_to_sift"] = t["patchpose_default_s"] / t["sift_detect_s"]
    res["ratio_one_read_to_sift"] = t["patchpose_one_read_s"] / t["sift_detect_s"]
    res["patchpose_inputs_s"] = _median_time(lambda: est.extract(img, xy), repeats)
    res.update(profile_default_read(est, img, xy, repeats))
    # per backend: inputs already extracted, network + decoding only (keypoints per second), and end to end
    inputs = est.extract(img, xy)
    for backend in backends:
        try:
            b = PatchPoseEstimator.load(weights, backend=backend)
        except InputError as e:  # onnxruntime not installed
            res[f"backend_{backend}"] = f"skipped: {e}"
            continue
        from ..inference import predict_histograms

        t = _median_time(lambda b=b: predict_histograms(b.model, inputs, b.batch_size), repeats)
        res[f"backend_{backend}_network_keypoints_per_s"] = n / t
        res[f"backend_{backend}_total_s"] = _median_time(lambda b=b: b.estimate(img, xy), repeats)
        res[f"backend_{backend}_ratio_to_sift"] = res[f"backend_{backend}_total_s"] / res["sift_detect_s"]
    # kornia's dominant-gradient orientation on 32×32 patches at the same keypoints (patches included)
    KF = require("kornia.feature", "kornia")

    from ..data.patches import Pyramid, extract_patches

    det = KF.PatchDominantGradientOrientation(32)

    def kornia_ori():
        p = extract_patches(Pyramid(gray.astype(np.float32) / 255.0), xy, 0.0, 0.0, 32)
        with torch.inference_mode():
            return det(torch.from_numpy(p))

    res["kornia_dominant_gradient_s"] = _median_time(kornia_ori, repeats)
    res["kornia_dominant_gradient_keypoints_per_s"] = n / res["kornia_dominant_gradient_s"]
    _write_result(out, "bench.json", res)
    return res


def bench_pair(size=(1024, 768)) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pair ``patchpose bench --recipes`` times: the bundled photo resized to ``size`` and the same photo seen
    turned by 30°, zoomed 1.25× and slightly slanted about its centre, with the 3×3 map from the first to the
    second (gray ``uint8`` images)."""
    from ..data.patches import load_image
    from ..data.photos import demo_photo

    w, h = size
    gray = cv2.cvtColor(
        cv2.resize(load_image(demo_photo()), size, interpolation=cv2.INTER_CUBIC), cv2.COLOR_RGB2GRAY
    )
    turn = np.vstack([cv2.getRotationMatrix2D((w / 2, h / 2), 30.0, 1.25), [0.0, 0.0, 1.0]])
    slant = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1e-4, 0.0, 1.0]])
    centre = np.array([[1.0, 0.0, w / 2], [0.0, 1.0, h / 2], [0.0, 0.0, 1.0]])
    H = turn @ centre @ slant @ np.linalg.inv(centre)
    return gray, cv2.warpPerspective(gray, H, size, flags=cv2.INTER_LINEAR), H / H[2, 2]


def bench_recipes(
    num_keypoints: int = 2000, size=(1024, 768), repeats: int = 3, out: str | Path | None = None
) -> dict:
    """``patchpose bench --recipes``: seconds of each recipe of :func:`patchpose.match_pair` on one pair
    (:func:`bench_pair`; detection of at most ``num_keypoints`` SIFT keypoints per photo, description and matching,
    the model's load included, as a call pays it), and of ``pair-pose`` at Shi-Tomasi corners (``pair-pose@gftt``,
    :func:`~patchpose.matching.pair.default_recipe` there, where our network votes), next to OpenCV SIFT's
    detection, description and matching of the same pair (a brute-force matcher with cross check, and Lowe's ratio
    test at 0.8), medians of ``repeats`` runs timed in turn, on this process's torch and OpenCV threads; each with its
    matches and correct matches within 3 px.
    Writes ``OUT/recipes.json`` atomically when ``out`` is given."""
    from ..data.keypoints import MAX_KEYPOINTS
    from ..errors import InputError, is_int_in
    from ..geometry import reprojection_errors
    from ..matching.pair import match_pair
    from ..recipes import RECIPES

    for name, v, hi in (("keypoints", num_keypoints, MAX_KEYPOINTS), ("repeats", repeats, None)):
        if not is_int_in(v, 1, hi):
            raise InputError(f"{name} must be an integer from 1{f' to {hi:,}' if hi else ''}, got {v!r}")
    _check_out(out)
    img1, img2, H = bench_pair(size)
    found: dict = {}

    def sift(ratio: bool):
        def run():
            s = cv2.SIFT_create(int(num_keypoints))
            (k1, d1), (k2, d2) = (s.detectAndCompute(im, None) for im in (img1, img2))
            if ratio:
                pairs = cv2.BFMatcher(cv2.NORM_L2).knnMatch(d1, d2, k=2)
                m = [p[0] for p in pairs if len(p) == 2 and p[0].distance < 0.8 * p[1].distance]
            else:
                m = cv2.BFMatcher(cv2.NORM_L2, crossCheck=True).match(d1, d2)
            xy1 = np.array([k1[x.queryIdx].pt for x in m]).reshape(-1, 2)
            xy2 = np.array([k2[x.trainIdx].pt for x in m]).reshape(-1, 2)
            found["sift_ratio" if ratio else "sift"] = reprojection_errors(H, xy1, xy2)

        return run

    def recipe(row: str, name: str, detector: str = "sift"):
        def run():
            found[row] = match_pair(
                img1, img2, recipe=name, detector=detector, max_keypoints=int(num_keypoints), homography=H
            ).error_px

        return run

    fns = {
        "sift": sift(False),
        "sift_ratio": sift(True),
        **{name: recipe(name, name) for name in RECIPES},
        "pair-pose@gftt": recipe("pair-pose@gftt", "pair-pose", "gftt"),
    }
    t = _median_times_interleaved(fns, repeats)
    rows = {}
    for name, seconds in t.items():
        err = found[name]
        rows[name] = {
            "seconds": seconds,
            "ratio_to_sift": seconds / t["sift"],
            "matches": int(len(err)),
            "correct@3px": int((err <= 3.0).sum()),
        }
    res = {
        "pair": f"the bundled photo resized to {size[0]}x{size[1]}, and turned 30°, zoomed 1.25x, slanted",
        "max_keypoints": int(num_keypoints),
        "repeats": int(repeats),
        "torch_threads": torch.get_num_threads(),
        "opencv_threads": cv2.getNumThreads(),
        "rows": rows,
    }
    _write_result(out, "recipes.json", res)
    return res


#: photo sizes ``patchpose bench --upright`` times (the bundled photo resized to each)
UPRIGHT_SIZES = ((640, 480), (1024, 768))
#: turns (degrees) at which ``patchpose bench --upright`` times a photo un-turned
UPRIGHT_TURNS = (30.0, 45.0, 90.0)


def bench_upright(
    peers: str | Path,
    repeats: int = 5,
    out: str | Path | None = None,
    *,
    extract=None,
    sizes=UPRIGHT_SIZES,
) -> dict:
    """``patchpose bench --upright`` (#63's cost): on the bundled photo at each of ``sizes``, the seconds of one
    extraction of a learned feature (kornia's ALIKED-n16, ≤ 2,000 keypoints, weights from the ``peers`` folder; or
    any ``extract`` callable) as it comes, of the votes of a pair (:func:`patchpose.upright_pair`, the photo against
    itself turned by 30° on a canvas that holds it; the vote model loaded once, as a collection loads it; each photo's
    share is half; ``votes_retried``: the same votes taken again with
    :data:`~patchpose.matching.upright.VOTE_RETRY_KEYPOINTS` corners, as where the first show no turn), and of the
    photo extracted un-turned at each of
    :data:`UPRIGHT_TURNS` (:func:`~patchpose.matching.upright.extract_turned`, on a canvas of at most
    :data:`~patchpose.matching.upright.CANVAS_PIXELS` times its pixels; at 45° also on the whole canvas), medians of
    ``repeats`` runs timed in turn on this process's threads. ``per_photo`` is what un-turning costs a photo against
    one extraction: (its share of the votes + its un-turned extraction) / one extraction; ``per_photo_retried`` the
    same where the votes are retried.
    Writes ``OUT/upright.json`` atomically when ``out`` is given."""
    from ..data.patches import load_image
    from ..data.photos import demo_photo
    from ..errors import InputError, is_int_in
    from ..estimator import as_estimator
    from ..matching.upright import (
        CANVAS_PIXELS,
        VOTE_KEYPOINTS,
        VOTE_RETRY_KEYPOINTS,
        extract_turned,
        turn_between,
        turn_image,
        upright_pair,
        voters,
    )

    if not is_int_in(repeats, 1, None):
        raise InputError(f"repeats must be an integer from 1, got {repeats!r}")
    _check_out(out)
    if extract is None:
        from ..integrations.kornia import aliked_extractor
        from .peers import Peers

        extract = aliked_extractor(Peers(peers).path("aliked"), "aliked-n16", 2000)
    est = as_estimator(None, "upright")  # loaded once, as a collection does
    photo = load_image(demo_photo())
    res: dict = {
        "extractor": getattr(extract, "name", "aliked-n16, 2000 keypoints"),
        "canvas_pixels": CANVAS_PIXELS,
        "repeats": int(repeats),
        "torch_threads": torch.get_num_threads(),
        "opencv_threads": cv2.getNumThreads(),
        "sizes": {},
    }
    for w, h in sizes:
        img = cv2.resize(photo, (int(w), int(h)), interpolation=cv2.INTER_CUBIC)
        other = turn_image(img, 30.0)[0]
        fns = {
            "extraction": lambda img=img: extract(img),
            "votes_of_a_pair": lambda img=img, other=other: upright_pair(img, other, estimator=est),
            "votes_retried": lambda img=img, other=other: [  # both rounds, each once
                turn_between(voters(img, k, est), voters(other, k, est))
                for k in (VOTE_KEYPOINTS, VOTE_RETRY_KEYPOINTS)
            ],
            **{
                f"unturned_{d:g}": (lambda img=img, d=d: extract_turned(img, extract, d))
                for d in UPRIGHT_TURNS
            },
            "unturned_45_whole_canvas": lambda img=img: extract(turn_image(img, 45.0)[0]),
        }
        t = _median_times_interleaved(fns, repeats)
        one = t["extraction"]
        unturned = {
            name[len("unturned_") :]: seconds for name, seconds in t.items() if name.startswith("unturned_")
        }
        share, retried = t["votes_of_a_pair"] / 2.0, t["votes_retried"] / 2.0
        res["sizes"][f"{w}x{h}"] = {
            "seconds": t,
            "per_photo": {name: (share + seconds) / one for name, seconds in unturned.items()},
            "per_photo_retried": {name: (retried + seconds) / one for name, seconds in unturned.items()},
            "votes_share": share / one,
            "votes_share_retried": retried / one,
        }
    _write_result(out, "upright.json", res)
    return res


#: keypoint counts ``patchpose bench --scaling`` measures by default (×4 apart; ``--scaling-max`` goes further)
SCALING_SIZES = (2048, 8192, 32768, 131072)


def scaling_sizes(max_keypoints: int | None = None) -> list[int]:
    """The keypoint counts of a scaling run: :data:`SCALING_SIZES`, or 2,048 × 4**k up to ``max_keypoints``
    and ``max_keypoints`` itself (``--scaling-max``)."""
    from ..data.keypoints import MAX_KEYPOINTS
    from ..errors import InputError, is_int_in

    if max_keypoints is None:
        return list(SCALING_SIZES)
    if not is_int_in(max_keypoints, 1, MAX_KEYPOINTS):
        raise InputError(
            f"--scaling-max must be an integer from 1 to {MAX_KEYPOINTS:,}, got {max_keypoints!r}"
        )
    sizes, n = [], 2048
    while n < max_keypoints:
        sizes.append(n)
        n *= 4
    return sizes + [int(max_keypoints)]


def _peak_rss_bytes() -> int:
    """This process's peak resident memory so far (``ru_maxrss``: kB on Linux, bytes on macOS)."""
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def measure_one(
    num_keypoints: int, weights: str | None = None, size=(1024, 768), threads: int | None = None
) -> dict:
    """Throughput (median of up to 7 reads, as many as fit in 65,536 keypoints, after one untimed read where there
    are several) and peak resident memory of
    :meth:`~patchpose.PatchPoseEstimator.estimate` on ``num_keypoints`` random keypoints (seeded) on the bundled
    photo resized to ``size``, in *this* process: run it in a fresh one (:func:`scaling` does) so that the peak is this read's and nobody else's.

    ``baseline_rss_bytes`` is the peak after the model, the image, the keypoints and a 64-keypoint warm-up
    read; ``rss_per_keypoint_bytes`` is the rise above it per keypoint (result included)."""
    from ..data.patches import load_image
    from ..data.photos import demo_photo
    from ..estimator import PatchPoseEstimator

    if threads is not None:
        torch.set_num_threads(int(threads))
        cv2.setNumThreads(int(threads))
    img = cv2.resize(load_image(demo_photo()), size, interpolation=cv2.INTER_CUBIC)
    xy = np.random.default_rng(0).uniform([0, 0], [size[0] - 1, size[1] - 1], (int(num_keypoints), 2))
    est = PatchPoseEstimator.load(weights)
    est.estimate(img, xy[:64])  # warm-up: lazy initialisation belongs to the baseline
    base = _peak_rss_bytes()
    # the median of several reads where they are short, after one untimed read of the same size (a first read of
    # a few thousand keypoints is dominated by the first touch of its buffers and of the reading threads); one
    # read from 65,536 keypoints on
    repeats = max(1, min(7, 65536 // int(num_keypoints)))
    if repeats > 1:
        est.estimate(img, xy)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        poses = est.estimate(img, xy)
        times.append(time.perf_counter() - t)
    seconds = float(np.median(times))
    peak = _peak_rss_bytes()  # the process's peak: repeated reads reuse what the first one took
    result_bytes = sum(getattr(poses, f).nbytes for f in poses.__dataclass_fields__)
    return {
        "num_keypoints": int(num_keypoints),
        "seconds": seconds,
        "keypoints_per_s": num_keypoints / seconds,
        "peak_rss_bytes": peak,
        "baseline_rss_bytes": base,
        "rss_per_keypoint_bytes": (peak - base) / num_keypoints,
        "result_bytes": int(result_bytes),
        "torch_threads": torch.get_num_threads(),
    }


def scaling(
    weights: str | None = None,
    max_keypoints: int | None = None,
    threads: int | None = None,
    out: str | Path | None = None,
    timeout_s: float = 3600.0,
) -> dict:
    """``patchpose bench --scaling``: :func:`measure_one` for each of :func:`scaling_sizes`, each in a fresh
    Python process (peak resident memory is a process's lifetime peak), on ``threads`` torch/OpenCV threads
    (None: their defaults). Writes ``OUT/scaling.json`` atomically when ``out`` is given."""
    import subprocess
    import sys

    from ..checks import MAX_THREADS
    from ..errors import InputError, is_int_in

    if threads is not None and not is_int_in(threads, 1, MAX_THREADS):
        raise InputError(f"--threads must be a whole number from 1 to {MAX_THREADS}, got {threads!r}")
    _check_out(out)
    sizes = scaling_sizes(max_keypoints)
    rows = []
    bar = _bar(total=len(sizes), desc="keypoints per run")
    for n in sizes:
        bar.update()
        args = [sys.executable, "-m", "patchpose.evaluation.bench", str(n), json.dumps(weights)]
        args.append(json.dumps(threads))
        done = subprocess.run(args, capture_output=True, text=True, timeout=timeout_s)
        if done.returncode != 0:
            tail = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
            raise InputError(f"the scaling run of {n:,} keypoints failed (exit {done.returncode}): {tail}")
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    bar.close()
    res = {"image": "the bundled photo resized to 1024x768, random keypoints (seed 0)", "rows": rows}
    _write_result(out, "scaling.json", res)
    return res


if __name__ == "__main__":  # one scaling measurement in a fresh process: N, weights (JSON), threads (JSON)
    import sys

    _n, _w, _t = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
    print(json.dumps(measure_one(int(_n), _w, threads=_t)))
