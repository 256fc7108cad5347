package config

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestLLMDefaults(t *testing.T) {
	got := Default().LLM
	want := LLM{Timeout: 60 * time.Second, MaxRetries: 2}
	if got != want {
		t.Errorf("Default().LLM = %+v, want %+v", got, want)
	}
	c, err := Parse(FileName, []byte("llm:\n  max_retries: 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.LLM.MaxRetries != 0 || c.LLM.Timeout != DefaultLLMTimeout {
		t.Errorf("llm.max_retries: 0 gave %+v, want no retries and the default timeout", c.LLM)
	}
}

// TestLLMSettings checks the precedence of config.yaml, provider presets
// and the environment.
func TestLLMSettings(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		env     map[string]string
		want    LLMSettings
		wantErr string
	}{
		{
			name: "nothing configured",
			want: LLMSettings{KeyEnv: "STATION_LLM_API_KEY", Timeout: DefaultLLMTimeout, MaxRetries: 2},
		},
		{
			name: "groq preset with its own variable",
			file: "llm: {provider: groq, model: llama-3.1-8b-instant}",
			env:  map[string]string{"GROQ_API_KEY": " gsk_abc \n"},
			want: LLMSettings{BaseURL: "https://api.groq.com/openai/v1", Model: "llama-3.1-8b-instant", APIKey: "gsk_abc", KeyEnv: "GROQ_API_KEY or STATION_LLM_API_KEY", Timeout: DefaultLLMTimeout, MaxRetries: 2},
		},
		{
			name: "openai preset by environment alone",
			env:  map[string]string{"STATION_LLM_PROVIDER": "openai", "STATION_LLM_MODEL": "gpt-4o-mini", "OPENAI_API_KEY": "sk-o"},
			want: LLMSettings{BaseURL: "https://api.openai.com/v1", Model: "gpt-4o-mini", APIKey: "sk-o", KeyEnv: "OPENAI_API_KEY or STATION_LLM_API_KEY", Timeout: DefaultLLMTimeout, MaxRetries: 2},
		},
		{
			name: "STATION_LLM_API_KEY wins over the named variable",
			file: "llm: {provider: groq, api_key_env: TEAM_KEY}",
			env:  map[string]string{"TEAM_KEY": "from-team", "GROQ_API_KEY": "from-groq", "STATION_LLM_API_KEY": "from-station"},
			want: LLMSettings{BaseURL: "https://api.groq.com/openai/v1", APIKey: "from-station", KeyEnv: "TEAM_KEY or STATION_LLM_API_KEY", Timeout: DefaultLLMTimeout, MaxRetries: 2},
		},
		{
			name: "api_key_env replaces the provider's variable",
			file: "llm: {provider: groq, api_key_env: TEAM_KEY}",
			env:  map[string]string{"GROQ_API_KEY": "from-groq"},
			want: LLMSettings{BaseURL: "https://api.groq.com/openai/v1", KeyEnv: "TEAM_KEY or STATION_LLM_API_KEY", Timeout: DefaultLLMTimeout, MaxRetries: 2},
		},
		{
			name: "base_url beats the file's provider; the environment beats both",
			file: "llm: {provider: openai, base_url: \"https://proxy.example/v1\", model: m1, timeout: 5s, max_retries: 1}",
			env:  map[string]string{"STATION_LLM_BASE_URL": "http://127.0.0.1:8080/v1", "STATION_LLM_MODEL": "m2"},
			want: LLMSettings{BaseURL: "http://127.0.0.1:8080/v1", Model: "m2", KeyEnv: "OPENAI_API_KEY or STATION_LLM_API_KEY", Timeout: 5 * time.Second, MaxRetries: 1},
		},
		{
			name: "environment provider beats the file's base_url",
			file: "llm: {base_url: \"https://proxy.example/v1\"}",
			env:  map[string]string{"STATION_LLM_PROVIDER": "groq"},
			want: LLMSettings{BaseURL: "https://api.groq.com/openai/v1", KeyEnv: "GROQ_API_KEY or STATION_LLM_API_KEY", Timeout: DefaultLLMTimeout, MaxRetries: 2},
		},
		{name: "unknown provider in the environment", env: map[string]string{"STATION_LLM_PROVIDER": "acme"}, wantErr: `STATION_LLM_PROVIDER: unknown provider "acme" (known providers: groq, openai)`},
		{name: "misspelt provider in the environment", env: map[string]string{"STATION_LLM_PROVIDER": "grok"}, wantErr: `STATION_LLM_PROVIDER: unknown provider "grok"; did you mean "groq"?`},
		{name: "plain http base URL in the environment", env: map[string]string{"STATION_LLM_BASE_URL": "http://llm.example/v1"}, wantErr: "STATION_LLM_BASE_URL: \"http://llm.example/v1\" uses plain http"},
		{name: "credentials in the environment's base URL", env: map[string]string{"STATION_LLM_BASE_URL": "https://u:sk-secret@llm.example/v1"}, wantErr: "STATION_LLM_BASE_URL: must not hold credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(FileName, []byte(tt.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.LLMSettings(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("LLMSettings error = %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "sk-secret") {
					t.Errorf("error %q quotes a secret", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("LLMSettings = %+v, %v\nwant %+v", got, err, tt.want)
			}
		})
	}
}

// No error about the llm section quotes a key the operator put in the file.
func TestLLMKeyNeverQuoted(t *testing.T) {
	const key = "sk-proj-0123456789abcdefghij"
	for _, doc := range []string{
		"llm:\n  api_key: " + key + "\n",
		"llm:\n  api_key_env: " + key + "\n",
		"llm:\n  api_key_env: gsk_" + key[3:] + "\n",
		"llm:\n  base_url: https://x:" + key + "@api.groq.com/v1\n",
		"llm:\n  base_url: https://api.groq.com/v1?key=" + key + "\n",
	} {
		_, err := Parse(FileName, []byte(doc))
		if err == nil {
			t.Errorf("Parse(%q) accepted a key in the file", doc)
			continue
		}
		if strings.Contains(err.Error(), key[8:]) {
			t.Errorf("Parse(%q) error %q quotes the key", doc, err)
		}
	}
}

func TestLLMSettingsFromOSEnvironment(t *testing.T) {
	t.Setenv(EnvLLMAPIKey, "sk-from-env")
	c := Default()
	got, err := c.LLMSettings(os.Getenv)
	if err != nil || got.APIKey != "sk-from-env" {
		t.Errorf("LLMSettings(os.Getenv) = %+v, %v", got, err)
	}
}

// TestLLMPlainHTTPOnlyToLoopback: a base URL in plain http is accepted only
// for a server on this machine (stationhttp.IsLoopback, the test the LLM
// client makes), however localhost is spelled.
func TestLLMPlainHTTPOnlyToLoopback(t *testing.T) {
	for base, ok := range map[string]bool{
		"http://127.0.0.1:8080/v1":     true,
		"http://LOCALHOST.:8080/v1":    true,
		"http://[::1]:8080/v1":         true,
		"http://0.0.0.0:8080/v1":       false,
		"http://localhost.example/v1":  false,
		"https://localhost.example/v1": true,
	} {
		if msg := checkLLMBaseURL(base); (msg == "") != ok {
			t.Errorf("checkLLMBaseURL(%s) = %q, want accepted %v", base, msg, ok)
		}
	}
}
