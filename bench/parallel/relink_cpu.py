"""Re-price a ``measure_cpu.py`` run's candidates on nominal and on measured links (issue 34).

``measure_cpu.py`` writes its measured gloo link into the cluster file. This script asks
what the store's measured link bandwidths change against a cluster file that gives a
nominal figure instead (``--nominal``, default cpu-4.yaml's 10 Gbps): from the run's stored
data alone (its profile, the candidates' measured iteration times in ``report.json``, the
link in ``link.json``), without running anything again. On a copy of the run's store it
records the measured link with the run (``chainplan.parallel.record_link``), then for each
of ``nominal`` (``nominal_links=True``) and ``measured`` runs search3d, records the
measured times against the matching candidates, and reports the uncalibrated accuracy and
Spearman's ρ and the calibrated ones held out (fit on the even candidates, predict the odd
ones, and the other way round, as ``measure_cpu.py`` does).

Usage (from the repository root)::

    python bench/parallel/relink_cpu.py --run-dir /tmp/cpu-advisors --out /tmp/cpu-relink
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure_cpu import accuracy, spearman  # noqa: E402


def cli(*args: str) -> str:
    exe = Path(sys.executable).parent / "chainplan"
    return subprocess.run([str(exe), *args], check=True, capture_output=True, text=True).stdout


def key(c: Any) -> tuple[int, int, int, int]:
    return (c.pp, c.dp, c.tmp, c.mbs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run-dir", type=Path, default=Path("/tmp/cpu-advisors"))
    ap.add_argument("--out", type=Path, default=Path("/tmp/cpu-relink"))
    ap.add_argument("--nominal", default="1.25GB/s", help="the cluster file's link bandwidth")
    ap.add_argument("--run", type=int, default=1, help="the profile's run id in the store")
    a = ap.parse_args()
    store = a.out / "store"  # a fresh copy of the run's store each time
    shutil.rmtree(store, ignore_errors=True)
    store.mkdir(parents=True)
    for f in a.run_dir.glob("chainplan.db*"):
        shutil.copy(f, store / f.name)
    os.environ["CHAINPLAN_DB"] = str(store / "chainplan.db")
    import chainplan
    from chainplan.advicerecord import record_measured

    report = json.loads((a.run_dir / "report.json").read_text())
    link = json.loads((a.run_dir / "link.json").read_text())
    cluster = json.loads((a.run_dir / "cluster.json").read_text())
    for n in cluster["nodes"]:
        n.update(intra_bw=a.nominal, inter_bw=a.nominal, host_bw=a.nominal)
    cfile = a.out / "cluster-nominal.json"
    cfile.write_text(json.dumps(cluster))
    chainplan.parallel.record_link(a.run, "intra", float(link["bandwidth"]),
                                   method="gloo all-reduce of 32 MiB (measure_cpu.py)")
    req: dict[str, Any] = {"global_batch": 8, "tmp_max": 1, "top_k": -1, "memory_check": "off"}
    meas = [float(r["measured_s"]) for r in report["rows"]]
    wanted = [(r["launch"]["mesh"]["pp"], r["launch"]["mesh"]["dp"], r["launch"]["mesh"]["tp"],
               r["launch"]["microbatch"]) for r in report["rows"]]
    out: dict[str, Any] = {"link": link, "nominal": a.nominal}
    for name, nominal in (("nominal", True), ("measured", False)):
        def search(**kw: Any) -> Any:
            return chainplan.parallel.search3d(a.run, cfile, nominal_links=nominal,  # noqa: B023
                                               **req, **kw)
        full, half = search(), [search(), search()]
        index = {key(c): i for i, c in enumerate(full.candidates)}
        for i, (k, row) in enumerate(zip(wanted, report["rows"], strict=True)):
            j = index[k]
            for adv in (full, half[i % 2]):
                record_measured(None, adv.advice_id, j, row["measured_s"], row["peaks"],
                                iterations=5)
        pred = [full.candidates[index[k]].iteration_time_s for k in wanted]
        held: dict[int, float] = {}
        cals: list[dict[str, Any]] = []
        for part in (0, 1):
            cal = a.out / f"calibration-{name}-{part}.json"
            try:
                cal.write_text(cli("advice", "calibrate", str(half[part].advice_id)))
            except subprocess.CalledProcessError as err:  # no trend to fit: said, not hidden
                cals.append({"refused": err.stderr.strip()})
                continue
            cals.append(json.loads(cal.read_text()))
            other = search(calibration=str(cal))
            by = {key(c): c.iteration_time_s for c in other.candidates}
            for i, k in enumerate(wanted):
                if i % 2 != part:
                    held[i] = by[k]
        cal_pred = [held.get(i, 0.0) for i in range(len(wanted))]
        after = ({"accuracy": accuracy(cal_pred, meas), "spearman": spearman(cal_pred, meas)}
                 if len(held) == len(wanted) else "a calibration was refused")
        fields = ("model", "compute_scale", "comm_scale", "overhead_s")
        out[name] = {"measured_links": [vars(m) for m in full.measured_links],
                     "predicted_s": pred, "calibrated_held_out_s": cal_pred,
                     "before": {"accuracy": accuracy(pred, meas),
                                "spearman": spearman(pred, meas)},
                     "after_held_out": after,
                     "calibrations": [c if "refused" in c else {k: c[k] for k in fields}
                                      for c in cals]}
    out["measured_s"] = meas
    (a.out / "relink.json").write_text(json.dumps(out, indent=1))
    print(json.dumps({k: {m: out[k][m] for m in ("before", "after_held_out", "calibrations")}
                      for k in ("nominal", "measured")}, indent=1))


if __name__ == "__main__":
    main()
