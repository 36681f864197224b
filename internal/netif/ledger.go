package netif

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Ledger records, in a small file, every VIP this process might hold. The
// caller records a VIP (Append, or Save of a list holding it) BEFORE adding
// the address and drops the entry (Save of a list without it) after
// DelVIP, so that whatever a crash leaves configured is in the file. The
// format is one VIP per line, as VIP.String writes it ("198.18.0.100/32
// dev eth0 label eth0:vip"); blank lines and lines starting with '#' are
// ignored, and a VIP listed twice is one entry (Append adds lines to the
// list a Save wrote).
//
// A Ledger has no lock: one process owns one path.
type Ledger struct{ Path string }

const ledgerHeader = "# vipstack VIP ledger: addresses this process may hold; a new start removes them.\n"

// Load reads the ledger. A missing file is an empty ledger.
func (l Ledger) Load() ([]VIP, error) {
	b, err := os.ReadFile(l.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load ledger: %w", err)
	}
	lines := strings.Split(string(b), "\n")
	var vips []VIP
	seen := map[string]bool{}
	for i, line := range lines {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := ParseVIP(line)
		if err != nil && i == len(lines)-1 {
			// The last line, with no newline, cut short: an Append the
			// process did not finish, so its addresses were never added.
			break
		}
		if err != nil {
			return nil, fmt.Errorf("load ledger: %s:%d: %w", l.Path, i+1, err)
		}
		if k := v.String(); !seen[k] {
			seen[k] = true
			vips = append(vips, v)
		}
	}
	return vips, nil
}

// Save replaces the ledger with vips atomically: it writes a temporary file
// in the same directory and renames it over Path, so a crash of the process
// leaves either the old or the new ledger (see writeAtomic).
func (l Ledger) Save(vips []VIP) error {
	var b strings.Builder
	b.WriteString(ledgerHeader)
	for i, v := range vips {
		if err := v.Validate(); err != nil {
			return fmt.Errorf("save ledger %s: entry %d: %w", l.Path, i, err)
		}
		b.WriteString(v.String())
		b.WriteByte('\n')
	}
	if err := writeAtomic(l.Path, []byte(b.String())); err != nil {
		return fmt.Errorf("save ledger: %w", err)
	}
	return nil
}

// Append adds vips to the ledger, creating it if missing: one write of
// their lines at the end of the file, without rewriting the entries on
// file (a node taking a thousand instances at start records each
// instance's VIPs as it takes them; a Save of the whole list each time
// made the start quadratic: bench/scale). A write cut short by a crash
// leaves a last line that Load skips.
func (l Ledger) Append(vips []VIP) error {
	if len(vips) == 0 {
		return nil
	}
	var b strings.Builder
	for i, v := range vips {
		if err := v.Validate(); err != nil {
			return fmt.Errorf("append to ledger %s: entry %d: %w", l.Path, i, err)
		}
		b.WriteString(v.String())
		b.WriteByte('\n')
	}
	f, err := os.OpenFile(l.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("append to ledger: %w", err)
	}
	text := b.String()
	if fi, err := f.Stat(); err == nil && fi.Size() == 0 {
		text = ledgerHeader + text
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return fmt.Errorf("append to ledger: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("append to ledger: %w", err)
	}
	return nil
}

// writeAtomic replaces path with data through a temporary file and a
// rename, without fsync. The ledgers record kernel state (addresses, VMAC
// links) for the next start after a crash of the process; a written page
// outlives the process without fsync, and what a power loss or a kernel
// crash might tear, the kernel state, is gone with it (a ledger that does
// not read back is a warning at start; removePresentVIPs still runs). The
// fsyncs, two per save, sat between an instance's Master_Down timer and
// its first advertisement: 11 ms median, 60 ms p90, 176 ms at worst on
// this 2-CPU machine under load, against VRRPv3's 10 ms advert interval
// (bench/fastvrrp).
func writeAtomic(path string, data []byte) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Sweep removes from the system every VIP recorded in the ledger and empties
// the ledger. It returns the VIPs that were configured and are now removed;
// entries already gone (or whose interface is gone) are dropped silently.
// Entries it failed to remove stay in the ledger and their errors are
// returned joined.
func (h *Handle) Sweep(l Ledger) ([]VIP, error) { return h.SweepExcept(l, nil) }

// SweepExcept is Sweep leaving the entries keep reports true for on the
// system and in the ledger (addresses a predecessor handed over).
func (h *Handle) SweepExcept(l Ledger, keep func(VIP) bool) ([]VIP, error) {
	vips, err := l.Load()
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	var removed, kept, gone []VIP
	var errs []error
	for _, v := range vips {
		switch err := v.Validate(); {
		case err != nil:
			kept = append(kept, v)
			errs = append(errs, fmt.Errorf("sweep %s: %w", v, err))
		case keep != nil && keep(v):
			kept = append(kept, v)
		default:
			gone = append(gone, v)
		}
	}
	// One dump of the addresses for the whole ledger: a HasVIP per entry
	// listed the interface's addresses for each, 10,000 x 2,500 at
	// bench/scale's size, a minute of work that outlived the crash
	// clean-up's 30 s.
	present, err := h.Present(gone)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	for i, v := range gone {
		if !present[i] {
			continue
		}
		if err := h.DelVIP(v); err != nil {
			kept = append(kept, v)
			errs = append(errs, fmt.Errorf("sweep %s: %w", v, err))
			continue
		}
		removed = append(removed, v)
	}
	if len(vips) > 0 || len(kept) > 0 {
		if err := l.Save(kept); err != nil {
			errs = append(errs, fmt.Errorf("sweep: %w", err))
		}
	}
	return removed, errors.Join(errs...)
}

// LedgerIn is the ledger NAME-NS.vips in dir, made if missing: NS names
// the network namespace of the process, so that processes in different
// namespaces on one host never share a ledger, and name says whose it is
// ("vrrp", "k8s-agent", "ipfailover-POOL"), any character but a letter,
// a digit, '-' or '_' replaced by '_'.
func LedgerIn(dir, name string) (Ledger, error) {
	ns, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		ns = "net"
	}
	ns = strings.NewReplacer(":", "", "[", "-", "]", "").Replace(ns)
	name = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Ledger{}, fmt.Errorf("state directory: %w", err)
	}
	return Ledger{Path: filepath.Join(dir, name+"-"+ns+".vips")}, nil
}
