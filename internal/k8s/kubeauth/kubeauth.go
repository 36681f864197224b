package kubeauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/vipstack/vipstack/internal/clock"
)

// Reviewer creates the two reviews; *kubernetes.Clientset's
// AuthenticationV1().TokenReviews() and AuthorizationV1().
// SubjectAccessReviews() do (see ClientReviewer).
type Reviewer interface {
	TokenReview(ctx context.Context, r *authnv1.TokenReview) (*authnv1.TokenReview, error)
	SubjectAccessReview(ctx context.Context, r *authzv1.SubjectAccessReview) (*authzv1.SubjectAccessReview, error)
}

// Guard authenticates and authorizes requests before its handler sees
// them. Verdicts are cached per token, path and verb for TTL, so a scrape
// every few seconds costs the API server two reviews a TTL at most.
type Guard struct {
	Reviewer Reviewer
	// Audiences, when set, are the audiences the token must be for
	// (TokenReview's spec.audiences); empty: the API server's.
	Audiences []string
	TTL       time.Duration // 0: DefaultTTL
	Clock     clock.Clock   // nil: the real clock
	Logger    *slog.Logger  // nil: slog.Default()

	mu    sync.Mutex
	cache map[cacheKey]verdict
}

// DefaultTTL is how long a verdict is reused.
const DefaultTTL = 10 * time.Second

// maxCache bounds the verdicts kept; past it the cache starts again.
const maxCache = 1024

type cacheKey struct {
	token      [sha256.Size]byte
	path, verb string
}

type verdict struct {
	code    int // 0: allowed; else 401 or 403
	why     string
	expires time.Time
}

// Wrap returns h behind the guard: 401 Unauthorized without a valid
// bearer token, 403 Forbidden when its user may not use the path, and
// 500 when the API server cannot be asked (nothing is served unchecked).
func (g *Guard) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, why := g.check(r)
		if code != 0 {
			if code == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="vipstack"`)
			}
			http.Error(w, why, code)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (g *Guard) check(r *http.Request) (int, string) {
	token, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		return http.StatusUnauthorized, "Unauthorized: a bearer token is required (Authorization: Bearer TOKEN)"
	}
	verb := strings.ToLower(r.Method)
	key := cacheKey{token: sha256.Sum256([]byte(token)), path: r.URL.Path, verb: verb}
	now := g.clock().Now()
	g.mu.Lock()
	v, hit := g.cache[key]
	g.mu.Unlock()
	if hit && now.Before(v.expires) {
		return v.code, v.why
	}
	v, err := g.review(r.Context(), token, r.URL.Path, verb)
	if err != nil {
		g.log().Error("metrics authentication: the API server could not be asked", "err", err)
		return http.StatusInternalServerError, "Internal Server Error: cannot check the token with the API server"
	}
	v.expires = now.Add(g.ttl())
	g.mu.Lock()
	if g.cache == nil || len(g.cache) >= maxCache {
		g.cache = map[cacheKey]verdict{}
	}
	g.cache[key] = v
	g.mu.Unlock()
	return v.code, v.why
}

func (g *Guard) review(ctx context.Context, token, path, verb string) (verdict, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tr, err := g.Reviewer.TokenReview(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token, Audiences: g.Audiences}})
	if err != nil {
		return verdict{}, fmt.Errorf("TokenReview: %w", err)
	}
	if !tr.Status.Authenticated {
		why := "Unauthorized: the token is not valid"
		if tr.Status.Error != "" {
			g.log().Debug("metrics authentication: token refused", "err", tr.Status.Error)
		}
		return verdict{code: http.StatusUnauthorized, why: why}, nil
	}
	u := tr.Status.User
	extra := map[string]authzv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	sar, err := g.Reviewer.SubjectAccessReview(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
		NonResourceAttributes: &authzv1.NonResourceAttributes{Path: path, Verb: verb},
	}})
	if err != nil {
		return verdict{}, fmt.Errorf("SubjectAccessReview: %w", err)
	}
	if !sar.Status.Allowed {
		g.log().Info("metrics authorization: refused", "user", u.Username, "verb", verb, "path", path, "reason", sar.Status.Reason)
		return verdict{code: http.StatusForbidden,
			why: fmt.Sprintf("Forbidden: user %q may not %s %s (grant the non-resource URL to it in a ClusterRole)", u.Username, verb, path)}, nil
	}
	return verdict{}, nil
}

// bearer returns the token of an "Authorization: Bearer TOKEN" header.
func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

func (g *Guard) ttl() time.Duration {
	if g.TTL > 0 {
		return g.TTL
	}
	return DefaultTTL
}

func (g *Guard) clock() clock.Clock {
	if g.Clock != nil {
		return g.Clock
	}
	return clock.Real{}
}

func (g *Guard) log() *slog.Logger {
	if g.Logger != nil {
		return g.Logger
	}
	return slog.Default()
}

// ClientReviewer is a Reviewer on a clientset's typed clients.
type ClientReviewer struct {
	TokenReviews interface {
		Create(ctx context.Context, r *authnv1.TokenReview, o metav1.CreateOptions) (*authnv1.TokenReview, error)
	}
	SubjectAccessReviews interface {
		Create(ctx context.Context, r *authzv1.SubjectAccessReview, o metav1.CreateOptions) (*authzv1.SubjectAccessReview, error)
	}
}

// TokenReview creates r.
func (c ClientReviewer) TokenReview(ctx context.Context, r *authnv1.TokenReview) (*authnv1.TokenReview, error) {
	if c.TokenReviews == nil {
		return nil, errors.New("kubeauth: no TokenReview client")
	}
	return c.TokenReviews.Create(ctx, r, metav1.CreateOptions{})
}

// SubjectAccessReview creates r.
func (c ClientReviewer) SubjectAccessReview(ctx context.Context, r *authzv1.SubjectAccessReview) (*authzv1.SubjectAccessReview, error) {
	if c.SubjectAccessReviews == nil {
		return nil, errors.New("kubeauth: no SubjectAccessReview client")
	}
	return c.SubjectAccessReviews.Create(ctx, r, metav1.CreateOptions{})
}

// ForClientset is the Reviewer of a clientset.
func ForClientset(cs kubernetes.Interface) Reviewer {
	return ClientReviewer{TokenReviews: cs.AuthenticationV1().TokenReviews(), SubjectAccessReviews: cs.AuthorizationV1().SubjectAccessReviews()}
}
