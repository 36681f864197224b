package k8s

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// The VRRP password of a VIPGroup with authPassSecretRef lives in a
// Secret of the group's namespace that only the controller reads. The
// controller copies it into a Secret of its own namespace (the release's)
// named PasswordSecretName(group), under PasswordKey; the agents read only
// those copies (docs/design/keepalived-operator.md, "Who reads the
// password").
const (
	// DefaultNamespace is the release namespace when neither a flag nor
	// $POD_NAMESPACE names one.
	DefaultNamespace = "vipstack-system"
	// PasswordKey is the key of the password in a copy.
	PasswordKey = "password"
	// MadeForLabel marks the objects the controller makes; on a copy of a
	// password its value is PasswordMadeFor.
	MadeForLabel    = "vipstack.io/made-for"
	PasswordMadeFor = "vrrp-password"
	// MadeFromAnnotation on a copy names its VIPGroup (NAMESPACE/NAME);
	// PasswordSourceAnnotation names the Secret and key it copies.
	MadeFromAnnotation       = "vipstack.io/made-from"
	PasswordSourceAnnotation = "vipstack.io/password-from"
)

// passwordPrefix starts every copy's name.
const passwordPrefix = "vipstack-vrrp-"

// maxSecretName is the longest name of a Secret (a DNS subdomain).
const maxSecretName = 253

// PasswordSecretName is the name of the copy of g's VRRP password:
// "vipstack-vrrp-NAMESPACE.NAME". A namespace has no dot, so the first
// dot keeps two groups apart ("a-b"/"c" and "a"/"b-c" differ). A name
// that would be longer than a Secret's 253 characters is cut, and the
// first 16 hex digits of the SHA-256 of "NAMESPACE/NAME" are appended, so
// it stays unique.
func PasswordSecretName(g GroupRef) string {
	name := passwordPrefix + g.Namespace + "." + g.Name
	if len(name) <= maxSecretName {
		return name
	}
	sum := sha256.Sum256([]byte(g.Namespace + "/" + g.Name))
	suffix := "-" + hex.EncodeToString(sum[:])[:16]
	cut := strings.TrimRight(name[:maxSecretName-len(suffix)], ".-")
	return cut + suffix
}
