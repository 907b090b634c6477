# tessera - top-level build.  `make help` lists the targets.
#
# Layout: kernels/ (HLS C, compiled into the emulator), driver/ (libtessera),
# host/ (the tessera program), tests/ (CMocka tests + golden reference).

SHARED   ?= ../shared
BUILD    ?= build
PREFIX   ?= /usr/local
CC       ?= cc
SANITIZE ?= 0
# The system python: Debian's python3-clang is not in a pyenv's path.
PYTHON_CLANG ?= /usr/bin/python3

# Warnings are errors everywhere; -O2 for the library and the program.
WARN      := -Wall -Wextra -Werror
CFLAGS    ?= -O2 -g
BASEFLAGS := -std=c11 -D_GNU_SOURCE -fPIC $(WARN)
# The emulator's kernel build: same sources, optimised harder for the CPU
# that builds them (override freely, e.g. EMU_CFLAGS='-O3 -g' for a portable
# binary or for valgrind, which does not run AVX-512).  EMU_SIMD=0 leaves the
# emulator's SIMD rows (emu/tile_simd.c) out: same tokens, portable loops.
EMU_CFLAGS ?= -O3 -march=native -g
EMU_SIMD   ?= 1
LDLIBS    := -lxxhash -lnuma -lpthread -lm
# tessera serve: HTTP and WebSocket (civetweb), JSON (jansson); the program
# links them, libtessera does not.
SERVE_LIBS := -lcivetweb -ljansson

ifeq ($(SANITIZE),1)
  SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
  BUILD    := $(BUILD)-san
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

INC := -Idriver/include -Idriver -Ikernels -Iemu

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

LIB_A  := $(BUILD)/libtessera.a
LIB_SO := $(BUILD)/libtessera.so
TESSERA := $(BUILD)/tessera

.PHONY: all test run clean help deps lint-hls lint-hls-clang
all: $(LIB_A) $(LIB_SO) $(TESSERA)

help:
	@echo "tessera make targets:"
	@echo "  make deps       apt-get install the Debian packages the project needs"
	@echo "  make all        build libtessera (.a, .so) and the tessera program in $(BUILD)/"
	@echo "  make test       build and run every CMocka test, the Python server suites, lint-hls"
	@echo "  make venv       the Python venv the server suites use ($(VENV), from PyPI)"
	@echo "  make lint-hls   check kernels/ against the synthesizable C rules"
	@echo "  make lint-hls-clang  the libclang HLS lint of kernels/ (hw/lint_hls.py; not yet in test)"
	@echo "  make help-hw    the Vitis flow: csim, csynth, cosim, xclbin (hw/vitis.mk)"
	@echo "  make run        decode 'Once upon a time' on stories260K in the emulator"
	@echo "  make bench      benchmark stories260K and synthetic 15M/42M/110M, write docs/benchmarks.md"
	@echo "  make bench-serve  TTFT and per-token overhead of HTTP+SSE and WebSocket, tokens/s (docs/server.md)"
	@echo "  make examples   build host/examples/ into $(BUILD)/examples/"
	@echo "  make install    install header, libraries, tessera.pc (PREFIX=$(PREFIX), DESTDIR=)"
	@echo "  make clean      remove build outputs"
	@echo "Variables: SHARED=$(SHARED) (models, references)  SANITIZE=1 (ASan+UBSan)"
	@echo "           CFLAGS='$(CFLAGS)'  EMU_CFLAGS='$(EMU_CFLAGS)'"
	@echo "           XRT=$(XRT) (1: xrt backend built against /usr/include/xrt; 0: stub)"
	@echo "           EMU_SIMD=$(EMU_SIMD) (0: leave the emulator's SIMD rows out; same tokens)"
	@echo "           PYTHON_CLANG=$(PYTHON_CLANG) (a python with Debian's python3-clang)"

DEPS_DEBIAN := build-essential pkg-config libcmocka-dev libnuma-dev libxxhash-dev libxrt-dev \
               python3-clang libclang-dev \
               libcivetweb-dev libjansson-dev curl python3-venv chromium chromium-driver
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
deps:
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(DEPS_DEBIAN)

# ---------------------------------------------------------------- compile ---
$(BUILD)/kernels/%.o: kernels/%.c $(wildcard kernels/*.h kernels/profiles/*.h emu/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(EMU_CFLAGS) $(SANFLAGS) $(INC) -DTSR_EMU -c $< -o $@

$(BUILD)/emu/%.o: emu/%.c $(wildcard emu/*.h kernels/*.h kernels/profiles/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(EMU_CFLAGS) $(SANFLAGS) $(INC) -DTSR_EMU -DTSR_EMU_SIMD=$(EMU_SIMD) -c $< -o $@

$(BUILD)/%.o: %.c $(wildcard driver/*.h driver/include/*.h kernels/*.h kernels/profiles/*.h tests/*.h tests/ref/*.h host/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(CFLAGS) $(SANFLAGS) $(INC) -DTSR_EMU -c $< -o $@

# The weight image builder touches every weight once per load: -O3 lets
# the compiler vectorize its dequantize and quantize loops (1 GB/s goal).
$(BUILD)/driver/weight_image.o $(BUILD)/driver/model.o: CFLAGS += -O3

$(LIB_A): $(DRIVER_OBJ) $(KERNEL_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(LIB_SO): $(DRIVER_OBJ) $(KERNEL_OBJ)
	$(CC) -shared $(SANFLAGS) -o $@ $^ $(LDLIBS)

$(TESSERA): $(HOST_OBJ) $(LIB_A)
	$(CC) $(SANFLAGS) -o $@ $(HOST_OBJ) $(LIB_A) $(LDLIBS) $(SERVE_LIBS) $(XRT_LIBS)

# The server's own header, and the playground page, assembled into the
# binary (.incbin).
$(HOST_OBJ): $(wildcard host/serve/*.h)
$(BUILD)/host/serve/page.o: host/serve/playground.html

# ------------------------------------------------------------------ tests ---
TEST_DEFS := -DTSR_SHARED_DIR='"$(abspath $(SHARED))"' -DTSR_BUILD_DIR='"$(abspath $(BUILD))"' \
             -DTSR_SOURCE_DIR='"$(abspath .)"' -DTSR_PYTHON_CLANG='"$(PYTHON_CLANG)"'

$(BUILD)/tests/%: tests/%.c $(REF_OBJ) $(LIB_A) $(TESSERA) $(wildcard tests/*.h tests/ref/*.h tests/support/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(CFLAGS) $(SANFLAGS) $(INC) -Itests -Itests/ref -Itests/support -Ihost $(TEST_DEFS) -o $@ $< $(TEST_EXTRA) $(REF_OBJ) $(LIB_A) -lcmocka $(LDLIBS) $(XRT_TEST_LIBS)

# The server's tests: the pure parts linked in, JSON to read answers.
SERVE_UNIT_OBJ := $(addprefix $(BUILD)/host/serve/,textout.o chat_template.o request.o http_util.o)
$(BUILD)/tests/test_serve_text: $(SERVE_UNIT_OBJ)
$(BUILD)/tests/test_serve_text: TEST_EXTRA = $(SERVE_UNIT_OBJ) $(SERVE_LIBS)
$(BUILD)/tests/test_serve: TEST_EXTRA = -ljansson

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

$(VENV)/.stamp: tests/serve/requirements.txt
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r tests/serve/requirements.txt
	touch $@

.PHONY: venv bench-serve
venv: $(VENV)/.stamp

# What HTTP+SSE and WebSocket cost against the in-process API, and
# aggregate tokens/s with 1, 4, 8 clients (docs/server.md has the figures).
bench-serve: $(TESSERA) $(SERVE_REF) $(VENV)/.stamp
	TSR_BUILD_DIR=$(abspath $(BUILD)) TSR_SHARED_DIR=$(abspath $(SHARED)) PYTHONDONTWRITEBYTECODE=1 \
	    $(VENV)/bin/python tests/serve/bench_serve.py $(BENCH_SERVE_ARGS)

test: $(TEST_BIN) $(SERVE_REF) $(VENV)/.stamp lint-hls emu-profiles
	@TSR_BUILD_DIR=$(abspath $(BUILD)) TSR_SHARED_DIR=$(abspath $(SHARED)) TSR_SOURCE_DIR=$(abspath .) \
	    PYTHONDONTWRITEBYTECODE=1 PYTEST="$(VENV)/bin/python -m pytest -q tests/serve" \
	    sh tests/run_tests.sh $(TEST_BIN)

# The emulators tests/test_plan.c runs beside this one: the stories15m
# synthesis profile's datapath and arrays, and the PE loops serialised.
.PHONY: emu-profiles
emu-profiles:
	@$(MAKE) --no-print-directory EMU_PROFILE=stories15m EMU_SERIAL=0 SANITIZE=$(SANITIZE) all
	@$(MAKE) --no-print-directory EMU_PROFILE=generic EMU_SERIAL=1 SANITIZE=$(SANITIZE) all

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

# The libclang lint alone, under the default profile.
lint-hls-clang:
	@$(PYTHON_CLANG) hw/lint_hls.py kernels

run: $(TESSERA)
	$(TESSERA) run -m $(SHARED)/models/stories260K.bin -z $(SHARED)/models/tok512.bin \
	    -p "Once upon a time" -n 200 -t 0

clean:
	rm -rf build build-san

# ------------------------------------------------------------------ bench ---
# Synthetic checkpoints go to $(BUILD)/bench/ (kept between runs).
.PHONY: bench
bench: $(TESSERA)
	sh host/bench.sh $(TESSERA) $(SHARED) $(BUILD)/bench docs/benchmarks.md

# --------------------------------------------------------------- examples ---
# host/examples/*.c against the in-tree header and the static library.
EXAMPLE_BIN := $(patsubst host/examples/%.c,$(BUILD)/examples/%,$(wildcard host/examples/*.c))

.PHONY: examples
examples: $(EXAMPLE_BIN)

$(BUILD)/examples/%: host/examples/%.c driver/include/tessera.h $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(CFLAGS) $(SANFLAGS) -Idriver/include -o $@ $< $(LIB_A) $(LDLIBS)

# ---------------------------------------------------------------- install ---
# make install [PREFIX=/usr/local] [DESTDIR=staging]: the header, the static
# archive, the shared library (soname libtessera.so.MAJOR, with symlinks) and
# lib/pkgconfig/tessera.pc.  The shared library is linked from the archive so
# that installing never recompiles (tests/test_install.c relies on that and
# sets LIB_SOVER to a temp path).
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
TSR_VERSION := $(shell sed -n 's/^\#define TSR_VERSION_STRING "\(.*\)"/\1/p' driver/include/tessera.h)
TSR_SOMAJOR := $(firstword $(subst ., ,$(TSR_VERSION)))
LIB_SOVER   := $(BUILD)/libtessera.so.$(TSR_VERSION)

$(LIB_SOVER): $(LIB_A)
	$(CC) -shared $(SANFLAGS) -Wl,-soname,libtessera.so.$(TSR_SOMAJOR) -o $@.tmp$$$$ \
	    -Wl,--whole-archive $(LIB_A) -Wl,--no-whole-archive $(LDLIBS) && mv -f $@.tmp$$$$ $@

.PHONY: install
install: $(LIB_A) $(LIB_SOVER) driver/include/tessera.h tessera.pc.in
	install -d $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR)/pkgconfig
	install -m 644 driver/include/tessera.h $(DESTDIR)$(INCLUDEDIR)/tessera.h
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/libtessera.a
	install -m 755 $(LIB_SOVER) $(DESTDIR)$(LIBDIR)/libtessera.so.$(TSR_VERSION)
	ln -sf libtessera.so.$(TSR_VERSION) $(DESTDIR)$(LIBDIR)/libtessera.so.$(TSR_SOMAJOR)
	ln -sf libtessera.so.$(TSR_SOMAJOR) $(DESTDIR)$(LIBDIR)/libtessera.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	    -e 's|@VERSION@|$(TSR_VERSION)|' tessera.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/tessera.pc

# ------------------------------------------------------------ Vitis flow ---
# csim / csynth / cosim / xclbin and the gcc-built csim testbench.
include hw/vitis.mk
