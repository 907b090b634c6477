/*
 * tsr_link_loop.c - a one-card build's link partner: a free-running kernel
 * that hands every word tessera_top writes on link_out back to its link_in.
 *
 * tessera_top has two AXI4-Stream link ports for a model split over cards
 * in pipeline stages (docs/architecture.md, "Pipeline stages and links").
 * A card that holds the whole model never sends on them, but v++ -l still
 * needs both connected, and it refuses a stream_connect from a compute
 * unit to itself (UG1393, "Specifying Streaming Connections": an error
 * when the kernel drives itself).  The link configs (hw/link/<platform>.cfg)
 * connect link_out to this kernel's `in` and its `out` to link_in.
 *
 * Free-running (UG1393, "Free-Running Kernels"): no control interface
 * (ap_ctrl_none), no memory port; it starts when the xclbin is loaded, the
 * host never starts it, and it stalls while `in` is empty, so on one card
 * it costs a few hundred LUTs and FFs and no cycle of tessera_top's.  Each
 * restart of the body moves one 32-bit word (the ports' fp32 words: the
 * same TDATA width as tessera_top's, so the stream_connects match).
 *
 * Unverified until a first v++ -l (no Vitis here): UG1393 writes its
 * free-running examples with hls::stream arguments in C++; this one keeps
 * tessera_top's form, a volatile pointer a port (UG1399, "AXI4-Stream
 * Interfaces"), so that the whole kernel side stays C.  If v++ refuses a
 * pointer port on an ap_ctrl_none kernel, the same body over
 * hls::stream<float> is the fallback (docs/hls-flow.md, "Two cards").
 */
void tsr_link_loop(volatile const float *in, volatile float *out)
{
#pragma HLS INTERFACE axis port=in
#pragma HLS INTERFACE axis port=out
#pragma HLS INTERFACE ap_ctrl_none port=return
    *out = *in;
}
