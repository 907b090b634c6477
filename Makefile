# tessera - top-level build.  `make help` lists the targets.
#
# Layout: kernels/ (HLS C, compiled into the emulator), driver/ (libtessera),
# host/ (the tessera program), tests/ (CMocka tests + golden reference,
# libFuzzer harnesses in tests/fuzz/).

SHARED   ?= ../shared
BUILD    ?= build
PREFIX   ?= /usr/local
CC       ?= cc
SANITIZE ?= 0
TSAN     ?= 0
NATIVE   ?= 0
DOCS     ?= 0
# The system python: Debian's python3-clang is not in a pyenv's path.
PYTHON_CLANG ?= /usr/bin/python3

# The build folder as given; SANITIZE=1 and TSAN=1 build beside it.
BUILD_ROOT := $(BUILD)

# Warnings are errors everywhere; -O2 for the library and the program.
# Only the calls tessera.h marks TSR_API leave libtessera.so.
WARN      := -Wall -Wextra -Werror
CFLAGS    ?= -O2 -g
BASEFLAGS := -std=c11 -D_GNU_SOURCE -fPIC -fvisibility=hidden $(WARN)
# Each object also writes its header dependencies (BUILD/x.d, read below).
DEPFLAGS  := -MMD -MP
# The emulator's kernel build: same sources, optimised harder.  The default
# runs on any x86-64 (the SIMD rows pick AVX2 at run time); NATIVE=1 adds
# -march=native for the CPU that builds it (faster, but the objects, the
# installed library included, then need that CPU).  EMU_SIMD=0 leaves the
# emulator's SIMD rows (emu/tile_simd.c) out: same tokens, portable loops.
EMU_CFLAGS ?= -O3 -g
ifeq ($(NATIVE),1)
  EMU_CFLAGS += -march=native
endif
EMU_SIMD   ?= 1
LDLIBS    := -lxxhash -lpcre2-8 -lnuma -lpthread -lm
# tessera serve: HTTP and WebSocket (civetweb), JSON (jansson); the program
# links them, libtessera does not.
SERVE_LIBS := -lcivetweb -ljansson

ifeq ($(SANITIZE),1)
  # float-cast-overflow is not part of -fsanitize=undefined: it catches a
  # NaN or huge float converted to an int (the Q8_0 quantizer's case).
  SANFLAGS := -fsanitize=address,undefined,float-cast-overflow -fno-omit-frame-pointer \
              -fno-sanitize-recover=undefined,float-cast-overflow
  BUILD    := $(BUILD)-san
endif
ifeq ($(TSAN),1)
  ifeq ($(SANITIZE),1)
    $(error SANITIZE=1 and TSAN=1 do not combine: ThreadSanitizer runs alone)
  endif
  SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer
  BUILD    := $(BUILD)-tsan
endif

# The kernel profile the emulator (and so the whole library) is built with:
# generic by default; another (e.g. EMU_PROFILE=stories15m) builds into
# $(BUILD)-PROFILE and runs that profile's datapath and arrays on the CPU
# (its sum order, its attention partials, its limits).
EMU_PROFILE ?= generic
ifneq ($(EMU_PROFILE),generic)
  BASEFLAGS += '-DTSR_PROFILE_HEADER="profiles/profile_$(EMU_PROFILE).h"'
  BUILD     := $(BUILD)-$(EMU_PROFILE)
endif
# EMU_SERIAL=1: the kernel's PE loops not unrolled, each mesh step charged
# the sum of its PEs (kernels/tsr_hls.h TSR_SERIAL_PES), into $(BUILD)-serial:
# a check that the cycle accounting follows the code (tests/test_plan.c).
EMU_SERIAL ?= 0
ifeq ($(EMU_SERIAL),1)
  BASEFLAGS += -DTSR_SERIAL_PES
  BUILD     := $(BUILD)-serial
endif

# Every host object sees the kernels on the emulator: its definitions of
# the kernel's platform hooks (kernels/tsr_platform.h) come first.
PLATFORM_INC := -include emu/tsr_platform_emu.h
INC := -Idriver/include -Idriver -Ikernels -Iemu $(PLATFORM_INC)

# -------------------------------------------------------------------- XRT ---
# The xrt backend (driver/backend_xrt.c) needs XRT's headers (Debian:
# libxrt-dev); without them, or with XRT=0, it builds as a stub that says
# tessera was built without XRT.  libtessera itself never links XRT (its XRT
# calls are weak references), so the .a, the .so, tessera.pc and the
# examples stay as they are; the program picks the shim: tessera links the
# real one (libxrt_core), the tests the noop shim (libxrt_noop: the whole
# host path, no card).  Never both in one binary.  Linked directly because
# libxrt_coreutil otherwise looks for its shim under XILINX_XRT/lib, which
# Debian leaves empty; Debian's xrt.pc is broken, so no pkg-config.
XRT ?= $(if $(wildcard /usr/include/xrt/xrt/xrt_device.h),1,0)
ifeq ($(XRT),1)
  INC           += -I/usr/include/xrt
  BASEFLAGS     += -DTSR_HAVE_XRT
  XRT_LIBS      := -lxrt_coreutil -Wl,--no-as-needed -lxrt_core -Wl,--as-needed
  XRT_TEST_LIBS := -lxrt_coreutil -Wl,--no-as-needed -lxrt_noop -Wl,--as-needed
endif

# -------------------------------------------------------------------- MPI ---
# MPI=1: a model split over processes and hosts, one pipeline stage per
# rank of mpirun (driver/backend_mpi.c; Open MPI, Debian libopenmpi-dev
# and openmpi-bin, `make deps`).  Without it, the library has the stubs and
# tessera under mpirun says how to get it.  The flags change every object:
# make clean when switching.
MPI ?= 0
ifeq ($(MPI),1)
  INC       += $(shell pkg-config --cflags ompi-c)
  BASEFLAGS += -DTSR_HAVE_MPI
  LDLIBS    += $(shell pkg-config --libs ompi-c)
endif

DRIVER_SRC := $(wildcard driver/*.c)
KERNEL_SRC := $(wildcard kernels/*.c)
EMU_SRC    := $(wildcard emu/*.c)
HOST_SRC   := $(wildcard host/*.c host/serve/*.c)
# linked into every test: the golden reference and small test helpers
REF_SRC    := $(wildcard tests/ref/*.c tests/support/*.c)
TEST_SRC   := $(wildcard tests/test_*.c)

DRIVER_OBJ := $(DRIVER_SRC:%.c=$(BUILD)/%.o)
KERNEL_OBJ := $(KERNEL_SRC:%.c=$(BUILD)/%.o) $(EMU_SRC:%.c=$(BUILD)/%.o)
HOST_OBJ   := $(HOST_SRC:%.c=$(BUILD)/%.o)
REF_OBJ    := $(REF_SRC:%.c=$(BUILD)/%.o)
.SECONDARY: $(REF_OBJ)
TEST_BIN   := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
# Under ThreadSanitizer: the API concurrency tests (the calls tessera.h
# says are thread-safe, cancel from threads and signal handlers, and a
# batch's cancel from another thread), the emulator's worker pool, and
# the server built with it (test_serve: its scheduler batching four
# streams, the connection threads).
TSAN_TESTS := test_threads test_api test_batch test_pool test_serve
ifeq ($(TSAN),1)
  TEST_BIN := $(TSAN_TESTS:%=$(BUILD)/tests/%)
endif

LIB_A  := $(BUILD)/libtessera.a
LIB_ALL := $(BUILD)/libtessera-all.a
LIB_SO := $(BUILD)/libtessera.so
TESSERA := $(BUILD)/tessera

.PHONY: all test check run clean cleanall help deps lint-hls lint-hls-clang install uninstall

# ------------------------------------------------------ Vitis vocabulary ---
# Vitis users type `make all TARGET=hw|hw_emu PLATFORM=...`.  TARGET given
# on the command line (of this make, not a sub-make's) picks what `all`
# builds: hw or hw_emu the xclbin (hw/vitis.mk, `make xclbin`); sw_emu the
# CPU emulator, which is tessera's software emulation (the same kernel C
# sources compiled for the CPU, in libtessera's "emu" device), what `make`
# alone builds.  Without TARGET, `all` is the library and the program.
VITIS_ALL :=
ifeq ($(origin TARGET)$(MAKELEVEL),command line0)
  ifneq ($(filter all,$(or $(MAKECMDGOALS),all)),)
    VITIS_ALL := $(TARGET)
    ifeq ($(filter $(TARGET),hw hw_emu sw_emu),)
      $(error TARGET=$(TARGET): hw or hw_emu (make all builds the xclbin) or sw_emu (the CPU emulator, make all without TARGET))
    endif
  endif
endif
ifeq ($(VITIS_ALL),sw_emu)
  $(info TARGET=sw_emu: tessera's software emulation is its CPU emulator, the kernel sources compiled for the CPU (device "emu", docs/emulator.md); building it, as `make` alone does, into $(BUILD)/)
endif
ifneq ($(filter hw hw_emu,$(VITIS_ALL)),)
all: xclbin
else
all: $(LIB_A) $(LIB_SO) $(TESSERA)
endif

help:
	@echo "tessera make targets:"
	@echo "  make deps       apt-get install the Debian packages the project needs"
	@echo "  make all        build libtessera (.a, .so) and the tessera program in $(BUILD)/: the CPU"
	@echo "                  emulator, tessera's software emulation (TARGET=sw_emu says so and does the same)"
	@echo "  make all TARGET=hw|hw_emu PLATFORM=<platform> [PROFILE=<profile>]"
	@echo "                  build the xclbin instead (= make xclbin; needs Vitis: make help-hw)"
	@echo "  make test       build and run every CMocka test, the Python server suites, lint-hls"
	@echo "                  and a short run of each fuzzer (make check: the same)"
	@echo "  make venv       the Python venv the server suites use ($(VENV), from PyPI)"
	@echo "  make fuzz       run each libFuzzer harness for FUZZ_SECONDS (default $(FUZZ_SECONDS)) s"
	@echo "  make lint-hls   check kernels/ against the synthesizable C rules"
	@echo "  make lint-hls-clang  the libclang HLS lint of kernels/ alone, default profile"
	@echo "                  (hw/lint_hls.py; make lint-hls and make test run it under every profile)"
	@echo "  make help-hw    the Vitis flow: csim, csynth, cosim, xclbin (hw/vitis.mk)"
	@echo "  make run        decode 'Once upon a time' on stories260K in the emulator"
	@echo "  make bench      benchmark stories260K and synthetic 15M/42M/110M into $(BUILD)/bench/"
	@echo "                  (DOCS=1: write docs/benchmarks.md instead; RUNQ=, LLAMA_BENCH= and"
	@echo "                  LLAMA_GGUF_DIR= measure the peers in the same run: docs/benchmarks.md)"
	@echo "  make bench-serve  TTFT and per-token overhead of HTTP+SSE and WebSocket, tokens/s (docs/server.md)"
	@echo "  make soak-serve   32 clients streaming for SOAK_MINUTES (10): the server's RSS every 10 s (docs/server.md)"
	@echo "  make examples   build host/examples/ into $(BUILD)/examples/"
	@echo "  make install    install tessera, the header, libraries, tessera.pc (PREFIX=$(PREFIX), DESTDIR=)"
	@echo "  make uninstall  remove what make install installed (same PREFIX, DESTDIR)"
	@echo "  make clean      remove $(BUILD_ROOT)/ and its -san, -tsan, -fuzz, -stories15m, -serial, -mpi siblings"
	@echo "  make cleanall   make clean, and every other build folder and generated file: the other"
	@echo "                  profiles' builds, $(VENV), build_dir.*/ (HLS, xclbin), bitstreams/*.xclbin, Vitis logs"
	@echo "Variables: SHARED=$(SHARED) (models, references; tests read it at run time as TSR_SHARED)"
	@echo "           SANITIZE=1 (ASan+UBSan, in $(BUILD_ROOT)-san/)  TSAN=1 (ThreadSanitizer, $(BUILD_ROOT)-tsan/)"
	@echo "           NATIVE=1 (emulator objects for this CPU: -march=native)"
	@echo "           MPI=1 (the Open MPI transport: a model over mpirun ranks; README builds it with BUILD=build-mpi)"
	@echo "           BUILD=$(BUILD) (where outputs go)"
	@echo "           CFLAGS='$(CFLAGS)'  EMU_CFLAGS='$(EMU_CFLAGS)'"
	@echo "           XRT=$(XRT) (1: xrt backend built against /usr/include/xrt; 0: stub)"
	@echo "           EMU_SIMD=$(EMU_SIMD) (0: leave the emulator's SIMD rows out; same tokens)"
	@echo "           PYTHON_CLANG=$(PYTHON_CLANG) (a python with Debian's python3-clang)"

# clang and its runtime (libFuzzer) build tests/fuzz/; libedit is chat's
# line editor; python3-clang and libclang-dev run hw/lint_hls.py.
DEPS_DEBIAN := build-essential pkg-config libcmocka-dev libnuma-dev libxxhash-dev libpcre2-dev libxrt-dev \
               libopenmpi-dev openmpi-bin \
               python3-clang libclang-dev libedit-dev clang libclang-rt-14-dev \
               libcivetweb-dev libjansson-dev curl python3-venv chromium chromium-driver
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
deps:
	$(SUDO) apt-get update -qq
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEPS_DEBIAN)

# ---------------------------------------------------------------- compile ---
$(BUILD)/kernels/%.o: kernels/%.c
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(DEPFLAGS) $(EMU_CFLAGS) $(SANFLAGS) $(INC) -c $< -o $@

$(BUILD)/emu/%.o: emu/%.c
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(DEPFLAGS) $(EMU_CFLAGS) $(SANFLAGS) $(INC) -DTSR_EMU_SIMD=$(EMU_SIMD) -c $< -o $@

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(DEPFLAGS) $(CFLAGS) $(SANFLAGS) $(INC) -c $< -o $@

# The weight image builder touches every weight once per load: -O3 lets
# the compiler vectorize its dequantize and quantize loops (1 GB/s goal),
# and the non-finite scan in model.c.
$(BUILD)/driver/weight_image.o $(BUILD)/driver/model.o: CFLAGS += -O3

# The archive applications link: one relocatable object whose hidden
# symbols (everything not TSR_API) are made local, so that a static link
# sees only the public names, as the shared library exports only them.
$(LIB_A): $(DRIVER_OBJ) $(KERNEL_OBJ)
	@rm -f $@ $(BUILD)/libtessera.o
	$(LD) -r -o $(BUILD)/libtessera.o $^
	objcopy --localize-hidden $(BUILD)/libtessera.o
	ar rcs $@ $(BUILD)/libtessera.o

# Every object with its internal names, for the tests and the csim tools.
$(LIB_ALL): $(DRIVER_OBJ) $(KERNEL_OBJ)
	@rm -f $@
	ar rcs $@ $^

# Its SONAME is in every build (TSR_SONAME below), with the link the
# loader looks for beside it, so a program linked against $(BUILD)/ runs.
$(LIB_SO): $(DRIVER_OBJ) $(KERNEL_OBJ)
	$(CC) -shared $(SANFLAGS) -Wl,-soname,$(TSR_SONAME) -o $@ $^ $(LDLIBS)
	ln -sf libtessera.so $(BUILD)/$(TSR_SONAME)

# chat's line editing: libedit (BSD-licensed), the program only.
$(TESSERA): $(HOST_OBJ) $(LIB_A)
	$(CC) $(SANFLAGS) -o $@ $(HOST_OBJ) $(LIB_A) -ledit $(LDLIBS) $(SERVE_LIBS) $(XRT_LIBS)

# The playground page, assembled into the binary (.incbin).
$(BUILD)/host/serve/page.o: host/serve/playground.html

# ------------------------------------------------------------------ tests ---
# The build and source folders are compiled in; the models are not: tests
# read TSR_SHARED at run time (tests/support/paths.c), which `make test`
# sets from SHARED.
TEST_DEFS := -DTSR_BUILD_DIR='"$(abspath $(BUILD))"' -DTSR_SOURCE_DIR='"$(abspath .)"' \
             -DTSR_PYTHON_CLANG='"$(PYTHON_CLANG)"'
TEST_INC  := -Itests -Itests/ref -Itests/support -Ihost

# the golden reference and test helpers (tests/ref, tests/support)
$(BUILD)/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(DEPFLAGS) $(CFLAGS) $(SANFLAGS) $(INC) $(TEST_INC) $(TEST_DEFS) -c $< -o $@

$(BUILD)/tests/%: tests/%.c $(REF_OBJ) $(LIB_ALL) $(LIB_A) $(TESSERA)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(DEPFLAGS) $(CFLAGS) $(SANFLAGS) $(INC) $(TEST_INC) $(TEST_DEFS) -o $@ $< $(TEST_EXTRA) $(REF_OBJ) $(LIB_ALL) -lcmocka $(LDLIBS) $(XRT_TEST_LIBS)

# The server's tests: the pure parts linked in, JSON to read answers.
SERVE_UNIT_OBJ := $(BUILD)/host/textout.o \
                  $(addprefix $(BUILD)/host/serve/,chat_template.o request.o http_util.o)
$(BUILD)/tests/test_serve_text: $(SERVE_UNIT_OBJ)
$(BUILD)/tests/test_serve_text: TEST_EXTRA = $(SERVE_UNIT_OBJ) $(SERVE_LIBS)
$(BUILD)/tests/test_serve: TEST_EXTRA = -ljansson

# test_mpi runs the MPI=1 build under mpirun beside this one: built into
# $(BUILD)-mpi (Open MPI from `make deps`), so this build is left as it is.
MPI_BUILD := $(BUILD)-mpi
.PHONY: mpi-build
mpi-build:
	@$(MAKE) --no-print-directory MPI=1 BUILD=$(MPI_BUILD) SANITIZE=0 TSAN=0 EMU_PROFILE=generic EMU_SERIAL=0 NATIVE=$(NATIVE) all
$(BUILD)/tests/test_mpi: mpi-build
$(BUILD)/tests/test_mpi: TEST_EXTRA = -DTSR_MPI_BIN='"$(abspath $(MPI_BUILD))/tessera"'

# test_abi reads the shared library's exported symbols.
$(BUILD)/tests/test_abi: $(LIB_SO)

# test_fuzz_regress replays tests/fuzz/ fixtures through the harnesses,
# compiled here with the test compiler (each entry point renamed).
FUZZ_NAMES   := llama2c gguf tokenizer vocab xclbin devspec
FUZZ_REPLAY  := $(FUZZ_NAMES:%=$(BUILD)/tests/fuzz/fuzz_%.o)
$(BUILD)/tests/fuzz/fuzz_%.o: tests/fuzz/fuzz_%.c
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(DEPFLAGS) $(CFLAGS) $(SANFLAGS) $(INC) $(TEST_INC) -DLLVMFuzzerTestOneInput=fuzz_$*_one -c $< -o $@
$(BUILD)/tests/test_fuzz_regress: tests/test_fuzz_regress.c $(FUZZ_REPLAY) $(REF_OBJ) $(LIB_ALL)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(DEPFLAGS) $(CFLAGS) $(SANFLAGS) $(INC) $(TEST_INC) $(TEST_DEFS) -o $@ $< $(FUZZ_REPLAY) $(REF_OBJ) $(LIB_ALL) -lcmocka $(LDLIBS) $(XRT_TEST_LIBS)

TSAN_ENV := $(if $(filter 1,$(TSAN)),TSAN_OPTIONS='halt_on_error=1 second_deadlock_stack=1 suppressions=$(abspath tests/tsan.supp)')


# The Python suites (tests/serve/) drive a real tessera serve with the
# openai and websockets packages and a headless Chromium, from a venv under
# build/ (PyPI packages in tests/serve/requirements.txt); serve_ref is the
# driver API doing the same steps, their reference.
VENV      := build/venv
PYTHON    ?= /usr/bin/python3
SERVE_REF := $(BUILD)/tests/serve_ref

$(SERVE_REF): tests/serve/ref.c driver/include/tessera.h $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(CFLAGS) $(SANFLAGS) -Idriver/include -o $@ $< $(LIB_A) $(LDLIBS)

# chat_format: tsr_chat_format for tests/serve/test_chat_template.py, which
# holds it against jinja2's renders of the models' templates.
CHAT_FORMAT := $(BUILD)/tests/chat_format
$(CHAT_FORMAT): tests/serve/chat_format.c driver/include/tessera.h $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(CFLAGS) $(SANFLAGS) -Idriver/include -o $@ $< $(LIB_A) -ljansson $(LDLIBS)

$(VENV)/.stamp: tests/serve/requirements.txt
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r tests/serve/requirements.txt
	touch $@

.PHONY: venv bench-serve soak-serve
venv: $(VENV)/.stamp

# What HTTP+SSE and WebSocket cost against the in-process API, and
# aggregate tokens/s with 1, 4, 8 clients (docs/server.md has the figures).
bench-serve: $(TESSERA) $(SERVE_REF) $(VENV)/.stamp
	TSR_BUILD_DIR=$(abspath $(BUILD)) TSR_SHARED_DIR=$(abspath $(SHARED)) PYTHONDONTWRITEBYTECODE=1 \
	    $(VENV)/bin/python tests/serve/bench_serve.py $(BENCH_SERVE_ARGS)

# Memory under a long load: 32 clients streaming (28 HTTP+SSE, 4 WebSocket) for SOAK_MINUTES (10) on
# stories260K, the server's RSS every 10 s (docs/server.md has the figures).
SOAK_MINUTES ?= 10
soak-serve: $(TESSERA) $(VENV)/.stamp
	TSR_BUILD_DIR=$(abspath $(BUILD)) TSR_SHARED_DIR=$(abspath $(SHARED)) PYTHONDONTWRITEBYTECODE=1 \
	    $(VENV)/bin/python tests/serve/soak_serve.py --minutes $(SOAK_MINUTES) $(SOAK_ARGS)

# make test: every CMocka program, the server's Python suites, the HLS
# lints, a short run of each fuzzer, and the emulator builds test_plan needs.
# TSAN=1: the concurrency tests alone under ThreadSanitizer.
# Without the model files no test can run: say so (tests/check_shared.sh)
# before building anything.
ifneq ($(filter test check,$(MAKECMDGOALS)),)
  SHARED_PROBLEM := $(shell TSR_SHARED='$(abspath $(SHARED))' sh tests/check_shared.sh 2>&1)
  ifneq ($(SHARED_PROBLEM),)
    $(error $(SHARED_PROBLEM))
  endif
endif
ifeq ($(TSAN),1)
test: $(TEST_BIN)
	@TSR_SHARED='$(abspath $(SHARED))' $(TSAN_ENV) sh tests/run_tests.sh $(TEST_BIN)
else
test: $(TEST_BIN) $(SERVE_REF) $(CHAT_FORMAT) $(VENV)/.stamp lint-hls fuzz-smoke emu-profiles
	@TSR_SHARED='$(abspath $(SHARED))' TSR_BUILD_DIR=$(abspath $(BUILD)) \
	    TSR_SHARED_DIR=$(abspath $(SHARED)) TSR_SOURCE_DIR=$(abspath .) \
	    PYTHONDONTWRITEBYTECODE=1 PYTEST="$(VENV)/bin/python -m pytest -q tests/serve" \
	    sh tests/run_tests.sh $(TEST_BIN)
	@echo "the HTTP and WebSocket suites against tessera serve on mpirun -np 2 (build-mpi):"
	@TSR_SERVE_MPI=2 TSR_MPI_BUILD_DIR=$(abspath $(MPI_BUILD)) TSR_BUILD_DIR=$(abspath $(BUILD)) \
	    TSR_SHARED_DIR=$(abspath $(SHARED)) TSR_SOURCE_DIR=$(abspath .) PYTHONDONTWRITEBYTECODE=1 \
	    timeout 600 $(VENV)/bin/python -m pytest -q tests/serve/test_openai_client.py \
	    tests/serve/test_realtime.py tests/serve/test_rank_failure.py
endif

# The emulators tests/test_plan.c runs beside this one: the stories15m
# synthesis profile's datapath and arrays (and its csim reference,
# tsr_csim_emuref, for tests/test_hls_flow.c), and the PE loops serialised.
.PHONY: emu-profiles
emu-profiles:
	@$(MAKE) --no-print-directory EMU_PROFILE=stories15m EMU_SERIAL=0 SANITIZE=$(SANITIZE) NATIVE=$(NATIVE) all $(BUILD)-stories15m/csim/tsr_csim_emuref
	@$(MAKE) --no-print-directory EMU_PROFILE=generic EMU_SERIAL=1 SANITIZE=$(SANITIZE) NATIVE=$(NATIVE) all

# The HLS lints: the grep-level checks (symbols, call graph, pragma names)
# and the libclang checker (hw/lint_hls.py) under every shipped profile,
# since each compiles a different datapath.
# LINT_DIR=dir lints another kernel directory (tests/test_lint_hls.c runs
# it on the planted fixtures, which must fail it).
LINT_PROFILES := generic stories260k stories15m
LINT_DIR      ?= kernels
lint-hls:
	@sh hw/lint_hls.sh $(LINT_DIR)
	@sh hw/lint_pragmas.sh $(LINT_DIR)
	@for p in $(LINT_PROFILES); do \
	    printf 'profile %s: ' $$p; \
	    $(PYTHON_CLANG) hw/lint_hls.py "-DTSR_PROFILE_HEADER=\"profiles/profile_$$p.h\"" $(LINT_DIR) || exit 1; \
	done
	@if [ -f $(LINT_DIR)/profiles/pragma_literals.h ]; then /usr/bin/python3 hw/pragma_literals.py --check $(LINT_DIR); fi

# The libclang lint alone, under the default profile.
lint-hls-clang:
	@$(PYTHON_CLANG) hw/lint_hls.py kernels

run: $(TESSERA)
	$(TESSERA) run -m $(SHARED)/models/stories260K.bin -z $(SHARED)/models/tok512.bin \
	    -p "Once upon a time" -n 200 -t 0

clean:
	rm -rf $(BUILD_ROOT) $(addprefix $(BUILD_ROOT),-san -tsan -fuzz -stories15m -serial -san-stories15m -san-serial -mpi -san-mpi)

# make check: the Vitis examples' name for make test.
check: test

# Everything a build leaves: clean's folders, every profile's emulator
# build, the Python venv, the Vitis flow's outputs (build_dir.*: HLS
# components, xo, link configs, raw xclbins; the xclbins in bitstreams/,
# whose MANIFEST and README stay) and the logs and scratch v++ and
# vitis-run leave in the tree.  Tracked files are never removed.
cleanall: clean
	rm -rf $(foreach p,$(HW_PROFILES),$(BUILD_ROOT)-$(p) $(BUILD_ROOT)-san-$(p)) $(VENV) \
	    build_dir.* bitstreams/*.xclbin bitstreams/*.xclbin.tmp _x .Xil .ipcache \
	    vitis_analyzer* v++_*.log vitis-run_*.log xcd.log *.jou

# ------------------------------------------------------------------- fuzz ---
# libFuzzer harnesses (tests/fuzz/), built with clang under ASan + UBSan
# into BUILD-fuzz/.  Each starts from its seeds: the real files in
# $(SHARED)/models (linked, never copied into the tree) and the small
# fixtures tests/fuzz/make_seeds writes, plus tests/fixtures/fuzz_crashes/NAME/;
# what it finds goes to BUILD-fuzz/corpus/NAME/, a crash to
# BUILD-fuzz/artifacts/ (copy it into tests/fixtures/fuzz_crashes/NAME/: the
# regression test replays every file there).  `make test` runs each for
# FUZZ_SMOKE_SECONDS, `make fuzz` for FUZZ_SECONDS.
FUZZ_CC       ?= clang
FUZZ_SECONDS  ?= 60
FUZZ_SMOKE_SECONDS ?= 20
FUZZ_BUILD    := $(BUILD_ROOT)-fuzz
FUZZ_SAN      := -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all
FUZZ_CFLAGS   := -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer $(WARN) \
                 -Wno-unknown-warning-option $(FUZZ_SAN) $(INC) $(TEST_INC) $(filter -DTSR_HAVE_XRT,$(BASEFLAGS))
# the driver's parsers: model formats, tokenizer, xclbin reader, device spec
FUZZ_LIB_SRC  := driver/error.c driver/model.c driver/format_llama2c.c driver/format_gguf.c \
                 driver/weight_image.c \
                 driver/tokenizer.c driver/tokenizer_gguf.c driver/pretok.c \
                 driver/xclbin_meta.c driver/devspec.c
FUZZ_LIB_OBJ  := $(FUZZ_LIB_SRC:%.c=$(FUZZ_BUILD)/%.o)
FUZZ_BIN      := $(FUZZ_NAMES:%=$(FUZZ_BUILD)/fuzz_%)
.SECONDARY: $(FUZZ_LIB_OBJ) $(FUZZ_REPLAY)
FUZZ_RUN       = ASAN_OPTIONS=detect_leaks=1 $(FUZZ_BUILD)/fuzz_$(1) -max_total_time=$(2) \
                 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
                 -artifact_prefix=$(FUZZ_BUILD)/artifacts/$(1)- \
                 $(FUZZ_BUILD)/corpus/$(1) $(FUZZ_BUILD)/seeds/$(1) tests/fixtures/fuzz_crashes/$(1)

$(FUZZ_BUILD)/driver/%.o: driver/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(DEPFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIB_OBJ)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(DEPFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIB_OBJ) -lxxhash -lpcre2-8 -lm

# Seeds: small fixtures written by make_seeds (built with the test
# compiler), and links to the real model files.
FUZZ_SEEDER := $(BUILD)/tests/fuzz/make_seeds
$(FUZZ_SEEDER): tests/fuzz/make_seeds.c $(REF_OBJ) $(LIB_ALL)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(DEPFLAGS) $(CFLAGS) $(SANFLAGS) $(INC) $(TEST_INC) -o $@ $< $(REF_OBJ) $(LIB_ALL) -lcmocka $(LDLIBS) $(XRT_TEST_LIBS)

.PHONY: fuzz fuzz-build fuzz-seeds fuzz-smoke
fuzz-seeds: $(FUZZ_SEEDER)
	@mkdir -p $(FUZZ_NAMES:%=$(FUZZ_BUILD)/seeds/%) $(FUZZ_NAMES:%=$(FUZZ_BUILD)/corpus/%) \
	    $(FUZZ_BUILD)/artifacts $(FUZZ_NAMES:%=tests/fixtures/fuzz_crashes/%)
	@$(FUZZ_SEEDER) $(FUZZ_BUILD)/seeds '$(abspath $(SHARED))'
	@m='$(abspath $(SHARED))/models'; \
	    [ ! -f $$m/stories260K.bin ] || ln -sf $$m/stories260K.bin $(FUZZ_BUILD)/seeds/llama2c/real-stories260K.bin; \
	    for q in f32 f16 q8_0 q4_0; do [ ! -f $$m/stories260K-$$q.gguf ] || \
	        ln -sf $$m/stories260K-$$q.gguf $(FUZZ_BUILD)/seeds/gguf/real-$$q.gguf; done; \
	    v='$(abspath $(SHARED))/vocab'; for q in gpt-2 qwen2 llama-spm; do [ ! -f $$v/ggml-vocab-$$q.gguf ] || \
	        ln -sf $$v/ggml-vocab-$$q.gguf $(FUZZ_BUILD)/seeds/vocab/real-$$q.gguf; done

fuzz-build: $(FUZZ_BIN)

fuzz: fuzz-build fuzz-seeds
	@for n in $(FUZZ_NAMES); do \
	    echo "fuzz: $$n for $(FUZZ_SECONDS) s"; \
	    $(call FUZZ_RUN,$$n,$(FUZZ_SECONDS)) > $(FUZZ_BUILD)/fuzz_$$n.log 2>&1 || \
	        { tail -n 40 $(FUZZ_BUILD)/fuzz_$$n.log; echo "fuzz: $$n FAILED (log: $(FUZZ_BUILD)/fuzz_$$n.log)"; exit 1; }; \
	    sh tests/fuzz/summary.sh $$n $(FUZZ_BUILD)/fuzz_$$n.log; \
	done

# make test: each harness briefly, from the same seeds and corpus.
fuzz-smoke: fuzz-build fuzz-seeds
	@TSR_SHARED='$(abspath $(SHARED))' sh tests/check_shared.sh
	@for n in $(FUZZ_NAMES); do \
	    $(call FUZZ_RUN,$$n,$(FUZZ_SMOKE_SECONDS)) > $(FUZZ_BUILD)/smoke_$$n.log 2>&1 || \
	        { tail -n 40 $(FUZZ_BUILD)/smoke_$$n.log; echo "fuzz: $$n FAILED (log: $(FUZZ_BUILD)/smoke_$$n.log)"; exit 1; }; \
	    sh tests/fuzz/summary.sh $$n $(FUZZ_BUILD)/smoke_$$n.log; \
	done

# ------------------------------------------------------------------ bench ---
# Synthetic checkpoints and the report go to $(BUILD)/bench/ (kept between
# runs); DOCS=1 writes the report to the tracked docs/benchmarks.md.  The
# peers, each optional and built outside the tree (docs/benchmarks.md):
# RUNQ=llama2.c's runq, LLAMA_BENCH=llama.cpp's llama-bench with a GGUF per
# shape (LLAMA_GGUF_<shape>=FILE or LLAMA_GGUF_DIR=DIR holding
# <shape>.q8_0.gguf), measured in the same run, interleaved with tessera;
# BENCH_ROUNDS, BENCH_SHAPES, BENCH_THREADS, BENCH_PROMPT, BENCH_DECODE narrow
# it, and BENCH_BACKEND picks tessera's device (emu:simd=avx2: an AVX2-only
# CPU's paths on one with AVX-512) (host/bench.sh).
.PHONY: bench
BENCH_OUT := $(if $(filter 1,$(DOCS)),docs/benchmarks.md,$(BUILD)/bench/benchmarks.md)
BENCH_VARS := RUNQ LLAMA_BENCH LLAMA_GGUF_DIR LLAMA_GGUF_stories260K LLAMA_GGUF_stories15M \
              LLAMA_GGUF_stories42M LLAMA_GGUF_stories110M BENCH_ROUNDS BENCH_SHAPES \
              BENCH_THREADS BENCH_PROMPT BENCH_DECODE BENCH_BACKEND
bench: $(TESSERA)
	$(foreach v,$(BENCH_VARS),$(if $(value $(v)),$(v)='$($(v))')) \
	    sh host/bench.sh $(TESSERA) $(SHARED) $(BUILD)/bench $(BENCH_OUT)

# --------------------------------------------------------------- examples ---
# host/examples/*.c against the in-tree header and the static library.
EXAMPLE_BIN := $(patsubst host/examples/%.c,$(BUILD)/examples/%,$(wildcard host/examples/*.c))

.PHONY: examples
examples: $(EXAMPLE_BIN)

$(BUILD)/examples/%: host/examples/%.c driver/include/tessera.h $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(CFLAGS) $(SANFLAGS) -Idriver/include -o $@ $< $(LIB_A) $(LDLIBS)

# ---------------------------------------------------------------- install ---
# make install [PREFIX=/usr/local] [DESTDIR=staging]: the tessera program,
# the header, the static archive, the shared library (with its soname's
# link and libtessera.so) and lib/pkgconfig/tessera.pc.
# The soname follows the ABI (tessera.h, "Growing structs"): while MAJOR
# is 0 every minor version may break it, so the soname carries both,
# libtessera.so.0.MINOR (0.3.0 -> libtessera.so.0.3; a 0.3.1 keeps it);
# from 1.0 on, libtessera.so.MAJOR.  The
# shared library is linked from the archive so that installing never
# recompiles (tests/test_install.c relies on that and sets LIB_SOVER to a
# temp path).  make uninstall removes exactly these files.
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
TSR_VERSION := $(shell sed -n 's/^\#define TSR_VERSION_STRING "\(.*\)"/\1/p' driver/include/tessera.h)
TSR_SOMAJOR := $(firstword $(subst ., ,$(TSR_VERSION)))
TSR_SOMINOR := $(word 2,$(subst ., ,$(TSR_VERSION)))
TSR_SONAME  := libtessera.so.$(TSR_SOMAJOR)$(if $(filter 0,$(TSR_SOMAJOR)),.$(TSR_SOMINOR))
LIB_SOVER   := $(BUILD)/libtessera.so.$(TSR_VERSION)

$(LIB_SOVER): $(LIB_A)
	$(CC) -shared $(SANFLAGS) -Wl,-soname,$(TSR_SONAME) -o $@.tmp$$$$ \
	    -Wl,--whole-archive $(LIB_A) -Wl,--no-whole-archive $(LDLIBS) && mv -f $@.tmp$$$$ $@

install: $(LIB_A) $(LIB_SOVER) $(TESSERA) driver/include/tessera.h tessera.pc.in
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR)/pkgconfig
	install -m 755 $(TESSERA) $(DESTDIR)$(BINDIR)/tessera
	install -m 644 driver/include/tessera.h $(DESTDIR)$(INCLUDEDIR)/tessera.h
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/libtessera.a
	install -m 755 $(LIB_SOVER) $(DESTDIR)$(LIBDIR)/libtessera.so.$(TSR_VERSION)
	ln -sf libtessera.so.$(TSR_VERSION) $(DESTDIR)$(LIBDIR)/$(TSR_SONAME)
	ln -sf $(TSR_SONAME) $(DESTDIR)$(LIBDIR)/libtessera.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	    -e 's|@VERSION@|$(TSR_VERSION)|' tessera.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/tessera.pc

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/tessera $(DESTDIR)$(INCLUDEDIR)/tessera.h \
	    $(DESTDIR)$(LIBDIR)/libtessera.a $(DESTDIR)$(LIBDIR)/libtessera.so \
	    $(DESTDIR)$(LIBDIR)/$(TSR_SONAME) \
	    $(DESTDIR)$(LIBDIR)/libtessera.so.$(TSR_VERSION) $(DESTDIR)$(LIBDIR)/pkgconfig/tessera.pc

# ------------------------------------------------------------ Vitis flow ---
# csim / csynth / cosim / xclbin and the gcc-built csim testbench.
include hw/vitis.mk

# Header dependencies written by -MMD (absent before the first build).
-include $(shell find $(BUILD) $(FUZZ_BUILD) -name '*.d' 2>/dev/null)
