# Developer shortcuts. CI runs .ci/run.
export GOTOOLCHAIN := local

.PHONY: test race check fuzz demo build
test:
	go test ./...
race:
	go test -race ./...
check:
	bash .ci/run
fuzz:
	bash .ci/fuzz 2m
demo:
	go run ./cmd/station demo
build:
	go build -o station ./cmd/station
