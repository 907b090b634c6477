/*
 * test_hls_flow.c - the Vitis flow without Vitis: the pragma lint
 * (hw/lint_pragmas.sh) on kernels/ and on fixtures, the command sequence of
 * `make -n xclbin` (with and without PROFILE_MONITORS=1), the tool checks of
 * make csynth / csim, the link and HLS configs the flow generates (sed
 * only, so they are generated for real here and read back), the profile
 * key of each synthesis profile, and the C-simulation testbench of the
 * persistent tessera_top built with gcc (tests/csim): on the stories260k
 * profile against llama2.c's tokens, and on the stories15m profile (a
 * synthetic Q8_0 stories15M, its ring served live) against the emulator
 * built with that profile, tokens and logits bit for bit.
 *
 * What stays unverified without v++: that v++ accepts these configs (the
 * [profile] keys and the stall option are as UG1393 "--profile Options"
 * documents them; see hw/link/<platform>.cfg), and everything csynth decides.
 *
 * Sections: helpers, pragma lint, make, generated configs, csim testbench.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profiles.h"

#include "parts.h"
#include "plan.h"
#include "run_capture.h"
#include "test_util.h"
#include "tsr_kernel.h"
#include "xclbin_meta.h"

#ifndef TSR_SOURCE_DIR
#define TSR_SOURCE_DIR "."
#endif

#define SRC       TSR_SOURCE_DIR
#define LINT      "sh '" SRC "/hw/lint_pragmas.sh' "
#define FIXTURES  SRC "/tests/fixtures"
#define U55C      "xilinx_u55c_gen3x16_xdma_3_202210_1"
/* a sub-make must not inherit our make's flags (-j, jobserver, -n) */
#define MAKE      "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -C '" SRC "' "
#define TB        TSR_BUILD_DIR "/csim/tb_tessera_top"
#define IMAGER    TSR_BUILD_DIR "/csim/tsr_csim_image"
#define REF       SHARED_REF("stories260K_once_upon_a_time.tokens")
/* the stories15m profile's testbench, and its emulator's answer (make
 * emu-profiles builds it beside the stories15m emulator) */
#define TB15      TSR_BUILD_DIR "/csim/stories15m/tb_tessera_top"
#define EMUREF15  TSR_BUILD_DIR "-stories15m/csim/tsr_csim_emuref"
#define TB15_N    251   /* the whole context of 256 */
#define TB15_K    8

#define CAP (256 * 1024)

/* ----------------------------------------------------------- helpers ---- */

static char out[CAP], err[CAP];

/* Run cmd; `out` gets its stdout, then its stderr.  Returns exit status. */
static int run(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && n < (int)sizeof cmd);
    int st = run_capture(cmd, out, err, CAP);
    size_t len = strlen(out);
    snprintf(out + len, CAP - len, "%s", err);
    return st;
}

/* Lines of out containing needle. */
static int lines_with(const char *needle) { return lines_containing(out, needle); }

/* Join make's backslash-continued recipe lines in out, in place. */
static void join_continuations(void)
{
    char *w = out;
    for (const char *r = out; *r; r++) {
        if (r[0] == '\\' && r[1] == '\n') { r++; continue; }
        *w++ = *r;
    }
    *w = 0;
}

/* The whole line of out that starts with prefix (malloc'd), or NULL. */
static char *line_starting(const char *prefix)
{
    for (const char *s = out; *s;) {
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (strncmp(s, prefix, strlen(prefix)) == 0) return strndup(s, len);
        s += len + (e ? 1 : 0);
    }
    return NULL;
}

/* A temp file with the given bytes; path gets its name. */
static void temp_file(char *path, const void *data, size_t n)
{
    strcpy(path, "/tmp/tsr_hls_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, n), (ssize_t)n);
    close(fd);
}

/* Whole file into a malloc'd buffer (NUL-terminated); *n gets its size. */
static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
    buf[len] = 0;
    fclose(f);
    *n = (size_t)len;
    return buf;
}

/* ------------------------------------------------------- pragma lint ---- */

/* The kernels as they are pass (a pragma naming a missing variable or port
 * fails `make lint-hls`). */
static void test_lint_kernels_pass(void **state)
{
    (void)state;
    assert_int_equal(run(LINT "'%s/kernels'", SRC), 0);
    assert_int_equal(lines_with("lint-pragmas: "), 1);
    assert_int_equal(lines_with(" files OK"), 1);
}

static void test_lint_good_fixture(void **state)
{
    (void)state;
    assert_int_equal(run(LINT "'%s/good_pragma'", FIXTURES), 0);
    assert_string_equal(out, "lint-pragmas: 8 pragmas in 1 files OK\n");
}

/* Each planted problem is named with its file and line, nothing else is. */
static void test_lint_bad_fixture(void **state)
{
    (void)state;
    assert_int_equal(run(LINT "'%s/bad_pragma'", FIXTURES), 1);
    assert_int_equal(lines_with("bad_pragma/top.c:26: pragma names 'bufx' which is not in "
                                "function bad_top"), 1);
    assert_int_equal(lines_with("bad_pragma/top.c:22: pragma names port 'cancel' which is not a "
                                "parameter of function bad_top"), 1);
    assert_int_equal(lines_with("bad_pragma/top.c:25: pragma names 'st.w9': 'w9' is not a member "
                                "of any struct"), 1);
    assert_int_equal(lines_with("bad_pragma/top.c:15: pragma names 'tabel' which is not at file "
                                "scope"), 1);
    assert_int_equal(lines_with("lint-pragmas: 4 problem(s) in 1 files"), 1);
    assert_int_equal(count_lines(out), 5);
}

/* One character changed in the good fixture: the pragma now names a local
 * of another function's spelling. */
static void test_lint_planted_typo(void **state)
{
    (void)state;
    size_t n;
    char *src = slurp(FIXTURES "/good_pragma/top.c", &n);
    char *at = strstr(src, "variable=local ");
    assert_non_null(at);
    memcpy(at, "variable=loca1 ", 15);
    char dir[64], path[128];
    strcpy(dir, "/tmp/tsr_hls_XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/top.c", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(src, 1, n, f), n);
    fclose(f);
    int line = 1;
    for (const char *p = src; p < at; p++) line += *p == '\n';
    free(src);

    assert_int_equal(run(LINT "'%s'", dir), 1);
    char want[256];
    snprintf(want, sizeof want, "%s:%d: pragma names 'loca1' which is not in function good_top",
             path, line);
    assert_int_equal(lines_with(want), 1);
    assert_int_equal(lines_with("1 problem(s)"), 1);
    unlink(path);
    rmdir(dir);
}

static void test_lint_usage(void **state)
{
    (void)state;
    assert_int_equal(run(LINT "/nonexistent/dir"), 2);
    assert_int_equal(lines_with("no such directory: '/nonexistent/dir'"), 1);
}

/* -------------------------------------------------------------- make ---- */

/* A temp directory (mkdtemp) for make's outputs; rm_tree removes it. */
static void temp_dir(char *dir)
{
    strcpy(dir, "/tmp/tsr_hls_XXXXXX");
    assert_non_null(mkdtemp(dir));
}

static void rm_tree(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* The floorplan of a profile that spans SLRs (hw/slr_pblocks.c): the
 * profile's SLR groups of whole mesh rows, the unverified parts said in
 * its header; under tclsh with Vivado's commands stubbed, every PE's
 * cells into its SLR's pblock, a PE whose patterns match nothing left
 * free and named; a one-SLR profile has none; and hw/vitis.mk floorplans
 * exactly the profiles whose TSR_SLRS is above 1. */
static void test_slr_floorplan(void **state)
{
    (void)state;
    char dir[64], cmd[1024];
    temp_dir(dir);
    assert_int_equal(run("cc -Wall -Wextra -Werror -I'" SRC "/kernels' "
                         "-DTSR_PROFILE_HEADER='\"profiles/profile_stories15m.h\"' "
                         "-DTSR_F32_URAM=0 -DTSR_KV_URAM=1 '" SRC "/hw/slr_pblocks.c' -o %s/gen15 && "
                         "cc -I'" SRC "/kernels' -DTSR_PROFILE_HEADER='\"profiles/profile_stories260k.h\"' "
                         "'" SRC "/hw/slr_pblocks.c' -o %s/gen260", dir, dir), 0);
    assert_int_equal(run("%s/gen15 > %s/slr.tcl && cat %s/slr.tcl", dir, dir, dir), 0);
    assert_int_equal(lines_with("set tsr_slrs 3"), 1);
    assert_int_equal(lines_with("set tsr_slr_pes { {0 7} {8 19} {20 31} }"), 1);
    assert_int_equal(lines_with("set tsr_att_pes 12"), 1);
    assert_int_equal(lines_with("# UNVERIFIED until a first csynth and link of this profile:"), 1);
    assert_true(run("%s/gen260", dir) != 0);
    assert_int_equal(lines_with("slr_pblocks: profile stories260k spans one SLR: no floorplan"), 1);
    /* the Tcl itself, against stubs: PE p has cells top/st_w8_<p>_U and,
     * for the attention PEs, top/st_kv_<p>_U; PE 5's are missing */
    if (run("command -v tclsh") == 0) {
        snprintf(cmd, sizeof cmd, "%s/stub.tcl", dir);
        FILE *f = fopen(cmd, "w");
        assert_non_null(f);
        fputs("set pbs {}\n"
              "proc get_pblocks {args} { global pbs; set n [lindex $args end]; "
              "if {[lsearch $pbs $n] >= 0} {return $n}; return {} }\n"
              "proc create_pblock {n} { global pbs; lappend pbs $n; return $n }\n"
              "proc resize_pblock {pb args} { puts \"resize $pb $args\" }\n"
              "proc get_property {p o} { return $o }\n"
              "proc get_cells {args} { regexp {NAME =~ (.*)} [lindex $args end] -> g; set r {}; "
              "for {set p 0} {$p < 32} {incr p} { if {$p == 5} continue; "
              "foreach c [list top/st_w8_${p}_U top/st_kv_${p}_U] { "
              "if {[string match $g $c]} { lappend r $c } } }; return $r }\n"
              "proc add_cells_to_pblock {pb cells} { foreach c $cells { puts \"cell $pb $c\" } }\n",
              f);
        fclose(f);
        assert_int_equal(run("cd %s && printf 'source stub.tcl\\nsource slr.tcl\\n' | tclsh", dir), 0);
        assert_int_equal(lines_with("resize tessera_SLR0 -add SLR0"), 1);
        assert_int_equal(lines_with("resize tessera_SLR2 -add SLR2"), 1);
        assert_int_equal(lines_with("cell tessera_SLR0 top/st_w8_7_U"), 1);
        assert_int_equal(lines_with("cell tessera_SLR1 top/st_w8_8_U"), 1);
        assert_int_equal(lines_with("cell tessera_SLR1 top/st_kv_11_U"), 1);
        assert_int_equal(lines_with("cell tessera_SLR2 top/st_w8_20_U"), 1);
        assert_int_equal(lines_with("cell tessera_SLR2 top/st_kv_"), 0);   /* no attention there */
        assert_int_equal(lines_with("cell tessera_SLR0 "), 7 * 2);        /* PEs 0..7 less 5 */
        assert_int_equal(lines_with("cell tessera_SLR1 "), 12 + 4);
        assert_int_equal(lines_with("cell tessera_SLR2 "), 12);
        assert_int_equal(lines_with("tessera: WARNING: PE 5: no cell matches"), 1);
        assert_int_equal(lines_with("tessera: WARNING: 1 PEs not pinned"), 1);
    } else {
        print_message("tclsh not found: the floorplan's Tcl not run\n");
    }
    /* vitis.mk's list against the profile headers */
    assert_int_equal(run("sed -n 's/^HW_SLR_FLOORPLAN := //p' '" SRC "/hw/vitis.mk'"), 0);
    static const char *const names[] = { "generic", "stories260k", "stories15m" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        int listed = strstr(out, names[i]) != NULL;
        assert_int_equal(listed, tsr_profile_slrs(names[i]) > 1);
    }
    rm_tree(dir);
}

/* make -n xclbin: checks, v++ -c over every kernel source with the
 * profile and its defines, the platform's link config, v++ -l, the profile
 * key (built with the same defines), the manifest line - in that order.
 * BUILD is a fresh directory, so profile_kv is not up to date and its
 * compile shows. */
static void test_make_n_xclbin(void **state)
{
    (void)state;
    char bdir[64];
    temp_dir(bdir);
    assert_int_equal(run(MAKE "-n xclbin TARGET=hw PLATFORM=" U55C " PROFILE=stories15m BUILD=%s",
                         bdir), 0);
    join_continuations();
    const char *check = strstr(out, "command -v v++");
    const char *compile = strstr(out, "v++ -c -t hw --platform " U55C " -k tessera_top");
    const char *cfg = strstr(out, "hw/link/" U55C ".cfg");
    const char *link = strstr(out, "v++ -l -t hw --platform " U55C);
    const char *key = strstr(out, "xclbinutil --input");
    const char *manifest = strstr(out, ">> bitstreams/MANIFEST");
    assert_non_null(check);
    assert_non_null(compile);
    assert_non_null(cfg);
    assert_non_null(link);
    assert_non_null(key);
    assert_non_null(manifest);
    assert_true(check < compile && compile < link && cfg < link && link < key && key < manifest);
    assert_non_null(strstr(out, "command -v xclbinutil"));

    // the compile names every kernel source, the profile and its defines:
    // stories15m's fp32 arrays in block RAM, its KV cache in UltraRAM
    char *c = line_starting("v++ -c ");
    assert_non_null(c);
    assert_non_null(strstr(c, "-DTSR_PROFILE_HEADER=<profiles/profile_stories15m.h>' "
                              "-DTSR_F32_URAM=0 -DTSR_KV_URAM=1 "));
    assert_null(strstr(c, "TSR_PE_F32_URAM"));   /* the define the kernels dropped */
    assert_null(strstr(c, "--profile.stall"));   /* no monitors unless asked */
    assert_non_null(strstr(c, "--hls.clock 300000000:tessera_top"));
    assert_non_null(strstr(c, "-o build_dir.hw." U55C "/tessera_top_stories15m.xo "));
    glob_t g;
    assert_int_equal(glob(SRC "/kernels/*.c", 0, NULL, &g), 0);
    assert_true(g.gl_pathc >= 6);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        char name[256];
        snprintf(name, sizeof name, " kernels/%s", strrchr(g.gl_pathv[i], '/') + 1);
        if (!strstr(c, name)) print_message("v++ -c does not name%s\n", name);
        assert_non_null(strstr(c, name));
    }
    globfree(&g);
    free(c);

    // the link uses the platform config (stories15m: without SLR pinning,
    // and without monitors)
    // the link ports' partner, its own .xo, linked beside it
    char *lc = line_starting("v++ -c -t hw --platform " U55C " -k tsr_link_loop ");
    assert_non_null(lc);
    assert_non_null(strstr(lc, "-o build_dir.hw." U55C "/tsr_link_loop.xo hw/kernels/tsr_link_loop.c"));
    free(lc);
    char *l = line_starting("v++ -l ");
    assert_non_null(l);
    assert_non_null(strstr(l, "--config build_dir.hw." U55C "/link_stories15m.cfg"));
    assert_non_null(strstr(l, "build_dir.hw." U55C "/tessera_top_stories15m.xo "
                              "build_dir.hw." U55C "/tsr_link_loop.xo"));
    /* its three SLRs: the pre-place floorplan (UG1393 "--vivado Options"),
     * printed by hw/slr_pblocks.c built with the profile's defines */
    assert_non_null(strstr(l, " --vivado.prop run.impl_1.STEPS.PLACE_DESIGN.TCL.PRE=/"));
    assert_non_null(strstr(l, "/build_dir.hw." U55C "/slr_stories15m.tcl "));
    free(l);
    char sw[256];
    snprintf(sw, sizeof sw, "-DTSR_PROFILE_HEADER='\"profiles/profile_stories15m.h\"' "
             "-DTSR_F32_URAM=0 -DTSR_KV_URAM=1 hw/slr_pblocks.c -o %s/hw/slr_pblocks_stories15m", bdir);
    assert_non_null(strstr(out, sw));
    assert_non_null(strstr(out, "s/^slr=/# not pinned"));
    assert_null(strstr(out, "#profile: "));
    assert_non_null(strstr(out, "PROFILE_MONITORS=0 (generated by hw/vitis.mk)"));
    // the XRT backend's profile key, from profile_kv built with the
    // profile's defines, into the named bitstream
    char want[256];
    snprintf(want, sizeof want, "-DTSR_PROFILE_HEADER='\"profiles/profile_stories15m.h\"' "
             "-DTSR_F32_URAM=0 -DTSR_KV_URAM=1 hw/profile_kv.c -o %s/hw/profile_kv_stories15m",
             bdir);
    assert_non_null(strstr(out, want));
    assert_non_null(strstr(out, "--add-key-value \"USER:tessera_profile:$("));
    assert_non_null(strstr(out, "--output bitstreams/tessera_stories15m_" U55C ".xclbin.tmp"));
    assert_non_null(strstr(out, "echo \"stories15m " U55C " $(git rev-parse"));
    assert_non_null(strstr(out, " hw tessera_stories15m_" U55C ".xclbin\" >> bitstreams/MANIFEST"));
    /* the link partner's source is C that compiles with the kernels' warnings */
    assert_int_equal(run("cc -std=c11 -Wall -Wextra -Werror -Wno-unknown-pragmas -fsyntax-only "
                         "'%s/hw/kernels/tsr_link_loop.c'", SRC), 0);
    rm_tree(bdir);
}

/* PROFILE_MONITORS=1: stall ports at compile time, the config's [profile]
 * block at link time, and outputs of their own that the host's default
 * lookup does not pick. */
static void test_make_n_xclbin_monitors(void **state)
{
    (void)state;
    char bdir[64];
    temp_dir(bdir);
    assert_int_equal(run(MAKE "-n xclbin TARGET=hw PLATFORM=" U55C " PROFILE=stories260k "
                              "PROFILE_MONITORS=1 BUILD=%s", bdir), 0);
    join_continuations();
    char *c = line_starting("v++ -c ");
    assert_non_null(c);
    assert_non_null(strstr(c, " --profile.stall all:all "));
    assert_non_null(strstr(c, "-o build_dir.hw." U55C "/tessera_top_stories260k.monitors.xo "));
    assert_null(strstr(c, "TSR_F32_URAM"));   /* stories260k: BRAM, the default */
    free(c);
    assert_non_null(strstr(out, "-e 's/^#profile: //'"));
    assert_non_null(strstr(out, "PROFILE_MONITORS=1 (generated by hw/vitis.mk)"));
    assert_null(strstr(out, "vivado.prop"));   /* one SLR: no floorplan */
    assert_null(strstr(out, "slr_pblocks"));
    char *l = line_starting("v++ -l ");
    assert_non_null(l);
    assert_non_null(strstr(l, "--config build_dir.hw." U55C "/link_stories260k.monitors.cfg"));
    assert_non_null(strstr(l, "-o build_dir.hw." U55C "/tessera_stories260k.monitors.xclbin"));
    free(l);
    assert_non_null(strstr(out, "--output bitstreams/tessera_stories260k_" U55C
                                ".monitors.xclbin.tmp"));
    assert_non_null(strstr(out, " hw+monitors tessera_stories260k_" U55C ".monitors.xclbin\""));
    rm_tree(bdir);
}

/* hw_emu and the small profile: the emulation bitstream has its own name,
 * the CU stays pinned to its SLR. */
static void test_make_n_xclbin_hw_emu(void **state)
{
    (void)state;
    char bdir[64];
    temp_dir(bdir);
    assert_int_equal(run(MAKE "-n xclbin TARGET=hw_emu PLATFORM=xilinx_u250_gen3x16_xdma_4_1_202210_1 "
                              "PROFILE=stories260k BUILD=%s", bdir), 0);
    join_continuations();
    assert_non_null(strstr(out, "v++ -c -t hw_emu --platform xilinx_u250_gen3x16_xdma_4_1_202210_1"));
    assert_non_null(strstr(out, "v++ -l -t hw_emu --platform xilinx_u250_gen3x16_xdma_4_1_202210_1"));
    assert_non_null(strstr(out, "bitstreams/tessera_stories260k_xilinx_u250_gen3x16_xdma_4_1_202210_1"
                                ".hw_emu.xclbin"));
    assert_null(strstr(out, "not pinned"));
    assert_null(strstr(out, "TSR_F32_URAM"));
    assert_null(strstr(out, "monitors"));
    rm_tree(bdir);
}

static void test_make_bad_names(void **state)
{
    (void)state;
    assert_int_not_equal(run(MAKE "-n xclbin PLATFORM=xilinx_u9_bogus PROFILE=stories15m"), 0);
    assert_int_equal(lines_with("PLATFORM=xilinx_u9_bogus: no link config hw/link/xilinx_u9_bogus.cfg"), 1);
    assert_int_not_equal(run(MAKE "-n xclbin PLATFORM=" U55C " PROFILE=stories7b"), 0);
    assert_int_equal(lines_with("PROFILE=stories7b: no kernels/profiles/profile_stories7b.h"), 1);
    /* profile_undef.h forgets a profile, profile_defaults.h fills one in:
     * neither is one */
    assert_int_not_equal(run(MAKE "-n xclbin PLATFORM=" U55C " PROFILE=undef"), 0);
    assert_int_equal(lines_with("PROFILE=undef: "), 1);
    assert_int_not_equal(run(MAKE "-n xclbin PLATFORM=" U55C " PROFILE=defaults"), 0);
    assert_int_equal(lines_with("PROFILE=defaults: "), 1);
    assert_int_equal(lines_with("(profiles: generic stories15m stories260k)"), 1);
    assert_int_not_equal(run(MAKE "-n xclbin TARGET=sw_emu PLATFORM=" U55C), 0);
    assert_int_equal(lines_with("TARGET=sw_emu: must be hw or hw_emu"), 1);
    assert_int_not_equal(run(MAKE "-n xclbin PLATFORM=" U55C " PROFILE_MONITORS=yes"), 0);
    assert_int_equal(lines_with("PROFILE_MONITORS=yes: must be 0 or 1"), 1);
}

/* Without Vitis on PATH the targets stop at once, naming the tool, before
 * building anything. */
static void test_make_without_vitis(void **state)
{
    (void)state;
    if (access("/usr/bin/v++", X_OK) == 0 || access("/bin/v++", X_OK) == 0) skip();
    assert_int_not_equal(run("env PATH=/usr/bin:/bin " MAKE "csynth"), 0);
    assert_int_equal(lines_with("make: v++ not found: install AMD Vitis"), 1);
    assert_int_equal(lines_with("cc "), 0);
    assert_int_not_equal(run("env PATH=/usr/bin:/bin " MAKE "csim PART=u280"), 0);
    assert_int_equal(lines_with("make: vitis-run not found: install AMD Vitis"), 1);
    assert_int_equal(lines_with("cc "), 0);
    assert_int_not_equal(run("env PATH=/usr/bin:/bin " MAKE "cosim"), 0);
    assert_int_equal(lines_with("make: vitis-run not found"), 1);
    /* an xclbin stops before make runs anything: one line, the tool and
     * what to source */
    assert_int_not_equal(run("env PATH=/usr/bin:/bin " MAKE "-j2 xclbin PROFILE_MONITORS=1"), 0);
    assert_int_equal(lines_with("v++ not found: install AMD Vitis"), 1);
    assert_int_equal(lines_with("settings64.sh"), 1);
    assert_int_equal(lines_with("cc "), 0);
    assert_int_equal(lines_with("mkdir "), 0);
    /* and so does the Vitis vocabulary's make all TARGET=hw|hw_emu */
    assert_int_not_equal(run("env PATH=/usr/bin:/bin " MAKE "-j2 all TARGET=hw_emu PLATFORM=" U55C
                             " PROFILE=stories260k"), 0);
    assert_int_equal(lines_with("v++ not found: install AMD Vitis"), 1);
    assert_int_equal(lines_with("cc "), 0);
}

/* The Vitis vocabulary: make all TARGET=hw|hw_emu PLATFORM=... is the
 * xclbin build; TARGET=sw_emu says what the emulator is and builds it (the
 * library and the program, no v++); defaulted PLATFORM, PROFILE, PART are
 * said, one line each, and given ones are not. */
static void test_make_vitis_vocabulary(void **state)
{
    (void)state;
    char bdir[64];
    temp_dir(bdir);
    static const char *const targets[] = { "hw", "hw_emu" };
    for (int t = 0; t < 2; t++) {
        assert_int_equal(run(MAKE "-n all TARGET=%s PLATFORM=" U55C " PROFILE=stories15m BUILD=%s",
                             targets[t], bdir), 0);
        join_continuations();
        char want[256];
        snprintf(want, sizeof want, "v++ -c -t %s --platform " U55C, targets[t]);
        assert_non_null(strstr(out, want));
        snprintf(want, sizeof want, "v++ -l -t %s --platform " U55C, targets[t]);
        assert_non_null(strstr(out, want));
        snprintf(want, sizeof want, "bitstreams/tessera_stories15m_" U55C "%s.xclbin",
                 t ? ".hw_emu" : "");
        assert_non_null(strstr(out, want));
        assert_null(strstr(out, "not set"));
        assert_null(strstr(out, "-c driver/"));   /* not the library */
    }
    /* defaults said */
    assert_int_equal(run(MAKE "-n all TARGET=hw BUILD=%s", bdir), 0);
    assert_int_equal(lines_with("PLATFORM not set: using " U55C " (platforms: "), 1);
    assert_int_equal(lines_with("PROFILE not set: using stories260k (profiles: "), 1);
    assert_int_equal(lines_with("PART not set"), 0);   /* an xclbin takes the platform's */
    assert_int_equal(run(MAKE "-n csynth PROFILE=stories260k BUILD=%s", bdir), 0);
    assert_int_equal(lines_with("PART not set: using u55c"), 1);
    assert_int_equal(lines_with("PROFILE not set"), 0);
    assert_int_equal(lines_with("PLATFORM not set"), 0);
    /* sw_emu: the answer, then the CPU build, no Vitis */
    assert_int_equal(run(MAKE "-n -B all TARGET=sw_emu BUILD=%s", bdir), 0);
    assert_int_equal(lines_with("TARGET=sw_emu: tessera's software emulation is its CPU emulator"), 1);
    assert_non_null(strstr(out, "-c driver/device.c"));
    assert_non_null(strstr(out, "-o ")); 
    assert_null(strstr(out, "v++"));
    assert_int_not_equal(run(MAKE "-n all TARGET=sw BUILD=%s", bdir), 0);
    assert_int_equal(lines_with("TARGET=sw: hw or hw_emu (make all builds the xclbin) or sw_emu"), 1);
    /* without TARGET, all is the library and the program */
    assert_int_equal(run(MAKE "-n -B all BUILD=%s", bdir), 0);
    assert_null(strstr(out, "v++"));
    assert_null(strstr(out, "sw_emu"));
    assert_non_null(strstr(out, "-c driver/device.c"));
    rm_tree(bdir);
}

/* make -n csim: the HLS config for the part and profile, then vitis-run. */
static void test_make_n_csim(void **state)
{
    (void)state;
    assert_int_equal(run(MAKE "-n -W hw/vitis.mk csim PART=u280 PROFILE=stories260k"), 0);
    join_continuations();
    assert_non_null(strstr(out, "s|^part=.*|part=xcu280-fsvh2892-2L-e|"));
    assert_non_null(strstr(out, "hw/hls/tessera_top/hls_config.cfg > "
                                "build_dir.hls.xcu280-fsvh2892-2L-e/tessera_top_stories260k.cfg"));
    // syn.file lines for the kernel sources there are now
    char *p = line_starting("printf 'syn.file=");
    assert_non_null(p);
    assert_non_null(strstr(p, " kernels/tsr_kernel.c"));
    assert_non_null(strstr(p, " kernels/mesh.c"));
    free(p);
    assert_non_null(strstr(out, "vitis-run --mode hls --csim --config "
                                "build_dir.hls.xcu280-fsvh2892-2L-e/tessera_top_stories260k.cfg "
                                "--work_dir build_dir.hls.xcu280-fsvh2892-2L-e/tessera_top_stories260k"));
}

/* ---------------------------------------------- generated configs ---- */

/* Each m_axi port of tessera_top and its bundle, from the INTERFACE
 * pragmas of kernels/tsr_kernel.c. */
typedef struct port { char name[16], bundle[16]; } port;

static int kernel_ports(port *p, int cap)
{
    size_t n;
    char *src = slurp(SRC "/kernels/tsr_kernel.c", &n);
    int np = 0;
    for (char *at = src; (at = strstr(at, "#pragma HLS INTERFACE m_axi ")); at++) {
        char *eol = strchr(at, '\n'), *pn = strstr(at, "port="), *bn = strstr(at, "bundle=");
        assert_true(pn && bn && pn < eol && bn < eol && np < cap);
        sscanf(pn, "port=%15s", p[np].name);
        sscanf(bn, "bundle=%15s", p[np].bundle);
        np++;
    }
    free(src);
    return np;
}

/* The active (uncommented) lines of section sec ("[connectivity]") in a
 * v++ config, joined with '\n' into buf. */
static void section_lines(const char *cfgtext, const char *sec, char *buf, size_t cap)
{
    buf[0] = 0;
    int in = 0;
    for (const char *s = cfgtext; *s;) {
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len && s[0] == '[') in = len == strlen(sec) && !strncmp(s, sec, len);
        else if (in && len && s[0] != '#') {
            size_t at = strlen(buf);
            snprintf(buf + at, cap - at, "%.*s\n", (int)len, s);
        }
        s += len + (e ? 1 : 0);
    }
}

/* Lines of text that start with prefix. */
static int lines_starting(const char *text, const char *prefix)
{
    int n = 0;
    size_t pl = strlen(prefix);
    for (const char *s = text; *s;) {
        if (!strncmp(s, prefix, pl)) n++;
        const char *e = strchr(s, '\n');
        if (!e) break;
        s = e + 1;
    }
    return n;
}

/* The bank an sp= line in conn gives arg, copied to bank; 0 if none. */
static int sp_bank(const char *conn, const char *arg, char *bank, size_t cap)
{
    char key[64];
    snprintf(key, sizeof key, "sp=tessera_top_1.%s:", arg);
    const char *at = strstr(conn, key);
    if (!at) return 0;
    at += strlen(key);
    size_t len = strcspn(at, "\n");
    snprintf(bank, cap, "%.*s", (int)len, at);
    return 1;
}

/* The link config make xclbin would pass to v++ -l, generated for real
 * (sed only, no Vitis) for every platform, both profiles, with and without
 * monitors: the ring's bundle (ctl, out_w, out_f) in host memory, in_w and
 * in_f on a bank of the platform's memory, the arguments of a bundle on one
 * bank, the SLR pin as the profile allows, and
 * a [profile] section exactly when PROFILE_MONITORS=1. */
static void test_link_configs(void **state)
{
    (void)state;
    port ports[8];
    int np = kernel_ports(ports, 8);
    assert_int_equal(np, 5);
    glob_t g;
    assert_int_equal(glob(SRC "/hw/link/*.cfg", 0, NULL, &g), 0);
    assert_int_equal(g.gl_pathc, 4);
    char dir[64];
    temp_dir(dir);
    static const char *const profiles[2] = { "stories260k", "stories15m" };
    for (size_t i = 0; i < g.gl_pathc; i++) {
        char plat[128];
        const char *base = strrchr(g.gl_pathv[i], '/') + 1;
        snprintf(plat, sizeof plat, "%.*s", (int)(strlen(base) - 4), base);
        const char *kind = strstr(plat, "u55c") || strstr(plat, "u280") ? "HBM[" : "DDR[";
        for (int pi = 0; pi < 2; pi++)
            for (int mon = 0; mon < 2; mon++) {
                char path[256];
                snprintf(path, sizeof path, "%s/link_%s%s.cfg", dir, profiles[pi],
                         mon ? ".monitors" : "");
                assert_int_equal(run(MAKE "HW_DIR=%s PLATFORM=%s PROFILE=%s PROFILE_MONITORS=%d %s",
                                     dir, plat, profiles[pi], mon, path), 0);
                size_t n;
                char *cfg = slurp(path, &n);
                static char conn[4096], prof[4096], banks[8][32];
                section_lines(cfg, "[connectivity]", conn, sizeof conn);
                assert_non_null(strstr(conn, "nk=tessera_top:1:tessera_top_1\n"));
                for (int a = 0; a < np; a++) {
                    if (!sp_bank(conn, ports[a].name, banks[a], sizeof banks[a]))
                        print_error("%s: no sp= line for %s\n", path, ports[a].name);
                    assert_true(banks[a][0] != 0);
                    /* the ring's bundle (ctl, out) in host memory, in on the card */
                    if (!strcmp(ports[a].bundle, "gmem0")) assert_string_equal(banks[a], "HOST[0]");
                    else assert_true(!strncmp(banks[a], kind, 4));
                    for (int b = 0; b < a; b++)   /* one bundle, one bank */
                        if (!strcmp(ports[a].bundle, ports[b].bundle))
                            assert_string_equal(banks[a], banks[b]);
                }
                assert_int_equal(lines_containing(conn, "sp="), np);
                /* the link ports through tsr_link_loop, no CU into itself
                 * (v++ -l refuses it: UG1393 "Specifying Streaming
                 * Connections") */
                assert_non_null(strstr(conn, "nk=tsr_link_loop:1:tsr_link_loop_1\n"));
                assert_non_null(strstr(conn, "stream_connect=tessera_top_1.link_out:tsr_link_loop_1.in\n"));
                assert_non_null(strstr(conn, "stream_connect=tsr_link_loop_1.out:tessera_top_1.link_in\n"));
                assert_int_equal(lines_containing(conn, "stream_connect="), 2);
                assert_int_equal(lines_containing(conn, "stream_connect=tessera_top_1.link_out:tessera_top_1"), 0);
                /* stories15m spans SLRs: not pinned, the partner beside it */
                assert_int_equal(lines_containing(conn, "slr=tessera_top_1:SLR0"), pi == 0);
                assert_int_equal(lines_containing(conn, "slr=tsr_link_loop_1:SLR0"), pi == 0);
                section_lines(cfg, "[clock]", prof, sizeof prof);
                assert_non_null(strstr(prof, "freqHz=300000000:tessera_top_1\n"));
                assert_non_null(strstr(prof, "freqHz=300000000:tsr_link_loop_1\n"));
                section_lines(cfg, "[profile]", prof, sizeof prof);
                if (!mon) {
                    assert_string_equal(prof, "");
                    assert_int_equal(lines_starting(cfg, "#profile: "), 5);
                } else {
                    assert_int_equal(lines_starting(cfg, "#profile: "), 0);
                    assert_non_null(strstr(prof, "data=all:all:all\n"));
                    assert_non_null(strstr(prof, "stall=all:all\n"));
                    assert_non_null(strstr(prof, "exec=all:all\n"));
                    /* trace goes to a bank of the platform's memory */
                    const char *tm = strstr(prof, "trace_memory=");
                    assert_non_null(tm);
                    assert_true(!strncmp(tm + strlen("trace_memory="), kind, 4));
                    assert_int_equal(count_lines(prof), 4);
                }
                free(cfg);
                unlink(path);
            }
    }
    globfree(&g);
    rm_tree(dir);
}

/* The HLS config make csim / csynth / cosim use, generated for real:
 * stories15m's defines reach both the kernel's and the testbench's flags. */
/* The first csynth's loop checklist in docs/hls-flow.md is what `make
 * hls-checklist PROFILE=stories260k` (hw/hls_checklist.py) prints from the
 * kernels as they are: a loop, II or trip count changed without the
 * checklist fails here.  And the generator itself: the gather's loop at
 * II 1 over TSR_MAX_OUT_WORDS, a per-token and a load loop, the tile's
 * II leaning on its DEPENDENCE pragma, an unknown profile refused. */
static void test_hls_checklist(void **state)
{
    (void)state;
    assert_int_equal(run(MAKE "hls-checklist PROFILE=stories260k"), 0);
    size_t n;
    char *doc = slurp(SRC "/docs/hls-flow.md", &n);
    const char *b = strstr(doc, "<!-- hls-checklist stories260k: begin -->\n");
    const char *e = strstr(doc, "<!-- hls-checklist stories260k: end -->");
    assert_non_null(b);
    assert_non_null(e);
    b += strlen("<!-- hls-checklist stories260k: begin -->\n");
    if ((size_t)(e - b) != strlen(out) || memcmp(b, out, (size_t)(e - b)) != 0)
        fail_msg("docs/hls-flow.md's checklist differs from `make hls-checklist "
                 "PROFILE=stories260k`; paste its output between the markers");
    assert_non_null(strstr(out, "| `gather_words` | `gather_words_one` | mesh.c | per token | 1 |"));
    assert_non_null(strstr(out, "| `load_w8` | `load_w8_words` | tsr_kernel.c | load | 1 |"));
    assert_non_null(strstr(out, "| `q8_steps` | `pe_tile_q8` | mesh.c | per token | 1 |"));
    free(doc);
    assert_int_equal(run(MAKE "hls-checklist PROFILE=stories15m"), 0);
    assert_non_null(strstr(out, "`q8_steps`"));
    assert_int_not_equal(run(MAKE "hls-checklist PROFILE=nosuch"), 0);
    assert_non_null(strstr(out, "no profile 'nosuch'"));
}

static void test_hls_config(void **state)
{
    (void)state;
    char dir[64], path[128];
    temp_dir(dir);
    snprintf(path, sizeof path, "%s/tessera_top_stories15m.cfg", dir);
    assert_int_equal(run(MAKE "HLS_DIR=%s PROFILE=stories15m PART=u280 %s", dir, path), 0);
    size_t n;
    char *cfg = slurp(path, &n);
    const char *flags = "-DTSR_PROFILE_HEADER=<profiles/profile_stories15m.h> -DTSR_F32_URAM=0 "
                        "-DTSR_KV_URAM=1";
    assert_int_equal(lines_containing(cfg, flags), 2);   /* syn.cflags, tb.cflags */
    assert_int_equal(lines_containing(cfg, "syn.cflags="), 1);
    assert_int_equal(lines_containing(cfg, "tb.cflags="), 1);
    assert_int_equal(lines_containing(cfg, "part=xcu280-fsvh2892-2L-e"), 1);
    assert_int_equal(lines_containing(cfg, "stories260k.h"), 0);
    glob_t g;
    assert_int_equal(glob(SRC "/kernels/*.c", 0, NULL, &g), 0);
    assert_int_equal(lines_containing(cfg, "syn.file="), (int)g.gl_pathc);
    globfree(&g);
    free(cfg);
    unlink(path);
    snprintf(path, sizeof path, "%s/tessera_top_stories260k.cfg", dir);
    assert_int_equal(run(MAKE "HLS_DIR=%s PROFILE=stories260k %s", dir, path), 0);
    cfg = slurp(path, &n);
    assert_int_equal(lines_containing(cfg, "TSR_F32_URAM"), 0);
    assert_int_equal(lines_containing(cfg, "-DTSR_PROFILE_HEADER=<profiles/profile_stories260k.h>"), 2);
    free(cfg);
    unlink(path);
    rm_tree(dir);
}

/* The profile key of each synthesis profile says where its build puts the
 * PE arrays, and stories15m's choice leaves its memories, its DSPs and its
 * fabric under plan's ceiling on a U55C (75 % of what the shell leaves,
 * hw/parts.def; the shell's URAM share is not known). */
static void test_profile_key_memories(void **state)
{
    (void)state;
    assert_int_equal(run("'" TSR_BUILD_DIR "/hw/profile_kv_stories15m'"), 0);
    assert_int_equal(count_lines(out), 1);
    assert_true(!strncmp(out, "name=stories15m,", 16));
    assert_non_null(strstr(out, ",f32_uram=0,kv_uram=1,"));
    tsr_xprofile xp;
    tsr_err e;
    tsr_clearerr(&e);
    out[strcspn(out, "\n")] = 0;
    assert_int_equal(tsr_xprofile_parse(out, &xp, &e), TSR_OK);
    tsr_plan_res r;
    tsr_plan_profile_resources(&xp.k, &r);
    const tsr_part *u55c = tsr_part_find("u55c");
    assert_non_null(u55c);
    long need[TSR_FIT_R_COUNT] = { r.lut, r.ff, r.dsp, r.bram, r.uram };
    long have[TSR_FIT_R_COUNT] = { u55c->lut - u55c->shell_lut, u55c->ff - u55c->shell_ff,
                                   u55c->dsp - u55c->shell_dsp, u55c->bram36 - u55c->shell_bram36,
                                   u55c->uram };
    int over = -1;
    long by = 0;
    int fits = tsr_fit_judge(need, have, TSR_FIT_CEILING_PCT, &over, &by);
    if (!fits)
        print_error("stories15m as built: %s over the ceiling by %ld\n",
                    tsr_fit_resource_name(over), by);
    assert_true(fits);
    assert_int_equal(run("'" TSR_BUILD_DIR "/hw/profile_kv_stories260k'"), 0);
    assert_non_null(strstr(out, ",f32_uram=0,kv_uram=0,"));
}

/* ---------------------------------------------------- csim testbench ---- */

typedef struct tb_fixture {
    char image[64];      /* the testbench input, a temp file */
} tb_fixture;

static int tb_setup(void **state)
{
    tb_fixture *fx = calloc(1, sizeof *fx);
    if (!fx) return -1;
    strcpy(fx->image, "/tmp/tsr_hls_XXXXXX");
    int fd = mkstemp(fx->image);
    if (fd < 0) { free(fx); return -1; }
    close(fd);
    int st = run("'%s' '%s' '%s' 'Once upon a time' '%s'", IMAGER, SHARED_MODEL("stories260K.bin"),
                 SHARED_MODEL("tok512.bin"), fx->image);
    if (st != 0) {
        print_message("%s", out);
        unlink(fx->image);
        free(fx);
        return -1;
    }
    *state = fx;
    return 0;
}

static int tb_teardown(void **state)
{
    tb_fixture *fx = *state;
    unlink(fx->image);
    free(fx);
    return 0;
}

/* tessera_top on the stories260k profile, driven through its ring,
 * reproduces llama2.c's 196 tokens; and a short run for cosim. */
static void test_tb_matches_reference(void **state)
{
    tb_fixture *fx = *state;
    assert_int_equal(run("'%s' '%s' '%s'", TB, fx->image, REF), 0);
    assert_int_equal(lines_with("tb_tessera_top: PASS: 5 prompt + 196 decoded tokens match the "
                                "reference (profile stories260k, "), 1);
    assert_int_equal(lines_with("tb_tessera_top: last token: "), 1);
    assert_int_equal(count_lines(out), 2);
    // cosim's short run
    assert_int_equal(run("'%s' '%s' '%s' 3", TB, fx->image, REF), 0);
    assert_int_equal(lines_with("PASS: 5 prompt + 3 decoded tokens"), 1);
}

/* The testbench is Vitis csim's: the kernel sources in the csim view and
 * tessera_top, nothing of the emulator's runtime (emu/) or the driver's. */
static void test_tb_is_synthesis_view(void **state)
{
    (void)state;
    assert_int_equal(run("nm '%s'", TB), 0);
    /* the top (a local symbol in an executable built -fvisibility=hidden) */
    assert_int_equal(lines_with(" T tessera_top") + lines_with(" t tessera_top"), 1);
    assert_int_equal(lines_with("tsr_emu_"), 0);
    assert_int_equal(lines_with("tsr_kcmd_"), 0);
    assert_int_equal(lines_with("tsr_device_"), 0);
    size_t n;
    char *src = slurp(SRC "/tests/csim/tb_tessera_top.c", &n);
    /* it includes the kernel's interface header only */
    assert_int_equal(lines_containing(src, "#include \""), 1);
    assert_int_equal(lines_containing(src, "#include \"tsr_kernel.h\""), 1);
    free(src);
}

/* A reference with one token changed: the testbench fails and says where. */
static void test_tb_detects_mismatch(void **state)
{
    tb_fixture *fx = *state;
    size_t n;
    char *ref = slurp(REF, &n);
    // line 51 (index 50, decoded token 45): replace its id with 0
    char *p = ref;
    for (int i = 0; i < 50; i++) p = strchr(p, '\n') + 1;
    char *e = strchr(p, '\n');
    char expect[64];
    snprintf(expect, sizeof expect, "token 45 (position 50) is %.*s, reference 0", (int)(e - p), p);
    memset(p, ' ', (size_t)(e - p));
    p[0] = '0';
    char path[64];
    temp_file(path, ref, n);
    free(ref);
    assert_int_equal(run("'%s' '%s' '%s'", TB, fx->image, path), 1);
    assert_int_equal(lines_with(expect), 1);
    assert_int_equal(lines_with("tb_tessera_top: FAIL: 1 mismatch(es)"), 1);
    unlink(path);
}

/* A truncated image is refused, not run. */
static void test_tb_truncated_image(void **state)
{
    tb_fixture *fx = *state;
    size_t n;
    char *img = slurp(fx->image, &n);
    assert_true(n > 100000);
    char path[64];
    temp_file(path, img, n - 4096);
    free(img);
    assert_int_equal(run("'%s' '%s' '%s'", TB, path, REF), 1);
    assert_int_equal(lines_with("truncated at chunk"), 1);
    unlink(path);
}

/* ------------------------------ csim testbench, stories260k in Q8_0 ---- */

#define EMUREF    TSR_BUILD_DIR "/csim/tsr_csim_emuref"
#define TBQ8_N    196
#define TBQ8_POS  199   /* the last pass: the prompt's 5 tokens + 196 - 2 */

typedef struct tbq8_fixture {
    char dir[96];
    char image[160], tokens[160], logits[160];
    char cycles[32];     /* tessera plan's cycles/token at TBQ8_POS */
} tbq8_fixture;

/* stories260K in Q8_0 at group 32 (the driver's quantizer) for the
 * stories260k profile's 4 x 1 mesh, the generic emulator's tokens and
 * last logits on that mesh, and plan's cycles for the last token's
 * position (make csim-gcc's second run). */
static int tbq8_setup(void **state)
{
    tbq8_fixture *fx = calloc(1, sizeof *fx);
    if (!fx) return -1;
    snprintf(fx->dir, sizeof fx->dir, "%s/csim/tq8_XXXXXX", TSR_BUILD_DIR);
    if (!mkdtemp(fx->dir)) { free(fx); return -1; }
    snprintf(fx->image, sizeof fx->image, "%s/stories260k_q8.timg", fx->dir);
    snprintf(fx->tokens, sizeof fx->tokens, "%s/emu.tokens", fx->dir);
    snprintf(fx->logits, sizeof fx->logits, "%s/emu.logits", fx->dir);
    const char *model = SHARED_MODEL("stories260K.bin"), *tok = SHARED_MODEL("tok512.bin");
    int st = run("'%s' '%s' '%s' 'Once upon a time' '%s' 4 stories260k q8", IMAGER, model, tok,
                 fx->image);
    if (!st) st = run("'%s' '%s' '%s' 'Once upon a time' %d 1 '%s' '%s' emu:pes=4,cols=1,kvsplit=1",
                      EMUREF, model, tok, TBQ8_N, fx->tokens, fx->logits);
    if (!st) st = run("'" TESSERA_BIN "' plan -m '%s' --part u55c --profile stories260k --pes 4 "
                      "--pos %d", model, TBQ8_POS);
    const char *at = st ? NULL : strstr(out, "cycles/token at position 199: ");
    if (!at || sscanf(at + strlen("cycles/token at position 199: "), "%31[0-9]", fx->cycles) != 1) {
        print_message("%s", out);
        rm_tree(fx->dir);
        free(fx);
        return -1;
    }
    *state = fx;
    return 0;
}

static int tbq8_teardown(void **state)
{
    tbq8_fixture *fx = *state;
    rm_tree(fx->dir);
    free(fx);
    return 0;
}

/* The stories260k profile's Q8_0 tile (pe_tile_q8 at group 32, what
 * stories15m runs) in C simulation: tessera_top decodes the emulator's
 * 196 tokens, its last logits bit for bit, and the last token is charged
 * plan's cycles for its position (53,596); a figure one off fails. */
static void test_tb_q8_matches_emulator(void **state)
{
    tbq8_fixture *fx = *state;
    assert_string_equal(fx->cycles, "53596");
    assert_int_equal(run("'%s' '%s' '%s' 0 '%s' %s", TB, fx->image, fx->tokens, fx->logits,
                         fx->cycles), 0);
    assert_int_equal(lines_with("tb_tessera_top: PASS: 5 prompt + 196 decoded tokens match the "
                                "reference (profile stories260k, "), 1);
    assert_int_equal(lines_with("tb_tessera_top: logits: 1 x 512 bit-identical to "), 1);
    assert_int_equal(lines_with("tb_tessera_top: last token: 53596 cycles charged, "), 1);
    assert_int_equal(count_lines(out), 3);
    /* the image is Q8_0: its tokens part from the F32 run's (run.c's) */
    assert_int_not_equal(run("'%s' '%s' '%s'", TB, fx->image, REF), 0);
    /* a cycle figure that is not the code's */
    assert_int_equal(run("'%s' '%s' '%s' 0 '%s' 53597", TB, fx->image, fx->tokens, fx->logits), 1);
    assert_int_equal(lines_with("the last token's 53596 cycles are not plan's 53597"), 1);
}

/* ------------------------------------- csim testbench, stories15m ---- */

typedef struct tb15_fixture {
    char dir[96];        /* in the build folder: model, image, answers */
    char model[160], image[160], tokens[160], logits[160];
} tb15_fixture;

/* The synthetic Q8_0 stories15M (tessera synth), its testbench image for
 * the stories15m profile, and the stories15m emulator's tokens and logits
 * for it: TB15_N greedy tokens in TB15_K generate calls. */
static int tb15_setup(void **state)
{
    tb15_fixture *fx = calloc(1, sizeof *fx);
    if (!fx) return -1;
    snprintf(fx->dir, sizeof fx->dir, "%s/csim/t15_XXXXXX", TSR_BUILD_DIR);
    if (!mkdtemp(fx->dir)) { free(fx); return -1; }
    snprintf(fx->model, sizeof fx->model, "%s/stories15M_q8.bin", fx->dir);
    snprintf(fx->image, sizeof fx->image, "%s/stories15m.timg", fx->dir);
    snprintf(fx->tokens, sizeof fx->tokens, "%s/emu.tokens", fx->dir);
    snprintf(fx->logits, sizeof fx->logits, "%s/emu.logits", fx->dir);
    const char *tok = SHARED_MODEL("tokenizer.bin");
    int st = run("'" TESSERA_BIN "' synth --shape stories15M --q8 -o '%s'", fx->model);
    if (!st) st = run("'%s' '%s' '%s' 'Once upon a time' '%s' 0 stories15m q8", IMAGER, fx->model,
                      tok, fx->image);
    if (!st) st = run("'%s' '%s' '%s' 'Once upon a time' %d %d '%s' '%s'", EMUREF15, fx->model,
                      tok, TB15_N, TB15_K, fx->tokens, fx->logits);
    if (st != 0) {
        print_message("%s", out);
        rm_tree(fx->dir);
        free(fx);
        return -1;
    }
    *state = fx;
    return 0;
}

static int tb15_teardown(void **state)
{
    tb15_fixture *fx = *state;
    rm_tree(fx->dir);
    free(fx);
    return 0;
}

/* The image is the stories15m profile's whole mesh in Q8_0, too large to
 * write into the ring before the start; tessera_top in its synthesis view
 * decodes the emulator's tokens over the whole context (so both PEs of
 * each KV head hold positions) and returns its logits at eight positions,
 * every bit (DESIGN: the emulator's replacements are bit-identical to the
 * kernel loops).  At position 255 the code charges what plan projects for
 * the profile (40,168 cycles: with the SLR crossings' registers, TSR_SLRS,
 * and the decode step's cancel-word reads, TSR_D_HOSTRD).  The testbench holds no emulator code; the
 * answer's program does. */
static void test_tb15_matches_emulator(void **state)
{
    tb15_fixture *fx = *state;
    assert_int_equal(run("'%s' '%s' '%s' 0 '%s'", TB15, fx->image, fx->tokens, fx->logits), 0);
    assert_int_equal(lines_with("tb_tessera_top: PASS: 5 prompt + 251 decoded tokens match the "
                                "reference (profile stories15m, "), 1);
    assert_int_equal(lines_with(", ring served live)"), 1);
    assert_int_equal(lines_with("tb_tessera_top: logits: 8 x 32000 bit-identical to "), 1);
    assert_int_equal(lines_with("tb_tessera_top: last token: 40168 cycles charged, "), 1);
    assert_int_equal(count_lines(out), 3);
    assert_int_equal(run("nm '%s'", TB15), 0);
    assert_int_equal(lines_with(" T tessera_top") + lines_with(" t tessera_top"), 1);
    assert_int_equal(lines_with("tsr_emu_"), 0);
    assert_int_equal(run("nm '%s'", EMUREF15), 0);
    assert_true(lines_with("tsr_emu_") > 0);
}

/* One logit's lowest bit changed in the last checkpoint: the testbench
 * fails and names the pass; a token changed: it names the token. */
static void test_tb15_detects_mismatch(void **state)
{
    tb15_fixture *fx = *state;
    size_t n;
    char *lg = slurp(fx->logits, &n);
    assert_int_equal(n, (size_t)TB15_K * 32000u * 4u);
    lg[(size_t)(TB15_K - 1) * 32000u * 4u + 4u * 123u] ^= 1;
    char path[64];
    temp_file(path, lg, n);
    free(lg);
    assert_int_equal(run("'%s' '%s' '%s' 0 '%s'", TB15, fx->image, fx->tokens, path), 1);
    assert_int_equal(lines_with("logits of token 250 (position 255): 32000 words read, 1 of 32000 "
                                "differ from "), 1);
    assert_int_equal(lines_with("(first at 123, "), 1);
    assert_int_equal(lines_with("tb_tessera_top: FAIL: 1 mismatch(es)"), 1);
    unlink(path);
    // the last token's id, one more
    char *ref = slurp(fx->tokens, &n);
    char *last = ref + n - 1;
    while (last > ref && last[-1] != '\n') last--;
    int id = atoi(last);
    char expect[96];
    snprintf(expect, sizeof expect, "token 250 (position 255) is %d, reference %d", id, id + 1);
    snprintf(last, (size_t)(ref + n - last) + 1, "%d\n", id + 1);
    temp_file(path, ref, strlen(ref));
    free(ref);
    assert_int_equal(run("'%s' '%s' '%s' 0 '%s'", TB15, fx->image, path, fx->logits), 1);
    assert_int_equal(lines_with(expect), 1);
    unlink(path);
}

/* The synthetic stories15M's image alone (no emulator answer): for the
 * tests that need CONFIGURE's answer only. */
static int tb15_image_setup(void **state)
{
    tb15_fixture *fx = calloc(1, sizeof *fx);
    if (!fx) return -1;
    snprintf(fx->dir, sizeof fx->dir, "%s/csim/t15_XXXXXX", TSR_BUILD_DIR);
    if (!mkdtemp(fx->dir)) { free(fx); return -1; }
    snprintf(fx->model, sizeof fx->model, "%s/stories15M_q8.bin", fx->dir);
    snprintf(fx->image, sizeof fx->image, "%s/stories15m.timg", fx->dir);
    int st = run("'" TESSERA_BIN "' synth --shape stories15M --q8 -o '%s'", fx->model);
    if (!st) st = run("'%s' '%s' '%s' 'Once upon a time' '%s' 0 stories15m q8", IMAGER, fx->model,
                      SHARED_MODEL("tokenizer.bin"), fx->image);
    if (st != 0) {
        print_message("%s", out);
        rm_tree(fx->dir);
        free(fx);
        return -1;
    }
    *state = fx;
    return 0;
}

/* The stories15m profile builds SwiGLU at every second PE only
 * (TSR_W13_COLS 2: W13 takes 2 of the 8 x 4 mesh's columns).  The same
 * image with its CONFIGURE block saying a 32 x 1 mesh (W13 on one column,
 * a root at every PE): CONFIGURE answers TSR_K_ESHAPE, the kernel's own
 * check (tsr_kernel.c shape_unbuilt), and nothing is decoded.  The
 * driver refuses that mesh before it reaches the kernel, naming the
 * profile (tsr_wimage_check_profile). */
static void test_tb15_refuses_unbuilt_roots(void **state)
{
    tb15_fixture *fx = *state;
    size_t n;
    char *img = slurp(fx->image, &n);
    uint32_t w[3];
    memcpy(w, img, sizeof w);
    size_t cfg = 4u * (3u + w[2]);   /* after the magic, version, prompt */
    uint32_t rows = 32, cols = 1, was[2];
    memcpy(was, img + cfg + 4u * 11u, sizeof was);
    assert_int_equal(was[0], 8);     /* tsr_kconfig's mesh_rows, mesh_cols */
    assert_int_equal(was[1], 4);
    memcpy(img + cfg + 4u * 11u, &rows, 4);
    memcpy(img + cfg + 4u * 12u, &cols, 4);
    char path[160];
    snprintf(path, sizeof path, "%s/mesh32x1.timg", fx->dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(img, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
    free(img);
    char want[64];
    snprintf(want, sizeof want, "command 0 (CONFIGURE): status %d", TSR_K_ESHAPE);
    assert_int_equal(run("'%s' '%s' '%s' 3", TB15, path, REF), 1);
    assert_int_equal(lines_with(want), 1);
    assert_int_equal(lines_with("tb_tessera_top: FAIL: "), 1);
    // the 8 x 4 image as written: configured
    assert_int_equal(run("'%s' '%s' '%s' 3", TB15, fx->image, REF), 1);   /* 260K's tokens */
    assert_int_equal(lines_with("(CONFIGURE): status"), 0);
    // the driver's own refusal, before the kernel
    assert_int_equal(run("'%s' '%s' '%s' 'Once upon a time' '%s/x.timg' 0 stories15m q8 1",
                         IMAGER, fx->model, SHARED_MODEL("tokenizer.bin"), fx->dir), 1);
    assert_int_equal(lines_with("on a 32 x 1 mesh W13 splits over 1 mesh column, and the "
                                "stories15m profile builds its roots every 2 PEs only"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lint_kernels_pass),
        cmocka_unit_test(test_lint_good_fixture),
        cmocka_unit_test(test_lint_bad_fixture),
        cmocka_unit_test(test_lint_planted_typo),
        cmocka_unit_test(test_lint_usage),
        cmocka_unit_test(test_slr_floorplan),
        cmocka_unit_test(test_make_n_xclbin),
        cmocka_unit_test(test_make_n_xclbin_monitors),
        cmocka_unit_test(test_make_n_xclbin_hw_emu),
        cmocka_unit_test(test_make_bad_names),
        cmocka_unit_test(test_make_without_vitis),
        cmocka_unit_test(test_make_vitis_vocabulary),
        cmocka_unit_test(test_make_n_csim),
        cmocka_unit_test(test_link_configs),
        cmocka_unit_test(test_hls_checklist),
        cmocka_unit_test(test_hls_config),
        cmocka_unit_test(test_profile_key_memories),
        cmocka_unit_test(test_tb_is_synthesis_view),
        cmocka_unit_test_setup_teardown(test_tb_matches_reference, tb_setup, tb_teardown),
        cmocka_unit_test_setup_teardown(test_tb_detects_mismatch, tb_setup, tb_teardown),
        cmocka_unit_test_setup_teardown(test_tb_truncated_image, tb_setup, tb_teardown),
        cmocka_unit_test_setup_teardown(test_tb_q8_matches_emulator, tbq8_setup, tbq8_teardown),
        cmocka_unit_test_setup_teardown(test_tb15_matches_emulator, tb15_setup, tb15_teardown),
        cmocka_unit_test_setup_teardown(test_tb15_detects_mismatch, tb15_setup, tb15_teardown),
        cmocka_unit_test_setup_teardown(test_tb15_refuses_unbuilt_roots, tb15_image_setup,
                                        tb15_teardown),
    };
    return cmocka_run_group_tests_name("hls_flow", tests, NULL, NULL);
}
