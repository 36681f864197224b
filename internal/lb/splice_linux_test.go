package lb

import (
	"crypto/rand"
	"crypto/sha256"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/lb/relay"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestSpliceCarriesBulk relays a request and then an answer through a
// real LB on loopback and checks, with relay.Spliced, which path each
// direction took: a direction whose reads fill the copy buffer (bulk)
// must carry nearly all of its bytes with splice(2), and a direction of
// the same connection with a short message must not splice. Every byte
// must arrive intact either way. Nothing a client sees depends on
// splice, so without this test a relay that never switched to it would
// pass every other test.
//
// The two directions are measured apart: the server answers only once
// the test has read the counter for the request. Each reading is taken
// after the receiver saw the end of file, which the relay passes on only
// after its last splice, so the count is complete.
func TestSpliceCarriesBulk(t *testing.T) {
	tests := []struct {
		name             string
		up, down         int  // bytes of the request and of the answer
		upBulk, downBulk bool // whether that direction should splice
	}{
		{name: "bulk request, small answer", up: 4 << 20, down: 100, upBulk: true},
		{name: "small request, bulk answer", up: 100, down: 4 << 20, downBulk: true},
		{name: "bulk both ways", up: 4 << 20, down: 4 << 20, upBulk: true, downBulk: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			request, answer := randomBytes(t, tc.up), randomBytes(t, tc.down)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			got := make(chan received, 1)
			goAhead := make(chan struct{})
			var once sync.Once
			answerNow := func() { once.Do(func() { close(goAhead) }) }
			t.Cleanup(answerNow) // a test that fails early lets the server go
			go serveOnce(ln, answer, got, goAhead)
			l := newLB(t, fakeClock(), tcpConfig(lbconfig.RoundRobin, srv("s", &backend{addr: addrPort(t, ln.Addr())})))

			cl := dial(t, l, "fe")
			before := relay.Spliced()
			if _, err := cl.Write(request); err != nil {
				t.Fatalf("writing the request: %v", err)
			}
			if err := cl.CloseWrite(); err != nil {
				t.Fatal(err)
			}
			var r received
			select {
			case r = <-got:
			case <-time.After(bound):
				t.Fatalf("the server received no request within %v", bound)
			}
			if r.err != nil {
				t.Fatalf("server reading the request: %v", r.err)
			}
			if r.n != len(request) || r.sum != sha256.Sum256(request) {
				t.Fatalf("the server received %d bytes with a different checksum, want the client's %d", r.n, len(request))
			}
			upSpliced := relay.Spliced() - before
			answerNow()

			before = relay.Spliced()
			back, err := io.ReadAll(cl)
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			if len(back) != len(answer) || sha256.Sum256(back) != sha256.Sum256(answer) {
				t.Fatalf("the client received %d bytes with a different checksum, want the server's %d", len(back), len(answer))
			}
			downSpliced := relay.Spliced() - before

			t.Logf("spliced: %d of %d up, %d of %d down", upSpliced, tc.up, downSpliced, tc.down)
			checkSpliced(t, "client to server", upSpliced, tc.up, tc.upBulk)
			checkSpliced(t, "server to client", downSpliced, tc.down, tc.downBulk)
		})
	}
}

// TestShortMessagesAreCopied: request/response traffic whose messages
// stay below the copy buffer never switches to splice(2), which costs
// more than a copy for them, however many rounds a connection makes.
// One round could not tell: the first read of a direction is copied
// even by a relay that switched to splice after any read.
func TestShortMessagesAreCopied(t *testing.T) {
	const rounds = 20
	tests := []struct {
		name string
		size int // bytes of each message, echoed back
	}{
		{name: "one byte", size: 1},
		{name: "a small request", size: 100},
		{name: "a page", size: 4 << 10},
		{name: "just under the copy buffer", size: relay.CopyBufSize - 1},
	}
	b := startBackend(t, "s")
	l := newLB(t, fakeClock(), tcpConfig(lbconfig.RoundRobin, srv("s", b)))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cl := dial(t, l, "fe")
			if g := cl.greeting(t); g != "s" {
				t.Fatalf("greeting %q, want s", g)
			}
			before := relay.Spliced()
			back := make([]byte, tc.size)
			for i := range rounds {
				msg := randomBytes(t, tc.size)
				if _, err := cl.Write(msg); err != nil {
					t.Fatalf("round %d: writing: %v", i, err)
				}
				if _, err := io.ReadFull(cl.r, back); err != nil {
					t.Fatalf("round %d: reading the echo: %v", i, err)
				}
				if sha256.Sum256(back) != sha256.Sum256(msg) {
					t.Fatalf("round %d: the echo of %d bytes differs from what was sent", i, tc.size)
				}
			}
			cl.CloseWrite()
			if rest, err := io.ReadAll(cl.r); err != nil || len(rest) != 0 {
				t.Fatalf("after the last round read %d bytes (%v), want the end of file", len(rest), err)
			}
			checkSpliced(t, "both ways", relay.Spliced()-before, 2*rounds*tc.size, false)
		})
	}
}

// checkSpliced fails the test unless a bulk direction spliced at least
// three quarters of its bytes, or a short one none. Only the reads before
// the first that fills the copy buffer are copied, normally one buffer's
// worth; the margin is for a sender the relay outpaces at the start.
func checkSpliced(t *testing.T, dir string, spliced uint64, size int, bulk bool) {
	t.Helper()
	switch {
	case bulk && spliced < uint64(size)*3/4:
		t.Errorf("%s: %d of %d bytes went through splice, want at least three quarters", dir, spliced, size)
	case !bulk && spliced != 0:
		t.Errorf("%s: %d of %d bytes went through splice, want none (messages below the %d-byte copy buffer are copied)", dir, spliced, size, relay.CopyBufSize)
	}
}

// received is what serveOnce read: its length and checksum.
type received struct {
	n   int
	sum [sha256.Size]byte
	err error
}

// serveOnce accepts one connection, reads it to the end of file, reports
// what it read and, once goAhead is closed, writes answer and closes.
func serveOnce(ln net.Listener, answer []byte, got chan<- received, goAhead <-chan struct{}) {
	c, err := ln.Accept()
	if err != nil {
		got <- received{err: err}
		return
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(bound))
	h := sha256.New()
	n, err := io.Copy(h, c)
	r := received{n: int(n), err: err}
	h.Sum(r.sum[:0])
	got <- r
	if err != nil {
		return
	}
	<-goAhead
	c.Write(answer)
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}
