#!/usr/bin/env bash
# capture.sh records real keepalived VRRP advertisements as test fixtures for
# package vrrp (see capture_test.go).
#
# Usage (as root, from anywhere; re-runnable, overwrites the fixtures):
#
#	internal/vrrp/testdata/capture.sh
#
# Needs keepalived (2.2.7 tested), tcpdump, iproute2 and go. For each case it
#   - creates two throwaway network namespaces vsA<random>-1 (keepalived) and
#     vsA<random>-2 (tcpdump), joined by a veth pair "eth0" with fixed MACs,
#     addresses in 198.18.0.0/24 and fd00:aa::/64 and DAD off (so the
#     link-local address is usable at once);
#   - runs keepalived (VRRP only, in the foreground) with a private config and
#     private pid files in the first namespace;
#   - captures 3 advertisements with tcpdump in the second (bounded by timeout);
#   - stops keepalived by its PID and writes, next to this script,
#     NAME.bin (the VRRP message without Ethernet and IP headers) and NAME.txt
#     (its IP source and destination), using pcap2bin.go.
# The namespaces, keepalived, tcpdump and temporary files are removed on exit,
# also on failure. Traffic never leaves the namespaces (no routes out).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
export PATH=$PATH:/usr/local/go/bin
if [ "$(id -u)" -ne 0 ]; then
	echo "capture.sh: must run as root (creates network namespaces)" >&2
	exit 1
fi
for c in keepalived tcpdump ip go timeout od; do
	command -v "$c" >/dev/null || { echo "capture.sh: $c not found" >&2; exit 1; }
done

suffix=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
A=vsA$suffix-1 # keepalived
B=vsA$suffix-2 # tcpdump
work=$(mktemp -d /tmp/vsA-capture.XXXXXX)
ka_pid="" td_pid=""

cleanup() {
	for pid in $ka_pid $td_pid; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	ip netns del "$A" 2>/dev/null || true
	ip netns del "$B" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

ip netns add "$A"
ip netns add "$B"
for ns in "$A" "$B"; do
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
	ip -n "$ns" link set lo up
done
# Create the pair inside the namespaces so both ends get their DAD setting.
ip -n "$A" link add eth0 address 02:00:00:00:00:0b type veth peer name eth0 address 02:00:00:00:00:0c netns "$B"
ip -n "$A" addr add 198.18.0.11/24 dev eth0
ip -n "$A" addr add fd00:aa::11/64 dev eth0 nodad
ip -n "$B" addr add 198.18.0.12/24 dev eth0
ip -n "$B" addr add fd00:aa::12/64 dev eth0 nodad
ip -n "$A" link set eth0 up
ip -n "$B" link set eth0 up

# capture NAME: reads a keepalived config on stdin, runs it, records NAME.bin/.txt.
capture() {
	local name=$1
	local conf=$work/$name.conf pcap=$work/$name.pcap log=$work/$name.log
	cat >"$conf"

	ip netns exec "$B" timeout 10 tcpdump -i eth0 -nn -U -c 3 -w "$pcap" 'proto 112' 2>"$work/$name.tcpdump" &
	td_pid=$!
	for _ in $(seq 50); do # wait (at most 5 s) until tcpdump listens
		grep -qs 'listening on' "$work/$name.tcpdump" && break
		sleep 0.1
	done

	# ip netns exec execs keepalived in place, so $! is keepalived's PID.
	ip netns exec "$A" keepalived -n -l -D --vrrp -f "$conf" \
		-p "$work/$name.pid" -r "$work/$name.vrrp.pid" >"$log" 2>&1 &
	ka_pid=$!

	if ! wait "$td_pid"; then
		td_pid=""
		echo "capture.sh: tcpdump did not see 3 VRRP packets for $name; keepalived said:" >&2
		cat "$log" >&2
		exit 1
	fi
	td_pid=""
	kill -TERM "$ka_pid"
	wait "$ka_pid" || true
	ka_pid=""
	(cd "$here" && go run pcap2bin.go "$pcap" "$here/$name")
}

capture keepalived-v2-ipv4-pass <<'CONF'
global_defs {
	router_id vsA-capture
}
vrrp_instance VI_1 {
	state MASTER
	interface eth0
	virtual_router_id 51
	priority 100
	advert_int 1
	authentication {
		auth_type PASS
		auth_pass managed_api_vip
	}
	virtual_ipaddress {
		198.18.0.10/24
	}
}
CONF

capture keepalived-v3-ipv4 <<'CONF'
global_defs {
	router_id vsA-capture
	vrrp_version 3
}
vrrp_instance VI_1 {
	state MASTER
	interface eth0
	virtual_router_id 51
	priority 100
	advert_int 0.1
	virtual_ipaddress {
		198.18.0.10/24
	}
}
CONF

capture keepalived-v3-ipv6 <<'CONF'
global_defs {
	router_id vsA-capture
	vrrp_version 3
}
vrrp_instance VI_1 {
	state MASTER
	interface eth0
	virtual_router_id 51
	priority 100
	advert_int 1
	virtual_ipaddress {
		fd00:aa::10/64
	}
}
CONF
