package haproxycfg

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TLS: `bind ... ssl crt ...` and its parameters, `server ... ssl`, and
// global's ca-base, crt-base, ssl-default-bind-* and
// ssl-default-server-*, read as haproxy 2.6 reads them. Certificate and
// CA files are read here, as haproxy -c reads them: a missing one is an
// error naming it.

// tlsGlobal is what global says about TLS.
type tlsGlobal struct {
	caBase, crtBase string
	// The ssl-default-bind-* and ssl-default-server-* lines, read when a
	// bind or server they apply to exists (takeDefaults): as in haproxy,
	// without one they apply to nothing, and a value Go cannot carry out
	// (OpenShift's PROFILE=SYSTEM, Debian's DHE suites) is no error.
	bindLines, serverLines []line
	bind, server           tlsOpts // what they say, once read
	bindRead, serverRead   bool
	serverLine             int // the first ssl-default-server-* line
}

// tlsOpts are version and cipher settings as written, resolved to
// lbconfig.TLSOptions by resolve.
type tlsOpts struct {
	min, max  uint16
	force     uint16
	no        map[uint16]bool
	ciphers   []uint16
	noTickets bool
	// preferClient is prefer-client-ciphers (binds only).
	preferClient bool
}

// tlsVersionKeywords are no-sslv3, no-tlsv1x and force-tlsv1x's versions
// (0: SSLv3, which Go never speaks).
var tlsVersionKeywords = map[string]uint16{
	"sslv3": 0, "tlsv10": tls.VersionTLS10, "tlsv11": tls.VersionTLS11, "tlsv12": tls.VersionTLS12, "tlsv13": tls.VersionTLS13,
}

const tlsOptionWords = "no-sslv3, no-tlsv10, no-tlsv11, no-tlsv12, no-tlsv13, force-tlsv10..13, ssl-min-ver V, ssl-max-ver V, no-tls-tickets"

// tlsOption reads one version or ticket option at params[0] into o: it
// returns how many words it took, 0 when params[0] is not one, -1 after
// an error reported through fail.
func tlsOption(params []string, o *tlsOpts, fail func(kw, format string, a ...any)) int {
	w := params[0]
	switch {
	case strings.HasPrefix(w, "no-") && w != "no-tls-tickets":
		v, ok := tlsVersionKeywords[w[3:]]
		if !ok {
			return 0
		}
		if o.no == nil {
			o.no = map[uint16]bool{}
		}
		if v != 0 {
			o.no[v] = true
		}
		return 1
	case strings.HasPrefix(w, "force-"):
		v, ok := tlsVersionKeywords[w[6:]]
		if !ok {
			return 0
		}
		if v == 0 {
			fail(w, "force-sslv3: SSLv3 is not spoken by Go's TLS (accepted: force-tlsv10, force-tlsv11, force-tlsv12, force-tlsv13)")
			return -1
		}
		o.force = v
		return 1
	case w == "no-tls-tickets":
		o.noTickets = true
		return 1
	case w == "ssl-min-ver" || w == "ssl-max-ver":
		if len(params) < 2 {
			fail(w, "%s needs a version (accepted: TLSv1.0, TLSv1.1, TLSv1.2, TLSv1.3)", w)
			return -1
		}
		v, ok := lbconfig.TLSVersions[params[1]]
		if !ok {
			fail(w, "%s %q is not a TLS version vipstack speaks (accepted: TLSv1.0, TLSv1.1, TLSv1.2, TLSv1.3; Go has no SSLv3)", w, params[1])
			return -1
		}
		if w == "ssl-min-ver" {
			o.min = v
		} else {
			o.max = v
		}
		return 2
	}
	return 0
}

// over is o with what it leaves unset taken from d (global's defaults).
func (o tlsOpts) over(d tlsOpts) tlsOpts {
	if o.min == 0 {
		o.min = d.min
	}
	if o.max == 0 {
		o.max = d.max
	}
	if o.force == 0 {
		o.force = d.force
	}
	if o.ciphers == nil {
		o.ciphers = d.ciphers
	}
	o.noTickets = o.noTickets || d.noTickets
	o.preferClient = o.preferClient || d.preferClient
	if len(d.no) > 0 {
		no := map[uint16]bool{}
		for k := range d.no {
			no[k] = true
		}
		for k := range o.no {
			no[k] = true
		}
		o.no = no
	}
	return o
}

// resolve turns the settings into the versions in force, as haproxy 2.6
// does: ssl-min-ver (default TLSv1.2) up to ssl-max-ver (default
// TLSv1.3), or the one forced version, less the disabled ones at either
// end. The defaults are left 0.
func (o tlsOpts) resolve() (lbconfig.TLSOptions, string) {
	lo, hi := uint16(lbconfig.DefaultTLSMinVersion), uint16(tls.VersionTLS13)
	if o.min != 0 {
		lo = o.min
	}
	if o.max != 0 {
		hi = o.max
	}
	if o.force != 0 {
		lo, hi = o.force, o.force
	}
	for lo <= hi && o.no[lo] {
		lo++
	}
	for hi >= lo && o.no[hi] {
		hi--
	}
	if lo > hi {
		return lbconfig.TLSOptions{}, "no TLS version is left enabled (accepted: ssl-min-ver at or below ssl-max-ver, not every version disabled)"
	}
	out := lbconfig.TLSOptions{Ciphers: slices.Clone(o.ciphers), NoTickets: o.noTickets, PreferClientCiphers: o.preferClient}
	if lo != lbconfig.DefaultTLSMinVersion {
		out.MinVersion = lo
	}
	if hi != tls.VersionTLS13 {
		out.MaxVersion = hi
	}
	return out, ""
}

// globalTLS reads global's ca-base, crt-base and ssl-default-* lines;
// false when kw is none of them.
func (p *parser) globalTLS(l line, kw string) bool {
	switch {
	case kw == "ca-base" || kw == "crt-base":
		if v, ok := p.oneArg(l, kw, "a directory"); ok {
			if kw == "ca-base" {
				p.tlsg.caBase = v
			} else {
				p.tlsg.crtBase = v
			}
		}
		return true
	case strings.HasPrefix(kw, "ssl-default-bind-"):
		if _, ok := p.nargs(l, 1, 1, 64, "a value, or options"); ok {
			p.tlsg.bindLines = append(p.tlsg.bindLines, l)
		}
	case strings.HasPrefix(kw, "ssl-default-server-"):
		if _, ok := p.nargs(l, 1, 1, 64, "a value, or options"); ok {
			p.tlsg.serverLines = append(p.tlsg.serverLines, l)
			if p.tlsg.serverLine == 0 {
				p.tlsg.serverLine = l.num
			}
		}
	default:
		return false
	}
	return true
}

// takeDefaults reads global's ssl-default-bind-* (server false) or
// ssl-default-server-* lines, once, when something they apply to exists.
func (p *parser) takeDefaults(server bool) tlsOpts {
	lines, o, read := p.tlsg.bindLines, &p.tlsg.bind, &p.tlsg.bindRead
	if server {
		lines, o, read = p.tlsg.serverLines, &p.tlsg.server, &p.tlsg.serverRead
	}
	if !*read {
		*read = true
		for _, l := range lines {
			p.globalDefault(l, keyword(l.words), o)
		}
	}
	return *o
}

// globalDefault reads one ssl-default-* line into o.
func (p *parser) globalDefault(l line, kw string, o *tlsOpts) {
	fail := func(k, format string, a ...any) { p.errorf(l, kw, "%s: "+format, append([]any{kw}, a...)...) }
	what := kw[strings.LastIndexByte(kw, '-')+1:]
	switch what {
	case "ciphers":
		args, ok := p.nargs(l, 1, 1, 1, "an OpenSSL cipher list")
		if !ok {
			return
		}
		cs, skipped, err := lbconfig.ParseCiphers(args[0])
		if err != nil {
			fail(kw, "%v", err)
			return
		}
		p.warnSkippedCiphers(l, kw, skipped)
		o.ciphers = cs
	case "ciphersuites":
		args, ok := p.nargs(l, 1, 1, 1, "a TLS 1.3 cipher suite list")
		if !ok {
			return
		}
		if err := lbconfig.CheckCipherSuites13(args[0]); err != nil {
			fail(kw, "%v", err)
		}
	case "options":
		args, ok := p.nargs(l, 1, 1, 64, "options such as no-tlsv10 ssl-min-ver TLSv1.2")
		if !ok {
			return
		}
		for i := 0; i < len(args); {
			if args[i] == "prefer-client-ciphers" && strings.HasPrefix(kw, "ssl-default-bind-") {
				o.preferClient = true
				p.warnPreferClient(l, kw)
				i++
				continue
			}
			n := tlsOption(args[i:], o, fail)
			switch {
			case n < 0:
				return
			case n == 0:
				fail(kw, "option %q is not supported by vipstack (accepted: %s)", args[i], tlsOptionWords)
				return
			}
			i += n
		}
	default:
		p.errorf(l, kw, "%s is not supported by vipstack (accepted: ssl-default-bind-ciphers, -ciphersuites, -options; ssl-default-server-ciphers, -ciphersuites, -options)", kw)
	}
}

// bindTLS is a bind line's TLS parameters being read.
type bindTLS struct {
	ssl      bool
	crt      []string
	crtList  []string
	alpn     []string
	opts     tlsOpts
	anyParam string // the first TLS parameter given, for the "without ssl" warning
}

// bindTLSParam reads a TLS bind parameter at params[0]: it returns how
// many words it took, 0 when params[0] is not one, -1 after an error.
func (p *parser) bindTLSParam(l line, params []string, b *bindTLS) int {
	fail := func(kw, format string, a ...any) { p.errorf(l, "bind", "bind parameter "+format, a...) }
	w := params[0]
	value := func() (string, bool) {
		if len(params) < 2 {
			fail(w, "%s needs a value", w)
			return "", false
		}
		return params[1], true
	}
	took := 0
	switch w {
	case "ssl":
		b.ssl = true
		return 1
	case "prefer-client-ciphers":
		b.opts.preferClient = true
		p.warnPreferClient(l, "bind")
		took = 1
	case "crt", "crt-list", "alpn", "ciphers", "ciphersuites":
		v, ok := value()
		if !ok {
			return -1
		}
		switch w {
		case "crt":
			b.crt = append(b.crt, v)
		case "crt-list":
			b.crtList = append(b.crtList, v)
		case "alpn":
			b.alpn = strings.Split(v, ",")
		case "ciphers":
			cs, skipped, err := lbconfig.ParseCiphers(v)
			if err != nil {
				fail(w, "ciphers: %v", err)
				return -1
			}
			p.warnSkippedCiphers(l, "bind ciphers", skipped)
			b.opts.ciphers = cs
		case "ciphersuites":
			if err := lbconfig.CheckCipherSuites13(v); err != nil {
				fail(w, "ciphersuites: %v", err)
				return -1
			}
		}
		took = 2
	default:
		took = tlsOption(params, &b.opts, fail)
		if took <= 0 {
			return took
		}
	}
	if b.anyParam == "" {
		b.anyParam = w
	}
	return took
}

// endBindTLS builds the bind's TLS from what its line said: nil without
// ssl. It reads the certificates, as haproxy -c does.
func (p *parser) endBindTLS(l line, b *bindTLS) (*lbconfig.BindTLS, bool) {
	if !b.ssl {
		if b.anyParam != "" {
			p.warnf(l, "bind: %s applies to ssl binds, which this one is not: it changes nothing here", b.anyParam)
		}
		return nil, true
	}
	t := &lbconfig.BindTLS{ALPN: b.alpn}
	// Global's defaults are applied at the file's end (endTLS), as
	// haproxy applies them once every section is read.
	t.Crt = p.withBase(p.tlsg.crtBase, b.crt)
	t.CrtList = p.withBase(p.tlsg.crtBase, b.crtList)
	ok := true
	for _, c := range t.Crt {
		certs, good := p.loadCrt(l, c, nil)
		ok = ok && good
		t.Certs = append(t.Certs, certs...)
	}
	for _, c := range t.CrtList {
		certs, good := p.loadCrtList(l, c)
		ok = ok && good
		t.Certs = append(t.Certs, certs...)
	}
	if ok && len(t.Certs) == 0 {
		p.errorf(l, "bind", "bind: ssl without a certificate (accepted: crt FILE|DIR or crt-list FILE)")
		return nil, false
	}
	p.bindOpts = append(p.bindOpts, pendingTLS{line: l, bind: t, opts: b.opts})
	return t, ok
}

// pendingTLS is a bind's TLS whose options wait for global's defaults.
type pendingTLS struct {
	line line
	bind *lbconfig.BindTLS
	opts tlsOpts
}

func (p *parser) withBase(base string, paths []string) []string {
	var out []string
	for _, f := range paths {
		if base != "" && !strings.HasPrefix(f, "/") {
			f = filepath.Join(base, f)
		}
		out = append(out, f)
	}
	return out
}

// loadCrt reads `crt PATH`: a PEM file, or every file of a directory in
// name order (haproxy skips .key, .ocsp, .issuer, .sctl and .dh files
// there, and hidden ones), each with filters as its SNI.
func (p *parser) loadCrt(l line, path string, filters []string) ([]lbconfig.Cert, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		p.errorf(l, "bind", "bind: unable to stat SSL certificate from file %q: %v", path, unwrapPath(err))
		return nil, false
	}
	if !fi.IsDir() {
		c, ok := p.loadPEM(l, path, filters)
		return []lbconfig.Cert{c}, ok
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		p.errorf(l, "bind", "bind: cannot read certificate directory %q: %v", path, unwrapPath(err))
		return nil, false
	}
	var out []lbconfig.Cert
	ok := true
	for _, e := range ents { // sorted by name
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, ".") || slices.Contains([]string{".key", ".ocsp", ".issuer", ".sctl", ".dh"}, filepath.Ext(n)) {
			continue
		}
		c, good := p.loadPEM(l, filepath.Join(path, n), filters)
		ok = ok && good
		out = append(out, c)
	}
	return out, ok
}

// loadPEM reads one certificate file, its key from FILE.key when the
// file holds none (haproxy 2.6's ssl-load-extra-files default).
func (p *parser) loadPEM(l line, path string, filters []string) (lbconfig.Cert, bool) {
	data, err := readTLSFile(path)
	if err != nil {
		p.errorf(l, "bind", "bind: unable to load SSL certificate from file %q: %v", path, unwrapPath(err))
		return lbconfig.Cert{}, false
	}
	if !lbconfig.HasPEMKey(data) {
		if key, err := readTLSFile(path + ".key"); err == nil {
			data = append(append(data, '\n'), key...)
		}
	}
	c := lbconfig.Cert{Path: path, SNI: filters, PEM: data}
	if _, err := lbconfig.LoadCertPEM(data); err != nil {
		p.errorf(l, "bind", "bind: unable to load SSL certificate from PEM file %q: %v (accepted: a PEM file with the certificate chain and its private key, or the key in %s.key)", path, err, path)
		return c, false
	}
	return c, true
}

// loadCrtList reads a crt-list: a line per certificate, "PATH [FILTER...]"
// (server names the certificate is served for, "!NAME" to exclude one);
// '#' starts a comment. Options in brackets are refused.
func (p *parser) loadCrtList(l line, path string) ([]lbconfig.Cert, bool) {
	data, err := readTLSFile(path)
	if err != nil {
		p.errorf(l, "bind", "bind: 'crt-list' : cannot open file %q: %v", path, unwrapPath(err))
		return nil, false
	}
	var out []lbconfig.Cert
	ok := true
	for i, text := range strings.Split(string(data), "\n") {
		if j := strings.IndexByte(text, '#'); j >= 0 {
			text = text[:j]
		}
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		if strings.Contains(text, "[") {
			p.errorf(l, "bind", "bind: crt-list %s line %d: ssl options in brackets are not supported by vipstack (accepted: CERTFILE [SNI-FILTER...])", path, i+1)
			ok = false
			continue
		}
		certs, good := p.loadCrt(l, p.withBase(p.tlsg.crtBase, f[:1])[0], f[1:])
		ok = ok && good
		out = append(out, certs...)
	}
	return out, ok
}

// serverTLSParam reads a server TLS parameter: handled is false for one
// it does not know.
func (p *parser) serverTLSParam(param string, value func(want string) (string, bool), s *lbconfig.Server,
	fail func(kw, format string, a ...any)) (handled, ok bool) {
	t := func() *lbconfig.ServerTLS {
		if s.TLS == nil {
			s.TLS = &lbconfig.ServerTLS{}
		}
		return s.TLS
	}
	switch param {
	case "ssl":
		s.SSL = true
	case "no-ssl":
		s.SSL = false
	case "ca-file":
		v, ok := value("a PEM file of CA certificates")
		if !ok {
			return true, false
		}
		v = p.withBase(p.tlsg.caBase, []string{v})[0]
		data, err := readTLSFile(v)
		if err != nil {
			fail(param, "unable to load ca-file %q: %v", v, unwrapPath(err))
			return true, false
		}
		t().CAFile, t().CA = v, data
	case "sni":
		v, ok := value("str(NAME)")
		if !ok {
			return true, false
		}
		name, isStr := strings.CutPrefix(v, "str(")
		if !isStr || !strings.HasSuffix(name, ")") || len(name) < 2 {
			fail(param, "sni %q is not supported by vipstack (accepted: sni str(NAME), a fixed server name)", v)
			return true, false
		}
		t().SNI = strings.TrimSuffix(name, ")")
	case "alpn":
		v, ok := value("protocols such as h2,http/1.1")
		if !ok {
			return true, false
		}
		t().ALPN = strings.Split(v, ",")
	case "ciphers":
		v, ok := value("an OpenSSL cipher list")
		if !ok {
			return true, false
		}
		cs, skipped, err := lbconfig.ParseCiphers(v)
		if err != nil {
			fail(param, "ciphers: %v", err)
			return true, false
		}
		p.warnSkippedCiphers(p.cur, "server "+s.Name+" ciphers", skipped)
		p.srvOpts(s).ciphers = cs
	case "ciphersuites":
		v, ok := value("a TLS 1.3 cipher suite list")
		if !ok {
			return true, false
		}
		if err := lbconfig.CheckCipherSuites13(v); err != nil {
			fail(param, "ciphersuites: %v", err)
			return true, false
		}
	default:
		return false, false
	}
	return true, true
}

// srvOpts are the version options being read for s, kept by the parser
// until the server's line ends (endServerTLS).
func (p *parser) srvOpts(s *lbconfig.Server) *tlsOpts {
	if p.srvTLS == nil {
		p.srvTLS = &tlsOpts{}
		if s.TLS != nil {
			// default-server's resolved options as a start.
			o := s.TLS.TLSOptions
			p.srvTLS.min, p.srvTLS.max, p.srvTLS.ciphers, p.srvTLS.noTickets = o.MinVersion, o.MaxVersion, o.Ciphers, o.NoTickets
		}
	}
	return p.srvTLS
}

// endTLS applies global's ssl-default-bind-* to every ssl bind and
// ssl-default-server-* to every server that speaks TLS, as haproxy
// does once the file is read.
func (p *parser) endTLS() {
	for _, pt := range p.bindOpts {
		o, msg := pt.opts.over(p.takeDefaults(false)).resolve()
		if msg != "" {
			p.errorf(pt.line, "bind", "bind: %s", msg)
			continue
		}
		pt.bind.TLSOptions = o
	}
	for i := range p.cfg.Backends {
		for j := range p.cfg.Backends[i].Servers {
			s := &p.cfg.Backends[i].Servers[j]
			if !s.SSL && !s.CheckSSL {
				s.TLS = nil
				continue
			}
			own := tlsOpts{}
			if s.TLS != nil {
				o := s.TLS.TLSOptions
				own = tlsOpts{min: o.MinVersion, max: o.MaxVersion, ciphers: o.Ciphers, noTickets: o.NoTickets}
			}
			o, msg := own.over(p.takeDefaults(true)).resolve()
			if msg != "" {
				p.errorf(line{num: p.tlsg.serverLine}, "ssl-default-server-options", "backend %s, server %s: %s", p.cfg.Backends[i].Name, s.Name, msg)
				continue
			}
			if s.TLS == nil && (o.MinVersion != 0 || o.MaxVersion != 0 || o.Ciphers != nil || o.NoTickets) {
				s.TLS = &lbconfig.ServerTLS{}
			}
			if s.TLS != nil {
				s.TLS.TLSOptions = o
			}
		}
	}
}

// endServerTLS resolves the version options of a server (or
// default-server) line into s.TLS.
func (p *parser) endServerTLS(s *lbconfig.Server, fail func(kw, format string, a ...any)) bool {
	o := p.srvTLS
	p.srvTLS = nil
	if o == nil {
		return true
	}
	if s.TLS == nil {
		s.TLS = &lbconfig.ServerTLS{}
	}
	// Resolve the line's own settings; unset stays 0 for global's.
	r := lbconfig.TLSOptions{MinVersion: o.min, MaxVersion: o.max, Ciphers: o.ciphers, NoTickets: o.noTickets}
	if o.force != 0 {
		r.MinVersion, r.MaxVersion = o.force, o.force
	}
	lo := r.MinVersion
	if lo == 0 {
		lo = lbconfig.DefaultTLSMinVersion
	}
	for lo <= tls.VersionTLS13 && o.no[lo] {
		lo++
		r.MinVersion = lo
	}
	hi := r.MaxVersion
	if hi == 0 {
		hi = tls.VersionTLS13
	}
	for hi > lo && o.no[hi] {
		hi--
		r.MaxVersion = hi
	}
	if lo > hi || o.no[hi] {
		fail("ssl-min-ver", "no TLS version is left enabled (accepted: ssl-min-ver at or below ssl-max-ver, not every version disabled)")
		return false
	}
	s.TLS.TLSOptions = r
	return true
}

// cloneServerTLS copies a default-server's TLS for a server of its own.
func cloneServerTLS(t *lbconfig.ServerTLS) *lbconfig.ServerTLS {
	if t == nil {
		return nil
	}
	c := *t
	c.ALPN = slices.Clone(t.ALPN)
	c.Ciphers = slices.Clone(t.Ciphers)
	return &c
}

// tlsVersionOption handles a server's version option (no-tlsv1x,
// force-tlsv1x, ssl-min-ver, ssl-max-ver, no-tls-tickets) at params.
func (p *parser) serverVersionParam(params []string, s *lbconfig.Server, fail func(kw, format string, a ...any)) int {
	o := p.srvOpts(s)
	return tlsOption(params, o, fail)
}

// maxTLSFile bounds a certificate, key, CA or crt-list file.
const maxTLSFile = 4 << 20

// readTLSFile reads a regular file of at most maxTLSFile bytes: a device
// or a huge file named by mistake is an error, not a hang.
func readTLSFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &os.PathError{Op: "read", Path: path, Err: errors.New("not a regular file")}
	}
	if fi.Size() > maxTLSFile {
		return nil, &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("larger than %d bytes", maxTLSFile)}
	}
	return os.ReadFile(path)
}

// warnSkippedCiphers warns about the suites of a cipher list that
// vipstack leaves out (DHE key exchange, which Go's TLS lacks), as
// OpenSSL leaves out, silently, those it cannot offer.
func (p *parser) warnSkippedCiphers(l line, what string, skipped []string) {
	if len(skipped) == 0 {
		return
	}
	p.warnf(l, "%s: vipstack cannot offer %s (DHE key exchange, which Go's TLS does not implement); it offers the others of the list",
		what, strings.Join(skipped, ", "))
}

// warnPreferClient says what prefer-client-ciphers does in vipstack:
// the client's order of TLS 1.2 suites, as haproxy; TLS 1.3's suite Go
// chooses by its own order, which Go's TLS does not let a program change.
func (p *parser) warnPreferClient(l line, kw string) {
	p.warnf(l, "%s: prefer-client-ciphers: vipstack takes the client's order for TLS 1.2 and older suites, as haproxy does; "+
		"for TLS 1.3, Go's TLS takes its own (AES-128-GCM, AES-256-GCM, then ChaCha20; ChaCha20 first for a client that lists it first), "+
		"so a client preferring AES-256-GCM gets AES-128-GCM where haproxy gives it AES-256-GCM", kw)
}
