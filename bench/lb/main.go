// Command lb benchmarks vipstack's L4 load balancer against haproxy 2.6 in
// one run (the "bench/lb"), and prints vipstack's figures as ratios
// of haproxy's with the targets: keep-alive requests/s >= 1.0, new
// connections/s >= 1.0, bulk throughput >= 0.9, keep-alive p99 latency
// <= 1.1 at the same offered load (the open loop below).
//
// Everything runs on loopback inside one throwaway network namespace
// (internal/testnet, prefix vsI): three Go HTTP backends (bench/lb/backend),
// an iperf3 server, haproxy (`haproxy -db -n 8000 -f haproxy.cfg`) and
// `vipstack lb -f haproxy.cfg`, both reading the same seed-derived
// configuration with different frontend ports (see renderConfig). Each
// round measures, for each balancer and straight to one backend:
//
//   - wrk -t2 -c64 -d10s --latency: keep-alive requests/s, p50 and p99;
//   - the same with -H 'Connection: close': new connections per second;
//   - an open loop: keep-alive GETs over 64 connections for -d at one
//     rate for direct, haproxy and vipstack, each timed from when it was
//     due, p50 and p99 (paced_linux.go);
//   - iperf3 -c -t 5: one bulk stream through the balancer's second frontend.
//
// The keep-alive p99 target is judged on the open loop. wrk is a closed
// loop: each balancer runs at the rate it sustains, and one that
// sustains more keeps the shared CPUs and backends busier, so its wrk
// p99 is that of a busier machine (the kernel path, at 1.55 times
// haproxy's rate, read 1.39 under wrk and 0.39 at 10,000 GETs/s). The
// open loop's rate is, by default (-paced-rate auto), 0.5 of the
// keep-alive requests/s haproxy sustained under wrk earlier in the same
// round (-paced-fraction; why 0.5: defaultPacedFraction), so both
// balancers are measured under load, below what haproxy sustains in the
// open loop (a round where it did not gets a note); -paced-rate N fixes
// it, and -paced-rate 0 drops the open loop, the target then falling back
// to wrk's p99. wrk's latencies stay in the report without a target.
//
// During both wrk runs it also reads the balancer's CPU time (user and
// system, /proc/PID/stat) and reports it per request, without a target:
// the throughput ratios move with the machine, the CPU a balancer spends
// per request much less.
//
// Each test runs for both balancers back to back, the order flipping from
// test to test and from round to round (see measureRound), and the report
// prints the median of the rounds' figures and, as vipstack/haproxy, the
// median of the rounds' ratios: the machine's speed drifts by 15-30 %
// between minutes, and a ratio taken inside a back-to-back pair sees
// less of it than a ratio of medians taken minutes apart.
//
// Then the backend-kill test, once per balancer: a fixed load of 200 new
// connections per second for 12 s (one GET each), one of the three backends
// is killed (SIGKILL) at 4 s, and every request that does not get a
// complete 200 answer within 8 s counts as failed. With the seed's
// `retries 3` and health checks at `inter 1s fall 2`, haproxy keeps sending
// new connections to the dead server until it is marked down; vipstack's
// connect retry should lose none. The killed backend is restarted and
// both balancers must see it again before anything else runs.
//
// With -mode http the main frontend and its backend run in mode http (the
// HTTP reverse proxy), the Connection: close p99 gets the same <= 1.1
// target (wrk's: there is no open loop of new connections), and before the rounds each balancer gets -idle-conns (3000)
// keep-alive connections, one GET answered on each, left idle: the RSS
// and PSS they add, scaled to 10,000 connections, must not exceed
// haproxy's. -markdown then writes the lb-http block instead of lb.
//
// With -datapath kernel (or auto) vipstack runs `vipstack lb --datapath
// kernel`: mode tcp frontends in nftables DNAT. The targets become issue
// 32's (keep-alive and new connections >= 1.2, keep-alive p99 <= 1.0,
// bulk >= 1.5, vipstack's keep-alive over direct's >= 0.8) and -markdown
// writes the lb-kernel block (docs/lb-kernel.md). The balancer's CPU per
// request then counts only its own process: the kernel's forwarding is
// charged to whoever's softirq runs it.
//
// The benchmark measures wall-clock rates on purpose, so it uses the real
// clock directly.
//
// Usage (root, Linux, with haproxy, wrk and iperf3 installed):
//
//	sudo go run ./bench/lb                  # 1 round, then the kill test
//	sudo go run ./bench/lb -rounds 3        # what docs/benchmarks.md records
//	sudo go run ./bench/lb -vipstack ./vipstack -d 5s -no-kill
//	sudo go run ./bench/lb -mode http -rounds 3 -no-kill -markdown docs/lb.md
//	sudo go run ./bench/lb -datapath kernel -rounds 3 -netns-prefix vnp -markdown docs/lb-kernel.md
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
