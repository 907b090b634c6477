/*
 * fuzz_devspec.c - libFuzzer harness for the device-spec parser
 * (driver/devspec.c): the input is the spec string.  A spec either parses
 * into fields that hold their documented ranges or fails with a one-line
 * message.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "devspec.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096) return 0;
    char *spec = fuzz_string(data, size);
    tsr_devspec d;
    tsr_err e = {0};
    if (tsr_devspec_parse(spec, &d, &e) == TSR_OK) {
        assert(!strcmp(d.backend, "emu") || !strcmp(d.backend, "xrt"));
        assert(d.pes >= 0 && d.pes <= 1 << 16 && d.threads >= 0 && d.threads <= 1024);
        assert(d.index >= 0 && d.index <= 255);
        assert(d.batch >= 0 && d.batch <= 8);
        assert(memchr(d.part, 0, sizeof d.part) && memchr(d.xclbin, 0, sizeof d.xclbin));
    } else {
        assert(e.msg[0] && !strchr(e.msg, '\n'));
    }
    free(spec);
    return 0;
}
