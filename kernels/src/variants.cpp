// The named variants (LayerNorm / RMSNorm formulas, BatchNorm's inference mode): one table for
// the accuracy harness, the benchmark, the listings and the README's variant table.
#include <algorithm>

#include <fmt/format.h>

#include "normbench/normbench.hpp"

namespace normbench {

bool VariantPreset::applies(Norm n, DType t) const {
  if (storage_dtypes_only && t != DType::kBF16 && t != DType::kF16) return false;
  return std::find(norms.begin(), norms.end(), n) != norms.end();
}

Problem VariantPreset::apply_to(Problem p) const {
  p.variant = variant;
  p.residual_add = residual_add;
  if (p.norm == Norm::kBatchNorm) p.batchnorm.training = !batchnorm_inference;
  return p;
}

std::span<const VariantPreset> variant_presets() {
  static const std::vector<VariantPreset> presets = [] {
    const std::vector<Norm> both = {Norm::kLayerNorm, Norm::kRMSNorm};
    const std::vector<Norm> all = {Norm::kLayerNorm, Norm::kRMSNorm, Norm::kGroupNorm, Norm::kBatchNorm};
    const std::vector<Norm> bn = {Norm::kBatchNorm};
    const std::vector<Norm> ln = {Norm::kLayerNorm}, rms = {Norm::kRMSNorm};
    return std::vector<VariantPreset>{
        {"standard",
         "LayerNorm (x-mean)/sqrt(var+eps)*g+b, biased var; RMSNorm x/sqrt(mean(x^2)+eps)*g; BatchNorm a training "
         "step (batch statistics, running statistics updated)",
         "torch.nn.LayerNorm, torch.nn.RMSNorm, Llama's LlamaRMSNorm, torch.nn.GroupNorm, torch.nn.BatchNorm2d.train()",
         all, false, {}, false, true, true},
        {"eps-outside", "(x-mean)/(sqrt(var)+eps)*g+b",
         "the Annotated Transformer's LayerNorm (a_2*(x-mean)/(std+eps)+b_2), many hand-written LayerNorms", ln,
         false, {.eps_outside_sqrt = true}, false, true, true},
        {"unbiased", "(x-mean)/sqrt(sum(x-mean)^2/(n-1)+eps)*g+b",
         "hand-written LayerNorms calling x.var()/x.std() with torch's default unbiased=True", ln, false,
         {.unbiased = true}, false, true, true},
        {"rms-shift", "x/sqrt(mean(x^2)+eps)*g+b", "RMSNorm with its optional shift (Zhang & Sennrich 2019)", rms,
         false, {}, false, true, true, true},
        {"param-free", "LayerNorm (x-mean)/sqrt(var+eps); RMSNorm x/sqrt(mean(x^2)+eps)",
         "OLMo's non-parametric LayerNorm, QK-norm without weights, GroupNorm/BatchNorm(affine=False)", all, false, {},
         false, false, false},
        {"gemma", "x/sqrt(mean(x^2)+eps)*(1+g)", "Gemma 1/2/3 (GemmaRMSNorm stores w, applies 1+w)", rms, false,
         {.one_plus_gamma = true}, false, true, false},
        {"storage", "the standard formula with every step rounded to bf16/f16 (no upcast)",
         "torch ops applied directly to bf16 tensors; Llama/Qwen3 upcast to f32 instead", both, true,
         {.storage_compute = true}, false, true, true},
        {"residual-add", "h = x + r (rounded), y = norm(h); returns h and y",
         "pre-norm Transformer blocks: vLLM fused_add_rms_norm, TensorRT-LLM AddRMSNorm", both, false, {}, true, true,
         true},
        {"inference", "(x-running_mean)/sqrt(running_var+eps)*g+b", "torch.nn.BatchNorm2d.eval(), folded into "
         "convolutions at deployment", bn, false, {}, false, true, true, false, true},
    };
  }();
  return presets;
}

const VariantPreset& find_variant(std::string_view name) {
  std::string known;
  for (const VariantPreset& v : variant_presets()) {
    if (v.name == name) return v;
    known += known.empty() ? "" : ", ";
    known += v.name;
  }
  throw Error(fmt::format("unknown variant '{}' (known: {})", name, known));
}

}  // namespace normbench
