package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestBuffer writes from several goroutines at once (run with -race) and
// checks that every write arrives, and that Limit drops writes past it.
func TestBuffer(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				b.Write([]byte("x"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if got := len(b.String()); got != 800 {
		t.Fatalf("%d bytes after 800 one-byte writes", got)
	}
	l := Buffer{Limit: 10}
	for range 5 {
		if n, err := l.Write([]byte("abcd")); n != 4 || err != nil {
			t.Fatalf("Write = %d, %v; want 4, nil even past the limit", n, err)
		}
	}
	if got := l.String(); got != strings.Repeat("abcd", 3) {
		t.Fatalf("limited buffer holds %q; want the writes up to the first past 10 bytes", got)
	}
}
