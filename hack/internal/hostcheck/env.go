package hostcheck

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// hostsFile is /etc/hosts for the check: localhost, then each name at its
// own address of 198.18.0.0/15 (198.18.1.1, 198.18.1.2, ...).
func hostsFile(names []string) string {
	var b strings.Builder
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	for i, n := range names {
		fmt.Fprintf(&b, "%s\t%s\n", hostAddr(i), n)
	}
	return b.String()
}

// hostAddr is the address of the i-th name: 198.18.1.1 and up, 254 to a
// /24, never a network or broadcast address.
func hostAddr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{198, 18, byte(1 + i/254), byte(1 + i%254)})
}

// cert is one self-signed certificate and key, PEM encoded.
type cert struct{ cert, key []byte }

func newCert() (cert, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return cert{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "corpushost.invalid"},
		DNSNames:              []string{"corpushost.invalid"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		return cert{}, err
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return cert{}, err
	}
	return cert{
		cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}),
	}, nil
}

// stage writes into dir, at each needed path under dir, what the check
// provides there (only for paths that do not exist on this host), and
// dir/etc/hosts; it returns the paths it provided.
func stage(dir string, n needs, c cert) ([]string, error) {
	both := append(append([]byte{}, c.cert...), c.key...)
	var made []string
	write := func(p string, b []byte) error {
		full := filepath.Join(dir, onHost(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		return os.WriteFile(full, b, 0o644)
	}
	for _, f := range n.Files {
		if _, err := os.Stat(f.Path); err == nil {
			continue
		}
		var err error
		switch f.Kind {
		case pemCert:
			err = write(f.Path, both)
		case certDir:
			err = write(filepath.Join(f.Path, "corpushost.pem"), both)
		case crtList:
			pemPath := f.Path + ".corpushost.pem"
			if err = write(pemPath, both); err == nil {
				err = write(f.Path, []byte(pemPath+"\n"))
			}
		case caCert, certOnly:
			err = write(f.Path, c.cert)
		case keyOnly:
			err = write(f.Path, c.key)
		case errorFile:
			err = write(f.Path, []byte(errorResponse(f.Arg)))
		case emptyFile:
			err = write(f.Path, nil)
		case textFile:
			err = write(f.Path, []byte(f.Arg))
		case kubeconfig:
			err = write(f.Path, []byte(kubeconfigFor(f.Arg)))
		}
		if err != nil {
			return nil, err
		}
		made = append(made, f.Path)
	}
	return made, write("/etc/hosts", []byte(hostsFile(n.Hosts)))
}

// onHost resolves the symbolic links of the longest part of p that exists
// on this host (such as /var/run -> /run), so that staging p does not put a
// directory where the overlay's lower layer has a link.
func onHost(p string) string {
	rest := ""
	for dir := p; ; dir = filepath.Dir(dir) {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		if dir == "/" {
			return p
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// errorResponse is an HTTP response haproxy takes as an errorfile.
func errorResponse(code string) string {
	var c int
	fmt.Sscan(code, &c)
	return fmt.Sprintf("HTTP/1.0 %s %s\r\nCache-Control: no-cache\r\nConnection: close\r\nContent-Type: text/html\r\n\r\n<html><body>%s</body></html>\n",
		code, http.StatusText(c), code)
}

// kubeconfigFor is a kubeconfig with the context name (or "corpushost")
// pointing at an API server on 198.18.255.1, which nothing answers.
func kubeconfigFor(name string) string {
	if name == "" {
		name = "corpushost"
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: corpushost
  cluster:
    server: https://198.18.255.1:6443
    insecure-skip-tls-verify: true
users:
- name: corpushost
  user:
    token: corpushost
contexts:
- name: %q
  context:
    cluster: corpushost
    user: corpushost
current-context: %q
`, name, name)
}

// envScript runs "$@" chrooted into an overlay of / whose upper layer is a
// tmpfs holding the staged files ($2), in the mount and network namespaces
// unshare made: the host's real /etc/hosts and file tree are not touched,
// and name lookups the staged /etc/hosts does not answer fail at once (no
// route out). $1 is an empty directory for the mounts.
const envScript = `set -e
t=$1; s=$2; shift 2
mount -t tmpfs corpushost "$t"
mkdir "$t/upper" "$t/work" "$t/root"
mount -t overlay corpushost -o "lowerdir=/,upperdir=$t/upper,workdir=$t/work" "$t/root"
mount --rbind /dev "$t/root/dev"
mount -t proc proc "$t/root/proc"
cp -R "$s/." "$t/root/"
ip link set lo up
exec chroot "$t/root" "$@"
`

// envCmd is argv run in the environment staged in dir (see envScript).
func envCmd(ctx context.Context, dir string, env []string, argv ...string) *exec.Cmd {
	args := append([]string{"-m", "-n", "--propagation", "private", "sh", "-c", envScript, "corpushost",
		filepath.Join(dir, "mnt"), filepath.Join(dir, "stage")}, argv...)
	cmd := exec.CommandContext(ctx, "unshare", args...)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// prepare stages n into a new directory under tmp and returns it with the
// paths it provided.
func prepare(tmp string, n needs, c cert) (string, []string, error) {
	dir, err := os.MkdirTemp(tmp, "env-")
	if err != nil {
		return "", nil, err
	}
	if err := os.Mkdir(filepath.Join(dir, "mnt"), 0o700); err != nil {
		return "", nil, err
	}
	made, err := stage(filepath.Join(dir, "stage"), n, c)
	return dir, made, err
}

// runOnce runs argv in the environment and returns its exit code and
// output (exit code -1: it did not exit within limit and was killed).
func runOnce(dir string, env []string, limit time.Duration, argv ...string) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	out, err := envCmd(ctx, dir, env, argv...).CombinedOutput()
	return exitCode(ctx, err), string(out)
}

func exitCode(ctx context.Context, err error) int {
	if ctx.Err() != nil {
		return -1
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return 127
	}
	return 0
}

// serveResult is how a server started in the environment ended.
type serveResult struct {
	Started bool   // it printed its ready line
	Exited  bool   // it exited by itself within the limit
	Code    int    // its exit code, when it exited
	Out     string // what it printed
}

// serve starts argv in the environment and waits until it prints a line
// that ready accepts, exits, or limit passes; then kills it by its PID
// (unshare, sh and chroot exec it, so the PID is the server's).
func serve(dir string, env []string, limit time.Duration, ready func(line string) bool, argv ...string) (serveResult, error) {
	cmd := envCmd(context.Background(), dir, env, argv...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return serveResult{}, err
	}
	var (
		mu  sync.Mutex
		buf bytes.Buffer
	)
	up := make(chan struct{})
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		once := sync.Once{}
		for sc.Scan() {
			mu.Lock()
			buf.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if ready(sc.Text()) {
				once.Do(func() { close(up) })
			}
		}
		io.Copy(io.Discard, pr)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); pw.Close() }()
	var r serveResult
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case err := <-exited:
		r.Exited, r.Code = true, exitCode(context.Background(), err)
	case <-up:
		r.Started = true
	case <-timer.C:
	}
	if !r.Exited {
		cmd.Process.Kill()
		<-exited
	}
	<-scanned
	mu.Lock()
	r.Out = buf.String()
	mu.Unlock()
	return r, nil
}
