# Electric Poker platform. `make run` and `make test` are the two commands a newcomer needs;
# both set everything up on first use (virtualenv, pinned packages, generated protos, tools).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
TOOLS := .tools
BUF_VERSION := 1.75.0
BUF := $(TOOLS)/node_modules/.bin/buf
PROTO_FILES := $(shell find protos -name '*.proto')
# The browser edge (Go) and the reference web client (TypeScript): built by the set-up, never
# committed (docs/web-edge.md, docs/web-client.md).
EDGE := $(TOOLS)/bin/electric-edge
EDGE_SOURCES := $(wildcard web/edge/*.go) web/edge/go.mod web/edge/go.sum
CLIENT := web/client/dist/index.html
CLIENT_SOURCES := $(shell find web/client/src -name '*.ts' -not -path '*/gen/*' 2>/dev/null) \
	web/client/package.json web/client/buf.gen.yaml web/client/index.html web/client/style.css
NPM_INSTALL := npm install --silent --no-package-lock --no-audit --no-fund

.PHONY: setup protos run test lint typecheck unit integration e2e buf-lint buf-breaking \
        bench exhaustive simulate paytable infra-up infra-down up down clean \
        math math-check math-report simulate-casino fuzz e2e-casino soak e2e-scale e2e-fencing chaos audit-levels side-by-side \
        web web-lint

setup: $(STAMP) gen/.stamp web

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements-dev.txt
	$(BIN)/python tools/gen_protos.py
	$(BIN)/pip install -q --no-deps --no-build-isolation -e .
	touch gen/.stamp $(STAMP)

gen/.stamp: $(PROTO_FILES) tools/gen_protos.py | $(STAMP)
	$(BIN)/python tools/gen_protos.py
	touch gen/.stamp

protos: $(STAMP)
	$(BIN)/python tools/gen_protos.py
	touch gen/.stamp

## The browser edge and the web client (make setup builds both).
web: $(EDGE) $(CLIENT)

$(EDGE): $(EDGE_SOURCES)
	mkdir -p $(TOOLS)/bin
	cd web/edge && go build -o ../../$(EDGE) .

$(CLIENT): $(CLIENT_SOURCES) $(PROTO_FILES)
	cd web/client && $(NPM_INSTALL) && npm run --silent build

## The edge's Go tests and vet, the client's type check.
web-lint: web
	cd web/edge && test -z "$$(gofmt -l .)" && go vet ./... && go test ./...
	cd web/client && npm run --silent typecheck

$(BUF):
	mkdir -p $(TOOLS)
	cd $(TOOLS) && npm install --silent --no-package-lock --no-save --no-audit --no-fund @bufbuild/buf@$(BUF_VERSION)

## The embedded platform: four services in one process over SQLite and an in-process bus.
run: setup
	$(BIN)/python -m electric_runner

## Everything CI runs: lint, type-check, unit, property, conformance, integration and e2e tests.
# Test files run in parallel (pytest-xdist; docs/testing.md): a file per worker at a time,
# tests/e2e on one worker one test at a time, in collection order (tests/conftest.py).
# TEST_WORKERS=0: no workers.
TEST_WORKERS ?= 2
test: setup lint typecheck
	bash deploy/chromium.sh >/dev/null  # Debian's Chromium for tests/e2e/web (once)
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=20

lint: setup buf-lint buf-breaking web-lint
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/python tools/check_file_sizes.py

buf-lint: $(BUF)
	cd protos && ../$(BUF) lint

buf-breaking: $(BUF)
	bash tools/buf_breaking.sh $(BUF)

typecheck: setup
	$(BIN)/mypy

unit: setup
	$(BIN)/pytest -m "not integration and not e2e"

integration: setup
	$(BIN)/pytest -m "integration"

e2e: setup
	$(BIN)/pytest -m "e2e"

bench: setup
	$(BIN)/python -m bench

exhaustive: setup
	$(BIN)/pytest -m slow -p no:cacheprovider --timeout=7200 tests

## API fuzz test at full size (docs/api-fuzz.md): make fuzz N=50000 SEED=1 (EDGE=1: through web/edge)
fuzz: setup
	$(BIN)/python -m tests.support.fuzz_main -n $(or $(N),50000) $(if $(SEED),--seed $(SEED)) $(if $(EDGE),--edge)

## Electric Poker pay-table math sheet (optional CONFIG=path/to/config.yaml).
paytable: setup
	$(BIN)/python -m electric_math.mathsheet $(CONFIG)

## Play N Electric Poker tournaments in virtual time: make simulate N=100000 SEED=1 JOBS=2
simulate: setup
	$(BIN)/python -m electric_math.simulate -n $(or $(N),10000) \
		--seed $(or $(SEED),1) --jobs $(or $(JOBS),2)

## Casino math (issue 12). Full exhaustive THB + UTH enumeration; rewrites apps/electric_math/data/
math: setup
	nice -n 10 $(BIN)/python -m electric_math.run

## The CI-sized check: a deterministic sample of pre-flop classes recomputed, must match data/
math-check: setup
	$(BIN)/pytest -q -p no:cacheprovider tests/unit/casino/test_casino_math_sample.py

## HTML math report for Electric, THB and UTH (OUT=dir, default var/math-report)
math-report: setup
	$(BIN)/python -m electric_math.report --out $(or $(OUT),var/math-report)

## Simulate N rounds per casino game with the optimal strategy (default 10,000,000)
simulate-casino: setup
	$(BIN)/python -m electric_math.casino_sim -n $(or $(N),10000000) --seed $(or $(SEED),1)

## Casino e2e at the issue's size (docs/casino-services.md): 5,000 THB rounds, 300 UTH rounds
## with 20+ players at one live table, on PostgreSQL + Kafka (CI runs a shorter version).
e2e-casino: setup
	ELECTRIC_E2E_CASINO_THB_ROUNDS=$(or $(THB),5000) ELECTRIC_E2E_CASINO_UTH_ROUNDS=$(or $(UTH),300) \
	  ELECTRIC_E2E_CASINO_UTH_GREEN_MS=$(or $(GREEN_MS),2000) \
	  $(BIN)/pytest -m e2e -s -p no:cacheprovider tests/e2e/casino

## Scale-out e2e at the issue's size (issue 17, docs/scaling.md): 3 table-service instances,
## 50 tournaments, kill -9 of one instance, a fourth joining; prints the failover time.
e2e-scale: setup
	ELECTRIC_E2E_SCALE_TOURNAMENTS=$(or $(TOURNAMENTS),50) ELECTRIC_E2E_SCALE_BOTS=$(or $(BOTS),30) \
	  ELECTRIC_E2E_SCALE_FAILOVER_S=$(or $(FAILOVER_S),10) \
	  nice -n 10 $(BIN)/pytest -m e2e -s -p no:cacheprovider tests/e2e/scale

## Export of real ante / Electric Mode hands at size (issue 14, docs/audit.md): N tournaments
## with 500 ms blind levels on the embedded platform, every hand exported and validated.
audit-levels: setup
	ELECTRIC_AUDIT_LEVEL_TOURNAMENTS=$(or $(N),20) nice -n 10 $(BIN)/pytest -q -s -p no:cacheprovider \
	  -p no:logging tests/component/audit/test_audit_export_levels.py

## Soak run (issue 18, docs/chaos.md): make soak DURATION=60m [INTERVAL=60s] [SOAK_ARGS=...]
## Four service processes + bots for DURATION, a sample every INTERVAL; CSV/JSON/PNG under
## var/soak/<time>; exit 1 when a resource grows beyond the documented bound.
soak: setup
	nice -n 10 $(BIN)/python -u -m tools.soak --duration $(or $(DURATION),10m) \
	  --interval $(or $(INTERVAL),60s) $(SOAK_ARGS)

## Chaos run (issue 18, docs/chaos.md): make chaos SEED=1 TOURNAMENTS=20 ROUNDS=100 FAULTS=30
## DURATION=30m [TABLES=2] [KINDS=kill9,pause,...] [REPLICATED=1] [CHAOS_ARGS=...]. REPLICATED=1: a
## 3-broker Kafka cluster + PostgreSQL with failover, and the broker_loss, pg_failover and partition
## faults (issue 28). Own PostgreSQL + Kafka, seeded faults
## under load, drain, every invariant; fault table + var/chaos/<run>/report.json; exit 1 if broken.
## A paused table owner with Acts in flight stores nothing on its moved tables (issue 28,
## docs/scaling.md §2): the fencing e2e, RUNS times (CI runs it once).
e2e-fencing: setup
	ELECTRIC_E2E_FENCING_RUNS=$(or $(RUNS),5) \
	  $(BIN)/pytest -m e2e -s -p no:cacheprovider tests/e2e/scale/test_scale_fencing_e2e.py

## Behaviour kept (issue 25 item 7, docs/testing.md "Side by side"): make side-by-side BASE=<rev>
## [SIDE_BY_SIDE_ARGS="--seed 2 --tournaments 20 ..."]. The same seeded tournaments, THB and UTH
## rounds on BASE (a temporary git worktree, default 0b7b33e) and on this tree, each tree's code in
## its own process; published events, player views and audits compared, the base's stores replayed
## by both; a table of counts, the first difference of each part that differs; exit 1 on any.
side-by-side: setup
	nice -n 10 $(BIN)/python -u -m tools.side_by_side --base $(or $(BASE),0b7b33e) $(SIDE_BY_SIDE_ARGS)

chaos: setup
	nice -n 10 $(BIN)/python -u -m tests.chaos --seed $(or $(SEED),1) \
	  --tournaments $(or $(TOURNAMENTS),20) --rounds $(or $(ROUNDS),100) \
	  --faults $(or $(FAULTS),30) --duration $(or $(DURATION),30m) \
	  --table-instances $(or $(TABLES),2) $(if $(KINDS),--kinds $(KINDS)) \
	  $(if $(REPLICATED),--replicated) $(CHAOS_ARGS)

infra-up:
	bash deploy/infra.sh up
	bash deploy/promtool.sh

infra-down:
	bash deploy/infra.sh down

up:
	docker compose up -d --build

down:
	docker compose down

clean:
	rm -rf $(VENV) $(TOOLS) gen var
