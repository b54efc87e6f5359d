#!/usr/bin/env bash
# tests/bench.sh — corpsim's performance, measured side by side in one run
# (issue 8). From the repository root:
#
#   bash tests/bench.sh                     # the full set, 8-15 minutes on 2 cores
#   BENCH_TICKETS=20000 bash tests/bench.sh # a quick run
#
# It builds the binary once, runs every line below on this machine, and
# prints one markdown table to stdout (also to $BENCH_OUT if set); progress
# goes to stderr. It reports figures and never judges them: it exits non-zero
# only when a step errors (a step that runs out of its time is reported as
# such, not as an error).
#
# Environment:
#   BENCH_TICKETS         tickets of the support desk runs (default 200000, the shipped world)
#   BENCH_AGENT_TICKETS   tickets of the two agent-seat runs, in process and over the bus (default 20000, at most BENCH_TICKETS)
#   BENCH_COUNT           -count of the Go micro-benchmarks (BenchmarkFork included); the median is reported (default 3)
#   BENCH_RUNS            runs of each whole process of the ticket rows (SimPy, the bare loop, corpsim in memory and durable, replay and its raw scan); the median run is reported, with the largest peak RSS. They run in rounds, one of each back to back: the first four together, whose ratios to the peer's run of the same round are reported too, and replay with its raw scan, paired the same way (default 5)
#   BENCH_SESSIONS        concurrent sessions in one process (default 1000); one session alone is run too, as their baseline
#   BENCH_BIG_TICKETS     tickets of the in-memory run whose peak is compared with the 200,000-ticket run's (default 2000000; 0 skips it)
#   BENCH_SCALE_MEMBERS   members of the scale world (default 10000)
#   BENCH_SCALE_TASKS     tasks of the scale world (default 100000)
#   BENCH_SCALE_SECONDS   wall-time budget of the scale world's session (default 600)
#   BENCH_STEP_TIMEOUT    seconds before any other step is stopped and reported as timed out (default 600)
#   BENCH_OPENENV_STEPS   OpenEnv steps timed end to end (default 2000)
#   BENCH_LOAD_WORLDS     worlds under load, as world:load or world:load:Nd (over N days instead of
#                         its horizon, arrivals lasting as long) (default "support-desk:100 portfolio:50 claims:50 wind-ops:20
#                         meetings:20 desk-2000:1 billing-support:20:200d"; desk-2000 is the bench
#                         desk with 2,000 colleagues and 100,000 tickets)
#   BENCH_OPENENV_RESET_CONNS, BENCH_OPENENV_RESET_SECONDS   connections resetting, and for how long (default 4, 20)
#   BENCH_OPENENV_LEVELS  concurrent /openenv/ws sessions tried in turn (default 1000,2000,3000,4000)
#   BENCH_OPENENV_THINK   pause between one connection's steps, a model's decision time (default 10s)
#   BENCH_OPENENV_WINDOW  how long each level is measured (default 30s)
#   BENCH_PEER            the SimPy peer script (default ../shared/peers/simpy_desk.py)
#   BENCH_BARE            the bare Go loop of the same desk (default ../shared/peers/bare_desk.go)
#   BENCH_OUT             also write the table to this file
#   BENCH_KEEP            keep the temporary folder (its path is printed)
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
TICKETS=${BENCH_TICKETS:-200000}
AGENT_TICKETS=${BENCH_AGENT_TICKETS:-20000}
((AGENT_TICKETS > TICKETS)) && AGENT_TICKETS=$TICKETS
COUNT=${BENCH_COUNT:-3}
RUNS=${BENCH_RUNS:-5}
SESSIONS=${BENCH_SESSIONS:-1000}
BIG_TICKETS=${BENCH_BIG_TICKETS:-2000000}
SCALE_MEMBERS=${BENCH_SCALE_MEMBERS:-10000}
SCALE_TASKS=${BENCH_SCALE_TASKS:-100000}
SCALE_SECONDS=${BENCH_SCALE_SECONDS:-600}
STEP_TIMEOUT=${BENCH_STEP_TIMEOUT:-600}
PY=/usr/bin/python3 # Debian's python3-simpy is installed for the system Python
PEER=${BENCH_PEER:-$ROOT/../shared/peers/simpy_desk.py}
[[ -f $PEER ]] || PEER=/work/shared/peers/simpy_desk.py
[[ -f $PEER ]] || { echo "bench: no SimPy peer at $PEER (set BENCH_PEER)" >&2; exit 1; }
BARE=${BENCH_BARE:-$ROOT/../shared/peers/bare_desk.go}
[[ -f $BARE ]] || BARE=/work/shared/peers/bare_desk.go
[[ -f $BARE ]] || { echo "bench: no bare Go loop at $BARE (set BENCH_BARE)" >&2; exit 1; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/corpsim-bench.XXXXXX")
OE_PID="" # a corpsim serve of the OpenEnv rows, stopped on exit
cleanup() {
	[[ -n $OE_PID ]] && kill -TERM "$OE_PID" 2>/dev/null && wait "$OE_PID" 2>/dev/null
	[[ -z ${BENCH_KEEP:-} ]] && rm -rf "$TMP"
	return 0
}
trap cleanup EXIT
[[ -n ${BENCH_KEEP:-} ]] && echo "bench: keeping $TMP" >&2
say() { echo "bench: $*" >&2; }
SUDO=""
((EUID != 0)) && command -v sudo >/dev/null && SUDO=sudo

# ---- tools ----------------------------------------------------------------
apt_install() {
	$SUDO apt-get install -y "$@" >&2 || { $SUDO apt-get update >&2 && $SUDO apt-get install -y "$@" >&2; }
}
[[ -x /usr/bin/time ]] || { say "installing GNU time"; apt_install time; }
$PY -c 'import SimPy' 2>/dev/null || { say "installing python3-simpy"; apt_install python3-simpy; }

# ---- helpers ----------------------------------------------------------------
FAILED=0

# run NAME TIMEOUT CMD...: runs CMD with a wall-time limit; stdout, stderr,
# peak RSS (KiB, of the process tree) and wall seconds go to $TMP/NAME.*.
# Sets RC: 0 ok, 124 timed out; any other exit is an error (FAILED=1).
run() {
	local name=$1 limit=$2
	shift 2
	say "$name: $*"
	RC=0
	/usr/bin/time -f '%M %e' -o "$TMP/$name.time" timeout -s KILL "$limit" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" || RC=$?
	# GNU time reports a killed command on a line of its own before the figures.
	read -r RSS_KB WALL_S < <(tail -n 1 "$TMP/$name.time")
	if ((RC == 124 || RC == 137)); then
		RC=124
		say "$name: stopped after ${limit}s"
	elif ((RC != 0)); then
		FAILED=1
		say "$name: failed with exit $RC; the end of its stderr:"
		tail -n 20 "$TMP/$name.err" >&2
	fi
}

# run_one NAME I TIMEOUT RATE CMD...: run I of NAME's series: run (above)
# CMD, and note the run's rate (RATE is a command printing it from the
# run's NAME: "$TMP/$1.out", "$TMP/$1.time") and peak RSS in
# $TMP/NAME.rates. A failed or stopped run ends the series: its RC is kept
# in $TMP/NAME.rc and the series' later runs are skipped.
run_one() {
	local name=$1 i=$2 limit=$3 rate=$4
	shift 4
	[[ -f $TMP/$name.rc ]] && return 0
	run "$name" "$limit" "$@"
	if ((RC != 0)); then
		echo "$RC" >"$TMP/$name.rc"
		return 0
	fi
	cp "$TMP/$name.out" "$TMP/$name.$i.out"
	cp "$TMP/$name.time" "$TMP/$name.$i.time"
	echo "$("$rate" "$name") $i $RSS_KB" >>"$TMP/$name.rates"
}

# series_start NAME...: forget the series of these names.
series_start() {
	local name
	for name in "$@"; do rm -f "$TMP/$name.rates" "$TMP/$name.rc"; done
}

# series_end NAME: NAME's series as one step. RC is that of the run that
# ended it (0 when all $RUNS ran); for a whole series, NAME's
# $TMP/NAME.out and WALL_S are its run of the median rate, RSS_KB the
# largest peak of the runs, and SPREAD the rates' range as "min–max"; for
# one that ended early, WALL_S, RSS_KB and SPREAD are empty.
series_end() {
	local name=$1 sorted med
	if [[ -f $TMP/$name.rc ]]; then
		RC=$(cat "$TMP/$name.rc") WALL_S="" RSS_KB="" SPREAD=""
		return
	fi
	RC=0
	sorted=$(sort -g "$TMP/$name.rates")
	med=$(sed -n "$(((RUNS + 1) / 2))p" <<<"$sorted" | cut -d' ' -f2)
	SPREAD="$(fmt_num "$(head -n 1 <<<"$sorted" | cut -d' ' -f1)")–$(fmt_num "$(tail -n 1 <<<"$sorted" | cut -d' ' -f1)")"
	cp "$TMP/$name.$med.out" "$TMP/$name.out"
	read -r _ WALL_S < <(tail -n 1 "$TMP/$name.$med.time")
	RSS_KB=$(cut -d' ' -f3 "$TMP/$name.rates" | sort -g | tail -n 1)
}

# runs NAME TIMEOUT RATE CMD...: NAME's series of $RUNS runs of CMD (see
# run_one), one after another, as one step (see series_end). A run of a
# second swings by 10% on a shared machine; the micro-benchmarks are
# medians too.
runs() {
	local name=$1 limit=$2 rate=$3 i
	shift 3
	series_start "$name"
	for ((i = 1; i <= RUNS; i++)); do run_one "$name" "$i" "$limit" "$rate" "$@"; done
	series_end "$name"
}

# paired A B: the ratios of series A's rates to series B's run by run (run
# I of A against run I of B, made in the same round), as "the median×
# (min–max×)"; empty unless both series are whole.
paired() {
	[[ -f $TMP/$1.rates && -f $TMP/$2.rates && ! -f $TMP/$1.rc && ! -f $TMP/$2.rc ]] || return 0
	$PY - "$TMP/$1.rates" "$TMP/$2.rates" <<'PY'
import statistics, sys
def rates(path):
    return {int(i): float(r) for r, i, _ in (l.split() for l in open(path) if l.strip())}
a, b = rates(sys.argv[1]), rates(sys.argv[2])
rs = sorted(a[i] / b[i] for i in a if i in b and b[i] > 0)
if rs:
    print("{:.2f}× ({:.2f}–{:.2f}×)".format(statistics.median(rs), rs[0], rs[-1]))
PY
}
# Rates of runs: a peer's tickets/s, a corpsim run's, a replay's events/s
# over its process's wall.
peer_rate() { sed -n 's/.*tickets_per_s=\([0-9.]*\).*/\1/p' "$TMP/$1.out"; }
run_rate() { json "$TMP/$1.out" 'd.get("tickets_per_second", 0)'; }
replay_rate() { $PY -c 'import sys; print(int(sys.argv[2])/float(open(sys.argv[1]).read().split()[-1]))' "$TMP/$1.time" "$EVENTS"; }

# json FILE EXPR: a field of a JSON document (EXPR in Python over d).
json() { $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }

# gobench FILE NAME UNIT: the median of a Go benchmark's metric over -count runs.
gobench() {
	$PY - "$@" <<'EOF'
import re, statistics, sys
path, name, unit = sys.argv[1:4]
vals = []
for line in open(path):
    f = line.split()
    if not f or not re.fullmatch(r"Benchmark%s(-\d+)?" % re.escape(name), f[0]):
        continue
    for v, u in zip(f[2::2], f[3::2]):
        if u == unit:
            vals.append(float(v))
print(statistics.median(vals) if vals else "")
EOF
}

# fmt_num X: 12345.6 -> 12,346; "" -> —
fmt_num() { $PY -c 'import sys; v=sys.argv[1]; print("—" if v=="" else "{:,.0f}".format(float(v)))' "${1:-}"; }
fmt_mib() { $PY -c 'import sys; v=sys.argv[1]; print("—" if v=="" else "{:,.0f} MiB".format(float(v)/1024))' "${1:-}"; }
# evpt EVENTS_PER_S TICKETS_PER_S: events per ticket, "6.9"
evpt() { $PY -c 'import sys; a,b=sys.argv[1:3]; print("—" if not a or not b or float(b)==0 else "{:.1f}".format(float(a)/float(b)))' "${1:-}" "${2:-}"; }
# ceiling EVENTS_PER_S EVENTS TICKETS: the tickets/s that events/s allows at the run's events per ticket
ceiling() { $PY -c 'import sys; a,e,t=sys.argv[1:4]; print("" if not a or not e or not t or float(e)==0 else float(a)*float(t)/float(e))' "${1:-}" "${2:-}" "${3:-}"; }
# ratio A B [SUFFIX]: A/B as "1.23×"
ratio() { $PY -c 'import sys; a,b=sys.argv[1:3]; print("—" if not a or not b or float(b)==0 else "{:.2f}×".format(float(a)/float(b)))' "${1:-}" "${2:-}"; }

ROWS=()
row_text() { # row_text CELL...: a markdown table row
	local r="|" c
	for c in "$@"; do r+=" $c |"; done
	echo "$r"
}
row() { ROWS+=("$(row_text "$@")"); }
status_note() { # status_note RC: a note for a step that did not finish
	if ((RC == 124)); then echo "**stopped after its ${1}s limit**"; elif ((RC != 0)); then echo "**error (exit $RC)**"; fi
}

# ---- build ----------------------------------------------------------------
say "building corpsim and the scale benchmarks"
# What is measured is the tree as built now (others may commit meanwhile).
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
dirty=$(git status --porcelain --untracked-files=no 2>/dev/null | awk '{print $2}' | paste -sd' ' - || true)
# gobuild OUT ARGS… builds a binary and copies it into place. A process
# running the file the linker has just written is charged about 13 MiB more
# resident memory than one running a copy of the same bytes (measured on
# corpsim run: 64-65 against 51-53 MiB; the linker's file sits in the page
# cache in larger pieces), which the peak columns would carry.
gobuild() {
	local out=$1
	shift
	go build -o "$out.linked" "$@"
	cp "$out.linked" "$out"
	rm -f "$out.linked"
}
gobuild "$TMP/corpsim" ./cmd/corpsim
go test -c -o "$TMP/tests.test.linked" ./tests
cp "$TMP/tests.test.linked" "$TMP/tests.test" && rm -f "$TMP/tests.test.linked"
gobuild "$TMP/openenvbench" ./tests/openenvbench
gobuild "$TMP/rawscan" ./tests/rawscan
CS=$TMP/corpsim

# The shipped benchmark world, or the same with fewer tickets.
if ((TICKETS == 200000)); then
	WORLD=support-desk-bench
else
	WORLD=$TMP/support-desk-$TICKETS.yaml
	"$CS" worlds show support-desk-bench | sed "s/count: 200000/count: $TICKETS/" >"$WORLD"
fi
# The agents variant: the 20 servers become agent seats (no npc), played by
# the built-in greedy agent: in process (the default), and across the
# embedded bus (--seats-over-bus).
AGENT_WORLD=$TMP/support-desk-agents-$AGENT_TICKETS.yaml
"$CS" worlds show support-desk-bench |
	sed -e 's/, npc: {reply: {min: 0s, max: 0s}, serves: \[desk\]}}/}/' \
		-e "s/count: 200000/count: $AGENT_TICKETS/" \
		-e 's/^name: support-desk-bench/name: support-desk-bench-agents/' >"$AGENT_WORLD"
grep -q 'npc:' "$AGENT_WORLD" && { say "the agents variant still has NPCs: the world's format changed"; exit 1; }
"$CS" worlds validate "$AGENT_WORLD" >&2

# ---- 1. Pebble: the log against raw Pebble -----------------------------------------
run pebble "$STEP_TIMEOUT" go test -run=NONE -bench='Append$|RawPebbleBatch|RawPebbleGroup|Read$|Scan$|RawPebbleScan' -count="$COUNT" ./events/pebblelog
APPEND=$(gobench "$TMP/pebble.out" Append events/s)
RAWB=$(gobench "$TMP/pebble.out" RawPebbleBatch events/s)
RAWG=$(gobench "$TMP/pebble.out" RawPebbleGroup events/s)
READ=$(gobench "$TMP/pebble.out" Read events/s)
BORROW=$(gobench "$TMP/pebble.out" Scan events/s)
SCAN=$(gobench "$TMP/pebble.out" RawPebbleScan events/s)

# ---- 1b. a fork at the end of a 1,000,000-event parent, resumed (target < 1 ms) ------
run fork "$STEP_TIMEOUT" go test -run=NONE -bench='^BenchmarkFork$' -count="$COUNT" ./events/pebblelog
FORK_NS=$(gobench "$TMP/fork.out" Fork/prefix=1000000 ns/op)
FORK_SMALL_NS=$(gobench "$TMP/fork.out" Fork/prefix=1000 ns/op)

# ---- 2. NATS: an agent turn against raw request/reply --------------------------------
run nats "$STEP_TIMEOUT" go test -run=NONE -bench='AgentTurn|RawRequestReply' -count="$COUNT" ./agents/natshost
TURN_NS=$(gobench "$TMP/nats.out" AgentTurn ns/op)
RAW_NS=$(gobench "$TMP/nats.out" RawRequestReply ns/op)
us() { $PY -c 'import sys; v=sys.argv[1]; print("—" if v=="" else "{:.1f} µs".format(float(v)/1000))' "${1:-}"; }
per_s() { $PY -c 'import sys; v=sys.argv[1]; print("" if v=="" else 1e9/float(v))' "${1:-}"; }

# ---- 2b. the engine alone: the ceiling of every run below ----------------------------
run engine "$STEP_TIMEOUT" go test -run=NONE -bench='^BenchmarkSupportDeskBench$' -count="$COUNT" ./sim
ENGINE_TPS=$(gobench "$TMP/engine.out" SupportDeskBench tickets/s)
ENGINE_EPS=$(gobench "$TMP/engine.out" SupportDeskBench events/s)

# ---- 3. the ticket rows' whole processes, in rounds ----------------------------
# Round I runs the SimPy peer, the bare Go loop, corpsim in memory and
# corpsim durable once each, back to back: besides each series' median,
# a ratio is also taken within each round (paired), since this machine's
# speed drifts from minute to minute and the peer's the most. The bare
# loop is built first, so that its row times the loop, not the compiler.
gobuild "$TMP/bare_desk" "$BARE"
series_start simpy bare mem durable
for ((i = 1; i <= RUNS; i++)); do
	run_one simpy "$i" "$STEP_TIMEOUT" peer_rate "$PY" "$PEER" "$TICKETS"
	run_one bare "$i" "$STEP_TIMEOUT" peer_rate "$TMP/bare_desk" "$TICKETS"
	run_one mem "$i" "$STEP_TIMEOUT" run_rate "$CS" run --world "$WORLD" --ephemeral --json
	# Each durable run in a data folder of its own: none compacts another's tables.
	run_one durable "$i" "$STEP_TIMEOUT" run_rate "$CS" run --world "$WORLD" --data "$TMP/data$i" --json
done
# paired_note A: series A's ratio to the peer within each round, for a row's note.
paired_note() {
	local p
	p=$(paired "$1" simpy)
	[[ -n $p ]] && echo "; paired with the peer's run of the same round: $p"
	return 0
}

series_end simpy
SIMPY_TPS=""
if ((RC == 0)); then SIMPY_TPS=$(sed -n 's/.*tickets_per_s=\([0-9.]*\).*/\1/p' "$TMP/simpy.out"); fi
SIMPY_WALL=$(sed -n 's/.*wall_s=\([0-9.]*\).*/\1/p' "$TMP/simpy.out")
row "SimPy peer (\`simpy_desk.py $TICKETS\`, SimPy $($PY -c 'import SimPy; print(SimPy.__version__)' 2>/dev/null || echo 2))" \
	"$(fmt_num "$TICKETS")" "${SIMPY_WALL:-—}" "$(fmt_num "$SIMPY_TPS")" "—" "$(fmt_mib "$RSS_KB")" "1.00×" "the baseline of the ticket rows; $RUNS runs: $SPREAD tickets/s $(status_note "$STEP_TIMEOUT")"

# ---- 3b. the bare Go loop: the same desk, nothing recorded -----------------------------
series_end bare
BARE_TPS="" BARE_WALL=""
if ((RC == 0)); then
	BARE_TPS=$(sed -n 's/.*tickets_per_s=\([0-9.]*\).*/\1/p' "$TMP/bare.out")
	BARE_WALL=$(sed -n 's/.*wall_s=\([0-9.]*\).*/\1/p' "$TMP/bare.out")
fi
row "bare Go event loop (\`bare_desk.go $TICKETS\`: a heap, nothing recorded or checked)" \
	"$(fmt_num "$TICKETS")" "${BARE_WALL:-—}" "$(fmt_num "$BARE_TPS")" "—" "$(fmt_mib "$RSS_KB")" "$(ratio "$BARE_TPS" "$SIMPY_TPS")" "vs SimPy: the limit of the ticket rows; $RUNS runs: $SPREAD tickets/s$(paired_note bare) $(status_note "$STEP_TIMEOUT")"

# corsim_row NAME LABEL COUNT NOTE: a row from a `corpsim run --json` result.
corpsim_row() {
	local name=$1 label=$2 count=$3 note=$4 tps="" eps="" wall="—"
	if ((RC == 0)); then
		tps=$(json "$TMP/$name.out" 'd.get("tickets_per_second", 0)')
		eps=$(json "$TMP/$name.out" 'd.get("events_per_second", 0)')
		wall=$(json "$TMP/$name.out" '"%.1f" % d.get("wall_seconds", 0)')
		local got
		got=$(json "$TMP/$name.out" 'd["score"]["tickets_resolved"]')
		((got == count)) || note="$note; **only $got of $count tickets resolved**"
	fi
	note=${note//@BARE@/$(ratio "$tps" "${BARE_TPS:-}")}
	row "$label" "$(fmt_num "$count")" "$wall" "$(fmt_num "$tps")" "$(fmt_num "$eps")" "$(fmt_mib "$RSS_KB")" \
		"$(ratio "$tps" "$SIMPY_TPS")" "$note $(status_note "$STEP_TIMEOUT")"
	LAST_TPS=$tps LAST_EPS=$eps
}

# ---- 4. corpsim in memory ----------------------------------------------------
series_end mem
corpsim_row mem "corpsim in memory (\`run --ephemeral\`, 20 NPC servers)" "$TICKETS" "vs SimPy (target ≥ 5×); @BARE@ of the bare Go loop (aim ≥ 0.25×); peak RSS target < 100 MiB; $RUNS runs: $SPREAD tickets/s$(paired_note mem)"
MEM_RSS_KB=$RSS_KB

# The same desk ten times longer: finished work must not keep the state growing.
if ((BIG_TICKETS > 0)); then
	BIG_WORLD=$TMP/support-desk-$BIG_TICKETS.yaml
	"$CS" worlds show support-desk-bench | sed "s/count: 200000/count: $BIG_TICKETS/" >"$BIG_WORLD"
	run big "$STEP_TIMEOUT" "$CS" run --world "$BIG_WORLD" --ephemeral --json --max-arrivals $((2 * BIG_TICKETS)) --max-events $((20 * BIG_TICKETS))
	corpsim_row big "corpsim in memory, $(fmt_num "$BIG_TICKETS") tickets (the same desk, longer)" "$BIG_TICKETS" \
		"vs SimPy's $(fmt_num "$TICKETS")-ticket rate; its peak RSS is $(ratio "$RSS_KB" "$MEM_RSS_KB") the $(fmt_num "$TICKETS")-ticket run's (target < 2×)"
fi

row "the engine alone (\`BenchmarkSupportDeskBench\`: state machine and NPCs, 10,000 tickets, no log, no bus)" "—" "—" "$(fmt_num "$ENGINE_TPS")" "$(fmt_num "$ENGINE_EPS")" "—" "$(ratio "$ENGINE_TPS" "$SIMPY_TPS")" "vs SimPy: the ceiling of the in-memory run; $(ratio "$ENGINE_TPS" "$BARE_TPS") of the bare Go loop; $(evpt "$ENGINE_EPS" "$ENGINE_TPS") events per ticket"

# ---- 5. corpsim durable, and its replay ------------------------------------------
series_end durable
DURABLE_DATA=""
for ((i = 1; i <= RUNS; i++)); do
	if [[ -f $TMP/durable.$i.out ]] && cmp -s "$TMP/durable.$i.out" "$TMP/durable.out"; then
		DURABLE_DATA=$TMP/data$i
	else
		rm -rf "$TMP/data$i" # the median run's is replayed below
	fi
done
corpsim_row durable "corpsim durable (every event in a synced Pebble batch)" "$TICKETS" "vs SimPy (target ≥ 3×); @BARE@ of the bare Go loop; $RUNS runs: $SPREAD tickets/s$(paired_note durable)"
DURABLE_EPS=$LAST_EPS DURABLE_TPS=$LAST_TPS
REPLAY_EPS=""
if ((RC == 0)); then
	SESSION=$(json "$TMP/durable.out" 'd["session"]')
	EVENTS=$(json "$TMP/durable.out" 'd["events"]')
	# Replay and the raw scan of the same keys from disk (a fresh process
	# opens the store read-only and iterates them from its tables, as replay
	# reads them) in rounds, as the ticket rows: their ratio is paired too.
	series_start replay rawscan
	for ((i = 1; i <= RUNS; i++)); do
		run_one replay "$i" "$STEP_TIMEOUT" replay_rate "$CS" replay "$SESSION" --data "$DURABLE_DATA" --json
		run_one rawscan "$i" "$STEP_TIMEOUT" replay_rate "$TMP/rawscan" -data "$DURABLE_DATA" -session "$SESSION"
	done
	series_end replay
	if ((RC == 0)); then
		[[ $(json "$TMP/replay.out" 'd["match"]') == True ]] || { say "replay: state hash mismatch"; FAILED=1; }
		REPLAY_EPS=$($PY -c 'import sys; print(int(sys.argv[1])/float(sys.argv[2]))' "$EVENTS" "$WALL_S")
	fi
	REPLAY_ROW=("replay of that session (\`corpsim replay\`: borrowed scan, decode, re-apply, hash)" "$(fmt_num "$EVENTS") events" "${WALL_S:-—}" "—"
		"$(fmt_num "$REPLAY_EPS")" "$(fmt_mib "$RSS_KB")" "$(ratio "$REPLAY_EPS" "$SCAN")")
	REPLAY_NOTE="vs raw Pebble scan (\`BenchmarkRawPebbleScan\`, below: the keys in a memtable; target ≥ 0.25×); $RUNS runs: $SPREAD events/s $(status_note "$STEP_TIMEOUT")"
	COLD_EPS=""
	series_end rawscan
	if ((RC == 0)); then
		[[ $(json "$TMP/rawscan.out" 'd["keys"]') == "$EVENTS" ]] || { say "rawscan: not the session's $EVENTS keys"; FAILED=1; }
		COLD_EPS=$($PY -c 'import sys; print(int(sys.argv[1])/float(sys.argv[2]))' "$EVENTS" "$WALL_S")
		REPLAY_NOTE+="; $(ratio "$REPLAY_EPS" "$COLD_EPS") of the raw scan of the session's own keys from disk (next row)"
		PAIRED=$(paired replay rawscan)
		if [[ -n $PAIRED ]]; then REPLAY_NOTE+=", paired by round $PAIRED"; fi
	fi
	row "${REPLAY_ROW[@]}" "$REPLAY_NOTE"
	row "raw Pebble scan of that session's keys from disk (\`tests/rawscan\`: a fresh process opens the store read-only, as replay does, and reads every event's value)" "$(fmt_num "$EVENTS") keys" "${WALL_S:-—}" "—" \
		"$(fmt_num "$COLD_EPS")" "$(fmt_mib "$RSS_KB")" "—" "replay's reading alone; $RUNS runs: $SPREAD keys/s $(status_note "$STEP_TIMEOUT")"
fi

# ---- 6. agent seats: in process, and across the bus -----------------------------------
# turn_note NAME: the turns of a run and its wall per turn.
turn_note() { json "$TMP/$1.out" '"{:,} turns, {:.0f} µs of wall per turn".format(d["score"]["turns"], 1e6*d["wall_seconds"]/max(d["score"]["turns"],1))'; }
run agents "$STEP_TIMEOUT" "$CS" run --world "$AGENT_WORLD" --agents greedy --ephemeral --json
TURN_NOTE=""
if ((RC == 0)); then TURN_NOTE=$(turn_note agents); fi
corpsim_row agents "corpsim, the 20 servers as greedy agent seats, played in process (\`run\`: no JSON, no bus)" "$AGENT_TICKETS" "vs SimPy; $TURN_NOTE"
INPROC_TPS=$LAST_TPS
run agents_bus "$STEP_TIMEOUT" "$CS" run --world "$AGENT_WORLD" --agents greedy --ephemeral --seats-over-bus --json
TURN_NOTE="" BUS_TPS=""
if ((RC == 0)); then TURN_NOTE=$(turn_note agents_bus) BUS_TPS=$(json "$TMP/agents_bus.out" 'd.get("tickets_per_second", 0)'); fi
corpsim_row agents_bus "the same seats across the embedded NATS bus (\`run --seats-over-bus\`: each turn as JSON both ways)" "$AGENT_TICKETS" "vs SimPy; $TURN_NOTE; in process is $(ratio "$INPROC_TPS" "$BUS_TPS") its tickets/s"

# ---- 7. scale: one big world, many sessions -----------------------------------------
run scale $((SCALE_SECONDS + 300)) env BENCH_SCALE_MEMBERS="$SCALE_MEMBERS" BENCH_SCALE_TASKS="$SCALE_TASKS" BENCH_SCALE_SECONDS="$SCALE_SECONDS" \
	"$TMP/tests.test" -test.run=NONE -test.bench='^BenchmarkScaleWorld$' -test.benchtime=1x
SCALE_RSS_KB=$RSS_KB
SCALE_EPS=$(gobench "$TMP/scale.out" ScaleWorld events/s)
SCALE_EVENTS=$(gobench "$TMP/scale.out" ScaleWorld events)
SCALE_FIRST=$(gobench "$TMP/scale.out" ScaleWorld first-batch-s)
SCALE_DONE=$(gobench "$TMP/scale.out" ScaleWorld finished)
SCALE_WALL=$(gobench "$TMP/scale.out" ScaleWorld wall-s)
SCALE_STATUS="ran to its end"
[[ $SCALE_DONE == 1* ]] || SCALE_STATUS="**not finished**: $(fmt_num "$SCALE_EVENTS") events in its ${SCALE_SECONDS}s budget"
# One session alone, 20 times in a row (its events/s is the baseline of the
# concurrent row), then the sessions all at once.
run session1 "$STEP_TIMEOUT" env BENCH_SESSIONS=1 "$TMP/tests.test" -test.run=NONE -test.bench='^BenchmarkConcurrentSessions$' -test.benchtime=20x
ONE_EPS=$(gobench "$TMP/session1.out" ConcurrentSessions events/s)
ONE_TPS=$(gobench "$TMP/session1.out" ConcurrentSessions tickets/s)
ONE_EVENTS=$(gobench "$TMP/session1.out" ConcurrentSessions events/op)
ONE_RSS_KB=$RSS_KB
run sessions "$STEP_TIMEOUT" env BENCH_SESSIONS="$SESSIONS" "$TMP/tests.test" -test.run=NONE -test.bench='^BenchmarkConcurrentSessions$' -test.benchtime=1x
SESS_RSS_KB=$RSS_KB
SESS_EPS=$(gobench "$TMP/sessions.out" ConcurrentSessions events/s)
SESS_TPS=$(gobench "$TMP/sessions.out" ConcurrentSessions tickets/s)
SESS_EVENTS=$(gobench "$TMP/sessions.out" ConcurrentSessions events/op)
SESS_NS=$(gobench "$TMP/sessions.out" ConcurrentSessions ns/op)
SESS_PEAK=$(gobench "$TMP/sessions.out" ConcurrentSessions peak-running)

# ---- 7b. worlds under load: an observation and a decision cost what they show ------------
# Shipped worlds at loads that build backlogs (open tickets, open cases,
# booked meetings), and the bench desk with 2,000 colleagues: whatever a
# view, a queue's head, a wake-up or a case list looks at must be indexed,
# or these slow down with the session's length. Trend rows: no peer.
# An entry world:load:Nd runs the world over a horizon of N days instead of
# its own, its arrivals lasting as long (each arrival's `until:`, in the
# arrivals section alone, set to N days): a persistent session, whose decisions must not slow down with
# what it has done.
LOAD_WORLDS=${BENCH_LOAD_WORLDS:-"support-desk:100 portfolio:50 claims:50 wind-ops:20 meetings:20 desk-2000:1 billing-support:20:200d"}
WIDE_DESK=$TMP/desk-2000.yaml
"$CS" worlds show support-desk-bench | $PY -c '
import re, sys
src = sys.stdin.read()
npc = re.search(r"^  - \{id: s01, (.*)\}$", src, re.M).group(1)
members = "".join("  - {id: s%04d, %s}\n" % (i, npc) for i in range(1, 2001))
src = re.sub(r"(?ms)^  - \{id: s01,.*?(?=^\S)", members + "\n", src)
src = src.replace("name: support-desk-bench", "name: desk-2000").replace("every: 30s", "every: 300ms").replace("count: 200000", "count: 100000")
sys.stdout.write(src)' >"$WIDE_DESK"
"$CS" worlds validate "$WIDE_DESK" >&2
eps_rate() { json "$TMP/$1.out" 'd.get("events_per_second", 0)'; }
LOAD_ROWS=()
for wl in $LOAD_WORLDS; do
	IFS=: read -r W L H <<<"$wl"
	WF=$W OVER=""
	[[ $W == desk-2000 ]] && WF=$WIDE_DESK
	if [[ -n $H ]]; then
		WF=$TMP/$W-$H.yaml OVER=" over ${H%d} days"
		"$CS" worlds show "$W" | sed -E "s/^horizon: .*/horizon: $H/; /^arrivals:/,/^[a-z]/ s/(until: )[0-9][0-9a-z.]*/\1$H/" >"$WF"
	fi
	N=load_$W$H
	runs "$N" "$STEP_TIMEOUT" eps_rate "$CS" run --world "$WF" --ephemeral --load "$L" --json
	if ((RC == 0)); then
		LOAD_ROWS+=("$(row_text "\`$W\`$OVER at \`--load $L\`, greedy, in memory" \
			"$(json "$TMP/$N.out" '"{:,} events".format(d["events"])')" \
			"$(json "$TMP/$N.out" '"%.2f" % d.get("wall_seconds", 0)')" \
			"—" "$(fmt_num "$(eps_rate "$N")")" "$(fmt_mib "$RSS_KB")" "—" \
			"$RUNS runs: $SPREAD events/s; $(json "$TMP/$N.out" '"; ".join(x for x in ["{:,} tickets ({:,} resolved)".format(d["score"]["tickets"], d["score"]["tickets_resolved"]) if d["score"].get("tickets") else "", "{:,} cases ({:,} done)".format(d["score"]["cases"], d["score"]["cases_done"]) if d["score"].get("cases") else "", "{:,} turns, ended {}".format(d["score"].get("turns", 0), d["ended"])] if x)')")")
	else
		LOAD_ROWS+=("$(row_text "\`$W\`$OVER at \`--load $L\`" "—" "—" "—" "—" "—" "—" "$(status_note "$STEP_TIMEOUT")")")
	fi
done

# ---- 8. OpenEnv: a step against a raw WebSocket echo; resets; sessions held -------------
OE_STEPS=${BENCH_OPENENV_STEPS:-2000}
OE_RESET_CONNS=${BENCH_OPENENV_RESET_CONNS:-4}
OE_RESET_SECONDS=${BENCH_OPENENV_RESET_SECONDS:-20}
OE_LEVELS=${BENCH_OPENENV_LEVELS:-1000,2000,3000,4000}
OE_THINK=${BENCH_OPENENV_THINK:-10s}
OE_WINDOW=${BENCH_OPENENV_WINDOW:-30s}
OE_TOKEN=bench-operator-token
run openenv_micro "$STEP_TIMEOUT" go test -run=NONE -bench='StepRoundTrip|RawEcho' -count="$COUNT" ./agents/openenv
OE_MICRO_NS=$(gobench "$TMP/openenv_micro.out" StepRoundTrip ns/op)
OE_ECHO_NS=$(gobench "$TMP/openenv_micro.out" RawEcho ns/op)
OE_MICRO_BYTES=$(gobench "$TMP/openenv_micro.out" StepRoundTrip reply-bytes)
freeport() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# oe_start NAME ARGS...: corpsim serve --http in the background, with as
# many open files as allowed (each session holds a few); sets OE_PID, OE_URL.
oe_start() {
	local name=$1 nats http
	shift
	nats=$(freeport) http=$(freeport)
	OE_URL=http://127.0.0.1:$http
	say "$name: corpsim serve --http $OE_URL $*"
	bash -c 'ulimit -n "$(ulimit -Hn)"; exec "$@"' _ "$CS" serve --listen "127.0.0.1:$nats" --http "127.0.0.1:$http" \
		--operator-token "$OE_TOKEN" "$@" >"$TMP/$name.serve.out" 2>"$TMP/$name.serve.err" &
	OE_PID=$!
	$PY - "$OE_URL/openenv/health" <<'EOF' || { say "$name: the server did not come up"; tail -n 20 "$TMP/$name.serve.err" >&2; FAILED=1; }
import sys, time, urllib.request
for _ in range(300):
    try:
        urllib.request.urlopen(sys.argv[1], timeout=1).read()
        sys.exit(0)
    except Exception:
        time.sleep(0.1)
sys.exit(1)
EOF
}
oe_stop() {
	[[ -n $OE_PID ]] && kill -TERM "$OE_PID" 2>/dev/null && wait "$OE_PID" 2>/dev/null
	OE_PID=""
	return 0
}
# oebench: the load program against the server oe_start started last.
oebench() { OEB=(bash -c 'ulimit -n "$(ulimit -Hn)"; exec "$@"' _ "$TMP/openenvbench" -url "$OE_URL" -token "$OE_TOKEN"); }
oe_start openenv_serve --data "$TMP/oe-data"
oebench
run openenv_step "$STEP_TIMEOUT" "${OEB[@]}" -mode step -steps "$OE_STEPS"
OE_STEP_RC=$RC OE_STEP_NOTE=$(status_note "$STEP_TIMEOUT")
run openenv_resets "$STEP_TIMEOUT" "${OEB[@]}" -mode resets -conns "$OE_RESET_CONNS" -seconds "$OE_RESET_SECONDS"
OE_RESETS_RC=$RC OE_RESETS_NOTE=$(status_note "$STEP_TIMEOUT")
oe_stop
oe_start openenv_hold --data "$TMP/oe-hold" --max-sessions 100000 --http-max-conns 100000
oebench
run openenv_hold $((STEP_TIMEOUT + 600)) "${OEB[@]}" -mode hold -levels "$OE_LEVELS" -think "$OE_THINK" -window "$OE_WINDOW" \
	-world support-desk -agents greedy,ana=remote -pid "$OE_PID"
OE_HOLD_RC=$RC OE_HOLD_NOTE=$(status_note $((STEP_TIMEOUT + 600)))
oe_stop

# ---- the table ------------------------------------------------------------------
row "log append, batches of 64 synced events (\`BenchmarkAppend\`)" "—" "—" "—" "$(fmt_num "$APPEND")" "—" "$(ratio "$APPEND" "$RAWB")" "vs raw Pebble batch"
row "raw Pebble synced batches of the same bytes (\`BenchmarkRawPebbleBatch\`)" "—" "—" "—" "$(fmt_num "$RAWB")" "—" "1.00×" "baseline; the durable run above: $(ratio "$DURABLE_EPS" "$RAWB") of it"
RAWG_TPS=$(ceiling "$RAWG" "${EVENTS:-}" "$TICKETS")
row "raw Pebble synced batches of 4,096 (\`BenchmarkRawPebbleGroup\`, the driver's largest group commit)" "—" "—" "$(fmt_num "$RAWG_TPS")" "$(fmt_num "$RAWG")" "—" "$(ratio "$RAWG_TPS" "$SIMPY_TPS")" "tickets/s: the durable run's ceiling at its $(evpt "${EVENTS:-}" "$TICKETS") events per ticket, vs SimPy; the durable run: $(ratio "$DURABLE_EPS" "$RAWG") of its events/s"
row "log read, decoded into copies (\`BenchmarkRead\`)" "—" "—" "—" "$(fmt_num "$READ")" "—" "$(ratio "$READ" "$SCAN")" "vs raw Pebble scan"
row "log scan, checksummed and decoded in place (\`BenchmarkScan\`, borrowed events)" "—" "—" "—" "$(fmt_num "$BORROW")" "—" "$(ratio "$BORROW" "$SCAN")" "vs raw Pebble scan (target ≥ 0.50×)"
row "raw Pebble scan of the same keys (\`BenchmarkRawPebbleScan\`)" "—" "—" "—" "$(fmt_num "$SCAN")" "—" "1.00×" "baseline"
row "fork at the end of a 1,000,000-event parent and resume it (\`BenchmarkFork\`: create, first append, checkpoint lookup, first read; synced)" "—" "—" "—" "$(us "$FORK_NS")" "—" "$($PY -c 'import sys; v=sys.argv[1]; print("—" if v=="" else "{:.2f}×".format(float(v)/1e6))' "${FORK_NS:-}")" "vs the 1 ms target; at a 1,000-event parent: $(us "$FORK_SMALL_NS")"
row "agent turn across the embedded bus, greedy (\`BenchmarkAgentTurn\`)" "—" "—" "—" "$(fmt_num "$(per_s "$TURN_NS")") turns/s, $(us "$TURN_NS") each" "—" "$(ratio "$TURN_NS" "$RAW_NS")" "turn latency ratio vs raw request/reply (target ≤ 2×)"
row "raw NATS request/reply of the same bytes (\`BenchmarkRawRequestReply\`)" "—" "—" "—" "$(fmt_num "$(per_s "$RAW_NS")") turns/s, $(us "$RAW_NS") each" "—" "1.00×" "baseline"
row "one session, generated world: $(fmt_num "$SCALE_MEMBERS") members, $(fmt_num "$SCALE_TASKS") tasks, dispatch one, greedy in process, in memory" "$(fmt_num "$SCALE_EVENTS") events" "$($PY -c 'import sys; v,f=sys.argv[1:3]; print("—" if v=="" else "%.1f (%.1f to the first batch)" % (float(v), float(f or 0)))' "$SCALE_WALL" "$SCALE_FIRST")" "—" "$(fmt_num "$SCALE_EPS")" "$(fmt_mib "$SCALE_RSS_KB")" "$(ratio "$SCALE_WALL" 30)" "wall vs the 30 s target; peak RSS $(ratio "$SCALE_RSS_KB" $((1024 * 1024))) of 1 GiB; $SCALE_STATUS $(status_note $((SCALE_SECONDS + 300)))"
SESS_WALL=$($PY -c 'import sys; v=sys.argv[1]; print("—" if v=="" else "%.1f" % (float(v)/1e9))' "$SESS_NS")
row "one session of \`support-desk\` alone, greedy in process, in-memory log (20 in a row)" "$(fmt_num "$ONE_EVENTS") events" "—" "$(fmt_num "$ONE_TPS")" "$(fmt_num "$ONE_EPS")" "$(fmt_mib "$ONE_RSS_KB")" "1.00×" "the baseline of the sessions row"
row "$SESSIONS concurrent sessions of \`support-desk\` in one process, greedy in process (one bus for the feeds), in-memory logs" "$(fmt_num "$SESS_EVENTS") events" "$SESS_WALL" "$(fmt_num "$SESS_TPS")" "$(fmt_num "$SESS_EPS")" "$(fmt_mib "$SESS_RSS_KB")" "$(ratio "$SESS_EPS" "$ONE_EPS")" "all sessions together (started 64 at a time, at most $(fmt_num "$SESS_PEAK") running at once): events/s vs one session alone (target ≥ 0.80×), peak RSS $(ratio "$SESS_RSS_KB" $((2 * 1024 * 1024))) of 2 GiB $(status_note "$STEP_TIMEOUT")"

# The worlds under load.
ROWS+=("${LOAD_ROWS[@]}")

# The OpenEnv rows.
row "OpenEnv step round trip, the adapter alone (\`BenchmarkStepRoundTrip\`: /openenv/ws, the gateway answering at once with a $(fmt_num "$OE_MICRO_BYTES")-byte reply)" "—" "—" "—" "$(fmt_num "$(per_s "$OE_MICRO_NS")") steps/s, $(us "$OE_MICRO_NS") each" "—" "$(ratio "$OE_MICRO_NS" "$OE_ECHO_NS")" "latency vs a raw WebSocket echo of the same bytes (target ≤ 2×)"
row "raw WebSocket echo of the same bytes (\`BenchmarkRawEcho\`, coder/websocket both ends)" "—" "—" "—" "$(fmt_num "$(per_s "$OE_ECHO_NS")") round trips/s, $(us "$OE_ECHO_NS") each" "—" "1.00×" "baseline"
if ((OE_STEP_RC == 0)); then
	row "OpenEnv step round trip end to end (\`corpsim serve --http\`, durable log; startup, bob remote, 4 greedy: the engine's turn, the log's sync, the bus, the gateway)" \
		"$(json "$TMP/openenv_step.out" '"{:,} steps".format(d["steps"])')" "—" "—" \
		"$(json "$TMP/openenv_step.out" '"{:.0f} µs mean, {:.0f} µs median, {:.0f} µs p99".format(d["step_us"], d["step_p50_us"], d["step_p99_us"])')" "—" \
		"$(json "$TMP/openenv_step.out" '"{:.2f}×".format(d["ratio"])')" \
		"$(json "$TMP/openenv_step.out" '"mean vs the same frames ({:.0f} and {:.0f} bytes) over a raw WebSocket echo in the same run: {:.0f} µs mean, {:.0f} µs median (target ≤ 2×); the gateway\u2019s own HTTP step of such episodes: {:.0f} µs mean, {:.0f} µs median (OpenEnv takes {:.2f}× its time)".format(d["request_bytes"], d["reply_bytes"], d["echo_us"], d["echo_p50_us"], d["v1_us"], d["v1_p50_us"], d["step_us"]/d["v1_us"])')"
else
	row "OpenEnv step round trip end to end" "—" "—" "—" "—" "—" "—" "$OE_STEP_NOTE"
fi
if ((OE_RESETS_RC == 0)); then
	row "OpenEnv resets over /openenv/ws ($OE_RESET_CONNS connections; each stops its last session, creates one, returns its first observation; durable)" \
		"$(json "$TMP/openenv_resets.out" '"{:,} resets".format(d["resets"])')" "$(json "$TMP/openenv_resets.out" '"{:.1f}".format(d["seconds"])')" "—" \
		"$(json "$TMP/openenv_resets.out" '"{:,.0f} resets/s, {:.0f} ms each".format(d["resets_per_second"], d["mean_ms"])')" "—" "—" "all connections together"
else
	row "OpenEnv resets" "—" "—" "—" "—" "—" "—" "$OE_RESETS_NOTE"
fi
if ((OE_HOLD_RC == 0)); then
	row "most concurrent /openenv/ws sessions one process holds while each steps (support-desk, ana remote, 7 greedy; a step every $OE_THINK per connection; durable)" \
		"$(json "$TMP/openenv_hold.out" '"{:,} sessions".format(d["max_held"])')" "—" "—" \
		"$(json "$TMP/openenv_hold.out" '"; ".join("{:,}: {:.0f} of {:.0f} steps/s, median {:.0f} ms, p99 {:.0f} ms{}".format(l["conns"], l["steps_per_sec"], l["offered_per_sec"], l["step_p50_ms"], l["step_p99_ms"], "" if l["held"] else " (not held: {} failed, {} stepped)".format(l["failed"], l["stepped"])) for l in d["levels"])')" \
		"$(json "$TMP/openenv_hold.out" '"{:,.0f} MiB at {:,}".format(max([l["server_rss_kib"] for l in d["levels"] if l["held"]] or [0])/1024, d["max_held"])')" \
		"$(json "$TMP/openenv_hold.out" '"{:.2f}×".format(d["max_held"]/2000)')" \
		"vs the target of 2,000; a level is held when no connection failed, each stepped within the ${OE_WINDOW} window and the server kept up (≥ 80% of the offered steps/s); server RSS at the largest level held"
else
	row "most concurrent /openenv/ws sessions one process holds while each steps" "—" "—" "—" "—" "—" "—" "$OE_HOLD_NOTE"
fi

# ---- print ------------------------------------------------------------------------
{
	echo "### corpsim benchmarks, $(date -u +%Y-%m-%dT%H:%MZ)"
	echo
	echo "- built from commit \`$commit\`${dirty:+ plus uncommitted changes to: $dirty}"
	echo "- machine: $(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1), $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo) memory, load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "- $(go version); $($PY --version 2>&1) (peer)"
	echo "- command: \`BENCH_TICKETS=$TICKETS BENCH_AGENT_TICKETS=$AGENT_TICKETS BENCH_COUNT=$COUNT BENCH_RUNS=$RUNS bash tests/bench.sh\`"
	echo
	echo "Tickets/s and events/s of \`corpsim run\` are over the driver's wall time (\`wall_seconds\` in \`run --json\`: the world loaded, the session to its end); the SimPy peer's over its \`simulate()\`. Peak RSS is the whole process's (GNU time). Go micro-benchmarks: the median of -count=$COUNT. The SimPy peer, the bare loop, corpsim in memory and durable, replay and the raw scan of its keys from disk: the median of $RUNS runs of the whole process (their range in the note), with the largest peak RSS of the $RUNS. The first four run in $RUNS rounds, each round one run of each back to back; a ticket row's *paired* ratio is the median of its runs' ratios to the peer's run of the same round (and their range), which this machine's drift between minutes moves less than the ratio of the medians. Replay and its raw scan run in rounds too, and their ratio is paired the same way. Replay and that raw scan: events / the whole process wall."
	echo
	echo "| what | count | wall s | tickets/s | events/s | peak RSS | ratio | ratio to / notes |"
	echo "|---|---|---|---|---|---|---|---|"
	printf '%s\n' "${ROWS[@]}"
} >"$TMP/table.md"
cat "$TMP/table.md"
[[ -n ${BENCH_OUT:-} ]] && cp "$TMP/table.md" "$BENCH_OUT"
if ((FAILED)); then
	say "a step failed (see above)"
	exit 1
fi
