// aisrv VM test (runs in the guest) — output GPIO on a real kernel GPIO chip: the kernel's hid-cp2112 driver bound
// to a CP2112 emulated over FunctionFS and dummy_hcd (cp2112_emulator.hpp; the guest script created the gadget with
// the CP2112's ids and mounted its FunctionFS at /dev/ffs-cp2112). aisrvd drives lines of that chip through the GPIO
// character device (libgpiod); the levels are read back on the emulated chip's side. Runs person_detect on a person
// and a no-person picture: output 0 is [no person, person] (int8), so the lines cross their thresholds one way for
// one input and the other way for the other. Needs /vmtest/data/person_detect.tflite, person.bin, no_person.bin.
#include <doctest/doctest.h>
#include <gpiod.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "aisrv/client/client.hpp"
#include "cp2112_emulator.hpp"
#include "process.hpp"

using namespace aisrv;
using protocol::Command;

namespace {

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE_MESSAGE(f, "missing " << path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::vector<uint8_t> u32(uint32_t v) {
  return {static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v >> 16),
          static_cast<uint8_t>(v >> 24)};
}

// Another program holding lines of the chip (as gpioset would).
struct Holder {
  gpiod_chip* chip = nullptr;
  gpiod_line_bulk bulk{};
  bool held = false;
  Holder(const std::vector<unsigned>& offsets) {
    chip = gpiod_chip_open_lookup("cp2112_gpio");
    REQUIRE(chip);
    REQUIRE(gpiod_chip_get_lines(chip, const_cast<unsigned*>(offsets.data()), offsets.size(), &bulk) == 0);
    held = gpiod_line_request_bulk_output(&bulk, "holder", nullptr) == 0;
  }
  ~Holder() {
    if (held) gpiod_line_release_bulk(&bulk);
    gpiod_chip_close(chip);
  }
};

}  // namespace

TEST_CASE("output GPIO through aisrvd on the kernel's hid-cp2112 gpiochip (CP2112 emulated over FunctionFS)") {
  const auto model = read_file("/vmtest/data/person_detect.tflite");
  const auto person = read_file("/vmtest/data/person.bin");
  const auto no_person = read_file("/vmtest/data/no_person.bin");

  test::Cp2112Emulator chip("/dev/ffs-cp2112");
  REQUIRE_MESSAGE(chip.start(), chip.error());
  const auto bound = test::run({"/vmtest/bin/usb-gadget", "bind", "--name", "cp2112"});
  REQUIRE_MESSAGE(bound.exit_code == 0, bound.out << bound.err);
  // hid-cp2112 probes (version, SMBus config) and registers the chip.
  gpiod_chip* found = nullptr;
  for (int i = 0; i < 100 && !found; ++i) {
    found = gpiod_chip_open_lookup("cp2112_gpio");
    if (!found) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE_MESSAGE(found, "no gpiochip labelled cp2112_gpio after binding the emulated CP2112 ("
                             << chip.requests() << " control requests answered)");
  MESSAGE("gpiochip " << std::string(gpiod_chip_name(found)) << " '" << std::string(gpiod_chip_label(found)) << "', "
                      << gpiod_chip_num_lines(found) << " lines");
  CHECK(gpiod_chip_num_lines(found) == 8);
  gpiod_chip_close(found);

  test::TempDir dir;
  // A line another program holds: a clear start-up error naming the holder, never a silent no-op.
  {
    Holder other({3});
    REQUIRE(other.held);
    const std::string sock = dir.file("busy.sock");
    auto r = test::run({"/vmtest/bin/aisrvd", "--listen", "unix:" + sock, "--engine", "0=cpu", "--gpio",
                        "0=cp2112_gpio:1,3"},
                       std::chrono::seconds(30));
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("--gpio 0=cp2112_gpio:1,3") != std::string::npos);
    CHECK(r.err.find("line 3 is in use by 'holder'") != std::string::npos);
  }

  const std::string sock = dir.file("gpio.sock");
  test::ServerProcess d({"/vmtest/bin/aisrvd", "--listen", "unix:" + sock, "--engine", "0=cpu", "--gpio",
                         "0=cp2112_gpio:0,1"},
                        sock);
  // Requested at start-up as outputs, driven low.
  CHECK((chip.direction() & 0x03) == 0x03);
  CHECK((chip.latch() & 0x03) == 0);
  {
    Holder again({0});
    CHECK_FALSE(again.held);  // aisrvd holds it
  }
  auto c = client::Client::connect("unix:" + sock);
  REQUIRE(c.ok());
  CHECK((c->server_version().capabilities & AISRV_CAP_GPIO) != 0);
  auto call = [&](Command cmd, uint32_t tensor, std::vector<uint8_t> payload = {}) {
    auto r = c->call(static_cast<uint32_t>(cmd), 0, tensor, payload);
    REQUIRE_MESSAGE(r.ok(), protocol::command_name(static_cast<uint32_t>(cmd)) << ": " << (r ? "" : r.error().what()));
    return *r;
  };
  REQUIRE(c->load_model(0, model).ok());
  // The policy is set with the CLI, as a user would.
  auto cli = [&](std::vector<std::string> args) {
    std::vector<std::string> full{"/vmtest/bin/aisrv", "--connect", "unix:" + sock};
    full.insert(full.end(), args.begin(), args.end());
    auto r = test::run(full);
    CHECK_MESSAGE(r.exit_code == 0, r.err);
    return r;
  };
  for (const char* line : {"0", "1"}) cli({"gpio", "set", line, "--enable", "1", "--threshold", "0"});
  auto got = cli({"--json", "gpio", "get"});
  const auto j = nlohmann::json::parse(got.out);
  CHECK(j["mode"] == "threshold");
  REQUIRE(j["lines"].size() == 2);
  for (const auto& line : j["lines"]) CHECK((line["enabled"] == true && line["threshold"] == 0));
  auto infer = [&](const std::vector<uint8_t>& input) {
    REQUIRE(c->set_input(0, 0, input).ok());
    REQUIRE(c->start_inference(0).ok());
    auto out = c->get_output(0, 0);
    REQUIRE(out.ok());
    MESSAGE("output [" << int(int8_t((*out)[0])) << ", " << int(int8_t((*out)[1])) << "] -> pins "
                       << int(chip.latch() & 3));
    return chip.latch() & 0x03;
  };
  // Threshold mode: line 0 follows "no person" > 0, line 1 "person" > 0.
  CHECK(infer(person) == 0b10);
  CHECK(infer(no_person) == 0b01);
  CHECK(infer(person) == 0b10);
  // Max mode: only the arg-max's line.
  cli({"gpio", "mode", "max"});
  CHECK(infer(no_person) == 0b01);
  CHECK(infer(person) == 0b10);
  call(Command::SET_OUTPUT_GPIO_THRESH, 1, u32(120));  // person scores 113: not above 120
  CHECK(infer(person) == 0b00);
  const int sets = chip.gpio_sets();
  CHECK(infer(person) == 0b00);
  CHECK(chip.gpio_sets() == sets);  // unchanged levels are not sent again
  // Unloading the model drives the lines to their idle level (low: a lit LED goes out), then gives them back to the
  // kernel; loading takes them again.
  CHECK(infer(no_person) == 0b01);
  REQUIRE(c->call(static_cast<uint32_t>(Command::UNLOAD_MODEL), 0, 0).ok());
  CHECK((chip.latch() & 0x03) == 0);
  {
    Holder after_unload({0, 1});
    CHECK(after_unload.held);
  }
  REQUIRE(c->load_model(0, model).ok());
  {
    Holder after_load({0});
    CHECK_FALSE(after_load.held);
  }
  CHECK(infer(no_person) == 0b01);
  // Replug: the CP2112 goes away (the host sees an unplug) and comes back as a new gpiochip with the same label. While
  // it is away inferences go on (the engine's log says the lines fail); the first inference after it is back that
  // changes the levels opens the chip again by its label, requests the lines and drives them.
  auto chip_present = [] {
    gpiod_chip* ch = gpiod_chip_open_lookup("cp2112_gpio");
    if (ch) gpiod_chip_close(ch);
    return ch != nullptr;
  };
  const auto unbound = test::run({"/vmtest/bin/usb-gadget", "unbind", "--name", "cp2112"});
  REQUIRE_MESSAGE(unbound.exit_code == 0, unbound.out << unbound.err);
  for (int i = 0; i < 100 && chip_present(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE_FALSE(chip_present());
  REQUIRE(c->set_input(0, 0, person).ok());
  CHECK(c->start_inference(0).ok());
  auto log = c->debug_log(0, 2);
  REQUIRE(log.ok());
  MESSAGE("unplugged: " << *log);
  CHECK(log->find("setting the lines failed") != std::string::npos);
  const auto rebound = test::run({"/vmtest/bin/usb-gadget", "bind", "--name", "cp2112"});
  REQUIRE_MESSAGE(rebound.exit_code == 0, rebound.out << rebound.err);
  for (int i = 0; i < 100 && !chip_present(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(chip_present());
  // The chip is back. The next change of the levels opens it again by its label, requests the lines (low) and drives
  // them: person (max mode, line 1's threshold 120 is above its 113) wants both low, no-person line 0 high.
  CHECK(infer(person) == 0b00);
  CHECK(infer(no_person) == 0b01);
  {
    Holder after_replug({0});
    CHECK_FALSE(after_replug.held);  // aisrvd holds the lines of the new chip
  }
  log = c->debug_log(0);
  REQUIRE(log.ok());
  CHECK(log->find("output GPIO: the lines are driven again") != std::string::npos);
  // Shutdown drives them to the idle level and releases them too.
  CHECK(d.stop() == 0);
  CHECK((chip.latch() & 0x03) == 0);
  Holder after_stop({0, 1});
  CHECK(after_stop.held);
}
