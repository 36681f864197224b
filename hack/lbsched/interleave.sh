#!/usr/bin/env bash
# Usage: interleave.sh MODE SLICES BACKEND_BIN BASE_BIN EXP_BIN
#   MODE: ka (keep-alive) or close (Connection: close); SLICES: rounds of 1 s.
#   EXP_ENV (environment variable): what EXP_BIN runs with, e.g. "GOMAXPROCS=2".
#
# Compares three balancers running side by side in front of the same three
# bench/lb backends (127.0.0.1:18081-18083): BASE_BIN and EXP_BIN as
# `vipstack lb` (ports 19445 and 19446) and haproxy (port 19447). Each
# round runs `wrk -t2 -c64 -d1s` against each balancer, in an order that
# rotates through all six permutations, so all three see the same machine
# within seconds: the machine's speed drifts by 15-30 % from minute to
# minute here, and back-to-back runs of 10 s each still differ by that
# much. Prints each balancer's requests over all slices, its CPU per
# request (from /proc/PID/stat) and the ratios. Loopback only; it stops
# what it started, by PID.
set -uo pipefail
mode=$1 n=$2 backend=$3 base=$4 exp=$5
cfgdir=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$cfgdir"' EXIT
for p in 19445 19446 19447; do
	cat >"$cfgdir/lb$p.cfg" <<CFG
defaults
  maxconn 4000
  mode tcp
  retries 3
  timeout connect 10s
  timeout client 86400s
  timeout server 86400s
  timeout tunnel 86400s
frontend main
  bind 127.0.0.1:$p
  default_backend masters
backend masters
  option httpchk GET /readyz HTTP/1.0
  balance roundrobin
  server m0 127.0.0.1:18081 weight 1 check inter 1s fall 2 rise 3
  server m1 127.0.0.1:18082 weight 1 check inter 1s fall 2 rise 3
  server m2 127.0.0.1:18083 weight 1 check inter 1s fall 2 rise 3
CFG
done
for i in 1 2 3; do "$backend" -name "b$i" -addr "127.0.0.1:1808$i" & pids+=($!); done
"$base" lb -f "$cfgdir/lb19445.cfg" >/dev/null 2>&1 & pb=$!; pids+=($pb)
env ${EXP_ENV:-} "$exp" lb -f "$cfgdir/lb19446.cfg" >/dev/null 2>&1 & pe=$!; pids+=($pe)
haproxy -f "$cfgdir/lb19447.cfg" >/dev/null 2>&1 & ph=$!; pids+=($ph)
sleep 4
hdr=()
[ "$mode" = close ] && hdr=(-H 'Connection: close')
declare -A tot cpu port pid
port=([base]=19445 [exp]=19446 [hap]=19447)
pid=([base]=$pb [exp]=$pe [hap]=$ph)
for k in base exp hap; do tot[$k]=0 cpu[$k]=0; done
perms=("base exp hap" "exp hap base" "hap base exp" "hap exp base" "exp base hap" "base hap exp")
for ((s = 0; s < n; s++)); do
	for k in ${perms[$((s % 6))]}; do
		t0=$(awk '{print $14+$15}' "/proc/${pid[$k]}/stat")
		r=$(wrk -t2 -c64 -d1s "${hdr[@]}" "http://127.0.0.1:${port[$k]}/" | awk '/requests in/{print $1}')
		t1=$(awk '{print $14+$15}' "/proc/${pid[$k]}/stat")
		tot[$k]=$((tot[$k] + r)) cpu[$k]=$((cpu[$k] + t1 - t0))
	done
done
hz=$(getconf CLK_TCK)
for k in base exp hap; do
	awk -v k=$k -v r="${tot[$k]}" -v c="${cpu[$k]}" -v hz="$hz" 'BEGIN{printf "%s requests=%d cpu_us/req=%.2f\n", k, r, c*1e6/hz/r}'
done
awk -v b="${tot[base]}" -v e="${tot[exp]}" -v h="${tot[hap]}" 'BEGIN{printf "base/haproxy=%.3f exp/haproxy=%.3f exp/base=%.3f\n", b/h, e/h, e/b}'
