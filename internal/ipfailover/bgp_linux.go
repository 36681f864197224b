package ipfailover

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
)

// runBGP announces the pool by BGP (Options.BGP): every VIP goes on lo,
// the pool's check decides whether this node announces them, and when ctx
// ends the routes are withdrawn
// (or, with Options.BGPStopKeepsRoutes, left to the routers' graceful
// restart) and the VIPs leave lo.
func (p *Pool) runBGP(ctx context.Context) error {
	s, o, log := p.opts.Spec, p.opts, p.opts.Logger
	// The interface is the one towards the first router: the VIPs are
	// on lo (a restart finds them there) and route nowhere else.
	iface := s.Interface
	if iface == "" {
		var err error
		if iface, err = routeTo("BGP peer", s.BGP.Peers[0].Addr()); err != nil {
			return p.fail(err)
		}
		log.Info("interface chosen by route lookup towards the first BGP peer", "interface", iface, "peer", s.BGP.Peers[0].Addr())
	}
	addr, err := NodeAddress(iface, s.Family(), s.VIPs)
	if err != nil {
		if s.Interface != "" {
			err = fmt.Errorf("%s=%q: %w", EnvInterface, s.Interface, err)
		}
		return p.fail(err)
	}
	subnets, err := nodeSubnets(iface, s.VIPs)
	if err != nil {
		return p.fail(err)
	}
	check, checkText := p.check(Node{Interface: iface, Address: addr})
	r, err := o.BGP.Start(s, BGPNode{Interface: iface, Subnets: subnets, Check: check, CheckText: checkText, Logger: log, Clock: o.Clock})
	if err != nil {
		return p.fail(err)
	}
	p.mu.Lock()
	p.bgp = r
	p.status.Phase, p.status.Interface, p.status.Address, p.status.Check = "running", iface, addr.String(), checkText
	p.mu.Unlock()
	close(p.running)
	<-ctx.Done()
	stop := r.Stop
	if o.BGPStopKeepsRoutes {
		stop = r.Leave
	}
	err = stop()
	p.update(func(st *Status) { st.Phase = "stopped" })
	if err != nil {
		return p.fail(fmt.Errorf("bgp: stop: %w", err))
	}
	return nil
}

// nodeSubnets returns the node's global unicast addresses with their
// prefixes, those of iface first, leaving out the pool's VIPs and lo.
func nodeSubnets(iface string, vips []netip.Addr) ([]netip.Prefix, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("bgp: list interfaces: %w", err)
	}
	slices.SortStableFunc(ifs, func(a, b net.Interface) int {
		switch {
		case a.Name == iface && b.Name != iface:
			return -1
		case b.Name == iface && a.Name != iface:
			return 1
		}
		return 0
	})
	var out []netip.Prefix
	for _, ifi := range ifs {
		if ifi.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifi.Addrs()
		if err != nil {
			return nil, fmt.Errorf("bgp: addresses of %s: %w", ifi.Name, err)
		}
		for _, ad := range addrs {
			ipn, ok := ad.(*net.IPNet)
			if !ok {
				continue
			}
			a, ok := netip.AddrFromSlice(ipn.IP)
			ones, _ := ipn.Mask.Size()
			if !ok || !a.Unmap().IsGlobalUnicast() || slices.Contains(vips, a.Unmap()) {
				continue
			}
			out = append(out, netip.PrefixFrom(a.Unmap(), ones))
		}
	}
	return out, nil
}
