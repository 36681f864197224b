package engine

import (
	"fmt"
	"net/netip"
	"time"
)

// notPeerLogEvery bounds how often one source that is not a unicast peer
// is logged: keepalived logs each of its adverts, one a second or more.
const notPeerLogEvery = time.Minute

// notAPeer logs a unicast advert from a source that is not in the
// instance's unicast_peer list, which vipstack always drops (see
// docs/design/vrrp.md). With check_unicast_src (or global
// vrrp_check_unicast_src), where keepalived drops it too, the line is
// keepalived's, at info level; without it keepalived would have taken the
// advert, and the debug line says vipstack differs.
func (e *Engine) notAPeer(in *instance, now time.Time, src netip.Addr) {
	if last, ok := in.notPeerLogged[src]; ok && now.Sub(last) < notPeerLogEvery {
		return
	}
	if in.notPeerLogged == nil {
		in.notPeerLogged = map[netip.Addr]time.Time{}
	}
	in.notPeerLogged[src] = now
	if in.cfg.CheckUnicastSrc || (e.cfg != nil && e.cfg.Global.CheckUnicastSrc) {
		e.log.Info(fmt.Sprintf("(%s) unicast source address %s not a unicast peer", in.cfg.Name, src), "instance", in.cfg.Name)
		return
	}
	e.log.Debug("advert from a source that is not a unicast peer dropped (keepalived takes it without check_unicast_src)",
		"instance", in.cfg.Name, "from", src)
}
