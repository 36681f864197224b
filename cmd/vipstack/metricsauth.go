package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/k8s/kubeauth"
	"github.com/vipstack/vipstack/internal/serve"
	"github.com/vipstack/vipstack/internal/servingcert"
)

// metricsAuthFlags are the flags of the agent's and the controller's
// authenticated metrics endpoint.
type metricsAuthFlags struct {
	auth, certFile, keyFile string
}

func (m *metricsAuthFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&m.auth, "metrics-auth", "none", "none, or kubernetes: serve metrics over HTTPS only to a bearer token the API server authenticates (TokenReview) whose user may get the path as a non-resource URL (SubjectAccessReview: a ClusterRole with nonResourceURLs [/metrics], verbs [get]); the ServiceAccount needs tokenreviews and subjectaccessreviews create (system:auth-delegator)")
	fs.StringVar(&m.certFile, "metrics-tls-cert-file", "", "with --metrics-auth kubernetes: the PEM certificate (chain) served, reloaded when it changes (a mounted Secret's tls.crt); empty: a self-signed certificate made at start")
	fs.StringVar(&m.keyFile, "metrics-tls-key-file", "", "the PEM private key of --metrics-tls-cert-file (a mounted Secret's tls.key)")
}

// check refuses values that cannot work together.
func (m *metricsAuthFlags) check(command string, stderr io.Writer) bool {
	switch {
	case m.auth != "none" && m.auth != "kubernetes":
		fmt.Fprintf(stderr, "%s: --metrics-auth %q: want none or kubernetes\n", command, m.auth)
	case (m.certFile == "") != (m.keyFile == ""):
		fmt.Fprintf(stderr, "%s: --metrics-tls-cert-file %q and --metrics-tls-key-file %q: want both or neither\n", command, m.certFile, m.keyFile)
	case m.certFile != "" && m.auth != "kubernetes":
		fmt.Fprintf(stderr, "%s: --metrics-tls-cert-file: HTTPS serves only with --metrics-auth kubernetes (now %q)\n", command, m.auth)
	default:
		return true
	}
	return false
}

// certReloadInterval is how often the certificate files are checked.
const certReloadInterval = 10 * time.Second

// serveAuthMetrics serves g at /metrics on addr over HTTPS, behind the API
// server's TokenReview and SubjectAccessReview. The certificate is the
// files' (reloaded until ctx ends) or self-signed for hosts and addr's IP.
func serveAuthMetrics(ctx context.Context, cfg *rest.Config, addr string, g prometheus.Gatherer, m metricsAuthFlags, hosts []string, log *slog.Logger, opts ...serve.Option) (*serve.Server, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("--metrics-auth kubernetes: %w", err)
	}
	var src *servingcert.Source
	if m.certFile != "" {
		if src, err = servingcert.FromFiles(m.certFile, m.keyFile); err != nil {
			return nil, fmt.Errorf("--metrics-tls-cert-file: %w", err)
		}
		go src.Watch(ctx, clock.Real{}, certReloadInterval, log)
	} else {
		if h, _, err := net.SplitHostPort(addr); err == nil {
			if ip := net.ParseIP(h); ip != nil && !ip.IsUnspecified() {
				hosts = append(hosts, h)
			}
		}
		if src, err = servingcert.SelfSigned(time.Now(), hosts...); err != nil {
			return nil, err
		}
		log.Info("metrics: serving a self-signed certificate", "hosts", hosts)
	}
	guard := &kubeauth.Guard{Reviewer: kubeauth.ForClientset(cs), Logger: log}
	s, err := serve.Handler(addr, guard.Wrap(serve.MetricsHandler(g)), append(opts, serve.TLS(src.TLSConfig()))...)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	return s, nil
}
