package engine

import (
	"slices"
	"strings"
	"sync"

	"github.com/vipstack/vipstack/internal/netif"
)

// ledgerWriter writes the ledger for the loop. A list that adds a VIP is
// written at once (now), because the record must be on file before the
// address is on the interface; a list that only drops entries may be
// written later, off the loop (later), because an entry left a little
// longer costs a crash only a needless removal. A list equal to the one on
// file is not written. Writes are serialized and the newest list wins: a
// background write older than the last one done is dropped.
//
// A write is a file created and renamed over the ledger; on a disk file
// system under load that took 100-700 ms (bench/chaos, docs/reliability.md
// finding 8), the whole loop and every master's advertisements waiting.
type ledgerWriter struct {
	ledger netif.Ledger

	mu      sync.Mutex // guards seq and the pending list
	seq     uint64     // the sequence number of the newest list handed in
	pending []netif.VIP
	pendSeq uint64
	wake    chan struct{}

	wmu     sync.Mutex // held while writing; guards the fields below
	written uint64     // the sequence number of the list on file
	onFile  string     // that list's key; valid when known
	known   bool
}

func newLedgerWriter(l netif.Ledger) *ledgerWriter {
	return &ledgerWriter{ledger: l, wake: make(chan struct{}, 1)}
}

// now writes vips before it returns (unless the file already says so).
func (w *ledgerWriter) now(vips []netif.VIP) error {
	w.mu.Lock()
	w.seq++
	s := w.seq
	w.mu.Unlock()
	w.wmu.Lock()
	defer w.wmu.Unlock()
	return w.writeLocked(s, vips)
}

// later hands vips to run, which writes it unless a newer list is written
// first.
func (w *ledgerWriter) later(vips []netif.VIP) {
	w.mu.Lock()
	w.seq++
	w.pending, w.pendSeq = slices.Clone(vips), w.seq
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run writes what later hands in until stop is closed; failures go to
// fail. A list still pending at stop is written before run returns.
func (w *ledgerWriter) run(stop <-chan struct{}, fail func(error)) {
	for {
		select {
		case <-w.wake:
		case <-stop:
			w.flush(fail)
			return
		}
		w.flush(fail)
	}
}

func (w *ledgerWriter) flush(fail func(error)) {
	w.mu.Lock()
	vips, s := w.pending, w.pendSeq
	w.pending, w.pendSeq = nil, 0
	w.mu.Unlock()
	if s == 0 {
		return
	}
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if err := w.writeLocked(s, vips); err != nil {
		fail(err)
	}
}

func (w *ledgerWriter) writeLocked(s uint64, vips []netif.VIP) error {
	if s <= w.written {
		return nil // a newer list is on file
	}
	k := ledgerKey(vips)
	if w.known && k == w.onFile {
		w.written = s
		return nil
	}
	if err := w.ledger.Save(vips); err != nil {
		w.known = false
		return err
	}
	w.written, w.onFile, w.known = s, k, true
	return nil
}

// ledgerKey identifies a list whatever its order.
func ledgerKey(vips []netif.VIP) string {
	lines := make([]string, len(vips))
	for i, v := range vips {
		lines[i] = v.String()
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
