// Command station runs third-party modules, each confined to what its
// manifest declares. See the README and `station --help`.
package main

import (
	"os"

	"github.com/station-dev/station/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
