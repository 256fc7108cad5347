//go:build !wasip1

package sproc

import (
	"encoding/json"

	"github.com/station-dev/station/sdk/abi"
)

// run outside the station: there is no subprocess gate to ask.
func run([]byte) (abi.Status, []byte) {
	doc, _ := json.Marshal(abi.Error{Code: abi.StatusUnavailable.String(), Message: "sproc: programs can only be started inside the station"})
	return abi.StatusUnavailable, doc
}
