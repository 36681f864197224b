package kadump

import (
	"flag"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/keepalived"
)

// Flags switch on the files and signals keepalived-exporter reads
// (docs/vrrp.md, "Migrating keepalived dashboards").
type Flags struct {
	on           bool
	pidFile, dir string
}

// AddFlags adds --keepalived-exporter-compat and its two settings to fs.
func AddFlags(fs *flag.FlagSet) *Flags {
	k := &Flags{}
	fs.BoolVar(&k.on, "keepalived-exporter-compat", false, "answer keepalived's dump signals as keepalived 2.2.7 does, for keepalived-exporter: write the pid file below, and on SIGUSR1, SIGUSR2 and SIGRTMIN+2 the data, stats and JSON dumps in the dump directory")
	fs.StringVar(&k.pidFile, "keepalived-exporter-pid-file", "/run/keepalived.pid", "with --keepalived-exporter-compat: the pid file keepalived-exporter signals (its --ka.pid-path); refused while it names another running process")
	fs.StringVar(&k.dir, "keepalived-exporter-dir", "/tmp", "with --keepalived-exporter-compat: where keepalived.data, keepalived.stats and keepalived.json are written (keepalived-exporter reads /tmp)")
	return k
}

// Start starts answering the dump signals from status, the VRRP
// configuration (nil: keepalived's defaults for what status does not say)
// and the engine's registry; stop undoes it. Off: a no-op.
func (k *Flags) Start(log *slog.Logger, status func() []engine.InstanceStatus, cfg *keepalived.Config, reg prometheus.Gatherer) (stop func(), err error) {
	if !k.on {
		return func() {}, nil
	}
	src := Source{Status: status, Config: func() *keepalived.Config { return cfg }, Gatherer: reg}
	srv := &Server{Dir: k.dir, PIDFile: k.pidFile, Dump: src.Dump, Log: log}
	stop, err = srv.Start()
	if err != nil {
		return nil, err
	}
	log.Info("keepalived-exporter compatibility on", "pid_file", k.pidFile, "dir", k.dir)
	return stop, nil
}
