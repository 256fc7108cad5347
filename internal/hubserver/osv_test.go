package hubserver_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/station-dev/station/hub"
)

// osvSchemaURL is the $id of testdata/osv-schema.json: the schema of
// github.com/ossf/osv-schema, validation/schema.json, as upstream has it.
const osvSchemaURL = "https://raw.githubusercontent.com/ossf/osv-schema/main/validation/schema.json"

// osvSchema compiles the upstream OSV schema, with format assertions on
// (so that "date-time" is checked, not only the pattern).
//
// The upstream schema admits only the ecosystems and id prefixes registered
// with OSV. Adding "Station" to the ecosystems and "STATION" to the
// prefixes is exactly the registration a home database makes upstream;
// nothing else of the schema is changed.
func osvSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	data, err := os.ReadFile("testdata/osv-schema.json")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for _, sub := range []struct{ old, new string }{
		{`|Wolfi|GIT)(:.+)?$"`, `|Wolfi|GIT|` + hub.Ecosystem + `)(:.+)?$"`},
		{`|USN|V8)-"`, `|USN|V8|` + hub.AdvisoryPrefix + `)-"`},
	} {
		if n := strings.Count(s, sub.old); n != 1 {
			t.Fatalf("the OSV schema has %q %d times, want once: the upstream schema changed; update the registration", sub.old, n)
		}
		s = strings.Replace(s, sub.old, sub.new, 1)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(osvSchemaURL, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(osvSchemaURL)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// osvErr validates raw against the schema.
func osvErr(sch *jsonschema.Schema, raw []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

func validateOSV(t *testing.T, sch *jsonschema.Schema, what string, raw []byte) {
	t.Helper()
	if err := osvErr(sch, raw); err != nil {
		t.Errorf("%s is not a valid OSV record: %#v\n%s", what, err, raw)
	}
}

// TestOSVSchemaRejectsBrokenRecords: the validator the life-cycle test
// relies on does refuse what OSV refuses, so that a record the hub got
// wrong fails it.
func TestOSVSchemaRejectsBrokenRecords(t *testing.T) {
	sch := osvSchema(t)
	good := `{"schema_version":"1.7.0","id":"STATION-2026-0001","modified":"2026-11-02T10:00:00.5Z","published":"2026-11-02T10:00:00Z",
		"summary":"s","details":"d","severity":[{"type":"CVSS_V4","score":"` + cvss + `"}],
		"affected":[{"package":{"ecosystem":"Station","name":"dave/x"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"1.0.1"}]}]}],
		"references":[{"type":"REPORT","url":"https://hub.example/v1/reports/R-aaaaaaaaaaaa"}],
		"credits":[{"name":"erin","type":"FINDER"}],"database_specific":{"severity":"HIGH"}}`
	if err := osvErr(sch, []byte(good)); err != nil {
		t.Fatalf("the well-formed record is refused: %v", err)
	}
	for _, tc := range []struct{ name, old, new string }{
		{"an impossible date (format, not pattern)", `"2026-11-02T10:00:00.5Z"`, `"2026-13-02T10:00:00.5Z"`},
		{"a time that is not UTC", `"published":"2026-11-02T10:00:00Z"`, `"published":"2026-11-02T10:00:00+01:00"`},
		{"an unregistered ecosystem", `"ecosystem":"Station"`, `"ecosystem":"Stations"`},
		{"an unregistered prefix", `"STATION-2026-0001"`, `"STATIONS-2026-0001"`},
		{"fixed and last_affected in one range", `{"fixed":"1.0.1"}`, `{"fixed":"1.0.1"},{"last_affected":"1.0.2"}`},
		{"a range without introduced", `{"introduced":"0"},`, ``},
		{"a relative reference", `"https://hub.example/v1/reports/R-aaaaaaaaaaaa"`, `"/v1/reports/R-aaaaaaaaaaaa"`},
		{"a CVSS 3 vector as CVSS_V4", cvss, "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H"},
		{"an unknown credit type", `"FINDER"`, `"HERO"`},
		{"a field OSV does not have", `"summary":"s"`, `"summary":"s","title":"t"`},
		{"no modified", `"modified":"2026-11-02T10:00:00.5Z",`, ``},
	} {
		broken := strings.Replace(good, tc.old, tc.new, 1)
		if broken == good {
			t.Fatalf("%s: the edit did not apply", tc.name)
		}
		if !json.Valid([]byte(broken)) {
			t.Fatalf("%s: not JSON: %s", tc.name, broken)
		}
		if err := osvErr(sch, []byte(broken)); err == nil {
			t.Errorf("%s: the schema accepts %s", tc.name, broken)
		}
	}
}
