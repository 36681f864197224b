package allocator

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var addr = netip.MustParseAddr

type labelSel map[string]string

func (s labelSel) Matches(l map[string]string) bool {
	for k, v := range s {
		if l[k] != v {
			return false
		}
	}
	return true
}

func (s labelSel) String() string { return labelString(s) }

func svc(key string, labels ...string) Service {
	ns, _, _ := strings.Cut(key, "/")
	m := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		m[labels[i]] = labels[i+1]
	}
	return Service{Key: key, Namespace: ns, Labels: m}
}

// step is one operation of a scenario and what must hold after it.
type step struct {
	desc string
	// exactly one operation
	setPools []Pool
	request  *struct {
		svc  Service
		addr string
	}
	allocate *struct {
		svc  Service
		fam  Family
		pool string
	}
	reserve *struct {
		key  string
		addr string
	}
	release   string
	releaseIP *struct {
		key  string
		addr string
	}

	wantAddr string // for allocate
	wantPool string // for allocate and request
	wantErr  error  // errors.Is target; nil means success
	wantMsg  string // substring of the error text
	// state after the step: key -> addresses
	want map[string][]string
}

func req(s Service, a string) *struct {
	svc  Service
	addr string
} {
	return &struct {
		svc  Service
		addr string
	}{s, a}
}

func alloc(s Service, f Family, pool string) *struct {
	svc  Service
	fam  Family
	pool string
} {
	return &struct {
		svc  Service
		fam  Family
		pool string
	}{s, f, pool}
}

func kv(key, a string) *struct {
	key  string
	addr string
} {
	return &struct {
		key  string
		addr string
	}{key, a}
}

func state(a *Allocator) map[string][]string {
	out := map[string][]string{}
	for k := range a.byKey {
		for _, x := range a.IPs(k) {
			out[k] = append(out[k], x.String())
		}
	}
	return out
}

func TestAllocatorScenario(t *testing.T) {
	pools := []Pool{
		{Name: "a-small", Ranges: []Range{MustParseRange("198.18.1.0/31")}, AutoAssign: true},
		{Name: "b-team", Ranges: []Range{MustParseRange("198.18.2.10-198.18.2.12"), MustParseRange("fd00:2::/127")}, AutoAssign: true,
			Namespaces: []string{"team"}},
		{Name: "c-manual", Ranges: []Range{MustParseRange("198.18.3.0/30")}},
		{Name: "d-labelled", Ranges: []Range{MustParseRange("198.18.4.0/30")}, AutoAssign: true, Selector: labelSel{"tier": "edge"}},
	}
	steps := []step{
		{desc: "pools load", setPools: pools, want: map[string][]string{}},
		{desc: "first auto address", allocate: alloc(svc("default/web"), IPv4, ""),
			wantAddr: "198.18.1.0", wantPool: "a-small", want: map[string][]string{"default/web": {"198.18.1.0"}}},
		{desc: "asking again returns the same address", allocate: alloc(svc("default/web"), IPv4, ""),
			wantAddr: "198.18.1.0", wantPool: "a-small", want: map[string][]string{"default/web": {"198.18.1.0"}}},
		{desc: "second auto address", allocate: alloc(svc("default/db"), IPv4, ""),
			wantAddr: "198.18.1.1", wantPool: "a-small",
			want: map[string][]string{"default/web": {"198.18.1.0"}, "default/db": {"198.18.1.1"}}},
		{desc: "default namespace: a-small is full and b-team is foreign, d-labelled needs a label",
			allocate: alloc(svc("default/api"), IPv4, ""), wantErr: ErrExhausted, wantMsg: "every IPv4 address of pool a-small is assigned",
			want: map[string][]string{"default/web": {"198.18.1.0"}, "default/db": {"198.18.1.1"}}},
		{desc: "the label admits it to d-labelled", allocate: alloc(svc("default/api", "tier", "edge"), IPv4, ""),
			wantAddr: "198.18.4.0", wantPool: "d-labelled",
			want: map[string][]string{"default/web": {"198.18.1.0"}, "default/db": {"198.18.1.1"}, "default/api": {"198.18.4.0"}}},
		{desc: "team falls through the full a-small to b-team", allocate: alloc(svc("team/x"), IPv4, ""),
			wantAddr: "198.18.2.10", wantPool: "b-team",
			want: map[string][]string{"default/web": {"198.18.1.0"}, "default/db": {"198.18.1.1"}, "default/api": {"198.18.4.0"}, "team/x": {"198.18.2.10"}}},
		{desc: "IPv6 from the only pool with IPv6 ranges", allocate: alloc(svc("team/x"), IPv6, ""),
			wantAddr: "fd00:2::", wantPool: "b-team",
			want: map[string][]string{"default/web": {"198.18.1.0"}, "default/db": {"198.18.1.1"}, "default/api": {"198.18.4.0"}, "team/x": {"198.18.2.10", "fd00:2::"}}},
		{desc: "IPv6 for the default namespace: no pool", allocate: alloc(svc("default/web"), IPv6, ""),
			wantErr: ErrNoPool, wantMsg: "pool b-team admits namespaces team, not \"default\"",
			want: map[string][]string{"default/web": {"198.18.1.0"}, "default/db": {"198.18.1.1"}, "default/api": {"198.18.4.0"}, "team/x": {"198.18.2.10", "fd00:2::"}}},
		{desc: "a requested address in a manual pool is honoured", request: req(svc("default/dns"), "198.18.3.2"),
			wantPool: "c-manual",
			want:     map[string][]string{"default/web": {"198.18.1.0"}, "default/db": {"198.18.1.1"}, "default/api": {"198.18.4.0"}, "team/x": {"198.18.2.10", "fd00:2::"}, "default/dns": {"198.18.3.2"}}},
		{desc: "the same address for another Service is refused", request: req(svc("default/dns2"), "198.18.3.2"),
			wantErr: ErrInUse, wantMsg: "held by default/dns",
			want: map[string][]string{"default/web": {"198.18.1.0"}, "default/db": {"198.18.1.1"}, "default/api": {"198.18.4.0"}, "team/x": {"198.18.2.10", "fd00:2::"}, "default/dns": {"198.18.3.2"}}},
		{desc: "an address of a foreign pool is refused", request: req(svc("default/dns2"), "198.18.2.11"),
			wantErr: ErrForbidden, wantMsg: "pool b-team admits namespaces team",
			want: map[string][]string{"default/web": {"198.18.1.0"}, "default/db": {"198.18.1.1"}, "default/api": {"198.18.4.0"}, "team/x": {"198.18.2.10", "fd00:2::"}, "default/dns": {"198.18.3.2"}}},
		{desc: "an address in no pool is refused", request: req(svc("default/dns2"), "198.18.9.9"),
			wantErr: ErrNotInPool, wantMsg: "no pool holds 198.18.9.9",
			want: map[string][]string{"default/web": {"198.18.1.0"}, "default/db": {"198.18.1.1"}, "default/api": {"198.18.4.0"}, "team/x": {"198.18.2.10", "fd00:2::"}, "default/dns": {"198.18.3.2"}}},
		{desc: "a manual pool named explicitly", allocate: alloc(svc("default/dns2"), IPv4, "c-manual"),
			wantAddr: "198.18.3.0", wantPool: "c-manual",
			want: map[string][]string{"default/web": {"198.18.1.0"}, "default/db": {"198.18.1.1"}, "default/api": {"198.18.4.0"}, "team/x": {"198.18.2.10", "fd00:2::"}, "default/dns": {"198.18.3.2"}, "default/dns2": {"198.18.3.0"}}},
		{desc: "a foreign pool named explicitly", allocate: alloc(svc("default/q"), IPv4, "b-team"),
			wantErr: ErrForbidden, wantMsg: "admits namespaces team",
			want: map[string][]string{"default/web": {"198.18.1.0"}, "default/db": {"198.18.1.1"}, "default/api": {"198.18.4.0"}, "team/x": {"198.18.2.10", "fd00:2::"}, "default/dns": {"198.18.3.2"}, "default/dns2": {"198.18.3.0"}}},
		{desc: "a pool that does not exist", allocate: alloc(svc("default/q"), IPv4, "nope"),
			wantErr: ErrNoPool, wantMsg: "pool nope does not exist",
			want: map[string][]string{"default/web": {"198.18.1.0"}, "default/db": {"198.18.1.1"}, "default/api": {"198.18.4.0"}, "team/x": {"198.18.2.10", "fd00:2::"}, "default/dns": {"198.18.3.2"}, "default/dns2": {"198.18.3.0"}}},
		{desc: "release frees both families", release: "team/x",
			want: map[string][]string{"default/web": {"198.18.1.0"}, "default/db": {"198.18.1.1"}, "default/api": {"198.18.4.0"}, "default/dns": {"198.18.3.2"}, "default/dns2": {"198.18.3.0"}}},
		{desc: "release one address", releaseIP: kv("default/db", "198.18.1.1"),
			want: map[string][]string{"default/web": {"198.18.1.0"}, "default/api": {"198.18.4.0"}, "default/dns": {"198.18.3.2"}, "default/dns2": {"198.18.3.0"}}},
		{desc: "the freed address is handed out again", allocate: alloc(svc("default/new"), IPv4, ""),
			wantAddr: "198.18.1.1", wantPool: "a-small",
			want: map[string][]string{"default/web": {"198.18.1.0"}, "default/api": {"198.18.4.0"}, "default/dns": {"198.18.3.2"}, "default/dns2": {"198.18.3.0"}, "default/new": {"198.18.1.1"}}},
		{desc: "pools change: a-small is gone, its holders keep their addresses", setPools: pools[1:],
			want: map[string][]string{"default/web": {"198.18.1.0"}, "default/api": {"198.18.4.0"}, "default/dns": {"198.18.3.2"}, "default/dns2": {"198.18.3.0"}, "default/new": {"198.18.1.1"}}},
		{desc: "reserve refuses an address held by another", reserve: kv("default/other", "198.18.1.0"),
			wantErr: ErrInUse, wantMsg: "held by default/web",
			want: map[string][]string{"default/web": {"198.18.1.0"}, "default/api": {"198.18.4.0"}, "default/dns": {"198.18.3.2"}, "default/dns2": {"198.18.3.0"}, "default/new": {"198.18.1.1"}}},
		{desc: "reserve records an address outside every pool", reserve: kv("default/legacy", "198.18.9.1"),
			want: map[string][]string{"default/web": {"198.18.1.0"}, "default/api": {"198.18.4.0"}, "default/dns": {"198.18.3.2"}, "default/dns2": {"198.18.3.0"}, "default/new": {"198.18.1.1"}, "default/legacy": {"198.18.9.1"}}},
	}
	a := New()
	for i, s := range steps {
		t.Run(fmt.Sprintf("%02d %s", i, s.desc), func(t *testing.T) {
			var (
				gotAddr netip.Addr
				gotPool string
				err     error
			)
			switch {
			case s.setPools != nil:
				err = a.SetPools(s.setPools)
			case s.request != nil:
				gotPool, err = a.Request(s.request.svc, addr(s.request.addr))
			case s.allocate != nil:
				gotAddr, gotPool, err = a.Allocate(s.allocate.svc, s.allocate.fam, s.allocate.pool)
			case s.reserve != nil:
				err = a.Reserve(s.reserve.key, addr(s.reserve.addr))
			case s.release != "":
				a.Release(s.release)
			case s.releaseIP != nil:
				if !a.ReleaseIP(s.releaseIP.key, addr(s.releaseIP.addr)) {
					t.Fatalf("ReleaseIP(%s, %s) = false", s.releaseIP.key, s.releaseIP.addr)
				}
			}
			checkErr(t, err, s.wantErr, s.wantMsg)
			if s.wantAddr != "" && gotAddr.String() != s.wantAddr {
				t.Errorf("address = %s, want %s", gotAddr, s.wantAddr)
			}
			if gotPool != s.wantPool {
				t.Errorf("pool = %q, want %q", gotPool, s.wantPool)
			}
			if diff := cmp.Diff(s.want, state(a)); diff != "" {
				t.Errorf("assignments (-want +got):\n%s", diff)
			}
		})
	}
}

func checkErr(t *testing.T, err, want error, msg string) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != nil && !errors.Is(err, want):
		t.Fatalf("error = %v, want %v", err, want)
	case want != nil && !strings.Contains(err.Error(), msg):
		t.Fatalf("error = %q, want it to contain %q", err, msg)
	}
}

func TestSetPoolsRejects(t *testing.T) {
	tests := []struct {
		name      string
		pools     []Pool
		wantPools []string
		wantMsgs  []string
	}{
		{
			name: "overlap with another pool: the one given first stays",
			pools: []Pool{
				{Name: "a", Ranges: []Range{MustParseRange("198.18.0.0/28")}},
				{Name: "b", Ranges: []Range{MustParseRange("198.18.0.8/29")}},
			},
			wantPools: []string{"a"},
			wantMsgs:  []string{"pool b: range 198.18.0.8/29 overlaps range 198.18.0.0/28 of pool a"},
		},
		{
			// The controller gives the pools oldest first: a new pool
			// that overlaps one in use is refused, whatever its name.
			name: "overlap with another pool: given first, not first by name",
			pools: []Pool{
				{Name: "zeta", Ranges: []Range{MustParseRange("198.18.0.8/29")}},
				{Name: "alpha", Ranges: []Range{MustParseRange("198.18.0.0/28")}},
				{Name: "beta", Ranges: []Range{MustParseRange("198.18.1.0/28")}},
			},
			wantPools: []string{"beta", "zeta"},
			wantMsgs:  []string{"pool alpha: range 198.18.0.0/28 overlaps range 198.18.0.8/29 of pool zeta"},
		},
		{
			name:      "overlap within a pool",
			pools:     []Pool{{Name: "a", Ranges: []Range{MustParseRange("198.18.0.0/28"), MustParseRange("198.18.0.15-198.18.0.20")}}},
			wantPools: []string{},
			wantMsgs:  []string{"range 198.18.0.15-198.18.0.20 overlaps its range 198.18.0.0/28"},
		},
		{
			name:      "IPv4 and IPv6 do not overlap",
			pools:     []Pool{{Name: "a", Ranges: []Range{MustParseRange("0.0.0.0/0")}}, {Name: "b", Ranges: []Range{MustParseRange("::/0")}}},
			wantPools: []string{"a", "b"},
		},
		{
			name:      "no ranges, no name, twice",
			pools:     []Pool{{Name: "a"}, {Name: ""}, {Name: "b", Ranges: []Range{MustParseRange("198.18.0.1-198.18.0.1")}}, {Name: "b", Ranges: []Range{MustParseRange("198.18.0.2-198.18.0.2")}}},
			wantPools: []string{"b"},
			wantMsgs:  []string{"a pool needs a name", "pool a has no address ranges", "pool b is defined twice"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := New()
			err := a.SetPools(tt.pools)
			if diff := cmp.Diff(tt.wantPools, a.Pools(), cmp.Transformer("nonnil", func(s []string) []string {
				if s == nil {
					return []string{}
				}
				return s
			})); diff != "" {
				t.Errorf("pools in use (-want +got):\n%s", diff)
			}
			if len(tt.wantMsgs) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidPool) {
				t.Fatalf("error = %v, want ErrInvalidPool", err)
			}
			for _, m := range tt.wantMsgs {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not contain %q", err, m)
				}
			}
		})
	}
}

func TestParseRange(t *testing.T) {
	tests := []struct {
		in       string
		want     string // Range.String
		wantSize uint64
		wantErr  string
	}{
		{in: "198.18.0.0/24", want: "198.18.0.0/24", wantSize: 256},
		{in: "198.18.0.10 - 198.18.0.20", want: "198.18.0.10-198.18.0.20", wantSize: 11},
		{in: "198.18.0.0-198.18.0.255", want: "198.18.0.0/24", wantSize: 256},
		{in: "198.18.0.7/32", want: "198.18.0.7", wantSize: 1},
		{in: "198.18.0.7", want: "198.18.0.7", wantSize: 1},
		{in: "fd00::/120", want: "fd00::/120", wantSize: 256},
		{in: "fd00::/8", want: "fd00::/8", wantSize: ^uint64(0)},
		{in: "198.18.0.1/24", wantErr: "host bits are set; the block is 198.18.0.0/24"},
		{in: "198.18.0.9-198.18.0.1", wantErr: "ends (198.18.0.1) before it starts (198.18.0.9)"},
		{in: "198.18.0.1-fd00::1", wantErr: "different families"},
		{in: "::ffff:198.18.0.0/120", wantErr: "want a plain IPv4 or IPv6 block"},
		{in: "fe80::1%eth0-fe80::2", wantErr: "without zone"},
		{in: "banana", wantErr: "want a CIDR block"},
		{in: "1.2.3.4-x", wantErr: "want FIRST-LAST"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			r, err := ParseRange(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseRange(%q) error = %v, want %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.String(); got != tt.want {
				t.Errorf("String = %q, want %q", got, tt.want)
			}
			if got := r.Size(); got != tt.wantSize {
				t.Errorf("Size = %d, want %d", got, tt.wantSize)
			}
		})
	}
}

// Test1000Services hands out addresses to 1,000 Services over three pools,
// with requests, releases and a rebuild in between, and checks after each
// phase that no address is held twice, every address lies in a pool that
// admits its holder, and the pool statistics agree.
func Test1000Services(t *testing.T) {
	pools := []Pool{
		{Name: "p1", Ranges: []Range{MustParseRange("198.18.0.0/23")}, AutoAssign: true},                                       // 512
		{Name: "p2", Ranges: []Range{MustParseRange("198.18.4.0-198.18.5.87")}, AutoAssign: true, Namespaces: []string{"ns1"}}, // 344
		{Name: "p3", Ranges: []Range{MustParseRange("198.18.8.0/24"), MustParseRange("fd00:8::/118")}, AutoAssign: true},       // 256 + 1024
	}
	tests := []struct {
		name      string
		services  int
		releaseMo int // release every Service whose index is a multiple (0: none)
		rebuild   bool
		wantUsed  map[string]int
		wantFails int // allocations refused as exhausted
	}{
		{name: "1000 allocate: p1 fills, ns0 spills to p3, ns1 to its own p2", services: 1000,
			wantUsed: map[string]int{"p1": 512, "p2": 333, "p3": 155}},
		{name: "release every 10th, allocate all again: the holes are refilled", services: 1000, releaseMo: 10,
			wantUsed: map[string]int{"p1": 512, "p2": 333, "p3": 155}},
		{name: "rebuild from the assignments, allocate all again: nothing moves", services: 1000, rebuild: true,
			wantUsed: map[string]int{"p1": 512, "p2": 333, "p3": 155}},
		{name: "50 more Services in ns0: p3's 101 free IPv4 addresses take them", services: 1050,
			wantUsed: map[string]int{"p1": 512, "p2": 333, "p3": 205}},
		{name: "200 more in ns0: 51 fit, 149 are refused as exhausted", services: 1250,
			wantUsed: map[string]int{"p1": 512, "p2": 333, "p3": 256}, wantFails: 149},
	}
	a := New()
	if err := a.SetPools(pools); err != nil {
		t.Fatal(err)
	}
	// Services in ns1 (every third) may use p2; the rest only p1 and p3.
	svcOf := func(i int) Service {
		ns := "ns0"
		if i < 1000 && i%3 == 1 {
			ns = "ns1"
		}
		return Service{Key: fmt.Sprintf("%s/s%04d", ns, i), Namespace: ns}
	}
	// The ns0 Services first: they fill p1 and spill into p3, so the
	// ns1 Services find p1 full and go to p2, which only they may use.
	// Services 1000 and up are all in ns0.
	order := make([]int, 0, 1250)
	for i := range 1000 {
		if i%3 != 1 {
			order = append(order, i)
		}
	}
	for i := range 1000 {
		if i%3 == 1 {
			order = append(order, i)
		}
	}
	for i := 1000; i < 1250; i++ {
		order = append(order, i)
	}
	holders := map[string]netip.Addr{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.releaseMo > 0 {
				for i := 0; i < tt.services; i += tt.releaseMo {
					a.Release(svcOf(i).Key)
					delete(holders, svcOf(i).Key)
				}
			}
			if tt.rebuild {
				old := a
				a = New()
				if err := a.SetPools(pools); err != nil {
					t.Fatal(err)
				}
				for k := range old.byKey {
					for _, x := range old.IPs(k) {
						if err := a.Reserve(k, x); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			fails := 0
			for _, i := range order[:tt.services] {
				s := svcOf(i)
				got, _, err := a.Allocate(s, IPv4, "")
				if errors.Is(err, ErrExhausted) {
					fails++
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", s.Key, err)
				}
				if prev, ok := holders[s.Key]; ok && prev != got {
					t.Fatalf("%s moved from %s to %s", s.Key, prev, got)
				}
				holders[s.Key] = got
			}
			if fails != tt.wantFails {
				t.Errorf("exhausted refusals = %d, want %d", fails, tt.wantFails)
			}
			seen := map[netip.Addr]string{}
			for k, x := range holders {
				if other, dup := seen[x]; dup {
					t.Fatalf("%s is held by %s and %s", x, other, k)
				}
				seen[x] = k
				if owner, _ := a.Owner(x); owner != k {
					t.Fatalf("Owner(%s) = %q, want %q", x, owner, k)
				}
				p := a.byName[a.PoolOf(x)]
				if p == nil {
					t.Fatalf("%s of %s is in no pool", x, k)
				}
				ns, _, _ := strings.Cut(k, "/")
				if err := p.Admits(Service{Key: k, Namespace: ns}); err != nil {
					t.Fatalf("%s holds %s: %v", k, x, err)
				}
			}
			if len(seen) != a.Len() {
				t.Errorf("allocator holds %d addresses, the test saw %d", a.Len(), len(seen))
			}
			used := map[string]int{}
			for _, st := range a.Stats() {
				used[st.Name] = st.Used
			}
			if diff := cmp.Diff(tt.wantUsed, used); diff != "" {
				t.Errorf("pool use (-want +got):\n%s", diff)
			}
		})
	}
}
