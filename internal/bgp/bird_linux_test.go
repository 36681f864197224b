//go:build linux

package bgp

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"testing"
)

// birdConf is BIRD 2's configuration for the lab's nodes: one protocol
// per node and family, ECMP into the kernel (merge paths), BFD on the
// nodes in bfd, MD5 on those in md5, and a trace of routes and states on
// stderr for the graceful stop check.
func birdConf(nodes int, bfd, md5 map[int]bool) string {
	var b strings.Builder
	b.WriteString(`router id 198.18.100.1;
log stderr all;
debug protocols { states, routes, events };
protocol device { scan time 10; }
protocol kernel kernel4 { ipv4 { export where source = RTS_BGP; }; merge paths on; }
protocol kernel kernel6 { ipv6 { export where source = RTS_BGP; }; merge paths on; }
protocol bfd { interface "*" { min rx interval 100 ms; min tx interval 100 ms; multiplier 3; }; }
`)
	for i := 1; i <= nodes; i++ {
		for j, fam := range []string{"ipv4", "ipv6"} {
			a := []netip.Addr{subnetV4(i, 10), subnetV6(i, 0x10)}[j]
			src := []netip.Addr{subnetV4(i, 1), subnetV6(i, 1)}[j]
			fmt.Fprintf(&b, "protocol bgp %s {\n local %v as %d;\n neighbor %v as %d;\n hold time 30;\n keepalive time 10;\n graceful restart on;\n %s { import all; export none; };\n",
				birdProto(a), src, routerASN, a, nodeASN, fam)
			if bfd[i] {
				b.WriteString(" bfd on;\n")
			}
			if md5[i] {
				fmt.Fprintf(&b, " password %q;\n", md5Password)
			}
			b.WriteString("}\n")
		}
	}
	return b.String()
}

// reset is `birdc restart PROTO`: BIRD ends the session with a Cease,
// administrative reset, and opens it again.
func (b *bird) reset(a netip.Addr) error {
	_, err := b.birdc("restart " + birdProto(a))
	return err
}

// birdProto names the protocol of the node at a: n1v4, n1v6, ...
func birdProto(a netip.Addr) string {
	if a.Is4() {
		return fmt.Sprintf("n%dv4", a.As4()[2])
	}
	return fmt.Sprintf("n%dv6", a.As16()[3])
}

// TestBIRD runs the suite against BIRD 2 (its own BGP and BFD).
func TestBIRD(t *testing.T) {
	requireBIRD(t)
	l := newLab(t, 3)
	runSuite(t, l, l.startBIRD(t, birdConf(3, labBFD, labMD5)))
}

func (b *bird) established(a netip.Addr) error {
	out, err := b.birdc("show protocols all " + birdProto(a))
	if err != nil {
		return err
	}
	if !strings.Contains(out, "BGP state:          Established") {
		return fmt.Errorf("bird: %s is not established:\n%s", birdProto(a), out)
	}
	return nil
}

func (b *bird) attributes() error {
	out, err := b.birdc("show route all " + vip4.String() + "/32")
	if err != nil {
		return err
	}
	if !strings.Contains(out, "BGP.community: (64512,100)") || !strings.Contains(out, "BGP.large_community: (64512, 1, 1)") {
		return fmt.Errorf("bird's path to %v lacks community 64512:100 or large community 64512:1:1:\n%s", vip4, out)
	}
	return nil
}

// mark is how much bird has logged.
func (b *bird) mark(netip.Addr) (any, error) { return len(b.out.String()), nil }

// stopped: bird's route trace shows the route removed from the node's
// protocol before the NOTIFICATION it received.
func (b *bird) stopped(a netip.Addr, mark any) error {
	log := b.out.String()[mark.(int):]
	p := birdProto(a)
	removed := regexp.MustCompile(regexp.QuoteMeta(p+".ipv4 > removed ") + `(\[[a-z]+\] )?` + regexp.QuoteMeta(vip4.String()+"/32")).FindStringIndex(log)
	cease := strings.Index(log, p+": Received: ")
	switch {
	case removed == nil:
		return fmt.Errorf("bird logged no withdrawal of %v from %s during the stop:\n%s", vip4, p, log)
	case cease < 0:
		return fmt.Errorf("bird logged no NOTIFICATION from %s during the stop:\n%s", p, log)
	case cease < removed[0]:
		return fmt.Errorf("bird got %s's NOTIFICATION before its withdrawal:\n%s", p, log)
	}
	return nil
}

func (b *bird) heldForRestart(a netip.Addr) error {
	out, err := b.birdc("show protocols all " + birdProto(a))
	if err != nil {
		return err
	}
	if !strings.Contains(out, "Neighbor graceful restart active") {
		return fmt.Errorf("bird is not holding %s's routes for a graceful restart:\n%s", birdProto(a), out)
	}
	return nil
}

func (b *bird) restarted(a netip.Addr) error {
	out, err := b.birdc("show protocols all " + birdProto(a))
	if err != nil {
		return err
	}
	if strings.Contains(out, "Neighbor graceful restart active") {
		return fmt.Errorf("bird still holds %s's routes for a graceful restart:\n%s", birdProto(a), out)
	}
	return nil
}
