package engine

import (
	"slices"
	"sync"

	"github.com/vipstack/vipstack/internal/netif"
)

// ledgerWriter writes the ledger for the loop. VIPs about to be added are
// recorded at once (add), because the record must be on file before the
// address is on the interface: the ones not on file yet are appended, so
// that a take costs a line per VIP however many the node holds. A list
// that only drops entries may be written later, off the loop (later),
// because an entry left a little longer costs a crash only a needless
// removal. A list equal to the one on file is not written. Writes are
// serialized and the newest wins: a background list older than the last
// write done is dropped.
//
// A list is written as a file created and renamed over the ledger; on a
// disk file system under load that took 100-700 ms (bench/chaos,
// docs/reliability.md finding 8), and at a node's start a list of 10,000
// VIPs written once per instance taking over kept the loop 19 s
// (bench/scale), the whole loop and every master's advertisements waiting.
type ledgerWriter struct {
	ledger netif.Ledger

	mu      sync.Mutex // guards seq and the pending list
	seq     uint64     // the sequence number of the newest write handed in
	pending []netif.VIP
	pendSeq uint64
	wake    chan struct{}

	wmu     sync.Mutex // held while writing; guards the fields below
	written uint64     // the sequence number of the last write done
	// onFile holds the entries on file (by VIP.String), all of them when
	// exact, otherwise some: an Append before the first list was written
	// adds to entries this writer never saw.
	onFile lineSet
	exact  bool
}

func newLedgerWriter(l netif.Ledger) *ledgerWriter {
	return &ledgerWriter{ledger: l, wake: make(chan struct{}, 1)}
}

func (w *ledgerWriter) next() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	return w.seq
}

// add records vips before it returns, appending those not on file. A
// list handed to later before it is dropped: it may lack them.
func (w *ledgerWriter) add(vips []netif.VIP) error {
	s := w.next()
	w.wmu.Lock()
	defer w.wmu.Unlock()
	var missing []netif.VIP
	var buf [96]byte
	for _, v := range vips {
		if !w.onFile.hasBytes(v.Append(buf[:0])) { // no allocation
			if missing == nil {
				// At its largest size at once: an instance's ten VIPs
				// appended one by one made about 4 KB of garbage, 3.9 MB
				// while 1,000 instances took over.
				missing = make([]netif.VIP, 0, len(vips))
			}
			missing = append(missing, v)
		}
	}
	if err := w.ledger.Append(missing); err != nil {
		return err
	}
	for _, k := range ledgerKeys(missing) {
		w.onFile.add(k)
	}
	w.written = max(w.written, s)
	return nil
}

// now writes the list vips before it returns (unless the file already
// says so).
func (w *ledgerWriter) now(vips []netif.VIP) error {
	s := w.next()
	w.wmu.Lock()
	defer w.wmu.Unlock()
	return w.writeLocked(s, vips)
}

// later hands vips to run, which writes it unless a newer write is done
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
		return nil // a newer write is done
	}
	keys := ledgerKeys(vips)
	if w.exact && w.onFile.equal(keys) {
		w.written = s
		return nil
	}
	if err := w.ledger.Save(vips); err != nil {
		// What is on file now is not known; what this writer appended
		// before is, and stays so.
		w.exact = false
		return err
	}
	w.written, w.onFile, w.exact = s, lineSetOf(keys), true
	return nil
}

// ledgerKeys returns each VIP's ledger line (VIP.String), the keys of
// onFile, as parts of one string: a string each was 10,000 small objects
// kept by a node of 10,000 VIPs, made while its instances took over among
// the garbage of the start (docs/design/memory.md).
func ledgerKeys(vips []netif.VIP) []string {
	return textParts(len(vips), func(b []byte, i int) []byte { return vips[i].Append(b) })
}

// textParts returns n texts, the i-th what appendText appends for i, as
// parts of one string: one object kept for them all, where a string each
// was n small objects, made among whatever garbage was being made then
// and keeping its span of the heap (docs/design/memory.md).
func textParts(n int, appendText func(b []byte, i int) []byte) []string {
	if n == 0 {
		return nil
	}
	var buf []byte
	ends := make([]int, n)
	for i := range n {
		buf = appendText(buf, i)
		ends[i] = len(buf)
	}
	all := string(buf)
	out := make([]string, n)
	from := 0
	for i, end := range ends {
		out[i], from = all[from:end], end
	}
	return out
}

// prefixTexts returns each VIP's prefix as text (Prefix.String), as
// parts of one string.
func prefixTexts(vips []vipRef) []string {
	return textParts(len(vips), func(b []byte, i int) []byte { return vips[i].Prefix.AppendTo(b) })
}
