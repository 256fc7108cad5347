package hostcall

import (
	"encoding/json"

	"github.com/station-dev/station/sdk/abi"
)

// ParseError decodes the abi.Error document a failing host call returned
// with status s. A missing or malformed document yields one built from s.
func ParseError(s abi.Status, doc []byte) abi.Error {
	var e abi.Error
	if len(doc) > 0 && json.Unmarshal(doc, &e) == nil && e.Message != "" {
		if e.Code == "" {
			e.Code = s.String()
		}
		return e
	}
	return abi.Error{Code: s.String(), Message: "station: host call failed: " + s.String()}
}
