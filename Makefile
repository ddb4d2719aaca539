# Two commands do all the set-up on a fresh machine:
#   make train   - create .venv, generate synthetic data, train a CRNN on all devices, evaluate
#   make train-lines - the same for whole printed lines (case, spaces, punctuation; ~30 min)
#   make test    - create .venv (TF 2.x) and .venv-tf1 (TF 1.15) and run the suite on both
PYTHON3 ?= python3
PY37 ?= $(shell d=$$(pyenv root 2>/dev/null || echo $$HOME/.pyenv); echo $$d/versions/3.7.16/bin/python)
# -p no:randomly: the suite's own order (slow modules first) unless make test-random asks.
PYTEST_ARGS ?= -q -p no:randomly
# Test processes (pytest-xdist): the suite's own processes wait on TensorFlow start-ups and
# subprocesses about half of the time, so one per core keeps the cores busy (at most 4: each
# holds a TensorFlow of about 1 GB).
TEST_WORKERS ?= auto
TOWERS ?= 2
STEPS ?= 4000
RUN ?= runs/main
LINE_STEPS ?= 3500
LINE_RUN ?= runs/lines

VENV2 := .venv
VENV1 := .venv-tf1

.PHONY: all venv venv-tf1 test test-tf2 test-tf1 train train-lines benchmark compare clean system-packages \
	test-packages

all: test

# The last install is tf_keras (Keras 2, behind tf.compat.v1.layers on TF 2.16+) in TensorFlow's
# minor version, with --no-deps: otherwise pip adds the full `tensorflow` wheel beside tensorflow-cpu.
$(VENV2)/.installed: requirements-tf2.txt pyproject.toml
	$(PYTHON3) -m venv $(VENV2)
	$(VENV2)/bin/pip install -q --upgrade pip
	$(VENV2)/bin/pip install -q -r requirements-tf2.txt
	$(VENV2)/bin/pip install -q --no-deps -e .
	$(VENV2)/bin/pip install -q --no-deps "$$($(VENV2)/bin/python -c 'from crnn_multigpu.legacy_keras import requirement; print(requirement())')"
	touch $@

$(VENV1)/.installed: requirements-tf1.txt pyproject.toml
	@test -x "$(PY37)" || { echo "error: Python 3.7 not found at $(PY37); install it (pyenv install 3.7.16) or run make PY37=/path/to/python3.7"; exit 2; }
	$(PY37) -m venv $(VENV1)
	$(VENV1)/bin/pip install -q --upgrade "pip<24"
	$(VENV1)/bin/pip install -q -r requirements-tf1.txt
	$(VENV1)/bin/pip install -q --no-deps -e .
	touch $@

venv: $(VENV2)/.installed
venv-tf1: $(VENV1)/.installed

# Debian packages: typefaces, a word list and poppler (root: apt-get; others: told what to install).
system-packages:
	scripts/install_system_packages.sh

test-packages:
	scripts/install_system_packages.sh --minimal

test: test-tf2 test-tf1

test-tf2: $(VENV2)/.installed test-packages
	$(VENV2)/bin/python -m pytest -n $(TEST_WORKERS) --maxprocesses 4 $(PYTEST_ARGS)

test-tf1: $(VENV1)/.installed test-packages
	$(VENV1)/bin/python -m pytest -n $(TEST_WORKERS) --maxprocesses 4 $(PYTEST_ARGS)

# The suite on both stacks in a random order (pytest-randomly, installed into the venvs here: it
# is no requirement of the package): a new order each run, its seed printed first;
# RANDOM_SEED=N runs that order again. A test that passes only in the suite's own order fails here.
ifndef RANDOM_SEED
RANDOM_SEED := $(shell date +%s)
endif
.PHONY: test-random
test-random: $(VENV2)/.installed $(VENV1)/.installed
	$(VENV2)/bin/pip install -q "pytest-randomly==3.12.0"
	$(VENV1)/bin/pip install -q "pytest-randomly==3.12.0"
	@echo "random order: RANDOM_SEED=$(RANDOM_SEED) runs it again"
	$(MAKE) test PYTEST_ARGS="-q --randomly-seed=$(RANDOM_SEED)"

# TF 2.x leaves its oneDNN CPU kernels off on some processors (AMD among them); measured here
# they make the CRNN step ~25 % faster and runs stay repeatable (at the cost of two log lines).
train: $(VENV2)/.installed system-packages
	TF_ENABLE_ONEDNN_OPTS=$${TF_ENABLE_ONEDNN_OPTS:-1} $(VENV2)/bin/python -m crnn_multigpu.cli.main_job --out $(RUN) --towers $(TOWERS) --steps $(STEPS)

# Whole printed lines: printable ASCII, variable widths with width buckets, held-out families.
train-lines: $(VENV2)/.installed system-packages
	TF_ENABLE_ONEDNN_OPTS=$${TF_ENABLE_ONEDNN_OPTS:-1} $(VENV2)/bin/python -m crnn_multigpu.cli.main_job --lines --out $(LINE_RUN) --towers $(TOWERS) --steps $(LINE_STEPS)

# PP-OCRv4, the peer of both side-by-side checks (pip's rapidocr-onnxruntime, its ONNX models
# inside the wheel), lives in .venv-rapidocr only: no dependency of the package or of `make test`.
VENVR := .venv-rapidocr
.PHONY: venv-rapidocr compare-zh compare-latin

$(VENVR)/.installed:
	$(PYTHON3) -m venv $(VENVR)
	$(VENVR)/bin/pip install -q rapidocr-onnxruntime==1.4.4
	touch $@

venv-rapidocr: $(VENVR)/.installed

# Side by side with Tesseract 5 and PP-OCRv4 on the reserved type families and PDFs
# (COMPARE_ARGS=--quick: a smoke run).
COMPARE_ARGS ?=
compare: $(VENV2)/.installed $(VENVR)/.installed
	scripts/install_system_packages.sh --compare
	$(VENV2)/bin/python scripts/compare_tesseract.py $(COMPARE_ARGS)

# The Chinese model beside Tesseract 5 chi_sim and PP-OCRv4 on reserved material
# (scripts/compare_chinese.py; ZH_MODEL: its run or model folder; ZH_COMPARE_ARGS=--quick: a
# smoke run).
ZH_MODEL ?= models/zh
ZH_COMPARE_ARGS ?=

compare-zh: $(VENV2)/.installed $(VENVR)/.installed
	scripts/install_system_packages.sh --compare
	$(VENV2)/bin/python scripts/compare_chinese.py --checkpoint $(ZH_MODEL) $(ZH_COMPARE_ARGS)

# Reading without TensorFlow (issue 53): the wheel built from this checkout, installed with its
# onnx extra into a venv of its own (.venv-onnx: onnxruntime, numpy, Pillow, editdistance; no
# TensorFlow), reads crops, lines, pages and PDFs with the shipped models' ONNX files exactly as
# TensorFlow reads their checkpoints in .venv (tests/test_shipped_onnx.py, CRNN_NO_TF_PYTHON).
# The package is rebuilt and reinstalled on every run; its dependencies are installed once.
VENVO := .venv-onnx
.PHONY: test-no-tf
test-no-tf: $(VENV2)/.installed test-packages
	rm -rf build $(VENVO)/wheel
	$(VENV2)/bin/pip wheel -q --no-deps -w $(VENVO)/wheel .
	rm -rf build crnn_multigpu.egg-info  # the build's leftovers: an egg-info in the checkout passes for an install
	test -x $(VENVO)/bin/python || $(PYTHON3) -m venv $(VENVO)
	$(VENVO)/bin/pip install -q "$$(ls $(VENVO)/wheel/crnn_multigpu-*.whl)[onnx]"
	$(VENVO)/bin/pip install -q --force-reinstall --no-deps $(VENVO)/wheel/crnn_multigpu-*.whl
	CRNN_NO_TF_PYTHON=$(CURDIR)/$(VENVO)/bin/python $(VENV2)/bin/python -m pytest $(PYTEST_ARGS) \
		tests/test_shipped_onnx.py -k without_tensorflow

# The Latin-script languages beside Tesseract 5 (each language's own model, script/Latin, eng)
# and PP-OCRv4 on their reserved lshort translations (scripts/compare_latin.py;
# LATIN_COMPARE_ARGS: e.g. --model latin, --checkpoint RUN, --quick, --languages de,vi).
LATIN_COMPARE_ARGS ?=

compare-latin: $(VENV2)/.installed $(VENVR)/.installed
	scripts/install_system_packages.sh --compare
	$(VENV2)/bin/python scripts/compare_latin.py $(LATIN_COMPARE_ARGS)

# Reading speed beside the peers (scripts/benchmark_reading.py): pages/s of this project on
# TensorFlow and on ONNX Runtime, Tesseract 5 and PP-OCRv4 on the same pages, read in turn;
# figures count only from an idle machine. READING_ARGS: e.g. --language zh, --pages 2 (a smoke
# run), --out reading.json.
READING_ARGS ?=
.PHONY: benchmark-reading
benchmark-reading: $(VENV2)/.installed $(VENVR)/.installed
	scripts/install_system_packages.sh --compare
	$(VENV2)/bin/python scripts/benchmark_reading.py $(READING_ARGS)

benchmark: $(VENV2)/.installed
	$(VENV2)/bin/python scripts/benchmark.py --quick

# Opt-in: the CRNN beside a PyTorch twin (scripts/peer_benchmark.py; figures count only from an
# idle machine). PyTorch lives in .venv-torch only: no dependency of the package or of `make test`.
# Both output sizes, 37 and 6,900 classes (--charsets), with the GEMM peak measured alone.
# PEER_ARGS=--quick: a smoke run of a few minutes.
VENVT := .venv-torch
PEER_ARGS ?=
.PHONY: benchmark-peers

$(VENVT)/.installed:
	$(PYTHON3) -m venv $(VENVT)
	$(VENVT)/bin/pip install -q torch==2.13.0 numpy
	touch $@

benchmark-peers: $(VENV2)/.installed $(VENV1)/.installed $(VENVT)/.installed
	$(VENV2)/bin/python scripts/peer_benchmark.py $(PEER_ARGS)

clean:
	rm -rf $(VENV2) $(VENV1) $(VENVH) $(VENVT) $(VENVR) $(VENVO) runs *.egg-info

# Opt-in: Horovod across processes (TF 1.15 / Python 3.7 only; Horovod 0.28.1 does not build
# against TF 2.x). Not part of `make test`; builds Horovod from source (needs cmake and g++).
VENVH := .venv-horovod
HOROVOD_BUILD_ENV := HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITHOUT_MPI=1 HOROVOD_WITH_GLOO=1 \
	HOROVOD_WITHOUT_PYTORCH=1 HOROVOD_WITHOUT_MXNET=1

.PHONY: venv-horovod test-horovod

$(VENVH)/.installed: requirements-tf1.txt pyproject.toml
	@test -x "$(PY37)" || { echo "error: Python 3.7 not found at $(PY37); install it (pyenv install 3.7.16) or run make PY37=/path/to/python3.7"; exit 2; }
	@command -v cmake >/dev/null || { echo "error: cmake not found; Horovod builds from source (apt-get install cmake)"; exit 2; }
	$(PY37) -m venv $(VENVH)
	$(VENVH)/bin/pip install -q --upgrade "pip<24"
	$(VENVH)/bin/pip install -q -r requirements-tf1.txt
	$(VENVH)/bin/pip install -q wheel packaging psutil pyyaml cloudpickle cffi
	$(HOROVOD_BUILD_ENV) $(VENVH)/bin/pip install -q --no-build-isolation --no-cache-dir horovod==0.28.1
	$(VENVH)/bin/pip install -q --no-deps -e .
	touch $@

venv-horovod: $(VENVH)/.installed

test-horovod: $(VENVH)/.installed
	$(VENVH)/bin/horovodrun -np 2 -H localhost:2 --gloo $(VENVH)/bin/python tests/horovod_check.py
