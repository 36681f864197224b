package lb

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestManyMessagesThenDataWithFIN: after several request/answer rounds,
// the server answers the last request and closes at once, so its answer
// and FIN arrive together. The client must get the answer and then the
// end of the connection: a relay that took the short read of the answer
// as "drained" although the FIN had been reported would wait for a
// readiness event the consumed FIN never sends.
func TestManyMessagesThenDataWithFIN(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte("re: " + line))
					if line == "bye\n" {
						return // the answer and the FIN leave together
					}
				}
			}()
		}
	}()
	l := newLB(t, fakeClock(), tcpConfig(lbconfig.RoundRobin, srv("s", &backend{addr: addrPort(t, ln.Addr())})))
	for round := range 3 {
		cl := dial(t, l, "fe")
		for i := range 5 {
			msg := fmt.Sprintf("m%d\n", i)
			cl.Write([]byte(msg))
			got, err := cl.r.ReadString('\n')
			if err != nil || got != "re: "+msg {
				t.Fatalf("round %d message %d: got %q, %v", round, i, got, err)
			}
		}
		cl.Write([]byte("bye\n"))
		rest, err := io.ReadAll(cl.r)
		if err != nil || string(rest) != "re: bye\n" {
			t.Fatalf("round %d: after bye got %q, %v; want the answer then end of file", round, rest, err)
		}
		cl.Close()
	}
}
