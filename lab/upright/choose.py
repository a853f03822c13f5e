"""LAB #63: SNAP_DEG and INTERPOLATION of turn_image chosen on val (rows as_is, ours, true_turn)."""
import sys, cv2
import patchpose.matching.upright as U
import patchpose.evaluation.upright_eval as E
U.SNAP_DEG = float(sys.argv[1]); U.INTERPOLATION = getattr(cv2, sys.argv[2])
E.ROWS = ("as_is", "ours", "true_turn")
E.evaluate_upright("/work/data/hpatches_val_turn", sys.argv[3], "/work/shared/peers", progress=False)
