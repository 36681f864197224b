package lb

import (
	"container/list"
	"encoding/binary"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// Stick tables: `stick-table` and `stick on|match|store-request src`, as
// haproxy 2.6 carries them out. An entry names its server (haproxy 2.6's
// server_key, the name by default), so a reload that renumbers the
// servers keeps the clients where they were. A client whose source address has an
// entry goes to the entry's server while that server is not DOWN and not
// in maintenance (a drained server or one at weight 0 still takes its
// sticky clients, as in haproxy); otherwise the backend balances, and
// the server chosen is stored. A lookup and a store refresh the entry's
// expiry; a full table drops its least recently used entry for a new one
// (none with nopurge).

// stickTable is one backend's table.
type stickTable struct {
	conf lbconfig.StickTable

	mu      sync.Mutex
	entries map[string]*list.Element // of *stickEntry
	lru     list.List                // front: the most recently used
}

type stickEntry struct {
	key    string
	server string // haproxy 2.6's server_key: the server's name
	used   time.Time
}

func newStickTable(conf lbconfig.StickTable) *stickTable {
	return &stickTable{conf: conf, entries: map[string]*list.Element{}}
}

// keeps reports whether a table of conf may take old's entries at a
// reload: haproxy's local peer hands a table to the next process when
// both name a peers section and their keys are alike.
func (t *stickTable) keeps(conf lbconfig.StickTable) bool {
	return t.conf.Peers != "" && conf.Peers != "" && t.conf.Type == conf.Type && t.conf.Len == conf.Len
}

// key is the table's key for client, as haproxy converts the source
// address to the table's type; false when it cannot (an IPv6 client
// and a table of ip or integer).
func (t *stickTable) key(client netip.Addr) (string, bool) {
	a := client.Unmap()
	switch t.conf.Type {
	case "ip":
		if !a.Is4() {
			return "", false
		}
		b := a.As4()
		return string(b[:]), true
	case "ipv6":
		b := a.As16() // an IPv4 client as ::ffff:a.b.c.d
		return string(b[:]), true
	case "integer":
		if !a.Is4() {
			return "", false
		}
		b := a.As4()
		return strconv.FormatUint(uint64(binary.BigEndian.Uint32(b[:])), 10), true
	case "string":
		s := a.String()
		if len(s) > t.conf.Len {
			s = s[:t.conf.Len]
		}
		return s, true
	default: // binary: the address's bytes, padded with zeros to len
		raw := a.AsSlice()
		b := make([]byte, t.conf.Len)
		copy(b, raw)
		return string(b), true
	}
}

// lookup returns the server name of key's entry, refreshing it.
func (t *stickTable) lookup(key string, now time.Time) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	el := t.entries[key]
	if el == nil {
		return "", false
	}
	e := el.Value.(*stickEntry)
	if t.expired(e, now) {
		t.lru.Remove(el)
		delete(t.entries, key)
		return "", false
	}
	e.used = now
	t.lru.MoveToFront(el)
	return e.server, true
}

// store sets key's entry to server.
func (t *stickTable) store(key, server string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if el := t.entries[key]; el != nil {
		e := el.Value.(*stickEntry)
		e.server, e.used = server, now
		t.lru.MoveToFront(el)
		return
	}
	for t.lru.Len() >= t.conf.Size {
		last := t.lru.Back()
		if e := last.Value.(*stickEntry); t.conf.NoPurge && !t.expired(e, now) {
			return // full, and nothing may go
		}
		t.lru.Remove(last)
		delete(t.entries, last.Value.(*stickEntry).key)
	}
	t.entries[key] = t.lru.PushFront(&stickEntry{key: key, server: server, used: now})
}

func (t *stickTable) expired(e *stickEntry, now time.Time) bool {
	return t.conf.Expire > 0 && now.Sub(e.used) >= t.conf.Expire
}

// len is the number of entries (expired ones included until touched).
func (t *stickTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lru.Len()
}

// poolStick is a pool's stick rules: the table they use, whether they
// look the client up and whether they store its server.
type poolStick struct {
	table        *stickTable
	match, store bool
}

// stickTables builds the tables of cfg, keeping those of l that a local
// peer would hand over (stickTable.keeps). l.mu is held.
func (l *LB) stickTables(cfg *lbconfig.Config) map[string]*stickTable {
	out := map[string]*stickTable{}
	for _, b := range cfg.Backends {
		if b.StickTable == nil {
			continue
		}
		if old := l.sticks[b.Name]; old != nil && old.keeps(*b.StickTable) {
			old.mu.Lock()
			old.conf = *b.StickTable
			old.mu.Unlock()
			out[b.Name] = old
			continue
		}
		out[b.Name] = newStickTable(*b.StickTable)
	}
	return out
}

// setStick gives p backend b's stick rules over tables.
func (p *pool) setStick(b lbconfig.Backend, tables map[string]*stickTable) {
	if len(b.StickRules) == 0 {
		return
	}
	ps := &poolStick{}
	for _, r := range b.StickRules {
		name := b.Name
		if r.Table != "" {
			name = r.Table
		}
		if ps.table == nil {
			ps.table = tables[name]
		}
		ps.match = ps.match || r.Match
		ps.store = ps.store || r.Store
	}
	if ps.table == nil {
		return
	}
	p.stick = ps
}

// stickyPick is the server client sticks to, -1 when none may take it:
// no rule matches, no entry, or its server is DOWN, in maintenance,
// full or in skip.
func (p *pool) stickyPick(client netip.Addr, skip uint64, now time.Time) int {
	ps := p.stick
	if ps == nil || !ps.match || !client.IsValid() {
		return -1
	}
	key, ok := ps.table.key(client)
	if !ok {
		return -1
	}
	name, ok := ps.table.lookup(key, now)
	if !ok {
		return -1
	}
	for i, s := range p.servers {
		if s.name != name {
			continue
		}
		if skip&bit(i) == 0 && s.up.Load() && stats.AdminState(s.admin.Load()) != stats.AdminMaint && !s.full() {
			return i
		}
	}
	return -1
}

// stickStore stores server i as client's (store-request rules).
func (p *pool) stickStore(client netip.Addr, i int, now time.Time) {
	ps := p.stick
	if ps == nil || !ps.store || !client.IsValid() || i < 0 || i >= len(p.servers) {
		return
	}
	if key, ok := ps.table.key(client); ok {
		ps.table.store(key, p.servers[i].name, now)
	}
}
