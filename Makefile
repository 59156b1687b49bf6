# doccache — build, test and set-up.
#
#   make deps    install the system packages that are missing (libleveldb-dev; postgresql,
#                whose throwaway clusters the PostgreSQL tests and benchmarks start themselves)
#   make build   debug build of every target
#   make test    deps + the whole test suite
#   make serve   build docctl and run the backend on its embedded store (127.0.0.1:8080,
#                data in ~/.docctl/data; denials explained to clients, for development);
#                extra flags: make serve SERVE_ARGS="--port 0"
#
SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = "0" ] || echo sudo)
UNAME := $(shell uname -s)

.PHONY: deps deps-leveldb deps-postgres build test release serve clean

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

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

test: deps
	$(SWIFT) test

serve: deps
	$(SWIFT) build --product docctl
	"$$($(SWIFT) build --show-bin-path)/docctl" serve --explain-denials $(SERVE_ARGS)

clean:
	rm -rf .build
