// aisrv interpreter — the version of the server library an application embeds (libaisrv-server).
#include "aisrv/build_info.hpp"
#include "aisrv/server.hpp"

namespace aisrv::server {

std::string_view library_version() { return AISRV_VERSION_STRING; }

}  // namespace aisrv::server
