package dns

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// benchMix is bench/dns's query mix (testdata/bench-queries.txt, one
// "NAME TYPE" a line; bench/dns's test checks it is the bench's): every
// record kind the cluster zone answers, NODATA and a short name included.
func benchMix(b *testing.B) []string {
	raw, err := os.ReadFile("testdata/bench-queries.txt")
	if err != nil {
		b.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(raw)), "\n")
}

// BenchmarkQuery is the per-query path of the embedded CoreDNS, one query
// at a time over loopback UDP as bench/dns's one-at-a-time phase asks
// them: the client's send, the server's read, CoreDNS's server and plugin
// chain, the answer's packing and send, and the client's read. It runs
// bench/dns's two Corefiles (testdata/bench-*.Corefile): clusterdns, and
// the seeds' template + hosts giving the same answers. Allocations are
// the client's and the server's together (one process).
func BenchmarkQuery(b *testing.B) {
	mix := benchMix(b)
	msgs := make([]*dns.Msg, len(mix))
	for i, q := range mix {
		f := strings.Fields(q)
		msgs[i] = new(dns.Msg).SetQuestion(dns.Fqdn(f[0]), dns.StringToType[f[1]])
	}
	for _, name := range []string{"clusterdns", "template"} {
		b.Run(name, func(b *testing.B) {
			corefile, err := os.ReadFile("testdata/bench-" + name + ".Corefile")
			if err != nil {
				b.Fatal(err)
			}
			c, err := net.Dial("udp", start(b, string(corefile)))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			conn := &dns.Conn{Conn: c}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				m := msgs[i%len(msgs)]
				i++
				m.Id = dns.Id()
				conn.SetDeadline(time.Now().Add(5 * time.Second))
				if err := conn.WriteMsg(m); err != nil {
					b.Fatal(err)
				}
				for {
					r, err := conn.ReadMsg()
					if err != nil {
						b.Fatalf("%s: %v", mix[(i-1)%len(msgs)], err)
					}
					if r.Id == m.Id {
						if r.Rcode != dns.RcodeSuccess {
							b.Fatalf("%s: %s", mix[(i-1)%len(msgs)], dns.RcodeToString[r.Rcode])
						}
						break
					}
				}
			}
		})
	}
}
