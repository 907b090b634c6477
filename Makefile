# tessera - top-level build.  `make help` lists the targets.
#
# Layout: kernels/ (HLS C, compiled into the emulator), driver/ (libtessera),
# host/ (the tessera program), tests/ (CMocka tests + golden reference).

SHARED   ?= ../shared
BUILD    ?= build
PREFIX   ?= /usr/local
CC       ?= cc
SANITIZE ?= 0

# Warnings are errors everywhere; -O2 for the library and the program.
WARN      := -Wall -Wextra -Werror
CFLAGS    ?= -O2 -g
BASEFLAGS := -std=c11 -D_GNU_SOURCE -fPIC $(WARN)
# The emulator's kernel build: same sources, optimised harder (override freely).
EMU_CFLAGS ?= -O2 -g
LDLIBS    := -lnuma -lpthread -lm

ifeq ($(SANITIZE),1)
  SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
  BUILD    := $(BUILD)-san
endif

INC := -Idriver/include -Idriver -Ikernels

DRIVER_SRC := $(wildcard driver/*.c)
KERNEL_SRC := $(wildcard kernels/*.c)
HOST_SRC   := $(wildcard host/*.c)
REF_SRC    := $(wildcard tests/ref/*.c)
TEST_SRC   := $(wildcard tests/test_*.c)

DRIVER_OBJ := $(DRIVER_SRC:%.c=$(BUILD)/%.o)
KERNEL_OBJ := $(KERNEL_SRC:%.c=$(BUILD)/%.o)
HOST_OBJ   := $(HOST_SRC:%.c=$(BUILD)/%.o)
REF_OBJ    := $(REF_SRC:%.c=$(BUILD)/%.o)
TEST_BIN   := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

LIB_A  := $(BUILD)/libtessera.a
LIB_SO := $(BUILD)/libtessera.so
TESSERA := $(BUILD)/tessera

.PHONY: all test run clean help deps lint-hls
all: $(LIB_A) $(LIB_SO) $(TESSERA)

help:
	@echo "tessera make targets:"
	@echo "  make deps       apt-get install the Debian packages the project needs"
	@echo "  make all        build libtessera (.a, .so) and the tessera program in $(BUILD)/"
	@echo "  make test       build and run every CMocka test, plus lint-hls"
	@echo "  make lint-hls   check kernels/ against the synthesizable C rules"
	@echo "  make run        decode 'Once upon a time' on stories260K in the emulator"
	@echo "  make clean      remove build outputs"
	@echo "Variables: SHARED=$(SHARED) (models, references)  SANITIZE=1 (ASan+UBSan)"
	@echo "           CFLAGS='$(CFLAGS)'  EMU_CFLAGS='$(EMU_CFLAGS)'"

DEPS_DEBIAN := build-essential pkg-config libcmocka-dev libnuma-dev
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
deps:
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(DEPS_DEBIAN)

# ---------------------------------------------------------------- compile ---
$(BUILD)/kernels/%.o: kernels/%.c $(wildcard kernels/*.h kernels/profiles/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(EMU_CFLAGS) $(SANFLAGS) $(INC) -DTSR_EMU -c $< -o $@

$(BUILD)/%.o: %.c $(wildcard driver/*.h driver/include/*.h kernels/*.h kernels/profiles/*.h tests/*.h tests/ref/*.h host/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(CFLAGS) $(SANFLAGS) $(INC) -DTSR_EMU -c $< -o $@

$(LIB_A): $(DRIVER_OBJ) $(KERNEL_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(LIB_SO): $(DRIVER_OBJ) $(KERNEL_OBJ)
	$(CC) -shared $(SANFLAGS) -o $@ $^ $(LDLIBS)

$(TESSERA): $(HOST_OBJ) $(LIB_A)
	$(CC) $(SANFLAGS) -o $@ $(HOST_OBJ) $(LIB_A) $(LDLIBS)

# ------------------------------------------------------------------ tests ---
TEST_DEFS := -DTSR_SHARED_DIR='"$(abspath $(SHARED))"' -DTSR_BUILD_DIR='"$(abspath $(BUILD))"' \
             -DTSR_SOURCE_DIR='"$(abspath .)"'

$(BUILD)/tests/%: tests/%.c $(REF_OBJ) $(LIB_A) $(TESSERA) $(wildcard tests/*.h tests/ref/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(CFLAGS) $(SANFLAGS) $(INC) -Itests -Itests/ref $(TEST_DEFS) -o $@ $< $(REF_OBJ) $(LIB_A) -lcmocka $(LDLIBS)

test: $(TEST_BIN) lint-hls
	@sh tests/run_tests.sh $(TEST_BIN)

lint-hls:
	@sh hw/lint_hls.sh kernels

run: $(TESSERA)
	$(TESSERA) run -m $(SHARED)/models/stories260K.bin -z $(SHARED)/models/tok512.bin \
	    -p "Once upon a time" -n 200 -t 0

clean:
	rm -rf build build-san
