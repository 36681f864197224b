package lbconfig

import (
	"errors"
	"strconv"
	"time"
)

// Stick tables (haproxy's `stick-table` and `stick` rules) and `peers`
// sections whose only peer is this host, which haproxy 2.6 uses to hand
// a table to the next process at a reload.

// StickTable is a backend's `stick-table`: entries by key, each with the
// server the key sticks to (by name: haproxy 2.6's server_key).
type StickTable struct {
	// Type is the key's: ip, ipv6, integer, string or binary; Len is a
	// string's or binary key's length in bytes (haproxy's defaults: 32).
	Type string
	Len  int
	// Size is the most entries kept; a new one takes the place of the
	// least recently used (unless NoPurge, when it is not stored).
	Size    int
	NoPurge bool
	// Expire drops an entry that has not been stored or matched for that
	// long; 0: entries stay until purged.
	Expire time.Duration
	// Peers names the `peers` section whose local peer keeps the table
	// over a reload; "" without.
	Peers string
	// Store are the data types written after `store`, as written
	// (gpc0, http_req_rate(10s), ...): only track-sc rules fill them,
	// which vipstack does not have, so they stay empty, as in haproxy
	// without such rules.
	Store []string
}

// StickRule is a `stick on`, `stick match` or `stick store-request`
// rule: the client's source address (the only pattern vipstack takes)
// looked up in Table's stick table (the backend's own when "") before
// balancing, stored with the server the connection goes to, or both.
type StickRule struct {
	Match, Store bool
	Pattern      string // "src"
	Table        string
}

// Peers is a `peers` section: vipstack takes those whose only peer is
// the local one (named after the host, or `localpeer`).
type Peers struct {
	Name  string
	Local string // the local peer's name
}

// PeersByName returns the peers section called name, nil if none.
func (c *Config) PeersByName(name string) *Peers {
	for i := range c.Peers {
		if c.Peers[i].Name == name {
			return &c.Peers[i]
		}
	}
	return nil
}

// ErrYAMLStick: the YAML form has no stick tables.
var ErrYAMLStick = errors.New("stick-table and stick rules cannot be written in the YAML form (accepted: haproxy.cfg)")

// sticks checks stick tables and rules.
func (v *validator) sticks() {
	tables := map[string]*StickTable{}
	for i := range v.c.Backends {
		if t := v.c.Backends[i].StickTable; t != nil {
			tables[v.c.Backends[i].Name] = t
		}
	}
	for _, b := range v.c.Backends {
		key := BackendKey(b.Name)
		if t := b.StickTable; t != nil {
			pos := v.pos(ItemKey(key, "stick-table"), key)
			if t.Size <= 0 {
				v.fail(pos, key, "stick-table", "stick-table size %d (accepted: 1 or more entries)", t.Size)
			}
			if t.Peers != "" && v.c.PeersByName(t.Peers) == nil {
				v.fail(pos, key, "stick-table", "stick-table peers %q: no such peers section (accepted: the name of a peers section)", t.Peers)
			}
		}
		for j, r := range b.StickRules {
			pos := v.pos(ItemKey(key, "stick "+strconv.Itoa(j)), key)
			name := b.Name
			if r.Table != "" {
				name = r.Table
			}
			if tables[name] == nil {
				v.fail(pos, key, "stick", "stick rule: backend %q has no stick-table (accepted: a stick-table in the backend, or table NAME of one that has)", name)
			}
			if r.Pattern != "src" {
				v.fail(pos, key, "stick", "stick rule pattern %q is not supported by vipstack (accepted: src)", r.Pattern)
			}
		}
	}
}
