// aisrv sensors — the libcamera frame source (libcamera_frame_source.hpp): one CameraManager for the process, one
// camera acquired and configured with a single stream, every buffer of the stream in a request kept queued. A
// completed request waits in `ready_` (an older one still waiting is given back and counted as dropped); a grab first
// gives back what completed before it started, then waits for the next completion, so it never returns a picture
// taken long before it was asked for. The buffer (mapped once, read only) goes through decode_buffer, the bad-frame
// decision and conversion the V4L2 source uses; the request is queued again. A camera absent at start, or unplugged
// (Camera::disconnected), is looked for again at the next grab.
#include <linux/videodev2.h>
#include <sys/mman.h>

#include <libcamera/libcamera.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fmt/format.h>
#include <map>
#include <mutex>
#include <vector>

#include "aisrv/sensors/libcamera_frame_source.hpp"

namespace aisrv::sensors {

namespace {

// libcamera allows one CameraManager per process; cameras of several engines share it.
std::shared_ptr<libcamera::CameraManager> manager(std::string& error) {
  static std::mutex mu;
  static std::weak_ptr<libcamera::CameraManager> shared;
  std::lock_guard lock(mu);
  if (auto m = shared.lock()) return m;
  auto m = std::make_shared<libcamera::CameraManager>();
  if (const int r = m->start(); r != 0) {
    error = fmt::format("libcamera's camera manager did not start: {}", std::strerror(-r));
    return nullptr;
  }
  shared = m;
  return m;
}

std::string fourcc_text(uint32_t f) {
  std::string s(4, ' ');
  for (int i = 0; i < 4; ++i) s[static_cast<size_t>(i)] = static_cast<char>((f >> (8 * i)) & 0xFF);
  return s;
}

class LibcameraFrameSource final : public FrameSource {
 public:
  explicit LibcameraFrameSource(LibcameraOptions o) : options_(std::move(o)) {}
  ~LibcameraFrameSource() override { close_camera(); }

  std::string describe() const override {
    std::lock_guard lock(mu_);
    if (!camera_) return "libcamera:" + (options_.camera.empty() ? std::string("(first camera)") : options_.camera);
    return fmt::format("libcamera:{} {}x{} {}", camera_->id(), format_.width, format_.height,
                       fourcc_text(format_.pixelformat));
  }
  uint64_t dropped() const override { return dropped_.load(std::memory_order_relaxed); }
  uint64_t bad_frames() const override { return bad_.load(std::memory_order_relaxed); }
  bool present() const override { return present_.load(std::memory_order_relaxed); }

  Status open_camera() {
    std::string error;
    manager_ = manager(error);
    if (!manager_) return make_error(Errc::io_error, "{}", error);
    auto cameras = manager_->cameras();
    std::shared_ptr<libcamera::Camera> cam;
    if (options_.camera.empty()) {
      if (!cameras.empty()) cam = cameras.front();
    } else if (options_.camera.size() <= 2 &&
               options_.camera.find_first_not_of("0123456789") == std::string::npos) {
      const size_t i = std::stoul(options_.camera);
      if (i < cameras.size()) cam = cameras[i];
    } else {
      cam = manager_->get(options_.camera);
    }
    if (!cam) {
      present_.store(false, std::memory_order_relaxed);
      std::string ids;
      for (const auto& c : cameras) ids += (ids.empty() ? "" : ", ") + c->id();
      return make_error(Errc::not_found, "libcamera camera '{}' is absent (libcamera sees: {}); it is opened when it "
                        "appears", options_.camera.empty() ? "(first)" : options_.camera, ids.empty() ? "none" : ids);
    }
    if (cam->acquire() != 0)
      return make_error(Errc::io_error, "libcamera camera {} is in use by another program", cam->id());
    {
      std::lock_guard lock(mu_);
      camera_ = cam;
    }
    auto st = configure();
    if (!st) close_camera();
    present_.store(static_cast<bool>(st), std::memory_order_relaxed);
    return st;
  }

  Status grab(const protocol::TensorInfo&, SensorFrame& out) override {
    if (lost_.load()) close_camera();
    if (!running_) AISRV_TRY(open_camera());
    std::unique_lock lock(mu_);
    // The newest frame: what completed before this grab is given back.
    while (!ready_.empty()) {
      requeue(ready_.front());
      ready_.pop_front();
      dropped_.fetch_add(1, std::memory_order_relaxed);
    }
    if (!cv_.wait_for(lock, std::chrono::milliseconds(options_.timeout_ms),
                      [&] { return !ready_.empty() || lost_.load(); }))
      return make_error(Errc::sensor_error, "{}: no frame within {} ms (the camera stalled)", describe_locked(),
                        options_.timeout_ms);
    if (ready_.empty()) {
      lock.unlock();
      const std::string what = describe();
      close_camera();
      present_.store(false, std::memory_order_relaxed);
      return make_error(Errc::sensor_error, "{}: the camera went away (closed; the next acquisition opens it again)",
                        what);
    }
    libcamera::Request* request = ready_.front();
    ready_.pop_front();
    libcamera::FrameBuffer* buffer = request->buffers().begin()->second;
    const libcamera::FrameMetadata& md = buffer->metadata();
    const std::string what = describe_locked();
    const auto t0 = std::chrono::steady_clock::now();
    Status st = ok();
    auto map = maps_.find(buffer);
    if (map == maps_.end()) {
      st = make_error(Errc::internal, "{}: a buffer that was not mapped", what);
    } else {
      size_t used = 0;
      for (const auto& p : md.planes()) used += p.bytesused;
      used = std::min(used, map->second.size());
      st = decode_buffer(format_, md.status != libcamera::FrameMetadata::FrameSuccess,
                         std::span<const uint8_t>(map->second.data(), used), out.picture, what);
    }
    out.convert_ns = std::chrono::steady_clock::now() - t0;
    out.what = what;
    out.sequence = md.sequence;
    out.captured = std::chrono::nanoseconds(md.timestamp);  // CLOCK_BOOTTIME or MONOTONIC per pipeline
    if (!st && st.error().code == Errc::sensor_error) bad_.fetch_add(1, std::memory_order_relaxed);
    requeue(request);
    return st;
  }

 private:
  std::string describe_locked() const {
    return fmt::format("libcamera:{} {}x{} {}", camera_ ? camera_->id() : options_.camera, format_.width,
                       format_.height, fourcc_text(format_.pixelformat));
  }

  Status configure() {
    auto config = camera_->generateConfiguration({libcamera::StreamRole::VideoRecording});
    if (!config || config->size() != 1)
      return make_error(Errc::not_supported, "libcamera camera {} offers no video stream", camera_->id());
    libcamera::StreamConfiguration& sc = config->at(0);
    std::vector<std::string> offered;
    for (const auto& f : sc.formats().pixelformats()) offered.push_back(f.toString());
    auto list = [&] {
      std::string s;
      for (const auto& f : offered) s += (s.empty() ? "" : ", ") + f;
      return s.empty() ? std::string("none") : s;
    };
    // aisrv's FOURCC -> libcamera's name.
    const std::map<std::string, std::string> names{
        {"YUYV", "YUYV"}, {"MJPG", "MJPEG"}, {"BGR3", "RGB888"}, {"RGB3", "BGR888"}, {"GREY", "R8"}};
    std::string want;
    if (!options_.fourcc.empty()) {
      want = names.at(options_.fourcc);
      if (std::find(offered.begin(), offered.end(), want) == offered.end())
        return make_error(Errc::not_supported, "libcamera camera {} does not offer {} ({}); it offers {}", camera_->id(),
                          options_.fourcc, want, list());
    } else {
      for (const char* f : {"YUYV", "MJPEG", "RGB888", "BGR888", "R8"})
        if (std::find(offered.begin(), offered.end(), f) != offered.end()) {
          want = f;
          break;
        }
      if (want.empty())
        return make_error(Errc::not_supported,
                          "libcamera camera {} offers no format aisrv converts (YUYV, MJPEG, RGB888, BGR888, R8); it "
                          "offers {}", camera_->id(), list());
    }
    for (const auto& f : sc.formats().pixelformats())
      if (f.toString() == want) sc.pixelFormat = f;
    if (options_.width) sc.size = libcamera::Size(options_.width, options_.height);
    sc.bufferCount = std::max(sc.bufferCount, 4u);
    if (config->validate() == libcamera::CameraConfiguration::Invalid)
      return make_error(Errc::not_supported, "libcamera camera {}: {} {}x{} is not a valid configuration",
                        camera_->id(), want, options_.width, options_.height);
    if (sc.pixelFormat.toString() != want)
      return make_error(Errc::not_supported, "libcamera camera {} would not take {} (it chose {})", camera_->id(), want,
                        sc.pixelFormat.toString());
    if (options_.width && (sc.size.width != options_.width || sc.size.height != options_.height))
      return make_error(Errc::not_supported, "libcamera camera {} cannot capture {}x{} in {} (it offers {})",
                        camera_->id(), options_.width, options_.height, want, sc.size.toString());
    if (const int r = camera_->configure(config.get()); r != 0)
      return make_error(Errc::io_error, "libcamera camera {}: configure {}: {}", camera_->id(), sc.toString(),
                        std::strerror(-r));
    stream_ = sc.stream();
    {
      std::lock_guard lock(mu_);
      format_ = BufferFormat{v4l2_fourcc_of_libcamera(want), sc.size.width, sc.size.height, sc.stride};
    }
    if (format_.pixelformat == V4L2_PIX_FMT_MJPEG) format_.stride = 0;
    else if (format_.stride == 0)
      return make_error(Errc::internal, "libcamera camera {}: no line stride for {}", camera_->id(), want);

    allocator_ = std::make_unique<libcamera::FrameBufferAllocator>(camera_);
    if (allocator_->allocate(stream_) < 0)
      return make_error(Errc::io_error, "libcamera camera {}: cannot allocate buffers", camera_->id());
    for (const auto& buffer : allocator_->buffers(stream_)) {
      // One mapping of all planes (they share a dmabuf for the packed formats aisrv converts).
      const auto& planes = buffer->planes();
      const int fd = planes[0].fd.get();
      size_t length = 0;
      for (const auto& p : planes) {
        if (p.fd.get() != fd)
          return make_error(Errc::not_supported, "libcamera camera {}: multi-buffer planes are not converted",
                            camera_->id());
        length = std::max<size_t>(length, size_t(p.offset) + p.length);
      }
      void* mem = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0);
      if (mem == MAP_FAILED)
        return make_error(Errc::io_error, "libcamera camera {}: mmap of a buffer: {}", camera_->id(),
                          std::strerror(errno));
      maps_[buffer.get()] = std::span<const uint8_t>(static_cast<const uint8_t*>(mem) + planes[0].offset,
                                                      length - planes[0].offset);
      mappings_.push_back({mem, length});
      auto request = camera_->createRequest();
      if (!request || request->addBuffer(stream_, buffer.get()) != 0)
        return make_error(Errc::io_error, "libcamera camera {}: cannot make a request", camera_->id());
      requests_.push_back(std::move(request));
    }
    camera_->requestCompleted.connect(this, &LibcameraFrameSource::completed);
    camera_->disconnected.connect(this, &LibcameraFrameSource::disconnected);
    if (const int r = camera_->start(); r != 0)
      return make_error(Errc::io_error, "libcamera camera {}: start: {}", camera_->id(), std::strerror(-r));
    {
      std::lock_guard lock(mu_);
      running_ = true;
    }
    lost_ = false;
    for (auto& r : requests_)
      if (camera_->queueRequest(r.get()) != 0)
        return make_error(Errc::io_error, "libcamera camera {}: cannot queue a request", camera_->id());
    return ok();
  }

  // libcamera's thread.
  void completed(libcamera::Request* request) {
    if (request->status() == libcamera::Request::RequestCancelled) return;
    std::lock_guard lock(mu_);
    if (!running_) return;
    count_skipped_sequences(*request);
    ready_.push_back(request);
    while (ready_.size() > 1) {  // an older frame nobody took: given back
      requeue(ready_.front());
      ready_.pop_front();
      dropped_.fetch_add(1, std::memory_order_relaxed);
    }
    cv_.notify_all();
  }

  // Frames the pipeline never completed (gaps in its sequence numbers) are dropped frames too. Counted as each request
  // completes, so a frame given back by the newest-frame rule (counted there) is not counted a second time when the
  // next frame taken shows the gap. Under mu_.
  void count_skipped_sequences(libcamera::Request& request) {
    const libcamera::FrameMetadata& md = request.buffers().begin()->second->metadata();
    if (have_sequence_ && md.sequence > last_sequence_ + 1)
      dropped_.fetch_add(md.sequence - last_sequence_ - 1, std::memory_order_relaxed);
    if (!have_sequence_ || md.sequence > last_sequence_) last_sequence_ = md.sequence;
    have_sequence_ = true;
  }

  void disconnected() {
    lost_ = true;
    cv_.notify_all();
  }

  void requeue(libcamera::Request* request) {  // under mu_
    request->reuse(libcamera::Request::ReuseBuffers);
    if (running_ && camera_) (void)camera_->queueRequest(request);
  }

  void close_camera() {
    std::shared_ptr<libcamera::Camera> cam;
    {
      std::lock_guard lock(mu_);
      running_ = false;
      ready_.clear();
      cam = camera_;
    }
    if (cam) {
      (void)cam->stop();
      cam->requestCompleted.disconnect(this);
      cam->disconnected.disconnect(this);
    }
    requests_.clear();
    for (const auto& m : mappings_) ::munmap(m.first, m.second);
    mappings_.clear();
    maps_.clear();
    allocator_.reset();
    if (cam) (void)cam->release();
    std::lock_guard lock(mu_);
    camera_.reset();
    have_sequence_ = false;
  }

  LibcameraOptions options_;
  std::shared_ptr<libcamera::CameraManager> manager_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<libcamera::Camera> camera_;
  libcamera::Stream* stream_ = nullptr;
  std::unique_ptr<libcamera::FrameBufferAllocator> allocator_;
  std::vector<std::unique_ptr<libcamera::Request>> requests_;
  std::map<const libcamera::FrameBuffer*, std::span<const uint8_t>> maps_;
  std::vector<std::pair<void*, size_t>> mappings_;
  std::deque<libcamera::Request*> ready_;
  BufferFormat format_;
  bool running_ = false;
  std::atomic<bool> lost_{false};
  std::atomic<bool> present_{false};
  std::atomic<uint64_t> dropped_{0}, bad_{0};
  unsigned int last_sequence_ = 0;
  bool have_sequence_ = false;
};

}  // namespace

bool libcamera_built() { return true; }

Result<std::unique_ptr<FrameSource>> open_libcamera_frame_source(const LibcameraOptions& options) {
  auto source = std::make_unique<LibcameraFrameSource>(options);
  if (auto st = source->open_camera(); !st && st.error().code != Errc::not_found) return st.error();
  return std::unique_ptr<FrameSource>(std::move(source));
}

}  // namespace aisrv::sensors
