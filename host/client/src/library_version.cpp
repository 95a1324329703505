// aisrv host — the version of the client library an application runs with (libaisrv-client).
#include "aisrv/client/client.hpp"

#include "aisrv/build_info.hpp"

namespace aisrv::client {

std::string_view library_version() { return AISRV_VERSION_STRING; }

}  // namespace aisrv::client
