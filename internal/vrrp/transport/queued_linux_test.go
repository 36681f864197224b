package transport

import (
	"net/netip"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/testnet"
)

// TestQueued: Queued is false on an empty socket, true once a packet is
// queued and not read, and false again once it is read; for IPv4 and
// IPv6 (a packet to the host's own address, which the kernel delivers to
// its raw sockets).
func TestQueued(t *testing.T) {
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vsqd"})
	h := topo.Hosts[0]
	for _, tc := range []struct {
		family int
		addr   netip.Addr
	}{{4, h.IPv4.Addr()}, {6, h.IPv6.Addr()}} {
		if err := h.Do(func() error {
			c, err := Listen(tc.family)
			if err != nil {
				return err
			}
			defer c.Close()
			q := c.(interface{ Queued() (bool, error) })
			if got, err := q.Queued(); err != nil || got {
				t.Errorf("IPv%d: Queued on an empty socket = %v, %v; want false", tc.family, got, err)
			}
			if err := c.WritePacket([]byte{0x31, 51, 100, 1, 0, 1, 0, 0, 198, 18, 0, 100}, tc.addr, tc.addr, 0); err != nil {
				return err
			}
			// The packet reaches the queue through the loopback's
			// softirq: poll for it, bounded.
			deadline := time.Now().Add(5 * time.Second)
			for {
				got, err := q.Queued()
				if err != nil {
					return err
				}
				if got {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("IPv%d: Queued stayed false after a packet was sent to the socket's host", tc.family)
					return nil
				}
				time.Sleep(time.Millisecond)
			}
			if _, err := c.ReadPacket(); err != nil {
				return err
			}
			if got, err := q.Queued(); err != nil || got {
				t.Errorf("IPv%d: Queued after the packet was read = %v, %v; want false", tc.family, got, err)
			}
			return nil
		}); err != nil {
			t.Fatalf("IPv%d: %v", tc.family, err)
		}
	}
}

// TestListenSend: a send-only socket sends (a socket of Listen receives
// what it sent) and queues nothing of what arrives.
func TestListenSend(t *testing.T) {
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vsls"})
	h := topo.Hosts[0]
	for _, tc := range []struct {
		family int
		addr   netip.Addr
	}{{4, h.IPv4.Addr()}, {6, h.IPv6.Addr()}} {
		if err := h.Do(func() error {
			rx, err := Listen(tc.family)
			if err != nil {
				return err
			}
			defer rx.Close()
			tx, err := ListenSend(tc.family)
			if err != nil {
				return err
			}
			defer tx.Close()
			for range 3 {
				if err := tx.WritePacket([]byte{0x31, 51, 100, 1, 0, 1, 0, 0, 198, 18, 0, 100}, tc.addr, tc.addr, 0); err != nil {
					return err
				}
			}
			for range 3 {
				if _, err := rx.ReadPacket(); err != nil {
					return err
				}
			}
			if got, err := tx.(interface{ Queued() (bool, error) }).Queued(); err != nil || got {
				t.Errorf("IPv%d: the send-only socket has a packet queued (%v, %v)", tc.family, got, err)
			}
			return nil
		}); err != nil {
			t.Fatalf("IPv%d: %v", tc.family, err)
		}
	}
}
