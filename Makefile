# Developer shortcuts. CI runs .ci/run.
export GOTOOLCHAIN := local

.PHONY: test race check fuzz demo build screenshots
test:
	go test ./... github.com/station-dev/station/sdk/...
race:
	go test -race ./... github.com/station-dev/station/sdk/...
check:
	bash .ci/run
fuzz:
	bash .ci/fuzz 2m
demo:
	go run ./cmd/station demo
build:
	go build -o station ./cmd/station

# The dashboard's screenshots (docs/images/dashboard-*.png, for the README):
# TestDashboard writes them as it drives the pages in headless Chromium.
screenshots:
	STATION_REQUIRE_BROWSER=1 STATION_SCREENSHOTS=docs/images go test -run '^TestDashboard$$' -count=1 ./internal/cli/

# Benchmarks (BENCHMARKS.md): ROUNDS interleaved runs of the suite — the
# host's and the network gate's benchmarks and the side-by-side suite in
# bench/ (its own module) — at 1 and 2 cores, then benchstat's medians.
# The raw results stay in BENCHOUT. A full run takes about 15 minutes;
# `make bench ROUNDS=3 BENCHTIME=200ms` is a quick look.
.PHONY: bench
ROUNDS ?= 10
BENCHTIME ?= 1s
BENCHOUT ?= bench/out/bench.txt
bench:
	@mkdir -p $(dir $(BENCHOUT)) && rm -f $(BENCHOUT)
	@for i in $$(seq $(ROUNDS)); do \
	  echo "== round $$i of $(ROUNDS)" >&2; \
	  go test -run '^$$' -bench . -benchtime $(BENCHTIME) -cpu 1,2 ./internal/host ./internal/netgate >>$(BENCHOUT) || exit 1; \
	  (cd bench && go test -run '^$$' -bench . -benchtime $(BENCHTIME) -cpu 1,2 -timeout 30m .) >>$(BENCHOUT) || exit 1; \
	done
	@echo "== medians of $(ROUNDS) runs ($(BENCHOUT))" >&2
	@cd bench && go tool benchstat ../$(BENCHOUT)

# The hub at scale (BENCHMARKS.md "The hub at scale"): the relay's fan-out
# of one publish to 1,000 and 5,000 event streams, on one SQLite hub and on
# two PostgreSQL nodes, and publish and install, side by side in one run.
.PHONY: bench-hub
bench-hub:
	STATION_BENCH_HUB=1 go test -run '^$$' -bench 'BenchmarkRelayFanout|BenchmarkPublishAndInstall|BenchmarkClusterPush' -benchtime $(or $(HUBBENCHTIME),10x) -timeout 30m ./internal/hubserver/
