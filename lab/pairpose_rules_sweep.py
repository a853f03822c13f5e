"""#60: pair-pose's ambiguous-turn rule and its fallback swept on val (rows added at run time; not shipped)."""
import sys
import numpy as np
import patchpose.evaluation.rows as R
import patchpose.matching.pairpose as PP
from patchpose.matching.candidates import gradient_blend_candidates
from patchpose.matching.zoom import PairTurn


def _noamb(run, im1, im2):
    """pair-pose without the ambiguous-turn rule: the voted turn is kept as it is."""
    orig = PairTurn.ambiguous
    PairTurn.ambiguous = property(lambda self: False)
    try:
        return R._pair_pose(run, im1, im2)
    finally:
        PairTurn.ambiguous = orig


class SiftOwnFallback(PP.SiftVotes):
    """At SIFT: where no turn shows, SIFT's own pose (one descriptor) instead of the gradient's blend."""

    def fallback(self, f1, f2, o1=None, o2=None):
        out = []
        for f in (f1, f2):
            d = self.describer.describe(f.pyramid, f.xy, f.sift_scale, f.sift_ori)
            out.append((f.sift_scale[:, None], f.sift_ori[:, None], np.ones((len(f), 1)), d[:, None]))
        return tuple(out)


class GradientFallback(PP.OurVotes):
    """Without a scale: where no turn shows, the gradient's blend at 16 px instead of ours."""

    def fallback(self, f1, f2, o1=None, o2=None):
        return gradient_blend_candidates(f1, self.describer), gradient_blend_candidates(f2, self.describer)


def _altfb(run, im1, im2):
    f1, f2 = im1.feats, im2.feats
    if PP.sift_detections(f1) and PP.sift_detections(f2):
        votes = SiftOwnFallback(run.describer)
    elif not PP.pair_pose_needs_network(f1, f2):
        raise SystemExit("not swept here")
    else:
        votes = GradientFallback(run.describer, run.est, run.cfg.top_k, run.cfg.shape_weights)
    return PP.pair_pose_candidates(f1, f2, run.describer, None, ours1=im1.ours, ours2=im2.ours, votes=votes)


R.ROWS["pp_noamb"] = R.Row("pp_noamb", "pair-pose without the ambiguous-turn rule", pair=_noamb, shape=True,
                           recipe="pair-pose", reads_model=R.pose_needs_network)
R.ROWS["pp_altfb"] = R.Row("pp_altfb", "pair-pose, the other fallback (SIFT: its own pose; no scale: the gradient's blend)",
                           pair=_altfb, shape=True, reads_model=R.pose_needs_network, votes=PP.GradientVotes)
from patchpose.cli.main import main

sys.exit(main(sys.argv[1:]))
