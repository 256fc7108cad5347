module github.com/station-dev/station/sdk

go 1.25.0
