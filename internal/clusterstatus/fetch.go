package clusterstatus

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/vipstack/vipstack/internal/bgpconfig"
	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/serve"
)

// maxAnswer bounds one node's answer.
const maxAnswer = 16 << 20

// nodeStatus is what the view reads of a node agent's status (the
// node.Status JSON).
type nodeStatus struct {
	Node     string `json:"node"`
	Role     string `json:"role"`
	Rejected *struct {
		At    time.Time `json:"at"`
		Error string    `json:"error"`
	} `json:"cluster_file_rejected"`
	VRRP    []engine.InstanceStatus `json:"vrrp"`
	Stalled string                  `json:"vrrp_stalled"`
	BGP     *struct {
		Peers []struct {
			Session string `json:"session"`
		} `json:"peers"`
		Routes []struct {
			Prefix    string `json:"prefix"`
			Role      string `json:"role"`
			Announced bool   `json:"announced"`
			Demoted   bool   `json:"demoted"`
			Reason    string `json:"reason"`
		} `json:"routes"`
		Wedged  string `json:"wedged"`
		Stopped string `json:"stopped"`
		Retry   string `json:"retry"`
	} `json:"bgp"`
}

// unhealthy is why the node is not live, as node.Status.Unhealthy says
// it: its VRRP engine's loop is wedged, or its BGP speaker.
func (s nodeStatus) unhealthy() string {
	switch {
	case s.Stalled != "":
		return "vrrp: " + s.Stalled
	case s.BGP == nil:
		return ""
	}
	return (&bgpconfig.SpeakerStatus{Wedged: s.BGP.Wedged, Stopped: s.BGP.Stopped, Retry: s.BGP.Retry}).Unhealthy()
}

// bgpReport is the view's part of a node's BGP status.
func (s nodeStatus) bgpReport() *BGPReport {
	if s.BGP == nil {
		return nil
	}
	b := &BGPReport{Peers: len(s.BGP.Peers)}
	for _, p := range s.BGP.Peers {
		if p.Session == "established" {
			b.Established++
		}
	}
	for _, r := range s.BGP.Routes {
		vip := r.Prefix
		if p, err := netip.ParsePrefix(r.Prefix); err == nil {
			vip = p.Addr().String()
		}
		b.Routes = append(b.Routes, BGPRouteReport{VIP: vip, Role: r.Role, Announced: r.Announced, Demoted: r.Demoted, Reason: r.Reason})
	}
	return b
}

// ExpectedFor lists the instances every node of c runs, as the node
// agents derive them, and then the VIPs they announce by BGP.
func ExpectedFor(c *cluster.Cluster) ([]Expected, error) {
	byName := map[string]*Expected{}
	var order, bgpOrder []string
	for _, n := range c.Nodes {
		p, err := c.PlanFor(n.Name)
		if err != nil {
			return nil, err
		}
		for _, in := range p.Instances {
			e := byName[in.Name]
			if e == nil {
				e = &Expected{Instance: in.Name, VRID: int(in.VRID)}
				for _, v := range in.VIPs {
					e.VIPs = append(e.VIPs, v.String())
				}
				byName[in.Name] = e
				order = append(order, in.Name)
			}
			e.Nodes = append(e.Nodes, n.Name)
		}
		if p.BGP == nil {
			continue
		}
		for _, rt := range p.BGP.Config.Routes {
			key := "bgp " + rt.VIP.String()
			e := byName[key]
			if e == nil {
				e = &Expected{Instance: p.BGP.Role[rt.VIP], VIPs: []string{rt.VIP.String()}, BGP: true}
				byName[key] = e
				bgpOrder = append(bgpOrder, key)
			}
			e.Nodes = append(e.Nodes, n.Name)
		}
	}
	out := make([]Expected, 0, len(order)+len(bgpOrder))
	for _, name := range append(order, bgpOrder...) {
		out = append(out, *byName[name])
	}
	return out, nil
}

// Ask asks every node of c for its status on c.Ports.Status, all at once,
// each address of a node in turn until one answers.
func Ask(ctx context.Context, client *http.Client, c *cluster.Cluster) []Report {
	out := make([]Report, len(c.Nodes))
	var wg sync.WaitGroup
	for i, n := range c.Nodes {
		wg.Go(func() { out[i] = askNode(ctx, client, n, c.Ports.Status) })
	}
	wg.Wait()
	return out
}

// askNode asks one node, at each of its addresses until one answers.
func askNode(ctx context.Context, client *http.Client, n cluster.Node, port int) Report {
	r := Report{Node: n.Name, Role: string(n.Role)}
	for _, ip := range n.IPs {
		r.Address = netip.AddrPortFrom(ip, uint16(port)).String()
		s, err := get(ctx, client, "http://"+r.Address+"/status")
		if err != nil {
			r.Error = err.Error()
			continue
		}
		r.Error = ""
		if s.Node != n.Name {
			r.Warnings = append(r.Warnings, fmt.Sprintf("answered as node %q: is the cluster file the one it runs?", s.Node))
		}
		if s.Rejected != nil {
			r.Warnings = append(r.Warnings, fmt.Sprintf("rejected its cluster file at %s: %s", s.Rejected.At.UTC().Format(time.RFC3339), oneLine(s.Rejected.Error)))
		}
		if u := s.unhealthy(); u != "" {
			r.Warnings = append(r.Warnings, "not live (its liveness probe fails): "+u)
		}
		r.Instances = s.VRRP
		r.BGP = s.bgpReport()
		return r
	}
	return r
}

func get(ctx context.Context, client *http.Client, url string) (nodeStatus, error) {
	var s nodeStatus
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return s, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return s, err
	}
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("GET %s: %s: %s", url, resp.Status, oneLine(string(body)))
	}
	if err := json.Unmarshal(body, &s); err != nil {
		return s, fmt.Errorf("GET %s: not a node status: %w", url, err)
	}
	return s, nil
}

// Handler serves the JSON value status returns at /status, for GET,
// to clients whose address allowed accepts; others get 403 Forbidden.
func Handler(status func() any, allowed func(netip.Addr) bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		ap, err := netip.ParseAddrPort(r.RemoteAddr)
		if err != nil || !allowed(ap.Addr().Unmap()) {
			http.Error(w, "forbidden: the status is served to the cluster file's nodes only", http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(status())
	})
	return mux
}

// Allowed reports whether a is loopback or an address of one of c's
// nodes.
func Allowed(c *cluster.Cluster, a netip.Addr) bool {
	if a.IsLoopback() {
		return true
	}
	for _, n := range c.Nodes {
		for _, ip := range n.IPs {
			if ip == a {
				return true
			}
		}
	}
	return false
}

// ListenAddrs are where node serves its status to the cluster: each of
// its addresses on c.Ports.Status; none when that is 0.
func ListenAddrs(c *cluster.Cluster, node string) []string {
	n, ok := c.NodeByName(node)
	if !ok || c.Ports.Status == 0 {
		return nil
	}
	var out []string
	for _, ip := range n.IPs {
		out = append(out, netip.AddrPortFrom(ip, uint16(c.Ports.Status)).String())
	}
	return out
}

// Serve serves h on every address of addrs until ctx is done. An address
// that cannot be bound yet (the node's address is not up) is tried again
// every retry, logged once.
func Serve(ctx context.Context, addrs []string, h http.Handler, retry time.Duration, log *slog.Logger) {
	for _, addr := range addrs {
		go func() {
			logged := false
			for {
				s, err := serve.Handler(addr, h)
				if err == nil {
					log.Info("serving the status to the cluster's nodes", "addr", addr)
					<-ctx.Done()
					s.Close()
					return
				}
				if !logged {
					log.Warn("cannot serve the status to the cluster yet; retrying", "addr", addr, "err", err, "every", retry)
					logged = true
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(retry):
				}
			}
		}()
	}
}
