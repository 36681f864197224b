package clusterstatus

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/cluster"
)

// TestAskNode asks a stand-in node agent on loopback and checks the
// report: the instances, the warnings, and why a node gave nothing.
func TestAskNode(t *testing.T) {
	for _, tc := range []struct {
		name      string
		status    int
		body      string
		closed    bool // nothing listens
		wantErr   string
		wantWarn  []string
		wantInsts []string
		wantBGP   *BGPReport
	}{
		{name: "answers with BGP", status: 200, body: `{"node":"m0","vrrp":[],"bgp":{"asn":64512,"peers":[{"address":"198.18.1.1","session":"established"},{"address":"198.18.2.1","session":"active"}],
			"routes":[{"prefix":"198.19.0.5/32","role":"api","announced":true,"reason":"eligible: lb ok"},{"prefix":"198.19.0.7/32","role":"ingress","announced":false,"reason":"chk_ingress failing"}]}}`,
			wantBGP: &BGPReport{Peers: 2, Established: 1, Routes: []BGPRouteReport{
				{VIP: "198.19.0.5", Role: "api", Announced: true, Reason: "eligible: lb ok"},
				{VIP: "198.19.0.7", Role: "ingress", Reason: "chk_ingress failing"}}}},
		{name: "answers with its BGP speaker stopped", status: 200, body: `{"node":"m0","vrrp":[],"bgp":{"asn":64512,"peers":[],"routes":[],
			"wedged":"GoBGP's server has not answered AddPeer 198.18.1.1 since 2026-12-03T12:00:00Z (12s): it is wedged","stopped":"bgp: peer 198.18.1.1: GoBGP did not answer within 10s"}}`,
			wantWarn: []string{"not live (its liveness probe fails): bgp: the speaker stopped: bgp: peer 198.18.1.1: GoBGP did not answer within 10s"},
			wantBGP:  &BGPReport{}},
		{name: "answers with its VRRP loop wedged", status: 200, body: `{"node":"m0","vrrp":[],"vrrp_stalled":"the VRRP engine's loop has answered no status request since 2026-12-03T12:00:00Z (12s): it is held up"}`,
			wantWarn: []string{"not live (its liveness probe fails): vrrp: the VRRP engine's loop has answered no status request since 2026-12-03T12:00:00Z (12s): it is held up"}},
		{name: "answers", status: 200, body: `{"node":"m0","role":"master","vrrp":[{"name":"t1_API","state":"MASTER","vrid":28}]}`, wantInsts: []string{"t1_API/MASTER"}},
		{name: "answers as another node", status: 200, body: `{"node":"m9","vrrp":[]}`,
			wantWarn: []string{`answered as node "m9": is the cluster file the one it runs?`}},
		{name: "rejected its cluster file", status: 200, body: `{"node":"m0","cluster_file_rejected":{"at":"2026-11-29T01:00:00Z","error":"c.yaml: bad\n  thing"},"vrrp":[]}`,
			wantWarn: []string{"rejected its cluster file at 2026-11-29T01:00:00Z: c.yaml: bad thing"}},
		{name: "refused", status: 403, body: "forbidden\n", wantErr: "403 Forbidden: forbidden"},
		{name: "not a node status", status: 200, body: `[1,2]`, wantErr: "not a node status"},
		{name: "nothing listens", closed: true, wantErr: "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/status" {
					http.NotFound(w, r)
					return
				}
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			_, p, _ := net.SplitHostPort(srv.Listener.Addr().String())
			port, _ := strconv.Atoi(p)
			if tc.closed {
				srv.Close()
			}
			n := cluster.Node{Name: "m0", Role: cluster.Master, IPs: []netip.Addr{netip.MustParseAddr("127.0.0.1")}}
			r := askNode(context.Background(), &http.Client{Timeout: 5 * time.Second}, n, port)
			if tc.wantErr == "" && r.Error != "" || !strings.Contains(r.Error, tc.wantErr) {
				t.Errorf("error %q, want one with %q", r.Error, tc.wantErr)
			}
			if r.Address != "127.0.0.1:"+p {
				t.Errorf("address %q", r.Address)
			}
			var insts []string
			for _, in := range r.Instances {
				insts = append(insts, in.Name+"/"+in.State)
			}
			if d := cmp.Diff(tc.wantInsts, insts); d != "" {
				t.Errorf("instances (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantWarn, r.Warnings); d != "" {
				t.Errorf("warnings (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantBGP, r.BGP); d != "" {
				t.Errorf("BGP (-want +got):\n%s", d)
			}
		})
	}
}

// TestHandlerServesTheClusterOnly: the status goes to the cluster file's
// nodes and loopback, 403 to anyone else, and only for GET /status.
func TestHandlerServesTheClusterOnly(t *testing.T) {
	c, err := cluster.Load("../cluster/testdata/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	h := Handler(func() any { return map[string]string{"node": "master-0"} }, func(a netip.Addr) bool { return Allowed(c, a) })
	for _, tc := range []struct {
		method, path, remote string
		want                 int
	}{
		{"GET", "/status", "198.18.0.12:40000", 200},
		{"GET", "/status", "127.0.0.1:40000", 200},
		{"GET", "/status", "[::ffff:198.18.0.21]:40000", 200},
		{"GET", "/status", "198.18.0.99:40000", 403},
		{"GET", "/status", "198.18.0.5:40000", 403}, // a VIP is not a node
		{"POST", "/status", "198.18.0.12:40000", 405},
		{"GET", "/metrics", "198.18.0.12:40000", 404},
	} {
		req := httptest.NewRequest(tc.method, tc.path, nil)
		req.RemoteAddr = tc.remote
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s %s from %s: %d, want %d", tc.method, tc.path, tc.remote, rec.Code, tc.want)
		}
	}
}

// TestExpectedFor lists the instances and their nodes as the node agents
// derive them from the example cluster file.
func TestExpectedFor(t *testing.T) {
	c, err := cluster.Load("../cluster/testdata/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ExpectedFor(c)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i].VRID = 0 // derived from the name; package cluster tests them
	}
	want := []Expected{
		{Instance: "managed_API", VIPs: []string{"198.18.0.5"}, Nodes: []string{"bootstrap", "master-0", "master-1", "master-2"}},
		{Instance: "managed_INGRESS", VIPs: []string{"198.18.0.7"}, Nodes: []string{"master-0", "master-1", "master-2", "worker-0", "worker-1"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	bgpFile := `name: t1
baseDomain: example.com
apiVIPs: [198.19.0.5]
ingressVIPs: [198.18.1.7]
machineNetworks: [198.18.1.0/24, 198.18.2.0/24]
nodes:
  - {name: m1, role: master, ips: [198.18.1.10]}
  - {name: m2, role: master, ips: [198.18.2.10]}
bgp:
  asn: 64512
  announce: [api]
  peers:
    - {address: 198.18.1.1, asn: 64500, nodes: [m1]}
    - {address: 198.18.2.1, asn: 64500, nodes: [m2]}
`
	bc, err := cluster.Parse("bgp.yaml", []byte(bgpFile))
	if err != nil {
		t.Fatal(err)
	}
	got, err = ExpectedFor(bc)
	if err != nil {
		t.Fatal(err)
	}
	var bgpGot []Expected
	for _, e := range got {
		if e.BGP {
			bgpGot = append(bgpGot, e)
		} else if slices.Contains(e.VIPs, "198.19.0.5") {
			t.Errorf("the API VIP, announced by BGP, is in VRRP instance %s too", e.Instance)
		}
	}
	if d := cmp.Diff([]Expected{{Instance: "api", VIPs: []string{"198.19.0.5"}, Nodes: []string{"m1", "m2"}, BGP: true}}, bgpGot); d != "" {
		t.Errorf("BGP VIPs (-want +got):\n%s", d)
	}
	if ListenAddrs(c, "master-0") != nil {
		t.Errorf("ListenAddrs without ports.status: %v, want none", ListenAddrs(c, "master-0"))
	}
	c.Ports.Status = 9652
	if d := cmp.Diff([]string{"198.18.0.11:9652"}, ListenAddrs(c, "master-0")); d != "" {
		t.Errorf("ListenAddrs (-want +got):\n%s", d)
	}
}
