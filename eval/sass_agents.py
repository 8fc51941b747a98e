"""The assembly game's agents side by side, from `cudal2 sass --all --agent A --json FILE` runs
(one per agent, same budget, same device): over the entries every run reached, per agent, how
many reproduced a gain (both measurements >= 1%), the geomean and largest reproduced gain (the
smaller of the two measurements), the winner's curse (mean first-measured best minus its repeat),
schedules the static checker rejected, GPU failures and GPU minutes. Prints a markdown table and
writes JSON. Reads results only; the runs themselves are the device's.

  python eval/sass_agents.py --out FILE greedy=A.jsonl anneal=B.jsonl ppo=C.jsonl
"""
import argparse
import json
import math
from pathlib import Path


def load(path: Path) -> dict[str, dict]:
    rows = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return {r["id"]: r for r in rows if r.get("agent")}


def summarize(rows: list[dict]) -> dict:
    ag = [r["agent"] for r in rows]
    won = [min(a["gain"], a["gain_repeat"]) for a in ag if a["reproduced"]]
    repeated = [a["gain"] - a["gain_repeat"] for a in ag if a["gain_repeat"] is not None]
    return {
        "entries": len(rows),
        "reproduced": len(won),
        "geomean_gain": math.exp(sum(math.log1p(g) for g in won) / len(won)) - 1 if won else 0.0,
        "largest_gain": max(won, default=0.0),
        "mean_first_minus_repeat": sum(repeated) / len(repeated) if repeated else None,
        "checked": sum(a["stats"]["checked"] for a in ag),
        "rejected": sum(a["stats"]["rejected"] for a in ag),
        "measured": sum(a["stats"]["measured"] for a in ag),
        "gpu_failed": sum(a["stats"]["gpu_failed"] for a in ag),
        "gpu_min": sum(r["gpu_s"] for r in rows) / 60,
    }


def main(out: Path, runs: dict[str, Path]) -> None:
    by_agent = {name: load(p) for name, p in runs.items()}
    common = sorted(set.intersection(*(set(d) for d in by_agent.values())))
    table = {name: summarize([d[i] for i in common]) for name, d in by_agent.items()}
    out.write_text(json.dumps({"entries": common, "agents": table,
                               "runs": {k: str(v) for k, v in runs.items()}}, indent=1))
    print(f"{len(common)} entries reached by every run")
    print("| agent | reproduced | geomean gain | largest | first − repeat | checked / rejected | measured | GPU failures | GPU min |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, s in table.items():
        fr = s["mean_first_minus_repeat"]
        print(f"| {name} | {s['reproduced']}/{s['entries']} | {s['geomean_gain']:+.2%} | {s['largest_gain']:+.2%} | "
              f"{'' if fr is None else f'{fr:+.2%}'} | {s['checked']} / {s['rejected']} | {s['measured']} | "
              f"{s['gpu_failed']} | {s['gpu_min']:.2f} |")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("runs", nargs="+", help="AGENT=FILE.jsonl")
    a = ap.parse_args()
    main(a.out, {k: Path(v) for k, v in (r.split("=", 1) for r in a.runs)})
