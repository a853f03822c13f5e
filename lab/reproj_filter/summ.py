# ruff: noqa
import json, sys

for d in sys.argv[1:]:
    r = json.load(open(d + "/results.json"))
    rows = {(v["set"], v["pose"]): v for v in r["summary"]}
    for st in ("upright", "turned"):
        if (st, "sift") not in rows:
            continue
        s, o = rows[(st, "sift")], rows[(st, "upright_ours")]
        f = lambda v, k: v[k]["mean"]
        print(
            d,
            st,
            "reg",
            f(s, "registered"),
            f(o, "registered"),
            "obs %+.1f%%" % (100 * (f(o, "observations") / f(s, "observations") - 1)),
            "track %+.1f%%" % (100 * (f(o, "track_length") / f(s, "track_length") - 1)),
            "err %.3f/%.3f %+.1f%%"
            % (
                f(s, "reprojection_px"),
                f(o, "reprojection_px"),
                100 * (f(o, "reprojection_px") / f(s, "reprojection_px") - 1),
            ),
            "err range",
            s["reprojection_px"]["min"],
            s["reprojection_px"]["max"],
            o["reprojection_px"]["min"],
            o["reprojection_px"]["max"],
        )
