#!/usr/bin/env bash
# Usage: segments.sh MODE BACKEND_BIN VIPSTACK_BIN [ROUNDS]
#   MODE: ka (keep-alive) or close (Connection: close).
#
# Counts the TCP segments the machine sends per request (nstat's
# TcpOutSegs and a few TcpExt counters, divided by wrk's requests) for
# `wrk -t2 -c64 -d3s` through vipstack lb (127.0.0.1:19446), through
# haproxy (19447), and straight to one backend (18081), in front of three
# bench/lb backends (127.0.0.1:18081-18083). The counters are the whole
# machine's: run it on a quiet machine. Loopback only; it stops what it
# started, by PID.
set -uo pipefail
mode=$1 backend=$2 vipstack=$3 rounds=${4:-2}
cfgdir=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$cfgdir"' EXIT
for p in 19446 19447; do
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
  balance roundrobin
  server m0 127.0.0.1:18081 weight 1
  server m1 127.0.0.1:18082 weight 1
  server m2 127.0.0.1:18083 weight 1
CFG
done
for i in 1 2 3; do "$backend" -name "b$i" -addr "127.0.0.1:1808$i" & pids+=($!); done
"$vipstack" lb -f "$cfgdir/lb19446.cfg" >/dev/null 2>&1 & pids+=($!)
haproxy -f "$cfgdir/lb19447.cfg" >/dev/null 2>&1 & pids+=($!)
sleep 3
hdr=()
[ "$mode" = close ] && hdr=(-H 'Connection: close')
for ((r = 1; r <= rounds; r++)); do
	for target in vipstack:19446 haproxy:19447 direct:18081; do
		name=${target%%:*} port=${target##*:}
		nstat -n >/dev/null
		req=$(wrk -t2 -c64 -d3s "${hdr[@]}" "http://127.0.0.1:$port/" | awk '/requests in/{print $1}')
		nstat -z 2>/dev/null | awk -v n="$name" -v r="$req" '
			BEGIN { printf "%-8s requests %7d  per request:", n, r }
			$1 ~ /^(TcpOutSegs|TcpExtTCPOrigDataSent|TcpExtTCPPureAcksRecv|TcpExtDelayedACKs|TcpExtTCPHPAcks)$/ {
				sub(/^TcpExt/, "", $1); printf " %s %.3f", $1, $2 / r }
			END { print "" }'
	done
done
