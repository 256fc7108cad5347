package abi

import "strings"

// Secrets (ABI 1, SDK v1.1.0). A module never holds a secret's value: it
// writes the secret's placeholder where the value goes (a header, or where
// the manifest allows it the URL or the body of a request), and the
// station's network gate replaces the placeholder with the value in
// requests to the hosts the secret is bound to, after the allowlist
// decision. A request that carries a placeholder anywhere else is denied.
// The placeholder is plain text, so a module in any language can write it;
// there is no import.

// SecretPrefix and SecretSuffix enclose a secret's name in its placeholder:
// ~station-secret~STRIPE_KEY~. Every byte of it is unreserved in URLs (no
// percent-encoding changes it) and valid in a header value and in JSON.
const (
	SecretPrefix = "~station-secret~"
	SecretSuffix = "~"
)

// MaxSecretName bounds the length of a secret's name.
const MaxSecretName = 64

// SecretPlaceholder returns the placeholder of the secret named name.
func SecretPlaceholder(name string) string { return SecretPrefix + name + SecretSuffix }

// CheckSecretName returns what is wrong with a secret's name, or "": an
// upper-case letter, then upper-case letters, digits and _, at most
// MaxSecretName bytes (STRIPE_KEY).
func CheckSecretName(name string) string {
	if name == "" || len(name) > MaxSecretName {
		return "a secret's name is 1 to 64 characters"
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'A' && c <= 'Z' || i > 0 && (c >= '0' && c <= '9' || c == '_')) {
			return "a secret's name is an upper-case letter, then upper-case letters, digits and _ (like STRIPE_KEY)"
		}
	}
	return ""
}

// FindSecret returns the first placeholder in s at or after from: its
// start, its end and the name in it; ok is false when there is none. A
// prefix not followed by a valid name and the suffix is returned with name
// "" (a malformed placeholder), so that no spelling of one goes unseen.
func FindSecret(s string, from int) (start, end int, name string, ok bool) {
	i := strings.Index(s[from:], SecretPrefix)
	if i < 0 {
		return 0, 0, "", false
	}
	start = from + i
	rest := s[start+len(SecretPrefix):]
	j := strings.Index(rest, SecretSuffix)
	if j < 0 || j > MaxSecretName || CheckSecretName(rest[:j]) != "" {
		return start, start + len(SecretPrefix), "", true
	}
	return start, start + len(SecretPrefix) + j + len(SecretSuffix), rest[:j], true
}
