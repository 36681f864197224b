package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/vipstack/vipstack/internal/benchdoc"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/procfs"
	"github.com/vipstack/vipstack/internal/testnet"
)

// afterTakeover outlasts the second burst of gratuitous ARPs that both
// implementations send 5 s after becoming master (garp_master_delay).
const afterTakeover = 7 * time.Second

type options struct {
	instances, vips int
	rest, limit     time.Duration
	scrape          time.Duration
	bin, markdown   string
	prefix          string
	keep, profile   bool
	crash           bool
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.IntVar(&o.instances, "instances", 1000, "vrrp_instances in the file")
	fs.IntVar(&o.vips, "vips", 10000, "VIPs in the file, shared out over the instances")
	fs.DurationVar(&o.rest, "rest", 30*time.Second, "window over which CPU at rest is measured")
	fs.DurationVar(&o.limit, "limit", 5*time.Minute, "how long an implementation may take to hold every VIP")
	fs.StringVar(&o.bin, "vipstack", "", "vipstack binary to run (default: build ./cmd/vipstack)")
	fs.StringVar(&o.markdown, "markdown", "", "write the results into the scale block of this Markdown `file` (docs/benchmarks.md)")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (the file, the logs and each process's smaps at the end of the rest window)")
	fs.StringVar(&o.prefix, "prefix", "vvt", "prefix of the network namespace's name (and of the work directory's)")
	fs.BoolVar(&o.crash, "crash", true, "after the rest window, kill -9 the process running the VRRP instances and time until every VIP is held again")
	fs.DurationVar(&o.scrape, "scrape", 15*time.Second, "after the rest window, measure vipstack (run with --metrics-addr) over a second window of -rest with its /metrics scraped at this interval, as Prometheus would (0: no second window)")
	fs.BoolVar(&o.profile, "profile", false, "run vipstack with --pprof-addr and save its heap and goroutine profiles at the end of the rest window in the work directory (implies -keep)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if !validPrefix(o.prefix) {
		fmt.Fprintf(stderr, "scale: -prefix %q: want 1 to 6 letters or digits (a namespace name part)\n", o.prefix)
		return 2
	}
	o.keep = o.keep || o.profile
	text, err := conf(o.instances, o.vips)
	if err != nil {
		fmt.Fprintf(stderr, "scale: %v\n", err)
		return 2
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "scale: needs root (network namespaces): run it as sudo go run ./bench/scale")
		return 1
	}
	if _, err := exec.LookPath("keepalived"); err != nil {
		fmt.Fprintf(stderr, "scale: keepalived is not installed: %v\n", err)
		return 1
	}
	work, err := os.MkdirTemp("", o.prefix+"-scale-")
	if err != nil {
		fmt.Fprintf(stderr, "scale: %v\n", err)
		return 1
	}
	defer func() {
		if o.keep {
			fmt.Fprintf(stdout, "work directory kept in %s\n", work)
			return
		}
		_ = os.RemoveAll(work)
	}()
	if o.bin == "" {
		if o.bin, err = peers.BuildVipstack(work); err != nil {
			fmt.Fprintf(stderr, "scale: build vipstack: %v\n", err)
			return 1
		}
	}
	path := filepath.Join(work, "keepalived.conf")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		fmt.Fprintf(stderr, "scale: %v\n", err)
		return 1
	}
	facts := benchdoc.Collect("./bench/scale", args, benchdoc.FirstLine("keepalived", "--version"))
	fmt.Fprintf(stdout, "bench/scale: %s\n", facts)

	var topo topoHolder
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigc)
	go func() {
		s := <-sigc
		fmt.Fprintf(stderr, "\nscale: %v: stopping and removing the namespace\n", s)
		topo.close()
		os.Exit(130)
	}()
	res := map[string]result{}
	for _, impl := range []string{"keepalived", "vipstack"} {
		r, err := measure(impl, o, path, work, &topo, stdout)
		if err != nil {
			r.Err = err.Error()
			fmt.Fprintf(stdout, "%s: %v\n", impl, err)
		}
		res[impl] = r
	}
	rep := report(res["keepalived"], res["vipstack"], o.instances, o.vips, o.rest, o.scrape)
	fmt.Fprintln(stdout)
	_ = rep.Text(stdout)
	if o.markdown != "" {
		if err := benchdoc.Write(o.markdown, "scale", facts, rep); err != nil {
			fmt.Fprintf(stdout, "\nscale: -markdown: %v\n", err)
		} else {
			fmt.Fprintf(stdout, "\nwrote the results into %s\n", o.markdown)
		}
	}
	return 0
}

// topoHolder is the namespace in use, closed by the signal handler too.
type topoHolder struct {
	mu sync.Mutex
	t  *testnet.Topology
}

func (h *topoHolder) set(t *testnet.Topology) {
	h.mu.Lock()
	h.t = t
	h.mu.Unlock()
}

func (h *topoHolder) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.t != nil {
		h.t.Close()
		h.t = nil
	}
}

// measure runs impl on the file at path in a fresh namespace and returns
// its figures.
func measure(impl string, o options, path, work string, holder *topoHolder, out io.Writer) (result, error) {
	r := result{Impl: impl}
	topo, err := testnet.Build(testnet.Options{Hosts: 1, Prefix: o.prefix})
	if err != nil {
		return r, fmt.Errorf("namespace: %w", err)
	}
	holder.set(topo)
	defer holder.close()
	h := topo.Hosts[0]
	for i := range links(o.instances) {
		for _, c := range [][]string{
			{"link", "add", linkName(i), "type", "veth", "peer", "name", linkName(i) + "p"},
			{"link", "set", linkName(i) + "p", "up"},
			{"link", "set", linkName(i), "up"},
			{"addr", "add", linkAddr(i).String(), "dev", linkName(i)},
		} {
			if msg, err := h.Run("ip", c...); err != nil {
				return r, fmt.Errorf("ip %s: %w: %s", strings.Join(c, " "), err, strings.TrimSpace(msg))
			}
		}
	}
	dir := filepath.Join(work, "run-"+impl)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, err
	}
	// Each starts as on a freshly booted node (procfs.EvictPageCache): a
	// binary go build has just written sits in the page cache in large
	// folios, which a fault maps whole, and its processes' file-backed
	// RSS read up to twice a deployed binary's.
	exe := o.bin
	if impl == "keepalived" {
		exe, _ = exec.LookPath("keepalived")
	}
	if err := procfs.EvictPageCache(exe); err != nil {
		return r, err
	}
	var cmd *exec.Cmd
	if impl == "keepalived" {
		cmd = h.Command("keepalived", "-n", "-l", "--vrrp", "-f", path,
			"-p", filepath.Join(dir, "keepalived.pid"), "-r", filepath.Join(dir, "vrrp.pid"))
	} else {
		args := []string{"vrrp", "-f", path, "--state-dir", dir}
		if o.profile {
			args = append(args, "--pprof-addr", pprofAddr)
		}
		if o.scrape > 0 {
			args = append(args, "--metrics-addr", metricsAddr)
		}
		cmd = h.Command(o.bin, args...)
	}
	logf, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		return r, err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	start := time.Now()
	if err := h.Start(cmd); err != nil {
		return r, err
	}
	held := 0
	for {
		if held, err = countVIPs(h); err != nil {
			return r, err
		}
		if held == o.vips {
			break
		}
		if time.Since(start) > o.limit {
			return r, fmt.Errorf("only %d of %d VIPs held %v after the start", held, o.vips, o.limit)
		}
		time.Sleep(100 * time.Millisecond) // polling the interfaces
	}
	r.Startup = time.Since(start)
	fmt.Fprintf(out, "%s: every VIP held %.2f s after the start; measuring at rest\n", impl, r.Startup.Seconds())
	time.Sleep(afterTakeover) // the second gratuitous ARP burst
	pids := procfs.Group(cmd.Process.Pid)
	if len(pids) == 0 {
		return r, errors.New("the process group is gone")
	}
	if r.CPU, pids, err = window(cmd.Process.Pid, o.rest, func(time.Time) error { return nil }); err != nil {
		return r, err
	}
	r.RSS, r.PSS = procfs.MemMiB(pids)
	r.Procs = describeProcs(pids)
	if o.keep {
		saveSmaps(pids, dir, out)
	}
	if impl == "vipstack" && o.profile {
		saveProfiles(h, dir, out)
	}
	if held, err := countVIPs(h); err != nil || held != o.vips {
		return r, fmt.Errorf("at the end of the rest window %d of %d VIPs are held (%v)", held, o.vips, err)
	}
	fmt.Fprintf(out, "%s: CPU at rest %.2f%%, RSS %.1f MiB, PSS %.1f MiB (%d processes: %s)\n", impl, r.CPU, r.RSS, r.PSS, len(pids), strings.Join(r.Procs, "; "))
	if impl == "vipstack" && o.scrape > 0 {
		if r.Scraped, err = scraped(h, cmd.Process.Pid, o); err != nil {
			return r, fmt.Errorf("scraping /metrics: %w", err)
		}
		fmt.Fprintf(out, "%s: with %d scrapes of /metrics (%s) over %v: CPU %.2f%%, RSS %.1f MiB (%s)\n", impl, r.Scraped.N, r.Scraped.about(), o.rest, r.Scraped.CPU, r.Scraped.RSS, strings.Join(r.Scraped.Procs, "; "))
	}
	if o.crash {
		if r.Restart, err = restartAfterKill(h, cmd.Process.Pid, o); err != nil {
			return r, fmt.Errorf("after kill -9 of the VRRP process: %w", err)
		}
		fmt.Fprintf(out, "%s: kill -9 of the VRRP process: every VIP held again %.2f s later\n", impl, r.Restart.Seconds())
	}
	return r, nil
}

// scraped measures the process group of leader over a window of o.rest
// with its /metrics fetched every o.scrape from the start of the window,
// gzipped as Prometheus asks for it.
func scraped(h *testnet.Host, leader int, o options) (scrapes, error) {
	var s scrapes
	cpu, pids, err := window(leader, o.rest, func(end time.Time) error {
		for next := time.Now(); next.Before(end); next = next.Add(o.scrape) {
			time.Sleep(time.Until(next))
			msg, err := h.Run("curl", "-sS", "-H", "Accept-Encoding: gzip", "-o", "/dev/null", "-w", "%{size_download} %{time_total}", "http://"+metricsAddr+"/metrics")
			if err != nil {
				return fmt.Errorf("%w: %s", err, strings.TrimSpace(msg))
			}
			var size int
			var secs float64
			if _, err := fmt.Sscan(msg, &size, &secs); err != nil {
				return fmt.Errorf("curl printed %q: %w", msg, err)
			}
			s.N, s.Bytes, s.Slowest = s.N+1, size, max(s.Slowest, time.Duration(secs*float64(time.Second)))
		}
		return nil
	})
	if err != nil {
		return s, err
	}
	s.CPU = cpu
	s.RSS, _ = procfs.MemMiB(pids)
	s.Procs = describeProcs(pids)
	return s, nil
}

// window measures the CPU of leader's process group, in percent of one
// CPU, over d, while during runs (it is given the window's end, and the
// window lasts until then however soon it returns); it returns the
// group's processes at the end.
func window(leader int, d time.Duration, during func(end time.Time) error) (float64, []int, error) {
	pids := procfs.Group(leader)
	before, t0 := procfs.CPUTicks(pids), time.Now()
	end := t0.Add(d)
	if err := during(end); err != nil {
		return 0, nil, err
	}
	time.Sleep(time.Until(end)) // the rest of the measurement window
	pids = procfs.Group(leader)
	after, t1 := procfs.CPUTicks(pids), time.Now()
	return float64(after-before) / procfs.ClockTicks / t1.Sub(t0).Seconds() * 100, pids, nil
}

// restartAfterKill kills the process that runs the VRRP instances, the
// child of the one the bench started (keepalived's VRRP child, which its
// parent starts again; vipstack's engine, whose supervisor releases what
// it held and starts it again), and returns how long until every VIP is
// held again after they were released.
func restartAfterKill(h *testnet.Host, leader int, o options) (time.Duration, error) {
	victim := procfs.ChildOf(leader)
	if victim == 0 {
		return 0, fmt.Errorf("process %d has no child to kill", leader)
	}
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		return 0, fmt.Errorf("kill -9 %d: %w", victim, err)
	}
	start, least := time.Now(), o.vips
	for {
		held, err := countVIPs(h)
		if err != nil {
			return 0, err
		}
		least = min(least, held)
		if least < o.vips && held == o.vips {
			return time.Since(start), nil
		}
		if time.Since(start) > o.limit {
			return 0, fmt.Errorf("%d of %d VIPs held %v after the kill (fewest seen: %d)", held, o.vips, o.limit, least)
		}
		time.Sleep(100 * time.Millisecond) // polling the interfaces
	}
}

// countVIPs counts the VIPs (198.19.0.0/16) on h's interfaces. A dump
// that addresses being added interrupted is read again.
func countVIPs(h *testnet.Host) (int, error) {
	pool := netip.MustParsePrefix("198.19.0.0/16")
	n := 0
	err := h.Do(func() error {
		addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
		for try := 0; errors.Is(err, netlink.ErrDumpInterrupted) && try < 100; try++ {
			time.Sleep(10 * time.Millisecond) // let the additions settle
			addrs, err = netlink.AddrList(nil, netlink.FAMILY_V4)
		}
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if ip, ok := netip.AddrFromSlice(a.IP.To4()); ok && pool.Contains(ip) {
				n++
			}
		}
		return nil
	})
	return n, err
}

// pprofAddr is where -profile has vipstack serve its profiles, in the
// bench's namespace.
const pprofAddr = "127.0.0.1:6061"

// metricsAddr is where -scrape has vipstack serve its metrics, in the
// bench's namespace.
const metricsAddr = "127.0.0.1:6062"

// validPrefix reports whether p may start a namespace's name.
func validPrefix(p string) bool {
	if p == "" || len(p) > 6 {
		return false
	}
	for _, c := range p {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// describeProcs says, for each of pids, its name and its RSS, anonymous
// and file-backed, and its PSS, in MiB, from smaps_rollup.
func describeProcs(pids []int) []string {
	var out []string
	for _, pid := range pids {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup"))
		if err != nil {
			continue // gone
		}
		kib := map[string]float64{}
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				n, _ := strconv.ParseFloat(f[1], 64)
				kib[f[0]] = n
			}
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
		out = append(out, fmt.Sprintf("%s %d: RSS %.1f (anon %.1f, file %.1f), PSS %.1f", strings.TrimSpace(string(comm)), pid,
			kib["Rss:"]/1024, kib["Anonymous:"]/1024, (kib["Rss:"]-kib["Anonymous:"])/1024, kib["Pss:"]/1024))
	}
	return out
}

// saveSmaps copies /proc/PID/smaps of each of pids into dir as
// smaps.PID, where a kept run's reader can see which mappings hold the
// resident set.
func saveSmaps(pids []int, dir string, out io.Writer) {
	for _, pid := range pids {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "smaps"))
		if err != nil {
			continue // gone
		}
		file := filepath.Join(dir, "smaps."+strconv.Itoa(pid))
		if err := os.WriteFile(file, b, 0o644); err != nil {
			fmt.Fprintf(out, "smaps of %d: %v\n", pid, err)
		}
	}
}

// saveProfiles fetches vipstack's heap profile and its goroutines from
// inside h (curl), into dir, and says where they are and how many
// goroutines run.
func saveProfiles(h *testnet.Host, dir string, out io.Writer) {
	for _, p := range []struct{ path, file string }{
		{"/debug/pprof/heap", "heap.pprof"},
		{"/debug/pprof/goroutine?debug=1", "goroutines.txt"},
		{"/debug/pprof/allocs", "allocs.pprof"},
		{"/debug/pprof/heap?debug=1", "heap.txt"}, // ends with runtime.MemStats
	} {
		file := filepath.Join(dir, p.file)
		if msg, err := h.Run("curl", "-sS", "-o", file, "http://"+pprofAddr+p.path); err != nil {
			fmt.Fprintf(out, "vipstack: profile %s: %v: %s\n", p.path, err, strings.TrimSpace(msg))
			continue
		}
		fmt.Fprintf(out, "vipstack: profile %s saved in %s\n", p.path, file)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "goroutines.txt")); err == nil {
		first, _, _ := strings.Cut(string(b), "\n")
		fmt.Fprintf(out, "vipstack: %s\n", first)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "heap.txt")); err == nil {
		var stats []string
		for _, l := range strings.Split(string(b), "\n") {
			for _, k := range []string{"HeapAlloc", "HeapInuse", "HeapIdle", "HeapReleased", "Stack", "MSpan", "GCSys", "OtherSys", "NextGC", "NumGC"} {
				if strings.HasPrefix(l, "# "+k+" = ") {
					stats = append(stats, strings.TrimPrefix(l, "# "))
				}
			}
		}
		fmt.Fprintf(out, "vipstack: runtime.MemStats: %s\n", strings.Join(stats, ", "))
	}
}
