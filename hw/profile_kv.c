/*
 * profile_kv.c - print the kernel profile a hardware build uses, as the one
 * line the xclbin carries in its KEYVALUE_METADATA (USER key
 * tessera_profile) and the XRT backend (driver/xclbin_meta.c) parses:
 *
 *   name=stories15m,pes=128,rows=128,cols=4,dim=288,...,row_slots=8
 *
 * Comma-separated key=value pairs, no colons (xclbinutil --add-key-value
 * splits USER:key:value at colons): every field of tsr_kprofile
 * (kernels/tsr_profile.def, in its order), so the host checks a model against the card's
 * own arrays and datapath.  Built on the host with the same profile header
 * as the kernel:
 *
 *   cc -Ikernels -DTSR_PROFILE_HEADER='"profiles/profile_stories15m.h"' \
 *      hw/profile_kv.c -o profile_kv
 *   xclbinutil --input K.xclbin --add-key-value \
 *      USER:tessera_profile:$(./profile_kv) --output K2.xclbin
 */
#include <stdio.h>

#include "tsr_kernel.h"

int main(void)
{
    const tsr_kprofile p = TSR_KPROFILE_INIT;
    printf("name=%s", TSR_PROFILE_NAME);
#define PF_PRINT_(member, key, macro, need) printf("," key "=%u", p.member);
    TSR_PROFILE_FIELDS(PF_PRINT_)   /* kernels/tsr_profile.def */
#undef PF_PRINT_
    printf("\n");
    return 0;
}
