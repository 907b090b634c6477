/*
 * fuzz_xclbin.c - libFuzzer harness for the xclbin reader
 * (driver/xclbin_meta.c), which checks an xclbin before XRT touches it.
 * The input is the whole file, read through a path; the tessera_profile
 * parser also gets the input as text.  Every failure must be a status with
 * a one-line message.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "xclbin_meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size);
    if (path) {
        tsr_xmeta m;
        tsr_err e = {0};
        if (tsr_xmeta_read(path, "tessera_top", &m, &e) == TSR_OK) {
            assert(m.n_args >= 0 && m.n_args <= TSR_XMETA_MAX_ARGS);
            (void)tsr_xmeta_arg(&m, "cancel");
        } else {
            assert(e.msg[0] && !strchr(e.msg, '\n'));
        }
    }
    if (size < 4096) {
        char *text = fuzz_string(data, size);
        tsr_xprofile p;
        tsr_err e = {0};
        if (tsr_xprofile_parse(text, &p, &e) != TSR_OK) assert(e.msg[0] && !strchr(e.msg, '\n'));
        free(text);
    }
    return 0;
}
