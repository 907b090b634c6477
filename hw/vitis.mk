# hw/vitis.mk - the Vitis flow: C simulation, HLS synthesis and C/RTL
# co-simulation of the kernel top, and the xclbin build.  Included by the
# top Makefile; `make help-hw` lists the targets, docs/hls-flow.md walks a
# clean checkout to an xclbin on a U55C.
#
#   make csim   [KERNEL=tessera_top] [PROFILE=stories260k] [PART=u55c]   vitis-run
#   make csynth [KERNEL=...] [PROFILE=...] [PART=...]                    v++ --mode hls
#   make cosim  [KERNEL=...] [PROFILE=...] [PART=...]   (after csynth)   vitis-run
#   make xclbin TARGET=hw|hw_emu PLATFORM=<platform> PROFILE=<profile>  v++ -c, v++ -l
#               (make all TARGET=hw|hw_emu PLATFORM=... is the same)
#               [PROFILE_MONITORS=1]   + data/stall/exec monitors for hw/xrt.ini
#   make csim-gcc   the csim testbench built with gcc: no Vitis needed
#   make csim-gcc-15m (or csim-gcc TB_PROFILE=stories15m): the stories15m profile
#   make hls-checklist [PROFILE=...]   the loops a csynth report must show as
#               the kernels claim them (hw/hls_checklist.py; no Vitis needed)
#   make pragma-literals   the per-profile literals of the pragmas' values
#               (hw/pragma_literals.py -> kernels/profiles/pragma_literals.h)
#               on a synthetic Q8_0 stories15M, against its emulator
#
# Every Vitis target first checks for its tool (need-*) and stops with a
# message naming it; `make -n xclbin ...` prints the whole command sequence.
# Outputs: build_dir.hls.<part>/ (HLS components), build_dir.<target>.
# <platform>/ (xo, link config, raw xclbin), bitstreams/ (the xclbin with its
# profile key, and a MANIFEST line per build).

# ------------------------------------------------------------- settings ---
# PROFILE, PART and PLATFORM default as below, and a build that uses one
# so defaulted says so (one line each, "PLATFORM not set: using ...").
HW_DEFAULTED :=
ifeq ($(origin PROFILE),undefined)
  PROFILE := stories260k
  HW_DEFAULTED += PROFILE
endif
ifeq ($(origin PART),undefined)
  PART := u55c
  HW_DEFAULTED += PART
endif
ifeq ($(origin PLATFORM),undefined)
  PLATFORM := xilinx_u55c_gen3x16_xdma_3_202210_1
  HW_DEFAULTED += PLATFORM
endif
KERNEL     ?= tessera_top
HW_VITIS_HINT := install AMD Vitis 2023.2+ (2022.2+ for make xclbin) and source <Vitis install>/settings64.sh (e.g. /tools/Xilinx/Vitis/2023.2/settings64.sh), then run make again
TARGET     ?= hw
VPP        ?= v++
VITIS_RUN  ?= vitis-run
XCLBINUTIL ?= xclbinutil
# Kernel clock (Hz): the Alveo shells' default kernel clock.
HW_FREQ_HZ ?= 300000000
# 1: link the profiling monitors of the platform config's "#profile:" block
# (data, stall and execution monitors, trace memory) so that hw/xrt.ini's
# device trace and counters have something to read; stall monitors also
# need the kernel compiled with stall ports (v++ -c --profile.stall).
PROFILE_MONITORS ?= 0

# (profile_undef.h and profile_defaults.h are not profiles: they forget one
# and fill in what one leaves out, for driver/profiles.c and tsr_profile.h)
HW_PROFILES  := $(filter-out undef defaults,$(patsubst kernels/profiles/profile_%.h,%,$(wildcard kernels/profiles/profile_*.h)))
HW_PLATFORMS := $(patsubst hw/link/%.cfg,%,$(wildcard hw/link/*.cfg))

# Card name -> part (PART= also takes a part name as it is).
HW_PART_u55c := xcu55c-fsvh2892-2L-e
HW_PART_u280 := xcu280-fsvh2892-2L-e
HW_PART_u250 := xcu250-figd2104-2L-e
HW_PART_u200 := xcu200-fsgd2104-2-e
HLS_PART := $(or $(HW_PART_$(PART)),$(PART))

# Per-profile kernel defines, passed to every build of that profile (v++ -c,
# the HLS config, hw/profile_kv).  stories15m: each PE's fp32 array
# (scales) stays in block RAM, the attention PEs' KV cache goes to
# UltraRAM (kernels/tsr_profile.h TSR_F32_URAM / TSR_KV_URAM, as its
# header says): with 32 PEs, 12 of them with attention, the other way
# round its KV cache alone would take 864 BRAM36 (12 PEs x 9,216 words
# of 32 bytes), over the room plan's ceiling leaves on a U55C; this way
# 656 URAM and 1,212 BRAM36 (tessera plan's block counts for the
# profile's arrays, docs/hls-flow.md).
HW_DEFS_stories15m := -DTSR_F32_URAM=0 -DTSR_KV_URAM=1
# Profiles whose PE memories need more than one SLR: linked without the
# platform config's slr= pinning.
HW_SPAN_SLRS := stories15m generic
# Profiles whose compute unit spans SLRs with register stages at the
# crossings (TSR_SLRS > 1 in the profile header; tests/test_hls_flow.c
# holds this list to the headers): linked with a pre-place floorplan, one
# pblock per SLR holding that SLR's PEs (hw/slr_pblocks.c prints it for
# the profile), passed as v++ -l --vivado.prop
# run.impl_1.STEPS.PLACE_DESIGN.TCL.PRE=<tcl> (UG1393, "--vivado
# Options").  Its cell names are a guess until a first csynth (the Tcl's
# header, docs/hls-flow.md section 11).
HW_SLR_FLOORPLAN := stories15m

# The goals of this run that are Vitis builds: `make all TARGET=hw|hw_emu`
# is `make xclbin` (the top Makefile sets VITIS_ALL).
HW_GOALS := $(MAKECMDGOALS) $(if $(filter hw hw_emu,$(VITIS_ALL)),xclbin)

# Say which defaults a build takes (also under make -n).
HW_SAY_DEFAULT = $(if $(filter $(1),$(HW_DEFAULTED)),$(info $(1) not set: using $($(1)) ($(2))))
ifneq ($(filter csim csynth cosim xclbin hls-checklist,$(HW_GOALS)),)
  $(call HW_SAY_DEFAULT,PROFILE,profiles: $(HW_PROFILES))
endif
ifneq ($(filter csim csynth cosim,$(HW_GOALS)),)
  $(call HW_SAY_DEFAULT,PART,parts: u55c u280 u250 u200 or a part name)
endif
ifneq ($(filter xclbin,$(HW_GOALS)),)
  $(call HW_SAY_DEFAULT,PLATFORM,platforms: $(HW_PLATFORMS))
endif

# An xclbin build without v++ stops here, before anything runs, with one
# line that says what to install and source (not under make -n, which
# prints the commands wherever it runs).
HW_DRY := $(findstring n,$(firstword -$(MAKEFLAGS)))
ifneq ($(filter xclbin,$(HW_GOALS)),)
  ifeq ($(HW_DRY)$(shell command -v $(VPP) 2>/dev/null),)
    $(error $(VPP) not found: $(HW_VITIS_HINT))
  endif
endif

# Check the names before anything runs (also under make -n).
ifneq ($(filter csim csynth cosim xclbin,$(HW_GOALS)),)
  ifeq ($(filter $(PROFILE),$(HW_PROFILES)),)
    $(error PROFILE=$(PROFILE): no kernels/profiles/profile_$(PROFILE).h (profiles: $(HW_PROFILES)))
  endif
endif
ifneq ($(filter csim csynth cosim,$(HW_GOALS)),)
  ifeq ($(wildcard hw/hls/$(KERNEL)/hls_config.cfg),)
    $(error KERNEL=$(KERNEL): no hw/hls/$(KERNEL)/hls_config.cfg)
  endif
endif
ifneq ($(filter xclbin,$(HW_GOALS)),)
  ifeq ($(filter $(PLATFORM),$(HW_PLATFORMS)),)
    $(error PLATFORM=$(PLATFORM): no link config hw/link/$(PLATFORM).cfg (platforms: $(HW_PLATFORMS)))
  endif
  ifeq ($(filter $(TARGET),hw hw_emu),)
    $(error TARGET=$(TARGET): must be hw or hw_emu)
  endif
  ifeq ($(filter $(PROFILE_MONITORS),0 1),)
    $(error PROFILE_MONITORS=$(PROFILE_MONITORS): must be 0 or 1)
  endif
endif

.PHONY: csim csynth cosim xclbin csim-gcc csim-gcc-15m hls-checklist slr-tcl pragma-literals help-hw need-v++ need-vitis-run need-xclbinutil

help-hw:
	@echo "Vitis flow (hw/vitis.mk, docs/hls-flow.md):"
	@echo "  make csim   KERNEL=$(KERNEL) PROFILE=$(PROFILE) PART=$(PART)   C simulation (vitis-run)"
	@echo "  make csynth KERNEL=$(KERNEL) PROFILE=$(PROFILE) PART=$(PART)   HLS synthesis (v++ --mode hls)"
	@echo "  make cosim  KERNEL=$(KERNEL) PROFILE=$(PROFILE) PART=$(PART)   C/RTL co-simulation, after csynth"
	@echo "  make hls-checklist PROFILE=$(PROFILE)   each pipelined loop's target II and trip count,"
	@echo "              to read csynth's loop table against (docs/hls-flow.md, the first csynth)"
	@echo "  make xclbin TARGET=hw|hw_emu PLATFORM=<platform> PROFILE=<profile> [PROFILE_MONITORS=1]"
	@echo "              (or make all TARGET=hw|hw_emu ...; TARGET=sw_emu is the CPU emulator, make all)"
	@echo "              -> bitstreams/tessera_<profile>_<platform>.xclbin + bitstreams/MANIFEST"
	@echo "              (PROFILE_MONITORS=1: ....monitors.xclbin with trace/counter monitors, hw/xrt.ini)"
	@echo "  make slr-tcl PLATFORM=<platform> PROFILE=<profile>   the pre-place floorplan (one pblock per"
	@echo "              SLR) a profile that spans SLRs is linked with (hw/slr_pblocks.c; no Vitis)"
	@echo "  make csim-gcc   the csim testbench built with gcc (no Vitis)"
	@echo "  make csim-gcc-15m  the same on the stories15m profile (= csim-gcc TB_PROFILE=stories15m):"
	@echo "              synthetic Q8_0 stories15M, tokens and logits against the stories15m emulator"
	@echo "Defaults, said when a build takes them: PROFILE=stories260k PART=u55c"
	@echo "           PLATFORM=xilinx_u55c_gen3x16_xdma_3_202210_1.  csynth and xclbin need v++:"
	@echo "           AMD Vitis (source <Vitis install>/settings64.sh)"
	@echo "profiles:  $(HW_PROFILES)"
	@echo "platforms: $(HW_PLATFORMS)"
	@echo "parts:     u55c u280 u250 u200 (or a part name)"

# ---------------------------------------------------------- tool checks ---

need-v++:
	@command -v $(VPP) >/dev/null 2>&1 || { echo "make: $(VPP) not found: $(HW_VITIS_HINT)" >&2; exit 1; }

need-vitis-run:
	@command -v $(VITIS_RUN) >/dev/null 2>&1 || { echo "make: $(VITIS_RUN) not found: $(HW_VITIS_HINT)" >&2; exit 1; }

# (after need-v++: without Vitis, one line says what is missing)
need-xclbinutil: | need-v++
	@command -v $(XCLBINUTIL) >/dev/null 2>&1 || { echo "make: $(XCLBINUTIL) not found: install XRT and source /opt/xilinx/xrt/setup.sh" >&2; exit 1; }

# ------------------------------------------------- csim testbench input ---
# The weight image of stories260K (F32, 4 x 1 mesh) and the tokenized
# prompt, written by the driver's own image builder (tests/csim/make_image.c),
# and llama2.c's token ids for it.
TB_PROFILE   ?= stories260k
TB_MODEL     ?= $(SHARED)/models/stories260K.bin
TB_TOKENIZER ?= $(SHARED)/models/tok512.bin
TB_PROMPT    ?= Once upon a time
TB_REF       ?= $(SHARED)/reference/stories260K_once_upon_a_time.tokens
TB_IMAGE     := $(BUILD)/csim/stories260k.timg
TB_BIN       := $(BUILD)/csim/tb_tessera_top
TB_IMAGER    := $(BUILD)/csim/tsr_csim_image

$(TB_IMAGER): tests/csim/make_image.c $(LIB_ALL)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(CFLAGS) $(SANFLAGS) $(INC) -o $@ $< $(LIB_ALL) $(LDLIBS)

$(TB_IMAGE): $(TB_IMAGER) $(TB_MODEL) $(TB_TOKENIZER)
	$(TB_IMAGER) $(TB_MODEL) $(TB_TOKENIZER) "$(TB_PROMPT)" $@

# The testbench and the kernel sources as Vitis csim compiles them:
# TSR_CSIM (the synthesis state layout) and the profile, no driver code.
$(TB_BIN): tests/csim/tb_tessera_top.c $(KERNEL_SRC) $(wildcard kernels/*.h kernels/*.def kernels/profiles/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(CFLAGS) $(SANFLAGS) -Ikernels -DTSR_CSIM \
	    '-DTSR_PROFILE_HEADER="profiles/profile_$(TB_PROFILE).h"' \
	    -o $@ tests/csim/tb_tessera_top.c $(KERNEL_SRC) -lm

# The same model in Q8_0 at group 32, the tile stories15m runs (the
# driver's quantizer, as tsr_model_load places an fp32 checkpoint), on the
# same 4 x 1 mesh: its TB_Q8_N greedy tokens and the last one's logits
# against the emulator's (the generic one, on that mesh: tsr_csim_emuref
# with TB_Q8_DEVICE) bit for bit, and the last token's cycles against
# `tessera plan`'s at its position (TB_Q8_POS: the prompt's 5 tokens +
# TB_Q8_N - 2).  llama2.c's runq.c is no reference here: its groups run
# along a row, and stories260K's hidden 172 is not a multiple of 32 (its
# group-4 file, tests/fixtures/runq_stories260K_v2_gs4, is below this
# profile's TSR_MIN_GROUP; test_weights checks the emulator against it).
# One logits check, not several: a ring written in advance holds one
# READ_LOGITS answer in `out_f` (TSR_OUT_DEPTH words).
TB_Q8_N      ?= 196
TB_Q8_POS    ?= 199
TB_Q8_DEVICE ?= emu:pes=4,cols=1,kvsplit=1
TB_Q8_DIR    := $(BUILD)/csim/stories260k_q8
TB_Q8_IMAGE  := $(TB_Q8_DIR)/stories260k_q8.timg
TB_Q8_REF    := $(TB_Q8_DIR)/emu.tokens
TB_Q8_LOGITS := $(TB_Q8_DIR)/emu.logits
TB_EMUREF    := $(BUILD)/csim/tsr_csim_emuref

$(TB_Q8_IMAGE): $(TB_IMAGER) $(TB_MODEL) $(TB_TOKENIZER)
	@mkdir -p $(dir $@)
	$(TB_IMAGER) $(TB_MODEL) $(TB_TOKENIZER) "$(TB_PROMPT)" $@ 4 $(TB_PROFILE) q8

# (one run writes both files; the logits are the rule's side output)
$(TB_Q8_REF): $(TB_EMUREF) $(TB_MODEL) $(TB_TOKENIZER)
	@mkdir -p $(dir $@)
	$(TB_EMUREF) $(TB_MODEL) $(TB_TOKENIZER) "$(TB_PROMPT)" $(TB_Q8_N) 1 $(TB_Q8_REF) \
	    $(TB_Q8_LOGITS) $(TB_Q8_DEVICE)

ifeq ($(TB_PROFILE),stories15m)
csim-gcc: csim-gcc-15m
else
csim-gcc: $(TB_BIN) $(TB_IMAGE) $(TB_Q8_IMAGE) $(TB_Q8_REF) $(TESSERA)
	$(TB_BIN) $(TB_IMAGE) $(TB_REF)
	@cy=$$($(TESSERA) plan -m $(TB_MODEL) --part u55c --profile $(TB_PROFILE) --pes 4 \
	       --pos $(TB_Q8_POS) | sed -n 's/^ *cycles\/token at position [0-9]*: \([0-9]*\) .*/\1/p'); \
	test -n "$$cy" || { echo "make: tessera plan gave no cycles for position $(TB_Q8_POS)" >&2; exit 1; }; \
	echo "$(TB_BIN) $(TB_Q8_IMAGE) $(TB_Q8_REF) 0 $(TB_Q8_LOGITS) $$cy  (plan's cycles at position $(TB_Q8_POS))"; \
	$(TB_BIN) $(TB_Q8_IMAGE) $(TB_Q8_REF) 0 $(TB_Q8_LOGITS) $$cy
endif

# ------------------------------------- csim testbench, stories15m profile ---
# The same testbench and kernel sources under the stories15m profile (128
# PEs in 32 x 4, 48 attention PEs, kv split 8, Q8_0 group 32), on the
# synthetic stories15M-shape Q8_0 model (tessera synth, written here, never
# committed), against what the emulator built with that profile
# (BUILD-stories15m/, make emu-profiles) decodes from the same file: TB15_N
# greedy tokens (the whole context: every PE of a KV head's 8 holds
# positions), in TB15_CHECKS DECODE commands, and the logits after each bit
# for bit.  The image is larger than the kernel's `in`, so the testbench
# serves the ring live from a second thread (TB_LIVE_RING).  `make csim-gcc
# TB_PROFILE=stories15m` is the same run.
TB15_N        ?= 251
TB15_CHECKS   ?= 8
TB15_DIR      := $(BUILD)/csim/stories15m
TB15_BIN      := $(TB15_DIR)/tb_tessera_top
TB15_MODEL    := $(TB15_DIR)/stories15M_q8.bin
TB15_IMAGE    := $(TB15_DIR)/stories15m.timg
TB15_REF      := $(TB15_DIR)/emu.tokens
TB15_LOGITS   := $(TB15_DIR)/emu.logits
TB15_EMU      := $(BUILD)-stories15m
TB15_EMUREF   := $(TB15_EMU)/csim/tsr_csim_emuref
TB15_TOKENIZER ?= $(SHARED)/models/tokenizer.bin

$(TB15_BIN): tests/csim/tb_tessera_top.c $(KERNEL_SRC) $(wildcard kernels/*.h kernels/*.def kernels/profiles/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(CFLAGS) $(SANFLAGS) -Ikernels -DTSR_CSIM -DTB_LIVE_RING -pthread \
	    '-DTSR_PROFILE_HEADER="profiles/profile_stories15m.h"' \
	    -o $@ tests/csim/tb_tessera_top.c $(KERNEL_SRC) -lm

$(TB15_MODEL): $(TESSERA)
	@mkdir -p $(dir $@)
	$(TESSERA) synth --shape stories15M --q8 -o $@

$(TB15_IMAGE): $(TB_IMAGER) $(TB15_MODEL) $(TB15_TOKENIZER)
	$(TB_IMAGER) $(TB15_MODEL) $(TB15_TOKENIZER) "$(TB_PROMPT)" $@ 0 stories15m q8

# The emulator's answer, from a program linked with the stories15m
# emulator's library (the sub-make builds it there, as emu-profiles does;
# it runs every time, so a changed kernel rebuilds the answer).
.PHONY: tb15-force
ifeq ($(EMU_PROFILE),generic)
$(TB15_EMUREF): tb15-force
	@$(MAKE) --no-print-directory EMU_PROFILE=stories15m EMU_SERIAL=0 SANITIZE=$(SANITIZE) \
	    NATIVE=$(NATIVE) $@
endif
# (this build's: the generic emulator's for the stories260k Q8_0 run, the
# stories15m one's in BUILD-stories15m/)
$(BUILD)/csim/tsr_csim_emuref: tests/csim/emu_ref.c $(LIB_ALL)
	@mkdir -p $(dir $@)
	$(CC) $(BASEFLAGS) $(CFLAGS) $(SANFLAGS) $(INC) -o $@ $< $(LIB_ALL) $(LDLIBS)

# (one run writes both files; the logits are the rule's side output)
$(TB15_REF): $(TB15_EMUREF) $(TB15_MODEL) $(TB15_TOKENIZER)
	$(TB15_EMUREF) $(TB15_MODEL) $(TB15_TOKENIZER) "$(TB_PROMPT)" $(TB15_N) $(TB15_CHECKS) \
	    $(TB15_REF) $(TB15_LOGITS)

csim-gcc-15m: $(TB15_BIN) $(TB15_IMAGE) $(TB15_REF)
	$(TB15_BIN) $(TB15_IMAGE) $(TB15_REF) 0 $(TB15_LOGITS)

# tests/test_hls_flow.c runs all of these.
$(BUILD)/tests/test_hls_flow: $(TB_BIN) $(TB_IMAGER) $(TB15_BIN) $(TB_EMUREF)

# ----------------------------------------------------------------- HLS ---
# The committed hls_config.cfg (stories260k, U55C, paths relative to its
# directory), with the part, the profile and absolute paths filled in, and
# syn.file lines for every kernels/*.c there is now.
HLS_DIR  := build_dir.hls.$(HLS_PART)
HLS_WORK := $(HLS_DIR)/$(KERNEL)_$(PROFILE)
HLS_CFG  := $(HLS_DIR)/$(KERNEL)_$(PROFILE).cfg

$(HLS_CFG): hw/hls/$(KERNEL)/hls_config.cfg hw/vitis.mk
	@mkdir -p $(dir $@)
	sed -e 's|^part=.*|part=$(HLS_PART)|' \
	    -e 's|\.\./\.\./\.\./\.\./shared/|$(abspath $(SHARED))/|g' \
	    -e 's|\.\./\.\./\.\./build/|$(abspath $(BUILD))/|g' \
	    -e 's|\.\./\.\./\.\./|$(CURDIR)/|g' \
	    -e 's|profiles/profile_stories260k\.h>|profiles/profile_$(PROFILE).h>$(if $(HW_DEFS_$(PROFILE)), $(HW_DEFS_$(PROFILE)))|' \
	    -e '/^syn\.file=/d' $< > $@
	printf 'syn.file=$(CURDIR)/%s\n' $(KERNEL_SRC) >> $@

csim: need-vitis-run $(HLS_CFG) $(TB_IMAGE)
	$(VITIS_RUN) --mode hls --csim --config $(HLS_CFG) --work_dir $(HLS_WORK)

csynth: need-v++ $(HLS_CFG)
	$(VPP) -c --mode hls --config $(HLS_CFG) --work_dir $(HLS_WORK)

hls-checklist:
	@/usr/bin/python3 hw/hls_checklist.py --profile $(PROFILE) kernels

# The literal each TSR_LIT_* pragma value stands for, per shipped profile
# (kernels/profiles/pragma_literals.h): run after changing a profile.
pragma-literals:
	@/usr/bin/python3 hw/pragma_literals.py kernels

cosim: need-vitis-run $(HLS_CFG) $(TB_IMAGE)
	@test -d $(HLS_WORK) || { echo "make: cosim needs a synthesized component: run make csynth KERNEL=$(KERNEL) PROFILE=$(PROFILE) PART=$(PART) first" >&2; exit 1; }
	$(VITIS_RUN) --mode hls --cosim --config $(HLS_CFG) --work_dir $(HLS_WORK)

# -------------------------------------------------------------- xclbin ---
# v++ -c (kernel sources -> .xo), v++ -l (.xo + platform link config ->
# .xclbin), then the profile key the XRT backend checks against the model
# (hw/profile_kv.c prints it for the profile), and a MANIFEST line.
#
# PROFILE_MONITORS=1 (UG1393, "--profile Options"): v++ -c adds stall ports
# (--profile.stall), and the link config's "#profile: " lines become its
# [profile] section: data monitors on the m_axi ports, stall and execution
# monitors on the CU, trace offload to a memory bank, read by hw/xrt.ini's
# device_trace / device_counters.  Those outputs carry ".monitors" in their
# names, so a monitored and a plain build never overwrite each other and the
# host's default xclbin lookup (tessera_<profile>_<platform>.xclbin) never
# picks the monitored one.
HW_MON      := $(if $(filter 1,$(PROFILE_MONITORS)),.monitors)
HW_DIR      := build_dir.$(TARGET).$(PLATFORM)
HW_XO       := $(HW_DIR)/$(KERNEL)_$(PROFILE)$(HW_MON).xo
# The link ports' partner on one card (hw/kernels/tsr_link_loop.c): one .xo
# for every profile, linked beside tessera_top.
HW_LOOP_SRC := hw/kernels/tsr_link_loop.c
HW_LOOP_XO  := $(HW_DIR)/tsr_link_loop.xo
HW_LINK_CFG := $(HW_DIR)/link_$(PROFILE)$(HW_MON).cfg
HW_RAW      := $(HW_DIR)/tessera_$(PROFILE)$(HW_MON).xclbin
HW_KV       := $(BUILD)/hw/profile_kv_$(PROFILE)
BITSTREAM   := bitstreams/tessera_$(PROFILE)_$(PLATFORM)$(if $(filter hw_emu,$(TARGET)),.hw_emu)$(HW_MON).xclbin
HW_VPP_C_MON := $(if $(HW_MON),--profile.stall all:all)
HW_SLR_TCL  := $(HW_DIR)/slr_$(PROFILE).tcl
HW_SLR_GEN  := $(BUILD)/hw/slr_pblocks_$(PROFILE)
HW_SLR_DEP  := $(if $(filter $(PROFILE),$(HW_SLR_FLOORPLAN)),$(HW_SLR_TCL))
HW_VPP_L_SLR := $(if $(HW_SLR_DEP),--vivado.prop run.impl_1.STEPS.PLACE_DESIGN.TCL.PRE=$(abspath $(HW_SLR_TCL)))

$(HW_XO): $(KERNEL_SRC) $(wildcard kernels/*.h kernels/*.def kernels/profiles/*.h) | need-v++
	@mkdir -p $(HW_DIR)
	$(VPP) -c -t $(TARGET) --platform $(PLATFORM) -k $(KERNEL) \
	    --hls.clock $(HW_FREQ_HZ):$(KERNEL) --temp_dir $(HW_DIR)/_x.compile$(HW_MON) $(HW_VPP_C_MON) \
	    -I kernels '-DTSR_PROFILE_HEADER=<profiles/profile_$(PROFILE).h>' $(HW_DEFS_$(PROFILE)) \
	    -o $@ $(KERNEL_SRC)

$(HW_LINK_CFG): hw/link/$(PLATFORM).cfg hw/vitis.mk
	@mkdir -p $(HW_DIR)
	{ echo "# hw/link/$(PLATFORM).cfg for PROFILE=$(PROFILE) PROFILE_MONITORS=$(PROFILE_MONITORS) (generated by hw/vitis.mk)"; \
	  sed -e '$(if $(filter $(PROFILE),$(HW_SPAN_SLRS)),s/^slr=/# not pinned: profile $(PROFILE) spans SLRs: slr=/)' \
	      -e '$(if $(HW_MON),s/^#profile: //)' $<; } > $@

$(HW_LOOP_XO): $(HW_LOOP_SRC) | need-v++
	@mkdir -p $(HW_DIR)
	$(VPP) -c -t $(TARGET) --platform $(PLATFORM) -k tsr_link_loop \
	    --hls.clock $(HW_FREQ_HZ):tsr_link_loop --temp_dir $(HW_DIR)/_x.compile.loop \
	    -o $@ $(HW_LOOP_SRC)

$(HW_RAW): $(HW_XO) $(HW_LOOP_XO) $(HW_LINK_CFG) $(HW_SLR_DEP) | need-v++
	$(VPP) -l -t $(TARGET) --platform $(PLATFORM) --config $(HW_LINK_CFG) $(HW_VPP_L_SLR) \
	    --temp_dir $(HW_DIR)/_x.link$(HW_MON) -o $@ $(HW_XO) $(HW_LOOP_XO)

# The floorplan of a profile that spans SLRs (HW_SLR_FLOORPLAN), from the
# profile header's SLR assignment; `make slr-tcl PROFILE=...` writes it
# without Vitis.
$(BUILD)/hw/slr_pblocks_%: hw/slr_pblocks.c $(wildcard kernels/*.h kernels/*.def kernels/profiles/*.h) hw/vitis.mk
	@mkdir -p $(dir $@)
	$(CC) -Ikernels -DTSR_PROFILE_HEADER='"profiles/profile_$*.h"' $(HW_DEFS_$*) hw/slr_pblocks.c -o $@

$(HW_SLR_TCL): $(HW_SLR_GEN)
	@mkdir -p $(HW_DIR)
	$(HW_SLR_GEN) > $@.tmp && mv $@.tmp $@

slr-tcl: $(HW_SLR_TCL)

# hw/profile_kv for any profile: the figures, with the profile's defines,
# exactly as the kernel is built with them.
$(BUILD)/hw/profile_kv_%: hw/profile_kv.c $(wildcard kernels/*.h kernels/*.def kernels/profiles/*.h) hw/vitis.mk
	@mkdir -p $(dir $@)
	$(CC) -Ikernels -DTSR_PROFILE_HEADER='"profiles/profile_$*.h"' $(HW_DEFS_$*) hw/profile_kv.c -o $@

$(BITSTREAM): $(HW_RAW) $(HW_KV) | need-xclbinutil
	@mkdir -p $(dir $@)
	$(XCLBINUTIL) --input $(HW_RAW) --add-key-value "USER:tessera_profile:$$($(HW_KV))" \
	    --output $@.tmp && mv $@.tmp $@
	echo "$(PROFILE) $(PLATFORM) $$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$$(git diff --quiet HEAD 2>/dev/null || echo -dirty) $$(date -u +%Y-%m-%dT%H:%M:%SZ) $(TARGET)$(if $(HW_MON),+monitors) $(notdir $@)" >> bitstreams/MANIFEST

xclbin: need-v++ need-xclbinutil $(BITSTREAM)

# ---------------------------------------------------- profile keys, tests ---
# What hw/profile_kv prints for every shipped profile, as C string macros
# (TSR_PROFILE_KV_STORIES15M, ...), for tests/test_xrt.c: its xclbins carry
# the very line a `make xclbin` of that profile would, so the test follows
# the profiles as they are tuned.
HW_KV_ALL := $(HW_PROFILES:%=$(BUILD)/hw/profile_kv_%)

$(BUILD)/hw/profile_kv.h: $(HW_KV_ALL)
	{ echo "/* generated by hw/vitis.mk from hw/profile_kv.c: do not edit */"; \
	  for p in $(HW_PROFILES); do \
	    printf '#define TSR_PROFILE_KV_%s "%s"\n' "$$(echo $$p | tr a-z A-Z)" "$$($(BUILD)/hw/profile_kv_$$p)"; \
	  done; } > $@.tmp && mv $@.tmp $@

$(BUILD)/tests/test_xrt: $(BUILD)/hw/profile_kv.h
$(BUILD)/tests/test_xrt: INC += -I$(BUILD)/hw
$(BUILD)/tests/test_hls_flow: $(HW_KV_ALL)
