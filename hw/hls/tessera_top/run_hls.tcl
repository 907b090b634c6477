# hw/hls/tessera_top/run_hls.tcl - the same HLS component as
# hls_config.cfg, for the Tcl flow (Vitis HLS 2022.2+):
#   vitis_hls -f hw/hls/tessera_top/run_hls.tcl            (2022.2 - 2024.1)
#   vitis-run --mode hls --tcl hw/hls/tessera_top/run_hls.tcl   (2023.2+)
# run from the repository root.  Settings come from the environment:
#   TSR_PART     part or card (u55c u280 u250 u200)      default u55c
#   TSR_PROFILE  kernels/profiles/profile_<name>.h       default stories260k
#   TSR_STEPS    any of csim csynth cosim export         default "csim csynth"
#   TSR_CLOCK    clock period in ns                      default 3.33 (300 MHz)
#   TSR_IMAGE    testbench input (make csim-image)       default build/csim/stories260k.timg
#   TSR_REF      reference token ids                     default ../shared/reference/...
#   TSR_DEFS     the profile's -D flags, as hw/vitis.mk HW_DEFS_<profile>
#                (stories15m: "-DTSR_F32_URAM=1 -DTSR_KV_URAM=0")

proc env_or {name default} {
    if {[info exists ::env($name)] && $::env($name) ne ""} { return $::env($name) }
    return $default
}

set root    [pwd]
set card    [env_or TSR_PART u55c]
set profile [env_or TSR_PROFILE stories260k]
set steps   [env_or TSR_STEPS "csim csynth"]
set period  [env_or TSR_CLOCK 3.33]
set image   [env_or TSR_IMAGE $root/build/csim/stories260k.timg]
set ref     [env_or TSR_REF $root/../shared/reference/stories260K_once_upon_a_time.tokens]
set defs    [env_or TSR_DEFS ""]

# Card names map to their parts; anything else is taken as a part name.
array set parts {
    u55c xcu55c-fsvh2892-2L-e
    u280 xcu280-fsvh2892-2L-e
    u250 xcu250-figd2104-2L-e
    u200 xcu200-fsgd2104-2-e
}
set part [expr {[info exists parts($card)] ? $parts($card) : $card}]

# TSR_CSIM: the synthesis layout of the device state in C simulation too.
set cflags "-I$root/kernels -DTSR_CSIM -DTSR_PROFILE_HEADER=<profiles/profile_$profile.h> $defs"

open_project -reset build_dir.hls.$part/tessera_top_$profile
set_top tessera_top
foreach src [lsort [glob $root/kernels/*.c]] {
    add_files $src -cflags $cflags
}
add_files -tb $root/tests/csim/tb_tessera_top.c -cflags $cflags

open_solution -reset -flow_target vitis sol
set_part $part
create_clock -period $period -name default

if {[lsearch $steps csim] >= 0}   { csim_design -argv "$image $ref" }
if {[lsearch $steps csynth] >= 0} { csynth_design }
# a few tokens only: every cycle of the RTL is simulated
if {[lsearch $steps cosim] >= 0}  { cosim_design -argv "$image $ref 3" }
if {[lsearch $steps export] >= 0} {
    export_design -format xo -output $root/build_dir.hls.$part/tessera_top_$profile.xo
}
exit
