// oneDNN peer: layer_normalization_forward (oneDNN 2.6), inference with scale and shift, or
// training when per-row statistics are requested (oneDNN returns the variance; we turn it
// into rstd). oneDNN 2.6 has no RMSNorm, so none is registered; f64 does not exist in oneDNN,
// and bf16/f16 are registered only if this CPU's oneDNN build can create the primitive.
#include "peers.hpp"

#include <fmt/format.h>

#include "normbench/normbench.hpp"

#if NORMBENCH_HAVE_ONEDNN
#include <omp.h>

#include <cmath>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#endif

namespace normbench::peers {

#if NORMBENCH_HAVE_ONEDNN
namespace {
using dnnl::memory;

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

memory::data_type onednn_type(DType t) {
  switch (t) {
    case DType::kF32: return memory::data_type::f32;
    case DType::kBF16: return memory::data_type::bf16;
    case DType::kF16: return memory::data_type::f16;
    case DType::kF64: break;
  }
  throw Error("oneDNN has no f64 data type");
}

using Key = std::tuple<int, std::int64_t, std::int64_t, float, bool, bool, bool>;

dnnl::layer_normalization_forward::primitive_desc make_pd(const Key& k, bool allow_empty) {
  const auto [dt, rows, cols, eps, scale, shift, training] = k;
  const memory::desc md({rows, cols}, static_cast<memory::data_type>(dt), memory::format_tag::ab);
  auto flags = dnnl::normalization_flags::none;
  if (scale) flags = flags | dnnl::normalization_flags::use_scale;
  if (shift) flags = flags | dnnl::normalization_flags::use_shift;
  const auto prop = training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  return {dnnl::layer_normalization_forward::desc(prop, md, eps, flags), cpu_engine(), allow_empty};
}

// Primitive creation costs far more than a small normalization: cache by problem.
const dnnl::layer_normalization_forward& primitive_for(const Key& k) {
  static std::mutex mu;
  static std::map<Key, dnnl::layer_normalization_forward> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(k);
  if (it == cache.end()) it = cache.emplace(k, dnnl::layer_normalization_forward(make_pd(k, false))).first;
  return it->second;
}

void onednn_forward(const Problem& p, const Buffers& b, const RunConfig& cfg) {
  omp_set_num_threads(cfg.threads);  // oneDNN's OpenMP regions use the caller's thread count
  const bool training = b.mean != nullptr || b.rstd != nullptr;
  const Key key{static_cast<int>(onednn_type(p.dtype)), p.rows, p.cols, static_cast<float>(p.eps),
                b.gamma != nullptr, b.beta != nullptr, training};
  const auto& prim = primitive_for(key);
  auto& engine = cpu_engine();
  const memory::desc md({p.rows, p.cols}, onednn_type(p.dtype), memory::format_tag::ab);
  const memory::desc vec_md({p.cols}, memory::data_type::f32, memory::format_tag::a);
  const memory::desc stat_md({p.rows}, memory::data_type::f32, memory::format_tag::a);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(md, engine, const_cast<void*>(b.x))},
                                       {DNNL_ARG_DST, memory(md, engine, b.y)}};
  if (b.gamma) args.emplace(DNNL_ARG_SCALE, memory(vec_md, engine, const_cast<void*>(b.gamma)));
  if (b.beta) args.emplace(DNNL_ARG_SHIFT, memory(vec_md, engine, const_cast<void*>(b.beta)));
  std::vector<float> mean, var;
  if (training) {
    mean.resize(p.rows);
    var.resize(p.rows);
    args.emplace(DNNL_ARG_MEAN, memory(stat_md, engine, mean.data()));
    args.emplace(DNNL_ARG_VARIANCE, memory(stat_md, engine, var.data()));
  }
  dnnl::stream stream(engine);
  prim.execute(stream, args);
  stream.wait();
  for (std::int64_t r = 0; training && r < p.rows; ++r) {
    if (b.mean) b.mean[r] = mean[r];
    if (b.rstd) b.rstd[r] = 1.0f / std::sqrt(var[r] + static_cast<float>(p.eps));
  }
}

std::string onednn_target() {
  const dnnl_version_t* v = dnnl_version();
  return fmt::format("oneDNN {}.{}.{} (own JIT dispatch)", v->major, v->minor, v->patch);
}

std::vector<DType> supported_dtypes() {
  std::vector<DType> out;
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16}) {
    bool ok = true;
    try {
      for (bool training : {false, true})
        ok = ok && make_pd(Key{static_cast<int>(onednn_type(t)), 4, 64, 1e-5f, true, true, training}, true);
    } catch (const dnnl::error&) {
      ok = false;
    }
    if (ok) out.push_back(t);
  }
  return out;
}
}  // namespace

void register_all() {
  static const bool done = [] {
    register_implementation({.name = "onednn", .family = "onednn",
                             .description = "peer: oneDNN layer_normalization_forward "
                                            "(LayerNorm only: oneDNN 2.6 has no RMSNorm)",
                             .norms = {Norm::kLayerNorm}, .dtypes = supported_dtypes(), .accumulator = "f32",
                             .variance_algorithm = VarianceAlgorithm::kTwoPass, .uses_threads = true,
                             .target = onednn_target, .kernel = onednn_forward});
    return true;
  }();
  (void)done;
}

std::vector<std::string> status() {
  std::string dtypes;
  for (DType t : supported_dtypes()) dtypes += fmt::format("{}{}", dtypes.empty() ? "" : " ", dtype_name(t));
  return {fmt::format("onednn: built in ({}); LayerNorm only, oneDNN 2.6 has no RMSNorm; dtypes: {}",
                      onednn_target(), dtypes)};
}
#else
void register_all() {}
std::vector<std::string> status() {
  return {"onednn: not built (libdnnl-dev not found, or NORMBENCH_WITH_ONEDNN=OFF)"};
}
#endif

}  // namespace normbench::peers
