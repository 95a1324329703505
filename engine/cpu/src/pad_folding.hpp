// aisrv CPU engine — a load-time graph rewrite: a PAD (or PADV2 with the zero point as its value) whose only reader
// is a VALID CONV_2D or DEPTHWISE_CONV_2D is folded into that convolution. The convolution then reads the PAD's
// input and pads as it reads (a padding tap multiplies the input offset's negation, i.e. adds exactly what the
// padded zero point would have added: nothing), so the padded tensor is neither written nor allocated. Converters
// emit this pattern for stride-2 convolutions (mobilenet_v2 has four); the PAD costs a pass over memory that does
// not split across threads. The result is bit-exact by construction and checked by the model tests at every level.
#pragma once

#include <cstdint>
#include <vector>

#include "graph.hpp"

namespace aisrv::engine::cpu {

struct PadFold {
  int32_t pad_op = 0;   // the PAD operator, left in the graph but no longer run
  int32_t into_op = 0;  // the convolution that now reads the PAD's input with `padding`
  Padding2D padding;
};

// Finds every foldable PAD and rewrites its reader (input 0 and its `folded_pad`). Operators the
// rewrite does not apply to are left untouched; nothing is refused here (preparation still validates every
// operator, the folded PAD included).
std::vector<PadFold> fold_pads(Graph& graph);

}  // namespace aisrv::engine::cpu
