// aisrv CLI — HEF commands (local, no server): `aisrv hef info FILE|DIR [--streams] [--json]` prints what
// `hailortcli parse-hef` of HailoRT 4.23 prints (docs/engine-hailo8.md), or the reader's JSON. Exit 0 when every
// file parsed, 1 when one did not (the reason goes to stderr), 2 for usage errors.
// `aisrv hef verify-hailort [--library PATH] HEF|DIR...` holds our reader and transforms to an installed libhailort:
// one line per HEF and a summary (or JSON); exit 0 only when everything the library accepted agrees, 1 when something
// differs, 2 for usage errors (a path that does not exist), 3 when no usable libhailort was found.
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "aisrv/engine/hailo8/hef/describe.hpp"
#include "aisrv/engine/hailo8/verify/hailort_check.hpp"
#include "cli_context.hpp"

namespace aisrv::cli {

void add_hef_commands(CLI::App& app, CliContext& ctx) {
  auto* hef = app.add_subcommand("hef", "Inspect Hailo HEF files locally (no server needed)");
  hef->require_subcommand(1);
  struct InfoArgs {
    std::string path;
    bool streams = false;
  };
  auto args = std::make_shared<InfoArgs>();
  auto* info = hef->add_subcommand(
      "info", "Describe a HEF file, or every *.hef in a directory, like `hailortcli parse-hef` (HailoRT 4.23)");
  info->add_option("PATH", args->path, "HEF file or directory")->required();
  info->add_flag("--streams", args->streams, "Also list the device-side streams (hailortcli --parse-streams)");
  info->callback([&ctx, args] {
    ctx.run([&]() -> Status {
      engine::hailo8::hef::DescribeOptions o;
      o.streams = args->streams;
      auto d = engine::hailo8::hef::describe_path(args->path, o);
      if (!d) return Error{Errc::model_error, d.error().message};  // names the path
      if (ctx.options.json) {
        std::cout << engine::hailo8::hef::dump_json(d->json) << std::endl;
      } else {
        std::cout << d->text << std::flush;
      }
      for (const auto& e : d->errors) std::cerr << "aisrv: " << e << std::endl;
      if (!d->errors.empty()) ctx.set_exit_code(kServerError);
      return ok();
    });
  });

  struct VerifyArgs {
    std::vector<std::string> paths;
    std::string library;
  };
  auto vargs = std::make_shared<VerifyArgs>();
  auto* verify = hef->add_subcommand(
      "verify-hailort",
      "Compare aisrv's HEF reader and host transforms with an installed libhailort (no device needed): every network "
      "group, stream and vstream fact HailoRT reports, frame sizes, and each stream's host transform (default and "
      "FLOAT32 user formats) on the same deterministic frames. A HEF HailoRT refuses is listed with its status. "
      "Exit 0 when everything the library accepted agrees, 1 when something differs, 3 when no libhailort is usable");
  verify->add_option("PATHS", vargs->paths, "HEF files, or directories searched (recursively) for *.hef files")->required();
  verify->add_option("--library", vargs->library,
                     "libhailort to load (default: $AISRV_HAILORT_LIBRARY, else the sonames of HailoRT 4.21-4.23 "
                     "through the dynamic linker's search path)");
  verify->callback([&ctx, vargs] {
    ctx.run([&]() -> Status {
      namespace verify = engine::hailo8::verify;
      namespace runtime = engine::hailo8::runtime;
      std::vector<std::filesystem::path> files;
      for (const auto& p : vargs->paths) {
        std::error_code ec;
        if (std::filesystem::is_directory(p, ec)) {
          std::vector<std::filesystem::path> found;
          for (const auto& e : std::filesystem::recursive_directory_iterator(p, ec))
            if (e.path().extension() == ".hef") found.push_back(e.path());
          std::sort(found.begin(), found.end());
          if (found.empty()) return make_error(Errc::invalid_argument, "no *.hef file in {}", p);
          files.insert(files.end(), found.begin(), found.end());
        } else if (std::filesystem::exists(p, ec)) {
          files.emplace_back(p);
        } else {
          return make_error(Errc::invalid_argument, "{}: no such file or directory", p);
        }
      }
      // libhailort writes hailort.log where HAILORT_LOGGER_PATH says: keep it out of the working directory.
      const std::string log_dir = runtime::prepare_hailort_log_dir("");
      // HailoRT prints every error it logs on stderr too; its log file has them, and refusals are reported below
      ::setenv("HAILORT_CONSOLE_LOGGER_LEVEL", "critical", 0);
      auto lib = runtime::HailortLibrary::open_configured(vargs->library);
      // exit 3 (as for a server that cannot be reached) whatever the reason the library is unusable
      if (!lib) return Error{Errc::not_found, lib.error().message};
      auto api = (*lib)->hef_api();
      if (!api) return Error{Errc::not_found, api.error().message};
      const auto& v = (*lib)->version();
      nlohmann::json reports = nlohmann::json::array();
      size_t agree = 0, refused = 0, differ = 0;
      if (!ctx.options.json) {
        std::cout << fmt::format("libhailort {}.{}.{} ({}); its log: {}/hailort.log", v.major, v.minor, v.revision,
                                 (*lib)->path(), log_dir)
                  << std::endl;
      }
      for (const auto& f : files) {
        const auto r = verify::check_hef(**lib, *api, f, std::filesystem::path(log_dir) / "hailort.log");
        if (!r.hailort_accepted) ++refused;
        else if (r.agrees()) ++agree;
        else ++differ;
        if (ctx.options.json) {
          reports.push_back(verify::to_json(r));
          continue;
        }
        std::cout << r.summary_line() << std::endl;
        for (const auto& d : r.differences)
          std::cout << fmt::format("  differs: {}: aisrv {}, HailoRT {}", d.where, d.aisrv, d.hailort) << std::endl;
        for (const auto& t : r.transforms) {
          using O = verify::TransformCheck::Outcome;
          if (t.outcome == O::bit_exact) continue;
          std::cout << fmt::format("  transform {}/{} ({}, {}): {}", t.group, t.stream, t.input ? "input" : "output",
                                   t.user_format, verify::outcome_name(t.outcome));
          if (t.outcome == O::differs)
            std::cout << fmt::format(", {} of {} elements, max difference {}", t.differing, t.elements,
                                     t.max_difference);
          if (!t.detail.empty()) std::cout << ": " << t.detail;
          std::cout << std::endl;
        }
      }
      const std::string summary =
          fmt::format("{} HEF(s): {} agree, {} differ, {} refused by HailoRT {}.{}.{}", files.size(), agree, differ,
                      refused, v.major, v.minor, v.revision);
      if (ctx.options.json) {
        ctx.print_json({{"library", (*lib)->path()},
                        {"version", fmt::format("{}.{}.{}", v.major, v.minor, v.revision)},
                        {"hefs", reports},
                        {"summary", {{"hefs", files.size()}, {"agree", agree}, {"differ", differ}, {"refused", refused}}}});
      } else {
        std::cout << summary << std::endl;
      }
      if (differ) ctx.set_exit_code(kServerError);
      return ok();
    });
  });
}

}  // namespace aisrv::cli
