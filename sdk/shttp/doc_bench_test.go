package shttp

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/station-dev/station/sdk/abi"
)

// BenchmarkDecodeResponseDoc is parseResponse on a typical response
// document: a few headers and a 1 KiB body, natively (inside the station
// every call and loop iteration also costs an exit to the host; bench/
// measures that).
func BenchmarkDecodeResponseDoc(b *testing.B) {
	body := base64.StdEncoding.EncodeToString([]byte(strings.Repeat(`{"id":"in_1","amount":1200},`, 37)))
	doc := []byte(`{"status":200,"headers":{"Content-Type":["application/json"],"Date":["Mon, 02 Jan 2006 15:04:05 GMT"],"X-Request-Id":["req_8f2a"]},"body":"` + body + `","url":"https://api.example.com/v1/invoices/in_1"}`)
	for b.Loop() {
		var r abi.HTTPResponse
		if !parseResponse(doc, &r) {
			b.Fatal("the fast path declined")
		}
	}
}
