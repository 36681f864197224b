package allocator

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
)

// Family is an address family.
type Family int

const (
	IPv4 Family = 4
	IPv6 Family = 6
)

// FamilyOf returns the family of a.
func FamilyOf(a netip.Addr) Family {
	if a.Is4() || a.Is4In6() {
		return IPv4
	}
	return IPv6
}

func (f Family) String() string { return fmt.Sprintf("IPv%d", int(f)) }

// Selector matches a Service's labels. The controller adapts a Kubernetes
// label selector to it.
type Selector interface {
	Matches(labels map[string]string) bool
	String() string
}

// Pool is a named set of address ranges.
type Pool struct {
	Name   string
	Ranges []Range
	// AutoAssign lets Allocate pick addresses from the pool for Services
	// that did not name it. A pool without it serves only explicit
	// requests (an address, or the pool by name).
	AutoAssign bool
	// Namespaces, when not empty, are the only namespaces whose Services
	// may get addresses from the pool.
	Namespaces []string
	// Selector, when set, must match the Service's labels.
	Selector Selector
}

// Service is what the allocator knows of a Service.
type Service struct {
	Key       string // "namespace/name"
	Namespace string
	Labels    map[string]string
}

// Admits says why svc may not use p, or returns nil when it may.
func (p *Pool) Admits(svc Service) error {
	if len(p.Namespaces) > 0 && !slices.Contains(p.Namespaces, svc.Namespace) {
		return fmt.Errorf("pool %s admits namespaces %s, not %q", p.Name, strings.Join(p.Namespaces, ", "), svc.Namespace)
	}
	if p.Selector != nil && !p.Selector.Matches(svc.Labels) {
		return fmt.Errorf("pool %s admits Services whose labels match %q; %s has labels %s", p.Name, p.Selector.String(), svc.Key, labelString(svc.Labels))
	}
	return nil
}

func (p *Pool) has(f Family) bool {
	for _, r := range p.Ranges {
		if r.Family() == f {
			return true
		}
	}
	return false
}

func (p *Pool) contains(a netip.Addr) bool {
	for _, r := range p.Ranges {
		if r.Contains(a) {
			return true
		}
	}
	return false
}

func labelString(m map[string]string) string {
	if len(m) == 0 {
		return "{}"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k + "=" + m[k])
	}
	b.WriteByte('}')
	return b.String()
}

// The kinds of refusal; test with errors.Is.
var (
	// ErrInUse: the address belongs to another Service.
	ErrInUse = errors.New("address in use")
	// ErrNotInPool: the address is in no pool.
	ErrNotInPool = errors.New("address in no pool")
	// ErrForbidden: the pool does not admit the Service.
	ErrForbidden = errors.New("pool does not admit the Service")
	// ErrNoPool: no pool could serve the request at all.
	ErrNoPool = errors.New("no pool")
	// ErrExhausted: every pool that could serve the request is full.
	ErrExhausted = errors.New("pool exhausted")
	// ErrInvalidPool: a pool definition was rejected.
	ErrInvalidPool = errors.New("invalid pool")
)

// Error is a refusal. Kind is one of the Err values above.
type Error struct {
	Op      string // "request", "allocate", "reserve", "pool"
	Service string // the Service's key, when one is concerned
	IP      netip.Addr
	Pool    string
	Kind    error
	Detail  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	if e.Service != "" {
		b.WriteString(" for " + e.Service)
	}
	if e.IP.IsValid() {
		b.WriteString(" of " + e.IP.String())
	}
	b.WriteString(": ")
	b.WriteString(e.Kind.Error())
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Kind }

// Allocator records which Service holds which address. It is not safe for
// concurrent use; the controller guards it with its own lock.
type Allocator struct {
	pools  []*Pool // sorted by name
	byName map[string]*Pool
	owner  map[netip.Addr]string
	byKey  map[string][]netip.Addr
}

// New returns an allocator with no pools and no assignments.
func New() *Allocator {
	return &Allocator{byName: map[string]*Pool{}, owner: map[netip.Addr]string{}, byKey: map[string][]netip.Addr{}}
}

// SetPools replaces the pools. Assignments are kept, whether or not an
// address is still in a pool (a Service keeps its address until it is
// released). A pool with no ranges, a duplicate name, or ranges that
// overlap another pool's (or each other) is rejected and left out; the
// error joins one *Error per rejected pool. Pools are checked in the
// order given, so of two overlapping pools (or two of one name) the
// earlier is kept: the controller gives the pools already serving first,
// then the oldest, so that a pool created or edited to overlap one in use
// is the one refused, not the one in use.
// Allocate still tries auto-assign pools in name order.
func (a *Allocator) SetPools(pools []Pool) error {
	a.pools = nil
	a.byName = map[string]*Pool{}
	var errs []error
	reject := func(p Pool, format string, args ...any) {
		errs = append(errs, &Error{Op: "pool", Pool: p.Name, Kind: ErrInvalidPool, Detail: fmt.Sprintf(format, args...)})
	}
next:
	for _, p := range pools {
		switch {
		case p.Name == "":
			reject(p, "a pool needs a name")
			continue
		case a.byName[p.Name] != nil:
			reject(p, "pool %s is defined twice", p.Name)
			continue
		case len(p.Ranges) == 0:
			reject(p, "pool %s has no address ranges", p.Name)
			continue
		}
		for i, r := range p.Ranges {
			if err := r.validate(); err != nil {
				reject(p, "pool %s range %d: %v", p.Name, i, err)
				continue next
			}
			for j := range i {
				if r.Overlaps(p.Ranges[j]) {
					reject(p, "pool %s: range %s overlaps its range %s", p.Name, r, p.Ranges[j])
					continue next
				}
			}
			for _, q := range a.pools {
				for _, s := range q.Ranges {
					if r.Overlaps(s) {
						reject(p, "pool %s: range %s overlaps range %s of pool %s (an address belongs to one pool)", p.Name, r, s, q.Name)
						continue next
					}
				}
			}
		}
		p := p
		a.pools = append(a.pools, &p)
		a.byName[p.Name] = &p
	}
	sort.SliceStable(a.pools, func(i, j int) bool { return a.pools[i].Name < a.pools[j].Name })
	return errors.Join(errs...)
}

// Pools returns the names of the pools in use, sorted.
func (a *Allocator) Pools() []string {
	out := make([]string, len(a.pools))
	for i, p := range a.pools {
		out[i] = p.Name
	}
	return out
}

// HasPool reports whether a pool of that name is in use (defined and not
// rejected by SetPools).
func (a *Allocator) HasPool(name string) bool { return a.byName[name] != nil }

// PoolOf returns the name of the pool holding addr, or "".
func (a *Allocator) PoolOf(addr netip.Addr) string {
	addr = addr.Unmap()
	for _, p := range a.pools {
		if p.contains(addr) {
			return p.Name
		}
	}
	return ""
}

// Owner returns the key of the Service holding addr.
func (a *Allocator) Owner(addr netip.Addr) (string, bool) {
	k, ok := a.owner[addr.Unmap()]
	return k, ok
}

// IPs returns the addresses svc holds, sorted.
func (a *Allocator) IPs(key string) []netip.Addr {
	out := slices.Clone(a.byKey[key])
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

// Len returns the number of assigned addresses.
func (a *Allocator) Len() int { return len(a.owner) }

func (a *Allocator) record(key string, addr netip.Addr) {
	a.owner[addr] = key
	a.byKey[key] = append(a.byKey[key], addr)
}

// Reserve records that key holds addr, as found in the API (a rebuild
// after a restart). Only a holder other than key is refused: an address
// outside every pool, or in a pool that no longer admits the Service, is
// still recorded, so that it is never handed to another Service while its
// holder keeps it.
func (a *Allocator) Reserve(key string, addr netip.Addr) error {
	addr = addr.Unmap()
	if !addr.IsValid() {
		return &Error{Op: "reserve", Service: key, Kind: ErrNotInPool, Detail: "invalid address"}
	}
	if k, ok := a.owner[addr]; ok {
		if k == key {
			return nil
		}
		return &Error{Op: "reserve", Service: key, IP: addr, Pool: a.PoolOf(addr), Kind: ErrInUse, Detail: "held by " + k}
	}
	a.record(key, addr)
	return nil
}

// Request gives svc the address it asked for, when a pool holds it, the
// pool admits svc and no other Service holds it. It returns the pool's
// name. Asking again for an address svc already holds succeeds.
func (a *Allocator) Request(svc Service, addr netip.Addr) (string, error) {
	addr = addr.Unmap()
	fail := func(pool string, kind error, format string, args ...any) (string, error) {
		return "", &Error{Op: "request", Service: svc.Key, IP: addr, Pool: pool, Kind: kind, Detail: fmt.Sprintf(format, args...)}
	}
	if !addr.IsValid() {
		return fail("", ErrNotInPool, "invalid address")
	}
	pool := a.PoolOf(addr)
	if k, ok := a.owner[addr]; ok {
		if k == svc.Key {
			return pool, nil
		}
		return fail(pool, ErrInUse, "held by %s", k)
	}
	if pool == "" {
		return fail("", ErrNotInPool, "no pool holds %s (pools: %s)", addr, a.describePools())
	}
	if err := a.byName[pool].Admits(svc); err != nil {
		return fail(pool, ErrForbidden, "%v", err)
	}
	a.record(svc.Key, addr)
	return pool, nil
}

// Allocate returns an address of family f for svc: the one it already
// holds, else the first free one of the named pool (which must admit svc
// but need not auto-assign), else of the first auto-assign pool, in name
// order, that admits svc and has a free address of that family.
func (a *Allocator) Allocate(svc Service, f Family, pool string) (netip.Addr, string, error) {
	for _, addr := range a.byKey[svc.Key] {
		if FamilyOf(addr) == f {
			return addr, a.PoolOf(addr), nil
		}
	}
	fail := func(pool string, kind error, format string, args ...any) (netip.Addr, string, error) {
		return netip.Addr{}, "", &Error{Op: "allocate " + f.String(), Service: svc.Key, Pool: pool, Kind: kind, Detail: fmt.Sprintf(format, args...)}
	}
	var candidates []*Pool
	if pool != "" {
		p := a.byName[pool]
		switch {
		case p == nil:
			return fail(pool, ErrNoPool, "pool %s does not exist (pools: %s)", pool, a.describePools())
		case !p.has(f):
			return fail(pool, ErrNoPool, "pool %s has no %s ranges", pool, f)
		}
		if err := p.Admits(svc); err != nil {
			return fail(pool, ErrForbidden, "%v", err)
		}
		candidates = []*Pool{p}
	} else {
		var why []string
		for _, p := range a.pools {
			switch err := p.Admits(svc); {
			case !p.AutoAssign:
				why = append(why, p.Name+": auto-assign is off")
			case !p.has(f):
				why = append(why, fmt.Sprintf("%s: no %s ranges", p.Name, f))
			case err != nil:
				why = append(why, err.Error())
			default:
				candidates = append(candidates, p)
			}
		}
		if len(candidates) == 0 {
			if len(why) == 0 {
				why = []string{"there are no pools"}
			}
			return fail("", ErrNoPool, "no auto-assign pool with %s ranges admits %s (%s)", f, svc.Key, strings.Join(why, "; "))
		}
	}
	for _, p := range candidates {
		if addr, ok := a.free(p, f); ok {
			a.record(svc.Key, addr)
			return addr, p.Name, nil
		}
	}
	names := make([]string, len(candidates))
	for i, p := range candidates {
		names[i] = p.Name
	}
	return fail(strings.Join(names, ","), ErrExhausted, "every %s address of pool %s is assigned", f, strings.Join(names, ", "))
}

func (a *Allocator) free(p *Pool, f Family) (netip.Addr, bool) {
	for _, r := range p.Ranges {
		if r.Family() != f {
			continue
		}
		for addr := r.First; ; addr = addr.Next() {
			if _, used := a.owner[addr]; !used {
				return addr, true
			}
			if addr == r.Last {
				break
			}
		}
	}
	return netip.Addr{}, false
}

// Release gives back every address key holds and returns them, sorted.
func (a *Allocator) Release(key string) []netip.Addr {
	out := a.IPs(key)
	for _, addr := range out {
		delete(a.owner, addr)
	}
	delete(a.byKey, key)
	return out
}

// ReleaseIP gives back one address of key; it reports whether key held it.
func (a *Allocator) ReleaseIP(key string, addr netip.Addr) bool {
	addr = addr.Unmap()
	if a.owner[addr] != key {
		return false
	}
	delete(a.owner, addr)
	list := a.byKey[key]
	list = slices.DeleteFunc(list, func(x netip.Addr) bool { return x == addr })
	if len(list) == 0 {
		delete(a.byKey, key)
	} else {
		a.byKey[key] = list
	}
	return true
}

// PoolStats is how full a pool is.
type PoolStats struct {
	Name string
	Size uint64 // addresses in the pool, saturating at the largest uint64
	Used int
}

// Stats returns every pool's size and use, in name order.
func (a *Allocator) Stats() []PoolStats {
	out := make([]PoolStats, len(a.pools))
	idx := map[string]int{}
	for i, p := range a.pools {
		var size uint64
		for _, r := range p.Ranges {
			s := r.Size()
			if size+s < size {
				size = ^uint64(0)
			} else {
				size += s
			}
		}
		out[i] = PoolStats{Name: p.Name, Size: size}
		idx[p.Name] = i
	}
	for addr := range a.owner {
		if i, ok := idx[a.PoolOf(addr)]; ok {
			out[i].Used++
		}
	}
	return out
}

func (a *Allocator) describePools() string {
	if len(a.pools) == 0 {
		return "none"
	}
	var parts []string
	for _, p := range a.pools {
		rs := make([]string, len(p.Ranges))
		for i, r := range p.Ranges {
			rs[i] = r.String()
		}
		parts = append(parts, p.Name+" "+strings.Join(rs, ","))
	}
	return strings.Join(parts, "; ")
}
