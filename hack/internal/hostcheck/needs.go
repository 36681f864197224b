package hostcheck

import (
	"net/netip"
	"path"
	"slices"
	"strings"
)

// fileKind says what to put at a path a configuration names.
type fileKind int

const (
	pemCert    fileKind = iota // a self-signed certificate and its key, one PEM file
	certDir                    // a directory holding one such PEM file
	crtList                    // a crt-list naming one such PEM file
	caCert                     // a certificate alone (ca-file)
	errorFile                  // an HTTP response haproxy can send (errorfile CODE PATH)
	emptyFile                  // an empty file (pattern files, lua, Corefile imports)
	certOnly                   // a certificate alone, as tls CERT in a Corefile
	keyOnly                    // its key alone, as tls CERT KEY in a Corefile
	kubeconfig                 // a kubeconfig whose context (need.Arg) names a server
	textFile                   // a file holding need.Arg
)

// need is a path a configuration names, with what to put there.
type need struct {
	Path string
	Kind fileKind
	Arg  string // errorFile: the status code; kubeconfig: the context; textFile: its text
}

// needs is what one configuration file names that a host must provide.
type needs struct {
	Hosts []string // host names, in order of first use
	Files []need   // absolute paths, in order of first use
	// InCluster: a kubernetes block takes its API server from the pod it
	// runs in (no endpoint, no kubeconfig), which the check provides as a
	// pod does: KUBERNETES_SERVICE_HOST and _PORT and a service account.
	InCluster bool
}

// serviceAccount is where a pod's service account files are.
const serviceAccount = "/var/run/secrets/kubernetes.io/serviceaccount/"

// inClusterEnv is the environment a pod gives the in-cluster client: an
// API server on 198.18.255.1, which nothing answers.
var inClusterEnv = []string{"KUBERNETES_SERVICE_HOST=198.18.255.1", "KUBERNETES_SERVICE_PORT=443"}

func (n *needs) host(h string) {
	if h != "" && !slices.Contains(n.Hosts, h) {
		n.Hosts = append(n.Hosts, h)
	}
}

func (n *needs) file(p string, k fileKind, arg string) {
	if p == "" || !path.IsAbs(p) || strings.Contains(p, "${") {
		return
	}
	p = path.Clean(p)
	for _, f := range n.Files {
		if f.Path == p {
			return
		}
	}
	n.Files = append(n.Files, need{Path: p, Kind: k, Arg: arg})
}

// hostOf returns the host name of an haproxy address (host, host:port,
// ipv4@host:port, ...), or "" when the address is an IP address, a wildcard,
// a socket path, an abstract or inherited socket, or an environment
// variable: nothing /etc/hosts would answer.
func hostOf(addr string) string {
	if strings.Contains(addr, "${") || strings.HasPrefix(addr, "/") {
		return ""
	}
	if pre, rest, ok := strings.Cut(addr, "@"); ok {
		switch pre {
		case "ipv4", "ipv6", "tcp", "tcp4", "tcp6", "udp", "udp4", "udp6", "quic4", "quic6":
			addr = rest
		default:
			return "" // abns@, unix@, fd@, sockpair@ name no host
		}
	}
	if strings.HasPrefix(addr, "[") || strings.Count(addr, ":") > 1 {
		return "" // IPv6
	}
	host, _, _ := strings.Cut(addr, ":")
	if host == "" || host == "*" {
		return ""
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return ""
	}
	return host
}

// haproxyNeeds lists the host names and files an haproxy.cfg names: server,
// log, nameserver and peer addresses; crt, crt-list, ca-file, errorfile,
// lua-load and pattern (-f) files, with crt-base and ca-base applied to
// relative certificate paths.
func haproxyNeeds(cfg string) needs {
	var n needs
	crtBase, caBase := "", ""
	base := func(b, p string) string {
		if b != "" && !path.IsAbs(p) {
			return path.Join(b, p)
		}
		return p
	}
	for _, line := range strings.Split(cfg, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		arg := func(i int) string {
			if i < len(f) {
				return f[i]
			}
			return ""
		}
		switch f[0] {
		case "crt-base":
			crtBase = arg(1)
		case "ca-base":
			caBase = arg(1)
		case "server", "nameserver", "peer":
			n.host(hostOf(arg(2)))
		case "log":
			if a := arg(1); a != "global" && a != "stdout" && a != "stderr" {
				n.host(hostOf(a))
			}
		case "errorfile":
			n.file(arg(2), errorFile, arg(1))
		case "lua-load", "lua-load-per-thread":
			n.file(arg(1), emptyFile, "")
		}
		for i := 1; i < len(f)-1; i++ {
			switch v := f[i+1]; f[i] {
			case "crt":
				k := pemCert
				if path.Ext(v) == "" {
					k = certDir // haproxy loads every file of a directory
				}
				n.file(base(crtBase, v), k, "")
			case "crt-list":
				n.file(base(crtBase, v), crtList, "")
			case "ca-file":
				n.file(base(caBase, v), caCert, "")
			case "-f":
				n.file(v, emptyFile, "")
			}
		}
	}
	return n
}

// corefileNeeds lists the host names and files a Corefile names that
// stock CoreDNS resolves or opens when it starts: forward and grpc targets
// given by name, listen addresses of health, ready, prometheus and pprof,
// tls certificates and keys, kubeconfig files and imported files. Zone
// files (file, auto, hosts) are left out: CoreDNS only warns when they are
// missing.
func corefileNeeds(cfg string) needs {
	var n needs
	kube, apiGiven := false, false
	for _, line := range strings.Split(cfg, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(strings.NewReplacer("{", " ", "}", " ").Replace(line))
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "forward", "grpc":
			for _, to := range f[min(2, len(f)):] {
				n.host(corefileHost(to))
			}
		case "health", "ready", "prometheus", "pprof":
			if len(f) > 1 {
				n.host(corefileHost(f[1]))
			}
		case "tls":
			for i, p := range f[1:min(4, len(f))] {
				n.file(p, []fileKind{certOnly, keyOnly, caCert}[i], "")
			}
		case "kubernetes":
			kube = true
		case "endpoint":
			apiGiven = true
		case "kubeconfig":
			apiGiven = true
			if len(f) > 1 {
				n.file(f[1], kubeconfig, strings.Join(f[2:], " "))
			}
		case "import":
			if len(f) > 1 && !strings.ContainsAny(f[1], "*?[") {
				n.file(f[1], emptyFile, "")
			}
		}
	}
	if kube && !apiGiven {
		n.InCluster = true
		n.file(serviceAccount+"token", textFile, "corpushost")
		n.file(serviceAccount+"ca.crt", caCert, "")
		n.file(serviceAccount+"namespace", textFile, "default")
	}
	return n
}

// corefileHost returns the host name of a Corefile address such as
// tls://dns.example:853 or dns.example%tls-name, or "" for an IP address,
// a path or a bare port.
func corefileHost(a string) string {
	if _, rest, ok := strings.Cut(a, "://"); ok {
		a = rest
	}
	if strings.HasPrefix(a, "/") || strings.HasPrefix(a, "unix:") {
		return ""
	}
	a, _, _ = strings.Cut(a, "%")
	return hostOf(a)
}
