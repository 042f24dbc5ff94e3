#!/usr/bin/env bash
# chainplan demo: builds the CLI and, for every example chain, compares rotor with the
# baselines (sequential = PyTorch checkpoint_sequential, revolve = AD-style) at a range of
# memory budgets, then shows one budget/time frontier and replays one rotor plan in the
# independent simulator.
#
# Needs only Go and Python 3 (standard library; no virtual environment, no jq).
# Usage: scripts/demo.sh            (from anywhere; runs in the repository root)
# Environment: CHAINS="tiny vgg16" to choose the chains (names of examples/*.json).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
start_s=$(date +%s.%N)

command -v go >/dev/null || { echo "demo: Go is required (go build)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "demo: python3 is required" >&2; exit 1; }

echo "== building bin/chainplan"
mkdir -p bin
go build -o bin/chainplan ./cmd/chainplan
CP=bin/chainplan

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# json FILE EXPR: evaluate a Python expression over the parsed JSON document `d`.
json() {
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(eval(sys.argv[2]))' "$1" "$2"
}

# human BYTES: a budget in GiB (MiB, KiB or B for small chains).
human() {
    awk -v b="$1" 'BEGIN {
        if (b >= 2^30) printf "%.2f GiB", b / 2^30;
        else if (b >= 2^20) printf "%.1f MiB", b / 2^20;
        else if (b >= 2^10) printf "%.1f KiB", b / 2^10;
        else printf "%d B", b }'
}

# num X: a time with 4 significant digits.
num() { awk -v x="$1" 'BEGIN { printf "%.4g", x }'; }

# solve ALGO CHAIN BUDGET: writes the plan to $tmp/ALGO.json, or "infeasible" there when
# chainplan exits with status 3 (budget too small); any other failure stops the demo.
solve() {
    local rc=0
    "$CP" solve --algo "$1" --chain "$2" --budget "$3" --format json >"$tmp/$1.json" 2>"$tmp/err" || rc=$?
    case $rc in
        0) ;;
        3) echo infeasible >"$tmp/$1.json" ;;
        *) echo "demo: chainplan solve --algo $1 --chain $2 --budget $3 failed (exit $rc):" >&2
           cat "$tmp/err" >&2; exit 1 ;;
    esac
}

# row LABEL BASE ALGO...: one table row, the overhead of each plan over BASE.
row() {
    python3 -c 'import json, sys
tmp, label, base, algos = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:]
cells = []
for algo in algos:
    raw = open(f"{tmp}/{algo}.json").read()
    if raw.strip() == "infeasible":
        cells.append("infeasible")
    else:
        cells.append("%+.1f%%" % ((json.loads(raw)["makespan"] / base - 1) * 100))
print("   %-26s" % label + "".join(" %12s" % c for c in cells))' "$tmp" "$@"
}

ALGOS=(rotor sequential revolve)
CHAINS=${CHAINS:-"tiny vgg16 resnet50 resnet101 densenet121 gpt2-small"}
for name in $CHAINS; do
    chain="examples/$name.json"
    [[ -f $chain ]] || { echo "demo: no chain $chain" >&2; exit 1; }
    "$CP" solve --algo store-all --chain "$chain" --budget min --format json >"$tmp/sa.json"
    "$CP" solve --algo rotor --chain "$chain" --budget min --format json >"$tmp/min.json"
    # stages, store-all peak, no-recomputation time, smallest rotor budget, then the
    # budgets of the table (largest first) with their labels
    python3 -c 'import json, sys
c, sa, mn = (json.load(open(f)) for f in sys.argv[1:4])
p, m = sa["peak_bytes"], mn["budget_bytes"]
print(len(c["stages"]), p, sa["makespan"], m)
rows = {(p, "store-all peak"), (p * 3 // 4, "75%"), (p // 2, "50%"), (p * 35 // 100, "35%"),
        (m, "smallest rotor")}
for b, label in sorted(rows, key=lambda r: -r[0]):
    print(b, label)' "$chain" "$tmp/sa.json" "$tmp/min.json" >"$tmp/rows"
    {
        read -r stages peak base rmin
        echo
        echo "== $name: $stages stages, store-all peak $(human "$peak"), no-recomputation time $(num "$base") s," \
             "smallest rotor budget $(human "$rmin") ($(awk -v a="$rmin" -v b="$peak" 'BEGIN{printf "%.0f", 100*a/b}')% of the peak)"
        printf '   %-26s %12s %12s %12s\n' "budget" "${ALGOS[@]}"
        while read -r b label; do
            for algo in "${ALGOS[@]}"; do solve "$algo" "$chain" "$b"; done
            row "$(human "$b") ($label)" "$base" "${ALGOS[@]}"
        done
    } <"$tmp/rows"
done

echo
echo "== frontier of vgg16 (every budget where rotor's optimal makespan changes)"
"$CP" frontier --chain examples/vgg16.json

echo
echo "== round trip: rotor plan for resnet101 at 50% of its store-all peak, replayed by the simulator"
"$CP" solve --algo store-all --chain examples/resnet101.json --budget min --format json >"$tmp/sa.json"
half=$(( $(json "$tmp/sa.json" 'd["peak_bytes"]') / 2 ))
"$CP" solve --chain examples/resnet101.json --budget "$half" --format json >"$tmp/resnet101.plan.json"
echo "solve:    budget $(human "$half"), makespan $(num "$(json "$tmp/resnet101.plan.json" 'd["makespan"]')") s," \
     "peak $(human "$(json "$tmp/resnet101.plan.json" 'd["peak_bytes"]')")," \
     "$(json "$tmp/resnet101.plan.json" 'len(d["sequence"])') operations"
"$CP" simulate --chain examples/resnet101.json --plan "$tmp/resnet101.plan.json" | tee "$tmp/sim.txt"
grep -q ': valid' "$tmp/sim.txt" || { echo "demo: the simulator did not say valid" >&2; exit 1; }

echo
echo "demo finished in $(awk -v s="$start_s" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e - s}') s"
