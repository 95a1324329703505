// aisrv CPU engine, optimised kernels — the worker pool (worker_pool.hpp).
#include "worker_pool.hpp"

#include <algorithm>

namespace aisrv::engine::cpu::opt {

namespace {
inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
}  // namespace

WorkerPool::WorkerPool(size_t threads, uint64_t min_parallel_work, bool measure)
    : min_work_(min_parallel_work), measure_(measure) {
  threads = std::clamp<size_t>(threads, 1, kMaxWorkers + 1);
  ranges_ = std::make_unique<Range[]>(threads);
  for (size_t i = 1; i < threads; ++i) workers_.emplace_back([this, i] { work(i); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mu_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

bool WorkerPool::Range::claim_front(size_t& part) {
  uint64_t s = span.load(std::memory_order_relaxed);
  while (static_cast<uint32_t>(s) < static_cast<uint32_t>(s >> 32))
    if (span.compare_exchange_weak(s, s + 1, std::memory_order_relaxed)) {
      part = static_cast<uint32_t>(s);
      return true;
    }
  return false;
}

bool WorkerPool::Range::claim_back(size_t& part) {
  uint64_t s = span.load(std::memory_order_relaxed);
  while (static_cast<uint32_t>(s) < static_cast<uint32_t>(s >> 32)) {
    const size_t back = static_cast<uint32_t>(s >> 32) - 1;
    if (span.compare_exchange_weak(s, pack(static_cast<uint32_t>(s), back), std::memory_order_relaxed)) {
      part = back;
      return true;
    }
  }
  return false;
}

size_t WorkerPool::take_parts(size_t participant) {
  const size_t n = capacity();
  size_t finished = 0, part = 0;  // counted once at the end: a shared counter bumped per part crosses cores each time
  for (Range& own = ranges_[participant]; own.claim_front(part); ++finished) (*fn_)(part, participant);
  for (size_t k = 1; k < n; ++k) {  // then the others' in turn, from their back ends
    for (Range& r = ranges_[(participant + k) % n]; r.claim_back(part); ++finished) (*fn_)(part, participant);
  }
  return finished;
}

bool WorkerPool::Choice::record(bool multi, double ns, uint64_t seq) {
  const bool cold = !has_prev || prev_multi != multi;
  has_prev = true;
  prev_multi = multi;
  prev_cold = cold;
  if (cold || ns <= 0) return false;
  bool paired = false;
  if (last_seq != 0 && seq > last_seq && seq - last_seq <= 2 && multi != last_multi && last_ns > 0) {
    ratio[ratios % kTrials] = multi ? ns / last_ns : last_ns / ns;
    if (++ratios >= 1000 * kTrials) ratios -= 999 * kTrials;  // past the trials only the ring position matters
    paired = true;
  }
  // A run joins one pair at most: one slow run (a host's hiccup) then spoils one of the kTrials pairs, not two of
  // them — which moved the median, and with it the choice.
  last_ns = ns;
  last_multi = multi;
  last_seq = paired ? 0 : seq;
  if (multi) multi_runs = std::min<uint32_t>(multi_runs + 1, kTrials);
  else single_runs = std::min<uint32_t>(single_runs + 1, kTrials);
  return paired;
}

void WorkerPool::Choice::back_off(bool paired, bool was_parallel, double gain, uint32_t first) {
  const bool agrees = paired && (latest() < 1.0 - gain) == was_parallel && parallel(gain) == was_parallel;
  if (every == kConfirm) every = first;  // a confirmation: whichever way it went, the usual wait
  else if (agrees) every = std::min(2 * every, kMaxRetrial);
  else every = kConfirm;  // one pair against the choice: another soon, so two of three decide
}

bool WorkerPool::Choice::parallel(double gain) const {
  const uint32_t n = std::min(ratios, kTrials);
  if (n == 0) return false;
  double r[kTrials];
  std::copy(ratio, ratio + n, r);
  for (uint32_t i = 1; i < n; ++i)  // insertion sort of at most kTrials values
    for (uint32_t j = i; j > 0 && r[j] < r[j - 1]; --j) std::swap(r[j], r[j - 1]);
  return r[n / 2] < 1.0 - gain;
}

bool WorkerPool::hands_out(uint64_t work, size_t parts) const {
  if (workers_.empty() || parts <= 1 || work < min_work_ || !model_parallel_) return false;
  if (!measure_) return true;
  const auto it = choices_.find(key(work, parts));
  return it != choices_.end() && it->second.decided() && it->second.parallel();
}

uint32_t WorkerPool::retrial_interval(uint64_t work, size_t parts) const {
  const auto it = choices_.find(key(work, parts));
  if (it == choices_.end() || !it->second.decided()) return 0;
  return it->second.every == 0 ? kRetrial : it->second.every;
}

void WorkerPool::begin_inference(const void* model) {
  if (workers_.empty() || !measure_) return;  // nothing to choose, or every run handed out (tests)
  operator_ = 0;
  if (model != model_) {
    model_ = model;
    model_runs_ = 0;
    model_candidate_ = false;
    model_choice_ = Choice{};
  }
  // After the first inference (all participants): a model with no run worth handing out has nothing to choose. (Kept
  // per model: while it runs on the caller alone, kernels planned for one participant may not ask the pool at all.)
  if (model_runs_ > 0 && !model_candidate_) {
    model_timed_ = false;
    model_counted_ = false;
    model_parallel_ = true;
    return;
  }
  ++model_runs_;
  model_counted_ = true;
  model_forced_ = false;
  Choice& c = model_choice_;
  if (model_runs_ <= kModelWarmup) {
    model_timed_ = false;
    model_parallel_ = true;  // the operators' own trials first
  } else if (!c.decided()) {
    model_timed_ = true;
    model_parallel_ = c.next_trial_multi(true);  // alternate, operators as chosen first
  } else {
    // Decided: untimed (two clock reads are a real share of a 2 µs model), except for a retrial now and then: the
    // chosen way timed, then two inferences the other way, the second timed (a pair), then two the chosen way, the
    // second timed (for the next pair), so a change of load can move the choice.
    if (c.every == 0) c.every = kModelRetrial;
    model_parallel_ = c.parallel(kModelGain);
    ++c.since_trial;
    model_timed_ = c.since_trial == 2 || c.since_trial == c.every || c.since_trial == c.every + 2;
    model_retrial_end_ = c.since_trial == c.every + 2;
    if (c.since_trial > c.every) {
      // Retrying hand-overs for a model kept on the caller: every run handed out, not the operators' own choices.
      // Those were last updated while the model handed out work and may all say "caller" (a host state of the
      // first minute): compared with them, the retrial compared the caller with the caller, and the model never
      // left it (person_detect: 0.995x in one run where two others in the same minute ran 1.32x on two threads).
      model_forced_ = !model_parallel_;
      model_parallel_ = !model_parallel_;
      if (model_retrial_end_) c.since_trial = 0;
    }
  }
  if (model_timed_) model_t0_ = std::chrono::steady_clock::now();
  // Wake sleeping workers now, so that they poll by the time the first run is handed out (a wake-up takes tens of
  // microseconds on a virtual machine, about what the first operators take; a worker asleep at the first
  // convolution cost it a fifth of its time).
  if (model_parallel_ && sleeping_.load() > 0) {
    {
      std::lock_guard lock(mu_);
      ++alarm_;
    }
    wake_.notify_all();
  }
}

void WorkerPool::end_inference(bool completed) {
  if (workers_.empty() || !measure_ || !model_counted_) return;
  model_counted_ = false;
  // Untimed, failed or cancelled: only its way is noted (the next inference of the other way is the first after a
  // switch).
  double ns = 0;
  if (model_timed_ && completed)
    ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - model_t0_).count();
  model_timed_ = false;
  Choice& c = model_choice_;
  const bool was_caller = c.decided() && !c.parallel(kModelGain);
  const bool paired = c.record(model_parallel_, ns, model_runs_);
  if (model_retrial_end_) c.back_off(paired, !model_parallel_, kModelGain, kModelRetrial);
  model_retrial_end_ = false;
  model_forced_ = false;
  model_parallel_ = c.decided() ? c.parallel(kModelGain) : c.next_trial_multi(true);  // the next one's
  // Back to handing out after a time on the caller: the operators' choices are from before it, so they start over.
  if (was_caller && model_parallel_)
    std::erase_if(choices_, [&](const auto& entry) { return entry.first.model == model_; });
}

void WorkerPool::run(size_t parts, const Part& fn, uint64_t work) {
  if (parts == 0) return;
  auto inline_run = [&] {
    for (size_t part = 0; part < parts; ++part) fn(part, 0);
  };
  if (!workers_.empty() && parts > 1 && work >= min_work_) model_candidate_ = true;
  if (workers_.empty() || parts == 1 || work < min_work_ || !model_parallel_ || parts >= (size_t{1} << 32)) {
    inline_run();
    return;
  }
  if (!measure_ || model_forced_) {
    run_parallel(parts, fn);
    return;
  }
  if (choices_.size() >= kMaxChoices) choices_.clear();
  Choice& c = choices_[key(work, parts)];
  // Each operator's retrials at its own phase: all at the same count, every operator of one inference went the
  // other way at once — an operator kept on the caller was retried with its neighbours on the caller too and the
  // worker asleep by then (mobilenet_v2's 7x7 ADDs: 26 us instead of 3), so a retrial could not bring it back: a
  // 14x14 depthwise layer, 21 us on two participants and 26 alone, stayed on the caller at 2.4-2.6x per retrial.
  if (c.runs == 0) c.since_trial = static_cast<uint32_t>(operator_ * kRetrialStride % kRetrial);
  bool parallel, retrial_end = false;
  if (!c.decided()) {
    parallel = c.next_trial_multi(false);  // alternate, the caller alone first
  } else {
    if (c.every == 0) c.every = kRetrial;
    parallel = c.parallel();
    if (++c.since_trial >= c.every) {  // two runs the other way, the second recorded
      parallel = !parallel;
      retrial_end = c.since_trial > c.every;
      if (retrial_end) c.since_trial = 0;
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (parallel) run_parallel(parts, fn);
  else inline_run();
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  const bool paired = c.record(parallel, ns, ++c.runs);
  if (retrial_end) c.back_off(paired, !parallel, 0, kRetrial);
}

void WorkerPool::run_parallel(size_t parts, const Part& fn) {
  // The previous run is closed and no worker is inside it (its end below), so the run's fields are the caller's.
  fn_ = &fn;
  const size_t n = capacity();
  for (size_t i = 0; i < n; ++i) {
    ranges_[i].span.store(Range::pack(i * parts / n, (i + 1) * parts / n), std::memory_order_relaxed);
  }
  state_.store((++run_id_ << kRunShift) | kOpen);  // publishes the fields above to the workers that join
  if (sleeping_.load() > 0) {
    { std::lock_guard lock(mu_); }  // a worker counted as sleeping is inside wake_.wait() once this is taken
    wake_.notify_all();
  }
  const size_t by_workers = parts - take_parts(0);
  // Every part done and no worker inside take_parts(), then closed in the same step, so none may join any more.
  // Workers that have not woken up by then are not waited for: they find the run closed and go back to waiting.
  for (uint64_t s = state_.load(std::memory_order_acquire);;) {
    const auto ended = [&](uint64_t v) { return (v & kDoneMask) == by_workers && (v & kActiveMask) == 0; };
    if (!ended(s)) {
      wait_caller([&] { return ended(state_.load(std::memory_order_acquire)); });
      s = state_.load(std::memory_order_acquire);
    }
    if (state_.compare_exchange_weak(s, s & ~kOpen, std::memory_order_acq_rel)) return;
  }
}

template <typename Done>
void WorkerPool::wait_caller(const Done& done) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  while (!done() && std::chrono::steady_clock::now() < until) relax();
  if (done()) return;
  std::unique_lock lock(mu_);
  caller_waiting_.store(true);
  finished_.wait(lock, done);
  caller_waiting_.store(false);
}

void WorkerPool::work(size_t participant) {
  uint64_t seen_run = 0, seen_alarm = 0;
  auto runnable = [&](uint64_t s) { return (s & kOpen) != 0 && (s >> kRunShift) != seen_run; };
  while (true) {
    const auto until = std::chrono::steady_clock::now() + kSpin;
    uint64_t s = state_.load(std::memory_order_acquire);
    while (!runnable(s) && !stop_.load(std::memory_order_relaxed) && std::chrono::steady_clock::now() < until) {
      relax();
      s = state_.load(std::memory_order_acquire);
    }
    if (stop_.load()) return;
    if (!runnable(s)) {
      std::unique_lock lock(mu_);
      sleeping_.fetch_add(1);
      wake_.wait(lock, [&] { return stop_.load() || runnable(state_.load()) || alarm_ != seen_alarm; });
      sleeping_.fetch_sub(1);
      seen_alarm = alarm_;
      continue;  // poll again (woken ahead of an inference, or a run is open)
    }
    // Join: one more active worker, only while this run is still open (else look again).
    if (!state_.compare_exchange_weak(s, s + kActiveOne, std::memory_order_acq_rel)) continue;
    seen_run = s >> kRunShift;
    const size_t finished = take_parts(participant);
    state_.fetch_add(finished - kActiveOne, std::memory_order_acq_rel);  // leave: parts added, one worker less
    if (caller_waiting_.load()) {
      std::lock_guard lock(mu_);  // the caller is inside finished_.wait() once this is taken
      finished_.notify_one();
    }
  }
}

}  // namespace aisrv::engine::cpu::opt
