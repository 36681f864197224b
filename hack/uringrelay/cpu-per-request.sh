#!/usr/bin/env bash
# Usage: cpu-per-request.sh BACKEND_BIN BALANCER_CMD...
# Starts three bench/lb backends on 127.0.0.1:18081-18083, the balancer
# (which must listen on 127.0.0.1:19445 and balance over them), then runs
# wrk -t2 -c64 -d8s (keep-alive) against it and prints requests, the
# balancer's and the backends' CPU per request (from /proc/PID/stat) and the
# machine's idle ticks (from /proc/stat). Loopback only; it stops what it
# started, by PID.
set -euo pipefail
backend=$1; shift
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true' EXIT
for i in 1 2 3; do "$backend" -name "b$i" -addr "127.0.0.1:1808$i" & pids+=($!); done
"$@" >/dev/null 2>&1 & lbpid=$!; pids+=($lbpid)
sleep 4
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
declare -A before
for p in "${pids[@]}"; do before[$p]=$(ticks "$p"); done
read -r _ u n s idle _ <<<"$(head -1 /proc/stat)"
out=$(wrk -t2 -c64 -d8s http://127.0.0.1:19445/ 2>&1)
read -r _ u2 n2 s2 idle2 _ <<<"$(head -1 /proc/stat)"
req=$(awk '/requests in/{print $1}' <<<"$out")
b=0
for p in "${pids[@]:0:3}"; do b=$((b + $(ticks "$p") - ${before[$p]})); done
l=$(($(ticks "$lbpid") - ${before[$lbpid]}))
awk -v name="$1" -v req="$req" -v l="$l" -v b="$b" -v hz="$(getconf CLK_TCK)" -v idle=$((idle2 - idle)) \
	'BEGIN { printf "%s requests=%d balancer_us/req=%.1f backends_us/req=%.1f idle_ticks=%d\n", name, req, l*1e6/hz/req, b*1e6/hz/req, idle }'
