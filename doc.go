// Package stationroot is the root of the station repository. It holds no
// code of the station, only the tests that check the repository as a whole
// (TestPackageDocs). The station's command is cmd/station; README.md says
// what it is.
package stationroot
