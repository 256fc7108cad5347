//go:build !wasip1

package sdk

import (
	"os"

	"github.com/station-dev/station/sdk/abi"
)

var levelNames = [...]string{abi.LogDebug: "DEBUG", abi.LogInfo: "INFO", abi.LogWarn: "WARN", abi.LogError: "ERROR"}

// writeLog writes a log line to standard error: outside the station there
// is no module log.
func writeLog(level int32, line []byte) {
	b := make([]byte, 0, len(line)+8)
	b = append(b, levelNames[level]...)
	b = append(b, ' ')
	b = append(b, line...)
	b = append(b, '\n')
	os.Stderr.Write(b)
}
