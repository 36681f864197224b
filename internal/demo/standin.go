package demo

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// selfSigned makes a throwaway certificate for a stand-in API server.
func selfSigned(name string, now time.Time, addrs []netip.Addr, dnsNames []string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("stand-in API certificate for %s: %w", name, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("stand-in API certificate for %s: %w", name, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name + " (vipstack demo stand-in API)"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     dnsNames,
	}
	for _, a := range addrs {
		tmpl.IPAddresses = append(tmpl.IPAddresses, a.AsSlice())
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("stand-in API certificate for %s: %w", name, err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// listenFunc opens a TCP listener (inside a node's namespace).
type listenFunc func(addr string) (net.Listener, error)

// httpServer is one stand-in listener that can be stopped and started
// again.
type httpServer struct {
	listen  listenFunc
	addr    string
	tls     *tls.Config
	handler http.Handler

	mu  sync.Mutex
	srv *http.Server
}

func (s *httpServer) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return nil
	}
	ln, err := s.listen(s.addr)
	if err != nil {
		return fmt.Errorf("stand-in listen %s: %w", s.addr, err)
	}
	if s.tls != nil {
		ln = tls.NewListener(ln, s.tls)
	}
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 5 * time.Second, ErrorLog: discardLog()}
	go srv.Serve(ln)
	s.srv = srv
	return nil
}

func (s *httpServer) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		s.srv.Close() // closes the listener and every connection at once
		s.srv = nil
	}
}

// newAPIServer is a stand-in Kubernetes API server on :port: TLS with a
// self-signed certificate, /readyz answering "ok from NAME".
func newAPIServer(name string, port int, listen listenFunc, cert tls.Certificate) *httpServer {
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "ok from %s\n", name)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "stand-in API server on %s\n", name)
	})
	return &httpServer{listen: listen, addr: fmt.Sprintf(":%d", port), handler: mux,
		tls: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
}

// RouterMode is what a stand-in router does.
type RouterMode int

const (
	RouterReady    RouterMode = iota // /healthz/ready 200, the app answers
	RouterNotReady                   // /healthz/ready 503, the app still answers
	RouterStopped                    // nothing listens
)

func (m RouterMode) String() string {
	switch m {
	case RouterReady:
		return "ready"
	case RouterNotReady:
		return "not ready"
	case RouterStopped:
		return "stopped"
	}
	return fmt.Sprintf("RouterMode(%d)", int(m))
}

// router is a stand-in OpenShift router: the health endpoint the Ingress
// check polls, and an app on :80 that answers with the node's name.
type router struct {
	ready  atomic.Bool
	health *httpServer
	app    *httpServer
}

func newRouter(name string, healthPort int, listen listenFunc) *router {
	r := &router{}
	r.ready.Store(true)
	hm := http.NewServeMux()
	hm.HandleFunc("/healthz/ready", func(w http.ResponseWriter, _ *http.Request) {
		if !r.ready.Load() {
			http.Error(w, "router not ready", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok\n")
	})
	r.health = &httpServer{listen: listen, addr: fmt.Sprintf(":%d", healthPort), handler: hm}
	r.app = &httpServer{listen: listen, addr: ":80", handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "hello from the app behind %s's router\n", name)
	})}
	return r
}

func (r *router) set(m RouterMode) error {
	switch m {
	case RouterStopped:
		r.health.stop()
		r.app.stop()
		return nil
	case RouterReady, RouterNotReady:
		r.ready.Store(m == RouterReady)
		if err := r.health.start(); err != nil {
			return err
		}
		return r.app.start()
	}
	return fmt.Errorf("router mode %v: want ready, not ready or stopped", m)
}

func (r *router) stop() { _ = r.set(RouterStopped) }
