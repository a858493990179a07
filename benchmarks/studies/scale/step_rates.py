"""Per-step rows and rows per second of a finished run, from its manifest:
python benchmarks/studies/scale/step_rates.py RUN_DIR/manifest.json"""

import json
import sys

m = json.load(open(sys.argv[1]))
for s in m["steps"]:
    rows, secs = s.get("rows_in"), s.get("seconds")
    rate = round(rows / secs) if rows and secs else None
    print(f"step {s['index']} {s['component']}: rows_in {rows} seconds {secs} rows/s {rate}")
print("rows out:", m["output"]["rows"])
