package sdk

import "github.com/station-dev/station/sdk/abi"

// HostError is the error a failing station host call becomes: the decoded
// abi.Error document plus the call's status. Through an *http.Client from
// package shttp it arrives wrapped in a *url.Error; errors.As finds it:
//
//	var he *sdk.HostError
//	if errors.As(err, &he) && he.Denied() {
//		// the manifest does not allow this request
//	}
type HostError struct {
	Status     abi.Status // the host call's status, never abi.StatusOK
	Code       string     // Status.String(), as the station sent it
	Capability string     // for denials: "network", ...
	Target     string     // for denials: what was refused, sanitized
	Reason     string     // for denials: why
	Message    string     // one line for humans
}

// Error returns the station's message.
func (e *HostError) Error() string {
	if e.Message != "" {
		return e.Message
	}
	return "station: host call failed: " + e.Status.String()
}

// Denied reports whether a gate refused the operation: a sandbox violation,
// not a failure of an allowed operation.
func (e *HostError) Denied() bool { return e.Status == abi.StatusDenied }
