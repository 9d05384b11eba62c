# Headspace. The two commands of the README: `make run` and `make test`.
SHELL := /bin/bash
CARGO ?= cargo
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: run test deps build bench sim fmt lint clean demo demo-stop cluster claude-code codex-cli gemini-cli

## Install what is missing (Debian: postgresql, tmux, openssl and git for tests' fixtures,
## chromium + chromium-driver for the dashboard's browser test, node for the page's scripts'
## tests, curl and python3 for the attacks the security tests play). Needs root or sudo.
deps:
	@missing=""; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	command -v tmux >/dev/null 2>&1 || missing="$$missing tmux"; \
	command -v openssl >/dev/null 2>&1 || missing="$$missing openssl"; \
	command -v git >/dev/null 2>&1 || missing="$$missing git"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v chromedriver >/dev/null 2>&1 || missing="$$missing chromium-driver"; \
	command -v node >/dev/null 2>&1 || missing="$$missing nodejs"; \
	command -v npm >/dev/null 2>&1 || missing="$$missing npm"; \
	command -v curl >/dev/null 2>&1 || missing="$$missing curl"; \
	command -v python3 >/dev/null 2>&1 || missing="$$missing python3"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi; \
	  $$sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q $$missing; \
	fi

## The server's binaries only: the simulator's planted bugs never reach them.
build:
	$(CARGO) build --release -p headspace

## The real Claude Code client the real-client tests drive (a pinned version from npm, in
## .cache/; about 400 MB). Without it, those tests are skipped (but on CI, where they fail).
CLAUDE_CODE_VERSION := 2.1.332
CLAUDE_CODE_DIR := $(CURDIR)/.cache/claude-code-$(CLAUDE_CODE_VERSION)
export HEADSPACE_CLAUDE_BIN := $(CLAUDE_CODE_DIR)/node_modules/.bin/claude
claude-code:
	@if ! "$(HEADSPACE_CLAUDE_BIN)" --version >/dev/null 2>&1; then \
	  echo "installing Claude Code $(CLAUDE_CODE_VERSION) for the real-client tests"; \
	  npm install --no-audit --no-fund --loglevel=error --prefix "$(CLAUDE_CODE_DIR)" \
	    @anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION) \
	    || echo "could not install Claude Code: the real-client tests will be skipped"; \
	fi

## The real Codex CLI the real-client tests drive (pinned, from npm, in .cache/; about
## 420 MB with its native binary). Without it, those tests are skipped (but on CI, where they
## fail).
CODEX_VERSION := 0.171.0
CODEX_DIR := $(CURDIR)/.cache/codex-$(CODEX_VERSION)
export HEADSPACE_CODEX_BIN := $(CODEX_DIR)/node_modules/.bin/codex
codex-cli:
	@if ! "$(HEADSPACE_CODEX_BIN)" --version >/dev/null 2>&1; then \
	  echo "installing Codex CLI $(CODEX_VERSION) for the real-client tests"; \
	  npm install --no-audit --no-fund --loglevel=error --prefix "$(CODEX_DIR)" \
	    @openai/codex@$(CODEX_VERSION) \
	    || echo "could not install Codex CLI: the real-client tests will be skipped"; \
	fi

## The real Gemini CLI the real-client tests drive (pinned, from npm, in .cache/; about
## 100 MB). No install script is run: they only compile optional native modules (node-pty,
## keytar) that it does without (it loads the prebuilt @lydell/node-pty first). Without it,
## those tests are skipped (but on CI, where they fail). Its version is asked with HOME in
## .cache/: it writes in ~/.gemini even then.
GEMINI_VERSION := 0.61.0
GEMINI_DIR := $(CURDIR)/.cache/gemini-$(GEMINI_VERSION)
export HEADSPACE_GEMINI_BIN := $(GEMINI_DIR)/node_modules/.bin/gemini
gemini-cli:
	@if ! HOME="$(GEMINI_DIR)" "$(HEADSPACE_GEMINI_BIN)" --version >/dev/null 2>&1; then \
	  echo "installing Gemini CLI $(GEMINI_VERSION) for the real-client tests"; \
	  npm install --no-audit --no-fund --loglevel=error --ignore-scripts --prefix "$(GEMINI_DIR)" \
	    @google/gemini-cli@$(GEMINI_VERSION) \
	    || echo "could not install Gemini CLI: the real-client tests will be skipped"; \
	fi

## The whole test suite, with a throwaway PostgreSQL started and stopped around it.
test: deps claude-code codex-cli gemini-cli
	scripts/with-test-postgres.sh $(CARGO) test --workspace --no-fail-fast

## Start the server on the embedded database.
run: deps build
	target/release/headspace serve

## Benchmarks: figures printed side by side against their baselines, the server's on a
## cluster with the embedded database's settings (fsync on); one closing table of goals.
bench: deps claude-code
	$(CARGO) build --release -p headspace --bins --examples
	$(CARGO) build --release -p headspace-core --examples
	CARGO="$(CARGO)" scripts/bench.sh

## The long simulation: proof that each planted bug is caught, then a big swarm of random
## seeds (each failure is printed with the command that reproduces it).
sim:
	$(CARGO) build --release -p headspace-sim
	target/release/headspace-sim catch --seeds 200
	target/release/headspace-sim swarm --seeds $${SEEDS:-10000}
	target/release/headspace-sim swarm --scenario orchestration --seeds $${ORCHESTRATION_SEEDS:-300}
	target/release/headspace-sim swarm --scenario cluster --seeds $${CLUSTER_SEEDS:-300}
	target/release/headspace-sim swarm --scenario kinds --seeds $${KINDS_SEEDS:-1000}

## Three stand-in agents and the server in tmux session headspace-demo.
demo: deps build
	$(CARGO) build --release -p headspace-testkit --features stand-in --bin headspace-agent
	scripts/demo.sh start

demo-stop:
	scripts/demo.sh stop

## Two edges (each with stand-in agents, its own claude dir and tmux socket) and two hubs on
## one throwaway PostgreSQL, on this machine: the multi-machine set-up to try. Ctrl-C ends it.
cluster: deps build
	$(CARGO) build --release -p headspace-testkit --features stand-in --bin headspace-agent
	scripts/with-test-postgres.sh --durable scripts/cluster.sh

fmt:
	$(CARGO) fmt --all

## Formatting, clippy with -D warnings (core/clippy.toml bans the clock, I/O, processes and
## hash-map iteration in the core), the docs' intra-doc links, and the clock ban for the
## shell's and the simulation's code (lint/clock/clippy.toml). CI runs it before the tests.
lint:
	@if $(CARGO) fmt --version >/dev/null 2>&1; then $(CARGO) fmt --all -- --check; \
	  else echo "lint: rustfmt is not installed here (rustup component add rustfmt); formatting NOT checked"; fi
	@if $(CARGO) clippy --version >/dev/null 2>&1; then $(CARGO) clippy --workspace --all-targets -- -D warnings; \
	  else echo "lint: clippy is not installed here (rustup component add clippy); lints NOT checked"; fi
	RUSTDOCFLAGS="-D rustdoc::broken_intra_doc_links" $(CARGO) doc --workspace --no-deps --quiet
	@# The clock ban: only shell/src/clock.rs reads the time (lint/clock/clippy.toml).
	@if $(CARGO) clippy --version >/dev/null 2>&1; then CLIPPY_CONF_DIR=$(CURDIR)/lint/clock \
	  $(CARGO) clippy -p headspace -p headspace-sim --lib --bins -- -D clippy::disallowed_methods; \
	  else echo "lint: clippy is not installed here; the clock ban NOT checked"; fi

clean:
	$(CARGO) clean
