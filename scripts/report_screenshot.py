"""Regenerate docs/report.png, the README's picture of `kraftlake report`.

It runs what `./demo.sh` runs (the `mixed` scenario, seed 1, 3 simulated hours, ELR on),
writes the report of that lake and photographs its top in headless Chromium (Debian's
`/usr/bin/chromium`). `--lake DIR` reuses a lake a demo already wrote.

    .venv/bin/python scripts/report_screenshot.py [--lake DIR] [--out docs/report.png]
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--virtual-time-budget=10000"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lake", type=Path, help="an existing demo lake (default: run the demo)")
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "report.png")
    ap.add_argument("--size", default="1300,1500", help="window size, width,height")
    args = ap.parse_args()

    from kraftlake import Lake, get_spark, ingest_dir, load_config, simulate_cluster, write_report
    from kraftlake.simulate.run import DEMO_HOURS

    work = Path(tempfile.mkdtemp(prefix="kraftlake-shot-"))
    lake = args.lake
    spark = get_spark(load_config(lake=lake or work / "lake"))
    if lake is None:
        lake = work / "lake"
        simulate_cluster(work / "cluster", "mixed", seed=1, hours=DEMO_HOURS, elr=True)
        ingest_dir(spark, work / "cluster", lake)
    html = write_report(spark, Lake(lake), work / "report.html")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    (work / "profile").mkdir()
    subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={work / 'profile'}",
                    f"--window-size={args.size}", f"--screenshot={args.out.resolve()}",
                    html.as_uri()], check=True, capture_output=True, timeout=300)
    print(f"{args.out} from {html}")


if __name__ == "__main__":
    main()
