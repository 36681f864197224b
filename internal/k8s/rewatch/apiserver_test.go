package rewatch_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/vipstack/vipstack/internal/k8s/rewatch"
	"github.com/vipstack/vipstack/internal/kubetest"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testutil"
)

// counting records the requests the wrapper makes of a real ListerWatcher.
type counting struct {
	cache.ListerWatcherWithContext
	mu      sync.Mutex
	streams int // watches that stream a list: the reflector's lists
	lists   int // List calls: the wrapper's relists after a 410
	watches []metav1.ListOptions
}

func (c *counting) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	c.mu.Lock()
	c.lists++
	c.mu.Unlock()
	return c.ListerWatcherWithContext.ListWithContext(ctx, o)
}

func (c *counting) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	c.mu.Lock()
	if o.SendInitialEvents != nil && *o.SendInitialEvents {
		c.streams++
	}
	c.watches = append(c.watches, o)
	c.mu.Unlock()
	return c.ListerWatcherWithContext.WatchWithContext(ctx, o)
}

func (c *counting) List(o metav1.ListOptions) (runtime.Object, error) {
	return c.ListWithContext(context.Background(), o)
}

func (c *counting) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return c.WatchWithContext(context.Background(), o)
}

func (c *counting) counts() (streams, lists int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.streams, c.lists
}

// TestAPIServerRestarts runs an informer over a real kube-apiserver that is
// killed and started again three times in a row. Each time the watch the
// server ended is opened again from the last resourceVersion (logged),
// the informer never lists again, and a ConfigMap created after each
// restart reaches the informer's store.
func TestAPIServerRestarts(t *testing.T) {
	env := kubetest.Start(t)
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	const ns = "rewatch"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	inner := &counting{ListerWatcherWithContext: cache.ToListerWatcherWithContext(
		cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", ns, fields.Everything()))}
	var logs syncbuf.Buffer
	newInformer := rewatch.NewInformer(rewatch.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	inf := newInformer(inner, &corev1.ConfigMap{}, 0, cache.Indexers{})
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the informer did not sync")
	}
	streamed, _ := inner.counts()
	if streamed != 1 {
		t.Fatalf("the reflector streamed %d lists to sync, want 1 (client-go's WatchListClient is on by default)", streamed)
	}
	for i := range 3 {
		if err := env.KillAPIServer(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second) // the server stays down a while, as in a restart
		if err := env.RestartAPIServer(ctx); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("after-restart-%d", i)
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := testutil.Poll(time.Minute, func() error {
			if _, ok, _ := inf.GetStore().GetByKey(ns + "/" + name); !ok {
				return fmt.Errorf("ConfigMap %s not in the informer's store", name)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	streams, lists := inner.counts()
	if streams != streamed {
		t.Errorf("the reflector listed %d more times after the restarts; want its watch resumed instead", streams-streamed)
	}
	log := logs.String()
	if n := strings.Count(log, "API watch opened again"); n < 3 {
		t.Errorf("%d resumed watches logged, want at least 3 (one per restart); log:\n%s", n, log)
	}
	// A resumed watch whose version the restarted server no longer has
	// (410) is followed by a list of the wrapper's own.
	if n := strings.Count(log, "listed=true"); n != lists {
		t.Errorf("%d relists logged, %d made", n, lists)
	}
	if !strings.Contains(log, "kind=ConfigMap") {
		t.Errorf("the log does not name the kind: %s", log)
	}
	t.Logf("wrapper log:\n%s", logs.String())
}
