package redirect

import (
	"fmt"
	"strings"

	"github.com/google/nftables"
)

// Sweep deletes, in the calling thread's network namespace, every inet
// table whose name starts with TablePrefix, in one transaction, and returns
// their names. It is the supervisor's clean-up after the node agent died
// (kill -9, a panic): its redirects point at a load balancer that no longer
// runs. No table is fine.
func Sweep() ([]string, error) {
	c, err := nftables.New()
	if err != nil {
		return nil, fmt.Errorf("redirect: sweep: open nftables: %w", err)
	}
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		return nil, fmt.Errorf("redirect: sweep: list inet tables: %w", err)
	}
	var names []string
	for _, t := range tables {
		if !strings.HasPrefix(t.Name, TablePrefix) {
			continue
		}
		// Add before delete: a table removed meanwhile does not fail the
		// transaction.
		tt := &nftables.Table{Name: t.Name, Family: nftables.TableFamilyINet}
		c.AddTable(tt)
		c.DelTable(tt)
		names = append(names, t.Name)
	}
	if len(names) == 0 {
		return nil, nil
	}
	if err := c.Flush(); err != nil {
		return nil, fmt.Errorf("redirect: sweep %v: %w", names, err)
	}
	return names, nil
}
