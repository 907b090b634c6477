/*
 * profile_kv.c - print the kernel profile a hardware build uses, as the one
 * line the xclbin carries in its KEYVALUE_METADATA (USER key
 * tessera_profile) and the XRT backend (driver/xclbin_meta.c) parses:
 *
 *   name=stories15m,pes=16,rows=16,cols=4,dim=288,...,f32_words=131072
 *
 * Comma-separated key=value pairs, no colons (xclbinutil --add-key-value
 * splits USER:key:value at colons).  Built on the host with the same
 * profile header as the kernel:
 *
 *   cc -Ikernels -DTSR_PROFILE_HEADER='"profiles/profile_stories15m.h"' \
 *      hw/profile_kv.c -o profile_kv
 *   xclbinutil --input K.xclbin --add-key-value \
 *      USER:tessera_profile:$(./profile_kv) --output K2.xclbin
 */
#include <stdio.h>

#include "tsr_profile.h"

int main(void)
{
    printf("name=%s,pes=%u,rows=%u,cols=%u,dim=%u,hidden=%u,layers=%u,heads=%u,kv_heads=%u,"
           "head_size=%u,vocab=%u,seq=%u,slots=%u,group_min=%u,group_max=%u,i8_bytes=%u,"
           "f32_words=%u\n",
           TSR_PROFILE_NAME, (unsigned)TSR_MAX_PES, (unsigned)TSR_MAX_MESH_ROWS,
           (unsigned)TSR_MAX_MESH_COLS, (unsigned)TSR_MAX_DIM, (unsigned)TSR_MAX_HIDDEN,
           (unsigned)TSR_MAX_LAYERS, (unsigned)TSR_MAX_HEADS, (unsigned)TSR_MAX_KV_HEADS,
           (unsigned)TSR_MAX_HEAD_SIZE, (unsigned)TSR_MAX_VOCAB, (unsigned)TSR_MAX_SEQ,
           (unsigned)TSR_MAX_SLOTS, (unsigned)TSR_MIN_GROUP, (unsigned)TSR_MAX_GROUP,
           (unsigned)TSR_PE_I8_BYTES, (unsigned)TSR_PE_F32_WORDS);
    return 0;
}
