package benchdoc

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// Table is one table of a report: a header row and rows of cells.
type Table struct {
	Header []string
	Rows   [][]string
}

// Add appends a row.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// WriteText writes the table with aligned columns, for a terminal.
func (t Table) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.Header, "\t"))
	for _, r := range t.Rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// WriteMarkdown writes the table as a GitHub-flavoured Markdown table. A
// cell's "|" is escaped; a row shorter than the header is padded.
func (t Table) WriteMarkdown(w io.Writer) error {
	row := func(cells []string) string {
		out := make([]string, len(t.Header))
		for i := range out {
			if i < len(cells) {
				out[i] = strings.ReplaceAll(cells[i], "|", `\|`)
			}
		}
		return "| " + strings.Join(out, " | ") + " |\n"
	}
	var b strings.Builder
	b.WriteString(row(t.Header))
	b.WriteString("|" + strings.Repeat("---|", len(t.Header)) + "\n")
	for _, r := range t.Rows {
		b.WriteString(row(r))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Report is a bench's printed result: paragraphs and tables in order. It
// writes itself for a terminal (Text) or for docs/benchmarks.md
// (Markdown), so both say the same.
type Report struct {
	parts []part
}

type part struct {
	text  string
	table *Table
	list  []string
}

// Para adds a paragraph.
func (r *Report) Para(format string, args ...any) {
	r.parts = append(r.parts, part{text: fmt.Sprintf(format, args...)})
}

// Table adds a table.
func (r *Report) Table(t Table) { r.parts = append(r.parts, part{table: &t}) }

// List adds a list, one item per line (a bulleted list in Markdown).
func (r *Report) List(items []string) {
	if len(items) > 0 {
		r.parts = append(r.parts, part{list: items})
	}
}

// Text writes the report for a terminal.
func (r *Report) Text(w io.Writer) error {
	for i, p := range r.parts {
		if i > 0 {
			fmt.Fprintln(w)
		}
		switch {
		case p.table != nil:
			if err := p.table.WriteText(w); err != nil {
				return err
			}
		case p.list != nil:
			for _, l := range p.list {
				fmt.Fprintln(w, l)
			}
		default:
			fmt.Fprintln(w, p.text)
		}
	}
	return nil
}

// Markdown writes the report as Markdown.
func (r *Report) Markdown(w io.Writer) error {
	for i, p := range r.parts {
		if i > 0 {
			fmt.Fprintln(w)
		}
		switch {
		case p.table != nil:
			if err := p.table.WriteMarkdown(w); err != nil {
				return err
			}
		case p.list != nil:
			for _, l := range p.list {
				fmt.Fprintf(w, "- %s\n", l)
			}
		default:
			fmt.Fprintln(w, p.text)
		}
	}
	return nil
}

// Facts are what a run's figures depend on besides the code: when, on
// what machine, under what load, from which commit.
type Facts struct {
	Start   time.Time
	CPUs    int
	Kernel  string
	Load    string // /proc/loadavg's first three fields at the start
	Commit  string // short hash, with "+ changes" when the tree was modified
	Command string // the command line, as a user would type it
	Peers   []string
}

// Collect reads the facts at the start of a run. pkg is the bench's
// package path ("./bench/lb"), args its arguments; peers are version lines
// of the peers it runs beside vipstack ("HAProxy 2.6.12").
func Collect(pkg string, args []string, peers ...string) Facts {
	f := Facts{
		Start:   time.Now().UTC(),
		CPUs:    runtime.NumCPU(),
		Kernel:  firstLine("uname", "-r"),
		Command: strings.TrimSpace("go run " + pkg + " " + quoteArgs(args)),
		Peers:   peers,
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if fs := strings.Fields(string(b)); len(fs) >= 3 {
			f.Load = strings.Join(fs[:3], " ")
		}
	}
	f.Commit = firstLine("git", "rev-parse", "--short", "HEAD")
	if f.Commit == "" {
		f.Commit = "unknown"
	} else if out, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(out)) > 0 {
		f.Commit += " + changes"
	}
	return f
}

// String is the run line of a section.
func (f Facts) String() string {
	s := fmt.Sprintf("%s, %d CPUs, Linux %s, load %s at the start, commit %s",
		f.Start.Format("2006-01-02 15:04 MST"), f.CPUs, f.Kernel, f.Load, f.Commit)
	if len(f.Peers) > 0 {
		s += "; " + strings.Join(f.Peers, ", ")
	}
	return s
}

// Header adds the command and the run facts at the top of a Markdown
// block.
func (f Facts) Header(w io.Writer, took time.Duration) {
	fmt.Fprintf(w, "**Run:** `%s`, %s; took %s.\n", f.Command, f, took.Round(time.Second))
}

// FirstLine runs a command and returns the first line of its output ("" on
// error), for version strings.
func FirstLine(name string, args ...string) string { return firstLine(name, args...) }

func firstLine(name string, args ...string) string {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return ""
	}
	l, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(l)
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t'\"$\\|&;<>()*?") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

// Markers of a bench's generated block in the page.
func markers(name string) (begin, end string) {
	return "<!-- begin " + name + ": written by the bench's -markdown; do not edit -->",
		"<!-- end " + name + " -->"
}

// Update replaces the generated block of bench name in the Markdown file
// at path with body. The file must already hold the block's markers (a
// pair with nothing between them starts one); the rest of the page, the
// hand-written method and known gaps, is left as it is. The file is
// replaced in one rename, so a failed run leaves it whole.
func Update(path, name string, body []byte) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	next, err := Replace(old, name, body)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, next, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Replace returns page with bench name's block replaced by body.
func Replace(page []byte, name string, body []byte) ([]byte, error) {
	begin, end := markers(name)
	bi := bytes.Index(page, []byte(begin))
	if bi < 0 {
		return nil, fmt.Errorf("no line %q: add it and %q where the bench's results go", begin, end)
	}
	if bytes.Count(page, []byte(begin)) > 1 {
		return nil, fmt.Errorf("the line %q appears more than once", begin)
	}
	rest := page[bi+len(begin):]
	ei := bytes.Index(rest, []byte(end))
	if ei < 0 {
		return nil, fmt.Errorf("no line %q after %q", end, begin)
	}
	var b bytes.Buffer
	b.Write(page[:bi+len(begin)])
	b.WriteString("\n\n")
	b.Write(bytes.TrimSpace(body))
	b.WriteString("\n\n")
	b.Write(rest[ei:])
	return b.Bytes(), nil
}

// Write puts a run's results into bench name's block of the Markdown file
// at path: the command and the facts of the run, then the report.
func Write(path, name string, f Facts, rep *Report) error {
	var b bytes.Buffer
	f.Header(&b, time.Since(f.Start))
	b.WriteString("\n")
	if err := rep.Markdown(&b); err != nil {
		return err
	}
	return Update(path, name, b.Bytes())
}
