package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mdlayher/packet"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/testnet"
)

const etherTypeARP = 0x0806

// capture watches the client's link: every ARP frame (gratuitous
// announcements and replies to our probes) and every VRRP packet.
type capture struct {
	arp  *packet.Conn
	vrrp *ipv4.PacketConn
	mac  net.HardwareAddr
	ip   netip.Addr

	vrrpCount atomic.Uint64

	mu       sync.Mutex
	lastGARP time.Time
	// watch, when set, records the first announcement of each watched VIP
	// from a MAC other than exclude.
	watch   map[netip.Addr]time.Time
	exclude net.HardwareAddr
	// heard is when each gratuitous ARP for a watched VIP (every copy)
	// arrived, for what the receiver saw of the announcements.
	heard []time.Time
	// replies, when set, collects the MACs answering ARP requests.
	replies map[netip.Addr]map[string]bool
}

// startCapture opens the sockets inside the client's namespace.
func startCapture(client *testnet.Host) (*capture, error) {
	c := &capture{ip: client.IPv4.Addr()}
	err := client.Do(func() error {
		ifi, err := net.InterfaceByName(client.Link)
		if err != nil {
			return err
		}
		c.mac = ifi.HardwareAddr
		if c.arp, err = packet.Listen(ifi, packet.Raw, etherTypeARP, nil); err != nil {
			return err
		}
		// Takeovers send thousands of frames at once: a default-sized
		// buffer would drop announcements and delay what we measure.
		rc, err := c.arp.SyscallConn()
		if err != nil {
			return err
		}
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 64<<20)
		}); err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("enlarge the ARP capture buffer: %w", serr)
		}
		pc, err := net.ListenPacket("ip4:112", "0.0.0.0")
		if err != nil {
			return err
		}
		c.vrrp = ipv4.NewPacketConn(pc)
		return c.vrrp.JoinGroup(ifi, &net.IPAddr{IP: net.IPv4(224, 0, 0, 18)})
	})
	if err != nil {
		c.close()
		return nil, err
	}
	go c.readARP()
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, _, err := c.vrrp.ReadFrom(buf); err != nil {
				return
			}
			c.vrrpCount.Add(1)
		}
	}()
	return c, nil
}

func (c *capture) close() {
	if c.arp != nil {
		c.arp.Close()
	}
	if c.vrrp != nil {
		c.vrrp.Close()
	}
}

func (c *capture) readARP() {
	buf := make([]byte, 128)
	for {
		n, _, err := c.arp.ReadFrom(buf)
		if err != nil {
			return
		}
		now := time.Now()
		if n < 42 || binary.BigEndian.Uint16(buf[12:14]) != etherTypeARP {
			continue
		}
		a := buf[14:42]
		op := binary.BigEndian.Uint16(a[6:8])
		sha := net.HardwareAddr(a[8:14])
		spa, _ := netip.AddrFromSlice(a[14:18])
		tpa, _ := netip.AddrFromSlice(a[24:28])
		if bytes.Equal(sha, c.mac) {
			continue // our own probes
		}
		c.mu.Lock()
		if op == 1 && spa == tpa { // gratuitous ARP request
			c.lastGARP = now
			if c.watch != nil && !bytes.Equal(sha, c.exclude) {
				if t, ok := c.watch[spa]; ok {
					if t.IsZero() {
						c.watch[spa] = now
					}
					if len(c.heard) < maxHeard {
						c.heard = append(c.heard, now)
					}
				}
			}
		}
		if op == 2 && c.replies != nil && tpa == c.ip {
			m := c.replies[spa]
			if m == nil {
				m = map[string]bool{}
				c.replies[spa] = m
			}
			m[sha.String()] = true
		}
		c.mu.Unlock()
	}
}

// drops returns how many ARP frames the kernel dropped for want of
// buffer space since the capture started.
func (c *capture) drops() uint64 {
	st, err := c.arp.Stats()
	if err != nil {
		return 0
	}
	return uint64(st.Drops)
}

// quietFor reports whether no gratuitous ARP was heard for d.
func (c *capture) quietFor(d time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Since(c.lastGARP) >= d
}

// watchAnnouncements starts recording, for each of vips, the first
// gratuitous ARP from a MAC other than exclude.
func (c *capture) watchAnnouncements(vips []netip.Addr, exclude net.HardwareAddr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watch = make(map[netip.Addr]time.Time, len(vips))
	for _, a := range vips {
		c.watch[a] = time.Time{}
	}
	c.exclude = exclude
	c.heard = nil
}

// maxHeard bounds the arrival times kept: 10,000 VIPs, 10 copies each.
const maxHeard = 100_000

// heardAnnouncements returns the arrival times of every gratuitous ARP
// for a watched VIP since watchAnnouncements.
func (c *capture) heardAnnouncements() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.heard)
}

// softnetDrops sums the second column of /proc/net/softnet_stat: packets
// the kernel dropped because a CPU's input backlog (netdev_max_backlog)
// was full. The counter is the machine's, every namespace's traffic
// included.
func softnetDrops() uint64 {
	b, err := os.ReadFile("/proc/net/softnet_stat")
	if err != nil {
		return 0
	}
	var n uint64
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		if v, err := strconv.ParseUint(f[1], 16, 64); err == nil {
			n += v
		}
	}
	return n
}

// announced returns how many watched VIPs were announced, and the first
// and the last time.
func (c *capture) announced() (n int, first, last time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.watch {
		if t.IsZero() {
			continue
		}
		n++
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	return n, first, last
}

// probe sends an ARP request for each of vips (at most rate per second),
// waits linger for the last answers and returns who answered what.
func (c *capture) probe(vips []netip.Addr, rate int, linger time.Duration) (map[netip.Addr]map[string]bool, error) {
	c.mu.Lock()
	c.replies = map[netip.Addr]map[string]bool{}
	c.mu.Unlock()
	frame := make([]byte, 42)
	copy(frame[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(frame[6:12], c.mac)
	binary.BigEndian.PutUint16(frame[12:14], etherTypeARP)
	a := frame[14:]
	binary.BigEndian.PutUint16(a[0:2], 1)
	binary.BigEndian.PutUint16(a[2:4], 0x0800)
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:8], 1)
	copy(a[8:14], c.mac)
	ip := c.ip.As4()
	copy(a[14:18], ip[:])
	dst := &packet.Addr{HardwareAddr: net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	gap := time.Second / time.Duration(rate)
	start := time.Now()
	for i, v := range vips {
		t := v.As4()
		copy(a[24:28], t[:])
		if _, err := c.arp.WriteTo(frame, dst); err != nil {
			return nil, err
		}
		if d := time.Until(start.Add(time.Duration(i+1) * gap)); d > 0 {
			time.Sleep(d) // pacing the probes
		}
	}
	time.Sleep(linger) // the last answers
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.replies
	c.replies = nil
	return r, nil
}
