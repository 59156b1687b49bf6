# doccache — build, test and set-up.
#
#   make deps    install the system packages that are missing (libleveldb-dev; postgresql,
#                whose throwaway clusters the PostgreSQL tests and benchmarks start themselves)
#   make build   debug build of every target
#   make test    deps + the whole test suite
#   make serve   build docctl and run the backend on its embedded store (127.0.0.1:8080,
#                data in ~/.docctl/data; denials explained to clients, for development);
#                extra flags: make serve SERVE_ARGS="--port 0"
#   make bench-peers
#                release builds of docbench and of the GRDB peer (Benchmarks/grdb-peer, its own
#                package: the main build never compiles GRDB), then local-write,
#                write-to-listener, cache-query and cold-open on both, alternately; ends with one
#                JSON line per scenario (docs/performance.md, "The GRDB peer");
#                extra flags: make bench-peers PEERS_ARGS="--rounds 5 cache-query"
#
SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = "0" ] || echo sudo)
UNAME := $(shell uname -s)

.PHONY: deps deps-leveldb deps-postgres deps-sqlite build test release serve bench-peers bench-callgrind clean

# initdb is not on PATH in Debian's package: it lives under /usr/lib/postgresql/VERSION/bin.
PG_INITDB := $(shell command -v initdb 2>/dev/null || ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null | tail -n 1)

deps: deps-leveldb deps-postgres

deps-leveldb:
	@if echo '#include <leveldb/c.h>' | $(CC) -E -x c - >/dev/null 2>&1; then \
		echo "deps: leveldb/c.h found"; \
	elif [ "$(UNAME)" = "Darwin" ]; then \
		echo "deps: installing leveldb with brew"; brew install leveldb; \
	else \
		echo "deps: installing libleveldb-dev with apt-get"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq libleveldb-dev; \
	fi

deps-postgres:
	@if [ -n "$(PG_INITDB)" ]; then \
		echo "deps: PostgreSQL found ($(PG_INITDB))"; \
	elif [ "$(UNAME)" = "Darwin" ]; then \
		echo "deps: installing postgresql with brew"; brew install postgresql; \
	else \
		echo "deps: installing postgresql with apt-get"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq postgresql; \
	fi

deps-sqlite:
	@if echo '#include <sqlite3.h>' | $(CC) -E -x c - >/dev/null 2>&1; then \
		echo "deps: sqlite3.h found"; \
	elif [ "$(UNAME)" = "Darwin" ]; then \
		echo "deps: using the system SQLite"; \
	else \
		echo "deps: installing libsqlite3-dev with apt-get"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq libsqlite3-dev; \
	fi

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

test: deps
	$(SWIFT) test

serve: deps
	$(SWIFT) build --product docctl
	"$$($(SWIFT) build --show-bin-path)/docctl" serve --explain-denials $(SERVE_ARGS)

PEERS_SCRATCH := Benchmarks/grdb-peer/.build

bench-peers: deps-leveldb deps-sqlite
	$(SWIFT) build -c release --product docbench --scratch-path .build-release
	$(SWIFT) build -c release --package-path Benchmarks/grdb-peer --scratch-path $(PEERS_SCRATCH)
	python3 Benchmarks/bench-peers.py .build-release/release/docbench \
		"$$($(SWIFT) build -c release --package-path Benchmarks/grdb-peer --scratch-path $(PEERS_SCRATCH) --show-bin-path)/grdb-peer" \
		$(PEERS_ARGS)

# Instructions per local-write write and per raw LevelDB put, counted by callgrind (valgrind
# 3.24 from Debian trixie's package, unpacked under .build-callgrind; see the script).
bench-callgrind: deps-leveldb
	$(SWIFT) build -c release --product docbench --scratch-path .build-release
	python3 Benchmarks/callgrind/count-local-write.py .build-release/release/docbench

clean:
	rm -rf .build
