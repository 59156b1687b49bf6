# doccache — build, test and set-up.
#
#   make deps    install the system libraries that are missing (libleveldb-dev)
#   make build   debug build of every target
#   make test    deps + the whole test suite
#
SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = "0" ] || echo sudo)
UNAME := $(shell uname -s)

.PHONY: deps build test release clean

deps:
	@if echo '#include <leveldb/c.h>' | $(CC) -E -x c - >/dev/null 2>&1; then \
		echo "deps: leveldb/c.h found"; \
	elif [ "$(UNAME)" = "Darwin" ]; then \
		echo "deps: installing leveldb with brew"; brew install leveldb; \
	else \
		echo "deps: installing libleveldb-dev with apt-get"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq libleveldb-dev; \
	fi

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

test: deps
	$(SWIFT) test

clean:
	rm -rf .build
