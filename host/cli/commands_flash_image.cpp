// aisrv CLI — offline flash images for production (no server involved): `flash-image create` builds an image file
// with models for chosen engines, `flash-image inspect` shows an image's (or mtd:/dev/mtdN's) layout and catalogue
// with every stored model's hash verified. The work is done by the aisrv_flash_image library.
#include <fmt/format.h>

#include <map>

#include "aisrv/flash/image.hpp"
#include "cli_context.hpp"

namespace aisrv::cli {

void add_flash_image_commands(CLI::App& app, CliContext& ctx) {
  auto* group = app.add_subcommand("flash-image", "Offline flash images: create one with models, inspect one");
  group->require_subcommand(1);
  group->fallthrough();

  struct CreateArgs {
    std::string out, size = "16M", erase_block = "64K";
    unsigned write_size = 1, clients = 16;
    std::vector<std::string> models, names, params;
    bool force = false;
  };
  auto ca = std::make_shared<CreateArgs>();
  auto* create = group->add_subcommand("create", "Create a flash image holding models (engine N = client N)");
  create->add_option("--out,-o", ca->out, "Image file to create")->required();
  create->add_option("--size", ca->size, "Image size (e.g. 16M)");
  create->add_option("--erase-block", ca->erase_block, "Erase-block size of the target chip (e.g. 64K)");
  create->add_option("--write-size", ca->write_size, "Program granularity of the target chip in bytes");
  create->add_option("--clients", ca->clients, "Clients (engine numbers) in the catalogue")->check(CLI::Range(1u, 64u));
  create->add_option("--model", ca->models, "N=FILE: store FILE as engine N's model (repeatable)");
  create->add_option("--name", ca->names, "N=NAME: catalogue name of engine N's model (default: file name)");
  create->add_option("--params", ca->params, "N=FILE: parameter block of engine N (READ_PARAMETERS)");
  create->add_flag("--force", ca->force, "Replace an existing file");
  create->fallthrough();
  create->callback([&ctx, ca] {
    ctx.run([&]() -> Status {
      flash::CreateImageOptions o;
      o.out = ca->out;
      o.overwrite = ca->force;
      o.clients = ca->clients;
      const uint64_t size = AISRV_TRY(flash::parse_size(ca->size));
      const uint64_t eb = AISRV_TRY(flash::parse_size(ca->erase_block));
      if (eb > UINT32_MAX) return make_error(Errc::invalid_argument, "--erase-block {} is too large", ca->erase_block);
      o.geometry = {size, static_cast<uint32_t>(eb), ca->write_size};
      std::map<uint32_t, size_t> index;
      for (const auto& m : ca->models) {
        o.models.push_back(AISRV_TRY(flash::parse_model_arg(m)));
        index[o.models.back().client] = o.models.size() - 1;
      }
      auto find = [&](uint32_t client, const std::string& arg) -> Result<flash::ImageModel*> {
        auto it = index.find(client);
        if (it == index.end())
          return make_error(Errc::invalid_argument, "'{}': engine {} has no --model", arg, client);
        return &o.models[it->second];
      };
      for (const auto& n : ca->names) {
        const auto [client, name] = AISRV_TRY(flash::parse_name_arg(n));
        AISRV_TRY(find(client, n))->name = name;
      }
      for (const auto& p : ca->params) {
        const auto pm = AISRV_TRY(flash::parse_model_arg(p));
        AISRV_TRY(find(pm.client, p))->parameters = pm.file;
      }
      const auto report = AISRV_TRY(flash::create_image(o));
      if (ctx.options.json) ctx.print_json(flash::render_json(report));
      else fmt::print("{}", flash::render_text(report));
      return ok();
    });
  });

  struct InspectArgs {
    std::string spec, erase_block;
  };
  auto ia = std::make_shared<InspectArgs>();
  auto* inspect = group->add_subcommand("inspect", "Show an image's layout and catalogue, every model's hash verified "
                                                   "(exit code 1 when one does not verify); never writes");
  inspect->add_option("IMAGE", ia->spec, "Image file or mtd:/dev/mtdN")->required();
  inspect->add_option("--erase-block", ia->erase_block, "Erase-block size (default: from the image's superblock)");
  inspect->fallthrough();
  inspect->callback([&ctx, ia] {
    ctx.run([&]() -> Status {
      flash::OpenOptions o;
      if (!ia->erase_block.empty()) {
        const uint64_t eb = AISRV_TRY(flash::parse_size(ia->erase_block));
        if (eb > UINT32_MAX) return make_error(Errc::invalid_argument, "--erase-block is too large");
        o.erase_block = static_cast<uint32_t>(eb);
      }
      const auto report = AISRV_TRY(flash::inspect_image(ia->spec, o));
      if (ctx.options.json) ctx.print_json(flash::render_json(report));
      else fmt::print("{}", flash::render_text(report));
      if (!report.ok()) ctx.set_exit_code(kServerError);
      return ok();
    });
  });
}

}  // namespace aisrv::cli
