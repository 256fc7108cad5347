package shttp

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/station-dev/station/sdk/abi"
)

// checkRequest fails t unless appendRequest's document decodes to what
// json.Marshal's does.
func checkRequest(t *testing.T, doc abi.HTTPRequest) {
	t.Helper()
	fast, ok := appendRequest(nil, &doc)
	if !ok {
		return
	}
	slow, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var got, want abi.HTTPRequest
	if err := json.Unmarshal(fast, &got); err != nil {
		t.Fatalf("appendRequest(%+v) = %s: %v", doc, fast, err)
	}
	if err := json.Unmarshal(slow, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("appendRequest(%+v) = %s decodes to %+v; json.Marshal's to %+v", doc, fast, got, want)
	}
}

// checkResponse fails t if parseResponse accepts doc and decodes it
// differently from json.Unmarshal; it reports whether it accepted doc.
func checkResponse(t *testing.T, doc []byte) bool {
	t.Helper()
	var fast abi.HTTPResponse
	if !parseResponse(doc, &fast) {
		return false
	}
	var slow abi.HTTPResponse
	if err := json.Unmarshal(doc, &slow); err != nil {
		t.Fatalf("parseResponse(%s) = %+v; json.Unmarshal: %v", doc, fast, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("parseResponse(%s):\nfast          %+v\njson.Unmarshal %+v", doc, fast, slow)
	}
	return true
}

func TestRequestDoc(t *testing.T) {
	for _, doc := range []abi.HTTPRequest{
		{},
		{Method: "GET", URL: "https://a.example/?q=1&r=<2>"},
		{Method: "POST", URL: "https://a.example/", Body: []byte("hi\x00\xff")},
		{Method: "PUT", URL: "u", Headers: map[string][]string{"A": {"1", "2"}, "B": nil, "C": {}, "D\"\\\n": {"\t\x01\u2028é"}}},
		{Method: "GET", URL: "\xff"}, // invalid UTF-8: left to json.Marshal
	} {
		checkRequest(t, doc)
	}
}

var responseDocs = []struct {
	doc  string
	fast bool
}{
	{`{"status":200,"headers":{"Content-Type":["application/json"],"X":["a","b"]},"body":"aGk=","url":"https://a.example/"}`, true},
	{`{"status":204,"url":"u"}`, true},
	{` { "status" : 200 , "headers" : { } , "body" : "" , "url" : null } `, true},
	{`{"status":200,"headers":{"A":null,"B":[]},"body":null}`, true},
	{`{}`, true},
	{`{"status":200,"url":"https://a.example/?a=1\u0026b=2"}`, false}, // escape
	{`{"status":200,"body":"aGk"}`, false},                            // bad base64
	{`{"status":200,"body":"aG\nk="}`, false},                         // control character
	{`{"status":2.5}`, false},
	{`{"status":1e2}`, false},
	{`{"status":99999999999999999999}`, false},
	{`{"Status":200}`, false},
	{`{"status":200,"status":201}`, false},
	{`{"headers":{"A":["1"]},"headers":{"B":["2"]}}`, false},
	{`{"headers":{"A":["1"],"A":["2"]}}`, false},
	{`{"headers":{"A":[null]}}`, false},
	{`{"headers":{"A":["1",]}}`, false},
	{`{"other":1}`, false},
	{`{"status":200,}`, false},
	{`{"status":200}x`, false},
	{`[]`, false},
	{``, false},
}

func TestResponseDoc(t *testing.T) {
	for _, tt := range responseDocs {
		if got := checkResponse(t, []byte(tt.doc)); got != tt.fast {
			t.Errorf("parseResponse(%s) accepted = %v, want %v", tt.doc, got, tt.fast)
		}
	}
	// What the station sends: json.Marshal of a response.
	doc, _ := json.Marshal(&abi.HTTPResponse{Status: 200, Headers: map[string][]string{"A": {"x"}}, Body: []byte{0, 1, 2, 250}, URL: "https://a.example/p"})
	if !checkResponse(t, doc) {
		t.Errorf("parseResponse(%s) declined a plain station document", doc)
	}
}

func FuzzResponseDoc(f *testing.F) {
	for _, tt := range responseDocs {
		f.Add([]byte(tt.doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		checkResponse(t, doc)
	})
}

func FuzzRequestDoc(f *testing.F) {
	f.Add("GET", "https://a.example/", "Authorization", "Bearer k", []byte("body"))
	f.Add("P\"OST", "\x00\u2028", "K\\", "\xff", []byte(nil))
	f.Fuzz(func(t *testing.T, method, url, key, value string, body []byte) {
		checkRequest(t, abi.HTTPRequest{Method: method, URL: url, Headers: map[string][]string{key: {value, ""}, "Other": nil}, Body: body})
	})
}
