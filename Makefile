# The two entry points on a fresh machine are `make demo` and `make test`;
# both install what they need first.
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed

.PHONY: install etcd java zstd go azurite kubectl redis protos docs lint test demo bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP) etcd java zstd go azurite kubectl

# Etcd comes from Debian's etcd-server package when it is not on the PATH.
etcd:
	@command -v etcd >/dev/null 2>&1 || { \
	  echo "installing etcd-server (Debian)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq etcd-server >/dev/null; }
	@etcd --version | head -1

# Spark jobs need a Java runtime: Debian's default-jre-headless when `java` is missing.
java:
	@command -v java >/dev/null 2>&1 || { \
	  echo "installing default-jre-headless (Debian)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq default-jre-headless >/dev/null; }
	@java -version 2>&1 | head -1

# Tests decode persisted ZSTANDARD fragments with the zstd CLI (Debian's zstd package).
zstd:
	@command -v zstd >/dev/null 2>&1 || { \
	  echo "installing zstd (Debian)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq zstd >/dev/null; }
	@zstd --version | head -1

# Deploy tests render deploy/kustomize with `kubectl kustomize` (Debian's kubernetes-client
# package when kubectl is missing; its kustomize is old, which the manifests keep to).
kubectl:
	@command -v kubectl >/dev/null 2>&1 || { \
	  echo "installing kubernetes-client (Debian)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq kubernetes-client >/dev/null; }
	@kubectl version --client 2>/dev/null | head -1

# Keepalive tests build a Go peer (tests/broker/gopeer) in GOPATH mode from Debian's
# packaged grpc-go, with no network: golang-go and golang-google-grpc-dev when missing.
GOGRPC := /usr/share/gocode/src/google.golang.org/grpc
go:
	@{ command -v go >/dev/null 2>&1 && test -d $(GOGRPC); } || { \
	  echo "installing golang-go and golang-google-grpc-dev (Debian)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq golang-go golang-google-grpc-dev >/dev/null; }
	@go version

# Azure store tests run Azurite's blob server (npm azurite@3), installed under .cache/;
# npm comes from Debian's npm package when it is missing.
AZURITE := .cache/azurite/node_modules/.bin/azurite-blob
azurite:
	@test -x $(AZURITE) || { \
	  command -v npm >/dev/null 2>&1 || { \
	    echo "installing npm (Debian)"; \
	    SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	    $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq npm >/dev/null; }; \
	  echo "installing azurite@3 (npm) under .cache/azurite"; \
	  npm install --prefix .cache/azurite --no-audit --no-fund --loglevel=error azurite@3 >/dev/null; }
	@echo "azurite-blob $$($(AZURITE) --version)"

# `make bench` measures Redis Streams beside the broker (bench/redis_baseline.py):
# Debian's redis-server when missing, and redis-py with hiredis (the `bench` extra).
REDIS_STAMP := $(VENV)/.bench-installed
$(REDIS_STAMP): $(STAMP)
	$(PIP) install -q -e '.[dev,bench]'
	touch $(REDIS_STAMP)

redis: $(REDIS_STAMP)
	@command -v redis-server >/dev/null 2>&1 || { \
	  echo "installing redis-server (Debian)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server >/dev/null; }
	@redis-server --version | head -1

# The .proto list and the protoc command live in gazette_core/protogen.py, which the
# freshness test (tests/test_protos_fresh.py) also uses.
protos: $(STAMP)
	$(PY) -m gazette_core.protogen

# The CLI reference (one page per command, and an index) is generated from
# gazctl's own help text; pages of removed commands are deleted.
docs: $(STAMP)
	$(PY) -m gazctl.reference_docs docs/reference

lint: $(STAMP)
	$(VENV)/bin/ruff check gazette_core gazctl spark_jobs examples tests bench
	$(VENV)/bin/mypy

test: install lint
	$(VENV)/bin/pytest -q --durations=15

demo: install
	$(PY) -m gazette_core.local.demo

bench: install redis
	$(PY) -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache
