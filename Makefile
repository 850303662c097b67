# Two set-up commands from a fresh clone: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin
KG = $(BIN)/kgsearch
DEMO_DB ?= .demo/kgsearch.db

.PHONY: install demo check test lint typecheck bench clean ui

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

install: $(VENV)/.installed

## demo: import the MetaQA movie sample, embed it with the bundled model, search it;
## then ingest two real documents offline (spaCy), building a graph from text, and search it.
## Run it again and it re-embeds nothing: import and ingest are idempotent and
## `embed generate` embeds only pending rows. `make clean` (or rm -rf .demo) starts over.
demo: install
	mkdir -p .demo
	$(KG) --db $(DEMO_DB) import data/sample/metaqa-movies.jsonl
	$(KG) --db $(DEMO_DB) stats
	$(KG) --db $(DEMO_DB) embed generate
	$(KG) --db $(DEMO_DB) embed status
	$(KG) --db $(DEMO_DB) search "who directed Jesse James" --limit 5
	$(KG) --db $(DEMO_DB) search "Jesse James" --type-hint person --limit 3
	$(KG) --db $(DEMO_DB) search "Jesse James" --type-hint movie --limit 3
	$(KG) --db $(DEMO_DB) search "movies starring Henry Fonda" --recipe multi_hop --limit 5
	$(KG) --db $(DEMO_DB) context "films directed by Henry King" --max-tokens 120
	$(KG) --db $(DEMO_DB) --project carol ingest data/sample/documents
	$(KG) --db $(DEMO_DB) --project carol extract status
	$(KG) --db $(DEMO_DB) --project carol search "Scrooge's business partner" --limit 5
	$(KG) --db $(DEMO_DB) --project carol search "the ghost of Christmas past" --limit 5
	@echo
	@echo "Next: source $(VENV)/bin/activate && export KGSEARCH_DB=$(DEMO_DB)"
	@echo '      kgsearch search "who directed Jesse James"'

lint: install
	$(BIN)/ruff check src tests scripts
	$(BIN)/ruff format --check src tests scripts
	$(BIN)/lint-imports --no-logo --no-cache

## typecheck: src strictly; tests and scripts strictly too, except that functions may
## go unannotated (their bodies are still checked: check_untyped_defs)
typecheck: install
	$(BIN)/mypy src
	$(BIN)/mypy --cache-dir .mypy_cache/tests --allow-untyped-defs --allow-incomplete-defs \
		--allow-untyped-calls --allow-untyped-decorators tests scripts

## check: the quick loop: lint, strict typing of src, and the SQLite unit and CLI tests
## (no PostgreSQL, no real model, no live servers)
check: lint
	$(BIN)/mypy src
	$(BIN)/pytest -m "not slow" -k "not postgres" -x tests/unit tests/adapters/test_cli.py \
		tests/adapters/test_cli_first_minutes.py

## test: lint, strict typing, then the whole suite
test: lint typecheck
	$(BIN)/pytest

## ui: rebuild the web UI's vendored libraries (needs Node and npm; the copies are
## committed, so installing and running kgsearch needs neither)
UI_VENDOR = src/kgsearch/api/web/static/vendor
ui:
	cd ui && npm ci --no-audit --no-fund
	rm -rf $(UI_VENDOR) && mkdir -p $(UI_VENDOR)
	cp ui/node_modules/sigma/dist/sigma.min.js $(UI_VENDOR)/sigma.min.js
	cp ui/node_modules/sigma/LICENSE.txt $(UI_VENDOR)/sigma.LICENSE.txt
	cp ui/node_modules/graphology/dist/graphology.umd.min.js $(UI_VENDOR)/graphology.umd.min.js
	cp ui/node_modules/graphology/LICENSE.txt $(UI_VENDOR)/graphology.LICENSE.txt
	cp ui/node_modules/graphology-library/dist/graphology-library.min.js $(UI_VENDOR)/graphology-library.min.js
	cp ui/node_modules/graphology-library/LICENSE.txt $(UI_VENDOR)/graphology-library.LICENSE.txt
	cd ui && node -e 'const l=require("./package-lock.json").packages;for(const n of ["sigma","graphology","graphology-library"])console.log(n+" "+l["node_modules/"+n].version)' > ../$(UI_VENDOR)/VERSIONS.txt

clean:
	rm -rf $(VENV) .demo .pytest_cache .mypy_cache .ruff_cache
