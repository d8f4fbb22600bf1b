# Two commands do everything on a fresh clone:
#   make demo   set up .venv, build, run the main job
#   make test   set up .venv, build, run every test (lit + pytest)
# Everything is installed from requirements.txt (pinned) into .venv; the C++
# is built with CMake + Ninja into build/, its outputs land in
# python/xla_gpu/_mlir_libs, and a .pth file puts python/ on the venv's path.

PYTHON ?= python3
VENV := $(CURDIR)/.venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
BUILD := $(CURDIR)/build
# Evaluated by the shell when a recipe runs: the venv may not exist before.
SITE := $$($(PY) -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")

.PHONY: all setup build test lit pytest demo bench anchor ptx-vs-xla fuzz fuzz-long mutate clean

all: build

setup: $(STAMP)

$(STAMP): requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	echo "$(CURDIR)/python" > "$(SITE)/xla_gpu-dev.pth"
	touch $@

# The tools on the venv's PATH, under our names and XLA's (run_hlo_module,
# fusion_to_mlir, test_correctness, mlir_fusions_opt = xla-gpu-opt).
TOOLS := $(VENV)/.tools
$(TOOLS): $(STAMP) Makefile
	for opt in xla-gpu-opt mlir_fusions_opt; do \
	  ln -sf "$(CURDIR)/python/xla_gpu/_mlir_libs/xla-gpu-opt" $(VENV)/bin/$$opt; done
	for pair in hlo-indexing:hlo_indexing fusion-to-mlir:fusion_to_mlir \
	    fusion_to_mlir:fusion_to_mlir test-correctness:test_correctness \
	    test_correctness:test_correctness run-hlo:run_hlo run_hlo_module:run_hlo; do \
	  tool=$${pair%%:*}; module=$${pair##*:}; \
	  printf '#!/bin/sh\nexec "%s" -m xla_gpu.tools.%s "$$@"\n' "$(PY)" "$$module" \
	    > $(VENV)/bin/$$tool; chmod +x $(VENV)/bin/$$tool; done
	touch $@

$(BUILD)/build.ninja: $(STAMP)
	$(VENV)/bin/cmake -G Ninja -S . -B $(BUILD) \
	  -DCMAKE_MAKE_PROGRAM=$(VENV)/bin/ninja \
	  -DXLA_GPU_SITE_PACKAGES="$(SITE)"

build: $(BUILD)/build.ninja $(TOOLS)
	$(VENV)/bin/ninja -C $(BUILD)

lit: build
	$(VENV)/bin/lit -sv test

pytest: build
	$(PY) -m pytest -q test/python

test: build
	$(VENV)/bin/lit -sv test
	$(PY) -m pytest -q test/python

demo: build
	$(PY) -m xla_gpu.demo

# Every benchmark of bench/ against XLA:CPU in one run: bench/out/results.json
# and bench/out/results.png (BENCH_RUNS timed runs a case: medians, quartiles
# and the ratio's band); where the compile time goes, stage by stage
# (bench/out/compile_profile.json); then our PTX beside XLA:GPU's
# (bench/out/ptx_vs_xla/table.md).
BENCH_RUNS ?= 10
bench: build anchor
	$(PY) bench/suite.py --runs $(BENCH_RUNS)
	$(PY) bench/compile_profile.py
	$(PY) bench/ptx_vs_xla.py

# XLA:GPU without a GPU (jax's CUDA plugin), in a venv of its own: only the
# targets that compare against XLA:GPU need its ~1 GB of wheels.
ANCHOR_VENV := $(CURDIR)/.venv-anchor
ANCHOR_STAMP := $(ANCHOR_VENV)/.installed
anchor: $(ANCHOR_STAMP)

$(ANCHOR_STAMP): requirements-anchor.txt
	test -x $(ANCHOR_VENV)/bin/python || $(PYTHON) -m venv $(ANCHOR_VENV)
	$(ANCHOR_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
	  -r requirements-anchor.txt
	touch $@

ptx-vs-xla: build anchor
	$(PY) bench/ptx_vs_xla.py

# A bounded mutation-fuzzing run over the test corpus (fuzz/fuzz.py), each
# harness FUZZ_SECONDS; findings land in fuzz/findings/ and fail the target.
# Then the random differential tests (loop and hero fusions against
# XLA:CPU, jaxpr -> HLO against jax's lowering) over RANDOM_SEEDS seeds,
# from RANDOM_SEED_BASE on (CI runs the first 40-64: a base past them
# looks at new ones). `make fuzz-long`: 10 minutes a harness and 1000
# seeds.
FUZZ_SECONDS ?= 60
FUZZ_SEED ?= 0
RANDOM_SEEDS ?= 200
RANDOM_SEED_BASE ?= 0
fuzz: build
	status=0; for h in hlo indexing_map mlir; do \
	  $(PY) fuzz/fuzz.py $$h --seconds $(FUZZ_SECONDS) --seed $(FUZZ_SEED) || status=1; \
	done; \
	XLA_GPU_RANDOM_SEEDS=$(RANDOM_SEEDS) XLA_GPU_RANDOM_SEED_BASE=$(RANDOM_SEED_BASE) \
	  $(PY) -m pytest -q -p no:cacheprovider test/python/test_random_fusions.py \
	  test/python/test_random_heroes.py test/python/test_jax_from_jaxpr.py \
	  test/python/test_random_programs.py -k random || status=1; \
	exit $$status

fuzz-long:
	$(MAKE) fuzz FUZZ_SECONDS=600 RANDOM_SEEDS=1000

# Planted one-line bugs (fuzz/mutate.py), each expected to fail the tests it
# names: the suite's strength measured.
mutate: build
	$(PY) fuzz/mutate.py

clean:
	rm -rf $(BUILD) python/xla_gpu/_mlir_libs python/xla_gpu/dialects/_xla_gpu_ops_gen.py
