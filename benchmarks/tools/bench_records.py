"""The JSON Lines records of benchmark output files (lines not starting
with '{' are skipped: the benchmarks interleave human-readable text)."""
import json


def records(paths):
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    yield json.loads(line)
