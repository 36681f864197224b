package kubetest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ServiceCIDR is the API server's ClusterIP range (--service-cluster-ip-range).
// It lies in 198.18.0.0/15 like every address vipstack's tests use, and holds
// 4,094 ClusterIPs so that benchmarks can create 1,000 Services; IP pools in
// tests must not overlap it.
const ServiceCIDR = "198.19.240.0/20"

// AdminUser is the user the admin token authenticates as. It is in the
// system:masters group, which RBAC allows everything.
const AdminUser = "vipstack-admin"

const (
	// readyTimeout bounds how long Start waits for etcd and then for
	// kube-apiserver to report ready (normally a few seconds).
	readyTimeout = 2 * time.Minute
	// stopTimeout is how long Stop lets a process shut down after SIGTERM
	// before it sends SIGKILL.
	stopTimeout = 10 * time.Second
	// portAttempts is how often a process is restarted on new ports when the
	// free port picked for it was taken by someone else in the meantime.
	portAttempts = 3
)

// Env is a running etcd and kube-apiserver pair.
type Env struct {
	dualStack bool // Options.DualStack
	// Config reaches the API server as AdminUser.
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file with the same cluster and
	// credentials as Config, for code under test that takes --kubeconfig.
	Kubeconfig string
	// Bin is the directory holding the binaries (hack/kube-binaries.sh's
	// cache directory, or VIPSTACK_KUBE_BIN).
	Bin string
	// CAFile is the PEM file of the CA that signed the serving
	// certificate (a controller-manager's --root-ca-file).
	CAFile string
	// ServiceAccountKeyFile is the private key service account tokens are
	// signed with (a controller-manager's
	// --service-account-private-key-file).
	ServiceAccountKeyFile string

	dir      string
	stopOnce sync.Once
	stopErr  error
	ready    *http.Client // trusts the serving certificate, for /readyz
	token    string       // AdminUser's

	// mu guards the processes and their command lines, kept so that
	// KillAPIServer/RestartAPIServer and KillEtcd/RestartEtcd can run them
	// again on the same ports.
	mu        sync.Mutex
	etcd      *proc
	apiserver *proc
	etcdURL   string
	apiURL    string
	etcdArgs  []string
	apiArgs   []string
	restarts  int
}

// Options tune StartWith; the zero value is what Start runs.
type Options struct {
	// ServingIPs are more addresses the serving certificate is valid for,
	// for clients that reach the API server (which listens on 127.0.0.1
	// only) through a forwarder at one of them, as internal/nodelab's
	// nodes do from their network namespaces.
	ServingIPs []netip.Addr
	// Module runs the kube-apiserver of another Kubernetes version: a
	// module directory of this repository such as "tools/kube-oldest"
	// (hack/kube-binaries.sh --module builds it), beside tools/kube's
	// etcd. Empty: tools/kube's, the version every other test runs.
	Module string
	// DualStack gives the API server an IPv6 ClusterIP range too
	// (ServiceCIDR6), so that Services may be PreferDualStack or
	// RequireDualStack with both families.
	DualStack bool
}

// ServiceCIDR6 is the IPv6 ClusterIP range of a DualStack API server.
const ServiceCIDR6 = "fd00:5e7::/112"

// Start runs etcd and kube-apiserver for the test and returns once the API
// server's /readyz succeeds. Both are stopped and their data removed when the
// test ends (or earlier by Stop). On failure the last lines of their logs are
// written to the test log.
//
// Start skips the test when VIPSTACK_SKIP_KUBE=1, and builds the binaries
// first when they are not cached (see the package documentation).
func Start(t testing.TB) *Env {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith is Start with options.
func StartWith(t testing.TB, o Options) *Env {
	t.Helper()
	bin := BinDir(t)
	apiBin := bin
	if o.Module != "" {
		apiBin = moduleBinDir(t, o.Module)
	}
	began := time.Now()
	env, err := start(bin, apiBin, o)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	t.Logf("kubetest: kube-apiserver %s ready in %v", env.Config.Host, time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			env.mu.Lock()
			procs := []*proc{env.apiserver, env.etcd}
			env.mu.Unlock()
			for _, p := range procs {
				t.Logf("kubetest: last lines of %s log:\n%s", p.name, p.tail())
			}
		}
		env.Stop()
		if env.stopErr != nil {
			t.Errorf("kubetest: %v", env.stopErr)
		}
	})
	return env
}

// Stop stops kube-apiserver and etcd (SIGTERM, then SIGKILL after 10s) and
// removes their data. It is safe to call more than once; Start registers it
// with t.Cleanup.
func (e *Env) Stop() {
	e.stopOnce.Do(func() {
		var errs []error
		e.mu.Lock()
		procs := []*proc{e.apiserver, e.etcd}
		e.mu.Unlock()
		for _, p := range procs {
			if p != nil {
				errs = append(errs, p.stop())
			}
		}
		if err := os.RemoveAll(e.dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", e.dir, err))
		}
		e.stopErr = errors.Join(errs...)
	})
}

// KillAPIServer sends SIGKILL to kube-apiserver and waits for it to exit:
// an API server that crashed or whose machine went away. Clients see
// connection refused until RestartAPIServer.
func (e *Env) KillAPIServer() error { return e.kill(&e.apiserver) }

// KillEtcd sends SIGKILL to etcd and waits for it to exit. The API server
// keeps running and answers with errors (and stale watches) until
// RestartEtcd.
func (e *Env) KillEtcd() error { return e.kill(&e.etcd) }

func (e *Env) kill(pp **proc) error {
	e.mu.Lock()
	p := *pp
	e.mu.Unlock()
	if p == nil || !p.running() {
		return errors.New("kubetest: kill: the process does not run")
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kubetest: kill %s (pid %d): %w", p.name, p.cmd.Process.Pid, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(stopTimeout):
		return fmt.Errorf("kubetest: %s (pid %d) still runs %v after SIGKILL", p.name, p.cmd.Process.Pid, stopTimeout)
	}
}

// RestartAPIServer starts kube-apiserver again with the same flags (the
// same port: every kubeconfig stays valid) and waits until its /readyz
// succeeds, at most ctx's time or two minutes.
func (e *Env) RestartAPIServer(ctx context.Context) error {
	return e.restart(ctx, &e.apiserver, e.apiArgs, func(ctx context.Context) error {
		return probe(ctx, e.ready, e.apiURL+"/readyz", e.token)
	})
}

// RestartEtcd starts etcd again on its data and ports and waits until its
// /health succeeds, at most ctx's time or two minutes.
func (e *Env) RestartEtcd(ctx context.Context) error {
	return e.restart(ctx, &e.etcd, e.etcdArgs, func(ctx context.Context) error {
		return probe(ctx, http.DefaultClient, e.etcdURL+"/health", "")
	})
}

func (e *Env) restart(ctx context.Context, pp **proc, argv []string, ready func(context.Context) error) error {
	e.mu.Lock()
	if *pp != nil && (*pp).running() {
		e.mu.Unlock()
		return fmt.Errorf("kubetest: restart %s: it still runs", (*pp).name)
	}
	e.restarts++
	name := filepath.Base(argv[0])
	p, err := startProc(name, argv[0], filepath.Join(e.dir, fmt.Sprintf("%s-restart-%d.log", name, e.restarts)), argv[1:]...)
	if err != nil {
		e.mu.Unlock()
		return fmt.Errorf("kubetest: restart: %w", err)
	}
	*pp = p
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if err := p.waitReady(ctx, ready); err != nil {
		return fmt.Errorf("kubetest: restart: %w", err)
	}
	return nil
}

// LogFiles returns the paths of the etcd and kube-apiserver logs, of
// every start and restart, oldest first by name.
func (e *Env) LogFiles() []string {
	files, _ := filepath.Glob(filepath.Join(e.dir, "*.log"))
	return files
}

// APIServerRunning reports whether kube-apiserver is alive.
func (e *Env) APIServerRunning() bool { e.mu.Lock(); defer e.mu.Unlock(); return e.apiserver.running() }

// EtcdRunning reports whether etcd is alive.
func (e *Env) EtcdRunning() bool { e.mu.Lock(); defer e.mu.Unlock(); return e.etcd.running() }

// ConfigAs returns a copy of Config that impersonates user in groups, for
// checking what an RBAC role allows. Impersonated users are also in
// system:authenticated.
func (e *Env) ConfigAs(user string, groups ...string) *rest.Config {
	c := rest.CopyConfig(e.Config)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	return c
}

// BinDir returns the directory holding the binaries hack/kube-binaries.sh
// builds (kube-apiserver and etcd are checked; internal/nodelab checks the
// ones it runs), building them first when they are not cached. It skips t
// when VIPSTACK_SKIP_KUBE=1.
func BinDir(t testing.TB) string {
	t.Helper()
	if os.Getenv("VIPSTACK_SKIP_KUBE") == "1" {
		t.Skip("kubetest: VIPSTACK_SKIP_KUBE=1: skipping a test that needs kube-apiserver and etcd")
	}
	if dir := os.Getenv("VIPSTACK_KUBE_BIN"); dir != "" {
		if err := haveBinaries(dir); err != nil {
			t.Fatalf("kubetest: VIPSTACK_KUBE_BIN=%s: %v (want a directory holding kube-apiserver and etcd, as built by hack/kube-binaries.sh)", dir, err)
		}
		return dir
	}
	script, err := findScript()
	if err != nil {
		t.Fatalf("kubetest: %v; set VIPSTACK_KUBE_BIN to a directory holding kube-apiserver and etcd, or VIPSTACK_SKIP_KUBE=1 to skip", err)
	}
	dir, err := runScript(script, "--dir")
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	if haveBinaries(dir) == nil {
		return dir
	}
	t.Logf("kubetest: %s has no kube-apiserver and etcd yet; building them with %s (about 20 minutes on 2 cores; set VIPSTACK_SKIP_KUBE=1 to skip instead)", dir, script)
	began := time.Now()
	if dir, err = runScript(script); err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	if err := haveBinaries(dir); err != nil {
		t.Fatalf("kubetest: after %s: %v", script, err)
	}
	t.Logf("kubetest: built in %v", time.Since(began).Round(time.Second))
	return dir
}

// moduleBinDir returns the directory holding the kube-apiserver of another
// version's module (Options.Module), building it first when it is not
// cached.
func moduleBinDir(t testing.TB, module string) string {
	t.Helper()
	script, err := findScript()
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	dir, err := runScript(script, "--module", module, "--dir")
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	if haveBinaries(dir, "kube-apiserver") == nil {
		return dir
	}
	t.Logf("kubetest: building the kube-apiserver of %s with %s (about 10 minutes on 2 cores)", module, script)
	began := time.Now()
	if dir, err = runScript(script, "--module", module); err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	if err := haveBinaries(dir, "kube-apiserver"); err != nil {
		t.Fatalf("kubetest: after %s --module %s: %v", script, module, err)
	}
	t.Logf("kubetest: built in %v", time.Since(began).Round(time.Second))
	return dir
}

func haveBinaries(dir string, names ...string) error {
	if len(names) == 0 {
		names = []string{"kube-apiserver", "etcd"}
	}
	for _, name := range names {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("find binary: %w", err)
		}
		if fi.Mode()&0o111 == 0 {
			return fmt.Errorf("find binary: %s is not executable", filepath.Join(dir, name))
		}
	}
	return nil
}

// findScript looks for hack/kube-binaries.sh in the working directory (a test
// runs in its package's directory) and its parents.
func findScript() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find hack/kube-binaries.sh: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		script := filepath.Join(dir, "hack", "kube-binaries.sh")
		if _, err := os.Stat(script); err == nil {
			return script, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("find hack/kube-binaries.sh: not in %s or any parent", wd)
		}
	}
}

// runScript runs hack/kube-binaries.sh and returns the directory it prints.
func runScript(script string, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("run %s %s: %w\n%s", script, strings.Join(args, " "), err, stderr.Bytes())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	dir := lines[len(lines)-1]
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("run %s %s: printed %q, want an absolute directory", script, strings.Join(args, " "), dir)
	}
	return dir, nil
}

// start runs etcd and kube-apiserver from bin and waits until both are ready.
func start(bin, apiBin string, o Options) (_ *Env, err error) {
	dir, err := os.MkdirTemp("", "vipstack-kubetest-")
	if err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	env := &Env{dir: dir, Bin: bin, dualStack: o.DualStack}
	defer func() {
		if err != nil {
			env.Stop()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()

	c, err := writeCredentials(dir, o.ServingIPs)
	if err != nil {
		return nil, err
	}
	env.CAFile, env.ServiceAccountKeyFile = c.caFile, c.saKeyFile
	etcdURL, err := env.startEtcd(ctx, bin)
	if err != nil {
		return nil, err
	}
	host, err := env.startAPIServer(ctx, apiBin, etcdURL, c)
	if err != nil {
		return nil, err
	}

	kcfg := clientcmdapi.NewConfig()
	kcfg.Clusters["kubetest"] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: c.caPEM}
	kcfg.AuthInfos[AdminUser] = &clientcmdapi.AuthInfo{Token: c.token}
	kcfg.Contexts["kubetest"] = &clientcmdapi.Context{Cluster: "kubetest", AuthInfo: AdminUser, Namespace: "default"}
	kcfg.CurrentContext = "kubetest"
	env.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kcfg, env.Kubeconfig); err != nil {
		return nil, fmt.Errorf("write kubeconfig: %w", err)
	}
	if env.Config, err = clientcmd.BuildConfigFromFlags("", env.Kubeconfig); err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", env.Kubeconfig, err)
	}
	return env, nil
}

func (e *Env) startEtcd(ctx context.Context, bin string) (string, error) {
	data := filepath.Join(e.dir, "etcd")
	for attempt := 1; ; attempt++ {
		ports, err := freePorts(2)
		if err != nil {
			return "", fmt.Errorf("start etcd: %w", err)
		}
		clientURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
		peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
		args := []string{"--name=kubetest",
			"--data-dir=" + data,
			"--listen-client-urls=" + clientURL,
			"--advertise-client-urls=" + clientURL,
			"--listen-peer-urls=" + peerURL,
			"--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=kubetest=" + peerURL,
			"--initial-cluster-state=new",
			// Test data is thrown away: durability buys nothing.
			"--unsafe-no-fsync",
			"--log-level=warn",
		}
		e.etcd, err = startProc("etcd", filepath.Join(bin, "etcd"), filepath.Join(e.dir, fmt.Sprintf("etcd-%d.log", attempt)), args...)
		if err != nil {
			return "", err
		}
		err = e.etcd.waitReady(ctx, func(ctx context.Context) error {
			return probe(ctx, http.DefaultClient, clientURL+"/health", "")
		})
		if err == nil {
			e.etcdURL, e.etcdArgs = clientURL, append([]string{filepath.Join(bin, "etcd")}, args...)
			return clientURL, nil
		}
		if attempt == portAttempts || !e.etcd.portTaken() {
			return "", err
		}
		if err := e.etcd.stop(); err != nil {
			return "", err
		}
		if err := os.RemoveAll(data); err != nil {
			return "", fmt.Errorf("start etcd: %w", err)
		}
	}
}

func (e *Env) startAPIServer(ctx context.Context, bin, etcdURL string, c *credentials) (string, error) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.caPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}}
	e.ready, e.token = client, c.token
	for attempt := 1; ; attempt++ {
		ports, err := freePorts(1)
		if err != nil {
			return "", fmt.Errorf("start kube-apiserver: %w", err)
		}
		port := ports[0]
		host := "https://127.0.0.1:" + strconv.Itoa(port)
		args := []string{"--etcd-servers=" + etcdURL,
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(port),
			// Nothing the API server writes may point off the machine: it
			// advertises loopback and keeps no endpoints for itself.
			"--advertise-address=127.0.0.1",
			"--endpoint-reconciler-type=none",
			"--service-cluster-ip-range=" + serviceRange(e.dualStack),
			"--cert-dir=" + filepath.Join(e.dir, "certs"),
			"--tls-cert-file=" + c.certFile,
			"--tls-private-key-file=" + c.keyFile,
			"--token-auth-file=" + c.tokenFile,
			"--authorization-mode=RBAC",
			"--service-account-issuer=https://kubernetes.default.svc",
			"--service-account-key-file=" + c.saPublicFile,
			"--service-account-signing-key-file=" + c.saKeyFile,
			"--allow-privileged=true",
			"--profiling=false",
		}
		e.apiserver, err = startProc("kube-apiserver", filepath.Join(bin, "kube-apiserver"), filepath.Join(e.dir, fmt.Sprintf("kube-apiserver-%d.log", attempt)), args...)
		if err != nil {
			return "", err
		}
		err = e.apiserver.waitReady(ctx, func(ctx context.Context) error {
			return probe(ctx, client, host+"/readyz", c.token)
		})
		if err == nil {
			e.apiURL, e.apiArgs = host, append([]string{filepath.Join(bin, "kube-apiserver")}, args...)
			return host, nil
		}
		if attempt == portAttempts || !e.apiserver.portTaken() {
			return "", err
		}
		if err := e.apiserver.stop(); err != nil {
			return "", err
		}
	}
}

// freePorts returns n distinct TCP ports that were free on 127.0.0.1 a moment
// ago. Someone else may take one before the process we pass it to binds it;
// callers retry on new ports when that happens (see proc.portTaken).
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// probe GETs url and succeeds on 200 OK.
func probe(ctx context.Context, client *http.Client, url, token string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, bytes.TrimSpace(body))
	}
	return nil
}

// proc is one started process whose output goes to a log file.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited
	waitErr error         // set before done is closed
}

func startProc(name, path, logPath string, args ...string) (*proc, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	defer logFile.Close() // the child keeps its own descriptor
	cmd := exec.Command(path, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	p := &proc{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	started := make(chan error)
	go func() {
		// The parent-death signal fires when the thread that forked the
		// child exits, not the process. Another goroutine could end with
		// that thread locked (as netns code does on purpose), and the
		// runtime would then destroy it; holding the thread until the child
		// exits rules that out.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return p, nil
}

// waitReady polls ready until it succeeds, the process exits or ctx ends.
// Polling on a real ticker is right here: we wait for another process, not for
// one of our own timers.
func (p *proc) waitReady(ctx context.Context, ready func(context.Context) error) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		probeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := ready(probeCtx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("start %s: exited before it was ready (%v); last lines of %s:\n%s", p.name, p.waitErr, p.logPath, p.tail())
		case <-ctx.Done():
			return fmt.Errorf("start %s: not ready after %v (last probe: %v); last lines of %s:\n%s", p.name, readyTimeout, err, p.logPath, p.tail())
		case <-tick.C:
		}
	}
}

func (p *proc) running() bool {
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// portTaken reports whether the process exited because its port was in use.
func (p *proc) portTaken() bool {
	select {
	case <-p.done:
	default:
		return false
	}
	b, err := os.ReadFile(p.logPath)
	return err == nil && bytes.Contains(b, []byte("address already in use"))
}

// stop sends SIGTERM to the process and SIGKILL if it has not exited after
// stopTimeout, and waits for it to exit.
func (p *proc) stop() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop %s (pid %d): %w", p.name, p.cmd.Process.Pid, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(stopTimeout):
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %s (pid %d): %w", p.name, p.cmd.Process.Pid, err)
	}
	<-p.done
	return nil
}

// tail returns the last lines of the process's log.
func (p *proc) tail() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(read log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}

// credentials are the files that authenticate the API server to clients and
// clients to the API server.
type credentials struct {
	caPEM        []byte
	caFile       string // caPEM
	certFile     string // serving certificate for 127.0.0.1, localhost and Options.ServingIPs
	keyFile      string
	saKeyFile    string // service account token signing key
	saPublicFile string
	tokenFile    string // --token-auth-file
	token        string // AdminUser's bearer token
}

func writeCredentials(dir string, servingIPs []netip.Addr) (*credentials, error) {
	c := &credentials{
		caFile:       filepath.Join(dir, "ca.crt"),
		certFile:     filepath.Join(dir, "apiserver.crt"),
		keyFile:      filepath.Join(dir, "apiserver.key"),
		saKeyFile:    filepath.Join(dir, "sa.key"),
		saPublicFile: filepath.Join(dir, "sa.pub"),
		tokenFile:    filepath.Join(dir, "tokens.csv"),
	}
	// Certificates must be valid by the real clock the API server and
	// clients check them against.
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "vipstack kubetest CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	c.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate serving key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:     []string{"localhost"},
	}
	for _, a := range servingIPs {
		tmpl.IPAddresses = append(tmpl.IPAddresses, a.AsSlice())
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("marshal serving key: %w", err)
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate service account key: %w", err)
	}
	saDER, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return nil, fmt.Errorf("marshal service account key: %w", err)
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("marshal service account public key: %w", err)
	}

	token := make([]byte, 32)
	if _, err := rand.Read(token); err != nil {
		return nil, fmt.Errorf("generate admin token: %w", err)
	}
	c.token = hex.EncodeToString(token)

	files := []struct {
		path string
		data []byte
	}{
		{c.caFile, c.caPEM},
		{c.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})},
		{c.keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})},
		{c.saKeyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: saDER})},
		{c.saPublicFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER})},
		// token,user,uid,"group,..."
		{c.tokenFile, []byte(fmt.Sprintf("%s,%s,%s,\"system:masters\"\n", c.token, AdminUser, AdminUser))},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return nil, fmt.Errorf("write credentials: %w", err)
		}
	}
	return c, nil
}

// WriteKubeconfigAs writes to path a copy of the admin kubeconfig that
// impersonates the ServiceAccount sa of namespace ns and, if server is
// set (host:port), reaches the API server there, for example through a
// proxy in a network namespace.
func (e *Env) WriteKubeconfigAs(path, server, ns, sa string) error {
	cfg, err := clientcmd.LoadFromFile(e.Kubeconfig)
	if err != nil {
		return fmt.Errorf("kubetest: read kubeconfig: %w", err)
	}
	if server != "" {
		for _, c := range cfg.Clusters {
			u, err := url.Parse(c.Server)
			if err != nil {
				return fmt.Errorf("kubetest: kubeconfig server %q: %w", c.Server, err)
			}
			u.Host = server
			c.Server = u.String()
		}
	}
	for _, a := range cfg.AuthInfos {
		a.Impersonate = "system:serviceaccount:" + ns + ":" + sa
		a.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + ns}
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("kubetest: write kubeconfig: %w", err)
	}
	return nil
}

func serviceRange(dual bool) string {
	if dual {
		return ServiceCIDR + "," + ServiceCIDR6
	}
	return ServiceCIDR
}
