// Unit tests: the Prometheus text exposition writer (aisrv/daemon/metrics_writer.cpp) and the server's lock-free
// instruments (aisrv/server_metrics.hpp): escaping, exact pages for known observations, cumulative histogram buckets,
// refused names and duplicate families, transport and status slots.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <thread>

#include "aisrv/protocol/status.h"
#include "aisrv/server_metrics.hpp"
#include "metrics_writer.hpp"

using namespace aisrv;
using daemon::MetricsWriter;
using daemon::MetricType;

TEST_CASE("label values and help texts are escaped as the exposition format wants") {
  CHECK(MetricsWriter::escape_label_value(R"(a\b"c)" "\n" "d") == R"(a\\b\"c\nd)");
  CHECK(MetricsWriter::escape_help("x\\y\nz \"q\"") == "x\\\\y\\nz \"q\"");  // quotes stay in HELP
  MetricsWriter w;
  REQUIRE(w.family("aisrv_model_info", MetricType::gauge, "Model\nwith \\ in help"));
  w.sample({{"engine", "0"}, {"source", "fl\"ash\\\n"}}, uint64_t{1});
  CHECK(w.text() ==
        "# HELP aisrv_model_info Model\\nwith \\\\ in help\n"
        "# TYPE aisrv_model_info gauge\n"
        "aisrv_model_info{engine=\"0\",source=\"fl\\\"ash\\\\\\n\"} 1\n");
}

TEST_CASE("values: integers without a fraction, special values spelt out") {
  CHECK(MetricsWriter::format_value(0) == "0");
  CHECK(MetricsWriter::format_value(42) == "42");
  CHECK(MetricsWriter::format_value(0.25) == "0.25");
  CHECK(MetricsWriter::format_value(0.0001) == "0.0001");
  CHECK(MetricsWriter::format_value(std::numeric_limits<double>::infinity()) == "+Inf");
  CHECK(MetricsWriter::format_value(-std::numeric_limits<double>::infinity()) == "-Inf");
  CHECK(MetricsWriter::format_value(std::nan("")) == "NaN");
}

TEST_CASE("a histogram's buckets are written cumulatively with _sum and _count") {
  server::LatencyHistogram h;
  // 50 µs and 100 µs fall in le=0.0001 (bounds are inclusive), 3 ms in le=0.005, 20 s above every bound.
  for (uint64_t ns : {50'000ull, 100'000ull, 3'000'000ull, 20'000'000'000ull}) h.observe_ns(ns);
  const auto snap = h.snapshot();
  CHECK(snap.count == 4);
  CHECK(snap.sum_ns == 20'003'150'000ull);
  CHECK(snap.buckets[0] == 2);
  CHECK(snap.buckets[5] == 1);  // 5 ms
  CHECK(snap.buckets[server::LatencyHistogram::kBuckets] == 1);

  MetricsWriter w;
  REQUIRE(w.family("aisrv_compute_seconds", MetricType::histogram, "Compute."));
  const double bounds[] = {0.0001, 0.005, 1};
  const uint64_t buckets[] = {2, 1, 0, 1};
  w.histogram({{"engine", "1"}}, bounds, buckets, 20.00315);
  CHECK(w.text() ==
        "# HELP aisrv_compute_seconds Compute.\n"
        "# TYPE aisrv_compute_seconds histogram\n"
        "aisrv_compute_seconds_bucket{engine=\"1\",le=\"0.0001\"} 2\n"
        "aisrv_compute_seconds_bucket{engine=\"1\",le=\"0.005\"} 3\n"
        "aisrv_compute_seconds_bucket{engine=\"1\",le=\"1\"} 3\n"
        "aisrv_compute_seconds_bucket{engine=\"1\",le=\"+Inf\"} 4\n"
        "aisrv_compute_seconds_sum{engine=\"1\"} 20.00315\n"
        "aisrv_compute_seconds_count{engine=\"1\"} 4\n");
  // A bucket list that does not fit the bounds is not written.
  MetricsWriter bad;
  REQUIRE(bad.family("aisrv_x_seconds", MetricType::histogram, "x"));
  const auto before = bad.text();
  bad.histogram({}, bounds, std::span<const uint64_t>(buckets, 3), 0);
  CHECK(bad.text() == before);
}

TEST_CASE("invalid names, reserved labels and duplicate families are refused; their samples dropped") {
  MetricsWriter w;
  CHECK(w.family("aisrv_requests_total", MetricType::counter, "Requests."));
  w.sample({{"status", "OKAY"}}, uint64_t{3});
  CHECK_FALSE(w.family("aisrv_requests_total", MetricType::counter, "again"));
  w.sample({{"status", "OKAY"}}, uint64_t{99});  // dropped
  CHECK_FALSE(w.family("9starts_with_digit", MetricType::gauge, "x"));
  CHECK_FALSE(w.family("has space", MetricType::gauge, "x"));
  CHECK_FALSE(w.family("", MetricType::gauge, "x"));
  w.sample({}, uint64_t{5});  // dropped
  CHECK(w.family("aisrv_lat_seconds", MetricType::histogram, "x"));
  CHECK_FALSE(w.family("aisrv_lat_seconds_count", MetricType::gauge, "collides with the histogram's series"));
  CHECK(w.family("frigate:requests_total", MetricType::counter, "colons are allowed in metric names"));
  w.sample({{"bad-label", "x"}, {"__reserved", "y"}, {"ok", "z"}}, uint64_t{1});
  CHECK(w.text() ==
        "# HELP aisrv_requests_total Requests.\n"
        "# TYPE aisrv_requests_total counter\n"
        "aisrv_requests_total{status=\"OKAY\"} 3\n"
        "# HELP aisrv_lat_seconds x\n"
        "# TYPE aisrv_lat_seconds histogram\n"
        "# HELP frigate:requests_total colons are allowed in metric names\n"
        "# TYPE frigate:requests_total counter\n"
        "frigate:requests_total{ok=\"z\"} 1\n");
  CHECK(MetricsWriter::valid_label_name("engine"));
  CHECK_FALSE(MetricsWriter::valid_label_name("a:b"));
}

TEST_CASE("a MetricsSource adds its families to the same page") {
  daemon::MetricsSource frigate = [](MetricsWriter& w) {
    w.family("aisrv_frigate_requests_total", MetricType::counter, "Detection requests.");
    w.sample({{"endpoint", "ipc:///tmp/cache/zmq_detector"}}, uint64_t{12});
  };
  MetricsWriter w;
  frigate(w);
  CHECK(w.take() ==
        "# HELP aisrv_frigate_requests_total Detection requests.\n"
        "# TYPE aisrv_frigate_requests_total counter\n"
        "aisrv_frigate_requests_total{endpoint=\"ipc:///tmp/cache/zmq_detector\"} 12\n");
}

TEST_CASE("server instruments: status slots, transports, concurrent observations") {
  server::ServerMetrics m(2);
  CHECK(server::ServerMetrics::status_slot(AISRV_STATUS_OKAY) == 0);
  CHECK(server::ServerMetrics::status_slot(AISRV_STATUS_ERROR_LIMIT) == 17);
  CHECK(server::ServerMetrics::slot_status(17) == AISRV_STATUS_ERROR_LIMIT);
  m.note_answer(AISRV_STATUS_OKAY);
  m.note_answer(AISRV_STATUS_ERROR_LIMIT);
  m.note_answer(AISRV_STATUS_ERROR_LIMIT);
  CHECK(m.answers(0) == 1);
  CHECK(m.answers(17) == 2);

  CHECK(&m.transport("unix") == &m.transport("unix"));
  for (size_t i = 0; i < server::ServerMetrics::kMaxTransports + 5; ++i)
    m.transport("t" + std::to_string(i)).sessions_opened.fetch_add(1);
  const auto all = m.transports();
  CHECK(all.size() == server::ServerMetrics::kMaxTransports + 1);  // the first 15 names, then "other"
  CHECK(all.back()->name == "other");
  CHECK(all.back()->sessions_opened.load() == 6);  // t14..t19 share it

  // Many threads observing at once lose nothing.
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&m] {
      for (int i = 0; i < 10000; ++i) m.engine(1).compute.observe_ns(static_cast<uint64_t>(i) * 1000);
    });
  for (auto& t : threads) t.join();
  const auto snap = m.engine(1).compute.snapshot();
  CHECK(snap.count == 40000);
  CHECK(snap.sum_ns == 4ull * 1000 * (9999ull * 10000 / 2));
  CHECK(m.engine(0).compute.snapshot().count == 0);
}
