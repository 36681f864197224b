package filewatch

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
)

// Watch calls changed when path's modification time or size changes,
// checking every interval, until ctx is done. A file that cannot be read
// is logged once (until it can be read again); one that appears, or
// comes back changed, counts as changed.
func Watch(ctx context.Context, clk clock.Clock, path string, interval time.Duration, changed func(), log *slog.Logger) {
	stamp := func() (time.Time, int64, bool) {
		fi, err := os.Stat(path)
		if err != nil {
			return time.Time{}, 0, false
		}
		return fi.ModTime(), fi.Size(), true
	}
	mt, size, ok := stamp()
	for {
		t := clk.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		nmt, nsize, nok := stamp()
		if !nok {
			if ok {
				log.Warn("configuration file unreadable; keeping the running configuration", "config", path)
			}
			ok = false
			continue
		}
		if !ok || !nmt.Equal(mt) || nsize != size {
			mt, size, ok = nmt, nsize, true
			changed()
		}
	}
}
