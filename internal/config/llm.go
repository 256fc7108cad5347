package config

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/station-dev/station/internal/stationhttp"
	"github.com/station-dev/station/internal/yamlx"
)

// LLM holds the station's LLM provider settings, the llm section of
// config.yaml. The station's LLM client is station-level I/O: no module's
// network allowlist and none of the network section applies to it. The key
// is never in the file: APIKeyEnv names the environment variable that holds
// it (see docs/llm.md and RATIONALE.md).
type LLM struct {
	// Provider is a preset ("openai", "groq") that fills BaseURL and
	// APIKeyEnv when they are not set; "" for none.
	Provider string
	// BaseURL is the OpenAI-compatible API root, e.g.
	// "https://api.groq.com/openai/v1", as written ("" if not set).
	BaseURL string
	// Model is the default model.
	Model string
	// APIKeyEnv is the name of the environment variable that holds the
	// key ("" if not set: the provider's, see Providers).
	APIKeyEnv string
	// Timeout bounds each request to the provider.
	Timeout time.Duration
	// MaxRetries is how often a request that failed with 429, 5xx or a
	// connection error is retried.
	MaxRetries int
}

// The defaults of LLM.
const (
	DefaultLLMTimeout    = 60 * time.Second
	DefaultLLMMaxRetries = 2
	// MaxLLMRetries bounds llm.max_retries.
	MaxLLMRetries = 10
)

// Environment variables that override the llm section. The key itself is
// only ever read from the environment.
const (
	EnvLLMProvider = "STATION_LLM_PROVIDER"
	EnvLLMBaseURL  = "STATION_LLM_BASE_URL"
	EnvLLMModel    = "STATION_LLM_MODEL"
	EnvLLMAPIKey   = "STATION_LLM_API_KEY"
)

// Provider is a preset for a well-known OpenAI-compatible provider.
type Provider struct {
	BaseURL string
	KeyEnv  string // the variable the provider's own tools read
}

// Providers are the presets llm.provider and STATION_LLM_PROVIDER accept.
var Providers = map[string]Provider{
	"openai": {BaseURL: "https://api.openai.com/v1", KeyEnv: "OPENAI_API_KEY"},
	"groq":   {BaseURL: "https://api.groq.com/openai/v1", KeyEnv: "GROQ_API_KEY"},
}

// unknownProvider words a provider name that is not in Providers.
func unknownProvider(name string) string {
	names := make([]string, 0, len(Providers))
	for n := range Providers {
		names = append(names, n)
	}
	slices.Sort(names)
	return yamlx.Unknown("provider", name, names)
}

// LLMSettings are the effective LLM settings: the llm section with the
// environment's overrides applied and the key looked up.
type LLMSettings struct {
	BaseURL    string
	Model      string
	APIKey     string // never print it
	KeyEnv     string // where the key is looked up, for messages: "GROQ_API_KEY or STATION_LLM_API_KEY"
	Timeout    time.Duration
	MaxRetries int
}

// LLMSettings applies the environment (getenv, usually os.Getenv) to the
// llm section:
//
//   - STATION_LLM_BASE_URL, else the preset of STATION_LLM_PROVIDER, else
//     llm.base_url, else the preset of llm.provider, is the base URL;
//   - STATION_LLM_MODEL, else llm.model, is the model;
//   - STATION_LLM_API_KEY, else the variable llm.api_key_env names (by
//     default the effective provider's, e.g. GROQ_API_KEY), is the key.
//
// An unusable value in the environment is an error naming the variable.
// Settings that are merely missing (no provider, no key) are not errors
// here: the LLM client reports them when it is used.
func (c *Config) LLMSettings(getenv func(string) string) (LLMSettings, error) {
	l := c.LLM
	s := LLMSettings{Model: l.Model, Timeout: l.Timeout, MaxRetries: l.MaxRetries}
	provider := l.Provider
	s.BaseURL = cmp.Or(l.BaseURL, Providers[provider].BaseURL)
	if p := strings.TrimSpace(getenv(EnvLLMProvider)); p != "" {
		preset, ok := Providers[p]
		if !ok {
			return s, fmt.Errorf("%s: %s", EnvLLMProvider, unknownProvider(p))
		}
		provider, s.BaseURL = p, preset.BaseURL
	}
	if u := strings.TrimSpace(getenv(EnvLLMBaseURL)); u != "" {
		if err := checkLLMBaseURL(u); err != "" {
			return s, fmt.Errorf("%s: %s", EnvLLMBaseURL, err)
		}
		s.BaseURL = u
	}
	s.Model = cmp.Or(strings.TrimSpace(getenv(EnvLLMModel)), s.Model)
	keyEnv := cmp.Or(l.APIKeyEnv, Providers[provider].KeyEnv)
	s.KeyEnv = EnvLLMAPIKey
	if keyEnv != "" {
		s.KeyEnv = keyEnv + " or " + EnvLLMAPIKey
	}
	s.APIKey = strings.TrimSpace(getenv(EnvLLMAPIKey))
	if s.APIKey == "" && keyEnv != "" {
		s.APIKey = strings.TrimSpace(getenv(keyEnv))
	}
	return s, nil
}

// checkLLMBaseURL returns what is wrong with a base URL, or "".
func checkLLMBaseURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return fmt.Sprintf("%s is not an absolute http(s) URL such as \"https://api.openai.com/v1\"", quote(s))
	case u.User != nil:
		return "must not hold credentials; name the variable that holds the key in llm.api_key_env"
	case u.RawQuery != "" || u.Fragment != "":
		return "must not have a query or fragment"
	case u.Scheme == "http" && !stationhttp.IsLoopback(u.Hostname()):
		return fmt.Sprintf("%s uses plain http, which would send the key unencrypted; use https (http is accepted only for a server on this machine)", quote(s))
	}
	return ""
}

// envName matches a portable environment variable name.
func envName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func (d *decoder) llm(n *yaml.Node, l *LLM) {
	str := func(v *yaml.Node, path string, check func(string) string, out *string) {
		s, ok := d.str(v, path)
		if !ok {
			return
		}
		if msg := check(s); msg != "" {
			d.add(v, path, "", msg)
			return
		}
		*out = s
	}
	d.mapping(n, "llm", []field{
		{"provider", func(v *yaml.Node) {
			str(v, "llm.provider", func(s string) string {
				if _, ok := Providers[s]; !ok {
					msg := unknownProvider(s)
					if !strings.HasSuffix(msg, "?") { // no "did you mean"
						msg += "; for another OpenAI-compatible server, set llm.base_url instead"
					}
					return msg
				}
				return ""
			}, &l.Provider)
		}},
		{"base_url", func(v *yaml.Node) { str(v, "llm.base_url", checkLLMBaseURL, &l.BaseURL) }},
		{"model", func(v *yaml.Node) {
			str(v, "llm.model", func(s string) string {
				if strings.TrimSpace(s) != s || s == "" || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
					return "must be a model name such as \"llama-3.1-8b-instant\""
				}
				return ""
			}, &l.Model)
		}},
		{"api_key_env", func(v *yaml.Node) {
			str(v, "llm.api_key_env", func(s string) string {
				// The value is never quoted back: it may be a key pasted
				// into the wrong field.
				if strings.HasPrefix(s, "sk-") || strings.HasPrefix(s, "gsk_") || len(s) > 64 {
					return "must be the NAME of the variable that holds the key, not the key; remove the key from this file"
				}
				if !envName(s) {
					return "is not an environment variable name (letters, digits and _, not starting with a digit)"
				}
				return ""
			}, &l.APIKeyEnv)
		}},
		{"api_key", func(v *yaml.Node) {
			d.add(v, "llm.api_key", "", "the key does not belong in config.yaml: put it in an environment variable and name that variable in llm.api_key_env (or set "+EnvLLMAPIKey+")")
		}},
		{"timeout", func(v *yaml.Node) { d.duration(v, "llm.timeout", &l.Timeout) }},
		{"max_retries", func(v *yaml.Node) {
			const path = "llm.max_retries"
			var r int
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Decode(&r) != nil {
				d.typeError(v, path, "an integer")
				return
			}
			if r < 0 || r > MaxLLMRetries {
				d.addf(v, path, "", "%s is out of range (0 to %d)", strconv.Itoa(r), MaxLLMRetries)
				return
			}
			l.MaxRetries = r
		}},
	})
}
