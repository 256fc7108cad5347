package sdk

import "github.com/station-dev/station/sdk/abi"

// Secret returns the placeholder of the secret named name, which the
// module's manifest declares under requires.secrets. Write it where the
// value goes in a request — a header, or the URL or the body where the
// manifest allows it (`in: [query, body]`):
//
//	req.Header.Set("Authorization", "Bearer "+sdk.Secret("STRIPE_KEY"))
//
// The module never sees the value: the station's network gate replaces the
// placeholder in requests to the hosts the secret is bound to, after the
// allowlist decision, and denies a request that carries it to any other
// host. The value is also replaced by the placeholder in what the server
// sends back, should it echo it. Secret panics if name is not a valid
// secret name (STRIPE_KEY: upper-case letters, digits and _).
func Secret(name string) string {
	if msg := abi.CheckSecretName(name); msg != "" {
		panic("sdk.Secret(" + quoteName(name) + "): " + msg)
	}
	return abi.SecretPlaceholder(name)
}

func quoteName(s string) string {
	b := []byte{'"'}
	for i := 0; i < len(s) && i < 80; i++ {
		if c := s[i]; c >= ' ' && c < 0x7f && c != '"' && c != '\\' {
			b = append(b, c)
		} else {
			b = append(b, '?')
		}
	}
	return string(append(b, '"'))
}
