package kadump

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// File names keepalived 2.2.7 writes in its temporary directory (/tmp),
// where keepalived-exporter reads them.
const (
	DataFile  = "keepalived.data"
	StatsFile = "keepalived.stats"
	JSONFile  = "keepalived.json"
)

// WriteFileAtomic writes path through a temporary file in the same
// directory renamed over it, so a reader sees the old file or the new
// one, never a part. The mode is keepalived's (umask 0177): 0600.
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	name := tmp.Name()
	_, err = tmp.Write(buf.Bytes())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(name, 0o600)
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
