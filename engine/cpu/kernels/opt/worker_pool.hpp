// aisrv CPU engine, optimised kernels — the worker pool of one kernel backend: `threads - 1` threads started with the
// backend (never per inference) plus the calling thread. run() gives each participant one contiguous range of the
// operator's parts; a participant works through its own range, then takes what is left of the others' from their back
// ends (so a participant held up elsewhere does not hold up the operator), and run() returns when all are done, without
// waiting for workers that have not woken up by then (a late worker finds the run closed). Equal ranges of consecutive
// operators cover the same rows of a tensor, so each core mostly reads what it wrote itself: with one shared counter
// every tensor ended up spread over both cores' caches, and the parts of mobilenet_v2 took a third longer on two cores
// than on one. The hand-over takes no lock: one atomic word holds the run's id, whether it is open, how many workers
// are inside it and how many parts they finished (a worker joins with a compare-and-swap and leaves with one addition;
// the caller closes the run with a compare-and-swap once every part is done and none is inside, and only then writes
// the next run). Between operators a worker polls for the next run for a short, bounded time (kSpin: the operators of
// one inference follow each other within microseconds, and a condition variable's wake-up costs more than a small
// operator), then sleeps on a condition variable — an idle engine uses no processor time; begin_inference() wakes
// sleeping workers, so they poll by the time the first operator is handed out. A part knows which participant runs it
// (0 = the caller), so a kernel can give each participant its own scratch.
// Whether a run is handed out at all is decided from measured time (measure = true, the engine's setting), for each
// operator of a model on its own (begin_operator names it; its runs are told apart by work and parts): equal work is
// not equal cost — in mobilenet_v2 a 56x56 expansion (24 -> 144 channels) and the projection back have the same
// multiply-accumulates and parts but not the same time, and one choice for both kept all three such layers on the
// caller. A run's first kTrialRuns runs alternate between the caller alone and all participants, two runs each way;
// from then on the faster way is used, and now and then two runs go the other way again (a retrial), so a change of
// load moves the choice: kRetrial runs after the choice, then twice as late each time a retrial agrees with it
// (kMaxRetrial at most); one that does not is confirmed kConfirm runs later, and kRetrial after that; each operator
// at its own phase (kRetrialStride). Only the second run of each way counts: the first after a switch finds the data
// where the other way left it — half of its input and output lines in the other core's cache, or all of them in the
// caller's — and pays for moving them
// (mobilenet_v2's 56x56 expansion alone on the caller took 119 us right after a run on two participants, 101 us on the
// one-thread engine; on two cores 74 us). Counted, they made the choice sticky: a retrial was always such a first run
// and paid the move, so it could lose where its way was faster (one run kept that expansion on the caller for 381 of
// 454 inferences). "Faster" compares pairs (Choice): a counted run and the counted one of the other way just before it,
// the median ratio of the last kTrials pairs; a run joins one pair at most, so one slow run (a busy host's hiccup)
// spoils one pair and the median holds (joining two, it moved the median: the pool's tests failed about once in 15
// runs on a virtual machine whose sleeps overran now and then). A hand-over costs a wake-up of a sleeping worker
// (tens of microseconds on a virtual machine) where the operators are spread apart, and next to nothing between
// back-to-back operators; no constant threshold gets both right, a measurement does. The results are the same
// either way (every kernel is bit-exact on any number of participants).
// The same is decided per model, on whole inferences (begin_inference / end_inference around each): faster operators do
// not make a faster model when the wake-ups, a worker polling next to the caller and the smaller tiles cost more than
// the operators gain (small models). After kModelWarmup inferences that let the operator choices settle, the next ones
// alternate between "operators as chosen" and "every operator on the caller" (workers asleep), two by two as above; the
// faster way (pairs, as above) is used, untimed, and for a retrial (kModelRetrial inferences after the choice, then
// backing off as above) one inference times it and the two after it go the other way again, the second timed (a
// pair), and the two after those the chosen way, the second timed (the next pair's first run). A retrial of a model
// kept on the caller hands out every run (its operators' choices date from before and may all say "caller", which
// made the retrial compare the caller with itself); when it wins, the operators choose afresh. A model none of whose
// runs could be handed out (hello_world, the LSTMs) is not timed at all: two clock reads would be its cost.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace aisrv::engine::cpu::opt {

class WorkerPool {
 public:
  using Part = std::function<void(size_t part, size_t participant)>;
  static constexpr std::chrono::microseconds kSpin{200};

  // threads >= 1 (1 starts no thread); runs with less work than `min_parallel_work` stay on the caller; `measure`:
  // choose per shape from measured times (above), else hand out every run at or above the minimum (tests).
  explicit WorkerPool(size_t threads, uint64_t min_parallel_work = kMinParallelWork, bool measure = true);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Participants of the current inference, what kernels plan their parts for: the caller plus the workers, or the
  // caller alone while the model runs without hand-overs (the per-model choice below; its plans are then the ones
  // of threads=1 — fewer, larger tiles and no split of small layers).
  size_t size() const { return model_parallel_ ? workers_.size() + 1 : 1; }
  // Participants there can be (scratch is sized at load for the larger of this and one participant's plan).
  size_t capacity() const { return workers_.size() + 1; }
  // Whether a run of this much work could be handed out at all now (else a kernel may take its one-thread path).
  bool may_hand_out(uint64_t work) const { return size() > 1 && work >= min_work_; }

  // Runs fn(part, participant) for every part in [0, parts); returns when every part has finished. Called from one
  // thread at a time (the engine's); with one participant, one part, 2^32 parts or more, or `work`
  // (multiply-accumulates, or another measure of the same size) below the pool's minimum, runs inline on the caller.
  void run(size_t parts, const Part& fn, uint64_t work = UINT64_MAX);

  // Less work than this is not worth handing out (a hand-over costs about a microsecond).
  static constexpr uint64_t kMinParallelWork = 64 * 1024;
  static constexpr size_t kMaxWorkers = 126;  // threads - 1 at most (the constructor clamps)
  static constexpr uint32_t kTrials = 3;     // recorded runs of each way before choosing
  static constexpr uint32_t kTrialRuns = 4 * kTrials;  // the runs that takes (a recorded run follows one that is not)
  static constexpr uint32_t kRetrial = 64;   // then two runs of the other way (the second recorded) in this many
  static constexpr uint32_t kRetrialStride = 41;  // operator i's retrials fall at i * this (mod kRetrial): spread out
  // While retrials agree with the choice, the next comes twice as late, up to this many runs (a retrial runs the
  // slower way twice; over 3000 inferences of mobilenet_v2, 3.3 of its 64 operator runs per inference went the less
  // used way with a retrial every 64 runs, trials and flipped choices included, 0.9 with the back-off).
  static constexpr uint32_t kMaxRetrial = 1024;
  // A retrial whose pair goes against the choice is confirmed by another this many runs (inferences) later: a pair
  // joins two runs, and one slow run of a busy host must not move a choice for kRetrial runs; two pairs of three do.
  static constexpr uint32_t kConfirm = 4;

  // Whether runs of this shape, of the current operator, are currently handed out (measure mode; for tests).
  bool hands_out(uint64_t work, size_t parts) const;
  // Runs between retrials of that choice now (0: not decided yet; for tests).
  uint32_t retrial_interval(uint64_t work, size_t parts) const;
  // The operator whose runs follow (its index in the model of the current inference; 0 until named).
  void begin_operator(size_t index) { operator_ = index; }
  // Choices kept at most (a server loading and unloading models would otherwise grow them); past it they start over.
  static constexpr size_t kMaxChoices = size_t{1} << 14;

  // Around one inference of `model` (any pointer naming it; a new one starts the per-model measurement afresh).
  // Without these calls every inference may hand out work. `completed` false (an error, a cancellation): not timed.
  void begin_inference(const void* model);
  void end_inference(bool completed);
  // Whether the current (or, between inferences, the next) inference may hand out work (per-model choice).
  bool model_hands_out() const { return model_parallel_; }
  static constexpr uint32_t kModelWarmup = kTrialRuns + 1;  // inferences before the per-model trials
  static constexpr uint32_t kModelRetrial = 128;
  // A model hands out work only when that is at least this much faster (a tie runs on the caller: no workers polling,
  // no per-operator timing, the plans of one participant).
  static constexpr double kModelGain = 0.03;

 private:
  // The times of one operator's (or one model's) runs, compared in pairs: a counted run of one way and the counted
  // run of the other way at most two runs before it (for an operator, its runs; for a model, its inferences). A host
  // that slows a vCPU down for minutes slows both runs of a pair alike, where comparing the best of each way's last
  // few times (until 2026-11-28) compared times from different minutes.
  struct Choice {
    double last_ns = 0;          // the latest recorded run
    bool last_multi = false;     // its way
    uint64_t last_seq = 0;       // its number (0: none yet)
    double ratio[kTrials] = {};  // multi / single of the latest kTrials pairs
    uint32_t ratios = 0, single_runs = 0, multi_runs = 0, since_trial = 0;  // runs counted up to kTrials
    uint64_t runs = 0;           // an operator's runs (its run numbers)
    uint32_t every = 0;          // runs between retrials (0: not decided yet)
    bool has_prev = false, prev_multi = false, prev_cold = false;  // the previous run (recorded or not): its way,
                                                                   // and whether it was the first of that way
    // A run of number `seq` (consecutive runs have consecutive numbers), timed (ns > 0) or not (its way only). Only a
    // run after a run of the same way is recorded (the first after a switch pays for data the other way left
    // elsewhere); it pairs with the latest recorded run when that went the other way at most two runs before and has
    // not joined a pair yet.
    bool record(bool multi, double ns, uint64_t seq);  // whether it made a pair
    // After a retrial (`paired`: its second run made a pair) of the choice `was_parallel`: twice as long to the next
    // one while retrials agree with the choice and leave it (kMaxRetrial at most); kConfirm when one does not, and
    // `first` after that confirmation, whichever way it went.
    void back_off(bool paired, bool was_parallel, double gain, uint32_t first);
    bool decided() const { return single_runs >= kTrials && multi_runs >= kTrials && ratios >= kTrials; }
    // The way of the next trial run while undecided: each way twice in a row (the second is the one recorded), the
    // ways alternating; `multi_first` says which starts where no run went before.
    bool next_trial_multi(bool multi_first) const {
      if (!has_prev) return multi_first;
      if (prev_cold || (multi_runs == 0 && single_runs == 0)) return prev_multi;  // a second run, or runs before
      if (multi_runs != single_runs) return multi_runs < single_runs;             // the trials went this way
      return !prev_multi;
    }
    bool parallel(double gain = 0) const;  // the median pair has all participants faster by more than `gain`
    double latest() const { return ratio[(ratios + kTrials - 1) % kTrials]; }  // the latest pair's ratio
  };
  // One run of one operator of one model.
  struct RunKey {
    const void* model = nullptr;
    size_t op = 0;
    uint64_t work = 0;
    size_t parts = 0;
    bool operator==(const RunKey&) const = default;
  };
  struct RunKeyHash {
    size_t operator()(const RunKey& k) const {
      uint64_t h = reinterpret_cast<uintptr_t>(k.model);
      for (uint64_t v : {uint64_t{k.op}, k.work, uint64_t{k.parts}}) h = (h ^ v) * 0x9E3779B97F4A7C15ULL;
      return static_cast<size_t>(h ^ (h >> 29));
    }
  };
  RunKey key(uint64_t work, size_t parts) const { return {model_, operator_, work, parts}; }
  void run_parallel(size_t parts, const Part& fn);
  void work(size_t participant);
  size_t take_parts(size_t participant);  // returns the parts it ran

  uint64_t min_work_;
  bool measure_;
  // Per-model choice (caller's thread only).
  const void* model_ = nullptr;
  size_t operator_ = 0;        // the current operator of model_
  uint32_t model_runs_ = 0;    // inferences of model_ begun
  Choice model_choice_;
  bool model_parallel_ = true; // this inference may hand out work
  bool model_timed_ = false;   // this inference is a trial (warm-up ones are not)
  bool model_counted_ = false; // this inference is one of model_runs_ (its way is noted at its end)
  bool model_retrial_end_ = false;  // this inference ends a retrial of the per-model choice
  bool model_forced_ = false;  // this inference retries hand-overs for a model kept on the caller: every run goes out
  bool model_candidate_ = false;  // a run of this model could be handed out (else nothing to decide)
  std::chrono::steady_clock::time_point model_t0_;
  std::unordered_map<RunKey, Choice, RunKeyHash> choices_;  // used by the caller's thread only
  std::vector<std::thread> workers_;
  std::mutex mu_;                          // only for sleeping and waking (the hand-over itself takes no lock)
  std::condition_variable wake_, finished_;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> sleeping_{0};        // workers inside (or entering) wake_.wait()
  std::atomic<bool> caller_waiting_{false}; // the caller is inside (or entering) finished_.wait()
  uint64_t alarm_ = 0;                     // bumped to wake the workers ahead of an inference; guarded by mu_
  // The hand-over, one word: the id of the current run (24 bits, compared for equality only), whether it is open
  // (workers may join it), how many workers are inside it, and how many parts they have finished. A worker joins
  // with a compare-and-swap that fails once the run is closed, and leaves with one addition (its finished parts,
  // one worker less); the caller closes the run with a compare-and-swap that succeeds only when every part is done
  // and no worker is inside, and changes the run's fields only then. One word, so the end of a run is one cache-line
  // transfer to the caller and back, not one per counter.
  static constexpr uint64_t kDoneMask = 0xFFFFFFFF, kActiveOne = uint64_t{1} << 32, kActiveMask = uint64_t{0x7F} << 32,
                            kOpen = uint64_t{1} << 39;
  static constexpr int kRunShift = 40;
  static_assert(kMaxWorkers < 0x7F, "the active count has 7 bits");
  alignas(64) std::atomic<uint64_t> state_{0};
  // The current run, in the same cache line as state_; written by the caller while it is closed and empty, read by
  // the workers inside it.
  const Part* fn_ = nullptr;
  uint64_t run_id_ = 0;                    // the caller's count of runs
  template <typename Done>
  void wait_caller(const Done& done);      // polls for kSpin, then waits on finished_
  // The parts of the current run in one contiguous range per participant (why: the file comment). The owner takes
  // its range from the front, the others take from the back, so the owner runs its parts in order (a kernel may
  // carry state from one part to the next, as the depthwise row cache does). Front and back share one word, each
  // end moved by a compare-and-swap, so a part is claimed exactly once.
  struct alignas(64) Range {
    std::atomic<uint64_t> span{0};  // front | back << 32: the unclaimed parts are [front, back)
    static constexpr uint64_t pack(size_t front, size_t back) { return uint64_t{front} | uint64_t{back} << 32; }
    // Claims the front part (the owner) or the back part (another participant); false when none is left.
    bool claim_front(size_t& part);
    bool claim_back(size_t& part);
  };
  std::unique_ptr<Range[]> ranges_;
};

}  // namespace aisrv::engine::cpu::opt
