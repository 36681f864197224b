// Package statstest compares vipstack's stats JSON with haproxy's, for
// the tests of internal/lb and internal/lb/stats.
package statstest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Key names a stats line: objType pxname/svname.
func Key(rec []JSONField) string {
	var px, sv any
	for _, f := range rec {
		switch f.Field.Name {
		case "pxname":
			px = f.Value.Value
		case "svname":
			sv = f.Value.Value
		}
	}
	return fmt.Sprintf("%s %v/%v", rec[0].ObjType, px, sv)
}

// JSONField is one field object of haproxy's `;json` stats, read
// back by the tests.
type JSONField struct {
	ObjType string `json:"objType"`
	ProxyID int    `json:"proxyId"`
	ID      int    `json:"id"`
	Field   struct {
		Pos  int    `json:"pos"`
		Name string `json:"name"`
	} `json:"field"`
	ProcessNum int `json:"processNum"`
	Tags       struct {
		Origin string `json:"origin"`
		Nature string `json:"nature"`
		Scope  string `json:"scope"`
	} `json:"tags"`
	Value struct {
		Type  string `json:"type"`
		Value any    `json:"value"`
	} `json:"value"`
}

// CompareLayout compares two `;json` outputs line by line: the same
// lines with the same ids, vipstack's fields a subset of haproxy's with
// the same position, tags and type, in position order, and the fields
// named in same with equal values. It logs what vipstack leaves out.
func CompareLayout(t testing.TB, hrecs, vrecs [][]JSONField, same []string) {
	t.Helper()
	type line struct {
		Key         string
		ProxyID, ID int
	}
	lines := func(recs [][]JSONField) []line {
		var ls []line
		for _, r := range recs {
			ls = append(ls, line{Key(r), r[0].ProxyID, r[0].ID})
		}
		return ls
	}
	if diff := cmp.Diff(lines(hrecs), lines(vrecs)); diff != "" {
		t.Fatalf("JSON lines (-haproxy +vipstack):\n%s", diff)
	}
	for i, vr := range vrecs {
		hr := hrecs[i]
		byName := map[string]JSONField{}
		for _, f := range hr {
			byName[f.Field.Name] = f
		}
		var missing []string
		for _, f := range hr {
			if !slices.ContainsFunc(vr, func(g JSONField) bool { return g.Field.Name == f.Field.Name }) {
				missing = append(missing, f.Field.Name)
			}
		}
		t.Logf("%s: vipstack gives %d of haproxy's %d fields; not: %s", Key(vr), len(vr), len(hr), strings.Join(missing, " "))
		lastPos := -1
		for _, f := range vr {
			h, ok := byName[f.Field.Name]
			if !ok {
				t.Errorf("%s: vipstack gives %s, haproxy does not", Key(vr), f.Field.Name)
				continue
			}
			if f.Field.Pos <= lastPos {
				t.Errorf("%s: %s at pos %d after pos %d", Key(vr), f.Field.Name, f.Field.Pos, lastPos)
			}
			lastPos = f.Field.Pos
			want, got := h, f
			want.Value.Value, got.Value.Value = nil, nil
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s field %s (-haproxy +vipstack):\n%s", Key(vr), f.Field.Name, diff)
			}
			if f.Field.Name == "last_chk" {
				t.Logf("%s: last_chk %q, haproxy %q", Key(vr), f.Value.Value, h.Value.Value)
			}
			if slices.Contains(same, f.Field.Name) && h.Value.Value != f.Value.Value {
				t.Errorf("%s: %s = %v, haproxy %v", Key(vr), f.Field.Name, f.Value.Value, h.Value.Value)
			}
		}
	}
}
