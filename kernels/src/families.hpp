// Entry points of the implementation families (one .cpp each), wired into the registry.
// Kernels here are unchecked: normbench::forward() validates before calling them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "normbench/normbench.hpp"

namespace normbench::detail {

// Throws Error naming `what` unless p is a multiple of align (a power of two: an element size).
void check_aligned(const void* p, std::size_t align, const char* what);
// Whether [a, a + a_bytes) and [b, b + b_bytes) share a byte; the second form with equal lengths.
bool ranges_overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes);
bool ranges_overlap(const void* a, const void* b, std::size_t bytes);
// Whether they share a byte without being the same range (a == b: in place, elementwise).
bool partially_overlaps(const void* a, const void* b, std::size_t bytes);

void naive_forward(const Problem& p, const Buffers& b, const RunConfig& cfg);
void welford_forward(const Problem& p, const Buffers& b, const RunConfig& cfg);
void fused_forward(const Problem& p, const Buffers& b, const RunConfig& cfg);

// Highway: rows [row_begin, row_end) on the best target this CPU supports (or the one a test
// forced with hwy::SetSupportedTargetsForTest).
// stream: write y with non-temporal stores (see streaming_stores).
void highway_rows(const Problem& p, const Buffers& b, std::int64_t row_begin, std::int64_t row_end, bool stream);
void highway_forward(const Problem& p, const Buffers& b, const RunConfig& cfg);
void highway_f64_forward(const Problem& p, const Buffers& b, const RunConfig& cfg);
std::string highway_target();
// The CPU has AVX512-BF16 and set_hardware_bf16_rounding allows it (the AVX-512 targets check it).
bool use_hardware_bf16_rounding();
// One chunk (chunked_stats.hpp) of one row, with the highway kernel's arithmetic: statistics
// (LayerNorm mean and M2, RMSNorm sum of squares in m2) and the apply step over [begin, end).
// stream: the call writes y with non-temporal stores (the read then prefetches ahead where
// prefetch_long_rows_ahead says so).
void highway_chunk_stats(const Problem& p, const Buffers& b, std::int64_t row, std::int64_t chunk, double* mean,
                         double* m2, bool stream);
// GroupNorm units [u_begin, u_end) (see normbench::units), each computed whole.
void highway_group_units(const Problem& p, const Buffers& b, std::int64_t u_begin, std::int64_t u_end, bool stream);
// h = x + residual over [begin, end) of one row (Problem::residual_add).
void highway_add_range(const Problem& p, const Buffers& b, std::int64_t row, std::int64_t begin, std::int64_t end);
void highway_apply_range(const Problem& p, const Buffers& b, std::int64_t row, std::int64_t begin, std::int64_t end,
                         double mean, double rstd, bool stream);

// Whether y should bypass the caches: cfg.stores, or under kAuto, when the output alone is larger
// than or equal to half the last-level cache (x and y together no longer fit: cached stores
// would evict x and be written back anyway). Measured f32 16384x4096 LayerNorm 1 thread:
// 14.2 -> 22.0 GB/s; bf16 1024x4096 (y 8 MiB) 13% slower streaming, hence not for smaller y.
// Nor for rows or GroupNorm units shorter than a cache line: each line then holds parts of two
// rows, written partly streaming and partly cached (the peel), which stalls: f16 1048576x24 took
// 3x as long streaming as cached (96-byte rows measured the same either way). The last-level cache
// counts at most kMaxStoreRuleCacheBytes (a VM's share of a large socket's L3; 32 MiB on Ice
// Lake-SP, max_store_rule_cache_bytes), and on
// Skylake-server Xeons LayerNorm and RMSNorm rows of up to 64 KiB stay cached
// (auto_streaming_stores in cache_info.cpp).
bool streaming_stores(const Problem& p, const RunConfig& cfg);

// The fewest rows that any of the multi-row rules below takes (triple_short_layernorm_rows,
// pipeline_short_rows, the block rules): highway asks none of them for calls of fewer rows. The
// three out-of-line calls had taken 2.5% of a one-row call (f32 LayerNorm 1x768, perf record). Two
// binaries, ABBA, 8 rounds, 1 thread (Zen 4): one-row LayerNorm f32 0.97-1.00 (1x4096 1.03), bf16
// 0.96-0.99 of the time before (PERFORMANCE-LOG.md, "One-row calls skip the multi-row rules").
inline constexpr std::int64_t kMinRowsOfMultiRowRules = 3;

// Whether highway interleaves two rows at a time for `rows` rows of p: only short rows (<= 4 KiB)
// whose x and y fit in L2. Interleaved A/B (f32 and bf16, 1 thread): 128x768 and 128x1024 10-12%
// faster; 128x2048 13-17% and L3-resident 2048x1024 8% slower, so not there.
bool interleave_short_rows(const Problem& p, std::int64_t rows);
// Whether highway's f32 compute runs LayerNorm rows three at a time.
// Rows of 16-bit data (bf16, f16): short rows (<= 4 KiB), wherever they reside. Converting every
// vector in and out, with half the bytes of f32, such rows are bound by compute rather than cache
// traffic, and a third interleaved row hides more of each row's chain (statistics, rstd, apply).
// Interleaved A/B on the Zen 5 VM, 1 thread, medians of 4-8 paired rounds, triples against pairs
// (L2) or single rows (beyond L2): bf16 5x768 to 171x768 5-11%, 256x512 11%, 128x1024 6% faster,
// 128x1000 2%; f16 64x768 5%, 256x512 11% faster, 128x1000 4% slower; L3 bf16 4096x768 12%,
// 2048x1024 14%, 4096x1024 17% faster (8 rounds), 4 KiB rows the same (2048x2048 1.01, 1024x2048
// 0.98); DRAM bf16 21845x768 26%, 16384x1024 17%, 43691x768 10%, 87381x768 7% faster, f16 6-22%,
// 2 threads 10-22%. Not f64 compute (highway-f64 the same to 13% slower).
// With cached stores, only while the call's x and y take at most 3/8 of the last-level cache
// (12 MiB of 32; call_within_cached_share). Beyond that, where the next rows' reads and the
// write-allocate reads of y's lines come from memory, three rows at once measured up to twice as
// slow as single rows on the Zen 4 VM (32 MiB L3 shared with other tenants): normbench, one build
// toggled at run time, ABBA, pinned, 1 thread, 6 rounds, medians of the per-round ratio of the
// time to the same run's stream-scale time, single rows over triples: bf16 5461x768 (16 MiB)
// 0.63, 8192x768 0.61, 10922x768 0.59, f16 0.61-0.73; 4096x768 (12 MiB) stays triples (0.97-1.05
// unchanged, where a microbenchmark had read triples 11% faster); with --stores cached in DRAM
// bf16 21845x768 0.60, 43691x768 0.48.
// f32 rows: only where the call's x and y fit in L1 together. There a row costs its chain's
// latency (the shift's sample, two reductions, the one-read test, rstd), not cache traffic; from
// L2 on, triples lose (64x768 13%, 128x1000 28%, L3 4096x768 44% slower). Zen 5 VM (48 KiB L1),
// two normbench builds pinned to one CPU, ABBA, 8 rounds, medians of the per-round time ratio,
// triples against pairs and a lone row: 3x768 0.85, 3x1000 0.86, 3x1024 0.90, 4x768 0.94, 5x768
// 0.92, 6x1024 0.85, 7x768 0.88, 8x768 0.95; 9x768 and 11x768, beyond L1, stay pairs (a
// microbenchmark of the row loop read triples there 0.91 and 1.03, 13x768 1.10). On a 16-core
// Xeon (family 6, model 207, 48 KiB L1), the same A/B, 14 rounds: 3x768 0.92, 3x1000 0.84, 3x1024
// 0.86, 5x768 0.91, the other shapes 0.98-1.01.
// Not RMSNorm, whose chain is shorter: 16-bit rows -8% to +6%; f32 in the same A/B (triples for
// every short f32 row count) 3x768 0.96, 3x1024 and 6x1024 0.92, but 4x768 1.10, 7x768 1.07,
// 8x768 1.06. f32 LayerNorm calls of 4 rows or more with gamma and beta run pipelined instead
// (pipeline_short_rows), so for them the triples now serve 3-row calls.
bool triple_short_layernorm_rows(const Problem& p, std::int64_t rows, bool stream);

// Whether highway runs rows with f32 compute (LayerNorm with gamma and beta, RMSNorm with gamma;
// cached stores) software-pipelined, each row's apply step in one loop with the next row's
// statistics read: rows of at most 8 KiB, LayerNorm calls of 4 rows or more (three stay triples),
// RMSNorm 3 or more; f32 rows of any length up to that, 16-bit rows as below.
// Zen 5 VM, one normbench build toggled at run time, ABBA, pinned, 1 thread, medians of the
// per-round ratio of the time to the same run's stream-scale time, pipelined against pairs,
// triples and lone rows: LayerNorm (8 rounds) 5x768 0.80, 11x768 to 85x768 0.71-0.72, 128x768
// 0.74, 128x1024 0.73, 171x768 to 1365x768 0.79-0.86, 128x1000 0.84, 128x1025 0.88, 128x2048
// 0.85, L3-resident 2048x768 0.90, 2731x768 0.96, 2048x1024 0.99; RMSNorm (6 rounds) 5x768 0.95,
// 11x768 to 128x768 0.67-0.79, 128x1024 0.81, 171x768 to 1365x768 0.87-0.92, 128x2048 0.89,
// 2048x768 0.91, 2731x768 and 2048x1024 0.95-0.99. `threaded` at 2 threads (6 rounds, unpinned):
// LayerNorm 0.74-0.98, RMSNorm 0.73-1.03 (128x2048). A microbenchmark of the row loop (pinned,
// ABBA, 4 rounds) read LayerNorm 4096x64 0.76, 2048x256 0.68, 16x2048 0.75, 64x4096 1.00 (rows of
// 10-12 KiB 0.83-0.84, not measured in normbench: left out), and slower where few rows leave
// little to overlap: 2x768 1.09, 3x768 1.12, 3x1024 1.09 (LayerNorm; triples stay), RMSNorm 2x768
// 1.04 (a pair stays), 3x768 0.94.
// bf16 and f16 rows (f32 compute) only where they are longer than 4 KiB (up to 8 KiB) and the
// call's x and y fit L2. One normbench build toggled at run time (an environment variable of the
// same length on both sides: an unequal one had shifted even unchanged shapes by up to 14%),
// ABBA, pinned, 1 thread, 8 rounds, medians of the per-round ratio of the time to the same run's
// stream-scale time, pipelined over before: LayerNorm 4x4096 0.87-0.89, 16x4096 0.81-0.90,
// 64x4096 0.86-0.93, 16x3000 0.90-0.93; RMSNorm 3x4096 0.88-0.90, 4x4096 to 64x4096 0.89-0.92,
// 16x3000 0.90; outside the rule 2x4096, LayerNorm 3x4096 and 128x4096 read 0.98-1.06.
// `threaded` at 2 threads (6 rounds, unpinned): 8x4096 to 128x4096 0.77-1.00, 2x4096 0.99-1.02.
// Shorter 16-bit rows gain nothing (their apply step's conversions, not the chain, bound them): a
// microbenchmark of the row loop read LayerNorm 4x768 to 128x1024 0.98-1.04, RMSNorm 4x768 to
// 128x768 1.02-1.09, 64x2048 0.84-0.98 (normbench, unequal environments: 0.98-1.02), RMSNorm bf16
// 128x2048 0.88 (not taken: 16x2048 and 64x2048 0.98); and beyond L2 the next row's statistics
// read waits on L3 (pairs and triples prefetch the next rows in their apply step): LayerNorm bf16
// 256x4096 1.07, 512x4096 1.05, 1024x4096 1.44.
// f32 calls only while their x and y take at most 3/8 of the last-level cache (as the triples
// above): beyond that the next row's statistics read and y's write-allocate reads contend in one
// loop. Zen 4 VM, the same A/B as the triples', single rows and pairs over pipelined: LayerNorm
// 2731x768 (16 MiB) 0.84, 4096x768 0.64; RMSNorm 0.80 and 0.58; 1365x768 and 2048x768 (within
// the share, unchanged) 0.94-1.01; with --stores cached in DRAM 21845x768 and 43691x768
// LayerNorm 0.89 and 0.86, RMSNorm 0.79 and 0.75. (On the Zen 5 VM, above, 2731x768 had read
// 0.95-0.99 pipelined.)
// And f32 calls beyond L2 only where the loop's rows (x and y of one, x of the next) and the
// parameters fit L1 (pipelined_rows_fit_l1): on the Zen 4 VM (32 KiB L1) LayerNorm 128x2048
// (40 KiB touched at once) took 1.31x as long pipelined as in single rows (RMSNorm, 32 KiB:
// 1.04); 171x768 to 683x768 pipelined 0.92-0.93 (RMSNorm 0.84-0.93) of the time in single rows
// and pairs (the same A/B, 5 rounds). With a 48 KiB L1 (Zen 5) 128x2048 stays pipelined (0.85).
bool pipeline_short_rows(const Problem& p, std::int64_t rows);

// LayerNorm rows (with gamma and beta) longer than 4 KiB whose x and y and the parameters
// overflow L1, so that each row's apply step re-read gamma and beta from L2:
// block_long_layernorm_rows: 3 rows or more that stay cached (x + y below the last-level cache,
// where the auto store policy does not stream): highway computes the statistics of blocks of up
// to 8 rows, then applies them column block by column block, each block of gamma and beta to
// every row of the block while it is in L1 (see BlockedRows). Interleaved A/B against pairs, Zen 5
// VM, 1 thread, 4 rounds: f32 8x4096 15%, 16x4096 14%, 64x4096 17%, 128x4096 17%, 128x5120 17%,
// 128x8192 20%, 8x16384 14%, 512x4096 12% faster; bf16 128x5120 11%, 128x8192 15%, 128x16384
// 16%; f16 128x8192 16%; f64 3x4096 9%, 256x4096 13% faster; 2 threads f32 5-15% faster.
// interleave_long_layernorm_rows: two rows at a time where fewer rows stay cached, and in DRAM
// where one row's x and gamma and beta overflow L1 together (see its definition), so that a pair
// reads the parameters once. Interleaved A/B, 1 thread, 4 rounds: f32 8x4096 10%, 2048x16384
// 13%, bf16 2048x16384 15% faster than single rows; not for bf16 4096-column rows in DRAM on
// Zen 5 (4-12% slower: x and the parameters, 40 KiB, fit its 48 KiB L1; f32's 48 KiB fill it
// and go in pairs, 2-10% faster, see its definition), where an early Zen 4 A/B had found bf16
// 2048x4096 7% slower too (before most of the present kernels; now 4% faster there, in every
// round); nor where no L1 overflow (f32 128x2048: the same), nor for RMSNorm, whose apply step
// reads gamma only (pairs: f32 64x4096 19% and 256x2048 14% slower; blocks: 4x4096 and 8x4096
// 11-17% slower, 128x8192 18% faster).
// On Intel, blocks only where the call (each thread's rows) has at most 4 of them, or where a
// block's x and y and the next block's x (3 * kBlockRows rows) fit L2.
// Cascade Lake VM (1 MiB L2, 32 KiB L1), one build toggled at run time, 6 rounds in rotating
// order, medians of the per-round ratio of the time to the same run's stream-scale time, without
// blocks (pairs) over blocks, 1 thread (`highway`, `threaded`) and 2 (`threaded`): f32 128x16384
// (1.5 MiB held) 0.74-0.81, 128x8192 (768 KiB) 0.90-0.93; f64 128x8192 0.71-0.87, 128x4096
// 0.87-0.95; bf16 128x16384 0.89-0.97; f16 128x16384 0.84-1.06. Blocks stay: f32 8x4096
// 1.08-1.29, 32x4096 1.06-1.07, 128x5120 (480 KiB) 1.00-1.07, 512x4096 0.94-1.07, 8x16384 (one
// block) 1.00-1.14; f64 32x2048 1.10-1.24, 128x2048 1.04-1.11, 32x4096 (4 blocks) 1.04-1.07; f16
// 128x4096 0.98-1.10, 128x8192 1.01-1.17. (bf16 rows that keep blocks read 0.82-1.05 without
// them: most faster, 128x8192 and 5120 mixed; not taken on this evidence.) Unchanged shapes in
// the same runs: 0.92-1.11. Two binaries (blocks beyond half of L2 off), ABBA, 4 rounds, new over
// old: f32 128x16384 0.72-0.76 (4/4 rounds), f64 128x8192 0.77-0.82, 128x16384 0.84-0.87; but
// the 768 KiB shapes level or slower (f32 128x8192 0.97-1.01, f64 128x4096 1.01-1.07; unchanged
// shapes 0.90-1.10): so the limit is L2, not half of it.
inline constexpr std::int64_t kBlockRows = 8;
bool block_long_layernorm_rows(const Problem& p, std::int64_t rows);
// pipeline_blocked_layernorm_rows: on Intel, rows with f32 compute (f32, bf16, f16) that the block
// rule takes go software-pipelined instead (PipelinedRows: each row's apply step in one loop with
// the next row's statistics read)
// where the call's x and y overflow L2 but stay within the share of the last-level cache that
// pipeline_short_rows asks for. Blocks read 8 rows' statistics from L3 in one stream and then
// apply them from L2; pipelined, each loop reads the next row from L3 while it writes this one.
// Sapphire Rapids VM (2 MiB L2, 105 MiB L3), one build toggled at run time, 6 rounds in ABBA
// order, 3 repetitions each, medians of the per-round ratio pipelined over blocks (time; time
// over the same run's stream-scale time), 1 thread, `highway` / `threaded`: 128x16384 0.79-0.83
// (0.84-0.86), oneDNN over highway 1.22 -> 1.56; 128x8192 0.94-0.96 (0.92-0.95); 128x5120
// 0.95 (0.94-0.95); 128x4097 0.89-0.90 (0.86-0.87); 128x4096 0.92-0.95 (0.96-0.99); 512x4096
// 0.90-0.91 (0.98-0.99); 2 threads 0.93-1.02 (0.86-1.12, rounds 0.64-1.34). Calls within L2 keep
// blocks (unchanged in the same runs: 8x4096 0.96-0.98, 32x4096 1.02-1.03, 64x4096 1.03); calls
// beyond the share too (2048x4096 pipelined 1.03-1.04). 16-bit rows had read 0.67-1.06 in rounds
// of 0.5-1.7 there, not clear enough to take; on a quiet host of 480 MiB of L3 (2026-12-04) they
// were: one build toggled at run time, 6 rounds in ABBA order, 3 repetitions each, medians of the
// per-round time ratio pipelined over blocks, `highway` 1 thread / `threaded` 2 threads: bf16
// 128x8192 0.89 / -, 128x16384 0.88 / 0.87, 256x16384 0.83 / 0.87, 512x8192 0.90 / 0.91,
// 1024x8192 0.85 / 0.87, 2048x5120 0.91 / 0.87, 128x5120 0.98 / -; f16 0.79-0.85 at every one of
// those but 128x5120 (0.92); unchanged in the same runs (blocks within L2 per thread, or streamed):
// 32x8192 1.00-1.04, 128x8192 and 128x5120 at 2 threads 0.97-1.13 (rounds 0.91-1.66), 2048x8192
// 0.99-1.00. An earlier A/B of 6 rounds on the same host, blocks against pipelined and against
// pairs: bf16 128x16384 0.85 and 0.93, 128x8192 0.88 and 0.92, 2048x5120 0.89 and 0.88, 128x5120
// 0.95 and 0.89 of the blocks' time.
bool pipeline_blocked_layernorm_rows(const Problem& p, std::int64_t rows);
bool interleave_long_layernorm_rows(const Problem& p, std::int64_t rows);
// block_long_f32_rows_in_f64: the same blocks for highway-f64 on f32 rows (f64 compute), on Intel
// only. Its apply step is bound by the f64 arithmetic and conversions, and with the parameters
// widened to f64 (twice their f32 bytes) a pair of 4096-float rows re-reads 64 KiB of gamma and
// beta from L2 each time: an L1-resident microbenchmark of the f32-in-f64 apply step took 0.60
// cycles a value on 768-float rows and 0.96 on 4096-float ones. Emerald Rapids VM, one build
// toggled at run time, 8 rounds in alternating order, medians of the per-round ratio of the share
// of the stream-scale time, blocks over pairs, 1 thread: 8x4096 0.89, 64x4096 0.78, 128x4096 0.79,
// 128x8192 0.94, 512x4096 0.95; beyond 64 MiB (which this VM's 300 MiB L3 counts as cached)
// 2048x4096 0.89, 2048x5120 0.92, 2048x8192 0.91, 4096x4096 and 8192x4096 0.96 (rounds 0.74-1.33);
// the unaffected 10923x768 in the same runs 1.11 (0.86-1.65). Not on AMD: a Zen VM had read the
// f32 rows mixed (bf16 4-8% slower, which stays in pairs everywhere).
// Its L1 test counts gamma and beta at f64 width, so that rows of 2049-3072 floats block too
// (48 KiB L1; they had run one at a time): one build toggled at run time, 8 and 10 rounds, then
// two binaries, 8 rounds, new over old: 16x3072 0.88, 0.69, 0.90; 128x3072 0.92, 0.95, 0.79;
// 1024x3072 0.89, 0.90, 0.86; 4096x3072 0.79; 128x2560 0.96, 0.91, 0.94; 2048x2560 0.91. Rows of
// exactly 2048 floats, whose x and y and f64 parameters fill L1 exactly, read 0.92-1.05 over
// 64-4096 rows and stay one at a time (the test is strict); unchanged controls 0.97-1.09.
// RMSNorm rows too, their f64 gamma alone counted (rows over 3072 floats; they had run one at a
// time; `highway`'s f32 RMSNorm blocks had measured mixed, and it keeps its rows): one build
// toggled at run time, two A/Bs of 10 rounds, blocks over single rows: 8x4096 0.78, 0.86; 32x4096
// 0.81; 64x4096 0.87, 0.85; 128x4096 0.96, 1.00; 512x4096 0.98, 1.01; 128x8192 0.96, 0.93;
// 2048x8192 0.91, 0.95; 4096x4096 1.00, 0.96; 2048x4096 1.12 (rounds 0.79-1.61), 0.90; 128x5120
// 1.01; controls (128x2048, 1024x768) 0.99-1.02. Two binaries, 6 rounds, new over old: 8x4096
// 0.76, 32x4096 0.77, 64x4096 0.82, 128x4096 0.94, 2048x4096 0.90, 128x8192 0.99, 2048x8192 0.90;
// 1024x768 0.99.
bool block_long_f32_rows_in_f64(const Problem& p, std::int64_t rows);

// Whether highway's LayerNorm rows longer than one chunk (chunked_stats.hpp) prefetch the next
// row during each row's apply step, as RMSNorm's do, where they are written with streaming stores
// (DRAM-sized calls; the caller asks only then): only on Intel, and where the row, the next one
// and gamma and beta fit L2 (up to 1/16 over: two rows of 65537 f32 columns and their parameters
// overflow 1 MiB by 16 bytes), and take at most 1.5 MiB.
// Cascade Lake VM (1 MiB L2, 35.75 MiB L3), one build toggled at run time, ABBA, 6 rounds, medians
// of the per-round ratio of the time to the same run's stream-scale time, with / without, 1
// thread (`highway`, `threaded`) and 2 (`threaded`). Streamed, within the rule: f32 128x65537
// 0.90-0.97, 256x65536 0.90-0.92, 256x40000 0.83-0.87, 128x40000 0.79-0.88; bf16 256x65536
// 0.87-0.90, 256x40000 0.84-0.86; highway-f64 0.86-0.96. Streamed, beyond it: f32 96x80000
// 0.98-1.01, 96x100000 0.95-1.07, 64x131072 1.02-1.09, 32x262144 1.05-1.16. Cached stores (in L3
// or just beyond): 8x65536, 16x40000 and bf16 96x80000 0.96-1.16, bf16 128x40000 and 128x65537
// 0.91-1.04: not taken. A Zen 4 VM had measured the prefetch slower at 128x65537 (see
// highway_rows-inl.h's long rows): AMD keeps them without it.
// Emerald Rapids VM (2 MiB L2), one build toggled at run time, 6 rounds in alternating order,
// medians of the per-round ratio of the share of the stream-scale time, without / with, f32:
// within 1.33 MiB held it pays (1 thread 256x65536 1.32, 256x40000 1.24, 128x65537 1.09-1.17,
// 96x87382 1.09-1.12; 2 threads 1.06-1.28), at 1.6 MiB (80x104858) it is level (1.01-1.03) and at
// 2 MiB (64x131072, inside 17/16 of this L2) it costs (0.78-0.97): hence the 1.5 MiB cap. bf16
// level throughout (0.97-1.13).
bool prefetch_next_long_layernorm_row(const Problem& p);

// Whether highway's 16-bit RMSNorm rows of 8 KiB or more written with streaming stores prefetch
// the next rows during their statistics read too (kRmsPrefetchInStats in highway_rows-inl.h,
// measured faster on AMD): not on Intel. Emerald Rapids VM, one build toggled at run time, 12
// rounds in rotating order, medians of the per-round ratio of the share of the stream-scale time,
// without / with, `highway` 1 thread and `threaded` 1 and 2: bf16 2048x8192 0.79-0.83,
// 4096x4096 0.72-0.81, 2048x16384 0.85-0.88, 8192x4096 0.76-0.92 (7-12 of 12 rounds faster);
// f32 RMSNorm, which the rule leaves alone, 0.91-1.15 in the same runs. f16 as well: 10 more
// rounds with the prefetch put back read 1.06-1.19 of the time without it (bf16 1.06-1.33).
bool prefetch_next_rows_in_rms_stats();

// Whether highway-f64's f32 rows written with streaming stores prefetch the next rows at half rate
// through both steps (kHalfRateNextRows in highway_rows-inl.h): only on Intel, where it was
// measured. Sapphire Rapids VM (480 MiB L3), one build toggled at run time, ABBA, 6 rounds x 3
// repetitions, 1 thread, medians of the per-round time ratio, half rate over the apply step's whole
// prefetch: LayerNorm 2048x4096 0.90, 4096x4096 0.86, 2048x5120 0.92, 2048x16384 0.86, 10923x768
// 0.95, 21845x768 0.95, 128x65537 0.94-0.95; RMSNorm 0.86-0.97 on the same shapes (2048x4096
// 0.89, 128x65537 0.91-0.92).
bool half_rate_next_rows_in_f64();
// The same for rows of more than one statistics chunk written with streaming stores, in f64 compute
// (f64_compute) or f32 compute (`highway`, `threaded`): where the row, the next one and the
// parameters fit L2 (LayerNorm: prefetch_next_long_layernorm_row's bound), 1 MiB of them in f32
// compute. The same A/B: highway-f64 RMSNorm 64x131072 (1.5 MiB) 0.96, but 32x262144 (3 MiB) 1.07;
// f32 compute at 128x65537 (LayerNorm 1 MiB, RMSNorm 768 KiB), `highway` 1 thread f32 LayerNorm
// 0.97, RMSNorm 0.96, bf16 LayerNorm 0.95, RMSNorm 0.98; `threaded` 2 threads f32 0.97 and 0.96
// (every round under 1), bf16 0.96 and 1.00; at 64x131072 (RMSNorm, 1.5 MiB) f32 1.02, bf16 0.99.
bool half_rate_next_long_row(const Problem& p, bool f64_compute);

// Whether long rows (more than one statistics chunk) written with streaming stores read
// themselves kPrefetchAheadBytes of x ahead where no earlier step prefetched them (a call's first
// row, rows after one whose apply step did not prefetch the next, `threaded`'s column ranges of
// a split row): the statistics read prefetches x, the apply step x and gamma and beta (as many
// elements ahead), into L2. Only on Intel (measured on the Emerald Rapids VM only; see
// cache_info.cpp). On that VM the hardware prefetchers alone kept too few lines in flight where
// each line took more instructions: a microbenchmark of the bf16 RMSNorm apply step over 64 MiB
// of x (widen, scale, round in pairs, stream) took 1.2x the row-phased ceiling's loop (one load,
// three multiplies), the same traffic, and with gamma and x prefetched 2-8 KiB ahead the same.
inline constexpr std::size_t kPrefetchAheadBytes = 8 * 1024;
bool prefetch_long_rows_ahead(const Problem& p);
// How many elements of T ahead such rows read themselves in a call (stream: non-temporal
// stores), 0 where they do not.
template <class T>
std::size_t long_rows_ahead_elements(const Problem& p, bool stream) {
  return stream && prefetch_long_rows_ahead(p) ? kPrefetchAheadBytes / sizeof(T) : 0;
}

// Whether highway's bf16 rows with f32 compute copy gamma and beta (param_arrays of them: 0 to 2)
// into the even/odd order of the apply step (PairedParams in highway_ops-inl.h) for a call of
// `rows` rows: with neither, always (nothing to copy); else from 4 rows, and only while the copy
// moves at most 1 KiB of f32 parameters per row of the call. The copy reads and writes each
// parameter once per call, in L2 where they overflow L1; the even/odd step saves per row.
// Cascade Lake VM (32 KiB L1), two normbench builds (paired from 4 rows of any length, against
// never), ABBA, 4-6 rounds, 1 thread, medians of the per-round ratio of the time to the same
// run's stream-scale time, paired over plain: 64 rows of 1024 to 4096 columns LayerNorm
// 0.89-0.92, RMSNorm 0.86-0.90; 128x768 0.87 and 0.86; 11x768 0.94 and 0.92; but where the
// copy is long against the call: LayerNorm 4x4096 1.39, 8x4096 1.16, 16x4096 1.05, 8x8192 1.14,
// 8x2048 1.05, 4x1024 1.03 (6x768 0.97, 8x1024 0.97, 8x1536 1.00, 32x4096 0.99); RMSNorm
// (gamma only) 4x4096 1.17, 8x4096 1.04, 8x8192 1.06, 16x4096 1.00 (8x2048 0.95, 4x1024 0.94).
// In DRAM 0.95-1.00 (10923x768 to 16384x4096).
// Inline: every bf16 call asks it, a lone decode row too (an out-of-line rule had cost such a call
// measurable nanoseconds, see ForwardRowsImpl's short rows).
constexpr std::int64_t kMinRowsToPairParams = 4;
constexpr std::int64_t kPairedParamBytesPerRow = 1024;
inline bool pair_params_for_even_odd_apply(const Problem& p, std::int64_t rows, int param_arrays) {
  const auto copied_bytes = param_arrays * p.cols * static_cast<std::int64_t>(sizeof(float));  // f32 copies
  return param_arrays == 0 || (rows >= kMinRowsToPairParams && copied_bytes <= rows * kPairedParamBytesPerRow);
}

// BatchNorm with the highway kernels (f64: the highway-f64 compute type), see batchnorm.hpp:
// channels [c_begin, c_end) of the (N, C, L) layout, each computed whole; the statistics of one
// block of positions of the channels-innermost layout (C means and M2s, exact compute-type values);
// and its apply step over positions [begin, end) with per-channel mean and rstd (C each).
void highway_bn_channels(const Problem& p, const Buffers& b, std::int64_t c_begin, std::int64_t c_end, bool stream,
                         bool f64);
void highway_bn_block_stats(const Problem& p, const Buffers& b, std::int64_t block, double* mean, double* m2, bool f64);
void highway_bn_apply_positions(const Problem& p, const Buffers& b, std::int64_t begin, std::int64_t end,
                                const double* mean, const double* rstd, bool stream, bool f64);

void threaded_forward(const Problem& p, const Buffers& b, const RunConfig& cfg);
int threaded_threads_used(const Problem& p, const RunConfig& cfg);  // see normbench::threads_used

// Validation shared by forward() and reference_forward(): everything but the output buffers.
// Returns false for the rows == 0 no-op.
bool check_problem_and_inputs(const Problem& p, const Buffers& b, const RunConfig& cfg);

}  // namespace normbench::detail
