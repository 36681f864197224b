// Package results reads the RESULTS table that ../shared/corpus/run.sh
// writes: tab-separated, a header row of column names, one row per file.
package results

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Read returns the rows of the table at path, each a map from column name
// to value (a short row leaves its last columns empty). Every column of
// need must be in the header.
func Read(path string, need ...string) ([]map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var cols []string
	var rows []map[string]string
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if cols == nil {
			cols = fields
			for _, c := range need {
				if !slices.Contains(cols, c) {
					return nil, fmt.Errorf("%s: no column %q in its header %q", path, c, sc.Text())
				}
			}
			continue
		}
		row := make(map[string]string, len(cols))
		for i, c := range cols {
			if i < len(fields) {
				row[c] = fields[i]
			} else {
				row[c] = ""
			}
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if cols == nil {
		return nil, fmt.Errorf("%s: empty, no header", path)
	}
	return rows, nil
}
