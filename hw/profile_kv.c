/*
 * profile_kv.c - print the kernel profile a hardware build uses, as the one
 * line the xclbin carries in its KEYVALUE_METADATA (USER key
 * tessera_profile) and the XRT backend (driver/xclbin_meta.c) parses:
 *
 *   name=stories15m,pes=128,rows=128,cols=4,dim=288,...,row_slots=8
 *
 * Comma-separated key=value pairs, no colons (xclbinutil --add-key-value
 * splits USER:key:value at colons): every field of tsr_kprofile
 * (kernels/tsr_kernel.h), so the host checks a model against the card's
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
    printf("name=%s,pes=%u,rows=%u,cols=%u,dim=%u,hidden=%u,layers=%u,heads=%u,kv_heads=%u,"
           "head_size=%u,vocab=%u,seq=%u,slots=%u,group_min=%u,group_max=%u,sum_lanes=%u,"
           "kv_split_max=%u,att_pes=%u,with_f32=%u,w8_words=%u,f32_words=%u,kv_words=%u,pe_rows=%u,att_words=%u,"
           "f32_uram=%u,kv_uram=%u,lanes=%u,vec=%u,row_slots=%u,block=%u,with_q4=%u,kvh_words=%u,"
           "kvq_bytes=%u,kvs_words=%u\n",
           TSR_PROFILE_NAME, p.pes, p.mesh_rows, p.mesh_cols, p.dim, p.hidden, p.layers, p.heads,
           p.kv_heads, p.head_size, p.vocab, p.seq, p.slots, p.group_min, p.group_max,
           p.sum_lanes, p.kv_split_max, p.att_pes, p.with_f32, p.w8_words, p.f32_words, p.kv_words,
           p.pe_rows, p.att_words, p.f32_uram, p.kv_uram, p.lanes, p.vec, p.row_slots, p.block,
           p.with_q4, p.kvh_words, p.kvq_bytes, p.kvs_words);
    return 0;
}
