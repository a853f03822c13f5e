"""rectify as shipped vs. rectify with the re-detection's keypoint budget applied AFTER the mask (a local
monkeypatch of patchpose.data.keypoints' cv2.SIFT_create in this process only; /work/main untouched).
python budget_fix.py SET OUT.json   (upright and turned; same scoring as realcheck.py)"""
import json, sys, time, types
import cv2, numpy as np, pycolmap, torch
import patchpose
import patchpose.data.keypoints as K
import realcheck as rc

torch.set_num_threads(1); cv2.setNumThreads(1)
_real = cv2.SIFT_create


class _MaskedBudget:
    def __init__(self, n):
        self.n = int(n)
        self.inner = _real(nfeatures=self.n)

    def detect(self, g, mask=None):
        if mask is None or self.n <= 0:
            return self.inner.detect(g, mask)
        kps = _real(nfeatures=0).detect(g, mask)  # every detection inside the mask
        return sorted(kps, key=lambda k: -k.response)[: self.n]  # then the budget


fixed_cv2 = types.SimpleNamespace(**{k: getattr(cv2, k) for k in dir(cv2) if not k.startswith("__")})
fixed_cv2.SIFT_create = lambda nfeatures=0, **kw: _MaskedBudget(nfeatures)


def run(a, b, fixed):
    K.cv2 = fixed_cv2 if fixed else cv2
    t = time.perf_counter()
    m = patchpose.match_pair(a, b, recipe="rectify", max_keypoints=2000)
    K.cv2 = cv2
    return m, time.perf_counter() - t


def main():
    name, outp = sys.argv[1], sys.argv[2]
    rec = pycolmap.Reconstruction(rc.MODEL.format(name))
    views = {im.name: rc.View(im) for im in rec.images.values()}
    reg = sorted(views)
    pairs = [(reg[i], reg[j]) for i in range(len(reg)) for j in range(i + 1, len(reg))
             if name != "tum_freiburg" or j - i <= 3]
    imgs = {f: cv2.imread(str(rc.DATA / name / f), cv2.IMREAD_GRAYSCALE) for f in reg}
    rng = np.random.default_rng(0)
    rows = []
    for n1, n2 in pairs:
        v1, v2 = views[n1], views[n2]; F = rc.fundamental(v1, v2)
        row = {"im1": n1, "im2": n2}
        for cond in ("upright", "turned"):
            a = imgs[n1]; b = imgs[n2] if cond == "upright" else cv2.rotate(imgs[n2], cv2.ROTATE_90_CLOCKWISE)
            h2 = imgs[n2].shape[0]
            back = (lambda x: x) if cond == "upright" else (lambda x: rc.rot_back(x, h2))
            for fixed in (False, True):
                m, dt = run(a, b, fixed)
                s = rc.score(F, v1, v2, m.xy1[m.matches[:, 0]], back(m.xy2[m.matches[:, 1]]), rng)
                s.update(seconds=dt, kp1=len(m.xy1), kp2=len(m.xy2), mapped=m.affine is not None)
                row[f"{cond}_{'fixed' if fixed else 'shipped'}"] = s
        rows.append(row)
        print(n1[:17], n2[:17], {k: (v["correct"], v["matches"], v["kp1"], v["kp2"]) for k, v in row.items() if isinstance(v, dict)}, flush=True)
    json.dump({"set": name, "pairs": rows}, open(outp, "w"), indent=1)


if __name__ == "__main__":
    main()
