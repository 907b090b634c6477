/*
 * pins.h - every public struct's layout as 0.3.0 has it on LP64 (x86-64,
 * aarch64): the offset of every field and each struct's size.  An X-macro
 * list, read by tests/test_abi.c and by tests/abi/pin_check.c (which
 * test_abi compiles against a copy of tessera.h with a planted field, and
 * which must then fail).  A change here is an ABI change: it needs a new
 * TSR_VERSION_MINOR (tessera.h, "Growing structs").
 *   X(struct, field, offset)   S(struct, sizeof)
 */
#ifndef TSR_TEST_ABI_PINS_H
#define TSR_TEST_ABI_PINS_H

#define TSR_ABI_PINS(X, S) \
    /* tsr_traffic */ \
    X(tsr_traffic, size, 0) \
    X(tsr_traffic, load_h2d, 8) \
    X(tsr_traffic, load_d2h, 16) \
    X(tsr_traffic, prefill_h2d, 24) \
    X(tsr_traffic, prefill_d2h, 32) \
    X(tsr_traffic, decode_h2d, 40) \
    X(tsr_traffic, decode_d2h, 48) \
    X(tsr_traffic, debug_h2d, 56) \
    X(tsr_traffic, debug_d2h, 64) \
    X(tsr_traffic, invocations, 72) \
    X(tsr_traffic, loads, 80) \
    X(tsr_traffic, link_prefill, 88) \
    X(tsr_traffic, link_decode, 96) \
    X(tsr_traffic, link_passes, 104) \
    X(tsr_traffic, reserved, 112) \
    S(tsr_traffic, 152) \
    /* tsr_pipeline */ \
    X(tsr_pipeline, size, 0) \
    X(tsr_pipeline, cards, 8) \
    X(tsr_pipeline, clock_mhz, 12) \
    X(tsr_pipeline, first_layer, 16) \
    X(tsr_pipeline, n_layers, 80) \
    X(tsr_pipeline, busy_cycles, 144) \
    X(tsr_pipeline, passes, 272) \
    X(tsr_pipeline, prefill_cycles, 400) \
    X(tsr_pipeline, prefill_tokens, 408) \
    X(tsr_pipeline, decode_cycles, 416) \
    X(tsr_pipeline, decode_tokens, 424) \
    X(tsr_pipeline, reserved, 432) \
    S(tsr_pipeline, 496) \
    /* tsr_model_opts */ \
    X(tsr_model_opts, size, 0) \
    X(tsr_model_opts, tokenizer, 8) \
    X(tsr_model_opts, weights_f32, 16) \
    X(tsr_model_opts, group_size, 20) \
    X(tsr_model_opts, seq_len, 24) \
    X(tsr_model_opts, n_seqs, 28) \
    X(tsr_model_opts, progress, 32) \
    X(tsr_model_opts, progress_user, 40) \
    X(tsr_model_opts, weights, 48) \
    X(tsr_model_opts, kv, 56) \
    X(tsr_model_opts, reserved, 64) \
    S(tsr_model_opts, 128) \
    /* tsr_model_info */ \
    X(tsr_model_info, size, 0) \
    X(tsr_model_info, dim, 8) \
    X(tsr_model_info, hidden_dim, 12) \
    X(tsr_model_info, n_layers, 16) \
    X(tsr_model_info, n_heads, 20) \
    X(tsr_model_info, n_kv_heads, 24) \
    X(tsr_model_info, vocab_size, 28) \
    X(tsr_model_info, seq_len, 32) \
    X(tsr_model_info, n_seqs, 36) \
    X(tsr_model_info, n_params, 40) \
    X(tsr_model_info, image_bytes, 48) \
    X(tsr_model_info, bos, 56) \
    X(tsr_model_info, eos, 60) \
    X(tsr_model_info, group_size, 64) \
    X(tsr_model_info, weights, 68) \
    X(tsr_model_info, kv, 164) \
    X(tsr_model_info, reserved, 176) \
    S(tsr_model_info, 240) \
    /* tsr_gen_opts */ \
    X(tsr_gen_opts, size, 0) \
    X(tsr_gen_opts, max_tokens, 8) \
    X(tsr_gen_opts, temperature, 12) \
    X(tsr_gen_opts, top_p, 16) \
    X(tsr_gen_opts, seed, 24) \
    X(tsr_gen_opts, ignore_stop, 32) \
    X(tsr_gen_opts, reserved, 40) \
    S(tsr_gen_opts, 104) \
    /* tsr_seq_stats */ \
    X(tsr_seq_stats, size, 0) \
    X(tsr_seq_stats, ttft_ms, 8) \
    X(tsr_seq_stats, decode_tok_s, 16) \
    X(tsr_seq_stats, prefill_tok_s, 24) \
    X(tsr_seq_stats, prefill_tokens, 32) \
    X(tsr_seq_stats, decode_tokens, 40) \
    X(tsr_seq_stats, prefill_h2d, 48) \
    X(tsr_seq_stats, prefill_d2h, 56) \
    X(tsr_seq_stats, decode_h2d, 64) \
    X(tsr_seq_stats, decode_d2h, 72) \
    X(tsr_seq_stats, invocations, 80) \
    X(tsr_seq_stats, reserved, 88) \
    S(tsr_seq_stats, 152) \
    /* tsr_chat_msg */ \
    X(tsr_chat_msg, size, 0) \
    X(tsr_chat_msg, role, 8) \
    X(tsr_chat_msg, content, 16) \
    X(tsr_chat_msg, reserved, 24) \
    S(tsr_chat_msg, 40) \
    /* tsr_file_info */ \
    X(tsr_file_info, size, 0) \
    X(tsr_file_info, format, 8) \
    X(tsr_file_info, dim, 56) \
    X(tsr_file_info, hidden_dim, 60) \
    X(tsr_file_info, n_layers, 64) \
    X(tsr_file_info, n_heads, 68) \
    X(tsr_file_info, n_kv_heads, 72) \
    X(tsr_file_info, vocab_size, 76) \
    X(tsr_file_info, seq_len, 80) \
    X(tsr_file_info, shared_classifier, 84) \
    X(tsr_file_info, group_size, 88) \
    X(tsr_file_info, file_bytes, 96) \
    X(tsr_file_info, n_params, 104) \
    X(tsr_file_info, params_embedding, 112) \
    X(tsr_file_info, bytes_embedding, 120) \
    X(tsr_file_info, params_attention, 128) \
    X(tsr_file_info, bytes_attention, 136) \
    X(tsr_file_info, params_ffn, 144) \
    X(tsr_file_info, bytes_ffn, 152) \
    X(tsr_file_info, params_norms, 160) \
    X(tsr_file_info, bytes_norms, 168) \
    X(tsr_file_info, params_classifier, 176) \
    X(tsr_file_info, bytes_classifier, 184) \
    X(tsr_file_info, architecture, 192) \
    X(tsr_file_info, tensors_f32, 208) \
    X(tsr_file_info, tensors_f16, 212) \
    X(tsr_file_info, tensors_q8_0, 216) \
    X(tsr_file_info, tensors_q4_0, 220) \
    X(tsr_file_info, onchip_q8_bytes, 224) \
    X(tsr_file_info, onchip_f32_bytes, 232) \
    X(tsr_file_info, onchip_weights, 240) \
    X(tsr_file_info, onchip_bytes, 336) \
    X(tsr_file_info, reserved, 344) \
    S(tsr_file_info, 408) \
    /* tsr_plan_opts */ \
    X(tsr_plan_opts, size, 0) \
    X(tsr_plan_opts, part, 8) \
    X(tsr_plan_opts, shape, 16) \
    X(tsr_plan_opts, weights_f32, 24) \
    X(tsr_plan_opts, group_size, 28) \
    X(tsr_plan_opts, kv, 32) \
    X(tsr_plan_opts, seq_len, 40) \
    X(tsr_plan_opts, pes, 44) \
    X(tsr_plan_opts, clock_mhz, 48) \
    X(tsr_plan_opts, step, 52) \
    X(tsr_plan_opts, cards, 56) \
    X(tsr_plan_opts, profile, 64) \
    X(tsr_plan_opts, cols, 72) \
    X(tsr_plan_opts, kv_split, 76) \
    X(tsr_plan_opts, weights, 80) \
    X(tsr_plan_opts, max_util, 88) \
    X(tsr_plan_opts, reserved, 96) \
    S(tsr_plan_opts, 152)

#endif
