package main

import (
	"fmt"
	"net/netip"
	"slices"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// drops records the VIPs removed from a node's interfaces between two
// samples, from the namespace's netlink address events: a VIP removed and
// added again within one sampling interval (a restarted agent sweeping
// what its killed predecessor left, then taking the address back as
// master) is in no sample as gone (chaos.NodeSample.Dropped).
type drops struct {
	mu   sync.Mutex
	gone map[netip.Addr]bool
	done chan struct{}
}

// watchDrops starts recording the removals of vips in the namespace nsh
// until close.
func watchDrops(nsh netns.NsHandle, vips []netip.Addr) (*drops, error) {
	d := &drops{gone: map[netip.Addr]bool{}, done: make(chan struct{})}
	ch := make(chan netlink.AddrUpdate, 256)
	if err := netlink.AddrSubscribeWithOptions(ch, d.done, netlink.AddrSubscribeOptions{Namespace: &nsh, ReceiveBufferSize: 1 << 20}); err != nil {
		return nil, fmt.Errorf("watch address removals: %w", err)
	}
	go func() {
		for u := range ch {
			a, ok := netip.AddrFromSlice(u.LinkAddress.IP)
			if u.NewAddr || !ok || !slices.Contains(vips, a.Unmap()) {
				continue
			}
			d.mu.Lock()
			d.gone[a.Unmap()] = true
			d.mu.Unlock()
		}
	}()
	return d, nil
}

// take returns the VIPs removed since the last take, in no order.
func (d *drops) take() []netip.Addr {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []netip.Addr
	for a := range d.gone {
		out = append(out, a)
	}
	clear(d.gone)
	return out
}

func (d *drops) close() {
	if d != nil {
		close(d.done)
	}
}
