#!/usr/bin/env python3
"""Instructions per `local-write` write, counted by valgrind's callgrind (issue 22).

Usage: count-local-write.py DOCBENCH [--n-low 300] [--n-high 400]

Debian bookworm's valgrind 3.19 cannot run docbench (it stops on Swift 6.3's DWARF 5), so
this takes valgrind 3.24 from Debian trixie's package, unpacked (not installed) under
.build-callgrind/, and preloads sigsuspend-shim.c (see there) into docbench.

Callgrind cannot attribute an async call's cost to it: the store's actor runs the write
inline, inside nested task switches, so every later iteration counts as the first one's
callee. So docbench `local-write` runs twice, with n-low and n-high writes, and the
difference of the whole program's instruction counts is taken per iteration; from it the
benchmark's own work per iteration is subtracted, each of its functions being a plain
synchronous call whose inclusive count callgrind gets right: the peer's loop (the document
it builds and encodes, its timed LevelDB put) and the doccache loop's preparation (the data
and the document reference). What is left is the write (`setData` until it returns) plus
the loop's timing and bookkeeping, a few hundred instructions. Both runs must end before the
overlay indexing starts (a second after the 32nd write); the script checks that it did not.

Prints one JSON line:
{"scenario":"local-write","unit":"instructions","doccache":…,"peer":"leveldb-put","peerInstructions":…,"ratio":…}
"""
import gzip
import json
import os
import re
import subprocess
import sys
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORK = os.path.join(ROOT, ".build-callgrind")
MIRROR = "http://deb.debian.org/debian"

# Inclusive counts subtracted per iteration (substrings of mangled Swift names).
PEER = {
    "put": "$s7LevelDB8DatabaseC3put__7optionsySays5UInt8VG_AhA12WriteOptionsVtAA0A7DBErrorVYKF",
    "timed put": "$ss5ClockPsE7measurey8DurationQzyyKXEKF",
    "document": "$s8docbench14sampleDocument_7version8DocModel0C0VSi_s5Int64VtF",
    "encoding": "$s8DocModel8DocumentV13binaryEncodedSays5UInt8VGyF",
}
PREPARATION = {
    "data": "$s8docbench10sampleDataySDySS8DocCache10FieldValueOGSiF",
    "reference": "$s8DocCache19CollectionReferenceV8documentyAA08DocumentD0VSS0A5Model0A5ErrorVYKF",
}
# The transaction body of an overlay-indexing step (a closure: not inlined away).
INDEXING = "LocalStoreC13indexOverlays10maxBatches"


def valgrind():
    """Valgrind 3.24 from trixie, unpacked under .build-callgrind/vg (downloaded once)."""
    binary = os.path.join(WORK, "vg/usr/bin/valgrind.bin")
    if os.path.exists(binary):
        return binary
    os.makedirs(WORK, exist_ok=True)
    with urllib.request.urlopen(f"{MIRROR}/dists/trixie/main/binary-amd64/Packages.gz", timeout=120) as answer:
        packages = gzip.decompress(answer.read()).decode()
    stanza = re.search(r"^Package: valgrind\n(?:.+\n)*?Filename: (\S+)", packages, re.M)
    if not stanza:
        sys.exit("count-local-write: no valgrind package in trixie's index")
    deb = os.path.join(WORK, os.path.basename(stanza.group(1)))
    urllib.request.urlretrieve(f"{MIRROR}/{stanza.group(1)}", deb)
    subprocess.run(["dpkg-deb", "-x", deb, os.path.join(WORK, "vg")], check=True)
    return binary


def shim():
    source = os.path.join(ROOT, "Benchmarks/callgrind/sigsuspend-shim.c")
    library = os.path.join(WORK, "sigsuspend-shim.so")
    if not os.path.exists(library) or os.path.getmtime(library) < os.path.getmtime(source):
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", library, source, "-ldl"], check=True)
    return library


def inclusive(out_file):
    """The whole run's instruction count, and per function the inclusive count of all calls
    to it (the `calls=` records of callgrind's output, by callee name)."""
    names, calls = {}, {}
    total, callee, pending = 0, None, False
    with open(out_file) as lines:
        for line in lines:
            if line.startswith("summary:") or line.startswith("totals:"):
                total = int(line.split()[1])
            elif line.startswith("cfn="):
                match = re.match(r"cfn=\((\d+)\)(?: (.*))?", line.rstrip("\n"))
                if match.group(2):
                    names[match.group(1)] = match.group(2)
                callee = names.get(match.group(1))
            elif line.startswith("fn="):
                match = re.match(r"fn=\((\d+)\)(?: (.*))?", line.rstrip("\n"))
                if match and match.group(2):
                    names[match.group(1)] = match.group(2)
            elif line.startswith("calls="):
                pending = True
            elif pending:
                pending = False
                fields = line.split()
                if callee is not None and len(fields) >= 2:
                    calls[callee] = calls.get(callee, 0) + int(fields[1])
    return total, calls


def summed(calls, symbol):
    """The inclusive count of the calls to `symbol` (a mangled name, exactly; for INDEXING,
    any function whose name contains it)."""
    if symbol == INDEXING:
        return sum(v for k, v in calls.items() if symbol in k)
    return calls.get(symbol, 0)


def run(docbench, n, binary, library):
    out_file = os.path.join(WORK, f"local-write-{n}.callgrind")
    env = dict(os.environ, VALGRIND_LIB=os.path.join(WORK, "vg/usr/libexec/valgrind"), LD_PRELOAD=library)
    subprocess.run([binary, "--tool=callgrind", f"--callgrind-out-file={out_file}", docbench, "local-write", "--n", str(n)],
                   check=True, env=env, capture_output=True)
    total, calls = inclusive(out_file)
    if summed(calls, INDEXING) > 0:
        sys.exit(f"count-local-write: the overlay indexing ran during the n={n} run; use smaller n")
    return total, calls


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    docbench = os.path.abspath(args[0])
    low = int(args[args.index("--n-low") + 1]) if "--n-low" in args else 300
    high = int(args[args.index("--n-high") + 1]) if "--n-high" in args else 400
    binary, library = valgrind(), shim()
    (total_a, a), (total_b, b) = run(docbench, low, binary, library), run(docbench, high, binary, library)
    per = lambda symbol: (summed(b, symbol) - summed(a, symbol)) / (high - low)
    total = (total_b - total_a) / (high - low)
    peer_loop = sum(per(s) for name, s in PEER.items() if name != "put")
    preparation = sum(per(s) for s in PREPARATION.values())
    put = per(PEER["put"])
    write = total - peer_loop - preparation
    print(json.dumps({"scenario": "local-write", "unit": "instructions", "doccache": round(write),
                      "peer": "leveldb-put", "peerInstructions": round(put), "ratio": round(write / put, 2),
                      "iteration": round(total), "nLow": low, "nHigh": high}))


if __name__ == "__main__":
    main()
