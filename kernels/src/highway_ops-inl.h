// Highway building blocks shared by the SIMD translation units (highway.cpp, highway_f64.cpp,
// highway_batchnorm.cpp): exact loads of every storage dtype into f32/f64 lanes, correctly
// rounded stores, the statistics reductions over R rows and the apply step.
// Included once per Highway target (the -inl.h convention of hwy/foreach_target.h).
//
// Statistics (BlockStats): shifted sums in one read, kept when the shift is within sigma/4 of
// the mean, else the corrected two-pass algorithm (Chan, Golub & LeVeque 1983, eq. 1.7):
//   read 1: K = mean of the first 64 values; S1 = sum(x - K), S2 = sum((x - K)^2)
//           mean0 = K + S1/n, M2 = S2 - S1^2/n   kept if S1^2/n <= M2/16 (worst case 1.58 n u)
//   read 2: c = sum(x - mean0), S = sum((x - mean0)^2)
//           mean = mean0 + c/n,  var = (S - c^2/n) / n
// The shift makes constant rows exact (K = x0, mean = x0, var = 0, so y = beta); the second
// read removes the first-order error of mean0. Sums use several independent vector accumulators.
// `highway-f64` runs the same algorithm with f64 lanes for every dtype (as gemma.cpp does).
// bf16/f16 are widened to f32 in registers and rounded back to nearest-even by our own integer
// code (Highway 1.0.3's bf16 demotion truncates; its non-F16C f16 paths truncate and break
// Inf/NaN), with hardware F16C used on AVX2 and AVX-512 targets, and AVX512-BF16's conversion
// on AVX-512 targets where the CPU has it (NarrowPairToBf16).
#if defined(NORMBENCH_HIGHWAY_OPS_INL_H_) == defined(HWY_TARGET_TOGGLE)  // once per Highway target
#ifdef NORMBENCH_HIGHWAY_OPS_INL_H_
#undef NORMBENCH_HIGHWAY_OPS_INL_H_
#else
#define NORMBENCH_HIGHWAY_OPS_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "chunked_stats.hpp"
#include "families.hpp"
#include "normbench/normbench.hpp"
#include "normbench/simd_convert.hpp"

HWY_BEFORE_NAMESPACE();
namespace normbench {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#undef NORMBENCH_HW_F16
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
#define NORMBENCH_HW_F16 1  // AVX2 and AVX-512 targets include F16C
#else
#define NORMBENCH_HW_F16 0
#endif

#undef NORMBENCH_HW_BF16
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
#define NORMBENCH_HW_BF16 1  // code for AVX512-BF16, run only where detail::use_hardware_bf16_rounding()
#else
#define NORMBENCH_HW_BF16 0
#endif

constexpr std::size_t kMaxVectorBytes = 64;

// ---- loads: storage T -> compute vector C (exact), C = f32 or f64 ----
template <class D>
HWY_INLINE hn::Vec<D> WidenBf16(D df, const bf16* HWY_RESTRICT p) {
  const hn::Rebind<std::uint16_t, D> du16;
  const hn::RebindToUnsigned<D> du32;
  const auto bits = hn::PromoteTo(du32, hn::LoadU(du16, reinterpret_cast<const std::uint16_t*>(p)));
  return hn::BitCast(df, hn::ShiftLeft<16>(bits));
}

template <class D>
HWY_INLINE hn::Vec<D> WidenF16(D df, const f16* HWY_RESTRICT p) {
#if NORMBENCH_HW_F16
  const hn::Rebind<hwy::float16_t, D> df16;
  return hn::PromoteTo(df, hn::LoadU(df16, reinterpret_cast<const hwy::float16_t*>(p)));
#else
  // Vector form of F. Giesen's half_to_float (exact for subnormals, Inf and NaN).
  const hn::Rebind<std::uint16_t, D> du16;
  const hn::RebindToUnsigned<D> du32;
  const auto h = hn::PromoteTo(du32, hn::LoadU(du16, reinterpret_cast<const std::uint16_t*>(p)));
  const auto shifted_exp = hn::Set(du32, 0x7C00u << 13);
  auto o = hn::ShiftLeft<13>(hn::And(h, hn::Set(du32, 0x7FFFu)));
  const auto exp = hn::And(o, shifted_exp);
  o = hn::Add(o, hn::Set(du32, (127u - 15u) << 23));
  const auto inf_nan = hn::Add(o, hn::Set(du32, (128u - 16u) << 23));
  const auto subnormal = hn::BitCast(
      du32, hn::Sub(hn::BitCast(df, hn::Add(o, hn::Set(du32, 1u << 23))),
                    hn::BitCast(df, hn::Set(du32, 113u << 23))));
  o = hn::IfThenElse(hn::Eq(exp, shifted_exp), inf_nan,
                     hn::IfThenElse(hn::Eq(exp, hn::Zero(du32)), subnormal, o));
  return hn::BitCast(df, hn::Or(o, hn::ShiftLeft<16>(hn::And(h, hn::Set(du32, 0x8000u)))));
#endif
}

// bf16 storage with f32 compute moves in pairs of f32 vectors, one full vector of 2N bf16: Apply
// narrows two results into one store (NarrowPairToBf16), and the sums load 2N values at once.
// A bf16 is the upper half of its f32, so the even-indexed values are the u32 words shifted up
// and the odd-indexed ones the words with the low half cleared (one load and two integer ops
// instead of two widening loads). The lanes then hold the values in another order, which a sum
// does not care about.
template <class D, class T>
constexpr bool kBf16InPairs = std::is_same_v<T, bf16> && std::is_same_v<hn::TFromD<D>, float> && HWY_TARGET != HWY_SCALAR;

// Whether such rows may take the apply step's even/odd order (NarrowEvenOddToBf16, gamma and beta
// in PairedParams' order): not with AVX512-BF16 (kHwBf16), whose one conversion writes the plain
// order.
template <class D, class T, bool kHwBf16>
constexpr bool kEvenOddOrder = kBf16InPairs<D, T> && !kHwBf16;

template <class D>
HWY_INLINE void WidenBf16EvenOdd(D df, const bf16* HWY_RESTRICT p, hn::Vec<D>& even, hn::Vec<D>& odd) {
  const hn::RebindToUnsigned<D> du32;
  const auto words = hn::LoadU(du32, reinterpret_cast<const std::uint32_t*>(p));
  even = hn::BitCast(df, hn::ShiftLeft<16>(words));
  odd = hn::BitCast(df, hn::And(words, hn::Set(du32, 0xFFFF0000u)));
}

template <class D, class T>
HWY_INLINE hn::Vec<D> LoadRow(D d, const T* HWY_RESTRICT p) {
  using C = hn::TFromD<D>;
  if constexpr (std::is_same_v<T, C>) {
    return hn::LoadU(d, p);
  } else if constexpr (std::is_same_v<C, double>) {  // f32/bf16/f16 into f64 lanes
    const hn::Rebind<float, D> df;
    return hn::PromoteTo(d, LoadRow(df, p));
  } else if constexpr (std::is_same_v<T, bf16>) {
    return WidenBf16(d, p);
  } else {
    static_assert(std::is_same_v<T, f16>);
    return WidenF16(d, p);
  }
}

// One step of a sum: kSumStep<D, T> vectors of values starting at p (see kBf16InPairs).
template <class D, class T>
constexpr std::size_t kSumStep = kBf16InPairs<D, T> ? 2 : 1;

template <class D, class T>
HWY_INLINE void LoadSumStep(D d, const T* HWY_RESTRICT p, hn::Vec<D>* v) {
  if constexpr (kBf16InPairs<D, T>)
    WidenBf16EvenOdd(d, p, v[0], v[1]);
  else
    v[0] = LoadRow(d, p);
}

// Partial vectors (row tails, short rows) move with masked loads and stores where the target
// has them without touching the masked-off memory: AVX-512 for every lane size, AVX2 for 32/64-bit
// lanes. Elsewhere through a buffer and memcpy, which had cost a library call and the spilling of
// every live vector around it (perf: most of a 24-element row's ~100 ns).
template <class T>
using StorageLane = std::conditional_t<sizeof(T) == 2, std::uint16_t, T>;  // bf16/f16 as their bits
template <class D, class T>
using StorageTag = hn::Rebind<StorageLane<T>, D>;
template <class T>
constexpr bool kMaskedPartial = HWY_TARGET <= HWY_AVX3 || (HWY_TARGET == HWY_AVX2 && sizeof(T) >= 4);

// Loads count (< Lanes) elements; the remaining lanes are zero.
template <class D, class T>
HWY_INLINE hn::Vec<D> LoadPartial(D d, const T* HWY_RESTRICT p, std::size_t count) {
  if constexpr (kMaskedPartial<T>) {
    const StorageTag<D, T> dt;
    const auto raw = hn::MaskedLoad(hn::FirstN(dt, count), dt, reinterpret_cast<const StorageLane<T>*>(p));
    if constexpr (std::is_same_v<T, hn::TFromD<D>>) {
      return raw;
    } else {
      alignas(kMaxVectorBytes) StorageLane<T> buf[kMaxVectorBytes / sizeof(hn::TFromD<D>)];
      hn::Store(raw, dt, buf);
      return LoadRow(d, reinterpret_cast<const T*>(buf));
    }
  } else {
    alignas(kMaxVectorBytes) T buf[kMaxVectorBytes / sizeof(hn::TFromD<D>)] = {};
    std::memcpy(buf, p, count * sizeof(T));
    return LoadRow(d, buf);
  }
}

// ---- stores: compute vector -> storage T, one rounding to nearest even ----
// kStream: non-temporal store (p aligned to the vector), bypassing the caches. Only for vectors
// of at least 16 bytes: Highway 1.0.3 streams a partial 128-bit vector (e.g. the 2 floats an
// SSE4 f64 vector narrows to) with a 16-byte store, past its end; those use ordinary stores.
template <bool kStream, class D>
HWY_INLINE void Put(D d, hn::Vec<D> v, hn::TFromD<D>* HWY_RESTRICT p) {
  if constexpr (kStream && hn::MaxLanes(D()) * sizeof(hn::TFromD<D>) >= 16)
    hn::Stream(v, d, p);
  else
    hn::StoreU(v, d, p);
}

// v's f32 bits rounded to nearest even at bf16 precision, the bf16 in the upper half of each
// word. NaN stays NaN (quiet bit set). IsNaN, not v != v: Highway 1.0.3's != compares ordered on
// AVX2/AVX-512 (false for NaN), which had turned NaNs whose payload lies in the low 16 bits into Inf.
template <class D>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<D>> RoundedBf16Words(D df, hn::Vec<D> v) {
  const hn::RebindToUnsigned<D> du32;
  const auto u = hn::BitCast(du32, v);
#if HWY_TARGET <= HWY_AVX3
  // The bf16 lsb as a mask (one VPTESTMD) and its 1 added under it (a masked VPADDD): one vector
  // operation fewer than shifting, masking and adding it.
  const auto biased = hn::Add(u, hn::Set(du32, 0x7FFFu));
  const auto rounded = hn::IfThenElse(hn::TestBit(u, hn::Set(du32, 0x10000u)), hn::Add(biased, hn::Set(du32, 1u)), biased);
#else
  const auto lsb = hn::And(hn::ShiftRight<16>(u), hn::Set(du32, 1u));
  const auto rounded = hn::Add(hn::Add(u, hn::Set(du32, 0x7FFFu)), lsb);
#endif
  const auto quiet_nan = hn::Or(u, hn::Set(du32, 0x00400000u));
  (void)df;
  return hn::IfThenElse(hn::RebindMask(du32, hn::IsNaN(v)), quiet_nan, rounded);
}

template <bool kStream = false, class D>
HWY_INLINE void NarrowToBf16(D df, hn::Vec<D> v, bf16* HWY_RESTRICT p) {
  const hn::RebindToSigned<D> di32;
  const hn::Rebind<std::uint16_t, D> du16;
  const auto out = hn::ShiftRight<16>(RoundedBf16Words(df, v));
  Put<kStream>(du16, hn::DemoteTo(du16, hn::BitCast(di32, out)), reinterpret_cast<std::uint16_t*>(p));
}

// Elements [0, N) in lo and [N, 2N) in hi to 2N bf16, rounded to nearest even, in one store of
// a full u16 vector: the rounded words keep the result in their upper halves, which ConcatOdd
// gathers in order. NaN stays NaN (quiet bit set), as in NarrowToBf16.
// kHwBf16 (AVX-512 targets, only where the CPU has AVX512-BF16): one VCVTNE2PS2BF16 instead, which
// rounds the same way (nearest even, NaN quieted with its sign and upper payload) except that it
// flushes subnormal inputs to zero, so vectors holding a subnormal take the integer path. Emitted
// by inline asm: Highway 1.0.3 has no target that enables the extension. Interleaved A/B, bf16,
// 1 thread, 5 rounds: LayerNorm 15-26% and RMSNorm 7-27% faster (128x768 to 87381x768).
template <bool kStream, bool kHwBf16 = false, class D>
HWY_INLINE void NarrowPairToBf16(D df, hn::Vec<D> lo, hn::Vec<D> hi, bf16* HWY_RESTRICT p) {
#if HWY_TARGET == HWY_SCALAR  // no ConcatOdd; Apply does not pair there
  NarrowToBf16<kStream>(df, lo, p);
  NarrowToBf16<kStream>(df, hi, p + hn::Lanes(df));
#else
  const hn::Repartition<std::uint16_t, D> du16;
#if NORMBENCH_HW_BF16
  if constexpr (kHwBf16 && hn::MaxLanes(D()) == 16) {
    constexpr int kDenormal = 0x20;  // VFPCLASSPS category
    // kortest tests both masks in place (OR-ing them through general registers cost ~20% here).
    const __mmask16 lo_denormal = _mm512_fpclass_ps_mask(lo.raw, kDenormal);
    if (HWY_LIKELY(_kortestz_mask16_u8(lo_denormal, _mm512_fpclass_ps_mask(hi.raw, kDenormal)))) {
      __m512i words;
      asm("vcvtne2ps2bf16 %2, %1, %0" : "=v"(words) : "v"(hi.raw), "v"(lo.raw));  // lo -> words [0, 16)
      Put<kStream>(du16, hn::Vec<decltype(du16)>{words}, reinterpret_cast<std::uint16_t*>(p));
      return;
    }
  }
#else
  static_assert(!kHwBf16, "AVX512-BF16 rounding exists on the AVX-512 targets only");
#endif
  Put<kStream>(du16,
               hn::ConcatOdd(du16, hn::BitCast(du16, RoundedBf16Words(df, hi)),
                             hn::BitCast(du16, RoundedBf16Words(df, lo))),
               reinterpret_cast<std::uint16_t*>(p));
#endif
}

// Apply's bf16 step in even/odd order (kBf16InPairs): the 2N bf16 at p loaded as N u32 words, the
// even-indexed values the words shifted up and the odd-indexed ones the words with their low half
// cleared (WidenBf16EvenOdd, as the sums load them); the results written back as words, the odd
// value's rounded bf16 kept in the upper half and the even one's shifted into the lower. Against
// two zero-extending loads and their shifts in, and a word permute (three uops on Intel) out, per
// 2N values. gamma and beta must be in the same order (PairedParams). Cascade Lake VM, normbench,
// two builds, ABBA, 1 thread, medians of the per-round time ratio to the in-run stream-scale
// time's: LayerNorm 128x768 0.87, 64 rows of 1024-4096 columns 0.89-0.92, RMSNorm 0.86-0.90, DRAM
// 0.95-1.00 (reports/baselines/PERFORMANCE-LOG.md, "bf16 apply step in even/odd order").
template <bool kStream, class D>
HWY_INLINE void NarrowEvenOddToBf16(D df, hn::Vec<D> even, hn::Vec<D> odd, bf16* HWY_RESTRICT p) {
  const hn::RebindToUnsigned<D> du32;
  const auto words = hn::Or(hn::And(RoundedBf16Words(df, odd), hn::Set(du32, 0xFFFF0000u)),
                            hn::ShiftRight<16>(RoundedBf16Words(df, even)));
  Put<kStream>(du32, words, reinterpret_cast<std::uint32_t*>(p));
}

// gamma and beta in the order of the even/odd apply step (NarrowEvenOddToBf16): for each step of
// 2N columns from column `from`, its N even-indexed values, then its N odd-indexed ones, at the
// step's own columns (gamma[i + j] is column i + 2j of the step at i, gamma[i + N + j] column
// i + 2j + 1). Null where the call has none. on: Apply may take that order for its steps from
// `from`; a row whose steps start elsewhere (another store alignment) takes the plain order.
template <class P>
struct PairedParams {
  const P* gamma = nullptr;
  const P* beta = nullptr;
  std::size_t from = 0;
  bool on = false;
  PairedParams at(std::size_t column) const {  // the same for Apply called on columns [column, ...)
    return {gamma ? gamma + column : gamma, beta ? beta + column : beta, from, on};
  }
};

// Columns Apply's streaming-store loop peels before its first aligned step (store_bytes, the
// bytes of one step) of n columns written at y.
template <class T>
HWY_INLINE std::size_t StreamPeel(const T* y, std::size_t n, std::size_t store_bytes) {
  const auto misalign = reinterpret_cast<std::uintptr_t>(y) % store_bytes;
  return misalign ? std::min(n, (store_bytes - misalign) / sizeof(T)) : 0;
}

// Calls f(std::true_type()) where bf16 results of f32 compute may be rounded by AVX512-BF16 (the
// AVX-512 targets, on a CPU that has it, unless set_hardware_bf16_rounding turned it off), else
// f(std::false_type()): the kHwBf16 argument of Apply and NarrowPairToBf16.
template <class T, class C, class F>
HWY_INLINE void WithBf16Rounding(F&& f) {
#if NORMBENCH_HW_BF16
  if constexpr (std::is_same_v<T, bf16> && std::is_same_v<C, float>)
    if (detail::use_hardware_bf16_rounding()) return f(std::true_type());
#endif
  f(std::false_type());
}

template <bool kStream = false, class D>
HWY_INLINE void NarrowToF16(D df, hn::Vec<D> v, f16* HWY_RESTRICT p) {
#if NORMBENCH_HW_F16
  const hn::Rebind<hwy::float16_t, D> df16;  // vcvtps2ph with MXCSR rounding: nearest even
  Put<kStream>(df16, hn::DemoteTo(df16, v), reinterpret_cast<hwy::float16_t*>(p));
#else
  // Vector form of F. Giesen's float_to_half_fast3_rtne.
  const hn::RebindToUnsigned<D> du32;
  const hn::RebindToSigned<D> di32;
  const hn::Rebind<std::uint16_t, D> du16;
  auto u = hn::BitCast(du32, v);
  const auto sign = hn::And(u, hn::Set(du32, 0x80000000u));
  u = hn::Xor(u, sign);
  const auto ui = hn::BitCast(di32, u);  // < 2^31 now: signed compares are safe
  const auto too_big = hn::Gt(ui, hn::Set(di32, static_cast<std::int32_t>(((127u + 16u) << 23) - 1u)));
  const auto big = hn::IfThenElse(hn::RebindMask(du32, hn::Gt(ui, hn::Set(di32, 0x7F800000))),
                                  hn::Set(du32, 0x7E00u), hn::Set(du32, 0x7C00u));
  const auto tiny = hn::Lt(ui, hn::Set(di32, static_cast<std::int32_t>(113u << 23)));
  const std::uint32_t denorm_magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
  const auto sub = hn::Sub(
      hn::BitCast(du32, hn::Add(hn::BitCast(df, u), hn::BitCast(df, hn::Set(du32, denorm_magic)))),
      hn::Set(du32, denorm_magic));
  const auto mant_odd = hn::And(hn::ShiftRight<13>(u), hn::Set(du32, 1u));
  const auto normal = hn::ShiftRight<13>(
      hn::Add(hn::Add(u, hn::Set(du32, 0u - ((127u - 15u) << 23) + 0xFFFu)), mant_odd));
  auto o = hn::IfThenElse(hn::RebindMask(du32, too_big), big,
                          hn::IfThenElse(hn::RebindMask(du32, tiny), sub, normal));
  o = hn::Or(o, hn::ShiftRight<16>(sign));
  Put<kStream>(du16, hn::DemoteTo(du16, hn::BitCast(di32, o)), reinterpret_cast<std::uint16_t*>(p));
#endif
}

template <bool kStream = false, class D, class T>
HWY_INLINE void StoreRow(D d, hn::Vec<D> v, T* HWY_RESTRICT p) {
  using C = hn::TFromD<D>;
  if constexpr (std::is_same_v<T, C>) {
    Put<kStream>(d, v, p);
  } else if constexpr (std::is_same_v<C, double> && std::is_same_v<T, float>) {
    const hn::Rebind<float, D> df;  // cvtpd2ps: one rounding to nearest even
    Put<kStream>(df, hn::DemoteTo(df, v), p);
  } else if constexpr (std::is_same_v<C, double>) {
    // f64 -> bf16/f16 in one rounding: to f32 rounded to odd, then to nearest even (see
    // f32_round_to_odd); a plain f32 demotion would round twice. Round to odd here: clear the 29
    // mantissa bits f32 drops and set the lowest kept bit if any of them was set, so that the
    // demotion is exact. That holds in f32's normal range (above it both give Inf in bf16/f16);
    // vectors with a nonzero |v| < 2^-126 take the scalar path. (The scalar loop for every vector
    // had made highway-f64 bf16 ~10x slower than f32.)
    const hn::RebindToUnsigned<D> du;
    const hn::Rebind<float, D> df;
    const auto below_normal = hn::And(hn::Lt(hn::Abs(v), hn::Set(d, 0x1p-126)), hn::Ne(v, hn::Zero(d)));
    if (HWY_LIKELY(hn::AllFalse(d, below_normal))) {
      const auto u = hn::BitCast(du, v);
      const auto dropped = hn::Set(du, (std::uint64_t{1} << 29) - 1);
      const auto inexact = hn::AndNot(hn::RebindMask(du, hn::IsNaN(v)), hn::Ne(hn::And(u, dropped), hn::Zero(du)));
      const auto odd = hn::Or(hn::AndNot(dropped, u), hn::Set(du, std::uint64_t{1} << 29));
      StoreRow<kStream>(df, hn::DemoteTo(df, hn::BitCast(d, hn::IfThenElse(inexact, odd, u))), p);
      return;
    }
    alignas(kMaxVectorBytes) double buf[kMaxVectorBytes / sizeof(double)];
    hn::StoreU(v, d, buf);
    for (std::size_t i = 0; i < hn::Lanes(d); ++i) p[i] = from_f64<T>(buf[i]);
  } else if constexpr (std::is_same_v<T, bf16>) {
    NarrowToBf16<kStream>(d, v, p);
  } else {
    static_assert(std::is_same_v<T, f16>);
    NarrowToF16<kStream>(d, v, p);
  }
}

// Stores the first count (< Lanes) elements of v, rounded to T (see LoadPartial).
template <class D, class T>
HWY_INLINE void StorePartial(D d, hn::Vec<D> v, T* HWY_RESTRICT p, std::size_t count) {
  alignas(kMaxVectorBytes) T buf[kMaxVectorBytes / sizeof(hn::TFromD<D>)];
  StoreRow(d, v, buf);
  if constexpr (kMaskedPartial<T>) {
    const StorageTag<D, T> dt;
    hn::BlendedStore(hn::Load(dt, reinterpret_cast<const StorageLane<T>*>(buf)), hn::FirstN(dt, count), dt,
                     reinterpret_cast<StorageLane<T>*>(p));
  } else {
    std::memcpy(p, buf, count * sizeof(T));
  }
}

// Variant::storage_compute: v rounded to the storage dtype T and widened back (through memory:
// this is an accuracy variant, not a fast path).
template <class T, class D>
HWY_INLINE hn::Vec<D> RoundToStorage(D d, hn::Vec<D> v) {
  if constexpr (std::is_same_v<T, hn::TFromD<D>>) {
    return v;
  } else {
    alignas(kMaxVectorBytes) T buf[kMaxVectorBytes / sizeof(hn::TFromD<D>)];
    StoreRow(d, v, buf);
    return LoadRow(d, buf);
  }
}

template <class T, class C>
HWY_INLINE C RoundScalarToStorage(C v) {
  if constexpr (std::is_same_v<T, C> || std::is_same_v<T, double>) return v;
  else if constexpr (std::is_same_v<C, double>) return static_cast<C>(widen(from_f64<T>(v)));
  else return widen(from_f32<T>(v));
}

// What the variants change in the apply step (Problem::variant); the standard form compiles
// without any of it (Apply's kVariant = false).
struct ApplyOptions {
  bool one_plus_gamma = false;
  bool storage = false;
  // Non-temporal stores, one row (R == 1) of T: prefetch the row's own x and gamma and beta this
  // many elements ahead of the columns applied (see detail::prefetch_long_rows_ahead). 0: not.
  // Ignored where the call gives a next row (that row is prefetched instead).
  std::size_t read_ahead = 0;
  // The next rows are prefetched at half rate, next_x + i / 2 at column i (see kHalfRateNextRows).
  bool half_rate_prefetch = false;
};

inline ApplyOptions ApplyOptionsOf(const Problem& p) {
  return {p.variant.one_plus_gamma, p.variant.storage_compute};
}

// h = x + r for n elements, rounded once to T (x == h or r == h allowed: each vector is read
// before it is written).
template <class D, class T>
HWY_INLINE void AddRowInto(D d, const T* x, const T* r, T* h, std::size_t n) {
  const std::size_t N = hn::Lanes(d);
  std::size_t i = 0;
  for (; i + N <= n; i += N) StoreRow(d, hn::Add(LoadRow(d, x + i), LoadRow(d, r + i)), h + i);
  if (i < n) StorePartial(d, hn::Add(LoadPartial(d, x + i, n - i), LoadPartial(d, r + i, n - i)), h + i, n - i);
}

// ---- reductions and apply, over R rows at once ----
// Short rows leave each row's dependency chain (sum -> mean -> centred sums -> rstd -> apply)
// exposed; interleaving R independent rows fills those gaps and lets the apply pass load
// gamma/beta once for R rows. Every row's arithmetic is the same whatever R is (each row has its
// own accumulators, combined in the same order), so results never depend on how rows were
// grouped — `threaded` stays bitwise equal to `highway` for every thread count.

// Independent accumulators per row and sum. Four: with one, the add/FMA latency bounds a pass
// over an L1-resident row; eight (AVX-512 has the registers) measured 2-18% slower (interleaved
// A/B, 1 thread, f32 and bf16): cache-resident rows are bound by L2 -> L1 traffic, not latency.
constexpr std::size_t kAcc = 4;

// Sum of the kAcc accumulators of a row, always in the same tree order, then across lanes.
// Written out rather than looped in place over `a`: GCC kept the accumulators on the stack for the
// in-place tree, so every row's reduction waited on 64-byte store-to-load forwarding.
template <class D>
HWY_INLINE hn::TFromD<D> Total(D d, const hn::Vec<D>* a) {
  static_assert(kAcc == 4);
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a[0], a[1]), hn::Add(a[2], a[3]))));
}

// sum(x_r - shift_r) for each row r, kAcc independent accumulators per row.
template <std::size_t R, class D, class T>
HWY_INLINE void ShiftedSums(D d, const T* const* x, std::size_t n, const hn::TFromD<D>* shift,
                            hn::TFromD<D>* out) {
  const std::size_t N = hn::Lanes(d);
  hn::Vec<D> k[R], a[R][kAcc];
  for (std::size_t r = 0; r < R; ++r) {
    k[r] = hn::Set(d, shift[r]);
    for (auto& v : a[r]) v = hn::Zero(d);
  }
  std::size_t i = 0;
  for (; i + kAcc * N <= n; i += kAcc * N)
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t j = 0; j < kAcc; ++j) a[r][j] = hn::Add(a[r][j], hn::Sub(LoadRow(d, x[r] + i + j * N), k[r]));
  for (; i + N <= n; i += N)
    for (std::size_t r = 0; r < R; ++r) a[r][0] = hn::Add(a[r][0], hn::Sub(LoadRow(d, x[r] + i), k[r]));
  if (i < n)
    for (std::size_t r = 0; r < R; ++r)
      a[r][1] = hn::Add(a[r][1], hn::IfThenElseZero(hn::FirstN(d, n - i), hn::Sub(LoadPartial(d, x[r] + i, n - i), k[r])));
  for (std::size_t r = 0; r < R; ++r) out[r] = Total(d, a[r]);
}

// acc + v computed as fma(v, 1, acc), the same rounded sum, on x86 targets with FMA: the
// statistics loop issues a subtraction, an addition and an FMA per vector, and AMD's cores run
// additions and FMAs on separate pairs of pipes, so moving half the additions onto the FMA pipes
// balances them (stats loop of two 768-float rows 18% faster in a microbenchmark, 57 -> 47 ns).
// `one` is hidden from the compiler, which would otherwise fold the FMA back into an addition.
template <class D>
HWY_INLINE hn::Vec<D> OneForFmaAdds(D d) {
  auto one = hn::Set(d, hn::TFromD<D>(1));
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  asm volatile("" : "+v"(one.raw));
#endif
  return one;
}
template <class V>
HWY_INLINE V AddOnFmaPipe(V acc, V v, V one) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  return hn::MulAdd(v, one, acc);
#else
  (void)one;
  return hn::Add(acc, v);
#endif
}

// Where a statistics read is given `widened` (R rows of at least n rounded up to whole vectors, in
// the compute type), it also stores each row's values there as loaded: the apply step then reads
// them back instead of converting x a second time (highway-f64, see ShortRows). W: std::nullptr_t
// (nothing stored) or hn::TFromD<D>* const*.
template <class W>
constexpr bool kKeepsWidened = !std::is_same_v<W, std::nullptr_t>;

// c_r = sum(x_r - m_r) and s_r = sum((x_r - m_r)^2), kAcc independent accumulator pairs per row.
// next_x (optional): the next R rows (R rows of n elements, contiguous), prefetched into L2 while
// this read streams, as Apply does (see ShortRows for when); kPrefetchShift 1: at half rate, the
// first n / 2 elements of each (next_x + r * n + i / 2 at column i; see kHalfRateNextRows).
// widened: see kKeepsWidened.
template <std::size_t R, std::size_t kPrefetchShift = 0, class D, class T, class W = std::nullptr_t>
HWY_INLINE void CentredSums(D d, const T* const* x, std::size_t n, const hn::TFromD<D>* mean,
                            hn::TFromD<D>* c, hn::TFromD<D>* s, const T* next_x = nullptr, W widened = nullptr) {
  const std::size_t N = hn::Lanes(d);
  constexpr std::size_t kStep = kSumStep<D, T>;
  static_assert(kAcc % kStep == 0);
  static_assert(kStep == 1 || !kKeepsWidened<W>);
  hn::Vec<D> m[R], ca[R][kAcc], sa[R][kAcc];
  for (std::size_t r = 0; r < R; ++r) {
    m[r] = hn::Set(d, mean[r]);
    for (std::size_t j = 0; j < kAcc; ++j) ca[r][j] = sa[r][j] = hn::Zero(d);
  }
  const auto one = OneForFmaAdds(d);
  std::size_t i = 0;
  for (; i + kAcc * N <= n; i += kAcc * N)
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t j = 0; j < kAcc; j += kStep) {
        if (next_x && (j * N * sizeof(T)) % (64 << kPrefetchShift) == 0)
          __builtin_prefetch(next_x + r * n + ((i + j * N) >> kPrefetchShift), 0, 1);
        hn::Vec<D> v[kStep];
        LoadSumStep(d, x[r] + i + j * N, v);
        if constexpr (kKeepsWidened<W>) hn::StoreU(v[0], d, widened[r] + i + j * N);
        for (std::size_t k = 0; k < kStep; ++k) {
          const auto dev = hn::Sub(v[k], m[r]);
          ca[r][j + k] = (j + k) % 2 ? AddOnFmaPipe(ca[r][j + k], dev, one) : hn::Add(ca[r][j + k], dev);
          sa[r][j + k] = hn::MulAdd(dev, dev, sa[r][j + k]);
        }
      }
  for (; i + N <= n; i += N)
    for (std::size_t r = 0; r < R; ++r) {
      const auto v = LoadRow(d, x[r] + i);
      if constexpr (kKeepsWidened<W>) hn::StoreU(v, d, widened[r] + i);
      const auto dev = hn::Sub(v, m[r]);
      ca[r][0] = hn::Add(ca[r][0], dev);
      sa[r][0] = hn::MulAdd(dev, dev, sa[r][0]);
    }
  if (i < n)
    for (std::size_t r = 0; r < R; ++r) {
      const auto v = LoadPartial(d, x[r] + i, n - i);
      if constexpr (kKeepsWidened<W>) hn::StoreU(v, d, widened[r] + i);  // whole vector: the rows are padded
      const auto dev = hn::IfThenElseZero(hn::FirstN(d, n - i), hn::Sub(v, m[r]));
      ca[r][1] = hn::Add(ca[r][1], dev);
      sa[r][1] = hn::MulAdd(dev, dev, sa[r][1]);
    }
  for (std::size_t r = 0; r < R; ++r) {
    c[r] = Total(d, ca[r]);
    s[r] = Total(d, sa[r]);
  }
}

// Accumulators of the sum of squares (RMSNorm's statistics): 8 on AVX-512 targets, whose 32
// registers hold them for two interleaved rows. One FMA per vector, so 4 chains left the FMA pipes
// half idle on Zen 5 (latency 4, two pipes): interleaved A/B, 1 thread, 3 rounds, `highway`
// RMSNorm f32 1x768 8%, 43x768 9%, 128x768 12%, 128x4096 4%, bf16 3-6% faster, nothing slower.
// (The centred sums keep kAcc: they issue three operations a vector, and eight pairs of
// accumulators for two rows would take every register.) Same count for every R and every path,
// so `threaded` stays bitwise equal to `highway`.
#if HWY_TARGET <= HWY_AVX3
constexpr std::size_t kSquareAcc = 8;
#else
constexpr std::size_t kSquareAcc = kAcc;
#endif

template <class D>
HWY_INLINE hn::TFromD<D> TotalOfSquares(D d, const hn::Vec<D>* a) {
  if constexpr (kSquareAcc == 8)
    return hn::GetLane(hn::SumOfLanes(
        d, hn::Add(hn::Add(hn::Add(a[0], a[1]), hn::Add(a[2], a[3])), hn::Add(hn::Add(a[4], a[5]), hn::Add(a[6], a[7])))));
  else
    return Total(d, a);
}

// sum(x_r^2), kSquareAcc independent accumulators per row. next_x (optional): the next R rows
// (contiguous), prefetched into L2 while this read streams (see ShortRows for when; kPrefetchShift
// as for CentredSums). widened: see kKeepsWidened.
template <std::size_t R, std::size_t kPrefetchShift = 0, class D, class T, class W = std::nullptr_t>
HWY_INLINE void SumsOfSquares(D d, const T* const* x, std::size_t n, hn::TFromD<D>* out, const T* next_x = nullptr,
                              W widened = nullptr) {
  const std::size_t N = hn::Lanes(d);
  constexpr std::size_t kStep = kSumStep<D, T>;
  constexpr std::size_t K = kSquareAcc;
  static_assert(K % kStep == 0);
  static_assert(kStep == 1 || !kKeepsWidened<W>);
  hn::Vec<D> a[R][K];
  for (std::size_t r = 0; r < R; ++r)
    for (auto& v : a[r]) v = hn::Zero(d);
  std::size_t i = 0;
  for (; i + K * N <= n; i += K * N)
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t j = 0; j < K; j += kStep) {
        if (next_x && (j * N * sizeof(T)) % (64 << kPrefetchShift) == 0)
          __builtin_prefetch(next_x + r * n + ((i + j * N) >> kPrefetchShift), 0, 1);
        hn::Vec<D> v[kStep];
        LoadSumStep(d, x[r] + i + j * N, v);
        if constexpr (kKeepsWidened<W>) hn::StoreU(v[0], d, widened[r] + i + j * N);
        for (std::size_t k = 0; k < kStep; ++k) a[r][j + k] = hn::MulAdd(v[k], v[k], a[r][j + k]);
      }
  for (std::size_t j = 0; i + N <= n; i += N, ++j)  // fewer than K vectors left: one accumulator each
    for (std::size_t r = 0; r < R; ++r) {
      const auto v = LoadRow(d, x[r] + i);
      if constexpr (kKeepsWidened<W>) hn::StoreU(v, d, widened[r] + i);
      a[r][j] = hn::MulAdd(v, v, a[r][j]);
    }
  if (i < n)
    for (std::size_t r = 0; r < R; ++r) {
      const auto v = LoadPartial(d, x[r] + i, n - i);  // zero lanes add nothing
      if constexpr (kKeepsWidened<W>) hn::StoreU(v, d, widened[r] + i);  // whole vector: the rows are padded
      a[r][K - 1] = hn::MulAdd(v, v, a[r][K - 1]);
    }
  for (std::size_t r = 0; r < R; ++r) out[r] = TotalOfSquares(d, a[r]);
}

// (x - mean) * rstd [* gamma] [+ beta], one rounding fewer than the formula where an FMA fits
// (z * gamma + beta, or (x - mean) * rstd + beta): the apply step of every highway kernel.
template <class V>
HWY_INLINE V Normalize(V xv, V mean, V rstd, V gamma, V beta, bool has_gamma, bool has_beta) {
  const auto centred = hn::Sub(xv, mean);
  if (has_gamma && has_beta) return hn::MulAdd(hn::Mul(centred, rstd), gamma, beta);
  if (has_gamma) return hn::Mul(hn::Mul(centred, rstd), gamma);
  if (has_beta) return hn::MulAdd(centred, rstd, beta);
  return hn::Mul(centred, rstd);
}

// Every one of the R means is +0 (not -0: x - (-0) turns x = -0 into +0).
template <std::size_t R, class C>
HWY_INLINE bool Uncentred(const C* mean) {
  bool all = true;
  for (std::size_t r = 0; r < R; ++r) all &= mean[r] == C(0) && !std::signbit(mean[r]);
  return all;
}

// Which of gamma and beta Apply's main loop knows to be given: tested per vector, both (LayerNorm),
// gamma only (RMSNorm), gamma only with every row's mean +0 (RMSNorm: x - (+0) is x, bit for bit,
// so the subtraction is left out).
enum : int { kParamsTested, kGammaBeta, kGammaOnly, kGammaOnlyUncentred };
template <int kKnown>
using ParamsKnown = std::integral_constant<int, kKnown>;
template <int kKnown>
constexpr auto GammaGiven(ParamsKnown<kKnown>) {
  if constexpr (kKnown == kParamsTested) return ParamsKnown<kParamsTested>{};
  else return std::true_type{};
}
template <int kKnown>
constexpr auto BetaGiven(ParamsKnown<kKnown>) {
  if constexpr (kKnown == kParamsTested) return ParamsKnown<kParamsTested>{};
  else return std::bool_constant<kKnown == kGammaBeta>{};
}

// The span of addresses whose low bits a load is compared with pending stores' (4K aliasing).
constexpr std::size_t kAliasPage = 4096;

// y_r = (x_r - mean_r) * rstd_r [* gamma] [+ beta]; reads each x vector before writing y (in
// place ok); gamma/beta are loaded once for the R rows.
// Loads before stores: each column of the R rows loads every row's x before it stores any row's y.
// Rows of 4 KiB (1024 floats) with x and y at the same offset in their pages had the second row's
// load follow the first row's store to an address equal in its low 12 bits, which the core treats
// as a possible dependency (4K aliasing): 128x1024 LayerNorm took 19-20 us with y at x's page
// offset and 17 us with 1-2 KiB between them (a microbenchmark of `highway`). Interleaved A/B in
// normbench, 1 thread, 6 rounds: f32 128x1024 14-19%, 8x4096 13-14%, LayerNorm 128x4096 6% faster.
// A second A/B read 3x768 to 43x768 10-25% slower, with the unchanged ceilings 3-13% slower in the
// same runs (code placement differs between builds); the microbenchmark at y offsets of 0, 1088,
// 2048 and 3136 bytes found those shapes the same or faster.
// While the rows are in L1, it prefetches the next rows' x into L2 (next_x: `R` rows of `n`
// elements, contiguous), so their memory traffic overlaps this compute (interleaved A/B: bf16
// 2048x4096 10-16% faster, nothing slower). Prefetching into L1, or prefetching y for writing,
// made 16 KiB rows 12-16% slower.
// kStream: y is written with non-temporal stores after peeling to the vector alignment.
// kVariant: honours opt (Gemma's 1 + gamma; storage-dtype rounding of every step, where mean and
// rstd arrive already rounded).
// kBroadcast: gamma and beta point at one value each, applied to all n elements (GroupNorm's
// per-channel parameters over a channel's spatial positions).
// TX: T, or the compute type where x is the rows' widened copy (see kKeepsWidened); y is T.
// kHwBf16: bf16 results rounded by AVX512-BF16 (see NarrowPairToBf16 and WithBf16Rounding).
template <bool kStream, std::size_t R, bool kVariant = false, bool kBroadcast = false, bool kHwBf16 = false, class D,
          class TX, class T, class P>
HWY_INLINE void Apply(D d, const TX* const* x, T* const* y, std::size_t n, const hn::TFromD<D>* mean,
                      const hn::TFromD<D>* rstd, const P* HWY_RESTRICT gamma, const P* HWY_RESTRICT beta,
                      const T* next_x, ApplyOptions opt = {}, PairedParams<P> paired = {}) {
  const std::size_t N = hn::Lanes(d);
  // A row that reads itself ahead (opt.read_ahead, no next row given) prefetches its own x as it
  // would a next row's, and gamma and beta too (prefetch_params below); a given next row wins.
  bool reads_own_row_ahead = false;
  if constexpr (R == 1 && std::is_same_v<TX, T>) {
    if (!next_x && opt.read_ahead) {
      next_x = x[0] + opt.read_ahead;
      reads_own_row_ahead = true;
    }
  }
  hn::Vec<D> m[R], rs[R];
  for (std::size_t r = 0; r < R; ++r) {
    m[r] = hn::Set(d, mean[r]);
    rs[r] = hn::Set(d, rstd[r]);
  }
  // known: a ParamsKnown, which of gamma and beta are given where the caller checked it once.
  const auto value = [&](hn::Vec<D> xv, hn::Vec<D> g, hn::Vec<D> b, std::size_t r, auto known) HWY_ATTR __attribute__((always_inline)) {
    constexpr int kKnown = decltype(known)::value;
    if constexpr (kKnown == kGammaOnlyUncentred) return hn::Mul(hn::Mul(xv, rs[r]), g);
    if constexpr (kKnown != kParamsTested) return Normalize(xv, m[r], rs[r], g, b, true, kKnown == kGammaBeta);
    if constexpr (kVariant) {
      if (opt.storage) {  // every step rounded to T, no FMA
        auto z = RoundToStorage<T>(d, hn::Mul(RoundToStorage<T>(d, hn::Sub(xv, m[r])), rs[r]));
        if (gamma) z = RoundToStorage<T>(d, hn::Mul(z, g));
        if (beta) z = RoundToStorage<T>(d, hn::Add(z, b));
        return z;
      }
    }
    return Normalize(xv, m[r], rs[r], g, b, gamma != nullptr, beta != nullptr);
  };
  // gamma as applied: (1 + gamma) for Gemma; rounded to T (and 1 + gamma rounded) for storage.
  const auto prep_gamma = [&](hn::Vec<D> g) HWY_ATTR __attribute__((always_inline)) {
    if constexpr (kVariant) {
      if (opt.storage) g = RoundToStorage<T>(d, g);
      if (opt.one_plus_gamma) g = hn::Add(hn::Set(d, hn::TFromD<D>(1)), g);
      if (opt.storage) g = RoundToStorage<T>(d, g);
    }
    return g;
  };
  const auto prep_beta = [&](hn::Vec<D> b) HWY_ATTR __attribute__((always_inline)) {
    if constexpr (kVariant)
      if (opt.storage) b = RoundToStorage<T>(d, b);
    return b;
  };
  // gamma/beta for columns [i, i + count): a vector of them, or the broadcast value.
  // given: std::true_type or std::false_type where known, else ptr is tested.
  const auto param = [&](const P* HWY_RESTRICT ptr, std::size_t i, std::size_t count, auto given) HWY_ATTR __attribute__((always_inline)) {
    if constexpr (std::is_same_v<decltype(given), std::false_type>) return hn::Zero(d);
    if (!std::is_same_v<decltype(given), std::true_type> && !ptr) return hn::Zero(d);
    if constexpr (kBroadcast) return hn::Set(d, static_cast<hn::TFromD<D>>(ptr[0]));
    return count == N ? LoadRow(d, ptr + i) : LoadPartial(d, ptr + i, count);
  };
  // Columns [i, i + count) of every row, count <= N; stream: a whole vector may be streamed.
  const auto columns = [&](std::size_t i, std::size_t count, bool stream, auto known) HWY_ATTR __attribute__((always_inline)) {
    const bool whole = count == N;
    const auto g = prep_gamma(param(gamma, i, count, GammaGiven(known)));
    const auto b = prep_beta(param(beta, i, count, BetaGiven(known)));
    hn::Vec<D> xv[R];  // every row's x before any row's y (loads before stores, above)
    for (std::size_t r = 0; r < R; ++r) xv[r] = whole ? LoadRow(d, x[r] + i) : LoadPartial(d, x[r] + i, count);
    for (std::size_t r = 0; r < R; ++r) {
      const auto v = value(xv[r], g, b, r, known);
      if (whole && stream)
        StoreRow<kStream>(d, v, y[r] + i);
      else if (whole)
        StoreRow<false>(d, v, y[r] + i);
      else
        StorePartial(d, v, y[r] + i, count);
    }
  };
  // bf16 out of f32: two vectors narrowed into one full vector of 2N bf16 (ConcatOdd of the
  // rounded words) instead of two half-width demotions, which cost as much as the rest of the
  // apply step (interleaved A/B below).
  constexpr bool kPairs = kBf16InPairs<D, T>;
  // Where gamma and beta come in even/odd order (paired.on), the steps from paired.from take the
  // values in that order too (NarrowEvenOddToBf16). Not with AVX512-BF16, whose one conversion
  // writes the plain order, nor for a widened copy of the rows (f64 compute, not paired).
  constexpr bool kMayEvenOdd = kEvenOddOrder<D, T, kHwBf16> && std::is_same_v<TX, T>;
  // f32 out of f64 compute, streamed: two result vectors demoted into one full vector, one
  // non-temporal store per cache line (AVX3) instead of two half-vector ones, and one next-row
  // prefetch per line instead of two. On the Sapphire Rapids VM, two builds, ABBA, 8 rounds,
  // 1 thread, highway-f64 f32 in DRAM: 0.94-0.98 of the time before (128x65537, 2048x4096,
  // 4096x4096, 21845x768), the ceilings 0.99-1.00. (On Zen 5 it had measured no gain: see
  // reports/baselines/PERFORMANCE-LOG.md, "f32 output in whole vectors".)
  constexpr bool kF64Pairs = kStream && std::is_same_v<hn::TFromD<D>, double> && std::is_same_v<T, float> &&
                             std::is_same_v<TX, T> && hn::MaxLanes(D()) >= 4;
  const std::size_t step = kPairs || kF64Pairs ? 2 * N : N;
  // even_odd: std::true_type for the even/odd order, with gamma and beta from paired.
  const auto step_columns = [&](std::size_t i, auto known, auto even_odd) HWY_ATTR __attribute__((always_inline)) {
    if constexpr (kPairs) {
      constexpr bool kEvenOdd = decltype(even_odd)::value;
      const P* HWY_RESTRICT gs = kEvenOdd ? paired.gamma : gamma;
      const P* HWY_RESTRICT bs = kEvenOdd ? paired.beta : beta;
      const auto g0 = prep_gamma(param(gs, i, N, GammaGiven(known)));
      const auto g1 = prep_gamma(param(gs, i + N, N, GammaGiven(known)));
      const auto b0 = prep_beta(param(bs, i, N, BetaGiven(known)));
      const auto b1 = prep_beta(param(bs, i + N, N, BetaGiven(known)));
      hn::Vec<D> lo[R], hi[R];  // loads before stores, as in columns (even/odd: even, odd)
      for (std::size_t r = 0; r < R; ++r) {
        if constexpr (kEvenOdd) {
          WidenBf16EvenOdd(d, x[r] + i, lo[r], hi[r]);
        } else {
          lo[r] = LoadRow(d, x[r] + i);
          hi[r] = LoadRow(d, x[r] + i + N);
        }
      }
      for (std::size_t r = 0; r < R; ++r) {
        const auto v0 = value(lo[r], g0, b0, r, known), v1 = value(hi[r], g1, b1, r, known);
        if constexpr (kEvenOdd)
          NarrowEvenOddToBf16<kStream>(d, v0, v1, y[r] + i);
        else
          NarrowPairToBf16<kStream, kHwBf16>(d, v0, v1, y[r] + i);
      }
    } else if constexpr (kF64Pairs) {
      const auto g0 = prep_gamma(param(gamma, i, N, GammaGiven(known)));
      const auto g1 = prep_gamma(param(gamma, i + N, N, GammaGiven(known)));
      const auto b0 = prep_beta(param(beta, i, N, BetaGiven(known)));
      const auto b1 = prep_beta(param(beta, i + N, N, BetaGiven(known)));
      hn::Vec<D> lo[R], hi[R];  // loads before stores, as in columns
      for (std::size_t r = 0; r < R; ++r) {
        lo[r] = LoadRow(d, x[r] + i);
        hi[r] = LoadRow(d, x[r] + i + N);
      }
#if HWY_TARGET != HWY_SCALAR
      const hn::Rebind<float, D> dh;
      const hn::Twice<decltype(dh)> dw;
      for (std::size_t r = 0; r < R; ++r) {
        const auto v0 = value(lo[r], g0, b0, r, known), v1 = value(hi[r], g1, b1, r, known);
        Put<kStream>(dw, hn::Combine(dw, hn::DemoteTo(dh, v1), hn::DemoteTo(dh, v0)), y[r] + i);
      }
#endif
    } else {
      columns(i, N, true, known);
    }
  };
  std::size_t i = 0;
  if constexpr (kStream) {  // peel to the store alignment (the caller makes the R rows share it)
    const std::size_t peel = StreamPeel(y[0], n, step * sizeof(T));
    while (i < peel) {
      const std::size_t count = std::min(N, peel - i);
      columns(i, count, false, ParamsKnown<kParamsTested>{});
      i += count;
    }
  }
  // The main loop is instantiated per set of given parameters (gamma and beta, gamma only, tested),
  // so that they are not tested per vector, and with and without the next rows' prefetch, so that
  // neither is that. GCC had kept those tests (and a flag reloaded from the stack) in the loop,
  // about a third of its instructions (perf annotate, f32 43x768 LayerNorm). Without next rows
  // (a call's last rows; a decode call's only row) the loop had prefetched each row's own x, lines
  // in L1 already, one more load-pipe operation per f32 vector: leaving it out, one build toggled
  // at run time, ABBA, 1 thread, two sets of 10 rounds, medians of the per-round time ratio:
  // RMSNorm f32 1x768 0.97 / 0.91, 1x1024 0.98 / 0.89, 1x2048 0.95 / 0.82, 1x4096 0.90 / 0.91,
  // 1x8192 0.98, LayerNorm f32 1x768-1x8192 0.96-1.00, bf16 (one prefetch per two vectors)
  // 0.97-1.05, 3x768-43x768 0.98-1.01; the row-phased ceilings (which prefetch next rows only)
  // 0.98-1.02 (Zen 5). On the Zen 4 VM, two builds, ABBA, 10 rounds: LayerNorm f32 1x768-1x2048
  // 0.88-0.90, 3x768 0.95, RMSNorm f32 1x768-1x4096 0.97-0.98, 1x8192 1.00-1.02, bf16 0.99-1.01.
  // f64 compute (highway-f64) on its own x keeps its one loop that prefetches either (the two
  // loops had been tried when the sanitizer build still compiled these kernels at -O2, where GCC 12
  // miscompiled them: reports/baselines/PERFORMANCE-LOG.md, "The sanitizer build's wrong rows";
  // not measured since). Widened rows (TX is the compute type) take the two loops.
  constexpr bool kSingleLoop = std::is_same_v<hn::TFromD<D>, double> && std::is_same_v<TX, T>;
  // Walking backwards: a load of gamma, beta or x at column j matches the low 12 bits of the store
  // to y at column j - D/sizeof(T), D = (y - ptr) mod 4096, and while that store is pending the load
  // waits for it (4K aliasing): with D of a few hundred bytes to 1.5 KiB, nearly always. Walking the
  // row from its end, the store it matches lies 4096 - D bytes behind instead. Each column's values
  // are the same either way. Only a lone cached row of at most 16 KiB (in L1, or nearly) that no
  // next row's prefetch rides on, with gamma as wide as y, so that D holds along the row. Ice Lake
  // VM, a driver on the library, f32, x at page offset 0, y at 2048: RMSNorm 1x2048 with gamma at
  // 1024 took 269-281 ns forward, 192 backward, 190-196 with gamma at 0 or 2048
  // (reports/baselines/PERFORMANCE-LOG.md, "gamma and beta at a fixed page offset").
  constexpr bool kMayWalkBackward = R == 1 && !kStream && !kPairs && !kF64Pairs && !kSingleLoop && !kBroadcast &&
                                    std::is_same_v<TX, T> && sizeof(P) == sizeof(T);
  [[maybe_unused]] bool backward = false;
  if constexpr (kMayWalkBackward) {
    constexpr std::size_t kMaxBackwardRowBytes = 16384;
    if (!next_x && !paired.on && n * sizeof(T) <= kMaxBackwardRowBytes) {
      std::size_t forward_gap = kAliasPage, backward_gap = kAliasPage;
      for (const void* src : {static_cast<const void*>(x[0]), static_cast<const void*>(gamma),
                              static_cast<const void*>(beta)}) {
        if (!src) continue;
        const std::size_t gap = (reinterpret_cast<std::uintptr_t>(y[0]) - reinterpret_cast<std::uintptr_t>(src)) %
                                kAliasPage;
        if (gap == 0) continue;  // a column's loads come before its store, either way
        forward_gap = std::min(forward_gap, gap);
        backward_gap = std::min(backward_gap, kAliasPage - gap);
      }
      backward = forward_gap < backward_gap;
    }
  }
  const auto main_loop_known = [&](auto known) HWY_ATTR __attribute__((always_inline)) {
    if constexpr (kMayWalkBackward) {
      if (backward) {  // the tail first, then whole vectors from the end (i is 0: nothing peeled)
        const std::size_t whole = n / N * N;
        if (whole < n) columns(whole, n - whole, false, ParamsKnown<kParamsTested>{});
        for (std::size_t j = whole; j > 0; j -= N) columns(j - N, N, false, known);
        i = n;
        return;
      }
    }
    if constexpr (kSingleLoop) {
      const T* prefetch[R];
      for (std::size_t r = 0; r < R; ++r) prefetch[r] = next_x ? next_x + r * n : x[r];
      // shift 1: the next rows at half rate (opt.half_rate_prefetch), a compile-time shift in the loop.
      const auto loop = [&](auto shift) HWY_ATTR __attribute__((always_inline)) {
        for (; i + step <= n; i += step) {
          // into L2: into L1 it evicts these rows (measured)
          for (std::size_t r = 0; r < R; ++r) __builtin_prefetch(prefetch[r] + (i >> decltype(shift)::value), 0, 1);
          step_columns(i, known, std::false_type{});
        }
      };
      if (opt.half_rate_prefetch && next_x)
        loop(std::integral_constant<std::size_t, 1>{});
      else
        loop(std::integral_constant<std::size_t, 0>{});
    } else {
      // prefetch_params: gamma and beta opt.read_ahead elements ahead too, every line of a step's.
      const auto loop = [&](auto prefetch_next, auto prefetch_params, auto even_odd) HWY_ATTR __attribute__((always_inline)) {
        // Addresses as integers: past the parameters' end near the row's end, never null + offset
        // (gamma is given in that mode; beta may not be).
        const std::uintptr_t gamma_ahead = reinterpret_cast<std::uintptr_t>(gamma) + opt.read_ahead * sizeof(P);
        const std::uintptr_t beta_ahead = beta ? reinterpret_cast<std::uintptr_t>(beta) + opt.read_ahead * sizeof(P) : 0;
        for (; i + step <= n; i += step) {
          if constexpr (decltype(prefetch_next)::value)  // into L2: into L1 it evicts these rows (measured)
            for (std::size_t r = 0; r < R; ++r)
              __builtin_prefetch(next_x + r * n + (decltype(prefetch_next)::value == 2 ? i >> 1 : i), 0, 1);
          if constexpr (decltype(prefetch_params)::value)
            for (std::size_t at = i * sizeof(P); at < (i + step) * sizeof(P); at += 64) {
              __builtin_prefetch(reinterpret_cast<const void*>(gamma_ahead + at), 0, 1);
              if (beta_ahead) __builtin_prefetch(reinterpret_cast<const void*>(beta_ahead + at), 0, 1);
            }
          step_columns(i, known, even_odd);
        }
      };
      const auto loop_in_order = [&](auto even_odd) HWY_ATTR __attribute__((always_inline)) {
        if (!next_x)
          loop(std::false_type{}, std::false_type{}, even_odd);
        else if (opt.half_rate_prefetch)
          loop(std::integral_constant<int, 2>{}, std::false_type{}, even_odd);
        else if (kStream && !kBroadcast && reads_own_row_ahead && gamma)
          loop(std::true_type{}, std::bool_constant<kStream && !kBroadcast>{}, even_odd);
        else
          loop(std::true_type{}, std::false_type{}, even_odd);
      };
      if (kMayEvenOdd && paired.on && i == paired.from)
        loop_in_order(std::bool_constant<kMayEvenOdd>{});
      else
        loop_in_order(std::false_type{});
    }
  };
  // RMSNorm's rows (mean +0) leave out the subtraction where y stays cached and the compute is
  // f32. One build, the path toggled at run time, ABBA, 10 rounds, 1 thread, f32: 1x768 0.93,
  // 3x768 0.95, 5x768 0.97, 1x4096 0.93, 11x768, 43x768 and 4x4096 0.98 of the time before; bf16
  // 128x768 0.94 (6 and 8 rounds). Not with streaming stores: f32 4096x4096, 8192x2048 and 21845x768
  // in DRAM read 1.06-1.12 of the time before (share of the stream-scale ceiling 1.03-1.11 ->
  // 0.94-1.02), bf16 there 0.98-1.07. Not for f64 compute: highway-f64 keeps its arithmetic (its
  // Release objects differ from before only in stack slots).
  if constexpr (!kVariant && !kBroadcast) {
    if (gamma && beta)
      main_loop_known(ParamsKnown<kGammaBeta>{});
    else if (gamma) {
      if constexpr (!kStream && std::is_same_v<hn::TFromD<D>, float>) {
        if (Uncentred<R>(mean))
          main_loop_known(ParamsKnown<kGammaOnlyUncentred>{});
        else
          main_loop_known(ParamsKnown<kGammaOnly>{});
      } else {
        main_loop_known(ParamsKnown<kGammaOnly>{});
      }
    }
    else
      main_loop_known(ParamsKnown<kParamsTested>{});
  } else {
    main_loop_known(ParamsKnown<kParamsTested>{});
  }
  // A lone vector after the pairs is half a cache line (bf16, or f32 out of f64): streaming it leaves a line part
  // non-temporal and part cached (the next row's peel), which stalls: bf16 1048576x24 had taken
  // 6.6x as long with streaming stores as with cached ones.
  // Only after pairs: otherwise the main loop's step is N and no whole vector is left. (Compiled
  // for f64 compute's single loop all the same; for the f32-compute single-vector loops GCC 12
  // warned of pointer overflow here once they were two.)
  if constexpr (kPairs || kSingleLoop)
    for (; i + N <= n; i += N) columns(i, N, !kPairs && !kF64Pairs, ParamsKnown<kParamsTested>{});
  if (i < n) columns(i, n - i, false, ParamsKnown<kParamsTested>{});
}

// Values whose mean (shifted by the first value) becomes the shift of the one-read statistics:
// for independent values the mean of 64 is within sigma/8 of the row's mean (one standard
// error), so about 95% of such rows keep their one-read result below.
constexpr std::size_t kShiftSample = 64;

// The one-read statistics are kept when S1^2/n <= M2/16, i.e. rho = (mean - K)^2 / var <= 1/16.
// Their first-order relative error is then at most N u (1 + rho + 2 sqrt(rho (1 + rho))) <= 1.58 N u
// (the corrected two-pass has N u; both stay inside the 2x allowance the tests give N u).
constexpr double kOneReadMaxRho = 1.0 / 16;

// Statistics of n values in each of R rows: mean and M2 = sum (x - mean)^2 (may round slightly
// below zero; the caller clamps). One read where that is accurate, else the corrected two-pass:
//   K = x0 + sum_{i<64}(x_i - x0)/64      (a constant row gives K = x0 and exact zeros below)
//   S1 = sum(x - K), S2 = sum((x - K)^2)  (one read)
//   mean0 = K + S1/n, M2 = S2 - S1^2/n    kept if finite and S1^2/n <= M2/16
// else (a shift far from the mean, NaN, Inf, overflow) a second read, Chan, Golub & LeVeque's
// corrected two-pass around mean0: c = sum(x - mean0), S = sum((x - mean0)^2),
//   mean = mean0 + c/n, M2 = S - c^2/n.
// Rows are decided one by one, so the result of a row never depends on the rows beside it.
// widened: see kKeepsWidened (stored by the first read, the one every row takes).
// BlockStats' first step: each row's shift K.
template <std::size_t R, class D, class T>
HWY_INLINE void StatsShifts(D d, const T* const* x, std::size_t n, hn::TFromD<D>* shift) {
  using C = hn::TFromD<D>;
  const std::size_t sample = std::min(n, kShiftSample);
  C x0[R], sample_sum[R];
  for (std::size_t r = 0; r < R; ++r) x0[r] = static_cast<C>(widen(x[r][0]));
  ShiftedSums<R>(d, x, sample, x0, sample_sum);
  for (std::size_t r = 0; r < R; ++r) shift[r] = x0[r] + sample_sum[r] * (C(1) / static_cast<C>(sample));
}

// BlockStats' last step: mean and M2 from the centred sums S1, S2 around the shift, or the
// corrected two-pass where the one read is not accurate enough.
template <std::size_t R, class D, class T>
HWY_INLINE void StatsFromCentredSums(D d, const T* const* x, std::size_t n, const hn::TFromD<D>* shift,
                                     const hn::TFromD<D>* s1, const hn::TFromD<D>* s2, hn::TFromD<D>* mean,
                                     hn::TFromD<D>* m2) {
  using C = hn::TFromD<D>;
  const C inv_n = C(1) / static_cast<C>(n);
  for (std::size_t r = 0; r < R; ++r) {
    const C mean0 = shift[r] + s1[r] * inv_n;
    const C shift_term = s1[r] * s1[r] * inv_n;
    const C one_read = s2[r] - shift_term;
    if (one_read <= std::numeric_limits<C>::max() && shift_term <= one_read * static_cast<C>(kOneReadMaxRho)) {
      mean[r] = mean0;
      m2[r] = one_read;
      continue;
    }
    const T* row[1] = {x[r]};
    C c, s;
    CentredSums<1>(d, row, n, &mean0, &c, &s);
    mean[r] = mean0 + c * inv_n;
    m2[r] = s - c * c * inv_n;
  }
}

// Statistics of R rows as described above StatsShifts: its three steps in order.
template <std::size_t R, std::size_t kPrefetchShift = 0, class D, class T, class W = std::nullptr_t>
HWY_INLINE void BlockStats(D d, const T* const* x, std::size_t n, hn::TFromD<D>* mean, hn::TFromD<D>* m2,
                           const T* next_x = nullptr, W widened = nullptr) {
  using C = hn::TFromD<D>;
  C shift[R], s1[R], s2[R];
  StatsShifts<R>(d, x, n, shift);
  CentredSums<R, kPrefetchShift>(d, x, n, shift, s1, s2, next_x, widened);  // S1 and S2: the centred sums around K
  StatsFromCentredSums<R>(d, x, n, shift, s1, s2, mean, m2);
}

// One step of a pipelined apply (see ApplyWithNextCentredSums): kSumStep<D, T> vectors of row x
// from column `at` with gamma [and beta], written as Apply's main loop writes them (bf16: the pair
// narrowed into one store; kEvenOdd: in even/odd order, gamma and beta in PairedParams' order).
template <bool kHwBf16, bool kBeta, bool kEvenOdd, class D, class T>
HWY_INLINE void ApplyStep(D d, const T* x, T* y, std::size_t at, hn::Vec<D> m, hn::Vec<D> rs,
                          const float* HWY_RESTRICT gamma, const float* HWY_RESTRICT beta) {
  const std::size_t N = hn::Lanes(d);
  const auto value = [&](hn::Vec<D> xv, std::size_t i) HWY_ATTR __attribute__((always_inline)) {
    if constexpr (kBeta) return Normalize(xv, m, rs, hn::LoadU(d, gamma + i), hn::LoadU(d, beta + i), true, true);
    else return hn::Mul(hn::Mul(xv, rs), hn::LoadU(d, gamma + i));  // RMSNorm: mean +0, x - 0 is x
  };
  if constexpr (kBf16InPairs<D, T> && kEvenOdd) {
    static_assert(!kHwBf16, "AVX512-BF16 writes the plain order");
    hn::Vec<D> even, odd;
    WidenBf16EvenOdd(d, x + at, even, odd);
    NarrowEvenOddToBf16<false>(d, value(even, at), value(odd, at + N), y + at);
  } else if constexpr (kBf16InPairs<D, T>) {
    const auto lo = value(LoadRow(d, x + at), at), hi = value(LoadRow(d, x + at + N), at + N);
    NarrowPairToBf16<false, kHwBf16>(d, lo, hi, y + at);
  } else {
    StoreRow(d, value(LoadRow(d, x + at), at), y + at);
  }
}

// The loop both pipelined steps (below) share: from column 0, kAccs vectors at a time, one row's
// apply step (ApplyStep; m and rs as it takes them) and the load of the next row's same columns,
// handed to accumulate(j, v) (v: kSumStep<D, T> vectors for accumulators j on). In even/odd order
// with paired's parameters where paired.on (its steps start at column 0), else in the plain order.
// Returns the columns done (a multiple of kAccs vectors).
template <bool kHwBf16, bool kBeta, std::size_t kAccs, class D, class T, class Accumulate>
HWY_INLINE std::size_t PipelinedSteps(D d, const T* x, T* y, std::size_t n, hn::Vec<D> m, hn::Vec<D> rs,
                                      const float* gamma, const float* beta, const T* next,
                                      const PairedParams<float>& paired, const Accumulate& accumulate) {
  const std::size_t N = hn::Lanes(d);
  constexpr std::size_t kStep = kSumStep<D, T>;
  std::size_t i = 0;
  const auto loop = [&](auto even_odd, const float* HWY_RESTRICT g, const float* HWY_RESTRICT bt)
                        HWY_ATTR __attribute__((always_inline)) {
    for (; i + kAccs * N <= n; i += kAccs * N)
      for (std::size_t j = 0; j < kAccs; j += kStep) {
        const std::size_t at = i + j * N;
        ApplyStep<kHwBf16, kBeta, decltype(even_odd)::value>(d, x, y, at, m, rs, g, bt);
        hn::Vec<D> v[kStep];
        LoadSumStep(d, next + at, v);
        accumulate(j, v);
      }
  };
  if constexpr (kEvenOddOrder<D, T, kHwBf16>)
    if (paired.on && paired.from == 0) {
      loop(std::true_type{}, paired.gamma, paired.beta);
      return i;
    }
  loop(std::false_type{}, gamma, beta);
  return i;
}

// Apply's step for columns [from, n) of one row: the columns a pipelined loop (below) leaves.
template <bool kHwBf16, class D, class T>
HWY_INLINE void ApplyColumnsFrom(D d, const T* x, T* y, std::size_t from, std::size_t n, float mean, float rstd,
                                 const float* gamma, const float* beta) {
  if (from == n) return;
  const T* xs[1] = {x + from};
  T* ys[1] = {y + from};
  Apply<false, 1, false, false, kHwBf16>(d, xs, ys, n - from, &mean, &rstd, gamma + from, beta ? beta + from : beta,
                                         static_cast<const T*>(nullptr));
}

// One row's apply step with gamma and beta (f32 compute, f32 parameters), and in the same loop the
// centred sums of the next row around its shift (CentredSums<1>): the two are independent, so
// neither waits for the other's chain (see PipelinedRows). The accumulators take the same values
// in the same order as in CentredSums and every y the arithmetic of Apply, so the results are
// those of the two steps run one after the other. y may be x (in place), as in Apply.
// paired: gamma and beta in even/odd order as well (see PipelinedSteps).
template <bool kHwBf16, class D, class T>
HWY_INLINE void ApplyWithNextCentredSums(D d, const T* x, T* y, std::size_t n, float mean, float rstd,
                                         const float* HWY_RESTRICT gamma, const float* HWY_RESTRICT beta,
                                         const T* next, float next_shift, float& c, float& s,
                                         const PairedParams<float>& paired = {}) {
  static_assert(std::is_same_v<hn::TFromD<D>, float>, "f32 compute only");
  const std::size_t N = hn::Lanes(d);
  constexpr std::size_t kStep = kSumStep<D, T>;
  const auto m = hn::Set(d, mean), rs = hn::Set(d, rstd), k = hn::Set(d, next_shift);
  hn::Vec<D> ca[kAcc], sa[kAcc];
  for (std::size_t j = 0; j < kAcc; ++j) ca[j] = sa[j] = hn::Zero(d);
  const auto one = OneForFmaAdds(d);
  const std::size_t applied = PipelinedSteps<kHwBf16, true, kAcc>(
      d, x, y, n, m, rs, gamma, beta, next, paired,
      [&](std::size_t j, const hn::Vec<D>* v) HWY_ATTR __attribute__((always_inline)) {
        for (std::size_t q = 0; q < kStep; ++q) {
          const auto dev = hn::Sub(v[q], k);
          ca[j + q] = (j + q) % 2 ? AddOnFmaPipe(ca[j + q], dev, one) : hn::Add(ca[j + q], dev);
          sa[j + q] = hn::MulAdd(dev, dev, sa[j + q]);
        }
      });
  std::size_t i = applied;
  for (; i + N <= n; i += N) {  // CentredSums' tail
    const auto dev = hn::Sub(LoadRow(d, next + i), k);
    ca[0] = hn::Add(ca[0], dev);
    sa[0] = hn::MulAdd(dev, dev, sa[0]);
  }
  if (i < n) {
    const auto dev = hn::IfThenElseZero(hn::FirstN(d, n - i), hn::Sub(LoadPartial(d, next + i, n - i), k));
    ca[1] = hn::Add(ca[1], dev);
    sa[1] = hn::MulAdd(dev, dev, sa[1]);
  }
  c = Total(d, ca);
  s = Total(d, sa);
  ApplyColumnsFrom<kHwBf16>(d, x, y, applied, n, mean, rstd, gamma, beta);
}

// RMSNorm's counterpart of ApplyWithNextCentredSums: one row's apply step with gamma (its mean +0,
// so x * rstd * gamma as Apply computes it for f32 compute) and the next row's sum of squares
// (SumsOfSquares<1>: the same accumulators, in the same order).
template <bool kHwBf16, class D, class T>
HWY_INLINE void ApplyWithNextSumOfSquares(D d, const T* x, T* y, std::size_t n, float rstd,
                                          const float* HWY_RESTRICT gamma, const T* next, float& sum,
                                          const PairedParams<float>& paired = {}) {
  static_assert(std::is_same_v<hn::TFromD<D>, float>, "f32 compute only");
  const std::size_t N = hn::Lanes(d);
  constexpr std::size_t K = kSquareAcc;
  constexpr std::size_t kStep = kSumStep<D, T>;
  const auto rs = hn::Set(d, rstd);
  hn::Vec<D> a[K];
  for (auto& v : a) v = hn::Zero(d);
  const std::size_t applied = PipelinedSteps<kHwBf16, false, K>(
      d, x, y, n, rs, rs, gamma, nullptr, next, paired,
      [&](std::size_t j, const hn::Vec<D>* v) HWY_ATTR __attribute__((always_inline)) {
        for (std::size_t q = 0; q < kStep; ++q) a[j + q] = hn::MulAdd(v[q], v[q], a[j + q]);
      });
  std::size_t i = applied;
  for (std::size_t j = 0; i + N <= n; i += N, ++j) {  // SumsOfSquares' tail
    const auto v = LoadRow(d, next + i);
    a[j] = hn::MulAdd(v, v, a[j]);
  }
  if (i < n) {
    const auto v = LoadPartial(d, next + i, n - i);
    a[K - 1] = hn::MulAdd(v, v, a[K - 1]);
  }
  sum = TotalOfSquares(d, a);
  ApplyColumnsFrom<kHwBf16>(d, x, y, applied, n, 0.0f, rstd, gamma, static_cast<const float*>(nullptr));
}

// Statistics of chunk k of a row (see chunked_stats.hpp): LayerNorm (mean, M2), RMSNorm (-, sum x^2).
// ahead: where nonzero, the read prefetches the row that many elements ahead of itself (into
// the next chunk; see detail::prefetch_long_rows_ahead), through the next-rows prefetch of one row.
// next_row (wins over ahead): the read prefetches the first half of this next row at half rate,
// chunk k's share of it (see kHalfRateNextRows).
template <class D, class T>
HWY_INLINE void ChunkStatsTyped(D d, const T* HWY_RESTRICT row, std::int64_t cols, std::int64_t k, Norm norm,
                                hn::TFromD<D>& mean, hn::TFromD<D>& m2, std::size_t ahead = 0,
                                const T* next_row = nullptr) {
  const std::int64_t begin = k * detail::kStatsChunk;
  const auto n = static_cast<std::size_t>(std::min(cols - begin, detail::kStatsChunk));
  const T* x[1] = {row + begin};
  mean = 0;
  if (next_row) {
    const T* next = next_row + begin / 2;
    if (centres(norm))
      BlockStats<1, 1>(d, x, n, &mean, &m2, next);
    else
      SumsOfSquares<1, 1>(d, x, n, &m2, next);
    return;
  }
  const T* next = ahead ? x[0] + ahead : nullptr;
  if (centres(norm))
    BlockStats<1>(d, x, n, &mean, &m2, next);
  else
    SumsOfSquares<1>(d, x, n, &m2, next);
}

}  // namespace HWY_NAMESPACE
}  // namespace normbench
HWY_AFTER_NAMESPACE();

#endif  // NORMBENCH_HIGHWAY_OPS_INL_H_
