package ipfailover

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/vrrp"
	"github.com/vipstack/vipstack/internal/vrrp/transport"
)

// ListenVRIDs collects the VRRP advertisements of family (4 or 6) heard on
// interface ifIndex for d (on clk), multicast and unicast alike, one Heard
// per VRID and sender. It needs CAP_NET_RAW. Packets that do not decode
// are skipped.
func ListenVRIDs(ctx context.Context, clk clock.Clock, family, ifIndex int, d time.Duration) ([]Heard, error) {
	c, err := transport.Listen(family)
	if err != nil {
		return nil, fmt.Errorf("listen for VRIDs in use: %w", err)
	}
	if err := c.JoinGroup(ifIndex, vrrp.MulticastGroup(family)); err != nil {
		c.Close()
		return nil, fmt.Errorf("listen for VRIDs in use: %w", err)
	}
	type key struct {
		vrid uint8
		from netip.Addr
	}
	found := map[key]*Heard{}
	packets := make(chan transport.Packet, 256)
	go func() {
		defer close(packets)
		for {
			p, err := c.ReadPacket()
			if err != nil {
				return
			}
			packets <- p
		}
	}()
	t := clk.NewTimer(d)
	defer t.Stop()
	stop := func() {
		c.Close()
		for range packets { // let the reader finish
		}
	}
loop:
	for {
		select {
		case <-ctx.Done():
			stop()
			return nil, ctx.Err()
		case <-t.C():
			break loop
		case p, ok := <-packets:
			if !ok {
				break loop
			}
			if p.IfIndex != ifIndex {
				continue
			}
			adv, err := vrrp.Unmarshal(p.Payload, p.Src, p.Dst)
			if err != nil {
				continue
			}
			k := key{adv.VRID, p.Src.WithZone("")}
			h := found[k]
			if h == nil {
				h = &Heard{VRID: adv.VRID, From: k.from, Version: adv.Version, Addresses: adv.Addresses, Interval: adv.Interval}
				found[k] = h
			}
			h.Packets++
		}
	}
	stop()
	out := make([]Heard, 0, len(found))
	for _, h := range found {
		out = append(out, *h)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].VRID != out[j].VRID {
			return out[i].VRID < out[j].VRID
		}
		return out[i].From.Less(out[j].From)
	})
	return out, nil
}

// WatchAdverts calls fn with every VRRP advertisement of family (4 or 6)
// heard on interface ifIndex, until ctx is done. It needs CAP_NET_RAW.
// Packets that do not decode are skipped.
func WatchAdverts(ctx context.Context, family, ifIndex int, fn func(from netip.Addr, adv *vrrp.Advertisement)) error {
	c, err := transport.Listen(family)
	if err != nil {
		return fmt.Errorf("watch advertisements: %w", err)
	}
	if err := c.JoinGroup(ifIndex, vrrp.MulticastGroup(family)); err != nil {
		c.Close()
		return fmt.Errorf("watch advertisements: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	for {
		p, err := c.ReadPacket()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			c.Close()
			return fmt.Errorf("watch advertisements: %w", err)
		}
		if p.IfIndex != ifIndex {
			continue
		}
		if adv, err := vrrp.Unmarshal(p.Payload, p.Src, p.Dst); err == nil {
			fn(p.Src.WithZone(""), adv)
		}
	}
}
