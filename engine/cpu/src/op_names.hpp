// aisrv CPU engine — TensorFlow Lite builtin operator names ("CONV_2D") by operator code.
#pragma once

#include <cstdint>
#include <string>

namespace aisrv::engine::cpu {

// The format's name of a builtin operator code; "BUILTIN_<code>" for a code this table does not know.
std::string builtin_op_name(int32_t code);

}  // namespace aisrv::engine::cpu
