#!/usr/bin/env python3
"""doccache against its GRDB peer, alternately, in one run (issue 22; docs/performance.md,
"The GRDB peer").

    python3 Benchmarks/bench-peers.py DOCBENCH GRDB_PEER [--rounds R] [--n N] [SCENARIO ...]

For each scenario, runs the two binaries R times each (default 3), alternating them and
swapping which goes first every round; each run prints its own median. Per-run lines go to
stderr; at the end one JSON line per scenario goes to stdout:
{"scenario":…,"unit":…,"median":<doccache>,"peer":"grdb","peerMedian":<grdb>,"ratio":<doccache / grdb>}
with each median the median of that side's per-run medians.
"""
import json
import statistics
import subprocess
import sys

SCENARIOS = ["local-write", "write-to-listener", "cache-query", "cold-open"]


def run(binary, scenario, n):
    command = [binary, scenario] + (["--n", str(n)] if n else [])
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("{"):
            record = json.loads(line)
            if record.get("scenario") == scenario:
                return record
    raise SystemExit(f"bench-peers: {' '.join(command)} printed no line for {scenario}:\n{out}")


def main(argv):
    args, rounds, n, names = [], 3, None, []
    i = 0
    while i < len(argv):
        if argv[i] == "--rounds":
            rounds = int(argv[i + 1]); i += 2
        elif argv[i] == "--n":
            n = int(argv[i + 1]); i += 2
        elif len(args) < 2:
            args.append(argv[i]); i += 1
        else:
            names.append(argv[i]); i += 1
    if len(args) != 2:
        raise SystemExit(__doc__)
    docbench, peer = args
    results = []
    for scenario in names or SCENARIOS:
        ours, theirs, unit = [], [], "us"
        for r in range(rounds):
            order = [("doccache", docbench), ("grdb", peer)]
            if r % 2:
                order.reverse()
            for side, binary in order:
                record = run(binary, scenario, n)
                unit = record.get("unit", unit)
                (ours if side == "doccache" else theirs).append(record["median"])
                print(f"bench-peers: {scenario} round {r + 1} {side}: {json.dumps(record)}",
                      file=sys.stderr, flush=True)
        median, peer_median = statistics.median(ours), statistics.median(theirs)
        results.append({"scenario": scenario, "unit": unit, "median": median, "peer": "grdb",
                        "peerMedian": peer_median, "ratio": round(median / peer_median, 3)})
    for result in results:
        print(json.dumps(result, separators=(",", ":")), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
