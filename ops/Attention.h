//===- ops/Attention.h - what every attention kernel shares ---------------===//
//
// C++17: CUDA translation units include it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ops/Attribute.h"

#include <cstdint>

namespace mpc::ops {

/// The factor of q k^T: the `scale` attribute, or 1/sqrt(depth) for its
/// default 0 (PyTorch's scale=None).
double attentionScale(const AttrMap &attrs, int64_t depth);

/// attention_grad's `wrt`: one operand's gradient, or all three packed.
enum class AttentionWrt { Q, K, V, QKV };
/// The `wrt` attribute of attention_grad (checked by its shape rule).
AttentionWrt attentionWrt(const AttrMap &attrs);

/// attention_grad {wrt: qkv}'s result: per leading index (batch, heads), a
/// row of dq [T, d], dk [S, d] and dv [S, e] one after another, so the
/// result is [..., 1, T*d + S*d + S*e] (the leading axes kept, for the
/// batch and sharding rules). The offsets of the three in that row.
struct PackedAttentionGrad {
  int64_t dq, dk, dv, size;
};
inline PackedAttentionGrad packedAttentionGrad(int64_t T, int64_t S, int64_t d, int64_t e) {
  return {0, T * d, T * d + S * d, T * d + S * d + S * e};
}

} // namespace mpc::ops
