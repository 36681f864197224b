package render

import (
	"fmt"
	"slices"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// tcpRequestLines are a frontend's acl and tcp-request lines: the named
// acls by name, then the connection rules and the content rules in
// order. An acl is written as its criterion (Keyword, else Fetch), -i,
// and its values.
func tcpRequestLines(tr *lbconfig.TCPRequest) ([][]string, error) {
	if tr == nil {
		return nil, nil
	}
	var out [][]string
	names := make([]string, 0, len(tr.ACLs))
	for name := range tr.ACLs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		for _, t := range tr.ACLs[name] {
			words, err := aclWords(t)
			if err != nil {
				return nil, fmt.Errorf("acl %s: %w", name, err)
			}
			out = append(out, append([]string{"acl", name}, words...))
		}
	}
	for _, kind := range []string{"connection", "content"} {
		rules := tr.Connection
		if kind == "content" {
			rules = tr.Content
		}
		for _, r := range rules {
			words := []string{"tcp-request", kind, r.Action}
			if r.Expr != nil {
				words = append(words, r.Expr.String())
			}
			cond, err := condWords(r.Cond)
			if err != nil {
				return nil, fmt.Errorf("tcp-request %s %s: %w", kind, r.Action, err)
			}
			out = append(out, append(words, cond...))
		}
	}
	return out, nil
}

func aclWords(t lbconfig.ACLTest) ([]string, error) {
	if !slices.Contains(lbconfig.L4Fetches, t.Fetch) {
		return nil, fmt.Errorf("criterion %q: the writer writes acls of tcp-request rules only (accepted: %v)", t.Fetch, lbconfig.L4Fetches)
	}
	words := []string{t.Fetch}
	if t.Insensitive {
		words = append(words, "-i")
	}
	return append(words, t.Values...), nil
}

func condWords(c *lbconfig.Cond) ([]string, error) {
	if c == nil {
		return nil, nil
	}
	words := []string{"if"}
	if c.Unless {
		words[0] = "unless"
	}
	for i, and := range c.Or {
		if i > 0 {
			words = append(words, "||")
		}
		for _, t := range and {
			neg := ""
			if t.Neg {
				neg = "!"
			}
			if t.Anon == nil {
				words = append(words, neg+t.Name)
				continue
			}
			aw, err := aclWords(*t.Anon)
			if err != nil {
				return nil, err
			}
			if neg != "" {
				words = append(words, neg)
			}
			words = append(append(append(words, "{"), aw...), "}")
		}
	}
	return words, nil
}
